"""Which suppressed cells a table's lines recover exactly, and how hiding one more cell changes that.

:func:`audit.protection.suppress.simple_heuristic` scores every candidate secondary cell by the cells
the lines would still recover were it hidden too. Scored one null space (an SVD) per candidate per
added cell, a county's tract table (5,073 cells, 43 primaries) did not finish in an hour. Here the
hidden cells are split into the components the lines join (the lines' matrix is block-diagonal over
them), each factored once and kept while it does not change, and every candidate is scored from the
factors: with ``A`` the hidden cells' columns and ``a_k`` the candidate's, hiding ``k`` adds a null
vector ``(x, 1)`` with ``A x = -a_k`` when ``a_k`` lies in ``A``'s column space (a hidden cell ``j`` the
lines recovered stays recovered iff ``x_j = 0``, the same in every solution), and leaves the null
space as it is otherwise (``k`` is then recovered too).
"""
from __future__ import annotations

import numpy as np

TOL = 1e-9  # singular values and null vectors, relative to the largest (as suppress.determined)
SLACK = 1e-7  # a residual or a solution's entry taken as nonzero (the lines' entries are 0 and 1)


class Recovery:
    """The hidden cells' components of ``relations`` (lines x cells, rows ``parts - total = 0``) factored.

    Parameters
    ----------
    relations : np.ndarray
        The table's lines (:func:`audit.protection.suppress.relations`).
    suppressed : np.ndarray
        Flags over the cells: those hidden.
    cache : dict, optional
        Factors of components by their cells, kept between the rounds of one search.
    """

    def __init__(self, relations: np.ndarray, suppressed: np.ndarray, cache: dict | None = None):
        self.relations = relations
        hidden = np.flatnonzero(suppressed)
        self.fixed = np.zeros(len(suppressed), dtype=bool)  # hidden cells the published ones recover
        touched = np.flatnonzero(np.abs(relations[:, hidden]).sum(axis=1) > 0)
        self.touched = np.zeros(relations.shape[0], dtype=bool)
        self.touched[touched] = True
        inc = relations[np.ix_(touched, hidden)] != 0
        cell_of, line_of = _components(inc)
        cache = {} if cache is None else cache
        self.parts = []
        for label in np.unique(cell_of):
            cols = hidden[cell_of == label]
            rows = touched[line_of == label]
            key = cols.tobytes()
            if key not in cache:
                cache[key] = _factor(relations[np.ix_(rows, cols)])
            u, sv, vt, fixed = cache[key]
            self.fixed[cols[fixed]] = True
            self.parts.append((rows, cols, u, sv, vt))

    def scores(self, primary: np.ndarray, candidates: list[int]) -> list[tuple[int, int]]:
        """Per candidate, hidden too: (primary cells the lines then recover, cells they then recover)."""
        b = self.relations[:, candidates]
        resid = np.abs(b[~self.touched]).sum(axis=0)  # a line with no other hidden cell: it recovers k
        freed = np.zeros((2, len(candidates)), dtype=np.int64)  # (primary, all) cells no longer recovered
        for rows, cols, u, sv, vt in self.parts:
            part = b[rows]
            on = np.flatnonzero(np.abs(part).sum(axis=0) > 0)
            if not len(on):
                continue
            part = part[:, on]
            p = u.T @ part
            resid[on] += np.linalg.norm(part - u @ p, axis=0)
            moved = (np.abs(vt.T @ (p / sv[:, None])) > SLACK) & self.fixed[cols][:, None]
            freed[0, on] += (moved & primary[cols][:, None]).sum(axis=0)
            freed[1, on] += moved.sum(axis=0)
        base = (int((self.fixed & primary).sum()), int(self.fixed.sum()))
        return [(base[0] - int(freed[0, i]), base[1] - int(freed[1, i])) if resid[i] <= SLACK else (base[0], base[1] + 1)
                for i in range(len(candidates))]


def _components(inc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Components of the hidden cells that share lines (``inc``: lines x cells, True where a line names a
    cell): a label per cell and per line (union-find over the lines)."""
    parent = list(range(inc.shape[1]))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    firsts = []
    for line in inc:
        cells = np.flatnonzero(line).tolist()
        first = root(cells[0])
        for c in cells[1:]:
            parent[root(c)] = first
        firsts.append(cells[0])
    cell_of = np.array([root(i) for i in range(inc.shape[1])], dtype=np.int64)
    return cell_of, cell_of[firsts] if firsts else np.zeros(0, dtype=np.int64)


def _factor(a: np.ndarray) -> tuple:
    """One component's columns ``a``: (U, singular values, V rows of its row space, recovered columns)."""
    u, sv, vt = np.linalg.svd(a, full_matrices=a.shape[0] < a.shape[1])  # V whole: the null space
    rank = int((sv > TOL * max(1.0, sv.max(initial=0.0))).sum())
    null = vt[rank:]
    fixed = np.all(np.abs(null) < TOL, axis=0) if len(null) else np.ones(a.shape[1], dtype=bool)
    return u[:, :rank], sv[:rank], vt[:rank], fixed
