"""Where the latest line of each unit of a run's parts is, in findings order, indexed on disk (SQLite) so that
the merge holds no per-unit state in memory: the parent's memory stays flat in the number of units."""
from __future__ import annotations

import heapq
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Iterator

from ..findings.cells import grid_rank
from ..specs.schedule import Schedule

SEPARATOR = b"\x00"  # below every byte of a geography code: the blobs sort as the codes' lists do


class PartIndex:
    """(level, geo) -> (part file, offset) of the unit's latest line, its :func:`~audit.findings.cells.grid_rank`
    figures, and the units in :func:`~audit.findings.document.unit_order` (by the schedule's levels, then by
    geography codes), in a temporary SQLite file in ``folder`` (removed on :meth:`close`)."""

    def __init__(self, folder: Path, schedule: Schedule):
        fd, name = tempfile.mkstemp(prefix=".index-", suffix=".sqlite", dir=folder)
        os.close(fd)
        self.path = Path(name)
        self.db = sqlite3.connect(name)
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-4096; PRAGMA temp_store=FILE;"
            "CREATE TABLE unit (lvl INTEGER, geo BLOB, level TEXT, key TEXT, file INTEGER, at INTEGER, "
            "full INTEGER, derived INTEGER, undecided INTEGER, hidden INTEGER, PRIMARY KEY (lvl, geo)) WITHOUT ROWID")
        self.order = {lv: i for i, lv in enumerate(schedule.levels)}
        self.files: dict[Path, int] = {}

    def add(self, path: Path, at: int, unit: dict) -> None:
        """The unit's line at ``at`` in ``path``; a later line of the same unit replaces it (last line wins)."""
        s = unit["summary"]
        self.db.execute("INSERT OR REPLACE INTO unit VALUES (?,?,?,?,?,?,?,?,?,?)", (
            self.order.get(unit["level"], len(self.order)), SEPARATOR.join(c.encode() for c in unit["geo"].split("/")),
            unit["level"], unit["geo"], self.files.setdefault(path, len(self.files)), at, s.get("full_records", 0),
            s.get("derived_singletons", 0), s.get("undecided", 0), (unit.get("cells") or {}).get("suppressed", 0)))

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM unit").fetchone()[0]

    def top(self, cap: int) -> set[tuple[str, str]]:
        """The ``cap`` units of highest :func:`~audit.findings.cells.grid_rank` (unique: it ends with the geography),
        streamed through a heap of ``cap``."""
        rows = self.db.execute("SELECT level, key, full, derived, undecided, hidden FROM unit")
        ranked = ((grid_rank({"geo": geo, "cells": {"suppressed": h}, "summary": {
            "full_records": f, "derived_singletons": d, "undecided": u}}), (level, geo)) for level, geo, f, d, u, h in rows)
        return {key for _, key in heapq.nlargest(cap, ranked, key=lambda r: r[0])}

    def __iter__(self) -> Iterator[tuple[tuple[str, str], Path, int]]:
        """((level, geo), part file, offset) of every unit in findings order."""
        paths = {i: p for p, i in self.files.items()}
        for level, geo, file, at in self.db.execute("SELECT level, key, file, at FROM unit ORDER BY lvl, geo"):
            yield (level, geo), paths[file], at

    def close(self) -> None:
        self.db.close()
        self.path.unlink(missing_ok=True)
