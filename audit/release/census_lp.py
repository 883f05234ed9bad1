"""The Census Bureau's reconstruction LPs (dbrecon, ``recon_replication``): published SF1 cells and solutions.

dbrecon writes one Gurobi LP file per tract. Each constraint ``_C_<SF1 cell>_<geoid>_<n>: v + v + ... = b``
says that the persons of a block (15-digit geoid) or of the tract (11 digits) who fall in an SF1 cell
number ``b``, the value SF1 published; each binary variable ``C_<block>_<sex>_<start>_<p>_<sex>_<age>_<7
flags>`` is one possible person (person ``p`` of a P12 sex-by-age cell, with a single age, six race
flags and the Hispanic flag, Y/N). A cell that no variable can fall in is not written; dbrecon also
left some tables out (P8, P10, P12G and PCT12G/O in the files of the replication archive).

:func:`~audit.release.census_lp_reader.read_lp` streams the file in blocks (lines hold up to millions of
terms), keeping per constraint only its value, its number of terms and the values each attribute takes
among them, and per block the persons its variables describe. :func:`release_frame` maps the
constraints onto an SF1 table schedule (``samples/sf1/make_tables.py``, cell ids as SF1 names them)
and writes the release that ``audit run --published`` reads: every constraint is checked to be exactly
its cell's predicate over the block's (or tract's) variables; a cell of the schedule the LP leaves out
is 0 when no variable can fall in it, and unknown (written ``(D)``, read as 0 to N) when one can.
:func:`~audit.release.census_lp_solution.read_solution` decodes a ``.sol`` file into person records in
the SF1 sample's columns.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from ..errors import AuditError
from .constraints import EMPTY, PUBLISHED, STRUCTURAL, SUPPRESSED
from ..specs.schedule import Schedule
from ..specs.schema_types import Schema
from .census_lp_reader import COLUMNS, FIX, GEOID, LpModel, split_geoid
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def check_schema(schema: Schema) -> None:
    """The schema must be the SF1 person schema: its geography and columns are what the LPs describe."""
    names = tuple(n for n, _ in GEOID)
    if tuple(schema.geography) != names:
        raise AuditError(f"geography is {list(schema.geography)}, not {list(names)} (the Census GEOID)",
                         schema.source, "use the SF1 schema, samples/sf1/schema.yaml")
    for col in COLUMNS:
        want = {"sex": {"M", "F"}, "age": set(range(0, 111))}.get(col, {"Y", "N"})
        if col not in schema.names or not want <= set(schema.column(col).codes):
            raise AuditError(f"column '{col}' is missing or lacks the codes {sorted(want)[:3]}...", schema.source,
                             "use the SF1 schema, samples/sf1/schema.yaml")


@dataclass(frozen=True)
class Imported:
    """An LP as a release frame (``audit tabulate``'s columns), with counts of where the values came from."""

    frame: pd.DataFrame
    counts: dict[str, int]
    left_out: dict[str, int]  # table prefix of constraints whose cell is not in the schedule -> constraints

    def notes(self) -> list[str]:
        c = self.counts
        out = [f"{c['blocks']} blocks and {c['tracts']} tracts, {c['persons']} persons: {c['values']} values, "
               f"{c['from_lp']} from the LP's constraints, {c['zero']} zero (no LP variable can fall in them), "
               f"{c['unknown']} unknown (not in the LP: written (D), read as 0 to N)"]
        if self.left_out:
            out.append(f"{sum(self.left_out.values())} LP constraints name cells that are not in the schedule "
                       f"({', '.join(f'{k}: {v}' for k, v in sorted(self.left_out.items()))}): left out")
        return out


class Variables:
    """The persons an LP's variables describe, with how many variables each: counted by cell and geography."""

    def __init__(self, persons: dict[tuple, int]):
        keys = list(persons)
        self.columns = {name: np.array(values) for name, values in zip(("geoid", *COLUMNS), zip(*keys))} if keys \
            else {name: np.array([], dtype=str) for name in ("geoid", *COLUMNS)}
        self.slots = np.fromiter(persons.values(), dtype=np.int64, count=len(persons))
        self._clauses: dict = {}
        self._cells: dict = {}
        self._geo: dict = {}

    def _clause(self, clause: tuple) -> np.ndarray:
        if clause not in self._clauses:
            column = self.columns[clause[0]]
            self._clauses[clause] = np.isin(column, np.array(sorted(clause[1], key=str), dtype=column.dtype))
        return self._clauses[clause]

    def count(self, geoid: str, cell) -> int:
        """How many variables of the geography (a block, or every block of a tract) fall in the cell."""
        if cell.predicate not in self._cells:
            mask = np.ones(len(self.slots), dtype=bool)
            for clause in cell.predicate.clauses:
                mask &= self._clause(clause)
            self._cells[cell.predicate] = mask
        if geoid not in self._geo:
            self._geo[geoid] = np.char.startswith(self.columns["geoid"].astype(str), geoid)
        return int(self.slots[self._cells[cell.predicate] & self._geo[geoid]].sum())


def release_frame(model: LpModel, schema: Schema, schedule: Schedule) -> Imported:
    """The LP's published values as the release ``audit run --published`` reads, for every unit it covers."""
    check_schema(schema)
    cells = {}
    for table in schedule.tables:
        for cell in table.cells:
            if cell.id in cells:
                raise AuditError(f"cell id '{cell.id}' is in tables {cells[cell.id].table} and {table.id}",
                                 schedule.source, "give every cell its SF1 cell number once (samples/sf1/make_tables.py)")
            cells[cell.id] = cell
    levels = {end: name for (name, _), end in zip(GEOID, accumulate(w for _, w in GEOID))}  # geoid length -> level
    people = Variables(model.persons)
    blocks = people.columns["geoid"]
    values: dict[tuple[str, str], int] = {}
    left_out: dict[str, int] = {}

    for row in model.rows:
        where = f"{model.path}: constraint {row.name}"
        cell = cells.get(row.cell)
        if cell is None:
            table = re.match(r"[A-Z]+\d{3}[A-Z]?", row.cell)  # SF1: P012A048 is P12A, PCT0120187 is PCT12
            key = table.group(0) if table else row.cell
            left_out[key] = left_out.get(key, 0) + 1
            continue
        level = levels.get(len(row.geoid))
        if level != cell.level:
            raise AuditError(f"geoid {row.geoid} is a {level or 'geography of no known level'}, but cell "
                             f"{row.cell} is published by {cell.table} at the {cell.level} level", where,
                             "use the SF1 schedule of samples/sf1/make_tables.py (--tract for PCT12)")
        outside = sorted(g for g in row.seen["geoid"] if not g.startswith(row.geoid))
        if outside:
            raise AuditError(f"a term is a person of block {outside[0]}, outside {row.geoid}", where, FIX)
        for col, allowed in cell.predicate.clauses:
            stray = sorted(row.seen[col] - allowed, key=str)
            if stray:
                raise AuditError(f"a term has {col} = {stray[0]}, outside cell {cell.key} ({cell.label}), whose "
                                 f"{col} is {sorted(allowed, key=str)[:6]}", where,
                                 "check that -t is the SF1 schedule (samples/sf1/make_tables.py)")
        expected = people.count(row.geoid, cell)
        if expected != row.terms:
            raise AuditError(f"it has {row.terms} terms, but {expected} LP variables of {row.geoid} fall in cell "
                             f"{cell.key} ({cell.label})", where,
                             "check that -t is the SF1 schedule (samples/sf1/make_tables.py)")
        key = (row.geoid, cell.key)
        if key in values:
            raise AuditError(f"cell {row.cell} of {row.geoid} is constrained twice", where, FIX)
        values[key] = row.value
    units = {"block": sorted(set(blocks.tolist()) | {g for g, _ in values if len(g) == 15})}
    tract_level = [t for t in schedule.tables if t.level == "tract"]
    units["tract"] = sorted({g for g, _ in values if len(g) == 11} | ({b[:11] for b in units["block"]} if tract_level else set()))
    persons = sum(r.value for r in model.rows if r.cell == "P0010001" and len(r.geoid) == 15)  # SF1 P1: total
    counts = {"values": 0, "from_lp": 0, "zero": 0, "unknown": 0, "structural": 0, "blocks": len(units["block"]),
              "tracts": len(units["tract"]), "persons": persons}
    columns: dict[str, list] = {c: [] for c in (*schema.geography, "level", "table", "cell", "label", "statistic",
                                                 "value", "status")}
    for level in schedule.levels:
        tables = [t for t in schedule.tables if t.level == level]
        for geoid in units.get(level, ()):
            codes = split_geoid(geoid)
            for table in tables:
                for cell in table.cells:
                    for stat in cell.stats:
                        value, status = _value(values, geoid, cell, stat, people, model.path, counts)
                        for name, code in zip(schema.geography, codes + ("",) * (len(GEOID) - len(codes))):
                            columns[name].append(code)
                        for name, v in (("level", level), ("table", table.id), ("cell", cell.id), ("label", cell.label),
                                        ("statistic", stat.name), ("value", value), ("status", status)):
                            columns[name].append(v)
    counts["values"] = len(columns["value"])
    return Imported(pd.DataFrame(columns), counts, left_out)


def _value(values: dict, geoid: str, cell, stat, people: Variables, path: str, counts: dict) -> tuple[str, str]:
    """One published value (text, status) of a cell in a geography, from the LP."""
    found = values.get((geoid, cell.key)) if stat.kind == "count" else None
    if cell.structural:
        if found:
            raise AuditError(f"cell {cell.key} ({cell.label}) can hold no one under the schema's edits, yet the LP "
                             f"says {found} persons of {geoid} do", path, "check the schema against the LP")
        counts["structural"] += 1
        return ("-" if stat.rounded else "0"), STRUCTURAL
    if found is not None:
        counts["from_lp"] += 1
        return str(found), PUBLISHED
    if people.count(geoid, cell) == 0:  # no variable can fall in it: dbrecon wrote no constraint, its count is 0
        counts["zero"] += 1
        return ("-", EMPTY) if stat.rounded else ("0", PUBLISHED)
    counts["unknown"] += 1
    return "(D)", SUPPRESSED
