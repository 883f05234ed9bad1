"""A scaled run's parts on disk (one JSON line per finished unit, its claims beside it) and their merge
into the findings document, streamed in unit order so that memory does not grow with the claims."""
from __future__ import annotations

import hashlib
import heapq
from array import array
import json
import os
import re
import time
from contextlib import ExitStack
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator

import numpy as np

from ..attacks.exact import ExactOptions
from ..errors import AuditError
from ..findings.certfile import FILE as CERTIFICATES_FILE
from ..findings.certfile import CertificateWriter
from ..findings.claimstore import FILE as STORE_FILE
from ..findings.claimstore import StoreWriter, store_columns
from ..findings.cells import grid_cap
from ..findings.document import document, input_digests, listing_cap
from ..findings.lines import JsonLines
from ..findings.model import Findings
from ..findings.provenance import file_digest
from ..inputs import Inputs
from ..problem.coupled import coupled_levels
from ..specs.schedule import Schedule
from ..specs.schema import Schema
from .index import PartIndex
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

if TYPE_CHECKING:
    from .runner import ScaleOptions

SUM = "sum"  # a unit line's checksum (:func:`_checksum`), so that --resume takes no damaged line
_SUMMED = re.compile(rb'^(.*),"sum":"([0-9a-f]{16})"\}\n$', re.S)
RETRIED = ("error", "timeout", "out-of-memory")  # statuses --resume redoes: they depend on the machine, not the data


# -- parts on disk ----------------------------------------------------------------------------------
def unit_key(unit: dict) -> tuple[str, str]:
    return unit["level"], unit["geo"]


def read_parts(parts: Path, verify: bool = False) -> Iterator[dict]:
    """Every complete unit line in the part files (a partly written line is skipped); ``verify``: each
    line's checksum too (:func:`_verified`)."""
    for _, _, unit in _part_lines(parts, verify):
        yield unit


def _part_lines(parts: Path, verify: bool = False) -> Iterator[tuple[Path, int, dict]]:
    """(part file, offset, unit) of every complete unit line; ``verify``: a line whose checksum fails is
    the user's error (parts of an earlier run, damaged), not skipped."""
    for path in sorted(parts.glob("part-*.jsonl")):
        with path.open("rb") as fh, ExitStack() as stack:
            blocks = {suffix: stack.enter_context(path.with_suffix(suffix).open("rb"))
                      for suffix in (".claims", ".certificates") if verify and path.with_suffix(suffix).is_file()}
            number = 0
            while True:
                at = fh.tell()
                line = fh.readline()
                number += 1
                if not line:
                    break
                if not line.endswith(b"\n"):
                    continue  # cut off mid-write (the last line of a run killed): that unit is redone
                if verify:
                    yield path, at, _verified(path, number, line, blocks)
                    continue
                try:
                    unit = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if isinstance(unit, dict) and "geo" in unit and "level" in unit:
                    unit.pop(SUM, None)
                    yield path, at, unit


def _checksum(body: bytes, claims: bytes = b"", certificates: bytes = b"") -> str:
    """What :class:`PartWriter` writes as a unit line's ``sum``: a digest of the line and of its blocks."""
    h = hashlib.blake2b(digest_size=8)
    for part in (body, claims, certificates):
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def _verified(path: Path, number: int, line: bytes, blocks: dict[str, BinaryIO]) -> dict:
    """The unit of a complete part line whose checksum matches the line and its blocks in the ``.claims``
    and ``.certificates`` files beside it; else a user error naming the line (damaged, or written by
    another version) and the fix."""
    where = f"{path}:{number}"
    found = _SUMMED.match(line)
    if found is None:
        raise damaged(where, "the line carries no checksum", path.parent)
    body = found.group(1) + b"}"
    try:
        unit = json.loads(body)
    except ValueError:
        raise damaged(where, "the line is not JSON", path.parent) from None
    read = {}
    for key, suffix in (("block", ".claims"), ("certs", ".certificates")):
        span = unit.get(key) if isinstance(unit, dict) else None
        if span is None:
            continue
        if not (isinstance(span, list) and len(span) >= 2 and all(type(v) is int and v >= 0 for v in span[:2])):
            raise damaged(where, f"'{key}' is not an offset and a size", path.parent)
        fh = blocks.get(suffix)
        if fh is not None:
            fh.seek(span[0])
        read[key] = fh.read(span[1]) if fh is not None else b""
    if _checksum(body, read.get("block", b""), read.get("certs", b"")) != found.group(2).decode():
        raise damaged(where, "the line's checksum does not match it and its claims", path.parent)
    return unit


