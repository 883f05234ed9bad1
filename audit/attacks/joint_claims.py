"""Claims of a coarser unit (a tract) that the joint propagation leaves open, decided over the joint model.

Bound propagation (:mod:`audit.attacks.joint`) fixes every block of the Census extract's tracts, yet a few
counts of a tract's own atoms (single years of age by race, which its blocks' tables group) stay open,
and a tract of thousands of persons is too large for the row-slot problem. Its claims are decided in
histogram space instead, over the joint model reduced to the variables propagation left open:

1. each open tract atom's count is bounded by LP minimum and maximum (HiGHS), each bound checked by
   integer dual multipliers, so it is exact, and rounded inward (the counts are integers);
2. a claim whose matching atoms' counts are then all fixed is verified if they sum to its count; one
   whose open atoms' sum two checked LP bounds pin to the count it needs likewise;
3. a claim is refuted by an integer point of the joint model (an integral LP optimum, or a MIP
   solution) in which its count differs: every block's and the tract's persons, reproducing every
   published count cell; the point is checked in integers over the model's rows and against the tract's own
   release. Only count cells are in the model, so with a sum, mean or median published nothing is refuted;
4. the rest stays undecided (fail closed): past the solvers' work limits, or the unit's ``--unit-seconds``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..problem.build import Problem
from ..problem.claims import UNDECIDED, VERIFIED, ClaimTable, Verdict
from .integer_algebra import _rational
from .unit import ExactOptions, Meter, UnitResult
from .highs import highs, run as run_highs

BIG = 2 ** 40  # no upper bound (as in audit.attacks.joint)
LP_ITERATIONS = 200_000  # simplex iterations per linear program: past it, that bound is not improved
MIP_NODES = 2_000  # branch-and-bound nodes per search for a refuting dataset: past it, no dataset from it
NOTE = ("claims decided over the joint model of every block and tract table: LP bounds with checked integer "
        "certificates, refutations by integer datasets of the tract and its blocks (HiGHS)")


@dataclass(frozen=True)
class JointSystem:
    """The joint model of one coarser unit reduced to the variables bound propagation left open.

    Each row ``lo <= sum a x <= hi`` (``hi`` = :data:`BIG`: none) is the joint row less its fixed terms;
    ``low <= x <= up`` are the open variables' propagated bounds. The unit's own histogram over ``rows``
    (atoms of its own tables, columns ``names``; those fixed at 0 left out) is ``base`` where ``top`` is -1,
    else the open variable ``top``.
    """

    names: tuple[str, ...]
    rows: np.ndarray
    base: np.ndarray
    top: np.ndarray
    r: np.ndarray
    v: np.ndarray
    a: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    low: np.ndarray
    up: np.ndarray
    counts_only: bool  # only count cells are published: a point of the model is a dataset of the release

    def __post_init__(self):
        if not (len(self.rows) == len(self.base) == len(self.top) and len(self.r) == len(self.v) == len(self.a)
                and len(self.lo) == len(self.hi) and len(self.low) == len(self.up)):
            raise ValueError("inconsistent joint system")

    @classmethod
    def of(cls, names: tuple[str, ...], terms: tuple[np.ndarray, np.ndarray, np.ndarray], lo: np.ndarray,
           hi: np.ndarray, low: np.ndarray, up: np.ndarray, top_vars: np.ndarray, rows: np.ndarray,
           counts_only: bool) -> "JointSystem":
        """Reduce the full model (terms ``(row, variable, coefficient)``, propagated bounds ``low, up``)."""
        r, v, a = terms
        open_ = low < up
        fixed = np.zeros(len(lo), np.int64)
        np.add.at(fixed, r, np.where(open_[v], 0, a * low[v]))
        keep = np.bincount(r, weights=open_[v], minlength=len(lo)) > 0
        term = open_[v] & keep[r]
        row_id, var_id = np.cumsum(keep) - 1, np.cumsum(open_) - 1
        hi = np.where(hi >= BIG, BIG, hi - fixed)
        held = open_[top_vars] | (low[top_vars] > 0)  # atoms fixed at 0 are left out: no dataset has them
        return cls(names, rows[held], low[top_vars][held], np.where(open_[top_vars], var_id[top_vars], -1)[held],
                   row_id[r[term]], var_id[v[term]], a[term], (lo - fixed)[keep], hi[keep], low[open_], up[open_],
                   counts_only)

    @property
    def n(self) -> int:
        return len(self.low)

    def histogram(self, x: np.ndarray) -> np.ndarray:
        """The unit's counts over ``rows`` at the point ``x`` of the open variables."""
        out = self.base.copy()
        at = self.top >= 0
        out[at] = x[self.top[at]]
        return out

    def fits(self, x: np.ndarray) -> bool:
        """Whether integer ``x`` meets every row and bound exactly."""
        if ((x < self.low) | (x > self.up)).any():
            return False
        got = np.zeros(len(self.lo), np.int64)
        np.add.at(got, self.r, self.a * x[self.v])
        return bool(((got >= self.lo) & ((self.hi >= BIG) | (got <= self.hi))).all())

    def lower_bound(self, c: np.ndarray, dual: np.ndarray) -> int | None:
        """The least integer ``c.x`` can take, proved by rational multipliers near ``dual`` (None: none hold).

        With ``d = c - y.A``: ``c.x = y.(A x) + d.x >= sum(y_i * (lo_i if y_i > 0 else hi_i))
        + sum(d_j * (low_j if d_j > 0 else up_j))``, in integers after scaling (as :meth:`LinearProof.certificate`).
        """
        best = None
        for y in (dual, -dual):
            cert = _rational(np.asarray(y, dtype=float))
            if cert is None:
                continue
            scale, coef = cert
            coef = coef.astype(object)
            if ((coef < 0) & (self.hi >= BIG)).any():
                continue
            d = (scale * c).astype(object)
            np.subtract.at(d, self.v, coef[self.r] * self.a)
            if ((d < 0) & (self.up >= BIG)).any():
                continue
            total = sum(np.where(d > 0, d * self.low, d * self.up).tolist())
            total += sum(np.where(coef > 0, coef * self.lo, np.where(coef < 0, coef * self.hi, 0)).tolist())
            got = -((-total) // scale)  # ceiling: c.x is an integer
            best = got if best is None else max(best, got)
        return best


class _Programs:
    """The reduced system as a HiGHS linear program (objectives changed in place) and, on demand, a MIP."""

    def __init__(self, system: JointSystem, seed: int, deadline: float | None):
        self.system, self.seed, self.deadline = system, seed, deadline
        self.lp = self._model(integer=False)
        self._mip = None

    def _model(self, integer: bool):
        import highspy

        s = self.system
        h = highs(threads=1, random_seed=self.seed, simplex_iteration_limit=LP_ITERATIONS, mip_max_nodes=MIP_NODES)
        inf = highspy.kHighsInf
        h.addVars(s.n, s.low.astype(float), np.where(s.up >= BIG, inf, s.up).astype(float))
        order = np.argsort(s.r, kind="stable")
        starts = np.searchsorted(s.r[order], np.arange(len(s.lo))).astype(np.int32)
        h.addRows(len(s.lo), s.lo.astype(float), np.where(s.hi >= BIG, inf, s.hi).astype(float), len(order),
                  starts, s.v[order].astype(np.int32), s.a[order].astype(float))
        if integer:
            h.changeColsIntegrality(s.n, np.arange(s.n, dtype=np.int32),
                                    np.full(s.n, highspy.HighsVarType.kInteger, dtype=np.uint8))
        return h

    def _run(self, h) -> bool:
        """Solve within the unit's time left, if it has a deadline; whether it ran (False: no time left)."""
        if self.deadline is not None:
            left = self.deadline - time.perf_counter()
            if left <= 0:
                return False
            h.setOptionValue("time_limit", left)
        run_highs(h)
        return True

    def bounds(self, c: np.ndarray) -> tuple[int | None, int | None, list[np.ndarray]]:
        """Checked integer bounds (None where unproved) on ``c.x``, and the integral optima met on the way."""
        import highspy

        h, s, out, points = self.lp, self.system, [], []
        for sense in (1, -1):
            h.changeColsCost(s.n, np.arange(s.n, dtype=np.int32), (sense * c).astype(float))
            if not self._run(h) or h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                out.append(None)
                continue
            sol = h.getSolution()
            got = s.lower_bound(sense * c, np.asarray(sol.row_dual))
            out.append(None if got is None else sense * got)
            x = np.asarray(sol.col_value)
            near = np.round(x)
            if np.abs(x - near).max(initial=0) < 1e-9 and s.fits(near.astype(np.int64)):
                points.append(near.astype(np.int64))
        return out[0], out[1], points

    def point(self, c: np.ndarray, lo: float, hi: float) -> np.ndarray | None:
        """An integer point with ``lo <= c.x <= hi`` (HiGHS MIP within :data:`MIP_NODES`), or None."""
        if self._mip is None:
            self._mip = self._model(integer=True)
        h = self._mip
        at = np.flatnonzero(c)
        h.addRow(lo, hi, len(at), at.astype(np.int32), c[at].astype(float))
        try:
            if not self._run(h) or h.getInfo().primal_solution_status != 2:
                return None
            x = np.round(np.asarray(h.getSolution().col_value)).astype(np.int64)
            return x if self.system.fits(x) else None
        finally:
            h.deleteRows(1, np.array([h.getNumRow() - 1], dtype=np.int32))


def a_dataset(system: JointSystem, seed: int, seconds: float | None = None) -> np.ndarray | None:
    """The unit's rows in one integer dataset of its joint model (HiGHS MIP, checked exactly), or None when
    none is found within :data:`MIP_NODES` nodes (or ``seconds``): the first candidate of a published release."""
    deadline = None if seconds is None else time.perf_counter() + seconds
    x = _Programs(system, seed, deadline).point(np.zeros(system.n, np.int64), -np.inf, np.inf)
    return None if x is None else np.repeat(system.rows, system.histogram(x), axis=0)


def decide_open(problem: Problem, options: ExactOptions, start: float, why: str) -> UnitResult:
    """Every claim true in ``problem.truth``, decided over its joint system (``problem.joint``), see the module.

    ``why``: why the unit is too large for the row-slot problem (kept in the reason of undecided claims).
    """
    system: JointSystem = problem.joint
    meter = Meter(options, start)
    problem = replace(problem, notes=problem.notes + (NOTE,))
    result = UnitResult(problem)
    table = ClaimTable.of_truth(problem.truth, list(problem.sizes), options.max_columns, problem.views)
    pending = np.arange(len(table.claims))
    programs = _Programs(system, options.seed, meter.deadline)
    seen: list[np.ndarray] = []  # the unit's histograms that refuted claims
    tried: set[bytes] = set()

    def refute(points: list[np.ndarray]) -> None:
        nonlocal pending
        for x in points:
            counts = system.histogram(x)
            if not system.counts_only or not len(pending) or counts.tobytes() in tried:
                continue
            tried.add(counts.tobytes())
            rows = np.repeat(system.rows, counts, axis=0)
            gone = table.refuted(pending, rows)
            if gone.any() and not problem.violations(rows):  # else a float slip: no refutation from it
                seen.append(counts)
                result.refuted += int(gone.sum())
                pending = pending[~gone]

    # 1. tighten each open atom of the unit by LP, rounded inward
    low, up = system.low.copy(), system.up.copy()
    for k in np.flatnonzero(system.top >= 0):
        j = system.top[k]
        lo_k, hi_k, points = programs.bounds(np.eye(1, system.n, j, dtype=np.int64)[0])
        refute(points)
        low[j] = max(low[j], lo_k) if lo_k is not None else low[j]
        up[j] = min(up[j], hi_k) if hi_k is not None else up[j]
    open_atoms = np.flatnonzero((system.top >= 0) & (low[np.maximum(system.top, 0)] < up[np.maximum(system.top, 0)]))
    fixed = system.histogram(low)
    fixed[open_atoms] = 0
    # 2. claims over fixed atoms only: verified when they sum to the claim's count
    base = table.counts(system.rows, fixed)
    member = np.array([table.counts(system.rows[[k]]) > 0 for k in open_atoms], dtype=bool).reshape(len(open_atoms), len(table.claims))
    alone = pending[~member[:, pending].any(axis=0)]
    verified = alone[base[alone] == table.m[alone]].tolist()
    pending = np.setdiff1d(pending, verified)
    # 2-3. the rest, grouped by the open atoms they cover: checked LP bounds on those atoms' sum, else a point past them
    reason = ""
    groups: dict[bytes, list[int]] = {}
    for i in pending.tolist():
        groups.setdefault(np.packbits(member[:, i]).tobytes(), []).append(i)
    done = set(verified)
    for claims in groups.values():
        late = meter.late("deciding the claims over the joint model")
        if late:
            reason = f"{why}; {late}"
            break
        c = np.zeros(system.n, np.int64)
        c[system.top[open_atoms[member[:, claims[0]]]]] = 1
        lo_c, hi_c, points = programs.bounds(c)
        refute(points)
        for need in sorted({int(table.m[i] - base[i]) for i in claims}):
            if lo_c is not None and lo_c == hi_c == need:
                done.update(i for i in claims if table.m[i] - base[i] == need)
                continue
            live = set(pending.tolist())
            if not system.counts_only or not any(i in live and table.m[i] - base[i] == need for i in claims):
                continue
            point = programs.point(c, -np.inf, need - 1) if lo_c is None or lo_c < need else None
            if point is None and (hi_c is None or hi_c > need):
                point = programs.point(c, need + 1, np.inf)
            refute([point] if point is not None else [])
    verified = sorted(done)
    pending = np.setdiff1d(pending, verified)
    result.verdicts = [Verdict(table.claims[i], VERIFIED) for i in verified]
    if len(pending):
        if not system.counts_only:
            reason = f"{why}; sums, means or medians are published, which the joint model leaves out"
        reason = reason or (f"{why}; over the joint model no checked LP bound proves these claims and no "
                            f"integer dataset within {MIP_NODES:,} MIP nodes refutes them")
        result.verdicts += [Verdict(table.claims[i], UNDECIDED, reason=reason) for i in pending]
        result.reason = reason
        if meter.late("deciding the claims over the joint model"):
            result.status = "timeout"
    result.solutions = 1 + len(seen)
    result.exhausted = not len(open_atoms)  # one histogram only when LP bounds fix every open atom of the unit
    result.seconds = time.perf_counter() - start
    return result
