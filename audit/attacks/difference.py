"""Difference attacks: two published cells, one nested in the other, whose difference is a person or two.

Lecture notes §1.1: suppressing small cells does not stop an attacker who subtracts two large ones.
For every geographic unit and every pair of published cells where the inner cell's predicate implies
the outer one's (structurally: each clause of the outer cell is either the whole domain or contains
the inner cell's clause on that column), the attacker learns the count of ``outer and not inner``
and, from published sums and means, the total of a numeric column over those rows. The defender
knows the data, so a pair is reported when that difference holds between 1 and ``max_rows`` rows
and the published count difference is below the suppression threshold: a small cell the release
was meant to hide, recovered by subtraction. Each finding names both cells, what the release implies
about the difference, and the records of the individuals it exposes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil, floor

import numpy as np

from ..specs.query import Predicate, nested
from ..release.constraints import PUBLISHED, Constraint, UnitRelease, Value, constraints_of
from ..specs.schedule import Schedule
from ..specs.schema_types import Schema
from ..release.tabulate import tabulate, units_of
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


@dataclass(frozen=True)
class Exposure:
    """One difference attack: ``outer - inner`` covers the rows in ``records``."""

    level: str
    geo: tuple[str, ...]
    outer: str
    outer_label: str
    inner: str
    inner_label: str
    difference: str                     # the difference in words ("Female and race in {W}" or "A and not B")
    count: tuple[int, int]              # what the release implies about the difference's size
    totals: dict                        # column -> (lo, hi): implied total over the difference's rows
    rows: tuple[int, ...]               # row positions in the microdata (defender's view)
    records: tuple[dict, ...] = field(compare=False)

    @property
    def singles_out(self) -> bool:
        """The release proves the difference is exactly one person."""
        return self.count == (1, 1)

    def revealed(self) -> dict:
        """Values learned exactly about a singled-out person (column -> value)."""
        if not self.singles_out:
            return {}
        return {col: lo for col, (lo, hi) in self.totals.items() if lo == hi}

    def to_dict(self) -> dict:
        return {"level": self.level, "geo": list(self.geo), "outer": self.outer, "outer_label": self.outer_label,
                "inner": self.inner, "inner_label": self.inner_label, "difference": self.difference,
                "count": list(self.count), "totals": {c: list(v) for c, v in self.totals.items()},
                "revealed": self.revealed(), "rows": list(self.rows), "records": list(self.records)}


def _integer_bounds(c: Constraint) -> tuple[int | None, int | None]:
    lo = hi = None
    if c.lo is not None:
        lo = ceil(c.lo) + (1 if c.lo_open and c.lo == ceil(c.lo) else 0)
    if c.hi is not None:
        hi = floor(c.hi) - (1 if c.hi_open and c.hi == floor(c.hi) else 0)
    return lo, hi


def _implied(values: list[Value], protection) -> dict:
    """Per cell: {"count": (lo, hi), column: (lo, hi) for the column's total} from its published values."""
    out: dict = {}
    for v in values:
        for c in constraints_of(v, protection):
            if c.statistic.kind == "count":
                out["count"] = _integer_bounds(c)
            elif c.statistic.kind == "sum":
                out.setdefault(c.statistic.column, _integer_bounds(c))
    count = out.get("count")
    for v in values:  # a mean times an exact count bounds the total
        if v.stat.kind != "mean" or v.status != PUBLISHED or not count or count[0] != count[1] or count[0] is None:
            continue
        for c in constraints_of(v, protection):
            n = count[0]
            scaled = Constraint(c.key, c.predicate, c.statistic, None if c.lo is None else c.lo * n,
                                None if c.hi is None else c.hi * n, c.lo_open, c.hi_open)
            lo, hi = _integer_bounds(scaled)
            old = out.get(c.statistic.column)
            out[c.statistic.column] = (lo, hi) if old is None else (max(old[0], lo), min(old[1], hi))
    return out


def _describe(outer: Predicate, inner: Predicate, outer_label: str, inner_label: str, schema: Schema | None) -> str:
    o, i = outer.as_dict(), inner.as_dict()
    differing = [c for c in i if o.get(c) != i[c]]
    if len(differing) == 1:
        col = differing[0]
        base = o.get(col, frozenset(schema.column(col).codes) if schema and col in schema.names else None)
        if base is not None:
            rest = sorted(base - i[col])
            contiguous = all(isinstance(v, int) for v in rest) and rest == list(range(rest[0], rest[-1] + 1))
            shown = f"{rest[0]}..{rest[-1]}" if contiguous and len(rest) > 2 else rest
            return f"{outer_label} and {col} in {shown}"
    return f"{outer_label} and not {inner_label}"


def find_differences(frame: pd.DataFrame, schema: Schema, schedule: Schedule,
                     releases: list[UnitRelease] | None = None, max_rows: int | None = None) -> list[Exposure]:
    """Every nested pair of published cells, per unit, whose difference is 1..``max_rows`` rows.

    ``max_rows`` defaults to the suppression threshold minus one (2 without suppression). A pair is
    kept only when both counts are published and the count difference the release implies is below
    the threshold, i.e. the difference is a cell the agency would have suppressed.
    """
    releases = tabulate(frame, schema, schedule) if releases is None else releases
    findings: list[Exposure] = []
    unit_rows = {level: dict(units_of(frame, schema, level)) for level in schedule.levels}
    for unit in releases:
        idx = unit_rows[unit.level].get(unit.geo)
        if idx is None:
            continue
        sub = frame.iloc[idx]
        by_cell: dict[str, list[Value]] = {}
        for v in unit.values:
            by_cell.setdefault(v.cell.key, []).append(v)
        cells = []
        for key, values in by_cell.items():
            cell = values[0].cell
            if not any(v.stat.kind == "count" and v.status == PUBLISHED for v in values):
                continue  # count suppressed or not published: nothing to subtract
            protection = unit.protection[cell.table]
            implied = _implied(values, protection)
            count = implied.get("count")
            if count is None or count[0] is None or count[1] is None:
                continue
            cells.append((cell, protection, implied, cell.predicate.mask(sub)))
        for outer, p_out, imp_out, m_out in cells:
            for inner, p_in, imp_in, m_in in cells:
                if outer is inner or not nested(inner.predicate, outer.predicate, schema):
                    continue
                if nested(outer.predicate, inner.predicate, schema):
                    continue  # the same set of rows
                diff_rows = np.flatnonzero(m_out & ~m_in)
                threshold = max(p_out.suppress_below or 0, p_in.suppress_below or 0) or None
                limit = max_rows if max_rows is not None else ((threshold - 1) if threshold else 2)
                if not 1 <= len(diff_rows) <= limit:
                    continue
                lo = max(0, imp_out["count"][0] - imp_in["count"][1])
                hi = imp_out["count"][1] - imp_in["count"][0]
                if threshold is not None and lo >= threshold:
                    continue
                totals = {}
                for col in sorted(set(imp_out) & set(imp_in) - {"count"}):
                    (a_lo, a_hi), (b_lo, b_hi) = imp_out[col], imp_in[col]
                    if None not in (a_lo, a_hi, b_lo, b_hi):
                        totals[col] = (a_lo - b_hi, a_hi - b_lo)
                records = tuple({k: (v.item() if hasattr(v, "item") else v) for k, v in sub.iloc[r].items()}
                                for r in diff_rows)
                findings.append(Exposure(unit.level, unit.geo, outer.key, outer.label, inner.key, inner.label,
                                         _describe(outer.predicate, inner.predicate, outer.label, inner.label, schema),
                                         (lo, hi), totals, tuple(int(idx[r]) for r in diff_rows), records))
    return findings
