"""CLI commands, one module each; every module exposes ``register(app)``."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

DataArg = Annotated[Path, typer.Argument(help="Confidential microdata: CSV with a header row, or Parquet.")]
SchemaOpt = Annotated[Optional[Path], typer.Option("--schema", "-s", help="Schema YAML (columns, domains, recodes, edits).")]
TablesOpt = Annotated[Path, typer.Option("--tables", "-t", help="Table schedule YAML (tables, cells, protection).")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output folder (created if missing).")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed for every randomized step; same inputs and seed, same output.")]
InferOpt = Annotated[bool, typer.Option("--infer-schema", help="No schema: infer domains from the data (warned: an attacker may know more).")]
GeographyOpt = Annotated[Optional[str], typer.Option("--geography", help="With --infer-schema: geography columns, coarse to fine, comma-separated.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]


def inputs_from(data: Path, schema: Optional[Path], tables: Path, infer: bool = False, geography: Optional[str] = None):
    """Load the three inputs with the CLI's conventions (schema required unless --infer-schema)."""
    from ..errors import AuditError
    from ..inputs import load_inputs

    if schema is None and not infer:
        raise AuditError("no schema given", "--schema", fix="pass --schema FILE (or --infer-schema --geography COLS)")
    return load_inputs(data, None if infer and schema is None else schema, tables,
                       [g.strip() for g in geography.split(",")] if geography else None)


def output_folder(path: Path, option: str = "--out") -> Path:
    """Check, before any long work, that ``path`` is a folder this process can write (or can create)."""
    from ..errors import AuditError

    if path.exists() and not path.is_dir():
        raise AuditError("is a file, not a folder", f"{option} {path}",
                         f"give a folder (it is created if missing), e.g. {option} {path.parent / 'audit-out'}")
    _writable(path, path, option)
    return path


def output_file(path: Path, option: str = "--out") -> Path:
    """Check, before any work, that the file ``path`` can be written: not a folder, in a writable folder."""
    from ..errors import AuditError

    if path.is_dir():
        raise AuditError("is a folder, not a file", f"{option} {path}", f"give a file name, e.g. {option} {path / 'out'}")
    _writable(path.parent, path, option)
    return path


def _writable(start: Path, path: Path, option: str) -> None:
    """``start`` or its nearest existing ancestor is a folder this process can write in (``path``: what to name)."""
    from ..errors import AuditError

    parent = start.absolute()
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise AuditError(f"cannot be created: {parent} is a file", f"{option} {path}", "give a path under a folder")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise AuditError(f"cannot write in {parent} ({exc.strerror or exc.__class__.__name__})", f"{option} {path}",
                         "give a folder you can write to") from None
