"""Every exact back-end in the registry honours the ExactEngine interface, checked against brute force."""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from audit.problem.claims import REFUTED, VERIFIED, candidates
from audit.attacks.engines import ENGINE_NAMES, ExactEngine, get_engine
from audit.attacks.engines.sat import cell_of
from audit.errors import AuditError
from audit.release.constraints import Constraint
from audit.problem.coupled import child_total

from _oracle import all_datasets, canonical, random_coupled_problem, random_problem, verified_claims

SEEDS = range(8)


def _problem(seed: int):
    return random_problem(np.random.default_rng(4200 + seed), max_rows=3)


@pytest.fixture(params=[(name, seed) for name in ENGINE_NAMES for seed in SEEDS], ids=lambda p: f"{p[0]}-{p[1]}")
def case(request):
    """An engine by name over a small random problem, with the problem's datasets by brute force."""
    name, seed = request.param
    problem = _problem(seed)
    return get_engine(name, problem), problem, all_datasets(problem), seed


def _only(problem, cells):
    """The problem with only these cells published (the edits and the number of rows stay)."""
    return replace(problem, constraints=tuple(c for c in problem.constraints if cell_of(c.key) in set(cells)))


def test_registry_names_both_engines_and_rejects_others():
    assert ENGINE_NAMES == ("sat", "ip")
    problem = _problem(0)
    for name in ENGINE_NAMES:
        engine = get_engine(name, problem)
        assert isinstance(engine, ExactEngine) and engine.name == name
    with pytest.raises(AuditError, match=r"--engine: unknown engine 'cplex' -- fix: use one of \['sat', 'ip'\]"):
        get_engine("cplex", problem)


def test_datasets_match_brute_force(case):
    engine, problem, datasets, seed = case
    expected = sorted(canonical(d) for d in datasets)
    assert problem.violations(engine.solve()) == []
    found = engine.solutions(len(expected) + 2)
    assert sorted(canonical(rows) for rows in found) == expected
    assert found.exhausted
    assert engine.count_solutions(len(expected)) == (len(expected), True)
    if len(expected) > 1:
        short = engine.solutions(1)
        assert len(list(short)) == 1 and not short.exhausted
        assert engine.count_solutions(len(expected) - 1) == (len(expected) - 1, False)
    stopped = engine.solutions(len(expected) + 2)
    next(stopped)
    stopped.close()
    assert not stopped.exhausted
    assert engine.solve() is not None  # the enumerations' blocking constraints are retired
    for rows in engine.sample(3, seed=seed):
        assert canonical(rows) in expected


def test_verdicts_and_explanations_match_brute_force(case):
    engine, problem, datasets, _ = case
    implied = verified_claims(problem, datasets)
    left_out = [c for c in problem.constraints if cell_of(c.key) not in engine.cells]
    assert all(not c.predicate.clauses and c.statistic.kind == "count" for c in left_out)  # the population only
    for claim in candidates(problem.truth):
        verdict = engine.verify(claim)
        assert verdict.status == (VERIFIED if claim in implied else REFUTED), claim
        if verdict.status == REFUTED:
            assert problem.violations(verdict.counterexample) == []
            assert claim.count(verdict.counterexample) != claim.m
    for claim in sorted(implied, key=lambda c: c.assignment)[:3]:
        cells, minimal = engine.explain(claim)
        assert set(cells) <= set(engine.cells)
        # the explaining cells alone imply the claim: it holds in every dataset they allow
        assert all(claim.count(rows) == claim.m for rows in all_datasets(_only(problem, cells))), (claim, cells)
        if minimal:
            for cell in cells:
                fewer = _only(problem, set(cells) - {cell})
                assert any(claim.count(rows) != claim.m for rows in all_datasets(fewer)), (claim, cell)


def test_count_in_matches_brute_force(case):
    engine, problem, datasets, _ = case
    n = problem.n_rows[1]
    for c in problem.constraints[:3]:
        counts = {int(problem.row_mask(rows, c.predicate).sum()) for rows in datasets}
        for k in range(n + 1):
            rows = engine.count_in(c.predicate, k, k)
            if k in counts:
                assert rows is not None and rows is not False, (c.key, k)
                assert problem.violations(rows) == [] and int(problem.row_mask(rows, c.predicate).sum()) == k
            else:
                assert rows is False, (c.key, k)
    assert problem.violations(engine.solve()) == []  # range constraints are retired too


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_conflicting_cells_admit_no_dataset(name):
    problem = _problem(1)
    assert get_engine(name, problem).conflicting_cells() == []
    n = problem.n_rows[1]
    first = next(c for c in problem.constraints if c.statistic.kind == "count")
    wrong = Constraint("X:0:count", first.predicate, first.statistic, Fraction(n + 1), Fraction(n + 1))
    broken = replace(problem, constraints=problem.constraints + (wrong,))
    engine = get_engine(name, broken)
    assert engine.solve() is None
    cells = engine.conflicting_cells()
    assert "X:0" in cells and all_datasets(_only(broken, cells)) == []


@pytest.mark.parametrize("seed", range(10))
def test_a_coupled_tract_laid_out_by_block_matches_brute_force(seed):
    """With every block's total published exactly, the slots are laid out by block and each block's cells
    encoded over its own slots: the datasets (one model each), every claim's verdict, the counts in
    reach and the explanations (the block totals then fixed, like the population) are the brute
    force's; with one block total a range, the encoding is the full one, with the same answers."""
    problem = random_coupled_problem(np.random.default_rng(5100 + seed), max_rows=4, numeric=seed % 2 == 0)
    loose = replace(problem, constraints=tuple(replace(c, hi=c.hi + 1) if child_total(problem, c) == 0 else c
                                               for c in problem.constraints))  # block 0's total a range
    for p, laid_out in ((problem, True), (loose, False)):
        engine = get_engine("sat", p)
        assert (engine.layout is not None) == laid_out
        datasets = all_datasets(p)
        expected = sorted(canonical(d) for d in datasets)
        found = engine.solutions(len(expected) + 2)
        assert sorted(canonical(rows) for rows in found) == expected and found.exhausted
        implied = verified_claims(p, datasets)
        for claim in candidates(p.truth):
            verdict = engine.verify(claim)
            assert verdict.status == (VERIFIED if claim in implied else REFUTED), claim
            if verdict.status == REFUTED:
                assert p.violations(verdict.counterexample) == [] and claim.count(verdict.counterexample) != claim.m
        for c in p.constraints:
            if c.statistic.kind != "count":
                continue
            counts = {int(p.row_mask(rows, c.predicate).sum()) for rows in datasets}
            for k in range(p.n_rows[1] + 1):
                rows = engine.count_in(c.predicate, k, k)
                assert (rows is False) == (k not in counts), (c.key, k)
        fixed = set(engine.fixed)
        for claim in sorted(implied, key=lambda c: c.assignment)[:4]:
            cells, minimal = engine.explain(claim)
            assert set(cells) <= set(engine.cells)

            def given(keep, p=p, fixed=fixed):
                return replace(p, constraints=tuple(c for c in p.constraints if cell_of(c.key) in keep or c in fixed))
            assert all(claim.count(rows) == claim.m for rows in all_datasets(given(set(cells)))), (claim, cells)
            if minimal:
                for cell in cells:
                    assert any(claim.count(rows) != claim.m for rows in all_datasets(given(set(cells) - {cell})))
