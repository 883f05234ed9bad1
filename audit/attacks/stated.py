"""Published counts that state a claim: what makes a verified claim *direct* (a cell says it) rather
than derived, and which hidden cells would state a claim again if published (protect's twins)."""
from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Iterator

from ..problem.build import Problem


@lru_cache(maxsize=1 << 16)
def _assignment(names: tuple[str, ...], predicate) -> tuple | None:
    """The claim assignment a predicate equals, if it fixes each of its columns to one atom."""
    if not predicate.clauses or any(len(atoms) != 1 for _, atoms in predicate.clauses):
        return None
    return tuple(sorted((names.index(n), next(iter(a))) for n, a in predicate.clauses))


def stated_claims(problem: Problem) -> Iterator[tuple[tuple, int, str]]:
    """(claim assignment, m, ``TABLE:CELL``) for each published exact count whose predicate is a claim's:
    one atom per column, or with view columns a view's atom for the atoms it groups."""
    grouped = _grouped(problem) if problem.views is not None else None
    for c in problem.constraints:
        if c.statistic.kind == "count" and c.exact:
            key = _assignment(problem.names, c.predicate)
            keys = {key} if key is not None else set()
            if grouped is not None and c.predicate.clauses:
                options = [[(problem.index(n), next(iter(a)))] * (len(a) == 1) + grouped.get((problem.index(n), a), [])
                           for n, a in c.predicate.clauses]
                keys |= {tuple(sorted(k)) for k in itertools.product(*options)}
            yield from ((k, int(c.lo), c.key.rsplit(":", 1)[0]) for k in sorted(keys))


def direct_cells(problem: Problem) -> dict[tuple, tuple[int, str]]:
    """Published exact counts that state a claim (:func:`stated_claims`): claim key -> (m, first such cell)."""
    out = {}
    if problem.views is None:  # one key per cell at most: stated_claims' loop without its generators
        names = problem.names
        for c in problem.constraints:
            if c.statistic.kind == "count" and c.exact:
                key = _assignment(names, c.predicate)
                if key is not None and key not in out:
                    out[key] = (int(c.lo), c.key.rsplit(":", 1)[0])
        return out
    for key, m, cell in stated_claims(problem):
        out.setdefault(key, (m, cell))
    return out


def _grouped(problem: Problem) -> dict[tuple[int, frozenset], list[tuple[int, int]]]:
    """(column, its atoms that a view's atom groups) -> [(view column, atom)]."""
    out: dict = {}
    for v in problem.views.columns:
        i = problem.views.attribute(v)
        fine = problem.domains[i].atoms
        for k, group in enumerate(problem.domains[v].atoms):
            out.setdefault((i, frozenset(f for f, a in enumerate(fine) if a <= group)), []).append((v, k))
    return out
