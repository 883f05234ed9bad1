"""Joint solve of a coarser unit (a tract) with its blocks in histogram space, at real size.

With tables at two levels (SF1 block tables and the tract's PCT12), the blocks of a tract are no
longer independent. Here a tract's datasets are integer histograms, never rows, so the model grows
with the support and the number of blocks, not with the persons (a tract of 4,290 persons and 423
blocks: 19,000 variables). Three layers of non-negative integer variables:

* ``f[j, r]``: persons of block ``j`` on fine atom ``r`` (the atoms of every table; ``r`` ranges over
  the support left by the edits and the tract's zero cells, then by the block's zero cells);
* ``g[j, a]``: persons of block ``j`` on atom ``a`` of the block tables; each block cell is a sum of them;
* ``t[b]``: persons of the tract on atom ``b`` of the tract tables; each tract cell is a sum of them;

tied by ``g[j, a] = sum f[j, r in a]`` and ``t[b] = sum_j f[j, r in b]``: sparse rows with coefficients
+-1, held as (row, variable, coefficient) triples.

Proof: bound propagation, in exact integer arithmetic. Every variable has bounds ``l <= x <= u``;
a row ``lo <= sum a_k x_k <= hi`` tightens each of its variables from the others' bounds (for
``a_i = 1``: ``x_i <= hi - min(rest)`` and ``x_i >= lo - max(rest)``), all rows at once, repeated
to a fixed point. Each bound is implied by the release, so a variable with ``l == u`` has that
value in every dataset. A block whose ``g`` are all fixed has one histogram over its own tables'
atoms -- one dataset, as a block unit counts them -- and the tract likewise with its ``t``. What
propagation leaves open is never called unique: those units are audited on their own tables, which
is sound since they are a relaxation of the joint release; a coarser unit too large for that has its
claims decided over this model, reduced to what propagation left open (:mod:`audit.attacks.joint_claims`).
Only count cells enter the model (sums,
means and medians are left out), so it is a relaxation too, and uniqueness there holds for the release.
A bound that crosses (``l > u``) shows the release admits no dataset: an input error.

Tested against brute force on random tracts of a few blocks (tests/test_joint.py); on the Bureau's
extract with block and tract tables every one of the 8,530 blocks is proved (README, "Running at scale").
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from .implied import MAX_SUPPORT, _flat_of, support
from ..problem.build import _to_atoms, cell_domains
from ..release.constraints import UnitRelease, constraints_of
from ..specs.schedule import Schedule
from ..specs.schema import Schema
from ..problem.coupled import coupled_levels, finest_level
from .joint_claims import JointSystem
from .joint_model import _cells, _Model, _Space, _Layer, _flats
from .joint_trace import Trace

@dataclass(frozen=True)
class TractProof:
    """What the joint solve proved about the children (blocks) of one coarser unit (a tract)."""

    geo: tuple[str, ...]
    children: tuple[tuple[str, ...], ...]  # the child units' geographies
    unique: tuple[bool, ...]  # per child: its histogram over its own tables' atoms is the same in every dataset
    parent_unique: bool  # the same for the parent's histogram over its own tables' atoms
    variables: int
    cells: int
    seconds: float
    histograms: tuple = field(default=(), compare=False, repr=False)  # per child: (rows, counts) when unique
    parent_histogram: tuple | None = field(default=None, compare=False, repr=False)
    explanations: tuple = field(default=(), compare=False, repr=False)  # per child: ProofCells when unique
    bounds: tuple = field(default=(), compare=False, repr=False)  # per child: its atom rows and their proved (low, up)
    parent_explanation: object = field(default=None, compare=False, repr=False)
    system: object = field(default=None, compare=False, repr=False)  # the parent's open joint model, when not proved

    def summary(self) -> str:
        return (f"{sum(self.unique)} of {len(self.children)} blocks proved to have one dataset by the joint "
                f"histogram solve of unit {'/'.join(self.geo)} ({self.variables:,} variables, {self.cells:,} cells)")

    def note(self) -> str:
        """The note a proved child carries: what proves it."""
        return (f"one dataset, proved jointly with every block and tract table of unit {'/'.join(self.geo)} "
                "(histogram-space bound propagation)")


def prove_tract(schema: Schema, schedule: Schedule, releases: list[UnitRelease], parent: UnitRelease,
                explain: bool = True) -> TractProof:
    """Prove which children of ``parent``, and whether ``parent`` itself, have one dataset under every table.

    ``releases`` holds the finest-level releases inside ``parent`` (its blocks). Variables: ``f``
    counts per block over the atoms of every table; per block, ``g`` counts over its own tables' atoms
    (its cells are sums of these), and for the parent ``t`` counts over its own tables' atoms (its cells
    are sums of these), each tied to ``f`` by ``g = sum f`` and ``t = sum f`` per atom. A unit is
    proved when bound propagation fixes all of its ``g`` (or ``t``) variables. With ``explain``, each
    proved unit also gets the cells its counts were derived from (:class:`~audit.attacks.joint_trace.ProofCells`).
    """
    start = time.perf_counter()
    built = joint_model(schema, schedule, releases, parent, explain)
    if built is None:  # too many atoms to hold: nothing is proved, and the units are audited on their own
        return TractProof(parent.geo, tuple(r.geo for r in releases), (False,) * len(releases), False, 0, 0,
                          time.perf_counter() - start, (None,) * len(releases))
    model, blocks, top, explain = built
    depth = list(schema.geography).index(parent.level)
    low, up, steps = model.solve("/".join(parent.geo), trace=explain)
    unique = tuple(b.fixed(low, up) for b in blocks)
    hists = tuple(b.histogram(low) if ok else None for b, ok in zip(blocks, unique))
    top_fixed = top.fixed(low, up)
    why: tuple = (None,) * (len(releases) + 1)
    if explain:
        rel = ["/".join(r.geo[depth + 1:]) for r in releases]
        trace = Trace(model, steps, blocks, top)
        # the children only: the parent's every atom would be walked back (26,000 in an SF1 tract)
        why = tuple(trace.cells_of(b, u, rel) if ok else None for u, (b, ok) in enumerate(zip(blocks, unique))) + (None,)
    system = None if top_fixed else JointSystem.of(
        top.space.names, model.arrays(), np.array(model.lo, np.int64), np.array(model.hi, np.int64), low, up, top.vars,
        top.space.rows[top.alive], all(counts_only(r) for r in [parent, *releases]))
    model.absent.clear()  # its layers refer to the model: free the cycle now, not at the next full collection
    return TractProof(parent.geo, tuple(r.geo for r in releases), unique, top_fixed, model.n_vars,
                      len(model.lo), time.perf_counter() - start, hists, top.histogram(low) if top_fixed else None,
                      explanations=why[:-1], parent_explanation=why[-1],
                      bounds=tuple((b.space.rows[b.alive], low[b.vars], up[b.vars]) for b in blocks), system=system)


def counts_only(release: UnitRelease) -> bool:
    """Whether every published statistic of the release is a count (the joint model holds no other)."""
    return all(c.statistic.kind == "count" for v in release.values
               for c in constraints_of(v, release.protection[v.cell.table]))


def joint_model(schema: Schema, schedule: Schedule, releases: list[UnitRelease], parent: UnitRelease,
                explain: bool = False) -> tuple[_Model, list[_Layer], _Layer, bool] | None:
    """The joint model of ``parent`` and its children (see :func:`prove_tract`): the rows, each child's
    layer, the parent's layer, and whether it is built to be traced; None when its support is too large."""
    geo = list(schema.geography)
    depth = geo.index(parent.level)
    child_level = releases[0].level if releases else parent.level
    tables = [t for t in schedule.tables if geo.index(t.level) >= depth]
    fine = cell_domains(schema, [c for t in tables for c in t.cells])
    names = tuple(d.name for d in fine)
    layers = [cell_domains(schema, [c for t in tables if t.level == lv for c in t.cells]) for lv in (child_level, parent.level)]
    fine_sizes = tuple(map(len, fine))
    fb = np.cumsum((0,) + fine_sizes)
    edits = np.array([_flat_of(fine_sizes, names, _to_atoms(e.forbid, {d.name: d for d in fine})) for e in schema.edits],
                     dtype=np.int64).reshape(len(schema.edits), fb[-1])
    # the parent's zero cells, over the fine atoms, bound the support shared by every block
    parent_cells = _cells(parent, {d.name: d for d in fine}, {})
    zero_flats = _flats(fine_sizes, names, parent_cells[1], fb)[[p for p, _, hi, _ in parent_cells[0] if hi is not None and hi <= 0]]
    # to explain, the support is the edits' alone and the parent's zero cells are rows: every zero a
    # derivation rests on is then a step with its cell (the same fixed point, a few passes later)
    rows = support(edits, fb, MAX_SUPPORT) if explain else None
    explain = rows is not None
    if rows is None:
        rows = support(np.vstack([edits, zero_flats]), fb, MAX_SUPPORT)
    if rows is None:  # too many atoms to hold
        return None
    model = _Model()
    # one aggregate layer per block (its own tables) and one for the parent (its tables)
    block_space = _Space(rows, fine, layers[0])
    blocks = [_Layer(model, block_space, r, j) for j, r in enumerate(releases)]
    alive = [b.fine_alive for b in blocks]
    f_start = model.new(sum(len(a) for a in alive))
    f_offset = np.concatenate([[0], np.cumsum([len(a) for a in alive])]).astype(np.int64) + f_start
    for b, lo_ in zip(blocks, f_offset[:-1]):
        b.link(lo_ + np.arange(len(b.fine_alive)), b.fine_alive)
    top = _Layer(model, _Space(rows, fine, layers[1]), parent, -1, keep_zero=explain)
    f_rows = np.concatenate(alive) if alive else np.zeros(0, np.int64)
    top.link(f_start + np.arange(len(f_rows)), f_rows, top=True)
    return model, blocks, top, explain


