"""The exact engine on python-sat: one incremental solver per unit, claims checked under assumptions.

Encoding (after seeds 000 and 002 and the measurements in DESIGN.md): N row slots, one-hot per column
plus an order encoding (``o[k]`` = atom index >= k) used for ranges and symmetry breaking; structural
edits as clauses; a per-slot indicator per predicate; each published count as a sequential counter
guarded by its cell's selector literal; full lexicographic ordering of slots, so that models and
distinct datasets (multisets of rows) correspond one to one. Numeric cells (sum, mean, median) are
added by :mod:`audit.attacks.engines._numeric`.
"""
from __future__ import annotations

import time
from fractions import Fraction
from functools import lru_cache
from typing import Generator, Sequence

import numpy as np
from pysat.formula import IDPool
from pysat.solvers import Solver

from ...problem.claims import REFUTED, UNDECIDED, VERIFIED, Claim, Verdict
from ...problem.build import Problem
from ...problem.coupled import child_sizes, child_total
from ...specs.query import Predicate, Statistic
from ...release.constraints import Constraint
from ...signals import solvers_leave_signals_to_python
from ._explain import EXPLAIN_BUDGET, LIMIT, SAT, UNSAT, Explainer
from .base import Enumeration, ExactEngine
from .sat_encoding import SatEncoding

DEFAULT_SOLVER = "cadical195"
solvers_leave_signals_to_python()  # Ctrl-C mid-call must not longjmp out of CaDiCaL (see audit.signals)
FIRST_SLICE = 1_000  # conflicts of a call's first slice when a deadline is set
FRAME_ROWS = 20  # units up to this many rows share their frame (15 MB for 1 to 20 rows on the sf1 schema)


def cell_of(key: str) -> str:
    """``TABLE:CELL:stat`` -> ``TABLE:CELL``."""
    return key.rsplit(":", 1)[0]


