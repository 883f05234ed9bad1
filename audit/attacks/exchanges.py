"""Claims refuted by exchanging values between two persons, for units too large for the histogram model.

Two persons ``r1`` and ``r2`` exchange their values on a set of columns ``X``. Every cell, and every
edit, names a set of columns ``K``; when the two agree on ``K & X`` or on ``K - X``, the pair's values
on ``K`` are the same two after the exchange (``r1'`` has ``r1``'s or ``r2``'s), so every count
the release publishes, suppresses or rounds is unchanged and no edit is broken: the exchanged data
reproduce the release. A claim over the columns ``S`` with ``r1``'s values loses ``r1`` and gains
none of the three other rows when ``r2`` differs from ``r1`` on both ``S & X`` and ``S - X``: its
count becomes ``m - 1`` and the claim is refuted.

Whether such an ``r2`` exists is counted over the distinct rows for every ``r1`` at once: with
``W(Z)`` the persons who agree with ``r1`` on the columns ``Z``, the persons who agree on ``Y`` (the
columns the cells ask to agree on) and differ on both parts are
``W(Y) - W(Y | A) - W(Y | B) + W(Y | S)`` (``A = S & X``, ``B = S - X``). One exchange per column split
is rebuilt and checked in integers against every count cell and edit before its claims are counted
refuted (a failed check is a bug, :class:`~audit.errors.InternalError`).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import InternalError
from ..problem.build import Problem
from ..problem.claims import ClaimTable
from .implied import flat_mask, in_sets

SPLITS = 512  # column splits (X, Y) tried per claim subset, at most: bounded work on wide schemas


class Exchanges:
    """The exchanges of two persons' values that keep a unit's release, over its distinct true rows.

    Parameters
    ----------
    problem : Problem
        A count-only unit (sums, means and medians are not kept by an exchange).
    rows, weights : np.ndarray
        The distinct true rows (atom indices) and how many persons have each.
    """

    def __init__(self, problem: Problem, rows: np.ndarray, weights: np.ndarray):
        if any(c.statistic.kind != "count" for c in problem.constraints):
            raise InternalError("exchanges keep counts only: the unit publishes a sum, mean or median")
        self.problem, self.rows, self.weights = problem, rows, weights
        self.n_cols = rows.shape[1]
        named = {frozenset(problem.index(n) for n in p.columns)
                 for p in [c.predicate for c in problem.constraints] + list(problem.edits)} - {frozenset()}
        self.sets = [k for k in named if not any(k < other for other in named)]  # a pair agreeing on K agrees on its subsets
        self._agree: dict[frozenset, np.ndarray] = {}
        self._keys: dict[frozenset, np.ndarray] = {}
        self._checks: tuple | None = None

    def key(self, cols: frozenset) -> np.ndarray:
        """Each distinct row's values on ``cols`` as one integer (equal keys: equal values there)."""
        if cols not in self._keys:
            key = np.zeros(len(self.rows), dtype=np.int64)
            for c in sorted(cols):
                key = key * (int(self.rows[:, c].max(initial=0)) + 1) + self.rows[:, c]
            self._keys[cols] = key
        return self._keys[cols]

    def agree(self, cols: frozenset) -> np.ndarray:
        """``W(cols)``: for each distinct row, the persons whose values on ``cols`` are its own."""
        if cols not in self._agree:
            _, inverse = np.unique(self.key(cols), return_inverse=True)
            self._agree[cols] = np.bincount(inverse.ravel(), weights=self.weights)[inverse.ravel()].astype(np.int64)
        return self._agree[cols]

    def agreements(self, x: frozenset) -> list[frozenset]:
        """The least sets of columns two persons must agree on for exchanging ``x`` to keep the release."""
        options = [(k & x, k - x) for k in self.sets if k & x and k - x]
        found = {frozenset().union(*pick) for pick in itertools.product(*options)} if options else {frozenset()}
        return [y for y in found if not any(o < y for o in found)]

    def refutable(self, subset: tuple[int, ...], wanted: np.ndarray | None = None) -> np.ndarray:
        """Which distinct rows' claims over ``subset`` (their values there) an exchange refutes: a mask
        over the rows (``wanted``: the rows that matter; the search stops once each is refutable)."""
        s = frozenset(subset)
        hit = np.zeros(len(self.rows), dtype=bool)
        if len(s) < 2:
            return hit  # a claim over one column: no split of it
        rest = [c for c in range(self.n_cols) if c not in s]
        first, others = min(s), sorted(s - {min(s)})
        tried = 0
        # the split's A holds the subset's first column (exchanging X or its complement is the same exchange)
        for k in range(len(others)):
            for more in itertools.combinations(others, k):
                a = frozenset((first,) + more)
                b = s - a
                for j in range(len(rest) + 1):
                    for outside in itertools.combinations(rest, j):
                        x = a | frozenset(outside)
                        for y in self.agreements(x):
                            if a <= y or b <= y:
                                continue
                            tried += 1
                            differ = (self.agree(y) - self.agree(y | a) - self.agree(y | b) + self.agree(y | s)) > 0
                            new = differ & ~hit
                            if new.any():
                                self._check(x, y, a, b, int(np.flatnonzero(new)[0]), subset)
                                hit |= differ
                                if wanted is not None and not (wanted & ~hit).any():
                                    return hit
                            if tried >= SPLITS:
                                return hit
        return hit

    def _check(self, x: frozenset, y: frozenset, a: frozenset, b: frozenset, i: int, subset) -> None:
        """Rebuild one exchange (row ``i`` with a partner) and check it keeps every count cell and edit."""
        partner = ((self.key(y) == self.key(y)[i]) & (self.key(a) != self.key(a)[i])
                   & (self.key(b) != self.key(b)[i]))
        j = int(np.flatnonzero(partner)[0])
        r1, r2 = self.rows[i].copy(), self.rows[j].copy()
        cols = sorted(x)
        r1[cols], r2[cols] = self.rows[j, cols], self.rows[i, cols]
        flats, bounds, edits = self._flats()
        member = in_sets(np.array([self.rows[i], self.rows[j], r1, r2]), flats, bounds).astype(np.int64)
        delta = member[2] + member[3] - member[0] - member[1]
        broken = edits.any() and in_sets(np.array([r1, r2]), edits, bounds).any()
        on = list(subset)  # the claim loses row i and gains none of the other three
        stays = (np.array([self.rows[j], r1, r2])[:, on] == self.rows[i, on]).all(axis=1).any()
        if delta.any() or broken or stays:
            raise InternalError(f"an exchange of columns {cols} between rows {self.rows[i].tolist()} and "
                                f"{self.rows[j].tolist()} does not keep the release of unit {'/'.join(self.problem.geo)}")

    def _flats(self) -> tuple:
        if self._checks is None:
            p = self.problem
            bounds = np.cumsum((0,) + p.sizes)
            flats = np.array([flat_mask(p, c.predicate) for c in p.constraints], dtype=np.int64).reshape(-1, bounds[-1])
            edits = np.array([flat_mask(p, e) for e in p.edits], dtype=np.int64).reshape(-1, bounds[-1])
            self._checks = (flats, bounds, edits)
        return self._checks


def exchange_refuted(exchanges: Exchanges, table: ClaimTable, subsets: list[tuple[int, ...]],
                     subset_of: np.ndarray, pending: np.ndarray) -> np.ndarray:
    """Which of the claims at ``pending`` (positions in ``table``, whose column subset is
    ``subsets[subset_of[k]]``) an exchange refutes: a mask over ``pending``."""
    out = np.zeros(len(pending), dtype=bool)
    rows = exchanges.rows
    for s in np.unique(subset_of[pending]).tolist():
        at = np.flatnonzero(subset_of[pending] == s)
        cols = list(subsets[s])
        mask = np.zeros(len(table.radix), dtype=table.strides.dtype)
        mask[cols] = 1
        row_keys = ((rows + 1) * table.strides) @ mask
        wanted = np.isin(row_keys, table.keys[pending[at]])
        hit = exchanges.refutable(subsets[s], wanted)
        out[at] = np.isin(table.keys[pending[at]], row_keys[hit])
    return out
