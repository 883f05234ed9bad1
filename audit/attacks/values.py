"""Published sums, means and medians of wide columns (income in dollars), decided through the counts.

A wide integer column (:attr:`~audit.specs.schema_types.Column.wide`) is never enumerated: the
problem leaves it out and keeps its published values apart (:attr:`~audit.problem.build.Problem.values`).
Its cells select on the other columns only, so they partition the rows into *value classes*: the
boxes of the atoms their predicates tell apart, every such cell's rows a union of boxes.

* **verified**: a claim the problem without its value cells implies is implied by the release (it
  drops constraints, never adds one);
* **refuted**: only by a dataset with as many rows in every box as the true data. Giving its rows the
  true rows' values box by box gives every value cell the same multiset of values, hence the same
  sum, mean and median: the dataset, so completed, reproduces the whole release. Those datasets are
  the problem's with each box's count fixed to the truth's (:func:`strict`);
* anything else is undecided.

Brackets of a wide column (a ``bins`` recode from it, :attr:`~audit.problem.build.Domain.source`) are a
categorical column of the count model; :func:`boxes` splits them atom by atom when their column's values
are published, so a class's true values lie in the brackets of the rows they are handed.

The counts alone decide the unit in histogram space at any number of persons; the existing
row-slot encoding of numeric cells stays for columns of up to 10,000 values, where it is exact.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import replace
from fractions import Fraction
from typing import Callable

import numpy as np

from ..problem.build import Problem
from ..problem.claims import UNDECIDED, VERIFIED, ClaimTable, Verdict
from ..release.constraints import Constraint
from ..specs.query import Predicate, Statistic

MAX_BOXES = 4096  # value classes fixed to the truth's counts; past it nothing is refuted
UNREPRODUCED = ("refuted only by datasets whose value classes differ from the truth's (their published sums, "
                "means and medians were not reproduced)")


def unenumerated(problem: Problem, options) -> tuple[str, ...]:
    """The numeric columns of a unit past ``--max-rows`` to decide through the counts rather than refuse
    (their cells need row slots): all of them, when no cell, edit or attacker model selects on any.
    Empty for a unit that is not such (coupled, proved jointly, or already split)."""
    if (problem.values or problem.n_rows[1] <= options.max_rows or problem.child or problem.views is not None
            or problem.proof or problem.joint is not None):
        return ()
    numeric = {c.statistic.column for c in problem.constraints + problem.hidden if c.statistic.kind != "count"}
    named = {n for c in problem.constraints + problem.hidden for n in c.predicate.columns}
    named |= {n for e in problem.edits for n in e.columns}
    if options.attacker is not None:
        named |= {a.column for a in (*options.attacker.quasi_identifiers, *options.attacker.sensitive)}
    return tuple(sorted(numeric)) if numeric and not numeric & named else ()


def as_values(problem: Problem, names: tuple[str, ...], prior_rows=None):
    """``problem`` with the numeric columns ``names`` left out, their published cells kept apart as
    :attr:`~audit.problem.build.Problem.values` (their hidden ones unbounded, noted as not judged), and
    ``prior_rows`` to match."""
    keep = [i for i, d in enumerate(problem.domains) if d.name not in names]
    ours = [c for c in problem.constraints if c.statistic.column in names]
    note = (f"{len(ours)} published sum, mean and median values of {', '.join(names)} are decided through the "
            f"counts of the groups they are published for: {problem.n_rows[1]:,} rows are past --max-rows "
            "(audit.attacks.values)")
    unit = replace(problem, domains=tuple(problem.domains[i] for i in keep),
                   truth=None if problem.truth is None else problem.truth[:, keep],
                   constraints=tuple(c for c in problem.constraints if c.statistic.column not in names),
                   hidden=tuple(c for c in problem.hidden if c.statistic.column not in names),
                   values=tuple(ours) + tuple(c for c in problem.hidden if c.statistic.column in names),
                   notes=problem.notes + (note,))
    return unit, None if prior_rows is None or not len(prior_rows) else np.asarray(prior_rows)[:, keep]


def published_values(problem: Problem) -> list:
    """The unit's published wide values (its suppressed ones are kept unbounded, for the note that says
    they get no interval)."""
    return [c for c in problem.values if not c.unbounded]


def unjudged(problem: Problem) -> str:
    """Why the unit's suppressed wide values have no feasibility interval ('' when it has none): they are
    not judged by the protection_levels rule, which then says so instead of passing."""
    keys = [c.key for c in problem.values if c.unbounded]
    if not keys:
        return ""
    many = len(keys) > 1
    return (f"{len(keys)} suppressed sum, mean or median value{'s' if many else ''} of a wide column "
            f"({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''}) {'get' if many else 'gets'} no feasibility "
            "interval: not judged")


def boxes(problem: Problem) -> list[Predicate] | None:
    """The value classes of ``problem``: per column, its atoms grouped by the value cells' clauses, and
    their product; None past :data:`MAX_BOXES`. A bracket of a wide column whose values are published
    (income bands, :attr:`~audit.problem.build.Domain.source`) is split atom by atom: the true values a
    class hands its rows then lie in the bracket those rows have."""
    sets: dict[str, list[frozenset]] = {}
    values = published_values(problem)
    for c in values:
        for name, atoms in c.predicate.clauses:
            if atoms not in sets.setdefault(name, []):
                sets[name].append(atoms)
    published = {c.statistic.column for c in values}
    for d in problem.domains:
        if d.source and d.source in published:
            sets[d.name] = [frozenset([a]) for a in range(len(d))]
    parts = []
    for name, clauses in sets.items():
        blocks: dict[tuple, list[int]] = {}
        for atom in range(problem.sizes[problem.index(name)]):
            blocks.setdefault(tuple(atom in s for s in clauses), []).append(atom)
        if len(blocks) > 1:
            parts.append((name, [frozenset(b) for b in blocks.values()]))
    if math.prod(len(b) for _, b in parts) > MAX_BOXES:
        return None
    names = [name for name, _ in parts]
    return [Predicate.of(dict(zip(names, combo))) for combo in itertools.product(*(b for _, b in parts))]


def strict(problem: Problem, classes: list[Predicate]) -> Problem | None:
    """The count problem whose every dataset completes to one reproducing the release: each value class
    holds the truth's number of rows. None when the published exact counts already say so."""
    exact = {(c.predicate, c.lo) for c in problem.constraints if c.statistic.kind == "count" and c.exact}
    extra = []
    for i, box in enumerate(classes):
        n = int(problem.row_mask(problem.truth, box).sum())
        if (box, Fraction(n)) not in exact and not (not box.clauses and problem.n_rows == (n, n)):
            extra.append(Constraint(f"value-class:{i}:count", box, Statistic(), Fraction(n), Fraction(n)))
    return replace(problem, constraints=problem.constraints + tuple(extra), values=()) if extra else None


