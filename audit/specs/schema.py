"""The schema: unit, geography levels, attribute columns, recodes and structural edits."""
from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ._yaml import Located, load_yaml
from .attacker import load_attacker
from ..errors import AuditError
from .query import Predicate

UNITS = ("person", "household", "family", "housing unit", "establishment", "record")  # what one data row is
MAX_INTEGER_VALUES = 10_000  # an integer domain is enumerated (a numeric one per value): max - min + 1 at most


@dataclass(frozen=True)
class Column:
    """An attribute: ``categorical`` codes (strings) with labels, or an ``integer`` range."""

    name: str
    kind: str
    codes: tuple = ()
    labels: Mapping[Any, str] = field(default_factory=dict)
    title: str = ""  # how reports name the column ("Age"); empty: the labels speak for themselves

    def __post_init__(self):
        if self.kind not in ("categorical", "integer"):
            raise ValueError(f"column {self.name}: kind must be categorical or integer")
        if not self.codes:
            raise ValueError(f"column {self.name}: empty domain")

    @classmethod
    def integer(cls, name: str, lo: int, hi: int, where: str | None = None) -> "Column":
        """The column of the integers ``lo..hi``, refused past :data:`MAX_INTEGER_VALUES` before any is made."""
        if hi - lo + 1 > MAX_INTEGER_VALUES:
            raise AuditError(f"integer column '{name}' has {hi - lo + 1:,} values ({lo}..{hi}); the domain is "
                             f"enumerated, so at most {MAX_INTEGER_VALUES:,} are allowed", where or name,
                             f"narrow min..max, or publish '{name}' coarsened (e.g. in thousands) with a "
                             "matching range")
        return cls(name, "integer", tuple(range(lo, hi + 1)))

    def label(self, code: Any) -> str:
        return str(self.labels.get(code, code))


@dataclass(frozen=True)
class Recode:
    """A derived categorical column: each code stands for a set of values of ``source``."""

    name: str
    source: str
    groups: Mapping[str, frozenset]
    labels: Mapping[str, str] = field(default_factory=dict)
    nested: bool = False  # a hierarchy: groups are its leaves and subtotals (they nest), see :func:`_load_hierarchy`

    def label(self, code: str) -> str:
        return str(self.labels.get(code, code))


@dataclass(frozen=True)
class Edit:
    """A structural edit the attacker also knows: no row may satisfy ``forbid``."""

    forbid: Predicate
    label: str = ""


