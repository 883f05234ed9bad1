"""Random tiny problems with count/sum/mean/median cells, and a brute-force oracle over every dataset."""
from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import numpy as np

from audit.problem.claims import Claim, candidates
from audit.problem.build import Domain, Problem
from audit.specs.query import Predicate, Statistic
from audit.release.constraints import Constraint, round_half_up


def random_problem(rng: np.random.Generator, max_rows: int = 4, numeric: bool = True,
                   n_cells: int | None = None) -> Problem:
    """Categorical columns of 2-3 atoms, one small integer column, and cells published from a random truth."""
    domains = []
    for i in range(int(rng.integers(1, 3))):
        size = int(rng.integers(2, 4))
        domains.append(Domain(f"c{i}", tuple(frozenset([v]) for v in range(size)), tuple(str(v) for v in range(size))))
    if numeric:  # offset and negative domains too
        start = int(rng.integers(-3, 4))
        values = sorted(set(int(v) for v in start + np.cumsum(rng.integers(1, 4, size=int(rng.integers(2, 5)))) - 1))
        domains.append(Domain("age", tuple(frozenset([v]) for v in values), tuple(str(v) for v in values), True))
    n = int(rng.integers(1, max_rows + 1))
    truth = np.column_stack([rng.integers(0, len(d), size=n) for d in domains]).astype(np.int64)
    shell = Problem("block", ("1",), tuple(domains), (n, n), ())
    cons = []
    for cell in range(n_cells if n_cells is not None else int(rng.integers(2, 6))):
        cons += published(rng, shell, truth, _random_predicate(rng, domains), f"T:{cell}", numeric)
    return Problem("block", ("1",), tuple(domains), (n, n), tuple(cons), (), truth)


def _random_predicate(rng: np.random.Generator, domains) -> Predicate:
    clauses = {}
    for d in domains:
        if rng.random() < 0.45:
            atoms = frozenset(int(a) for a in range(len(d)) if rng.random() < 0.5)
            if d.numeric and rng.random() < 0.7:  # numeric predicates are ranges in schedules
                a = int(rng.integers(0, len(d)))
                atoms = frozenset(range(a, len(d))) if rng.random() < 0.5 else frozenset(range(0, a + 1))
            if 0 < len(atoms) < len(d):
                clauses[d.name] = atoms
    return Predicate.of(clauses)


def published(rng: np.random.Generator, shell: Problem, truth: np.ndarray, pred: Predicate, key: str,
              numeric: bool) -> list[Constraint]:
    """A cell's constraints as published from ``truth``: exact, an interval, or suppressed (small counts)."""
    cons = []
    kinds = ["count"] + (["sum", "mean", "median"] if numeric else [])
    stats = [Statistic()] + [Statistic(k, "age", int(rng.integers(0, 2))) for k in kinds[1:] if rng.random() < 0.5]
    count = int(shell.row_mask(truth, pred).sum())
    mode = rng.choice(["exact", "interval", "suppress"], p=[0.5, 0.3, 0.2])
    for stat in stats:
        c = Constraint(f"{key}:{stat.name}", pred, stat, None, None)
        value = shell.value(truth, c)
        if value is None:  # a mean or median of nobody: published as empty, so the count is 0
            cons.append(Constraint(f"{key}:count", pred, Statistic(), Fraction(0), Fraction(0)))
            continue
        if mode == "suppress" and count < 3:
            if stat.kind == "count":
                cons.append(Constraint(c.key, pred, stat, Fraction(0), Fraction(2)))
            continue
        if stat.rounded and (mode == "interval" or value.denominator != 1):
            v = round_half_up(value, stat.decimals)
            half = Fraction(1, 2 * 10 ** stat.decimals)
            cons.append(Constraint(c.key, pred, stat, v - half, v + half, hi_open=True))
        elif mode == "interval":
            low = value - 1 if stat.kind != "count" else max(value - 1, Fraction(0))
            cons.append(Constraint(c.key, pred, stat, low, value + 1))
        else:
            cons.append(Constraint(c.key, pred, stat, value, value))
    return cons


