"""The integer-program engine gives the SAT engine's verdicts; Gurobi's size limit falls back to HiGHS."""
from __future__ import annotations

import logging
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from audit.problem.claims import REFUTED, UNDECIDED, VERIFIED, Claim, candidates
from audit.attacks.engines.ip import IpEngine
from audit.attacks.engines.sat import SatEngine
from audit.attacks.exact import ExactOptions, audit_unit
from audit.inputs import load_inputs
from audit.problem.build import Domain, Problem
from audit.specs.query import Predicate, Statistic
from audit.release.constraints import Constraint

from _oracle import all_datasets, canonical, random_problem, verified_claims

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"


def _same_verdicts(problem: Problem, ip: IpEngine) -> None:
    sat = SatEngine(problem)
    for claim in candidates(problem.truth):
        a, b = sat.verify(claim, explain="none"), ip.verify(claim, explain="none")
        assert a.status == b.status, claim
        if b.counterexample is not None:
            assert problem.violations(b.counterexample) == []
            assert claim.count(b.counterexample) != claim.m


@pytest.mark.parametrize("seed", [s for s in range(24) if s not in (2, 19)])  # 2, 19: slow on HiGHS (many solutions)
def test_ip_equals_sat_on_random_problems(seed):
    rng = np.random.default_rng(9000 + seed)
    problem = random_problem(rng, max_rows=3, numeric=seed % 3 != 0)
    ip = IpEngine(problem, backend="highs")
    expected = all_datasets(problem)
    found = ip.solutions(len(expected) + 3)
    assert sorted(canonical(s) for s in found) == sorted(canonical(d) for d in expected)
    assert found.exhausted
    _same_verdicts(problem, ip)


@pytest.mark.parametrize("seed", range(6))
def test_audit_unit_with_ip(seed):
    problem = random_problem(np.random.default_rng(9500 + seed), max_rows=3)
    result = audit_unit(problem, ExactOptions(engine="ip", samples=2, explain="singletons"))
    assert {v.claim for v in result.verified} == verified_claims(problem, all_datasets(problem))
    sat = SatEngine(problem)
    for v in result.verified:  # explanations from the IP are sound: the cells alone imply the claim
        if v.cells and not v.direct:
            keep = set(v.cells)
            sub = replace(problem, constraints=tuple(c for c in problem.constraints if c.key.rsplit(":", 1)[0] in keep))
            assert all(v.claim.count(d) == v.claim.m for d in all_datasets(sub))
    del sat


def test_ip_equals_sat_on_block7_counts():
    """The CACM block's count cells (the medians and means are too hard for HiGHS within a minute)."""
    problem = load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", BLOCK7 / "tables.yaml").problems()[0]
    counts = replace(problem, constraints=tuple(c for c in problem.constraints if c.statistic.kind == "count"))
    ip, sat = IpEngine(counts, backend="highs"), SatEngine(counts)
    for claim in [c for c in candidates(counts.truth) if len(c.assignment) <= 2 and 0 not in c.columns]:
        assert ip.verify(claim, explain="none").status == sat.verify(claim, explain="none").status


def _wide_problem() -> Problem:
    """Counts only, over a 0..299 integer column: more than Gurobi's 2000-variable free limit."""
    age = Domain("age", tuple(frozenset([v]) for v in range(300)), tuple(str(v) for v in range(300)), True)
    sex = Domain("sex", (frozenset([0]), frozenset([1])), ("F", "M"))
    truth = np.array([[10, 0], [20, 1], [30, 0], [40, 1], [50, 0], [60, 0], [70, 1]], dtype=np.int64)
    pred = Predicate.of({"sex": frozenset([0])})
    cons = (Constraint("T:F:count", pred, Statistic(), Fraction(4), Fraction(4)),)
    return Problem("block", ("1",), (age, sex), (7, 7), cons, (), truth)


def test_gurobi_size_limit_falls_back_to_highs(caplog):
    gp = pytest.importorskip("gurobipy", reason="gurobipy is not installed (pip install gurobipy)")
    del gp
    problem = _wide_problem()
    engine = IpEngine(problem, backend="auto")
    assert engine.backend == "gurobi"
    with caplog.at_level(logging.WARNING, logger="audit.attacks.engines.ip"):
        rows = engine.solve()
    assert rows is not None and problem.violations(rows) == []
    assert engine.backend == "highs"
    notices = [r for r in caplog.records if r.name == "audit.attacks.engines.ip"]
    assert len(notices) == 1 and "falling back to HiGHS" in notices[0].getMessage()
    assert "\n" not in notices[0].getMessage()


