"""What a worker process does with one unit: the exact attack under hard time and memory limits.

The alarm and ``RLIMIT_AS`` are set in the worker (they cannot be imposed on the process that holds
the run); a worker dies with the process that started it. A unit past a bound, or whose worker
failed, becomes a unit whose every candidate claim is *undecided* -- never safe -- with its reason.
"""
from __future__ import annotations

import gc
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..attacks import pulse
from ..attacks.exact import ExactOptions, audit_unit, unfinished
from ..errors import AuditError, InternalError, described
from ..findings.document import listing_cap, unit_json
from ..problem.build import Problem


# A unit allocates hundreds of thousands of claims and verdicts that live until its findings are
# written: at the default threshold (700) the collector traversed them over and over, 13-19% of the
# CPU of every 20th block of the Census extract in one process. Its cyclic garbage (an engine and
# its solver) still goes within about a unit's allocations.
GC_THRESHOLD = 100_000


@contextmanager
def fewer_collections():
    """Cyclic garbage collection every :data:`GC_THRESHOLD` allocations, as in the workers, while the parent
    builds and sends the units and merges their results (a quarter of its CPU went to collections); restored after."""
    old = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


@dataclass(frozen=True)
class Limits:
    """Bounds enforced in the worker, on top of the exact attack's own."""

    memory_mb: int | None = None
    hard_seconds: float | None = None
    parent_pid: int = 0
    claims_cap: int | None = None  # claims of each kind listed per unit (all are counted and stored); None: LISTED
    header: tuple[str, ...] = ()  # the claim store's columns
    input_errors: bool = False  # raise the user's input errors (an inconsistent release) instead of an error unit



# -- the task a worker runs -----------------------------------------------------------------------
# The hard limit counts the worker's CPU time where the OS keeps it (SIGPROF), so that a loaded machine does
# not turn a unit's verdict into a timeout; wall-clock time (SIGALRM) elsewhere.
ALARM = ((signal.SIGPROF, signal.ITIMER_PROF) if hasattr(signal, "SIGPROF") else
         (getattr(signal, "SIGALRM", None), getattr(signal, "ITIMER_REAL", None)))


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


def init_worker(limits: Limits) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _die_with_parent(limits.parent_pid)
    _apply_limits(limits)
    if limits.parent_pid and limits.parent_pid != os.getpid():
        pulse.to_parent(limits.parent_pid)  # the parent's progress display shows where a long unit is
    gc.freeze()  # the modules just imported are never garbage: no collection need traverse them
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


def _die_with_parent(parent: int) -> None:
    """End this worker when the process that started the run ends, even by SIGKILL: the kernel's
    parent-death signal on Linux, and everywhere a thread that watches the parent's pid."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if parent and os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="watch-parent").start()


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def _on_alarm(signum, frame):
    raise _HardTimeout()


def audit_task(problem: Problem, options: ExactOptions, prior: np.ndarray | None, limits: Limits) -> dict:
    """Audit one unit and return its findings (``unit_json``); failures become undecided units."""
    _apply_limits(limits)
    start = time.perf_counter()
    alarm = (limits.hard_seconds and os.getpid() != limits.parent_pid
             and hasattr(signal, "setitimer") and _main_thread())
    try:
        if alarm:
            signal.signal(ALARM[0], _on_alarm)
            signal.setitimer(ALARM[1], limits.hard_seconds)
        try:
            prior = None if prior is None else prior.astype(np.int64, copy=False)  # sent compact (compact_atoms)
            return unit_json(audit_unit(problem, options, prior), None, _cap(limits), limits.header or None,
                             options.max_columns)
        finally:
            if alarm:
                signal.setitimer(ALARM[1], 0)
    except AuditError as exc:
        if limits.input_errors:
            raise
        unit = error_unit(problem, options, exc, start)
    except _HardTimeout:
        return failed_unit(problem, options, "timeout", f"hard limit of {limits.hard_seconds:g} s{' of CPU' if ALARM[0] == getattr(signal, 'SIGPROF', 0) else ''} "
                           "per unit reached",
                           start, limits)
    except MemoryError:
        return failed_unit(problem, options, "out-of-memory", f"memory limit of {limits.memory_mb} MB per worker reached",
                           start, limits)
    except InternalError:  # a bug: stops the run, never a unit's result
        raise
    except Exception as exc:  # noqa: BLE001 -- one unit's failure must not stop the run
        unit = error_unit(problem, options, exc, start, limits)
    return unit


def error_unit(problem: Problem, options: ExactOptions, exc: BaseException, start: float | None = None,
                limits: Limits | None = None) -> dict:
    """A unit whose task raised: status error, the exception's first line as the reason."""
    return failed_unit(problem, options, "error", described(exc), start, limits)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def failed_unit(problem: Problem, options: ExactOptions, status: str, reason: str, start: float | None = None,
                limits: Limits | None = None) -> dict:
    """A unit the attack could not finish: every true claim undecided (listed and stored if not too many)."""
    limits = limits or Limits()
    return unit_json(unfinished(problem, options, status, reason, start), None, _cap(limits), limits.header or None,
                     options.max_columns)


def _cap(limits: Limits) -> int:
    return listing_cap(0, limits.claims_cap)


