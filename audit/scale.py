"""Scale: every unit of a state on a local process pool or a Dask cluster, streamed and resumable.

Geographic units are independent tasks (tables at a coarser level couple their children into one
problem per parent, see :mod:`audit.coupled`). The parent process streams the microdata by
geography (:mod:`audit.stream`), tabulates and builds problems chunk by chunk, and sends each worker
only what one unit needs: the :class:`~audit.problem.Problem` (with its true rows) and the prior
rows of its parent unit. Each finished unit is appended as one JSON line to ``OUT/parts/`` at once,
so an interrupted run resumes where it stopped (``--resume``); a partly written last line is
ignored and that unit is redone. The final merge writes ``findings.json`` with
:func:`audit.findings.document`. Claims listed per unit are capped in the worker (the most telling
first; the summary counts them all), which keeps parts small and the merge fast, and it adds a ``scale`` section that summarises the run (distributions, worst units).

Bounds per unit: the exact attack's own ``unit_seconds`` and conflict budgets, ``max_rows``, a hard
wall-clock limit (pool workers), and an address-space limit per worker process (``RLIMIT_AS``).
A unit past a bound, or whose worker failed or died, is reported with its status and reason and
every candidate claim *undecided* -- never safe -- and the run goes on.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from .claims import UNDECIDED, Verdict, candidates
from .coupled import build_coupled_problems, coupled_levels
from .errors import AuditError, OptionalDependencyMissing
from .terminal import printable
from .exact import ExactOptions, UnitResult, audit_unit
from .findings import cells_json, claim_rank, document, prior_rows, unit_json
from .inputs import Inputs
from .problem import Problem, build_problems
from .reidentify import with_attacker
from .schedule import Schedule
from .schema import Schema
from .stream import DEFAULT_CHUNK_ROWS, _keys, count_units, stream_chunks
from .tabulate import tabulate

AUTO_CAP_UNITS = 200  # runs with more units list at most DEFAULT_CAP claims per unit in findings.json
DEFAULT_CAP = 25
LISTED_MAX = 20_000
PIECE_UNITS = 16  # units whose problems are built together  # a unit past its bounds with more candidates than this is summarised, not listed


@dataclass(frozen=True)
class Limits:
    """Bounds enforced in the worker, on top of the exact attack's own."""

    memory_mb: int | None = None
    hard_seconds: float | None = None
    parent_pid: int = 0
    claims_cap: int | None = None  # claims listed per unit (the rest are counted, not written)


@dataclass(frozen=True)
class ScaleOptions:
    """How to run many units: where, with which bounds, and how to write the results."""

    workers: int = 1  # 1: in this process; N > 1: a local pool of N processes
    scheduler: Any = None  # a Dask scheduler address (or a distributed.Client)
    resume: bool = False
    claims_cap: int | None = None  # claims listed per unit in findings.json; None: all up to 200 units, else 25
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    memory_mb: int | None = None
    hard_seconds: float | None = None  # default: 2 x unit_seconds + explain_seconds + 60
    coupled: bool = True
    task: Callable | None = None  # the per-unit function (tests substitute one); default audit_task

    def __post_init__(self):
        if self.workers < 1:
            raise AuditError("must be at least 1", "--workers", "e.g. --workers 2")
        if self.claims_cap is not None and self.claims_cap < 0:
            raise AuditError("must be 0 or more", "--claims-cap", "e.g. --claims-cap 25")
        if self.memory_mb is not None and self.memory_mb < 64:
            raise AuditError("must be at least 64", "--memory-mb", "e.g. --memory-mb 4096")


class Interrupted(Exception):
    """Ctrl-C during a run: the parts written so far are intact; rerun with --resume."""

    def __init__(self, done: int, total: int, parts: Path):
        self.done, self.total, self.parts = done, total, parts
        super().__init__(f"interrupted: {done} of {total} units are written to {parts}; "
                         "rerun the same command with --resume to continue")


