"""Suppression internals: complementary suppression for cross-classified tables, and hitting sets.

``simple_heuristic`` is in the spirit of sdcTable's SIMPLEHEURISTIC: it protects every primary
(suppressed) cell of a table with margins against *exact* recovery from the table's linear
relations (each total equals the sum of its line, along hierarchies too), adding the cheapest
secondary suppressions until no primary cell lies in the row space of the relations restricted
to the suppressed cells.
It does not protect intervals (a cell bounded to [1, 2] is not "recovered" here); the
reconstruction-aware loop in :mod:`audit.protection.unit` is what proves claims are gone.

``hitting_set`` picks the cells to suppress: a minimum-cost set satisfying clauses "suppress one
of these cells, or un-suppress one of those", exactly with RC2 (MaxSAT, python-sat) or greedily.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..errors import InternalError
from ..signals import solvers_leave_signals_to_python
from ..specs.schedule import MARGIN, Table
from .recovery import Recovery


def relations(lines: Sequence[tuple[int, Sequence[int]]], n: int) -> np.ndarray:
    """The table's lines (:attr:`audit.specs.schedule.Table.lines`) as rows of ``parts - total = 0``."""
    rows = np.zeros((len(lines), n))
    for r, (total, parts) in enumerate(lines):
        rows[r, total] = -1.0
        rows[r, list(parts)] = 1.0
    return rows


def determined(relations: np.ndarray, suppressed: np.ndarray) -> np.ndarray:
    """Suppressed cells whose value the published cells fix exactly (flags over all cells)."""
    out = np.zeros(len(suppressed), dtype=bool)
    hidden = np.flatnonzero(suppressed)
    if not len(hidden):
        return out
    a = relations[:, hidden]
    if a.shape[0] == 0:
        return out
    # x_j is fixed iff e_j is in the row space of A, i.e. every null-space vector of A is 0 at j
    _, sv, vt = np.linalg.svd(a, full_matrices=True)
    rank = int((sv > 1e-9 * max(1.0, sv.max(initial=0.0))).sum())
    null = vt[rank:]
    fixed = np.all(np.abs(null) < 1e-9, axis=0) if len(null) else np.ones(len(hidden), dtype=bool)
    out[hidden[fixed]] = True
    return out


def simple_heuristic(table: Table, counts: Sequence[int], primary: Iterable[bool],
                     already: Iterable[bool] | None = None) -> np.ndarray:
    """Secondary suppressions so that no primary cell is exactly recoverable from the table's lines.

    ``counts`` are the true counts of the table's cells, ``primary`` the cells to protect,
    ``already`` cells suppressed anyway. Returns the full suppressed flags. Cheapest secondary
    first: non-zero, fewest margins, smallest count (as tau-Argus' default cost); structural zeros
    are known to the attacker, so never chosen.
    """
    ids = [c.id for c in table.cells]
    counts = np.asarray(counts)
    primary = np.asarray(list(primary), dtype=bool)
    suppressed = primary | (np.asarray(list(already), dtype=bool) if already is not None else False)
    rel = relations(table.lines, len(ids))
    if rel.shape[0] == 0:
        return suppressed
    known = [c.structural for c in table.cells]
    cost = {j: (bool(counts[j] == 0), ids[j].count(MARGIN), int(counts[j]), j) for j in range(len(ids))}

    factors: dict = {}
    while True:
        found = Recovery(rel, suppressed, factors)  # one factoring scores every candidate (audit.protection.recovery)
        fixed = found.fixed
        if not (fixed & primary).any():
            break
        near = {k for m, members in table.lines for k in [m, *members]
                if not suppressed[k] and not known[k] and any(fixed[i] for i in [m, *members])}
        if not near:  # widen to every published cell
            near = {k for k in range(len(ids)) if not suppressed[k] and not known[k]}
            if not near:
                break
        ranked = sorted(near, key=cost.get)
        suppressed[min(zip(found.scores(primary, ranked), ranked), key=lambda t: (*t[0], cost[t[1]]))[1]] = True
    return suppressed


def hitting_set(clauses: Sequence[tuple[frozenset, frozenset]], cost: dict[str, int], forced: Iterable[str] = (),
                exact: bool = True, size: dict[str, int] | None = None) -> set[str]:
    """A cheapest set S of cells with, for every clause (pos, neg): S meets pos, or S misses part of neg.

    ``cost``: cell -> tie-break cost (its count); the number of cells (``size``: cells an item stands
    for, default 1) is minimised first. Exact
    with RC2 (MaxSAT); greedy (most clauses hit per cell) when ``exact`` is False.
    """
    forced = set(forced)
    size = size or {}
    if not exact:
        chosen = set(forced)
        while True:
            open_ = [pos for pos, neg in clauses if not (pos & chosen) and neg <= chosen]
            if not open_:
                return chosen
            tally: dict[str, int] = {}
            for pos in open_:
                for c in pos:
                    tally[c] = tally.get(c, 0) + 1
            chosen.add(min(tally, key=lambda c: (-tally[c] / size.get(c, 1), cost.get(c, 0), c)))
    from pysat.examples.rc2 import RC2Stratified
    from pysat.formula import WCNF

    solvers_leave_signals_to_python()  # RC2's calls too (see audit.signals)

    cells = sorted(forced | {c for pos, neg in clauses for c in pos | neg})
    var = {c: i + 1 for i, c in enumerate(cells)}
    big = sum(cost.get(c, 0) for c in cells) + 1
    wcnf = WCNF()
    for c in forced:
        wcnf.append([var[c]])
    for pos, neg in clauses:
        wcnf.append([var[c] for c in sorted(pos)] + [-var[c] for c in sorted(neg)])
    for c in cells:
        if c not in forced:
            wcnf.append([-var[c]], weight=big * size.get(c, 1) + cost.get(c, 0))
    # stratified by weight, with core exhaustion and minimisation: with small clauses (sparse linear
    # proofs) plain RC2 ran for minutes on 671 clauses of households block 1001 that this solves in 0.4 s
    with RC2Stratified(wcnf, adapt=True, exhaust=True, minz=True) as rc2:
        model = rc2.compute()
    if model is None:  # cannot happen: the clauses come from real sets that suppressing more cells hits
        raise InternalError("no hitting set satisfies the explanation clauses")
    true = {lit for lit in model if lit > 0}
    return {c for c in cells if var[c] in true}
