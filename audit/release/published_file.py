"""A published release file read back into units: the CSV ``audit tabulate`` writes (geography, level,
table, cell, label, statistic, value, status), a simpler cell file (geography, table, cell, value), or
a Census Bureau reconstruction LP (:mod:`audit.release.census_lp`), checked as strictly as microdata
against the schema and table schedule and rebuilt into :class:`~audit.release.constraints.UnitRelease`
objects (what :mod:`audit.published` attacks)."""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from ..data.microdata import read_table
from ..errors import AuditError
from ..specs.schedule import MARGIN, Schedule
from ..specs.schema import Schema
from . import census_lp, census_lp_reader
from .constraints import EMPTY, PUBLISHED, STRUCTURAL, SUPPRESSED, UnitRelease, Value
from .magnitude import Contributions
from .tabulate import _hide
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

STATUSES = (PUBLISHED, SUPPRESSED, EMPTY, STRUCTURAL)


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
    optionally ``statistic`` (needed when a cell publishes several), ``status`` and ``level``, and for a
    published sum ``contributors`` and ``top`` (its largest contributions, largest first, space-separated),
    which the magnitude rules judge. A value suppressed where no rule of the schedule suppresses it is read
    as withheld: 0 to N.
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
            if c in ("table", "cell", "value", "statistic", "status", "level", "contributors", "top") or c in geo}
    found: dict[tuple, Value] = {}
    lines: dict[tuple, int] = {}
    magnitude: dict[tuple, dict] = {}
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
        top = text.get("top", [""] * len(frame))[i].strip()
        if top or text.get("contributors", [""] * len(frame))[i].strip():
            magnitude.setdefault((table.level, codes), {})[value.key] = _contributions(
                value, text.get("contributors", [""] * len(frame))[i], top, name, i)
    releases, withheld = _units(found, lines, schedule, name, magnitude)
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


def _contributions(value: Value, count: str, top: str, name: str, i: int) -> Contributions:
    """A published sum's ``contributors`` and ``top`` columns as its contributions (``Contributions.given``)."""
    if value.stat.kind != "sum" or value.status != PUBLISHED:
        raise _row_error(name, i, f"contributors are given for {value.key}, which is not a published sum",
                         "give contributors and top only on published sum rows")
    try:
        n, largest = int(count), [int(x) for x in top.split()]
    except ValueError:
        raise _row_error(name, i, f"contributors {count!r} and top {top!r} are not whole numbers",
                         "give the number of contributors and the largest contributions, space-separated") from None
    if n < sum(x > 0 for x in largest):
        raise _row_error(name, i, f"{sum(x > 0 for x in largest)} non-zero top contributions but {n} contributors",
                         "check the contributors and top columns")
    return Contributions.given(value.value, n, largest)


def _units(found: dict, lines: dict, schedule: Schedule, name: str, magnitude: dict | None = None
           ) -> tuple[list[UnitRelease], int]:
    """Every unit's values in the schedule's order (with its published sums' contributions from
    ``magnitude``), and how many are withheld with no rule of the schedule to explain them; a unit lacking
    a value of its level is an error."""
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
        out.append(UnitRelease(level, codes, tuple(values), {t.id: t.protection for t in tables},
                               (magnitude or {}).get((level, codes), {})))
    return out, withheld


def _explained(cell, table) -> bool:
    """Whether the schedule's rules account for a suppressed cell (else it is read as withheld: 0 to N)."""
    p = table.protection
    return cell.suppressed or p.complementary or p.suppress_below is not None
