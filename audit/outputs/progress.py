"""Progress of a long command: units done / total, rate and ETA on stderr.

On a terminal a live bar (rich); otherwise (CI logs, a pipe) a plain line every few seconds while
the work runs, and one when it ends (none before: a run that stops on an input error prints only
the error).
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from .terminal import printable

EVERY = 5.0  # seconds between plain lines


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """A context manager: :meth:`total` once the work is counted, :meth:`update` as units finish.

    Parameters
    ----------
    label : str
        What is counted, e.g. ``"units"`` or ``"protect: units"`` (shown escaped, as data may name units).
    quiet : bool
        Show nothing.
    stream : file, optional
        Where to write (default: stderr); a terminal gets a live bar, anything else plain lines.
    every : float
        Seconds between plain lines.
    """

    def __init__(self, label: str = "units", quiet: bool = False, stream: TextIO | None = None, every: float = EVERY):
        self.label, self.quiet, self.every = label, quiet, every
        self.stream = stream if stream is not None else sys.stderr
        self.live = not quiet and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.n, self.done, self.first = None, 0, 0
        self.started = self.last = time.monotonic()
        self._bar = self._task = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> "Progress":
        if self.live:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"),
                            TimeRemainingColumn(), console=Console(file=self.stream), transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=None, rate="")
        return self

    def total(self, n: int, done: int = 0) -> None:
        """The work is counted: ``n`` units, ``done`` of them finished before (a resumed run)."""
        self.n, self.done, self.first = n, done, done
        self.started = self.last = time.monotonic()
        if self._bar is not None:
            self._bar.reset(self._task, total=n, completed=done)
        elif not self.quiet:
            if self._ticker is None:  # a line every few seconds, even while one unit takes long
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.every / 5):
            if time.monotonic() - self.last >= self.every:
                self._line()

    def update(self, done: int | None = None, note: str = "") -> None:
        """``done`` units finished (default: one more); ``note`` names the last one."""
        self.done = self.done + 1 if done is None else done
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, rate=self._rate(),
                             description=printable(f"{self.label} {note}".strip()))

    def _rate(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = (self.done - self.first) / elapsed if elapsed > 0 else 0.0
        return f"{rate:.2f} units/s" if rate else "- units/s"

    def _line(self, end: bool = False) -> None:
        with self._lock:
            self.last = time.monotonic()
            elapsed = self.last - self.started
            rate = (self.done - self.first) / elapsed if elapsed > 0 else 0.0
            text = f"{self.label}: {self.done}" + (f"/{self.n} ({self.done / self.n:.0%})" if self.n else "")
            if end:
                text += f" in {_duration(elapsed)}"
            else:
                text += f", {_duration(elapsed)} elapsed" if elapsed >= 1 else ""
                if self.done > self.first:
                    text += f", {rate:.2f} units/s"
                    if self.n and rate > 0:
                        text += f", ETA {_duration((self.n - self.done) / rate)}"
            print(printable(text), file=self.stream, flush=True)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._bar is not None:
            self._bar.__exit__(*exc)
        elif not self.quiet and self.n is not None and exc[0] is None:
            self._line(end=True)
