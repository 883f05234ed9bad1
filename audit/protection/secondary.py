"""Secondary suppression that meets protection levels and the proved-claim rules together, at least cost.

One unit at a time, all its tables at once (they share rows, so linked tables are protected jointly
by construction): a mixed-integer program over "suppress this cell" variables ``x`` (HiGHS) proposes
the cheapest pattern meeting every constraint found so far; the pattern is attacked exactly
(:func:`audit.attacks.exact.audit_unit`: proved claims and integer feasibility intervals), and whatever still
fails adds constraints:

* a failing claim: "suppress one of the cells that imply it" (:func:`audit.protection.claims.claim_clauses`);
* a hidden cell whose interval is too narrow (the ``protection_levels`` rule): for a count, a
  Fischetti-Salazar cut from the continuous attacker's linear program when that LP already shows the
  interval too narrow; else (and for a sum, mean or median) a no-good "suppress one more cell, or not
  this one".

The attacker LP lives in histogram space (a count ``h >= 0`` for every row the edits allow, every
count cell a sum of them). Any vector ``y`` of row multipliers bounds ``min c.h`` under *every*
pattern (only the cells' bounds change, from ``[a, a]`` published to ``[0, N]`` suppressed), so its
optimal duals at one pattern give a linear cut valid for all. The LP relaxes the integer attacker,
and suppressing more only widens intervals, so every cut and no-good is a necessary condition: the
first pattern the exact audit passes is a cheapest one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Mapping

import numpy as np

from ..attacks.exact import audit_unit, make_engine
from ..attacks.implied import flat_mask, in_sets, support
from ..attacks.highs import highs
from ..attacks.implied import LinearProof
from ..attacks.intervals import Interval, feasibility_intervals, hidden_cells
from ..problem.build import Problem
from ..release.constraints import PUBLISHED, SUPPRESSED, UnitRelease, pinned_counts
from ..policy.checks import protection_needed
from .claims import Attempt, Explanations, Floor, claim_clauses, twins
from .options import geo_key
from .rounds import Rounds, prune
from .unit import UnitProtection, cell_counts, forced_cells, information_loss, widen

SUPPORT = 50_000  # most rows the attacker LP holds; past it, no-goods alone (slower, still exact)
TOLERANCE = 1e-6  # cuts are loosened by this much (relative to their size): floating-point duals never cut off a feasible pattern


@dataclass(frozen=True)
class Cut:
    """``sum(coef[k] * x_k) >= rhs * x_cell`` (``cell`` None: always hidden, so ``>= rhs``)."""

    coef: Mapping[str, float]
    rhs: float
    cell: str | None

    def __post_init__(self):
        if any(v < 0 for v in self.coef.values()):
            raise ValueError("cut coefficients must be 0 or more")


def too_narrow(intervals: Mapping[str, Interval], settings: Mapping | None,
               levels: Mapping[str, tuple] | None = None) -> list[tuple[str, int, float]]:
    """(cell, sense, target) for each end of a hidden count's interval that misses its protection
    level: ``sense * count`` must reach down to ``target`` (1: the lower end, -1: the upper). An
    interval not certified fails both ends, as the rule fails it. ``levels`` (cell -> lower, upper: the
    schedule's a-priori levels) replace ``settings`` for their cells; without ``settings`` only they are judged."""
    out = []
    for key, iv in sorted(intervals.items()):
        own = (levels or {}).get(key, (levels or {}).get(key.rsplit(":", 1)[0]))  # a count's key is its cell's
        if own is None and settings is None:
            continue
        below, above = protection_needed({"lower": own[0], "upper": own[1]} if own else settings, iv.value, not iv.stat)
        if not iv.certified or iv.value - iv.lo < below:
            out.append((key, 1, iv.value - below))
        if not iv.certified or iv.hi - iv.value < above:
            out.append((key, -1, -(iv.value + above)))
    return out


class AttackerLP:
    """The continuous attacker of one unit over every row its edits allow: count cells published at
    their value or, suppressed, in ``[0, N]``; sums, means and medians left out (a relaxation)."""

    @classmethod
    def of(cls, problem: Problem, release: UnitRelease) -> "AttackerLP | None":
        """None when the rows the edits allow are too many to hold."""
        bounds = np.cumsum((0,) + problem.sizes)
        edits = np.array([flat_mask(problem, e) for e in problem.edits], dtype=np.int64).reshape(len(problem.edits), bounds[-1])
        rows = support(edits, bounds, SUPPORT)
        return None if rows is None or not len(rows) else cls(problem, release, rows, bounds)

    def __init__(self, problem: Problem, release: UnitRelease, rows: np.ndarray, bounds: np.ndarray):
        status = {v.cell.key: v.status for v in release.values}
        status.update(dict.fromkeys(pinned_counts(release), PUBLISHED))  # its own rule pins it: as published
        self.n = problem.n_rows
        self.keys, flats, self.lo, self.hi = [], [], [], []
        for c in problem.constraints:
            key = c.key.rsplit(":", 1)[0]
            if c.statistic.kind != "count" or key in self.keys:
                continue
            self.keys.append(key)
            flats.append(flat_mask(problem, c.predicate))
            if status.get(key) == SUPPRESSED:  # may widen to [0, N] when more is suppressed
                lo, hi = 0, self.n[1]
            else:
                lo, hi = int(np.ceil(float(c.lo))), self.n[1] if c.hi is None else int(np.floor(float(c.hi)))
            self.lo.append(lo)
            self.hi.append(hi)
        self.index = {k: i for i, k in enumerate(self.keys)}
        member = in_sets(rows, np.array(flats).reshape(len(flats), bounds[-1]), bounds).T
        self.a = np.vstack([member.astype(float), np.ones((1, len(rows)))])  # the last row: the population

    def cut(self, cell: str, sense: int, target: float, hidden: set[str], variables: set[str]) -> Cut | None:
        """A cut every pattern that gives ``sense * cell`` a least value of at most ``target`` meets,
        from the LP's duals with ``hidden`` suppressed; None when the LP reaches the target (the
        integers do not: no cut from here)."""
        i = self.index.get(cell)
        if i is None:
            return None
        shown = {k for k in hidden | {cell} if k in variables and k in self.index}
        lo, hi = np.array(self.lo + [self.n[0]], float), np.array(self.hi + [self.n[1]], float)
        wide = [self.index[k] for k in shown]
        lo[wide], hi[wide] = 0.0, float(self.n[1])
        y, d = self._duals(np.where(self.a[i] > 0, float(sense), 0.0), lo, hi)
        if y is None:
            return None
        # for any y: min c.h >= sum_r min(y_r lo_r, y_r hi_r) + N * sum(min(d, 0)), d = c - y.A (0 <= h <= N);
        # a variable cell's term is y a published, min(0, y N) suppressed: the difference is its coefficient
        bound = float(self.n[1]) * np.minimum(d, 0).sum()
        coef: dict[str, float] = {}
        for r, key in enumerate(self.keys + [None]):
            if key is not None and key != cell and key in variables:
                bound += y[r] * self.lo[r]
                gain = y[r] * self.lo[r] - min(0.0, y[r] * self.n[1])
                if gain > 0:
                    coef[key] = gain
            else:
                bound += min(y[r] * lo[r], y[r] * hi[r])
        slack = TOLERANCE * (1.0 + abs(bound) + sum(coef.values()))
        now = bound - sum(v for k, v in coef.items() if k in hidden)
        if now <= target + slack:
            return None  # the LP reaches the target at this pattern: only the integers fail it
        return Cut(coef, bound - target - slack, cell if cell in variables else None)

    def _duals(self, c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple:
        """Row duals and reduced costs of ``min c.h`` over ``lo <= A h <= hi``, ``0 <= h <= N``."""
        import highspy

        h = highs(threads=1, random_seed=0)
        m, n = self.a.shape
        h.addVars(n, np.zeros(n), np.full(n, float(self.n[1])))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), c)
        nz = np.nonzero(self.a)
        starts = np.searchsorted(nz[0], np.arange(m)).astype(np.int32)
        h.addRows(m, lo, hi, len(nz[0]), starts, nz[1].astype(np.int32), self.a[nz])
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None, None
        y = np.asarray(h.getSolution().row_dual, dtype=float)
        return y, c - y @ self.a


