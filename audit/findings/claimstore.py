"""The claim store: every claim of a run as one gzip'd CSV beside findings.json (``claims.csv.gz``).

The first gzip member holds the header; then each unit's claims are one member, written by the
worker that audited the unit and copied byte for byte by the merge. ``zcat`` or
``pandas.read_csv`` read the file as one CSV, and one unit is read alone from the offset and
length its entry in findings.json records (``store``).

Columns: ``level``, ``geo``, ``status`` (verified, undecided or refuted), ``m``, ``direct`` (1 when a
published cell states the claim), ``columns`` (how many columns the claim fixes), then one column
per attribute (the value as the attacker can tell it apart, empty when the claim leaves the column
free), then ``cells`` (explaining cells, space-separated), ``minimal``, ``baseline`` and ``reason``.
"""
from __future__ import annotations

import csv
import gzip
import io
import zlib
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import AuditError, InternalError, described
from ..memo import shelf
from ..problem.claims import VERIFIED
from ..problem.coupled import coupled_levels, finest_level

FILE = "claims.csv.gz"
LEAD = ("level", "geo", "status", "m", "direct", "columns")
TAIL = ("cells", "minimal", "baseline", "reason")
# Claims whose attribute fields a process keeps, for the store's columns and the labels it wrote them with: a
# state's blocks hold the same claims over and over (:data:`audit.problem.claims.INTERNED`). Emptied when full.
FIELDS = 100_000
_FIELDS: dict[tuple, dict] = {}  # the store's columns and labels -> claim -> its attribute fields
_PLAIN: dict[tuple, dict] = {}  # the same -> claim -> its row's middle as a plain verified verdict (no cells, no reason)


def store_columns(schema, schedule) -> tuple[str, ...]:
    """The header of a run's store: the schema's attributes, and the finest geography level when
    there are coarser levels, whose coupled problems carry it as a column."""
    extra = (finest_level(schema, schedule),) if coupled_levels(schema, schedule) else ()
    return (*LEAD, *schema.names, *extra, *TAIL)


