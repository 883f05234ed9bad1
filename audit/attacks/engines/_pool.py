"""The datasets an explainer checks claims against: the published cells evaluated on datasets given as
changes to the true rows (:class:`CellBook`), and the pool of such datasets a unit's explanations
share (:class:`Pool`: the truth with a row or two changed, and every counterexample a solver returns)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from ...errors import InternalError
from ...memo import keep
from ...problem.claims import Claim
from ..implied import flat_mask
from ._near import exchanges, one_row
from ...problem.build import Problem
from ...release.constraints import int_hi, int_lo

MAX_NEAR = 20_000  # datasets near the truth seeded into a unit's pool
CHUNK = 1_000  # datasets whose cells' counts are taken at once


SHAPES = 8  # kept cell shapes (:func:`_shape`): a run's levels, each with its own cells
_SHAPES: dict = {}


@dataclass(frozen=True)
class _Shape:
    """What a unit's explainable cells are, not what they hold: the count constraints evaluated (positions
    in the problem's constraints then the fixed ones; the first ``n_cells`` name a cell), the atoms each
    allows (atoms x counts) and the column of its cell (-1: a fixed count), whether each cell has one count
    of its own, the sum, mean and median constraints (cell column, position) and the atoms each edit allows."""

    counts: tuple[int, ...]
    n_cells: int
    by_atom: np.ndarray
    cell: np.ndarray
    one_each: bool
    numeric: tuple[tuple[int, int], ...]
    edit_by_atom: np.ndarray

    def __post_init__(self):
        if self.by_atom.shape[1] != len(self.counts) or len(self.cell) != len(self.counts):
            raise InternalError("a cell shape's masks do not match its counts")


def _shape(problem: Problem, keys: list[str], fixed: tuple) -> _Shape:
    """The :class:`_Shape` of a problem's cells, kept by their keys, predicates and kinds: a level's units share
    it (making it anew was 8% of a small block's explanations)."""
    every = (*problem.constraints, *fixed)
    key = (problem.sizes, problem.names, problem.edits, tuple(keys), len(problem.constraints),
           tuple((c.key, c.predicate, c.statistic.kind) for c in every))
    found = _SHAPES.get(key)
    if found is not None:
        return found
    index = {k: i for i, k in enumerate(keys)}
    cell = [c.key.rsplit(":", 1)[0] for c in every]  # TABLE:CELL of each
    inside = len(problem.constraints)
    counts = [i for i in range(inside) if every[i].statistic.kind == "count" and cell[i] in index]
    n_cells = len(counts)
    counts += [i for i in range(inside, len(every)) if cell[i] not in index]  # the last columns of the counts
    width = int(np.sum(problem.sizes))
    flats = np.array([flat_mask(problem, every[i].predicate) for i in counts], dtype=np.int64).reshape(len(counts), width)
    named = [index[cell[i]] for i in counts[:n_cells]]
    edits = np.array([flat_mask(problem, e) for e in problem.edits], dtype=np.int64).reshape(len(problem.edits), width)
    found = _Shape(tuple(counts), n_cells, _frozen(flats.T.astype(bool)),  # atom -> count cells whose region allows it
                   _frozen(np.array(named + [-1] * (len(counts) - n_cells), dtype=np.int64)), len(set(named)) == len(named),
                   tuple((index[cell[i]], i) for i in range(inside) if every[i].statistic.kind != "count" and cell[i] in index),
                   _frozen(edits.T.astype(bool)))
    return keep(_SHAPES, key, found, SHAPES)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


class CellBook:
    """The published cells of a problem, evaluated on datasets given as changes to a base dataset.

    ``keys`` are the cells an explanation may name (the engine's order); constraints of other cells
    (the population, fixed by the engines) are not evaluated, but for the ``fixed`` counts (the child
    units' populations of a laid-out coupled problem), which a dataset must meet.
    """

    def __init__(self, problem: Problem, keys: Sequence[str], base: np.ndarray, fixed: Sequence = ()):
        self.problem, self.keys = problem, list(keys)
        self.bounds = np.cumsum((0,) + problem.sizes)
        shape = _shape(problem, self.keys, tuple(fixed))
        every = (*problem.constraints, *fixed)
        counts = [every[i] for i in shape.counts]
        self.n_cells, self._by_atom, self._edit_by_atom = shape.n_cells, shape.by_atom, shape.edit_by_atom
        self._cell, self._one_each = shape.cell, shape.one_each
        self.numeric = [(cell, every[i]) for cell, i in shape.numeric]
        self.lo = np.array([int_lo(c.lo, c.lo_open) or 0 for c in counts], dtype=np.int64)
        self.hi = np.array([np.iinfo(np.int32).max if c.hi is None else int_hi(c.hi, c.hi_open) for c in counts],
                           dtype=np.int64)
        self._lo32, self._hi32 = (np.clip(b, -1, np.iinfo(np.int32).max).astype(np.int32) for b in (self.lo, self.hi))
        self.base = np.asarray(base, dtype=np.int64).reshape(-1, len(problem.sizes))
        self.base_member = self.member(self.base)
        self.base_counts = self.base_member.sum(axis=0, dtype=np.int32)
        self._base_in = self.base_member.astype(bool)
        # whether each count constraint breaks with one row more, one fewer, or as the base has it
        self._breaks = [(d < self.lo) | (d > self.hi) for d in (self.base_counts + 1, self.base_counts - 1, self.base_counts)]

    def member(self, rows: np.ndarray) -> np.ndarray:
        """Which count cells' regions hold each row (rows x count constraints, 0/1)."""
        return self._inside(rows, self._by_atom).astype(np.int32)

    def allowed(self, rows: np.ndarray) -> np.ndarray:
        """Which rows no structural edit forbids."""
        return ~self._inside(rows, self._edit_by_atom).any(axis=1)

    def _inside(self, rows: np.ndarray, by_atom: np.ndarray) -> np.ndarray:
        """Which product sets (atom -> set masks) hold each row: gathers, not a matrix product (no
        BLAS threads for a small product)."""
        rows = np.asarray(rows).reshape(-1, len(self.bounds) - 1)
        out = np.ones((len(rows), by_atom.shape[1]), dtype=bool)
        for c in range(rows.shape[1]):
            out &= by_atom[self.bounds[c] + rows[:, c]]
        return out

    def broken(self, old: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cells broken by each dataset ``base - base[old[k]] + new[k]`` (datasets x cells, bool), and
        whether each meets the fixed counts."""
        k = len(old)
        if k > 1 and old.shape[1] == new.shape[1] == 1:  # one row changed: each count one more, one fewer or kept
            gained, lost = self._inside(new[:, 0], self._by_atom), self._base_in[old[:, 0]]
            changed = gained ^ lost
            bad = changed & np.where(gained, *self._breaks[:2])
            if self._breaks[2].any():
                bad |= ~changed & self._breaks[2]
        else:
            if k == 1:  # one whole dataset
                counts = (self.base_counts - self.base_member[old[0]].sum(axis=0) + self.member(new[0]).sum(axis=0))[None]
            else:  # many small changes
                counts = np.broadcast_to(self.base_counts, (k, len(self.lo))).copy()
                for r in range(old.shape[1]):
                    counts -= self.base_member[old[:, r]]
                for r in range(new.shape[1]):
                    counts += self.member(new[:, r])
            bad = (counts < self._lo32) | (counts > self._hi32)  # counts are 0 or more: the same as int64 bounds
        out = np.zeros((k, len(self.keys)), dtype=bool)
        if self._one_each:
            out[:, self._cell[:self.n_cells]] = bad[:, :self.n_cells]
        else:
            data, constraint = np.nonzero(bad[:, :self.n_cells])
            out[data, self._cell[constraint]] = True
        for cell, c in self.numeric:
            out[:, cell] |= ~self._holds(c, old, new)
        return out, ~bad[:, self.n_cells:].any(axis=1)

    def _holds(self, c, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        """Whether each dataset meets a sum, mean or median cell; each distinct value is checked once,
        by the constraint itself."""
        width = len(self.bounds) - 1
        if old.shape[1] != new.shape[1]:  # datasets of another size than the base: one at a time
            return np.array([c.holds(self.problem.value(np.vstack([np.delete(self.base, o, axis=0), n.reshape(-1, width)]), c))
                             for o, n in zip(old, new)], dtype=bool)
        rows = np.repeat(self.base[None], len(old), axis=0)
        rows[np.arange(len(old))[:, None], old] = new
        flat = flat_mask(self.problem, c.predicate).astype(bool)
        inside = np.ones(rows.shape[:2], dtype=bool)
        for j in range(width):
            inside &= flat[self.bounds[j] + rows[..., j]]
        col = self.problem.index(c.statistic.column)
        values = np.asarray(self.problem.domains[col].values, dtype=np.int64)[rows[..., col]]
        count = inside.sum(axis=1)
        if c.statistic.kind == "median":  # twice the median: the middle value, or the two middle ones
            ordered = np.sort(np.where(inside, values, np.iinfo(np.int64).max), axis=1)
            upper = ordered[np.arange(len(rows)), np.minimum(count // 2, rows.shape[1] - 1)]
            lower = ordered[np.arange(len(rows)), np.maximum((count - 1) // 2, 0)]
            keys = np.column_stack([count, np.where(count > 0, lower + upper, 0)])
            value = lambda n, t: Fraction(int(t), 2) if n else None  # noqa: E731
        else:
            keys = np.column_stack([count, (inside * values).sum(axis=1)])
            value = ((lambda n, t: Fraction(int(t), int(n)) if n else None) if c.statistic.kind == "mean"
                     else (lambda n, t: Fraction(int(t))))
        distinct, back = np.unique(keys, axis=0, return_inverse=True)
        return np.array([c.holds(value(n, t)) for n, t in distinct], dtype=bool)[back.ravel()]


class Pool:
    """Datasets that meet the edits and the population (and the fixed counts), each stored as changes to the base dataset
    (rows of it removed, rows added), with the cells it breaks; shared by every claim of a unit."""

    def __init__(self, book: CellBook):
        self.book = book
        self._parts: list[tuple] = []  # (broken, removed: dataset id and base row, added: dataset id and row)
        self._size = 0
        self._joined: tuple | None = None

    def __len__(self) -> int:
        return self._size

    @property
    def broken(self) -> np.ndarray:
        """Cells each dataset breaks (datasets x cells)."""
        return self._join()[0]

    def _join(self) -> tuple:
        if self._joined is None:
            width = len(self.book.bounds) - 1
            parts = list(zip(*self._parts)) or [[np.zeros((0, len(self.book.keys)), bool)], [np.zeros(0, np.int64)],
                                                 [np.zeros(0, np.int64)], [np.zeros(0, np.int64)],
                                                 [np.zeros((0, width), np.int64)]]
            self._joined = tuple(np.concatenate(p) for p in parts)
            self._parts = [self._joined]
        return self._joined

    def add(self, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        """Add the datasets ``base - base[old[k]] + new[k]`` that meet the edits and the population;
        returns which were kept."""
        old = np.asarray(old, dtype=np.int64).reshape(len(old), -1)
        new = np.asarray(new, dtype=np.int64).reshape(len(old), -1, len(self.book.bounds) - 1)
        lo, hi = self.book.problem.n_rows
        size = len(self.book.base) - old.shape[1] + new.shape[1]
        ok = self.book.allowed(new.reshape(-1, new.shape[2])).reshape(len(new), -1).all(axis=1) & (lo <= size <= hi)
        old, new = old[ok], new[ok]
        parts = [self.book.broken(old[i:i + CHUNK], new[i:i + CHUNK]) for i in range(0, len(old), CHUNK)] or \
            [self.book.broken(old, new)]  # in chunks: the counts of 20,000 datasets over 11,000 cells took 0.9 GB
        broken, fits = (np.concatenate(part) for part in zip(*parts))
        ok[ok] = fits
        old, new, broken = old[fits], new[fits], broken[fits]
        ids = self._size + np.arange(len(old))
        self._parts.append((broken, np.repeat(ids, old.shape[1]), old.ravel(),
                            np.repeat(ids, new.shape[1]), new.reshape(-1, new.shape[2])))
        self._size += len(old)
        self._joined = None
        return ok

    def add_dataset(self, rows: np.ndarray) -> np.ndarray | None:
        """Add one whole dataset (a solver's model); returns the cells it breaks, or None if it breaks
        an edit, the population or a fixed count."""
        rows = np.asarray(rows, dtype=np.int64)
        if not self.add(np.arange(len(self.book.base))[None], rows[None])[0]:
            return None
        return self._parts[-1][0][0]

    def counts(self, claim: Claim) -> np.ndarray:
        """The claim's count in every dataset."""
        _, old_ids, old, new_ids, new = self._join()
        cols = [c for c, _ in claim.assignment]
        vals = np.array([v for _, v in claim.assignment])
        base = self.book.base
        gained = np.bincount(new_ids[(new[:, cols] == vals).all(axis=1)], minlength=self._size)
        lost = np.bincount(old_ids[(base[old][:, cols] == vals).all(axis=1)], minlength=self._size)
        return int((base[:, cols] == vals).all(axis=1).sum()) - lost + gained

    def seed_near(self, limit: int = MAX_NEAR) -> None:
        """Add the base dataset with one row changed in one or two columns, then with two rows
        exchanging their values in one or two columns (up to ``limit`` datasets, in a fixed order:
        see :mod:`audit.attacks.engines._near`)."""
        base = self.book.base
        if len(base) == 0:
            return
        index = np.sort(np.unique(base, axis=0, return_index=True)[1])  # each distinct row's first position
        rows = base[index]
        self._add_capped(*one_row(rows, index, self.book.problem.sizes, limit))
        self._add_capped(*exchanges(rows, index, limit - len(self)))

    def _add_capped(self, old: np.ndarray, new: np.ndarray) -> None:
        if len(old):
            self.add(old, new)
