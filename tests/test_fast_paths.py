"""The per-unit shortcuts of a state-sized run (issue 37) give what the plain computation gives: the
mixed-radix mode, the prior's keyed rows kept across units, stated claims matched by numeric keys,
verified verdicts made in bulk."""
from __future__ import annotations

from math import comb

import numpy as np

from audit.attacks.exact import _stated
from audit.attacks.reidentify_unit import _mode
from audit.problem.claims import VERIFIED, ClaimTable, Verdict, stated_verdicts, verified_verdicts


def test_mode_is_np_uniques_most_frequent_row_smallest_on_ties():
    rng = np.random.default_rng(0)
    for _ in range(500):
        keys = rng.integers(-3, 4, size=(int(rng.integers(1, 30)), int(rng.integers(1, 5))))
        values, counts = np.unique(keys, axis=0, return_counts=True)
        assert np.array_equal(_mode(keys), values[int(np.argmax(counts))])
    assert _mode(np.zeros((0, 2), dtype=np.int64)) is None


def _plain_baseline(table: ClaimTable, n: int, prior: np.ndarray) -> np.ndarray:
    distinct, weights = np.unique(prior, axis=0, return_counts=True)
    p = table.counts(distinct, weights) / len(prior)
    m = np.minimum(table.m, n)
    ways = np.array([comb(n, k) for k in range(n + 1)], dtype=float)
    return np.where(table.m <= n, ways[m] * p ** m * (1 - p) ** (n - m), 0.0)


def test_baselines_with_the_prior_kept_equal_the_plain_formula():
    rng = np.random.default_rng(1)
    sizes = [2, 3, 2]
    priors = [np.column_stack([rng.integers(0, s, size=25) for s in sizes]) for _ in range(3)]
    for _ in range(40):  # blocks of a few tracts, each prior asked for again and again
        n = int(rng.integers(1, 7))
        table = ClaimTable.of_truth(np.column_stack([rng.integers(0, s, size=n) for s in sizes]), sizes)
        prior = priors[int(rng.integers(len(priors)))]
        assert np.array_equal(table.baseline(n, prior.copy()), _plain_baseline(table, n, prior))


def test_stated_claims_match_by_numeric_key_as_by_assignment():
    rng = np.random.default_rng(2)
    sizes = [2, 3, 4]
    for _ in range(50):
        table = ClaimTable.of_truth(np.column_stack([rng.integers(0, s, size=6) for s in sizes]), sizes)
        direct = {}
        for c in rng.choice(table.claims, size=min(8, len(table.claims)), replace=False):
            direct[c.assignment] = (c.m + int(rng.integers(0, 2)), f"T:{len(direct)}")  # some with another count
        direct[((0, 1), (2, 3))] = (9, "T:absent")  # no claim has this count
        plain = [(i, direct[c.assignment][1]) for i, c in enumerate(table.claims)
                 if c.assignment in direct and direct[c.assignment][0] == c.m]
        assert _stated(table, direct) == plain


def test_verified_verdicts_in_bulk_are_plain_verdicts():
    table = ClaimTable.of_truth(np.array([[0, 1], [1, 1]]), [2, 2])
    bulk = verified_verdicts(table.claims)
    assert bulk == [Verdict(c, VERIFIED) for c in table.claims]
    assert [hash(v) for v in bulk] == [hash(Verdict(c, VERIFIED)) for c in table.claims]
    stated = stated_verdicts([(c, f"T:{i}") for i, c in enumerate(table.claims)])
    plain = [Verdict(c, VERIFIED, (f"T:{i}",), True, direct=True) for i, c in enumerate(table.claims)]
    assert stated == plain and [v.__dict__ for v in stated] == [v.__dict__ for v in plain]


