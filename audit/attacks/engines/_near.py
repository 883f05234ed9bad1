"""Datasets near the truth that seed an explainer's pool (:meth:`audit.attacks.engines._pool.Pool.seed_near`),
made for every column subset at once: the same datasets, in the same order, as a loop over the subsets, in a
fraction of the time (that loop's numpy overhead was a sixth of a small block's explanations)."""
from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=16)
def _subsets(width: int) -> np.ndarray:
    """The one- and two-column subsets, one column first, each in :func:`itertools.combinations` order,
    as (first, last) columns."""
    subsets = [cs for k in (1, 2) for cs in itertools.combinations(range(width), k)]
    out = np.array([(cs[0], cs[-1]) for cs in subsets], dtype=np.int64).reshape(-1, 2)
    out.flags.writeable = False
    return out


@lru_cache(maxsize=16)
def _changes(sizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Every change of the columns of a subset (:func:`_subsets`) to new values, by subset, then values
    (lexicographic): the subset, first column and value, last column and value (a one-column change
    names its column twice)."""
    parts = []
    for s, (first, last) in enumerate(_subsets(len(sizes)).tolist()):
        cs = sorted({first, last})
        grid = np.array(list(itertools.product(*(range(sizes[c]) for c in cs))), dtype=np.int64).reshape(-1, len(cs))
        parts.append(np.column_stack([np.full(len(grid), s), np.full(len(grid), first), grid[:, 0],
                                      np.full(len(grid), last), grid[:, -1]]))
    out = tuple(np.ascontiguousarray(a) for a in np.concatenate(parts).T)
    for a in out:
        a.flags.writeable = False
    return out


def one_row(rows: np.ndarray, index: np.ndarray, sizes: tuple[int, ...], limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``limit`` datasets with one of the distinct ``rows`` (at base positions ``index``) changed
    in every column of a one- or two-column subset: by subset, then row, then new values. Returns the
    base rows removed (datasets x 1) and the rows added (datasets x 1 x columns)."""
    subset, c1, v1, c2, v2 = _changes(tuple(sizes))
    differs = (rows[:, c1] != v1) & (rows[:, c2] != v2)  # rows x changes
    i, e = np.nonzero(differs)  # by row, then change
    order = np.argsort(subset[e] * len(rows) + i, kind="stable")[:limit]  # by subset, then row, then values
    i, e = i[order], e[order]
    new = rows[i]
    at = np.arange(len(i))
    new[at, c1[e]] = v1[e]
    new[at, c2[e]] = v2[e]
    return index[i][:, None], new[:, None]


def exchanges(rows: np.ndarray, index: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``limit`` datasets with two distinct rows exchanging their values in every column of a one-
    or two-column subset (both rows differing in each): by subset, then pair of rows. Returns the base rows
    removed (datasets x 2) and the rows added (datasets x 2 x columns)."""
    n, width = rows.shape
    i, j = np.triu_indices(n, 1)
    if limit <= 0 or not len(i):
        return np.zeros((0, 2), np.int64), np.zeros((0, 2, width), np.int64)
    pairs = _subsets(width)
    differ = rows[i] != rows[j]  # pairs x columns
    s, p = np.nonzero((differ[:, pairs[:, 0]] & differ[:, pairs[:, 1]]).T)  # by subset, then pair
    s, p = s[:limit], p[:limit]
    a, b = rows[i[p]], rows[j[p]]
    at = np.arange(len(p))
    for c in (pairs[s, 0], pairs[s, 1]):
        a[at, c], b[at, c] = rows[j[p], c], rows[i[p], c]
    return np.column_stack([index[i[p]], index[j[p]]]), np.stack([a, b], axis=1)
