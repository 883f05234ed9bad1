"""A published release without microdata: read it, rebuild each unit's problem, and attack it.

The release is the CSV ``audit tabulate`` writes (geography, level, table, cell, label, statistic,
value, status), a simpler cell file (geography, table, cell, value), or a Census Bureau
reconstruction LP (:mod:`audit.release.census_lp`); the schema and table schedule define the cells. It is
checked as strictly as microdata and rebuilt into :class:`~audit.release.constraints.UnitRelease` objects, from
which :func:`audit.problem.build.build_problems` (and :func:`audit.problem.coupled.build_coupled_problems` for
tables at a coarser level) build the same problems as from microdata, with no true rows.

Candidates come from the generate step of generate-then-verify (Liu et al.): one consistent dataset
found by the exact engine, whose claims are pruned by every enumerated and sampled dataset (seeded)
-- the claims true in all of them -- and then verified exactly as in a microdata audit. A claim
``R(a, m)`` with ``m >= 1`` true in every consistent dataset is true in the first one, so the
verified claims are the same set as a microdata audit's. What needs the confidential rows
(baseline probabilities, linkage, the ranking and linear attacks' scores) is reported unavailable.
"""
from __future__ import annotations

import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .release import census_lp, census_lp_reader
from .attacks.joint import joint_proofs
from .attacks.joint_problems import level_problems
from .attacks.joint_claims import MIP_NODES, a_dataset
from .problem.coupled import coupled_levels
from .errors import AuditError, InconsistentRelease
from .attacks.exact import ExactOptions, UnitResult, audit_unit, make_engine
from .findings.cells import GridKeeper, grid_cap, grid_json
from .findings.claimstore import FILE as STORE_FILE
from .findings.claimstore import StoreWriter, store_columns
from .findings.document import LISTED, document, listing_cap, store_unit, unit_json
from .findings.model import Findings
from .attacks.implied import LinearProof
from .inputs import Inputs
from .attacks.intervals import without_values
from .data.microdata import read_table
from .problem.build import Problem
from .release.constraints import EMPTY, PUBLISHED, STRUCTURAL, SUPPRESSED, UnitRelease, Value
from .specs.schedule import MARGIN, Schedule, load_schedule
from .specs.schema import Schema, load_schema
from .release.tabulate import _hide

STATUSES = (PUBLISHED, SUPPRESSED, EMPTY, STRUCTURAL)
NOTICE = ("CONFIDENTIAL: this file contains records reconstructed from the published release. "
          "Handle it as the confidential microdata it may reveal.")
UNAVAILABLE = (
    {"what": "baseline probabilities", "reason": "eq. 17 draws rows from the parent geography's confidential rows "
     "(the prior); a published release has none"},
    {"what": "linkage and re-identification", "reason": "matching reconstructed records to persons needs the "
     "confidential records (or an identified file) to match against"},
    {"what": "ranking attack match rates (--rank)", "reason": "RAP-RANK's top-k match rate is scored against the "
     "true rows"},
    {"what": "linear attack accuracy (--linear-secret)", "reason": "needs the microdata's secret column to attack "
     "and to score"},
    {"what": "claims of a unit too large to sample", "reason": "without microdata the candidates come from sampled "
     "datasets; a unit past --max-rows or the time limit has none, so it is undecided as a whole"},
)


# -- reading the release ---------------------------------------------------------------------------
def read_release(path: str | Path, schema: Schema, schedule: Schedule) -> tuple[list[UnitRelease], list[str]]:
    """The units of a published release file (CSV, Parquet, or a dbrecon ``.lp``/``.lp.gz``) and notes on it."""
    if census_lp_reader.is_lp(path):
        imported = census_lp.release_frame(census_lp_reader.read_lp(path), schema, schedule)
        return releases_from_frame(imported.frame, schema, schedule, str(path))[0], imported.notes()

    return releases_from_frame(read_table(path), schema, schedule, str(path))


