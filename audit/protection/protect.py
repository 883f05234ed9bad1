"""Protection recommender: the least suppression (or rounding, or noise) that defeats the proved claims.

Suppression is *reconstruction-aware* (an implicit-hitting-set loop, per geographic unit):

1. forced cells: published exact counts the ``small_cells`` rule fails (primary suppression) and
   the complementary cells that keep them from exact recovery in tables with margins
   (:func:`audit.protection.suppress.simple_heuristic`, in the spirit of sdcTable's SIMPLEHEURISTIC);
2. attack the unit with those cells suppressed (:func:`audit.attacks.exact.audit_unit`; a suppressed cell
   becomes the interval [0, N]: the protected schedule names the cells, so the attacker knows they
   are not threshold suppressions); every failing claim (by the rules) gets its explanation, a
   minimal set of published cells that implies it, and adds the clause "suppress one of these";
3. a minimum hitting set of all clauses so far (MaxSAT, RC2; fewest cells, then fewest persons in
   them) is the next candidate; repeat until the attack finds no failing claim.

Every explanation stays valid when other cells are suppressed, so the loop only ever excludes
sets that fail: with the exact hitting set the result is a minimum number of cells (for the
claims the attack considers, i.e. up to ``--max-columns``). A recommendation is only offered after
re-auditing the protected schedule through the ordinary path (tabulate, problems, attack, rules).

Noise is evaluated in an *attacker-at-confidence* model, not a proof: a count published with
Laplace noise of scale b is known to the attacker to within ±z·b, z = ln(1/α), which holds for each
cell with probability 1-α. The interval is centred on the true count (the attacker's interval when
the draw is zero; it never excludes the truth).
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .suppress import hitting_set, simple_heuristic
from ..problem.claims import UNDECIDED, VERIFIED, Claim
from ..attacks.engines import get_engine
from ..errors import AuditError, InconsistentRelease, InternalError
from ..attacks.exact import ExactOptions, UnitResult, audit_unit
from ..inputs import Inputs, load_inputs
from ..release.magnitude import MAGNITUDE_RULES, sensitive_values
from ..paths import clear_outputs
from ..problem.build import Problem, build_problems
from ..attacks.reidentify import with_attacker
from ..release.constraints import PUBLISHED, SUPPRESSED, Constraint, UnitRelease
from ..specs.schedule import Protection, Schedule, rounds_to_zero
from ..release.tabulate import tabulate, units_of
from ..findings.document import (GridKeeper, cell_labels, document, grid_cap, grid_json, run_exact, unit_json,
                                 write_json)
from ..policy.rules import apply, evaluate
from ..attacks.engines.linear import privacy_loss
from ..outputs.progress import Progress

STRATEGIES = ("suppress", "round", "noise")
COSTS = ("cells", "persons", "values")
ALPHA = 0.05
ROUND_BASES = (2, 3, 4, 5, 10, 20)
NOISE_SCALES = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0)
OUTPUTS = ("protected.yaml", "protection.json", "protection.partial.json", "findings.json")  # what a run writes: an earlier run's are removed first


@dataclass(frozen=True)
class Policy:
    """What makes a unit fail, read from the rules (only rules whose action is ``fail``)."""

    derived: int | None = 2        # verified derived singleton claims over >= k columns
    direct: int | None = None      # verified direct singleton claims (a published 1) over >= k columns
    full_records: bool = False     # verified claims over every column
    reconstructed: bool = False    # exactly one dataset fits
    small: int | None = None       # published exact counts 1..t-1
    undecided: bool = True         # fail closed
    reidentification: int | None = None  # persons linked with every sensitive value proved, per unit
    inference: int | None = None   # persons unlike their unit's majority with their sensitive values proved
    magnitude: tuple = ()          # (rule, settings) of the magnitude rules: published sums they find sensitive
    protection: dict | None = None  # protection_levels settings: every hidden count's interval must meet them

    @classmethod
    def from_rules(cls, rules) -> "Policy":
        on = {r.id: r for r in rules.rules if r.action == "fail"}
        get = lambda rid, key: on[rid].settings.get(key) if rid in on else None  # noqa: E731
        return cls(derived=get("derived_singletons", "min_columns"), direct=get("direct_singletons", "min_columns"),
                   full_records="full_records" in on, reconstructed="reconstructed_units" in on,
                   small=get("small_cells", "threshold"), undecided="undecided" in on,
                   reidentification=get("reidentification", "max_persons"),
                   inference=get("attribute_inference", "max_persons"),
                   magnitude=tuple((rid, dict(on[rid].settings)) for rid in MAGNITUDE_RULES if rid in on),
                   protection=dict(on["protection_levels"].settings) if "protection_levels" in on else None)


@dataclass(frozen=True)
class ProtectOptions:
    strategy: str = "suppress"
    exact: ExactOptions = ExactOptions()
    primary: bool = True           # suppress the published counts the small_cells rule fails
    complementary: bool = True     # SIMPLEHEURISTIC around them in tables with margins
    hitting: str = "exact"         # exact (MaxSAT) | greedy
    cost: str = "cells"            # what suppression costs: cells | persons | values (tau-Argus' options)
    max_iterations: int = 60
    round_bases: tuple[int, ...] = ROUND_BASES
    noise_scales: tuple[float, ...] = NOISE_SCALES
    alpha: float = ALPHA
    rank: bool = True              # re-run the ranking attack at the chosen noise scale when torch is there

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise AuditError(f"unknown strategy '{self.strategy}'", "--strategy", f"use one of {list(STRATEGIES)}")
        if self.hitting not in ("exact", "greedy"):
            raise AuditError(f"unknown hitting-set method '{self.hitting}'", "--hitting", "use exact or greedy")
        if self.cost not in COSTS:
            raise AuditError(f"unknown cost '{self.cost}'", "--cost", f"use one of {list(COSTS)}")
        if not 0 < self.alpha < 1:
            raise AuditError("alpha must be between 0 and 1", "--alpha", "e.g. --alpha 0.05")


def geo_key(geo: tuple[str, ...]) -> str:
    return "/".join(geo)


def cell_of(key: str) -> str:
    return key.rsplit(":", 1)[0]


# ------------------------------------------------------------------------------ failing claims

def failing(result: UnitResult, policy: Policy) -> tuple[list, list]:
    """(failing verified verdicts, undecided verdicts) of one attacked unit under the policy."""
    ncols = len(result.problem.domains)
    out, undecided = [], []
    for v in result.verdicts:
        if v.status == UNDECIDED:
            undecided.append(v)
            continue
        if v.status != VERIFIED:
            continue
        k = len(v.claim.assignment)
        if ((v.claim.singleton and not v.direct and policy.derived is not None and k >= policy.derived)
                or (v.claim.singleton and v.direct and policy.direct is not None and k >= policy.direct)
                or (policy.full_records and k == ncols)):
            out.append(v)
    if result.reidentification is not None:  # a person whose sensitive values are proved: the claims pinning them
        seen = {v.claim for v in out}
        out += [v for v in result.reidentification.failing(policy.reidentification, policy.inference)
                if v.claim not in seen]
        if policy.reidentification is not None or policy.inference is not None:
            undecided = undecided + result.reidentification.undecided
    return out, undecided


def twins(problem: Problem) -> dict[tuple, list[str]]:
    """Claim (assignment, m) -> every published exact count cell that states it directly."""
    out: dict[tuple, list[str]] = {}
    names = problem.names
    for c in problem.constraints:
        if c.statistic.kind != "count" or not c.exact or not c.predicate.clauses:
            continue
        if all(len(a) == 1 for _, a in c.predicate.clauses):
            key = (tuple(sorted((names.index(n), next(iter(a))) for n, a in c.predicate.clauses)), int(c.lo))
            out.setdefault(key, []).append(cell_of(c.key))
    return out


PER_ITERATION = 64  # derived claims explained per iteration of the hitting-set loop


def _to_explain(bad: list, truth: np.ndarray) -> list:
    """The failing claims whose explanations an iteration adds: every direct one (free), and up to
    :data:`PER_ITERATION` derived ones, narrowest first, taken in turn from each record they single
    out. Any failing claim gives a clause the current suppression does not meet, so the loop still
    converges; explaining every one of the hundreds of claims about the same few records each
    iteration is what made it slow."""
    direct = [v for v in bad if v.direct]
    by_record: dict[tuple, list] = {}
    for v in sorted((v for v in bad if not v.direct), key=lambda v: (len(v.claim.assignment), v.claim.assignment)):
        cols = [c for c, _ in v.claim.assignment]
        vals = np.array([a for _, a in v.claim.assignment])
        match = tuple(np.flatnonzero((truth[:, cols] == vals).all(axis=1)).tolist()) if len(truth) else ()
        by_record.setdefault(match, []).append(v)
    picked = [v for turn in itertools.zip_longest(*by_record.values()) for v in turn if v is not None]
    return direct + picked[:PER_ITERATION]


def _audit_truthful(problem: Problem, exact: ExactOptions) -> UnitResult:
    """:func:`audit_unit` on a rounded or noisy release whose intervals hold the true rows: a release
    that admits no dataset is then a bug, never a scheme that fails."""
    try:
        return audit_unit(problem, exact)
    except InconsistentRelease as err:
        raise InternalError(f"unit {'/'.join(problem.geo)}: no dataset reproduces a release whose intervals "
                            f"hold the true rows ({err.message})") from err


CORES = 16  # explanations sought per explained claim and iteration


def _explain(engine, claim: Claim, hidden: set[str]) -> frozenset:
    cells, _ = engine.explain(claim)
    if not cells:  # explanation budget spent: every published cell together still implies the claim
        cells = tuple(engine.cells)
    return frozenset(cells) - hidden


def _cores(engine, claim: Claim, hidden: set[str], cheapest: Callable[[frozenset], set], seen: set,
           most: int = CORES) -> list[frozenset]:
    """Explanations of a claim outside the hidden cells, the first over every cell (alone when ``seen``
    holds it already: claims about one record share their explanations), each next one among the
    cells the earlier ones leave aside: first whole explanations (disjoint ones), then only the
    ``cheapest`` cell of each (a cell and its identical copies, as the hitting set would pick),
    until the cells left no longer imply the claim.

    One explanation alone is a weak clause where the tables state the same fact many ways (a zero
    in P6, P7, P8, ...): the hitting set hides one copy, the claim follows from the next, and the
    loop crawls, one attack per copy. Each explanation is a valid clause (its cells alone imply the
    claim whatever else is hidden), so the minimum hitting set stays a lower bound.
    """
    pos = _explain(engine, claim, hidden)
    if pos in seen:
        return [pos]
    seen.add(pos)
    out = [pos]
    for whole in (True, False):
        aside: set[str] = set()
        pos = out[0]
        while pos and len(out) < most:
            aside |= set(pos) if whole else cheapest(pos)
            found = engine.explainer().explain(claim, among=[k for k in engine.cells if k not in aside])
            if found is None or found == ((), False):  # gone without the cells set aside, or the budget is spent
                break
            pos = frozenset(found[0]) - hidden
            out.append(pos)
    return out


def claim_clauses(result: UnitResult, bad: list, recon: bool, hidden: set[str], direct_of: dict,
                  options: ProtectOptions, cheapest: Callable[[frozenset], set] | None = None
                  ) -> list[tuple[frozenset, frozenset]]:
    """Clauses (pos, neg) "suppress one of pos, or un-suppress one of neg" that every pattern defeating
    the failing claims (and a unique reconstruction, with ``recon``) meets: their explanations (with
    ``cheapest``, several per claim, see :func:`_cores`)."""
    engine = get_engine("sat", result.problem, conflicts=options.exact.conflicts, seed=options.exact.seed)
    engine.explainer(options.exact.explain_budget)
    new, seen = [], set()
    for v in _to_explain(bad, result.problem.truth):
        if v.direct:
            new.append((frozenset(v.cells), frozenset()))
            continue
        neg = frozenset(k for k in direct_of.get((v.claim.assignment, v.claim.m), ()) if k in hidden)
        if cheapest is None:
            new.append((_explain(engine, v.claim, hidden), neg))
        else:
            new += [(pos, neg) for pos in _cores(engine, v.claim, hidden, cheapest, seen)]
    if recon:  # unique solution: every full record is implied; hit the union of their explanations
        truth = result.problem.truth
        union: set = set()
        for row in {tuple(r) for r in truth.tolist()}:
            m = int((truth == np.array(row)).all(axis=1).sum())
            union |= _explain(engine, Claim(tuple(enumerate(row)), m), hidden)
        new.append((frozenset(union), frozenset()))
    return new


# ------------------------------------------------------------------------------ suppression

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
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    iterations: int = 0
    clauses: int = 0
    seconds: float = 0.0
    loss: dict = field(default_factory=dict)
    reason: str = ""

    @property
    def cells(self) -> list[str]:
        return sorted(set(self.primary) | set(self.complementary) | set(self.reconstruction))

    def to_dict(self) -> dict:
        return {"geo": geo_key(self.geo), "level": self.level, "rows": self.rows, "status": self.status,
                "reason": self.reason, "cells": self.cells, "suppressed": len(self.cells),
                "primary": self.primary, "complementary": self.complementary,
                "reconstruction": self.reconstruction, "iterations": self.iterations,
                "explanations": self.clauses, "information_loss": self.loss,
                "before": self.before, "after": self.after, "seconds": round(self.seconds, 3)}


def _summary(result: UnitResult, policy: Policy) -> dict:
    bad, undecided = failing(result, policy)
    return {"verified": len(result.verified), "failing_claims": len(bad), "undecided": len(undecided),
            "reconstructed": result.reconstructed, "solutions": result.solutions}


class UnitContext:
    """One unit's rows and the level's tables: re-tabulates and rebuilds its problem under a suppression."""

    def __init__(self, inputs: Inputs, level: str, geo: tuple[str, ...], rows: np.ndarray):
        self.inputs, self.level, self.geo = inputs, level, geo
        self.frame = inputs.frame.iloc[rows]
        tables = tuple(t for t in inputs.schedule.tables if t.level == level)
        base = dict(getattr(inputs.schedule, "suppress", {}) or {})
        self.already = frozenset(base.get(geo_key(geo), frozenset()))
        self.schedule = replace(inputs.schedule, tables=tables, suppress={})

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
                 options: ProtectOptions) -> tuple[list, list]:
    """(primary, complementary): published counts the small_cells rule fails and published sums a magnitude
    rule finds sensitive, and SIMPLEHEURISTIC's partners."""
    if not options.primary or (policy.small is None and not policy.magnitude):
        return [], []
    primary = set()
    for v in release.values if policy.small is not None else ():
        p = release.protection.get(v.cell.table)
        rounded = p is not None and p.round_to and p.round_to > 1
        if v.status == PUBLISHED and v.stat.kind == "count" and not rounded and 1 <= v.value < policy.small:
            primary.add(v.cell.key)
    magnitude = {k: c.to_json() for k, c in release.magnitude.items()}
    primary |= {key.rsplit(":", 1)[0] for key in sensitive_values(magnitude, policy.magnitude)}
    comp: set[str] = set()
    if options.complementary and primary:
        counts = cell_counts(problem)
        hidden = {v.cell.key for v in release.values if v.status == SUPPRESSED}
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
    in the policy, or a cost other than cells, the joint search of :mod:`audit.protection.secondary`."""
    if policy.protection is not None or options.cost != "cells":
        from .secondary import suppress_unit as joint

        return joint(ctx, policy, options, log)
    start = time.perf_counter()
    exact = replace(options.exact, explain="none", intervals=False)  # the rules the loop checks need no intervals
    problem, release = ctx.problem()
    out = UnitProtection(ctx.level, ctx.geo, problem.n_rows[1])
    first = audit_unit(problem, exact)
    out.before = _summary(first, policy)
    out.primary, out.complementary = forced_cells(release, problem, ctx.schedule.tables, policy, options)
    forced = set(out.primary) | set(out.complementary)
    counts = cell_counts(problem)
    direct_of = twins(problem)
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
    chosen: set[str] = set(forced)
    result = first
    while True:
        out.iterations += 1
        if chosen:
            p, _ = ctx.problem(chosen)
            result = audit_unit(p, exact)
        bad, undecided = failing(result, policy)
        recon = policy.reconstructed and result.reconstructed
        if result.status != "done" or (undecided and policy.undecided):
            out.status = "undecided"
            out.reason = result.reason or f"{len(undecided)} claims undecided: no recommendation (fail closed)"
            break
        if not bad and not recon:
            out.status = "protected" if chosen else "pass"
            break
        if out.iterations > options.max_iterations:
            out.status, out.reason = "gave-up", f"no protection within {options.max_iterations} iterations"
            break
        new = claim_clauses(result, bad, recon, chosen | set(ctx.already), direct_of, options, cheapest)
        if any(not pos and not (neg - forced) for pos, neg in new):
            out.status = "unfixable"
            out.reason = "a failing claim follows from the population and the structural edits alone"
            break
        clauses += [(frozenset(rep.get(k, k) for k in pos), frozenset(rep.get(k, k) for k in neg)) for pos, neg in new]
        picked = hitting_set(clauses, rcost, {rep.get(k, k) for k in forced}, exact=options.hitting == "exact",
                             size=size)
        chosen = expand(picked) | forced
        if log:
            log(f"unit {geo_key(ctx.geo)}: iteration {out.iterations}, {len(bad)} failing claims, "
                f"{len(clauses)} explanations, trying {len(chosen)} cells")
    out.clauses = len(clauses)
    out.reconstruction = sorted(chosen - forced)
    out.after = _summary(result, policy)
    out.loss = information_loss(problem, out.cells, counts)
    out.seconds = time.perf_counter() - start
    return out


# ------------------------------------------------------------------------------ driver

def unit_contexts(inputs: Inputs) -> list[UnitContext]:
    out = []
    for level in inputs.schedule.levels:
        for geo, rows in units_of(inputs.frame, inputs.schema, level):
            out.append(UnitContext(inputs, level, geo, rows))
    return out


def protected_schedule(schedule: Schedule, suppress: dict[str, frozenset] | None = None,
                       round_to: int | None = None) -> Schedule:
    """The schedule with extra per-unit suppressions, or every count table rounded to a base."""
    if round_to is not None:
        tables = tuple(replace(t, protection=_rounded(t.protection, round_to)) for t in schedule.tables)
        schedule = replace(schedule, tables=tables, protection=_rounded(schedule.protection, round_to))
    if suppress:
        merged = {k: frozenset(v) for k, v in (getattr(schedule, "suppress", {}) or {}).items()}
        for k, cells in suppress.items():
            merged[k] = merged.get(k, frozenset()) | frozenset(cells)
        schedule = replace(schedule, suppress=merged)
    return schedule


def _rounded(protection: Protection, base: int) -> Protection:
    """The protection with counts rounded to ``base``, and zeros protected where a threshold below
    half the base would make a published 0 ambiguous (see :class:`~audit.specs.schedule.Protection`)."""
    zeros = protection.protect_zeros or rounds_to_zero(protection.suppress_below, base)
    return replace(protection, round_to=base, protect_zeros=zeros)


def write_schedule_yaml(source: str, out: Path, suppress: dict[str, list[str]] | None = None,
                        round_to: int | None = None, header: str = "") -> None:
    """``protected.yaml``: the original schedule document plus the protection (comments are not kept)."""
    import yaml

    doc = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    if round_to is not None:
        default = doc.get("protection") or {}
        for spec, inherited in [(default, {})] + [(t["protection"], default) for t in doc["tables"]
                                                   if isinstance(t.get("protection"), dict)]:
            spec["round_to"] = round_to
            if rounds_to_zero({**inherited, **spec}.get("suppress_below"), round_to):
                spec["protect_zeros"] = True  # as _rounded does
        doc["protection"] = default
    if suppress:
        merged = {str(k): list(v) for k, v in (doc.get("suppress") or {}).items()}
        for k, cells in suppress.items():
            merged[k] = sorted(set(merged.get(k, [])) | set(cells))
        doc["suppress"] = merged
    out.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
    out.write_text("".join(f"# {line}\n" for line in header.splitlines()) + text, encoding="utf-8")


def audited(inputs: Inputs, exact: ExactOptions, rules, label: str, progress: bool = False,
            out: Path | None = None) -> dict:
    """``run_exact`` with units done / total shown under ``label`` (claim store in ``out`` if given)."""
    with Progress(label, quiet=not progress) as bar:
        return run_exact(inputs, exact, lambda u: bar.update(note=u["geo"]), rules, out=out, on_total=bar.total)


def reaudit(data: str, schema_path: str, schedule_path: Path, exact: ExactOptions, rules, progress: bool = False,
            out: Path | None = None) -> dict:
    """``audit run`` on the protected schedule: the findings document, with the rules' verdict."""
    inputs = load_inputs(data, schema_path, schedule_path)
    return audited(inputs, exact, rules, "re-audit: units", progress, out)


