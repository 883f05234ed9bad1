"""One task of ``audit protect``'s suppression search: a unit alone, or a parent unit with every unit inside
it (a tract with its blocks), so that the parent's coupled step (:mod:`audit.protection.levels`) sees its
blocks' patterns. A task holds only its own rows, needs nothing from any other task, and gives the same
result wherever it runs (a worker process, a Dask worker, this process)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

import numpy as np
from ..attacks.exact import audit_unit
from ..inputs import Inputs
from ..memo import keep
from ..problem.coupled import coupled_levels
from ..release.tabulate import units_of
from .claims import rules_failed
from .levels import protect_levels
from .options import Policy, ProtectOptions, geo_key, kept
from .protected import pin
from .unit import UnitContext, UnitProtection, information_loss, suppress_unit


@dataclass(frozen=True)
class Search:
    """What every task of one run shares: the policy, the options and the rules (for the units' failing rules);
    ``run``: a digest of the run's inputs, options and rules, under which a process keeps the searches of
    units alike (:func:`searched`); empty: none kept."""

    policy: Policy
    options: ProtectOptions
    rules: Any
    run: str = ""


ALIKE = 4096  # searches kept per process for units alike (a fifth of the extract's blocks repeat another's persons)
_alike: dict[tuple, UnitProtection] = {}


def searched(ctx: UnitContext, search: Search, log: Callable[[str], None] | None = None) -> UnitProtection:
    """:func:`~audit.protection.unit.suppress_unit`, or the search of a unit alike already made in this process:
    the same level, cells already hidden and persons in the same order (the geography aside) make the same
    problem, so the search is the same wherever and whenever it runs; kept only for a protected or passing
    unit (an unfixable one's explanations name its geography)."""
    geo = set(ctx.inputs.schema.geography)
    key = (search.run, ctx.level, ctx.already, tuple(ctx.frame[[c for c in ctx.frame.columns if c not in geo]]
                                                     .itertuples(index=False, name=None)))
    found = _alike.get(key) if search.run else None
    if found is not None:
        return replace(found, geo=ctx.geo, seconds=0.0)
    out = suppress_unit(ctx, search.policy, search.options, log)
    if search.run and out.status in ("protected", "pass") and not out.undefeatable:
        keep(_alike, key, out, ALIKE)
    return out


@dataclass(frozen=True)
class Group:
    """One task: ``inputs`` holds the group's rows only; ``todo`` the geo keys of the units to search (those
    the audit fails); ``coupled``: a parent unit with its children, searched jointly after them; ``done_*``:
    the units and parent units an interrupted run finished (by geo key), taken as they are."""

    inputs: Inputs
    todo: frozenset[str]
    coupled: bool = False
    done_units: dict = field(default_factory=dict)
    done_levels: dict = field(default_factory=dict)

    def __post_init__(self):
        if not len(self.inputs.frame):
            raise ValueError("a protect task needs the rows of its units")

    def units(self) -> Iterator[tuple[str, tuple[str, ...], np.ndarray]]:
        """(level, geo, row indices) of every unit to search, in the schedule's order."""
        for level in self.inputs.schedule.levels:
            for geo, rows in units_of(self.inputs.frame, self.inputs.schema, level):
                if geo_key(geo) in self.todo:
                    yield level, geo, rows


def groups(inputs: Inputs, failing: set[str], done_units: dict | None = None,
           done_levels: dict | None = None) -> Iterator[Group]:
    """The run's tasks, in a fixed order: with coarser levels coupled, one per unit of the coarsest (every
    one: its coupled problem is searched even where its units pass alone), else one per failing unit."""
    schema, schedule, frame = inputs.schema, inputs.schedule, inputs.frame
    coupled = coupled_levels(schema, schedule)
    done_units, done_levels = done_units or {}, done_levels or {}

    def group(rows, todo: set[str], parent: tuple[str, ...] | None = None) -> Group:
        sub = Inputs(schema, schedule, frame.iloc[rows].reset_index(drop=True), inputs.data_path)
        inside = lambda d: {k: v for k, v in d.items() if k in todo or (  # noqa: E731
            parent is not None and tuple(k.split("/"))[:len(parent)] == parent)}
        return Group(sub, frozenset(todo), parent is not None, inside(done_units), inside(done_levels))

    if coupled:
        top = min(coupled, key=schema.geography.index)
        depth = schema.geography.index(top) + 1
        for geo, rows in units_of(frame, schema, top):
            yield group(rows, {k for k in failing if tuple(k.split("/"))[:depth] == geo}, geo)
        return
    for level in schedule.levels:
        for geo, rows in units_of(frame, schema, level):
            if geo_key(geo) in failing:
                yield group(rows, {geo_key(geo)})


def count_groups(inputs: Inputs, failing: set[str]) -> tuple[int, int]:
    """(tasks, units to search) that :func:`groups` makes, without making them."""
    units = sum(geo_key(geo) in failing for level in inputs.schedule.levels
                for geo, _ in units_of(inputs.frame, inputs.schema, level))
    coupled = coupled_levels(inputs.schema, inputs.schedule)
    if coupled:
        return len(units_of(inputs.frame, inputs.schema, min(coupled, key=inputs.schema.geography.index))), units
    return units, units


def protect_group(group: Group, search: Search, log: Callable[[str], None] | None = None,
                  partial: dict | None = None) -> dict:
    """Search one task: each unit to search (:func:`~audit.protection.unit.suppress_unit`), then, where they are
    all protected or set aside, the parent units coupled with them. Returns the units' entries (``failing_rules``
    where not protected), the parent units', the pattern (geo key -> cells, before and after :func:`pin`), the
    cells listed that the schedule's own rule pins, and the persons in hidden cells. ``partial`` (lists under
    ``units`` and ``levels``) gets each entry as it is finished, for a run stopped inside the task to keep."""
    partial = partial if partial is not None else {"units": [], "levels": []}
    policy, options, inputs = search.policy, search.options, group.inputs
    units, contexts = [], {}
    for level, geo, rows in group.units():
        ctx = UnitContext(inputs, level, geo, rows)
        key, done = geo_key(geo), group.done_units.get(geo_key(geo))
        if log:
            log(f"unit {key}: " + ("protecting" if done is None else f"finished by the interrupted run ({done['status']})"))
        units.append(searched(ctx, search, log) if done is None else UnitProtection.from_dict(done))
        partial["units"].append(units[-1].to_dict())
        contexts[key] = ctx
    entries = [u.to_dict() for u in units]
    for u, d in zip(units, entries):
        if u.status not in ("protected", "pass"):  # where the search stopped, by the ordinary path
            d["failing_rules"] = still_failing(contexts[d["geo"]], u.cells, options, search.rules)
    suppress = {geo_key(u.geo): u.cells for u in units if u.cells and kept(u.status, u.undefeatable)}
    levels = []
    if group.coupled and all(kept(d["status"], d.get("undefeatable")) for d in entries):
        for entry in protect_levels(inputs, suppress, policy, options, log, group.done_levels):
            levels.append(entry)
            partial["levels"].append(entry)
    return {"units": entries, "levels": levels, "added": suppress,
            "suppress": pin(inputs.frame, inputs.schema, inputs.schedule, suppress),
            "pinned_by_rule": pinned_listed(contexts, suppress),
            "persons": persons_hidden(inputs, suppress, units)}


def failed_group(group: Group, search: Search, status: str, reason: str, limits=None) -> dict:
    """A task whose worker failed (died, or past the hard limit): every unit to search undecided, with the
    reason, and nothing added to the pattern (fail closed: no recommendation stands over it)."""
    entries = []
    for level, geo, rows in group.units():
        d = UnitProtection(level, geo, len(rows), status="undecided", reason=f"{status}: {reason}").to_dict()
        entries.append({**d, "failing_rules": ["undecided"]})
    return {"units": entries, "levels": [], "added": {}, "suppress": {}, "pinned_by_rule": {}, "persons": 0,
            "failed": status}


def still_failing(ctx: UnitContext, cells: list[str], options: ProtectOptions, rules) -> list[str]:
    """The rules a unit still fails under ``cells``, by the ordinary path (its findings entry, the rules)."""
    problem, release = ctx.problem(set(cells))
    return rules_failed(audit_unit(problem, replace(options.exact, explain="none")), release, rules)


def pinned_listed(contexts: dict, suppress: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """Per unit searched, the cells the recommendation lists that the schedule's threshold suppresses but
    pins (:func:`~audit.release.constraints.pinned_counts`): cell -> the count the rule gives away."""
    out = {}
    for geo, cells in suppress.items():
        if geo in contexts:
            hits = {k: n for k, n in contexts[geo].pinned_counts().items() if k in cells}
            if hits:
                out[geo] = hits
    return out


def persons_hidden(inputs: Inputs, suppress: dict[str, list[str]], units: list) -> int:
    """Persons in a suppressed cell of their unit, summed over units, under the whole pattern: a unit's own
    search's cells and the cells the coupled step added to it (a tract's, or a block that passed alone)."""
    found = {geo_key(u.geo): u for u in units}
    total = 0
    for level in inputs.schedule.levels:
        for geo, rows in units_of(inputs.frame, inputs.schema, level):
            cells, u = set(suppress.get(geo_key(geo), ())), found.get(geo_key(geo))
            if u is not None and set(u.cells) == cells:
                total += u.loss.get("persons_in_suppressed_cells", 0)
            elif cells:
                problem, _ = UnitContext(inputs, level, geo, rows).problem()
                total += information_loss(problem, sorted(cells), {})["persons_in_suppressed_cells"]
    return total
