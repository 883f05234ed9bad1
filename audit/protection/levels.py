"""Protection across geography levels: a parent unit (a tract) and all its children (blocks) at once.

A block's suppression is protected on the block's own tables, but a tract table over the same persons
ties the blocks together (a tract total is the sum of its blocks' cells), so a hidden block cell can
be recovered from the tract table and the other blocks. The coupled problem of the tract
(:mod:`audit.problem.coupled`: the tract's persons as rows, the block as a column, every block's
cells restricted to its block) is what the attacker solves; :class:`CoupledContext` rebuilds it under
a suppression pattern and presents it, with the tables of every level merged into one release, to the
joint search of :mod:`audit.protection.secondary`. That search attacks the coupled problem exactly
(proved claims and feasibility intervals over the integers) and suppresses more cells, in the tract
or in its blocks, until the coupled problem passes the claim rules and every hidden cell's interval
meets the protection levels there too. A claim of the coupled problem is judged as the unit's it
names: the block column is not counted among its columns (a claim fixing the block is that block's
claim, one leaving it free the tract's), so the rules mean what they mean per unit.

Cells of the merged release are keyed as in the coupled problem: a child's ``BLOCK/TABLE:CELL``
(its geography below the parent), the parent's own ``TABLE:CELL``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

import numpy as np

from ..inputs import Inputs
from ..problem.build import Problem
from ..problem.coupled import build_coupled_problems, coupled_levels
from ..release.constraints import UnitRelease
from ..release.tabulate import tabulate, units_of
from ..specs.apriori import Apriori
from .options import Policy, ProtectOptions, geo_key, kept
from .protected import pinned, protected_schedule, reruns
from .claims import REMEDY
from .secondary import suppress_unit as joint

# exact rounds in a row after which no fewer claims fail, then the monotone completion: an exact round
# of the coupled sf1 tract costs 40 s of CPU and its picks (3 or 4 cells) left all 5,983 claims proved
# (each exact attack proves them again by other cells), where a passing pattern needs hundreds
STALL = 3


class CoupledContext:
    """One parent unit of a coarser level with its child units' tables: re-tabulates and rebuilds the
    coupled problem under a suppression (``suppress``: geo key -> cells already hidden, at any level)."""

    def __init__(self, inputs: Inputs, level: str, geo: tuple[str, ...], rows: np.ndarray,
                 suppress: dict[str, frozenset]):
        self.inputs, self.level, self.geo = inputs, level, geo
        self.depth = inputs.schema.geography.index(level)
        self.frame = inputs.frame.iloc[rows]
        self.schedule = replace(inputs.schedule, suppress={})
        self.base = {k: frozenset(v) for k, v in suppress.items() if self._inside(k)}
        for r in tabulate(self.frame, inputs.schema, replace(self.schedule, suppress=self.base)) if reruns(self.schedule) else ():
            if self._inside(geo_key(r.geo)) and pinned(r):  # the heuristic's own cells stay hidden under any pattern
                self.base[geo_key(r.geo)] = self.base.get(geo_key(r.geo), frozenset()) | pinned(r)
        self.already = frozenset(self.key(k, cell) for k, cells in self.base.items() for cell in cells
                                 if self._inside(k))

    @property
    def apriori(self) -> Apriori:
        """The a-priori knowledge of the units inside, keyed as the coupled problem names their cells."""
        units = [(k, a) for k, a in self.inputs.schedule.apriori.items() if self._inside(k)]
        return Apriori(frozenset(self.key(k, c) for k, a in units for c in a.publish),
                       {self.key(k, c): v for k, a in units for c, v in a.cost.items()},
                       {self.key(k, c): v for k, a in units for c, v in a.levels.items()})

    def _inside(self, key: str) -> bool:
        return tuple(key.split("/"))[: self.depth + 1] == self.geo

    def key(self, unit: str, cell: str) -> str:
        """A unit's cell as the coupled problem names it."""
        below = unit.split("/")[self.depth + 1:]
        return "/".join(below) + "/" + cell if below else cell

    def split(self, cells) -> dict[str, frozenset]:
        """Coupled cell keys -> geo key of their unit -> cells."""
        out: dict[str, set] = {}
        for k in cells:
            below, _, cell = k.rpartition("/")
            out.setdefault(geo_key(self.geo + tuple(below.split("/")) if below else self.geo), set()).add(cell)
        return {k: frozenset(v) for k, v in out.items()}

    def problem(self, cells=frozenset()) -> tuple[Problem, UnitRelease]:
        suppress = dict(self.base)
        for k, more in self.split(cells).items():
            suppress[k] = suppress.get(k, frozenset()) | more
        sched = replace(self.schedule, suppress=suppress)
        geo = self.inputs.schema.geography
        releases = [r for r in tabulate(self.frame, self.inputs.schema, sched) if geo.index(r.level) >= self.depth]
        problem, = build_coupled_problems(self.frame, self.inputs.schema, sched, releases, [self.level])
        return problem, self._merged(releases)

    def _merged(self, releases: list[UnitRelease]) -> UnitRelease:
        """Every level's release of the parent as one, its cells keyed as in the coupled problem."""
        values, protection, magnitude = [], {}, {}
        for r in releases:
            prefix = self.key(geo_key(r.geo), "")
            values += [replace(v, cell=replace(v.cell, table=prefix + v.cell.table)) for v in r.values]
            protection.update({prefix + t: p for t, p in r.protection.items()})
            magnitude.update({prefix + k: m for k, m in r.magnitude.items()})
        return UnitRelease(self.level, self.geo, tuple(values), protection, magnitude)


