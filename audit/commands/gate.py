"""``audit gate``: the ``audit run`` pipeline (:func:`audit.pipeline.run_audit`) for CI, terse: prints PASS/FAIL and the failing rules, exits 0/1/2."""
from __future__ import annotations

from pathlib import Path

import typer

from ..outputs.terminal import echo
from ..outputs.words import plural
from ..attacks.engines._explain import EXPLAIN_BUDGET
from ..attacks.unit import UNIT_WORK
from ..pipeline import run_audit
from . import GeographyOpt, InferOpt, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt
from .run import (ConflictsOpt, EngineOpt, ExplainBudgetOpt, ExplainOpt, ExplainSecondsOpt, JsonOpt, LinearPublicOpt,
                  LinearResultsOpt, LinearSecretOpt, MaxColumnsOpt, MaxRowsOpt, MaybeDataArg, MemoryOpt, PublishedOpt,
                  RankOpt, RankResultsOpt, ReportOpt, RulesOpt, UnitSecondsOpt, UnitWorkOpt, audit_options, budget_of, exit_for,
                  verdict_json)


def register(app: typer.Typer) -> None:
    @app.command()
    def gate(
        tables: TablesOpt,
        data: MaybeDataArg = None,
        schema: SchemaOpt = None,
        out: OutOpt = Path("audit-out"),
        rules: RulesOpt = None,
        engine: EngineOpt = "sat",
        max_columns: MaxColumnsOpt = None,
        seed: SeedOpt = 0,
        conflicts: ConflictsOpt = 200_000,
        unit_seconds: UnitSecondsOpt = None,
        unit_work: UnitWorkOpt = UNIT_WORK,
        explain: ExplainOpt = "records",
        explain_budget: ExplainBudgetOpt = EXPLAIN_BUDGET,
        explain_seconds: ExplainSecondsOpt = None,
        max_rows: MaxRowsOpt = 200,
        memory_mb: MemoryOpt = 4096,
        infer_schema: InferOpt = False,
        geography: GeographyOpt = None,
        rank: RankOpt = False,
        linear_secret: LinearSecretOpt = None,
        linear_public: LinearPublicOpt = None,
        rank_results: RankResultsOpt = None,
        linear_results: LinearResultsOpt = None,
        report: ReportOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        published: PublishedOpt = None,
    ) -> None:
        """CI gate: run the audit, print PASS or FAIL with the failing rules; exit 0 pass, 1 fail, 2 input error."""
        options = audit_options(
            out, data, schema, tables, rules=rules, engine=engine, max_columns=max_columns, seed=seed, conflicts=conflicts,
            unit_seconds=unit_seconds, unit_work=unit_work, explain=explain, explain_budget=budget_of(explain_budget, explain_seconds),
            max_rows=max_rows, memory_mb=memory_mb, infer_schema=infer_schema, geography=geography, rank=rank,
            linear_secret=linear_secret, linear_public=linear_public, rank_results=rank_results,
            linear_results=linear_results, report=report, published=published)
        doc = run_audit(data, schema, tables, out, options)
        if json_out:
            typer.echo(verdict_json(doc))
        elif not quiet:
            echo(f"{doc.verdict.upper()} ({doc.rules['name']} policy, {plural(doc.summary.units, 'unit')})")
            for f in doc.failing:
                where = "" if f.scope == "release" else f"{plural(f.units, 'unit')}; "
                echo(f"FAIL {f.rule}: {where}{f.example}")
            for w in doc.warnings:
                where = "" if w.scope == "release" else f"{plural(w.units, 'unit')}; "
                echo(f"WARN {w.rule}: {where}{w.example}")
        exit_for(doc)
