"""``audit run``: the exact attack on every unit (plus ranking / linear when asked), the rules, and the outputs.

Writes ``findings.json``, ``junit.xml`` and ``report.html`` to the output folder; exits 0 when the
release passes the rules, 1 when a rule fails, 2 on an input error. ``audit gate`` runs the same
pipeline (:func:`pipeline`) and prints only the verdict.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

from ..engines._explain import EXPLAIN_BUDGET, WORK_PER_SECOND
from ..terminal import echo
from . import (GeographyOpt, InferOpt, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt, inputs_from,
               output_folder)

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
UnitSecondsOpt = Annotated[float, typer.Option("--unit-seconds", min=0, help="Time limit per unit; claims left are undecided.")]
ExplainOpt = Annotated[str, typer.Option("--explain", help="Which verified claims get their explaining cells: records (the singleton over the most columns of each record), singletons, all, none.")]
ExplainBudgetOpt = Annotated[float, typer.Option("--explain-budget", min=0, help="Solver work per unit for explanations, in millions of propagations (about 0.2 s each). Work, not time: the same inputs give the same findings on any machine.")]
ExplainSecondsOpt = Annotated[Optional[float], typer.Option("--explain-seconds", min=0, hidden=True, help="Deprecated: sets --explain-budget to 5 per second.")]
MaxRowsOpt = Annotated[int, typer.Option("--max-rows", min=1, help="Units with more rows are reported undecided (too large).")]
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


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("python-sat", "numpy", "pandas", "jinja2", "highspy", "torch", "opendp"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


OUTPUTS = ("findings.json", "junit.xml", "report.html")


def clear_outputs(out: Path) -> None:
    """Remove the findings, JUnit XML and report an earlier run left in ``out``, so that a run that
    fails (input error, exception, Ctrl-C) leaves none that looks current. Parts stay (``--resume``)."""
    if out.is_dir():
        for name in OUTPUTS:
            (out / name).unlink(missing_ok=True)


def _explicit(rank_results: Optional[Path], linear_results: Optional[Path], made_from: dict
              ) -> dict[str, tuple[Path, dict]]:
    """Results passed by name (kind -> path and document): read and checked before the long work."""
    from ..provenance import check_explicit
    from ..report import read_json

    out = {}
    for kind, path in (("rank", rank_results), ("linear", linear_results)):
        if path is not None:
            doc = read_json(path, f"{kind} results")
            check_explicit(kind, doc, made_from, path)
            out[kind] = (path, doc)
    return out


def _write_atomic(write: Callable[[Path], object], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    tmp.replace(path)


def pipeline(data: Path, tables: Path, schema: Optional[Path], out: Path, *, rules: Optional[str] = None,
             engine: str = "sat", max_columns: Optional[int] = None, seed: int = 0, conflicts: int = 200_000,
             unit_seconds: float = 120.0, explain: str = "records", explain_budget: float = EXPLAIN_BUDGET,
             max_rows: int = 200, memory_mb: Optional[int] = 4096, infer_schema: bool = False,
             geography: Optional[str] = None, rank: bool = False, linear_secret: Optional[str] = None,
             linear_public: Optional[str] = None, rank_results: Optional[Path] = None,
             linear_results: Optional[Path] = None, report: bool = True, quiet: bool = False, progress: bool = True,
             use_existing: bool = True, on_unit: Callable[[dict], None] | None = None, scale=None,
             published: Optional[Path] = None) -> dict:
    """Attack, apply the rules, write findings.json, claims.csv.gz, junit.xml and report.html; return the findings.

    ``scale`` (:class:`audit.scale.ScaleOptions`): stream the data, run units on a pool or Dask, write
    parts to ``out/parts`` (resumable) and cap the claims listed per unit; None: the whole frame in
    this process, each unit in one worker process bounded by ``memory_mb``. rank.json / linear.json
    already in ``out`` count only when made from the same inputs (``use_existing``); those passed as
    ``rank_results`` / ``linear_results`` are taken unless they record other inputs.
    ``published``: attack that release file alone (:mod:`audit.published`), with ``data`` None.
    """
    from ..claimstore import store_beside
    from ..errors import AuditError
    from ..exact import ExactOptions
    from ..findings import run_exact, write_json
    from ..junit import write_junit
    from ..provenance import fingerprint, select
    from ..reidentify import add_ranking
    from ..report import extras_beside, write_report
    from ..rules import apply, load_rules

    clear_outputs(out)
    if (linear_secret is None) != (linear_public is None):
        raise AuditError("--linear-secret and --linear-public go together",
                         "--linear-public" if linear_public is None else "--linear-secret", "pass both, or neither")
    for kind, fresh_flag, path in (("rank", rank, rank_results), ("linear", linear_secret, linear_results)):
        if fresh_flag and path is not None:
            raise AuditError(f"--{kind} runs the {kind} attack and --{kind}-results takes one already run",
                             f"--{kind}-results", "pass one of them")
    output_folder(out)  # before the long work: a bad --out or rules file fails fast
    policy = load_rules(rules)
    options = ExactOptions(engine=engine, max_columns=max_columns, seed=seed, conflicts=conflicts,
                           unit_seconds=unit_seconds, explain=explain, explain_budget=explain_budget,
                           max_rows=max_rows, memory_mb=memory_mb)
    if rank:
        from ..engines.rank import resolve_device

        resolve_device("auto")  # needs torch: stop now with the install hint, not after the exact attack
    if linear_secret:
        from .linear import linear_target

        linear_target(data, linear_secret, linear_public or "")  # a wrong column fails now, not after the attack
    made_from = fingerprint(data, schema, tables)
    explicit = _explicit(rank_results, linear_results, made_from)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if published is not None:
        from ..published import check_options

        check_options(data, schema, rank, linear_secret, infer_schema, scale)
    elif data is None:
        raise AuditError("missing argument", "DATA", "give the microdata file, or --published RELEASE")
    elif scale is not None:
        from ..scale import Interrupted, run_cli

        try:
            doc = run_cli(data, schema, tables, options, scale, out, policy, infer_schema, geography,
                          quiet or not progress, on_unit)
        except Interrupted as exc:  # Ctrl-C: the parts are intact
            echo(str(exc), err=True)
            raise typer.Exit(130) from None
    else:
        from ..scale import bounded_runner

        runner = bounded_runner(options, memory_mb)
        inputs = inputs_from(data, schema, tables, infer_schema, geography)
    if scale is None:
        from ..progress import Progress

        with Progress("units", quiet or not progress) as bar:
            def tick(u: dict) -> None:
                bar.update(note=f"unit {u['geo']}")
                if on_unit:
                    on_unit(u)

            if published is not None:
                from ..published import run_published

                doc = run_published(published, schema, tables, options, on_unit=tick, rules=policy)
            else:
                doc = run_exact(inputs, options, on_unit=tick, rules=policy, run_units=runner, out=out,
                                on_total=bar.total)
    out.mkdir(parents=True, exist_ok=True)
    fresh: dict[str, dict] = {}
    if rank:
        from ..engines.rank import RankOptions
        from .rank import write_ranking

        ranked = inputs if scale is None else inputs_from(data, schema, tables, infer_schema, geography)
        fresh["rank"], _ = write_ranking(ranked, RankOptions(seed=seed), out, made_from=made_from)
    if linear_secret:
        from .linear import write_linear

        fresh["linear"] = write_linear(data, linear_secret, linear_public or "", out, seed=seed, sweep=True)
    beside = extras_beside(out)
    if not use_existing:
        beside = {k: v for k, v in beside.items() if k == "protection"}
    extras, left_out = select({k: v for k, v in {**beside, **fresh}.items() if k not in explicit}, made_from)
    for kind, (path, extra) in explicit.items():  # taken for these inputs: stamped so, beside the findings
        theirs = extra.get("fingerprint") if isinstance(extra.get("fingerprint"), dict) else {}
        extras[kind] = {**extra, "fingerprint": {**made_from, **theirs, "passed_by_name": str(path)}}
        write_json(extras[kind], out / f"{kind}.json")
    for line in left_out if not quiet else ():
        typer.echo(f"warning: {out / line}", err=True)
    add_ranking(doc, extras.get("rank"))
    apply(doc, policy, extras.get("rank"), extras.get("linear"))
    doc["attacks"] = ["exact", *[k for k in ("rank", "linear") if k in extras]]
    doc["inputs"]["fingerprint"] = made_from
    if left_out:
        doc["extras_left_out"] = left_out
    doc["versions"] = _versions()
    doc["run"] = {"started": started, "command": "audit " + " ".join(sys.argv[1:]) if sys.argv else "",
                  "rules_file": policy.source}
    outputs = {"findings": out / "findings.json", "claims": out / "claims.csv.gz", "junit": out / "junit.xml"}
    if report:
        outputs["report"] = out / "report.html"
    doc["outputs"] = {k: str(v) for k, v in outputs.items()}
    # findings.json last: the three appear together at the end of a run that succeeded
    _write_atomic(lambda p: write_junit(doc, p), outputs["junit"])
    if report:
        write_report(doc, outputs["report"], extras, store_beside(outputs["findings"], doc))
    write_json(doc, outputs["findings"])
    return doc


def verdict_json(doc: dict) -> str:
    keep = ("verdict", "failing", "warnings", "summary", "outputs", "attacks")
    return json.dumps({k: doc.get(k) for k in keep}, indent=1)


def _scale(workers: int, scheduler: Optional[str], resume: bool, claims_cap: Optional[int], memory_mb: int):
    """Scale options when any scale flag is given; None keeps the whole frame in this process."""
    if workers == 1 and scheduler is None and not resume and claims_cap is None:
        return None
    from ..scale import ScaleOptions

    return ScaleOptions(workers=workers, scheduler=scheduler, resume=resume, claims_cap=claims_cap,
                        memory_mb=memory_mb)


def exit_for(doc: dict) -> None:
    if doc.get("verdict") == "fail":
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
        unit_seconds: UnitSecondsOpt = 120.0,
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
        doc = pipeline(data, tables, schema, out, rules=rules, engine=engine, max_columns=max_columns, seed=seed,
                       conflicts=conflicts, unit_seconds=unit_seconds, explain=explain,
                       explain_budget=budget_of(explain_budget, explain_seconds), max_rows=max_rows, memory_mb=memory_mb,
                       infer_schema=infer_schema, geography=geography, rank=rank, linear_secret=linear_secret,
                       linear_public=linear_public, rank_results=rank_results, linear_results=linear_results,
                       report=report, quiet=quiet or json_out,
                       scale=_scale(workers, scheduler, resume, claims_cap, memory_mb), published=published)
        if json_out:
            typer.echo(verdict_json(doc))
        elif not quiet:
            s = doc["summary"]
            echo(f"{s['units']} units: {s['verified']} verified claims ({s['derived_singletons']} derived "
                       f"singletons), {s['undecided']} undecided, {s['units_reconstructed']} units reconstructed "
                       f"exactly.")
            echo(f"Verdict: {doc['verdict'].upper()} under the '{doc['rules']['name']}' policy"
                       + (f" ({len(doc['failing'])} failing rules)" if doc["failing"] else ""))
            for f in doc["failing"]:
                echo(f"  FAIL {f['rule']}: {f['units']} units; {f['example']}")
            for key, path in doc["outputs"].items():
                echo(f"{key}: {path}")
            echo("(confidential: the findings and the report contain reconstructed records)")
        exit_for(doc)
