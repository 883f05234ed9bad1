"""The table schedule: tables published per geographic level, compiled to cells."""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ._yaml import Located, load_yaml
from .apriori import Apriori, load_apriori
from .query import Predicate, Statistic, nested
from .schema_types import Schema, is_int

MARGIN = "*"


@dataclass(frozen=True)
class Protection:
    """What the agency applies before publishing; the attacker knows these rules.

    ``suppress_below`` t hides counts 1..t-1 (and 0 too with ``protect_zeros``, as tau-Argus and
    sdcTable do when asked); ``complementary`` adds secondary suppressions along the table's lines;
    ``round_to`` rounds published counts to a base.
    """

    suppress_below: int | None = None
    complementary: bool = False
    round_to: int | None = None
    protect_zeros: bool = False

    def __post_init__(self):
        if self.suppress_below is not None and self.suppress_below < 1:
            raise ValueError("suppress_below must be a positive integer")
        if self.round_to is not None and self.round_to < 1:
            raise ValueError("round_to must be a positive integer")
        if not self.protect_zeros and rounds_to_zero(self.suppress_below, self.round_to):
            # a published 0 would mean "0, or a count from t up": not an interval, and the attacker
            # model (and every engine) works with intervals; protecting zeros or t >= r/2 removes it
            raise ValueError(f"suppress_below {self.suppress_below} with round_to {self.round_to} publishes 0 "
                             f"both for empty cells and for counts that round to 0 from {self.suppress_below} up")


def rounds_to_zero(threshold: int | None, base: int | None) -> bool:
    """Whether a count the threshold lets through (``>= threshold``) can be rounded to 0 at ``base``."""
    return threshold is not None and base is not None and 2 * threshold < base


@dataclass(frozen=True)
class CellDef:
    """One published cell: its predicate and the statistics published for it."""

    table: str
    id: str
    predicate: Predicate
    stats: tuple[Statistic, ...]
    level: str
    label: str = ""
    suppressed: bool = False
    structural: bool = False  # no row can satisfy the predicate (an empty clause, or inside an edit)

    @property
    def key(self) -> str:
        return f"{self.table}:{self.id}"


@dataclass(frozen=True)
class Table:
    """A table at one geographic level. ``lines`` are its additive relations: (total cell, the cells
    that partition it), e.g. a margin and its row, or a region and its counties."""

    id: str
    title: str
    level: str
    cells: tuple[CellDef, ...]
    protection: Protection
    by: tuple[str, ...] = ()
    margins: bool = False
    lines: tuple[tuple[int, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class Schedule:
    tables: tuple[Table, ...]
    protection: Protection = Protection()
    source: str = "<tables>"
    # Per-unit suppression (written by ``audit protect``): geo key ("/".join(geo), e.g. "000100/1003")
    # -> cell keys "TABLE:CELL" suppressed in that unit only. The attacker is assumed to know which
    # cells these are, so each becomes [0, N] like a cell with ``suppressed: true``.
    suppress: Mapping[str, frozenset] = field(default_factory=dict)
    # Per-unit a-priori knowledge (audit.specs.apriori): cells forced to publish, costs, protection levels
    apriori: Mapping[str, Apriori] = field(default_factory=dict)

    @property
    def cells(self) -> tuple[CellDef, ...]:
        return tuple(c for t in self.tables for c in t.cells)

    def table(self, table_id: str) -> Table:
        return next(t for t in self.tables if t.id == table_id)

    @property
    def levels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.level for t in self.tables))


def load_schedule(path: str | Path, schema: Schema) -> Schedule:
    """Read a table schedule YAML and compile every cell against the schema."""
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, Mapping) or not isinstance(data.get("tables"), list) or not data["tables"]:
        raise doc.error("a table schedule needs 'tables:' with at least one table"
                        + (" (the file is empty)" if data is None else ""), fix="see the README's 'Table schedule' section")
    unknown = set(data) - {"tables", "protection", "suppress", "apriori"}
    if unknown:
        raise doc.error(f"unknown key(s) {sorted(unknown)}", sorted(unknown)[0],
                        fix="allowed: tables, protection, suppress, apriori")
    default = _protection(doc, data.get("protection"), Protection(), "protection")
    tables, seen = [], {}
    for i, spec in enumerate(data["tables"]):
        table = _table(doc, schema, spec, i, default)
        if table.id in seen:
            raise doc.error(f"duplicate table id '{table.id}' (also tables[{seen[table.id]}])", "tables", i, "id",
                            fix="give every table its own id")
        seen[table.id] = i
        tables.append(table)
    _warn_unpublished(schema, tables, str(doc.file))
    hidden = _per_unit(doc, data.get("suppress"), tables)
    return Schedule(tuple(tables), default, str(doc.file), hidden,
                    load_apriori(doc, data.get("apriori"), {c.key for t in tables for c in t.cells}, hidden))


