"""Explaining verified claims: the published cells that imply them, shared by the exact engines.

An explanation of a claim is a set ``E`` of cells such that every dataset meeting ``E`` (with the
edits and the population, and the child units' populations a laid-out coupled problem fixes) has
the claim's count. Every dataset that contradicts the claim breaks
some cell of ``E``, so ``E`` is a hitting set of the cells such datasets break. One
:class:`Explainer` per unit keeps a pool of datasets (the truth with a row or two changed, and every
counterexample a solver returns), checked against the problem. A claim is explained by taking an
irredundant hitting set of its counterexamples in the pool and asking the solver for a dataset
that meets it and contradicts the claim: none (UNSAT) proves it sufficient, and irredundancy gives
each cell a pool dataset that meets every other cell and contradicts the claim, so the set is
minimal; a new counterexample joins the pool and the hitting set is taken again. After
:data:`FREE_ROUNDS` the hitting sets are confined to a set known to suffice (the solver's core over a
checked linear proof's cells or over every cell), and after :data:`CONFINED_ROUNDS` more that set
is shrunk by deletion. A sufficiency check the solver cannot finish may be settled by a checked
linear proof from those cells alone.

Solver work, not time, bounds it: each call has a conflict (or node) limit, and its propagations are
charged against the unit's budget, so the same inputs give the same explanations on any machine.
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Callable, Protocol, Sequence

import numpy as np

from ...problem.claims import Claim
from ...errors import InternalError
from ..implied import LinearProof
from ...problem.build import Problem
from ._pool import CellBook, Pool

UNSAT, SAT, LIMIT = "unsat", "sat", "limit"
FREE_ROUNDS = 2  # hitting sets over all cells tried before the search is confined to a sufficient set
CONFINED_ROUNDS = 3  # hitting sets inside it tried before it is shrunk one cell at a time
EXPLAIN_BUDGET = 5.0  # default work per unit: millions of solver propagations (about 1 s of solving)
WHOLE_SHARE = 5  # a call over every cell gets this fraction of the conflicts of a call over a few
WORK_PER_SECOND = 5.0  # millions of propagations the explanation solver makes per CPU second, about


class Session(Protocol):
    """One claim's negation inside an engine's explanation solver."""

    def solve(self, cells: list[int], limit: int) -> tuple[str, object, int]:
        """(UNSAT, core cell indices or None) | (SAT, rows of a counterexample) | (LIMIT, None), plus the
        work done (propagations); ``limit``: conflicts (nodes) allowed to the call."""

    def close(self) -> None:
        """Retire the claim's negation."""


def hitting_set(sets: np.ndarray, allowed: np.ndarray | None = None) -> list[int] | None:
    """An irredundant hitting set of the rows of a bool matrix (columns: cells), greedy, lowest
    column first on ties; confined to ``allowed`` columns when given (None if that is impossible).
    The column counts are kept as rows are hit and each later column is dropped once every row it
    hits has another (the same picks as recounting and re-checking the rest, in a fraction of the time)."""
    index = None
    if allowed is not None:
        index = np.flatnonzero(allowed)
        sets = sets[:, index]
    if not len(sets):
        return []
    if not sets.any(axis=1).all():
        return None
    cols = np.flatnonzero(sets.any(axis=0))
    sets = np.ascontiguousarray(sets[:, cols])
    if index is not None:
        cols = index[cols]
    packed = np.packbits(sets, axis=1)
    _, first = np.unique(packed.view(np.dtype((np.void, packed.shape[1]))).ravel(), return_index=True)
    sets = sets[np.sort(first)]
    counts = sets.sum(axis=0, dtype=np.int64)  # rows not yet hit that each column hits
    left = np.ones(len(sets), dtype=bool)
    chosen: list[int] = []
    while left.any():
        j = int(counts.argmax())
        chosen.append(j)
        gone = left & sets[:, j]
        left &= ~gone
        counts -= sets[gone].sum(axis=0, dtype=np.int64)
    cover = sets[:, chosen].sum(axis=1, dtype=np.int64)  # chosen columns hitting each row
    for j in reversed(list(chosen)):
        rows = sets[:, j]
        if (cover[rows] >= 2).all():  # the rest hit every row it hits
            chosen.remove(j)
            cover[rows] -= 1
    return sorted(cols[chosen].tolist())


