"""Progress inside one unit: the attack loop says how far it is, a progress display reads it.

In the process that shows progress a note is kept in memory. A worker process (``audit.scale.worker``)
writes its note to a small file of its own, in a folder named for the pid of the process that started
it, which the display reads: a 2-minute unit then shows its claims being decided, not a frozen bar.
Notes are at most every :data:`EVERY` seconds, so the attack loop pays nothing measurable for them.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

EVERY = 0.5  # seconds between two notes of one process (a phase change is noted at once)
DECIDED_SHARE = 0.8  # of a unit's work, deciding its claims (explaining, intervals after)


@dataclass(frozen=True)
class Note:
    """Where one unit's attack is: ``done`` of ``total`` claims decided (or rounds) in ``phase``."""

    unit: str
    phase: str
    done: int = 0
    total: int = 0
    during: str = ""  # the larger step the attack is part of ("protect round 3")

    def __post_init__(self):
        if self.done < 0 or self.total < 0:
            raise ValueError(f"negative progress {self.done}/{self.total}")

    def text(self) -> str:
        counted = f"{self.done:,}/{self.total:,} claims decided, " if self.total else ""
        return f"unit {self.unit}{', ' + self.during if self.during else ''}: {counted}{self.phase}"

    def fraction(self) -> float:
        """The part of the unit's work done, for an ETA: its claims decided, at most :data:`DECIDED_SHARE`
        (explanations and intervals come after the last claim)."""
        return min(self.done / self.total, 1.0) * DECIDED_SHARE if self.total else 0.0


_mine: dict[str, Note] = {}  # this process's note (key: "", one unit at a time)
_file: list[Path] = []  # in a worker: the file its notes go to
_last = [0.0, ""]  # when this process last noted, and in which phase
_during = ["", ""]  # the larger step this process is in, and its unit (see :func:`during`)


def folder(parent_pid: int) -> Path:
    """Where the workers of process ``parent_pid`` write their notes."""
    return Path(tempfile.gettempdir()) / f"audit-pulse-{parent_pid}"


def to_parent(parent_pid: int) -> None:
    """In a worker process: write notes for ``parent_pid``'s display (one file per worker)."""
    _file[:] = [folder(parent_pid) / f"{os.getpid()}.txt"]


def during(step: str, unit: str = "") -> None:
    """The attacks noted from now on are part of ``step`` of ``unit`` (e.g. ``"protect round 3"``; ``""``: none),
    shown between them too."""
    _during[:] = [step, unit]


def note(unit: str, phase: str, done: int = 0, total: int = 0) -> None:
    """The attack of ``unit`` is in ``phase``, ``done`` of ``total`` claims decided (throttled)."""
    now = time.monotonic()
    if phase == _last[1] and now - _last[0] < EVERY:
        return
    _last[:] = [now, phase]
    mark = Note(unit, phase, max(done, 0), max(total, 0), _during[0])
    if not _file:
        _mine[""] = mark
        return
    try:
        _file[0].parent.mkdir(exist_ok=True)
        tmp = _file[0].with_suffix(".tmp")
        tmp.write_text(f"{mark.done}\t{mark.total}\t{mark.phase}\t{mark.during}\t{mark.unit}", encoding="utf-8")
        os.replace(tmp, _file[0])
    except OSError:  # a display aid: never a reason to fail a unit
        pass


def done() -> None:
    """The unit ended: nothing of it is shown any more."""
    _last[:] = [0.0, ""]
    _mine.clear()
    if _file:
        try:
            _file[0].unlink()
        except OSError:
            pass


def notes(parent_pid: int | None = None) -> list[Note]:
    """The units now being attacked: this process's and its workers' (``parent_pid``: default this process)."""
    found = list(_mine.values()) or ([Note(_during[1], "choosing cells to hide", 0, 0, _during[0])] if _during[0] else [])
    where = folder(os.getpid() if parent_pid is None else parent_pid)
    for path in sorted(where.glob("*.txt")) if where.is_dir() else ():
        try:
            n, total, phase, step, unit = path.read_text(encoding="utf-8").split("\t", 4)
            found.append(Note(unit, phase, int(n), int(total), step))
        except (OSError, ValueError):  # written as we read, or gone: the next look sees it
            continue
    return found


def forget(parent_pid: int | None = None) -> None:
    """Remove this process's note and those of ``parent_pid``'s workers (the run ended)."""
    _mine.clear()
    sweep(os.getpid() if parent_pid is None else parent_pid)


def sweep(parent_pid: int) -> None:
    """Remove the folder of ``parent_pid``'s workers' notes (their pool ended, shown or not)."""
    shutil.rmtree(folder(parent_pid), ignore_errors=True)
