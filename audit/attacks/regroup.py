"""Claims refuted by re-solving a few persons with everyone else fixed, for units too large for the histogram model.

Exchanges of two persons (:mod:`audit.attacks.exchanges`) cannot move a claim whose columns span a
cycle of tables (tract x age, tract x race, age x race): that takes four persons at once. Here the
persons whose value in the unit's widest column (its geography, say) lies in a small *group* of that
column's atoms are taken out, and the rest are kept as they are. The persons taken out are a unit of
their own, the *part*: the same cells, each published value less what the rest contribute, and an
edit that keeps every row inside the group. Any dataset of the part, with the rest, reproduces the
whole release (every cell's count is the rest's plus the part's), so a claim whose count in a
checked dataset of the part differs from the truth's part is refuted. The part's histogram model is
small (the group's atoms times the others'), and its datasets come from linear and integer programs
whose random objectives lower the counts of the part's open claims (:meth:`HistogramEngine.sample`;
uniform random objectives left four times as many claims open for the next step), then, for each claim still open, from an
integer program that asks for its count to change (:meth:`HistogramEngine.counterexample`) in a part of
its own atom with the largest others, each rounded and checked exactly against the part's cells.
Nothing is verified here: fixing the rest is a restriction, not a relaxation.
"""
from __future__ import annotations


import numpy as np

from ..problem.build import Problem
from ..problem.claims import Claim, ClaimTable, distinct_rows
from ..release.constraints import Constraint
from ..specs.query import Predicate
from .engines.histogram import HistogramEngine
from .implied import LinearProof, flat_mask
from .unit import BYTES_PER_ENTRY

PART_ROWS = 6_000  # atom combinations a part's model may hold (its group's atoms x the other columns' atoms)
PART_SAMPLES = 4  # random objectives per part (linear programs, then half as many integer programs)
SAMPLE_NOISE = 0.1  # uniform weight per support row added to a sample's objective over the part's open claims


class _PartProof(LinearProof):
    """A part's model for sampling alone: every cell a row of its programs (no basis of the exact cells,
    whose elimination costs more than the programs it would shorten)."""

    @property
    def lp_rows(self) -> np.ndarray:
        return np.arange(len(self.keys), dtype=np.int64)


