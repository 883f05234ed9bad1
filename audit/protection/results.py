"""The search's task results on disk as they finish, read back in the tasks' order: ``audit protect`` holds where
each task's line is, not its units' entries, so that its memory stays flat in the number of units."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from ..findings.lines import JsonLines


class Results:
    """Each task's result (:func:`~audit.protection.group.protect_group`) as one JSON line of an anonymous
    temporary file in ``folder``, gone when closed; :meth:`__iter__` reads them in the tasks' order (the
    pattern's order, whatever order the workers finished in), :meth:`finished` in the order they came."""

    def __init__(self, folder: Path | None = None):
        self.fh = tempfile.TemporaryFile(dir=folder)
        self.at: dict[int, tuple[int, int]] = {}  # task index -> (offset, size), in the order they came

    def add(self, index: int, result: dict) -> None:
        line = json.dumps(result, separators=(",", ":")).encode("utf-8")
        start = self.fh.seek(0, os.SEEK_END)
        self.fh.write(line)
        self.at[index] = (start, len(line))  # once written: a Ctrl-C here leaves no half line counted

    def __len__(self) -> int:
        return len(self.at)

    def _read(self, index: int) -> dict:
        start, size = self.at[index]
        self.fh.seek(start)
        return json.loads(self.fh.read(size))

    def __iter__(self) -> Iterator[dict]:
        for index in sorted(self.at):
            yield self._read(index)

    def finished(self) -> Iterator[dict]:
        """The results in the order they came."""
        for index in list(self.at):
            yield self._read(index)

    def close(self) -> None:
        self.fh.close()


def gathered(results: Iterable[dict], folder: Path | None = None) -> dict:
    """One pass over the results in the tasks' order: the units' entries kept on disk (a
    :class:`~audit.findings.lines.JsonLines`), the parent units' entries, and the pattern (``suppress``,
    ``pinned_by_rule``: geo key -> cells, later tasks' keys last) with the ``persons`` in its hidden cells. The
    pattern stays in memory (protected.yaml and the re-audit's schedule are made of it), its cell keys interned:
    the same few hundred keys of the tables, not a string per unit and cell."""
    out: dict = {"levels": [], "suppress": {}, "pinned_by_rule": {}, "persons": 0}

    def units() -> Iterator[dict]:
        for r in results:
            out["levels"].extend(r["levels"])
            out["suppress"].update({k: [sys.intern(c) for c in v] for k, v in r["suppress"].items()})
            out["pinned_by_rule"].update(r["pinned_by_rule"])
            out["persons"] += r["persons"]
            yield from r["units"]

    out["units"] = JsonLines.write(units(), folder)
    return out


def remade(entries, change, folder: Path | None = None):
    """``entries`` with ``change(entry)`` applied to each: a list changed in place, a
    :class:`~audit.findings.lines.JsonLines` written anew (its items are read from disk, never changed there)."""
    if isinstance(entries, JsonLines):
        return JsonLines.write((change(d) for d in entries), folder)
    for d in entries:
        change(d)
    return entries
