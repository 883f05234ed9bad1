"""What an exact back-end offers (:class:`ExactEngine`), and the enumeration it returns.

The generate-then-verify attack (:mod:`audit.attacks.exact`), the feasibility intervals, the published-only
attack and protection call an engine only through this interface; :func:`audit.attacks.engines.get_engine`
makes one by name. The histogram engine (:mod:`audit.attacks.engines.histogram`) is not one of them: it
needs a linear proof and answers only where its relaxation is exact.
"""
from __future__ import annotations

from typing import Generator, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from ...problem.claims import Claim, Verdict
from ...problem.build import Problem
from ...specs.query import Predicate
from ._explain import EXPLAIN_BUDGET, Explainer


class Enumeration(Iterator[np.ndarray]):
    """Distinct consistent datasets, made as they are asked for.

    ``exhausted`` turns True when the engine ends the enumeration by proving there is no other
    dataset (never when it stops at the limit, a budget, or on :meth:`close`).
    """

    def __init__(self, steps: Generator[np.ndarray, None, bool]):
        self._steps = steps
        self.exhausted = False

    def __iter__(self) -> "Enumeration":
        return self

    def __next__(self) -> np.ndarray:
        try:
            return next(self._steps)
        except StopIteration as stop:
            self.exhausted = bool(stop.value)
            raise

    def close(self) -> None:
        """Stop early; the engine retires what it added for this enumeration."""
        self._steps.close()


@runtime_checkable
class ExactEngine(Protocol):
    """An exact reconstruction back-end over one :class:`~audit.problem.build.Problem`.

    Every answer is sound: a dataset it returns reproduces the release (checked exactly), "none"
    is a proof, and a budget or tolerance it cannot get past is undecided (``None`` or
    :class:`~audit.errors.Undecided`), never an answer.
    """

    name: str
    problem: Problem
    cells: Sequence[str]  # the published cells encoded (a cell's values together), in a fixed order
    deadline: float | None  # perf_counter time after which a call gives up; None: no cut-off

    def solve(self) -> np.ndarray | None:
        """One dataset consistent with the release, or None if there is none (raises if undecided)."""

    def solutions(self, limit: int) -> Enumeration:
        """Distinct consistent datasets, up to ``limit``."""

    def sample(self, k: int, seed: int = 0) -> list[np.ndarray]:
        """Up to ``k`` consistent datasets, drawn with ``seed`` (for pruning candidate claims)."""

    def verify(self, claim: Claim, explain: str = "none") -> Verdict:
        """Verified (no dataset breaks the claim), refuted (with one that does) or undecided."""

    def explainer(self, budget: float = EXPLAIN_BUDGET) -> Explainer:
        """The unit's explainer, made once, with ``budget`` of solver work for all its explanations."""

    def explain(self, claim: Claim, sufficient: Sequence[str] | None = None) -> tuple[tuple[str, ...], bool]:
        """Cells that imply a verified claim, and whether they are a minimal set."""

    def conflicting_cells(self) -> list[str]:
        """For an inconsistent release: cells that no dataset satisfies together ([] if it is consistent)."""

    def count_in(self, pred: Predicate, lo: int, hi: int) -> np.ndarray | bool | None:
        """A dataset whose count of ``pred`` lies in ``[lo, hi]``; False when there is none; None when undecided."""

    def count_solutions(self, cap: int) -> tuple[int, bool]:
        """Number of distinct datasets, up to ``cap``, and whether that count is exact."""
        found = self.solutions(cap + 1)
        count = sum(1 for _ in found)
        return min(count, cap), count <= cap and found.exhausted