@dataclass(frozen=True)
class Schema:
    unit: str
    geography: tuple[str, ...]
    columns: tuple[Column, ...]
    recodes: tuple[Recode, ...] = ()
    edits: tuple[Edit, ...] = ()
    source: str = "<schema>"
    attacker: Any = None  # an audit.specs.attacker.AttackerModel: what an attacker knows and wants (optional)
    contributor: str | None = None  # data column naming each row's contributor (magnitude rules; optional)

    def __post_init__(self):
        names = [c.name for c in self.columns] + [r.name for r in self.recodes]
        if len(set(names)) != len(names):
            raise ValueError("column and recode names must be unique")
        if set(names) & set(self.geography):
            raise ValueError("a geography column cannot also be an attribute")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    def recode(self, name: str) -> Recode | None:
        return next((r for r in self.recodes if r.name == name), None)

    def known(self) -> list[str]:
        return list(self.names) + [r.name for r in self.recodes]

    def values(self, name: str, spec: Any, where: str) -> tuple[str, frozenset]:
        """Resolve one ``where`` entry (codes, a code, or ``{min, max}``) to base column and values."""
        recode = self.recode(name)
        if recode is not None:
            codes = spec if isinstance(spec, list) else [spec]
            out: set = set()
            for code in codes:
                if str(code) not in recode.groups:
                    raise AuditError(f"'{code}' is not a code of recode '{name}'", where,
                                     f"use one of {sorted(recode.groups)}")
                out |= recode.groups[str(code)]
            return recode.source, frozenset(out)
        if name in self.geography:
            raise AuditError(f"'{name}' is a geography column: cells count within one unit of a level", where,
                             f"remove it, and publish the table at 'geography: {name}'")
        if name not in self.names:
            raise AuditError(f"unknown column '{name}'", where, f"use one of {self.known()}")
        col = self.column(name)
        if isinstance(spec, Mapping):
            if col.kind != "integer" or not set(spec) <= {"min", "max"}:
                raise AuditError(f"a range {{min, max}} needs an integer column; '{name}' is {col.kind}"
                                 if col.kind != "integer" else f"a range takes only min and max, not {sorted(spec)}",
                                 where, "list the codes instead" if col.kind != "integer" else "use {min: A, max: B}")
            lo, hi = spec.get("min", col.codes[0]), spec.get("max", col.codes[-1])
            if not is_int(lo) or not is_int(hi):
                raise AuditError(f"min and max must be integers, not {lo!r} and {hi!r}", where,
                                 "e.g. {min: 18, max: 64}")
            if lo > hi:
                raise AuditError(f"min {lo} is above max {hi}", where, "swap them")
            return name, frozenset(v for v in col.codes if lo <= v <= hi)
        codes = spec if isinstance(spec, list) else [spec]
        out = set()
        for code in codes:
            value = _coerce(col, code)
            if col.kind == "integer" and not is_int(value):
                raise AuditError(f"{code!r} is not an integer", where, f"use integers {_show_domain(col)[9:]}")
            if value not in col.codes:
                raise AuditError(f"'{code}' is outside the domain of '{name}'", where,
                                 f"use one of {_show_domain(col)}")
            out.add(value)
        return name, frozenset(out)

    def predicate(self, where_spec: Mapping[str, Any], doc: Located | None, *path: Any) -> Predicate:
        """Compile a ``where`` mapping into a predicate over base columns (clauses on one column intersect)."""
        if not isinstance(where_spec, Mapping):
            raise _err(doc, "expected a mapping of column to codes", *path, fix="write e.g. {sex: [F], age: {min: 18}}")
        clauses: dict[str, frozenset] = {}
        for key, spec in where_spec.items():
            name = doc.code(key, *path, key, key=True) if doc else str(key)
            if doc and (self.recode(name) or name in self.names and self.column(name).kind == "categorical"):
                spec = doc.codes(spec, *path, key)
            base, values = self.values(name, spec, doc.where(*path, key) if doc else name)
            clauses[base] = clauses[base] & values if base in clauses else values
        return Predicate.of(clauses)

    def code_label(self, name: str, code: Any) -> str:
        recode = self.recode(name)
        return recode.label(code) if recode else self.column(name).label(code)


