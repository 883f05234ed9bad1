"""What a reviewer signs in the report: the memo's risks and advice, each output's sign-off status, what the
singleton rules count, and the appendix of inputs, options and versions."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..findings.model import Findings
from ..policy.checks import exact_counts
from ..policy.definitions import RULES
from .sections import flat
from .unfinished import table_status, undecided_sentence, unfinished_tables
from .words import plural


def parent_level(doc: Findings) -> tuple[str, str | None]:
    """The units' level and the geography level above it (None: no surrounding area, so no baseline)."""
    geography = list((doc.schema or {}).get("geography") or ())
    level = next((u.get("level") for u in doc.units), None) or (geography[-1] if geography else "unit")
    at = geography.index(level) if level in geography else 0
    return level, geography[at - 1] if at > 0 else None


def memo(doc: Findings, rows: list[dict], reid: Mapping | None, protection: Mapping | None) -> dict:
    """The summary a reviewer pastes into a memo: the worst risks in plain words, and the protection."""
    s = doc.summary
    noun = (doc.schema or {}).get("unit") or "record"
    level, _ = parent_level(doc)
    n = s.units
    of = plural(n, level)
    risks = []
    if s.units_reconstructed:
        risks.append(f"In {s.units_reconstructed:,} of {of} exactly one dataset fits the published tables: "
                     f"every {noun} in them can be rebuilt.")
    if s.full_records:
        risks.append(f"{plural(s.full_records, noun)} can be rebuilt over every published attribute.")
    if s.derived_singletons:
        one = s.derived_singletons == 1
        risks.append(f"{plural(s.derived_singletons, 'statement')} that single{'s' if one else ''} out one {noun} "
                     f"follow{'s' if one else ''} from combining published numbers, in {s.units_with_derived_singletons:,} of {of}.")
    exact = next((p for p in (reid or {}).get("parts", ()) if p.get("key") == "exact"), None)
    if exact and exact["part"]["confirmed"]["count"]:
        c = exact["part"]["confirmed"]
        risks.append(f"{plural(c['count'], 'person')} ({c['rate'] * 100:.1f}%) are re-identified with proof by an "
                     f"attacker who knows their {reid['known']}.")
    if s.undecided:
        risks.append(undecided_sentence(doc))
    worst = rows[0] if rows and (rows[0]["derived"] or rows[0]["records"]) else None
    if worst:
        risks.append(f"Worst {worst['level'] or level}: {worst['geo']} ({plural(worst['rows'] or 0, noun)}: "
                     f"{worst['records']:,} rebuilt in full, {plural(worst['derived'], 'derived singleton claim')}).")
    if protection is None and doc.verdict == "pass":
        advice = "No protection is needed under this policy (a schedule audit protect wrote passes as it is)."
    elif protection is None:
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


def table_titles(cell_labels: Mapping[str, str]) -> dict[str, str]:
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


def signoff(doc: Findings, extras: Mapping, cell_labels: Mapping[str, str]) -> list[dict]:
    """Every output with its status (ACRO's convention: pass, fail or review) and the reason: each
    planned table, then each file the audit wrote (``confidential``: never released, but no failure of the release)."""
    rules = (doc.rules or {}).get("rules") or {}
    small = rules.get("small_cells") or {}
    threshold = small.get("threshold") if small.get("action") in ("fail", "warn") else None
    below: dict[str, set] = {}
    used: dict[str, int] = {}
    for u in doc.units:
        for key, v in exact_counts(u).items():
            if threshold and 1 <= v < threshold:
                below.setdefault(key.split(":", 1)[0], set()).add(u["geo"])
        for c in u.get("claims", ()):
            if c.get("status") == "verified" and c.get("m") == 1 and not c.get("direct"):
                for t in {k.split(":", 1)[0] for k in c.get("cells", ())}:
                    used[t] = used.get(t, 0) + 1
    level, _ = parent_level(doc)
    titles = table_titles(cell_labels)
    open_units = unfinished_tables(doc, titles)
    out = []
    for table, title in titles.items():
        if table in open_units:  # fail closed: a table a unit was not (fully) attacked with never passes
            status, reason = table_status(open_units[table], rules)
            if table in below:
                status = "fail" if small["action"] == "fail" else status
                reason = f"counts below {threshold} in {plural(len(below[table]), level)}; {reason}"
        elif table in below:
            status = "fail" if small["action"] == "fail" else "review"
            reason = f"counts below {threshold} in {plural(len(below[table]), level)}"
        elif table in used:
            status, reason = "review", (f"its counts help prove {plural(used[table], 'listed singleton claim')} "
                                        "(with other tables)")
        else:
            status, reason = "pass", f"no published count below {threshold} (the policy's threshold); no listed claim uses it" if threshold else \
                "no listed claim uses it"
        out.append({"name": f"{table}: {title}" if title != table else table, "kind": "table", "status": status,
                    "reason": reason})
    files = {k: v for k, v in (doc.outputs or {}).items() if v}
    files.update({k: f"{k}.json" for k in extras})
    for what, path in files.items():
        out.append({"name": Path(str(path)).name, "kind": "audit file", "status": "confidential",
                    "reason": "holds claims about, or records rebuilt from, the microdata; "
                              "keep it with the microdata, never publish it"})
    return out


def counted(doc: Findings) -> dict:
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


def rule_titles() -> dict[str, str]:
    return {k: v[0] for k, v in RULES.items()}


def appendix(doc: Findings, extras: Mapping) -> list[tuple[str, list[tuple[str, str]]]]:
    tool = doc.tool or {}
    sections = [("Inputs", [(k, flat(v)) for k, v in (doc.inputs or {}).items()]),
                ("Exact attack parameters", [(k, flat(v)) for k, v in (doc.options or {}).items()]),
                ("Policy", [("name", flat((doc.rules or {}).get("name"))),
                            ("file", flat((doc.rules or {}).get("source")))] +
                 [(k, "; ".join(f"{a} {b}" if a != "action" else str(b) for a, b in v.items() if b is not None)
                   if isinstance(v, Mapping) else flat(v))
                  for k, v in ((doc.rules or {}).get("rules") or {}).items()]),
                ("Versions", [(k, flat(v)) for k, v in tool.items()] +
                 [(k, flat(v)) for k, v in (doc.versions or {}).items()]),
                ("Run", [("created", flat(doc.created)), ("run time (s)", flat(doc.seconds)),
                         ("seed", flat((doc.options or {}).get("seed", "?")))] +
                 [(k, flat(v)) for k, v in (doc.run or {}).items()])]
    published = doc.published or {}
    if published:
        sections.insert(1, ("Published release (no microdata)", [(k, flat(v)) for k, v in published.items()]))
        sections.insert(2, ("Not available without the microdata",
                            [(flat(u.get("what")), flat(u.get("reason"))) for u in doc.unavailable or ()]))
    rank = extras.get("rank") or {}
    if rank:
        sections.append(("Ranking attack parameters", [(k, flat(v)) for k, v in rank.items()
                                                      if k not in ("pooled", "units")]))
    linear = extras.get("linear") or {}
    if linear:
        sections.append(("Linear attack parameters", [(k, flat(v)) for k, v in linear.items()
                                                     if k in ("data", "secret", "public", "n_rows", "n_queries", "seed",
                                                              "method", "sweep_settings")]))
    return sections