def audit_pattern(inputs: Inputs, exact: ExactOptions, rules, out: Path, progress: bool = False) -> dict:
    """``audit protect --audit-only``: the schedule's own suppression pattern audited as it stands (the
    peers' "Audit"): no new suppression is searched for. Writes findings.json and the claim store to
    ``out``; the document carries every hidden count's feasibility interval and the rules' verdict."""
    doc = audited(inputs, with_attacker(exact, inputs.schema), rules, "audit: units", progress, out)
    write_json(doc, out / "findings.json")
    return doc


def _failing_units(doc: dict) -> list[str]:
    return sorted({c["unit"] for c in doc.get("checks", ()) if c["outcome"] == "fail"})


def rules_failed(result: UnitResult, release: UnitRelease | None, rules) -> list[str]:
    """The rules one attacked unit fails, by the ordinary path (its findings entry, the rules)."""
    return sorted({c["rule"] for c in evaluate({"units": [unit_json(result, release)]}, rules) if c["outcome"] == "fail"})


def _still_failing(ctx: UnitContext, cells, options: ProtectOptions, rules) -> list[str]:
    """The rules a unit still fails with these cells suppressed (where the search stopped)."""
    problem, release = ctx.problem(set(cells))
    return rules_failed(audit_unit(problem, replace(options.exact, explain="none")), release, rules)


