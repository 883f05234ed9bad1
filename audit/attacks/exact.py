"""Generate-then-verify: the exact attack on one unit, with the defender's advantage of the truth.

Candidates are the claims true in the confidential data; sampled solutions and every counterexample
found prune them; the survivors are verified one by one on the same incremental solver.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..errors import AuditError, InconsistentRelease
from ..problem.build import Problem
from ..problem.claims import REFUTED, UNDECIDED, VERIFIED, Claim, ClaimTable, Verdict, stated_verdicts
from .engines.histogram import HistogramEngine
from .implied import MAX_SUPPORT, LinearProof
from .intervals import feasibility_intervals, hidden_cells
from .joint_claims import decide_open
from .large import audit_large, fits_large
from . import pulse, unit_memo
from .reidentify import measure_exact
from .stated import direct_cells
from .values import as_values, audit_values, unenumerated
from .unit_explain import _explain, _explain_linear, _explain_proved, explain_targets  # noqa: F401 (explain_targets: the API)
from .unit import (ENUMERATION_NODES, SECONDS_PER_CLAUSE, ExactOptions, Meter, UnitResult, make_engine, plan,
                   too_large, unfinished, unit_cost)


def audit_unit(problem: Problem, options: ExactOptions = ExactOptions(),
               prior_rows: np.ndarray | None = None, linear: LinearProof | None = None) -> UnitResult:
    """Run generate-then-verify on one unit and return every verdict it reached (a unit with sums, means
    or medians of a wide column, or of a column no cell selects on in a unit past ``--max-rows``: through
    its counts, :mod:`audit.attacks.values`), noting its progress (:mod:`audit.attacks.pulse`) as it goes.
    ``linear``: the unit's linear proof when the caller built it. A coarser unit's claims across its
    children's tables that its problem does not pose (``problem.uncoupled``, see
    :mod:`audit.attacks.joint_problems`) are counted undecided."""
    try:
        loose = unenumerated(problem, options)  # past --max-rows, numeric cells no cell selects on: as wide ones
        if loose:
            problem, prior_rows, linear = *as_values(problem, loose, prior_rows), None
        if problem.values:
            result = audit_values(problem, options, prior_rows, audit_counts)
        else:
            result = audit_counts(problem, options, prior_rows, linear)
    finally:
        pulse.done()
    if problem.uncoupled:
        why = (f"at least {problem.uncoupled:,} claims across this {problem.level}'s and its child units' tables not decided: "
               f"past --max-rows {options.max_rows}, and its coupled problem does not fit histogram space")
        result.omitted += problem.uncoupled
        result.reason = f"{result.reason}; {why}" if result.reason else why
    return result


def audit_counts(problem: Problem, options: ExactOptions = ExactOptions(),
                 prior_rows: np.ndarray | None = None, built: LinearProof | None = None) -> UnitResult:
    """Generate-then-verify on one unit whose cells the problem encodes, every verdict it reached
    (``built``: its linear proof when the caller made it).

    The unit is first sized (:func:`unit_cost`, :func:`plan`): a count-only unit whose row slots are
    past ``max_rows`` or ``memory_mb`` is attacked in histogram space alone (what it leaves open is
    undecided), or from its histogram when that model does not fit either (:mod:`audit.attacks.large`);
    any other unit past them is reported too large, every claim undecided, before anything large is built. ``unit_work`` (solver work, :class:`Meter`), and ``unit_seconds`` when given, cover the
    whole unit; when one runs out the claims still open are
    undecided (status ``timeout``).
    """
    start = time.perf_counter()
    memo = unit_memo.key(problem, options) if built is None else None
    kept = unit_memo.recall(memo, problem) if memo is not None else None
    if kept is not None:
        return _again(kept, problem, options, prior_rows, start)
    meter = Meter(options, start)
    deadline = meter.deadline
    if problem.truth is None:
        raise AuditError("generate-then-verify needs the confidential rows of the unit", "/".join(problem.geo),
                         "audit the unit from its microdata (audit run DATA ...)")
    # a unit row slots may hold builds its linear proof first: where its exact counts pin its rows, it is sized
    # without a search
    first = options.linear and not problem.proof and problem.n_rows[1] <= options.max_rows
    early = (built or LinearProof.of(problem)) if first else None
    cost = unit_cost(problem, options, prior_rows, early)
    # a unit proved outside (audit.attacks.joint) needs no search: only its claims are held, not an encoding
    sized = replace(cost, rows=0, clauses=0) if problem.proof else cost
    slots = too_large(sized, options)
    if slots is not None and problem.joint is not None and too_large(replace(cost, rows=0, clauses=0), options) is None:
        return decide_open(problem, options, start, slots)  # a tract left open by the joint solve: its model decides
    no_slots, reason = plan(sized, options, slots)
    if reason is not None and no_slots is not None and fits_large(problem, options):
        return audit_large(problem, options, meter, start, f"{slots}; the histogram model too large: {reason}", prior_rows)
    if reason is not None:
        return unfinished(problem, options, "too-large", reason, start)
    if no_slots and (not options.linear or not options.histogram):
        return unfinished(problem, options, "too-large", f"{no_slots}, and the histogram search is off", start)
    result = UnitResult(problem)
    table = ClaimTable.of_truth(problem.truth, list(problem.sizes), options.max_columns, problem.views)
    todo = table.claims
    stated = _stated(table, direct_cells(problem))
    result.verdicts += stated_verdicts([(todo[i], cell) for i, cell in stated])
    open_ = np.ones(len(todo), dtype=bool)
    open_[[i for i, _ in stated]] = False
    pending = np.flatnonzero(open_).astype(np.int64)  # positions in todo of the claims still open
    unit = "/".join(problem.geo)
    pulse.note(unit, "searching for datasets", len(todo) - len(pending), len(todo))
    late = meter.late
    why = late("listing the candidate claims")
    linear = (early if first else built or LinearProof.of(problem)) if options.linear and not why and not problem.proof else None
    why = why or late("the linear pass")
    engine, certificates, settled, proved, hist = None, {}, False, False, None
    if why:
        result.give_up([todo[i] for i in pending], why)
    elif problem.proof:
        # one dataset, proved jointly with other units' tables and checked to be the true rows
        # (audit.attacks.joint.with_proofs): every true claim is verified with no search, and explained by the
        # cells (this unit's, the coarser unit's, its other children's) the joint propagation derived it from
        settled = proved = True
        result.solutions, result.exhausted = 1, True
        result.verdicts += table.verified(pending)
    elif linear is not None and linear.determines(problem.truth):
        settled = True
        # the exact counts pin every row: one dataset, so every true claim is verified
        result.solutions, result.exhausted = 1, True
        result.verdicts += table.verified(pending)
    elif linear is None and no_slots and fits_large(problem, options):
        return audit_large(problem, options, meter, start, f"{no_slots}; the histogram model too large "
                           f"(support past {MAX_SUPPORT:,} atom combinations)", prior_rows)
    elif linear is None and no_slots:
        result.give_up([todo[i] for i in pending], f"{no_slots}, and the histogram model could not be built "
                       f"(support past {MAX_SUPPORT:,} atom combinations)", status="too-large")
    elif not no_slots and deadline is not None and time.perf_counter() + SECONDS_PER_CLAUSE * cost.clauses > deadline:
        result.give_up([todo[i] for i in pending], f"--unit-seconds {options.unit_seconds:g} too short to build "
                       f"the encoding ({cost.clauses:,} clauses, about {SECONDS_PER_CLAUSE * cost.clauses:.0f} s)")
    else:
        if options.histogram and linear is not None and options.engine == "sat":
            hist = HistogramEngine.of(problem, linear)
        engine, certificates = _search(linear, hist, problem, options, result, table, pending, meter, no_slots)
    if not no_slots and engine is None and not settled and options.explain != "none" and result.verified and result.status == "done":
        engine = make_engine(problem, options, main=False)  # decided in histogram space: cores need the guarded solver
    pulse.note(unit, "explaining verified claims", len(todo), len(todo))
    if proved:
        _explain_proved(result, options)
    elif no_slots:  # no row slots: the cells of each claim's linear proof, where it has one
        _explain_linear(result, options, linear, certificates)
    else:
        _explain(engine, result, options, linear, certificates)
    if options.intervals and hidden_cells(problem):
        pulse.note(unit, "feasibility intervals of hidden cells", len(todo), len(todo))

        def sat():  # the search's SAT engine when it built one, with the cells hard; no deadline, as explanations
            if getattr(engine, "name", None) == "sat" and engine.ensure_main().solver is not None:
                engine.deadline = None
                return engine
            return make_engine(problem, replace(options, engine="sat"))

        # a unit out of work gives its bound searches a deadline already past: they stop at once, on any machine
        spent = result.status == "timeout" or late("the feasibility intervals")
        result.intervals = feasibility_intervals(problem, linear, None if no_slots else sat,
                                                 deadline=start if spent else deadline)
        if result.intervals is None:
            result.intervals_note = ("feasibility intervals not computed: the histogram model could not be built "
                                     "(support too large, or --no-linear)")
    proofs, asked = {}, []
    if options.attacker is not None and problem.level == options.attacker.geography:
        pulse.note(unit, "re-identification", len(todo), len(todo))
        engines = [hist if no_slots else engine]

        def verify(claim: Claim) -> Verdict:  # what the verdicts leave open, on the same solver
            asked.append(claim)
            if proved:  # one dataset: the true rows decide every claim
                return (Verdict(claim, VERIFIED) if claim.count(problem.truth) == claim.m
                        else Verdict(claim, REFUTED, counterexample=problem.truth))
            if no_slots:  # histogram space alone
                if engines[0] is None and linear is not None:
                    engines[0] = HistogramEngine.of(problem, linear)
                found = engines[0].verify(claim) if engines[0] is not None else None
                return found or Verdict(claim, UNDECIDED, reason=f"not decided in histogram space ({no_slots})")
            if engines[0] is None:  # what the datasets found, the linear bound or histogram space decide first
                found = _decided(claim, linear, hist, problem)
                if found is not None:
                    return found
                engines[0] = make_engine(problem, options)
            if getattr(engines[0], "name", None) == "sat":
                engines[0].ensure_main()
            return engines[0].verify(claim, explain="none")

        result.reidentification = measure_exact(result, options.attacker, prior_rows, verify, proofs)
    if memo is not None and result.status == "done" and not asked:
        unit_memo.keep(memo, unit_memo.Kept(*unit_memo.release(problem), table.lean(), replace(result, problem=None),
                                            proofs or None, settled))
    _baselines(result, table, prior_rows, settled)
    result.seconds = time.perf_counter() - start
    return result


def _baselines(result: UnitResult, table: ClaimTable, prior_rows: np.ndarray | None, settled: bool) -> None:
    """Each verified claim's chance of holding in rows drawn from the prior (``settled``: every claim of the
    table is verified, one dataset)."""
    todo = table.claims
    if prior_rows is not None and len(prior_rows) and todo:
        chances = table.baseline(result.problem.n_rows[1], prior_rows).tolist()
        if settled:
            result.baseline = dict(zip(todo, chances))
        else:
            verified = {id(v.claim) for v in result.verdicts if v.status == VERIFIED}  # the verdicts hold todo's claims
            result.baseline = {c: p for c, p in zip(todo, chances) if id(c) in verified}


def _again(kept: unit_memo.Kept, problem: Problem, options: ExactOptions, prior_rows: np.ndarray | None,
           start: float) -> UnitResult:
    """The findings of a unit with the same release and rows as one attacked before (:mod:`.unit_memo`), the
    prior's part worked out for this one."""
    was = kept.result
    result = replace(was, problem=problem, verdicts=list(was.verdicts),
                     intervals=None if was.intervals is None else dict(was.intervals))
    if kept.proofs is not None:
        result.reidentification = measure_exact(result, options.attacker, prior_rows, None, kept.proofs)
    _baselines(result, kept.table, prior_rows, kept.settled)
    result.seconds = time.perf_counter() - start
    return result


