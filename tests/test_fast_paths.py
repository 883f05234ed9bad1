"""The per-unit shortcuts of a state-sized run (issue 37) give what the plain computation gives: the
mixed-radix mode, the prior's keyed rows kept across units, stated claims matched by numeric keys,
verified verdicts made in bulk."""
from __future__ import annotations

from math import comb

import numpy as np

from audit.attacks.exact import _stated
from audit.attacks.reidentify_unit import _mode
from audit.problem.claims import VERIFIED, ClaimTable, Verdict, verified_verdicts


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
