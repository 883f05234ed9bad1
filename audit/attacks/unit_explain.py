"""Explaining cells of one unit's verified claims: solver cores within a work budget, else (and in
cell space, without row slots, always) the cells of a checked linear proof, sound and not minimal."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..problem.build import Problem
from ..problem.claims import VERIFIED, Claim, Verdict, distinct_rows
from .implied import LinearProof
from .unit import ExactOptions, UnitResult, make_engine


def explain_targets(problem: Problem, verdicts: list[Verdict], mode: str) -> list[int]:
    """Positions of the verdicts to explain, most columns first.

    ``records``: per true record, the verified derived singleton over the most columns (the first
    on ties); ``singletons``: every verified derived singleton; ``all``: every verified derived claim.
    """
    if mode == "none":
        return []
    by_width: dict[int, list[int]] = {}  # columns -> positions, in order: no sort of every verdict
    for i, v in enumerate(verdicts):
        if (mode == "all" or v.claim.m == 1) and v.status == VERIFIED and not v.direct:
            by_width.setdefault(len(v.claim.assignment), []).append(i)
    picked = [i for width in sorted(by_width, reverse=True) for i in by_width[width]]
    if mode != "records":
        return picked
    # most columns first, so a record's first singleton is its pick; done once every record that can
    # have a singleton (one not repeated in the data) has one
    truth = problem.truth
    times = distinct_rows(truth)[1]
    unique = int((times == 1).sum())
    rows: dict[tuple, dict] = {}  # columns -> their values -> the record (a singleton's values are unique)
    best: dict[int, int] = {}
    for i in picked:
        assignment = verdicts[i].claim.assignment
        columns = tuple(c for c, _ in assignment)
        values = rows.get(columns)
        if values is None:
            values = rows[columns] = {tuple(r): k for k, r in enumerate(truth[:, list(columns)].tolist())}
        record = values[tuple(a for _, a in assignment)]
        if record not in best:
            best[record] = i
            if len(best) == unique:
                break
    return sorted(best.values(), key=lambda i: (-len(verdicts[i].claim.assignment), i))


def _explain(engine, result: UnitResult, options: ExactOptions, linear: LinearProof | None,
             certificates: dict) -> None:
    """Attach explaining cells to the verified claims :func:`explain_targets` picks, within the unit's
    work budget. In a unit settled by linear algebra every claim's search starts from its linear
    proof's cells; elsewhere they are the fallback when the solver finds no core. A claim keeps them
    (sound, not minimal) when the budget runs out."""
    targets = explain_targets(result.problem, result.verdicts, options.explain)
    if not targets:
        return
    claims = [result.verdicts[i].claim for i in targets]
    known = {}
    if engine is not None:
        engine.deadline = None  # explanations are bounded by solver work, so they do not depend on the clock
    if engine is None:  # one dataset: every claim is a combination of exact counts, found in one pass
        engine = make_engine(result.problem, options, verifying=False)
        known = certificate_cells(linear, claims, certificates)
        explainer = engine.explainer(options.explain_budget)
    elif options.engine == "sat":  # small checks on a solver that holds only the cells they assume
        explainer = make_engine(result.problem, options, verifying=False).explainer(options.explain_budget, engine)
    else:
        explainer = engine.explainer(options.explain_budget)
    stalled = []
    for i, claim in zip(targets, claims):
        lazy = (lambda c=claim: certificate_cells(linear, [c], certificates).get(c)) if linear else None
        cells, minimal = explainer.explain(claim, known.get(claim), lazy)
        if cells:
            result.verdicts[i] = replace(result.verdicts[i], cells=cells, minimal=minimal)
        else:
            stalled.append(i)
    if stalled and linear is not None:  # the budget ran out: the cells of a linear proof, when there is one
        _linear_cells(result, stalled, linear, known or certificate_cells(
            linear, [result.verdicts[i].claim for i in stalled], certificates))


def _linear_cells(result: UnitResult, targets: list[int], linear: LinearProof, found: dict) -> None:
    """Give the verdicts at ``targets`` the cells of their linear proofs in ``found`` (sound, not minimal)."""
    for i in targets:
        cells = found.get(result.verdicts[i].claim)
        if cells:
            result.verdicts[i] = replace(result.verdicts[i], cells=cells, minimal=False)


def _explain_linear(result: UnitResult, options: ExactOptions, linear: LinearProof | None, certificates: dict) -> None:
    """Explanations without row slots: each target's linear-proof cells, where it has a linear proof."""
    targets = explain_targets(result.problem, result.verdicts, options.explain)
    if targets and linear is not None:
        _linear_cells(result, targets, linear,
                      certificate_cells(linear, [result.verdicts[i].claim for i in targets], certificates))


def _explain_proved(result: UnitResult, options: ExactOptions) -> None:
    """Explaining cells of the claims of a unit proved jointly (:class:`audit.attacks.joint_trace.ProofCells`): the
    cells its matching atoms' counts were derived from. Sound, not minimal."""
    why = result.problem.proof_cells
    if why is None:
        return
    for i in explain_targets(result.problem, result.verdicts, options.explain):
        cells = why.explain(result.verdicts[i].claim.assignment)
        if cells:
            result.verdicts[i] = replace(result.verdicts[i], cells=cells, minimal=False)


def certificate_cells(linear: LinearProof, claims: list[Claim], certificates: dict) -> dict[Claim, tuple[str, ...]]:
    """Cells of a checked linear proof of each claim that has one (the search's, else a combination)."""
    missing = [c for c in claims if c not in certificates]
    found = {**certificates, **{c: u for c, u in zip(missing, linear.combine(missing)) if u is not None}}
    known = [c for c in claims if c in found]
    if not known:
        return {}
    return dict(zip(known, linear.explain(known, np.array([found[c] for c in known]))))
