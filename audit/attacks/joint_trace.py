"""What a joint proof rests on: its propagation steps walked back from each proved bound to the rows,
hence the published cells, it used (:class:`ProofCells` per proved unit)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..problem.build import compact_atoms

if TYPE_CHECKING:
    from .joint_model import _Layer, _Model

LOW, UP = 0, 1  # the two bounds of a variable
EXPLAIN_WORK = 20_000_000  # row terms walked back per proved unit to find its cells; past it, no cells (work, not time)



@dataclass(frozen=True)
class ProofCells:
    """The published cells a jointly proved unit's counts were derived from, per atom row of its own tables.

    ``rows`` are the unit's atom rows that the edits allow (in the smallest unsigned type: the same
    array for every block of a tract, but pickled with each block's problem). An atom the unit's zero
    cells removed rests on the zero cell that removed it, ``names[killer[i]]``; for the others
    (``killer[i] == -1``, listed in ``alive``), the cells from which propagation fixed the count (both
    bounds) are ``names[k]`` for ``k`` in ``index[start[j]:start[j + 1]]`` with ``alive[j] == i``,
    unless ``lost[j]``: walking its derivation back ran past :data:`EXPLAIN_WORK`. The unit's own and
    the parent's cells are named ``TABLE:CELL``; another child's cells carry its geography below the
    parent (``1002/P12:3``).
    """

    rows: np.ndarray
    killer: np.ndarray
    alive: np.ndarray
    start: np.ndarray
    index: np.ndarray
    lost: np.ndarray
    names: tuple[str, ...]

    def explain(self, assignment: tuple[tuple[int, int], ...]) -> tuple[str, ...]:
        """Cells that imply the count of every atom row matching ``assignment`` (column, atom), hence any
        claim over it; () when one of them has none. Sound, not minimal."""
        hit = np.ones(len(self.rows), dtype=bool)
        for col, atom in assignment:
            hit &= self.rows[:, col] == atom
        at = np.flatnonzero(hit)
        killer = self.killer[at]
        walked = np.searchsorted(self.alive, at[killer < 0])
        if self.lost[walked].any():
            return ()
        ids = np.unique(np.concatenate([killer[killer >= 0], *(self.index[self.start[j]:self.start[j + 1]] for j in walked)]))
        return tuple(sorted(self.names[i] for i in ids))


class Trace:
    """The propagation's steps, walked back from proved bounds to the rows, hence the cells, they rest on.

    A step at pass ``q`` tightened one bound with one row from the bounds after pass ``q - 1``, so the
    walk never cycles; each row's other terms are needed on the side the step used. A row whose terms
    omit atoms a zero cell removed (a child's cells, and the parent's links over every child) needs
    those zero cells when it used the omitted terms' upper bounds (0).
    """

    def __init__(self, model: _Model, steps: list, blocks: list, top: _Layer):
        r, v, a = model.arrays()
        order = np.argsort(r, kind="stable")
        self.v, self.a = v[order], a[order]
        self.start = np.searchsorted(r[order], np.arange(len(model.lo) + 1))
        cat = [np.concatenate(x) if steps else np.zeros(0, np.int64) for x in zip(*steps)] or [np.zeros(0, np.int64)] * 4
        step, var, side, row = cat
        self.span = int(step.max()) + 2 if len(step) else 2
        key = (side * model.n_vars + var) * self.span + step
        o = np.argsort(key, kind="stable")
        self.key, self.step, self.var, self.side, self.row = key[o], step[o], var[o], side[o], row[o]
        self.n_vars, self.model, self.blocks, self.top = model.n_vars, model, blocks, top
        self.cell = np.array(model.cell, np.int64)
        self._absent: dict[tuple[int, bool], np.ndarray] = {}
        self._killers = None
        self._ids: dict | None = None  # cell id -> (unit, TABLE:CELL)
        self._rows: dict[int, np.ndarray] = {}

    def _events(self, var: np.ndarray, side: np.ndarray, limit: np.ndarray) -> np.ndarray:
        """The last step at or before ``limit`` that set each (variable, side); -1 where none did."""
        base = (side * self.n_vars + var) * self.span
        at = np.searchsorted(self.key, base + limit, side="right") - 1
        ok = (at >= 0) & (self.key[np.maximum(at, 0)] >= base)
        return np.where(ok, at, -1)

    def walk(self, var: np.ndarray, budget: int) -> tuple[np.ndarray, int] | None:
        """Cell ids behind both bounds of ``var``, and the work done; None past ``budget``."""
        seen = np.zeros(len(self.key), dtype=bool)
        both = np.concatenate([var, var])
        sides = np.repeat([LOW, UP], len(var))
        ev = self._events(both, sides, np.full(len(both), self.span - 1))
        ev = np.unique(ev[ev >= 0])
        cells, work = [], 0
        while len(ev):
            seen[ev] = True
            rows, x, s, q = self.row[ev], self.var[ev], self.side[ev], self.step[ev]
            cells.append(self.cell[rows])
            length = np.where(q > 0, self.start[rows + 1] - self.start[rows], 0)  # pass 0 rests on its row alone
            work += int(length.sum())
            if work > budget:
                return None
            owner = np.repeat(np.arange(len(ev)), length)
            idx = np.arange(len(owner)) - np.repeat(np.cumsum(length) - length, length) + np.repeat(self.start[rows], length)
            tv, ta = self.v[idx], self.a[idx]
            mine = tv == x[owner]
            ax = np.zeros(len(ev), np.int64)
            ax[owner[mine]] = ta[mine]
            uses_max = (ax > 0) == (s == LOW)  # the step used the others' largest sum (else their smallest)
            for row in np.unique(rows[uses_max & (q > 0)]):
                cells.append(self.absent(int(row)))
            dep_side = np.where(uses_max[owner] == (ta > 0), UP, LOW)
            nxt = self._events(tv[~mine], dep_side[~mine], q[owner][~mine] - 1)
            nxt = np.unique(nxt[nxt >= 0])
            ev = nxt[~seen[nxt]]
        ids = np.concatenate(cells) if cells else np.zeros(0, np.int64)
        return np.unique(ids[ids >= 0]), work

    def absent(self, row: int) -> np.ndarray:
        """The zero cells that removed the terms a row leaves out."""
        what = self.model.absent.get(row)
        if what is None:
            return np.zeros(0, np.int64)
        layer, p = what
        if layer == "top":  # every child's fine variables inside the parent's atom p that its zero cells removed
            if self._killers is None:
                self._killers = (np.array([b.killer for b in self.blocks], np.int64).reshape(len(self.blocks), -1)
                                 if self.blocks else np.zeros((0, 0), np.int64))
            fine = np.flatnonzero(self.top.space.inverse == p)
            atoms = np.unique(self.blocks[0].space.inverse[fine]) if self.blocks else np.zeros(0, np.int64)
            return np.unique(self._killers[:, atoms])
        return np.unique(layer.killer[layer.space.members(p + 1)[p]])

    def cells_of(self, layer: _Layer, unit: int, rel: list[str]) -> ProofCells:
        """What explains each atom row of a proved unit (``unit``: child index, or -1 for the parent)."""
        if self._ids is None:
            self._ids = {i: k for k, i in self.model.cells.items()}
        walked, lost, budget = [], np.zeros(len(layer.alive), dtype=bool), EXPLAIN_WORK
        for j, var in enumerate(layer.vars):  # a removed atom rests on the zero cell that removed it
            found = self.walk(np.array([var]), budget) if budget > 0 else None
            budget -= EXPLAIN_WORK if found is None else found[1]
            walked.append(np.zeros(0, np.int64) if found is None else found[0])
            lost[j] = found is None
        dead = layer.killer >= 0
        used, index = np.unique(np.concatenate([layer.killer[dead], *walked]), return_inverse=True)
        index = index.reshape(-1).astype(np.int16 if len(used) < 2 ** 15 else np.int32)
        killer = np.full(len(layer.killer), -1, index.dtype)
        killer[dead] = index[:int(dead.sum())]
        start = np.concatenate([[0], np.cumsum([len(w) for w in walked])]).astype(np.int64)
        names = []
        for c in used:
            owner, key = self._ids[int(c)]
            names.append(key if owner in (unit, -1) else f"{rel[owner]}/{key}")
        return ProofCells(self.rows_of(layer), killer, layer.alive, start, index[int(dead.sum()):].copy(), lost,
                          tuple(names))

    def rows_of(self, layer: _Layer) -> np.ndarray:
        """The layer's atom rows in the smallest unsigned type (atoms per column are few), made once per space."""
        got = self._rows.get(id(layer.space))
        if got is None:
            got = self._rows[id(layer.space)] = compact_atoms(layer.space.rows)
        return got
