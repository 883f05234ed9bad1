"""Queries: a conjunction of "column value in set" plus a statistic."""
from __future__ import annotations

import re
from functools import cached_property
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

if TYPE_CHECKING:  # pandas is for the callers that hold frames: a spec is read without it
    import pandas as pd

STATISTICS = ("count", "sum", "mean", "median")
# a column is any name without parentheses (hyphens and dots too: ``mean(hours-per-week)``)
_STAT_RE = re.compile(r"^\s*(count|sum|mean|median)\s*(?:\(\s*([^\s()](?:[^()]*[^\s()])?)\s*\))?\s*$")


@dataclass(frozen=True)
class Predicate:
    """Conjunction of ``column in values`` clauses, sorted by column; the empty predicate is 'all'."""

    clauses: tuple[tuple[str, frozenset], ...] = ()

    def __post_init__(self):
        names = [c for c, _ in self.clauses]
        if names != sorted(set(names)):
            raise ValueError(f"predicate clauses must be sorted and unique: {names}")

    def __hash__(self) -> int:
        # the dataclass's hash, kept once worked out: predicates key the per-level caches (flat masks, stated
        # claims) thousands of times a unit. Never pickled: a string's hash differs between processes.
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash((self.clauses,))
            object.__setattr__(self, "_hash", found)
        return found

    def __getstate__(self) -> dict:
        return {"clauses": self.clauses}

    @classmethod
    def of(cls, mapping: Mapping[str, Iterable[Any]]) -> "Predicate":
        return cls(tuple(sorted((c, frozenset(v)) for c, v in mapping.items())))

    def as_dict(self) -> dict[str, frozenset]:
        return dict(self.clauses)

    @cached_property
    def columns(self) -> tuple[str, ...]:   # cached: every unit's problem checks its cells' predicates
        return tuple(c for c, _ in self.clauses)

    @property
    def empty(self) -> bool:
        """Whether no row can satisfy it: some clause allows no value."""
        return any(not values for _, values in self.clauses)

    def conjoin(self, other: "Predicate") -> "Predicate":
        merged = self.as_dict()
        for col, values in other.clauses:
            merged[col] = merged[col] & values if col in merged else values
        return Predicate.of(merged)

    def mask(self, frame: "pd.DataFrame") -> np.ndarray:
        """Boolean mask of the rows of ``frame`` that satisfy the predicate."""
        out = np.ones(len(frame), dtype=bool)
        for col, values in self.clauses:
            out &= frame[col].isin(list(values)).to_numpy()
        return out


def nested(inner: Predicate, outer: Predicate, schema=None) -> bool:
    """True when every row matching ``inner`` matches ``outer``, judged from the clauses alone.

    With a ``schema``, a clause of ``outer`` that allows a column's whole domain is no restriction.
    """
    mine = inner.as_dict()
    for col, values in outer.clauses:
        if schema is not None and col in schema.names and set(schema.column(col).codes) <= values:
            continue  # the clause allows the whole domain
        if col not in mine or not mine[col] <= values:
            return False
    return True


@dataclass(frozen=True)
class Statistic:
    """``count``, or ``sum``/``mean``/``median`` of an integer column; means and medians are rounded."""

    kind: str = "count"
    column: str | None = None
    decimals: int = 1

    def __post_init__(self):
        if self.kind not in STATISTICS:
            raise ValueError(f"unknown statistic {self.kind!r}")
        if (self.kind == "count") != (self.column is None):
            raise ValueError("count takes no column; sum, mean and median need one")
        if not 0 <= self.decimals <= 6:
            raise ValueError("decimals must be between 0 and 6")

    @classmethod
    def parse(cls, text: str, decimals: int = 1) -> "Statistic":
        """Parse ``count``, ``sum(col)``, ``mean(col)`` or ``median(col)``."""
        match = _STAT_RE.match(str(text))
        if not match or (match.group(1) == "count") != (match.group(2) is None):
            raise ValueError(f"'{text}' is not a statistic")
        return cls(match.group(1), match.group(2), decimals)

    @property
    def name(self) -> str:
        return self.kind if self.column is None else f"{self.kind}({self.column})"

    @property
    def rounded(self) -> bool:
        return self.kind in ("mean", "median")


@dataclass(frozen=True)
class Query:
    predicate: Predicate
    statistic: Statistic = Statistic()
