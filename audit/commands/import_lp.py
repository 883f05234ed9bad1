"""``audit import-lp``: a Census Bureau reconstruction LP as the release ``audit run --published`` reads."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..release.census_lp import release_frame
from ..release.census_lp_reader import read_lp
from ..release.census_lp_solution import read_solution
from ..errors import AuditError
from ..specs.schedule import load_schedule
from ..specs.schema import load_schema
from ..outputs.terminal import echo
from . import SchemaOpt, TablesOpt, output_file


def register(app: typer.Typer) -> None:
    @app.command("import-lp")
    def import_lp(
        lp: Annotated[Path, typer.Argument(metavar="LP", help="A dbrecon LP file (.lp or .lp.gz) from recon_replication.")],
        tables: TablesOpt,
        schema: SchemaOpt = None,
        out: Annotated[Path, typer.Option("--out", "-o", help="Release CSV to write (audit tabulate's columns).")] = Path("release.csv"),
        solution: Annotated[Optional[Path], typer.Option("--solution", help="The LP's Gurobi solution (.sol or .sol.gz): also write its persons.")] = None,
        persons: Annotated[Optional[Path], typer.Option("--persons", help="With --solution: CSV of the solution's persons (the SF1 sample's columns).")] = None,
    ) -> None:
        """Read a Census Bureau reconstruction LP and write its published SF1 values as a release CSV."""
        if schema is None:
            raise AuditError("no schema given", "--schema", "pass --schema FILE (the SF1 schema, samples/sf1/schema.yaml)")
        if (solution is None) != (persons is None):
            raise AuditError("--solution and --persons go together", "--persons" if persons is None else "--solution",
                             "pass both (the .sol file and the CSV to write its persons to), or neither")
        given = {"LP": lp, "--schema": schema, "--tables": tables, "--solution": solution}
        output_file(out, inputs=given)
        if persons is not None:
            output_file(persons, "--persons", inputs={**given, "--out": out})
        the_schema = load_schema(schema)
        schedule = load_schedule(tables, the_schema)
        imported = release_frame(read_lp(lp), the_schema, schedule)
        found = read_solution(solution) if solution is not None else None
        out.parent.mkdir(parents=True, exist_ok=True)
        imported.frame.to_csv(out, index=False)
        for line in imported.notes():
            echo(line, err=True)
        echo(f"wrote {len(imported.frame)} published values to {out}", err=True)
        if found is not None and persons is not None:
            persons.parent.mkdir(parents=True, exist_ok=True)
            found.to_csv(persons, index=False)
            echo(f"wrote the solution's {len(found)} persons to {persons}", err=True)