def _search(linear: LinearProof | None, hist: HistogramEngine | None, problem: Problem, options: ExactOptions, result: UnitResult,
            table: ClaimTable, pending: np.ndarray, meter: Meter,
            no_slots: str | None = None) -> tuple[object, dict[Claim, np.ndarray]]:
    """Decide the open claims with sampled datasets, linear proofs and claim-by-claim search.

    Histogram space (``hist``, :mod:`audit.attacks.engines.histogram`; None: not used) samples, lists the datasets of units with few
    of them, refutes and proves first when the support is known; the row-slot engine does what it
    leaves open, unless ``no_slots`` says why it may not be built: those claims are then undecided.
    Returns that engine (None if never needed) and the linear certificates of the claims they
    verified (cell masks, for explanations).
    """
    todo = table.claims
    late, deadline = meter.late, meter.deadline
    engine, pool, universe, exhausted = None, [], [], False
    cap = options.solution_cap
    if hist is not None:
        # a sampled dataset is checked exactly only if it counts towards the cap or refutes a claim
        def wanted(rows: np.ndarray) -> bool:
            return len(hist.found) <= cap or bool(table.refuted(pending, rows).any())

        for rows in hist.sample(options.samples if len(pending) else 0, options.seed, wanted):
            pending, gone = _prune(table, pending, rows)
            result.refuted += gone
            if late("sampling"):
                break
        if len(hist.found) <= cap and hist.exact:  # few datasets: list them all (a relaxation may hold many more points)
            universe, exhausted = hist.enumerate(cap, ENUMERATION_NODES)
    if no_slots and hist is None:
        return engine, _undecided(result, todo, pending, f"{no_slots}, and the histogram model could not be built")
    if not no_slots and (hist is None or (not exhausted and len(hist.found) <= cap)):
        # the row-slot engine enumerates, and proves when there are no more
        why = late("building the encoding")
        if why:
            result.give_up([todo[i] for i in pending], why)
            return engine, {}
        engine = make_engine(problem, options, deadline)
        meter.watch(engine)
        try:
            first = engine.solve()
        except TimeoutError as err:
            # a budget ran out, or the solver's dataset failed the exact check: the confidential rows, when
            # they reproduce the release, are a dataset all the same, and each claim is decided on its own
            why = late("the first solve")
            if why:
                result.give_up([todo[i] for i in pending], why)
                return engine, {}
            if problem.violations(problem.truth):
                return engine, _undecided(result, todo, pending, str(err))
            first = problem.truth
        if first is None:
            if not problem.violations(problem.truth):  # then no "infeasible" from this solver can be trusted
                return engine, _undecided(result, todo, pending,
                                          "the solver found no dataset, yet the confidential rows reproduce the release")
            raise InconsistentRelease(f"no dataset reproduces the published values: conflicting cells "
                                      f"{engine.conflicting_cells()}", f"unit {'/'.join(problem.geo)}",
                                      "check those cells' published values against the schema's edits")
        universe, found = [], engine.solutions(cap + 1)
        try:
            for rows in found:
                universe.append(rows)
                if late("enumeration"):
                    break
        finally:
            found.close()
        exhausted = len(universe) <= cap and found.exhausted
        pool.append(first)
        if hist is None:
            samples = options.samples if len(pending) and not late("enumeration") else 0
            pool += engine.sample(samples, options.seed)
    result.solutions = min(max(len(universe), len(hist.found) if hist is not None else 0), cap)
    result.exhausted = exhausted
    if exhausted:
        # every consistent dataset is known: a claim is verified iff it holds in all of them
        for rows in universe:
            pending, gone = _prune(table, pending, rows)
            result.refuted += gone
        result.verdicts += table.verified(pending)
        pending = pending[:0]
    pool += universe
    for rows in pool:
        pending, gone = _prune(table, pending, rows)
        result.refuted += gone
    certificates: dict[Claim, np.ndarray] = {}  # cells of the linear proofs, should the explainer stall
    if linear is not None and len(pending) and not late("sampling"):
        proofs = linear.combine([todo[i] for i in pending])
        for i, used in zip(pending, proofs):
            if used is not None:
                certificates[todo[i]] = used
                result.verdicts.append(Verdict(todo[i], VERIFIED))
        pending = np.array([i for i, used in zip(pending, proofs) if used is None], dtype=np.int64)
    j, unit = 0, "/".join(problem.geo)
    while j < len(pending):
        pulse.note(unit, "claim by claim", len(todo) - len(pending) + j, len(todo))
        claim = todo[pending[j]]
        why = late("claim-by-claim search")
        if why:
            result.give_up([todo[i] for i in pending[j:]], why)
            break
        verdict = _bound(linear, problem, claim) if linear is not None else None
        if isinstance(verdict, np.ndarray):
            certificates[claim] = verdict
            verdict = Verdict(claim, VERIFIED)
        if verdict is None and hist is not None:
            verdict = hist.verify(claim)
        if verdict is None and no_slots:
            verdict = Verdict(claim, UNDECIDED, reason=f"not decided in histogram space ({no_slots})")
        if verdict is None:
            if engine is None:
                engine = make_engine(problem, options, deadline)
                meter.watch(engine)
            verdict = engine.verify(claim, explain="none")
            if verdict.status == UNDECIDED and late("claim-by-claim search"):
                continue  # cut off by the time limit: the next turn gives it up with the rest
        if verdict.status == REFUTED:
            result.refuted += 1
            later, gone = _prune(table, pending[j + 1:], verdict.counterexample)
            result.refuted += gone
            pending = np.concatenate([pending[: j + 1], later])
        else:
            result.verdicts.append(verdict)
        j += 1
    return engine, certificates