# -- the task a worker runs -----------------------------------------------------------------------
class _HardTimeout(Exception):
    pass


def _apply_limits(limits: Limits) -> None:
    """Address-space limit, once per worker process (never in the process that started the run)."""
    if not limits.memory_mb or os.getpid() == limits.parent_pid:
        return
    import resource

    want = limits.memory_mb * 2**20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > want:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def _init_worker(limits: Limits) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _apply_limits(limits)


def _on_alarm(signum, frame):
    raise _HardTimeout()


def audit_task(problem: Problem, options: ExactOptions, prior: np.ndarray | None, limits: Limits) -> dict:
    """Audit one unit and return its findings (``unit_json``); failures become undecided units."""
    _apply_limits(limits)
    start = time.perf_counter()
    alarm = (limits.hard_seconds and os.getpid() != limits.parent_pid
             and hasattr(signal, "SIGALRM") and _main_thread())
    try:
        if alarm:
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, limits.hard_seconds)
        try:
            if problem.n_rows[1] > options.max_rows and _n_candidates(problem, options) > LISTED_MAX:
                return cap_claims(failed_unit(problem, options, "too-large",
                                              f"{problem.n_rows[1]} rows > --max-rows {options.max_rows}", start),
                                  limits.claims_cap)
            return unit_json(audit_unit(problem, options, prior), cap=limits.claims_cap)
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _HardTimeout:
        unit = failed_unit(problem, options, "timeout", f"hard time limit of {limits.hard_seconds:g} s per unit reached", start)
    except MemoryError:
        unit = failed_unit(problem, options, "out-of-memory", f"memory limit of {limits.memory_mb} MB per worker reached", start)
    except Exception as exc:  # noqa: BLE001 -- one unit's failure must not stop the run
        unit = failed_unit(problem, options, "error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", start)
    return cap_claims(unit, limits.claims_cap)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _n_candidates(problem: Problem, options: ExactOptions) -> int:
    truth = problem.truth
    if truth is None or not len(truth):
        return 0
    top = truth.shape[1] if options.max_columns is None else min(options.max_columns, truth.shape[1])
    return sum(len(np.unique(truth[:, cols], axis=0))
               for k in range(1, top + 1) for cols in itertools.combinations(range(truth.shape[1]), k))


def failed_unit(problem: Problem, options: ExactOptions, status: str, reason: str, start: float | None = None) -> dict:
    """A unit the attack could not finish: every true claim undecided (listed if not too many)."""
    result = UnitResult(problem, status=status, reason=reason)
    n = _n_candidates(problem, options) if problem.truth is not None else 0
    listed = n <= LISTED_MAX and problem.truth is not None
    if listed:
        result.verdicts = [Verdict(c, UNDECIDED, reason=reason) for c in candidates(problem.truth, options.max_columns)]
    result.seconds = time.perf_counter() - start if start is not None else 0.0
    unit = unit_json(result)
    if not listed:
        unit["summary"]["undecided"] = n
        unit["claims_omitted"] = n
    return unit


# -- parts on disk ----------------------------------------------------------------------------------
def unit_key(unit: dict) -> tuple[str, str]:
    return unit["level"], unit["geo"]


def read_parts(parts: Path) -> Iterator[dict]:
    """Every complete unit line in the part files (a partly written line is skipped)."""
    for path in sorted(parts.glob("part-*.jsonl")):
        with path.open("r", encoding="utf-8") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    continue  # cut off mid-write: that unit is redone
                try:
                    unit = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(unit, dict) and "geo" in unit and "level" in unit:
                    yield unit


def _fingerprint(source, schema: Schema, schedule: Schedule, options: ExactOptions, coupled: bool) -> dict:
    def digest(path: str) -> str | None:
        p = Path(path)
        return hashlib.sha256(p.read_bytes()).hexdigest()[:16] if p.is_file() else None

    if isinstance(source, pd.DataFrame):
        data = {"frame_rows": len(source)}
    else:
        st = Path(source).stat()
        data = {"path": str(Path(source).resolve()), "bytes": st.st_size, "mtime": int(st.st_mtime)}
    return {"data": data, "schema": digest(schema.source), "tables": digest(schedule.source),
            "options": asdict(options), "coupled": coupled}


