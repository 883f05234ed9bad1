"""interval_certificates.jsonl.gz: the certificates of every exact feasibility-interval end of a run
(:mod:`audit.attacks.certificates`), one unit per line between a header line and a seal line that binds
the file to its run, and the digests both sides of that binding use.

The seal (the last line) records ``run``: ``inputs`` (the data, schema and tables digests, as
findings.json's ``inputs.fingerprint``), ``intervals`` (:func:`intervals_digest` of the findings'
units), ``release`` (:func:`release_digest` of the units' releases in this file) and ``units``.
findings.json records the file's own SHA-256 under ``certificates``: a :class:`Content` digest of its
lines, the seal included, each as canonical JSON (so any faithful re-serialisation keeps it). Each
file can so be checked against the other (:mod:`audit.findings.certcheck`).
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..attacks.certificates import FORMAT, NOTICE

FILE = "interval_certificates.jsonl.gz"
RELEASE_KEYS = ("level", "geo", "columns", "rows", "edits", "cells")  # a unit line's release as the attacker reads it


def _canonical(doc) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _sha(doc) -> str:
    return hashlib.sha256(_canonical(doc)).hexdigest()


class Content:
    """The SHA-256 of a certificates file's lines (parsed JSON), each as canonical JSON and a newline."""

    def __init__(self):
        self.hash = hashlib.sha256()

    def add(self, line) -> None:
        self.hash.update(_canonical(line) + b"\n")

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


def unit_release_digest(unit: Mapping) -> str:
    """SHA-256 of one certificates unit's release (columns, population, edits, cells), canonical JSON."""
    return _sha({k: unit[k] for k in RELEASE_KEYS})


def release_digest(units: Mapping[tuple[str, str], str]) -> str:
    """SHA-256 over the units' release digests (``(level, geo) -> digest``) in (level, geo) order."""
    return _sha(sorted([level, geo, d] for (level, geo), d in units.items()))


def intervals_digest(units: Iterable[Mapping]) -> str:
    """SHA-256 of what findings.json states about intervals: per unit that has any, its level, geo,
    ``intervals`` and ``interval_details``, in (level, geo) order, as canonical JSON (of the whole list,
    hashed a unit at a time: a sequence kept on disk is read twice, never held)."""
    units = units if isinstance(units, Sequence) else list(units)
    order = sorted((u["level"], u["geo"], i) for i, u in enumerate(units) if u.get("intervals"))
    h = hashlib.sha256(b"[")
    for k, (level, geo, i) in enumerate(order):
        u = units[i]
        h.update((b"," if k else b"") + _canonical([level, geo, u["intervals"], u.get("interval_details") or {}]))
    h.update(b"]")
    return h.hexdigest()


def line_bytes(doc: Mapping) -> bytes:
    """One line of the file as written."""
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode("utf-8")


class CertificateWriter:
    """Writes units' certificates to ``path``, created with the first unit that has any (a run with no
    exact interval end writes no file), and seals it on :meth:`close`."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.fh = self._raw = None  # the gzip stream and the file under it, opened with the first unit
        self.units = 0
        self.content = Content()
        self.releases: dict[tuple[str, str], str] = {}

    def add(self, unit: dict) -> None:
        if self.fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._raw = self.tmp.open("wb")
            self.fh = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)  # mtime 0: the same bytes each run
            self._line({"format": FORMAT, "notice": NOTICE, "confidential": True})
        read = self._line(unit)
        self.releases[(unit["level"], unit["geo"])] = unit_release_digest(read)
        self.units += 1

    def _line(self, doc: dict) -> dict:
        """Write one line; the document as the checker reads it back (parsed once)."""
        data = line_bytes(doc)
        read = json.loads(data)
        self.content.add(read)
        self.fh.write(data)
        return read

    def close(self, made_from: Mapping | None = None, units: Iterable[Mapping] = ()) -> dict | None:
        """Seal the file with the run's input digests ``made_from`` and the findings' ``units`` (see the
        module docstring) and finish it: findings.json's ``certificates`` (``file``, ``sha256``,
        ``release``), or None when no unit had certificates."""
        if self.fh is None:
            return None
        release = release_digest(self.releases)
        self._line({"run": {"inputs": dict(made_from) if made_from is not None else None,
                            "intervals": intervals_digest(units), "release": release, "units": self.units}})
        self.fh.close()
        self._raw.close()
        self.tmp.replace(self.path)
        return {"file": self.path.name, "sha256": self.content.hexdigest(), "release": release}
