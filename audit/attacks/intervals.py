"""Feasibility intervals: the least and greatest value of each count a unit does not publish exactly.

An attacker who knows the release and the rules behind it (thresholds, rounding, edits, the
population) can bound every suppressed, rounded or interval-published count cell; agencies judge a
suppression pattern by these intervals (tau-Argus "Audit", sdcTable ``attack()``). Here they are
taken over *integer* datasets, zeros included, not over a continuous relaxation: each end is the
optimum of :meth:`~audit.attacks.engines.histogram.HistogramEngine.extreme`, a dataset that reaches it
(checked exactly against every published value) and a checked dual certificate or a closed certified
branch-and-bound tree that no dataset goes further. An end that is not settled within the node
budget is replaced by a proved outer bound (the relaxation's, or the cell's own published range) and
the interval is marked ``certified: false``: wider than the truth, never narrower.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from .implied import LinearProof
from ..problem.build import Problem
from ..release.constraints import Constraint, int_hi, int_lo
from .engines.histogram import HistogramEngine

NODES = 64  # certified branch-and-bound boxes per cell and end


@dataclass(frozen=True)
class Interval:
    """The values a hidden count can take: ``[lo, hi]``, exact when ``certified``, else a proved outer
    bound; ``value`` is the true count (absent when no confidential rows are known)."""

    lo: int
    hi: int
    certified: bool
    value: int | None = None

    def __post_init__(self):
        if not 0 <= self.lo <= self.hi:
            raise ValueError(f"bad interval [{self.lo}, {self.hi}]")
        if self.value is not None and not self.lo <= self.value <= self.hi:
            raise ValueError(f"interval [{self.lo}, {self.hi}] excludes the true value {self.value}")

    def to_dict(self) -> dict:
        out = {"lo": self.lo, "hi": self.hi, "certified": self.certified}
        if self.value is not None:
            out["value"] = self.value
        return out


def hidden_cells(problem: Problem) -> dict[str, Constraint]:
    """The count cells the unit does not publish exactly (suppressed, rounded, published as a range),
    keyed ``TABLE:CELL``."""
    out: dict[str, Constraint] = {}
    for c in problem.constraints:
        if c.statistic.kind == "count" and not c.exact:
            out.setdefault(c.key.rsplit(":", 1)[0], c)
    return out


def feasibility_intervals(problem: Problem, linear: LinearProof | None, sat: Callable[[], object] | None = None,
                          nodes: int = NODES) -> dict[str, Interval] | None:
    """Every hidden count cell's interval over the datasets consistent with the unit's release; None
    when the histogram model cannot be built (support too large, or the confidential rows do not
    reproduce the release). ``sat`` makes the row-slot SAT engine (:meth:`~audit.attacks.engines.sat.SatEngine.count_in`)
    that settles the ends the histogram search leaves open (sums, means and medians, or a node budget)."""
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
    most = problem.n_rows[1]
    solver: list = []  # the SAT engine, made when first needed
    out = {}
    for key, c in cells.items():
        vec = linear.cell_vector(c.predicate)
        # the cell's own published range and the population bound it whatever the solvers say
        ends = []
        for sense, safe in ((1, max(int_lo(c.lo, c.lo_open) or 0, 0)), (-1, most if c.hi is None else min(most, int_hi(c.hi, c.hi_open)))):
            bound, best, _ = engine.extreme(sense * vec)
            bound = sense * safe if bound is None else max(bound, sense * safe)
            if best is not None and bound < best and sat is not None:
                if not solver:
                    solver.append(sat())
                bound, best = _tighten(solver[0], problem, c.predicate, sense, bound, best)
            ends.append((sense * bound, best is not None and bound == best))
        (lo, lo_ok), (hi, hi_ok) = ends
        value = int(problem.row_mask(problem.truth, c.predicate).sum()) if problem.truth is not None else None
        out[key] = Interval(lo, hi, lo_ok and hi_ok, value)
    return out


def _tighten(sat, problem: Problem, predicate, sense: int, bound: int, best: int) -> tuple[int, int]:
    """Close the gap between a proved bound and the best dataset on ``sense * count``: ask the SAT engine
    for a dataset past the best one until it proves there is none or its budget runs out."""
    while bound < best:
        wanted = (0, sense * (best - 1)) if sense == 1 else (-(best - 1), problem.n_rows[1])
        rows = sat.count_in(predicate, *wanted)
        if rows is False:
            return best, best
        if rows is None or problem.violations(rows):
            break  # out of budget, or a dataset that does not check out: the outer bound stands
        best = sense * int(problem.row_mask(rows, predicate).sum())
    return bound, best


def without_values(intervals: dict[str, Interval] | None) -> dict[str, Interval] | None:
    """The intervals without true values (a published release alone: its rows are not the truth)."""
    return None if intervals is None else {k: replace(v, value=None) for k, v in intervals.items()}
