"""Attack engines: exact back-ends (SAT / IP) by name, ranking (RAP-RANK) and linear (LP / least squares).

The exact back-ends share :class:`~audit.attacks.engines.base.ExactEngine`; make one by name, as python-sat
makes a solver::

    engine = get_engine("sat", problem, seed=0)
"""
from __future__ import annotations

from ...errors import AuditError
from ...problem.build import Problem
from .base import Enumeration, ExactEngine
from .ip import IpEngine
from .sat import SatEngine

ENGINES: dict[str, type[ExactEngine]] = {"sat": SatEngine, "ip": IpEngine}
ENGINE_NAMES = tuple(ENGINES)

__all__ = ["ENGINE_NAMES", "Enumeration", "ExactEngine", "engine_class", "get_engine"]


def engine_class(name: str) -> type[ExactEngine]:
    """The exact back-end called ``name`` (one of :data:`ENGINE_NAMES`)."""
    try:
        return ENGINES[name]
    except KeyError:
        raise AuditError(f"unknown engine '{name}'", "--engine", f"use one of {list(ENGINE_NAMES)}") from None


def get_engine(name: str, problem: Problem, **options) -> ExactEngine:
    """The exact back-end called ``name`` over ``problem``; ``options`` are its class's own
    (``seed`` for every one; ``conflicts``, ``deadline``, ``verifying`` for sat; ``time_limit``,
    ``backend`` for ip)."""
    return engine_class(name)(problem, **options)
