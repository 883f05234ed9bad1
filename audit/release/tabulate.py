"""Tabulation: microdata + schedule -> the release, per geographic unit."""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ..errors import AuditError
from .magnitude import Contributions
from .constraints import EMPTY, PUBLISHED, STRUCTURAL, SUPPRESSED, UnitRelease, Value, round_half_up, round_to_base
from ..specs.schedule import MARGIN, Schedule, Table
from ..specs.schema_types import Schema
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def units_of(frame: pd.DataFrame, schema: Schema, level: str) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """The geographic units at ``level`` as (geo key, row indices), in sorted order."""
    keys = list(schema.geography[: schema.geography.index(level) + 1])
    if frame.empty:
        return []
    groups = frame.groupby(keys, sort=True).indices
    return [((k,) if isinstance(k, str) else tuple(k), np.asarray(v)) for k, v in groups.items()]


def median(values: np.ndarray) -> Fraction:
    """Median of integers: the middle value, or the mean of the two middle values."""
    ordered = np.sort(values)
    n = len(ordered)
    mid = n // 2
    return Fraction(int(ordered[mid])) if n % 2 else Fraction(int(ordered[mid - 1]) + int(ordered[mid]), 2)


def tabulate(frame: pd.DataFrame, schema: Schema, schedule: Schedule) -> list[UnitRelease]:
    """Publish every cell of every table for every unit, applying the schedule's protection.

    ``schedule.suppress`` (per-unit suppression) hides the listed cells in that unit only; they are
    marked suppressed on the cell, so the attacker model gives them [0, N].
    """
    releases = []
    per_unit = getattr(schedule, "suppress", None) or {}
    used: set[str] = set()
    for level in schedule.levels:
        tables = [t for t in schedule.tables if t.level == level]
        cells = [c for t in tables for c in t.cells]
        offsets = np.cumsum([0] + [len(t.cells) for t in tables])
        needs_rows = any(s.kind != "count" for c in cells for s in c.stats)
        units = units_of(frame, schema, level)
        masks = _masks(frame, cells) if needs_rows else None
        counted = None if needs_rows else _unit_counts(frame, cells, units)
        for u, (geo, idx) in enumerate(units):
            sub, sub_masks = (frame.iloc[idx], masks[idx]) if needs_rows else (None, counted[u])
            values: list[Value] = []
            magnitude: dict = {}
            hidden = per_unit.get("/".join(geo), frozenset())
            if hidden:
                used.add("/".join(geo))
            for table, base in zip(tables, offsets):
                values.extend(_publish_table(_hide(table, hidden) if hidden else table, sub, sub_masks, int(base),
                                             magnitude, schema.contributor))
            known = (getattr(schedule, "apriori", None) or {}).get("/".join(geo))
            releases.append(UnitRelease(level, geo, tuple(values), {t.id: t.protection for t in tables}, magnitude,
                                        dict(known.levels) if known else {}))
    check_units(schedule, used)
    return releases


def check_units(schedule: Schedule, used: set[str]) -> None:
    """The schedule's per-unit suppress lists name only units of the data (``used``: those tabulated)."""
    unknown = sorted(set(getattr(schedule, "suppress", None) or {}) - used)
    if unknown:
        raise AuditError(f"suppress: unit '{unknown[0]}' is not a geographic unit of the data"
                         + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""), schedule.source,
                         fix="key units by their geography codes joined by '/', e.g. '000100/1003'")


def units_here(frame: pd.DataFrame, schema: Schema, schedule: Schedule) -> Schedule:
    """The schedule with the per-unit suppress lists of ``frame``'s units only: a chunk of a stream, whose
    other units are in other chunks (:func:`check_units` once every chunk is tabulated)."""
    per_unit = getattr(schedule, "suppress", None) or {}
    if not per_unit:
        return schedule
    here = {"/".join(geo) for level in schedule.levels for geo, _ in units_of(frame, schema, level)}
    return replace(schedule, suppress={k: v for k, v in per_unit.items() if k in here})


def _hide(table: Table, hidden: frozenset) -> Table:
    """The table with the unit's extra suppressed cells marked ``suppressed`` (same keys)."""
    if not any(c.key in hidden for c in table.cells):
        return table
    return replace(table, cells=tuple(replace(c, suppressed=True) if c.key in hidden else c for c in table.cells))


def _unit_counts(frame: pd.DataFrame, cells: list, units: list) -> np.ndarray:
    """Units x cells counts, cell by cell over each distinct clause's mask (count-only tables): memory of
    the counts and the clauses, never of persons x cells (100,000 persons x 8,806 cells was 2.6 GB)."""
    unit = np.zeros(len(frame), dtype=np.int64)
    for u, (_, idx) in enumerate(units):
        unit[idx] = u
    clauses: dict = {}
    out = np.zeros((len(units), len(cells)), dtype=np.int64)
    for k, cell in enumerate(cells):
        mask = np.ones(len(frame), dtype=bool)
        for clause in cell.predicate.clauses:
            if clause not in clauses:
                clauses[clause] = frame[clause[0]].isin(list(clause[1])).to_numpy()
            mask &= clauses[clause]
        out[:, k] = np.bincount(unit[mask], minlength=len(units))
    return out