def protect(inputs: Inputs, options: ProtectOptions, rules, out: Path,
            log: Callable[[str], None] | None = None, progress: bool = False) -> dict:
    """Attack, protect and re-audit; write protected.yaml, protection.json, findings.json and
    claims.csv.gz to ``out``; with ``progress``, show units done / total of each stage on stderr."""
    start = time.perf_counter()
    clear_outputs(out, OUTPUTS)  # nothing from an earlier run may pass for this one's
    policy = Policy.from_rules(rules)
    options = replace(options, exact=with_attacker(options.exact, inputs.schema))
    before = audited(inputs, options.exact, rules, "audit: units", progress)
    failing_units = set(_failing_units(before))
    report: dict[str, Any] = {
        "strategy": options.strategy,
        "parameters": {k: v for k, v in asdict(options).items() if k != "exact"} | {"exact": asdict(options.exact) | {
            "attacker": options.exact.attacker and options.exact.attacker.describe()}},
        "policy": asdict(policy), "rules": rules.to_dict(),
        "inputs": {"data": inputs.data_path, "schema": inputs.schema.source, "tables": inputs.schedule.source},
        "before": {"verdict": before["verdict"], "summary": before["summary"], "failing": before["failing"]},
        "attacker_model": ("a cell suppressed by this recommendation is known to the attacker to be suppressed and "
                           "lies in [0, N]; cells suppressed by the schedule's threshold keep the interval the "
                           "schedule implies ([0, t-1] without complementary suppression, else [0, N])"),
    }
    sched_path = out / "protected.yaml"
    if options.strategy == "suppress":
        units, contexts = [], {}
        todo = [ctx for ctx in unit_contexts(inputs) if geo_key(ctx.geo) in failing_units]
        with Progress("protect: units", quiet=not progress) as bar:
            bar.total(len(todo))
            try:
                for ctx in todo:
                    if log:
                        log(f"unit {geo_key(ctx.geo)}: protecting")
                    units.append(suppress_unit(ctx, policy, options, log))
                    contexts[geo_key(ctx.geo)] = ctx
                    bar.update(note=geo_key(ctx.geo))
            except KeyboardInterrupt:
                partial = out / "protection.partial.json"
                write_json({**report, "interrupted": True, "units_total": len(todo),
                            "units": [u.to_dict() for u in units]}, partial)
                raise ProtectInterrupted(len(units), len(todo), partial) from None
        suppress = {geo_key(u.geo): u.cells for u in units if u.cells and u.status in ("protected", "pass")}
        report["units"] = [u.to_dict() for u in units]
        for u, d in zip(units, report["units"]):
            if u.status not in ("protected", "pass"):  # where the search stopped, by the ordinary path
                d["failing_rules"] = _still_failing(contexts[d["geo"]], u.cells, options, rules)
        report["failing_units"] = {d["geo"]: d["failing_rules"] for d in report["units"] if "failing_rules" in d}
        labels = cell_labels(inputs.schedule)
        report["cell_labels"] = {k: labels.get(k, k) for u in units for k in u.cells}
        if report["failing_units"]:
            report["reason"] = (f"the search found no passing pattern in {len(report['failing_units'])} of "
                                f"{len(units)} units")
        else:
            header = (f"Protected by `audit protect --strategy suppress` from {inputs.schedule.source}.\n"
                      "suppress: cells hidden in one geographic unit only (the attacker sees them as [0, N]).")
            write_schedule_yaml(inputs.schedule.source, sched_path, suppress, header=header)
        report["totals"] = {
            "units_protected": sum(u.status == "protected" for u in units),
            "units_not_protected": [geo_key(u.geo) for u in units if u.status not in ("protected", "pass")],
            "cells_suppressed": sum(len(u.cells) for u in units),
            "persons_in_suppressed_cells": sum(u.loss.get("persons_in_suppressed_cells", 0) for u in units),
        }
    elif options.strategy == "round":
        report["sweep"], base = _round_sweep(inputs, options, policy, failing_units, log, rules)
        report["round_to"] = base
        if base is None:
            report["reason"] = f"no base in {list(options.round_bases)} meets the rules"
            report["failing_units"] = _sweep_failing(report["sweep"])
        else:
            write_schedule_yaml(inputs.schedule.source, sched_path, round_to=base,
                                header=f"Protected by `audit protect --strategy round`: counts rounded to base {base}.")
    else:
        report.update(_noise(inputs, options, policy, failing_units, out, log, rules))
        if report.get("scale") is None:
            report["failing_units"] = _sweep_failing(report["sweep"])
        else:
            write_schedule_yaml(inputs.schedule.source, sched_path,
                                header="Strategy noise: the tables are unchanged here; publish them with the Laplace "
                                       "noise scale in protection.json (noise is not a schedule option).")
    if options.strategy in ("suppress", "round") and sched_path.exists():
        after = reaudit(inputs.data_path, inputs.schema.source, sched_path, options.exact, rules, progress, out)
    else:
        after = report.pop("_after", None) or before
    write_json(after, out / "findings.json")
    report["after"] = {"verdict": after["verdict"], "summary": after["summary"], "failing": after["failing"]}
    report["recommendation"] = _recommendation(options, report, after)
    if report["recommendation"] is None:  # protected.yaml is written only for a pattern that passes
        sched_path.unlink(missing_ok=True)
        report.setdefault("reason", "the re-audit of the protected schedule does not pass the rules")
        if "failing_units" not in report:  # the search passed, its re-audit did not
            report["failing_units"] = {}
            for c in (c for c in after.get("checks", ()) if c["outcome"] == "fail"):
                report["failing_units"].setdefault(c["unit"], []).append(c["rule"])
    report["seconds"] = round(time.perf_counter() - start, 3)
    write_json(report, out / "protection.json")
    return report


