"""Another tool's suppression pattern read onto the schedule's cells, for ``audit protect --audit-only
--pattern FILE``: a CSV of cell statuses as tau-Argus, sdcTable, GaussSuppression or SDMX write them,
or our own protected.csv (codes: :mod:`audit.peers.codes`)."""
from __future__ import annotations

import csv
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Mapping

from ..errors import AuditError
from ..paths import read_text
from ..release.constraints import PUBLISHED as SHOWN, SUPPRESSED
from ..release.tabulate import tabulate, units_of
from ..specs.schedule import MARGIN, Schedule
from .codes import HIDDEN, read

# a status column's name -> the system whose codes it holds (the first found is read, unless one is named)
STATUS_COLUMNS = {"status": "status", "sdcStatus": "sdctable", "sdctable": "sdctable", "suppressed": "gauss",
                  "CONF_STATUS": "sdmx",
                  "sdmx_conf_status": "sdmx", "OBS_CONF": "sdmx", "tau_argus": "tau_argus", "tau_argus_sbs": "sbs"}
TOTALS = {"Total", "total", "TOTAL", "Tot", MARGIN, ""}
VALUE_COLUMNS = ("value", "freq")
HEADERLESS = {".csv": "tau_argus", ".sbs": "sbs"}  # tau-Argus's own files (as audit.peers.release writes them)


@dataclass(frozen=True)
class Pattern:
    """Each listed cell's status in our words and in the file's own code, per unit (geo key)."""

    source: str
    system: str
    statuses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    codes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self):
        if self.system not in set(STATUS_COLUMNS.values()):
            raise ValueError(f"unknown status system {self.system}")

    def hidden(self) -> dict[str, frozenset]:
        return {geo: frozenset(k for k, s in cells.items() if s in HIDDEN) for geo, cells in self.statuses.items()}


def read_pattern(path: Path, inputs, column: str | None = None, table: str | None = None) -> Pattern:
    """The pattern in ``path`` on the schedule's cells. ``column`` names the status column (default:
    the first of :data:`STATUS_COLUMNS` present); a file without a header is tau-Argus's code-value
    CSV (``.csv``, status number last) or its SBS form (``.sbs``), of the table ``table`` (default: the
    file's name). Errors name the file and row."""
    rows = list(csv.reader(read_text(path, "pattern CSV").splitlines()))
    if not rows:
        raise AuditError("the pattern file is empty", str(path), "give a CSV with a header and one row per cell")
    header = _names(rows[0], inputs.schema)
    if column and column not in STATUS_COLUMNS:
        raise AuditError(f"'{column}' is not a status column this tool reads", "--pattern-status",
                         f"name one of {list(STATUS_COLUMNS)} (docs/peers.md), or rename the file's column")
    if column and column not in header:
        raise AuditError(f"no column '{column}'", str(path), f"name one of its columns: {header}")
    column = column or next((c for c in STATUS_COLUMNS if c in header), None)
    if column is None:
        return _headerless(str(path), rows, inputs, table or Path(path).stem)
    return _read(str(path), header, [(n, row) for n, row in enumerate(rows[1:], start=2)], inputs, column, table)


def _names(header: list[str], schema) -> list[str]:
    """The header with SDMX's upper-case names as ours (``TABLE``, ``CELL``, ``STATISTIC``, ``OBS_VALUE``,
    a geography or schema column in capitals); the status columns keep their own spelling."""
    ours = {n.lower(): n for n in ("table", "cell", "statistic", *schema.geography, *schema.known())}
    ours["obs_value"] = "value"
    return [h if h in STATUS_COLUMNS else ours.get(h.lower(), h) for h in header]