def test_gurobi_small_models_agree():
    pytest.importorskip("gurobipy", reason="gurobipy is not installed (pip install gurobipy)")
    for seed in range(3):
        problem = random_problem(np.random.default_rng(9900 + seed), max_rows=3)
        ip = IpEngine(problem, backend="gurobi")
        _same_verdicts(problem, ip)
        assert ip.backend == "gurobi"


def _large_values(n: int) -> Problem:
    """A published sum over values near 10^7: HiGHS's default tolerances admit datasets that miss it.

    Every person has x = 10^7; x = 10^7 + 1 is one step away, which the solver's integrality
    tolerance (1e-6 of a binary, times 10^7) can hide.
    """
    big = 10 ** 7
    values = (0, big, big + 1, 2 * big + 3)
    x = Domain("x", tuple(frozenset([v]) for v in values), tuple(map(str, values)), True)
    sex = Domain("sex", (frozenset(["F"]), frozenset(["M"])), ("F", "M"))
    truth = np.array([[1, s % 2] for s in range(n)], dtype=np.int64)
    cons = (Constraint("T:all:sum(x)", Predicate(), Statistic("sum", "x"), Fraction(big * n), Fraction(big * n)),)
    return Problem("block", ("1",), (x, sex), (n, n), cons, (), truth)


def test_float_slips_are_undecided_never_refutations():
    """The real HiGHS, default options: a 'counterexample' that breaks the published sum is caught."""
    problem = _large_values(3)
    claim = Claim(((0, 1),), 3)  # everyone has x = 10^7: implied by the sum
    assert SatEngine(problem).verify(claim, explain="none").status == VERIFIED
    ip = IpEngine(problem, backend="highs")
    verdict = ip.verify(claim, explain="none")
    assert verdict.status in (VERIFIED, UNDECIDED)
    assert ip.slips >= 1 and verdict.status == UNDECIDED and "exact check" in verdict.reason
    for other in candidates(problem.truth):
        v = ip.verify(other, explain="none")
        if v.status == REFUTED:
            assert problem.violations(v.counterexample) == [] and other.count(v.counterexample) != other.m


def test_audit_unit_on_ip_slips_stays_sound():
    """HiGHS's first dataset misses the sum here: the unit goes on from the confidential rows."""
    problem = _large_values(4)
    datasets = all_datasets(problem)
    expected = verified_claims(problem, datasets)
    for linear in (True, False):
        result = audit_unit(problem, ExactOptions(engine="ip", linear=linear, samples=2, explain="singletons"))
        assert {v.claim for v in result.verified} <= expected
        assert {v.claim for v in result.verified} | {v.claim for v in result.undecided} == expected
        assert not result.exhausted or result.solutions == len(datasets)


def test_enumeration_with_slips_is_not_exhausted():
    problem = _large_values(3)
    ip = IpEngine(problem, backend="highs", tolerance=1e-2)
    enumeration = ip.solutions(50)
    found = list(enumeration)
    assert found and all(problem.violations(rows) == [] for rows in found)
    assert ip.slips > 0 and not enumeration.exhausted
    assert ip.count_solutions(50)[1] is False
    assert all(problem.violations(rows) == [] for rows in ip.sample(6, seed=3))


def test_checked_rejects_perturbed_solutions():
    """A real HiGHS solution passes; the same solution moved off the release, or off one-hot, does not."""
    problem = random_problem(np.random.default_rng(9001), max_rows=3)
    ip = IpEngine(problem, backend="highs")
    status, sol = ip._solve(None)
    assert status == "feasible"
    rows = ip.checked(sol)
    assert rows is not None and problem.violations(rows) == []
    assert ip.checked(sol, claim=Claim(((0, int(rows[0, 0])),), int((rows[:, 0] == rows[0, 0]).sum()))) is None
    for s in range(ip.n):
        for c, col in enumerate(ip.x[s]):
            on = int(np.argmax([sol[v] for v in col]))
            for other in range(len(col)):
                moved = sol.copy()
                moved[col[on]], moved[col[other]] = 0.0, 1.0
                got = ip.checked(moved)
                changed = rows.copy()
                changed[s, c] = other
                assert (got is not None) == (problem.violations(changed) == [])
            half = sol.copy()
            half[col[on]] = 0.5
            assert ip.checked(half) is None  # no atom set: not a dataset
    assert ip.slips > 0
