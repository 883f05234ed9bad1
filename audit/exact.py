"""Generate-then-verify: the exact attack on one unit, with the defender's advantage of the truth.

Candidates are the claims true in the confidential data; sampled solutions and every counterexample
found prune them; the survivors are verified one by one on the same incremental solver.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from .claims import REFUTED, UNDECIDED, VERIFIED, Claim, ClaimTable, Verdict, baseline_probability, candidates
from .errors import AuditError, InconsistentRelease
from .problem import Problem

ENGINES = ("sat", "ip")


@dataclass(frozen=True)
class ExactOptions:
    """Knobs of the exact attack; every one is reported in the findings."""

    engine: str = "sat"
    max_columns: int | None = None
    samples: int = 32
    seed: int = 0
    conflicts: int = 200_000
    unit_seconds: float = 120.0
    solution_cap: int = 16  # datasets enumerated: up to this many decide every claim at once
    explain: str = "singletons"  # none | singletons | all: which verified claims get explaining cells
    explain_seconds: float = 10.0
    max_rows: int = 200

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise AuditError(f"unknown engine '{self.engine}'", fix=f"use one of {list(ENGINES)}")
        if self.max_columns is not None and self.max_columns < 1:
            raise AuditError("--max-columns must be at least 1")
        if self.explain not in ("none", "singletons", "all"):
            raise AuditError(f"unknown explain mode '{self.explain}'", fix="use none, singletons or all")


@dataclass
class UnitResult:
    """What the exact attack established about one unit."""

    problem: Problem
    verdicts: list[Verdict] = field(default_factory=list)
    refuted: int = 0
    solutions: int = 0
    exhausted: bool = False
    seconds: float = 0.0
    status: str = "done"  # done | too-large | inconsistent
    reason: str = ""
    baseline: dict = field(default_factory=dict)

    @property
    def verified(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == VERIFIED]

    @property
    def undecided(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == UNDECIDED]

    @property
    def reconstructed(self) -> bool:
        return self.exhausted and self.solutions == 1


def make_engine(problem: Problem, options: ExactOptions):
    """The engine named in the options, over this problem."""
    if options.engine == "ip":
        from .engines.ip import IpEngine

        return IpEngine(problem, seed=options.seed)
    from .engines.sat import SatEngine

    return SatEngine(problem, conflicts=options.conflicts, seed=options.seed)


def direct_cells(problem: Problem) -> dict[tuple, tuple[int, str]]:
    """Published exact counts whose predicate is a single-atom assignment: claim key -> (m, cell)."""
    out = {}
    names = problem.names
    for c in problem.constraints:
        if c.statistic.kind != "count" or not c.exact or not c.predicate.clauses:
            continue
        if all(len(atoms) == 1 for _, atoms in c.predicate.clauses):
            key = tuple(sorted((names.index(n), next(iter(a))) for n, a in c.predicate.clauses))
            out.setdefault(key, (int(c.lo), c.key.rsplit(":", 1)[0]))
    return out


def _volume(clauses: dict, sizes: list[int]) -> int:
    out = 1
    for c, size in enumerate(sizes):
        out *= len(clauses[c]) if c in clauses else size
    return out


class CellSums:
    """Verifies claims whose rows are a disjoint union of exactly published cells, without search.

    The claim's count is then the sum of the cells' values: implied by the release (those cells are
    its explanation). Cells are taken greedily, largest first, within each table, then across tables.
    """

    def __init__(self, problem: Problem):
        names = problem.names
        self.sizes = [len(d) for d in problem.domains]
        self.cells = []  # (table, cell key, {column index: atom set}, value)
        self.index: dict[tuple[int, int], set[int]] = {}  # (column, atom) -> cells fixing that column to it
        for c in problem.constraints:
            if c.statistic.kind == "count" and c.exact:
                clauses = {names.index(n): a for n, a in c.predicate.clauses}
                for col, atoms in clauses.items():
                    if len(atoms) == 1:
                        self.index.setdefault((col, next(iter(atoms))), set()).add(len(self.cells))
                self.cells.append((c.key.split(":", 1)[0], c.key.rsplit(":", 1)[0], clauses, int(c.lo)))

    def explain(self, claim: Claim) -> tuple[str, ...] | None:
        target = {c: frozenset([v]) for c, v in claim.assignment}
        ids = None
        for key in claim.assignment:
            ids = self.index.get(key, set()) if ids is None else ids & self.index.get(key, set())
            if not ids:
                return None
        inside = [self.cells[i] for i in sorted(ids)]
        goal = _volume(target, self.sizes)
        groups: dict[str, list] = {}
        for cell in inside:
            groups.setdefault(cell[0], []).append(cell)
        for group in list(groups.values()) + [inside]:
            chosen, volume = [], 0
            for cell in sorted(group, key=lambda c: -_volume(c[2], self.sizes)):
                if all(any(col in cell[2] and col in other[2] and not cell[2][col] & other[2][col]
                           for col in range(len(self.sizes))) for other in chosen):
                    chosen.append(cell)
                    volume += _volume(cell[2], self.sizes)
                    if volume == goal:
                        if sum(c[3] for c in chosen) != claim.m:
                            raise AssertionError(f"published cells disagree with the data on {claim}")
                        return tuple(sorted(c[1] for c in chosen))
        return None


def audit_unit(problem: Problem, options: ExactOptions = ExactOptions(),
               prior_rows: np.ndarray | None = None) -> UnitResult:
    """Run generate-then-verify on one unit and return every verdict it reached."""
    start = time.perf_counter()
    result = UnitResult(problem)
    if problem.truth is None:
        raise AuditError("generate-then-verify needs the confidential rows of the unit")
    if problem.n_rows[1] > options.max_rows:
        result.status, result.reason = "too-large", f"{problem.n_rows[1]} rows > --max-rows {options.max_rows}"
        result.verdicts = [Verdict(c, UNDECIDED, reason=result.reason) for c in candidates(problem.truth, options.max_columns)]
        return result
    engine = make_engine(problem, options)
    first = engine.solve()
    if first is None:
        raise InconsistentRelease(f"no dataset reproduces the published values of unit {'/'.join(problem.geo)}: "
                                  f"conflicting cells {engine.conflicting_cells()}")
    todo = candidates(problem.truth, options.max_columns)
    table = ClaimTable(todo, [len(d) for d in problem.domains])
    direct = direct_cells(problem)
    pending: list[Claim] = []
    for claim in todo:
        hit = direct.get(claim.assignment)
        if hit is not None and hit[0] == claim.m:
            result.verdicts.append(Verdict(claim, VERIFIED, (hit[1],), True, direct=True))
        else:
            pending.append(claim)
    universe = list(engine.solutions(options.solution_cap + 1))
    result.solutions = min(len(universe), options.solution_cap)
    result.exhausted = len(universe) <= options.solution_cap and engine.last_exhausted
    if result.exhausted:
        # every consistent dataset is known: a claim is verified iff it holds in all of them
        for rows in universe:
            pending, gone = _prune(table, pending, rows)
            result.refuted += gone
        result.verdicts += [Verdict(c, VERIFIED) for c in pending]
        pending = []
    pool = [first] + universe + engine.sample(options.samples if pending else 0, options.seed)
    for rows in pool:
        pending, gone = _prune(table, pending, rows)
        result.refuted += gone
    sums = CellSums(problem)
    rest = []
    for claim in pending:
        cells = sums.explain(claim)
        if cells is None:
            rest.append(claim)
        else:
            result.verdicts.append(Verdict(claim, VERIFIED, cells, False))
    pending = rest
    deadline = start + options.unit_seconds
    i = 0
    while i < len(pending):
        claim = pending[i]
        if time.perf_counter() > deadline:
            result.verdicts += [Verdict(c, UNDECIDED, reason="unit time limit reached") for c in pending[i:]]
            break
        verdict = engine.verify(claim, explain="none")
        if verdict.status == REFUTED:
            result.refuted += 1
            rest, gone = _prune(table, pending[i + 1:], verdict.counterexample)
            result.refuted += gone
            pending = pending[: i + 1] + rest
        else:
            result.verdicts.append(verdict)
        i += 1
    _explain(engine, result, options)
    for verdict in result.verified:
        p = baseline_probability(verdict.claim, problem.n_rows[1], prior_rows)
        if p is not None:
            result.baseline[verdict.claim] = p
    result.seconds = time.perf_counter() - start
    return result


def _explain(engine, result: UnitResult, options: ExactOptions) -> None:
    """Attach explaining cells to verified derived claims, most columns first, within the time budget."""
    if options.explain == "none":
        return
    order = sorted((i for i, v in enumerate(result.verdicts) if v.status == VERIFIED and not v.direct
                    and (options.explain == "all" or v.claim.singleton)),
                   key=lambda i: (-len(result.verdicts[i].claim.assignment), i))
    stop = time.perf_counter() + options.explain_seconds
    for i in order:
        if time.perf_counter() > stop:
            break
        verdict = result.verdicts[i]
        cells, minimal = engine.explain(verdict.claim)
        result.verdicts[i] = replace(verdict, cells=cells, minimal=minimal)


def _prune(table: ClaimTable, claims: list[Claim], rows: np.ndarray) -> tuple[list[Claim], int]:
    if not claims:
        return claims, 0
    flags = table.refuted(claims, rows)
    kept = [c for c, bad in zip(claims, flags) if not bad]
    return kept, len(claims) - len(kept)
