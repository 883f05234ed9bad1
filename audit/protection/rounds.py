"""The round bookkeeping shared by protect's two searches (:mod:`audit.protection.unit`,
:mod:`audit.protection.secondary`): exact rounds, the monotone completion after them, and the
lower bound the exact optima give."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Rounds:
    """Exact rounds until ``limit`` of them have failed, then monotone rounds (only adding to the last
    pattern) until :meth:`restart`; ``lower_bound`` is the largest exact optimum's cost, which every
    passing pattern needs (None: the picks are not optima, greedy)."""

    limit: int
    lower_bound: float | None
    exact: int = 0
    completions: int = 0  # monotone rounds since the last switch to them
    monotone: bool = False

    def __post_init__(self):
        if self.limit < 1:
            raise ValueError("limit must be 1 or more")

    def base(self, kept: set, forced: set) -> set:
        """The cells the next pick must contain: the last pattern's when monotone, else the forced ones."""
        return kept if self.monotone else forced

    def restart(self) -> None:
        """Back to exact rounds: a new constraint that only un-suppressing meets."""
        self.monotone, self.exact, self.completions = False, 0, 0

    def advance(self, cost: float) -> None:
        """Count a round whose pick costs ``cost``; an exact one raises the lower bound and may switch
        the search to monotone rounds."""
        if self.monotone:
            self.completions += 1
            return
        self.exact += 1
        if self.lower_bound is not None:
            self.lower_bound = max(self.lower_bound, cost)
        self.monotone = self.exact >= self.limit

    def minimal(self, status: str, cost: float) -> bool:
        """Whether a unit's result of ``cost`` is a proved minimum: nothing needed, or an exact lower bound met."""
        return status == "pass" or (status == "protected" and self.lower_bound is not None
                                    and cost <= self.lower_bound + 1e-9)
