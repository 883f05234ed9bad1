"""Progress of a long command: units done / total, rate and ETA on stderr.

On a terminal a live bar (rich); otherwise (CI logs, a pipe) a plain line every few seconds while
the work runs, and one when it ends (none before: a run that stops on an input error prints only
the error). Each unit being attacked is shown with its claims decided and its phase
(:mod:`audit.attacks.pulse`), and, given the units' sizes (candidate claims), the ETA is by claims left,
counting the part of a unit already decided, not by units left: one large unit among small ones
no longer makes it swing.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Mapping, TextIO

from ..attacks import pulse
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
        self.sizes: Mapping = {}  # (level, geo) -> the unit's size, for the ETA
        self.by_geo: dict[str, float] = {}  # geo -> size, for the units being attacked (notes name the geo only)
        self.weight = self.weight_first = 0.0  # sizes of the units done (all, and before this run)
        self.started = self.last = time.monotonic()
        self._bar = self._task = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> "Progress":
        if self.live:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                       TimeElapsedColumn)

            self._bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                            TextColumn("{task.fields[within]}", markup=False), console=Console(file=self.stream),
                            transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=None, rate="", eta="-", within="")
        return self

    def total(self, n: int, done: int = 0, sizes: Mapping | None = None) -> None:
        """The work is counted: ``n`` units, ``done`` of them finished before (a resumed run); ``sizes``:
        each unit's size by (level, geo) (its candidate claims), for an ETA by size."""
        self.n, self.done, self.first = n, done, done
        self.sizes = dict(sizes or {})
        self.by_geo = {}
        for (_, geo), w in self.sizes.items():
            self.by_geo[geo] = max(w, self.by_geo.get(geo, 0.0))
        self.weight = self.weight_first = done * self._mean_size()
        self.started = self.last = time.monotonic()
        if self._bar is not None:
            self._bar.reset(self._task, total=n, completed=done)
        if not self.quiet and self._ticker is None:  # news every few seconds, even while one unit takes long
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.every / 5):
            if self._bar is not None:
                within = pulse.notes()
                left = self.eta(within)
                self._bar.update(self._task, eta="-" if left is None else _duration(left),
                                 within=printable("; ".join(n.text() for n in within[:2])))
            elif time.monotonic() - self.last >= self.every:
                self._line()

    def update(self, done: int | None = None, note: str = "", key: tuple[str, str] | None = None) -> None:
        """``done`` units finished (default: one more); ``note`` names the last one, ``key`` its (level, geo)."""
        self.done = self.done + 1 if done is None else done
        self.weight += self.sizes.get(key, self._mean_size()) if done is None else 0.0
        if done is not None:
            self.weight = self.done * self._mean_size()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, rate=self._rate(),
                             description=printable(f"{self.label} {note}".strip()))

    def _mean_size(self) -> float:
        return sum(self.sizes.values()) / len(self.sizes) if self.sizes else 1.0

    def _rate(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = (self.done - self.first) / elapsed if elapsed > 0 else 0.0
        return f"{rate:.2f} units/s" if rate else "- units/s"

    def eta(self, within: list[pulse.Note] = ()) -> float | None:
        """Seconds left: by units' sizes when they are known (the decided part of the units in ``within``
        counted as done), else by units; None before anything is done."""
        elapsed = time.monotonic() - self.started
        if not self.n or elapsed <= 0:
            return None
        if not self.sizes:
            rate = (self.done - self.first) / elapsed
            return (self.n - self.done) / rate if rate > 0 else None
        partial = sum(n.fraction() * self.by_geo.get(n.unit, self._mean_size()) for n in within)
        worked = self.weight - self.weight_first + partial
        left = max(sum(self.sizes.values()) - self.weight - partial, 0.0)
        return left * elapsed / worked if worked > 0 else None

    def _line(self, end: bool = False) -> None:
        with self._lock:
            self.last = time.monotonic()
            elapsed = self.last - self.started
            rate = (self.done - self.first) / elapsed if elapsed > 0 else 0.0
            text = f"{self.label}: {self.done}" + (f"/{self.n} ({self.done / self.n:.0%})" if self.n else "")
            if end:
                text += f" in {_duration(elapsed)}"
            else:
                within = pulse.notes()
                text += f", {_duration(elapsed)} elapsed" if elapsed >= 1 else ""
                if self.done > self.first:
                    text += f", {rate:.2f} units/s"
                left = self.eta(within)
                if left is not None:
                    text += f", ETA {_duration(left)}" + (" (by claims left)" if self.sizes else "")
                text += "".join(f"; {n.text()}" for n in within[:3])
            print(printable(text), file=self.stream, flush=True)

    def __exit__(self, *exc) -> None:
        pulse.forget()
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._bar is not None:
            self._bar.__exit__(*exc)
        elif not self.quiet and self.n is not None and exc[0] is None:
            self._line(end=True)
