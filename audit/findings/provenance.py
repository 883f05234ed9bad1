"""Provenance: the inputs a result was made from, so that results on other data are never mixed in.

``rank.json``, ``linear.json`` and ``findings.json`` carry a fingerprint: digests of the bytes of
the data, schema and tables they were made from. ``audit run`` folds a ranking or linear result
found in its output folder into the verdict only when its fingerprint matches the run's inputs, and
``audit report`` leaves out (and names) an extra that does not match the findings beside it.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import AuditError
from ..paths import input_file

# the inputs each extra must share with the findings: the ranking attacks the published tables,
# the linear attack only the microdata
COMPARED = {"rank": ("data", "schema", "tables"), "linear": ("data",)}


def file_digest(path: str | Path | None) -> str | None:
    """SHA-256 of a file's bytes (of every file in a folder, e.g. partitioned Parquet), 16 hex digits."""
    if path is None:
        return None
    p = input_file(Path(path))
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(p)).encode() if p.is_dir() else b"")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def content_digest(value) -> str:
    """SHA-256 of a JSON value (keys sorted), 16 hex digits: the same after a JSON round trip."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def fingerprint(data, schema=None, tables=None) -> dict:
    """Digests of the inputs (None for one not given, e.g. an inferred schema)."""
    return {"data": file_digest(data), "schema": file_digest(schema), "tables": file_digest(tables)}


def mismatch(kind: str, extra: dict, made_from: dict | None) -> str | None:
    """Why ``extra`` (a rank.json or linear.json document) cannot be taken for inputs ``made_from``,
    or None when it was made from the same ones."""
    if kind not in COMPARED:
        return None
    theirs = extra.get("fingerprint") if isinstance(extra.get("fingerprint"), dict) else None
    if theirs is None or made_from is None:
        return f"{kind}.json has no record of the inputs it was made from (written by an older version?)"
    differ = [k for k in COMPARED[kind] if theirs.get(k) != made_from.get(k)]
    if differ:
        return f"{kind}.json was made from other {', '.join(differ)}"
    return None


def select(extras: dict[str, dict], made_from: dict | None) -> tuple[dict[str, dict], list[str]]:
    """The extras made from the same inputs, and one line for each one left out."""
    kept, skipped = {}, []
    for kind, extra in extras.items():
        why = mismatch(kind, extra, made_from)
        if why is None:
            kept[kind] = extra
        else:
            skipped.append(f"{why}: left out")
    return kept, skipped


def check_explicit(kind: str, extra: dict, made_from: dict, path: Path) -> None:
    """A result passed by name is taken unless it records other inputs (then: an input error)."""
    theirs = extra.get("fingerprint")
    if isinstance(theirs, dict):
        differ = [k for k in COMPARED[kind] if theirs.get(k) != made_from.get(k)]
        if differ:
            raise AuditError(f"{kind} results made from other {', '.join(differ)} than this run's", str(path),
                             f"rerun audit {kind} on these inputs, or pass --{kind} to run it now")
