"""The Census Bureau's reconstruction LPs (dbrecon, ``recon_replication``): published SF1 cells and solutions.

dbrecon writes one Gurobi LP file per tract. Each constraint ``_C_<SF1 cell>_<geoid>_<n>: v + v + ... = b``
says that the persons of a block (15-digit geoid) or of the tract (11 digits) who fall in an SF1 cell
number ``b``, the value SF1 published; each binary variable ``C_<block>_<sex>_<start>_<p>_<sex>_<age>_<7
flags>`` is one possible person (person ``p`` of a P12 sex-by-age cell, with a single age, six race
flags and the Hispanic flag, Y/N). A cell that no variable can fall in is not written; dbrecon also
left some tables out (P8, P10, P12G and PCT12G/O in the files of the replication archive).

:func:`read_lp` streams the file in blocks (lines hold up to millions of terms), keeping per
constraint only its value, its number of terms and the values each attribute takes among them, and
per block the persons its variables describe. :func:`release_frame` maps the constraints onto an SF1
table schedule (``samples/sf1/make_tables.py``, cell ids as SF1 names them) and writes the release
that ``audit run --published`` reads: every constraint is checked to be exactly its cell's predicate
over the block's (or tract's) variables; a cell of the schedule the LP leaves out is 0 when no
variable can fall in it, and unknown (written ``(D)``, read as 0 to N) when one can.
:func:`read_solution` decodes a ``.sol`` file into person records in the SF1 sample's columns.
"""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from ..errors import AuditError
from .constraints import EMPTY, PUBLISHED, STRUCTURAL, SUPPRESSED
from ..specs.schedule import Schedule
from ..specs.schema import Schema

GEOID = (("state", 2), ("county", 3), ("tract", 6), ("block", 4))  # the Census GEOID, coarse to fine
RACES = ("white", "black", "aian", "asian", "nhopi", "sor")
COLUMNS = ("sex", "age", *RACES, "two_or_more", "hispanic")  # the SF1 sample's person columns
SEX = {"male": "M", "female": "F"}
SENSES = ("=", "<=", ">=", "=<", "=>")
SECTIONS = {"subject": "constraints", "st": "constraints", "s.t.": "constraints", "bounds": "bounds",
            "binaries": "binaries", "binary": "binaries", "bin": "binaries", "end": "end",
            "minimize": "objective", "maximize": "objective", "minimise": "objective", "maximise": "objective"}
_NAME = re.compile(r"_C_([A-Z0-9]+)_(\d+)_(\d+):")
FIX = "give an LP written by dbrecon (recon_replication's s3_pandas_synth_lp_files.py), .lp or .lp.gz"


@dataclass
class LpRow:
    """One constraint: the SF1 cell, the geography, the published value, and what its terms cover."""

    name: str
    cell: str
    geoid: str
    value: int
    terms: int = 0
    seen: dict[str, set] = field(default_factory=dict)  # column (and 'geoid') -> values among the terms


@dataclass
class LpModel:
    """A dbrecon LP: its constraints and, per distinct person its variables describe, how many variables."""

    path: str
    rows: list[LpRow]
    persons: dict[tuple, int]  # (block geoid, sex, age, white..sor, two_or_more, hispanic) -> variables


def is_lp(path: str | Path) -> bool:
    """Whether a path names an LP file (``.lp`` or ``.lp.gz``)."""
    name = str(path).lower()
    return name.endswith(".lp") or name.endswith(".lp.gz")


def _open(path: Path):
    return gzip.open(path, "rt", encoding="ascii") if path.suffix == ".gz" else open(path, encoding="ascii")


