"""The report's sections on the ranking, linear, protection, intervals and re-identification results."""
from __future__ import annotations

import json
from typing import Any, Mapping

from markupsafe import Markup

from .svg import line_chart
from ..findings.model import Findings
from ..policy.checks import rank_lift, unit_intervals

TOP_UNITS = 200          # rows of the unit table
DETAIL_UNITS = 20        # units whose claims are written out


def rank_section(rank: Mapping | None, rules: Mapping) -> dict | None:
    if not rank:
        return None

    pooled = rank.get("pooled") or {}
    ks = pooled.get("k_over_u") or []
    series = {"attack": list(zip(ks, pooled.get("attack") or []))}
    for name, curve in (pooled.get("baselines") or {}).items():
        series[f"baseline: {name}"] = list(zip(ks, curve))
    chart = Markup(line_chart(series, title="Ranking attack: share of true records among the top k",
                              xlabel="k / u (top-k as a share of the unit's records)", ylabel="match rate",
                              ylim=(0, 1))) if ks else None
    upto = ((rules.get("rules") or {}).get("rank_lift") or {}).get("up_to_k_over_u", 0.5)
    lift, at, which = rank_lift(pooled, None, upto) if ks else (None, None, "")
    units = []
    for u in rank.get("units") or ():
        ul, uat, uwhich = rank_lift(u, ks, upto)
        units.append({"geo": u.get("geo"), "rows": u.get("rows"), "lift": ul if uat is not None else None,
                      "at": uat, "baseline": uwhich})
    units.sort(key=lambda x: -(x["lift"] if x["lift"] is not None else -1))
    return {"chart": chart, "empty": _rank_empty(rank, pooled), "lift": lift, "at": at, "baseline": which, "upto": upto,
            "units": units[:TOP_UNITS], "more": max(len(units) - TOP_UNITS, 0),
            "settings": {k: v for k, v in rank.items() if k not in ("pooled", "units") and not isinstance(v, (dict, list))}}


def _rank_empty(rank: Mapping, pooled: Mapping) -> str:
    """Why the ranking attack shows nothing usable (no curve, or a curve flat at zero), in words; ''
    when it does show something."""
    attack = [a for a in pooled.get("attack") or () if a is not None]
    if attack and max(attack) > 0:
        return ""
    units = [u for u in rank.get("units") or () if isinstance(u, Mapping)]
    why = []
    if not attack:
        why.append("The ranking attack produced no curve: no unit could be ranked and scored.")
    else:
        why.append("The ranking attack put none of the true records among its guesses at any k (its curve is flat "
                   "at zero), so it shows no risk here — and nothing to compare with the baselines.")
    runs = [u["consistent_runs"] for u in units if isinstance(u.get("consistent_runs"), (int, float))]
    if runs and max(runs) == 0:
        why.append("None of its relaxed reconstructions reproduced the published tables once rounded, so its "
                   "guesses are not datasets that fit the release.")
    if attack:
        why.append("A guess counts only when it matches a true record on every attribute, which is rare when a "
                   "unit has few records and many possible values.")
    notes = [str(n) for n in rank.get("notes") or ()] + [str(n) for u in units for n in u.get("notes") or ()]
    if notes:
        why.append("Notes from the attack: " + "; ".join(dict.fromkeys(notes)) + ".")
    return " ".join(why)


def linear_section(linear: Mapping | None) -> dict | None:
    if not linear:
        return None
    charts = []
    sweep = linear.get("sweep") or []
    if sweep:
        kinds = list(dict.fromkeys(p.get("mitigation") for p in sweep))
        base = linear.get("baseline")
        hl = {f"baseline {base:.2f}": base} if isinstance(base, (int, float)) else {}
        charts.append(Markup(line_chart({k: [(p["param"], p["accuracy"]) for p in sweep if p.get("mitigation") == k]
                                         for k in kinds}, title=f"Reconstruction of {linear.get('secret', '')} "
                                         "under each mitigation", xlabel="parameter (round r, noise scale, sample t)",
                                         ylabel="accuracy", hlines=hl, ylim=(0, 1))))
        if any(p.get("answer_rmse") is not None or p.get("rmse") is not None for p in sweep):
            charts.append(Markup(line_chart({k: [(p.get("answer_rmse", p.get("rmse")), p["accuracy"]) for p in sweep
                                                 if p.get("mitigation") == k] for k in kinds},
                                            title="Accuracy against the error added to answers",
                                            xlabel="answer RMSE", ylabel="accuracy", hlines=hl, ylim=(0, 1))))
    return {"secret": linear.get("secret"), "accuracy": linear.get("accuracy"), "baseline": linear.get("baseline"),
            "ci": linear.get("ci"), "n_rows": linear.get("n_rows"), "n_queries": linear.get("n_queries"),
            "method": linear.get("method"), "charts": charts, "privacy": linear.get("privacy"),
            "differences": len(linear.get("differences") or [])}