class Explainer:
    """Explains the verified claims of one unit against a shared pool of counterexamples.

    Parameters
    ----------
    problem : Problem
    keys : sequence of str
        The cells an explanation may name, in the engine's order.
    open_claim : callable
        Claim -> :class:`Session` of the engine's explanation solver.
    budget : float
        Solver work for the whole unit, in millions of propagations (see :class:`Session`); no call
        starts once it is spent.
    per_call : int
        Conflict (node) limit of one solver call.
    open_whole : callable, optional
        Claim -> :class:`Session` for the calls over every cell (a solver that holds them all), when
        ``open_claim``'s solver holds only the cells it has been asked about.
    fixed : sequence of Constraint
        Counts the engine's slots fix (the child units' populations of a laid-out coupled problem):
        every dataset meets them, as it meets the population, and no explanation names them.
    """

    def __init__(self, problem: Problem, keys: Sequence[str], open_claim: Callable[[Claim], Session],
                 budget: float, per_call: int, open_whole: Callable[[Claim], Session] | None = None,
                 fixed: Sequence = ()):
        base = problem.truth if problem.truth is not None else np.zeros((0, len(problem.sizes)), dtype=np.int64)
        self.book = CellBook(problem, keys, base, fixed)
        self.pool = Pool(self.book)
        self.pool.seed_near()
        self.open_claim, self.open_whole, self.left, self.per_call = open_claim, open_whole, int(budget * 1e6), per_call
        self._index = {k: i for i, k in enumerate(self.keys)}
        self.calls = 0

    @property
    def keys(self) -> list[str]:
        return self.book.keys

    def renew(self, budget: float) -> None:
        """A fresh work budget (millions of propagations) for a new round of questions; the pool stays."""
        self.left = int(budget * 1e6)

    def explain(self, claim: Claim, sufficient: Sequence[str] | None = None,
                certificate: Callable[[], Sequence[str] | None] | None = None,
                among: Sequence[str] | None = None) -> tuple[tuple[str, ...], bool] | None:
        """Cells that imply a verified claim, and whether they are minimal (within the work budget).

        ``sufficient``: cells known to imply the claim (a checked linear proof's); the search is
        confined to the solver's core over them instead of over every cell. ``certificate`` is asked
        for such cells only when the solver finds no core over every cell. Past the budget the answer
        is the set the search was confined to (not minimal), or ``((), False)`` when there is none
        yet: an explanation is never invented. ``among``: the only cells the explanation may name
        (the others are left out, as if unpublished); None when they do not imply the claim.
        """
        if self.left <= 0:
            return (), False
        sets = self.pool.broken[self.pool.counts(claim) != claim.m]
        within = free = None
        if among is not None:
            free = np.zeros(len(self.keys), dtype=bool)
            free[[self._index[k] for k in among if k in self._index]] = True
            if not (sets & free).any(axis=1).all():  # a pool dataset meets them all and contradicts it
                return None
        session = self.open_claim(claim)
        try:
            if among is not None:  # the hitting sets stay among the solver's core over them
                status, core, _ = self._suffices(session, claim, np.flatnonzero(free).tolist())
                if status == SAT:
                    return None
                if status == LIMIT:
                    return (), False
                if core is not None:
                    free[:] = False
                    free[core] = True
                sufficient = self._names(np.flatnonzero(free))
            cells: list[int] = []  # the last hitting set, which deletion tries to keep
            for rounds in itertools.count():
                if rounds == FREE_ROUNDS:
                    within = self._confine(session, claim, sufficient, certificate)
                    if within is None:
                        return (), False
                if rounds == FREE_ROUNDS + CONFINED_ROUNDS:
                    return self._delete(session, claim, sets, within, cells)
                cells = hitting_set(sets, free if within is None else within)
                if cells is None:
                    raise InternalError(f"a dataset meets every cell of a set said to imply {claim} and contradicts it")
                status, info, _ = self._suffices(session, claim, cells)
                if status == UNSAT:
                    return self._names(cells), True
                if status == LIMIT:
                    return self._names(np.flatnonzero(within)) if within is not None else (), False
                sets = np.vstack([sets, self._counterexample(claim, info, cells)[None]])
        finally:
            session.close()
        raise InternalError("unreachable")

    def _delete(self, session: Session, claim: Claim, sets: np.ndarray, within: np.ndarray,
                likely: list[int]) -> tuple[tuple[str, ...], bool]:
        """Shrink a sufficient set by deletion, cells outside the ``likely`` hitting set first, several
        at a time while the solver keeps answering UNSAT (its core drops more). A cell stays once a
        dataset meets every other cell of the set and contradicts the claim: from the pool, or the
        solver's answer to a one-cell deletion."""
        keep = within.copy()
        order = sorted(np.flatnonzero(within).tolist(), key=lambda c: (c in likely, c))
        needed = np.zeros(len(keep), dtype=bool)
        minimal, step = True, 1
        while True:
            alone = sets[:, keep].sum(axis=1) == 1
            needed |= sets[alone].any(axis=0) & keep  # a known dataset breaks only this cell of the set
            todo = [c for c in order if keep[c] and not needed[c]]
            if not todo:
                return self._names(np.flatnonzero(keep)), minimal
            chunk = todo[:step]
            trial = keep.copy()
            trial[chunk] = False
            status, info, _ = self._suffices(session, claim, np.flatnonzero(trial).tolist())
            if status == UNSAT:
                keep = trial
                if info is not None:
                    keep[:] = False
                    keep[info] = True
                step *= 2
            elif status == SAT:
                sets = np.vstack([sets, self._counterexample(claim, info, np.flatnonzero(trial))[None]])
                step = max(1, step // 2)
            elif step > 1:
                step = 1
            else:  # the budget ran out on this cell: keep it, unproven
                minimal = False
                needed[chunk] = True

    def _counterexample(self, claim: Claim, rows, cells) -> np.ndarray:
        """Add a solver's counterexample to the pool after checking it; returns the cells it breaks."""
        broken = self.pool.add_dataset(rows)
        if broken is None or broken[cells].any() or claim.count(np.asarray(rows)) == claim.m:
            raise InternalError(f"the explanation solver's counterexample to {claim} does not check out")
        return broken

    def _names(self, cells) -> tuple[str, ...]:
        return tuple(sorted(self.keys[i] for i in cells))

    def _confine(self, session: Session, claim: Claim, sufficient, certificate) -> np.ndarray | None:
        """Cells known to imply the claim (a mask): the solver's core over the sufficient cells (every
        cell when none are known), else those cells, else the certificate's."""
        index = self._index
        start = np.ones(len(self.keys), dtype=bool)
        if sufficient is not None:
            start[:] = False
            start[[index[k] for k in sufficient if k in index]] = True  # the population is fixed by the engines
        if sufficient is None and self.open_whole is not None:
            status, core, _ = self._whole(claim, np.flatnonzero(start).tolist())
        else:
            status, core, _ = self._solve(session, np.flatnonzero(start).tolist())
        if status == UNSAT:
            if core is not None:
                start[:] = False
                start[core] = True
            return start
        if status == SAT and sufficient is not None:
            raise InternalError("a dataset meets every cell of a checked linear proof and contradicts its claim")
        if sufficient is not None:
            return start
        cells = certificate() if certificate is not None else None
        if not cells:
            return None
        start[:] = False
        start[[index[k] for k in cells if k in index]] = True
        return start

    def _suffices(self, session: Session, claim: Claim, cells: list[int]) -> tuple[str, object, int]:
        """The solver's answer on whether the cells imply the claim; when it runs out, a checked linear
        proof from these cells alone (on the support their zero cells leave) stands for UNSAT."""
        spent = self.left <= 0
        status, info, work = self._solve(session, cells)
        if status == LIMIT and not spent and self.open_whole is not None:  # every cell in reach helps CDCL
            status, info, more = self._whole(claim, cells)
            work += more
        if status == LIMIT and not spent and self._linear(claim, cells):
            return UNSAT, None, work
        return status, info, work

    def _whole(self, claim: Claim, cells: list[int]) -> tuple[str, object, int]:
        """A call on the solver that holds every cell (``open_whole``)."""
        whole = self.open_whole(claim)
        try:
            return self._solve(whole, cells, self.per_call // WHOLE_SHARE)
        finally:
            whole.close()

    def _linear(self, claim: Claim, cells: list[int]) -> bool:
        keep = {self.keys[i] for i in cells}
        problem = self.book.problem
        constraints = tuple(c for c in problem.constraints if c.key.rsplit(":", 1)[0] in keep
                            or c.key.rsplit(":", 1)[0] not in self._index)  # the population stays
        linear = LinearProof.of(replace(problem, constraints=constraints))
        if linear is None:
            return False
        if linear.combine([claim])[0] is not None:
            return True
        found = linear.bound(claim)
        return found is not None and found[0] == "verified"

    def _solve(self, session: Session, cells: list[int], limit: int | None = None) -> tuple[str, object, int]:
        if self.left <= 0:
            return LIMIT, None, 0
        status, info, work = session.solve(cells, limit or self.per_call)
        self.calls += 1
        self.left -= work
        return status, info, work
