"""One unit's exact attack: its options, its result, and its size, estimated before anything is built."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..errors import AuditError
from ..problem.build import Problem
from ..problem.coupled import child_sizes, child_total
from ..release.constraints import int_hi, int_lo
from ..problem.claims import (UNDECIDED, VERIFIED, ClaimTable, Verdict, candidates, claimable, count_candidates,
                              distinct_rows, n_subsets)
from .engines import engine_class, get_engine
from .engines._explain import EXPLAIN_BUDGET
from .highs import work as highs_work
from .implied import MAX_SUPPORT, LinearProof, _flat_of, problem_support, support
from .intervals import hidden_cells


# Bytes per unit of work, measured on SF1 and household blocks (README, "Bounds"): a candidate key
# becomes up to one claim and one verdict (Python objects), a clause is a Python list before the
# solver copies it.
BYTES_PER_KEY = 600
# A row-slot unit's clauses by how the attack uses them (bench/sizing.py, the peaks of the SF1, household
# and block7 samples' units): each built encoding is about 200 bytes a clause in Python lists and 160 in a
# solver. A count-only unit builds it for what histogram space leaves open and again, guarded, for the
# explanations; a unit with a sum, mean or median cell searches with it, explains with a second copy and
# bounds its hidden cells on the first; a unit its exact counts pin (the linear pass) searches nothing and
# encodes only the cells its explanations ask for.
BYTES_PER_CLAUSE = 500
BYTES_PER_SLOT_CLAUSE = 1000
BYTES_PER_PINNED_CLAUSE = 48
# A pinned unit's explanations encode a cell when they first assume it, and they start from the cells of
# their targets' linear proofs: about 500 bytes for each of those clauses (the Python lists, the solver's copy
# and what its search learns; z2 at --max-rows 1000: 0.41 M clauses, 201 MB measured).
BYTES_PER_EXPLAINED_CLAUSE = 500
EXPLAINED_FROM_MB = 64  # a pinned unit whose every-cell bound is smaller is not looked into further
SLOTS_MB = 28  # a row-slot search's own fixed share (histogram sampling, HiGHS models, solvers), beyond its clauses
PINNED_MB = 8  # the same for a unit its exact counts pin: its explanations' engine alone
SECONDS_PER_CLAUSE = 3e-6  # building the SAT encoding (measured: 1.9 M clauses in 5-7 s on 2 loaded cores)
BYTES_PER_ENTRY = 40  # per nonzero count cell and support row of the histogram model: its matrices, their
# transients and HiGHS' copies (bench/sizing.py: 30-46 on z3 and the synthetic two- and three-way tables)
UNIT_MB = 16  # the histogram search's own fixed share of a unit (HiGHS models, engines), beyond its matrices
BASE_MB = 400  # a worker's own footprint (interpreter, numpy, pandas, pysat, HiGHS): not for the unit
LISTED_MAX = 20_000  # a unit the attack did not finish lists its undecided claims up to this many
EXPLAIN_MODES = ("none", "records", "singletons", "all")
ENUMERATION_NODES = 4_000  # boxes the histogram engine may search to list every dataset of a unit
UNIT_WORK = 600.0  # default solver work per unit, millions of propagations (about 2 minutes of solving)


@dataclass(frozen=True)
class ExactOptions:
    """Knobs of the exact attack; every one is reported in the findings."""

    engine: str = "sat"
    max_columns: int | None = None
    samples: int = 32
    seed: int = 0
    conflicts: int = 200_000
    unit_seconds: float | None = None  # a wall-clock limit per unit (off: the unit's limit is unit_work)
    unit_work: float = UNIT_WORK  # solver work per unit: millions of propagations (HiGHS at highs.ITERATION_WORK)
    solution_cap: int = 16  # datasets enumerated: up to this many decide every claim at once
    explain: str = "records"  # none | records | singletons | all: which verified claims get explaining cells
    explain_budget: float = EXPLAIN_BUDGET  # explanation work per unit: millions of solver propagations
    max_rows: int = 200  # row slots (one per person) only up to this many rows; a count-only unit past it is attacked in cell space
    linear: bool = True  # prove claims that are linear combinations of exact counts without search
    memory_mb: int | None = 4096  # per unit; a unit estimated above it is too large (None: no bound)
    histogram: bool = True  # sample, refute and prove in histogram space (LP/MIP) before the row-slot engine
    attacker: object = None  # audit.specs.attacker.AttackerModel: also measure re-identification (audit.attacks.reidentify)
    intervals: bool = True  # feasibility intervals of the count cells not published exactly (audit.attacks.intervals)

    def __post_init__(self):
        engine_class(self.engine)  # an unknown name fails here, naming the option
        if self.explain not in EXPLAIN_MODES:
            raise AuditError(f"unknown explain mode '{self.explain}'", "--explain", f"use one of {', '.join(EXPLAIN_MODES)}")
        for option, value, low, example in (("--max-columns", self.max_columns, 1, 3), ("--seed", self.seed, 0, 0),
                                            ("--conflicts", self.conflicts, 1, 200_000),
                                            ("--max-rows", self.max_rows, 1, 200)):
            if value is not None and not value >= low:
                raise AuditError(f"must be an integer {low} or more, not {value}", option, f"e.g. {option} {example}")
        if self.unit_seconds is not None and not self.unit_seconds > 0:  # also refuses NaN
            raise AuditError(f"must be a number above 0, not {self.unit_seconds}", "--unit-seconds",
                             "e.g. --unit-seconds 120")
        if not self.unit_work > 0:
            raise AuditError(f"must be a number above 0, not {self.unit_work}", "--unit-work",
                             f"e.g. --unit-work {UNIT_WORK:g}")
        if not self.explain_budget >= 0:
            raise AuditError(f"must be a number 0 or more, not {self.explain_budget}", "--explain-budget",
                             f"e.g. --explain-budget {EXPLAIN_BUDGET:g}")
        if self.memory_mb is not None and self.memory_mb < 2 * BASE_MB:
            raise AuditError(f"--memory-mb {self.memory_mb} is too small", "--memory-mb",
                             f"give at least {2 * BASE_MB} (MB per unit)")


class Meter:
    """One unit's limit: its solver work (SAT propagations of the engines it watches, and HiGHS work in
    this process, :func:`audit.attacks.highs.work`) against ``--unit-work``, so that the same inputs give
    the same verdicts on an idle or a busy machine; and its wall-clock deadline when ``--unit-seconds``
    is given (then verdicts may depend on the load)."""

    def __init__(self, options: ExactOptions, start: float):
        self.options, self.budget = options, options.unit_work * 1e6
        self.deadline = None if options.unit_seconds is None else start + options.unit_seconds
        self.start = highs_work()
        self.sources: list = []

    def watch(self, engine) -> None:
        """Count the propagations of ``engine``'s SAT solver (once it has one) too."""
        self.sources.append(engine)

    def spent(self) -> float:
        sat = 0
        for engine in self.sources:
            solver = getattr(engine, "solver", None)
            sat += solver.accum_stats().get("propagations", 0) if solver is not None else 0
        return highs_work() - self.start + sat

    def late(self, phase: str) -> str | None:
        """Why the unit must stop after ``phase``, or None while its limits leave room."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            return f"--unit-seconds {self.options.unit_seconds:g} reached during {phase}"
        if self.spent() > self.budget:
            return f"--unit-work {self.options.unit_work:g} (millions of solver propagations) reached during {phase}"
        return None


@dataclass
class UnitResult:
    """What the exact attack established about one unit."""

    problem: Problem
    verdicts: list[Verdict] = field(default_factory=list)
    refuted: int = 0
    solutions: int = 0
    exhausted: bool = False
    seconds: float = 0.0
    status: str = "done"  # done | too-large | timeout | inconsistent
    reason: str = ""
    baseline: dict = field(default_factory=dict)
    omitted: int = 0  # undecided claims counted but not listed (a unit too large to list them)
    reidentification: object = None  # audit.attacks.reidentify.UnitMeasure, with an attacker model
    intervals: dict | None = None  # cell key -> audit.attacks.intervals.Interval, for the counts not published exactly
    intervals_note: str = ""  # why the intervals were not computed

    @property
    def verified(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == VERIFIED]

    @property
    def undecided(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == UNDECIDED]

    def give_up(self, claims, reason: str, status: str = "timeout") -> None:
        """Record ``claims`` as undecided for ``reason``; the unit did not finish."""
        self.verdicts += [Verdict(c, UNDECIDED, reason=reason) for c in claims]
        self.status, self.reason = status, reason

    @property
    def reconstructed(self) -> bool:
        return self.exhausted and self.solutions == 1


@dataclass(frozen=True)
class UnitCost:
    """What attacking one unit would hold in memory, estimated before anything large is built: with
    row slots (one per person: the SAT encoding), and in histogram space (atom combinations x cells)."""

    rows: int  # row slots
    distinct: int  # distinct true rows
    keys: int  # candidate keys: distinct true rows x column subsets (at least the candidate claims)
    prior_keys: int  # the same for the parent unit's rows (baseline probabilities)
    clauses: int  # clauses of the SAT encoding (the integer program is smaller)
    combinations: int = 0  # atom combinations the histogram model may hold (at most MAX_SUPPORT)
    cells: int = 0  # count cells above 0 (a zero cell cuts the support instead), the histogram model's rows
    slots: bool = True  # a sum, mean or median cell needs row slots: the unit cannot be attacked by cells alone
    pinned: bool = False  # the unit's exact counts determine its rows (known once its linear proof is built)
    explained: int | None = None  # clauses a pinned unit's explanations encode (None: not counted, see megabytes)

    @property
    def megabytes(self) -> float:
        """The attack with row slots: claims, the encoding as it is used (see BYTES_PER_CLAUSE), a fixed share."""
        fixed, per_clause, clauses = ((PINNED_MB, BYTES_PER_PINNED_CLAUSE, self.clauses) if self.pinned else
                                      (SLOTS_MB, BYTES_PER_SLOT_CLAUSE if self.slots else BYTES_PER_CLAUSE, self.clauses))
        if self.pinned and self.explained is not None:  # the explanations' cells alone, at what they cost
            per_clause, clauses = BYTES_PER_EXPLAINED_CLAUSE, self.explained
        return fixed + (BYTES_PER_KEY * self.keys + 16 * self.prior_keys + per_clause * clauses) / 2**20

    @property
    def cell_megabytes(self) -> float:
        """The attack in histogram space: claims and the model, never the persons."""
        return UNIT_MB + (BYTES_PER_KEY * self.keys + 16 * self.prior_keys
                          + BYTES_PER_ENTRY * self.combinations * self.cells) / 2**20


def encoding_clauses(problem: Problem) -> int:
    """Clauses of the SAT encoding of ``problem`` (see :class:`~audit.attacks.engines.sat.SatEngine`), counted
    from the cells' bounds: one-hot and order literals and the lexicographic order per slot, one
    sequential counter per bound of a count cell (about 2 N min(k, N - k) clauses for a bound k), totalizers (N^2) for
    the rows of a numeric cell and one per threshold of a median. A laid-out coupled problem
    (:func:`~audit.problem.coupled.child_sizes`) counts a child's cells over its own slots."""
    n = problem.n_rows[1]
    children = child_sizes(problem)
    per_slot = sum(1 + (d * (d - 1) // 2 if d <= 6 else 3 * d) + d + 3 * (d - 1) + 2 * d for d in problem.sizes)
    total = n * (per_slot + len(problem.edits))
    for c in problem.constraints:
        if c.statistic.kind != "count":
            d = problem.sizes[problem.index(c.statistic.column)]
            bits = max(d, 2).bit_length()
            total += n * n + 20 * n * bits + 2 * (n + 1) * bits
            if c.statistic.kind == "median":
                total += d * n * (n // 2 + 1) + 2 * (n + 1) * d
            continue
        m = n  # the slots the cell is encoded over
        if children is not None:
            if child_total(problem, c) is not None:
                continue  # fixed by the slots
            inside = c.predicate.as_dict().get(problem.child)
            m = n if inside is None else sum(children[b] for b in inside)
        lo, hi = max(int_lo(c.lo, c.lo_open) or 0, 0), int_hi(c.hi, c.hi_open)
        hi = m if hi is None else min(hi, m)
        if hi <= 0:
            total += m
            continue
        total += m * (len(c.predicate.clauses) + 2)
        if 1 < lo < m:
            total += 2 * m * min(lo, m - lo)
        if 0 < hi < m:
            total += 2 * m * min(hi, m - hi)
    return total


def needs_slots(problem: Problem) -> bool:
    """Whether a cell of the unit (a sum, mean or median) needs row slots: a count-only unit is decided
    in histogram space, over atom counts, whatever its number of persons."""
    return any(c.statistic.kind != "count" for c in problem.constraints)


def claim_subsets(problem: Problem, max_columns: int | None) -> int:
    """The column subsets a claim of the unit may be over (a column of one atom is named by no claim)."""
    among = claimable(problem.sizes)
    return (n_subsets(len(among), max_columns) if problem.views is None
            else len(problem.views.subsets(len(problem.sizes), max_columns, among)))


def candidate_keys(problem: Problem, max_columns: int | None) -> int:
    """Candidate claims, at most: the unit's distinct true rows times the column subsets (its size for an ETA)."""
    truth = problem.truth if problem.truth is not None else np.zeros((0, len(problem.sizes)), np.int64)
    return len(distinct_rows(truth)[0]) * claim_subsets(problem, max_columns)


def unit_cost(problem: Problem, options: ExactOptions, prior_rows: np.ndarray | None = None,
              linear: LinearProof | None = None) -> UnitCost:
    """The size of the unit's attack, from its row counts, atoms and cells alone; ``linear``, the unit's linear
    proof when it is built already, says whether its exact counts pin its rows (no search: a smaller estimate)."""
    truth = problem.truth if problem.truth is not None else np.zeros((0, len(problem.sizes)), np.int64)
    subsets = claim_subsets(problem, options.max_columns)
    distinct = len(distinct_rows(truth)[0])
    prior = len(distinct_rows(prior_rows)[0]) if prior_rows is not None and len(prior_rows) else 0
    combinations = edits_support(problem.names, problem.sizes, problem.edits)
    cost = UnitCost(problem.n_rows[1], distinct, distinct * subsets, prior * subsets, encoding_clauses(problem),
                    combinations, 1 + sum(c.statistic.kind == "count" and (c.hi is None or int_hi(c.hi, c.hi_open) > 0)
                                          for c in problem.constraints), needs_slots(problem),  # and the population
                    linear is not None and problem.truth is not None and linear.determines(problem.truth))
    if cost.pinned:
        cost = replace(cost, explained=explained_clauses(problem, options, linear, cost))
    if not cost.slots and too_large(cost, options) is not None:  # to be attacked in cell space: its support
        rows = problem_support(problem)  # after its zero cells too (bounded: None when too large to try)
        cost = cost if rows is None else replace(cost, combinations=len(rows))
    return cost


def explained_clauses(problem: Problem, options: ExactOptions, linear: LinearProof, cost: UnitCost) -> int | None:
    """Clauses the explanations of a unit its exact counts pin encode: none without explanations; else, where
    every cell at :data:`BYTES_PER_PINNED_CLAUSE` would come to :data:`EXPLAINED_FROM_MB` or more, the slots'
    and those of the cells of its explanation targets' linear proofs, where their searches start (z2 at
    --max-rows 1000: 4 of 105 cells, 0.41 M of 14.9 M clauses). None when the bound is smaller or a target
    has no linear proof (its search may assume any cell)."""
    if options.explain == "none":
        return 0
    if PINNED_MB + BYTES_PER_PINNED_CLAUSE * cost.clauses / 2**20 < EXPLAINED_FROM_MB:
        return None
    from .exact import _stated  # (these import this module)
    from .stated import direct_cells
    from .unit_explain import certificate_cells, explain_targets

    table = ClaimTable.of_truth(problem.truth, list(problem.sizes), options.max_columns, problem.views)
    stated = {i for i, _ in _stated(table, direct_cells(problem))}
    verdicts = [Verdict(c, VERIFIED, direct=i in stated) for i, c in enumerate(table.claims)]
    claims = [verdicts[i].claim for i in explain_targets(problem, verdicts, options.explain)]
    known = certificate_cells(linear, claims, {})
    if len(known) < len(claims):
        return None
    cells = set().union(*known.values()) if known else set()
    return encoding_clauses(replace(problem, constraints=tuple(
        c for c in problem.constraints if c.key.rsplit(":", 1)[0] in cells)))


@lru_cache(maxsize=256)
def edits_support(names: tuple[str, ...], sizes: tuple[int, ...], edits: tuple) -> int:
    """How many atom combinations the edits allow (at most :data:`MAX_SUPPORT`): the histogram model's
    rows before the unit's zero cells cut them (cached: the units of a level share their domains)."""
    combinations = 1
    for size in sizes:
        combinations = min(combinations * size, MAX_SUPPORT)
    if combinations >= MAX_SUPPORT or not edits:
        return combinations
    bounds = np.cumsum((0,) + sizes)
    killers = np.array([_flat_of(sizes, names, e) for e in edits], dtype=np.int64).reshape(len(edits), bounds[-1])
    rows = support(killers, bounds)
    return MAX_SUPPORT if rows is None else len(rows)


def too_large(cost: UnitCost, options: ExactOptions) -> str | None:
    """Why the unit's row-slot attack is past ``--max-rows`` or ``--memory-mb``, or None when it is within both."""
    if cost.rows > options.max_rows:
        return f"{cost.rows} rows > --max-rows {options.max_rows}"
    if options.memory_mb is not None and cost.megabytes > options.memory_mb - BASE_MB:
        return (f"estimated {cost.megabytes:,.0f} MB ({cost.keys:,} candidate keys, {cost.clauses:,} clauses) "
                f"> --memory-mb {options.memory_mb} less {BASE_MB} MB for the process")
    return None


def plan(cost: UnitCost, options: ExactOptions, slots: str | None = "") -> tuple[str | None, str | None]:
    """How the unit is attacked: ``(no_slots, refused)``. ``no_slots`` says why a count-only unit is
    attacked in histogram space alone (its row slots past ``--max-rows`` or ``--memory-mb``), None when
    row slots may back the search up; ``refused`` why the unit is too large for either, else None.
    ``slots``: :func:`too_large` of the same cost, when the caller has it ("": not yet)."""
    slots = too_large(cost, options) if slots == "" else slots
    if slots is None:
        return None, None
    if cost.slots:
        return None, slots
    if options.memory_mb is not None and cost.cell_megabytes > options.memory_mb - BASE_MB:
        return slots, (f"estimated {cost.cell_megabytes:,.0f} MB in histogram space ({cost.keys:,} candidate keys, "
                       f"{cost.combinations:,} atom combinations x {cost.cells:,} cells) > --memory-mb "
                       f"{options.memory_mb} less {BASE_MB} MB for the process")
    return f"no row slots ({slots})", None


def unfinished(problem: Problem, options: ExactOptions, status: str, reason: str,
               start: float | None = None) -> UnitResult:
    """A unit the attack did not finish: every candidate claim undecided, listed when there are at
    most :data:`LISTED_MAX` of them, else counted (a lower bound when even counting is too long)."""
    result = UnitResult(problem, status=status, reason=reason)
    if options.intervals and hidden_cells(problem):
        result.intervals_note = f"feasibility intervals not computed: {reason}"
    if problem.truth is not None and len(problem.truth):
        n, exact = count_candidates(problem.truth, options.max_columns, views=problem.views, sizes=problem.sizes)
        keys = len(distinct_rows(problem.truth)[0]) * n_subsets(len(claimable(problem.sizes)), options.max_columns)
        if n <= LISTED_MAX and exact and keys <= 50 * LISTED_MAX:
            result.verdicts = [Verdict(c, UNDECIDED, reason=reason)
                               for c in candidates(problem.truth, options.max_columns, problem.views, problem.sizes)]
        else:
            result.omitted = n
            if not exact:
                result.reason = f"{reason}; at least {n:,} candidate claims (too many to count)"
    result.seconds = time.perf_counter() - start if start is not None else 0.0
    return result


def make_engine(problem: Problem, options: ExactOptions, deadline: float | None = None, verifying: bool = True,
                main: bool = True):
    """The engine named in the options, over this problem; its solver calls give up at ``deadline``
    (SAT; the IP's calls stop at their own time limit). ``verifying``: False when it only explains;
    ``main``: False to build the SAT engine's solver with every cell hard only when first needed."""
    own = {"sat": {"conflicts": options.conflicts, "verifying": verifying, "deadline": deadline, "main": main},
           "ip": {"time_limit": min(60.0, options.unit_seconds or 60.0)}}
    return get_engine(options.engine, problem, seed=options.seed, **own[options.engine])

