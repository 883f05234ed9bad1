"""Feasibility intervals against brute force: every consistent dataset enumerated, each interval its
cell's least and greatest count over them."""
from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from _oracle import all_datasets, random_problem
from test_exact import _load
from test_oracle import SETTINGS, _truth, cases

from audit.attacks.exact import ExactOptions, audit_unit, make_engine
from audit.attacks.implied import LinearProof
from audit.attacks.intervals import feasibility_intervals, hidden_cells, value_interval


def _extremes(problem, datasets, constraint) -> tuple:
    """The least and greatest value of a cell's statistic over the datasets where it has one."""
    values = [v for v in (problem.value(rows, constraint) for rows in datasets) if v is not None]
    return min(values), max(values)


@settings(SETTINGS, max_examples=30)
@given(cases())
def test_intervals_of_a_release_equal_brute_force(case):
    """Tabulated random releases (thresholds, complementary suppression, rounding, means and
    medians): the whole pipeline's interval of each hidden cell (counts, and suppressed or rounded
    sums, means and medians) is [min, max] over every raw dataset that re-tabulates to the same
    release, and certified."""
    with tempfile.TemporaryDirectory() as tmp:
        inputs = _load(*case, Path(tmp))
        _, problem, worlds, _, _ = _truth(inputs)
        result = audit_unit(problem, ExactOptions(explain="none", samples=2, solution_cap=8))
        hidden = {k: c for k, c in hidden_cells(problem).items() if problem.value(problem.truth, c) is not None}
        assert set(result.intervals or {}) == set(hidden)
        for key, interval in (result.intervals or {}).items():
            assert (interval.lo, interval.hi) == _extremes(problem, worlds, hidden[key]), key
            assert interval.certified and interval.lo <= interval.value <= interval.hi


@pytest.mark.parametrize("seed", range(40))
def test_intervals_of_random_problems_equal_brute_force(seed):
    """Count, sum, mean and median cells published exactly, as ranges, or suppressed: certified ends
    are the brute-force extremes; with no search budget the outer bounds still contain them."""
    rng = np.random.default_rng(7000 + seed)
    problem = random_problem(rng, max_rows=4, numeric=seed % 2 == 0, n_cells=int(rng.integers(2, 6)))
    datasets = all_datasets(problem)
    linear = LinearProof(problem)
    exact = feasibility_intervals(problem, linear, lambda: make_engine(problem, ExactOptions()))
    outer = feasibility_intervals(problem, linear, None, nodes=0)
    hidden = hidden_cells(problem)
    assert set(exact) == set(outer) == set(hidden)
    for key, cons in hidden.items():
        lo, hi = _extremes(problem, datasets, cons)
        assert exact[key].certified and (exact[key].lo, exact[key].hi) == (lo, hi), key
        assert outer[key].lo <= lo and outer[key].hi >= hi, key
        if outer[key].certified:
            assert (outer[key].lo, outer[key].hi) == (lo, hi), key


BLOCK7 = Path(__file__).resolve().parents[1] / "samples" / "block7"


def _block7_checks(tmp_path, levels: str) -> list[dict]:
    from audit.findings.document import run_exact
    from audit.inputs import load_inputs
    from audit.policy.rules import load_rules

    (tmp_path / "pl.yaml").write_text(f"name: pl\nprotection_levels: {levels}\n")
    inputs = load_inputs(str(BLOCK7 / "data.csv"), str(BLOCK7 / "schema.yaml"), str(BLOCK7 / "tables.yaml"))
    doc = run_exact(inputs, ExactOptions(explain="none"), rules=load_rules(tmp_path / "pl.yaml"))
    return [c for c in doc["checks"] if c["rule"] == "protection_levels"]


def test_protection_levels_fail_the_paper_block_whose_hidden_counts_are_all_disclosed(tmp_path):
    """The CACM block: its rule-of-three suppression leaves every hidden count pinned to its value, and
    every rounded or suppressed mean and median (26 of them) too: the block is reconstructed."""
    check, = _block7_checks(tmp_path, "{upper: 1, lower_share: 0.5}")
    assert check["outcome"] == "fail" and check["count"] == 7 + 26
    assert "T1:1A:median(age) in [30, 30], true 30, needs [15, 31]" in check["message"]
    check, = _block7_checks(tmp_path, "{upper: 0, lower: 0}")
    assert check["outcome"] == "pass"


def test_protection_needed_takes_the_larger_level_and_stops_at_zero():
    from audit.policy.checks import protection_needed

    assert protection_needed({"upper": 1, "upper_share": 0.5, "lower": 5}, 4) == (4, 2.0)
    assert protection_needed({"lower_share": 0.25}, 8) == (2.0, 0)


