"""disclosure-audit: attack a planned statistical release before it is published."""
import os
from importlib.metadata import PackageNotFoundError, version

# The attack runs many small matrix products per unit, on which OpenBLAS threads only spin: a 57x453
# product took 70 ms instead of 0.1 ms on a loaded 2-core machine, and N=40 household blocks took 1.5x
# the CPU time. Units run in parallel through --workers instead. (Set before numpy loads; a caller's
# own setting wins.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    __version__ = version("disclosure-audit")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"

from .errors import AuditError, InconsistentRelease  # noqa: E402
from .specs.query import Predicate, Query, Statistic  # noqa: E402
from .specs.schema import infer_schema, load_schema  # noqa: E402
from .specs.schema_types import Schema  # noqa: E402
from .specs.schedule import Schedule, load_schedule  # noqa: E402

__all__ = ["AuditError", "InconsistentRelease", "Predicate", "Query", "Statistic", "Schema", "Schedule",
           "infer_schema", "load_schema", "load_schedule", "__version__"]