def groups(problem: Problem) -> tuple[int, list[list[int]]]:
    """The widest column and its atoms in groups whose parts fit :data:`PART_ROWS` (at least 2 atoms a
    group, else none: one atom leaves its persons nowhere to go in that column): the atoms ranked by persons
    and dealt out in turn, so that each group holds a large, a middling and a small one (a small tract's rare
    persons find partners in a large one; consecutive runs as well cost 40% more CPU and decided no more)."""
    col = int(np.argmax(problem.sizes))
    others = float(np.prod([s for c, s in enumerate(problem.sizes) if c != col], dtype=float))
    size = int(PART_ROWS // max(others, 1))
    if size < 2 or problem.sizes[col] < 2:
        return col, []
    ranked = _by_persons(problem, col)
    turns = -(-problem.sizes[col] // size)
    dealt = [sorted(ranked[k::turns]) for k in range(turns)]
    return col, [g for g in dealt if len(g) >= 2]


def _by_persons(problem: Problem, col: int) -> list[int]:
    """The column's atoms, most persons first (ties: the lower atom)."""
    return np.argsort(-np.bincount(problem.truth[:, col], minlength=problem.sizes[col]), kind="stable").tolist()


def by_atom(problem: Problem, col: int) -> tuple[np.ndarray, np.ndarray]:
    """Per count cell and atom of column ``col``: the true persons on that atom the cell counts, and whether
    the cell's predicate admits that atom (cells x atoms each), worked out once for every part of the unit."""
    rows, weights = distinct_rows(problem.truth, problem.sizes)
    size = problem.sizes[col]
    counts = np.zeros((len(problem.constraints), size), dtype=np.int64)
    admits = np.zeros((len(problem.constraints), size), dtype=bool)
    start = int(np.sum(problem.sizes[:col]))
    for k, c in enumerate(problem.constraints):
        inside = problem.row_mask(rows, c.predicate)
        counts[k] = np.bincount(rows[inside, col], weights=weights[inside], minlength=size)
        admits[k] = flat_mask(problem, c.predicate)[start:start + size] != 0
    return counts, admits


def part(problem: Problem, col: int, group: list[int], cells: tuple[np.ndarray, np.ndarray]) -> tuple[Problem, list[int]]:
    """The persons of ``group`` (atoms of column ``col``) as a unit of their own, the others fixed, with
    ``col`` first (its edit then cuts the support at once); and the columns' order (``cells``:
    :func:`by_atom` of the unit and ``col``)."""
    mine = problem.truth[np.isin(problem.truth[:, col], group)]
    name, atoms = problem.names[col], frozenset(group)
    counts, admits = cells
    # the rest's persons per cell; a cell that names none of the group's atoms counts 0 in the part by the edit
    fixed = counts.sum(axis=1) - counts[:, group].sum(axis=1)
    kept = admits[:, group].any(axis=1)
    cells = [Constraint(c.key, c.predicate, c.statistic, None if c.lo is None else c.lo - f,
                        None if c.hi is None else c.hi - f, c.lo_open, c.hi_open)
             for c, f, k in zip(problem.constraints, fixed.tolist(), kept.tolist()) if k]
    outside = frozenset(range(problem.sizes[col])) - atoms
    edits = problem.edits + ((Predicate.of({name: outside}),) if outside else ())
    order = [col] + [c for c in range(len(problem.sizes)) if c != col]
    return Problem(problem.level, problem.geo, tuple(problem.domains[c] for c in order), (len(mine), len(mine)),
                   tuple(cells), edits, mine[:, order]), order


def regroup_refuted(problem: Problem, table: ClaimTable, pending: np.ndarray, late, seed: int = 0,
                    budget: float = float("inf")) -> np.ndarray:
    """Which claims at ``pending`` (positions in ``table``) a dataset of some part refutes: a mask over
    ``pending``. Each part of :func:`groups` is sampled with objectives that lower its open claims' counts
    (random weights, :func:`_spread`); then each atom of the widest
    column that open claims name is re-solved with the largest other atoms, one integer program per claim
    still open (:meth:`HistogramEngine.counterexample`), each dataset found checked against every open claim
    of the part. ``late(phase)``: why to stop (the unit's work budget), else None; ``budget``: bytes a
    part's model may hold (:data:`~audit.attacks.unit.BYTES_PER_ENTRY` per cell and atom combination)."""
    out = np.zeros(len(pending), dtype=bool)
    col, parts = groups(problem)
    if not parts or not len(pending):
        return out
    cells = by_atom(problem, col)
    at = np.array([dict(table.claims[i].assignment).get(col, -1) for i in pending.tolist()], dtype=np.int64)

    def model(group: list[int]):
        todo = np.flatnonzero(~out & ((at < 0) | np.isin(at, group)))  # a part moves only its own atoms of col
        if not len(todo) or late("re-solving parts of the unit"):
            return None
        sub, order = part(problem, col, group, cells)
        size = len(group) * float(np.prod(sub.sizes[1:], dtype=float))  # the part's atom combinations
        if len(sub.truth) < 2 or BYTES_PER_ENTRY * len(sub.constraints) * size > budget:
            return None
        linear = _PartProof.of(sub)
        hist = HistogramEngine.of(sub, linear) if linear is not None else None
        if hist is None:
            return None
        back = np.argsort(order)
        truth = table.counts(*distinct_rows(sub.truth[:, back]))

        def refutes(found: np.ndarray) -> None:
            got = table.counts(*distinct_rows(found[:, back]))
            out[todo] |= got[pending[todo]] != truth[pending[todo]]
        return hist, order, todo, refutes

    for k, group in enumerate(parts):
        made = model(group)
        if made is not None:
            hist, order, todo, refutes = made
            row_keys = _row_keys(hist, order, table)

            def cost(rng: np.random.Generator, row_keys=row_keys, todo=todo) -> np.ndarray:
                keys = table.keys[pending[todo[~out[todo]]]]
                if not len(keys):
                    return rng.random(len(row_keys))
                return _spread(row_keys, keys, rng) + SAMPLE_NOISE * rng.random(len(row_keys))
            for found in hist.sample(PART_SAMPLES, seed + k, cost=cost):
                refutes(found)
    ranked = _by_persons(problem, col)
    size = max(len(g) for g in parts)
    for atom in np.unique(at[~out & (at >= 0)]).tolist():
        made = model(sorted([atom] + [a for a in ranked if a != atom][:size - 1]))
        if made is None:
            continue
        hist, order, todo, refutes = made
        place = {c: j for j, c in enumerate(order)}
        mine = todo[at[todo] == atom]
        row_keys = _row_keys(hist, order, table)
        rng = np.random.default_rng(seed + atom)
        for i in mine.tolist():
            if out[i]:
                continue
            if late("re-solving parts of the unit"):
                break
            claim = table.claims[pending[i]]
            # the objective lowers the other open claims' counts too: one dataset refutes several
            cost = _spread(row_keys, table.keys[pending[mine[~out[mine]]]], rng)
            found = hist.counterexample(Claim(tuple(sorted((place[c], v) for c, v in claim.assignment)), claim.m),
                                        cost=cost)
            if found is not None:
                refutes(found)
    return out


def _row_keys(hist: HistogramEngine, order: list[int], table: ClaimTable) -> np.ndarray:
    """Each support row of a part's model keyed for every claim subset of ``table`` (columns back in the unit's order)."""
    return ((hist.linear.rows[:, np.argsort(order)] + 1) * table.strides) @ table.masks.T


def _spread(row_keys: np.ndarray, keys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per support row (its keys for every claim subset, ``row_keys``), the sum of random weights in
    [0.5, 1.5) of the claims with ``keys`` that it falls in: an objective whose minimum lowers their counts."""
    order = np.argsort(keys)
    sorted_keys, weight = keys[order], (rng.random(len(keys)) + 0.5)[order]
    at = np.minimum(np.searchsorted(sorted_keys, row_keys), len(keys) - 1)
    return np.where(sorted_keys[at] == row_keys, weight[at], 0.0).sum(axis=1)