def is_int(value: Any) -> bool:
    """An integer from YAML or Python, not a boolean (``True`` is an int to Python)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _coerce(col: Column, code: Any) -> Any:
    """A code as the column holds it: an int (from an int or its digits; not a bool or 1.5) or a string."""
    if col.kind == "integer":
        if is_int(code):
            return code
        if isinstance(code, str) and code.strip().lstrip("+-").isdigit():
            return int(code)
        return code
    return str(code)


def _show_domain(col: Column) -> str:
    if col.kind == "integer":
        return f"integers {col.codes[0]}..{col.codes[-1]}"
    return str(list(col.codes))


def _err(doc: Located | None, message: str, *path: Any, fix: str | None = None) -> AuditError:
    return doc.error(message, *path, fix=fix) if doc else AuditError(message, None, fix)


def load_schema(path: str | Path) -> Schema:
    """Read and validate a schema YAML file."""
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, Mapping):
        raise doc.error("a schema must be a mapping with unit, geography and columns"
                        + (" (the file is empty)" if data is None else ""), fix="see the README's 'Schema' section")
    allowed = ("unit", "geography", "columns", "recodes", "hierarchies", "constraints", "attacker", "contributor")
    unknown = set(data) - set(allowed)
    if unknown:
        raise doc.error(f"unknown key(s) {sorted(map(str, unknown))}", sorted(unknown, key=str)[0],
                        fix=f"allowed: {', '.join(allowed)}")
    for key in ("unit", "geography", "columns"):
        if key not in data:
            raise doc.error(f"missing required key '{key}'", fix=f"add '{key}:' (see the README)")
    unit = _unit(doc, data["unit"])
    geography = data["geography"] if isinstance(data["geography"], list) else [data["geography"]]
    if not geography or not all(isinstance(g, (str, int, bool)) or g is None for g in geography):
        raise doc.error("geography must be a list of column names, coarse to fine", "geography",
                        fix="e.g. geography: [county, tract, block]")
    geography = [doc.code(g, "geography", i) if isinstance(data["geography"], list) else doc.code(g, "geography")
                 for i, g in enumerate(geography)]
    if len(set(geography)) != len(geography):
        raise doc.error(f"a geography level is listed twice in {geography}", "geography",
                        fix="list each level once, coarse to fine")
    if not isinstance(data["columns"], Mapping) or not data["columns"]:
        raise doc.error("columns must be a non-empty mapping", "columns",
                        fix="e.g. columns: {sex: {type: categorical, values: [F, M]}}")
    columns = [_load_column(doc, doc.code(name, "columns", name, key=True), spec, name)
               for name, spec in data["columns"].items()]
    schema = Schema(unit, tuple(geography), tuple(columns), source=str(doc.file))
    recodes = data.get("recodes") or {}
    if not isinstance(recodes, Mapping):
        raise doc.error("recodes must map a new column name to {from, bins or map}", "recodes",
                        fix="e.g. recodes: {agegrp: {from: age, bins: [{code: child, min: 0, max: 17}]}}")
    recodes = [_load_recode(doc, schema, doc.code(name, "recodes", name, key=True), spec, name)
               for name, spec in recodes.items()]
    hierarchies = data.get("hierarchies") or {}
    if not isinstance(hierarchies, Mapping):
        raise doc.error("hierarchies must map a name to {from: COLUMN, children: {node: [codes]}} or {from, hrc}",
                        "hierarchies", fix="e.g. hierarchies: {area: {from: region, children: {north: [a, b]}}}")
    recodes += [_load_hierarchy(doc, schema, doc.code(name, "hierarchies", name, key=True), spec, name)
                for name, spec in hierarchies.items()]
    names = [c.name for c in columns] + [r.name for r in recodes]
    for name in set(names):
        if names.count(name) > 1:
            where = "hierarchies" if name in hierarchies else "recodes"
            raise doc.error(f"'{name}' is defined twice", where, name, fix=f"rename the {where[:-1].replace('ie', 'y')}")
    for name in geography:
        if name in names:
            raise doc.error(f"'{name}' is both a geography column and an attribute", "geography",
                            fix=f"rename the attribute '{name}'")
    schema = Schema(schema.unit, schema.geography, schema.columns, tuple(recodes), source=str(doc.file))
    constraints = data.get("constraints") or []
    if not isinstance(constraints, list):
        raise doc.error("constraints must be a list of '- forbid: {column: codes, ...}'", "constraints",
                        fix="e.g. constraints: [{forbid: {marital: [M], age: {max: 14}}}]")
    edits = tuple(_load_edit(doc, schema, spec, i) for i, spec in enumerate(constraints))
    attacker = load_attacker(doc, schema, data["attacker"]) if "attacker" in data else None
    contributor = None
    if data.get("contributor") is not None:
        contributor = doc.code(data["contributor"], "contributor")
        if contributor in names or contributor in geography:
            raise doc.error(f"the contributor column '{contributor}' is also a geography level or attribute",
                            "contributor", fix="name the data column of contributor ids (e.g. an enterprise id)")
    return Schema(schema.unit, schema.geography, schema.columns, schema.recodes, edits, str(doc.file), attacker,
                  contributor)


def _unit(doc: Located, value: Any) -> str:
    """What one data row is (a word of :data:`UNITS`, used in the report's sentences)."""
    unit = doc.code(value, "unit").strip().lower()
    if unit not in UNITS:
        close = difflib.get_close_matches(unit, UNITS, n=1, cutoff=0.6)
        raise doc.error(f"unknown unit '{value}'", "unit",
                        fix=f"did you mean 'unit: {close[0]}'?" if close else f"use one of {list(UNITS)}")
    return unit


def _load_edit(doc: Located, schema: Schema, spec: Any, i: int) -> Edit:
    """One structural edit; an empty one, one that forbids nothing or one that forbids every row is refused."""
    here = ("constraints", i)
    if not isinstance(spec, Mapping) or "forbid" not in spec or set(spec) - {"forbid", "label"}:
        raise doc.error("each constraint is '- forbid: {column: codes, ...}' with an optional label", *here,
                        fix="e.g. - forbid: {marital: [M], age: {max: 14}}")
    forbid = spec["forbid"]
    if isinstance(forbid, Mapping) and not forbid:
        raise doc.error("an empty forbid forbids every row", *here, "forbid",
                        fix="name the columns and codes that may not occur together, e.g. {marital: [M], age: {max: 14}}")
    pred = schema.predicate(forbid, doc, *here, "forbid")
    for col, values in pred.clauses:
        if not values:
            raise doc.error(f"no value of '{col}' is selected, so the edit forbids nothing", *here, "forbid",
                            fix="list the codes the edit forbids, or remove the edit")
    label = str(spec.get("label", "")) or _describe(pred, schema)
    if all(values == frozenset(schema.column(col).codes) for col, values in pred.clauses):
        raise doc.error(f"the edit '{label}' forbids every row: each of its columns lists its whole domain",
                        *here, "forbid", fix="narrow the codes it forbids, or remove the edit")
    return Edit(pred, label)


def _describe(pred: Predicate, schema: Schema) -> str:
    """A forbid mapping in short text, for messages: ``marital in [M], age 0..14``."""
    parts = []
    for col, values in pred.clauses:
        ordered = [c for c in schema.column(col).codes if c in values]
        run = schema.column(col).kind == "integer" and ordered and ordered[-1] - ordered[0] == len(ordered) - 1
        parts.append(f"{col} {ordered[0]}..{ordered[-1]}" if run and len(ordered) > 1 else f"{col} in {ordered}")
    return "forbid " + ", ".join(parts)


def _load_column(doc: Located, name: str, spec: Any, key: Any) -> Column:
    here = ("columns", key)
    if not isinstance(spec, Mapping) or spec.get("type") not in ("categorical", "integer"):
        raise doc.error("each column needs 'type: categorical' or 'type: integer'", *here,
                        fix="e.g. sex: {type: categorical, values: {F: Female, M: Male}}")
    title = spec.get("title", "")
    if not isinstance(title, str):
        raise doc.error("a column's title must be text", *here, "title", fix="e.g. age: {type: integer, title: Age, ...}")
    return replace(_load_domain(doc, name, spec, here), title=title)


def _load_domain(doc: Located, name: str, spec: Mapping, here: tuple) -> Column:
    if spec["type"] == "integer":
        lo, hi = spec.get("min"), spec.get("max")
        if not is_int(lo) or not is_int(hi) or lo > hi:
            raise doc.error("an integer column needs integer 'min' <= 'max'", *here,
                            fix="e.g. age: {type: integer, min: 0, max: 115}")
        return Column.integer(name, lo, hi, doc.where(*here))
    values = spec.get("values")
    if not isinstance(values, (list, Mapping)) or not values:
        raise doc.error("a categorical column needs 'values: {code: label, ...}' or 'values: [codes]'", *here,
                        fix="e.g. sex: {type: categorical, values: {F: Female, M: Male}}")
    if isinstance(values, list):
        pairs = [(doc.code(v, *here, "values", j), v) for j, v in enumerate(values)]
    else:
        pairs = [(doc.code(c, *here, "values", c, key=True), label) for c, label in values.items()]
    codes = [c for c, _ in pairs]
    if len(set(codes)) != len(codes):
        twice = next(c for c in codes if codes.count(c) > 1)
        raise doc.error(f"code '{twice}' is listed twice", *here, "values", fix="list each code once")
    return Column(name, "categorical", tuple(codes), {c: str(label) for c, label in pairs})


def _load_recode(doc: Located, schema: Schema, name: str, spec: Any, key: Any) -> Recode:
    here = ("recodes", key)
    if not isinstance(spec, Mapping) or "from" not in spec or ("bins" in spec) == ("map" in spec):
        raise doc.error("a recode needs 'from: COLUMN' and either 'bins:' or 'map:'", *here,
                        fix="e.g. agegrp: {from: age, bins: [{code: child, min: 0, max: 17}]}")
    source = doc.code(spec["from"], *here, "from")
    if source not in schema.names:
        raise doc.error(f"unknown column '{source}'", *here, "from", fix=f"use one of {list(schema.names)}")
    col = schema.column(source)
    groups: dict[str, frozenset] = {}
    labels: dict[str, str] = {}
    if "bins" in spec:
        if col.kind != "integer" or not isinstance(spec["bins"], list):
            raise doc.error("bins need an integer column and a list of {code, min, max}", *here, "bins",
                            fix="e.g. bins: [{code: child, min: 0, max: 17}, {code: adult, min: 18, max: 115}]")
        for i, b in enumerate(spec["bins"]):
            if not isinstance(b, Mapping) or "code" not in b:
                raise doc.error("each bin needs code, min and max", *here, "bins", i,
                                fix="e.g. {code: child, min: 0, max: 17}")
            code = doc.code(b["code"], *here, "bins", i, "code")
            _, groups[code] = schema.values(source, {k: b[k] for k in ("min", "max") if k in b},
                                            doc.where(*here, "bins", i))
            labels[code] = str(b.get("label", code))
    else:
        if not isinstance(spec["map"], Mapping):
            raise doc.error("map must be {new_code: [old codes]}", *here, "map", fix="e.g. map: {white: [W], other: [B, A]}")
        for new, old in spec["map"].items():
            code = doc.code(new, *here, "map", new, key=True)
            old = doc.codes(old, *here, "map", new) if col.kind == "categorical" else old
            _, groups[code] = schema.values(source, old, doc.where(*here, "map", new))
        labels = {str(k): str(v) for k, v in (spec.get("labels") or {}).items()}
    seen: set = set()
    for code, values in groups.items():
        if seen & values:
            raise doc.error(f"code '{code}' overlaps an earlier one", *here, fix="recode groups must not overlap")
        seen |= values
    return Recode(name, source, groups, labels)


def _load_hierarchy(doc: Located, schema: Schema, name: str, spec: Any, key: Any) -> Recode:
    """A hierarchical code list over a categorical column (sdcTable's hierarchies, tau-Argus's .hrc files):
    ``children: {node: [codes]}`` or ``hrc: FILE``. Its codes are the column's codes (the leaves) and the
    nodes (subtotals), each standing for the leaves under it; the top nodes sit under the table total."""
    here = ("hierarchies", key)
    if not isinstance(spec, Mapping) or "from" not in spec or ("children" in spec) == ("hrc" in spec) \
            or set(spec) - {"from", "children", "hrc", "labels"}:
        raise doc.error("a hierarchy needs 'from: COLUMN' and either 'children: {node: [codes]}' or 'hrc: FILE'",
                        *here, fix="e.g. area: {from: region, children: {north: [n1, n2], n1: [a, b], n2: [c]}}")
    source = doc.code(spec["from"], *here, "from")
    if source not in schema.names or schema.column(source).kind != "categorical":
        raise doc.error(f"'{source}' is not a categorical column of the schema", *here, "from",
                        fix=f"use one of {[c.name for c in schema.columns if c.kind == 'categorical']}")
    col = schema.column(source)
    if "hrc" in spec:
        path = Path(str(doc.file)).parent / doc.code(spec["hrc"], *here, "hrc")
        children, where = read_hrc(path)
    else:
        if not isinstance(spec["children"], Mapping) or not spec["children"]:
            raise doc.error("children must map each node to the list of its codes", *here, "children",
                            fix="e.g. children: {north: [n1, n2], n1: [a, b]}")
        children, where = {}, {}
        for node, kids in spec["children"].items():
            code = doc.code(node, *here, "children", node, key=True)
            if not isinstance(kids, list) or not kids:
                raise doc.error(f"node '{code}' needs a non-empty list of codes", *here, "children", node,
                                fix=f"e.g. {code}: [a, b]")
            children[code] = [doc.code(k, *here, "children", node, j) for j, k in enumerate(kids)]
            where[code] = doc.where(*here, "children", node)
    parent: dict[str, str] = {}
    for node, kids in children.items():
        if node in col.codes:
            raise AuditError(f"node '{node}' is also a code of '{source}'", where[node],
                             "give subtotals their own codes; the column's codes are the leaves")
        for kid in kids:
            if kid in parent:
                raise AuditError(f"'{kid}' is under both '{parent[kid]}' and '{node}'", where[node],
                                 "put each code under one parent")
            parent[kid] = node
            if kid not in children and kid not in col.codes:
                raise AuditError(f"'{kid}' is not a code of '{source}' nor a node of the hierarchy", where[node],
                                 f"use the codes of '{source}' ({_show_domain(col)}) or add '{kid}' as a node")
    leaves: dict[str, frozenset] = {}

    def under(node: str, path: tuple) -> frozenset:
        if node in path:
            raise AuditError(f"the hierarchy has a cycle: {' -> '.join(path[path.index(node):] + (node,))}",
                             where[node], "a node cannot be under itself")
        if node not in children:
            return frozenset([node])
        if node not in leaves:
            leaves[node] = frozenset().union(*(under(k, path + (node,)) for k in children[node]))
        return leaves[node]

    groups: dict[str, frozenset] = {}

    def walk(code: str, path: tuple) -> None:  # depth first, a node before its codes (the order tau-Argus lists)
        groups[code] = under(code, path)
        for kid in children.get(code, ()):
            walk(kid, path + (code,))

    for node in children:
        under(node, ())  # a cycle has no top node, so look for one from every node
    for node in (n for n in children if n not in parent):
        walk(node, ())
    missing = [c for c in col.codes if c not in groups]
    if missing:
        raise AuditError(f"code '{missing[0]}' of '{source}' is in no node of hierarchy '{name}'"
                         + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""), doc.where(*here),
                         "put every code of the column under a node (the table total is the margin '*')")
    whole = [n for n in children if groups[n] == frozenset(col.codes)]
    if whole:
        raise AuditError(f"node '{whole[0]}' covers every code of '{source}': it is the table total",
                         where[whole[0]], "leave the total out and list its children as the top nodes; "
                                          "tables publish the total as the margin '*'")
    labels = {c: col.label(c) for c in col.codes}
    labels.update({str(k): str(v) for k, v in (spec.get("labels") or {}).items()})
    return Recode(name, source, groups, labels, nested=True)