def outer(intervals: dict | None) -> dict | None:
    """The count intervals as proved outer bounds only: a dataset reaching an end over the counts may not
    complete to the release (its value classes differ from the truth's)."""
    return None if intervals is None else {k: replace(v, certified=False, proofs=(None, None))
                                           for k, v in intervals.items()}


def audit_values(problem: Problem, options, prior_rows, run: Callable, completes: bool = True):
    """``run`` (the count attack, :func:`audit.attacks.exact.audit_unit`) on the problem without its value
    cells; what it refuted is kept only where the :func:`strict` problem refutes it too. ``completes``:
    False when the truth is not the data (a published release's first dataset, whose values are unknown),
    so nothing is refuted."""
    result = run(replace(problem, values=()), options, prior_rows)
    result.problem = problem
    if note := unjudged(problem):
        result.intervals_note = f"{result.intervals_note}; {note}" if result.intervals_note else note
    classes = boxes(problem) if completes and problem.truth is not None else None
    twin = strict(problem, classes) if classes is not None else problem
    if twin is None:
        return result  # every dataset of the counts completes: the count attack's verdicts and intervals stand
    result.intervals = outer(result.intervals)
    if not result.refuted:
        return result
    sure = {v.claim for v in result.verified}
    if classes is None:  # no completion known: nothing is refuted
        why = f"over {MAX_BOXES:,} value classes" if completes else "the true values are not known"
        left = {v.claim: None for v in result.verdicts if v.status != VERIFIED}
        left.update((c, None) for c in ClaimTable.of_truth(problem.truth, list(problem.sizes), options.max_columns,
                                                            problem.views).claims if c not in sure)
        opened = [Verdict(c, UNDECIDED, reason=f"{UNREPRODUCED}; {why}") for c in left]
    else:
        other = run(twin, replace(options, explain="none", intervals=False, attacker=None), prior_rows)
        if other.status != "done" and result.status == "done":
            result.status, result.reason = other.status, other.reason
        opened = [v if v.status == UNDECIDED else Verdict(v.claim, UNDECIDED, reason=UNREPRODUCED)
                  for v in other.verdicts if v.claim not in sure]
    before = len(result.verdicts)
    result.verdicts = [v for v in result.verdicts if v.status == VERIFIED] + opened
    result.refuted = max(result.refuted + before - len(result.verdicts), 0)
    return result