def flat(value: Any, limit: int = 200) -> str:
    """A setting as text for the appendix: 'not set' for null, 'yes'/'no', 'none' for an empty list."""
    if value is None or value == "":
        return "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, dict)) and not value:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def protection_section(prot: Mapping | None) -> dict | None:
    """protection.json of ``audit protect``: the recommendation and the re-audit before/after."""
    if not prot:
        return None
    rec = prot.get("recommendation")
    cells: list[str] = []
    source = (rec or {}).get("cells") if isinstance(rec, Mapping) else None
    if source is None:
        source = {u.get("geo"): u.get("cells") for u in prot.get("units") or () if isinstance(u, Mapping)}
    if isinstance(source, Mapping):
        labels = prot.get("cell_labels") or {}
        cells = [f"{geo}: {labels.get(c, c)}" for geo, cs in source.items() for c in (cs or ())]
    elif isinstance(source, list):
        cells = [flat(c) for c in source]
    totals = prot.get("totals") or {}
    count = totals.get("cells_suppressed", (rec or {}).get("cells_suppressed") if isinstance(rec, Mapping) else None)
    before, after = prot.get("before") or {}, prot.get("after") or {}
    compare = []
    for key, label in (("derived_singletons", "derived singleton claims"), ("full_records", "records fully reconstructed"),
                       ("units_reconstructed", "units with one possible dataset"), ("undecided", "claims undecided"),
                       ("verified", "verified claims")):
        b, a = (before.get("summary") or {}).get(key), (after.get("summary") or {}).get(key)
        if b is not None or a is not None:
            compare.append((label, b, a))
    facts = []
    for key, label in (("round_to", "rounding base"), ("scale", "noise scale"), ("epsilon", "epsilon"),
                       ("reason", "why not"), ("attacker_model", "attacker model")):
        value = prot.get(key, (rec or {}).get(key) if isinstance(rec, Mapping) else None)
        if value is not None:
            facts.append((label, flat(value, 400)))
    for key, label in (("units_protected", "units protected"), ("units_not_protected", "units not protected"),
                       ("persons_in_suppressed_cells", "records in suppressed cells")):
        if key in totals:
            facts.append((label, flat(totals[key])))
    loose = [f"{u.get('geo')}{' (with its child units)' if u in (prot.get('levels') or ()) else ''}: {len(u.get('cells') or ())} "
             f"cells" + (f", at least {u['lower_bound']:g} needed" if isinstance(u.get("lower_bound"), (int, float)) else "")
             for u in list(prot.get("units") or ()) + list(prot.get("levels") or ())
             if isinstance(u, Mapping) and u.get("status") == "protected" and u.get("minimal") is False]
    if loose:
        facts.append(("not proved minimal", flat("; ".join(loose), 400)))
    stuck = prot.get("undefeatable") or {}
    undefeatable = [(geo, flat(e.get("claim"), 400), flat(e.get("why"), 600)) for geo, u in stuck.items()
                    if isinstance(u, Mapping) for e in u.get("undefeatable") or () if isinstance(e, Mapping)]
    remedy = next((u.get("remedy") for u in stuck.values() if isinstance(u, Mapping) and u.get("remedy")), None)
    return {"strategy": prot.get("strategy") or (rec or {}).get("strategy") if isinstance(rec, Mapping) else prot.get("strategy"),
            "offered": rec is not None, "cells": cells[:100], "more": max(len(cells) - 100, 0),
            "count": count if count is not None else len(cells), "before": before.get("verdict"),
            "after": after.get("verdict"), "after_failing": [f.get("rule") for f in after.get("failing") or ()],
            "compare": compare, "facts": facts, "undefeatable": undefeatable[:100], "remedy": remedy,
            "still_failing": list((rec or {}).get("still_failing") or ()) if isinstance(rec, Mapping) else []}


