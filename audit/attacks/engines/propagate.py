"""Bound propagation over a unit's count cells: boxes of histogram space emptied or narrowed without a solver.

Every consistent histogram ``h`` meets each cell ``lo_i <= a_i.h <= hi_i`` (``a_i`` 0/1 on the support,
:class:`~audit.attacks.implied.LinearProof`). Within a box ``lower <= h <= upper`` a cell's least count is
``a_i.lower`` and its greatest ``a_i.upper``; so ``h_j <= hi_i - (a_i.lower - lower_j)`` and
``h_j >= lo_i - (a_i.upper - upper_j)`` for each row ``j`` of the cell. Repeated, this either narrows
the box to bounds every integer point of it meets, or shows that none meets them all: an exact proof
(whole numbers, sums far below 2**53, so exact in floats), which closes an empty box without a linear
program or a Farkas ray.
"""
from __future__ import annotations

import numpy as np

PASSES = 8  # rounds of propagation per box (each costs the cells' entries once)


class Propagator:
    """Bound propagation over the cells of one :class:`~audit.attacks.implied.LinearProof` (every cell, not
    only those its linear programs hold)."""

    def __init__(self, linear):
        a = np.asarray(linear.a)
        self.cell, self.col = (idx.astype(np.int64) for idx in np.nonzero(a))
        self.k, self.n = a.shape
        self.lo = np.asarray(linear.lo, dtype=float).reshape(-1)
        self.hi = np.array([np.inf if h is None else h for h in linear.hi], dtype=float).reshape(-1)
        self.cap = np.asarray(linear.upper, dtype=float)  # no row's count exceeds its smallest cell

    def tighten(self, lower: np.ndarray, upper: np.ndarray,
                passes: int = PASSES) -> tuple[np.ndarray, np.ndarray] | None:
        """The box ``lower <= h <= upper`` (int64; an upper bound of -1 means none) narrowed to bounds that
        every consistent integer point in it meets, or None when it holds none."""
        cell, col, k = self.cell, self.col, self.k
        lb = lower.astype(float)
        ub = np.minimum(np.where(upper < 0, np.inf, upper.astype(float)), self.cap)
        for _ in range(passes):
            if (lb > ub).any():
                return None
            if not len(cell):
                break
            fin = np.isfinite(ub)
            ub_fin = np.where(fin, ub, 0.0)
            least = np.bincount(cell, weights=lb[col], minlength=k)
            most = np.bincount(cell, weights=ub_fin[col], minlength=k)
            unbounded = np.bincount(cell, weights=(~fin)[col].astype(float), minlength=k)
            if (least > self.hi).any() or ((unbounded == 0) & (most < self.lo)).any():
                return None
            new_ub = ub.copy()
            np.minimum.at(new_ub, col, self.hi[cell] - least[cell] + lb[col])
            others = unbounded[cell] - (~fin)[col] > 0  # another row of the cell has no upper bound
            new_lb = lb.copy()
            np.maximum.at(new_lb, col, np.where(others, -np.inf, self.lo[cell] - (most[cell] - ub_fin[col])))
            if np.array_equal(new_lb, lb) and np.array_equal(new_ub, ub):
                break
            lb, ub = new_lb, new_ub
        if (lb > ub).any():
            return None
        return lb.astype(np.int64), np.where(np.isfinite(ub), ub, -1).astype(np.int64)
