"""The histogram-space engine against brute force, and against the row-slot SAT pipeline."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from _oracle import all_datasets, canonical, random_problem, verified_claims

from audit.problem.claims import REFUTED, VERIFIED, Claim, candidates
from audit.attacks.engines.histogram import HistogramEngine
from audit.attacks.engines.propagate import Propagator
from audit.attacks.exact import ExactOptions, audit_unit
from audit.attacks.implied import LinearProof
from audit.inputs import load_inputs
from audit.problem.build import Domain, Problem
from audit.specs.query import Predicate, Statistic
from audit.release.constraints import Constraint

ROOT = Path(__file__).resolve().parents[1]


def _engine(problem: Problem) -> HistogramEngine:
    engine = HistogramEngine.of(problem, LinearProof(problem))
    assert engine is not None, "the confidential rows reproduce their own release"
    return engine


@pytest.mark.parametrize("seed", range(60))
def test_verdicts_agree_with_brute_force(seed):
    """Refutations carry a dataset that reproduces the release; proofs hold in every dataset; with
    count cells only (the model is then the release itself) every claim is decided, as brute force."""
    rng = np.random.default_rng(3000 + seed)
    numeric = seed % 3 == 0
    problem = random_problem(rng, max_rows=5, numeric=numeric, n_cells=int(rng.integers(3, 8)))
    expected = verified_claims(problem, all_datasets(problem))
    engine = _engine(problem)
    for claim in candidates(problem.truth):
        verdict = engine.verify(claim)
        if verdict is None:
            assert numeric, f"undecided without numeric cells: {claim}"
        elif verdict.status == REFUTED:
            assert problem.violations(verdict.counterexample) == []
            assert claim.count(verdict.counterexample) != claim.m and claim not in expected
        else:
            assert verdict.status == VERIFIED and claim in expected, claim


@pytest.mark.parametrize("seed", range(30))
def test_samples_are_distinct_datasets_of_the_release(seed):
    rng = np.random.default_rng(4000 + seed)
    problem = random_problem(rng, max_rows=5, numeric=seed % 2 == 0, n_cells=int(rng.integers(2, 6)))
    worlds = {canonical(d) for d in all_datasets(problem)}
    engine = _engine(problem)
    sampled = list(engine.sample(8, seed))
    for rows in sampled:
        assert problem.violations(rows) == [] and canonical(rows) in worlds
    found = {canonical(rows) for rows in engine.found.values()}
    assert len(found) == len(engine.found) and found <= worlds
    assert {canonical(rows) for rows in sampled} <= found


@pytest.mark.parametrize("seed", range(25))
def test_enumeration_lists_every_dataset_or_says_it_did_not(seed):
    rng = np.random.default_rng(5000 + seed)
    problem = random_problem(rng, max_rows=5, numeric=False, n_cells=int(rng.integers(2, 7)))
    worlds = {canonical(d) for d in all_datasets(problem)}
    listed, done = _engine(problem).enumerate(len(worlds), 4_000)
    assert done and {canonical(d) for d in listed} == worlds and len(listed) == len(worlds)
    for d in listed:
        assert problem.violations(d) == []
    if len(worlds) > 1:
        assert not _engine(problem).enumerate(len(worlds), 1)[1]  # the root box alone lists one dataset at most
        listed, done = _engine(problem).enumerate(len(worlds) - 1, 4_000)
        assert not done and len(listed) == len(worlds)  # one past the limit: more than it, not how many


@pytest.mark.parametrize("seed", range(40))
def test_propagation_keeps_every_dataset_in_the_box_and_empties_only_empty_boxes(seed):
    """Random boxes of histogram space: a box propagation empties holds no dataset, and every dataset in
    a box it narrows lies in the narrowed box (brute force over every consistent dataset)."""
    rng = np.random.default_rng(7000 + seed)
    problem = random_problem(rng, max_rows=5, numeric=False, n_cells=int(rng.integers(2, 7)))
    linear = LinearProof(problem)
    hists = np.array([linear.histogram(d) for d in all_datasets(problem)])
    propagator = Propagator(linear)
    n = len(linear.rows)
    for _ in range(30):
        lower = rng.integers(0, 3, n) * (rng.random(n) < 0.3)
        upper = np.where(rng.random(n) < 0.5, -1, lower + rng.integers(0, 3, n))
        inside = ((hists >= lower) & ((upper < 0) | (hists <= upper))).all(axis=1)
        box = propagator.tighten(lower, upper)
        if box is None:
            assert not inside.any()
            continue
        lo, hi = box
        assert ((hists[inside] >= lo) & ((hi < 0) | (hists[inside] <= hi))).all()
        assert (lo >= lower).all() and ((upper < 0) | ((hi >= 0) & (hi <= upper))).all()


def _two_triangles() -> Problem:
    """Atoms 0-2 and 3-5 form two triangles whose pairs hold at most one row each; 3 rows in all,
    at most one of atom 6. Halves on every triangle atom fill the relaxation without atom 6, but
    each triangle holds one row at most, so every dataset has exactly one row of atom 6."""
    domains = (Domain("a", tuple(frozenset([v]) for v in range(7)), tuple(map(str, range(7)))),)
    cells = [Constraint("T:all:count", Predicate(()), Statistic(), Fraction(3), Fraction(3)),
             Constraint("T:six:count", Predicate.of({"a": [6]}), Statistic(), Fraction(0), Fraction(1))]
    for k, pair in enumerate([(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)]):
        cells.append(Constraint(f"T:p{k}:count", Predicate.of({"a": list(pair)}), Statistic(), Fraction(0), Fraction(1)))
    return Problem("block", ("1",), domains, (3, 3), tuple(cells), (), np.array([[0], [3], [6]]))


def test_branch_and_bound_proves_what_the_relaxation_cannot():
    problem = _two_triangles()
    claim = Claim(((0, 6),), 1)
    linear = LinearProof(problem)
    assert linear.bound(claim) is None  # the relaxation allows no row of atom 6
    engine = _engine(problem)
    assert engine.counterexample(claim) is None
    engine.nodes = 1
    assert engine._branch(claim, linear.claim_vector(claim), 1) is False  # the root alone proves nothing
    engine.nodes = 64
    assert engine._branch(claim, linear.claim_vector(claim), 1) is True
    assert engine.verify(claim).status == VERIFIED
    worlds = all_datasets(problem)
    assert claim in verified_claims(problem, worlds)
    result = audit_unit(problem, ExactOptions(explain="none", samples=0, solution_cap=0))
    assert {v.claim for v in result.verified} == verified_claims(problem, worlds) and not result.undecided
    listed, done = _engine(problem).enumerate(100, 4_000)  # boxes without integer points close by Farkas rays
    assert done and {canonical(d) for d in listed} == {canonical(d) for d in worlds}


def test_a_farkas_ray_is_checked_exactly():
    """An infeasible box gives a ray whose integer check passes; the same ray proves nothing about a
    feasible box."""
    import highspy

    problem = _two_triangles()
    engine = _engine(problem)
    linear, lp, n = engine.linear, engine._lp, engine.n
    index = {tuple(r): i for i, r in enumerate(linear.rows.tolist())}
    both = np.array([index[(0,)], index[(1,)]], dtype=np.int32)  # a pair of at most one row, asked for two
    lower, upper = np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    lower[both] = 1
    lp.changeColsCost(n, engine._cols, np.zeros(n))
    lp.run()
    lp.setOptionValue("simplex_strategy", 1)  # as in branch and bound: the dual simplex yields rays
    lp.changeColsBounds(2, both, np.ones(2), np.full(2, highspy.kHighsInf))
    lp.run()
    assert lp.getModelStatus() == highspy.HighsModelStatus.kInfeasible
    _, has_ray, ray = lp.getDualRay()
    assert has_ray
    zero = np.zeros(n, dtype=np.int64)
    assert linear.certificate(linear.duals(ray), zero, 0, lower, upper) is not None
    lower[both[1]] = 0
    assert linear.certificate(linear.duals(ray), zero, 0, lower, upper) is None


def test_a_float_slip_is_no_dataset():
    problem = _two_triangles()
    engine = _engine(problem)
    truth = engine.linear.histogram(problem.truth)
    before = len(engine.found)
    assert engine.dataset(truth + 0.3) is None  # not integral
    broken = truth.copy()
    broken[np.flatnonzero(truth)[0]] += 1  # four rows where the release says three
    assert engine.dataset(broken.astype(float)) is None
    assert len(engine.found) == before
    assert canonical(engine.dataset(truth + 1e-9)) == canonical(problem.truth)


@pytest.fixture(scope="module")
def household_blocks():
    folder = ROOT / "samples" / "households"
    problems = load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml").problems()
    return [p for p in problems if p.geo[-1] in ("1004", "1005")]  # 8 and 18 households


def test_histogram_and_row_slot_pipelines_agree_on_household_blocks(household_blocks):
    for problem in household_blocks:
        new = audit_unit(problem, ExactOptions(explain="none"))
        old = audit_unit(problem, ExactOptions(explain="none", histogram=False))
        assert not new.undecided and not old.undecided
        assert {v.claim for v in new.verified} == {v.claim for v in old.verified}
        assert (new.refuted, new.solutions, new.exhausted) == (old.refuted, old.solutions, old.exhausted)


def test_histogram_verdicts_on_claims_the_bounds_leave_open(household_blocks):
    """Claim by claim (no samples, no enumeration): the histogram engine decides what the linear
    bounds leave open, and the SAT engine agrees with every verdict."""
    from audit.attacks.engines.sat import SatEngine

    problem = household_blocks[1]
    linear, engine, sat = LinearProof(problem), _engine(problem), SatEngine(problem)
    claims = [c for c in candidates(problem.truth, max_columns=3) if linear.bound(c) is None]
    assert claims
    for claim in claims[::max(1, len(claims) // 25)]:
        verdict = engine.verify(claim)
        assert verdict is not None
        assert verdict.status == sat.verify(claim, explain="none").status, claim
        if verdict.status == REFUTED:
            assert problem.violations(verdict.counterexample) == []
