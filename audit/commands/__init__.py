"""CLI commands, one module each; every module exposes ``register(app)``."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..inputs import inputs_from
from ..paths import named_file, output_file, output_folder

__all__ = ["inputs_from", "named_file", "output_file", "output_folder"]

DataArg = Annotated[Path, typer.Argument(help="Confidential microdata: CSV with a header row, or Parquet.")]
SchemaOpt = Annotated[Optional[Path], typer.Option("--schema", "-s", help="Schema YAML (columns, domains, recodes, edits).")]
TablesOpt = Annotated[Path, typer.Option("--tables", "-t", help="Table schedule YAML (tables, cells, protection).")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output folder (created if missing).")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed for every randomized step; same inputs and seed, same output.")]
InferOpt = Annotated[bool, typer.Option("--infer-schema", help="No schema: infer domains from the data (warned: an attacker may know more).")]
GeographyOpt = Annotated[Optional[str], typer.Option("--geography", help="With --infer-schema: geography columns, coarse to fine, comma-separated.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
