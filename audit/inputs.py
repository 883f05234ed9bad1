"""Load and cross-check the three inputs of every command: microdata, schema, table schedule."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from .errors import AuditError
from .data.microdata import load_microdata, no_rows, read_table, validate
from .problem.build import Problem, build_problems
from .release.constraints import UnitRelease
from .specs.schedule import Schedule, load_schedule
from .specs.schema import infer_schema, load_schema
from .specs.schema_types import Schema
from .release.tabulate import tabulate
from .lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


@dataclass(frozen=True)
class Inputs:
    schema: Schema
    schedule: Schedule
    frame: pd.DataFrame
    data_path: str = "<data>"

    def release(self) -> list[UnitRelease]:
        return tabulate(self.frame, self.schema, self.schedule)

    def problems(self, releases: list[UnitRelease] | None = None) -> list[Problem]:
        return build_problems(self.frame, self.schema, self.schedule,
                              releases if releases is not None else self.release())


def load_inputs(data: str | Path, schema: str | Path | None, tables: str | Path,
                geography: list[str] | None = None) -> Inputs:
    """Read everything; with no schema, infer one from the data (warned: domains then come from data)."""
    if schema is None:
        if not geography:
            raise AuditError("no schema given", "--schema", fix="pass --schema FILE, or --infer-schema with --geography COLS")
        frame = read_table(data)
        if not len(frame):
            raise no_rows(str(data))
        missing = [g for g in geography if g not in frame.columns]
        if missing:
            raise AuditError(f"geography column(s) {missing} not in the data", str(data),
                             f"pass --geography with columns of the file: {list(frame.columns)}")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            the_schema = infer_schema(frame, geography)
        frame = validate(frame, the_schema, str(data))
    else:
        the_schema = load_schema(schema)
        frame = load_microdata(data, the_schema)
    return Inputs(the_schema, load_schedule(tables, the_schema), frame, str(data))


def default_paths(sample_dir: Path) -> tuple[Path, Path, Path]:
    return sample_dir / "data.csv", sample_dir / "schema.yaml", sample_dir / "tables.yaml"


def inputs_from(data: Path, schema: Path | None, tables: Path, infer: bool = False, geography: str | None = None
                ) -> Inputs:
    """Load the three inputs with the command line's conventions (schema required unless ``infer``;
    ``geography``: columns, comma-separated)."""
    if schema is None and not infer:
        raise AuditError("no schema given", "--schema", fix="pass --schema FILE (or --infer-schema --geography COLS)")
    return load_inputs(data, None if infer and schema is None else schema, tables,
                       [g.strip() for g in geography.split(",")] if geography else None)