def _row_error(name: str, i: int, message: str, fix: str) -> AuditError:
    return AuditError(f"row {i + 1} (line {i + 2}): {message}", name, fix)


def _number(text: str) -> Fraction | None:
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        return None
    return value


def releases_from_frame(frame: pd.DataFrame, schema: Schema, schedule: Schedule, name: str = "<release>"
                        ) -> tuple[list[UnitRelease], list[str]]:
    """Check a release table against the schedule and rebuild every unit's published values (and notes).

    Columns: ``table``, ``cell``, ``value``, the geography columns each table's level needs, and
    optionally ``statistic`` (needed when a cell publishes several), ``status`` and ``level``. A value
    suppressed where no rule of the schedule suppresses it is read as withheld: 0 to N.
    """
    missing = [c for c in ("table", "cell", "value") if c not in frame.columns]
    if missing:
        raise AuditError(f"missing column(s) {missing}; the file has {list(frame.columns)}", name,
                         "give the CSV that audit tabulate writes, or a cell file with table, cell and value")
    if not len(frame):
        raise AuditError("the release has no rows", name, "give one row per published value")
    tables = {t.id: t for t in schedule.tables}
    cells = {(t.id, c.id): c for t in schedule.tables for c in t.cells}
    geo = list(schema.geography)
    depth = {lv: geo.index(lv) + 1 for lv in schedule.levels}
    absent = [g for g in geo[: max(depth.values())] if g not in frame.columns]
    text = {c: frame[c].where(frame[c].notna(), "").astype(str).tolist() for c in frame.columns
            if c in ("table", "cell", "value", "statistic", "status", "level") or c in geo}
    found: dict[tuple, Value] = {}
    lines: dict[tuple, int] = {}
    for i in range(len(frame)):
        table = tables.get(text["table"][i].strip())
        if table is None:
            raise _row_error(name, i, f"table '{text['table'][i]}' is not in {schedule.source}",
                             f"use a table id of the schedule ({', '.join(list(tables)[:5])}...), or the schedule "
                             "this release was published with")
        cell = cells.get((table.id, text["cell"][i].strip()))
        if cell is None:
            raise _row_error(name, i, f"cell '{text['cell'][i]}' is not a cell of table {table.id}",
                             f"use a cell id of {table.id} ({', '.join(c.id for c in table.cells[:4])}...)")
        if "level" in text and text["level"][i].strip() not in ("", table.level):
            raise _row_error(name, i, f"level '{text['level'][i]}', but {table.id} is published by {table.level}",
                             f"write {table.level}, or leave the level column out")
        lost = [g for g in geo[: depth[table.level]] if g in absent]
        if lost:
            raise AuditError(f"missing geography column '{lost[0]}' ({table.id} is published by {table.level})",
                             name, f"add the column {lost[0]} with each unit's code")
        codes = tuple(text[g][i] for g in geo[: depth[table.level]])
        empty = [g for g, c in zip(geo, codes) if not c.strip()]
        if empty:
            raise _row_error(name, i, f"the geography column {empty[0]} is empty", f"give every row its {empty[0]} code")
        margin = [g for g, c in zip(geo, codes) if c.strip() == MARGIN]
        if margin:
            raise _row_error(name, i, f"{margin[0]} is '{MARGIN}', which marks a margin (a total over codes), not a "
                             f"unit", f"give the unit's own {margin[0]} code, and leave totals over units out of "
                             "the release (each unit is attacked on its own tables)")
        finer = [g for g in geo[depth[table.level]:] if g in text and text[g][i].strip()]
        if finer:
            raise _row_error(name, i, f"{finer[0]} = {text[finer[0]][i]!r}, but {table.id} is published by {table.level}",
                             f"leave {finer[0]} empty on {table.level} rows")
        stat = _statistic(cell, text.get("statistic", [""] * len(frame))[i], name, i)
        value = _value(cell, stat, text["value"][i], text["status"][i] if "status" in text else "", table, name, i)
        key = (table.level, codes, cell.key, stat.name)
        if key in lines:
            raise _row_error(name, i, f"{cell.key} {stat.name} of unit {'/'.join(codes)} is given twice (also line "
                             f"{lines[key] + 2})", "keep one row per published value")
        lines[key] = i
        found[key] = value
    releases, withheld = _units(found, lines, schedule, name)
    return releases, ([f"{withheld} values suppressed where no rule of the schedule suppresses them: read as "
                       "withheld (0 to N)"] if withheld else [])


