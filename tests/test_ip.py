"""The integer-program engine gives the SAT engine's verdicts; Gurobi's size limit falls back to HiGHS."""
from __future__ import annotations

import logging
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from audit.claims import candidates
from audit.engines.ip import IpEngine
from audit.engines.sat import SatEngine
from audit.exact import ExactOptions, audit_unit
from audit.inputs import load_inputs
from audit.problem import Domain, Problem
from audit.query import Predicate, Statistic
from audit.release import Constraint

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
    assert sorted(canonical(s) for s in ip.solutions(len(expected) + 3)) == sorted(canonical(d) for d in expected)
    assert ip.last_exhausted
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
    with caplog.at_level(logging.WARNING, logger="audit.engines.ip"):
        rows = engine.solve()
    assert rows is not None and problem.violations(rows) == []
    assert engine.backend == "highs"
    notices = [r for r in caplog.records if r.name == "audit.engines.ip"]
    assert len(notices) == 1 and "falling back to HiGHS" in notices[0].getMessage()
    assert "\n" not in notices[0].getMessage()


def test_gurobi_small_models_agree():
    pytest.importorskip("gurobipy", reason="gurobipy is not installed (pip install gurobipy)")
    for seed in range(3):
        problem = random_problem(np.random.default_rng(9900 + seed), max_rows=3)
        ip = IpEngine(problem, backend="gurobi")
        _same_verdicts(problem, ip)
        assert ip.backend == "gurobi"