def _headerless(source: str, rows: list[list[str]], inputs, table_id: str) -> Pattern:
    """tau-Argus's code-value file without a header: geography codes, the cell's codes, value, then the
    status number (``.csv``) or frequency and SBS letter (``.sbs``)."""
    system = HEADERLESS.get(Path(source).suffix)
    ids = {t.id for t in inputs.schedule.tables}
    if system is None or table_id not in ids:
        raise AuditError("no status column in the first line, and not a tau-Argus file of a table of the schedule",
                         source, f"give a header with one of {list(STATUS_COLUMNS)} (and the table's columns), "
                                 f"or name a tau-Argus .csv/.sbs file after its table ({sorted(ids)})")
    t = inputs.schedule.table(table_id)
    names = [*inputs.schema.geography[: inputs.schema.geography.index(t.level) + 1], *(t.by or ["cell"])]
    header = [*names, "value", "tau_argus"] if system == "tau_argus" else [*names, "value", "freq", "tau_argus_sbs"]
    for n, row in enumerate(rows, start=1):
        if len(row) != len(header):
            raise AuditError(f"row {n} has {len(row)} fields; a {system} file of table {table_id} has {len(header)} "
                             f"({', '.join(header)})", source, "write the file as tau-Argus does, one cell a line")
    return _read(source, header, list(enumerate(rows, start=1)), inputs, header[-1], table_id,
                 None if t.by else table_id)  # a table listed cell by cell: its one variable is the cell id


def _read(source: str, header: list[str], body, inputs, column: str, table: str | None,
          table_column: str | None = None) -> Pattern:
    """The statuses of ``body`` (row number, fields) under ``header``; ``table_column``: every row is
    of that table (its cells named by ``cell`` alone)."""
    schedule, system = inputs.schedule, STATUS_COLUMNS[column]
    units, ids = _units(inputs), {c.key for c in schedule.cells}
    dims = set(header) & set(inputs.schema.known())
    statuses: dict[str, dict[str, str]] = {}
    codes: dict[str, dict[str, str]] = {}
    values: dict[tuple[str, str], tuple[str, int]] = {}
    for n, row in body:
        if not any(row):
            continue
        if len(row) != len(header):
            raise AuditError(f"{len(row)} fields under a header of {len(header)}", f"{source}: row {n}",
                             "give every row a field for each column (an empty one for a blank)")
        rec = dict(zip(header, row)) | ({"table": table_column} if table_column else {})
        where = f"{source}: row {n}"
        raw = f"{rec.get('primary', 'FALSE')},{rec[column]}" if system == "gauss" else rec[column]
        status = read(raw, system, where)
        for k in _keys(rec, schedule, ids, dims, inputs.schema.geography, table, where):
            geo = _geo(rec, inputs.schema.geography, schedule.table(k.split(":")[0]).level, units, where)
            value = next((rec[c] for c in VALUE_COLUMNS if c in rec), None)
            if rec.get("statistic", "count") == "count" and value not in (None, "", "x", "-") and status not in HIDDEN:
                values[(geo, k)] = (value, n)
            mine = statuses.setdefault(geo, {})
            if mine.get(k) not in HIDDEN:  # a cell is hidden when any of its statistics is
                mine[k] = status
                codes.setdefault(geo, {})[k] = raw
    pattern = Pattern(source, system, statuses, codes)
    _check_values(pattern, inputs, values)
    return pattern


def _keys(rec: Mapping[str, str], schedule: Schedule, ids: set[str], dims: set[str], geography: tuple[str, ...],
          table: str | None, where: str) -> list[str]:
    """The schedule's cells (``ids``) a row names: by ``table`` and ``cell``, else by the codes of each
    table's ``by`` columns (a total as Total, * or empty), in every table whose columns the row has,
    that breaks down none of its other columns (``dims``: the file's schema columns) by a code, and
    whose level is the row's (its finer geography columns, where given, are totals)."""
    if "table" in rec and "cell" in rec:
        key = f"{rec['table']}:{rec['cell']}"
        if key not in ids:
            raise AuditError(f"cell '{key}' is not in the schedule", where, "use TABLE and CELL ids of --tables")
        return [key]
    keys = []
    for t in schedule.tables:
        if (table and t.id != table) or not t.by or not all(b in rec for b in t.by):
            continue
        if any(rec[d].strip() not in TOTALS for d in dims if d not in t.by):
            continue  # the row is a cell of a table that breaks it down by this column too
        depth = geography.index(t.level) + 1
        if any((rec[g].strip() in TOTALS) != (i >= depth) for i, g in enumerate(geography) if g in rec):
            continue  # a unit of another level (its code given below the table's level, or a total at it)
        key = f"{t.id}:" + ",".join(MARGIN if rec[b].strip() in TOTALS else rec[b].strip() for b in t.by)
        if key in ids:
            keys.append(key)
    if not keys:
        raise AuditError("the row names no cell of the schedule", where,
                         "give table and cell columns, or every `by` column of a table (a total as Total)")
    return keys