def _statistic(cell, given: str, name: str, i: int):
    given = given.strip()
    if not given:
        if len(cell.stats) > 1:
            raise _row_error(name, i, f"cell {cell.key} publishes {', '.join(s.name for s in cell.stats)}: which is this?",
                             "add a statistic column (count, mean(age), ...)")
        return cell.stats[0]
    for stat in cell.stats:
        if stat.name == given.replace(" ", ""):
            return stat
    raise _row_error(name, i, f"statistic '{given}' is not published for {cell.key}",
                     f"use one of {[s.name for s in cell.stats]}")


def _value(cell, stat, raw: str, status: str, table, name: str, i: int) -> Value:
    """One published value, checked against what the schedule could have published."""
    raw, status = raw.strip(), status.strip().lower()
    if status and status not in STATUSES:
        raise _row_error(name, i, f"status '{status}' is not one of {list(STATUSES)}", "fix the status, or leave it out")
    if not status:
        status = (SUPPRESSED if raw in ("(D)", "D") else EMPTY if raw == "-" and not cell.structural
                  else STRUCTURAL if cell.structural else PUBLISHED)
    if cell.structural and status not in (STRUCTURAL, PUBLISHED) or status == STRUCTURAL and not cell.structural:
        what = ("can hold no one under the schema's edits (a structural zero)" if cell.structural
                else "is published as structural, but the schema's edits do not make it empty")
        raise _row_error(name, i, f"cell {cell.key} {what}, yet the release says {status}",
                         "check that -s and -t are the specs this release was published with")
    if status == SUPPRESSED:
        if raw not in ("(D)", "D", ""):
            raise _row_error(name, i, f"a suppressed value is written {raw!r}", "write (D) for a suppressed value")
        return Value(cell, stat, SUPPRESSED)
    if status == EMPTY or status == STRUCTURAL and raw in ("-", ""):
        if not stat.rounded:
            raise _row_error(name, i, f"{stat.name} of {cell.key} is '{raw}': only a mean or median of no rows is empty",
                             "write the count or sum (0 for none)")
        if raw not in ("-", ""):
            raise _row_error(name, i, f"an empty value is written {raw!r}", "write - for a mean or median of no rows")
        return Value(cell, stat, status, None) if status == EMPTY else Value(cell, stat, STRUCTURAL, None)
    value = _number(raw)
    if value is None:
        raise _row_error(name, i, f"value {raw!r} of {cell.key} {stat.name} is not a number",
                         "write the number, (D) for a suppressed value, or - for a mean or median of no rows")
    p = table.protection
    if stat.rounded:
        if (value * 10 ** stat.decimals).denominator != 1:
            raise _row_error(name, i, f"{stat.name} = {raw} has more than the {stat.decimals} decimals "
                             f"{table.id} publishes", f"check decimals: in {table.id}")
    elif value.denominator != 1:
        raise _row_error(name, i, f"{stat.name} = {raw} is not an integer", "write a whole number")
    if stat.kind == "count":
        if value < 0:
            raise _row_error(name, i, f"count {raw} is negative", "write a count 0 or more")
        if p.round_to and p.round_to > 1 and value % p.round_to:
            raise _row_error(name, i, f"count {raw} is not a multiple of round_to {p.round_to}",
                             "check the schedule's protection, or the value")
        t = p.suppress_below
        if t and not (p.round_to and p.round_to > 1) and value < t and (value > 0 or p.protect_zeros) \
                and not cell.structural:  # a structural zero is never suppressed, protect_zeros or not
            raise _row_error(name, i, f"count {raw} is published though {table.id} suppresses counts below {t}",
                             "check that -t is the schedule this release was published with")
    if status == STRUCTURAL or cell.structural:
        if value != 0:
            raise _row_error(name, i, f"cell {cell.key} can hold no one under the schema's edits, yet {stat.name} "
                             f"is {raw}", "check that -s is the schema this release was published with")
        return Value(cell, stat, STRUCTURAL, Fraction(0))
    return Value(cell, stat, PUBLISHED, value)


