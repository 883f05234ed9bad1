"""The schema: unit, geography levels, attribute columns, recodes and structural edits."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ._yaml import Located, load_yaml
from .errors import AuditError
from .query import Predicate


@dataclass(frozen=True)
class Column:
    """An attribute: ``categorical`` codes (strings) with labels, or an ``integer`` range."""

    name: str
    kind: str
    codes: tuple = ()
    labels: Mapping[Any, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in ("categorical", "integer"):
            raise ValueError(f"column {self.name}: kind must be categorical or integer")
        if not self.codes:
            raise ValueError(f"column {self.name}: empty domain")

    @classmethod
    def integer(cls, name: str, lo: int, hi: int) -> "Column":
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
        if name not in self.names:
            raise AuditError(f"unknown column '{name}'", where, f"use one of {self.known()}")
        col = self.column(name)
        if isinstance(spec, Mapping):
            if col.kind != "integer" or not set(spec) <= {"min", "max"}:
                raise AuditError(f"a range {{min, max}} needs an integer column; '{name}' is {col.kind}"
                                 if col.kind != "integer" else f"a range takes only min and max, not {sorted(spec)}",
                                 where, "list the codes instead" if col.kind != "integer" else "use {min: A, max: B}")
            lo, hi = spec.get("min", col.codes[0]), spec.get("max", col.codes[-1])
            if not isinstance(lo, int) or not isinstance(hi, int):
                raise AuditError("min and max must be integers", where)
            return name, frozenset(v for v in col.codes if lo <= v <= hi)
        codes = spec if isinstance(spec, list) else [spec]
        out = set()
        for code in codes:
            value = _coerce(col, code)
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
        for name, spec in where_spec.items():
            here = doc.where(*path, name) if doc else str(name)
            base, values = self.values(str(name), spec, here)
            clauses[base] = clauses[base] & values if base in clauses else values
        return Predicate.of(clauses)

    def code_label(self, name: str, code: Any) -> str:
        recode = self.recode(name)
        return recode.label(code) if recode else self.column(name).label(code)


def _coerce(col: Column, code: Any) -> Any:
    if col.kind == "integer":
        try:
            return int(code)
        except (TypeError, ValueError):
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
        raise doc.error("a schema must be a mapping with unit, geography and columns",
                        fix="see the README's 'Schema' section")
    unknown = set(data) - {"unit", "geography", "columns", "recodes", "constraints"}
    if unknown:
        raise doc.error(f"unknown key(s) {sorted(unknown)}", sorted(unknown)[0],
                        fix="allowed: unit, geography, columns, recodes, constraints")
    for key in ("unit", "geography", "columns"):
        if key not in data:
            raise doc.error(f"missing required key '{key}'", fix=f"add '{key}:' (see the README)")
    geography = data["geography"]
    if isinstance(geography, str):
        geography = [geography]
    if not isinstance(geography, list) or not geography or not all(isinstance(g, str) for g in geography):
        raise doc.error("geography must be a list of column names, coarse to fine", "geography",
                        fix="e.g. geography: [county, tract, block]")
    if not isinstance(data["columns"], Mapping) or not data["columns"]:
        raise doc.error("columns must be a non-empty mapping", "columns")
    columns = [_load_column(doc, str(name), spec) for name, spec in data["columns"].items()]
    schema = Schema(str(data["unit"]), tuple(geography), tuple(columns), source=str(doc.file))
    recodes = []
    for name, spec in (data.get("recodes") or {}).items():
        recodes.append(_load_recode(doc, schema, str(name), spec))
    names = [c.name for c in columns] + [r.name for r in recodes]
    for name in set(names):
        if names.count(name) > 1:
            raise doc.error(f"'{name}' is defined twice", "recodes", name, fix="rename the recode")
    for name in geography:
        if name in names:
            raise doc.error(f"'{name}' is both a geography column and an attribute", "geography")
    schema = Schema(schema.unit, schema.geography, schema.columns, tuple(recodes), source=str(doc.file))
    edits = []
    for i, spec in enumerate(data.get("constraints") or []):
        if not isinstance(spec, Mapping) or "forbid" not in spec:
            raise doc.error("each constraint needs 'forbid: {column: codes, ...}'", "constraints", i,
                            fix="e.g. - forbid: {marital: [M], age: {max: 14}}")
        pred = schema.predicate(spec["forbid"], doc, "constraints", i, "forbid")
        edits.append(Edit(pred, str(spec.get("label", ""))))
    return Schema(schema.unit, schema.geography, schema.columns, schema.recodes, tuple(edits), str(doc.file))


def _load_column(doc: Located, name: str, spec: Any) -> Column:
    if not isinstance(spec, Mapping) or spec.get("type") not in ("categorical", "integer"):
        raise doc.error("each column needs 'type: categorical' or 'type: integer'", "columns", name,
                        fix="e.g. sex: {type: categorical, values: {F: Female, M: Male}}")
    if spec["type"] == "integer":
        lo, hi = spec.get("min"), spec.get("max")
        if not isinstance(lo, int) or not isinstance(hi, int) or lo > hi:
            raise doc.error("an integer column needs integer 'min' <= 'max'", "columns", name,
                            fix="e.g. age: {type: integer, min: 0, max: 115}")
        return Column.integer(name, lo, hi)
    values = spec.get("values")
    if isinstance(values, list):
        values = {v: v for v in values}
    if not isinstance(values, Mapping) or not values:
        raise doc.error("a categorical column needs 'values: {code: label, ...}'", "columns", name)
    codes = [str(c) for c in values]
    if len(set(codes)) != len(codes):
        raise doc.error("duplicate codes", "columns", name, "values")
    return Column(name, "categorical", tuple(codes), {str(c): str(l) for c, l in values.items()})


def _load_recode(doc: Located, schema: Schema, name: str, spec: Any) -> Recode:
    if not isinstance(spec, Mapping) or "from" not in spec or ("bins" in spec) == ("map" in spec):
        raise doc.error("a recode needs 'from: COLUMN' and either 'bins:' or 'map:'", "recodes", name)
    source = str(spec["from"])
    if source not in schema.names:
        raise doc.error(f"unknown column '{source}'", "recodes", name, "from", fix=f"use one of {list(schema.names)}")
    col = schema.column(source)
    groups: dict[str, frozenset] = {}
    labels: dict[str, str] = {}
    if "bins" in spec:
        if col.kind != "integer" or not isinstance(spec["bins"], list):
            raise doc.error("bins need an integer column and a list of {code, min, max}", "recodes", name, "bins")
        for i, b in enumerate(spec["bins"]):
            if not isinstance(b, Mapping) or "code" not in b:
                raise doc.error("each bin needs code, min and max", "recodes", name, "bins", i)
            _, values = schema.values(source, {k: b[k] for k in ("min", "max") if k in b},
                                      doc.where("recodes", name, "bins", i))
            groups[str(b["code"])] = values
            labels[str(b["code"])] = str(b.get("label", b["code"]))
    else:
        if not isinstance(spec["map"], Mapping):
            raise doc.error("map must be {new_code: [old codes]}", "recodes", name, "map")
        for code, old in spec["map"].items():
            _, values = schema.values(source, old, doc.where("recodes", name, "map", code))
            groups[str(code)] = values
        labels = {str(k): str(v) for k, v in (spec.get("labels") or {}).items()}
    seen: set = set()
    for code, values in groups.items():
        if seen & values:
            raise doc.error(f"code '{code}' overlaps an earlier one", "recodes", name,
                            fix="recode groups must not overlap")
        seen |= values
    return Recode(name, source, groups, labels)


def infer_schema(frame: pd.DataFrame, geography: list[str], unit: str = "person") -> Schema:
    """Guess a schema from observed values (domains then come from data: warned about)."""
    warnings.warn("inferring the schema from the data: domains are the observed values, "
                  "not the codebook's; an attacker may know more", stacklevel=2)
    columns = []
    for name in frame.columns:
        if name in geography:
            continue
        series = frame[name].dropna()
        numbers = pd.to_numeric(series, errors="coerce")
        if len(series) and numbers.notna().all() and (numbers == numbers.round()).all():
            columns.append(Column.integer(name, int(numbers.min()), int(numbers.max())))
        else:
            codes = tuple(sorted(series.astype(str).unique()))
            columns.append(Column(name, "categorical", codes, {c: c for c in codes}))
    return Schema(unit, tuple(geography), tuple(columns))
