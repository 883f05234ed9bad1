"""The HTML risk report: one self-contained file (inline CSS, inline SVG, no network) from findings.json.

The template lives in the ``reports`` package (``reports/report.html.j2``) and is rendered with
autoescaping on; every value from the findings is escaped. Optional inputs, read when present beside
the findings: ``rank.json`` (ranking attack), ``linear.json`` (linear attack and mitigation sweep) and
``protection.json`` (recommended protection and its re-audit).
"""
from __future__ import annotations

import heapq
import importlib.resources
import json
import math
import os
import re
from html import escape
from pathlib import Path
from typing import Any, Mapping

from markupsafe import Markup

from .svg import PALETTE, _fmt, _ticks, legend, line_chart, text_width
from ..findings.files import read_json
from ..findings.model import Findings
from ..policy.checks import rank_lift
from ..policy.definitions import RULES

TOP_UNITS = 200          # rows of the unit table
DETAIL_UNITS = 20        # units whose claims are written out
CLAIMS_PER_UNIT = 10     # claims written out per unit
RECORDS_PER_UNIT = 10    # reconstructed records shown per unit


# ----------------------------------------------------------------------------------------- loading

def extras_beside(folder: Path) -> dict[str, dict]:
    """rank.json, linear.json and protection.json found in ``folder`` (absent ones are left out)."""
    out = {}
    for name in ("rank", "linear", "protection"):
        p = Path(folder) / f"{name}.json"
        if p.is_file():
            out[name] = read_json(p, f"{name}.json")
    return out


# ------------------------------------------------------------------------------------ plain language

def describe_value(schema: Mapping, column: str, atom: str) -> str:
    """An atom label (a code, ``a-b`` range, or ``x|y`` codes) in words from the schema labels."""
    col = (schema.get("columns") or {}).get(column) or {}
    labels = col.get("labels") or {}
    if atom in labels:
        return labels[atom]
    m = re.fullmatch(r"(-?\d+)-(-?\d+)", atom)
    if col.get("kind") == "integer" and m:
        return f"{m.group(1)} to {m.group(2)}"
    if "|" in atom:
        parts = atom.split("|")
        if all(p in labels for p in parts) or col.get("kind") == "integer":
            return " or ".join(labels.get(p, p) for p in parts)
    return atom


def column_title(schema: Mapping, column: str) -> str:
    col = (schema.get("columns") or {}).get(column) or {}
    return col.get("title") or column


def describe_column(schema: Mapping, column: str, atom: str) -> str:
    """One attribute of a claim in words: 'Age: 45 to 54' with the column's title, else the value's
    label alone ('Not Hispanic or Latino'), else 'name: value' for a column with neither."""
    col = (schema.get("columns") or {}).get(column) or {}
    value = describe_value(schema, column, atom)
    if col.get("title"):
        return f"{col['title']}: {value}"
    labels = col.get("labels") or {}
    return value if labels and all(a in labels for a in atom.split("|")) else f"{column}: {value}"


def claim_text(claim: Mapping, schema: Mapping, unit: Mapping) -> str:
    """'Exactly one household in block 1001: Householder's sex: Female; Householder 65 to 74 years.'"""
    noun = schema.get("unit") or "record"
    m = claim.get("m", 1)
    words = {0: "No", 1: "Exactly one", 2: "Exactly two", 3: "Exactly three"}
    who = f"{words.get(m, f'Exactly {m}')} {noun}{'' if m == 1 else 's'}"
    parts = [describe_column(schema, c, str(v)) for c, v in claim["columns"].items()]
    where = f"{unit.get('level', 'unit')} {unit.get('geo', '')}".strip()
    return f"{who} in {where}: {'; '.join(parts)}."


def label_cells(text: str, cell_labels: Mapping[str, str]) -> str:
    """``text`` with every published cell key (``TABLE:CELL``) in it replaced by the cell's label."""
    return _CELL_KEY.sub(lambda m: cell_labels.get(m.group(0), m.group(0)), text)


_CELL_KEY = re.compile(r"[^\s,;()=:]+:[^\s,;()=]+")


def plural(n: Any, noun: str, many: str | None = None) -> str:
    """'1 block', '2 blocks', '1,234 persons' (``many`` for irregular plurals)."""
    word = noun if n == 1 else (many or noun + "s")
    return f"{n:,} {word}" if isinstance(n, int) else f"{n} {word}"


# ---------------------------------------------------------------------------------------------- charts