def _units(found: dict, lines: dict, schedule: Schedule, name: str) -> tuple[list[UnitRelease], int]:
    """Every unit's values in the schedule's order, and how many are withheld with no rule of the
    schedule to explain them; a unit lacking a value of its level is an error."""
    units = sorted({(lv, codes) for lv, codes, _, _ in found}, key=lambda u: (schedule.levels.index(u[0]), u[1]))
    per_unit = getattr(schedule, "suppress", None) or {}
    known = {"/".join(codes) for _, codes in units}
    stray = sorted(set(per_unit) - known)
    if stray:
        raise AuditError(f"suppress: unit '{stray[0]}' is not a unit of the release", schedule.source,
                         "key units by their geography codes joined by '/', as in the release")
    out, withheld = [], 0
    for level, codes in units:
        tables = [t for t in schedule.tables if t.level == level]
        hidden = per_unit.get("/".join(codes), frozenset())
        values = []
        for table in tables:
            for cell in (_hide(table, hidden) if hidden else table).cells:
                for stat in cell.stats:
                    key = (level, codes, cell.key, stat.name)
                    value = found.get(key)
                    if value is None:
                        every = [(level, codes, c.key, s.name) for t in tables for c in t.cells for s in c.stats]
                        gaps = sum(k not in found for k in every)
                        raise AuditError(f"unit {'/'.join(codes)} has no value for {cell.key} {stat.name} "
                                         f"({gaps} of the {len(every)} values of its {level} tables are missing)", name,
                                         f"give every cell of every {level} table of {schedule.source} for each unit")
                    if value.status == SUPPRESSED and not _explained(cell, table):
                        value = Value(replace(cell, suppressed=True), stat, SUPPRESSED)  # withheld: 0 to N
                        withheld += 1
                    elif cell.suppressed and not cell.structural and value.status != SUPPRESSED:
                        raise AuditError(f"unit {'/'.join(codes)} publishes {cell.key}, which the schedule suppresses "
                                         f"(line {lines[key] + 2})", name,
                                         "check that -t is the schedule this release was published with")
                    else:
                        value = replace(value, cell=cell)
                    values.append(value)
        out.append(UnitRelease(level, codes, tuple(values), {t.id: t.protection for t in tables}))
    return out, withheld


def _explained(cell, table) -> bool:
    """Whether the schedule's rules account for a suppressed cell (else it is read as withheld: 0 to N)."""
    p = table.protection
    return cell.suppressed or p.complementary or p.suppress_below is not None


# -- problems and the attack -----------------------------------------------------------------------
def published_problems(releases: list[UnitRelease], schema: Schema, schedule: Schedule,
                       max_rows: int | None = None) -> list[Problem]:
    """The units' problems, as from microdata but with no true rows: one per unit of the finest level,
    and one coupled problem per unit of each coarser level (its tables with all its children's).

    With coarser levels each of their units is first solved jointly with its children
    (:func:`audit.attacks.joint.joint_proofs`): a unit proved to have one dataset gets it as its rows
    (:func:`audit.attacks.joint.as_proved`), and a coarser unit of more than ``max_rows`` persons is
    its own tables' problem rather than the row-slot coupled one, as in a microdata run
    (:func:`audit.attacks.joint_problems.level_problems`).
    """
    proofs = joint_proofs(schema, schedule, releases) if coupled_levels(schema, schedule) else {}
    return level_problems(None, schema, schedule, releases, proofs, max_rows)


