"""Stops: Ctrl-C (SIGINT) and SIGTERM take one path, and no SAT solver is left broken by one.

python-sat, called from the main thread, swaps in its own SIGINT handler around every solver call,
one that longjmps out of the C++ solver: CaDiCaL is left mid-search, and the next call on it (the
``finally`` that retires a claim's guard) aborts the process, "solver in invalid state", exit 134,
before anything is written. :func:`solvers_leave_signals_to_python` stops python-sat doing that: the
signal then only sets Python's flag, and KeyboardInterrupt is raised as the call returns (a call is
bounded by its conflict budget). :func:`stops_as_interrupts` makes SIGTERM raise the same way (a
:class:`Stopped`, which is a KeyboardInterrupt), so whatever keeps the finished units on Ctrl-C
(``OUT/parts``, ``protection.partial.json``, workers killed) keeps them on SIGTERM too.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

STOPS = (signal.SIGINT, signal.SIGTERM)
_last: list[int] = []  # the signals that stopped this process, in order


class Stopped(KeyboardInterrupt):
    """A stop signal (SIGINT or SIGTERM) received in the main thread, as Ctrl-C's KeyboardInterrupt."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _stop(signum, frame) -> None:
    _last.append(signum)
    raise Stopped(signum)


@contextmanager
def stops_as_interrupts() -> Iterator[None]:
    """Within: SIGINT and SIGTERM raise :class:`Stopped` in the main thread (a signal the process was
    started ignoring, as ``nohup`` or a background job ignores SIGINT, stays ignored); handlers restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _last.clear()
    old = {}
    for sig in STOPS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            old[sig] = signal.signal(sig, _stop)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def stopped_by() -> int | None:
    """The first stop signal received within :func:`stops_as_interrupts`, or None."""
    return _last[0] if _last else None


def exit_code() -> int:
    """The exit code of a run a signal stopped: 128 + its number, 130 for Ctrl-C (SIGINT), 143 for SIGTERM."""
    return 128 + int(stopped_by() or signal.SIGINT)


def solvers_leave_signals_to_python() -> None:
    """Make python-sat leave SIGINT to Python's handler around its solver and encoder calls.

    python-sat installs its longjmp handler only for calls it believes come from the main thread,
    asking ``pysat._utils.MainThread.check()`` each time (its solvers and cardinality encoders import
    that one class); answering False for every call keeps the solvers whole. Idempotent.
    """
    from pysat._utils import MainThread

    MainThread.check = staticmethod(_not_main)


def _not_main() -> bool:
    """python-sat's question "is this the main thread?" answered no: install no SIGINT handler."""
    return False
