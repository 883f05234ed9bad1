"""A count-only unit too large for its histogram model: claims from its histogram, decided by what can be proved.

A county of 100,000 persons publishing four linked tables has about 120,000 atom combinations and
8,800 cells: its support and cells do not fit the dense histogram model of :mod:`audit.attacks.implied`.
Such a unit is still audited, at a cost bounded by its tables:

* **Claims** are the true atom combinations of small counts (``m <= SMALL_COUNT``, the groups the
  rules read: singletons, and full records below ``full_records.threshold``, at most 10), keyed by
  atom combination over the distinct rows, never one per person (:meth:`ClaimTable.of_truth`).
* **Direct**: a published exact count that states the claim verifies it.
* **Refuted** by two persons exchanging values (:mod:`audit.attacks.exchanges`): the exchanged data
  reproduce every cell and edit, and the claim's count changes.
* **Verified** over a *relaxation*: the unit restricted to the columns of one table (the cells and
  edits that name only those columns), small enough for :class:`LinearProof`. Every dataset of the
  release projects to a dataset of the relaxation, so a count proved there (one dataset, an exact
  combination of cells, or two LP bounds with checked certificates) holds for the release. Its
  datasets are not the release's: nothing is refuted there.
* What is left is **undecided**, never safe.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ..problem.build import Problem
from ..problem.claims import UNDECIDED, VERIFIED, Claim, ClaimTable, Verdict, distinct_rows, n_subsets
from .exchanges import Exchanges, exchange_refuted
from .implied import LinearProof
from .intervals import Interval, feasibility_intervals, hidden_cells, outer_range
from .regroup import regroup_refuted
from .stated import direct_cells
from .unit import BASE_MB, BYTES_PER_ENTRY, UnitResult
from .unit_explain import explain_targets

SMALL_COUNT = 9  # claims of counts up to this: singletons, and full records under full_records.threshold (at most 10)
RELAXED_ROWS = 20_000  # atom combinations a relaxation may hold (its dense model: cells x combinations)


MAX_KEYS = 50_000_000  # rows x column subsets: past it the claims are not listed (the unit stays too large)


def fits_large(problem: Problem, options) -> bool:
    """Whether the unit may be decided here: its own count tables (no coupled views or joint model, no
    wide column's sums), the confidential rows at hand, the linear pass and histogram search on, and its
    claims' keys (rows x column subsets) few enough to list."""
    return (problem.views is None and problem.truth is not None
            and len(problem.truth) * n_subsets(len(problem.domains), options.max_columns) <= MAX_KEYS
            and problem.joint is None and not problem.proof
            and not problem.values  # an exchange or a part would not keep a wide column's sums
            and options.linear and options.histogram and all(c.statistic.kind == "count" for c in problem.constraints))


def large_claims(problem: Problem, max_columns: int | None) -> ClaimTable:
    """The unit's true claims of small counts, keyed by atom combination."""
    return ClaimTable.of_truth(problem.truth, list(problem.sizes), max_columns, None, cap=SMALL_COUNT)


def relaxation(problem: Problem, columns: tuple[int, ...]) -> Problem:
    """The unit over ``columns`` alone, with the cells and edits that name no other column: every dataset
    of the unit, so restricted, is one of it (a relaxation: its proofs hold for the unit)."""
    names = {problem.names[c] for c in columns}
    inside = tuple(c for c in problem.constraints if set(c.predicate.columns) <= names)
    edits = tuple(e for e in problem.edits if set(e.columns) <= names)
    return Problem(problem.level, problem.geo, tuple(problem.domains[c] for c in columns), problem.n_rows, inside,
                   edits, problem.truth[:, list(columns)])


def decide_large(problem: Problem, table: ClaimTable, late, reason: str,
                 budget: float = float("inf")) -> tuple[list[Verdict], int, dict]:
    """Verdicts on ``table``'s claims (verified and undecided ones), the number refuted, and for each claim
    verified over a relaxation its proof: ``(linear, claim there, cells mask or None)`` for explanations.
    ``late(phase)``: why the unit must stop, else None (the work budget); ``budget``: bytes a relaxation's
    model may hold."""
    claims = table.claims
    verdicts: list[Verdict] = []
    direct = direct_cells(problem)
    open_ = []
    for i, claim in enumerate(claims):
        hit = direct.get(claim.assignment)
        if hit is not None and hit[0] == claim.m:
            verdicts.append(Verdict(claim, VERIFIED, (hit[1],), True, direct=True))
        else:
            open_.append(i)
    pending = np.array(open_, dtype=np.int64)
    subsets = list(dict.fromkeys(c.columns for c in claims))
    index = {cols: k for k, cols in enumerate(subsets)}
    subset_of = np.array([index[c.columns] for c in claims], dtype=np.int64)
    rows, weights = distinct_rows(problem.truth)
    gone = exchange_refuted(Exchanges(problem, rows, weights), table, subsets, subset_of, pending)
    refuted_before = int(gone.sum())
    pending = pending[~gone]
    gone = regroup_refuted(problem, table, pending, late, budget=budget)
    refuted, pending = refuted_before + int(gone.sum()), pending[~gone]
    proofs: dict = {}
    for cols in _relaxations(problem, budget):
        why = late("proofs over relaxations")
        if why:
            reason = why
            break
        inside = [k for k in pending.tolist() if set(claims[k].columns) <= set(cols)]
        if not inside:
            continue
        linear = LinearProof.of(relaxation(problem, cols))
        if linear is None:
            continue
        at = {c: k for k, c in enumerate(cols)}
        local = [Claim(tuple((at[c], v) for c, v in claims[k].assignment), claims[k].m) for k in inside]
        done = _prove(linear, local, late)
        for k, claim, used in zip(inside, local, done):
            if used is not False:
                verdicts.append(Verdict(claims[k], VERIFIED))
                proofs[claims[k]] = (linear, claim, used)
        pending = np.setdiff1d(pending, [k for k, used in zip(inside, done) if used is not False])
    reason = (late("proofs over relaxations") or reason) if len(pending) else reason
    verdicts += [Verdict(claims[k], UNDECIDED, reason=reason) for k in pending.tolist()]
    return verdicts, refuted, proofs


def _relaxations(problem: Problem, budget: float) -> list[tuple[int, ...]]:
    """The column sets to relax onto: each largest set of columns the cells name (a table's), small
    enough to hold (:data:`RELAXED_ROWS`, and its model within ``budget`` bytes). A claim over columns
    that no table holds is left to the exchanges and parts: a relaxation onto its own columns keeps only
    margins, which prove no small count."""
    named = {tuple(sorted(problem.index(n) for n in c.predicate.columns)) for c in problem.constraints}
    tables = sorted((k for k in named if k and not any(set(k) < set(o) for o in named)), key=len, reverse=True)
    return [cols for cols in tables if np.prod([problem.sizes[c] for c in cols], dtype=float) <= RELAXED_ROWS
            and _entries(problem, cols) * BYTES_PER_ENTRY <= budget]


def _entries(problem: Problem, cols: tuple[int, ...]) -> float:
    """Cells x atom combinations of the relaxation onto ``cols``: its dense model's entries."""
    names = {problem.names[c] for c in cols}
    cells = sum(set(c.predicate.columns) <= names for c in problem.constraints) + 1
    return cells * float(np.prod([problem.sizes[c] for c in cols], dtype=float))


def _prove(linear: LinearProof, claims: list[Claim], late) -> list:
    """Per claim, over a relaxation: None (proved: one dataset), its certificate's cells (a mask) or
    False (not proved). Nothing is refuted: the relaxation's datasets need not be the unit's."""
    if linear.determines(linear.problem.truth):
        return [None] * len(claims)
    out = linear.combine(claims)
    for k, claim in enumerate(claims):
        if out[k] is None:
            if late("proofs over relaxations"):
                out[k] = False
                continue
            found = linear.bound(claim)
            out[k] = found[1] if found is not None and found[0] == VERIFIED else False
    return out


def outer_intervals(problem: Problem, budget: float) -> dict[str, Interval]:
    """Each hidden count's interval as a proved outer bound (``certified`` False): the extremes over the
    relaxation onto its table's columns (its optima are not the unit's datasets, so no end is called
    exact), else its published range and the population."""
    cells = {k: c for k, c in hidden_cells(problem).items() if c.statistic.kind == "count"}
    out: dict[str, Interval] = {}
    for cols in _relaxations(problem, budget):
        names = {problem.names[c] for c in cols}
        inside = [k for k, c in cells.items() if k not in out and set(c.predicate.columns) <= names]
        if not inside:
            continue
        sub = relaxation(problem, cols)
        found = feasibility_intervals(sub, LinearProof.of(sub)) or {}
        for k in inside:
            if k in found:
                out[k] = Interval(found[k].lo, found[k].hi, False, found[k].value)
    for k, c in cells.items():
        if k not in out:
            lo, hi = outer_range(problem, c)
            value = int(problem.row_mask(problem.truth, c.predicate).sum())
            out[k] = Interval(int(lo), int(hi), False, value)
    return out


def explain_large(verdicts: list[Verdict], targets: list[int], proofs: dict) -> list[Verdict]:
    """The verdicts with each target's relaxation proof cells (sound, not minimal) where it has them."""
    out = list(verdicts)
    for i in targets:
        proof = proofs.get(verdicts[i].claim)
        cells = _cells(*proof) if proof is not None else None
        if cells:
            out[i] = Verdict(verdicts[i].claim, VERIFIED, cells, False)
    return out


def _cells(linear: LinearProof, claim: Claim, used) -> tuple[str, ...] | None:
    """The cells of a relaxation's proof of ``claim`` (``used``: :func:`_prove`'s answer for it)."""
    if used is None:
        used = linear.combine([claim])[0]
    if used is None:
        return None
    return linear.explain([claim], np.array([used]))[0] or None


def relaxation_proofs(problem: Problem, budget: float = float("inf")) -> Callable[[Claim], tuple[str, ...] | None]:
    """Claim -> the cells of its proof over the relaxation onto a table's columns that holds it (sound, not
    minimal: every dataset of the unit projects to one of the relaxation), or None; the relaxations'
    proofs made when first asked. The clauses of a unit too large for its own linear proof: without them
    each of its derived claims gave the clause "suppress any published cell"."""
    linears: dict[tuple[int, ...], LinearProof | None] = {}

    def proof(claim: Claim) -> tuple[str, ...] | None:
        for cols in _relaxations(problem, budget):
            if not set(claim.columns) <= set(cols):
                continue
            if cols not in linears:
                linears[cols] = LinearProof.of(relaxation(problem, cols))
            if linears[cols] is None:
                continue
            at = {c: k for k, c in enumerate(cols)}
            local = Claim(tuple((at[c], v) for c, v in claim.assignment), claim.m)
            used = _prove(linears[cols], [local], lambda phase: None)[0]
            cells = _cells(linears[cols], local, used) if used is not False else None
            if cells:
                return cells
        return None
    return proof


def audit_large(problem: Problem, options, meter, start: float, why: str, prior_rows: np.ndarray | None = None):
    """The unit's :class:`~audit.attacks.unit.UnitResult` by the steps above (``why``: why its histogram model
    is not built, the reason its open claims give)."""
    result = UnitResult(problem, reason=f"audited from its histogram ({why}): claims of counts up to {SMALL_COUNT}, "
                                        f"decided by exchanges of persons' values, re-solved parts and proofs over "
                                        f"each table's columns")
    table = large_claims(problem, options.max_columns)
    reason = f"not decided without the histogram model ({why})"
    budget = float("inf") if options.memory_mb is None else (options.memory_mb - BASE_MB) * 2**20
    result.verdicts, result.refuted, proofs = decide_large(problem, table, meter.late, reason, budget)
    if any(v.status == UNDECIDED and v.reason != reason for v in result.verdicts):
        result.status = "timeout"
    targets = explain_targets(problem, result.verdicts, options.explain)
    result.verdicts = explain_large(result.verdicts, targets, proofs)
    if options.intervals and hidden_cells(problem):
        result.intervals = outer_intervals(problem, budget)
    if prior_rows is not None and len(prior_rows) and table.claims:
        verified = {v.claim for v in result.verdicts if v.status == VERIFIED}
        result.baseline = {c: p for c, p in zip(table.claims, table.baseline(problem.n_rows[1], prior_rows).tolist())
                           if c in verified}
    result.seconds = time.perf_counter() - start
    return result