class SatEngine(SatEncoding, ExactEngine):
    """Exact reconstruction engine for one :class:`~audit.problem.build.Problem`.

    Parameters
    ----------
    problem : Problem
        The unit to attack.
    solver : str
        A python-sat solver name (``cadical195`` by default; the others are slower here).
    conflicts : int
        Conflict budget per solver call; a call that exhausts it is *undecided*.
    symmetry : bool
        Lexicographic ordering of row slots (needed for counting distinct datasets).
    explain_conflicts : int
        Conflict limit of one solver call while explaining a claim (see :meth:`explainer`).
    verifying : bool
        Build the verifying solver (cells hard); False when the engine only explains claims: a cell
        is then encoded when an explanation first assumes it.
    deadline : float, optional
        :func:`time.perf_counter` time after which a solver call gives up (undecided).
    """

    name = "sat"

    def __init__(self, problem: Problem, solver: str = DEFAULT_SOLVER, conflicts: int = 200_000,
                 symmetry: bool = True, seed: int = 0, explain_conflicts: int = 5_000, verifying: bool = True,
                 deadline: float | None = None, main: bool = True):
        self.problem, self.conflicts, self.seed = problem, conflicts, seed
        self.explain_conflicts = explain_conflicts
        self.solver: Solver | None = None
        self.n = problem.n_rows[1]
        self.sizes = [len(d) for d in problem.domains]
        self._m_cache: dict = {}
        self._m_slot: dict = {}
        self._y_cache: dict = {}
        sizes = child_sizes(problem)
        if sizes is not None:
            self.child = problem.index(problem.child)
        shape = (self.n, tuple(self.sizes), problem.n_rows, problem.names, problem.edits, symmetry, sizes, self.child)
        frame = _frame(*shape) if self.n <= FRAME_ROWS else _Frame(*shape)
        self.layout = frame.layout
        self.pool = IDPool()
        self.pool.obj2id.update(frame.pool.obj2id)
        self.pool.id2obj.update(frame.pool.id2obj)
        self.pool.top = frame.pool.top
        self.act, self.x, self.o = frame.act, frame.x, frame.o
        self._clauses: list[list[int]] = list(frame._clauses)
        self.selectors: dict[str, int] = {}
        self._pending: dict[str, list[Constraint]] = {}  # cells not encoded yet (see :meth:`_encode`)
        self.fixed: list[Constraint] = []  # the populations the slots fix: no cells of their own
        for c in problem.constraints:
            if (c.statistic.kind == "count" and not c.predicate.clauses and (c.lo, c.hi) == (problem.n_rows[0], problem.n_rows[1])
                    and c.exact) or (self.layout is not None and child_total(problem, c) is not None):
                self.fixed.append(c)
                continue  # the population (or a child unit's), already fixed by the slots
            sel = self.selectors.setdefault(cell_of(c.key), self.pool.id(("sel", cell_of(c.key))))
            if verifying:
                self._constraint(c, sel)
            else:
                self._pending.setdefault(cell_of(c.key), []).append(c)
        # Cells are hard in the main solver (assumption-guarded cells made each call 50-100x slower);
        # explanations use a second solver where they stay guarded.
        self._base = self._clauses
        self.solver_name = solver
        self._clauses = []
        self._verifying = verifying
        if verifying and main:
            self.ensure_main()
        self._guarded: Solver | None = None
        self._explainer: Explainer | None = None
        self._x_grid: np.ndarray | None = None
        self.calls = self.negations = 0
        self.deadline = deadline
        self._pace: float | None = None  # conflicts per second on this formula, once measured

    def ensure_main(self) -> "SatEngine":
        """Build the solver with every cell hard, if this engine was made without it (``main=False``:
        an engine whose guarded solver alone was wanted, for explanations' calls over every cell)."""
        if self.solver is None and self._verifying:
            self.solver = Solver(name=self.solver_name,
                                 bootstrap_with=self._base + [[sel] for sel in self.selectors.values()])
        return self

    # -- solving --------------------------------------------------------------------------------
    def _solve(self, assumptions: list[int], solver: Solver | None = None, budget: int | None = None) -> bool | None:
        self.calls += 1
        solver = solver or self.solver
        budget = budget or self.conflicts
        if not budget:
            return solver.solve(assumptions=assumptions)
        if self.deadline is None:
            solver.conf_budget(budget)
            return solver.solve_limited(assumptions=assumptions)
        # CaDiCaL cannot be interrupted, so the budget is spent in slices with the deadline checked
        # between them (learnt clauses carry over): each takes what fits in half the time left at
        # the pace measured on this formula (a small first slice measures it). While the deadline
        # is far that is the whole budget in one call, so the verdicts stay deterministic.
        while True:
            now = time.perf_counter()
            fits = FIRST_SLICE if self._pace is None else int(self._pace * (self.deadline - now) / 2)
            step = min(budget, max(FIRST_SLICE, fits))
            solver.conf_budget(step)
            result = solver.solve_limited(assumptions=assumptions)
            spent = time.perf_counter() - now
            budget -= step
            if result is None:  # the slice ran to its end: its pace is a fair measure
                self._pace = step / max(spent, 1e-6)
            if result is not None or budget <= 0 or now + spent > self.deadline:
                return result

    def decode(self, model: list[int]) -> np.ndarray:
        """Rows (atom indices) of the dataset in a model."""
        lits = np.asarray(model, dtype=np.int64)
        true = np.zeros(max(len(lits), self.pool.top) + 1, dtype=bool)
        true[lits[lits > 0]] = True
        if self._x_grid is None:  # slot x column x atom -> variable, padded with 0 (never true)
            grid = np.zeros((self.n, len(self.sizes), max(self.sizes)), dtype=np.int64)
            for s in range(self.n):
                for c, d in enumerate(self.sizes):
                    grid[s, c, :d] = self.x[s][c]
            self._x_grid = grid
        active = true[np.asarray(self.act, dtype=np.int64)]
        return true[self._x_grid[active]].argmax(axis=2).astype(np.int64).reshape(-1, len(self.sizes))

    @property
    def guarded(self) -> Solver:
        """A second solver in which every cell is switched on only by its selector assumption."""
        if self._guarded is None:
            self._guarded = Solver(name=self.solver_name, bootstrap_with=self._base)
        return self._guarded

    def solve(self) -> np.ndarray | None:
        """One dataset consistent with the release, or None if there is none (raises if undecided)."""
        result = self._solve([])
        if result is None:
            raise TimeoutError("the conflict budget ran out before any dataset was found")
        return self.decode(self.solver.get_model()) if result else None

    def _encode(self, cells) -> None:
        """Add the cells not encoded yet to the guarded solver (an engine that only explains them)."""
        todo = [k for k in cells if k in self._pending]
        for k in todo:
            for c in self._pending.pop(k):
                self._constraint(c, self.selectors[k])
        if todo:
            clauses, self._clauses = self._clauses, []
            self.guarded.append_formula(clauses)

    def conflicting_cells(self) -> list[str]:
        """For an inconsistent release: a set of cells that no dataset satisfies together."""
        self._encode(list(self.selectors))
        sels = list(self.selectors.values())
        if self._solve(sels, self.guarded) is not False:
            return []
        core = set(self.guarded.get_core() or [])
        return sorted(k for k, sel in self.selectors.items() if sel in core)

    @property
    def cells(self) -> tuple[str, ...]:
        """The published cells, in the order of their selectors."""
        return tuple(self.selectors)

    def solutions(self, limit: int) -> Enumeration:
        """Distinct consistent datasets, up to ``limit`` (blocking clauses retired afterwards)."""
        return Enumeration(self._solutions(limit))

    def _solutions(self, limit: int) -> Generator[np.ndarray, None, bool]:
        guard = self.pool.id(("enum", self.calls))
        try:
            for _ in range(limit):
                result = self._solve([guard])
                if not result:
                    return result is False
                model = self.solver.get_model()
                true = set(lit for lit in model if lit > 0)
                block = [-guard]
                for s in range(self.n):
                    if self.act[s] in true:
                        block += [-lit for col in self.x[s] for lit in col if lit in true]
                    else:
                        block.append(self.act[s])
                self.solver.add_clause(block)
                yield self.decode(model)
            return False
        finally:
            self.solver.add_clause([-guard])

    def sample(self, k: int, seed: int = 0) -> list[np.ndarray]:
        """Up to ``k`` consistent datasets found under random phases (for pruning candidate claims)."""
        rng = np.random.default_rng(seed)
        out = []
        xs = [lit for slot in self.x for col in slot for lit in col]
        for _ in range(k):
            signs = rng.random(len(xs)) < 0.5
            self.solver.set_phases([lit if sgn else -lit for lit, sgn in zip(xs, signs)])
            if self._solve([]):
                out.append(self.decode(self.solver.get_model()))
        self.solver.set_phases([])
        return out

    def near(self, rows: np.ndarray) -> np.ndarray | None:
        """A consistent dataset found with every slot's phases set to ``rows`` (a guess, e.g. a rounded
        reconstruction): the solver keeps what it can of it. None when there is none or the budget runs out."""
        lits = []
        for s, row in enumerate(np.asarray(rows)[: self.n]):
            for c, lit_col in enumerate(self.x[s]):
                lits += [lit if v == row[c] else -lit for v, lit in enumerate(lit_col)]
        self.solver.set_phases(lits)
        try:
            return self.decode(self.solver.get_model()) if self._solve([]) else None
        finally:
            self.solver.set_phases([])

    def count_in(self, pred: Predicate, lo: int, hi: int) -> np.ndarray | bool | None:
        """A dataset whose count of ``pred`` lies in ``[lo, hi]``: its rows; False when the solver proves
        there is none; None when the conflict budget (or the deadline) runs out first."""
        return self.satisfying(Constraint("range", pred, Statistic(), Fraction(lo), Fraction(hi)))

    def satisfying(self, c: Constraint, conflicts: int | None = None) -> np.ndarray | bool | None:
        """A dataset of the release that also meets ``c`` (any statistic): its rows; False when the solver
        proves there is none; None when the conflict budget (``conflicts``, else the engine's; or the
        deadline) runs out first."""
        g = self.pool.id()
        self._constraint(c, g)
        try:
            result = self._solve([g], budget=conflicts)
            if result is None:
                return None
            return self.decode(self.solver.get_model()) if result else False
        finally:
            self.solver.add_clause([-g])

    def _negation(self, claim: Claim, solver: Solver) -> int:
        """Add 'Count(a) != m' to ``solver`` under a fresh activation literal, and return it."""
        self.negations += 1  # a fresh literal each time: a retired one is false for good
        g = self.pool.id(("claim", self.negations, claim))
        z = self.pool.id(("dir", self.negations, claim))
        clauses = []
        lits = []
        where = dict(claim.assignment).get(self.child) if self.layout is not None else None
        slots = range(self.n) if where is None else self.layout[where]  # the others are in another child
        for s in slots:
            t = self.pool.id(("t", self.negations, claim, s))
            xs = [self.x[s][c][v] for c, v in claim.assignment if c != self.child]
            clauses += [[-g, -t, lit] for lit in xs]
            clauses.append([-g, t] + [-lit for lit in xs])
            lits.append(t)
        saved, self.solver = self.solver, None
        self._clauses = clauses
        try:
            if claim.m >= 1:
                self._card(lits, 0, claim.m - 1, [-g, -z])
            else:
                self._add([-g, -z])
            if claim.m + 1 <= len(lits):
                self._card(lits, claim.m + 1, len(lits), [-g, z])
            else:
                self._add([-g, z])
        finally:
            self.solver = saved
        for clause in self._clauses:
            solver.add_clause(clause)
        self._clauses = []
        return g

    def verify(self, claim: Claim, explain: str = "none") -> Verdict:
        """Ask for a dataset where the claim's count differs from m: none means verified.

        ``explain``: ``none``, or ``minimal`` for the cells that imply it (see :meth:`explain`).
        """
        g = self._negation(claim, self.solver)
        try:
            result = self._solve([g])
            if result is None:
                return Verdict(claim, UNDECIDED, reason=f"conflict budget {self.conflicts} exhausted")
            if result:
                return Verdict(claim, REFUTED, counterexample=self.decode(self.solver.get_model()))
        finally:
            self.solver.add_clause([-g])
        if explain == "none":
            return Verdict(claim, VERIFIED)
        cells, minimal = self.explain(claim)
        return Verdict(claim, VERIFIED, cells, minimal)

    def explainer(self, budget: float = EXPLAIN_BUDGET, cores: "SatEngine | None" = None) -> Explainer:
        """The unit's :class:`~audit.attacks.engines._explain.Explainer` on the guarded solver (made once;
        ``budget``: millions of propagations for all of its explanations, each call limited to
        ``explain_conflicts`` conflicts). ``cores``: an engine over the same problem whose guarded
        solver takes the calls over every cell, so that this one (built with ``verifying=False``)
        holds only the cells explanations assume."""
        if self._explainer is None:
            whole = None if cores is None else (lambda claim: _Session(cores, claim))
            self._explainer = Explainer(self.problem, list(self.selectors), lambda claim: _Session(self, claim),
                                        budget, self.explain_conflicts, whole, self.fixed)
            # Counterexamples near the truth that keep every cell they can are the informative ones:
            # phases lean the guarded solver towards them.
            phases = list(self.selectors.values())
            truth = self.problem.truth
            if truth is not None and len(truth) == self.n:
                keys = truth.T[::-1] if self.layout is None else np.vstack([truth.T[::-1], truth[:, self.child]])
                rows = truth[np.lexsort(keys)]  # in the slots' order: by child first when laid out
                phases += [self.x[s][c][v] if v == a else -self.x[s][c][v]
                           for s, row in enumerate(rows.tolist()) for c, a in enumerate(row) for v in range(self.sizes[c])]
            self.guarded.set_phases(phases)
        return self._explainer

    def explain(self, claim: Claim, sufficient: Sequence[str] | None = None) -> tuple[tuple[str, ...], bool]:
        """Cells that imply a verified claim, and whether they are a minimal set (see :meth:`explainer`)."""
        return self.explainer().explain(claim, sufficient)