def damaged(where: str, why: str, parts: Path) -> AuditError:
    """A part file, or the run's record, in ``parts`` that ``--resume`` cannot take."""
    return AuditError(f"the interrupted run's parts are damaged: {why}", where,
                      f"delete the folder {parts} (its units are run again) or rerun without --resume")


def finished_units(parts: Path) -> set[tuple[str, str]]:
    """Units a resumed run keeps: those whose last line has a status other than :data:`RETRIED` (every
    line checked against its checksum first)."""
    last = {unit_key(u): u["status"] for u in read_parts(parts, verify=True)}
    return {k for k, status in last.items() if status not in RETRIED}


def fingerprint(source, schema: Schema, schedule: Schedule, options: ExactOptions, claims_cap: int | None) -> dict:
    """What a resumed run must share with the interrupted one (the data by path, size and time: cheap)."""
    if isinstance(source, pd.DataFrame):
        data = {"frame_rows": len(source)}
    else:
        st = Path(source).stat()
        data = {"path": str(Path(source).resolve()), "bytes": st.st_size, "mtime": int(st.st_mtime)}
    return {"data": data, "schema": file_digest(schema.source), "tables": file_digest(schedule.source),
            "options": asdict(options), "coupled": bool(coupled_levels(schema, schedule)), "claims_cap": claims_cap}


class PartWriter:
    """Appends one JSON line per finished unit to a fresh part file of this run (never to an old one),
    and the unit's claim-store member to the part's ``.claims`` file before it, its interval certificates
    to the ``.certificates`` file (the line says where)."""

    def __init__(self, parts: Path):
        parts.mkdir(parents=True, exist_ok=True)
        n = len(list(parts.glob("part-*.jsonl")))
        self.path = parts / f"part-{n:05d}.jsonl"
        self.fh = self.path.open("a", encoding="utf-8")
        self.claims = self.path.with_suffix(".claims").open("ab")
        self.certificates = self.path.with_suffix(".certificates").open("ab")
        self.synced = time.monotonic()

    def write(self, unit: dict) -> None:
        certs = unit.pop("_certificates", None)
        if certs is not None:
            line = (json.dumps(certs, separators=(",", ":")) + "\n").encode("utf-8")
            unit = {**unit, "certs": [self.certificates.tell(), len(line)]}
            self.certificates.write(line)
            self.certificates.flush()
        block = unit.pop("_store", None)
        if block is not None:
            unit = {**unit, "block": [self.claims.tell(), len(block[0]), block[1]]}
            self.claims.write(block[0])
            self.claims.flush()
        body = json.dumps(unit, separators=(",", ":"))
        summed = _checksum(body.encode(), block[0] if block is not None else b"", line if certs is not None else b"")
        self.fh.write(f'{body[:-1]},"{SUM}":"{summed}"}}\n')
        self.fh.flush()
        if time.monotonic() - self.synced > 5:
            os.fsync(self.claims.fileno())
            os.fsync(self.fh.fileno())
            self.synced = time.monotonic()

    def close(self) -> None:
        for fh in (self.claims, self.certificates, self.fh):
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()




# -- merge ----------------------------------------------------------------------------------------------
_SIZE_BINS = [(1, 1), (2, 2), (3, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, 199), (200, None)]


def _quantiles(values) -> dict:
    if not len(values):
        return {}
    a = np.asarray(values, dtype=float)
    return {"p50": round(float(np.quantile(a, .5)), 3), "p90": round(float(np.quantile(a, .9)), 3),
            "p99": round(float(np.quantile(a, .99)), 3), "max": round(float(a.max()), 3),
            "mean": round(float(a.mean()), 3), "sum": round(float(a.sum()), 3)}


def merge(parts: Path, schema: Schema, schedule: Schedule, options: ExactOptions, scale: ScaleOptions,
          data_path: str, rows: int, seconds: float, rules=None, out: Path | None = None) -> Findings:
    """Stream the parts (last line per unit wins) in unit order into the claim store and the document.

    Where each unit's latest line is, and the units' order, are indexed on disk (:class:`PartIndex`), so
    memory does not grow with the units either; claims go from the parts to ``claims.csv.gz`` and unit
    entries to a temporary file that the document reads them back from (:class:`JsonLines`).
    """
    out = Path(out) if out is not None else parts.parent
    index = PartIndex(parts, schedule)
    try:
        for path, at, unit in _part_lines(parts):
            index.add(path, at, unit)
        return _merged(index, parts, schema, schedule, options, scale, data_path, rows, seconds, rules, out)
    finally:
        index.close()


