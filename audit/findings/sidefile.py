"""A large run's units and checks beside findings.json, so that the document grows with the riskiest
units, not with all of them: ``findings.units.jsonl.gz`` and ``findings.checks.jsonl.gz``, gzip'd JSON
lines in members of :data:`BATCH` lines, read back one member at a time (:class:`GzipLines`).

findings.json then names the files and where each member starts (``unit_files``), and lists inline
only the :data:`INLINE` riskiest units (most derived singletons, then full records) for people to
read; :func:`audit.findings.files.read_findings` reads every unit and check from the side files.
"""
from __future__ import annotations

import gzip
import heapq
import json
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from ..errors import AuditError
from .lines import JsonLines

SIDE_UNITS = 10_000  # a document of more units than this keeps its units and checks in side files
INLINE = 100  # units findings.json still lists inline then (the riskiest)
BATCH = 256  # lines per gzip member: a unit read by index decompresses one member
KINDS = ("units", "checks")


def side_name(findings: Path, kind: str) -> str:
    """The side file of ``kind`` (units, checks) beside ``findings``: ``<stem>.<kind>.jsonl.gz``."""
    return f"{Path(findings).stem}.{kind}.jsonl.gz"


def risk_key(unit: Mapping) -> tuple:
    """Riskiest first: most derived singletons, then most persons in full records, then by geography."""
    s = unit["summary"]
    return -s["derived_singletons"], -s["full_records"], unit["level"], unit["geo"]


def write_lines(items: Iterable[Mapping], path: Path, on_item: Callable[[Mapping], None] | None = None) -> dict:
    """``items`` as gzip'd JSON lines, :data:`BATCH` per member; their record in ``unit_files``."""
    offsets, count, batch = [0], 0, []
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        def flush() -> None:
            fh.write(gzip.compress(b"".join(batch), compresslevel=6, mtime=0))
            offsets.append(fh.tell())
            batch.clear()

        for item in items:
            if on_item is not None:
                on_item(item)
            batch.append(json.dumps(item, separators=(",", ":")).encode("utf-8") + b"\n")
            count += 1
            if len(batch) == BATCH:
                flush()
        if batch:
            flush()
    tmp.replace(path)
    return {"file": path.name, "count": count, "batch": BATCH, "offsets": offsets}


def write_side(doc: Mapping, findings: Path) -> tuple[dict, list]:
    """Write ``doc``'s units and checks beside ``findings``; (their ``unit_files`` record, the
    :data:`INLINE` riskiest units)."""
    heap: list = []

    def keep(unit: Mapping) -> None:
        heapq.heappush(heap, (_Desc(risk_key(unit)), unit))
        if len(heap) > INLINE:
            heapq.heappop(heap)

    files = {kind: write_lines(doc[kind], Path(findings).with_name(side_name(findings, kind)),
                               keep if kind == "units" else None) for kind in KINDS}
    riskiest = [u for _, u in sorted(heap, key=lambda e: risk_key(e[1]))]
    return {**files, "inline": f"the {len(riskiest)} units with the most derived singletons; every unit and "
                               f"check is in the files named here"}, riskiest


class _Desc:
    """Reverses a key's order, so that a min-heap keeps the smallest keys (the riskiest units)."""

    __slots__ = ("key",)

    def __init__(self, key: tuple):
        self.key = key

    def __lt__(self, other: "_Desc") -> bool:
        return self.key > other.key


def read_side(unit_files: Any, findings: Path) -> dict[str, "GzipLines"]:
    """The units and checks a findings file names in ``unit_files``, as lazy sequences; a missing,
    malformed or damaged record is the user's error naming the file."""
    where = str(findings)
    if not isinstance(unit_files, Mapping):
        raise AuditError("'unit_files' is not an object", where, "pass the findings.json written by audit run, unchanged")
    out = {}
    for kind in KINDS:
        entry = unit_files.get(kind)
        try:
            path = Path(findings).with_name(str(entry["file"]))
            offsets = np.asarray(entry["offsets"], dtype=np.int64)
            count, batch = int(entry["count"]), int(entry["batch"])
        except (KeyError, TypeError, ValueError):
            raise AuditError(f"'unit_files.{kind}' is not complete", where,
                             "pass the findings.json written by audit run, unchanged") from None
        if not path.is_file():
            raise AuditError(f"the {kind} file {path.name} that findings.json names is missing", str(path),
                             "keep the files audit run wrote beside findings.json together")
        if batch < 1 or len(offsets) != -(-count // batch) + 1 or path.stat().st_size != offsets[-1]:
            raise AuditError(f"the {kind} file does not match findings.json's record of it", str(path),
                             "keep the files of one run together, unchanged")
        out[kind] = GzipLines(path, offsets, count, batch)
    return out


class GzipLines(JsonLines):
    """JSON lines in gzip members of ``batch`` lines each (member ``i`` from ``offsets[i]``), read one
    member at a time; the same interface as :class:`JsonLines`."""

    def __init__(self, path: Path, offsets: np.ndarray, count: int, batch: int,
                 decode: Callable[[dict], Any] | None = None):
        self.path, self.count, self.batch = Path(path), count, batch
        super().__init__(Path(path).open("rb"), offsets, decode)
        self._member: tuple[int, list[bytes]] | None = None

    def _lines(self, m: int) -> list[bytes]:
        if self._member is None or self._member[0] != m:
            start, end = int(self.offsets[m]), int(self.offsets[m + 1])
            self.fh.seek(start)
            try:
                data = gzip.decompress(self.fh.read(end - start))
            except (OSError, EOFError, zlib.error):
                raise AuditError("damaged (a gzip member does not decompress)", str(self.path),
                                 "keep the files of one run together, unchanged") from None
            self._member = (m, data.splitlines())
        return self._member[1]

    def __len__(self) -> int:
        return self.count

    def _read(self, i: int):
        item = json.loads(self._lines(i // self.batch)[i % self.batch])
        return item if self.decode is None else self.decode(item)

    def __iter__(self) -> Iterator:
        for m in range(len(self.offsets) - 1):
            for line in list(self._lines(m)):
                item = json.loads(line)
                yield item if self.decode is None else self.decode(item)

    def decoded(self, decode: Callable[[dict], Any]) -> "GzipLines":
        return GzipLines(self.path, self.offsets, self.count, self.batch, decode)

    def raw(self) -> "GzipLines":
        return self if self.decode is None else GzipLines(self.path, self.offsets, self.count, self.batch)
