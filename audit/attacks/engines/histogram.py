"""Histogram space: a unit's datasets as counts per support row, searched by linear and integer programs.

Every consistent dataset is an integer histogram ``h >= 0`` over the support rows of
:class:`~audit.attacks.implied.LinearProof` that meets the count cells, ``lo <= A h <= hi``. Unlike the row-slot
SAT encoding this model does not grow with the number of rows N, only with the support, and it has
no slot symmetry: one ``h`` is one dataset. A claim's count is linear in it, ``c.h``.

* Samples: linear programs with random objectives (their integral vertices are datasets), then integer
  programs with random objectives over the rows that those vertices and the known datasets use.
* A counterexample to a claim: an integer program for ``c.h <= m - 1`` or ``c.h >= m + 1``, over those
  rows first, then over the whole support.
* A proof of a claim: branch and bound on the linear relaxation, in which every box is closed by a
  dual certificate — a bound or a Farkas ray — rationalised and checked in integer arithmetic
  (:meth:`~audit.attacks.implied.LinearProof.certificate`) together with the box's variable bounds.
* Every dataset of a unit that has few: the same box search, each integer point taken out of its
  box by splitting the rest on its first differing coordinate, empty boxes closed by checked rays.
* In both searches a box is first narrowed by bound propagation over every count cell
  (:mod:`~audit.attacks.engines.propagate`, exact in integers): a box it empties is closed without a
  linear program, and coordinates it fixes are not split on (z2's lists: 3-12 boxes, not ~430).
  The searches of :meth:`extreme`, whose certificates are written out box by box, are not narrowed.

Soundness. HiGHS works in floating point with tolerances. A dataset it returns counts only after
rounding to integers and an exact re-check against every published value and edit
(:meth:`~audit.problem.build.Problem.violations`, for count cells evaluated on the support rows with their
multiplicities): a float slip leaves the claim open, never refuted, and no
dataset is counted. An integer program's "infeasible" is only a hint: a claim is verified here, and
a list of datasets is complete, once the certified search has closed every box; if it cannot within
its node budget, the caller asks the SAT engine. Only count cells enter the model; sums, means and
medians are left out, so the model is a relaxation of the release: a proof over it holds for the
release, and datasets are re-checked against those cells too (lists are made for count-only units).
"""
from __future__ import annotations

from functools import cached_property
from typing import Callable, Iterator

import numpy as np

from ...problem.claims import REFUTED, VERIFIED, Claim, Verdict
from ..implied import LinearProof, flat_mask, in_sets
from .propagate import Propagator
from ..highs import run as run_highs
from ...problem.build import Problem
from ...release.constraints import int_hi, int_lo