def tokens(path: str | Path, block: int = 1 << 20) -> Iterator[str]:
    """The whitespace-separated tokens of a text file (gzip or plain), read ``block`` characters at a time."""
    path = Path(path)
    if not path.is_file():
        raise AuditError("file not found" if not path.exists() else "is a folder, not an LP file", str(path),
                         "check the path")
    try:
        with _open(path) as fh:
            rest = ""
            while True:
                text = fh.read(block)
                if not text:
                    break
                parts = (rest + text).split()
                rest = "" if text[-1].isspace() else parts.pop() if parts else ""
                yield from parts
            if rest:
                yield rest
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read it ({exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                         str(path), "give an uncorrupted .lp or .lp.gz file (ASCII text)") from None


def decode_variable(name: str, where: str) -> tuple:
    """``C_<block>_<sex>_<start>_<p>_<sex>_<age>_<W>_<B>_<AI>_<AS>_<NH>_<SOR>_<HISP>`` as
    (block geoid, sex, age, six race flags, two_or_more, hispanic), codes as in the SF1 sample."""
    parts = name.split("_")
    if (len(parts) != 14 or parts[0] != "C" or len(parts[1]) != 15 or not parts[1].isdigit()
            or parts[2] not in SEX or parts[5] != parts[2] or not parts[6].isdigit() or int(parts[6]) > 110
            or any(f not in ("Y", "N") for f in parts[7:])):
        raise AuditError(f"variable '{name[:120]}' is not C_<15-digit block>_<sex>_<start age>_<n>_<sex>_<age>"
                         "_<7 Y/N flags: white, black, aian, asian, nhopi, sor, hispanic>", where, FIX)
    races = tuple(parts[7:13])
    return (parts[1], SEX[parts[2]], int(parts[6]), *races, "Y" if races.count("Y") >= 2 else "N", parts[13])


class _Reader:
    """The state of one pass over an LP file (see :func:`read_lp`)."""

    FLUSH = 50_000  # distinct persons held per constraint before they are folded into per-column sets

    def __init__(self, path: str):
        self.path = path
        self.rows: list[LpRow] = []
        self.persons: dict[tuple, int] = {}
        self.cache: dict[str, tuple] = {}

    def person(self, name: str, where: str) -> tuple:
        found = self.cache.get(name)
        if found is None:
            if len(self.cache) > 1 << 20:
                self.cache.clear()
            found = self.cache[name] = decode_variable(name, where)
        return found

    def constraint(self, name: str, it: Iterator[str]) -> None:
        m = _NAME.fullmatch(name)
        where = f"{self.path}: constraint {name[:-1][:80]}"
        if not m:
            raise AuditError(f"constraint name '{name[:80]}' is not _C_<SF1 cell>_<geoid>_<n>:", where, FIX)
        row = LpRow(name[:-1], m.group(1), m.group(2), 0, seen={c: set() for c in ("geoid", *COLUMNS)})
        distinct: set[tuple] = set()
        expect_term = True
        for tok in it:
            if expect_term:
                distinct.add(self.person(tok, where))
                row.terms += 1
                if len(distinct) >= self.FLUSH:
                    self._fold(row, distinct)
                expect_term = False
            elif tok == "+":
                expect_term = True
            elif tok in SENSES:
                if tok != "=":
                    raise AuditError(f"sense '{tok}': dbrecon's constraints are equalities", where, FIX)
                value = next(it, None)
                try:
                    number = float(value) if value is not None else float("nan")
                except ValueError:
                    number = float("nan")
                if not (number >= 0 and number == int(number)):
                    raise AuditError(f"right-hand side {value!r} is not a count (an integer 0 or more)", where, FIX)
                row.value = int(number)
                self._fold(row, distinct)
                self.rows.append(row)
                return
            else:
                raise AuditError(f"unexpected '{tok[:40]}' (coefficients and '-' are not in dbrecon's LPs)", where, FIX)
        raise AuditError("the file ends inside a constraint", where, "give the whole file (it may be truncated)")

    @staticmethod
    def _fold(row: LpRow, distinct: set) -> None:
        for name, values in zip(("geoid", *COLUMNS), zip(*distinct)):
            row.seen[name].update(values)
        distinct.clear()


def read_lp(path: str | Path) -> LpModel:
    """Read a dbrecon LP file in one streaming pass (memory: the distinct persons of its variables)."""
    reader = _Reader(str(path))
    it = tokens(path)
    section = None
    for tok in it:
        if tok.startswith("\\*"):  # a comment: \* ... *\
            while not tok.endswith("*\\"):
                tok = next(it, "*\\")
            continue
        key = SECTIONS.get(tok.lower())
        if key is not None:
            if key == "constraints" and tok.lower() == "subject":
                if next(it, "").lower() != "to":
                    raise AuditError("'Subject' not followed by 'To'", str(path), FIX)
            section = key
            if key == "end":
                break
            continue
        if section == "constraints":
            reader.constraint(tok, it)
        elif section == "binaries":
            person = reader.person(tok, f"{path}: Binaries")
            reader.persons[person] = reader.persons.get(person, 0) + 1
        elif section is None:
            raise AuditError(f"unexpected '{tok[:40]}' before any section", str(path), FIX)
    if section != "end":
        raise AuditError("no 'End' line: the file is cut short", str(path), "give the whole file")
    if not reader.rows:
        raise AuditError("no constraints ('Subject To' is empty or missing)", str(path), FIX)
    return LpModel(str(path), reader.rows, reader.persons)


# -- onto the SF1 schema and schedule ---------------------------------------------------------------
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


def split_geoid(geoid: str) -> tuple[str, ...]:
    """A Census GEOID cut into its codes, coarse to fine (2 digits state, 3 county, 6 tract, 4 block)."""
    out, at = [], 0
    for _, width in GEOID:
        if at == len(geoid):
            break
        out.append(geoid[at: at + width])
        at += width
    if at != len(geoid) or len(out[-1]) != GEOID[len(out) - 1][1]:
        raise ValueError(geoid)
    return tuple(out)


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


def read_solution(path: str | Path) -> pd.DataFrame:
    """The persons of a dbrecon solution (variables at 1) in the SF1 sample's columns, sorted by geography.

    A ``.sol`` file (gzip or plain) has one ``NAME VALUE`` per line and ``#`` comment lines.
    """
    path = Path(path)
    records = []
    try:
        with _open(path) as fh:
            for number, line in enumerate(fh, 1):
                parts = line.split()
                if not parts or parts[0].startswith("#") or not parts[0].startswith("C_"):
                    continue
                where = f"{path}: line {number}"
                try:
                    value = float(parts[1]) if len(parts) == 2 else float("nan")
                except ValueError:
                    value = float("nan")
                if not (abs(value) < 1e-6 or abs(value - 1) < 1e-6):
                    raise AuditError(f"'{line.strip()[:100]}' is not a variable and a value 0 or 1", where,
                                     "give the .sol file Gurobi wrote for a dbrecon LP")
                if value > 0.5:
                    records.append(decode_variable(parts[0], where))
    except FileNotFoundError:
        raise AuditError("file not found", str(path), "check the path") from None
    except IsADirectoryError:
        raise AuditError("is a folder, not a solution file", str(path), "check the path") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read it ({exc.__class__.__name__})", str(path),
                         "give an uncorrupted .sol or .sol.gz file") from None
    if not records:
        raise AuditError("no variable is 1: the solution holds no person", str(path),
                         "give the .sol file Gurobi wrote for a dbrecon LP")
    frame = pd.DataFrame(records, columns=["geoid", *COLUMNS])
    codes = pd.DataFrame([split_geoid(g) for g in frame["geoid"]], columns=[n for n, _ in GEOID])
    out = pd.concat([codes, frame.drop(columns="geoid")], axis=1)
    return out.sort_values([n for n, _ in GEOID] + list(COLUMNS), kind="stable").reset_index(drop=True)