def _warn_unpublished(schema: Schema, tables: list[Table], source: str) -> None:
    """Warn of schema columns that no cell selects on or sums (nor the attacker model names): every record
    the attack builds carries them as one value (no cell tells their values apart), and no claim names them."""
    named = {col for t in tables for c in t.cells
             for col in (*c.predicate.columns, *(s.column for s in c.stats if s.column))}
    if schema.attacker is not None:
        named |= {a.column for a in (*schema.attacker.quasi_identifiers, *schema.attacker.sensitive)}
    named |= {c.source for c in schema.columns if c.name in named and c.source}  # a bracket publishes its column
    idle = [name for name in schema.names if name not in named]
    if idle:
        warnings.warn(f"{source}: no table publishes the schema column(s) {', '.join(idle)} (in by, where, "
                      "universe or a statistic); the attack holds each as one value that no claim names (the release "
                      f"says nothing of it) -- remove them from {schema.source}, or publish them",
                      stacklevel=2)


def _per_unit(doc: Located, spec: Any, tables: list[Table]) -> dict[str, frozenset]:
    """``suppress: {"<geo>": ["TABLE:CELL", ...]}``: cells suppressed in one geographic unit only."""
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise doc.error("suppress must map a unit (its geography codes joined by '/') to a list of cells",
                        "suppress", fix='e.g. suppress: {"000100/1003": ["P15:hisp1"]}')
    known = {c.key for t in tables for c in t.cells}
    out = {}
    for key, cells in spec.items():
        geo = doc.code(key, "suppress", key, key=True)
        if not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
            raise doc.error(f"suppress['{geo}'] must be a list of 'TABLE:CELL' keys", "suppress", key,
                            fix='e.g. ["P15:hisp1", "P18:total"]')
        for j, cell in enumerate(cells):
            if cell not in known:
                raise doc.error(f"unknown cell '{cell}' in suppress['{geo}']", "suppress", key, j,
                                fix="use TABLE:CELL with a table id and a cell id of this schedule")
        out[geo] = frozenset(cells)
    return out


def _protection(doc: Located, spec: Any, base: Protection, *path: Any) -> Protection:
    if spec is None:
        return base
    if not isinstance(spec, Mapping) or set(spec) - {"suppress_below", "complementary", "round_to", "protect_zeros"}:
        raise doc.error("protection takes suppress_below, complementary, round_to and protect_zeros", *path,
                        fix="e.g. protection: {suppress_below: 3, complementary: false}")
    values = {**base.__dict__, **spec}
    for key in ("suppress_below", "round_to"):
        if values[key] is not None and (not is_int(values[key]) or values[key] < 1):
            raise doc.error(f"{key} must be a positive integer, not {values[key]!r}", *path, key,
                            fix=f"e.g. {key}: {3 if key == 'suppress_below' else 5}")
    doc.boolean(values, "complementary", False, *path)
    doc.boolean(values, "protect_zeros", False, *path)
    try:
        return Protection(**values)
    except ValueError as exc:  # the only check left: a rounded 0 that could hide counts from t up
        raise doc.error(str(exc), *path, fix=f"set protect_zeros: true, or suppress_below: "
                                             f"{-(-values['round_to'] // 2)} or more") from None


def _stats(doc: Located, spec: Any, decimals: Any, *path: Any) -> tuple[Statistic, ...]:
    if not is_int(decimals) or not 0 <= decimals <= 6:
        raise doc.error(f"decimals must be an integer from 0 to 6, not {decimals!r}", *path, "decimals",
                        fix="e.g. decimals: 1")
    items = spec if isinstance(spec, list) else [spec]
    out = []
    for j, text in enumerate(items):
        try:
            out.append(Statistic.parse(text, decimals))
        except ValueError:
            raise doc.error(f"'{text}' is not a statistic", *path, "stats", j,
                            fix="use count, sum(COL), mean(COL) or median(COL)") from None
    return tuple(out)


def _check_stat_columns(doc: Located, schema: Schema, stats: tuple[Statistic, ...], *path: Any) -> None:
    for stat in stats:
        if stat.column is None:
            continue
        if stat.column not in schema.names or schema.column(stat.column).kind != "integer":
            raise doc.error(f"{stat.name}: '{stat.column}' is not an integer column of the schema", *path, "stats",
                            fix=f"use one of {[c.name for c in schema.columns if c.kind == 'integer']}")


