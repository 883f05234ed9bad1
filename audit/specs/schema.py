"""The schema YAML read and validated (unit, geography levels, columns, recodes, hierarchies, edits), or a
schema inferred from data; its types are in :mod:`audit.specs.schema_types`."""
from __future__ import annotations

import difflib
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ._yaml import Located, load_yaml
from .attacker import load_attacker
from .query import Predicate
from .schema_types import UNITS, Column, Edit, Recode, Schema, is_int
from .schema_hierarchy import _load_hierarchy
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def load_schema(path: str | Path) -> Schema:
    """Read and validate a schema YAML file."""
    doc = load_yaml(path)
    data = doc.data
    if not isinstance(data, Mapping):
        raise doc.error("a schema must be a mapping with unit, geography and columns"
                        + (" (the file is empty)" if data is None else ""), fix="see the README's 'Schema' section")
    allowed = ("unit", "geography", "columns", "recodes", "hierarchies", "constraints", "attacker", "contributor",
               "delimiter")
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
    loaded = []
    for name, spec in recodes.items():  # a bins recode of a wide column is a column of its own (a bracket)
        got = _load_recode(doc, schema, doc.code(name, "recodes", name, key=True), spec, name)
        if isinstance(got, Column):
            schema = replace(schema, columns=schema.columns + (got,))
        else:
            loaded.append(got)
    columns, recodes = list(schema.columns), loaded
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
                  contributor, _delimiter(doc, data.get("delimiter", ",")))


def _delimiter(doc: Located, value: Any) -> str:
    """The CSV field separator: one character (``tab`` or ``\\t`` for a tab), never a quote or a space."""
    text = "\t" if value in ("tab", "\\t") else value
    if not isinstance(text, str) or len(text) != 1 or text in "\"' \r\n":
        raise doc.error(f"delimiter must be one character, not {value!r}", "delimiter",
                        fix="e.g. delimiter: ';' (or tab); spaces after it are skipped anyway")
    return text


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


def _load_recode(doc: Located, schema: Schema, name: str, spec: Any, key: Any) -> Recode | Column:
    """A recode; a bins recode of a wide column: a bracket column (:func:`_load_brackets`)."""
    here = ("recodes", key)
    if not isinstance(spec, Mapping) or "from" not in spec or ("bins" in spec) == ("map" in spec):
        raise doc.error("a recode needs 'from: COLUMN' and either 'bins:' or 'map:'", *here,
                        fix="e.g. agegrp: {from: age, bins: [{code: child, min: 0, max: 17}]}")
    source = doc.code(spec["from"], *here, "from")
    if source not in schema.names:
        raise doc.error(f"unknown column '{source}'", *here, "from", fix=f"use one of {list(schema.names)}")
    col = schema.column(source)
    if col.wide and "bins" in spec:
        return _load_brackets(doc, schema, name, col, spec["bins"], here)
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
        labels = doc.labels(spec.get("labels"), *here, "labels")
        stray = [code for code in labels if code not in groups]
        if stray:
            raise doc.error(f"labels name '{stray[0]}', which is not a code of the map", *here, "labels", stray[0],
                            fix=f"label the map's codes {list(groups)}")
        for code, values in groups.items():  # unlabelled: its source codes' labels ("Private or Self-employed")
            if code not in labels and col.kind == "categorical" and len(values) <= 3:
                labels[code] = " or ".join(col.label(v) for v in col.codes if v in values)
    seen: set = set()
    for code, values in groups.items():
        if seen & values:
            raise doc.error(f"code '{code}' overlaps an earlier one", *here, fix="recode groups must not overlap")
        seen |= values
    return Recode(name, source, groups, labels)


def _load_brackets(doc: Located, schema: Schema, name: str, col: Column, bins: Any, here: tuple) -> Column:
    """Brackets of a wide column (income bands): a categorical column computed from it row by row, its
    bins in ascending order covering the whole domain (every row falls in one); one per wide column."""
    fix = (f"e.g. bins: [{{code: low, max: 9999}}, {{code: mid, min: 10000, max: 49999}}, {{code: high, min: 50000}}] "
           f"(the first bin's min and the last one's max default to the ends of '{col.name}')")
    if not isinstance(bins, list) or not bins:
        raise doc.error("bins need a list of {code, min, max}", *here, "bins", fix=fix)
    if name in schema.names or name in schema.geography:
        raise doc.error(f"'{name}' is defined twice", *here, fix="rename the recode")
    other = next((c.name for c in schema.columns if c.source == col.name), None)
    if other:
        raise doc.error(f"'{other}' already bins the wide column '{col.name}'; one bins recode per wide column",
                        *here, "from", fix=f"group the brackets further with a map recode from '{other}'")
    codes, bounds, labels = [], [], {}
    for i, b in enumerate(bins):
        if not isinstance(b, Mapping) or "code" not in b or set(b) - {"code", "min", "max", "label"}:
            raise doc.error("each bin needs a code, and min and max except at the ends", *here, "bins", i, fix=fix)
        code = doc.code(b["code"], *here, "bins", i, "code")
        lo, hi = b.get("min", col.codes[0] if i == 0 else None), b.get("max", col.codes[-1] if i == len(bins) - 1 else None)
        expected = col.codes[0] if i == 0 else bounds[-1][1] + 1
        if not is_int(lo) or not is_int(hi) or lo > hi:
            raise doc.error(f"bin '{code}' needs integer min <= max (only the first bin may leave out min, the last max)",
                            *here, "bins", i, fix=fix)
        if lo != expected:
            raise doc.error(f"bin '{code}' starts at {lo:,}, not {expected:,}: the bins of a wide column must cover "
                            f"{col.codes[0]:,}..{col.codes[-1]:,} in ascending order, without gaps or overlaps",
                            *here, "bins", i, "min", fix=f"give bin '{code}' min: {expected}, or add a bin before it")
        if code in codes:
            raise doc.error(f"code '{code}' is listed twice", *here, "bins", i, "code", fix="give each bin its own code")
        codes.append(code)
        bounds.append((lo, hi))
        labels[code] = str(b.get("label", code))
    if bounds[-1][1] != col.codes[-1]:
        raise doc.error(f"the last bin ends at {bounds[-1][1]:,}, not at the end of '{col.name}' ({col.codes[-1]:,}): "
                        "every row must fall in a bin", *here, "bins", len(bins) - 1, fix="leave out its max")
    return Column(name, "categorical", tuple(codes), labels, source=col.name, bounds=tuple(bounds))


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
            columns.append(Column.integer(name, lo, hi))  # wide past MAX_INTEGER_VALUES: summed, never selected on
        else:
            codes = tuple(sorted(series.astype(str).unique()))
            columns.append(Column(name, "categorical", codes, {c: c for c in codes}))
    warnings.warn("inferring the schema from the data: domains are the observed values, "
                  "not the codebook's; an attacker may know more", stacklevel=2)
    return Schema(unit, tuple(geography), tuple(columns))
