"""Claims about individuals and the verdicts an exact engine gives them."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from math import comb

import numpy as np

VERIFIED, REFUTED, UNDECIDED = "verified", "refuted", "undecided"


@dataclass(frozen=True)
class Claim:
    """R(a, m): exactly ``m`` rows match the partial assignment ``a`` (column index -> atom index)."""

    assignment: tuple[tuple[int, int], ...]
    m: int

    def __post_init__(self):
        cols = [c for c, _ in self.assignment]
        if cols != sorted(set(cols)) or not cols:
            raise ValueError("a claim needs at least one column, sorted and unique")
        if self.m < 0:
            raise ValueError("multiplicity must be >= 0")

    @property
    def columns(self) -> tuple[int, ...]:
        return tuple(c for c, _ in self.assignment)

    @property
    def singleton(self) -> bool:
        return self.m == 1

    def count(self, rows: np.ndarray) -> int:
        """How many rows of a dataset (atom indices) match."""
        if len(rows) == 0:
            return 0
        mask = np.ones(len(rows), dtype=bool)
        for c, v in self.assignment:
            mask &= rows[:, c] == v
        return int(mask.sum())


@dataclass(frozen=True)
class Verdict:
    """verified (with the explaining cells), refuted (with a counterexample dataset) or undecided."""

    claim: Claim
    status: str
    cells: tuple[str, ...] = ()
    minimal: bool = False
    direct: bool = False
    counterexample: np.ndarray | None = field(default=None, compare=False)
    reason: str = ""

    def __post_init__(self):
        if self.status not in (VERIFIED, REFUTED, UNDECIDED):
            raise ValueError(f"unknown status {self.status}")
        if self.status == REFUTED and self.counterexample is None:
            raise ValueError("a refuted claim must carry its counterexample")


def candidates(truth: np.ndarray, max_columns: int | None = None) -> list[Claim]:
    """Every claim true in the confidential rows, over every subset of up to ``max_columns`` columns."""
    n_cols = truth.shape[1]
    top = n_cols if max_columns is None else min(max_columns, n_cols)
    out = []
    if len(truth) == 0:
        return out
    radix = truth.max(axis=0).astype(np.int64) + 1
    for k in range(1, top + 1):
        for cols in itertools.combinations(range(n_cols), k):
            sub = truth[:, cols]
            keys = np.zeros(len(truth), dtype=object if np.prod(radix[list(cols)].astype(float)) > 2**62 else np.int64)
            for j, c in enumerate(cols):
                keys = keys * int(radix[c]) + sub[:, j]
            _, first, counts = np.unique(keys, return_index=True, return_counts=True)
            for i, m in zip(first, counts):
                out.append(Claim(tuple(zip(cols, (int(v) for v in sub[i]))), int(m)))
    return out


class ClaimTable:
    """Claims as arrays, so that one dataset is checked against thousands of them in one pass.

    A claim's key is sum((atom + 1) * stride[column]) over its assignment; a row's key for a column
    subset is the same sum over that subset, computed for every subset at once by one product.
    """

    def __init__(self, claims: list[Claim], sizes: list[int]):
        radix = np.array([size + 1 for size in sizes], dtype=object)
        strides = [int(np.prod(radix[:c])) for c in range(len(sizes))]
        self.exact = int(np.prod(radix)) < 2 ** 62  # keys fit in int64
        dtype = np.int64 if self.exact else object
        self.strides = np.array(strides, dtype=dtype)
        self.keys = np.array([sum((v + 1) * strides[c] for c, v in claim.assignment) for claim in claims], dtype=dtype)
        self.m = np.array([claim.m for claim in claims], dtype=np.int64)
        subsets = sorted({claim.columns for claim in claims})
        self.masks = np.zeros((len(subsets), len(sizes)), dtype=dtype)
        for i, cols in enumerate(subsets):
            self.masks[i, list(cols)] = 1

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """How many rows of the dataset match each claim."""
        if len(rows) == 0 or len(self.keys) == 0:
            return np.zeros(len(self.keys), dtype=np.int64)
        row_keys = ((np.asarray(rows) + 1) * self.strides) @ self.masks.T
        values, counts = np.unique(row_keys.ravel(), return_counts=True)
        at = np.searchsorted(values, self.keys)
        inside = at < len(values)
        at = np.where(inside, at, 0)
        found = inside & (values[at] == self.keys)
        return np.where(found, counts[at], 0).astype(np.int64)

    def refuted(self, idx: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """For each claim of the table at positions ``idx``, whether the dataset contradicts it."""
        return self.counts(rows)[idx] != self.m[idx]


def baseline_probability(claim: Claim, n: int, prior_rows: np.ndarray | None) -> float | None:
    """Probability the claim holds in ``n`` rows drawn from the prior (Generate-then-Verify eq. 17)."""
    if prior_rows is None or len(prior_rows) == 0:
        return None
    p = claim.count(prior_rows) / len(prior_rows)
    return float(comb(n, claim.m) * p ** claim.m * (1 - p) ** (n - claim.m))
