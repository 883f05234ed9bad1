"""Secondary suppression meeting protection levels: on tiny tables, every pattern and every dataset is
enumerated; the search's pattern meets the levels by brute force and no cheaper pattern does."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_protect import _case

from audit.attacks.exact import ExactOptions
from audit.protection.options import Policy, ProtectOptions
from audit.protection.unit import unit_contexts
from audit.policy.checks import protection_needed
from audit.protection import secondary
from audit.protection.secondary import cell_costs, suppress_unit

EXACT = ExactOptions(explain="none")


def _counts(problem) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Count cells, their counts in every dataset of the unit's size (datasets x cells), and the truth."""
    cons = [c for c in problem.constraints if c.statistic.kind == "count"]
    atoms = np.array(list(itertools.product(*(range(len(d)) for d in problem.domains))), dtype=np.int64)
    member = np.array([problem.row_mask(atoms, c.predicate) for c in cons], dtype=np.int64)
    n = problem.n_rows[1]
    hist = np.array([np.bincount(combo, minlength=len(atoms)) for combo in
                     itertools.combinations_with_replacement(range(len(atoms)), n)], dtype=np.int64)
    truth = member @ np.bincount(problem.truth @ np.cumprod((1,) + problem.sizes[:0:-1])[::-1], minlength=len(atoms))
    return [c.key.rsplit(":", 1)[0] for c in cons], hist @ member.T, truth


def _protected(keys, table, truth, hidden: set[str], settings) -> bool:
    """Every hidden count's interval, over the datasets that publish the rest, meets the levels."""
    shown = np.array([k not in hidden for k in keys])
    fits = table[(table[:, shown] == truth[shown]).all(axis=1)]
    for j, k in enumerate(keys):
        if k in hidden:
            below, above = protection_needed(settings, int(truth[j]))
            if truth[j] - fits[:, j].min() < below or fits[:, j].max() - truth[j] < above:
                return False
    return True


def _random_case(rng):
    cols = {"a": ["x", "y", "z"][: int(rng.integers(2, 4))], "b": ["p", "q"]}
    n = int(rng.integers(3, 7))
    rows = [[str(rng.choice(cols["a"])), str(rng.choice(cols["b"]))] for _ in range(n)]
    levels = ["{upper: 1, lower: 1}", "{upper: 2}", "{upper_share: 0.5, lower_share: 0.5}"][int(rng.integers(0, 3))]
    rules = f"name: pl\nsmall_cells: {{threshold: {int(rng.integers(2, 4))}}}\nprotection_levels: {levels}\n"
    return cols, [{"id": "T1", "by": ["a", "b"], "margins": True}], rows, rules


@pytest.mark.parametrize("seed, lp", [(s, True) for s in range(12)] + [(s, False) for s in range(6)])
def test_secondary_suppression_is_the_cheapest_pattern_meeting_the_levels(tmp_path, monkeypatch, seed, lp):
    """With the attacker LP's cuts, and without (no-goods alone, as when its support is too large: many
    more iterations, so fewer cases)."""
    if not lp:
        monkeypatch.setattr(secondary, "SUPPORT", 0)
    rng = np.random.default_rng(1600 + seed)
    cols, tables, rows, rules_text = _random_case(rng)
    inputs, rules = _case(tmp_path, cols, tables, rows, rules_text)
    ctx = unit_contexts(inputs)[0]
    policy = Policy.from_rules(rules)
    problem, release = ctx.problem()
    keys, table, truth = _counts(problem)
    for cost in ("cells", "persons"):
        unit = suppress_unit(ctx, policy, ProtectOptions(exact=EXACT, cost=cost, max_iterations=60 if lp else 400,
                                                         exact_rounds=60 if lp else 400))
        price = cell_costs(problem, release, cost)
        primary = set(unit.primary)
        free = [k for k in keys if k not in primary and k in price]
        best = min((sum(price[k] for k in primary | set(extra)) for r in range(len(free) + 1)
                    for extra in itertools.combinations(free, r)
                    if _protected(keys, table, truth, primary | set(extra), policy.protection)), default=None)
        if best is None:
            assert unit.status == "unfixable", (seed, cost)
            continue
        assert unit.status in ("protected", "pass"), (seed, cost, unit.reason)
        assert _protected(keys, table, truth, set(unit.cells), policy.protection), (seed, cost, unit.cells)
        assert sum(price[k] for k in unit.cells) == best == unit.lower_bound and unit.minimal, (seed, cost, unit.cells)


def test_protect_cli_with_protection_levels_passes_its_own_re_audit(tmp_path):
    """End to end: the recommended pattern, written to protected.yaml and audited again through the
    ordinary path, passes small_cells and protection_levels."""
    import json

    from audit.cli import run

    rows = [["x", "p"], ["x", "p"], ["x", "q"], ["y", "q"], ["y", "q"], ["y", "q"], ["z", "q"], ["z", "p"], ["z", "p"]]
    _case(tmp_path, {"a": ["x", "y", "z"], "b": ["p", "q"]}, [{"id": "T1", "by": ["a", "b"], "margins": True}], rows,
          "name: pl\nsmall_cells: {threshold: 2}\nprotection_levels: {upper: 1, lower: 1}\n")
    args = ["protect", str(tmp_path / "data.csv"), "-t", str(tmp_path / "tables.yaml"), "-s", str(tmp_path / "schema.yaml"),
            "--rules", str(tmp_path / "rules.yaml"), "--quiet"]
    assert run([*args, "--cost", "persons", "--out", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "protection.json").read_text())
    unit, = report["units"]
    assert unit["primary"] == ["T1:x,q", "T1:z,q"] and unit["status"] == "protected"
    assert report["after"]["verdict"] == "pass" and report["recommendation"]["cells_suppressed"] == len(unit["cells"])
    assert run([*args, "--cost", "euros", "--out", str(tmp_path / "bad")]) == 2


@pytest.mark.parametrize("seed", range(6))
def test_monotone_completion_meets_the_levels_with_an_honest_lower_bound(tmp_path, monkeypatch, seed):
    """One exact pattern, then only cells added (no-goods alone, so the exact search takes many rounds):
    the pattern meets the levels by brute force, and its lower bound is at most the cheapest one's cells."""
    monkeypatch.setattr(secondary, "SUPPORT", 0)
    cols, tables, rows, rules_text = _random_case(np.random.default_rng(1600 + seed))
    inputs, rules = _case(tmp_path, cols, tables, rows, rules_text)
    ctx = unit_contexts(inputs)[0]
    policy = Policy.from_rules(rules)
    unit = suppress_unit(ctx, policy, ProtectOptions(exact=EXACT, exact_rounds=1, max_iterations=400))
    problem, _ = ctx.problem()
    keys, table, truth = _counts(problem)
    primary = set(unit.primary)
    free = [k for k in keys if k not in primary]
    best = min((len(primary) + r for r in range(len(free) + 1) for extra in itertools.combinations(free, r)
                if _protected(keys, table, truth, primary | set(extra), policy.protection)), default=None)
    if best is None:
        assert unit.status == "unfixable"
        return
    assert unit.status in ("protected", "pass"), unit.reason
    assert _protected(keys, table, truth, set(unit.cells), policy.protection)
    assert unit.lower_bound <= best <= len(unit.cells)
    assert unit.minimal == (unit.lower_bound == len(unit.cells))
