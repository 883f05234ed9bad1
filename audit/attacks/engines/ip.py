"""The integer program of Generate-then-Verify (Liu et al., seed 000) as an exact engine.

Same interface as :class:`~audit.attacks.engines.sat.SatEngine`. The model follows the paper:

* one-hot rows ``X[s][c][v]`` (eq. 3), plus an activity bit per slot when the number of rows is a
  range (inactive slots are all-zero rows, kept last);
* per published cell a helper ``W[i, s]`` = "slot s satisfies every sub-predicate of cell i"
  (eqs. 5-6; the paper pads predicates with all-ones sub-predicates, here the activity bit), and
  ``lo <= sum_s W[i, s] <= hi`` (eq. 7, with intervals for suppressed and rounded cells);
* hash ordering of the rows (eq. 8) with a fixed vector of random integers;
* claim verification ``Count(a) != m`` (eqs. 13-16) with the tighter form of eqs. 9-12: in a
  one-hot model ``T[s, j]`` *is* ``X[s][c][a_c]``, so the big-M pairs (``T``, ``U``) are not needed,
  and the big M of eqs. 15-16 is ``N + 1``.

Numeric cells are linear: a matching row's value ``Q[s] = W[s] * value(s)`` (three linear
inequalities), sums and means as ``q*sum Q - p*sum W`` against 0 for a mean in ``[p/q, ...)``,
medians by order statistics without sorting: with ``G[j]`` matching rows of value ``>= v_j`` and
``k`` matching rows, the lower middle value is ``>= v_j`` iff ``2 G[j] >= k + 1`` and the upper one
iff ``2 G[j] >= k``; binaries ``L[j]``, ``U[j]`` carry these (big M ``2N + 2``), the middle values
are ``v_0 + sum (v_j - v_{j-1}) L[j]`` and the median bound is linear in their sum. Sugar's sorted
encoding in the CACM paper orders the rows by age; here the rows are ordered by hash, so the order
statistics are counted instead.

Backend: gurobipy when it imports and its licence accepts the model, else HiGHS (highspy). The
size-limited free Gurobi licence raises ``GurobiError`` 10010 on realistic blocks: the engine then
logs one line and continues on HiGHS.

MIP solvers work in floating point with tolerances (a binary at 0.9999995 is "integral", a row may
miss its bound by 1e-6), so every dataset a solve returns is decoded and checked in exact
arithmetic (one atom per column of each active row, every edit, every published value) before it
refutes a claim, counts as a solution or is reported. One that fails leaves the claim *undecided*,
is dropped from the samples, or keeps an enumeration from being called exhausted.
"""
from __future__ import annotations

from typing import Generator, Sequence

import numpy as np

from ...problem.claims import REFUTED, UNDECIDED, VERIFIED, Claim, Verdict
from ...errors import Undecided
from ...problem.build import Problem
from ...specs.query import Predicate
from ..highs import ITERATION_WORK, MIP_WORK  # a MIP's work in the SAT explainer's unit (propagations)
from ._explain import EXPLAIN_BUDGET, Explainer
from ._explain import LIMIT as EXPLAIN_LIMIT, SAT as EXPLAIN_SAT, UNSAT as EXPLAIN_UNSAT
from .base import Enumeration, ExactEngine
from .sat import cell_of
from .ip_backends import FEASIBLE, INFEASIBLE, LIMIT, _Backends
from .ip_model import INF, _Formulation, _Model


