"""RAP-RANK's randomized rounding under the schema's edits, and the exact check of a rounded dataset."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...problem.build import Problem
from .rank_options import _seed, unit_key


def edit_tables(problem: Problem) -> list[list[tuple[int, np.ndarray]]]:
    """Each edit as ``[(column, forbidden-atom mask), ...]`` sorted by column (a row breaks it when every
    clause holds)."""
    out = []
    for e in problem.edits:
        clauses = []
        for name, atoms in e.clauses:
            col = problem.index(name)
            member = np.zeros(problem.sizes[col], dtype=bool)
            member[list(atoms)] = True
            clauses.append((col, member))
        if clauses:
            out.append(sorted(clauses, key=lambda cm: cm[0]))
    return out


def breaks(rows: np.ndarray, edits) -> np.ndarray:
    """Which rows break some edit."""
    bad = np.zeros(len(rows), dtype=bool)
    for clauses in edits:
        hit = np.ones(len(rows), dtype=bool)
        for col, member in clauses:
            hit &= member[rows[:, col]]
        bad |= hit
    return bad


def sample_valid(probs: Sequence[np.ndarray], edits, uniforms: np.ndarray) -> np.ndarray:
    """One row drawn column by column from its softmaxes, each column's draw restricted to the atoms no
    edit forbids given the columns already drawn (an edit is settled at its last column): never breaks an edit
    unless the earlier columns leave a column no allowed atom, then that column draws unrestricted."""
    row = np.zeros(len(probs), dtype=np.int64)
    for c, p in enumerate(probs):
        allowed = np.ones(len(p), dtype=bool)
        for clauses in edits:
            if clauses[-1][0] == c and all(member[row[col]] for col, member in clauses[:-1]):
                allowed &= ~clauses[-1][1]
        w = p * allowed if allowed.any() else p
        if w.sum() <= 0:
            w = allowed.astype(np.float64)
        cdf = np.cumsum(w) / w.sum()
        row[c] = min(int(np.searchsorted(cdf, uniforms[c], side="right")), len(p) - 1)
    return row


def respect_edits(problem: Problem, rounded: np.ndarray, probs: Sequence[np.ndarray], seed: int, run: int,
                  edits=None) -> np.ndarray:
    """``rounded`` (rows x columns) with each row that breaks an edit redrawn by :func:`sample_valid` from its
    softmaxes (``probs[c]`` is rows x atoms), with uniforms seeded by unit and run."""
    edits = edit_tables(problem) if edits is None else edits
    bad = np.flatnonzero(breaks(rounded, edits)) if edits else ()
    if len(bad) == 0:
        return rounded
    out = rounded.copy()
    rng = _seed(seed, unit_key(problem), run, 0xED17)
    u = rng.random((len(bad), len(probs)))
    for i, r in enumerate(bad):
        out[r] = sample_valid([p[r].astype(np.float64) for p in probs], edits, u[i])
    return out


def medians_hold(problem: Problem, rows: np.ndarray, medians) -> bool:
    """Whether the dataset meets every published median exactly (the relaxation only has their two counts)."""
    return all(c.holds(problem.value(rows, c)) for c in medians)
