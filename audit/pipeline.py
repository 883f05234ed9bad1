"""The whole audit as a library call: attack, apply the rules, write the outputs, return the findings.

:func:`run_audit` is what ``audit run``, ``audit gate`` and ``audit demo`` do; the command line only
parses its options into :class:`AuditOptions` and prints. Input errors raise
:class:`audit.errors.AuditError`; Ctrl-C during a scaled run raises :class:`audit.errors.Interrupted`.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable, Optional

from .attacks.base import ExactAttack
from .findings.certfile import FILE as CERTIFICATES_FILE
from .findings.claimstore import FILE as STORE_FILE, store_beside
from .attacks.engines._explain import EXPLAIN_BUDGET
from .attacks.unit import UNIT_WORK
from .attacks.engines.rank_options import RUN_SCHEDULE, RankOptions, resolve_device
from .errors import AuditError
from .attacks.exact import ExactOptions
from .attacks.extras import linear_target, write_linear, write_ranking
from .findings.files import read_json, write_json
from .findings.model import Findings
from .inputs import inputs_from
from .findings.junit import write_junit
from .paths import clear_outputs as clear_named, named_file, output_folder
from .outputs.progress import Progress
from .findings.provenance import check_explicit, fingerprint, select
from .published import check_options, run_published
from .attacks.reidentify import add_ranking
from .outputs.report import extras_beside, write_report
from .policy.rules import load_rules
from .scale.runner import ScaleOptions, bounded_runner, run_cli

OUTPUTS = ("findings.json", "junit.xml", "report.html", CERTIFICATES_FILE, "findings.units.jsonl.gz",
           "findings.checks.jsonl.gz")  # the last two: a large run's side files (audit.findings.sidefile)
WRITES = (*OUTPUTS, STORE_FILE, "rank.json", "rank.svg", "linear.json", "linear_*.svg", "*.tmp", "parts/")  # in OUT


@dataclass(frozen=True)
class AuditOptions:
    """Everything ``audit run`` takes besides its three inputs and output folder; checked when made.

    The exact attack's knobs (``engine`` ... ``memory_mb``) are those of :class:`audit.attacks.exact.ExactOptions`.
    ``rank`` / ``linear_secret`` + ``linear_public`` also run those attacks; ``rank_results`` /
    ``linear_results`` fold in ones already run. ``use_existing``: take rank.json / linear.json already
    in the output folder when made from the same inputs. ``scale`` (:class:`audit.scale.runner.ScaleOptions`):
    stream the data and run units on a pool or Dask (None: the whole frame here, each unit in one
    worker process bounded by ``memory_mb``). ``published``: attack that release file alone
    (:mod:`audit.published`), with no microdata.
    """

    rules: Optional[str | Path] = None
    engine: str = "sat"
    max_columns: Optional[int] = None
    seed: int = 0
    conflicts: int = 200_000
    unit_seconds: Optional[float] = None
    unit_work: float = UNIT_WORK
    explain: str = "records"
    explain_budget: float = EXPLAIN_BUDGET
    max_rows: int = 200
    memory_mb: Optional[int] = 4096
    infer_schema: bool = False
    geography: Optional[str] = None
    rank: bool = False
    linear_secret: Optional[str] = None
    linear_public: Optional[str] = None
    rank_results: Optional[Path] = None
    linear_results: Optional[Path] = None
    report: bool = True
    use_existing: bool = True
    scale: Optional[ScaleOptions] = None
    published: Optional[Path] = None

    def __post_init__(self):
        self.exact  # the exact attack's knobs, each checked with its option's name
        if (self.linear_secret is None) != (self.linear_public is None):
            raise AuditError("--linear-secret and --linear-public go together",
                             "--linear-public" if self.linear_public is None else "--linear-secret",
                             "pass both, or neither")
        for kind, fresh, path in (("rank", self.rank, self.rank_results),
                                  ("linear", self.linear_secret, self.linear_results)):
            if fresh and path is not None:
                raise AuditError(f"--{kind} runs the {kind} attack and --{kind}-results takes one already run",
                                 f"--{kind}-results", "pass one of them")

    @property
    def exact(self) -> ExactOptions:
        """The exact attack's options."""
        return ExactOptions(engine=self.engine, max_columns=self.max_columns, seed=self.seed,
                            conflicts=self.conflicts, unit_seconds=self.unit_seconds, unit_work=self.unit_work, explain=self.explain,
                            explain_budget=self.explain_budget, max_rows=self.max_rows, memory_mb=self.memory_mb)


def clear_outputs(out: Path) -> None:
    """Remove the findings, JUnit XML and report an earlier run left in ``out``. Parts stay (``--resume``)."""
    clear_named(out, OUTPUTS)


def prepare_out(out: Path, data: Optional[Path], schema: Optional[Path], tables: Optional[Path],
                rules: Optional[str] = None, published: Optional[Path] = None) -> None:
    """Check ``out`` before anything is written, removed or run: a folder this process can write that holds
    none of the inputs where a run writes; then remove an earlier run's outputs from it."""
    output_folder(out, inputs={"DATA": data, "--schema": schema, "--tables": tables, "--published": published,
                               "--rules": named_file(rules)}, writes=WRITES)
    clear_outputs(out)


def _not_in_a_worker() -> None:
    """Stop a script that calls run_audit unguarded from re-running it in each worker process: Python starts
    the workers (spawn) by importing the main script, whose run_audit would start workers of its own."""
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):  # a spawned process importing the script
        print("error: run_audit: the script that calls it runs again in each of the audit's worker processes (Python "
              "starts them by importing the script) -- fix: put the call under `if __name__ == \"__main__\":` (not "
              "needed in Jupyter)", file=sys.stderr, flush=True)
        raise SystemExit(2)


