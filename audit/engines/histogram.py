"""Histogram space: a unit's datasets as counts per support row, searched by linear and integer programs.

Every consistent dataset is an integer histogram ``h >= 0`` over the support rows of
:class:`~audit.implied.LinearProof` that meets the count cells, ``lo <= A h <= hi``. Unlike the row-slot
SAT encoding this model does not grow with the number of rows N, only with the support, and it has
no slot symmetry: one ``h`` is one dataset. A claim's count is linear in it, ``c.h``.

* Samples: linear programs with random objectives (their integral vertices are datasets), then integer
  programs with random objectives over the rows that those vertices and the known datasets use.
* A counterexample to a claim: an integer program for ``c.h <= m - 1`` or ``c.h >= m + 1``, over those
  rows first, then over the whole support.
* A proof of a claim: branch and bound on the linear relaxation, in which every node is closed by a
  dual certificate — a bound or a Farkas ray — rationalised and checked in integer arithmetic
  (:meth:`~audit.implied.LinearProof.certificate`) together with the node's variable bounds.

Soundness. HiGHS works in floating point with tolerances. A dataset it returns counts only after
rounding to integers and an exact re-check against every published value and edit
(:meth:`~audit.problem.Problem.violations`): a float slip leaves the claim open, never refuted, and no
dataset is counted. An integer program's "infeasible" is only a hint: a claim is verified here once
the certified branch and bound has closed every node; if it cannot within its node budget, the caller
asks the SAT engine. Only count cells enter the model; sums, means and medians are left out, so the
model is a relaxation of the release: a proof over it holds for the release, and datasets are
re-checked against those cells too.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ..claims import REFUTED, VERIFIED, Claim, Verdict
from ..implied import LinearProof
from ..problem import Problem

NODES = 64  # certified branch-and-bound nodes per claim and side
MIP_NODES = 2_000  # branch-and-bound nodes per integer program (a node limit keeps runs reproducible)


class HistogramEngine:
    """Datasets, counterexamples and proofs for one unit in histogram space (see the module docstring).

    Build it with :meth:`of`, which gives None when the confidential data do not reproduce the release
    (the SAT engine then reports the conflict).

    Parameters
    ----------
    problem : Problem
        The unit, with its confidential rows.
    linear : LinearProof
        Its support and cells.
    nodes : int
        Branch-and-bound nodes per claim and side before a proof is given up.
    """

    name = "histogram"

    @classmethod
    def of(cls, problem: Problem, linear: LinearProof, nodes: int = NODES) -> "HistogramEngine | None":
        truth = linear.histogram(problem.truth)
        if truth is None or not linear.fits(truth) or problem.violations(problem.truth):
            return None
        return cls(problem, linear, truth, nodes)

    def __init__(self, problem: Problem, linear: LinearProof, truth: np.ndarray, nodes: int = NODES):
        self.problem, self.linear, self.nodes = problem, linear, nodes
        self.n = len(linear.rows)
        self._cols = np.arange(self.n, dtype=np.int32)
        self._lp = linear.program()
        self._mip = None
        self._mip_upper: np.ndarray | None = None  # the column bounds the integer program holds now
        self.used = truth > 0  # rows some known dataset or vertex uses: where restricted programs search
        self.found: dict[bytes, np.ndarray] = {truth.tobytes(): problem.truth}  # distinct datasets, checked
        self._checked: dict[bytes, np.ndarray | None] = dict(self.found)  # every histogram checked, and its rows if good

    # -- datasets -------------------------------------------------------------------------------
    def dataset(self, values, wanted: Callable[[np.ndarray], bool] | None = None) -> np.ndarray | None:
        """The rows of a solver's histogram once rounded and re-checked exactly; None on any slip, or
        when ``wanted`` (asked before the check, which is the costly part) turns the rows down."""
        counts = self.linear.integral(values, tolerance=1e-6)
        if counts is None:
            return None
        key = counts.tobytes()
        if key not in self._checked:  # solvers return the same histogram often; check each once
            if not self.linear.fits(counts):
                return None
            rows = np.repeat(self.linear.rows, counts, axis=0)
            if wanted is not None and not wanted(rows):
                return None
            ok = not self.problem.violations(rows)
            self._checked[key] = rows if ok else None
            if ok:
                self.used |= counts > 0
                self.found[key] = rows
        return self._checked[key]

    def sample(self, k: int, seed: int = 0, wanted: Callable[[np.ndarray], bool] | None = None) -> Iterator[np.ndarray]:
        """Consistent datasets from ``k`` linear programs with random objectives, then ``k // 2`` integer
        programs with random objectives over the rows seen so far (only those ``wanted`` are checked)."""
        rng = np.random.default_rng(seed)
        for _ in range(k):
            x = self._run(self._lp, rng.random(self.n))
            if x is not None:
                self.used |= x > 1e-9
                rows = self.dataset(x, wanted)
                if rows is not None:
                    yield rows
        mip = self._integer(self.used)
        for _ in range(k // 2):
            x = self._run(mip, rng.random(self.n))
            rows = None if x is None else self.dataset(x, wanted)
            if rows is not None:
                yield rows

    # -- claims ---------------------------------------------------------------------------------
    def verify(self, claim: Claim) -> Verdict | None:
        """Refute the claim with a checked dataset, or verify it by a certified proof; None if neither."""
        c = self.linear.claim_vector(claim)
        rows = self.counterexample(claim, c)
        for sense in (1, -1):
            if rows is not None:
                return Verdict(claim, REFUTED, counterexample=rows)
            proof = self._branch(claim, c, sense)
            if proof is not True and not isinstance(proof, np.ndarray):
                return None
            rows = None if proof is True else proof
        return Verdict(claim, VERIFIED) if rows is None else Verdict(claim, REFUTED, counterexample=rows)

    def counterexample(self, claim: Claim, c: np.ndarray | None = None) -> np.ndarray | None:
        """A checked dataset in which the claim's count is not ``m``, from integer programs; None if none found."""
        import highspy

        c = self.linear.claim_vector(claim) if c is None else c
        index = np.flatnonzero(c).astype(np.int32)
        for lo, hi in ((-highspy.kHighsInf, claim.m - 1.0), (claim.m + 1.0, highspy.kHighsInf)):
            if hi < 0 or lo > self.problem.n_rows[1]:
                continue
            # the relaxation first: its vertex names rows a counterexample may need, or shows there is none
            x = self._with_row(self._lp, index, lo, hi, None)
            if x is None:
                continue
            self.used |= x > 1e-9
            rows = self.dataset(x)
            for where in ((self.used.copy(), None) if rows is None else ()):
                x = self._with_row(self._integer(where), index, lo, hi, None)
                rows = None if x is None else self.dataset(x)
                if rows is not None:
                    break
            if rows is not None and claim.count(rows) != claim.m:
                return rows
        return None

    # -- solver plumbing ------------------------------------------------------------------------
    def _run(self, h, cost: np.ndarray | None) -> np.ndarray | None:
        """Solve with this objective (None: keep it); the column values, or None unless optimal."""
        import highspy

        if cost is not None:
            h.changeColsCost(self.n, self._cols, cost)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return np.asarray(h.getSolution().col_value)

    def _with_row(self, h, index: np.ndarray, lo: float, hi: float, cost: np.ndarray | None) -> np.ndarray | None:
        """Solve with one extra row ``lo <= sum(h[index]) <= hi``, removed afterwards."""
        h.addRow(lo, hi, len(index), index, np.ones(len(index)))
        h.setOptionValue("simplex_strategy", 1)  # a new row leaves the basis dual feasible
        try:
            return self._run(h, np.zeros(self.n) if cost is None else cost)
        finally:
            h.deleteRows(1, np.array([h.getNumRow() - 1], dtype=np.int32))
            h.setOptionValue("simplex_strategy", 4)

    def _integer(self, where: np.ndarray | None):
        """The integer program, its columns restricted to ``where`` (None: the whole support)."""
        if self._mip is None:
            self._mip = self.linear.program(integer=True)
            self._mip.setOptionValue("mip_max_nodes", MIP_NODES)
        upper = self.linear.upper if where is None else np.where(where, self.linear.upper, 0.0)
        if self._mip_upper is None or not np.array_equal(upper, self._mip_upper):
            self._mip.changeColsBounds(self.n, self._cols, np.zeros(self.n), upper)
            self._mip_upper = upper
        return self._mip

    def _branch(self, claim: Claim, c: np.ndarray, sense: int) -> bool | np.ndarray | None:
        """Certified branch and bound proving ``sense * c.h > sense * m - 1`` for every consistent ``h``.

        True when every node closed with a checked certificate; a checked counterexample when a node's
        optimum is one; False when the budget ran out; None on a numerical failure.
        """
        import highspy

        lp, n, linear = self._lp, self.n, self.linear
        w, past = sense * c, sense * claim.m - 1
        lp.changeColsCost(n, self._cols, w.astype(float))
        stack: list[dict[int, tuple[int, int]]] = [{}]
        applied: set[int] = set()
        try:
            lp.run()  # the root with the primal simplex, then bound changes with the dual
            lp.setOptionValue("simplex_strategy", 1)
            for _ in range(self.nodes):
                if not stack:
                    return True
                node = stack.pop()
                lower, upper = np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)
                for j, (lo, hi) in node.items():
                    lower[j], upper[j] = lo, hi
                touched = np.array(sorted(applied | set(node)), dtype=np.int32)
                if len(touched):
                    lp.changeColsBounds(len(touched), touched, lower[touched].astype(float),
                                        np.where(upper[touched] < 0, highspy.kHighsInf, upper[touched]).astype(float))
                applied = set(node)
                lp.run()
                status = lp.getModelStatus()
                if status == highspy.HighsModelStatus.kInfeasible:
                    _, has_ray, ray = lp.getDualRay()
                    if has_ray and linear.certificate(linear.duals(ray), np.zeros(n, dtype=np.int64), 0,
                                                      lower, upper) is not None:
                        continue
                    return None
                if status != highspy.HighsModelStatus.kOptimal:
                    return None
                sol = lp.getSolution()
                if linear.certificate(linear.duals(sol.row_dual), w, past, lower, upper) is not None:
                    continue
                x = np.asarray(sol.col_value)
                if x @ w > past + 1e-6:
                    return None  # the relaxation closes the node but no certificate checks out
                rows = self.dataset(x)
                if rows is not None:
                    return rows if claim.count(rows) != claim.m else None
                frac = np.abs(x - np.round(x))
                j = int(np.argmax(frac))
                if frac[j] < 1e-9:
                    return None
                lo, hi = node.get(j, (0, -1))
                down, up = {**node, j: (lo, int(np.floor(x[j])))}, {**node, j: (int(np.floor(x[j])) + 1, hi)}
                stack += [down, up] if x[j] - np.floor(x[j]) > 0.5 else [up, down]
            return not stack
        finally:
            lp.setOptionValue("simplex_strategy", 4)
            if applied:
                cols = np.array(sorted(applied), dtype=np.int32)
                lp.changeColsBounds(len(cols), cols, np.zeros(len(cols)), np.full(len(cols), highspy.kHighsInf))
