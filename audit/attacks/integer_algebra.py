"""Exact integer linear algebra for the linear proofs: products without rounding, ranks modulo a prime,
and small rational certificates recovered from floating point."""
from __future__ import annotations

from fractions import Fraction
from math import lcm

import numpy as np

MAX_DENOMINATOR = 10_000  # certificates with larger coefficients are left to the solver
PRIME = 2_147_483_647  # ranks are taken modulo this prime: exact, and never above the rank over Q


def exact_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for integer arrays, exactly: in floats (BLAS) when no partial sum can reach 2**53,
    else in int64 when none can overflow, else in Python integers."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    bound = int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0)) * a.shape[-1]
    if bound < 2 ** 53:
        return np.rint(a.astype(float) @ b.astype(float)).astype(np.int64)
    if bound < 2 ** 63:
        return a @ b
    return a.astype(object) @ b.astype(object)


def rank_mod_p(a: np.ndarray) -> int:
    """Rank of an integer matrix over GF(PRIME), by Gaussian elimination (a lower bound on its rank)."""
    m = np.array(a, dtype=np.int64) % PRIME
    rank = 0
    for col in range(m.shape[1]):
        if rank == m.shape[0]:
            break
        below = np.flatnonzero(m[rank:, col])
        if not len(below):
            continue
        pivot = rank + below[0]
        m[[rank, pivot]] = m[[pivot, rank]]
        m[rank] = m[rank] * pow(int(m[rank, col]), PRIME - 2, PRIME) % PRIME
        rest = rank + 1 + np.flatnonzero(m[rank + 1:, col])
        if len(rest):
            m[rest] = (m[rest] - m[rest, col][:, None] * m[rank] % PRIME) % PRIME
        rank += 1
    return rank


def _rational(y: np.ndarray) -> tuple[int, np.ndarray] | None:
    """Integer coefficients and their common denominator for a float certificate."""
    near = np.round(y)
    if np.abs(y - near).max(initial=0) < 1e-9:
        return 1, near.astype(np.int64)
    fracs = [Fraction(float(v)).limit_denominator(MAX_DENOMINATOR) for v in y]
    scale = lcm(*(f.denominator for f in fracs))
    if scale > MAX_DENOMINATOR ** 2:
        return None
    return scale, np.array([int(f * scale) for f in fracs], dtype=np.int64)
