"""disclosure-audit: attack a planned statistical release before it is published."""
import os

# The attack runs many small matrix products per unit, on which OpenBLAS threads only spin: a 57x453
# product took 70 ms instead of 0.1 ms on a loaded 2-core machine, and N=40 household blocks took 1.5x
# the CPU time. Units run in parallel through --workers instead. (Set before numpy loads; a caller's
# own setting wins.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The names below load on first use (PEP 562): a worker process or `audit --help` that needs none of
# them does not pay for pandas, YAML and the specs.
_EXPORTS = {"AuditError": ".errors", "InconsistentRelease": ".errors", "Predicate": ".specs.query",
            "Query": ".specs.query", "Statistic": ".specs.query", "infer_schema": ".specs.schema",
            "load_schema": ".specs.schema", "Schema": ".specs.schema_types", "Schedule": ".specs.schedule",
            "load_schedule": ".specs.schedule"}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("disclosure-audit")
        except PackageNotFoundError:  # running from a source tree
            value = "0.1.0"
    elif name in _EXPORTS:
        from importlib import import_module

        value = getattr(import_module(_EXPORTS[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