def _attempt(current: Problem, policy, exact, claims: bool, levels: Mapping | None = None) -> Attempt:
    """Attack ``current`` exactly: with ``claims``, the claim search and its intervals; else the
    feasibility intervals alone (tables of thousands of rows)."""
    if claims:
        seen = Attempt.of(audit_unit(current, exact), policy)
        if seen.reason:
            return seen
        intervals = seen.result.intervals
    else:
        intervals = feasibility_intervals(current, LinearProof.of(current), (lambda: make_engine(current, exact))
                                          if any(c.statistic.kind != "count" for c in hidden_cells(current).values()) else None)
        seen = Attempt(None, [], False, [], {"hidden_counts": len(intervals or {})})
    if policy.protection is None and not levels:
        return seen
    if intervals is None and hidden_cells(current):
        return replace(seen, reason="the feasibility intervals could not be computed")
    short = too_narrow(intervals or {}, policy.protection, levels)
    return replace(seen, short=short, summary={**seen.summary, "intervals_too_narrow": len({c for c, _, _ in short})})


def cheapest(variables: list[str], cost: Mapping[str, float], forced: set[str], clauses, cuts: list[Cut],
             tie: Mapping[str, float], never: frozenset = frozenset()) -> set[str] | None:
    """The cheapest pattern (``cost``, then ``tie``) meeting every claim clause (pos, neg) and cut, by a
    mixed-integer program (HiGHS, optimality gap 0), hiding none of ``never`` (cells forced to publish,
    unless forced); None when none exists."""
    import highspy

    variables = sorted(set(variables).union(*(pos for pos, _ in clauses)))  # a cell publishing no count
    at = {k: i for i, k in enumerate(variables)}
    n = len(variables)
    scale = sum(tie.get(k, 0) for k in variables) + 1
    h = highs(threads=1, random_seed=0, mip_rel_gap=0.0, mip_abs_gap=1e-9)
    h.addVars(n, np.array([1.0 if k in forced else 0.0 for k in variables]),
              np.array([0.0 if k in never and k not in forced else 1.0 for k in variables]))
    h.changeColsCost(n, np.arange(n, dtype=np.int32),
                     np.array([cost.get(k, 1.0) * scale + tie.get(k, 0) for k in variables], dtype=float))
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger, dtype=np.uint8))

    def row(terms: dict[str, float], lo: float) -> None:
        terms = {k: v for k, v in terms.items() if v}
        h.addRow(lo, highspy.kHighsInf, len(terms), np.array([at[k] for k in terms], dtype=np.int32),
                 np.array(list(terms.values()), dtype=float))

    for pos, neg in clauses:
        neg = {k for k in neg if k in at}  # others are hidden by the schedule itself
        row({**{k: 1.0 for k in pos}, **{k: -1.0 for k in neg}}, 1.0 - len(neg))
    for cut in cuts:
        terms = dict(cut.coef)
        if cut.cell is None:
            row(terms, cut.rhs)
        else:
            terms[cut.cell] = terms.get(cut.cell, 0.0) - cut.rhs
            row(terms, 0.0)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = h.getSolution().col_value
    return {k for k in variables if x[at[k]] > 0.5}