class ProtectInterrupted(Exception):
    """Ctrl-C during ``audit protect``: the units protected so far are kept in a partial file."""

    def __init__(self, done: int, total: int, path: Path):
        self.done, self.total, self.path = done, total, path
        super().__init__(f"interrupted: {done} of {total} units protected, kept in {path} (not a recommendation: "
                         "no protected schedule was written and nothing was re-audited)")


def _recommendation(options: ProtectOptions, report: dict, after: dict) -> dict | None:
    """Offered only when the re-audit of the protected release passes the rules with nothing undecided."""
    passes = after["verdict"] == "pass" and after["summary"].get("undecided", 0) == 0
    if not passes:
        return None
    if options.strategy == "suppress":
        return {"strategy": "suppress", "cells": {u["geo"]: u["cells"] for u in report["units"] if u["cells"]},
                "cells_suppressed": report["totals"]["cells_suppressed"]}
    if options.strategy == "round":
        return {"strategy": "round", "round_to": report["round_to"]}
    return {"strategy": "noise", "scale": report.get("scale"), "epsilon": report.get("epsilon"),
            "model": "attacker at confidence (not a proof)"}


# ------------------------------------------------------------------------------ rounding

def _sweep_failing(sweep: list) -> dict[str, list[str]]:
    """Unit -> rules it fails at the last step of a round or noise sweep (the sweep stops at the first)."""
    return {geo: d["failing_rules"] for geo, d in (sweep[-1]["units"] if sweep else {}).items() if d.get("failing_rules")}


