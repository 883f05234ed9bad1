"""``audit validate``: check specs (and data) and say what is wrong."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..data.microdata import load_microdata
from ..specs.schedule import load_schedule
from ..specs.schema import load_schema
from ..outputs.terminal import echo


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        schema: Annotated[Path, typer.Option("--schema", "-s", help="Schema YAML to check.")],
        tables: Annotated[Optional[Path], typer.Option("--tables", "-t", help="Table schedule YAML to check.")] = None,
        data: Annotated[Optional[Path], typer.Option("--data", "-d", help="Microdata to check against the schema.")] = None,
    ) -> None:
        """Check the schema, the table schedule and the data; exit 0 if all are valid, 2 otherwise."""
        the_schema = load_schema(schema)
        parts = [f"schema {schema}: {len(the_schema.columns)} columns, {len(the_schema.recodes)} recodes, "
                 f"{len(the_schema.edits)} edits"]
        if tables is not None:
            sched = load_schedule(tables, the_schema)
            parts.append(f"tables {tables}: {len(sched.tables)} tables, {len(sched.cells)} cells")
        if data is not None:
            frame = load_microdata(data, the_schema)
            parts.append(f"data {data}: {len(frame)} rows")
        for line in parts:
            echo(f"ok  {line}")
