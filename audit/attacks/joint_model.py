"""The joint model of a tract with its blocks in histogram space (see :mod:`audit.attacks.joint`):
sparse rows of +-1 over integer counts per block, per block layer and per tract layer, and exact
integer bound propagation over them."""
from __future__ import annotations

import numpy as np

from ..errors import AuditError
from ..problem.build import Domain, _to_atoms
from ..release.constraints import UnitRelease, constraints_of, int_hi, int_lo
from .implied import _flat_of
from .joint_trace import LOW, UP

MAX_PASSES = 1_000  # propagation passes before the bounds reached so far are taken as they are
BIG = 2 ** 40  # stands for no upper bound: above any population, and sums of it stay inside int64


def _atom_map(fine: Domain, coarse: Domain) -> np.ndarray:
    """The coarse atom holding each fine atom (the fine domains refine the coarse ones)."""
    out = np.empty(len(fine), dtype=np.int64)
    for i, atom in enumerate(fine.atoms):
        out[i] = next(k for k, c in enumerate(coarse.atoms) if atom <= c)
    return out


def _cells(release: UnitRelease, by: dict, preds: dict) -> tuple[list[tuple[int, int, int | None, str]], dict]:
    """A release's count cells as (predicate index, lo, hi, ``TABLE:CELL``) over the domains ``by`` (``preds``: predicate ->
    (index, atoms), shared by units over the same domains)."""
    out = []
    for v in release.values:
        for c in constraints_of(v, release.protection[v.cell.table]):
            if c.statistic.kind != "count":
                continue  # sums, means and medians are left out: a relaxation of the release
            key = preds.get(c.predicate)
            if key is None:
                key = preds[c.predicate] = (len(preds), _to_atoms(c.predicate, by))
            out.append((key[0], max(int_lo(c.lo, c.lo_open) or 0, 0), None if c.hi is None else int_hi(c.hi, c.hi_open),
                        c.key.rsplit(":", 1)[0]))
    return out, preds


class _Model:
    """Rows ``lo <= sum a x <= hi`` with ``a`` = +-1 over integer variables ``x >= 0``, as sparse triples;
    per row the published cell it states (an id into ``cells``, -1 for a tie) and what its absent terms need."""

    def __init__(self):
        self.n_vars = 0
        self.r, self.v, self.a, self.lo, self.hi = [], [], [], [], []
        self.cell: list[int] = []
        self.absent: dict[int, tuple] = {}  # row -> (layer, predicate) or ("top", atom): whose zeros it leaves out
        self.cells: dict[tuple[int, str], int] = {}  # (unit: child index, -1 the parent; TABLE:CELL) -> id

    def new(self, n: int) -> int:
        self.n_vars += n
        return self.n_vars - n

    def cell_id(self, unit: int, key: str) -> int:
        return self.cells.setdefault((unit, key), len(self.cells))

    def add(self, var: np.ndarray, coef: np.ndarray, lo: int, hi: int | None, cell: int = -1,
            absent: tuple | None = None) -> None:
        if absent is not None:
            self.absent[len(self.lo)] = absent
        self.r.append(np.full(len(var), len(self.lo), np.int64))
        self.v.append(np.asarray(var, np.int64))
        self.a.append(np.asarray(coef, np.int64))
        self.lo.append(lo)
        self.hi.append(BIG if hi is None else hi)
        self.cell.append(cell)

    def add_rows(self, row: np.ndarray, var: np.ndarray, coef: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 cell: np.ndarray, absent: list | None = None) -> None:
        """Many rows at once: term ``k`` is ``coef[k] * var[k]`` in new row ``row[k]`` (0-based, sorted);
        ``lo``, ``hi`` (BIG: none), ``cell`` and ``absent`` per new row."""
        base = len(self.lo)
        if absent is not None:
            self.absent.update((base + i, x) for i, x in enumerate(absent))
        self.r.append(np.asarray(row, np.int64) + base)
        self.v.append(np.asarray(var, np.int64))
        self.a.append(np.asarray(coef, np.int64))
        self.lo.extend(int(x) for x in lo)
        self.hi.extend(int(x) for x in hi)
        self.cell.extend(int(x) for x in cell)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64))
        return cat(self.r), cat(self.v), cat(self.a)

    def solve(self, where: str, trace: bool = False) -> tuple[np.ndarray, np.ndarray, list]:
        return _propagate(*self.arrays(), np.array(self.lo, np.int64), np.array(self.hi, np.int64), self.n_vars,
                          where, trace)