class _Frame(SatEncoding):
    """The part of the encoding that depends only on the unit's shape (slots, columns, edits, and the
    child units' sizes when laid out): row slots, their one-hot and order literals, the edits and the
    lexicographic order. Read-only once built; an engine starts from a copy of its variable pool and
    clause list."""

    def __init__(self, n: int, sizes: tuple[int, ...], n_rows: tuple[int, int], names: tuple[str, ...],
                 edits: tuple[Predicate, ...], symmetry: bool, children: tuple[int, ...] | None = None, child: int = -1):
        self.n, self.sizes, self.solver = n, list(sizes), None
        if children is not None:
            ends = np.cumsum((0,) + children).tolist()
            self.layout, self.child = tuple(range(a, b) for a, b in zip(ends, ends[1:])), child
        self.problem = _Shape(n_rows, names)
        self.pool = IDPool()
        self._clauses: list[list[int]] = []
        self.act = [self.pool.id(("act", s)) for s in range(n)]
        self.x = [[[self.pool.id(("x", s, c, v)) for v in range(d)] for c, d in enumerate(sizes)] for s in range(n)]
        self.o = [[[0] + [self.pool.id(("o", s, c, k)) for k in range(1, d)] for c, d in enumerate(sizes)]
                  for s in range(n)]
        self._rows()
        if self.layout is not None:
            self._place()
        for edit in edits:
            self._edit(edit)
        if symmetry:
            self._lex()