def _round_sweep(inputs: Inputs, options: ProtectOptions, policy: Policy, failing_units: set[str], log,
                 rules) -> tuple[list, int | None]:
    sweep = []
    contexts = [c for c in unit_contexts(inputs) if geo_key(c.geo) in failing_units]
    exact = replace(options.exact, explain="none")
    for base in options.round_bases:
        sched = protected_schedule(inputs.schedule, round_to=base)
        ok, detail = True, {}
        for ctx in contexts:
            p, release = ctx.problem(schedule=replace(sched, tables=tuple(t for t in sched.tables if t.level == ctx.level),
                                                     suppress={}))
            res = _audit_truthful(p, exact)
            bad, undecided = failing(res, policy)
            recon = policy.reconstructed and res.reconstructed
            detail[geo_key(ctx.geo)] = {"failing_claims": len(bad), "undecided": len(undecided), "reconstructed": res.reconstructed}
            if bad or recon or (undecided and policy.undecided):
                detail[geo_key(ctx.geo)]["failing_rules"] = rules_failed(res, release, rules)
                ok = False
                break
        sweep.append({"round_to": base, "passes": ok, "units": detail})
        if log:
            log(f"round_to {base}: {'passes' if ok else 'fails'}")
        if ok:
            return sweep, base
    return sweep, None