def _merged(index: PartIndex, parts: Path, schema: Schema, schedule: Schedule, options: ExactOptions,
            scale: ScaleOptions, data_path: str, rows: int, seconds: float, rules, out: Path) -> Findings:
    """:func:`merge` once the parts are indexed."""
    grids = index.top(grid_cap(len(index)))
    writer = StoreWriter(out / STORE_FILE, store_columns(schema, schedule))
    certificates = CertificateWriter(out / CERTIFICATES_FILE)
    files: dict[Path, Any] = {}

    def read(path: Path, at: int, size: int | None = None) -> bytes:
        if path not in files:
            files[path] = path.open("rb")
        fh = files[path]
        fh.seek(at)
        return fh.readline() if size is None else fh.read(size)

    def units() -> Iterator[dict]:
        for key, path, at in index:
            unit = json.loads(read(path, at))
            unit.pop(SUM, None)
            if key not in grids:
                unit.pop("grid", None)
            block = unit.pop("block", None)
            if block is not None:
                unit["store"] = writer.add(read(path.with_suffix(".claims"), block[0], block[1]), block[2])
            certs = unit.pop("certs", None)
            if certs is not None:
                certificates.add(json.loads(read(path.with_suffix(".certificates"), *certs)))
                unit["certificates"] = CERTIFICATES_FILE
            yield unit

    try:
        entries = JsonLines.write(units(), out)
    finally:
        for fh in files.values():
            fh.close()
    store = writer.close()
    inputs = Inputs(schema, schedule, pd.DataFrame(), data_path)
    sealed = certificates.close(input_digests(inputs), entries)
    doc = document(inputs, options, entries, seconds, rules, store, sealed)
    return replace(doc, inputs={**doc.inputs, "rows": int(rows)},
                   scale=summarise(entries, listing_cap(len(entries), scale.claims_cap), parts))


def summarise(units, cap: int, parts: Path, worst: int = 20) -> dict:
    """Distributions and worst units, in one pass over the units: what a reader of a large run needs."""
    by_status: dict[str, int] = {}
    bins = [{"units": 0, "reconstructed": 0, "with_derived_singletons": 0, "undecided_units": 0} for _ in _SIZE_BINS]
    seconds, derived, ranked, not_finished = array("d"), array("d"), [], []  # 8 bytes a unit each
    for u in units:
        s = u["summary"]
        by_status[u["status"]] = by_status.get(u["status"], 0) + 1
        for (lo, hi), b in zip(_SIZE_BINS, bins):
            if u["rows"] >= lo and (hi is None or u["rows"] <= hi):
                b["units"] += 1
                b["reconstructed"] += bool(u["reconstructed"])
                b["with_derived_singletons"] += s["derived_singletons"] > 0
                b["undecided_units"] += s["undecided"] > 0
        seconds.append(u["seconds"])
        derived.append(s["derived_singletons"])
        ranked.append(((-s["derived_singletons"], -s["full_records"], u["geo"]),
                       {"geo": u["geo"], "level": u["level"], "rows": u["rows"],
                        "derived_singletons": s["derived_singletons"], "full_records": s["full_records"],
                        "reconstructed": u["reconstructed"], "status": u["status"]}))
        if len(ranked) > 10 * worst:
            ranked = heapq.nsmallest(worst, ranked, key=lambda r: r[0])
        if u["status"] != "done" and len(not_finished) < 100:
            not_finished.append({"geo": u["geo"], "level": u["level"], "status": u["status"], "reason": u["reason"]})
    sizes = [{"rows": f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}"), **b}
             for (lo, hi), b in zip(_SIZE_BINS, bins) if b["units"]]
    return {
        "units_by_status": by_status,
        "by_size": sizes,
        "seconds_per_unit": _quantiles(seconds),
        "derived_singletons_per_unit": _quantiles(derived),
        "worst_units": [r for _, r in heapq.nsmallest(worst, ranked, key=lambda r: r[0])],
        "not_finished": not_finished,
        "claims_listed_per_kind": cap,
        "parts": str(parts),
    }