class _Space:
    """The atoms of one level's tables, as projections of the fine support rows; cells' row sets cached."""

    def __init__(self, fine_rows: np.ndarray, fine: tuple[Domain, ...], own: tuple[Domain, ...]):
        self.sizes, self.names = tuple(map(len, own)), tuple(d.name for d in own)
        self.bounds = np.cumsum((0,) + self.sizes)
        self.by = {d.name: d for d in own}
        maps = [_atom_map(f, c) for f, c in zip(fine, own)]
        proj = (np.column_stack([m[fine_rows[:, k]] for k, m in enumerate(maps)]) if len(fine_rows)
                else np.zeros((0, len(maps)), np.int64))
        self.rows, inverse = np.unique(proj, axis=0, return_inverse=True)
        self.inverse = inverse.reshape(-1)
        self.preds: dict = {}
        self._members: list[np.ndarray] = []

    def members(self, n: int) -> list[np.ndarray]:
        """The rows inside each of the first ``n`` predicates (sorted indices), held for every unit."""
        if len(self._members) < n:
            ordered = sorted(self.preds.values(), key=lambda k: k[0])[len(self._members):]
            flats = np.array([_flat_of(self.sizes, self.names, p) for _, p in ordered], dtype=bool
                             ).reshape(len(ordered), self.bounds[-1]).T
            inside = np.ones((len(self.rows), len(ordered)), dtype=bool)
            for c in range(len(self.sizes)):  # a row lies in a product set iff each of its atoms does
                inside &= flats[self.bounds[c] + self.rows[:, c]]
            self._members.extend(np.flatnonzero(col) for col in inside.T)
        return self._members


