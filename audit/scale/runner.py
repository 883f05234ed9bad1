"""Scale: every unit of a state on a local process pool or a Dask cluster, streamed and resumable.

Geographic units are independent tasks (tables at a coarser level couple their children into one
problem per parent, see :mod:`audit.problem.coupled`). The parent process streams the microdata by
geography (:mod:`audit.data.stream`), tabulates and builds problems chunk by chunk, and sends each worker
only what one unit needs: the :class:`~audit.problem.build.Problem` (with its true rows) and the prior
rows of its parent unit. Each finished unit is appended as one JSON line to ``OUT/parts/`` at once,
so an interrupted run resumes where it stopped (``--resume``); a partly written last line is
ignored and that unit is redone. The worker lists a bounded number of claims per unit (the most
telling first; the summary counts them all) and encodes every claim as a gzip member of the claim
store (:mod:`audit.findings.claimstore`), appended to ``part-N.claims`` beside the unit's line. The final
merge streams the parts in unit order: it copies each unit's member into ``claims.csv.gz`` and its
entry to a file, and builds the document (:func:`audit.findings.document.document`) and a ``scale`` section
(distributions, worst units) from them, so its memory does not grow with the claims.

Bounds per unit: the exact attack's own (``unit_work``, or ``unit_seconds``, over the whole unit, conflict budgets,
``max_rows``, ``memory_mb`` as an estimate checked before anything large is built), a hard
limit in the worker's CPU seconds (pool workers: an alarm in the worker, and the parent kills a worker that does
not answer, :mod:`.pools`), and an address-space limit per worker process (``RLIMIT_AS``). A unit past a bound, or whose
worker failed or died, is reported with its status and reason and every candidate claim
*undecided* -- never safe -- and the run goes on. Workers die with the process that started them.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..attacks.engines._explain import WORK_PER_SECOND
from ..attacks.exact import ExactOptions
from ..attacks.joint import joint_proofs
from ..attacks.joint_problems import level_problems
from ..attacks.reidentify import with_attacker
from ..data.stream import _keys, count_units, stream_chunks
from ..errors import AuditError, Interrupted, described
from ..findings.claimstore import store_columns
from ..findings.cells import GridKeeper, ProofCounts, attach_cells, cells_json, grid_cap
from ..findings.document import listing_cap, prior_rows
from ..findings.model import Findings
from ..inputs import Inputs, inputs_from
from ..outputs.progress import Progress
from ..problem.build import Problem, compact_atoms
from ..problem.coupled import coupled_levels, finest_level
from ..release.tabulate import check_units, tabulate, units_here
from ..specs.schedule import Schedule, load_schedule
from ..specs.schema import Schema, load_schema
from .parts import PartWriter, damaged, finished_units, fingerprint, merge
from .pools import new_pool, run_dask, run_pool
from .worker import Limits, audit_task, fewer_collections
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

PIECE_UNITS = 16  # units whose problems are built together
CHUNK_ROWS = 5_000  # rows read at a time: pandas' parser keeps about half a KB a row of a chunk (18 MB at 20,000)


@dataclass(frozen=True)
class ScaleOptions:
    """How to run many units: where, with which bounds, and how to write the results."""

    workers: int = 1  # 1: in this process; N > 1: a local pool of N processes
    scheduler: Any = None  # a Dask scheduler address (or a distributed.Client)
    resume: bool = False
    claims_cap: int | None = None  # claims of each kind listed per unit; None: 10 up to 200 units, else 3
    chunk_rows: int = CHUNK_ROWS
    memory_mb: int | None = None
    hard_seconds: float | None = None  # default: hard_limit()
    task: Callable | None = None  # the per-unit function (tests substitute one); default audit_task
    failed: Callable | None = None  # (item, options, status, reason, limits) -> what a unit whose worker failed
    # becomes; default :func:`audit.scale.worker.failed_unit` (an item's first element is the task's first argument)

    def __post_init__(self):
        if self.workers < 1:
            raise AuditError("must be at least 1", "--workers", "e.g. --workers 2")
        if self.claims_cap is not None and self.claims_cap < 0:
            raise AuditError("must be 0 or more", "--claims-cap", "e.g. --claims-cap 25")
        if self.memory_mb is not None and self.memory_mb < 64:
            raise AuditError("must be at least 64", "--memory-mb", "e.g. --memory-mb 4096")


# -- producing tasks from the stream ------------------------------------------------------------------
def _tasks(source, schema: Schema, schedule: Schedule, scale: ScaleOptions, done: set, stats: dict,
           max_rows: int = ExactOptions.max_rows, explain: bool = True) -> Iterator[tuple[Problem, np.ndarray | None, dict | None]]:
    """(problem, prior rows, published-cells summary) for every unit not yet done, chunk by chunk.

    With coarser levels, each chunk's units are first solved jointly (:mod:`audit.attacks.joint`); a unit
    proved to have one dataset carries the proof to its worker, which then needs no search. Each unit
    is the problem :func:`audit.attacks.joint_problems.level_problems` makes of it, as in one process.
    """
    coupled = coupled_levels(schema, schedule)
    finest = finest_level(schema, schedule)
    finest_cols = list(schema.geography[: schema.geography.index(finest) + 1])
    whole_schedule, seen = schedule, set()
    for chunk in stream_chunks(source, schema, whole_schedule, scale.chunk_rows):
        stats["rows"] += len(chunk)
        schedule = units_here(chunk, schema, whole_schedule)  # a protected schedule lists units of other chunks
        seen |= set(getattr(schedule, "suppress", None) or ())
        light = Inputs(schema, schedule, chunk)
        cache: dict = {}
        whole = tabulate(chunk, schema, schedule) if coupled else []  # every level, whole tracts
        proofs = joint_proofs(schema, schedule, whole, explain) if coupled else {}
        by_unit = {(r.level, r.geo): r for r in whole}
        outside_of = ProofCounts(by_unit, schema, schedule)

        def task(problem: Problem, release) -> tuple[Problem, np.ndarray | None, dict | None]:
            outside = outside_of(problem) if problem.proof_cells is not None else None  # noqa: B023 (called at once)
            prior = prior_rows(chunk, light, problem, cache)  # noqa: B023
            return (problem, None if prior is None else compact_atoms(prior),
                    cells_json(release, outside) if release is not None else None)

        # Problems are built PIECE_UNITS units at a time, so that the first ones go out at once and
        # memory holds a few dozen problems, not a chunk's worth (prior rows still come from the chunk).
        pieces = []
        if len(chunk):
            keys = _keys(chunk, finest_cols)
            starts = np.concatenate([[0], np.flatnonzero(keys[1:] != keys[:-1]) + 1, [len(chunk)]])
            pieces = [chunk.iloc[starts[i]: starts[min(i + PIECE_UNITS, len(starts) - 1)]].reset_index(drop=True)
                      for i in range(0, len(starts) - 1, PIECE_UNITS)]
        for piece in pieces:
            releases = ([by_unit[(finest, g)] for g in dict.fromkeys(zip(*(piece[c].astype(str) for c in finest_cols)))]
                        if coupled else tabulate(piece, schema, units_here(piece, schema, schedule)))
            todo = [r for r in releases if (r.level, "/".join(r.geo)) not in done]
            mine = {(r.level, r.geo): r for r in todo}
            for problem in level_problems(piece, schema, schedule, todo, proofs, max_rows) if todo else []:
                yield task(problem, mine.get((problem.level, problem.geo)))
        parents = [r for r in whole if r.level in coupled and (r.level, "/".join(r.geo)) not in done]
        for problem in level_problems(chunk, schema, schedule, whole, proofs, max_rows, parents) if parents else []:
            yield task(problem, by_unit.get((problem.level, problem.geo)))
    check_units(whole_schedule, seen)


# -- running ------------------------------------------------------------------------------------------
def run_scaled(source, schema: Schema, schedule: Schedule, options: ExactOptions, scale: ScaleOptions,
               out: Path, data_path: str | None = None,
               on_unit: Callable[[dict, int, int], None] | None = None,
               on_total: Callable[[int, int], None] | None = None, rules=None, parts: Path | None = None,
               input_errors: bool = False) -> Findings:
    """Audit every unit (streamed), write parts as units finish, merge into the findings document.

    ``on_total(total, already_done)`` is called once the units are counted; ``on_unit(unit, done,
    total)`` after each unit is written. Raises :class:`Interrupted` on Ctrl-C or SIGTERM (parts intact).
    ``parts``: where the parts go (default ``out/parts``); ``input_errors``: an inconsistent release stops
    the run (as in one process) instead of being that unit's error.
    """
    start = time.perf_counter()
    options = with_attacker(options, schema, rules)
    out = Path(out)
    parts = Path(parts) if parts is not None else out / "parts"
    manifest = parts / "run.json"
    print_ = fingerprint(source, schema, schedule, options, scale.claims_cap)
    if scale.resume and manifest.exists():
        try:
            old = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise damaged(str(manifest), described(exc), parts) from None
        if not isinstance(old, dict):
            raise damaged(str(manifest), "not a JSON object", parts)
        if old != json.loads(json.dumps(print_)):
            changed = [k for k in print_ if json.loads(json.dumps(print_[k])) != old.get(k)]
            raise AuditError(f"cannot resume: the {', '.join(changed)} differ from the interrupted run's",
                             str(manifest), "rerun with the same inputs and options, or without --resume")
    elif parts.exists():
        for p in parts.glob("part-*"):
            p.unlink()
    parts.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(print_, indent=1, default=str), encoding="utf-8")
    done = finished_units(parts) if scale.resume else set()
    counts = count_units(source, schema, schedule, scale.chunk_rows)
    total = sum(counts.values())
    already = len(done)
    if on_total:
        on_total(total, already)
    stats = {"rows": 0}
    tasks = _tasks(source, schema, schedule, scale, done, stats, options.max_rows, options.explain != "none")
    limits = Limits(scale.memory_mb, scale.hard_seconds or hard_limit(options), os.getpid(),
                    listing_cap(total, scale.claims_cap), store_columns(schema, schedule), input_errors)
    writer = PartWriter(parts)
    finished = already
    keeper = GridKeeper(grid_cap(total))  # units written with their grid; merge keeps the final top's

    def record(unit: dict, cells: dict | None) -> None:
        nonlocal finished
        if cells is not None:
            attach_cells(unit, cells, keeper)
        writer.write(unit)
        finished += 1
        if on_unit:
            on_unit(unit, finished, total)

    with fewer_collections():
        try:
            run_units(tasks, options, limits, scale, record)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (audit.signals)
            writer.close()
            raise Interrupted(finished, total, parts) from None
        writer.close()
        try:
            return merge(parts, schema, schedule, options, scale, data_path or _name(source), stats["rows"],
                         time.perf_counter() - start, rules, out)
        except KeyboardInterrupt:  # every unit is in the parts: --resume only merges them
            raise Interrupted(finished, total, parts) from None


def run_units(tasks, options, limits: Limits, scale: ScaleOptions, record) -> None:
    """Run ``scale.task`` (default :func:`audit_task`) on every (first argument, prior, extra) of ``tasks`` and
    ``record(result, extra)`` as each finishes: on Dask with a scheduler, here with one worker and no memory
    bound, else on a bounded local pool. At most twice as many tasks as workers are in flight."""
    if scale.scheduler is not None:
        run_dask(tasks, options, limits, scale, record)
    elif scale.workers == 1 and not scale.memory_mb:
        task = scale.task or audit_task
        for first, prior, extra in tasks:
            record(task(first, options, prior, limits), extra)
    else:
        run_pool(tasks, options, limits, scale, record)


def hard_limit(options: ExactOptions) -> float:
    """The default hard limit per unit, in the worker's CPU seconds: well past ``unit_seconds`` or what
    ``unit_work`` takes (the attack keeps both itself), so that it only stops a unit the budgets fail to."""
    solving = options.unit_seconds if options.unit_seconds is not None else 4 * options.unit_work / WORK_PER_SECOND
    return 2 * solving + 2 * options.explain_budget / WORK_PER_SECOND + 60


def bounded_runner(options: ExactOptions, memory_mb: int | None, workers: int = 1, scheduler: Any = None):
    """A unit runner for :func:`audit.findings.document.run_exact` (``audit run`` without scale options, ``audit
    protect``'s audits), started at once: every unit in ``workers`` worker processes (or on Dask with a
    ``scheduler``), under ``RLIMIT_AS`` of ``memory_mb`` and the hard time limit, since neither can be imposed
    on the process that holds the run. An input error (an inconsistent release) still stops the run, as in
    this process."""
    limits = Limits(memory_mb, hard_limit(options), os.getpid(), None, input_errors=True)
    scale = ScaleOptions(workers=workers, memory_mb=memory_mb, scheduler=scheduler)
    pool = None
    if scheduler is None:
        pool = new_pool(workers, limits)
        pool.submit(int)  # start a worker now: its imports overlap the caller's loading and tabulating

    def run(tasks, unit_options: ExactOptions, record, header: tuple[str, ...] | None, cap: int | None) -> None:
        nonlocal pool
        bounded = replace(limits, header=header or (), claims_cap=cap)
        if scheduler is not None:
            run_dask(tasks, unit_options, bounded, scale, record)
            return
        run_pool(tasks, unit_options, bounded, scale, record, pool or new_pool(workers, limits))
        pool = None  # _run_pool shut it down; a second call starts another
    return run


def _name(source) -> str:
    return "<data>" if isinstance(source, pd.DataFrame) else str(source)


# -- the command line's entry ---------------------------------------------------------------------------
def run_cli(data: Path, schema: Path | None, tables: Path, options: ExactOptions, scale: ScaleOptions, out: Path,
            rules=None, infer_schema: bool = False, geography: str | None = None, quiet: bool = False,
            on_unit: Callable[[dict], None] | None = None) -> Findings:
    """``audit run`` at scale: stream ``data``, show units done / total, rate and ETA (unless quiet)."""
    if not Path(data).exists():  # the streamed run's first look at the file is its fingerprint's stat
        raise AuditError("file not found", str(data), "check the path")
    if infer_schema and schema is None:  # inference needs the whole frame; stream from memory

        inputs = inputs_from(data, None, tables, True, geography)
        the_schema, schedule, source = inputs.schema, inputs.schedule, inputs.frame
    else:
        if schema is None:
            raise AuditError("no schema given", "--schema", fix="pass --schema FILE (or --infer-schema --geography COLS)")
        the_schema = load_schema(schema)
        schedule, source = load_schedule(tables, the_schema), data

    with Progress("units", quiet) as progress:
        def tick(unit: dict, done: int, n: int) -> None:
            progress.update(done, f"unit {unit['geo']}")
            if on_unit:
                on_unit(unit)

        return run_scaled(source, the_schema, schedule, options, scale, out, str(data), tick, progress.total, rules)