def _units(inputs) -> dict[str, list[str]]:
    return {level: ["/".join(g) for g, _ in units_of(inputs.frame, inputs.schema, level)]
            for level in inputs.schedule.levels}


def _geo(rec: Mapping[str, str], geography: tuple[str, ...], level: str, units: Mapping[str, list[str]],
         where: str) -> str:
    """The unit (geo key) a row is of: its geography columns down to ``level``, or the one unit there."""
    known, needed = units.get(level, []), list(geography[: geography.index(level) + 1])
    missing = [c for c in needed if c not in rec]
    if not missing:
        geo = "/".join(rec[c].strip() for c in needed)
        if geo not in known:
            raise AuditError(f"unit '{geo}' is not a {level} of the data", where, "use the data's geography codes")
        return geo
    if len(known) == 1:
        return known[0]
    raise AuditError(f"no {', '.join(missing)} column, and the data have {len(known)} units at level {level}", where,
                     f"add the geography columns {needed}")


def _check_values(pattern: Pattern, inputs, values: Mapping[tuple[str, str], tuple[str, int]]) -> None:
    """A count the pattern publishes must be the one the data give: else it is another table's pattern."""
    if not values:
        return
    for release in tabulate(inputs.frame, inputs.schema, inputs.schedule):
        geo = "/".join(release.geo)
        for v in release.values:
            given = values.get((geo, v.cell.key))
            if given is None or v.stat.kind != "count" or v.status not in (SHOWN, SUPPRESSED):
                continue
            truth = v.value if v.status == SHOWN else None
            try:
                number = Fraction(given[0])
            except (ValueError, ZeroDivisionError):
                raise AuditError(f"'{given[0]}' is not a count", f"{pattern.source}: row {given[1]}",
                                 "write the published count, or x for a hidden cell") from None
            if truth is not None and number != truth:
                raise AuditError(f"cell {v.cell.key} of unit {geo} is {given[0]} in the pattern but {truth} "
                                 "in the data",
                                 f"{pattern.source}: row {given[1]}",
                                 "audit the pattern with the data, schema and tables it was made from")


def with_pattern(inputs, pattern: Pattern):
    """The inputs with the pattern's hidden cells listed per unit (the attacker sees [0, N]); refused
    where the schedule's own protection hides a cell the pattern publishes."""
    merged = {k: frozenset(v) for k, v in (inputs.schedule.suppress or {}).items()}
    for geo, cells in pattern.hidden().items():
        if cells:
            merged[geo] = merged.get(geo, frozenset()) | cells
    patterned = replace(inputs, schedule=replace(inputs.schedule, suppress=merged))
    for release in tabulate(patterned.frame, patterned.schema, patterned.schedule):
        geo = "/".join(release.geo)
        listed = pattern.statuses.get(geo, {})
        for v in release.values:
            if v.status == SUPPRESSED and listed.get(v.cell.key) not in (None, *HIDDEN):
                p = release.protection[v.cell.table]
                raise AuditError(f"cell {v.cell.key} of unit {geo} is published in the pattern, but the schedule's own "
                                 f"protection hides it (suppress_below {p.suppress_below}, complementary "
                                 f"{p.complementary})", pattern.source,
                                 "audit the pattern with a tables file without suppress_below or complementary, so "
                                 "that the pattern alone decides what is hidden")
    return patterned