# ------------------------------------------------------------------------------ noise

def confidence_z(alpha: float) -> float:
    """Half-width of Laplace(b) at confidence 1-α, in units of b: P(|X| > z b) = e^-z = α."""
    return math.log(1.0 / alpha)


def noisy_problem(problem: Problem, scale: float, alpha: float) -> Problem:
    """Exact published counts widened to the true count ± z·b (integers, clipped at 0)."""
    half = confidence_z(alpha) * scale
    cons = []
    for c in problem.constraints:
        if c.statistic.kind == "count" and c.exact and c.predicate.clauses:
            t = float(c.lo)
            cons.append(Constraint(c.key, c.predicate, c.statistic, Fraction(max(0, math.ceil(t - half))),
                                   Fraction(math.floor(t + half))))
        else:
            cons.append(c)
    return replace(problem, constraints=tuple(cons))


def l1_sensitivity(inputs: Inputs, level: str) -> int:
    """Most count cells of one level a single record can fall in (summed per table: an upper bound)."""
    schema, total = inputs.schema, 0
    for t in (t for t in inputs.schedule.tables if t.level == level):
        cells = [c for c in t.cells if any(s.kind == "count" for s in c.stats)]
        cols = sorted({n for c in cells for n, _ in c.predicate.clauses})
        combos = math.prod(len(schema.column(n).codes) for n in cols) if cols else 1
        if combos > 200_000:
            total += len(cells)
            continue
        grid = pd.DataFrame(list(itertools.product(*(schema.column(n).codes for n in cols))), columns=cols) \
            if cols else pd.DataFrame(index=[0])
        hits = np.zeros(len(grid), dtype=np.int64)
        for c in cells:
            hits += c.predicate.mask(grid)
        total += int(hits.max()) if len(hits) else 0
    return total


