"""Magnitude rules ((n,k)-dominance, p%, pq) against the peers' published test results and brute force."""
from __future__ import annotations

import itertools
import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit.cli import run
from audit.errors import AuditError
from audit.findings.cells import cells_json
from audit.release.magnitude import Contributions, sensitive
from audit.data.microdata import validate
from audit.protection.options import Policy, ProtectOptions
from audit.protection.unit import forced_cells
from audit.policy.checks import evaluate
from audit.policy.rules import load_rules
from audit.specs.schedule import load_schedule
from audit.specs.schema import load_schema
from audit.release.tabulate import tabulate

DATA = Path(__file__).parent / "data"


def _release(tmp_path: Path, frame: pd.DataFrame, columns: str, by: str, stat: str, contributor: str = ""):
    (tmp_path / "schema.yaml").write_text(f"unit: establishment\ngeography: [country]\n{contributor}columns:\n{columns}")
    (tmp_path / "tables.yaml").write_text(f"tables:\n  - {{id: T, by: [{by}], stats: [count, {stat}]}}\n")
    schema = load_schema(tmp_path / "schema.yaml")
    schedule = load_schedule(tmp_path / "tables.yaml", schema)
    release, = tabulate(validate(frame.assign(country="X").astype(str), schema), schema, schedule)
    return release, schedule


def _policy(tmp_path: Path, text: str):
    (tmp_path / "rules.yaml").write_text("name: m\n" + text)
    return load_rules(tmp_path / "rules.yaml")


def _failing_cells(release, rules) -> dict:
    doc = {"units": [{"geo": "X", "summary": {}, "cells": cells_json(release)}]}
    out = {}
    for check in evaluate(doc, rules):
        out[check["rule"]] = {key.split(":")[1] for key in check.get("cells", {})}
    return out


def test_sdctable_primary_suppression_examples(tmp_path):
    """sdcTable's test-primarySuppression.r: cells 6 and 14 (A x female, D x male) and no other, for
    nk (n=2, k=75), p (p=70) and pq (p=60, q=80) on microdata1."""
    frame = pd.read_csv(DATA / "sdctable_microdata1.csv", dtype=str)
    columns = ("  region: {type: categorical, values: [A, B, C, D]}\n"
               "  gender: {type: categorical, values: [male, female]}\n"
               "  val: {type: integer, min: 0, max: 300}\n")
    release, _ = _release(tmp_path, frame, columns, "region, gender", "sum(val)")
    rules = _policy(tmp_path, "dominance: {n: 2, k: 75}\np_percent: {p: 70}\npq_rule: {p: 60, q: 80}\n")
    assert _failing_cells(release, rules) == {rule: {"A,female", "D,male"} for rule in ("dominance", "p_percent",
                                                                                       "pq_rule")}
    assert len(release.magnitude) == 15  # 4 x 2 cells, 4 + 2 margins and the total


def test_gausssuppression_dominance_with_contributor_ids(tmp_path):
    """GaussSuppression's test-DominanceRule.R: with contributors grouped by `char`, the two largest
    contributors hold c(1, 1, 1, 1, 0.9, 1, 0.9) of v1..v7; k=98 makes all but v5 and v7 sensitive."""
    frame = pd.read_csv(DATA / "gausssuppression_dominance.csv", dtype=str)
    columns = ("  v1: {type: categorical, values: [v1, v2, v3, v4, v5, v6, v7]}\n"
               "  num: {type: integer, min: 0, max: 100}\n")
    release, _ = _release(tmp_path, frame, columns, "v1", "sum(num)", "contributor: char\n")
    shares = [Fraction(c.largest(2), c.total) for key, c in release.magnitude.items() if not key.startswith("T:*")]
    assert shares == [1, 1, 1, 1, Fraction(9, 10), 1, Fraction(9, 10)]
    rules = _policy(tmp_path, "dominance: {n: 2, k: 98}\n")
    assert _failing_cells(release, rules)["dominance"] == {"v1", "v2", "v3", "v4", "v6"}
    # without the contributor column each row is a contributor: v6 (70, 10, 10, 10) is then 80%, safe
    plain, _ = _release(tmp_path, frame.drop(columns="char"), columns, "v1", "sum(num)")
    assert _failing_cells(plain, rules)["dominance"] == {"v1", "v2", "v3", "v4"}