def test_protect_audit_only_audits_the_given_pattern_and_exits_like_gate(tmp_path, capsys):
    """No new suppression: the schedule's own pattern, its intervals and the rules' verdict."""
    from audit.cli import run

    args = ["protect", str(BLOCK7 / "data.csv"), "--tables", str(BLOCK7 / "tables.yaml"), "--schema",
            str(BLOCK7 / "schema.yaml"), "--audit-only"]
    (tmp_path / "loose.yaml").write_text("name: loose\nprotection_levels: {upper: 0}\n")
    assert run([*args, "--out", str(tmp_path / "a"), "--rules", str(tmp_path / "loose.yaml")]) == 0
    assert "0001 T1:5A: [0, 0]" in capsys.readouterr().out
    assert run([*args, "--out", str(tmp_path / "b"), "--rules", "strict", "--quiet"]) == 1
    doc = json.loads((tmp_path / "b" / "findings.json").read_text())
    unit = doc["units"][0]
    assert unit["intervals"]["T1:3A"] == [2, 2] and unit["interval_details"]["T1:3A"] == {"certified": True, "value": 2,
                                                                                            "solver_trusted": ["lo"]}
    assert unit["intervals"]["T1:2A:mean(age)"] == [33.5, 33.5]  # a fraction's end as its float, exactly beside it
    assert unit["interval_details"]["T1:2A:mean(age)"]["exact"] == {"lo": "67/2", "hi": "67/2", "value": "67/2"}
    assert not (tmp_path / "b" / "protected.yaml").exists()


@pytest.mark.parametrize("seed", range(30))
def test_intervals_of_hidden_sums_means_and_medians_equal_brute_force(seed):
    """Suppressed sums, means and medians (no constraint: :attr:`Problem.hidden`) beside published ones,
    with and without the true rows: the bound search's ends are the brute-force extremes over the
    datasets where the statistic exists, certified; with no solver the outer bounds contain them."""
    rng = np.random.default_rng(9000 + seed)
    problem = random_problem(rng, max_rows=4, numeric=True, n_cells=int(rng.integers(2, 6)))
    hide = [c for c in problem.constraints if c.statistic.kind != "count" and rng.random() < 0.5]
    problem = replace(problem, constraints=tuple(c for c in problem.constraints if c not in hide),
                      hidden=tuple(replace(c, lo=None, hi=None, lo_open=False, hi_open=False) for c in hide),
                      truth=problem.truth if seed % 2 else None)
    datasets = all_datasets(problem)
    linear = LinearProof(problem)
    exact = feasibility_intervals(problem, linear, lambda: make_engine(problem, ExactOptions()))
    outer = feasibility_intervals(problem, linear, None)
    for key, cons in hidden_cells(problem).items():
        if cons.statistic.kind == "count":
            continue
        lo, hi = _extremes(problem, datasets, cons)
        assert exact[key].certified and (exact[key].lo, exact[key].hi) == (lo, hi), key
        assert exact[key].stat == cons.statistic.name and (exact[key].value is None) == (problem.truth is None)
        assert not outer[key].certified and outer[key].lo <= lo and outer[key].hi >= hi, key


def test_a_bound_search_out_of_queries_keeps_a_proved_outer_bound():
    """One solver call per end: never a made-up bound, the end the search had proved so far (a release
    where a value is not pinned: one call settles a pinned end)."""
    rng = np.random.default_rng(9007)
    problem = random_problem(rng, max_rows=4, numeric=True, n_cells=4)
    datasets = all_datasets(problem)
    open_ = 0
    for cons in (c for c in hidden_cells(problem).values() if c.statistic.kind != "count"):
        lo, hi = _extremes(problem, datasets, cons)
        short = value_interval(problem, cons, lambda: make_engine(problem, ExactOptions()), queries=1)
        assert short.lo <= lo and short.hi >= hi
        assert not short.certified or (short.lo, short.hi) == (lo, hi)
        open_ += not short.certified
    assert open_


def test_a_sum_only_tables_implied_counts_are_constraints_not_hidden_cells(tmp_path):
    """A table that publishes only sum(x) by sex (suppress_below 3) lets the attacker infer each cell's
    count (at least 3 where the sum is published, 1 or 2 where it is suppressed) and keeps that in the problem,
    but the release neither publishes nor hides those counts: the hidden cells are the suppressed sum and
    the suppressed count of the table that lists counts, nothing else."""
    columns = {"sex": {"type": "categorical", "values": {"F": "Female", "M": "Male", "X": "Other"}},
               "x": {"type": "integer", "min": 0, "max": 2}}
    protection = {"suppress_below": 3}
    tables = {"tables": [{"id": "N", "cells": [{"id": "all", "where": {}}]},
                         {"id": "C", "by": ["sex"], "protection": protection},
                         {"id": "S", "by": ["sex"], "stats": ["sum(x)"], "protection": protection}]}
    rows = [{"sex": "F", "x": 1}, {"sex": "F", "x": 2}, {"sex": "F", "x": 2}, {"sex": "M", "x": 0}]
    schema = {"unit": "person", "geography": ["block"], "columns": columns}
    _, problem, worlds, _, _ = _truth(_load(schema, tables, rows, tmp_path))
    implied = {c.key for c in problem.constraints if c.implied}
    assert implied == {"S:*:count", "S:F:count", "S:M:count"}  # the attacker's knowledge stays in the problem
    assert set(hidden_cells(problem)) == {"C:M", "S:M:sum(x)"}
    result = audit_unit(problem, ExactOptions(explain="none", samples=2, solution_cap=8))
    assert set(result.intervals) == {"C:M", "S:M:sum(x)"}
    for key, cons in hidden_cells(problem).items():
        assert (result.intervals[key].lo, result.intervals[key].hi) == _extremes(problem, worlds, cons), key
