"""A process's memory of the small units it attacked: a unit whose release and confidential rows another unit
had (a state's one- and two-person blocks repeat by the tens of thousands) gets that unit's findings again.

The exact attack is a function of the problem and the options; of a unit's geography only its name is in
the findings. What depends on the prior (baselines, the re-identification measure's baselines) is worked
out again for each unit, from what the attack established (:func:`audit.attacks.exact.audit_counts`).
Only finished units whose re-identification measure asked the engine nothing are kept.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ..problem.build import Problem

UNITS = 2048  # units a process keeps, the least recently asked for dropped first
ROWS = 2  # persons of a unit kept: past two, a state's blocks rarely repeat (its rows in order)
_KEPT: OrderedDict = OrderedDict()


_SHAPES: dict[tuple, tuple] = {}  # a release's cells without their values -> that one tuple (units share it)


@dataclass(frozen=True)
class Kept:
    """What :func:`audit.attacks.exact.audit_counts` needs to give a unit another unit's findings."""

    shape: tuple  # the release's cells without their values (shared), and the values: compared in full on a hit
    values: tuple
    table: object  # the unit's ClaimTable, for the baselines
    result: object  # its UnitResult, without its problem, baselines and re-identification
    proofs: dict | None  # the re-identification measure's proofs (audit.attacks.reidentify_unit)
    settled: bool  # one dataset: every claim of the table verified


def key(problem: Problem, options) -> tuple | None:
    """The unit's key, without its geography and its cells (None: a unit not kept, see :data:`ROWS`)."""
    truth = problem.truth
    if (truth is None or len(truth) > ROWS or problem.proof or problem.proof_cells is not None
            or problem.joint is not None or problem.views is not None or problem.values or problem.uncoupled):
        return None
    try:
        return (hash(options), options, problem.level, problem.child, problem.domains, problem.n_rows, problem.edits,
                problem.notes, len(problem.constraints), len(problem.hidden), truth.dtype.str, truth.shape,
                truth.tobytes())
    except TypeError:  # options or a domain not hashable: not kept
        return None


def release(problem: Problem) -> tuple[tuple, tuple]:
    """The unit's cells as (shape, values): what each cell is (shared by the units of one schedule, so that a
    unit kept holds its values alone) and each cell's published ends."""
    cells = problem.constraints + problem.hidden
    shape = (len(problem.constraints), *((c.key, c.predicate, c.statistic, c.lo_open, c.hi_open, c.implied) for c in cells))
    found = _SHAPES.get(shape)
    if found is None:
        if len(_SHAPES) >= 8:
            _SHAPES.clear()
        found = _SHAPES[shape] = shape
    return found, tuple(v for c in cells for v in (c.lo, c.hi))


def recall(memo: tuple, problem: Problem) -> Kept | None:
    """The unit kept under ``memo`` whose cells are the problem's, if any."""
    kept = _KEPT.get(memo)
    if kept is None or (kept.shape, kept.values) != release(problem):
        return None
    try:
        _KEPT.move_to_end(memo)
    except KeyError:  # dropped by another thread meanwhile
        pass
    return kept


def keep(memo: tuple, kept: Kept) -> None:
    """Remember a unit's findings under its key."""
    _KEPT[memo] = kept
    while len(_KEPT) > UNITS:
        try:
            _KEPT.popitem(last=False)
        except KeyError:
            break