class _PartWriter:
    """Appends one JSON line per finished unit to a fresh part file of this run (never to an old one)."""

    def __init__(self, parts: Path):
        parts.mkdir(parents=True, exist_ok=True)
        n = len(list(parts.glob("part-*.jsonl")))
        self.path = parts / f"part-{n:05d}.jsonl"
        self.fh = self.path.open("a", encoding="utf-8")
        self.synced = time.monotonic()

    def write(self, unit: dict) -> None:
        self.fh.write(json.dumps(unit, separators=(",", ":")) + "\n")
        self.fh.flush()
        if time.monotonic() - self.synced > 5:
            os.fsync(self.fh.fileno())
            self.synced = time.monotonic()

    def close(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()


# -- producing tasks from the stream ------------------------------------------------------------------
def _tasks(source, schema: Schema, schedule: Schedule, scale: ScaleOptions, done: set, stats: dict
           ) -> Iterator[tuple[Problem, np.ndarray | None, dict | None]]:
    """(problem, prior rows, published-cells summary) for every unit not yet done, chunk by chunk."""
    coupled = coupled_levels(schema, schedule) if scale.coupled else []
    finest = [lv for lv in schedule.levels if lv not in coupled]
    finest_cols = list(schema.geography[: max(schema.geography.index(lv) for lv in finest) + 1]) if finest else []
    for chunk in stream_chunks(source, schema, schedule, scale.chunk_rows):
        stats["rows"] += len(chunk)
        light = Inputs(schema, schedule, chunk)
        cache: dict = {}
        # Problems are built PIECE_UNITS units at a time, so that the first ones go out at once and
        # memory holds a few dozen problems, not a chunk's worth (prior rows still come from the chunk).
        pieces = []
        if finest_cols and len(chunk):
            keys = _keys(chunk, finest_cols)
            starts = np.concatenate([[0], np.flatnonzero(keys[1:] != keys[:-1]) + 1, [len(chunk)]])
            pieces = [chunk.iloc[starts[i]: starts[min(i + PIECE_UNITS, len(starts) - 1)]].reset_index(drop=True)
                      for i in range(0, len(starts) - 1, PIECE_UNITS)]
        for piece in pieces:
            releases = tabulate(piece, schema, schedule)
            todo = [r for r in releases if r.level in finest and (r.level, "/".join(r.geo)) not in done]
            by_unit = {(r.level, r.geo): r for r in todo}
            for problem in (build_problems(piece, schema, schedule, todo) if todo else []):
                release = by_unit.get((problem.level, problem.geo))
                yield (problem, prior_rows(chunk, light, problem, cache),
                       cells_json(release) if release is not None else None)
        if coupled:
            releases = tabulate(chunk, schema, schedule)
            parents = [r for r in releases if r.level in coupled and (r.level, "/".join(r.geo)) not in done]
            if parents:
                children = [r for r in releases if r.level not in coupled]
                by_unit = {(r.level, r.geo): r for r in parents}
                for problem in build_coupled_problems(chunk, schema, schedule, parents + children, coupled):
                    release = by_unit.get((problem.level, problem.geo))
                    yield problem, None, (cells_json(release) if release is not None else None)


# -- running ------------------------------------------------------------------------------------------
def run_scaled(source, schema: Schema, schedule: Schedule, options: ExactOptions, scale: ScaleOptions,
               out: Path, data_path: str | None = None,
               on_unit: Callable[[dict, int, int], None] | None = None,
               on_total: Callable[[int, int], None] | None = None, rules=None) -> dict:
    """Audit every unit (streamed), write parts as units finish, merge into the findings document.

    ``on_total(total, already_done)`` is called once the units are counted; ``on_unit(unit, done,
    total)`` after each unit is written. Raises :class:`Interrupted` on Ctrl-C (parts intact).
    """
    start = time.perf_counter()
    options = with_attacker(options, schema)
    out = Path(out)
    parts = out / "parts"
    manifest = parts / "run.json"
    coupled = bool(scale.coupled and coupled_levels(schema, schedule))
    print_ = _fingerprint(source, schema, schedule, options, coupled)
    if scale.resume and manifest.exists():
        old = json.loads(manifest.read_text(encoding="utf-8"))
        if old != json.loads(json.dumps(print_)):
            changed = [k for k in print_ if json.loads(json.dumps(print_[k])) != old.get(k)]
            raise AuditError(f"cannot resume: the {', '.join(changed)} differ from the interrupted run's",
                             str(manifest), "rerun with the same inputs and options, or without --resume")
    elif parts.exists():
        for p in parts.glob("part-*.jsonl"):
            p.unlink()
    parts.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(print_, indent=1, default=str), encoding="utf-8")
    done = {unit_key(u) for u in read_parts(parts)} if scale.resume else set()
    counts = count_units(source, schema, schedule)
    total = sum(counts.values())
    already = len(done)
    if on_total:
        on_total(total, already)
    stats = {"rows": 0}
    tasks = _tasks(source, schema, schedule, scale, done, stats)
    cap = scale.claims_cap if scale.claims_cap is not None else (None if total <= AUTO_CAP_UNITS else DEFAULT_CAP)
    limits = Limits(scale.memory_mb, scale.hard_seconds or 2 * options.unit_seconds + options.explain_seconds + 60,
                    os.getpid(), cap)
    writer = _PartWriter(parts)
    finished = already

    def record(unit: dict, cells: dict | None) -> None:
        nonlocal finished
        if cells is not None:
            unit["cells"] = cells
        writer.write(unit)
        finished += 1
        if on_unit:
            on_unit(unit, finished, total)

    try:
        if scale.scheduler is not None:
            _run_dask(tasks, options, limits, scale, record)
        elif scale.workers == 1 and not scale.memory_mb:
            task = scale.task or audit_task
            for problem, prior, cells in tasks:
                record(task(problem, options, prior, limits), cells)
        else:
            _run_pool(tasks, options, limits, scale, record)
    except KeyboardInterrupt:
        writer.close()
        raise Interrupted(finished, total, parts) from None
    writer.close()
    return merge(parts, schema, schedule, options, scale, data_path or _name(source), stats["rows"],
                 time.perf_counter() - start, rules)