def _noise(inputs: Inputs, options: ProtectOptions, policy: Policy, failing_units: set[str], out: Path, log,
           rules) -> dict:
    exact = replace(options.exact, explain="none")
    contexts = [c for c in unit_contexts(inputs) if geo_key(c.geo) in failing_units]
    problems = {geo_key(c.geo): c.problem()[0] for c in contexts}
    z = confidence_z(options.alpha)
    sweep, chosen = [], None
    for b in options.noise_scales:
        ok, detail = True, {}
        for key, p in problems.items():
            res = _audit_truthful(noisy_problem(p, b, options.alpha), exact)
            bad, undecided = failing(res, policy)
            recon = policy.reconstructed and res.reconstructed
            detail[key] = {"failing_claims": len(bad), "undecided": len(undecided), "reconstructed": res.reconstructed}
            if bad or recon or (undecided and policy.undecided):
                detail[key]["failing_rules"] = rules_failed(res, None, rules)
                ok = False
                break
        sweep.append({"scale": b, "half_width": round(z * b, 4), "passes": ok, "units": detail})
        if log:
            log(f"noise scale {b}: {'passes' if ok else 'fails'}")
        if ok:
            chosen = b
            break
    levels = inputs.schedule.levels
    sens = max(l1_sensitivity(inputs, lv) for lv in levels)
    res: dict[str, Any] = {"sweep": sweep, "scale": chosen, "alpha": options.alpha, "z": round(z, 4),
                           "model": ("attacker at confidence 1-alpha, not a proof: each noisy count is known to "
                                     "within +-z*b of the true count (z = ln(1/alpha), per cell); non-count "
                                     "statistics are published unchanged")}
    if chosen is None:
        res["reason"] = f"no scale in {list(options.noise_scales)} meets the rules"
        res["rank"] = {"run": False, "why": "no scale met the rules"}
        return res
    loss = privacy_loss("laplace", chosen, queries=sens)
    res["mechanism"] = "laplace"
    res["l1_sensitivity"] = sens
    res["epsilon"] = loss.epsilon
    res["epsilon_per_cell"] = loss.epsilon_per_query
    res["epsilon_note"] = loss.note or f"epsilon = L1 sensitivity {sens} / scale"
    if loss.epsilon is None:
        res["epsilon"] = sens / chosen
        res["epsilon_note"] = f"OpenDP missing: epsilon = L1 sensitivity {sens} / scale {chosen} (pure DP)"
    # error added: one seeded draw over every exact published count, and its expectation
    rng = np.random.default_rng(options.exact.seed)
    rows, errs = [], []
    drawn: dict[tuple, dict[str, float]] = {}  # (level, geo) -> value key -> the noisy value, for the grids
    for unit in inputs.release():
        for v in unit.values:
            if v.status == PUBLISHED and v.stat.kind == "count":
                e = float(rng.laplace(0.0, chosen))
                errs.append(e)
                rows.append({"geo": geo_key(unit.geo), "cell": v.cell.key, "true": int(v.value),
                             "noisy": round(float(v.value) + e, 3)})
                drawn.setdefault((unit.level, unit.geo), {})[v.key] = rows[-1]["noisy"]
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "noisy_release.csv", index=False)
    res["error"] = {"expected_abs": chosen, "expected_rmse": round(math.sqrt(2) * chosen, 4),
                    "draw_mean_abs": round(float(np.mean(np.abs(errs))), 4) if errs else 0.0,
                    "draw_rmse": round(float(np.sqrt(np.mean(np.square(errs)))), 4) if errs else 0.0,
                    "cells": len(errs), "draw_file": "noisy_release.csv"}
    res["rank"] = _rank_at(inputs, problems, chosen, options) if options.rank else {"run": False, "why": "--no-rank"}
    # the re-audit under the model: every unit at the chosen scale, as a findings document

    start = time.perf_counter()
    units = []
    contexts = unit_contexts(inputs)
    keeper = GridKeeper(grid_cap(len(contexts)))  # the tables as published: noisy counts shown as drawn
    for ctx in contexts:
        p, release = ctx.problem()
        units.append(unit_json(audit_unit(noisy_problem(p, chosen, options.alpha), options.exact), None))
        keeper.offer(units[-1], grid_json(release, drawn.get((release.level, release.geo))))
    doc = document(inputs, options.exact, units, time.perf_counter() - start, rules)
    if res["rank"].get("run") and isinstance(res["rank"].get("result"), dict):
        doc = apply(doc, rules, rank=res["rank"]["result"])  # the rank_lift rule now has its curve
    res["_after"] = doc
    return res