class IpEngine(_Formulation, _Backends, ExactEngine):
    """Exact reconstruction by integer programming, for one :class:`~audit.problem.build.Problem`.

    Parameters
    ----------
    problem : Problem
    seed : int
        Seeds the hash vector of eq. 8 and the random objectives used by :meth:`sample`.
    backend : str
        ``auto`` (Gurobi if licensed for the model, else HiGHS), ``gurobi`` or ``highs``.
    time_limit : float
        Seconds per solver call; a call that runs out is *undecided*.
    explain_nodes : int
        Node limit of one MIP while explaining a claim (explanations never use the time limit).
    tolerance : float
        The solver's feasibility and integrality tolerance. Results are checked exactly whatever it
        is; a looser one only makes more of them fail the check.
    """

    name = "ip"

    def __init__(self, problem: Problem, seed: int = 0, backend: str = "auto", time_limit: float = 60.0,
                 threads: int = 1, explain_nodes: int = 1_000, tolerance: float = 1e-6):
        self.problem, self.seed, self.time_limit, self.threads = problem, seed, time_limit, threads
        self.explain_nodes = explain_nodes
        self.deadline: float | None = None  # not read: each MIP stops at ``time_limit`` instead
        self._explainer: Explainer | None = None
        self.last_iterations = 0
        self.tolerance = tolerance
        self.slips = 0  # solver datasets that failed the exact check
        self.n = problem.n_rows[1]
        self.sizes = [len(d) for d in problem.domains]
        self.calls = 0
        m = self.model = _Model()
        self.x = [[[m.var() for _ in range(d)] for d in self.sizes] for _ in range(self.n)]
        lo, hi = problem.n_rows
        self.act = [m.var(1 if s < lo else 0, 1) for s in range(self.n)]
        for s in range(self.n):
            for c in range(len(self.sizes)):
                m.row({**{v: 1 for v in self.x[s][c]}, self.act[s]: -1}, 0, 0)
            if s + 1 < self.n:
                m.row({self.act[s + 1]: 1, self.act[s]: -1}, -INF, 0)
        for edit in problem.edits:
            for s in range(self.n):
                z = self._z(s, edit)
                if not z:
                    m.row({self.act[s]: 1}, 0, 0)
                else:  # not every sub-predicate of the edit: sum Z <= r - 1
                    coef: dict[int, float] = {}
                    for part in z:
                        for v in part:
                            coef[v] = coef.get(v, 0) + 1
                    m.row(coef, -INF, len(z) - 1)
        self._hash_order(np.random.default_rng(seed))
        self._w_cache: dict = {}
        self.cells: list[str] = []
        for c in problem.constraints:
            if (c.statistic.kind == "count" and not c.predicate.clauses and c.exact
                    and (c.lo, c.hi) == (lo, hi)):
                continue  # the population, fixed by the slots
            key = cell_of(c.key)
            if key not in self.cells:
                self.cells.append(key)
            self._constraint(c, key)
        self.backend = self._pick_backend(backend)

    # -- the engine interface -------------------------------------------------------------------
    def decode(self, sol: np.ndarray) -> np.ndarray | None:
        """Rows (atom indices) of the dataset in a solution; None unless each active slot has one atom
        set per column (values rounded at 1/2)."""
        rows = []
        for s in range(self.n):
            if sol[self.act[s]] < 0.5:
                continue
            row = []
            for col in self.x[s]:
                on = np.flatnonzero(np.asarray([sol[v] for v in col]) > 0.5)
                if len(on) != 1:
                    return None
                row.append(int(on[0]))
            rows.append(row)
        return np.array(rows, dtype=np.int64).reshape(-1, len(self.sizes))

    def checked(self, sol: np.ndarray, cells: list[str] | None = None, claim: Claim | None = None) -> np.ndarray | None:
        """The dataset in a solution if it holds in exact arithmetic: it decodes, meets the edits, the
        number of rows and the published values of ``cells`` (all when None), and breaks ``claim``
        when one is given; None otherwise (a float slip, counted in ``slips``)."""
        rows = self.decode(sol)
        if rows is not None:
            keep = None if cells is None else set(cells)
            bad = [k for k in self.problem.violations(rows)
                   if keep is None or k == "rows" or k.startswith("edit:") or cell_of(k) in keep]
            if not bad and (claim is None or claim.count(rows) != claim.m):
                return rows
        self.slips += 1
        return None

    def solve(self) -> np.ndarray | None:
        status, sol = self._solve(None)
        if status == LIMIT:
            raise Undecided("the time limit ran out before any dataset was found")
        if status == INFEASIBLE:
            return None
        rows = self.checked(sol)
        if rows is None:
            raise Undecided("the MIP's dataset failed the exact check against the published values")
        return rows

    def _binary_cols(self) -> list[int]:
        return [v for slot in self.x for col in slot for v in col] + list(self.act)

    def _nogood(self, sol: np.ndarray) -> tuple[dict[int, float], float, float, None]:
        """A row excluding exactly this assignment of the one-hot and activity bits."""
        coef, ones = {}, 0
        for v in self._binary_cols():
            if sol[v] > 0.5:
                coef[v] = -1
                ones += 1
            else:
                coef[v] = 1
        return coef, 1 - ones, INF, None

    def solutions(self, limit: int) -> Enumeration:
        """Distinct consistent datasets, up to ``limit`` (no-good cuts; repeats under hash ties skipped).

        A solution that fails the exact check is cut off and skipped, and the enumeration is then
        never called exhausted (the solver's "infeasible" that ends it is no longer trusted); after
        ``limit`` such solutions it stops.
        """
        return Enumeration(self._solutions(limit))

    def _solutions(self, limit: int) -> Generator[np.ndarray, None, bool]:
        cuts, seen = [], set()
        found, slipped = 0, 0
        while found < limit:
            status, sol = self._solve(None, cuts)
            if status != FEASIBLE:
                return status == INFEASIBLE and not slipped
            cuts.append(self._nogood(sol))
            rows = self.checked(sol)
            if rows is None:
                slipped += 1
                if slipped >= limit:
                    return False
                continue
            key = tuple(sorted(map(tuple, rows.tolist())))
            if key in seen:
                continue
            seen.add(key)
            found += 1
            yield rows
        return False

    def sample(self, k: int, seed: int = 0) -> list[np.ndarray]:
        """Up to ``k`` consistent datasets found under random objectives (any that fail the exact check dropped)."""
        rng = np.random.default_rng(seed)
        cols = self._binary_cols()
        out = []
        for _ in range(k):
            objective = {v: float(w) for v, w in zip(cols, rng.normal(size=len(cols)))}
            status, sol = self._solve(None, objective=objective)
            rows = self.checked(sol) if status == FEASIBLE else None
            if rows is not None:
                out.append(rows)
        return out

    def count_in(self, pred: Predicate, lo: int, hi: int) -> np.ndarray | bool | None:
        """A dataset whose count of ``pred`` lies in ``[lo, hi]``: its rows; False when the solver proves
        there is none; None at the time limit or when its dataset fails the exact check."""
        coef: dict[int, float] = {}
        for s in range(self.n):
            w = self.w(s, pred)
            coef[w] = coef.get(w, 0) + 1
        status, sol = self._solve(None, [(coef, lo, hi, None)])
        if status != FEASIBLE:
            return False if status == INFEASIBLE else None
        rows = self.checked(sol)
        if rows is None or not lo <= int(self.problem.row_mask(rows, pred).sum()) <= hi:
            return None
        return rows

    def _negation(self, claim: Claim) -> tuple[list, list]:
        """Rows and variables for Count(a) != m (eqs. 13-16, with T = X in a one-hot model)."""
        base = len(self.model.lb)
        extra_vars, rows = [], []
        ss = []
        for s in range(self.n):
            sv = base + len(extra_vars)
            extra_vars.append((0, 1, True))
            ts = [self.x[s][c][v] for c, v in claim.assignment]
            for t in ts:
                rows.append(({sv: 1, t: -1}, -INF, 0, None))  # eq. 13
            rows.append(({sv: 1, **{t: -1 for t in ts}}, -(len(ts) - 1), INF, None))  # eq. 14
            ss.append(sv)
        y = base + len(extra_vars)
        extra_vars.append((0, 1, True))
        big = self.n + 1
        rows.append(({**{sv: 1 for sv in ss}, y: -big}, -INF, claim.m - 1, None))  # eq. 15
        rows.append(({**{sv: 1 for sv in ss}, y: -big}, claim.m + 1 - big, INF, None))  # eq. 16
        return rows, extra_vars

    def _solve_claim(self, claim: Claim, cells: list[str] | None):
        rows, extra_vars = self._negation(claim)
        return self._solve(cells, rows, extra_vars)

    def verify(self, claim: Claim, explain: str = "none") -> Verdict:
        status, sol = self._solve_claim(claim, None)
        if status == LIMIT:
            return Verdict(claim, UNDECIDED, reason=f"time limit {self.time_limit}s per MIP reached")
        if status == FEASIBLE:
            rows = self.checked(sol, claim=claim)
            if rows is None:
                return Verdict(claim, UNDECIDED, reason="the MIP's counterexample failed the exact check "
                                                        "against the published values")
            return Verdict(claim, REFUTED, counterexample=rows)
        if explain == "none":
            return Verdict(claim, VERIFIED)
        cells, minimal = self.explain(claim)
        return Verdict(claim, VERIFIED, cells, minimal)

    def explainer(self, budget: float = EXPLAIN_BUDGET) -> Explainer:
        """The unit's :class:`~audit.attacks.engines._explain.Explainer`: each MIP is limited to ``explain_nodes``
        nodes (no time limit) and charged ``MIP_WORK`` plus ``ITERATION_WORK`` per simplex iteration."""
        if self._explainer is None:
            self._explainer = Explainer(self.problem, self.cells, lambda claim: _Session(self, claim), budget,
                                        self.explain_nodes)
        return self._explainer

    def explain(self, claim: Claim, sufficient: Sequence[str] | None = None) -> tuple[tuple[str, ...], bool]:
        """Cells that imply a verified claim, and whether they are a minimal set."""
        return self.explainer().explain(claim, sufficient)

    def conflicting_cells(self) -> list[str]:
        """For an inconsistent release: a set of cells no dataset satisfies together (deletion filter).

        Only the solver's "infeasible" drops a cell; a feasible answer, checked or not, keeps it.
        """
        if self._solve(None)[0] != INFEASIBLE:
            return []
        chosen = list(self.cells)
        i = 0
        while i < len(chosen):
            trial = chosen[:i] + chosen[i + 1:]
            if self._solve(trial)[0] == INFEASIBLE:
                chosen = trial
            else:
                i += 1
        return sorted(chosen)


class _Session:
    """A claim's negation rows, solved with chosen cells' rows under a node limit."""

    def __init__(self, engine: IpEngine, claim: Claim):
        self.engine, self.claim, self.negation = engine, claim, engine._negation(claim)

    def solve(self, cells: list[int], limit: int) -> tuple[str, object, int]:
        e = self.engine
        keys = [e.cells[i] for i in cells]
        status, sol = e._solve(keys, *self.negation, nodes=limit)
        work = MIP_WORK + ITERATION_WORK * e.last_iterations
        if status == FEASIBLE:  # a dataset that fails the exact check counts as running out
            rows = e.checked(sol, keys, self.claim)
            return (EXPLAIN_LIMIT, None, work) if rows is None else (EXPLAIN_SAT, rows, work)
        return (EXPLAIN_UNSAT if status == INFEASIBLE else EXPLAIN_LIMIT), None, work

    def close(self) -> None:
        pass