def joint_proofs(schema: Schema, schedule: Schedule, releases: list[UnitRelease], explain: bool = True
                 ) -> dict[tuple, tuple]:
    """``(level, geo) -> (note, histogram, ProofCells or None)`` for every unit that a joint solve proves to have one dataset: each unit
    of a coarser published level with the finest-level units inside it (see :func:`prove_tract`); and
    ``(level, geo) -> ("", None, JointSystem)`` for a coarser unit it leaves open, whose claims
    :func:`audit.attacks.joint_claims.decide_open` decides when the unit is too large for row slots.

    ``releases`` must hold every finest-level unit that has rows (a tabulation of microdata does):
    the coarser unit's cells count the rows of all of them.
    """
    levels = coupled_levels(schema, schedule)
    if not levels:
        return {}
    child = finest_level(schema, schedule)
    geo = list(schema.geography)
    kids: dict[tuple, list[UnitRelease]] = {}
    for r in releases:
        if r.level == child:
            for lv in levels:
                kids.setdefault((lv, r.geo[: geo.index(lv) + 1]), []).append(r)
    out = {}
    for parent in (r for r in releases if r.level in levels):
        proof = prove_tract(schema, schedule, kids.get((parent.level, parent.geo), []), parent, explain)
        why = proof.explanations or (None,) * len(proof.children)
        out.update({(child, g): (proof.note(), h, w)
                    for g, ok, h, w in zip(proof.children, proof.unique, proof.histograms, why) if ok})
        if proof.parent_unique:
            out[(parent.level, parent.geo)] = (proof.note(), proof.parent_histogram, proof.parent_explanation)
        elif proof.system is not None:
            out[(parent.level, parent.geo)] = ("", None, proof.system)
    return out