def _member(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def _field(text: str) -> str:
    """A CSV field: quoted only when it must be."""
    return '"' + text.replace('"', '""') + '"' if any(ch in text for ch in ',"\r\n') else text


def encode(result, header: tuple[str, ...], refuted: Iterable = ()) -> bytes:
    """One unit's claims (a :class:`audit.attacks.exact.UnitResult`'s verdicts, then ``refuted`` claims) as a gzip member.

    Rows are joined by hand rather than by :mod:`csv` (a unit holds thousands of claims): labels,
    cells and reasons are quoted as the csv module would quote them.
    """
    p = result.problem
    first, width = len(LEAD), len(header) - len(LEAD) - len(TAIL)
    try:
        slot = [header.index(name) - first for name in p.attributes]  # a view shows its attribute's column
    except ValueError:
        raise InternalError(f"a domain of {p.names} is not a column of the claim store {header}") from None
    labels = [[_field(label) for label in d.labels] for d in p.domains]
    lead = f"{_field(p.level)},{_field('/'.join(p.geo))},"
    templates: dict[tuple[int, ...], str] = {}  # a claim's columns -> its attribute fields, each label a {}
    context = (width, tuple(slot), tuple(map(tuple, labels)))
    kept = shelf(_FIELDS, context, 4, FIELDS)  # claim -> its attribute fields, as earlier units in the process wrote them
    plain = shelf(_PLAIN, context, 4, FIELDS)  # most verdicts of a unit: status to the empty cells, one string

    def fields(claim) -> str:
        text = kept.get(claim)
        if text is not None:
            return text
        assignment = claim.assignment
        cols = tuple(map(itemgetter(0), assignment))
        template = templates.get(cols)
        if template is None:
            parts = [""] * width
            for k, c in enumerate(cols):
                parts[slot[c]] = f"{{{k}}}"
            template = templates[cols] = f"{len(cols)},{','.join(parts)},"
        text = kept[claim] = template.format(*[labels[c][a] for c, a in assignment])
        return text

    base = result.baseline or {}
    lines = []
    append = lines.append
    for v in result.verdicts:
        claim = v.claim
        b = base.get(claim) if base else None
        cells = v.cells
        if not cells and not v.direct and not v.reason and v.status == VERIFIED:
            middle = plain.get(claim)
            if middle is None:
                middle = plain[claim] = f"{VERIFIED},{claim.m},0,{fields(claim)},,"
            append(f"{lead}{middle}{'' if b is None else format(b, '.6f')},")
            continue
        tail = (f"{_field(' '.join(cells))},{int(v.minimal) if v.status == 'verified' and not v.direct else ''},"
                if cells else ",,")
        append(f"{lead}{v.status},{claim.m},{1 if v.direct else 0},{fields(claim)}"
               f"{tail}{'' if b is None else format(b, '.6f')},{_field(v.reason) if v.reason else ''}")
    for claim in refuted:
        append(f"{lead}refuted,{claim.m},0,{fields(claim)},,,")
    lines.append("")
    return _member("\n".join(lines))


class StoreWriter:
    """Appends units' gzip members to a store; :meth:`add` returns where each one lies."""

    def __init__(self, path: Path, header: tuple[str, ...]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.fh = self.tmp.open("wb")
        self.header = tuple(header)
        self.fh.write(_member(",".join(header) + "\n"))
        self.claims = 0

    def add(self, block: bytes, claims: int) -> dict:
        offset = self.fh.tell()
        self.fh.write(block)
        self.claims += claims
        return {"offset": offset, "bytes": len(block), "claims": claims}

    def close(self) -> dict:
        """Finish the file; the ``claim_store`` entry of findings.json."""
        size = self.fh.tell()
        self.fh.close()
        self.tmp.replace(self.path)
        return {"file": self.path.name, "format": "csv.gz", "columns": list(self.header), "claims": self.claims,
                "bytes": size}


class ClaimStore:
    """Reads a store: every claim in file order, or one unit's from its ``store`` entry."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise AuditError("claim store not found", str(self.path),
                             f"keep {FILE} beside findings.json (audit run writes both)")
        with self._reading(), self.path.open("rb") as fh:
            d = zlib.decompressobj(wbits=31)
            text = d.decompress(fh.read(1 << 16))
            self.header = tuple(text.decode("utf-8").split("\n", 1)[0].split(","))
        if self.header[: len(LEAD)] != LEAD or self.header[-len(TAIL):] != TAIL:
            raise AuditError("not a claim store (unexpected header)", str(self.path), f"pass the {FILE} of audit run")
        self.attributes = self.header[len(LEAD): -len(TAIL)]

    def rows(self, entry: dict | None = None) -> Iterator[list[str]]:
        """CSV rows (no header): the whole file, or the unit whose ``store`` entry is given."""
        with self._reading():
            if entry is None:
                with gzip.open(self.path, "rt", encoding="utf-8", newline="") as fh:
                    reader = csv.reader(fh)
                    next(reader, None)
                    yield from reader
                return
            with self.path.open("rb") as fh:
                fh.seek(entry["offset"])
                data = fh.read(entry["bytes"])
            yield from csv.reader(io.StringIO(gzip.decompress(data).decode("utf-8"), newline=""))

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A store cut short or garbled (gzip, UTF-8, CSV) as the user's error naming it."""
        try:
            yield
        except (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error) as exc:
            raise AuditError(f"the claim store is damaged ({described(exc)})", str(self.path),
                             "run audit run again to write it (keep it beside findings.json, unchanged)") from None

    def claims(self, entry: dict | None = None) -> Iterator[dict]:
        """Claims in the shape of findings.json's listed claims, with their ``level`` and ``geo``."""
        for row in self.rows(entry):
            yield self.claim(row)

    def claim(self, row: list[str]) -> dict:
        n, attrs = len(LEAD), self.attributes
        level, geo, status, m, direct = row[:5]
        cells, minimal, baseline, reason = row[-len(TAIL):]
        out = {"level": level, "geo": geo,
               "columns": {a: v for a, v in zip(attrs, row[n: n + len(attrs)]) if v != ""},
               "m": int(m), "status": status, "direct": direct == "1", "cells": cells.split() if cells else []}
        if status == "verified" and direct != "1":
            out["explained"] = bool(cells)
            out["minimal"] = minimal == "1"
        if baseline:
            out["baseline"] = float(baseline)
        if reason:
            out["reason"] = reason
        return out


def store_beside(findings: Path, doc: dict) -> ClaimStore | None:
    """The store a findings document names, in the folder of ``findings`` (None when it has none)."""
    info = doc.get("claim_store")
    if not info:
        return None
    path = Path(findings).parent / info["file"]
    return ClaimStore(path) if path.is_file() else None
