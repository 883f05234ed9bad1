"""``audit tabulate``: publish the schedule from the microdata, as the agency would."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..release.tabulate import release_frame
from ..outputs.terminal import echo, printable
from . import DataArg, GeographyOpt, InferOpt, SchemaOpt, TablesOpt, inputs_from, output_file


def register(app: typer.Typer) -> None:
    @app.command()
    def tabulate(
        data: DataArg,
        tables: TablesOpt,
        schema: SchemaOpt = None,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="CSV file to write (default: standard output).")] = None,
        infer_schema: InferOpt = False,
        geography: GeographyOpt = None,
    ) -> None:
        """Tabulate the release: every cell of every unit with its published value or suppression mark."""
        if out is not None:
            output_file(out, inputs={"DATA": data, "--schema": schema, "--tables": tables})
        inputs = inputs_from(data, schema, tables, infer_schema, geography)
        frame = release_frame(inputs.release(), inputs.schema)
        if out is None:
            text = frame.to_csv(index=False)
            if sys.stdout.isatty():  # a terminal: codes and labels cannot act on it; a pipe gets the data as is
                text = "".join(printable(line) + "\n" for line in text.splitlines())
            typer.echo(text, nl=False)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            frame.to_csv(out, index=False)
            echo(f"wrote {len(frame)} published values to {out}", err=True)