class _Shape:
    """What :class:`_Frame`'s encoding reads of a problem."""

    def __init__(self, n_rows: tuple[int, int], names: tuple[str, ...]):
        self.n_rows, self.names = n_rows, names

    def index(self, name: str) -> int:
        return self.names.index(name)


@lru_cache(maxsize=64)
def _frame(n: int, sizes: tuple[int, ...], n_rows: tuple[int, int], names: tuple[str, ...],
           edits: tuple[Predicate, ...], symmetry: bool, children: tuple[int, ...] | None = None,
           child: int = -1) -> _Frame:
    """The shared :class:`_Frame` of units of one shape (blocks of one size): building it anew took
    a twentieth of the CPU of the Census extract's blocks."""
    return _Frame(n, sizes, n_rows, names, edits, symmetry, children, child)


class _Session:
    """A claim's negation in the guarded solver, solved under chosen cells' selectors."""

    def __init__(self, engine: SatEngine, claim: Claim):
        self.engine, self.solver = engine, engine.guarded
        self.guard = engine._negation(claim, self.solver)
        self.keys = list(engine.selectors)
        self.selectors = np.array(list(engine.selectors.values()), dtype=np.int64)
        self.index = {int(sel): i for i, sel in enumerate(self.selectors)}

    def solve(self, cells: list[int], limit: int) -> tuple[str, object, int]:
        self.engine._encode([self.keys[i] for i in cells])
        before = self.solver.accum_stats().get("propagations", 0)
        self.engine.calls += 1
        self.solver.conf_budget(limit)
        result = self.solver.solve_limited(assumptions=[self.guard] + self.selectors[cells].tolist())
        work = self.solver.accum_stats().get("propagations", 0) - before
        if result is None:
            return LIMIT, None, work
        if result is False:
            core = self.solver.get_core()
            return UNSAT, None if core is None else [self.index[lit] for lit in core if lit in self.index], work
        return SAT, self.engine.decode(self.solver.get_model()), work

    def close(self) -> None:
        self.solver.add_clause([-self.guard])