def with_proofs(problems, proofs: dict[tuple, tuple]) -> list:
    """The problems, each proved one carrying its proof (and a note saying so).

    A proof is attached only where the proved histogram is the true rows' (always, when the release
    was tabulated from them): :func:`audit.exact.audit_unit` then verifies every true claim unchecked.
    """
    out = []
    for p in problems:
        got = proofs.get((p.level, p.geo))
        if got is not None and got[1] is None and p.truth is not None and got[2].names == p.names:
            p = replace(p, joint=got[2])  # left open: its claims are decided over the joint model if too large
        elif got is not None and got[1] is not None and p.truth is not None and _same(got[1], p.truth):
            p = replace(p, proof=got[0], notes=p.notes + (got[0],), proof_cells=got[2])
        out.append(p)
    return out


def as_proved(problems, proofs: dict[tuple, tuple]) -> list:
    """The problems of a published release (no true rows), each proved one carrying its one dataset as
    its rows, with the proof and its cells (:func:`audit.attacks.exact.audit_unit` then needs no search).

    Sound without the truth: the proof shows every dataset that reproduces the published values has
    this histogram over the unit's own tables' atoms, so the claims true in it are the verified ones.
    A unit left open carries its joint model instead (:func:`audit.published.attack_unit` draws its
    first dataset from it).
    """
    out = []
    for p in problems:
        got = proofs.get((p.level, p.geo))
        if got is not None and got[1] is None and p.truth is None and got[2].names == p.names:
            p = replace(p, joint=got[2])  # left open: a dataset of its joint model is its first candidate
        elif got is not None and got[1] is not None and p.truth is None and got[1][0].shape[1:] == (len(p.domains),):
            rows = np.repeat(got[1][0], got[1][1], axis=0)
            p = replace(p, truth=rows, n_rows=(len(rows), len(rows)), proof=got[0], notes=p.notes + (got[0],),
                        proof_cells=got[2])
        out.append(p)
    return out


def _same(histogram: tuple[np.ndarray, np.ndarray], rows: np.ndarray) -> bool:
    """Whether the rows are the histogram's (as multisets of atom rows)."""
    mine = np.repeat(histogram[0], histogram[1], axis=0)
    if mine.shape != rows.shape:
        return False
    return bool(np.array_equal(mine[np.lexsort(mine.T[::-1])], rows[np.lexsort(rows.T[::-1])]))