def random_coupled_problem(rng: np.random.Generator, max_rows: int = 4, numeric: bool = True) -> Problem:
    """A tract of 2-3 blocks (one may be empty) as a coupled problem: each block's exact total and
    cells restricted to it (one to two blocks together too), and tract cells over every row."""
    base = random_problem(rng, max_rows, numeric, n_cells=0)
    k = int(rng.integers(2, 4))
    blocks = Domain("block", tuple(frozenset([str(b)]) for b in range(k)), tuple(str(b) for b in range(k)))
    domains = base.domains + (blocks,)
    truth = np.column_stack([base.truth, rng.integers(0, k, size=len(base.truth))]).astype(np.int64)
    n = len(truth)
    shell = Problem("tract", ("1",), domains, (n, n), (), child="block")
    cons = []
    for b in range(k):
        only = Predicate.of({"block": {b}})
        cons.append(Constraint(f"{b}/B:total:count", only, Statistic(), *(Fraction(int((truth[:, -1] == b).sum())),) * 2))
        for cell in range(int(rng.integers(1, 4))):
            where = {b} | ({int(rng.integers(0, k))} if rng.random() < 0.2 else set())
            pred = _random_predicate(rng, base.domains).conjoin(Predicate.of({"block": where}))
            cons += published(rng, shell, truth, pred, f"{b}/B:{cell}", numeric)
    for cell in range(int(rng.integers(1, 3))):
        cons += published(rng, shell, truth, _random_predicate(rng, base.domains), f"T:{cell}", numeric)
    return replace(shell, constraints=tuple(cons), truth=truth)