def _decided(claim: Claim, linear: LinearProof | None, hist: HistogramEngine | None, problem: Problem) -> Verdict | None:
    """A claim decided without the row-slot engine: refuted by a checked dataset histogram space found, or
    decided by the linear bound or histogram space (each exact where it decides); None otherwise. The
    re-identification measure asks a protection round's unit a few dozen zero counts that the search
    left to them: building the row-slot encoding for them was most of such a round's attack."""
    for rows in hist.found.values() if hist is not None else ():
        if claim.count(rows) != claim.m:
            return Verdict(claim, REFUTED, counterexample=rows)
    verdict = _bound(linear, problem, claim) if linear is not None else None
    if isinstance(verdict, np.ndarray):
        return Verdict(claim, VERIFIED)
    return verdict if verdict is not None or hist is None else hist.verify(claim)


def _stated(table: ClaimTable, direct: dict[tuple, tuple[int, str]]) -> list[tuple[int, str]]:
    """(position in the table, cell) of each claim a published cell states (``direct``: :func:`direct_cells`),
    in the table's order: matched by the table's numeric claim keys, not by hashing every assignment."""
    if not direct or not len(table.claims):
        return []
    if not table.exact:  # keys past int64: by assignment
        return [(i, direct[c.assignment][1]) for i, c in enumerate(table.claims)
                if direct.get(c.assignment, (None,))[0] == c.m]
    strides = table.strides.tolist()
    by_key = {sum((a + 1) * strides[c] for c, a in assignment): hit for assignment, hit in direct.items()}
    found = np.flatnonzero(np.isin(table.keys, np.fromiter(by_key, dtype=np.int64, count=len(by_key))))
    keys, m = table.keys[found].tolist(), table.m[found].tolist()
    return [(i, by_key[k][1]) for i, k, n in zip(found.tolist(), keys, m) if by_key[k][0] == n]


def _undecided(result: UnitResult, todo: list[Claim], pending: np.ndarray, reason: str) -> dict:
    """Leave every open claim undecided, with the reason (also the unit's)."""
    result.reason = reason
    result.verdicts += [Verdict(todo[i], UNDECIDED, reason=reason) for i in pending]
    return {}


def _bound(linear: LinearProof, problem: Problem, claim: Claim) -> Verdict | np.ndarray | None:
    """The linear-programming verdict on a claim: a refutation, the certificate's cells (a mask) when
    verified, or None when the bounds do not settle it."""
    found = linear.bound(claim)
    if found is None:
        return None
    status, info = found
    if status == VERIFIED:
        return info
    if problem.violations(info):
        return None  # an integral optimum that breaks a mean, sum or median cell (or a float slip)
    return Verdict(claim, REFUTED, counterexample=info)


def _prune(table: ClaimTable, idx: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """The claims at ``idx`` that the dataset does not contradict, and how many it does."""
    if not len(idx):
        return idx, 0
    kept = idx[~table.refuted(idx, rows)]
    return kept, len(idx) - len(kept)