def read_hrc(path: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """A tau-Argus hierarchy file: one code a line, preceded by one '@' per level below the top.
    Returns node -> its codes, and node -> "file:line" for messages."""
    if not path.is_file():
        raise AuditError("file not found", str(path), "give the .hrc file's path relative to the schema")
    children: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    stack: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        code = line.lstrip("@").strip()
        depth = len(line) - len(line.lstrip("@"))
        if depth > len(stack) or not code:
            raise AuditError(f"'{line.strip()}' is {depth} levels down, under no code one level up"
                             if code else "a line of '@' with no code", f"{path}:{number}",
                             "each line has one '@' more than its parent's at most")
        del stack[depth:]
        if stack:
            children.setdefault(stack[-1], []).append(code)
        where.setdefault(code, f"{path}:{number}")
        stack.append(code)
    return children, where


def infer_schema(frame: pd.DataFrame, geography: list[str], unit: str = "person") -> Schema:
    """Guess a schema from observed values (domains then come from data: warned about)."""
    columns = []
    for name in frame.columns:
        if name in geography:
            continue
        series = frame[name].dropna()
        numbers = pd.to_numeric(series, errors="coerce")
        if len(series) and numbers.notna().all() and (numbers == numbers.round()).all():
            lo, hi = int(numbers.min()), int(numbers.max())
            if hi - lo >= MAX_INTEGER_VALUES:
                raise AuditError(f"integer column '{name}' spans {hi - lo + 1:,} values ({lo}..{hi}); at most "
                                 f"{MAX_INTEGER_VALUES:,} can be enumerated", f"column {name}",
                                 f"write a schema (--schema) with a narrower range for '{name}', or coarsen it")
            columns.append(Column.integer(name, lo, hi))
        else:
            codes = tuple(sorted(series.astype(str).unique()))
            columns.append(Column(name, "categorical", codes, {c: c for c in codes}))
    warnings.warn("inferring the schema from the data: domains are the observed values, "
                  "not the codebook's; an attacker may know more", stacklevel=2)
    return Schema(unit, tuple(geography), tuple(columns))