def intervals_section(doc: Findings, cell_labels: Mapping[str, str]) -> dict | None:
    """Per unit with hidden counts (the first DETAIL_UNITS, narrowest intervals first within a unit): the
    least and greatest value an attacker can prove for each; None when no unit hides a count."""
    units, skipped, total = [], 0, 0
    for u in doc.units:
        skipped += bool(u.get("intervals_skipped"))
        found = unit_intervals(u)  # with the cells pinned by their own rule
        if not found:
            continue
        total += 1
        if len(units) < DETAIL_UNITS:
            cells = sorted(found.items(), key=lambda kv: (kv[1]["hi"] - kv[1]["lo"], kv[0]))
            units.append({"geo": u["geo"], "cells": [dict(iv, cell=k, label=_interval_label(k, cell_labels)) for k, iv in cells]})
    if not total and not skipped:
        return None
    return {"units": units, "total": total, "more": total - len(units), "skipped": skipped}


def _interval_label(key: str, cell_labels: Mapping[str, str]) -> str:
    """A hidden cell's label: ``TABLE:CELL`` for a count, ``TABLE:CELL:stat`` (a sum, mean or median)
    as the cell's label with its statistic."""
    if key in cell_labels:
        return cell_labels[key]
    cell, _, stat = key.rpartition(":")
    return f"{cell_labels[cell]} ({stat})" if cell in cell_labels else ""


def _words(names: list) -> str:
    names = [str(n) for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1] if names else ""


def reid_section(doc: Findings) -> dict | None:
    """The re-identification section: what an attacker who knows a person's quasi-identifiers learns."""
    reid = doc.reidentification or {}
    if reid.get("status") != "run":
        return {"parts": [], "reason": reid.get("reason")} if reid else None
    who = reid.get("attacker") or {}
    out = {"known": _words([who.get("geography"), *who.get("quasi_identifiers", ())]),
           "qis": _words(who.get("quasi_identifiers", ())),
           "geography": who.get("geography"), "sensitive": _words(who.get("sensitive", ())), "parts": []}
    for key, title in (("exact", "Exact attack (proofs)"), ("ranking", "Ranking attack (best guesses)")):
        part = reid.get(key) or {}
        if part.get("status") != "run":
            out["parts"].append({"title": title, "run": False, "reason": part.get("reason") or "not run"})
            continue
        out.setdefault("unique", part["unique"])
        out.setdefault("unique_sensitive", part["unique_with_sensitive"])
        inf = part["inference"]
        rows = [("Putative re-identifications (of all persons)", part["putative"], None),
                ("Confirmed re-identifications (of all persons)", part["confirmed"], None),
                ("Precision (confirmed / putative)", part["precision"], None),
                ("Sensitive values right, all persons", inf["all"]["attack"], inf["all"]["baselines"]),
                ("Sensitive values right, persons unlike their unit's majority", inf["unlike_majority"]["attack"],
                 inf["unlike_majority"]["baselines"])]
        for name, a in (part.get("attributes") or {}).items():  # what the rules judge: each attribute on its own
            unlike = a["inference"]["unlike_majority"]
            rows += [(f"{name}: re-identified with it proved" if key == "exact" else f"{name}: confirmed",
                      a["confirmed"], None),
                     (f"{name} right, persons unlike their unit's majority on it", unlike["attack"], unlike["baselines"])]
        out["parts"].append({"title": title, "run": True, "key": key, "part": part, "rows": rows,
                             "lift": inf["unlike_majority"]["lift"], "unlike": inf["unlike_majority"]["persons"],
                             "missing": part.get("units_not_measured", 0), "notes": part.get("notes") or []})
    return out