# -- comparing a reconstruction with the Bureau's solution -----------------------------------------
def unit_rows(problem, persons: pd.DataFrame, schema: Schema) -> np.ndarray:
    """The persons of one unit (the SF1 sample's columns) as a dataset of the problem's atoms; in a
    coupled problem the child column is each person's finer geography (e.g. the block code)."""
    geo = list(schema.geography)
    depth = geo.index(problem.level) + 1
    mask = np.ones(len(persons), dtype=bool)
    for name, code in zip(geo[:depth], problem.geo):
        mask &= persons[name].astype(str).to_numpy() == code
    sub = persons[mask]
    columns = []
    for d in problem.domains:
        if d.name in schema.names:
            values = sub[d.name]
        else:  # the child unit of a coupled problem: its codes below the parent, joined by '/'
            values = sub[geo[depth: geo.index(d.name) + 1]].astype(str).agg("/".join, axis=1)
        atoms = values.map(d.lookup())
        if atoms.isna().any():
            raise AuditError(f"a person has {d.name} = {values[atoms.isna()].iloc[0]!r}, outside the schema",
                             f"unit {'/'.join(problem.geo)}", "check the solution against the SF1 schema")
        columns.append(atoms.to_numpy(dtype=np.int64))
    return np.column_stack(columns) if len(sub) else np.zeros((0, len(problem.domains)), dtype=np.int64)


def compare(result, persons: pd.DataFrame, schema: Schema) -> dict:
    """How a unit's reconstruction agrees with a solution's persons (the Bureau's .sol).

    ``agree``: verified full records whose count the solution has too; ``differ``: the others (each
    with the tool's proved count and the solution's); ``breaks``: the published values and edits the
    solution does not reproduce as the tool reads the release (why a proved record can differ).
    """
    problem = result.problem
    rows = unit_rows(problem, persons, schema)
    labels = [e.label or str(e.forbid.as_dict()) for e in schema.edits]
    breaks = [labels[int(k[5:])] if k.startswith("edit:") else k for k in problem.violations(rows)]
    width = len(problem.domains)
    agree, differ = 0, []
    for v in result.verified:
        if len(v.claim.assignment) == width:
            found = v.claim.count(rows)
            if found == v.claim.m:
                agree += v.claim.m
            else:
                differ.append({"record": problem.describe(np.array([a for _, a in v.claim.assignment])),
                               "proved": v.claim.m, "solution": found})
    return {"unit": "/".join(problem.geo), "level": problem.level, "persons": len(rows),
            "reconstructed": result.reconstructed, "verified_records": agree + sum(d["proved"] for d in differ),
            "agree": agree, "differ": differ, "breaks": breaks}
