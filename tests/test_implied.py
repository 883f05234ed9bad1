"""Linear proofs (audit/attacks/implied.py) against brute force and against the SAT engine.

A claim the linear pass verifies must hold in every consistent dataset, its explaining cells alone
must imply it, and a refutation it returns must be a dataset that meets every count cell.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from _oracle import all_datasets, random_problem, verified_claims

from audit.problem.claims import VERIFIED, candidates
from audit.attacks.engines.sat import SatEngine
from audit.attacks.exact import ExactOptions, audit_unit
from audit.attacks.implied import LinearProof
from audit.inputs import load_inputs
from audit.problem.build import Problem

ROOT = Path(__file__).resolve().parents[1]


def _restricted(problem: Problem, cells: tuple[str, ...]) -> Problem:
    keep = tuple(c for c in problem.constraints if c.key.rsplit(":", 1)[0] in cells)
    return Problem(problem.level, problem.geo, problem.domains, problem.n_rows, keep, problem.edits)


@pytest.mark.parametrize("seed", range(80))
def test_linear_verdicts_are_sound_and_explained(seed):
    rng = np.random.default_rng(1000 + seed)
    problem = random_problem(rng, max_rows=5, numeric=seed % 2 == 0, n_cells=int(rng.integers(3, 8)))
    truth = verified_claims(problem, all_datasets(problem))
    linear = LinearProof(problem)
    claims = candidates(problem.truth)
    combined = linear.combine(claims)
    proven = []
    for claim, used in zip(claims, combined):
        found = ("verified", used) if used is not None else linear.bound(claim)
        if found is None:
            continue
        status, info = found
        if status == "refuted":
            assert claim.count(info) != claim.m
            broken = problem.violations(info)
            assert not [k for k in broken if k.endswith(":count") or k == "rows"]
            assert broken or claim not in truth
            continue
        assert claim in truth, f"linear proof of a claim that some consistent dataset breaks: {claim}"
        proven.append((claim, info))
    if not proven:
        return
    for (claim, _), cells in zip(proven, linear.explain([c for c, _ in proven], np.array([u for _, u in proven]))):
        assert all(claim.count(d) == claim.m for d in all_datasets(_restricted(problem, cells))), (claim, cells)


@pytest.mark.parametrize("seed", range(60))
def test_sparse_proofs_name_cells_that_imply_the_claim_alone(seed):
    """A sparse proof's cells (its certificates' and the zero cells it needs) imply the claim on their
    own in every dataset over the whole row space, and name no more cells than the basis proof."""
    rng = np.random.default_rng(2000 + seed)
    problem = random_problem(rng, max_rows=5, numeric=seed % 2 == 0, n_cells=int(rng.integers(3, 8)))
    truth = verified_claims(problem, all_datasets(problem))
    linear = LinearProof(problem)
    for claim in candidates(problem.truth):
        cells = linear.sparse(claim)
        if cells is None:
            continue
        assert claim in truth, claim
        assert all(claim.count(d) == claim.m for d in all_datasets(_restricted(problem, cells))), (claim, cells)


@pytest.mark.parametrize("seed", range(40))
def test_support_is_every_row_no_edit_or_zero_cell_forbids(seed):
    rng = np.random.default_rng(seed)
    problem = random_problem(rng, max_rows=4, numeric=False, n_cells=6)
    rows = {tuple(r) for r in LinearProof(problem).rows.tolist()}
    table = np.array(list(itertools.product(*(range(len(d)) for d in problem.domains))), dtype=np.int64)
    alive = np.ones(len(table), dtype=bool)
    for c in problem.constraints:
        if c.statistic.kind == "count" and c.hi is not None and c.hi < 1:
            alive &= ~problem.row_mask(table, c.predicate)
    assert rows == {tuple(r) for r in table[alive].tolist()}


@pytest.mark.parametrize("seed", range(30))
def test_audit_without_enumeration_matches_brute_force(seed):
    """With enumeration and sampling off, every claim goes through the linear pass or the solver."""
    rng = np.random.default_rng(500 + seed)
    problem = random_problem(rng, max_rows=4, numeric=seed % 3 == 0)
    expected = verified_claims(problem, all_datasets(problem))
    result = audit_unit(problem, ExactOptions(solution_cap=0, samples=0, explain="all"))
    assert not result.undecided
    assert {v.claim for v in result.verified} == expected


@pytest.fixture(scope="module")
def household_block():
    folder = ROOT / "samples" / "households"
    problems = load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml").problems()
    return next(p for p in problems if p.geo[-1] == "1004")  # 8 households; some claims need the LP


def test_linear_proofs_agree_with_the_solver_on_a_household_block(household_block):
    """On a real-sized block the linear pass proves many claims; the solver confirms each sampled one."""
    problem = household_block
    linear, engine = LinearProof(problem), SatEngine(problem)
    claims = candidates(problem.truth, max_columns=3)
    combined = linear.combine(claims)
    worlds = [engine.solve()] + engine.sample(16)
    rest = [c for c, used in zip(claims, combined) if used is None and all(c.count(w) == c.m for w in worlds)]
    by_lp = [(c, f) for c in rest if (f := linear.bound(c)) is not None]
    assert sum(u is not None for u in combined) > 50
    assert any(status == "verified" for _, (status, _) in by_lp)
    rng = np.random.default_rng(0)
    sample = [claims[i] for i in rng.choice(len(claims), 40, replace=False) if combined[i] is not None]
    sample += [c for c, (status, _) in by_lp if status == "verified"][:20]
    for claim in sample:
        assert engine.verify(claim, explain="none").status == VERIFIED, claim
    for claim, (status, rows) in by_lp:
        if status == "refuted":
            assert problem.violations(rows) == [] and claim.count(rows) != claim.m


def test_linear_pass_changes_no_verdict_on_household_blocks(household_block):
    with_lp = audit_unit(household_block, ExactOptions(explain="none", solution_cap=0))
    without = audit_unit(household_block, ExactOptions(explain="none", solution_cap=0, linear=False))
    assert not with_lp.undecided and not without.undecided
    assert {v.claim for v in with_lp.verified} == {v.claim for v in without.verified}
    assert with_lp.refuted == without.refuted


def test_a_support_too_large_to_hold_leaves_the_unit_to_the_solver():
    from fractions import Fraction

    from audit.problem.build import Domain
    from audit.specs.query import Predicate, Statistic
    from audit.release.constraints import Constraint

    domains = tuple(Domain(f"c{i}", tuple(frozenset([v]) for v in range(10)), tuple(map(str, range(10))))
                    for i in range(5))  # 100,000 possible rows and nothing published as 0
    truth = np.array([[1, 2, 3, 4, 5], [1, 2, 3, 4, 6]], dtype=np.int64)
    cells = (Constraint("T:all:count", Predicate(()), Statistic(), Fraction(2), Fraction(2)),
             Constraint("T:c0:count", Predicate.of({"c0": [1]}), Statistic(), Fraction(2), Fraction(2)))
    problem = Problem("block", ("1",), domains, (2, 2), cells, (), truth)
    assert LinearProof.of(problem) is None
    result = audit_unit(problem, ExactOptions(explain="none"))
    assert {v.claim for v in result.verified} == {c for c in candidates(truth) if c.columns == (0,)}
