"""The pools that run units: a bounded local process pool (a worker that dies or hangs is found and its units
rerun alone) and a Dask distributed cluster."""
from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from ..attacks import pulse
from ..attacks.exact import ExactOptions
from ..errors import InternalError, OptionalDependencyMissing, described
from ..problem.build import Problem
from .worker import Limits, audit_task, failed_unit, init_worker

if TYPE_CHECKING:
    from .runner import ScaleOptions

HARD_GRACE = 30.0  # seconds past the hard limit before the parent kills a worker that has not answered


def new_pool(n: int, limits: Limits) -> ProcessPoolExecutor:
    import multiprocessing

    return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=init_worker,
                               initargs=(limits,))


def run_pool(tasks, options: ExactOptions, limits: Limits, scale: ScaleOptions, record,
              pool: ProcessPoolExecutor | None = None) -> None:
    """A local process pool with a bounded number of units in flight (memory flat in the number of units).

    A worker that dies, or that has not answered ``HARD_GRACE`` seconds after the hard limit (stuck
    in the solver's C code, where the alarm cannot reach it), takes the pool down; every unit then in
    flight is rerun alone to find the one to blame.
    """
    task, failed = scale.task or audit_task, scale.failed or failed_unit
    workers = scale.workers
    stuck_after = (limits.hard_seconds or float("inf")) + HARD_GRACE

    def fresh(n: int) -> ProcessPoolExecutor:
        return new_pool(n, limits)

    pool = pool or fresh(workers)
    flight: dict = {}
    running: dict = {}  # future -> when it was first seen running
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
            ready, _ = wait(list(flight), timeout=min(5.0, stuck_after), return_when=FIRST_COMPLETED)
            now = time.monotonic()
            suspects = []
            for fut in ready:
                item = flight.pop(fut)
                running.pop(fut, None)
                try:
                    unit = fut.result()
                except BrokenProcessPool:
                    suspects.append(item)
                    continue
                record(unit, item[2])
            for fut in flight:
                if fut.running():
                    running.setdefault(fut, now)
            patience = loaded(stuck_after)
            stuck = any(now - t > patience for t in running.values())
            if suspects or stuck:  # a worker died or hangs: rerun every unit in flight alone
                suspects += list(flight.values())
                flight.clear()
                running.clear()
                kill(pool)
                for problem, prior, extra in suspects:
                    record(_isolated(fresh, task, failed, problem, options, prior, limits, stuck_after), extra)
                pool = fresh(workers)
        pool.shutdown(wait=True)
    except BaseException:  # Ctrl-C, or an input error raised by a task: no worker outlives the run
        kill(pool)
        raise
    finally:  # the workers' notes folder, left when no progress display removes it
        pulse.sweep(limits.parent_pid)


def _isolated(fresh, task, failed, problem: Problem, options: ExactOptions, prior, limits: Limits,
              stuck_after: float) -> dict:
    solo = fresh(1)
    try:
        return solo.submit(task, problem, options, prior, limits).result(timeout=loaded(stuck_after))
    except BrokenProcessPool:
        return failed(problem, options, "error",
                      "the worker process died on this unit (killed for memory, or a crash in the solver)",
                      limits=limits)
    except FutureTimeout:
        return failed(problem, options, "timeout", f"hard time limit of {limits.hard_seconds:g} s per unit "
                      "reached (the worker did not answer and was killed)", limits=limits)
    finally:
        kill(solo)


def loaded(seconds: float) -> float:
    """``seconds`` of a worker's CPU as wall-clock time on this machine now: stretched by the load per core (a
    worker on a machine loaded four times over gets about a quarter of a core), never shortened."""
    try:
        per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):  # no load average on this platform
        per_core = 1.0
    return seconds * max(1.0, per_core)


def kill(pool: ProcessPoolExecutor) -> None:
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(timeout=5)


def run_dask(tasks, options: ExactOptions, limits: Limits, scale: ScaleOptions, record) -> None:
    """The same task on a Dask distributed cluster; a unit whose task fails is reported as an error."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise OptionalDependencyMissing("dask[distributed]", "cluster") from None
    task, failed = scale.task or audit_task, scale.failed or failed_unit
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
            except InternalError:
                raise
            except Exception as exc:  # noqa: BLE001 -- e.g. KilledWorker: the unit is an error, the run goes on
                unit = failed(problem, options, "error", described(exc), limits=limits)
            fut.release()
            record(unit, cells)
            top_up()
    except KeyboardInterrupt:
        client.cancel([f for f in list(queue.futures)]) if "queue" in locals() else None
        raise
    finally:
        if own:
            client.close()
