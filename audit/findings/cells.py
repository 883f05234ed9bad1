"""What each unit publishes, as the findings carry it: counts by status, the values that explain
its claims (its own and, for a jointly proved unit, its coarser unit's and siblings'), and the table
grids the report draws for the riskiest units."""
from __future__ import annotations

import heapq
from functools import partial
from typing import Mapping

from ..release.constraints import EMPTY, PUBLISHED, STRUCTURAL, SUPPRESSED, UnitRelease, Value, pinned_counts
from ..policy.definitions import SMALL_MAX

AUTO_CAP_UNITS = 200  # past this many units a run lists fewer claims and keeps fewer grids
GRID_UNITS = 10  # units whose every published value is kept (``grid``: the report draws their tables)
GRID_UNITS_LARGE = 5  # the same in runs of more than AUTO_CAP_UNITS units


def grid_code(value: Value, round_to: int | None, noisy: float | None = None) -> str:
    """One published value in a unit's ``grid``: a status letter, then the value as published.

    ``p`` published exactly, ``r`` rounded to the table's base, ``n`` published with noise (``noisy``:
    the value published instead, from ``audit protect --strategy noise``'s draw), ``P`` primary
    suppression (count below the threshold), ``S`` secondary suppression, ``D`` suppressed (why not
    known: a published release read back), ``z`` structural zero, ``e`` empty (a mean or median of no rows).
    """
    if noisy is not None and value.status == PUBLISHED:
        return f"n{noisy:g}"
    if value.status == SUPPRESSED:
        return {"primary": "P", "secondary": "S"}.get(value.suppression, "D")
    if value.status == STRUCTURAL:
        return "z" + ("" if value.value is None else value.text())
    if value.status == EMPTY:
        return "e"
    rounded = value.stat.kind == "count" and round_to is not None and round_to > 1
    return ("r" if rounded else "p") + value.text()


def grid_json(release: UnitRelease, noisy: Mapping[str, float] | None = None) -> dict[str, str]:
    """Every value the unit publishes: cell key (``TABLE:CELL``) -> its statistics' :func:`grid_code`
    in the table's order of statistics, separated by spaces (``noisy``: value key -> the value
    published with noise in its place)."""
    out: dict[str, list[str]] = {}
    for v in release.values:
        protection = release.protection.get(v.cell.table)
        out.setdefault(v.cell.key, []).append(grid_code(v, protection.round_to if protection else None,
                                                        (noisy or {}).get(v.key)))
    return {k: " ".join(codes) for k, codes in out.items()}


def grid_rank(unit: dict) -> tuple:
    """How high a unit comes among those whose tables are kept: the report's riskiest units first."""
    s = unit["summary"]
    return (s.get("full_records", 0), s.get("derived_singletons", 0), s.get("undecided", 0),
            (unit.get("cells") or {}).get("suppressed", 0), tuple(-ord(ch) for ch in unit["geo"]))


def grid_cap(units: int) -> int:
    """Units whose tables findings.json keeps, by the size of the run."""
    return GRID_UNITS if units <= AUTO_CAP_UNITS else GRID_UNITS_LARGE


class GridKeeper:
    """The ``cap`` highest-ranked units seen so far (:func:`grid_rank`) carry their ``grid``; a unit
    pushed out loses it again. Offered every unit of a run, the keeper ends with the run's top ``cap``."""

    def __init__(self, cap: int):
        self.cap, self.heap, self.count = cap, [], 0

    def offer(self, unit: dict, grid) -> bool:
        """Give ``unit`` its ``grid`` (a dict, or a callable that makes it) when it ranks among the
        first ``cap``; True when it does."""
        if grid is None or self.cap <= 0:
            return False
        self.count += 1
        item = (grid_rank(unit), self.count, unit)
        if len(self.heap) < self.cap:
            heapq.heappush(self.heap, item)
        elif item[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, item)[2].pop("grid", None)
        else:
            return False
        unit["grid"] = grid() if callable(grid) else grid
        return True


def tables_json(schedule, schema) -> list[dict]:
    """The table schedule as the report draws it: per table its id, title, level, statistics, cells
    (ids in order) and, for cross-classified tables, the ``by`` axes with their codes and labels
    (``*``: the margin)."""
    out = []
    for t in schedule.tables:
        axes = []
        if t.by:
            combos = [c.id.split(",") for c in t.cells]
            for i, name in enumerate(t.by):
                codes = list(dict.fromkeys(combo[i] for combo in combos))
                col = schema.recode(name) or schema.column(name)
                axes.append({"column": name, "title": str(getattr(col, "title", None) or name),
                             "codes": [[c, "Total" if c == "*" else str(schema.code_label(name, c))] for c in codes]})
        stats = list(dict.fromkeys(s.name for c in t.cells for s in c.stats))
        p = t.protection
        out.append({"id": t.id, "title": t.title, "level": t.level, "stats": stats, "by": axes,
                    "cells": [c.id for c in t.cells],
                    "protection": {"suppress_below": p.suppress_below, "complementary": p.complementary,
                                   "round_to": p.round_to, "protect_zeros": p.protect_zeros}})
    return out