def _table(doc: Located, schema: Schema, spec: Any, i: int, default: Protection) -> Table:
    if not isinstance(spec, Mapping) or "id" not in spec:
        raise doc.error("each table needs an 'id'", "tables", i, fix="e.g. - {id: P12, by: [sex, agegrp]}")
    allowed = {"id", "title", "geography", "universe", "by", "margins", "cells", "stats", "decimals", "protection"}
    if set(spec) - allowed:
        bad = sorted(set(spec) - allowed)[0]
        raise doc.error(f"unknown key '{bad}'", "tables", i, bad, fix=f"allowed: {sorted(allowed)}")
    if ("by" in spec) == ("cells" in spec):
        raise doc.error("a table needs either 'by: [columns]' or 'cells: [...]'", "tables", i,
                        fix="e.g. by: [sex, agegrp], or cells: [{id: a, where: {sex: [F]}}]")
    tid = doc.code(spec["id"], "tables", i, "id")
    level = doc.code(spec.get("geography", schema.geography[-1]), "tables", i, "geography")
    if level not in schema.geography:
        raise doc.error(f"unknown geography level '{level}'", "tables", i, "geography",
                        fix=f"use one of {list(schema.geography)}")
    universe = schema.predicate(spec.get("universe") or {}, doc, "tables", i, "universe")
    protection = _protection(doc, spec.get("protection"), default, "tables", i, "protection")
    decimals = spec.get("decimals", 1)
    margins = doc.boolean(spec, "margins", True, "tables", i)
    cells: list[CellDef] = []
    lines: tuple = ()
    by_names: tuple[str, ...] = ()
    if "by" in spec:
        by_names = _by(doc, schema, spec["by"], i)
        by = list(by_names)
        stats = _stats(doc, spec.get("stats", "count"), decimals, "tables", i)
        _check_stat_columns(doc, schema, stats, "tables", i)
        combos, keys = cross_classification(schema, by, margins)
        for combo in combos:
            where = {name: [code] for name, code in zip(by, combo) if code != MARGIN}
            pred = universe.conjoin(schema.predicate(where, doc, "tables", i, "by"))
            label = ", ".join(schema.code_label(n, c) for n, c in zip(by, combo) if c != MARGIN) or "Total"
            cells.append(CellDef(tid, ",".join(str(c) for c in combo), pred, stats, level, label,
                                 structural=_structural(pred, schema)))
        lines = _lines(keys)
    else:
        if not isinstance(spec["cells"], list) or not spec["cells"]:
            raise doc.error("cells must be a non-empty list", "tables", i, "cells",
                            fix="e.g. cells: [{id: a, where: {sex: [F]}}]")
        ids: dict[str, int] = {}
        for j, cell in enumerate(spec["cells"]):
            here = ("tables", i, "cells", j)
            if not isinstance(cell, Mapping) or "id" not in cell:
                raise doc.error("each cell needs an 'id'", *here, fix="e.g. - {id: a, where: {sex: [F]}}")
            if set(cell) - {"id", "where", "stats", "decimals", "suppressed", "label"}:
                bad = sorted(set(cell) - {"id", "where", "stats", "decimals", "suppressed", "label"})[0]
                raise doc.error(f"unknown key '{bad}'", *here, bad, fix="allowed: id, where, stats, decimals, suppressed, label")
            cid = doc.code(cell["id"], *here, "id")
            if cid in ids:
                raise doc.error(f"duplicate cell id '{cid}' in table '{tid}' (also cells[{ids[cid]}])", *here, "id",
                                fix="give every cell of a table its own id")
            ids[cid] = j
            stats = _stats(doc, cell.get("stats", spec.get("stats", "count")), cell.get("decimals", decimals), *here)
            _check_stat_columns(doc, schema, stats, *here)
            pred = universe.conjoin(schema.predicate(cell.get("where") or {}, doc, *here, "where"))
            cells.append(CellDef(tid, cid, pred, stats, level, str(cell.get("label", cid)),
                                 doc.boolean(cell, "suppressed", False, *here), _structural(pred, schema)))
    return Table(tid, str(spec.get("title", tid)), level, tuple(cells), protection, by_names,
                 margins and bool(by_names), lines)


def _structural(pred: Predicate, schema: Schema) -> bool:
    """A structural zero: no row can satisfy the predicate (an empty clause, or inside one edit's forbidden set)."""
    return pred.empty or any(nested(pred, e.forbid, schema) for e in schema.edits)


