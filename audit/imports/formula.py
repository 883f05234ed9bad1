"""SSBtools / GaussSuppression model formulas (``~ region * sex + age``) as a compact list of tables: each
term no other term contains becomes a table with margins (which publish every term inside it)."""
from __future__ import annotations

import re
from pathlib import Path

from ..data.microdata import read_table
from ..errors import AuditError
from ..specs.schema_types import Column
from .written import GEOGRAPHY, UNIT, Imported
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

Term = frozenset  # the variables a term crosses; the empty term is the intercept (the total)


class _Parser:
    """``expr := prod (('+' | '-') prod)*``, ``prod := atom (('*' | ':') atom)*``, ``atom := NAME | 0 | 1 |
    '(' expr ')'``; a value is the set of terms it stands for (``a*b`` is ``a + b + a:b``)."""

    def __init__(self, text: str, where: str):
        self.where, self.text = where, text
        self.tokens = re.findall(r"[A-Za-z._][A-Za-z0-9._]*|\d+|[-+*:()]|\S", text)
        self.at = 0
        self.order: list[str] = []

    def fail(self, what: str) -> AuditError:
        return AuditError(f"formula '{self.text}': {what}", self.where,
                          "write it as SSBtools does, e.g. '~ region * sex + age' (terms joined by +, crossed "
                          "by * or :)")

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise self.fail("it ends too early")
        self.at += 1
        return token

    def expr(self) -> tuple[set, bool]:
        terms, intercept = self.product()
        while self.peek() in ("+", "-"):
            sign = self.take()
            more, one = self.product()
            if sign == "+":
                terms |= more
                intercept = intercept or one
            elif more:
                terms -= more
            else:
                intercept = False  # '- 1'
        return terms, intercept

    def product(self) -> tuple[set, bool]:
        terms, intercept = self.atom()
        while self.peek() in ("*", ":"):
            op = self.take()
            right, _ = self.atom()
            crossed = {a | b for a in terms for b in right}
            terms = terms | right | crossed if op == "*" else crossed
        return terms, intercept

    def atom(self) -> tuple[set, bool]:
        token = self.take()
        if token == "(":
            value = self.expr()
            if self.take() != ")":
                raise self.fail("a '(' is not closed")
            return value
        if token in ("0", "1"):
            return set(), token == "1"
        if not re.fullmatch(r"[A-Za-z._][A-Za-z0-9._]*", token):
            raise self.fail(f"unexpected '{token}'")
        if token not in self.order:
            self.order.append(token)
        return {Term([token])}, False


def parse_formula(text: str, where: str = "--formula") -> tuple[str | None, list[Term], list[str]]:
    """The formula's response (left of ``~``, None when absent), its terms (the intercept left out; in the
    order of the variables) and its variables in order of appearance."""
    if text.count("~") != 1:
        raise AuditError(f"formula '{text}' needs one '~'", where, "e.g. '~ region * sex + age'")
    left, right = text.split("~")
    response = left.strip() or None
    parser = _Parser(right, where)
    terms, _ = parser.expr()
    if parser.peek() is not None:
        raise parser.fail(f"unexpected '{parser.peek()}'")
    if not terms:
        raise parser.fail("it has no variable")
    order = parser.order
    rank = lambda t: (len(t), sorted(order.index(v) for v in t))  # noqa: E731
    return response, sorted(terms, key=rank), order


def tables_of(terms: list[Term]) -> list[Term]:
    """The terms no other term contains: each is a table whose margins publish the terms inside it."""
    return [t for t in terms if not any(t < other for other in terms)]


def import_formula(data: Path, formula: str, freq: str | None = None, response: str | None = None,
                   max_n: int | None = None) -> Imported:
    """The schema, schedule and data of a formula over a CSV (see the module docstring). A variable whose
    codes each lie inside one code of another formula variable (``eu`` over ``geo``) becomes a recode of it."""
    left, terms, order = parse_formula(formula)
    response = response or left
    frame = read_table(data)
    for name in order + [c for c in (freq, response) if c]:
        if name not in frame.columns:
            raise AuditError(f"column '{name}' is not in the data", str(data), f"use one of {list(frame.columns)}")
    if GEOGRAPHY in frame.columns:
        raise AuditError(f"the data has a column '{GEOGRAPHY}', the name the import gives its one unit", str(data),
                         f"rename the column '{GEOGRAPHY}'")
    imported = Imported({"unit": "record", "geography": [GEOGRAPHY], "columns": {}}, {"tables": []}, sources=(Path(data),))
    if freq:
        counts = pd.to_numeric(frame[freq], errors="coerce")
        bad = counts.index[counts.isna() | (counts < 0) | (counts != counts.round())]
        if len(bad):
            raise AuditError(f"'{freq}' is '{frame[freq].iloc[bad[0]]}', not a count", f"{data} data row {bad[0] + 1}",
                             "give whole numbers 0 or more")
        frame = frame.loc[frame.index.repeat(counts.astype(int))].reset_index(drop=True)
    recodes = _recodes(frame, order, imported)
    columns, out = {}, {GEOGRAPHY: [UNIT] * len(frame)}
    for name in order:
        if name not in recodes:
            codes = sorted(set(frame[name]))
            columns[name] = {"type": "categorical", "values": codes}
            out[name] = frame[name].tolist()
    stats = ["count"]
    if response:
        values = pd.to_numeric(frame[response], errors="coerce")
        bad = values.index[values.isna() | (values != values.round())]
        if len(bad):
            raise AuditError(f"'{response}' is '{frame[response].iloc[bad[0]]}', not an integer",
                             f"{data} data row {bad[0] + 1}", "give integers (scale decimals, e.g. in cents)")
        lo, hi = int(values.min()), int(values.max())
        Column.integer(response, lo, hi, f"{data} column {response}")
        columns[response] = {"type": "integer", "min": lo, "max": hi}
        out[response] = values.astype(int).tolist()
        stats.append(f"sum({response})")
        imported.note(f"the range of '{response}' ({lo}..{hi}) is the data's; widen it in schema.yaml", True)
    imported.schema["columns"] = columns
    if recodes:
        imported.schema["recodes"] = recodes
    protection = {"suppress_below": max_n + 1, "protect_zeros": True} if max_n else None
    if max_n:
        imported.note(f"maxN = {max_n}: counts up to {max_n} and zeros are suppressed (GaussSuppression's "
                      "protectZeros default)", True)
    for i, term in enumerate(tables_of(terms), 1):
        by = sorted(term, key=order.index)
        table = {"id": f"T{i}", "title": ":".join(by), "by": by, "margins": True, "stats": stats}
        if protection:
            table["protection"] = protection
        imported.tables["tables"].append(table)
    imported.data = pd.DataFrame(out)
    return imported


def _recodes(frame: pd.DataFrame, order: list[str], imported: Imported) -> dict:
    """Formula variables that group another (each of their codes a union of the other's): recodes of the
    finest such variable, as SSBtools finds hierarchies in the data."""
    sizes = {v: frame[v].nunique() for v in order}
    bases: list[str] = []
    out = {}
    for v in sorted(order, key=lambda v: (-sizes[v], order.index(v))):
        base = next((b for b in bases if sizes[b] > sizes[v] and frame.groupby(b)[v].nunique().max() == 1), None)
        if base is None:
            bases.append(v)
            continue
        pairs = frame[[base, v]].drop_duplicates()
        out[v] = {"from": base, "map": {code: sorted(group[base]) for code, group in pairs.groupby(v)}}
        imported.note(f"'{v}' groups '{base}' in the data (each '{base}' code lies in one '{v}' code): written as "
                      f"a recode of '{base}'", True)
    return out