def cell_costs(problem: Problem, release: UnitRelease, kind: str) -> dict[str, float]:
    """Each published count cell's cost to suppress: 1 (``cells``), the persons in it (``persons``,
    tau-Argus' frequency cost), or its published magnitude (``values``: a ``sum(col)`` of the cell
    where it has one, else its count). A suppressed cell its own rule pins is published to the attacker,
    so it is one of them."""
    counts, sums = {k: float(n) for k, n in pinned_counts(release).items()}, {}
    for v in release.values:
        if v.status == PUBLISHED and v.stat.kind == "count":
            counts[v.cell.key] = float(v.value)
        elif v.status == PUBLISHED and v.stat.kind == "sum":
            sums[v.cell.key] = sums.get(v.cell.key, 0.0) + abs(float(v.value))
    if kind == "cells":
        return {k: 1.0 for k in counts}
    if kind == "persons":
        return counts
    return {k: sums.get(k, c) for k, c in counts.items()}


def suppress_unit(ctx, policy, options, log: Callable[[str], None] | None = None, stall: int | None = None):
    """The cheapest suppression of one unit (``options.cost``) that passes the policy's claim rules and
    protection levels, re-audited exactly (see the module docstring); a
    :class:`~audit.protection.unit.UnitProtection` whose ``complementary`` cells are the secondary ones.

    After ``options.exact_rounds`` cheapest patterns without a pass, or ``stall`` in a row after which
    no fewer claims and intervals fail (the coupled step's, :mod:`audit.protection.levels`), the
    monotone completion of
    :func:`audit.protection.unit.suppress_unit`: the cheapest pattern containing the last one, widened
    to at least 1, 2, 4, ... new cells in successive rounds (those in most of the round's new claim
    clauses; back to 1 after a round that halves what fails, :class:`~audit.protection.rounds.Rounds`).
    Suppressing more only widens intervals and proves no more, and every new constraint is one the
    last pattern breaks, so each round adds a cell; a round no superset meets goes back to exact
    rounds. The result is then not proved cheapest (``minimal``), above ``lower_bound``. Without
    them the coupled sf1 tract, whose claims each exact attack proves again by other cells, added 3
    or 4 cells a round of 40 s and gave up after 60 rounds."""
    start = time.perf_counter()
    known = ctx.apriori
    exact = replace(options.exact, explain="none",
                    intervals=options.exact.intervals and (policy.protection is not None or bool(known.levels)))
    claims = any(v not in (None, False) for v in (policy.derived, policy.direct, policy.full_records, policy.reconstructed,
                                                 policy.reidentification, policy.inference))
    problem, release = ctx.problem()
    out = UnitProtection(ctx.level, ctx.geo, problem.n_rows[1])
    out.primary, _ = forced_cells(release, problem, ctx.schedule.tables, policy, replace(options, complementary=False))
    cost = {**(c := cell_costs(problem, release, options.cost)), **{k: v for k, v in known.cost.items() if k in c}}
    tie = cell_costs(problem, release, "persons" if options.cost == "cells" else "cells")
    never, levels = known.publish, dict(known.levels)
    variables = sorted(cost)
    lp = AttackerLP.of(problem, release) if policy.protection is not None or levels else None
    direct_of = None  # made when a round first needs clauses (most units pass their first pattern)
    clauses: list = []
    cuts: list[Cut] = []
    explanations = Explanations(options)
    chosen = set(out.primary)
    rounds = Rounds(options.exact_rounds, sum(cost.get(k, 1.0) for k in chosen), stall)
    attack = lambda cells: _attempt(ctx.problem(set(cells))[0], policy, exact, claims, levels)  # noqa: E731
    aims: list[tuple] = []  # the (cell, sense) each cut is for
    always = frozenset(out.primary) | frozenset(ctx.already) | {v.cell.key for v in release.values if v.status == SUPPRESSED}
    floor = Floor(lambda: attack(set(variables) - never), always)  # made once no pattern meets the constraints
    while True:
        out.iterations += 1
        seen = _attempt(ctx.problem(chosen)[0] if chosen else problem, policy, exact, claims, levels)
        if not out.before:
            out.before = seen.summary
        raw, seen = seen, floor(seen)
        result, bad, recon, short, summary = seen.result, seen.bad, seen.recon, seen.short, seen.summary
        if seen.reason:
            out.status, out.reason = "undecided", seen.reason
            break
        if seen.passes:
            out.status = "protected" if chosen and raw.passes else "pass" if raw.passes else "unfixable"
            break
        rounds.observe(len(bad) + recon + len(short))
        if out.iterations > options.max_iterations:
            out.status, out.reason = "gave-up", f"no protection within {options.max_iterations} iterations"
            break
        hidden = chosen | set(ctx.already)
        if bad or recon:
            direct_of = twins(problem) if direct_of is None else direct_of
        new = claim_clauses(result, bad, recon, hidden, direct_of, options, explanations=explanations) if bad or recon else []
        clauses += new
        for cell, sense, target in short:
            cut = lp.cut(cell, sense, target, chosen, set(variables)) if lp is not None else None
            if cut is None:  # suppressing more only widens intervals: one more cell, or not this one
                owner = cell if cell in cost else cell.rsplit(":", 1)[0]  # a sum, mean or median: its cell
                cut = Cut({k: 1.0 for k in variables if k not in chosen and k != owner}, 1.0,
                          owner if owner in cost else None)
            cuts.append(cut)
            aims.append((cell, sense))
        picked = cheapest(variables, cost, rounds.base(chosen, set(out.primary)), clauses, cuts, tie, never)
        if picked is None and rounds.monotone:  # only un-suppressing meets the new constraints
            rounds.restart()
            picked = cheapest(variables, cost, set(out.primary), clauses, cuts, tie, never)
        elif picked is not None and rounds.monotone:
            picked |= widen([(pos - never, neg) for pos, neg in new], picked, rounds.widening - len(picked - chosen),
                            cost, tie)
        if picked is None and not floor.made():  # set aside what fails whatever is hidden; protect the rest
            seen = floor.make(raw)
            if seen.passes:
                out.status = "unfixable"
                break
            bad, recon, short = seen.bad, seen.recon, seen.short
            pinned = {s[:2] for s in raw.short} - {s[:2] for s in seen.short}
            clauses = [(pos, neg) for pos, neg in clauses if pos or neg - always]
            cuts, aims = [c for c, a in zip(cuts, aims) if a not in pinned], [a for a in aims if a not in pinned]
            picked = cheapest(variables, cost, set(out.primary), clauses, cuts, tie, never)
        if picked is None:
            out.status = "unfixable"
            stuck = sorted({cell for cell, _, _ in short})
            out.reason = ("no suppression of this unit's published counts meets the rules" +
                          (f" (still too narrow: {', '.join(stuck[:5])}{' ...' if len(stuck) > 5 else ''}; a count "
                           "the population pins, or a threshold suppression the attacker knows is below t)"
                           if stuck else ""))
            break
        if picked == chosen:  # nothing found rules the failing pattern out: attacking it again changes nothing
            out.status = "unfixable"
            stuck = sorted({cell for cell, _, _ in short} | ({"a failing claim"} if bad or recon else set()))
            out.reason = (f"the search finds no pattern that removes what still fails ({', '.join(stuck[:5])}"
                          f"{' ...' if len(stuck) > 5 else ''}): the constraints it derives leave the failing pattern")
            break
        rounds.advance(sum(cost.get(k, 1.0) for k in picked), picked - chosen)
        chosen = picked
        if log:
            log(f"unit {geo_key(ctx.geo)}: iteration {out.iterations}, {len(bad)} failing claims, {len(short)} "
                f"intervals too narrow, {len(clauses)} clauses and {len(cuts)} cuts, trying {len(chosen)} cells")
    if (out.status == "protected" or seen.passes) and not rounds.minimal(out.status, sum(cost.get(k, 1.0) for k in chosen)):
        # the completion's needless cells (of a unit set aside in part too: what it fails is the floor's)
        kept, raw = prune(frozenset(chosen), [{k} for k in reversed(rounds.added)], attack,
                          lambda a: floor(a).passes, raw)
        out.pruned, chosen, seen = len(chosen) - len(kept), set(kept), floor(raw)
        summary = seen.summary
    out.clauses = len(clauses) + len(cuts)
    out.complementary = sorted(chosen - set(out.primary))
    out.lower_bound = rounds.lower_bound
    out.minimal = rounds.minimal(out.status, sum(cost.get(k, 1.0) for k in chosen))
    out.after = summary
    floor.settle(out, raw, seen, problem, ctx.inputs.schema, threshold=any(
        p.suppress_below and not p.complementary for p in release.protection.values()))
    out.loss = information_loss(problem, out.cells, cell_counts(problem))
    out.seconds = time.perf_counter() - start
    return out