def determined_dataset(problem: Problem) -> np.ndarray | None:
    """The one dataset the exact counts allow when they have full column rank on the support (most SF1
    blocks), solved without search; None otherwise. :meth:`LinearProof.determines` checks it exactly."""
    linear = LinearProof.of(problem) if problem.n_rows[0] == problem.n_rows[1] else None
    if linear is None:
        return None
    exact = [i for i, (lo, hi) in enumerate(zip(linear.lo, linear.hi)) if lo == hi]
    if not len(linear.rows) or len(exact) < len(linear.rows):
        return None
    h = np.linalg.lstsq(linear.a[exact].astype(float), np.array([linear.lo[i] for i in exact], dtype=float),
                        rcond=None)[0]
    counts = np.round(h).astype(np.int64)
    if (counts < 0).any() or np.abs(h - counts).max() > 1e-6:
        return None
    rows = np.repeat(linear.rows, counts, axis=0)
    return rows if linear.determines(rows) else None


def first_dataset(problem: Problem, options: ExactOptions) -> tuple[np.ndarray | None, object]:
    """One dataset that reproduces the release (None: none does) and the engine that searched, if any.

    Linear algebra first (:func:`determined_dataset`), then the exact engine (raises TimeoutError when
    undecided); an "infeasible" from the IP engine (floating point) is confirmed by the SAT engine
    before the release is called inconsistent.
    """
    rows = determined_dataset(problem) if options.linear else None
    if rows is not None:
        return rows, None
    engine = make_engine(problem, options)
    rows = engine.solve()
    if rows is None and options.engine != "sat":
        engine = make_engine(problem, replace(options, engine="sat"))
        rows = engine.solve()
    return rows, engine


def attack_unit(problem: Problem, options: ExactOptions = ExactOptions()) -> UnitResult:
    """Generate-then-verify on a unit with no true rows: candidates are the claims of a first consistent
    dataset that every enumerated and sampled dataset keeps, verified as in :func:`audit.attacks.exact.audit_unit`.

    A unit that admits no dataset raises :class:`InconsistentRelease` naming the conflicting cells; one
    past ``max_rows`` or whose first dataset runs out of budget is returned undecided as a whole.
    """
    return _attack(problem, options)[0]


def _attack(problem: Problem, options: ExactOptions) -> tuple[UnitResult, np.ndarray | None]:
    """:func:`attack_unit`'s result and the first dataset its candidates came from (None: none found)."""
    start = time.perf_counter()
    if problem.proof:  # one dataset, proved from the published values (audit.attacks.joint.as_proved)
        result = audit_unit(problem, options)
        result.problem = replace(problem, truth=None)
        result.seconds = time.perf_counter() - start
        return result, problem.truth
    if problem.n_rows[1] > options.max_rows and problem.joint is not None:  # a coarser unit the joint solve left open
        first, engine = a_dataset(problem.joint, options.seed, options.unit_seconds), None
        if first is None:
            return _undecided(problem, "timeout", f"no dataset of the joint model found within {MIP_NODES:,} MIP nodes "
                              f"or --unit-seconds {options.unit_seconds:g}", start), None
    elif problem.n_rows[1] > options.max_rows:
        return _undecided(problem, "too-large", f"{problem.n_rows[1]} rows > --max-rows {options.max_rows}", start), None
    else:
        try:
            first, engine = first_dataset(problem, options)
        except TimeoutError as err:
            return _undecided(problem, "timeout", f"no consistent dataset found within the budget ({err})", start), None
    if first is None:
        raise InconsistentRelease(f"no dataset reproduces the published values: conflicting cells "
                                  f"{engine.conflicting_cells()}", f"unit {'/'.join(problem.geo)}",
                                  "check those cells' published values against each other and the schema's edits")
    result = audit_unit(replace(problem, truth=first), options)
    result.problem = problem
    result.intervals = without_values(result.intervals)  # the first dataset's counts, not the truth
    result.seconds = time.perf_counter() - start
    return result, first


def _undecided(problem: Problem, status: str, reason: str, start: float) -> UnitResult:
    return UnitResult(problem, status=status, reason=reason, seconds=time.perf_counter() - start)


