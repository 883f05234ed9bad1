"""The round bookkeeping shared by protect's two searches (:mod:`audit.protection.unit`,
:mod:`audit.protection.secondary`): exact rounds, the monotone completion after them, the widening
of its rounds, the lower bound the exact optima give, and the pruning of a completed pattern."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, TypeVar

T = TypeVar("T")

# attacks spent at most on removing needless cells from a monotone completion's pattern (each as costly
# as a round's attack: 3 s on a households block, 5 s on the coupled sf1 tract, whose 389 cells 24
# attacks took to 244 and 64 to 118; households block 1001 needs fewer, 246 to 185 either way)
PRUNE = 64


@dataclass
class Rounds:
    """Exact rounds until ``limit`` of them have failed (or, with ``stall``, until that many in a row
    defeated nothing), then monotone rounds (only adding to the last pattern) until :meth:`restart`;
    ``lower_bound`` is the largest exact optimum's cost, which every passing pattern needs (None: the
    picks are not optima, greedy). :attr:`widening` is how many new cells a monotone round adds at
    least: it doubles each round, and starts again at 1 after a round that halves what fails."""

    limit: int
    lower_bound: float | None
    stall: int | None = None
    exact: int = 0
    completions: int = 0  # monotone rounds since the last switch to them, or the last halving
    monotone: bool = False
    failing: int | None = None  # what the last attacked pattern failed (claims, intervals)
    still: int = 0  # exact rounds in a row after which no fewer failed
    added: list = field(default_factory=list)  # cells the monotone rounds added, in order

    def __post_init__(self):
        if self.limit < 1:
            raise ValueError("limit must be 1 or more")
        if self.stall is not None and self.stall < 1:
            raise ValueError("stall must be 1 or more")

    @property
    def widening(self) -> int:
        return 2 ** self.completions

    def base(self, kept: set, forced: set) -> set:
        """The cells the next pick must contain: the last pattern's when monotone, else the forced ones."""
        return kept if self.monotone else forced

    def observe(self, failing: int) -> None:
        """Count what the pattern just attacked fails (failing claims and intervals too narrow)."""
        if self.failing is not None:
            if self.monotone and 2 * failing <= self.failing:
                self.completions = 0
            self.still = self.still + 1 if not self.monotone and 0 < self.failing <= failing else 0
        self.failing = failing

    def restart(self) -> None:
        """Back to exact rounds: a new constraint that only un-suppressing meets."""
        self.monotone, self.exact, self.completions, self.still = False, 0, 0, 0

    def advance(self, cost: float, new=()) -> None:
        """Count a round whose pick costs ``cost`` and adds the cells ``new``; an exact one raises the
        lower bound and may switch the search to monotone rounds."""
        if self.monotone:
            self.completions += 1
            self.added += sorted(new)
            return
        self.exact += 1
        if self.lower_bound is not None:
            self.lower_bound = max(self.lower_bound, cost)
        self.monotone = self.exact >= self.limit or (self.stall is not None and self.still >= self.stall)

    def minimal(self, status: str, cost: float) -> bool:
        """Whether a unit's result of ``cost`` is a proved minimum: nothing needed, or an exact lower bound met."""
        return status == "pass" or (status == "protected" and self.lower_bound is not None
                                    and cost <= self.lower_bound + 1e-9)


def prune(pattern: frozenset, groups: list, attack: Callable[[frozenset], T], passes: Callable[[T], bool],
          found: T) -> tuple[frozenset, T]:
    """``pattern`` (its attack ``found``) less those of ``groups`` (sets of cells, the likeliest
    needless first) without which its ``attack`` still ``passes``, and that attack: halves of them
    tried first, then quarters, and so on (delta debugging), in at most :data:`PRUNE` attacks. Every
    pattern kept has passed the exact attack."""
    left = [frozenset(g) for g in groups if g and frozenset(g) <= pattern]
    size, budget = max(1, len(left) // 2), PRUNE
    while left and budget > 0:
        i = 0
        while i < len(left) and budget > 0:
            trial = pattern - frozenset().union(*left[i:i + size])
            budget -= 1
            seen = attack(trial)
            if passes(seen):
                pattern, found = trial, seen
                del left[i:i + size]
            else:
                i += size
        if size == 1:
            break
        size = max(1, size // 2)
    return pattern, found
