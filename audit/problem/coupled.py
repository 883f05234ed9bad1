"""Coupled levels: tables published at a coarser level tie their child units into one problem.

A tract table (e.g. SF1 PCT12) counts persons over all blocks of the tract, so the blocks are no
longer independent. The coupled problem of a tract has the tract's persons as rows and one extra
categorical column, the child unit (domain: the tract's blocks, named after the finest published
geography column). Each block's published cells become constraints restricted to that block
(predicate AND block = b); the tract's own cells constrain all rows. It reuses
:class:`~audit.problem.build.Problem` and :class:`~audit.release.constraints.Constraint` unchanged, so every engine
solves it. Per-block problems stay sound on their own (a claim verified from one block's tables is
verified under more tables too); the coupled problem can verify more, and refute nothing they verify.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .build import Domain, Problem, _to_atoms, cell_domains, hidden_value, population
from .claims import Views
from ..specs.query import Predicate
from ..release.constraints import Constraint, UnitRelease, constraints_of
from ..specs.schedule import Schedule
from ..specs.schema_types import Schema
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def finest_level(schema: Schema, schedule: Schedule) -> str:
    return max(schedule.levels, key=schema.geography.index)


def coupled_levels(schema: Schema, schedule: Schedule) -> list[str]:
    """Published levels coarser than the finest one: each gets one coupled problem per unit."""
    finest = schema.geography.index(finest_level(schema, schedule))
    return [lv for lv in schedule.levels if schema.geography.index(lv) < finest]


def _geo_keys(frame: pd.DataFrame, cols: list[str]) -> list[tuple[str, ...]]:
    return list(zip(*(frame[c].astype(str) for c in cols))) if len(frame) else []


def build_coupled_problems(frame: pd.DataFrame | None, schema: Schema, schedule: Schedule,
                           releases: list[UnitRelease], levels: list[str] | None = None,
                           proved: frozenset = frozenset()) -> list[Problem]:
    """One problem per unit of each coarser published level, over all its finest-level children.

    ``frame`` must hold every row of each parent unit it covers (whole tracts), and ``releases``
    the tabulation of that frame at every level. With ``frame`` None (a published release alone) the
    children are the finest-level units released inside the parent, and there are no true rows.
    ``proved``: the geographies of the children a joint solve proved (their own claims are theirs,
    see :class:`~audit.problem.claims.Views`).
    """
    geo = list(schema.geography)
    child_level = finest_level(schema, schedule)
    child_depth = geo.index(child_level)
    out = []
    for level in (levels if levels is not None else coupled_levels(schema, schedule)):
        depth = geo.index(level)
        tables = [t for t in schedule.tables if geo.index(t.level) >= depth]
        base = cell_domains(schema, [c for t in tables for c in t.cells])
        by_level = {}
        for r in releases:
            by_level.setdefault(r.level, []).append(r)
        parent_keys = _geo_keys(frame, geo[: depth + 1]) if frame is not None else []
        child_keys = _geo_keys(frame, geo[: child_depth + 1]) if frame is not None else []
        rows_of: dict[tuple, list[int]] = {}
        for i, k in enumerate(parent_keys):
            rows_of.setdefault(k, []).append(i)
        for parent in by_level.get(level, []):
            idx = np.asarray(rows_of.get(parent.geo, []), dtype=np.int64)
            children = sorted({child_keys[i] for i in idx} if frame is not None else
                              {r.geo for r in by_level.get(child_level, []) if r.geo[: depth + 1] == parent.geo})
            child_index = {c: j for j, c in enumerate(children)}
            rel = ["/".join(c[depth + 1:]) for c in children]
            child_dom = Domain(child_level, tuple(frozenset([r]) for r in rel), tuple(rel)) if children else None
            domains = base + ((child_dom,) if child_dom else ())
            by_name = {d.name: d for d in domains}
            sub = frame.iloc[idx] if frame is not None else None
            if sub is None:
                truth = None
            elif len(sub):
                cols = [sub[d.name].map(d.lookup()).to_numpy(dtype=np.int64) for d in base]
                cols.append(np.array([child_index[child_keys[i]] for i in idx], dtype=np.int64))
                truth = np.column_stack(cols)
            else:
                truth = np.zeros((0, len(domains)), np.int64)
            cons: list[Constraint] = []
            hidden: list[Constraint] = []
            atoms_of: dict = {}  # (predicate, restriction) -> atoms: the children share their cells' predicates
            child_totals: dict[int, int] = {}
            for r in releases:
                if geo.index(r.level) < depth or r.geo[: depth + 1] != parent.geo:
                    continue
                inside = frozenset(j for c, j in child_index.items() if c[: len(r.geo)] == r.geo)
                restrict = Predicate.of({child_level: inside}) if r.level != level and len(inside) < len(children) else Predicate()
                prefix = "/".join(r.geo[depth + 1:]) + "/" if r.level != level else ""
                for v in r.values:
                    for c in constraints_of(v, r.protection[v.cell.table]) + hidden_value(v):
                        pred = atoms_of.get((c.predicate, restrict))
                        if pred is None:
                            pred = atoms_of[(c.predicate, restrict)] = _to_atoms(c.predicate, by_name).conjoin(restrict)
                        con = replace(c, key=prefix + c.key, predicate=pred)
                        if c.unbounded:  # a suppressed sum, mean or median (hidden_value)
                            hidden.append(con)
                            continue
                        cons.append(con)
                        if (r.level == child_level and con.statistic.kind == "count" and con.exact
                                and not c.predicate.clauses and len(inside) == 1):
                            child_totals.setdefault(next(iter(inside)), int(con.lo))
            totals = [c for c in cons if c.statistic.kind == "count" and not c.predicate.clauses and c.exact]
            notes: tuple[str, ...] = (f"coupled: {len(children)} {child_level} units of this {level} in one problem",)
            if not totals and children and len(child_totals) == len(children):
                n_rows = (sum(child_totals.values()),) * 2
            else:
                n_rows, more = population(cons, None if sub is None else len(sub), f"unit {'/'.join(parent.geo)}")
                notes += more
            edits = tuple(_to_atoms(e.forbid, by_name) for e in schema.edits)
            problem = Problem(level, parent.geo, domains, n_rows, tuple(cons), edits, truth, notes, hidden=tuple(hidden),
                              child=child_level if child_dom else "")
            if child_dom is not None:
                problem = with_views(problem, schema, tables,
                                     frozenset(child_index[c] for c in children if c in proved))
            out.append(problem)
    return out


def with_views(problem: Problem, schema: Schema, tables: list, proved: frozenset[int]) -> Problem:
    """The coupled problem with a view column for each attribute grouping a published level makes
    that the common refinement does not (block tables' race white / non-white under the tract's
    detailed race), so that claims range over either level's groupings (:class:`Views`); unchanged when
    no such claim can be new (every child proved, and only the child level groups one attribute)."""
    geo = list(schema.geography)
    levels = sorted({t.level for t in tables}, key=geo.index)
    child_level = max(levels, key=geo.index)
    grouping = {lv: {d.name: d for d in cell_domains(schema, [c for t in tables if t.level == lv for c in t.cells])}
                for lv in levels}
    base = [d for d in problem.domains if d.name != problem.child]
    cols, of, doms, made = [], [], [], {}
    child_cols = set()
    coarser = 0  # attributes the child level groups more coarsely than the common refinement
    for i, fine in enumerate(base):
        if fine.numeric:
            child_cols.add(i)
            continue
        for lv in levels:
            coarse = grouping[lv][fine.name]
            same = set(coarse.atoms) == set(fine.atoms)
            if lv == child_level:
                coarser += not same
                child_cols.update([i] if same else [])
            if same or len(coarse) < 2:
                continue
            key = (i, frozenset(coarse.atoms))
            if key not in made:
                made[key] = len(base) + 1 + len(cols)
                cols.append(made[key])
                of.append(i)
                doms.append(Domain(f"{fine.name}@{lv}", coarse.atoms, coarse.labels))
            if lv == child_level:
                child_cols.add(made[key])
    n_child = len(problem.domains[problem.index(problem.child)])
    every = len(proved) == n_child
    only_child = all(c in child_cols for c in cols)
    if not cols or (every and only_child and coarser < 2):
        return problem
    edits, truth = list(problem.edits), problem.truth
    extra = []
    for col, i, dom in zip(cols, of, doms):
        fine = base[i]
        to = np.array([next(k for k, a in enumerate(dom.atoms) if atom <= a) for atom in fine.atoms], np.int64)
        for k in range(len(dom)):
            edits.append(Predicate.of({fine.name: np.flatnonzero(to == k).tolist(),
                                       dom.name: [j for j in range(len(dom)) if j != k]}))
        if truth is not None:
            extra.append(to[truth[:, i]])
    if truth is not None:
        truth = np.column_stack([truth, *extra]) if extra else truth
    views = Views(tuple(cols), tuple(of), problem.index(problem.child), frozenset(child_cols), proved, every)
    return replace(problem, domains=problem.domains + tuple(doms), edits=tuple(edits), truth=truth, views=views,
                   notes=problem.notes + (f"claims over each level's groupings too: {', '.join(d.name for d in doms)}",))


def child_total(problem: Problem, c: Constraint) -> int | None:
    """The child unit whose person count ``c`` publishes exactly (a count whose only clause names one
    child unit), else None."""
    if not (c.statistic.kind == "count" and c.exact and len(c.predicate.clauses) == 1):
        return None
    name, atoms = c.predicate.clauses[0]
    return next(iter(atoms)) if name == problem.child and len(atoms) == 1 and c.lo.denominator == 1 else None


def child_sizes(problem: Problem) -> tuple[int, ...] | None:
    """Each child unit's person count, when the coupled problem publishes every one exactly and they
    add up to its exact population (SF1's P1 of every block); None otherwise (a total suppressed,
    rounded or a range, a release of unknown block sizes, two totals of a block that differ, or a
    single child). The engines may then place each child's persons in slots of their own."""
    if not problem.child or problem.n_rows[0] != problem.n_rows[1] or problem.sizes[problem.index(problem.child)] < 2:
        return None
    sizes: dict[int, int] = {}
    for c in problem.constraints:
        j = child_total(problem, c)
        if j is not None and sizes.setdefault(j, int(c.lo)) != int(c.lo):
            return None
    k = problem.sizes[problem.index(problem.child)]
    if len(sizes) < k or sum(sizes.values()) != problem.n_rows[0]:
        return None
    return tuple(sizes[j] for j in range(k))