NODES = 64  # certified branch-and-bound nodes per claim and side
MIP_NODES = 2_000  # branch-and-bound nodes per integer program (a node limit keeps runs reproducible)
BATCH_ENTRIES = 2 ** 24  # predicates x support rows held at once while the re-check's cells are listed


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
        if truth is None or not linear.fits(truth):
            return None
        engine = cls(problem, linear, truth, nodes)
        # count cells only: the re-check over the support rows is the whole check, and costs the support,
        # not one pass over the persons per cell (a large unit's parts spent a sixth of their building there)
        broken = not engine._reproduces(truth) if engine.exact else problem.violations(problem.truth)
        if broken:
            return None
        return engine

    def __init__(self, problem: Problem, linear: LinearProof, truth: np.ndarray | None, nodes: int = NODES):
        self.problem, self.linear, self.nodes = problem, linear, nodes
        self.n = len(linear.rows)
        # a dataset is its support rows repeated: in 4-byte atoms (an atom index is below 10,001) it holds half
        # the memory, which counts where an interval search keeps one witness dataset per hidden cell end
        self._rows = linear.rows.astype(np.int32)
        self._cols = np.arange(self.n, dtype=np.int32)
        self._lp = linear.program()
        self._mip = None
        self._mip_upper: np.ndarray | None = None  # the column bounds the integer program holds now
        self.truth = truth  # the confidential rows' histogram (None: a published release alone)
        # rows some known dataset or vertex uses: where restricted programs search
        self.used = truth > 0 if truth is not None else np.zeros(self.n, dtype=bool)
        self.found: dict[bytes, np.ndarray] = {} if truth is None else {truth.tobytes(): problem.truth}  # checked
        self._checked: dict[bytes, np.ndarray | None] = dict(self.found)  # every histogram checked, and its rows if good
        # with count cells only the model is the release itself, not a relaxation of it
        self.exact = all(c.statistic.kind == "count" for c in problem.constraints)

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
            rows = np.repeat(self._rows, counts, axis=0)
            if wanted is not None and not wanted(rows):
                return None
            ok = self._reproduces(counts) if self.exact else not self.problem.violations(rows)
            self._checked[key] = rows if ok else None
            if ok:
                self.used |= counts > 0
                self.found[key] = rows
        return self._checked[key]

    @cached_property
    def _count_cells(self) -> tuple:
        """Every count cell as the support rows it holds (by :meth:`Problem.row_mask`, the definition the
        re-check rests on, not the model's deduplicated matrix): (entries' cells, entries' rows, integer
        ends, rows an edit forbids). Person-free: a check costs the support, not the population."""
        rows, counts = self.linear.rows, [c for c in self.problem.constraints if c.statistic.kind == "count"]
        cells, entries = _row_masks(self.problem, rows, [c.predicate for c in counts])
        lo = np.array([int_lo(c.lo, c.lo_open) if c.lo is not None else -1 for c in counts], dtype=float)
        hi = np.array([int_hi(c.hi, c.hi_open) if c.hi is not None else np.inf for c in counts], dtype=float)
        edit = np.zeros(len(rows), dtype=bool)
        for e in self.problem.edits:
            edit |= self.problem.row_mask(rows, e)
        return cells, entries, lo, hi, edit

    def _reproduces(self, counts: np.ndarray) -> bool:
        """:meth:`Problem.violations` is empty for the dataset of this histogram (count cells only),
        evaluated on the support rows with their multiplicities (sums of whole numbers below 2**53 are
        exact in floats)."""
        cells, entries, lo, hi, edit = self._count_cells
        n_lo, n_hi = self.problem.n_rows
        if (counts < 0).any() or (counts[edit] > 0).any() or not n_lo <= int(counts.sum()) <= n_hi:
            return False
        got = np.bincount(cells, weights=counts[entries].astype(float), minlength=len(lo))
        return bool((lo <= got).all() and (got <= hi).all())

    def sample(self, k: int, seed: int = 0, wanted: Callable[[np.ndarray], bool] | None = None,
               cost: Callable[[np.random.Generator], np.ndarray] | None = None) -> Iterator[np.ndarray]:
        """Consistent datasets from ``k`` linear programs with random objectives, then ``k // 2`` integer
        programs with random objectives over the rows seen so far (only those ``wanted`` are checked;
        ``cost(rng)``: each objective, uniform random weights per support row by default)."""
        rng = np.random.default_rng(seed)
        yield from self.vertices(k, rng, wanted, cost)
        for _ in range(k // 2):
            x = self._run(self._integer(self.used), rng.random(self.n) if cost is None else cost(rng))
            rows = None if x is None else self.dataset(x, wanted)
            if rows is not None:
                yield rows

    def vertices(self, k: int, rng: np.random.Generator, wanted: Callable[[np.ndarray], bool] | None = None,
                 cost: Callable[[np.random.Generator], np.ndarray] | None = None) -> Iterator[np.ndarray]:
        """Consistent datasets from ``k`` linear programs with random objectives (``cost(rng)``, uniform by
        default): their integral optima, checked."""
        for _ in range(k):
            x = self._run(self._lp, rng.random(self.n) if cost is None else cost(rng))
            if x is not None:
                self.used |= x > 1e-9
                rows = self.dataset(x, wanted)
                if rows is not None:
                    yield rows

    def first(self, seed: int = 0) -> np.ndarray | None:
        """One checked dataset, from an integer program over the whole support with a random objective
        (a published release's first candidate); None when none is found within :data:`MIP_NODES` nodes."""
        x = self._run(self._integer(None), np.random.default_rng(seed).random(self.n))
        return None if x is None else self.dataset(x)

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

    def counterexample(self, claim: Claim, c: np.ndarray | None = None, cost: np.ndarray | None = None) -> np.ndarray | None:
        """A checked dataset in which the claim's count is not ``m``, from integer programs; None if none found
        (``cost``: an objective over the support rows for those programs, e.g. to move other claims too)."""
        import highspy

        c = self.linear.claim_vector(claim) if c is None else c
        index = np.flatnonzero(c).astype(np.int32)
        for lo, hi in ((-highspy.kHighsInf, claim.m - 1.0), (claim.m + 1.0, highspy.kHighsInf)):
            if hi < 0 or lo > self.problem.n_rows[1]:
                continue
            # the relaxation first: its vertex names rows a counterexample may need, or shows there is none
            x = self._with_row(self._lp, index, lo, hi, cost)
            if x is None:
                continue
            self.used |= x > 1e-9
            rows = self.dataset(x)
            for where in ((self.used.copy(), None) if rows is None else ()):
                x = self._with_row(self._integer(where), index, lo, hi, cost)
                rows = None if x is None else self.dataset(x)
                if rows is not None:
                    break
            if rows is not None and claim.count(rows) != claim.m:
                return rows
        return None

    # -- solver plumbing ------------------------------------------------------------------------
    @cached_property
    def _propagator(self) -> Propagator:
        return Propagator(self.linear)

    def _run(self, h, cost: np.ndarray | None) -> np.ndarray | None:
        """Solve with this objective (None: keep it); the column values, or None unless optimal."""
        import highspy

        if cost is not None:
            h.changeColsCost(self.n, self._cols, cost)
        run_highs(h)
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

        True when every box closed with a checked certificate; a checked counterexample when a box's
        optimum is one; False when the node budget ran out; None on a numerical failure.
        """
        linear = self.linear
        w, past = sense * c, sense * claim.m - 1

        def expand(node, lower, upper, sol):
            if linear.certificate(linear.duals(sol.row_dual), w, past, lower, upper) is not None:
                return []
            x = np.asarray(sol.col_value)
            if x @ w > past + 1e-6:
                return None  # the relaxation closes the box but no certificate checks out
            rows = self.dataset(x)
            if rows is not None:
                return rows if claim.count(rows) != claim.m else None
            return _split(node, x) or None  # an integral optimum that is no dataset: give up

        return self._tree(w.astype(float), self.nodes, expand)

    def extreme(self, w: np.ndarray, nodes: int | None = None,
                proof: list | None = None) -> tuple[int | None, int | None, np.ndarray | None]:
        """The least value of ``w.h`` over the consistent datasets, as ``(bound, best, rows)``.

        ``bound``: a value proved by checked certificates (the root relaxation's, or the closed
        branch-and-bound tree's) to be at most every dataset's, None when none checks out; ``best``: the
        value of ``rows``, the best dataset found and checked exactly. The least value is known when
        they are equal; otherwise it lies in ``[bound, best]``. With ``proof`` (a list), the certificates
        that prove ``bound`` are appended: ``(box, scale, multipliers, past)`` per closed box
        (``{column: (lo, hi)}``, ``{}`` for the root; see :meth:`_tree`), each proving ``w.h > past`` in its
        box, ``past`` None for a Farkas ray (the box holds no dataset).
        """
        import highspy

        linear, w = self.linear, np.asarray(w, dtype=np.int64)
        state: dict = {"best": None, "rows": None}

        def offer(counts: np.ndarray, rows: np.ndarray) -> None:
            value = int(counts @ w)
            if state["best"] is None or value < state["best"]:
                state["best"], state["rows"] = value, rows

        if self.truth is not None:
            offer(self.truth, self.problem.truth)
        bound, root = None, None
        x = self._run(self._lp, w.astype(float))
        if x is not None:
            dual = linear.duals(self._lp.getSolution().row_dual)
            z = int(np.ceil(x @ w - 1e-6))
            root = next(((b, cert) for b in (z, z - 1) if (cert := linear.dual_proof(dual, w, b - 1)) is not None), None)
            bound = None if root is None else root[0]
            rows = self.dataset(x)
            if rows is not None:
                offer(linear.integral(x, tolerance=1e-6), rows)
        elif self._lp.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
            return None, None, None  # no dataset at all: the caller's release is inconsistent
        if bound is not None and state["best"] is not None and bound >= state["best"]:
            if proof is not None:
                proof.append(({}, *root[1], root[0] - 1))
            return state["best"], state["best"], state["rows"]
        leaves: list = []  # the closed boxes' certificates

        def closed(node, lower, upper, dual) -> bool:
            cert = linear.dual_proof(dual, w, state["best"] - 1, lower, upper)
            if cert is not None:
                leaves.append((node, *cert, state["best"] - 1))
            return cert is not None

        def expand(node, lower, upper, sol):
            dual = linear.duals(sol.row_dual)
            if state["best"] is not None and closed(node, lower, upper, dual):
                return []  # nothing in this box beats the best dataset
            x = np.asarray(sol.col_value)
            rows = self.dataset(x)
            if rows is not None:
                offer(linear.integral(x, tolerance=1e-6), rows)
                return [] if closed(node, lower, upper, dual) else None
            return _split(node, x) or None  # an integral optimum that is no dataset: give up

        if (self._tree(w.astype(float), self.nodes if nodes is None else nodes, expand, leaves) is True
                and state["best"] is not None):
            bound = state["best"]
            if proof is not None:
                proof += leaves
        elif proof is not None and root is not None:
            proof.append(({}, *root[1], root[0] - 1))
        return bound, state["best"], state["rows"]

    def enumerate(self, limit: int, nodes: int) -> tuple[list[np.ndarray], bool]:
        """Every dataset, if there are at most ``limit`` and a certified search finds them all in
        ``nodes`` boxes: ``(datasets, True)``; otherwise ``(datasets found, False)``.

        Each integer point of the relaxation is taken out of its box by splitting the rest of the box
        on its first differing coordinate; boxes without integer points close only with a checked
        Farkas ray, so "no more datasets" never rests on a float.
        """
        out: dict[bytes, np.ndarray] = {}

        def expand(node, lower, upper, sol):
            x = np.asarray(sol.col_value)
            children = _split(node, x)
            if children is None:
                return None
            if children:
                return children
            counts = self.linear.integral(x, tolerance=1e-6)
            if not self.linear.fits(counts):
                return None  # the solver's point is not one: nothing it says about this box is trusted
            rows = self.dataset(counts)
            if rows is not None:  # else an integer point that breaks a sum, mean or median cell
                out[counts.tobytes()] = rows
                if len(out) > limit:
                    return False
            return _around(node, counts, lower, upper)

        done = self._tree(np.zeros(self.n), nodes, expand)
        return list(out.values()), done is True

    def _tree(self, cost: np.ndarray, nodes: int, expand: Callable, leaves: list | None = None) -> object:
        """Depth-first search over boxes ``lower <= h <= upper`` of the relaxation, minimising ``cost``.

        A box whose relaxation is infeasible closes only with a Farkas ray that checks exactly. Without
        ``leaves`` a box is first narrowed by bound propagation (``expand`` then gets the narrowed bounds,
        which every integer point of the box meets), and one it empties closes with no solver call.
        ``expand(node, lower, upper, solution)`` gives a feasible box's children (boxes as
        ``{column: (lo, hi)}``, ``hi = -1`` for none, or callables making one; an empty list closes it)
        or a final answer. Returns True when every box closed, False when ``nodes`` ran out, None on a
        numerical failure, or the final answer. ``leaves`` (a list) gets ``(box, scale, ray, None)`` for
        each box closed by a Farkas ray.
        """
        import highspy

        lp, n, linear = self._lp, self.n, self.linear
        lp.changeColsCost(n, self._cols, cost)
        stack: list = [{}]
        applied: set[int] = set()
        try:
            run_highs(lp)  # the root with the primal simplex, then bound changes with the dual (which gives rays)
            lp.setOptionValue("simplex_strategy", 1)
            for _ in range(nodes):
                if not stack:
                    return True
                node = stack.pop()
                node = node() if callable(node) else node
                lower, upper = np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)
                for j, (lo, hi) in node.items():
                    lower[j], upper[j] = lo, hi
                bounded = set(node)
                if leaves is None:  # no box's certificate is written out: one may rest on propagated bounds
                    box = self._propagator.tighten(lower, upper)
                    if box is None:
                        continue  # no integer point in the box meets every cell: closed, proved in integers
                    lower, upper = box
                    bounded = set(np.flatnonzero((lower > 0) | (upper >= 0)).tolist())
                touched = np.array(sorted(applied | bounded), dtype=np.int32)
                if len(touched):
                    lp.changeColsBounds(len(touched), touched, lower[touched].astype(float),
                                        np.where(upper[touched] < 0, highspy.kHighsInf, upper[touched]).astype(float))
                applied = bounded
                run_highs(lp)
                status = lp.getModelStatus()
                if status == highspy.HighsModelStatus.kInfeasible:
                    _, has_ray, ray = lp.getDualRay()
                    cert = None if not has_ray else linear.dual_proof(linear.duals(ray), np.zeros(n, dtype=np.int64),
                                                                      0, lower, upper)
                    if cert is None:
                        return None
                    if leaves is not None:
                        leaves.append((node, *cert, None))
                    continue
                if status != highspy.HighsModelStatus.kOptimal:
                    return None
                children = expand(node, lower, upper, lp.getSolution())
                if not isinstance(children, list):
                    return children
                stack += children
            return not stack
        finally:
            lp.setOptionValue("simplex_strategy", 4)
            if applied:
                cols = np.array(sorted(applied), dtype=np.int32)
                lp.changeColsBounds(len(cols), cols, np.zeros(len(cols)), np.full(len(cols), highspy.kHighsInf))


def _row_masks(problem: Problem, rows: np.ndarray, predicates: list) -> tuple[np.ndarray, np.ndarray]:
    """The rows inside each predicate (:func:`~audit.attacks.implied.in_sets` of their flat masks, as
    :meth:`Problem.row_mask` decides it), for many predicates at once in batches of :data:`BATCH_ENTRIES`:
    ``(predicate, row)`` entries in predicate-major order, as int32 (one row_mask per cell cost a tenth of a
    large unit's parts)."""
    bounds = np.cumsum((0,) + tuple(problem.sizes))
    batch = max(1, BATCH_ENTRIES // max(len(rows), 1))
    cells, entries = [np.zeros(0, np.int32)], [np.zeros(0, np.int32)]
    for start in range(0, len(predicates), batch):
        flats = np.array([flat_mask(problem, p) for p in predicates[start:start + batch]]).reshape(-1, bounds[-1])
        cell, row = np.nonzero(in_sets(rows, flats, bounds).T)
        cells.append((cell + start).astype(np.int32))
        entries.append(row.astype(np.int32))
    return np.concatenate(cells), np.concatenate(entries)


def _split(node: dict, x: np.ndarray) -> list[dict] | None:
    """The two children of a box on its most fractional coordinate (nearer side searched first); []
    when ``x`` is integral, None when it is not a point of the box."""
    frac = np.abs(x - np.round(x))
    j = int(np.argmax(frac))
    if frac[j] < 1e-9:
        return []
    lo, hi = node.get(j, (0, -1))
    floor = int(np.floor(x[j]))
    if floor < lo or (hi >= 0 and floor + 1 > hi):
        return None
    down, up = {**node, j: (lo, floor)}, {**node, j: (floor + 1, hi)}
    return [down, up] if x[j] - floor > 0.5 else [up, down]


def _around(node: dict, point: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> list:
    """Boxes covering the integer points of a box except ``point``: for each free coordinate k, those
    that agree with ``point`` before k and lie below or above it at k (built when popped)."""
    free = [int(j) for j in np.flatnonzero((upper < 0) | (lower < upper))]
    out = []
    for i, k in enumerate(free):
        p = int(point[k])

        def make(k=k, i=i, bounds=None):
            box = {**node, **{j: (int(point[j]), int(point[j])) for j in free[:i]}}
            box[k] = bounds
            return box

        if p - 1 >= lower[k]:
            out.append(lambda make=make, k=k, p=p: make(bounds=(int(lower[k]), p - 1)))
        if upper[k] < 0 or p + 1 <= upper[k]:
            out.append(lambda make=make, k=k, p=p: make(bounds=(p + 1, int(upper[k]))))
    return out[::-1]  # popped first: the boxes that fix fewest coordinates
