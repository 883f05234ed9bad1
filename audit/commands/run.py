"""``audit run``: the exact attack (generate-then-verify) on every unit, written to findings.json."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import DataArg, GeographyOpt, InferOpt, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt, inputs_from


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        data: DataArg,
        tables: TablesOpt,
        schema: SchemaOpt = None,
        out: OutOpt = Path("audit-out"),
        engine: Annotated[str, typer.Option("--engine", help="Exact engine: sat (default, no licence) or ip (integer program).")] = "sat",
        max_columns: Annotated[Optional[int], typer.Option("--max-columns", help="Largest number of columns in a claim (default: all).")] = None,
        seed: SeedOpt = 0,
        conflicts: Annotated[int, typer.Option("--conflicts", help="Conflict budget per solver call; past it a claim is undecided.")] = 200_000,
        unit_seconds: Annotated[float, typer.Option("--unit-seconds", help="Time limit per unit; claims left are undecided.")] = 120.0,
        explain: Annotated[str, typer.Option("--explain", help="Which verified claims get their explaining cells: none, singletons, all.")] = "singletons",
        explain_seconds: Annotated[float, typer.Option("--explain-seconds", help="Time budget per unit for explanations.")] = 10.0,
        max_rows: Annotated[int, typer.Option("--max-rows", help="Units with more rows are reported undecided (too large).")] = 200,
        infer_schema: InferOpt = False,
        geography: GeographyOpt = None,
        quiet: QuietOpt = False,
    ) -> None:
        """Prove what the release reveals: verified claims per unit, with the cells that imply them."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from ..exact import ExactOptions
        from ..findings import run_exact, write_json

        options = ExactOptions(engine=engine, max_columns=max_columns, seed=seed, conflicts=conflicts,
                               unit_seconds=unit_seconds, explain=explain, explain_seconds=explain_seconds,
                               max_rows=max_rows)
        inputs = inputs_from(data, schema, tables, infer_schema, geography)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      disable=quiet, transient=True) as bar:
            task = bar.add_task("units", total=None)
            doc = run_exact(inputs, options, on_unit=lambda u: bar.update(task, advance=1, description=f"unit {u['geo']}"))
        path = out / "findings.json"
        write_json(doc, path)
        if not quiet:
            s = doc["summary"]
            typer.echo(f"{s['units']} units: {s['verified']} verified claims ({s['derived_singletons']} derived "
                       f"singletons), {s['undecided']} undecided, {s['units_reconstructed']} units reconstructed "
                       f"exactly. Findings: {path} (confidential: contains reconstructed records)")