def bar_chart(groups: Mapping[str, Mapping[str, float]], *, title: str = "", xlabel: str = "", ylabel: str = "",
              width: int = 560, height: int = 300) -> str:
    """Grouped bars: ``groups`` maps x label -> {series: value}. Returns an inline ``<svg>``; x labels
    that would collide are turned and, if still too many, thinned; the legend (several series) sits below."""
    series = list(dict.fromkeys(s for g in groups.values() for s in g))
    ticks = _ticks(0, max([v for g in groups.values() for v in g.values()] + [1]), 4)
    top = ticks[-1] if ticks[-1] > 0 else 1
    if max([v for g in groups.values() for v in g.values()] + [0]) > top:
        top = top + (ticks[1] - ticks[0] if len(ticks) > 1 else 1)
        ticks.append(top)
    n = max(len(groups), 1)
    left, right, head = 55, 20, 30 if title else 12
    pw = width - left - right
    slot = pw / n
    widest = max((text_width(str(g)) for g in groups), default=0)
    turned = widest + 6 > slot
    every = max(1, math.ceil(n * 16 / pw)) if turned else 1  # turned labels need ~16 px each
    under = (widest * 0.71 + 14) if turned else 16  # height of the x labels (turned 45 degrees)
    ph = height - head - under - 30
    bw = max(slot * 0.8 / max(len(series), 1), 1)
    body = []
    if title:
        body.append(f'<text x="{left + pw / 2:.1f}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>')
    for v in ticks:
        y = head + ph - ph * v / top
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                    f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
    for gi, (label, values) in enumerate(groups.items()):
        x0 = left + gi * slot + slot * 0.1
        for si, name in enumerate(series):
            v = float(values.get(name, 0) or 0)
            h = ph * v / top
            body.append(f'<rect x="{x0 + si * bw:.1f}" y="{head + ph - h:.1f}" width="{bw - 1:.1f}" height="{h:.1f}" '
                        f'fill="{PALETTE[si % len(PALETTE)]}"><title>{escape(str(label))}: {escape(name)} '
                        f'{v:g}</title></rect>')
        if gi % every == 0:
            x, y = left + gi * slot + slot / 2, head + ph + 14
            if turned:
                body.append(f'<text transform="translate({x + 3:.1f},{y - 4:.1f}) rotate(-45)" text-anchor="end">'
                            f'{escape(str(label))}</text>')
            else:
                body.append(f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{escape(str(label))}</text>')
    body.append(f'<rect x="{left}" y="{head}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    if xlabel:
        body.append(f'<text x="{left + pw / 2:.1f}" y="{head + ph + under + 18:.1f}" text-anchor="middle">'
                    f'{escape(xlabel)}</text>')
    if ylabel:
        body.append(f'<text transform="translate(14,{head + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
                    f'{escape(ylabel)}</text>')
    keys = [(f'<rect x="{{x:.1f}}" y="{{y:.1f}}" width="14" height="10" transform="translate(4,-6)" '
             f'fill="{PALETTE[si % len(PALETTE)]}"/>', name) for si, name in enumerate(series)] if len(series) > 1 else []
    entries, extra = legend(keys, left, head + ph + under + 38, pw)
    total = head + ph + under + 30 + (extra + 12 if extra else 0)
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total:.0f}" '
                      f'viewBox="0 0 {width} {total:.0f}" font-family="sans-serif" font-size="11" role="img">',
                      f'<rect x="0" y="0" width="{width}" height="{total:.0f}" fill="white"/>', *body, *entries,
                      "</svg>"])