def published_counts(release: UnitRelease) -> dict[str, int]:
    """Every count the unit publishes exactly: cell key (``TABLE:CELL``) -> value."""
    return {_cell_key(v): _integer(v.value) for v in release.values if v.status == PUBLISHED and v.stat.kind == "count"}


def _cell_key(value) -> str:
    """``value.key`` without its statistic (``TABLE:CELL``)."""
    return value.cell.key if ":" not in value.stat.name else value.key.rsplit(":", 1)[0]


def _integer(value) -> int:
    """``int(value)``: a count is a whole Fraction, read without Fraction arithmetic (a block has a thousand)."""
    return value.numerator if value.denominator == 1 else int(value)


class ProofCounts:
    """The published counts of the cells outside a jointly proved unit that its proof names: the
    coarser unit's (``TABLE:CELL``) and the other units' inside it (``BLOCK/TABLE:CELL``), so that the
    report shows them beside the claims they explain. ``by_unit``: (level, geo) -> release; each
    release's counts are read once for every unit asked about."""

    def __init__(self, by_unit: dict, schema, schedule):
        self.by_unit, self.schema = by_unit, schema
        self.level_of = {t.id: t.level for t in schedule.tables}
        self._counts: dict = {}

    def __call__(self, problem) -> dict[str, int]:
        cells = getattr(problem, "proof_cells", None)
        if cells is None:
            return {}
        out = {}
        for name in cells.names:
            rel, _, cell = name.rpartition("/")
            if rel:
                parts = tuple(rel.split("/"))
                level, geo = problem.level, problem.geo[:len(problem.geo) - len(parts)] + parts
            else:
                level = self.level_of.get(cell.split(":", 1)[0])
                if level is None or level == problem.level:
                    continue  # the unit's own cell: in its own counts
                geo = problem.geo[:self.schema.geography.index(level) + 1]
            counts = self._counts.get((level, geo))
            if counts is None:
                release = self.by_unit.get((level, geo))
                counts = self._counts[(level, geo)] = published_counts(release) if release is not None else {}
            if cell in counts:
                out[name] = counts[cell]
        return out


def cells_json(release: UnitRelease, outside: dict[str, int] | None = None) -> dict:
    """What one unit publishes: counts of values by status, and every exact published count below 10
    (structural zeros, which no row can fall in, are neither small nor suppressed); ``pinned``, where
    any, the suppressed cells their own rule pins (:func:`~audit.release.constraints.pinned_counts`:
    as published, to the attacker). ``_counts`` holds every published or pinned count until
    :func:`attach_cells` keeps those that explain the listed claims; ``_grid`` every value
    (:func:`grid_json`, made only for a unit :class:`GridKeeper` keeps). ``outside``: counts published
    outside the unit that explain its claims (:class:`ProofCounts`)."""
    pinned = pinned_counts(release)
    published: dict[str, int] = {}  # published_counts, in the same pass
    out = {"values": len(release.values), "suppressed": 0, "structural": 0, "rounded": 0, "small": {},
           "_counts": {}, "_grid": partial(grid_json, release)}
    if pinned:
        out["pinned"] = pinned
    small, protections = out["small"], release.protection
    rounds = {table: bool(p.round_to and p.round_to > 1) for table, p in protections.items() if p is not None}
    for v in release.values:
        status = v.status
        if status in (SUPPRESSED, STRUCTURAL):
            out[status] += 1
        elif status == PUBLISHED and v.stat.kind == "count":
            key, n = _cell_key(v), _integer(v.value)
            published[key] = n
            if rounds.get(v.cell.table, False):
                out["rounded"] += 1
            elif (1 <= n < SMALL_MAX) if v.value.denominator == 1 else (1 <= v.value < SMALL_MAX):
                small[key] = n
    out["_counts"] = {**(outside or {}), **pinned, **published}
    if release.levels:  # the schedule's a-priori protection levels per cell, which protection_levels judges by
        out["levels"] = {k: list(v) for k, v in sorted(release.levels.items())}
    if release.magnitude:  # published sums: their contributors, for the magnitude rules
        out["magnitude"] = {key: c.to_json() for key, c in release.magnitude.items()}
    return out


def attach_cells(unit: dict, cells: dict, keeper: GridKeeper | None = None) -> dict:
    """Set ``unit["cells"]`` from :func:`cells_json`, with ``explaining``: the published count of each
    cell that explains a listed claim (what the report shows beside the claim); offer the unit's
    ``grid`` to ``keeper``."""
    cells = dict(cells)
    counts = cells.pop("_counts", {})
    grid = cells.pop("_grid", None)
    wanted = {k for c in unit.get("claims", ()) for k in c.get("cells", ())}
    cells["explaining"] = {k: counts[k] for k in sorted(wanted) if k in counts}
    unit["cells"] = cells
    if keeper is not None:
        keeper.offer(unit, grid)
    return unit


