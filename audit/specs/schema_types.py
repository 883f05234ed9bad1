"""The schema's types: columns and their domains, recodes, structural edits, and the schema that holds them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ._yaml import Located
from ..errors import AuditError
from .query import Predicate

UNITS = ("person", "household", "family", "housing unit", "establishment", "record")  # what one data row is
MAX_INTEGER_VALUES = 10_000  # an integer domain enumerated (a numeric one per value): max - min + 1 at most
# A wider integer column (income in dollars) is not enumerated: its values are only summed, averaged or
# their median published, and a unit's counts decide its claims (audit.attacks.values).
MAX_INTEGER_MAGNITUDE = 10**12  # |min|, |max|: sums of a unit's values stay exact in int64 and in the IP's doubles


@dataclass(frozen=True)
class Column:
    """An attribute: ``categorical`` codes (strings) with labels, or an ``integer`` range."""

    name: str
    kind: str
    codes: tuple | range = ()  # a wide integer column's codes are a range, never enumerated
    labels: Mapping[Any, str] = field(default_factory=dict)
    title: str = ""  # how reports name the column ("Age"); empty: the labels speak for themselves
    source: str = ""  # a bracket column: the wide column whose values its codes bin (computed, not read)
    bounds: tuple[tuple[int, int], ...] = ()  # a bracket column: each code's min and max of ``source``

    def __post_init__(self):
        if self.kind not in ("categorical", "integer"):
            raise ValueError(f"column {self.name}: kind must be categorical or integer")
        if not self.codes:
            raise ValueError(f"column {self.name}: empty domain")
        if bool(self.source) != bool(self.bounds) or (self.source and (
                self.kind != "categorical" or len(self.bounds) != len(self.codes)
                or any(lo > hi for lo, hi in self.bounds)
                or any(a[1] + 1 != b[0] for a, b in zip(self.bounds, self.bounds[1:])))):
            raise ValueError(f"column {self.name}: a bracket column needs one (min, max) per code, ascending and adjacent")

    def bracket(self, values):
        """The code of each value of :attr:`source` (a bracket column; every value within some bin)."""
        import numpy as np

        values = np.asarray(values, dtype=np.int64)
        at = np.searchsorted(np.array([lo for lo, _ in self.bounds], dtype=np.int64), values, side="right") - 1
        return np.asarray(self.codes, dtype=object)[at]

    @classmethod
    def integer(cls, name: str, lo: int, hi: int, where: str | None = None) -> "Column":
        """The column of the integers ``lo..hi``, refused past :data:`MAX_INTEGER_MAGNITUDE`; past
        :data:`MAX_INTEGER_VALUES` values it is :attr:`wide` (its codes a ``range``, never enumerated)."""
        if max(abs(lo), abs(hi)) > MAX_INTEGER_MAGNITUDE:
            raise AuditError(f"integer column '{name}' reaches {lo if abs(lo) > abs(hi) else hi:,}; values beyond "
                             f"±{MAX_INTEGER_MAGNITUDE:,} are refused (their sums would not stay exact)", where or name,
                             f"shift '{name}' (e.g. years since a base year) or coarsen it (e.g. in thousands)")
        if hi - lo + 1 > MAX_INTEGER_VALUES:
            return cls(name, "integer", range(lo, hi + 1))
        return cls(name, "integer", tuple(range(lo, hi + 1)))

    @property
    def wide(self) -> bool:
        """An integer column of more than :data:`MAX_INTEGER_VALUES` values: only its sums, means and medians
        are published, and the exact attack does not enumerate it."""
        return isinstance(self.codes, range)

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
    delimiter: str = ","  # the field separator of CSV microdata (one character)

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
        if col.wide:
            raise AuditError(f"'{name}' has {len(col.codes):,} values ({col.codes[0]}..{col.codes[-1]}): a column "
                             f"over {MAX_INTEGER_VALUES:,} values can only be summed, averaged or its median "
                             "published (stats), not selected on", where,
                             f"select on a bins recode of '{name}' (brackets, e.g. {name}grp: {{from: {name}, bins: "
                             f"[{{code: low, max: 9999}}, {{code: high, min: 10000}}]}}), or narrow '{name}' to at most "
                             f"{MAX_INTEGER_VALUES:,} values (e.g. in thousands of dollars)")
        if isinstance(spec, Mapping):
            if col.kind != "integer" or not set(spec) <= {"min", "max"}:
                raise AuditError(f"a range {{min, max}} needs an integer column; '{name}' is {col.kind}"
                                 if col.kind != "integer" else f"a range takes only min and max, not {sorted(spec)}",
                                 where, "list the codes instead" if col.kind != "integer" else "use {min: A, max: B}")
            lo, hi = spec.get("min", col.codes[0]), spec.get("max", col.codes[-1])
            if not is_int(lo) or not is_int(hi):
                raise AuditError(f"min and max must be integers, not {lo!r} and {hi!r}", where,
                                 "e.g. {min: 18, max: 64}")
            if lo > hi and set(spec) == {"min", "max"}:
                raise AuditError(f"min {lo} is above max {hi}", where, "swap them")
            if lo > hi:  # one bound given, beyond the domain's other end: no value of the column is in the range
                given = "min" if "min" in spec else "max"
                raise AuditError(f"{given} {spec[given]} is outside the domain of '{name}' "
                                 f"({col.codes[0]}..{col.codes[-1]}), so the range selects no value", where,
                                 f"give a {given} within {col.codes[0]}..{col.codes[-1]}, or widen '{name}' "
                                 f"in {self.source}")
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
