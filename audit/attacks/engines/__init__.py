"""Attack engines: exact back-ends (SAT / IP) by name, ranking (RAP-RANK) and linear (LP / least squares).

The exact back-ends share :class:`~audit.attacks.engines.base.ExactEngine`; make one by name, as python-sat
makes a solver::

    engine = get_engine("sat", problem, seed=0)
"""
from __future__ import annotations

from importlib import import_module

from ...errors import AuditError
from ...problem.build import Problem
from .base import Enumeration, ExactEngine

# imported when first asked for, so the ranking and linear engines (and a GPU image without python-sat or
# highspy) import this package without the solvers
ENGINES: dict[str, tuple[str, str]] = {"sat": (".sat", "SatEngine"), "ip": (".ip", "IpEngine")}
ENGINE_NAMES = tuple(ENGINES)

__all__ = ["ENGINE_NAMES", "Enumeration", "ExactEngine", "engine_class", "get_engine"]


def engine_class(name: str) -> type[ExactEngine]:
    """The exact back-end called ``name`` (one of :data:`ENGINE_NAMES`)."""
    try:
        module, cls = ENGINES[name]
    except KeyError:
        raise AuditError(f"unknown engine '{name}'", "--engine", f"use one of {list(ENGINE_NAMES)}") from None
    return getattr(import_module(module, __name__), cls)


def get_engine(name: str, problem: Problem, **options) -> ExactEngine:
    """The exact back-end called ``name`` over ``problem``; ``options`` are its class's own
    (``seed`` for every one; ``conflicts``, ``deadline``, ``verifying`` for sat; ``time_limit``,
    ``backend`` for ip)."""
    return engine_class(name)(problem, **options)
