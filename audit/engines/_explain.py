"""Explaining a verified claim: the published cells that imply it, shared by the exact engines."""
from __future__ import annotations

from typing import Callable, Sequence

UNSAT, SAT, LIMIT = "unsat", "sat", "limit"

# solve(cells) -> (UNSAT, core or None) | (SAT, broken cells of the counterexample) | (LIMIT, None)
Solve = Callable[[list[str]], tuple[str, object]]


def explain_cells(keys: Sequence[str], solve: Solve, shrink: bool = True) -> tuple[tuple[str, ...], bool]:
    """Grow a set of cells from counterexamples until it implies the claim, then drop unneeded ones.

    Returns the cells and whether they are minimal; ``((), False)`` when a solver call ran out of
    budget while growing (an explanation is never invented).
    """
    chosen: list[str] = []
    while True:
        status, info = solve(chosen)
        if status == LIMIT:
            return (), False
        if status == UNSAT:
            chosen = _within(chosen, info)
            break
        pick = next((k for k in keys if k in info and k not in chosen), None)
        if pick is None:  # all cells together imply the claim, so some cell must exclude this dataset
            raise AssertionError("no published cell excludes a counterexample to a verified claim")
        chosen.append(pick)
    minimal = True
    if shrink:
        i = 0
        while i < len(chosen):
            trial = chosen[:i] + chosen[i + 1:]
            status, info = solve(trial)
            if status == UNSAT:
                chosen = _within(trial, info)
            else:
                minimal = minimal and status != LIMIT
                i += 1
    return tuple(sorted(chosen)), shrink and minimal


def _within(cells: list[str], core) -> list[str]:
    return cells if core is None else [k for k in cells if k in core]