class _Layer:
    """One unit's aggregate variables: counts over its own tables' atoms, with its cells as rows.

    Its zero cells remove the atoms they cover (``killer``: the zero cell that removed each), unless
    ``keep_zero``: then every atom stays and the zero cells are rows like the others."""

    def __init__(self, model: _Model, space: _Space, release: UnitRelease, unit: int, keep_zero: bool = False):
        self.model, self.space = model, space
        cells, _ = _cells(release, space.by, space.preds)
        pred = np.array([c[0] for c in cells], np.int64)
        lo = np.array([c[1] for c in cells], np.int64)
        hi = np.array([BIG if c[2] is None else c[2] for c in cells], np.int64)
        ids = np.array([model.cell_id(unit, c[3]) for c in cells], np.int64)
        members = space.members(int(pred.max()) + 1 if len(pred) else 0)
        zero = (hi <= 0) & (not keep_zero)
        self.killer = np.full(len(space.rows), -1, np.int64)
        dead = np.zeros(len(space.rows), dtype=bool)
        if zero.any():  # each atom a zero cell covers is removed, by the first such cell
            got, cell = _terms(members, pred[zero])
            atoms, first = np.unique(got, return_index=True)
            self.killer[atoms] = ids[zero][cell[first]]
            dead[atoms] = True
        self.alive = np.flatnonzero(~dead)
        self.fine_alive = np.flatnonzero(~dead[space.inverse])  # fine rows this unit can hold
        where = np.full(len(space.rows), -1, np.int64)
        where[self.alive] = np.arange(len(self.alive))
        self.of_fine = where[space.inverse]  # fine row -> own variable (-1: none)
        self.vars = model.new(len(self.alive)) + np.arange(len(self.alive))
        keep = ~zero
        got, row = _terms(members, pred[keep])
        own = where[got]
        model.add_rows(row[own >= 0], self.vars[own[own >= 0]], np.ones(int((own >= 0).sum()), np.int64), lo[keep],
                       hi[keep], ids[keep], None if keep_zero else [(self, int(q)) for q in pred[keep]])

    def link(self, f_vars: np.ndarray, f_rows: np.ndarray, top: bool = False) -> None:
        """Rows ``own[k] - sum of the fine variables inside atom k = 0`` (``top``: the fine variables are
        every child's, and a child's zero cells leave some out)."""
        own = self.of_fine[f_rows]
        order = np.argsort(own, kind="stable")
        edges = np.searchsorted(own[order], np.arange(len(self.alive) + 1))
        n = len(self.alive)
        size = np.diff(edges) + 1  # the own variable, then the fine ones inside its atom
        row = np.repeat(np.arange(n), size)
        first = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
        var = np.empty(len(row), np.int64)
        var[first] = self.vars
        rest = np.ones(len(row), dtype=bool)
        rest[first] = False
        var[rest] = f_vars[order[edges[0]:edges[-1]]]
        coef = np.where(rest, 1, -1)
        self.model.add_rows(row, var, coef, np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64),
                            [("top", int(a)) for a in self.alive] if top else None)

    def fixed(self, low: np.ndarray, up: np.ndarray) -> bool:
        return bool((low[self.vars] == up[self.vars]).all())

    def histogram(self, low: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The unit's rows (atom indices of its own tables) and their proved counts."""
        counts = low[self.vars]
        held = counts > 0  # the atoms no person is on need no row (a proved block holds a few of its 10,000)
        return self.space.rows[self.alive[held]], counts[held]

def _terms(members: list[np.ndarray], preds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows inside each of ``preds``, concatenated, and the position in ``preds`` of each."""
    parts = [members[q] for q in preds]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(parts), np.repeat(np.arange(len(parts)), [len(x) for x in parts])


def _flats(sizes: tuple[int, ...], names: tuple[str, ...], preds: dict, bounds: np.ndarray) -> np.ndarray:
    """The predicates (in their index order) as flat atom masks."""
    ordered = sorted(preds.values(), key=lambda k: k[0])
    return np.array([_flat_of(sizes, names, p) for _, p in ordered], dtype=np.int64).reshape(len(ordered), bounds[-1])


def _propagate(r: np.ndarray, v: np.ndarray, a: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_vars: int,
               where: str, trace: bool = False) -> tuple[np.ndarray, np.ndarray, list]:
    """Integer bounds on every variable, tightened by every row ``lo <= sum a x <= hi`` (``a`` = +-1)
    to a fixed point; each step is exact integer arithmetic implied by the rows and ``x >= 0``.

    With ``trace``, also the steps: per pass and side (:data:`LOW`, :data:`UP`), the variables it
    tightened and the row that did it (pass 0: a row of positive terms bounds each term by its ``hi``)."""
    steps: list = []
    low = np.zeros(n_vars, dtype=np.int64)
    up = np.full(n_vars, BIG, dtype=np.int64)
    pos = a > 0
    n_rows = len(lo)
    plain = np.bincount(r, weights=~pos, minlength=n_rows) == 0  # rows of positive terms: each term <= hi
    np.minimum.at(up, v[plain[r]], hi[r[plain[r]]])
    if trace:
        _step(steps, 0, UP, v, r, plain[r] & (hi[r] == up[v]) & (up[v] < BIG))
    for step in range(1, MAX_PASSES + 1):
        cmin = np.where(pos, low[v], -up[v])
        cmax = np.where(pos, up[v], -low[v])
        mn, mx = _sums(r, cmin, n_rows), _sums(r, cmax, n_rows)
        if (mn > hi).any() or (mx < lo).any():
            raise AuditError("the published values admit no dataset (joint solve of block and tract tables)", where,
                             "check the release for conflicting values")
        rest_min, rest_max = mn[r] - cmin, mx[r] - cmax
        # a x_i <= hi - rest_min and a x_i >= lo - rest_max
        cand_up = np.where(pos, hi[r] - rest_min, rest_max - lo[r])
        cand_low = np.where(pos, lo[r] - rest_max, rest_min - hi[r])
        new_up, new_low = up.copy(), low.copy()
        np.minimum.at(new_up, v, cand_up)
        np.maximum.at(new_low, v, cand_low)
        if (new_low > new_up).any():
            raise AuditError("the published values admit no dataset (joint solve of block and tract tables)", where,
                             "check the release for conflicting values")
        if np.array_equal(new_up, up) and np.array_equal(new_low, low):
            break
        if trace:
            _step(steps, step, UP, v, r, (cand_up == new_up[v]) & (new_up[v] < up[v]))
            _step(steps, step, LOW, v, r, (cand_low == new_low[v]) & (new_low[v] > low[v]))
        low, up = new_low, new_up
    return low, up, steps


def _step(steps: list, step: int, side: int, v: np.ndarray, r: np.ndarray, hit: np.ndarray) -> None:
    """Record, for each variable a pass tightened on ``side``, the first row that gave its new bound."""
    var, first = np.unique(v[hit], return_index=True)
    if len(var):
        steps.append((np.full(len(var), step, np.int64), var, np.full(len(var), side, np.int64), r[hit][first]))


def _sums(r: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """Per-row sums of int64 terms, exactly: high and low 26-bit parts summed apart in floats
    (each sum stays below 2**53), then recombined in int64."""
    high = np.bincount(r, weights=w >> 26, minlength=n).astype(np.int64)
    low = np.bincount(r, weights=w & (2 ** 26 - 1), minlength=n).astype(np.int64)
    return (high << 26) + low
