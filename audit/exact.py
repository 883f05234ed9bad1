"""Generate-then-verify: the exact attack on one unit, with the defender's advantage of the truth.

Candidates are the claims true in the confidential data; sampled solutions and every counterexample
found prune them; the survivors are verified one by one on the same incremental solver.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from .claims import REFUTED, UNDECIDED, VERIFIED, Claim, ClaimTable, Verdict, candidates
from .errors import AuditError, InconsistentRelease
from .implied import LinearProof
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
    linear: bool = True  # prove claims that are linear combinations of exact counts without search
    attacker: object = None  # audit.attacker.AttackerModel: also measure re-identification (audit.reidentify)

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise AuditError(f"unknown engine '{self.engine}'", "--engine", fix=f"use one of {list(ENGINES)}")
        if self.explain not in ("none", "singletons", "all"):
            raise AuditError(f"unknown explain mode '{self.explain}'", "--explain", "use none, singletons or all")
        for option, value, low, example in (("--max-columns", self.max_columns, 1, 3), ("--seed", self.seed, 0, 0),
                                            ("--conflicts", self.conflicts, 1, 200_000),
                                            ("--max-rows", self.max_rows, 1, 200)):
            if value is not None and not value >= low:
                raise AuditError(f"must be an integer {low} or more, not {value}", option, f"e.g. {option} {example}")
        if not self.unit_seconds > 0:  # also refuses NaN
            raise AuditError(f"must be a number above 0, not {self.unit_seconds}", "--unit-seconds",
                             "e.g. --unit-seconds 120")
        if not self.explain_seconds >= 0:
            raise AuditError(f"must be a number 0 or more, not {self.explain_seconds}", "--explain-seconds",
                             "e.g. --explain-seconds 10")


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
    reidentification: object = None  # audit.reidentify.UnitMeasure, with an attacker model

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

        return IpEngine(problem, seed=options.seed, time_limit=min(60.0, options.unit_seconds))
    from .engines.sat import SatEngine

    return SatEngine(problem, conflicts=options.conflicts, seed=options.seed)


@lru_cache(maxsize=1 << 16)
def _assignment(names: tuple[str, ...], predicate) -> tuple | None:
    """The claim assignment a predicate equals, if it fixes each of its columns to one atom."""
    if not predicate.clauses or any(len(atoms) != 1 for _, atoms in predicate.clauses):
        return None
    return tuple(sorted((names.index(n), next(iter(a))) for n, a in predicate.clauses))


def direct_cells(problem: Problem) -> dict[tuple, tuple[int, str]]:
    """Published exact counts whose predicate is a single-atom assignment: claim key -> (m, cell)."""
    out = {}
    for c in problem.constraints:
        if c.statistic.kind == "count" and c.exact:
            key = _assignment(problem.names, c.predicate)
            if key is not None:
                out.setdefault(key, (int(c.lo), c.key.rsplit(":", 1)[0]))
    return out


def audit_unit(problem: Problem, options: ExactOptions = ExactOptions(),
               prior_rows: np.ndarray | None = None) -> UnitResult:
    """Run generate-then-verify on one unit and return every verdict it reached."""
    start = time.perf_counter()
    result = UnitResult(problem)
    if problem.truth is None:
        raise AuditError("generate-then-verify needs the confidential rows of the unit", "/".join(problem.geo),
                         "audit the unit from its microdata (audit run DATA ...)")
    if problem.n_rows[1] > options.max_rows:
        result.status, result.reason = "too-large", f"{problem.n_rows[1]} rows > --max-rows {options.max_rows}"
        result.verdicts = [Verdict(c, UNDECIDED, reason=result.reason) for c in candidates(problem.truth, options.max_columns)]
        return result
    table = ClaimTable.of_truth(problem.truth, list(problem.sizes), options.max_columns)
    todo = table.claims
    direct = direct_cells(problem)
    rest = []
    for i, claim in enumerate(todo):
        hit = direct.get(claim.assignment)
        if hit is not None and hit[0] == claim.m:
            result.verdicts.append(Verdict(claim, VERIFIED, (hit[1],), True, direct=True))
        else:
            rest.append(i)
    pending = np.array(rest, dtype=np.int64)  # positions in todo of the claims still open
    linear = LinearProof.of(problem) if options.linear else None
    engine, certificates = None, {}
    if linear is not None and linear.determines(problem.truth):
        # the exact counts pin every row: one dataset, so every true claim is verified
        result.solutions, result.exhausted = 1, True
        result.verdicts += [Verdict(todo[i], VERIFIED) for i in pending]
    else:
        engine = make_engine(problem, options)
        certificates = _search(engine, linear, problem, options, result, table, pending, start)
    _explain(engine, result, options, linear, certificates)
    if options.attacker is not None and problem.level == options.attacker.geography:
        from .reidentify import measure_exact

        engines = [engine]

        def verify(claim: Claim) -> Verdict:  # what the verdicts leave open, on the same solver
            if engines[0] is None:
                engines[0] = make_engine(problem, options)
            return engines[0].verify(claim, explain="none")

        result.reidentification = measure_exact(result, options.attacker, prior_rows, verify)
    if prior_rows is not None and len(prior_rows) and todo:
        verified = {v.claim for v in result.verified}
        result.baseline = {c: p for c, p in zip(todo, table.baseline(problem.n_rows[1], prior_rows).tolist())
                           if c in verified}
    result.seconds = time.perf_counter() - start
    return result


def _search(engine, linear: LinearProof | None, problem: Problem, options: ExactOptions, result: UnitResult,
            table: ClaimTable, pending: np.ndarray, start: float) -> dict[Claim, np.ndarray]:
    """Decide the open claims with the solver's datasets, linear proofs and claim-by-claim search.

    Returns the linear certificates of the claims they verified (cell masks, for explanations).
    """
    todo = table.claims
    try:
        first = engine.solve()
    except TimeoutError as err:
        # a budget ran out, or the solver's dataset failed the exact check: the confidential rows, when
        # they reproduce the release, are a dataset all the same, and each claim is decided on its own
        if problem.violations(problem.truth):
            return _undecided(result, todo, pending, str(err))
        first = problem.truth
    if first is None:
        if not problem.violations(problem.truth):  # then no "infeasible" from this solver can be trusted
            return _undecided(result, todo, pending,
                              "the solver found no dataset, yet the confidential rows reproduce the release")
        raise InconsistentRelease(f"no dataset reproduces the published values: conflicting cells "
                                  f"{engine.conflicting_cells()}", f"unit {'/'.join(problem.geo)}",
                                  "check those cells' published values against the schema's edits")
    deadline = start + options.unit_seconds
    universe, found = [], engine.solutions(options.solution_cap + 1)
    try:
        for rows in found:
            universe.append(rows)
            if time.perf_counter() > deadline:
                break
    finally:
        found.close()
    result.solutions = min(len(universe), options.solution_cap)
    result.exhausted = len(universe) <= options.solution_cap and engine.last_exhausted
    if result.exhausted:
        # every consistent dataset is known: a claim is verified iff it holds in all of them
        for rows in universe:
            pending, gone = _prune(table, pending, rows)
            result.refuted += gone
        result.verdicts += [Verdict(todo[i], VERIFIED) for i in pending]
        pending = pending[:0]
    samples = options.samples if len(pending) and time.perf_counter() < deadline else 0
    pool = [first] + universe + engine.sample(samples, options.seed)
    for rows in pool:
        pending, gone = _prune(table, pending, rows)
        result.refuted += gone
    certificates: dict[Claim, np.ndarray] = {}  # cells of the linear proofs, should the explainer stall
    if linear is not None and len(pending):
        proofs = linear.combine([todo[i] for i in pending])
        for i, used in zip(pending, proofs):
            if used is not None:
                certificates[todo[i]] = used
                result.verdicts.append(Verdict(todo[i], VERIFIED))
        pending = np.array([i for i, used in zip(pending, proofs) if used is None], dtype=np.int64)
    j = 0
    while j < len(pending):
        claim = todo[pending[j]]
        if time.perf_counter() > deadline:
            result.verdicts += [Verdict(todo[i], UNDECIDED, reason="unit time limit reached") for i in pending[j:]]
            break
        verdict = _bound(linear, problem, claim) if linear is not None else None
        if isinstance(verdict, np.ndarray):
            certificates[claim] = verdict
            verdict = Verdict(claim, VERIFIED)
        if verdict is None:
            verdict = engine.verify(claim, explain="none")
        if verdict.status == REFUTED:
            result.refuted += 1
            later, gone = _prune(table, pending[j + 1:], verdict.counterexample)
            result.refuted += gone
            pending = np.concatenate([pending[: j + 1], later])
        else:
            result.verdicts.append(verdict)
        j += 1
    return certificates


def _undecided(result: UnitResult, todo: list[Claim], pending: np.ndarray, reason: str) -> dict:
    """Leave every open claim undecided, with the reason (also the unit's)."""
    result.reason = reason
    result.verdicts += [Verdict(todo[i], UNDECIDED, reason=reason) for i in pending]
    return {}


def _explain(engine, result: UnitResult, options: ExactOptions, linear: LinearProof | None,
             certificates: dict) -> None:
    """Attach explaining cells to verified derived claims, most columns first, within the time budget.

    A claim the solver cannot explain in time keeps the cells of a linear proof, when it has one
    (sound, not minimal).
    """
    if options.explain == "none":
        return
    order = sorted((i for i, v in enumerate(result.verdicts) if v.status == VERIFIED and not v.direct
                    and (options.explain == "all" or v.claim.singleton)),
                   key=lambda i: (-len(result.verdicts[i].claim.assignment), i))
    if order and engine is None:
        engine = make_engine(result.problem, options)
    stop = time.perf_counter() + options.explain_seconds
    stalled = []
    for i in order:
        verdict = result.verdicts[i]
        cells, minimal = engine.explain(verdict.claim) if time.perf_counter() < stop else ((), False)
        if cells:
            result.verdicts[i] = replace(verdict, cells=cells, minimal=minimal)
        else:
            stalled.append(i)
    if stalled and linear is not None:
        claims = [result.verdicts[i].claim for i in stalled]
        missing = [c for c in claims if c not in certificates]
        certificates = {**certificates, **{c: u for c, u in zip(missing, linear.combine(missing)) if u is not None}}
        known = [(i, c) for i, c in zip(stalled, claims) if c in certificates]
        if known:
            found = linear.explain([c for _, c in known], np.array([certificates[c] for _, c in known]))
            for (i, _), cells in zip(known, found):
                result.verdicts[i] = replace(result.verdicts[i], cells=cells, minimal=False)


def _bound(linear: LinearProof, problem: Problem, claim: Claim) -> Verdict | np.ndarray | None:
    """The linear-programming verdict on a claim: a refutation, the certificate's cells (a mask) when
    verified, or None when the bounds do not settle it."""
    found = linear.bound(claim)
    if found is None:
        return None
    status, info = found
    if status == VERIFIED:
        return info
    if any(c.statistic.kind != "count" for c in problem.constraints) and problem.violations(info):
        return None  # an integral optimum that breaks a mean, sum or median cell
    return Verdict(claim, REFUTED, counterexample=info)


def _prune(table: ClaimTable, idx: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """The claims at ``idx`` that the dataset does not contradict, and how many it does."""
    if not len(idx):
        return idx, 0
    kept = idx[~table.refuted(idx, rows)]
    return kept, len(idx) - len(kept)