def coupled_rules(policy: Policy) -> list[str]:
    """The rules a coupled problem is held to: the singling-out claim rules and protection levels
    (re-identification and attribute inference stay with the units' own problems)."""
    return [rule for rule, on in (("derived_singletons", policy.derived is not None),
                                  ("direct_singletons", policy.direct is not None),
                                  ("full_records", policy.full_records),
                                  ("reconstructed_units", policy.reconstructed),
                                  ("protection_levels", policy.protection is not None)) if on]


def _failing_rules(policy: Policy, status: str, after: dict) -> list[str]:
    """What a parent unit the joint search did not protect still fails, from its last attack."""
    if status == "undecided":
        return ["undecided"]
    claims = [r for r in coupled_rules(policy) if r.endswith("singletons") or r == "full_records"]
    return ((claims if after.get("failing_claims") else [])
            + (["reconstructed_units"] if policy.reconstructed and after.get("reconstructed") else [])
            + (["protection_levels"] if after.get("intervals_too_narrow") else [])) or coupled_rules(policy)


def protect_levels(inputs: Inputs, suppress: dict[str, list[str]], policy: Policy, options: ProtectOptions,
                   log: Callable[[str], None] | None = None, done: dict[str, dict] | None = None) -> Iterator[dict]:
    """Extend ``suppress`` (geo key -> cells, the per-unit recommendation; updated in place) until every
    coupled problem passes the claim rules and meets the protection levels (:func:`coupled_rules`),
    coarser levels after finer ones; yields one entry per parent unit as it is finished (status as a
    unit's: pass, protected, undecided, unfixable, gave-up; ``rules``: those checked, ``failing_rules``
    where not protected), or as ``done`` holds it (a resumed run's)."""
    rules = coupled_rules(policy)
    if not rules:
        return
    joint_policy = replace(policy, reidentification=None, inference=None)
    exact = options.exact
    options = replace(options, exact=replace(exact, attacker=None, max_columns=exact.max_columns and exact.max_columns + 1))
    for level in sorted(coupled_levels(inputs.schema, inputs.schedule), key=inputs.schema.geography.index, reverse=True):
        for geo, rows in units_of(inputs.frame, inputs.schema, level):
            base = protected_schedule(inputs.schedule, {k: frozenset(v) for k, v in suppress.items()}).suppress or {}
            ctx = CoupledContext(inputs, level, geo, rows, base)
            entry = (done or {}).get(geo_key(geo))
            if entry is not None:
                if log:
                    log(f"{level} {geo_key(geo)}: finished by the interrupted run ({entry['status']})")
                if kept(entry["status"], entry.get("undefeatable")):
                    _add(suppress, ctx.split(entry["cells"]))
                yield entry
                continue
            entry = {"geo": geo_key(geo), "level": level, "rows": len(rows), "rules": rules}
            if len(rows) > options.exact.max_rows:  # the row-slot coupled problem is out of reach: fail closed
                entry.update(status="undecided", cells=[], failing_rules=["undecided"], reason=f"{len(rows)} rows in "
                             f"the coupled problem, more than --max-rows {exact.max_rows}: it was not attacked")
                yield entry
                continue
            if log:
                log(f"{level} {geo_key(geo)}: protecting jointly with its child units")
            found = joint(ctx, joint_policy, options, log, STALL)
            entry.update(status=found.status, cells=found.cells, reason=found.reason, before=found.before,
                         after=found.after, iterations=found.iterations, minimal=found.minimal, pruned=found.pruned,
                         lower_bound=found.lower_bound, seconds=round(found.seconds, 3))
            if found.undefeatable:
                entry.update(undefeatable=found.undefeatable, remedy=REMEDY)
            if found.status not in ("protected", "pass"):
                entry["failing_rules"] = _failing_rules(policy, found.status, found.after)
            if kept(found.status, found.undefeatable):  # the rest protected
                _add(suppress, ctx.split(found.cells))
            yield entry


def _add(suppress: dict[str, list[str]], more: dict[str, frozenset]) -> None:
    """Add a parent unit's cells (geo key -> cells) to the pattern, in place."""
    for key, cells in more.items():
        suppress[key] = sorted(set(suppress.get(key, ())) | cells)