def _masks(frame: pd.DataFrame, cells: list) -> np.ndarray:
    """Rows x cells membership, as ``Predicate.mask`` would give, computing each distinct clause once."""
    clauses: dict = {}
    columns = []
    for cell in cells:
        mask = np.ones(len(frame), dtype=bool)
        for clause in cell.predicate.clauses:
            if clause not in clauses:
                clauses[clause] = frame[clause[0]].isin(list(clause[1])).to_numpy()
            mask &= clauses[clause]
        columns.append(mask)
    return np.column_stack(columns) if columns else np.zeros((len(frame), 0), dtype=bool)


@lru_cache(maxsize=None)
def _whole(n: int) -> Fraction:
    return Fraction(n)


def _publish_table(table: Table, sub: pd.DataFrame | None, sub_masks: np.ndarray, base: int,
                   magnitude: dict | None = None, contributor: str | None = None) -> list[Value]:
    """The table's values in one unit; each published sum's contributors go into ``magnitude`` (by value key)."""
    # sub_masks: the unit's rows x cells, or (count-only tables) its counts per cell
    counts = (sub_masks[:, base: base + len(table.cells)].sum(axis=0) if sub_masks.ndim == 2
              else sub_masks[base: base + len(table.cells)])
    p = table.protection
    structural = np.array([c.structural for c in table.cells], dtype=bool)
    if counts[structural].any():
        cell = table.cells[int(np.flatnonzero(structural & (counts > 0))[0])]
        raise AuditError(f"cell {cell.key} ({cell.label}) can hold no one under the schema's edits, yet "
                         f"{int(counts[structural].max())} rows fall in it", "data",
                         fix="correct those rows, or the schema's constraints")
    small = (counts < p.suppress_below) & ((counts > 0) | p.protect_zeros) if p.suppress_below else False
    suppressed = ~structural & (np.array([c.suppressed for c in table.cells], dtype=bool) | small)
    if p.complementary and p.suppress_below is not None and table.lines:
        suppressed = _complementary(table, counts, suppressed)
    out = []
    for j, cell in enumerate(table.cells):
        for stat in cell.stats:
            if structural[j]:
                out.append(Value(cell, stat, STRUCTURAL, None if stat.kind in ("mean", "median") else Fraction(0)))
                continue
            if suppressed[j]:
                why = "primary" if small is not False and small[j] else "secondary"
                out.append(Value(cell, stat, SUPPRESSED, suppression=why))
                continue
            # counts come from the mask sums; only sums, means and medians need the matching rows
            exact = _whole(int(counts[j])) if stat.kind == "count" else exact_value(stat, sub[sub_masks[:, base + j]])
            if exact is None:
                out.append(Value(cell, stat, EMPTY))
            elif stat.rounded:
                out.append(Value(cell, stat, PUBLISHED, round_half_up(exact, stat.decimals)))
            elif stat.kind == "count" and p.round_to:
                out.append(Value(cell, stat, PUBLISHED, Fraction(round_to_base(int(exact), p.round_to))))
            else:
                out.append(Value(cell, stat, PUBLISHED, exact))
                if stat.kind == "sum" and magnitude is not None:
                    rows = sub[sub_masks[:, base + j]]
                    magnitude[out[-1].key] = Contributions.of(
                        rows[stat.column].to_numpy(), rows[contributor].to_numpy() if contributor else None)
    return out


def exact_value(stat, rows: pd.DataFrame) -> Fraction | None:
    """The true value of a statistic over the matching rows (None: mean or median of no rows)."""
    if stat.kind == "count":
        return Fraction(len(rows))
    vals = rows[stat.column].to_numpy(dtype=np.int64)
    if stat.kind == "sum":
        return Fraction(int(vals.sum()))
    if len(vals) == 0:
        return None
    if stat.kind == "mean":
        return Fraction(int(vals.sum()), len(vals))
    return median(vals)


def _complementary(table: Table, counts: np.ndarray, suppressed: np.ndarray) -> np.ndarray:
    """Secondary suppression: no line of the table (a total and its parts) may have exactly one
    suppressed cell (a simple heuristic). Structural zeros are known, so never chosen."""
    suppressed = suppressed.copy()
    cost = [(counts[j] == 0, c.id.count(MARGIN), counts[j], j) for j, c in enumerate(table.cells)]
    changed = True
    while changed:
        changed = False
        for total, parts in table.lines:
            members = (total, *parts)
            if sum(suppressed[j] for j in members) != 1:
                continue
            shown = [j for j in members if not suppressed[j] and not table.cells[j].structural]
            if shown:
                suppressed[min(shown, key=cost.__getitem__)] = changed = True
    return suppressed


def release_frame(releases: list[UnitRelease], schema: Schema) -> pd.DataFrame:
    """The release as one long table: geography, table, cell, label, statistic, value, status."""
    columns: dict[str, list] = {name: [] for name in
                                (*schema.geography, "level", "table", "cell", "label", "statistic", "value", "status")}
    for unit in releases:
        n = len(unit.values)
        for name, code in zip(schema.geography, unit.geo):
            columns[name] += [code] * n
        for name in schema.geography[len(unit.geo):]:
            columns[name] += [""] * n
        columns["level"] += [unit.level] * n
        columns["table"] += [v.cell.table for v in unit.values]
        columns["cell"] += [v.cell.id for v in unit.values]
        columns["label"] += [v.cell.label for v in unit.values]
        columns["statistic"] += [v.stat.name for v in unit.values]
        columns["value"] += [v.text() for v in unit.values]
        columns["status"] += [v.status for v in unit.values]
    return pd.DataFrame(columns)
