"""``audit gate``: the ``audit run`` pipeline for CI, terse: prints PASS/FAIL and the failing rules, exits 0/1/2."""
from __future__ import annotations

from pathlib import Path

import typer

from ..terminal import echo
from . import DataArg, GeographyOpt, InferOpt, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt
from .run import (ConflictsOpt, EngineOpt, ExplainOpt, ExplainSecondsOpt, JsonOpt, LinearPublicOpt, LinearSecretOpt,
                  MaxColumnsOpt, MaxRowsOpt, RankOpt, ReportOpt, RulesOpt, UnitSecondsOpt, exit_for, pipeline,
                  verdict_json)


def register(app: typer.Typer) -> None:
    @app.command()
    def gate(
        data: DataArg,
        tables: TablesOpt,
        schema: SchemaOpt = None,
        out: OutOpt = Path("audit-out"),
        rules: RulesOpt = None,
        engine: EngineOpt = "sat",
        max_columns: MaxColumnsOpt = None,
        seed: SeedOpt = 0,
        conflicts: ConflictsOpt = 200_000,
        unit_seconds: UnitSecondsOpt = 120.0,
        explain: ExplainOpt = "singletons",
        explain_seconds: ExplainSecondsOpt = 10.0,
        max_rows: MaxRowsOpt = 200,
        infer_schema: InferOpt = False,
        geography: GeographyOpt = None,
        rank: RankOpt = False,
        linear_secret: LinearSecretOpt = None,
        linear_public: LinearPublicOpt = None,
        report: ReportOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """CI gate: run the audit, print PASS or FAIL with the failing rules; exit 0 pass, 1 fail, 2 input error."""
        doc = pipeline(data, tables, schema, out, rules=rules, engine=engine, max_columns=max_columns, seed=seed,
                       conflicts=conflicts, unit_seconds=unit_seconds, explain=explain,
                       explain_seconds=explain_seconds, max_rows=max_rows, infer_schema=infer_schema,
                       geography=geography, rank=rank, linear_secret=linear_secret, linear_public=linear_public,
                       report=report, quiet=True, progress=False)
        if json_out:
            typer.echo(verdict_json(doc))
        elif not quiet:
            echo(f"{doc['verdict'].upper()} ({doc['rules']['name']} policy, {doc['summary']['units']} units)")
            for f in doc["failing"]:
                where = "" if f.get("scope") == "release" else f"{f['units']} unit(s); "
                echo(f"FAIL {f['rule']}: {where}{f['example']}")
            for w in doc["warnings"]:
                where = "" if w.get("scope") == "release" else f"{w['units']} unit(s); "
                echo(f"WARN {w['rule']}: {where}{w['example']}")
        exit_for(doc)