def _rank_at(inputs: Inputs, problems: dict, scale: float, options: ProtectOptions) -> dict:
    try:
        from ..attacks.engines.rank import RankAttack, RankOptions, torch_available
    except ImportError:
        return {"run": False, "why": "the ranking engine (audit/attacks/engines/rank.py) is not available"}
    if not torch_available():
        return {"run": False, "why": "torch is not installed"}
    rng = np.random.default_rng(options.exact.seed + 1)
    noisy = []
    for p in problems.values():
        cons = []
        for c in p.constraints:
            if c.statistic.kind == "count" and c.exact and c.predicate.clauses:
                v = Fraction(float(c.lo) + float(rng.laplace(0.0, scale))).limit_denominator(1000)
                cons.append(Constraint(c.key, c.predicate, c.statistic, v, v))
            else:
                cons.append(c)
        noisy.append(replace(p, constraints=tuple(cons)))
    try:
        ropts = RankOptions(runs=8, steps=150, seed=options.exact.seed, device="auto")
        res = RankAttack(noisy, inputs.frame, inputs.schema.geography, ropts,
                         noise={"*": math.sqrt(2) * scale}).evaluate()
        return {"run": True, "scale": scale, "runs": ropts.runs, "steps": ropts.steps, "result": res.to_dict()
                if hasattr(res, "to_dict") else str(res)}
    except (AuditError, MemoryError) as exc:  # optional attack: report, do not fail the protection (bugs propagate)
        return {"run": False, "why": f"the ranking attack failed: {exc}"}
