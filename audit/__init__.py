"""disclosure-audit: attack a planned statistical release before it is published."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("disclosure-audit")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"

from .errors import AuditError, InconsistentRelease  # noqa: E402
from .query import Predicate, Query, Statistic  # noqa: E402
from .schema import Schema, infer_schema, load_schema  # noqa: E402
from .schedule import Schedule, load_schedule  # noqa: E402

__all__ = ["AuditError", "InconsistentRelease", "Predicate", "Query", "Statistic", "Schema", "Schedule",
           "infer_schema", "load_schema", "load_schedule", "__version__"]