def all_datasets(problem: Problem) -> list[np.ndarray]:
    """Every multiset of rows (sorted lexicographically) that reproduces the release.

    Statistics are evaluated from per-row match bits and values (fast); the survivors are checked
    again with ``Problem.violations``, the definition the engines must reproduce.
    """
    rows = list(itertools.product(*(range(len(d)) for d in problem.domains)))
    table = np.array(rows, dtype=np.int64)
    masks = [problem.row_mask(table, c.predicate) for c in problem.constraints]
    edits = np.zeros(len(rows), dtype=bool)
    for e in problem.edits:
        edits |= problem.row_mask(table, e)
    values = []
    for c in problem.constraints:
        col = c.statistic.column
        values.append(None if col is None else
                      [problem.domains[problem.index(col)].values[r[problem.index(col)]] for r in rows])
    lo, hi = problem.n_rows
    out = []
    for n in range(lo, hi + 1):
        for combo in itertools.combinations_with_replacement(range(len(rows)), n):
            if any(edits[i] for i in combo):
                continue
            ok = True
            for c, mask, vals in zip(problem.constraints, masks, values):
                chosen = [i for i in combo if mask[i]]
                kind = c.statistic.kind
                if kind == "count":
                    v = Fraction(len(chosen))
                elif kind == "sum":
                    v = Fraction(sum(vals[i] for i in chosen))
                elif not chosen:
                    v = None
                elif kind == "mean":
                    v = Fraction(sum(vals[i] for i in chosen), len(chosen))
                else:
                    xs = sorted(vals[i] for i in chosen)
                    k = len(xs)
                    v = Fraction(xs[k // 2]) if k % 2 else Fraction(xs[k // 2 - 1] + xs[k // 2], 2)
                if not c.holds(v):
                    ok = False
                    break
            if ok:
                data = table[list(combo)].reshape(n, len(problem.domains))
                assert problem.violations(data) == [], "the oracle's statistics disagree with Problem.value"
                out.append(data)
    return out


def canonical(rows: np.ndarray) -> tuple:
    return tuple(sorted(tuple(int(v) for v in r) for r in rows))


def verified_claims(problem: Problem, datasets: list[np.ndarray]) -> set[Claim]:
    """The true claims that hold in every consistent dataset."""
    return {c for c in candidates(problem.truth, sizes=problem.sizes) if all(c.count(d) == c.m for d in datasets)}


# -- the release-level oracle: raw datasets re-tabulated with the real tabulator ----------------------
def _primary_only(schedule):
    """The schedule with complementary suppression switched off (candidates are tabulated with it)."""
    from dataclasses import replace

    tables = tuple(replace(t, protection=replace(t.protection, complementary=False)) for t in schedule.tables)
    return replace(schedule, tables=tables, suppress={})


def release_matches(published, candidate, schedule) -> bool:
    """Whether a candidate's primary-only release shows what the published one shows.

    Published and empty values must be equal, with the same status. A suppressed cell must be
    suppressed in the candidate too, except where the agency may also have hidden it for another
    reason (complementary suppression, ``suppressed: true``): the attacker then learns nothing from
    it, as in the tool's attacker model (secondary suppression is not reverse-engineered).
    """
    loose = {t.id for t in schedule.tables if t.protection.complementary and t.protection.suppress_below}
    if len(published.values) != len(candidate.values):
        return False
    for a, b in zip(published.values, candidate.values):
        assert a.key == b.key
        if a.status == "suppressed" and (a.cell.suppressed or a.cell.table in loose):
            continue
        if (a.status, a.value) != (b.status, b.value):
            return False
    return True


def tabulated_worlds(schema, schedule, published, datasets: list[tuple]) -> list[bool]:
    """For each raw dataset (a tuple of rows of codes, in ``schema.names`` order): does it reproduce
    ``published`` (one unit) when tabulated? All datasets are tabulated at once, one unit each."""
    import pandas as pd

    from audit.release.tabulate import tabulate

    if not datasets:
        return []
    width = len(str(len(datasets)))
    rows = [dict(zip(schema.names, r), **{g: f"u{i:0{width}d}" for g in schema.geography})
            for i, combo in enumerate(datasets) for r in combo]
    frame = pd.DataFrame(rows, columns=list(schema.geography) + list(schema.names))
    frame = frame.astype({c.name: "int64" for c in schema.columns if c.kind == "integer"})
    plain = _primary_only(schedule)
    by_unit = {u.geo: u for u in tabulate(frame, schema, plain)}
    key = [(f"u{i:0{width}d}",) * len(schema.geography) for i in range(len(datasets))]
    return [release_matches(published, by_unit[k] if k in by_unit else _no_rows(frame, plain, published.level),
                            schedule) for k in key]


def _no_rows(frame, schedule, level):
    """The release of a unit with no rows (a total hidden as 0..t-1 admits one), which tabulate, going
    by the rows' geography, never sees: every table published over an empty frame."""
    from types import SimpleNamespace

    from audit.release.tabulate import _publish_table

    tables = [t for t in schedule.tables if t.level == level]
    masks = np.zeros((0, sum(len(t.cells) for t in tables)), dtype=bool)
    offsets = np.cumsum([0] + [len(t.cells) for t in tables])
    return SimpleNamespace(values=tuple(v for t, base in zip(tables, offsets)
                                        for v in _publish_table(t, frame.iloc[:0], masks, int(base))))


def consistent_worlds(schema, schedule, published, n_rows: int) -> list[tuple]:
    """Every multiset of ``n_rows`` codebook rows (edits respected) that reproduces ``published``."""
    product = list(itertools.product(*(c.codes for c in schema.columns)))
    allowed = [r for r in product
               if not any(all(r[schema.names.index(col)] in vals for col, vals in e.forbid.clauses) for e in schema.edits)]
    combos = list(itertools.combinations_with_replacement(allowed, n_rows))
    return [c for c, ok in zip(combos, tabulated_worlds(schema, schedule, published, combos)) if ok]


def to_atoms(problem: Problem, combo) -> np.ndarray:
    """A raw dataset (rows of codes) as the problem's atom indices."""
    lookups = [d.lookup() for d in problem.domains]
    return np.array([[lk[v] for lk, v in zip(lookups, r)] for r in combo], dtype=np.int64).reshape(-1, len(lookups))


def to_codes(problem: Problem, rows: np.ndarray) -> tuple:
    """Atom rows back to codes (any code of an atom: no cell or edit tells them apart)."""
    return tuple(tuple(sorted(d.atoms[int(a)], key=str)[0] for d, a in zip(problem.domains, r)) for r in rows)
