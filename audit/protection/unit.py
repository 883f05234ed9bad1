"""One unit's suppression: its context (re-tabulated under a pattern), the forced cells, and the
implicit-hitting-set loop described in :mod:`audit.protection.protect`."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from .suppress import hitting_set, simple_heuristic
from ..attacks import pulse
from ..attacks.exact import audit_unit
from ..inputs import Inputs
from ..release.magnitude import sensitive_values
from ..problem.build import Problem, build_problems
from ..policy.checks import protection_needed
from ..release.constraints import PUBLISHED, SUPPRESSED, UnitRelease, pinned_counts
from ..specs.apriori import Apriori
from ..specs.schedule import Schedule
from ..release.tabulate import tabulate, units_of
from .claims import REMEDY, Attempt, Explanations, Floor, claim_clauses, twins
from .options import Policy, ProtectOptions, cell_of, geo_key
from .protected import pinned
from .rounds import Rounds, prune

@dataclass
class UnitProtection:
    """The recommendation for one unit."""

    level: str
    geo: tuple[str, ...]
    rows: int
    status: str = "pass"          # pass (nothing needed) | protected | undecided | unfixable | gave-up
    primary: list[str] = field(default_factory=list)
    complementary: list[str] = field(default_factory=list)
    reconstruction: list[str] = field(default_factory=list)
    before: dict = field(default_factory=dict)  # the first pattern attacked: the forced cells hidden (none: as published)
    after: dict = field(default_factory=dict)
    iterations: int = 0
    clauses: int = 0
    seconds: float = 0.0
    loss: dict = field(default_factory=dict)
    reason: str = ""
    minimal: bool = True          # the cells are a proved minimum (False: the monotone completion's, or greedy)
    pruned: int = 0               # cells the completion added that the pruning found needless
    lower_bound: float | None = 0  # least cost any passing pattern has: the last exact optimum (None: greedy)
    undefeatable: list = field(default_factory=list)  # what fails under every pattern, and why (status unfixable)

    @classmethod
    def from_dict(cls, d: dict) -> "UnitProtection":
        """The unit as :meth:`to_dict` wrote it (a resumed run's finished units)."""
        return cls(d["level"], tuple(d["geo"].split("/")), d["rows"], status=d["status"], primary=list(d["primary"]),
                   complementary=list(d["complementary"]), reconstruction=list(d["reconstruction"]), before=d["before"],
                   after=d["after"], iterations=d["iterations"], clauses=d["explanations"], seconds=d["seconds"],
                   loss=d["information_loss"], reason=d["reason"], minimal=d["minimal"], pruned=d.get("pruned", 0),
                   lower_bound=d["lower_bound"], undefeatable=list(d.get("undefeatable", ())))

    @property
    def cells(self) -> list[str]:
        return sorted(set(self.primary) | set(self.complementary) | set(self.reconstruction))

    def to_dict(self) -> dict:
        return {"geo": geo_key(self.geo), "level": self.level, "rows": self.rows, "status": self.status,
                "reason": self.reason, "cells": self.cells, "suppressed": len(self.cells),
                "primary": self.primary, "complementary": self.complementary,
                "reconstruction": self.reconstruction, "iterations": self.iterations,
                "explanations": self.clauses, "minimal": self.minimal, "lower_bound": self.lower_bound, "pruned": self.pruned,
                "information_loss": self.loss,
                "before": self.before, "after": self.after, "seconds": round(self.seconds, 3)} | (
                    {"undefeatable": self.undefeatable, "remedy": REMEDY} if self.undefeatable else {})


class UnitContext:
    """One unit's rows and the level's tables: re-tabulates and rebuilds its problem under a suppression."""

    def __init__(self, inputs: Inputs, level: str, geo: tuple[str, ...], rows: np.ndarray):
        self.inputs, self.level, self.geo = inputs, level, geo
        self.frame = inputs.frame.iloc[rows]
        tables = tuple(t for t in inputs.schedule.tables if t.level == level)
        base = dict(getattr(inputs.schedule, "suppress", {}) or {})
        self.already = frozenset(base.get(geo_key(geo), frozenset()))
        self.schedule = replace(inputs.schedule, tables=tables, suppress={})
        # tabulated once here only where a threshold can hide (or pin) a cell
        self._first = self.release() if any(t.protection.suppress_below is not None for t in tables) else None
        if self._first is not None:
            self.already |= pinned(self._first)  # the heuristic's own cells stay hidden under any pattern

    def pinned_counts(self) -> dict[str, int]:
        """The cells the schedule's threshold suppresses but pins (:func:`pinned_counts`), from the set-up's
        tabulation (listing the heuristic's own cells, in tables that rerun it, changes no pinned cell)."""
        return {} if self._first is None else pinned_counts(self._first)

    @property
    def apriori(self) -> Apriori:
        """The schedule's a-priori knowledge of this unit (cells forced to publish, costs, levels)."""
        return self.inputs.schedule.apriori.get(geo_key(self.geo)) or Apriori()

    def every_cell(self) -> set[str]:
        """Every cell of the unit's tables."""
        return {c.key for t in self.schedule.tables for c in t.cells}

    def release(self, cells: set[str] | frozenset = frozenset(), schedule: Schedule | None = None) -> UnitRelease:
        hidden = set(cells) | self.already
        sched = replace(schedule or self.schedule, suppress={geo_key(self.geo): frozenset(hidden)} if hidden else {})
        return next(r for r in tabulate(self.frame, self.inputs.schema, sched) if r.geo == self.geo
                    and r.level == self.level)

    def problem(self, cells: set[str] | frozenset = frozenset(), schedule: Schedule | None = None) -> tuple[Problem, UnitRelease]:
        hidden = set(cells) | self.already
        sched = replace(schedule or self.schedule, suppress={geo_key(self.geo): frozenset(hidden)} if hidden else {})
        releases = [r for r in tabulate(self.frame, self.inputs.schema, sched) if r.level == self.level]
        problems = build_problems(self.frame, self.inputs.schema, sched, releases)
        p = next(p for p in problems if p.geo == self.geo)
        return p, next(r for r in releases if r.geo == self.geo)


def cell_counts(problem: Problem) -> dict[str, int]:
    """True count of every cell that has a constraint (from the defender's rows)."""
    out = {}
    for c in problem.constraints:
        out.setdefault(cell_of(c.key), int(problem.row_mask(problem.truth, c.predicate).sum()))
    return out


def forced_cells(release: UnitRelease, problem: Problem, tables, policy: Policy,
                 options: ProtectOptions, counts: dict[str, int] | None = None) -> tuple[list, list]:
    """(primary, complementary): published counts the small_cells rule fails and published sums a magnitude
    rule finds sensitive, and SIMPLEHEURISTIC's partners. A cell the schedule suppresses but its own rule
    pins (``suppress_below: 2`` hides only 1s) is published to the attacker: primary when small_cells or
    the protection levels fail it (listed, it becomes [0, N]), and never taken as already hidden. ``counts``:
    :func:`cell_counts` of ``problem`` when the caller has them."""
    pinned = pinned_counts(release)
    if not options.primary or (policy.small is None and not policy.magnitude and not (pinned and policy.protection)):
        return [], []
    primary = set()
    for v in release.values if policy.small is not None else ():
        p = release.protection.get(v.cell.table)
        rounded = p is not None and p.round_to and p.round_to > 1
        if v.status == PUBLISHED and v.stat.kind == "count" and not rounded and 1 <= v.value < policy.small:
            primary.add(v.cell.key)
    for key, n in pinned.items():
        if (policy.small is not None and 1 <= n < policy.small) or (
                policy.protection is not None and any(protection_needed(policy.protection, n))):
            primary.add(key)
    magnitude = {k: c.to_json() for k, c in release.magnitude.items()}
    primary |= {key.rsplit(":", 1)[0] for key in sensitive_values(magnitude, policy.magnitude)}
    comp: set[str] = set()
    if options.complementary and primary:
        counts = cell_counts(problem) if counts is None else counts
        hidden = {v.cell.key for v in release.values if v.status == SUPPRESSED and v.cell.key not in pinned}
        for table in (t for t in tables if t.lines):
            keys = [c.key for c in table.cells]
            if not any(k in primary for k in keys):
                continue
            flags = simple_heuristic(table, [counts.get(k, 0) for k in keys],
                                     [k in primary for k in keys], [k in hidden for k in keys])
            comp |= {k for k, f in zip(keys, flags) if f and k not in primary and k not in hidden}
    return sorted(primary), sorted(comp)


def cell_classes(problem: Problem) -> dict[str, str]:
    """Cell -> representative of its class: cells publishing identical constraints (same atoms, same values).

    Suppressing part of a class hides nothing (the rest publishes the same numbers), so the hitting
    set chooses whole classes; its cost is the number of cells in the class.
    """
    sig: dict[str, list] = {}
    for c in problem.constraints:
        sig.setdefault(cell_of(c.key), []).append((c.statistic.name, c.predicate, c.lo, c.hi, c.lo_open, c.hi_open))
    rep: dict[tuple, str] = {}
    return {k: rep.setdefault(tuple(sorted(v, key=repr)), k) for k, v in sorted(sig.items())}


def information_loss(problem: Problem, cells: list[str], counts: dict[str, int]) -> dict:
    n = problem.n_rows[1]
    mask = np.zeros(len(problem.truth), dtype=bool)
    preds = {}
    for c in problem.constraints:
        preds.setdefault(cell_of(c.key), c.predicate)
    for k in cells:
        if k in preds:
            mask |= problem.row_mask(problem.truth, preds[k])
    total = len(preds)
    return {"cells_suppressed": len(cells), "cells_published": total,
            "share_of_cells": round(len(cells) / total, 4) if total else 0.0,
            "persons_in_suppressed_cells": int(mask.sum()),
            "share_of_population": round(float(mask.sum()) / n, 4) if n else 0.0,
            "count_in_suppressed_cells": int(sum(counts.get(k, 0) for k in cells))}


def suppress_unit(ctx: UnitContext, policy: Policy, options: ProtectOptions,
                  log: Callable[[str], None] | None = None) -> UnitProtection:
    """The implicit-hitting-set loop for one unit (see the module docstring); with protection levels
    in the policy, a cost other than cells, or a-priori knowledge of the unit (cells forced to publish,
    costs, levels), the joint search of :mod:`audit.protection.secondary`.

    After ``options.exact_rounds`` minimum hitting sets without a pass, a *monotone completion*: the
    failing pattern is kept and only cells are added, a minimum hitting set of the clauses with the
    pattern's cells forced, widened to at least 1, 2, 4, ... new classes in successive rounds (those
    in most of the round's new clauses; back to 1 after a round that halves the failing claims, so a
    nearly protected unit does not get hundreds of cells for its last few). Past the explanation
    budget a clause is a sparse linear proof's few cells, else every published cell, which one cell
    meets: added one at a time, the block 1001 of the households sample crawled a cell a round. Each
    round adds at least one cell (a new clause's cells are published in the pattern it explains), and
    the doubling ends it within log2(cells) + 1 rounds of each halving, or at ``max_iterations``
    (gave-up, fail closed). Suppressing more proves no more (a hidden cell is
    [0, N], weaker than its value), but it can turn a claim a published count states directly
    (judged by ``direct_singletons``) into a derived one, so a completed pattern is attacked again
    like any other; a new clause only un-suppressing meets sends the search back to exact rounds.
    The result is then ``minimal=False``, with ``lower_bound`` the last exact optimum's cells, which
    every passing pattern needs.
    """
    if policy.protection is not None or options.cost != "cells" or ctx.apriori != Apriori():
        from .secondary import suppress_unit as joint

        return joint(ctx, policy, options, log)
    start = time.perf_counter()
    exact = replace(options.exact, explain="none", intervals=False)  # the rules the loop checks need no intervals
    problem, release = ctx.problem()
    out = UnitProtection(ctx.level, ctx.geo, problem.n_rows[1])
    counts = cell_counts(problem)
    out.primary, out.complementary = forced_cells(release, problem, ctx.schedule.tables, policy, options, counts)
    forced = set(out.primary) | set(out.complementary)
    # the unit as published is attacked only when no cell is forced: else the first round attacks the forced
    # pattern, and that attack is the unit's ``before`` (as the joint search's): attacking both was a third of
    # a one-round block's search
    seen = None if forced else Attempt.of(audit_unit(problem, exact), policy)
    direct_of = None  # made when a round first needs clauses (most units pass their first pattern)
    rep = cell_classes(problem)
    members: dict[str, set] = {}
    for k, r in rep.items():
        members.setdefault(r, set()).add(k)
    expand = lambda reps: set().union(*(members.get(r, {r}) for r in reps)) if reps else set()  # noqa: E731
    size = {r: len(m) for r, m in members.items()}
    rcost = {r: sum(counts.get(k, 0) for k in m) for r, m in members.items()}
    cheapest = lambda pos: members.get(rep.get(c := min(pos, key=lambda k: (  # noqa: E731  (the hitting set's order)
        size.get(rep.get(k, k), 1), rcost.get(rep.get(k, k), 0), k)), c), {c})
    clauses: list[tuple[frozenset, frozenset]] = []
    explanations = Explanations(options)
    chosen: set[str] = set(forced)
    exact_hitting = options.hitting == "exact"
    rounds = Rounds(options.exact_rounds, len(forced) if exact_hitting else None)
    attack = lambda cells: Attempt.of(audit_unit(ctx.problem(set(cells))[0], exact), policy)  # noqa: E731
    floor = Floor(lambda: attack(ctx.every_cell()))  # made once a failing claim needs no published cell
    while True:
        out.iterations += 1
        pulse.during(f"protect round {out.iterations}", geo_key(ctx.geo))  # shown with the round's attack of the unit
        if chosen:
            seen = Attempt.of(audit_unit(ctx.problem(chosen)[0], exact), policy)
        if not out.before:
            out.before = seen.summary
        raw, seen = seen, floor(seen)
        result, bad, recon = seen.result, seen.bad, seen.recon
        if seen.reason:
            out.status, out.reason = "undecided", seen.reason
            break
        if seen.passes:
            out.status = "protected" if chosen and raw.passes else "pass" if raw.passes else "unfixable"
            break
        rounds.observe(len(bad) + recon)
        if out.iterations > options.max_iterations:
            out.status, out.reason = "gave-up", f"no protection within {options.max_iterations} iterations"
            break
        direct_of = twins(problem) if direct_of is None else direct_of
        new = claim_clauses(result, bad, recon, chosen | set(ctx.already), direct_of, options, cheapest,
                             explanations)
        stuck = lambda clauses: any(not pos and not (neg - forced) for pos, neg in clauses)  # noqa: E731
        if stuck(new) and not floor.made():  # set aside what fails whatever is hidden; protect the rest
            seen = floor.make(raw)
            if seen.passes:
                out.status = "unfixable"
                break
            bad, recon = seen.bad, seen.recon  # what the round's log line reports, as in the joint search
            new = claim_clauses(result, bad, recon, chosen | set(ctx.already), direct_of, options, cheapest, explanations)
        if stuck(new):
            out.status = "unfixable"
            out.reason = "a failing claim follows from the population and the structural edits alone"
            break
        new = [(frozenset(rep.get(k, k) for k in pos), frozenset(rep.get(k, k) for k in neg)) for pos, neg in new]
        clauses += new
        kept = {rep.get(k, k) for k in chosen}
        if rounds.monotone and not all(pos - kept for pos, _ in new):  # only un-suppressing meets it
            rounds.restart()
        picked = hitting_set(clauses, rcost, rounds.base(kept, {rep.get(k, k) for k in forced}),
                             exact=exact_hitting, size=size)
        if rounds.monotone:
            picked |= widen(new, picked, rounds.widening - len(picked - kept), size, rcost)
        chosen = expand(picked) | forced
        rounds.advance(len(chosen), picked - kept)
        if log:
            log(f"unit {geo_key(ctx.geo)}: iteration {out.iterations}, {len(bad)} failing claims, "
                f"{len(clauses)} explanations, trying {len(chosen)} cells"
                + (f" (adding to the last pattern; at least {rounds.lower_bound} needed)" if rounds.monotone else ""))
    pulse.during("")
    if (out.status == "protected" or seen.passes) and not rounds.minimal(out.status, len(chosen)):
        # the completion's needless cells (of a unit set aside in part too: what it fails is the floor's)
        kept, raw = prune(frozenset(chosen), [expand({r}) for r in reversed(rounds.added)], attack,
                          lambda a: floor(a).passes, raw)
        out.pruned, chosen, seen = len(chosen) - len(kept), set(kept), floor(raw)
    out.clauses = len(clauses)
    out.reconstruction = sorted(chosen - forced)
    out.lower_bound = rounds.lower_bound
    out.minimal = rounds.minimal(out.status, len(out.cells))
    out.after = seen.summary
    floor.settle(out, raw, seen, problem, ctx.inputs.schema)
    out.loss = information_loss(problem, out.cells, counts)
    out.seconds = time.perf_counter() - start
    return out


def widen(new: list, picked: set, more: int, size: dict, rcost: dict) -> set:
    """``more`` further cells (class representatives) for a monotone round: those in most of the round's
    new clauses (pos, neg) first, then by ``size`` (their cost), ``rcost`` (the tie-break) and name."""
    tally: dict[str, int] = {}
    for pos, _ in new:
        for r in pos - picked:
            tally[r] = tally.get(r, 0) + 1
    return set(sorted(tally, key=lambda r: (-tally[r], size.get(r, 1), rcost.get(r, 0), r))[:max(0, more)])


def unit_contexts(inputs: Inputs) -> list[UnitContext]:
    out = []
    for level in inputs.schedule.levels:
        for geo, rows in units_of(inputs.frame, inputs.schema, level):
            out.append(UnitContext(inputs, level, geo, rows))
    return out
