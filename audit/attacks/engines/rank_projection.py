"""RAP-RANK's projection of a rounded dataset that misses the release onto a consistent one (SAT, by phase)."""
from __future__ import annotations

import numpy as np



def exact_engine(problem):
    """The SAT engine over ``problem`` when python-sat is installed, else None (the GPU image lacks it)."""
    try:
        from .sat import SatEngine
    except ImportError:
        return None
    return SatEngine(problem, conflicts=20_000)


def project(engine, rows: np.ndarray) -> np.ndarray | None:
    """The consistent dataset the SAT solver finds nearest ``rows`` by phase (rows sorted, as slots are),
    or None when it finds none within its budget."""
    order = np.lexsort(rows.T[::-1])
    return engine.near(rows[order])
