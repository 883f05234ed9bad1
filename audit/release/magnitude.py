"""Magnitude tables: primary sensitivity of published ``sum(col)`` cells by the (n,k)-dominance, p% and
pq rules, from the contributors' values.

Rows of one contributor (the schema's ``contributor`` column, e.g. an enterprise id, as tau-Argus's
holding variable and GaussSuppression's ``charVar``) are summed into one contribution; without it each
row is a contributor. Negative values follow GaussSuppression's documented default
(``MagnitudeRule``, ``apply_abs_directly = FALSE``): the absolute value of each contributor's summed
contribution, and the cell total ``X`` the sum of those. The inequalities are sdcTable's and
tau-Argus's: (n,k) sensitive when ``x1 + ... + xn > k% of X``; p% when ``X - x1 - x2 < p% of x1``;
pq when ``X - x1 - x2 < (p/q) x1``. A cell whose contributions are all 0 is never sensitive.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

TOP = 10  # largest contributions kept per cell: the dominance rule's n goes up to this
MAGNITUDE_RULES = ("dominance", "p_percent", "pq_rule")


@dataclass(frozen=True)
class Contributions:
    """A published sum's contributors: the absolute total ``X``, how many, and the largest ``TOP``, largest first."""

    total: int
    contributors: int
    top: tuple[int, ...]

    def __post_init__(self):
        if list(self.top) != sorted(self.top, reverse=True) or any(x < 0 for x in self.top):
            raise ValueError("top contributions must be non-negative, largest first")

    @classmethod
    def of(cls, values: np.ndarray, ids: np.ndarray | None = None) -> "Contributions":
        """From the values of the rows in a cell and, optionally, each row's contributor id."""
        values = np.asarray(values, dtype=np.int64)
        if ids is not None and len(values):
            _, group = np.unique(np.asarray(ids, dtype=str), return_inverse=True)
            values = np.bincount(group, weights=values, minlength=group.max() + 1).astype(np.int64)
        absolute = np.sort(np.abs(values))[::-1]
        return cls(int(absolute.sum()), len(absolute), tuple(int(x) for x in absolute[:TOP]))

    @classmethod
    def given(cls, total: int, contributors: int, top) -> "Contributions":
        """From a published sum ``total``, its count and its largest contributions (as a pre-tabulated table
        gives them): the absolute total is ``|total|``, or the top's sum where negative contributions make
        that larger (a smaller total judges the cell no safer than the true one)."""
        largest = sorted((abs(int(x)) for x in top), reverse=True)
        return cls(max(abs(int(total)), sum(largest)), int(contributors), tuple(largest[:TOP]))

    def to_json(self) -> dict:
        return {"total": self.total, "contributors": self.contributors, "top": list(self.top)}

    @classmethod
    def from_json(cls, entry: Mapping) -> "Contributions":
        return cls(int(entry["total"]), int(entry["contributors"]), tuple(int(x) for x in entry["top"]))

    def largest(self, n: int) -> int:
        return sum(self.top[:n])


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%"


def _exact(x: float) -> Fraction:
    return Fraction(repr(float(x)))


def sensitive(rule: str, settings: Mapping, c: Contributions) -> str | None:
    """Why a cell is primary sensitive under ``rule`` with its ``settings``, or None when it is safe."""
    if c.total == 0:
        return None
    x1, x2 = c.largest(1), c.largest(2) - c.largest(1)
    rest = c.total - x1 - x2
    if rule == "dominance":
        n, k = int(settings["n"]), _exact(settings["k"])
        top = c.largest(n)
        if 100 * top > k * c.total:
            who = "largest contributor" if n == 1 else f"{n} largest contributors"
            return f"{who} {_pct(top, c.total)} of the total > k={settings['k']:g}%"
        return None
    if rule == "p_percent":
        p, q = _exact(settings["p"]), Fraction(100)
    elif rule == "pq_rule":
        p, q = _exact(settings["p"]), _exact(settings["q"])
    else:
        raise ValueError(f"not a magnitude rule: {rule}")
    if q * rest < p * x1:
        limit = f"p={settings['p']:g}%" if rule == "p_percent" else f"p/q={settings['p']:g}/{settings['q']:g}"
        return f"the total less the 2 largest contributions is {_pct(rest, x1)} of the largest < {limit}"
    return None


def sensitive_values(magnitude: Mapping[str, Mapping], rules: Sequence[tuple[str, Mapping]]) -> dict[str, str]:
    """Published sum ("TABLE:CELL:sum(col)") -> the first reason a (rule, settings) pair makes it sensitive,
    over a unit's ``magnitude`` entries (``cells.magnitude`` in findings.json)."""
    out: dict[str, str] = {}
    for key, entry in magnitude.items():
        c = Contributions.from_json(entry)
        for rule, settings in rules:
            why = sensitive(rule, settings, c)
            if why:
                out[key] = why
                break
    return out
