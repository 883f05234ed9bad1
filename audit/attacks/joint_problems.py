"""Which problem each unit is attacked as, when tables are published at more than one level.

One rule for every path (``audit run`` in process or on workers, and a published release): a unit of
the finest level is its own tables' problem, carrying its joint proof when the joint solve
(:mod:`audit.attacks.joint`) proved it; a unit of a coarser level (a tract) is the row-slot coupled
problem (:mod:`audit.problem.coupled`: its persons as rows, the child unit as a column, every
child's cells) when it has at most ``max_rows`` persons; past it the same coupled problem attacked in
cell space (over atom counts) when it publishes counts only and its histogram model can be held, else
its own tables' problem, proved or decided over the joint model, with the claims only the coupled
problem poses (a block with the tract's detail) counted undecided: never missed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ..problem.build import Problem, build_problems
from ..problem.coupled import build_coupled_problems, coupled_levels
from ..release.constraints import UnitRelease
from ..specs.schedule import Schedule
from ..specs.schema import Schema
from ..problem.claims import count_candidates
from .implied import MAX_SUPPORT, SUPPORT_WORK, problem_support
from .joint import counts_only, as_proved, with_proofs
from .unit import needs_slots
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

COUNT_WORK = 10**7  # work (keys) counting the claims a coarser unit's own problem leaves unposed


def level_problems(frame: pd.DataFrame | None, schema: Schema, schedule: Schedule, releases: list[UnitRelease],
                   proofs: dict[tuple, tuple], max_rows: int | None, only: list[UnitRelease] | None = None
                   ) -> list[Problem]:
    """The problems of the units ``only`` (default: every unit of ``releases``), finest level first.

    ``releases`` holds whole coarser units with all their children (the children of a coupled
    problem), ``frame`` their rows (None: a published release; a unit then takes its proof's dataset
    as its rows, and a coarser unit that publishes no total its children's totals). ``max_rows``
    None: every coarser unit is coupled.
    """
    coupled = coupled_levels(schema, schedule)
    wanted = releases if only is None else only
    finest = [r for r in wanted if r.level not in coupled]
    parents = [r for r in wanted if r.level in coupled]
    attach = with_proofs if frame is not None else as_proved
    problems = attach(build_problems(frame, schema, schedule, finest), proofs) if finest else []
    if not parents:
        return problems
    geo = list(schema.geography)
    sums: dict[tuple, tuple[int, int]] = {}  # a coarser unit's rows from its children's totals (SF1's PCT12 has none)
    if frame is None:
        for p in (problems if only is None else build_problems(None, schema, schedule,
                                                               [r for r in releases if r.level not in coupled])):
            for lv in coupled:
                key = p.geo[: geo.index(lv) + 1]
                lo, hi = sums.get(key, (0, 0))
                sums[key] = (lo + p.n_rows[0], hi + p.n_rows[1])
    own: dict[tuple, Problem] = {}  # a published open unit's own tables' problem, built once: to size it, then kept
    size = {lv: Counter(zip(*(frame[c].astype(str) for c in geo[: geo.index(lv) + 1]))) for lv in coupled} \
        if frame is not None else {}

    def persons(r: UnitRelease) -> int:
        """Its rows; without them its proved histogram's, else at most its own tables' total or its children's."""
        if frame is not None:
            return size[r.level][r.geo]
        got = proofs.get((r.level, r.geo))
        if got is not None and got[1] is not None:
            return int(got[1][1].sum())
        own[(r.level, r.geo)] = build_problems(None, schema, schedule, [r], sums)[0]
        return own[(r.level, r.geo)].n_rows[1]

    alone = [r for r in parents if max_rows is not None and persons(r) > max_rows]
    proved = frozenset(g for (lv, g), got in proofs.items() if lv not in coupled and got[1] is not None)
    children = [r for r in releases if r.level not in coupled]
    if alone:
        own.update(((p.level, p.geo), p) for p in build_problems(
            frame, schema, schedule, [r for r in alone if (r.level, r.geo) not in own], sums))
        for r in alone:
            problems.append(_past_max_rows(frame, schema, schedule, r, children, proved,
                                           attach([own[(r.level, r.geo)]], proofs)[0]))
    rest = [r for r in parents if r not in alone]
    if rest:
        problems += build_coupled_problems(frame, schema, schedule, rest + children, coupled, proved)
    return problems


def _past_max_rows(frame: pd.DataFrame | None, schema: Schema, schedule: Schedule, unit: UnitRelease,
                   children: list[UnitRelease], proved: frozenset, own: Problem) -> Problem:
    """A coarser unit past ``--max-rows``: its coupled problem (the unit with its children, the child unit a
    column), attacked in cell space, when it publishes counts only and its histogram model can be held;
    else ``own``, its own tables' problem, with the claims only the coupled problem poses (across the
    unit's and its children's tables: a block with the tract's detail) counted as ``uncoupled``, undecided
    (at least :data:`COUNT_WORK` work to count them, past it a lower bound; 1 with no true rows)."""
    coupled = coupled_levels(schema, schedule)
    kids = [r for r in children if r.geo[: len(unit.geo)] == unit.geo]
    zeros = sum(v.status == "published" and v.stat.kind == "count" and v.value == 0 for r in [unit, *kids] for v in r.values)
    if all(counts_only(r) for r in [unit, *kids]) and (len(schema.edits) + zeros) * MAX_SUPPORT <= SUPPORT_WORK:
        problem = build_coupled_problems(frame, schema, schedule, [unit, *kids], coupled, proved)[0]
        if not needs_slots(problem) and problem_support(problem) is not None:
            return problem
    # the coupled problem's rows and columns alone (the unit's own cells, not its children's): to count its claims
    rows = build_coupled_problems(frame, schema, schedule, [unit], coupled, proved)[0]
    if rows.truth is None or own.truth is None:
        n = 1
    else:
        both, exact = count_candidates(rows.truth, budget=COUNT_WORK, views=rows.views)
        n = max(both - count_candidates(own.truth, budget=COUNT_WORK)[0], 0 if exact else 1)
    return replace(own, uncoupled=n) if n else own
