"""Feasibility intervals: the least and greatest value of each cell a unit does not publish exactly.

An attacker who knows the release and the rules behind it (thresholds, rounding, edits, the
population) can bound every suppressed, rounded or interval-published cell; agencies judge a
suppression pattern by these intervals (tau-Argus "Audit", sdcTable ``attack()``). Here they are
taken over *integer* datasets, zeros included, not over a continuous relaxation.

* A **count**'s ends are optima of :meth:`~audit.attacks.engines.histogram.HistogramEngine.extreme`:
  a dataset that reaches each (checked exactly against every published value) and a checked dual
  certificate or a closed certified branch-and-bound tree that no dataset goes further; the row-slot
  SAT engine closes what the node budget leaves open. An end that a dataset already checked reaches at
  the cell's outer range (an empty cell's 0, the true rows first) needs no search.
* A **sum, mean or median** (suppressed, rounded or published as a range) has its ends found by a
  bound search on the row-slot SAT engine (:func:`value_interval`): from a dataset's value and a proved
  outer bound, first ask for any value past it (none: that end is settled), then halve the gap by
  asking for a dataset with the value past the midpoint; each answer is a dataset (checked exactly)
  or the solver's proof that there is none, and the last step asks for any value past the best one found.

An end not settled within the budget is replaced by a proved outer bound (the relaxation's, the last
bound the search proved, or the cell's own published range) and the interval is marked
``certified: false``: wider than the truth, never narrower.

Each exact end keeps its :class:`Proof` (what was computed anyway: the dataset, the certificates or
the solver call), which :mod:`audit.attacks.certificates` writes out for re-checking.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Callable, Mapping

import numpy as np

from .implied import LinearProof
from ..problem.build import Problem
from ..release.constraints import Constraint, int_hi, int_lo
from .engines.histogram import HistogramEngine

NODES = 64  # certified branch-and-bound boxes per cell and end
QUERIES = 64  # SAT calls per end of a sum, mean or median's bound search
CONFLICTS = 100_000  # solver conflicts the bound searches of one unit share (work, not time: deterministic)


@dataclass(frozen=True)
class Proof:
    """Why one end of an interval is exact: ``rows``, a checked dataset whose value is the end, and
    ``by``: ``"range"`` (the cell's published range, the population or the column's values stop there),
    ``"dual"`` (``certificates``: :meth:`~audit.attacks.engines.histogram.HistogramEngine.extreme`'s,
    the root's or every closed box's) or ``"sat"`` (``asked``: the cell past the end, which the
    row-slot SAT engine proved no dataset meets)."""

    rows: np.ndarray
    by: str
    certificates: tuple = ()
    asked: Constraint | None = None

    def __post_init__(self):
        if self.by not in ("range", "dual", "sat") or (self.by == "sat") != (self.asked is not None):
            raise ValueError(f"bad proof {self.by!r}")


@dataclass(frozen=True)
class Interval:
    """The values a hidden cell can take: ``[lo, hi]``, exact when ``certified``, else a proved outer
    bound; ``value`` is the true value (absent when no confidential rows are known); ``stat`` names a
    sum, mean or median (empty for a count, whose ends are whole numbers of at least 0)."""

    lo: int | Fraction
    hi: int | Fraction
    certified: bool
    value: int | Fraction | None = None
    stat: str = ""
    proofs: tuple = field(default=(None, None), compare=False, repr=False)  # (lo's, hi's) Proof where exact

    def __post_init__(self):
        if not self.lo <= self.hi or (not self.stat and self.lo < 0):
            raise ValueError(f"bad interval [{self.lo}, {self.hi}]")
        if self.value is not None and not self.lo <= self.value <= self.hi:
            raise ValueError(f"interval [{self.lo}, {self.hi}] excludes the true value {self.value}")

    def to_dict(self) -> dict:
        """JSON numbers (a fraction as its float, with the exact ``"a/b"`` under ``exact``)."""
        ends = {"lo": self.lo, "hi": self.hi} | ({} if self.value is None else {"value": self.value})
        out = {k: _number(v) for k, v in ends.items()}
        out = {"lo": out["lo"], "hi": out["hi"], "certified": self.certified, **({"value": out["value"]} if "value" in out else {})}
        if self.stat:
            out["stat"] = self.stat
        trusted = [side for side, proof in zip(("lo", "hi"), self.proofs) if proof is not None and proof.by == "sat"]
        if trusted:  # exact, but on the SAT solver's word: no certificate re-checks that no dataset goes further
            out["solver_trusted"] = trusted
        fractions = {k: str(v) for k, v in ends.items() if Fraction(v).denominator != 1}
        if fractions:
            out["exact"] = fractions
        return out


def intervals_json(intervals: Mapping[str, Interval]) -> tuple[dict, dict]:
    """findings.json's ``intervals`` (key -> ``[lo, hi]``) and ``interval_details`` (key -> ``certified``,
    ``value``, ``stat``, ``solver_trusted``, ``exact``); read back by :func:`audit.policy.checks.unit_intervals`."""
    full = {k: iv.to_dict() for k, iv in intervals.items()}
    return ({k: [d["lo"], d["hi"]] for k, d in full.items()},
            {k: {f: v for f, v in d.items() if f not in ("lo", "hi")} for k, d in full.items()})


def _number(v) -> int | float:
    v = Fraction(v)
    return int(v) if v.denominator == 1 else float(v)


def hidden_cells(problem: Problem) -> dict[str, Constraint]:
    """The cells the unit does not publish exactly (suppressed, rounded, published as a range): counts
    keyed ``TABLE:CELL``, sums, means and medians ``TABLE:CELL:stat``. A count only implied by a sum's
    status (a table that lists no counts) is none: the release neither publishes nor hides it."""
    out: dict[str, Constraint] = {}
    for c in problem.constraints:
        if not c.exact and not c.implied:
            out.setdefault(c.key.rsplit(":", 1)[0] if c.statistic.kind == "count" else c.key, c)
    for c in problem.hidden:
        out.setdefault(c.key, c)
    return out


def feasibility_intervals(problem: Problem, linear: LinearProof | None, sat: Callable[[], object] | None = None,
                          nodes: int = NODES, queries: int = QUERIES, conflicts: int = CONFLICTS,
                          deadline: float | None = None) -> dict[str, Interval] | None:
    """Every hidden cell's interval over the datasets consistent with the unit's release; None when the
    histogram model cannot be built (support too large, or the confidential rows do not reproduce the
    release). ``sat`` makes the row-slot SAT engine (:class:`~audit.attacks.engines.sat.SatEngine`) that
    settles the ends the histogram search leaves open and searches the sums, means and medians (at most
    ``queries`` solver calls per end, ``conflicts`` for all of them, none past the unit's ``deadline``,
    a :func:`time.perf_counter` time); without it those are outer bounds. A mean or median the true rows
    leave undefined (an empty cell's) is left out: it hides no one's value."""
    cells = hidden_cells(problem)
    if not cells:
        return {}
    if linear is None:
        return None
    if problem.truth is not None:
        engine = HistogramEngine.of(problem, linear, nodes)
        if engine is None:
            return None
    else:
        engine = HistogramEngine(problem, linear, None, nodes)
    known = _Known(engine)
    solver: list = []  # the SAT engine, made when first needed
    budget = Budget(conflicts, deadline)  # what the numeric bound searches have left

    def solver_():
        if not solver:
            solver.append(sat())
        return solver[0]

    out = {}
    for key, c in cells.items():
        if c.statistic.kind != "count":
            if problem.truth is None or problem.value(problem.truth, c) is not None:  # else no one's value to hide
                out[key] = value_interval(problem, c, solver_ if sat is not None else None, queries, budget)
            continue
        vec = linear.cell_vector(c.predicate)
        # the cell's own published range and the population bound it whatever the solvers say
        ends = []
        for sense, safe in zip((1, -1), map(int, outer_range(problem, c))):
            certificates: list = []  # what proves the histogram search's bound
            rows = known.reaching(vec, safe)
            if rows is not None:  # a checked dataset (the true rows first) reaches that bound: nothing to search
                bound = best = sense * safe
            else:
                bound, best, rows = engine.extreme(sense * vec, proof=certificates)
            bound, asked = sense * safe if bound is None else max(bound, sense * safe), None
            if best is not None and bound < best and sat is not None:
                bound, best, rows, asked = _tighten(solver_(), problem, c, sense, bound, best, rows)
            proof = None
            if best is not None and bound == best:
                by = "sat" if asked is not None else "range" if sense * safe >= best else "dual"
                proof = Proof(rows, by, _portable(linear, certificates) if by == "dual" else (), asked)
            ends.append((sense * bound, proof))
        (lo, lo_proof), (hi, hi_proof) = ends
        value = int(problem.row_mask(problem.truth, c.predicate).sum()) if problem.truth is not None else None
        out[key] = Interval(lo, hi, lo_proof is not None and hi_proof is not None, value, proofs=(lo_proof, hi_proof))
    return out


class _Known:
    """The histograms of the datasets a :class:`HistogramEngine` has found and checked (its ``found``, the
    true rows first), as a matrix that grows as the engine finds more."""

    def __init__(self, engine: HistogramEngine):
        self.engine, self.keys, self.counts = engine, [], np.zeros((0, engine.n), dtype=np.int64)

    def reaching(self, vec: np.ndarray, value: int) -> np.ndarray | None:
        """The rows of the first such dataset whose count ``vec . h`` is ``value``; None if none."""
        found = self.engine.found
        if len(found) > len(self.keys):
            new = list(found)[len(self.keys):]
            self.keys += new
            self.counts = np.vstack([self.counts, *(np.frombuffer(k, dtype=np.int64) for k in new)])
        hit = np.flatnonzero(self.counts @ vec == value)
        return found[self.keys[hit[0]]] if len(hit) else None


def outer_range(problem: Problem, c: Constraint) -> tuple[Fraction, Fraction]:
    """The least and greatest value of ``c``'s statistic before any search: its published range, the
    population, and the values its column allows (a count or sum is whole: an open or fractional end
    of the published range rounds inwards)."""
    most, kind = problem.n_rows[1], c.statistic.kind
    if kind == "count":
        lo, hi = 0, most
    else:
        col = problem.index(c.statistic.column)
        allowed = c.predicate.as_dict().get(c.statistic.column, frozenset(range(problem.sizes[col])))
        values = [problem.domains[col].values[a] for a in sorted(allowed)]
        lo, hi = (most * min(min(values), 0), most * max(max(values), 0)) if kind == "sum" else (min(values), max(values))
    whole = kind in ("count", "sum")
    lo = Fraction(lo if c.lo is None else max(lo, int_lo(c.lo, c.lo_open) if whole else c.lo))
    hi = Fraction(hi if c.hi is None else min(hi, int_hi(c.hi, c.hi_open) if whole else c.hi))
    return lo, hi


def _portable(linear: LinearProof, certificates: list) -> tuple:
    """:meth:`HistogramEngine.extreme`'s certificates by rows and constraints rather than positions:
    ``(box, scale, multipliers, past)``, box ``((row, lo, hi), ...)`` (hi None for none), multipliers
    ``((constraint or None for the population, y, lo, hi), ...)`` with the whole numbers each cell allows."""
    return tuple((tuple((tuple(linear.rows[j].tolist()), lo, None if hi < 0 else hi) for j, (lo, hi) in sorted(box.items())),
                  scale, tuple((linear.sources[i], int(coef[i]), linear.lo[i], linear.hi[i]) for i in np.flatnonzero(coef).tolist()),
                  past) for box, scale, coef, past in certificates)


def value_interval(problem: Problem, c: Constraint, sat: Callable[[], object] | None,
                   queries: int = QUERIES, budget: "Budget | None" = None) -> Interval:
    """A sum, mean or median's interval by a bound search on the SAT engine ``sat()`` (see the module
    docstring); without it, or where the search stops (``queries`` calls per end, or the conflicts left
    in ``budget``, shared and spent), the ends are proved outer bounds."""
    budget = Budget(CONFLICTS) if budget is None else budget
    most, kind = problem.n_rows[1], c.statistic.kind
    # two sums differ by 1 or more, two means by 1/(k k'), two medians (halves of integer sums) by 1/2
    step = Fraction(1) if kind == "sum" else Fraction(1, max(most, 1) ** 2) if kind == "mean" else Fraction(1, 2)
    lo, hi = outer_range(problem, c)
    value = None if problem.truth is None else problem.value(problem.truth, c)
    engine = sat() if sat is not None else None
    seed, rows = value, problem.truth
    if seed is None and engine is not None:
        rows = _within(engine, replace(c, lo=None, hi=None, lo_open=False, hi_open=False), budget)
        seed = problem.value(rows, c) if rows is not None and rows is not False and not problem.violations(rows) else None
    if seed is None or engine is None:
        return Interval(lo, hi, False, value, c.statistic.name)
    (low, low_proof), (high, high_proof) = (_search(engine, problem, c, sense, sense * seed, sense * end, step, queries,
                                                    budget, rows) for sense, end in ((-1, lo), (1, hi)))
    return Interval(-low, high, low_proof is not None and high_proof is not None, value, c.statistic.name,
                    (low_proof, high_proof))


@dataclass
class Budget:
    """The solver conflicts the bound searches of one unit have left, and the time they must stop by."""

    conflicts: int
    deadline: float | None = None

    def spent(self) -> bool:
        return self.conflicts <= 0 or (self.deadline is not None and time.perf_counter() > self.deadline)


def _within(engine, c: Constraint, budget: Budget):
    """``engine.satisfying(c)`` on what is left of the shared ``budget`` (None once it is spent)."""
    if budget.spent():
        return None
    engine.deadline, before = budget.deadline, engine.solver.accum_stats().get("conflicts")
    try:
        rows = engine.satisfying(c, budget.conflicts)
    finally:
        engine.deadline = None  # as the engine was handed over (see audit.attacks.exact.audit_unit)
    after = engine.solver.accum_stats().get("conflicts")
    budget.conflicts -= budget.conflicts if before is None or after is None else max(after - before, 1)
    return rows


def _search(engine, problem: Problem, c: Constraint, sense: int, best: Fraction, bound: Fraction, step: Fraction,
            queries: int, budget: Budget, rows: np.ndarray) -> tuple[Fraction, Proof | None]:
    """The greatest ``sense * value`` of ``c``'s statistic from a dataset's (``rows``) ``best`` and a proved
    ``bound`` (``open``: the value stays below it): (that value, its :class:`Proof`), or (a proved bound,
    None) when the budget runs out first. The first call asks for any value past ``best``: a value the
    release pins (the common case for a hidden mean or median) is settled by one call, not a halving per bit."""
    open_ = False
    for i in range(queries):
        if best == bound and not open_:
            return best, Proof(rows, "range")
        past = i == 0 or bound - best <= step  # (later: no value fits strictly between) any past the best
        mid = best if past else (best + (bound - best) / 2 if c.statistic.kind != "sum" else best + -((best - bound) // 2))
        wanted = (replace(c, lo=mid, hi=None, lo_open=past, hi_open=False) if sense == 1
                  else replace(c, lo=None, hi=-mid, lo_open=False, hi_open=past))
        found = _within(engine, wanted, budget)
        if found is None or (found is not False and problem.violations(found)):
            break  # out of budget, or a dataset that does not check out: the bound stands
        if found is False:
            if past:
                return best, Proof(rows, "sat", asked=wanted)
            bound, open_ = mid, True
        elif sense * problem.value(found, c) > best:
            best, rows = sense * problem.value(found, c), found
    return bound, None


def _tighten(sat, problem: Problem, c: Constraint, sense: int, bound: int, best: int,
             rows: np.ndarray) -> tuple[int, int, np.ndarray, Constraint | None]:
    """Close the gap between a proved bound and the best dataset (``rows``) on ``sense * count``: ask the
    SAT engine for a dataset past the best one until it proves there is none or its budget runs out.
    Returns the bound, the best value, its rows and the constraint proved unsatisfiable (None: none was)."""
    while bound < best:
        wanted = (0, sense * (best - 1)) if sense == 1 else (-(best - 1), problem.n_rows[1])
        found = sat.count_in(c.predicate, *wanted)
        if found is False:
            return best, best, rows, Constraint(c.key, c.predicate, c.statistic, *map(Fraction, wanted))
        if found is None or problem.violations(found):
            break  # out of budget, or a dataset that does not check out: the outer bound stands
        best, rows = sense * int(problem.row_mask(found, c.predicate).sum()), found
    return bound, best, rows, None


def without_values(intervals: dict[str, Interval] | None) -> dict[str, Interval] | None:
    """The intervals without true values (a published release alone: its rows are not the truth)."""
    return None if intervals is None else {k: replace(v, value=None) for k, v in intervals.items()}
