"""``audit run``: the exact attack on every unit (plus ranking / linear when asked), the rules, and the outputs.

Writes ``findings.json``, ``junit.xml`` and ``report.html`` to the output folder; exits 0 when the
release passes the rules, 1 when a rule fails, 2 on an input error. ``audit gate`` runs the same
pipeline (:func:`audit.pipeline.run_audit`) and prints only the verdict.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..attacks.engines._explain import EXPLAIN_BUDGET, WORK_PER_SECOND
from ..attacks.unit import UNIT_WORK
from ..findings.model import Findings
from ..pipeline import AuditOptions, prepare_out, run_audit
from ..scale.runner import ScaleOptions
from ..outputs.terminal import echo
from ..outputs.unfinished import undecided_sentence
from ..outputs.words import plural
from . import GeographyOpt, InferOpt, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt

RulesOpt = Annotated[Optional[str], typer.Option(
    "--rules", "-r", help="Policy: a rules YAML file, or a built-in name (default, strict, lenient). Default: default.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the verdict, failing rules, summary and output paths as JSON.")]
RankOpt = Annotated[bool, typer.Option("--rank", help="Also run the ranking attack (audit rank; needs the 'rank' extra) and apply its rule.")]
LinearSecretOpt = Annotated[Optional[str], typer.Option(
    "--linear-secret", help="Also run the linear attack (audit linear --sweep) on this secret column.")]
LinearPublicOpt = Annotated[Optional[str], typer.Option(
    "--linear-public", help="With --linear-secret: identifier columns the attacker knows, comma-separated.")]
ReportOpt = Annotated[bool, typer.Option("--report/--no-report", help="Write report.html (the HTML risk report).")]
EngineOpt = Annotated[str, typer.Option("--engine", help="Exact engine: sat (default, no licence) or ip (integer program).")]
MaxColumnsOpt = Annotated[Optional[int], typer.Option("--max-columns", min=1, help="Largest number of columns in a claim (default: all).")]
ConflictsOpt = Annotated[int, typer.Option("--conflicts", min=1, help="Conflict budget per solver call; past it a claim is undecided.")]
UnitSecondsOpt = Annotated[Optional[float], typer.Option("--unit-seconds", min=0, help="A wall-clock limit per unit (default none); claims left are undecided, and on a busy machine they can differ between runs.")]
UnitWorkOpt = Annotated[float, typer.Option("--unit-work", min=0, help="Solver work per unit, in millions of propagations (default 600, about 2 minutes of solving); claims left are undecided. Work, not time: the same inputs give the same verdicts on an idle or a busy machine.")]
ExplainOpt = Annotated[str, typer.Option("--explain", help="Which verified claims get their explaining cells: records (the singleton over the most columns of each record), singletons, all, none.")]
ExplainBudgetOpt = Annotated[float, typer.Option("--explain-budget", min=0, help="Solver work per unit for explanations, in millions of propagations (about 0.2 s each). Work, not time: the same inputs give the same findings on any machine.")]
ExplainSecondsOpt = Annotated[Optional[float], typer.Option("--explain-seconds", min=0, hidden=True, help="Deprecated: sets --explain-budget to 5 per second.")]
MaxRowsOpt = Annotated[int, typer.Option("--max-rows", min=1, help="Row slots (one per person) only up to this many rows: a unit with a sum, mean or median cell and more rows is reported undecided (too large); a count-only unit with more is attacked over its atom counts (histogram space) alone.")]
PublishedOpt = Annotated[Optional[Path], typer.Option(
    "--published", help="Attack a published release instead of microdata: the CSV audit tabulate writes, a cell "
                        "file (table, cell, value and geography), or a Census Bureau LP (.lp/.lp.gz); give no DATA.")]
MaybeDataArg = Annotated[Optional[Path], typer.Argument(
    metavar="DATA", help="Confidential microdata: CSV with a header row, or Parquet (none with --published).")]
MemoryOpt = Annotated[int, typer.Option("--memory-mb", help="Memory per unit (MB): a unit estimated to need more is reported undecided (too large) before it is built, and the worker process running units is capped there.")]
RankResultsOpt = Annotated[Optional[Path], typer.Option("--rank-results", help="Fold in this rank.json (audit rank on the same data, schema and tables) instead of running --rank.")]
LinearResultsOpt = Annotated[Optional[Path], typer.Option("--linear-results", help="Fold in this linear.json (audit linear on the same data) instead of running --linear-secret.")]


def budget_of(budget: float, seconds: Optional[float]) -> float:
    """The explanation work budget, from the deprecated ``--explain-seconds`` when it is given."""
    if seconds is None:
        return budget
    budget = seconds * WORK_PER_SECOND
    echo(f"warning: --explain-seconds is deprecated (explanations are bounded by solver work, not time); "
         f"using --explain-budget {budget:g}", err=True)
    return budget


def audit_options(out: Path, data: Optional[Path], schema: Optional[Path], tables: Optional[Path],
                  **options) -> AuditOptions:
    """The command's :class:`AuditOptions`, after checking ``out`` against the inputs and clearing its earlier
    outputs, so that a run refused for a bad option leaves none that looks current either."""
    prepare_out(out, data, schema, tables, options.get("rules"), options.get("published"))
    return AuditOptions(**options)


def warn_left_out(doc: Findings, out: Path) -> None:
    """One warning line per result in ``out`` left out because it was made from other inputs."""
    for line in doc.extras_left_out or ():
        echo(f"warning: {out / line}", err=True)


def verdict_json(doc: Findings) -> str:
    keep = ("verdict", "failing", "warnings", "summary", "outputs", "attacks")
    return json.dumps({k: doc.get(k) for k in keep}, indent=1)  # the document's JSON parts


def _scale(workers: int, scheduler: Optional[str], resume: bool, claims_cap: Optional[int], memory_mb: int):
    """Scale options when any scale flag is given; None keeps the whole frame in this process."""
    if workers == 1 and scheduler is None and not resume and claims_cap is None:
        return None
    return ScaleOptions(workers=workers, scheduler=scheduler, resume=resume, claims_cap=claims_cap,
                        memory_mb=memory_mb)


def exit_for(doc: Findings) -> None:
    if doc.verdict == "fail":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
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
        report: ReportOpt = True,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        workers: Annotated[int, typer.Option("--workers", min=1, help="Units in parallel on a local process pool (1: one worker process).")] = 1,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Run units on a Dask cluster at this address (needs the 'cluster' extra).")] = None,
        resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run: skip the units already in OUT/parts.")] = False,
        claims_cap: Annotated[Optional[int], typer.Option("--claims-cap", min=0, help="Claims of each kind (derived singletons, full records, undecided) listed per unit in findings.json; default: 10 up to 200 units, else 3. Counts stay exact and claims.csv.gz holds every claim (audit claims).")] = None,
        published: PublishedOpt = None,
    ) -> None:
        """Attack the release, apply the rules, write findings.json, junit.xml and report.html (exit 1 on failure)."""
        options = audit_options(
            out, data, schema, tables, rules=rules, engine=engine, max_columns=max_columns, seed=seed, conflicts=conflicts,
            unit_seconds=unit_seconds, unit_work=unit_work, explain=explain, explain_budget=budget_of(explain_budget, explain_seconds),
            max_rows=max_rows, memory_mb=memory_mb, infer_schema=infer_schema, geography=geography, rank=rank,
            linear_secret=linear_secret, linear_public=linear_public, rank_results=rank_results,
            linear_results=linear_results, report=report,
            scale=_scale(workers, scheduler, resume, claims_cap, memory_mb), published=published)
        doc = run_audit(data, schema, tables, out, options, progress=not (quiet or json_out))
        if not (quiet or json_out):
            warn_left_out(doc, out)
        if json_out:
            typer.echo(verdict_json(doc))
        elif not quiet:
            s = doc.summary
            echo(f"{plural(s.units, 'unit')}: {plural(s.verified, 'verified claim')} "
                 f"({plural(s.derived_singletons, 'derived singleton')}), {s.undecided:,} undecided, "
                 f"{plural(s.units_reconstructed, 'unit')} reconstructed exactly.")
            if s.undecided:  # fail closed: say why, whatever the policy makes of it
                echo(f"  {undecided_sentence(doc)}")
            echo(f"Verdict: {doc.verdict.upper()} under the '{doc.rules['name']}' policy"
                 + (f" ({plural(len(doc.failing), 'failing rule')})" if doc.failing else ""))
            for f in doc.failing:
                echo(f"  FAIL {f.rule}: {plural(f.units, 'unit')}; {f.example}")
            for key, path in doc.outputs.items():
                echo(f"{key}: {path}")
            echo("(confidential: the findings and the report contain reconstructed records)")
        exit_for(doc)
