"""What to do when a unit is too small to protect cheaply: the usual remedies, each measured (issue 35).

A unit whose protection hides a large share of its cells, or that no suppression protects, is named
with two remedies of SDC practice, each re-audited on that unit alone: merged with a neighbour (the
adjacent unit of the same parent, in code order), and each of its tables dropped. The measure is the
claims the policy's failing rules count there (verified derived singletons, records rebuilt) before and
after, so the officer chooses knowing what each removes. Collapsing categories needs a recode of the
agency's choosing: it is suggested, not measured.
"""
from __future__ import annotations

from dataclasses import replace

from ..attacks.exact import ExactOptions
from ..findings.document import run_exact
from ..inputs import Inputs
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

COSTLY_SHARE = 0.25  # a unit whose protection hides at least this share of its cells is costly to protect
MEASURED = 5  # costly units whose remedies are measured (the smallest first: each is a few audits)


def costly(unit: dict) -> bool:
    """Whether a protected unit (protection.json's ``units`` entry) is too small to protect cheaply, or unprotectable."""
    if unit.get("undefeatable") or unit.get("status") in ("unfixable", "gave-up"):
        return True
    return (unit.get("information_loss") or {}).get("share_of_cells", 0.0) >= COSTLY_SHARE


def _risk(inputs: Inputs, frame: pd.DataFrame, exact: ExactOptions, rules, tables=None) -> tuple[int, str]:
    """The claims the failing rules count in ``frame``'s units (under ``tables``, default all), and the verdict."""
    schedule = inputs.schedule if tables is None else replace(inputs.schedule, tables=tables, suppress={})
    doc = run_exact(replace(inputs, frame=frame, schedule=schedule), exact, rules=rules)
    return sum(c.count or 0 for c in doc.checks if c.outcome == "fail"), doc.verdict or "?"


def remedies(inputs: Inputs, report: dict, exact: ExactOptions, rules) -> list[dict]:
    """For each costly unit of ``report`` (protection.json): its measured remedies, ``{"unit", "remedy", "before",
    "after", "verdict"}`` (claims the failing rules count). Only for schedules whose tables are all at one level."""
    levels = {t.level for t in inputs.schedule.tables}
    geography = list(inputs.schema.geography)
    if len(levels) != 1:
        return []
    depth = geography.index(next(iter(levels))) + 1
    cols = geography[:depth]
    keys = inputs.frame[cols].astype(str).agg("/".join, axis=1)
    codes = sorted(set(keys))
    out = []
    todo = [u for u in report.get("units", ()) if costly(u) and u["geo"] in codes and u.get("rows", 0) <= exact.max_rows]
    for unit in sorted(todo, key=lambda u: u.get("rows", 0))[:MEASURED]:
        geo = unit["geo"]
        mine = inputs.frame[keys == geo]
        before, _ = _risk(inputs, mine, exact, rules)
        i = codes.index(geo)
        parent = geo.rsplit("/", 1)[0] if depth > 1 else None
        near = [c for c in (codes[i - 1] if i else None, codes[i + 1] if i + 1 < len(codes) else None)
                if c is not None and (parent is None or c.rsplit("/", 1)[0] == parent)]
        if near:
            other = min(near, key=lambda c: int((keys == c).sum()))
            both = inputs.frame[(keys == geo) | (keys == other)].copy()
            apart, _ = _risk(inputs, both, exact, rules)
            both[cols[-1]] = both[cols[-1]].astype(str).where(keys[both.index] != other, geo.rsplit("/", 1)[-1])
            after, verdict = _risk(inputs, both, exact, rules)
            out.append({"unit": geo, "remedy": f"merge with {other}", "before": apart, "after": after,
                        "verdict": verdict})
        for table in inputs.schedule.tables if len(inputs.schedule.tables) > 1 else ():
            rest = tuple(t for t in inputs.schedule.tables if t.id != table.id)
            after, verdict = _risk(inputs, mine, exact, rules, rest)
            out.append({"unit": geo, "remedy": f"drop table {table.id}", "before": before, "after": after,
                        "verdict": verdict})
    return out


def remedy_lines(report: dict, found: list[dict]) -> list[str]:
    """The printout: per costly unit, why, then each remedy with its measured effect."""
    lines = []
    for unit in report.get("units", ()):
        mine = [r for r in found if r["unit"] == unit["geo"]]
        if not mine:
            continue
        loss = unit.get("information_loss") or {}
        why = ("no suppression protects it" if unit.get("undefeatable") or unit.get("status") == "unfixable" else
               f"{loss.get('cells_suppressed', 0)} of {loss.get('cells_published', 0)} cells hidden for "
               f"{unit.get('rows', '?')} {'person' if unit.get('rows') == 1 else 'persons'}")
        lines.append(f"{unit['geo']}: too small to protect cheaply ({why}). Remedies, each re-audited "
                     "(claims the failing rules count, before -> after):")
        lines += [f"  {r['remedy']}: {r['before']} -> {r['after']} ({r['verdict']})" for r in mine]
        lines.append("  or collapse categories of its tables (a recode in the schema), and audit again")
    return lines
