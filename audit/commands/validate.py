"""``audit validate``: check specs (and data) and say what is wrong."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..data.microdata import load_microdata
from ..specs.schedule import load_schedule
from ..specs.schema import load_schema
from ..outputs.terminal import echo
from ..outputs.words import plural


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        schema: Annotated[Path, typer.Option("--schema", "-s", help="Schema YAML to check.")],
        tables: Annotated[Optional[Path], typer.Option("--tables", "-t", help="Table schedule YAML to check.")] = None,
        data: Annotated[Optional[Path], typer.Option("--data", "-d", help="Microdata to check against the schema.")] = None,
    ) -> None:
        """Check the schema, the table schedule and the data; exit 0 if all are valid, 2 otherwise."""
        the_schema = load_schema(schema)
        parts = [f"schema {schema}: {plural(len(the_schema.columns), 'column')}, {plural(len(the_schema.recodes), 'recode')}, "
                 f"{plural(len(the_schema.edits), 'edit')}"]
        if tables is not None:
            sched = load_schedule(tables, the_schema)
            parts.append(f"tables {tables}: {plural(len(sched.tables), 'table')}, {plural(len(sched.cells), 'cell')}")
        if data is not None:
            frame = load_microdata(data, the_schema)
            parts.append(f"data {data}: {plural(len(frame), 'row')}")
        for line in parts:
            echo(f"ok  {line}")