def cross_classification(schema: Schema, by: list[str], margins: bool) -> tuple[list[tuple], list[tuple]]:
    """The cells of ``by: [...]``: code combinations (``*`` for a margin) and, per combination and
    base column (a recode counts as its source), a tag and the values it allows.

    Axes on one base column form a hierarchy (a recode and its source, or two nested recodes).
    There, a combination that allows none of the base's values is not a cell, and neither is a
    margin on an axis whose codes another named axis refines, when that axis's code lies inside
    one of them: county ``c`` is published once, under its region (``c,south``), not again as
    ``c,*``; the region subtotal ``*,south`` stays. The tag identifies a cell along a base: the
    allowed values on a shared base, the codes on the others.
    """
    axes = []
    for name in by:
        recode = schema.recode(name)
        base = recode.source if recode else name
        groups = list(recode.groups.items()) if recode else [(c, frozenset([c])) for c in schema.column(name).codes]
        axes.append((base, groups + ([(MARGIN, None)] if margins else [])))
    bases = list(dict.fromkeys(base for base, _ in axes))
    shared = {b for b in bases if sum(base == b for base, _ in axes) > 1}
    refines = {(n, m): all(x <= g or not x & g for _, x in axes[n][1] if x is not None
                           for _, g in axes[m][1] if g is not None)
               for n in range(len(axes)) for m in range(len(axes)) if n != m and axes[n][0] == axes[m][0]}
    codes_out, keys = [], []
    for combo in itertools.product(*(groups for _, groups in axes)):
        key = []
        for base in bases:
            on = [k for k, (b, _) in enumerate(axes) if b == base]
            named = [k for k in on if combo[k][1] is not None]
            values = frozenset(schema.column(base).codes).intersection(*(combo[k][1] for k in named))
            if base in shared and (
                    (not values and len(named) > 1)  # e.g. a county outside the region it is crossed with
                    or any(combo[m][1] is None and any(refines[n, m] for n in named)
                           and any(values <= g for _, g in axes[m][1] if g is not None) for m in on)):
                break
            key.append((values if base in shared else tuple(combo[k][0] for k in on), values))
        else:
            codes_out.append(tuple(code for code, _ in combo))
            keys.append(tuple(key))
    return codes_out, keys


def _lines(keys: list[tuple]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Additive relations among cells given as (tag, allowed values) per base column: a cell and,
    along one base, the largest cells strictly inside it that agree on the other bases, when they
    partition it; and a cell and each other cell that allows the same values (a single child)."""
    out = []
    for b in range(len(keys[0]) if keys else 0):
        groups: dict[tuple, list[int]] = {}
        for j, key in enumerate(keys):
            groups.setdefault(tuple(tag for tag, _ in key[:b] + key[b + 1:]), []).append(j)
        for members in groups.values():
            for parent in members:
                whole = keys[parent][b][1]
                out += [(parent, (j,)) for j in members if j > parent and keys[j][b][1] == whole]
                # largest first; of equal ones the later, which has more margins: a subtotal before its single part
                inside = sorted((j for j in members if keys[j][b][1] < whole), key=lambda j: (-len(keys[j][b][1]), -j))
                top: list[int] = []
                for j in inside:
                    if not any(keys[j][b][1] <= keys[t][b][1] for t in top):
                        top.append(j)
                parts = [keys[j][b][1] for j in top]
                if parts and sum(map(len, parts)) == len(whole) and frozenset().union(*parts) == whole:
                    out.append((parent, tuple(sorted(top))))
    return tuple(out)


def _by(doc: Located, schema: Schema, spec: Any, i: int) -> tuple[str, ...]:
    """The columns a table cross-classifies: known attributes or recodes, each once, no geography."""
    items = spec if isinstance(spec, list) else [spec]
    names: list[str] = []
    for j, item in enumerate(items):
        here = ("tables", i, "by", j) if isinstance(spec, list) else ("tables", i, "by")
        name = doc.code(item, *here)
        if name in schema.geography:
            raise doc.error(f"'{name}' is a geography column: tables are published per unit of a level", *here,
                            fix=f"remove it from by and set 'geography: {name}' on the table")
        if name not in schema.known():
            raise doc.error(f"unknown column '{name}'", *here, fix=f"use one of {schema.known()}")
        if name in names:
            raise doc.error(f"'{name}' is listed twice", *here, fix="list each column once")
        bases = {n: (schema.recode(n).source if schema.recode(n) else n) for n in names + [name]}
        nested = [n for n in bases if schema.recode(n) is not None and schema.recode(n).nested]
        if any(bases[n] == bases[h] for h in nested for n in bases if n != h):
            h = nested[0]
            raise doc.error(f"hierarchy '{h}' publishes every level of '{bases[h]}' already", *here,
                            fix=f"list '{h}' alone for '{bases[h]}' in by")
        names.append(name)
    return tuple(names)