def _name(source) -> str:
    return "<data>" if isinstance(source, pd.DataFrame) else str(source)


def _run_pool(tasks, options: ExactOptions, limits: Limits, scale: ScaleOptions, record) -> None:
    """A local process pool with a bounded number of units in flight (memory flat in the number of units)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    task = scale.task or audit_task
    workers = scale.workers

    def new_pool(n: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker, initargs=(limits,))

    pool = new_pool(workers)
    flight: dict = {}
    suspects: list = []
    it = iter(tasks)
    exhausted = False
    try:
        while True:
            while not exhausted and len(flight) < 2 * workers:
                item = next(it, None)
                if item is None:
                    exhausted = True
                    break
                flight[pool.submit(task, item[0], options, item[1], limits)] = item
            if not flight:
                break
            ready, _ = wait(list(flight), return_when=FIRST_COMPLETED)
            broken = False
            for fut in ready:
                item = flight.pop(fut)
                try:
                    record(fut.result(), item[2])
                except BrokenProcessPool:
                    suspects.append(item)
                    broken = True
            if broken:  # a worker died: every unit in flight is suspect; rerun each alone to find the one
                suspects += list(flight.values())
                flight.clear()
                _kill(pool)
                for problem, prior, cells in suspects:
                    record(_isolated(new_pool, task, problem, options, prior, limits), cells)
                suspects = []
                pool = new_pool(workers)
    except KeyboardInterrupt:
        _kill(pool)
        raise
    pool.shutdown(wait=True)


def _isolated(new_pool, task, problem: Problem, options: ExactOptions, prior, limits: Limits) -> dict:
    solo = new_pool(1)
    try:
        return solo.submit(task, problem, options, prior, limits).result()
    except BrokenProcessPool:
        return failed_unit(problem, options, "error",
                           "the worker process died on this unit (killed for memory, or a crash in the solver)")
    finally:
        _kill(solo)


def _kill(pool: ProcessPoolExecutor) -> None:
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)


def _run_dask(tasks, options: ExactOptions, limits: Limits, scale: ScaleOptions, record) -> None:
    """The same task on a Dask distributed cluster; a unit whose task fails is reported as an error."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise OptionalDependencyMissing("dask[distributed]", "cluster") from None
    task = scale.task or audit_task
    own = not isinstance(scale.scheduler, Client)
    client = Client(scale.scheduler) if own else scale.scheduler
    try:
        workers = max(1, sum(client.nthreads().values()))
        flight: dict = {}
        queue = as_completed()
        it = iter(tasks)
        exhausted = False

        def top_up() -> None:
            nonlocal exhausted
            while not exhausted and len(flight) < 2 * workers:
                item = next(it, None)
                if item is None:
                    exhausted = True
                    return
                fut = client.submit(task, item[0], options, item[1], limits, pure=False)
                flight[fut.key] = item
                queue.add(fut)

        top_up()
        for fut in queue:
            problem, prior, cells = flight.pop(fut.key)
            try:
                unit = fut.result()
            except Exception as exc:  # noqa: BLE001 -- e.g. KilledWorker: the unit is an error, the run goes on
                unit = failed_unit(problem, options, "error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            fut.release()
            record(unit, cells)
            top_up()
    except KeyboardInterrupt:
        client.cancel([f for f in list(queue.futures)]) if "queue" in locals() else None
        raise
    finally:
        if own:
            client.close()


# -- merge ----------------------------------------------------------------------------------------------
def cap_claims(unit: dict, cap: int | None) -> dict:
    """The unit with at most ``cap`` claims listed (most telling first) and the number omitted."""
    claims = unit.get("claims", [])
    if cap is None or len(claims) <= cap:
        return unit
    rank = [claim_rank(c["status"], bool(c.get("direct")), c["m"], len(c["columns"])) for c in claims]
    kept = [claims[i] for i in sorted(range(len(claims)), key=lambda i: (rank[i], i))[:cap]]
    return {**unit, "claims": kept, "claims_omitted": unit.get("claims_omitted", 0) + len(claims) - len(kept)}


_SIZE_BINS = [(1, 1), (2, 2), (3, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, 199), (200, None)]


def _quantiles(values: list[float]) -> dict:
    if not values:
        return {}
    a = np.asarray(values, dtype=float)
    return {"p50": round(float(np.quantile(a, .5)), 3), "p90": round(float(np.quantile(a, .9)), 3),
            "p99": round(float(np.quantile(a, .99)), 3), "max": round(float(a.max()), 3),
            "mean": round(float(a.mean()), 3), "sum": round(float(a.sum()), 3)}


def merge(parts: Path, schema: Schema, schedule: Schedule, options: ExactOptions, scale: ScaleOptions,
          data_path: str, rows: int, seconds: float, rules=None) -> dict:
    """Read the parts back (last line per unit wins), cap claims, and build the findings document."""
    n = len({unit_key(u) for u in read_parts(parts)})  # first pass: keys only
    cap = scale.claims_cap if scale.claims_cap is not None else (None if n <= AUTO_CAP_UNITS else DEFAULT_CAP)
    latest: dict = {}
    for unit in read_parts(parts):  # second pass: only capped units are held
        latest[unit_key(unit)] = cap_claims(unit, cap)
    order = {lv: i for i, lv in enumerate(schedule.levels)}
    units = [latest[k] for k in sorted(latest, key=lambda k: (order.get(k[0], 99), k[1].split("/")))]
    latest.clear()
    doc = document(Inputs(schema, schedule, pd.DataFrame(), data_path), options, units, seconds, rules)
    doc.setdefault("inputs", {})["rows"] = int(rows)
    doc["scale"] = summarise(units, cap, parts)
    return doc


def summarise(units: list[dict], cap: int | None, parts: Path, worst: int = 20) -> dict:
    """Distributions and worst units: what a reader of a large run needs instead of every claim."""
    by_status: dict[str, int] = {}
    for u in units:
        by_status[u["status"]] = by_status.get(u["status"], 0) + 1
    sizes = []
    for lo, hi in _SIZE_BINS:
        inside = [u for u in units if u["rows"] >= lo and (hi is None or u["rows"] <= hi)]
        if inside:
            sizes.append({"rows": f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}"),
                          "units": len(inside), "reconstructed": sum(u["reconstructed"] for u in inside),
                          "with_derived_singletons": sum(u["summary"]["derived_singletons"] > 0 for u in inside),
                          "undecided_units": sum(u["summary"]["undecided"] > 0 for u in inside)})
    ranked = sorted(units, key=lambda u: (-u["summary"]["derived_singletons"], -u["summary"]["full_records"], u["geo"]))
    return {
        "units_by_status": by_status,
        "by_size": sizes,
        "seconds_per_unit": _quantiles([u["seconds"] for u in units]),
        "derived_singletons_per_unit": _quantiles([u["summary"]["derived_singletons"] for u in units]),
        "worst_units": [{"geo": u["geo"], "level": u["level"], "rows": u["rows"],
                         "derived_singletons": u["summary"]["derived_singletons"],
                         "full_records": u["summary"]["full_records"], "reconstructed": u["reconstructed"],
                         "status": u["status"]} for u in ranked[:worst]],
        "not_finished": [{"geo": u["geo"], "level": u["level"], "status": u["status"], "reason": u["reason"]}
                         for u in units if u["status"] not in ("done",)][:100],
        "claims_cap": cap,
        "claims_omitted": sum(u.get("claims_omitted", 0) for u in units),
        "parts": str(parts),
    }


