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

from ..terminal import echo, printable
from . import (DataArg, GeographyOpt, InferOpt, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt, inputs_from,
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
ExplainOpt = Annotated[str, typer.Option("--explain", help="Which verified claims get their explaining cells: none, singletons, all.")]
ExplainSecondsOpt = Annotated[float, typer.Option("--explain-seconds", min=0, help="Time budget per unit for explanations.")]
MaxRowsOpt = Annotated[int, typer.Option("--max-rows", min=1, help="Units with more rows are reported undecided (too large).")]

EXTRAS = ("rank", "linear", "protection")


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("python-sat", "numpy", "pandas", "jinja2", "highspy", "torch", "opendp"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def _subcommand(name: str, args: list[str]) -> None:
    """Run another ``audit`` command in-process (ranking, linear), as if typed on the command line."""
    import typer.main

    from ..cli import app, click_errors, usage_error
    from ..errors import AuditError

    command = typer.main.get_command(app)
    if name not in getattr(command, "commands", {}):
        raise AuditError(f"the '{name}' attack is not available in this installation", f"--{name}",
                         f"install a version with 'audit {name}', or drop the option")
    sub = command.commands[name]
    known = {o for p in sub.params for o in getattr(p, "opts", ())}
    cleaned, i = [], 0
    while i < len(args):  # drop options this version of the command does not take (e.g. --seed)
        if args[i].startswith("--") and args[i] not in known:
            i += 2
            continue
        cleaned.append(args[i])
        i += 1
    try:
        code = command.main(args=[name, *cleaned], prog_name="audit", standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except click_errors.UsageError as exc:
        raise usage_error(exc) from None
    if isinstance(code, int) and code:
        raise AuditError(f"audit {name} failed (exit {code})", f"--{name}",
                         f"run 'audit {name}' on the same inputs to see why, or drop --{name}")


def read_extras(folder: Path, fresh: set[str] | None = None) -> dict[str, dict]:
    """rank.json / linear.json / protection.json in the output folder (all when ``fresh`` is None)."""
    from ..report import extras_beside

    found = extras_beside(folder)
    return {k: v for k, v in found.items() if fresh is None or k in fresh or k == "protection"}


def pipeline(data: Path, tables: Path, schema: Optional[Path], out: Path, *, rules: Optional[str] = None,
             engine: str = "sat", max_columns: Optional[int] = None, seed: int = 0, conflicts: int = 200_000,
             unit_seconds: float = 120.0, explain: str = "singletons", explain_seconds: float = 10.0,
             max_rows: int = 200, infer_schema: bool = False, geography: Optional[str] = None, rank: bool = False,
             linear_secret: Optional[str] = None, linear_public: Optional[str] = None, report: bool = True,
             quiet: bool = False, progress: bool = True, use_existing: bool = True,
             on_unit: Callable[[dict], None] | None = None, scale=None) -> dict:
    """Attack, apply the rules, write findings.json, junit.xml and report.html; return the findings.

    ``scale`` (:class:`audit.scale.ScaleOptions`): stream the data, run units on a pool or Dask, write
    parts to ``out/parts`` (resumable) and cap the claims listed per unit; None: the in-process run.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..errors import AuditError
    from ..exact import ExactOptions
    from ..findings import run_exact, write_json
    from ..junit import write_junit
    from ..reidentify import add_ranking
    from ..report import write_report
    from ..rules import apply, load_rules

    if (linear_secret is None) != (linear_public is None):
        raise AuditError("--linear-secret and --linear-public go together",
                         "--linear-public" if linear_public is None else "--linear-secret", "pass both, or neither")
    output_folder(out)  # before the long work: a bad --out or rules file fails fast
    policy = load_rules(rules)
    options = ExactOptions(engine=engine, max_columns=max_columns, seed=seed, conflicts=conflicts,
                           unit_seconds=unit_seconds, explain=explain, explain_seconds=explain_seconds,
                           max_rows=max_rows)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if scale is not None:
        from ..scale import Interrupted, run_cli

        try:
            doc = run_cli(data, schema, tables, options, scale, out, policy, infer_schema, geography,
                          quiet or not progress, on_unit)
        except Interrupted as exc:  # Ctrl-C: the parts are intact
            echo(str(exc), err=True)
            raise typer.Exit(130) from None
    else:
        inputs = inputs_from(data, schema, tables, infer_schema, geography)
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  disable=quiet or not progress, transient=True) as bar:
        task = bar.add_task("units", total=None)

        def tick(u: dict) -> None:
            bar.update(task, advance=1, description=printable(f"unit {u['geo']}"))
            if on_unit:
                on_unit(u)

        if scale is None:
            doc = run_exact(inputs, options, on_unit=tick, rules=policy)
    out.mkdir(parents=True, exist_ok=True)
    fresh: set[str] = set()
    common = [str(data), "--tables", str(tables)] + (["--schema", str(schema)] if schema else [])
    if rank:
        _subcommand("rank", common + ["--seed", str(seed), "--out", str(out)])
        fresh.add("rank")
    if linear_secret:
        _subcommand("linear", [str(data), "--secret", linear_secret, "--public", linear_public or "", "--sweep",
                               "--seed", str(seed), "--out", str(out)])
        fresh.add("linear")
    extras = read_extras(out, None if use_existing else fresh)
    add_ranking(doc, extras.get("rank"))
    apply(doc, policy, extras.get("rank"), extras.get("linear"))
    doc["attacks"] = ["exact", *[k for k in ("rank", "linear") if k in extras]]
    doc["versions"] = _versions()
    doc["run"] = {"started": started, "command": "audit " + " ".join(sys.argv[1:]) if sys.argv else "",
                  "rules_file": policy.source}
    outputs = {"findings": out / "findings.json", "junit": out / "junit.xml"}
    if report:
        outputs["report"] = out / "report.html"
    doc["outputs"] = {k: str(v) for k, v in outputs.items()}
    write_json(doc, outputs["findings"])
    write_junit(doc, outputs["junit"])
    if report:
        write_report(doc, outputs["report"], extras)
    return doc


def verdict_json(doc: dict) -> str:
    keep = ("verdict", "failing", "warnings", "summary", "outputs", "attacks")
    return json.dumps({k: doc.get(k) for k in keep}, indent=1)


def _scale(workers: int, scheduler: Optional[str], resume: bool, claims_cap: Optional[int]):
    """Scale options when any scale flag is given; None keeps the plain in-process run."""
    if workers == 1 and scheduler is None and not resume and claims_cap is None:
        return None
    from ..scale import ScaleOptions

    return ScaleOptions(workers=workers, scheduler=scheduler, resume=resume, claims_cap=claims_cap)


def exit_for(doc: dict) -> None:
    if doc.get("verdict") == "fail":
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
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
        report: ReportOpt = True,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        workers: Annotated[int, typer.Option("--workers", min=1, help="Units in parallel on a local process pool (1: in this process).")] = 1,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Run units on a Dask cluster at this address (needs the 'cluster' extra).")] = None,
        resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run: skip the units already in OUT/parts.")] = False,
        claims_cap: Annotated[Optional[int], typer.Option("--claims-cap", min=0, help="Claims listed per unit in findings.json and OUT/parts (the summary counts them all); default: all up to 200 units, else 25; a large number keeps every claim.")] = None,
    ) -> None:
        """Attack the release, apply the rules, write findings.json, junit.xml and report.html (exit 1 on failure)."""
        doc = pipeline(data, tables, schema, out, rules=rules, engine=engine, max_columns=max_columns, seed=seed,
                       conflicts=conflicts, unit_seconds=unit_seconds, explain=explain,
                       explain_seconds=explain_seconds, max_rows=max_rows, infer_schema=infer_schema,
                       geography=geography, rank=rank, linear_secret=linear_secret, linear_public=linear_public,
                       report=report, quiet=quiet or json_out, scale=_scale(workers, scheduler, resume, claims_cap))
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