def run_audit(data: Optional[Path], schema: Optional[Path], tables: Path, out: Path,
              options: AuditOptions = AuditOptions(), *, on_unit: Callable[[dict], None] | None = None,
              progress: bool = False) -> Findings:
    """Attack, apply the rules, write findings.json, claims.csv.gz, junit.xml and report.html; return the findings.

    Parameters
    ----------
    data, schema, tables : Path
        The microdata (None with ``options.published``), schema (None with ``infer_schema``) and table schedule.
    out : Path
        Output folder (created if missing).
    options : AuditOptions
        What to run and how.
    on_unit : callable, optional
        Called with each unit's findings as it finishes.
    progress : bool
        Show units done / total on stderr.
    """
    _not_in_a_worker()
    prepare_out(out, data, schema, tables, options.rules, options.published)  # before the long work: fails fast
    policy = load_rules(options.rules)
    exact = options.exact
    if options.rank:
        resolve_device("auto")  # needs torch: stop now with the install hint, not after the exact attack
    if options.linear_secret:
        linear_target(data, options.linear_secret, options.linear_public or "")  # a wrong column fails now
    made_from = fingerprint(data, schema, tables)
    explicit = _explicit(options.rank_results, options.linear_results, made_from)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    inputs = None
    if options.published is not None:
        check_options(data, schema, options.rank, options.linear_secret, options.infer_schema, options.scale)
    elif data is None:
        raise AuditError("missing argument", "DATA", "give the microdata file, or --published RELEASE")
    if options.published is None and options.scale is not None:
        doc = run_cli(data, schema, tables, exact, options.scale, out, policy, options.infer_schema,
                      options.geography, not progress, on_unit)
    else:
        if options.published is None:
            runner = bounded_runner(exact, options.memory_mb)
            inputs = inputs_from(data, schema, tables, options.infer_schema, options.geography)
        with Progress("units", not progress) as bar:
            def tick(u: dict) -> None:
                bar.update(note=f"unit {u['geo']}", key=(u["level"], u["geo"]))
                if on_unit:
                    on_unit(u)

            if options.published is not None:
                doc = run_published(options.published, schema, tables, exact, on_unit=tick, rules=policy, out=out)
            else:
                doc = ExactAttack(inputs, exact, on_unit=tick, rules=policy, run_units=runner, out=out,
                                  on_total=bar.total).evaluate().results().detail
    out.mkdir(parents=True, exist_ok=True)
    fresh: dict[str, dict] = {}
    if options.rank:
        ranked = inputs or inputs_from(data, schema, tables, options.infer_schema, options.geography)
        fresh["rank"], _ = write_ranking(ranked, RankOptions(seed=options.seed, **RUN_SCHEDULE), out, made_from=made_from,
                                         workers=options.scale.workers if options.scale else 1)
    if options.linear_secret:
        fresh["linear"] = write_linear(data, options.linear_secret, options.linear_public or "", out,
                                       seed=options.seed, sweep=True, memory_mb=options.memory_mb)
    beside = extras_beside(out)
    if not options.use_existing:
        beside = {k: v for k, v in beside.items() if k == "protection"}
    extras, left_out = select({k: v for k, v in {**beside, **fresh}.items() if k not in explicit}, made_from)
    for kind, (path, extra) in explicit.items():  # taken for these inputs: stamped so, beside the findings
        theirs = extra.get("fingerprint") if isinstance(extra.get("fingerprint"), dict) else {}
        extras[kind] = {**extra, "fingerprint": {**made_from, **theirs, "passed_by_name": str(path)}}
        write_json(extras[kind], out / f"{kind}.json")
    section = {"reidentification": dict(doc.reidentification)}
    add_ranking(section, extras.get("rank"))
    outputs = {"findings": out / "findings.json", "claims": out / "claims.csv.gz", "junit": out / "junit.xml"}
    if options.report:
        outputs["report"] = out / "report.html"
    if (out / CERTIFICATES_FILE).is_file():
        outputs["interval_certificates"] = out / CERTIFICATES_FILE
    doc = replace(doc, reidentification=section["reidentification"],
                  attacks=["exact", *[k for k in ("rank", "linear") if k in extras]],
                  inputs={**doc.inputs, "fingerprint": made_from}, extras_left_out=left_out or None,
                  versions=_versions(), outputs={k: str(v) for k, v in outputs.items()},
                  run={"started": started, "command": "audit " + " ".join(sys.argv[1:]) if sys.argv else "",
                       "rules_file": policy.source},
                  ).judged(policy, extras.get("rank"), extras.get("linear"))
    # findings.json last: the three appear together at the end of a run that succeeded
    _write_atomic(lambda p: write_junit(doc, p), outputs["junit"])
    if options.report:
        write_report(doc, outputs["report"], extras, store_beside(outputs["findings"], doc))
    write_json(doc, outputs["findings"])
    return doc


def _versions() -> dict[str, str]:
    out = {}
    for name in ("python-sat", "numpy", "pandas", "jinja2", "highspy", "torch", "opendp"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def _explicit(rank_results: Optional[Path], linear_results: Optional[Path], made_from: dict
              ) -> dict[str, tuple[Path, dict]]:
    """Results passed by name (kind -> path and document): read and checked before the long work."""
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