def _histogram(values: list[int], bins: int = 12) -> dict[str, dict[str, float]]:
    if not values:
        return {}
    hi = max(values)
    if hi < bins:
        return {str(v): {"units": sum(x == v for x in values)} for v in range(hi + 1)}
    step = -(-(hi + 1) // bins)
    out = {}
    for lo in range(0, hi + 1, step):
        out[f"{lo}-{lo + step - 1}"] = {"units": sum(lo <= x < lo + step for x in values)}
    return out


# ----------------------------------------------------------------------------------------------- context

def _unit_rows(doc: Findings) -> tuple[list[dict], list[int], list[int]]:
    """Every unit's row, riskiest first (each with its position in ``doc.units``), every unit's
    number of derived singletons, and the positions of the units with a ``grid``."""
    failing: dict[str, list[str]] = {}
    for c in doc.checks:
        if c.outcome == "fail":
            failing.setdefault(c.unit, []).append(c.rule)
    threshold = ((doc.rules or {}).get("rules", {}).get("small_cells") or {}).get("threshold")
    derived: list[int] = []
    gridded: list[int] = []

    def rows():
        for i, u in enumerate(doc.units):
            s = u["summary"]
            if u.get("grid"):
                gridded.append(i)
            small = (u.get("cells") or {}).get("small", {})
            derived.append(s.get("derived_singletons", 0))
            yield {"index": i, "geo": u["geo"], "level": u.get("level", ""), "rows": u.get("rows"),
                   "status": u.get("status"), "derived": s.get("derived_singletons", 0),
                   "singletons": s.get("verified_singletons", 0), "verified": s.get("verified", 0),
                   "records": s.get("full_records", 0), "undecided": s.get("undecided", 0),
                   "small": sum(1 for v in small.values() if v < threshold) if threshold else len(small),
                   "solutions": f"{(u.get('solutions') or {}).get('count', '?')}"
                                f"{'' if (u.get('solutions') or {}).get('exhausted') else '+'}",
                   "reconstructed": bool(u.get("reconstructed")), "failing": failing.get(u["geo"], []),
                   "seconds": u.get("seconds")}

    ranked = sorted(rows(), key=lambda r: (-len(r["failing"]), -r["records"], -r["derived"], -r["undecided"], r["geo"]))
    return ranked, derived, gridded


def _unit_index(rows: list[dict]) -> dict:
    """Every unit's row, compact, for the unit list's search and filter (reports/report.html.j2 reads
    the fields in this order): the geography key as a position in ``parents`` (the key up to its last
    '/') and the rest, the level as a position in ``levels``, the failing rules as a bit mask over ``rules``."""
    levels = list(dict.fromkeys(r["level"] for r in rows))
    rules = list(dict.fromkeys(rule for r in rows for rule in r["failing"]))
    parents = list(dict.fromkeys(r["geo"][: r["geo"].rfind("/") + 1] for r in rows))
    at = {name: i for i, name in enumerate(parents)}
    titles = _rule_titles()
    out = []
    for r in rows:
        cut = r["geo"].rfind("/") + 1
        out.append([at[r["geo"][:cut]], r["geo"][cut:], levels.index(r["level"]), r["rows"], r["derived"],
                    r["singletons"], r["records"], r["small"], r["undecided"], r["solutions"], int(r["reconstructed"]),
                    sum(1 << rules.index(f) for f in set(r["failing"])), "" if r["status"] == "done" else r["status"] or ""])
    return {"levels": levels, "parents": parents, "rules": rules, "titles": [titles.get(r, r) for r in rules],
            "rows": out}


# Status of a published value in a unit's grid (findings.grid_code's letter) -> CSS class, legend words.
GRID_STATUS = {"p": ("s-pub", "published"), "r": ("s-round", "rounded"), "n": ("s-noise", "noisy"),
               "P": ("s-pri", "primary suppression"),
               "S": ("s-sec", "secondary suppression"), "D": ("s-sup", "suppressed"),
               "z": ("s-zero", "structural zero"), "e": ("s-empty", "empty (no records to average)")}


HIDDEN = {"s-pri", "s-sec", "s-sup"}  # a table with one of these opens in the report


def _grid_cell(code: str, interval: Mapping | None) -> dict:
    """One value of a grid: its CSS class, the text shown and the status in words (with the feasibility
    interval of a hidden count where the findings have it)."""
    css, words = GRID_STATUS.get(code[:1], GRID_STATUS["D"])
    text = code[1:] if code[:1] in "prnzP" else ""
    if code[:1] == "z" and not text:
        text = "–"
    if code[:1] == "n":
        words = "published with noise added (the value shown), not the true count"
    if interval is not None and code[:1] in "PSDrn":
        span = f"{interval['lo']}" if interval["lo"] == interval["hi"] else f"{interval['lo']}–{interval['hi']}"
        proof = "exact" if interval.get("certified") else "outer bound"
        how = "can tell, at the protection's confidence (not a proof), that the count" if code[:1] == "n" else \
            "can prove it"
        words = f"{words}; an attacker {how} lies in [{interval['lo']}, {interval['hi']}] ({proof})"
        text = f"{text} [{span}]".strip() if code[:1] in "rn" else f"[{span}]"
    elif code[:1] in "PSD":
        text = "(D)"
    return {"css": css, "text": text, "title": words if code[:1] not in "p" else ""}


def _grid_tables(tables: list[Mapping], unit: Mapping, cell_labels: Mapping[str, str]) -> list[dict]:
    """The unit's published tables as grids: a cross-classified table as rows (every axis but the last)
    by columns (the last axis), any other table as one column per statistic."""
    grid, intervals = unit.get("grid") or {}, unit.get("intervals") or {}
    out = []
    for t in tables:
        stats = t.get("stats") or ["count"]

        def cells(cid: str) -> list[dict]:
            key = f"{t['id']}:{cid}"
            codes = (grid.get(key) or "").split()
            return [dict(_grid_cell(c, intervals.get(key) if i == 0 else None), k=cid, stat=stats[i] if i < len(stats) else "")
                    for i, c in enumerate(codes)]

        axes = t.get("by") or []
        if len(axes) >= 2 and len(stats) == 1:
            cols = axes[-1]["codes"]
            rows, index = [], {}
            for cid in t["cells"]:
                parts = cid.split(",")
                head = tuple(parts[:-1])
                if head not in index:
                    labels = {a["column"]: dict(map(tuple, a["codes"])) for a in axes[:-1]}
                    index[head] = len(rows)
                    rows.append({"label": ", ".join(labels[a["column"]].get(c, c) for a, c in zip(axes[:-1], head)),
                                 "cells": {}})
                rows[index[head]]["cells"][parts[-1]] = cells(cid)
            body = [{"label": r["label"], "cells": [(r["cells"].get(code) or [None])[0] for code, _ in cols]}
                    for r in rows]
            head_row = [label for _, label in cols]
            corner = f"{' × '.join(a['title'] for a in axes[:-1])} ↓ · {axes[-1]['title']} →"
        else:
            labels = {a["column"]: dict(map(tuple, a["codes"])) for a in axes}
            body = []
            for cid in t["cells"]:
                if axes:
                    label = ", ".join(labels[a["column"]].get(c, c) for a, c in zip(axes, cid.split(",")))
                else:
                    label = cell_labels.get(f"{t['id']}:{cid}", cid).split(": ", 1)[-1]
                body.append({"label": label, "cells": cells(cid) or [None] * len(stats)})
            head_row = stats
            corner = " × ".join(a["title"] for a in axes) or "Cell"
        counts: dict[str, int] = {}
        for row in body:
            for c in row["cells"]:
                if c is not None and c["css"] != "s-pub":
                    counts[c["css"]] = counts.get(c["css"], 0) + 1
        out.append({"id": t["id"], "title": t.get("title") or t["id"], "corner": corner, "head": head_row,
                    "rows": body, "counts": counts, "open": bool(set(counts) & HIDDEN)})
    if out and not any(t["open"] for t in out):  # nothing hidden (e.g. every count rounded or noisy): show one
        out[0]["open"] = True
    return out


def _grids(doc: Findings, indices: list[int], rows: list[dict], cell_labels: Mapping[str, str]) -> dict | None:
    """The published tables of the units whose grid findings.json kept, riskiest first."""
    tables = doc.tables or []
    if not tables or not indices:
        return None
    rank = {r["index"]: i for i, r in enumerate(rows)}
    out = []
    for i in sorted(indices, key=lambda i: (rank.get(i, len(rank)), i)):
        u = doc.units[i]
        grids = _grid_tables(tables, u, cell_labels)
        hidden: dict[str, int] = {}
        for g in grids:
            for css, n in g["counts"].items():
                hidden[css] = hidden.get(css, 0) + n
        out.append({"geo": u["geo"], "level": u.get("level", ""), "rows": u.get("rows"), "tables": grids,
                    "counts": hidden})
    present = {css for g in out for css in g["counts"]} | {"s-pub"}
    legend = [(css, words) for css, words in dict.fromkeys(GRID_STATUS.values()) if css in present]
    return {"units": out, "legend": legend}


def _claims_by_columns(doc: Findings) -> dict[str, dict[str, float]]:
    """Verified singleton claims by number of columns, derived and published directly (exact counts)."""
    by = doc.summary.singletons_by_columns
    ks = sorted({int(k) for counts in by.values() for k in counts})
    return {str(k): {"derived": by.get("derived", {}).get(str(k), 0),
                     "published directly": by.get("direct", {}).get(str(k), 0)} for k in ks}


def _detail(doc: Findings, rows: list[dict], cell_labels: Mapping[str, str], store=None) -> list[dict]:
    """The claims and records of the riskiest units: from the claim store when there is one, else
    those findings.json lists."""
    schema = doc.schema or {}
    ncols = len((schema.get("columns") or {})) or None
    out = []
    for r in rows:
        if len(out) >= DETAIL_UNITS:
            break
        if not r["derived"] and not r["records"]:
            continue
        u = doc.units[r["index"]]
        claims = store.claims(u["store"]) if store is not None and u.get("store") else u.get("claims", ())
        singles, records = [], []
        for c in claims:
            if c["status"] != "verified":
                continue
            if c["m"] == 1 and not c.get("direct"):
                singles.append(c)
            if ncols and len(c["columns"]) == ncols and len(records) < RECORDS_PER_UNIT:
                records.append(c)
        if not singles and not records:
            continue
        singles = heapq.nsmallest(CLAIMS_PER_UNIT, singles,
                                  key=lambda c: (-len(c["columns"]), not c.get("cells"), c.get("baseline", 1.0)))
        published = (u.get("cells") or {}).get("explaining") or {}
        shown = [{"text": claim_text(c, schema, u), "columns": len(c["columns"]),
                  "cells": [{"key": k, "label": cell_labels.get(k, k), "value": published.get(k)}
                            for k in c.get("cells", ())],
                  "explained": c.get("explained", bool(c.get("cells"))), "minimal": c.get("minimal", False),
                  "baseline": c.get("baseline")} for c in singles]
        recs = [{"m": c["m"], "values": [describe_value(schema, k, str(v)) for k, v in c["columns"].items()]}
                for c in records]
        total = u["summary"].get("derived_singletons", len(singles))
        out.append({"geo": u["geo"], "level": u.get("level", ""), "rows": u.get("rows"), "claims": shown,
                    "grid": bool(u.get("grid")),
                    "more": max(total - len(shown), 0), "total": total,
                    "records": recs, "record_columns": [column_title(schema, c) for c in (schema.get("columns") or {})],
                    "more_records": max(u["summary"].get("full_records", 0) - sum(c["m"] for c in records), 0)})
    return out


def _rank_section(rank: Mapping | None, rules: Mapping) -> dict | None:
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


def _linear_section(linear: Mapping | None) -> dict | None:
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


def _flat(value: Any, limit: int = 200) -> str:
    """A setting as text for the appendix: 'not set' for null, 'yes'/'no', 'none' for an empty list."""
    if value is None or value == "":
        return "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, dict)) and not value:
        return "none"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _protection_section(prot: Mapping | None) -> dict | None:
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
        cells = [_flat(c) for c in source]
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
            facts.append((label, _flat(value, 400)))
    for key, label in (("units_protected", "units protected"), ("units_not_protected", "units not protected"),
                       ("persons_in_suppressed_cells", "records in suppressed cells")):
        if key in totals:
            facts.append((label, _flat(totals[key])))
    return {"strategy": prot.get("strategy") or (rec or {}).get("strategy") if isinstance(rec, Mapping) else prot.get("strategy"),
            "offered": rec is not None, "cells": cells[:100], "more": max(len(cells) - 100, 0),
            "count": count if count is not None else len(cells), "before": before.get("verdict"),
            "after": after.get("verdict"), "after_failing": [f.get("rule") for f in after.get("failing") or ()],
            "compare": compare, "facts": facts}


def _intervals_section(doc: Findings, cell_labels: Mapping[str, str]) -> dict | None:
    """Per unit with hidden counts (the first DETAIL_UNITS, narrowest intervals first within a unit): the
    least and greatest value an attacker can prove for each; None when no unit hides a count."""
    units, skipped, total = [], 0, 0
    for u in doc.units:
        skipped += bool(u.get("intervals_skipped"))
        if not u.get("intervals"):
            continue
        total += 1
        if len(units) < DETAIL_UNITS:
            cells = sorted(u["intervals"].items(), key=lambda kv: (kv[1]["hi"] - kv[1]["lo"], kv[0]))
            units.append({"geo": u["geo"], "cells": [dict(iv, cell=k, label=cell_labels.get(k, "")) for k, iv in cells]})
    if not total and not skipped:
        return None
    return {"units": units, "total": total, "more": total - len(units), "skipped": skipped}


def _words(names: list) -> str:
    names = [str(n) for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1] if names else ""


def _reid_section(doc: Findings) -> dict | None:
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
        out["parts"].append({"title": title, "run": True, "key": key, "part": part, "rows": rows,
                             "lift": inf["unlike_majority"]["lift"], "unlike": inf["unlike_majority"]["persons"],
                             "missing": part.get("units_not_measured", 0), "notes": part.get("notes") or []})
    return out


def _parent_level(doc: Findings) -> tuple[str, str | None]:
    """The units' level and the geography level above it (None: no surrounding area, so no baseline)."""
    geography = list((doc.schema or {}).get("geography") or ())
    level = next((u.get("level") for u in doc.units), None) or (geography[-1] if geography else "unit")
    at = geography.index(level) if level in geography else 0
    return level, geography[at - 1] if at > 0 else None


def _memo(doc: Findings, rows: list[dict], reid: Mapping | None, protection: Mapping | None) -> dict:
    """The summary a reviewer pastes into a memo: the worst risks in plain words, and the protection."""
    s = doc.summary
    noun = (doc.schema or {}).get("unit") or "record"
    level, _ = _parent_level(doc)
    n = s.units
    of = f"{n:,} {level}{'' if n == 1 else 's'}"
    risks = []
    if s.units_reconstructed:
        risks.append(f"In {s.units_reconstructed:,} of {of} exactly one dataset fits the published tables: "
                     f"every {noun} in them can be rebuilt.")
    if s.full_records:
        risks.append(f"{plural(s.full_records, noun)} can be rebuilt over every attribute.")
    if s.derived_singletons:
        risks.append(f"{plural(s.derived_singletons, 'statement')} that single out one {noun} follow from "
                     f"combining published numbers, in {s.units_with_derived_singletons:,} of {of}.")
    exact = next((p for p in (reid or {}).get("parts", ()) if p.get("key") == "exact"), None)
    if exact and exact["part"]["confirmed"]["count"]:
        c = exact["part"]["confirmed"]
        risks.append(f"{plural(c['count'], 'person')} ({c['rate'] * 100:.1f}%) are re-identified with proof by an "
                     f"attacker who knows their {reid['known']}.")
    if s.undecided:
        risks.append(f"{plural(s.undecided, 'claim')} could not be decided in the time given: they are not "
                     "shown safe.")
    worst = rows[0] if rows and (rows[0]["derived"] or rows[0]["records"]) else None
    if worst:
        risks.append(f"Worst {worst['level'] or level}: {worst['geo']} ({plural(worst['rows'] or 0, noun)}: "
                     f"{worst['records']:,} rebuilt in full, {worst['derived']:,} derived singleton "
                     f"claim{'' if worst['derived'] == 1 else 's'}).")
    if protection is None:
        advice = "No protection was computed: run audit protect on this output folder for the least suppression or noise that passes."
    elif protection["offered"]:
        cost = [plural(protection["count"], "cell") + " suppressed"] if protection["count"] else []
        cost += [f"{k} {v}" for k, v in protection["facts"] if k in ("rounding base", "noise scale", "epsilon",
                                                                     "records in suppressed cells")]
        advice = (f"Recommended protection: {protection['strategy']}" + (f" ({'; '.join(cost)})" if cost else "")
                  + "; the protected release was attacked again and passes the policy.")
    else:
        advice = ("No protection that passes was found" + (f" with {protection['strategy']}" if protection["strategy"] else "")
                  + (f"; still failing: {', '.join(protection['after_failing'])}" if protection["after_failing"] else "") + ".")
    return {"risks": risks[:5], "advice": advice}


def _table_titles(cell_labels: Mapping[str, str]) -> dict[str, str]:
    """Table id -> title, recovered from the cell labels ("title: cell label")."""
    by: dict[str, list[str]] = {}
    for key, label in cell_labels.items():
        by.setdefault(key.split(":", 1)[0], []).append(label)
    out = {}
    for table, labels in by.items():
        prefix = os.path.commonprefix(labels) if len(labels) > 1 else labels[0]
        cut = prefix.rfind(": ") if len(labels) > 1 else prefix.find(": ")
        out[table] = prefix[:cut] if cut > 0 else table
    return out


def _signoff(doc: Findings, extras: Mapping, cell_labels: Mapping[str, str]) -> list[dict]:
    """Every output with its status (ACRO's convention: pass, fail or review) and the reason: each
    planned table, then each file the audit wrote (confidential, never released)."""
    rules = (doc.rules or {}).get("rules") or {}
    small = rules.get("small_cells") or {}
    threshold = small.get("threshold") if small.get("action") in ("fail", "warn") else None
    below: dict[str, set] = {}
    used: dict[str, int] = {}
    for u in doc.units:
        for key, v in ((u.get("cells") or {}).get("small") or {}).items():
            if threshold and v < threshold:
                below.setdefault(key.split(":", 1)[0], set()).add(u["geo"])
        for c in u.get("claims", ()):
            if c.get("status") == "verified" and c.get("m") == 1 and not c.get("direct"):
                for t in {k.split(":", 1)[0] for k in c.get("cells", ())}:
                    used[t] = used.get(t, 0) + 1
    level, _ = _parent_level(doc)
    out = []
    for table, title in _table_titles(cell_labels).items():
        if table in below:
            status = "fail" if small["action"] == "fail" else "review"
            reason = f"counts below {threshold} in {plural(len(below[table]), level)}"
        elif table in used:
            status, reason = "review", (f"its counts help prove {plural(used[table], 'listed singleton claim')} "
                                        "(with other tables)")
        else:
            status, reason = "pass", f"no count below {threshold}; no listed claim uses it" if threshold else \
                "no listed claim uses it"
        out.append({"name": f"{table}: {title}" if title != table else table, "kind": "table", "status": status,
                    "reason": reason})
    files = {k: v for k, v in (doc.outputs or {}).items() if v}
    files.update({k: f"{k}.json" for k in extras})
    for what, path in files.items():
        out.append({"name": Path(str(path)).name, "kind": "audit file", "status": "fail",
                    "reason": "confidential: holds claims about, or records rebuilt from, the microdata; "
                              "keep it with the microdata, never publish it"})
    return out


def context(doc: Findings, extras: Mapping[str, Mapping] | None = None, store=None) -> dict:
    """Everything the template shows, computed from the findings (and optional rank/linear/protection;
    the riskiest units' claims from the claim store ``store`` when given)."""
    extras = dict(extras or {})
    rules = doc.rules or {}
    rows, derived, gridded = _unit_rows(doc)
    n_units = len(derived)
    cell_labels = doc.cell_labels or {}
    by_cols = _claims_by_columns(doc)
    charts = {}
    if by_cols:
        charts["by_columns"] = Markup(bar_chart(by_cols, title="Verified singleton claims by number of attributes",
                                                xlabel="number of attributes in the claim", ylabel="claims"))
    if n_units > 5:
        charts["distribution"] = Markup(bar_chart(_histogram(derived), title="Units by number of derived singletons",
                                                  xlabel="derived singleton claims in the unit", ylabel="units"))
    reid = _reid_section(doc)
    protection = _protection_section(extras.get("protection"))
    level, parent = _parent_level(doc)
    failing = [{**f.to_json(), "example": label_cells(f.example, cell_labels)} for f in doc.failing]
    warnings = [{**f.to_json(), "example": label_cells(f.example, cell_labels)} for f in doc.warnings]
    detail = _detail(doc, rows, cell_labels, store)
    grids = _grids(doc, gridded, rows, cell_labels)
    return {
        "doc": doc, "verdict": doc.verdict or "not evaluated", "failing": failing,
        "memo": _memo(doc, rows, reid, protection), "signoff": _signoff(doc, extras, cell_labels),
        "level": level, "parent": parent, "noun": (doc.schema or {}).get("unit") or "record",
        "baselines": any(c["baseline"] is not None for d in detail for c in d["claims"]),
        "warnings": warnings, "summary": doc.summary, "rules": rules,
        "rule_titles": _rule_titles(), "units": rows[:TOP_UNITS], "more_units": max(n_units - TOP_UNITS, 0),
        "unit_index": _unit_index(rows),
        "n_units": n_units, "charts": charts,
        "structural": sum((u.get("cells") or {}).get("structural", 0) for u in doc.units),
        "detail": detail, "claim_store": (doc.claim_store or {}).get("file"),
        "detail_limit": DETAIL_UNITS, "claims_limit": CLAIMS_PER_UNIT,
        "schema": doc.schema or {}, "rank": _rank_section(extras.get("rank"), rules),
        "reid": reid, "intervals": _intervals_section(doc, cell_labels),
        "grids": grids,
        "evidence": {"claims": [d["geo"] for d in detail], "tables": [g["geo"] for g in (grids or {}).get("units", ())]},
        "counted": _counted(doc),
        "linear": _linear_section(extras.get("linear")), "protection": protection,
        "appendix": _appendix(doc, extras),
    }


def _counted(doc: Findings) -> dict:
    """What the singleton rules count when they count fewer claims than the tiles (their ``min_columns``):
    the derived singletons a rule counts, and the reasons in words."""
    rules = (doc.rules or {}).get("rules") or {}
    by = doc.summary.singletons_by_columns
    out: dict = {"derived": None, "derived_k": None, "notes": []}
    for rule, kind, what in (("derived_singletons", "derived", "derived singleton claims"),
                             ("direct_singletons", "direct", "published counts of one")):
        k = (rules.get(rule) or {}).get("min_columns")
        if not k or k <= 1 or (rules.get(rule) or {}).get("action") not in ("fail", "warn"):
            continue
        counts = {int(c): n for c, n in (by.get(kind) or {}).items()}
        total, n = sum(counts.values()), sum(v for c, v in counts.items() if c >= k)
        if kind == "derived":
            out["derived"], out["derived_k"] = n, k
        if n != total:
            out["notes"].append(f"the {rule} rule counts only {what} over {k} or more attributes — {n:,} of the "
                                f"{total:,}; the other {total - n:,} fix fewer attributes and are counted in the tiles "
                                "and charts only.")
    return out


def _rule_titles() -> dict[str, str]:
    return {k: v[0] for k, v in RULES.items()}


def _appendix(doc: Findings, extras: Mapping) -> list[tuple[str, list[tuple[str, str]]]]:
    tool = doc.tool or {}
    sections = [("Inputs", [(k, _flat(v)) for k, v in (doc.inputs or {}).items()]),
                ("Exact attack parameters", [(k, _flat(v)) for k, v in (doc.options or {}).items()]),
                ("Policy", [("name", _flat((doc.rules or {}).get("name"))),
                            ("file", _flat((doc.rules or {}).get("source")))] +
                 [(k, "; ".join(f"{a} {b}" if a != "action" else str(b) for a, b in v.items() if b is not None)
                   if isinstance(v, Mapping) else _flat(v))
                  for k, v in ((doc.rules or {}).get("rules") or {}).items()]),
                ("Versions", [(k, _flat(v)) for k, v in tool.items()] +
                 [(k, _flat(v)) for k, v in (doc.versions or {}).items()]),
                ("Run", [("created", _flat(doc.created)), ("run time (s)", _flat(doc.seconds)),
                         ("seed", _flat((doc.options or {}).get("seed", "?")))] +
                 [(k, _flat(v)) for k, v in (doc.run or {}).items()])]
    published = doc.published or {}
    if published:
        sections.insert(1, ("Published release (no microdata)", [(k, _flat(v)) for k, v in published.items()]))
        sections.insert(2, ("Not available without the microdata",
                            [(_flat(u.get("what")), _flat(u.get("reason"))) for u in doc.unavailable or ()]))
    rank = extras.get("rank") or {}
    if rank:
        sections.append(("Ranking attack parameters", [(k, _flat(v)) for k, v in rank.items()
                                                      if k not in ("pooled", "units")]))
    linear = extras.get("linear") or {}
    if linear:
        sections.append(("Linear attack parameters", [(k, _flat(v)) for k, v in linear.items()
                                                     if k in ("data", "secret", "public", "n_rows", "n_queries", "seed",
                                                              "method", "sweep_settings")]))
    return sections


# ---------------------------------------------------------------------------------------------- render

TEMPLATES = importlib.resources.files("audit") / "_reports"  # the top-level reports/ folder, shipped inside audit


def _environment():
    import jinja2

    def load(name: str) -> str:
        return (TEMPLATES / name).read_text(encoding="utf-8")

    env = jinja2.Environment(loader=jinja2.FunctionLoader(lambda n: load(n)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "separators": (",", ":")}  # the unit index: no spaces
    env.filters["pct"] = lambda v, d=1: "–" if v is None else f"{float(v) * 100:.{d}f}%"
    env.filters["plural"] = lambda n, noun, many=None: plural(n, noun, many) if n is not None else "–"
    env.filters["noun"] = lambda n, noun, many=None: noun if n == 1 else (many or noun + "s")
    env.filters["num"] = lambda v: "–" if v is None else (f"{v:,}" if isinstance(v, int) else f"{v:,.3g}")
    return env


def render(doc: Findings | Mapping, extras: Mapping[str, Mapping] | None = None, store=None) -> str:
    """The report as one HTML string (``doc``: findings, or their JSON document)."""
    doc = doc if isinstance(doc, Findings) else Findings.from_json(doc)
    env = _environment()
    css = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2").render(css=Markup(css), **context(doc, extras, store))


def write_report(doc: Findings, path: Path, extras: Mapping[str, Mapping] | None = None, store=None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(render(doc, extras, store), encoding="utf-8")
    tmp.replace(path)
    return path