def test_interned_claims_and_verdicts_are_the_plain_tables():
    from audit.problem import claims as module

    rng = np.random.default_rng(3)
    sizes = [2, 3, 4]
    module._INTERNED.clear()
    for _ in range(60):  # tables of the same atoms, their claims kept and handed out again
        n = int(rng.integers(1, 6))
        truth = np.column_stack([rng.integers(0, s, size=n) for s in sizes])
        table = ClaimTable.of_truth(truth, sizes)
        module._INTERNED.clear()
        plain = ClaimTable.of_truth(truth, sizes)
        module._INTERNED.clear()
        assert table.claims == plain.claims and np.array_equal(table.keys, plain.keys)
        idx = np.flatnonzero(rng.random(len(table.claims)) < 0.5)
        assert table.verified(idx) == verified_verdicts([plain.claims[i] for i in idx])
        assert all(v.claim is table.claims[i] for v, i in zip(table.verified(idx), idx))
        again = ClaimTable.of_truth(truth, sizes)
        assert again.claims == table.claims and all(a is b for a, b in zip(again.claims, ClaimTable.of_truth(truth, sizes).claims))


def _units(tmp_path, schema, schedule, kept: bool) -> list[dict]:
    from audit.attacks import unit_memo
    from audit.attacks.exact import ExactOptions
    from audit.attacks.reidentify import with_attacker
    from audit.findings import claimstore
    from audit.findings.claimstore import store_columns
    from audit.policy.rules import load_rules
    from audit.problem import claims
    from audit.scale.runner import ScaleOptions, _tasks
    from audit.scale.worker import Limits, audit_task

    rows = {"a": "M,30,Y,N,N,N,N,N,N,N", "b": "F,71,N,Y,N,N,N,N,N,Y", "c": "F,4,Y,N,N,N,N,N,N,N",
            "d": "M,52,N,N,N,Y,N,N,N,N"}
    blocks = {("000100", "1001"): "a", ("000100", "1002"): "a", ("000100", "1003"): "ab", ("000100", "1004"): "cd",
              ("000200", "2001"): "a", ("000200", "2002"): "ab", ("000200", "2003"): "ba", ("000200", "2004"): "dcc"}
    data = tmp_path / "blocks.csv"
    data.write_text("state,county,tract,block,sex,age,white,black,aian,asian,nhopi,sor,two_or_more,hispanic\n" + "".join(
        f"01,001,{tract},{block},{rows[p]}\n" for (tract, block), people in blocks.items() for p in people))
    options = with_attacker(ExactOptions(), schema, load_rules())
    limits = Limits(header=store_columns(schema, schedule))
    out = []
    for problem, prior, _ in _tasks(str(data), schema, schedule, ScaleOptions(), set(), {"rows": 0}, options.max_rows, True):
        if not kept or not out:  # every unit from scratch: no unit, claim or claim store field kept
            unit_memo._KEPT.clear()
            claimstore._FIELDS.clear()
            claims._INTERNED.clear()
        unit = audit_task(problem, options, prior, limits)
        unit.pop("seconds")
        out.append(unit)
    return out


def test_units_given_a_kept_units_findings_are_the_ones_an_attack_gives(tmp_path, sf1_spec):
    """Blocks of the same rows (in the same order) in one tract and in another (another prior): the findings
    from the memory are those of the attack, claim store included; a unit of the rows in another order is attacked.
    The plain run keeps nothing between units (no claims, no claim store fields either)."""
    from audit.attacks import unit_memo

    schema, schedule = sf1_spec
    recalled = []
    recall = unit_memo.recall
    unit_memo.recall = lambda memo, problem: recalled.append(recall(memo, problem)) or recalled[-1]
    try:
        kept = _units(tmp_path, schema, schedule, kept=True)
    finally:
        unit_memo.recall = recall
    plain = _units(tmp_path, schema, schedule, kept=False)
    assert sum(r is not None for r in recalled) == 3  # 1002 and 2001 as 1001, 2002 as 1003
    assert kept == plain


def test_refuted_on_many_rows_counts_each_claim_as_the_rows_do():
    """Past 256 rows a dataset is counted by its distinct rows (mixed-radix keys): each claim is refuted
    exactly when its count in the rows is not its m."""
    rng = np.random.default_rng(3)
    sizes = [3, 4, 2]
    table = ClaimTable.of_truth(np.column_stack([rng.integers(0, s, size=300) for s in sizes]), sizes)
    idx = np.arange(len(table.claims))
    for _ in range(5):
        n = int(rng.integers(257, 400))
        rows = np.column_stack([rng.integers(0, s, size=n) for s in sizes])
        plain = [c.count(rows) != c.m for c in table.claims]
        assert table.refuted(idx, rows).tolist() == plain