def unit_findings(result: UnitResult, release: UnitRelease | None, first: np.ndarray | None = None,
                  header: tuple[str, ...] | None = None, options: ExactOptions = ExactOptions(),
                  cap: int = LISTED) -> dict:
    """The unit's findings (:func:`audit.findings.document.unit_json`); a unit attacked no further than its
    status (too large, timed out) counts as undecided: its claims are not known, so never safe.

    With a store ``header`` its claims are attached for the claim store; the ``first`` dataset the
    candidates came from gives the refuted ones (true in it, contradicted by another consistent dataset).
    """
    if header is not None and first is not None:
        result = replace(result, problem=replace(result.problem, truth=first))  # only the refuted rows read it
    unit = unit_json(result, release, cap, header, options.max_columns)
    if result.status != "done" and not unit["claims"]:
        unit["summary"]["undecided"] = max(unit["summary"]["undecided"], 1)
        unit["claims_unknown"] = True
    return unit


def run_published(release: Path, schema_path: Path, tables_path: Path, options: ExactOptions,
                  on_unit: Callable[[dict], None] | None = None, rules=None, out: Path | None = None) -> Findings:
    """Read the release, attack every unit, and assemble the findings document (no microdata); with
    ``out``, every claim goes to the claim store ``out/claims.csv.gz`` as in a microdata run."""
    start = time.perf_counter()
    schema = load_schema(schema_path)
    schedule = load_schedule(tables_path, schema)
    releases, notes = read_release(release, schema, schedule)
    problems = published_problems(releases, schema, schedule, options.max_rows)
    by_unit = {(r.level, r.geo): r for r in releases}
    keeper = GridKeeper(grid_cap(len(problems)))
    header = store_columns(schema, schedule) if out is not None else None
    writer = StoreWriter(Path(out) / STORE_FILE, header) if header is not None else None
    cap = listing_cap(len(problems))
    units = []
    for problem in problems:
        published = by_unit.get((problem.level, problem.geo))
        result, first = _attack(problem, options)
        units.append(store_unit(unit_findings(result, published, first, header, options, cap), writer))
        if published is not None:
            keeper.offer(units[-1], grid_json(published))
        if on_unit:
            on_unit(units[-1])
    store = writer.close() if writer is not None else None
    doc = document(Inputs(schema, schedule, pd.DataFrame(), str(release)), options, units,
                   time.perf_counter() - start, rules, store)
    finest = max(schedule.levels, key=schema.geography.index)
    return replace(
        doc, notice=NOTICE, inputs={**doc.inputs, "data": None, "release": str(release),
                                    "rows": sum(p.n_rows[1] for p in problems if p.level == finest)},
        published={"release": str(release), "notes": notes,
                   "candidates": f"claims of a first consistent dataset kept by up to {options.solution_cap} "
                                 f"enumerated and {options.samples} sampled datasets (seed {options.seed}), then verified"},
        unavailable=[dict(u) for u in UNAVAILABLE])


def check_options(data: Path | None, schema: Path | None, rank: bool, linear: str | None, infer: bool,
                  scale) -> None:
    """Refuse, before any work, what an attack on a published release alone cannot do."""
    if data is not None:
        raise AuditError("give the microdata (DATA) or a published release (--published), not both", "--published",
                         "drop DATA to audit the release alone, or drop --published")
    if schema is None or infer:
        raise AuditError("a published release needs its schema", "--schema",
                         "pass --schema FILE: there is no data to infer the domains from")
    for flag, given, why in (("--rank", rank, "its match rates are scored against the true rows"),
                             ("--linear-secret", linear, "it needs the microdata's secret column")):
        if given:
            raise AuditError(f"not available with --published: {why}", flag, f"drop {flag}, or audit the microdata")
    if scale is not None:
        raise AuditError("a published release is attacked in this process: --workers, --scheduler, --resume and "
                         "--claims-cap are for microdata", "--published", "drop those options")