# -- the command line's entry ---------------------------------------------------------------------------
def run_cli(data: Path, schema: Path | None, tables: Path, options: ExactOptions, scale: ScaleOptions, out: Path,
            rules=None, infer_schema: bool = False, geography: str | None = None, quiet: bool = False,
            on_unit: Callable[[dict], None] | None = None) -> dict:
    """``audit run`` at scale: stream ``data``, show units done / total, rate and ETA (unless quiet)."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    from rich.text import Text

    from .schedule import load_schedule
    from .schema import load_schema

    if infer_schema and schema is None:  # inference needs the whole frame; stream from memory
        from .commands import inputs_from

        inputs = inputs_from(data, None, tables, True, geography)
        the_schema, schedule, source = inputs.schema, inputs.schedule, inputs.frame
    else:
        if schema is None:
            raise AuditError("no schema given", "--schema", fix="pass --schema FILE (or --infer-schema --geography COLS)")
        the_schema = load_schema(schema)
        schedule, source = load_schedule(tables, the_schema), data

    class Rate(ProgressColumn):
        def render(self, task) -> Text:
            return Text(f"{task.speed:.2f} units/s" if task.speed else "- units/s")

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), Rate(),
                  TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), disable=quiet, transient=True) as bar:
        task = bar.add_task("units", total=None)

        def total(n: int, already: int) -> None:
            bar.reset(task, total=n, completed=already)

        def tick(unit: dict, done: int, n: int) -> None:
            bar.update(task, completed=done, description=printable(f"unit {unit['geo']}"))
            if on_unit:
                on_unit(unit)

        return run_scaled(source, the_schema, schedule, options, scale, out, str(data), tick, total, rules)
