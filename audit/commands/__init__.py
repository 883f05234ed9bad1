"""CLI commands, one module each; every module exposes ``register(app)``."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

DataArg = Annotated[Path, typer.Argument(help="Confidential microdata: CSV with a header row, or Parquet.")]
SchemaOpt = Annotated[Optional[Path], typer.Option("--schema", "-s", help="Schema YAML (columns, domains, recodes, edits).")]
TablesOpt = Annotated[Path, typer.Option("--tables", "-t", help="Table schedule YAML (tables, cells, protection).")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output folder (created if missing).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed for every randomized step; same inputs and seed, same output.")]
InferOpt = Annotated[bool, typer.Option("--infer-schema", help="No schema: infer domains from the data (warned: an attacker may know more).")]
GeographyOpt = Annotated[Optional[str], typer.Option("--geography", help="With --infer-schema: geography columns, coarse to fine, comma-separated.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]


def inputs_from(data: Path, schema: Optional[Path], tables: Path, infer: bool = False, geography: Optional[str] = None):
    """Load the three inputs with the CLI's conventions (schema required unless --infer-schema)."""
    from ..errors import AuditError
    from ..inputs import load_inputs

    if schema is None and not infer:
        raise AuditError("no schema given", fix="pass --schema FILE (or --infer-schema --geography COLS)")
    return load_inputs(data, None if infer and schema is None else schema, tables,
                       [g.strip() for g in geography.split(",")] if geography else None)