def _brute(rule: str, settings: dict, rows: list[tuple[str, int]]) -> bool:
    """The rules from their definitions: contributions summed per contributor, absolute values; (n,k):
    some n contributors hold more than k% of the total; p%/pq: some contributor j estimates another
    contributor i as X - x_j with an error under p/q of x_i (a missing second contributor counts as 0)."""
    by: dict[str, int] = {}
    for who, value in rows:
        by[who] = by.get(who, 0) + value
    xs = [abs(v) for v in by.values()] + [0]
    total = sum(xs)
    if total == 0:
        return False
    if rule == "dominance":
        return any(100 * sum(s) > Fraction(settings["k"]) * total
                   for s in itertools.combinations(xs, min(settings["n"], len(xs))))
    ratio = Fraction(settings["p"]) / Fraction(settings.get("q", 100))
    return any(total - xs[i] - xs[j] < ratio * xs[i] for i in range(len(xs)) for j in range(len(xs)) if i != j)


@pytest.mark.parametrize("seed", range(4))
def test_rules_match_brute_force_with_negatives_and_holdings(seed):
    rng = random.Random(seed)
    for _ in range(300):
        rows = [(rng.choice("abcde"), rng.randint(-30, 60)) for _ in range(rng.randint(1, 7))]
        ids, values = zip(*rows)
        c = Contributions.of(np.array(values), np.array(ids))
        for rule, settings in (("dominance", {"n": rng.randint(1, 3), "k": rng.choice([50, 75, 85.5, 100])}),
                               ("p_percent", {"p": rng.choice([5, 10, 33.3, 100])}),
                               ("pq_rule", {"p": rng.choice([10, 25]), "q": rng.choice([25, 50, 100])})):
            assert (sensitive(rule, settings, c) is not None) == _brute(rule, settings, rows), (rule, settings, rows)


def test_hand_checked_reasons():
    c = Contributions.of(np.array([82, 10, 8]))
    assert sensitive("dominance", {"n": 1, "k": 80}, c) == "largest contributor 82.0% of the total > k=80%"
    assert sensitive("dominance", {"n": 1, "k": 82}, c) is None  # more than k%: 82% of the total is not
    assert sensitive("p_percent", {"p": 10}, c) == ("the total less the 2 largest contributions is 9.8% of the "
                                                    "largest < p=10%")
    assert sensitive("p_percent", {"p": 9}, c) is None
    assert sensitive("pq_rule", {"p": 10, "q": 50}, c) is not None  # 8 < 82/5
    # negative contributions count by absolute value after summing a contributor's rows
    mixed = Contributions.of(np.array([-50, 20, 5, -5]), np.array(["a", "b", "c", "c"]))
    assert (mixed.total, mixed.contributors, mixed.top) == (70, 3, (50, 20, 0))
    assert sensitive("p_percent", {"p": 10}, Contributions.of(np.array([0, 0]))) is None


def test_run_reports_sensitive_sums_and_protect_suppresses_them(tmp_path):
    rows = [("n", "f1", 90), ("n", "f2", 5), ("n", "f3", 5), ("s", "f4", 30), ("s", "f5", 30), ("s", "f6", 40)]
    frame = pd.DataFrame(rows, columns=["area", "firm", "turnover"])
    columns = "  area: {type: categorical, values: [n, s]}\n  turnover: {type: integer, min: 0, max: 100}\n"
    release, schedule = _release(tmp_path, frame, columns, "area", "sum(turnover)", "contributor: firm\n")
    rules = _policy(tmp_path, "dominance: {n: 1, k: 80}\n")
    policy = Policy.from_rules(rules)
    primary, _ = forced_cells(release, None, schedule.tables, policy, ProtectOptions(complementary=False))
    assert primary == ["T:n"]
    frame.assign(country="X").to_csv(tmp_path / "data.csv", index=False)
    code = run(["run", str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t",
                str(tmp_path / "tables.yaml"), "--rules", str(tmp_path / "rules.yaml"), "-o", str(tmp_path / "out"),
                "--quiet"])
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    check, = [c for c in doc["checks"] if c["rule"] == "dominance"]
    assert code == 1 and check["outcome"] == "fail"
    assert check["cells"] == {"T:n:sum(turnover)": "largest contributor 90.0% of the total > k=80%"}
    assert "primary sensitive" in (tmp_path / "out" / "report.html").read_text()


@pytest.mark.parametrize("text, words", [
    ("dominance: {n: 11, k: 80}\n", "dominance.n must be from 1 to 10"),
    ("p_percent: {p: 0}\n", "p_percent.p must be above 0"),
    ("pq_rule: {p: 20, q: 10}\n", "pq_rule.q must be from p to 100"),
])
def test_bad_magnitude_settings_are_user_errors(tmp_path, text, words):
    (tmp_path / "r.yaml").write_text("name: r\n" + text)
    with pytest.raises(AuditError) as err:
        load_rules(tmp_path / "r.yaml")
    assert words in str(err.value) and "r.yaml:2" in str(err.value)
