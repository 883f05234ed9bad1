"""Findings: the exact attack's results for every unit, as the JSON document the report and CI read.

Format 2 (``"format": 2``): every count is exact (per unit and overall), each unit lists a bounded
number of its most telling claims, and the full claim set lies beside the document in the claim
store (:mod:`audit.findings.claimstore`). findings.json is written with one unit and one check per line, so
that large documents are read back one unit at a time (:class:`JsonLines`).
"""
from __future__ import annotations

import heapq
import json
import platform
import re
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import __version__
from ..problem.claims import UNDECIDED, VERIFIED, candidates
from .claimstore import FILE as STORE_FILE
from .claimstore import StoreWriter, encode, store_columns
from ..errors import AuditError
from ..attacks.exact import ExactOptions, UnitResult, audit_unit
from ..inputs import Inputs
from ..problem.build import Problem
from ..attacks.reidentify import section as reidentification_section, with_attacker
from ..release.constraints import EMPTY, PUBLISHED, STRUCTURAL, SUPPRESSED, UnitRelease, Value
from ..policy.rules import SMALL_MAX, apply, load_rules
from ..attacks.joint import joint_proofs, with_proofs

FORMAT = 2
NOTICE = ("CONFIDENTIAL: this file contains records reconstructed from confidential microdata. "
          "Handle it as the microdata itself.")
LISTED = 10  # claims of each kind listed per unit (derived singletons, full records, undecided)
LISTED_LARGE = 3  # the same in runs of more than AUTO_CAP_UNITS units
AUTO_CAP_UNITS = 200
GRID_UNITS = 10  # units whose every published value is kept (``grid``: the report draws their tables)
GRID_UNITS_LARGE = 5  # the same in runs of more than AUTO_CAP_UNITS units
TOTALS = ("verified", "undecided", "refuted", "verified_singletons", "derived_singletons", "explained_singletons",
          "minimal_explanations", "full_records")


def listing_cap(units: int, cap: int | None = None) -> int:
    """Claims of each kind listed per unit: ``cap`` when given, else by the size of the run."""
    return cap if cap is not None else (LISTED if units <= AUTO_CAP_UNITS else LISTED_LARGE)


def prior_rows(frame: pd.DataFrame, inputs: Inputs, problem: Problem, cache: dict) -> np.ndarray | None:
    """The parent unit's rows in the problem's atoms: the prior for baseline probabilities (eq. 17)."""
    geo_cols = inputs.schema.geography
    depth = geo_cols.index(problem.level)
    if depth == 0:
        return None
    key = (problem.level, problem.geo[:depth])
    if key not in cache:
        mask = np.ones(len(frame), dtype=bool)
        for col, value in zip(geo_cols[:depth], problem.geo[:depth]):
            mask &= frame[col].to_numpy() == value
        sub = frame[mask]
        cache[key] = np.column_stack([sub[d.name].map(d.lookup()).to_numpy(dtype=np.int64) for d in problem.domains])
    return cache[key]


def grid_code(value: Value, round_to: int | None, noisy: float | None = None) -> str:
    """One published value in a unit's ``grid``: a status letter, then the value as published.

    ``p`` published exactly, ``r`` rounded to the table's base, ``n`` published with noise (``noisy``:
    the value published instead, from ``audit protect --strategy noise``'s draw), ``P`` primary
    suppression (count below the threshold), ``S`` secondary suppression, ``D`` suppressed (why not
    known: a published release read back), ``z`` structural zero, ``e`` empty (a mean or median of no rows).
    """
    if noisy is not None and value.status == PUBLISHED:
        return f"n{noisy:g}"
    if value.status == SUPPRESSED:
        return {"primary": "P", "secondary": "S"}.get(value.suppression, "D")
    if value.status == STRUCTURAL:
        return "z" + ("" if value.value is None else value.text())
    if value.status == EMPTY:
        return "e"
    rounded = value.stat.kind == "count" and round_to is not None and round_to > 1
    return ("r" if rounded else "p") + value.text()


def grid_json(release: UnitRelease, noisy: Mapping[str, float] | None = None) -> dict[str, str]:
    """Every value the unit publishes: cell key (``TABLE:CELL``) -> its statistics' :func:`grid_code`
    in the table's order of statistics, separated by spaces (``noisy``: value key -> the value
    published with noise in its place)."""
    out: dict[str, list[str]] = {}
    for v in release.values:
        protection = release.protection.get(v.cell.table)
        out.setdefault(v.cell.key, []).append(grid_code(v, protection.round_to if protection else None,
                                                        (noisy or {}).get(v.key)))
    return {k: " ".join(codes) for k, codes in out.items()}


def grid_rank(unit: dict) -> tuple:
    """How high a unit comes among those whose tables are kept: the report's riskiest units first."""
    s = unit["summary"]
    return (s.get("full_records", 0), s.get("derived_singletons", 0), s.get("undecided", 0),
            (unit.get("cells") or {}).get("suppressed", 0), tuple(-ord(ch) for ch in unit["geo"]))


def grid_cap(units: int) -> int:
    """Units whose tables findings.json keeps, by the size of the run."""
    return GRID_UNITS if units <= AUTO_CAP_UNITS else GRID_UNITS_LARGE


class GridKeeper:
    """The ``cap`` highest-ranked units seen so far (:func:`grid_rank`) carry their ``grid``; a unit
    pushed out loses it again. Offered every unit of a run, the keeper ends with the run's top ``cap``."""

    def __init__(self, cap: int):
        self.cap, self.heap, self.count = cap, [], 0

    def offer(self, unit: dict, grid: dict | None) -> bool:
        """Give ``unit`` its ``grid`` when it ranks among the first ``cap``; True when it does."""
        if grid is None or self.cap <= 0:
            return False
        self.count += 1
        item = (grid_rank(unit), self.count, unit)
        if len(self.heap) < self.cap:
            heapq.heappush(self.heap, item)
        elif item[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, item)[2].pop("grid", None)
        else:
            return False
        unit["grid"] = grid
        return True


def kept_grids(ranks: dict, cap: int) -> set:
    """The keys of the ``cap`` units of highest :func:`grid_rank` (``ranks``: key -> rank)."""
    return set(heapq.nlargest(cap, ranks, key=ranks.__getitem__))


def tables_json(schedule, schema) -> list[dict]:
    """The table schedule as the report draws it: per table its id, title, level, statistics, cells
    (ids in order) and, for cross-classified tables, the ``by`` axes with their codes and labels
    (``*``: the margin)."""
    out = []
    for t in schedule.tables:
        axes = []
        if t.by:
            combos = [c.id.split(",") for c in t.cells]
            for i, name in enumerate(t.by):
                codes = list(dict.fromkeys(combo[i] for combo in combos))
                col = schema.recode(name) or schema.column(name)
                axes.append({"column": name, "title": str(getattr(col, "title", None) or name),
                             "codes": [[c, "Total" if c == "*" else str(schema.code_label(name, c))] for c in codes]})
        stats = list(dict.fromkeys(s.name for c in t.cells for s in c.stats))
        out.append({"id": t.id, "title": t.title, "level": t.level, "stats": stats, "by": axes,
                    "cells": [c.id for c in t.cells]})
    return out


def cells_json(release: UnitRelease) -> dict:
    """What one unit publishes: counts of values by status, and every exact published count below 10
    (structural zeros, which no row can fall in, are neither small nor suppressed). ``_counts`` holds
    every published count until :func:`attach_cells` keeps those that explain the listed claims;
    ``_grid`` every value (:func:`grid_json`), for :class:`GridKeeper`."""
    out = {"values": len(release.values), "suppressed": 0, "structural": 0, "rounded": 0, "small": {},
           "_counts": {}, "_grid": grid_json(release)}
    for v in release.values:
        protection = release.protection.get(v.cell.table)
        if v.status in (SUPPRESSED, STRUCTURAL):
            out[v.status] += 1
        elif v.status == PUBLISHED and v.stat.kind == "count":
            out["_counts"][v.key.rsplit(":", 1)[0]] = int(v.value)
            if protection is not None and protection.round_to and protection.round_to > 1:
                out["rounded"] += 1
            elif 1 <= v.value < SMALL_MAX:
                out["small"][v.key.rsplit(":", 1)[0]] = int(v.value)
    if release.magnitude:  # published sums: their contributors, for the magnitude rules
        out["magnitude"] = {key: c.to_json() for key, c in release.magnitude.items()}
    return out


def attach_cells(unit: dict, cells: dict, keeper: GridKeeper | None = None) -> dict:
    """Set ``unit["cells"]`` from :func:`cells_json`, with ``explaining``: the published count of each
    cell that explains a listed claim (what the report shows beside the claim); offer the unit's
    ``grid`` to ``keeper``."""
    cells = dict(cells)
    counts = cells.pop("_counts", {})
    grid = cells.pop("_grid", None)
    wanted = {k for c in unit.get("claims", ()) for k in c.get("cells", ())}
    cells["explaining"] = {k: counts[k] for k in sorted(wanted) if k in counts}
    unit["cells"] = cells
    if keeper is not None:
        keeper.offer(unit, grid)
    return unit


def unit_summary(result: UnitResult) -> dict:
    """Exact counts of one unit's verdicts: what every rule evaluates."""
    ncols = len(result.problem.domains)
    counts = {VERIFIED: 0, UNDECIDED: 0}
    by_columns: dict[bool, dict[int, int]] = {False: {}, True: {}}  # direct? -> columns -> singletons
    full = explained = minimal = 0
    for v in result.verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
        if v.status == VERIFIED:
            k = len(v.claim.assignment)
            if v.claim.m == 1:
                by_columns[v.direct][k] = by_columns[v.direct].get(k, 0) + 1
                if not v.direct:
                    explained += bool(v.cells)
                    minimal += v.minimal
            if k == ncols:
                full += v.claim.m
    derived, direct = (sum(by_columns[d].values()) for d in (False, True))
    return {"verified": counts[VERIFIED], "undecided": counts[UNDECIDED] + result.omitted, "refuted": result.refuted,
            "verified_singletons": derived + direct, "derived_singletons": derived,
            "explained_singletons": explained, "minimal_explanations": minimal, "full_records": full,
            "singletons_by_columns": {name: {str(k): n for k, n in sorted(by_columns[d].items())}
                                      for name, d in (("derived", False), ("direct", True))}}


def listed(result: UnitResult, cap: int) -> list:
    """The claims a unit lists, most telling first (most columns, then least likely under the
    baseline): the first ``cap`` derived singletons, full records and undecided claims."""
    ncols = len(result.problem.domains)
    verdicts = result.verdicts
    width = [len(v.claim.assignment) for v in verdicts]
    kinds: tuple[list[int], list[int], list[int]] = ([], [], [])
    for i, v in enumerate(verdicts):
        if v.status == VERIFIED:
            if v.claim.m == 1 and not v.direct:
                kinds[0].append(i)
            if width[i] == ncols:
                kinds[1].append(i)
        elif v.status == UNDECIDED:
            kinds[2].append(i)

    def rank(i: int) -> tuple:  # explained claims first among equally wide ones: the report shows their cells
        return -width[i], not verdicts[i].cells, result.baseline.get(verdicts[i].claim, 1.0), i

    picked: set[int] = set()
    for kind in kinds:
        if len(kind) > cap:  # only the widest can be among the first: rank those alone
            cut = -heapq.nsmallest(cap, (-width[i] for i in kind))[-1]
            kind = [i for i in kind if width[i] >= cut]
        picked.update(heapq.nsmallest(cap, kind, key=rank))
    return [verdicts[i] for i in sorted(picked, key=rank)]


def claim_json(verdict, result: UnitResult) -> dict:
    """One listed claim (codes as atom labels, i.e. as they appear in the data or as a range)."""
    p = result.problem
    entry = {"columns": {p.domains[c].name: p.domains[c].labels[a] for c, a in verdict.claim.assignment},
             "m": verdict.claim.m, "status": verdict.status, "direct": verdict.direct, "cells": list(verdict.cells)}
    if verdict.status == VERIFIED and not verdict.direct:
        entry["explained"] = bool(verdict.cells)
        entry["minimal"] = verdict.minimal
    if verdict.claim in result.baseline:
        entry["baseline"] = round(result.baseline[verdict.claim], 6)
    if verdict.reason:
        entry["reason"] = verdict.reason
    return entry


def refuted_claims(result: UnitResult, max_columns: int | None) -> list:
    """The candidate claims the attack refuted (the verdicts keep only their number)."""
    if not result.refuted or result.problem.truth is None:
        return []
    kept = {v.claim for v in result.verdicts}
    return [c for c in candidates(result.problem.truth, max_columns) if c not in kept]


def unit_json(result: UnitResult, release: UnitRelease | None = None, cap: int = LISTED,
              header: tuple[str, ...] | None = None, max_columns: int | None = None) -> dict:
    """One unit's entry in findings.json: exact counts and up to ``cap`` claims of each kind.

    With a store ``header``, the unit's every claim (verified, undecided, refuted) is attached as a
    gzip member under ``"_store"`` (bytes, claims) for the writer to move into the claim store.
    """
    p = result.problem
    out = {
        "geo": "/".join(p.geo), "level": p.level, "rows": p.n_rows[1], "status": result.status,
        "reason": result.reason,
        "solutions": {"count": result.solutions, "exhausted": result.exhausted},
        "reconstructed": result.reconstructed,
        "summary": unit_summary(result),
        "claims": [claim_json(v, result) for v in listed(result, cap)],
        "seconds": round(result.seconds, 3), "notes": list(p.notes),
    }
    if result.omitted:  # an unfinished unit with too many candidate claims: counted, neither listed nor stored
        out["not_stored"] = result.omitted
    if release is not None:
        attach_cells(out, cells_json(release))
    if result.reidentification is not None:
        out["reidentification"] = result.reidentification.counts
    if result.intervals:
        out["intervals"] = {key: iv.to_dict() for key, iv in result.intervals.items()}
    elif result.intervals_note:
        out["intervals_skipped"] = result.intervals_note
    if header is not None:
        refuted = refuted_claims(result, max_columns)
        out["_store"] = (encode(result, header, refuted), len(result.verdicts) + len(refuted))
    return out


def store_unit(unit: dict, writer: StoreWriter | None) -> dict:
    """Move a unit's claims (``"_store"``) into the claim store and record where they lie."""
    block = unit.pop("_store", None)
    if writer is not None and block is not None:
        unit["store"] = writer.add(*block)
    return unit


def run_exact(inputs: Inputs, options: ExactOptions, on_unit: Callable[[dict], None] | None = None,
              rules=None, run_units: Callable | None = None, out: Path | None = None, cap: int | None = None,
              on_total: Callable[[int], None] | None = None) -> dict:
    """Tabulate, attack every unit, and assemble the findings document (verdict from ``rules``, default policy).

    With ``out``, the claim store is written to ``out/claims.csv.gz`` as units finish.
    ``run_units(tasks, options, record, header, cap)``, when given, runs the units elsewhere (``audit
    run``: in a worker process, see :func:`audit.scale.runner.bounded_runner`): ``tasks`` yields (problem,
    prior rows, release), ``record(unit, release)`` takes each unit's findings, and ``header`` and
    ``cap`` are :func:`unit_json`'s; by default they run in this process.
    """
    start = time.perf_counter()
    options = with_attacker(options, inputs.schema)
    releases = inputs.release()
    problems = with_proofs(inputs.problems(releases), joint_proofs(inputs.schema, inputs.schedule, releases))
    if on_total:
        on_total(len(problems))
    by_unit = {(r.level, r.geo): r for r in releases}
    header = store_columns(inputs.schema, inputs.schedule, coupled=False)
    writer = StoreWriter(Path(out) / STORE_FILE, header) if out is not None else None
    cap = listing_cap(len(problems), cap)
    keeper = GridKeeper(grid_cap(len(problems)))
    cache: dict = {}
    tasks = ((p, prior_rows(inputs.frame, inputs, p, cache), by_unit.get((p.level, p.geo))) for p in problems)
    units = []

    def record(unit: dict, release: UnitRelease | None) -> None:
        if release is not None:
            attach_cells(unit, cells_json(release), keeper)
        units.append(store_unit(unit, writer))
        if on_unit:
            on_unit(unit)

    stored = header if writer is not None else None
    if run_units is None:
        for problem, prior, release in tasks:
            record(unit_json(audit_unit(problem, options, prior), None, cap, stored, options.max_columns), release)
    else:
        run_units(tasks, options, record, stored, cap)
    order = {(p.level, "/".join(p.geo)): i for i, p in enumerate(problems)}
    units.sort(key=lambda u: order[(u["level"], u["geo"])])
    store = writer.close() if writer is not None else None
    return document(inputs, options, units, time.perf_counter() - start, rules, store)


def schema_json(schema) -> dict:
    """The labels a reader needs to turn claims into plain language."""
    cols = {c.name: {"kind": c.kind, "labels": {str(k): str(v) for k, v in c.labels.items()} if c.kind == "categorical" else {},
                     **({"title": str(c.title)} if getattr(c, "title", None) else {})}
            for c in schema.columns}
    return {"unit": schema.unit, "geography": list(schema.geography), "columns": cols}


def cell_labels(schedule) -> dict[str, str]:
    """'table:cell' -> 'table title: cell label' for every cell of the schedule."""
    return {cell.key: f"{table.title}: {cell.label}" if cell.label else table.title
            for table in schedule.tables for cell in table.cells}


def totals(units: Iterable[dict]) -> dict:
    """The document's summary: every unit count summed."""
    total = dict.fromkeys(TOTALS, 0)
    total.update(units=0, units_reconstructed=0, units_with_derived_singletons=0)
    by_columns: dict[str, dict[str, int]] = {"derived": {}, "direct": {}}
    for u in units:
        s = u["summary"]
        for k in TOTALS:
            total[k] += s.get(k, 0)
        total["units"] += 1
        total["units_reconstructed"] += bool(u["reconstructed"])
        total["units_with_derived_singletons"] += s["derived_singletons"] > 0
        for kind, counts in s["singletons_by_columns"].items():
            for k, n in counts.items():
                by_columns[kind][k] = by_columns[kind].get(k, 0) + n
    total["singletons_by_columns"] = {kind: dict(sorted(c.items(), key=lambda kv: int(kv[0])))
                                      for kind, c in by_columns.items()}
    return total


def document(inputs: Inputs, options: ExactOptions, units: Sequence[dict], seconds: float, rules=None,
             store: dict | None = None) -> dict:
    """The findings document around per-unit results, with the verdict of the rules (default policy when None)."""
    doc = {
        "format": FORMAT, "notice": NOTICE, "confidential": True,
        "tool": {"name": "disclosure-audit", "version": __version__, "python": platform.python_version()},
        "inputs": {"data": inputs.data_path, "schema": inputs.schema.source, "tables": inputs.schedule.source,
                   "rows": int(len(inputs.frame)), "unit": inputs.schema.unit},
        "options": {k: v for k, v in asdict(options).items()} | (
            {"attacker": options.attacker.describe()} if options.attacker is not None else {}),
        "verdict": None,
        "summary": totals(units), "schema": schema_json(inputs.schema), "cell_labels": cell_labels(inputs.schedule),
        "tables": tables_json(inputs.schedule, inputs.schema),
        "claim_store": store, "units": units, "seconds": round(seconds, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "reidentification": reidentification_section(options.attacker, units),
    }
    return apply(doc, rules if rules is not None else load_rules())


# -- documents on disk ---------------------------------------------------------------------------------
LINE_KEYS = ("units", "checks")  # written one item per line, last in the document


class JsonLines(Sequence):
    """A list of JSON objects kept in a file, one per line, read back one at a time.

    ``offsets`` holds where each item starts and where the last ends; a trailing comma (as inside
    findings.json) is ignored.
    """

    def __init__(self, fh, offsets: np.ndarray):
        self.fh, self.offsets = fh, np.asarray(offsets, dtype=np.int64)

    @classmethod
    def write(cls, items: Iterable[dict], folder: Path | None = None) -> "JsonLines":
        """Items in an anonymous temporary file (in ``folder``), gone when the list is."""
        fh = tempfile.TemporaryFile(dir=folder)
        offsets = [0]
        for item in items:
            fh.write(json.dumps(item, separators=(",", ":")).encode("utf-8") + b"\n")
            offsets.append(fh.tell())
        fh.flush()
        return cls(fh, np.array(offsets))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _read(self, i: int) -> dict:
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        self.fh.seek(start)
        return json.loads(self.fh.read(end - start).rstrip(b",\r\n "))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._read(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._read(i)

    def __iter__(self) -> Iterator[dict]:
        for i in range(len(self)):
            yield self._read(i)


def write_json(doc: dict, path: Path) -> None:
    """A JSON document; ``units`` and ``checks`` last, one item per line (see :func:`read_findings`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    lines = [k for k in LINE_KEYS if isinstance(doc.get(k), (list, JsonLines))]
    head = json.dumps({k: v for k, v in doc.items() if k not in lines}, indent=1)
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(head[:-2] if lines else head)
        for key in lines:
            fh.write(f',\n "{key}": [\n')
            first = True
            for item in doc[key]:
                fh.write(("" if first else ",\n") + json.dumps(item, separators=(",", ":")))
                first = False
            fh.write("\n ]" if not first else " ]")
        fh.write("\n}\n" if lines else "\n")
    tmp.replace(path)


_FORMAT_LINE = re.compile(rb'^ "format": (\d+),?\n$')
_OPEN = re.compile(rb'^ "(%s)": \[\n$' % "|".join(LINE_KEYS).encode())


@contextmanager
def _reading(path: Path, what: str) -> Iterator[None]:
    """A missing, folder or unreadable JSON file as the user's error naming it (``what``: "findings file", ...)."""
    try:
        yield
    except FileNotFoundError:
        raise AuditError(f"{what} not found", str(path), "check the path") from None
    except IsADirectoryError:
        raise AuditError("is a folder, not a JSON file", str(path), f"give the path of the {what}") from None
    except OSError as exc:
        raise AuditError(f"{what} cannot be read ({exc.strerror})", str(path), "check the file's permissions") from None


def read_findings(path: Path) -> dict:
    """A findings document (format 2); its units and checks are read from the file as they are used."""
    path = Path(path)
    with _reading(path, "findings file"):
        fh = path.open("rb")
    fh.readline()
    match = _FORMAT_LINE.match(fh.readline())
    doc = _lazy(fh) if match and int(match.group(1)) == FORMAT else None
    if doc is None:
        fh.close()
        doc = read_json(path, "findings file")
    if "units" not in doc or "summary" not in doc:
        raise AuditError("not a findings file (no 'units' or 'summary')", str(path),
                         "pass the findings.json written by audit run")
    if doc.get("format", 1) != FORMAT:
        raise AuditError(f"findings file in format {doc.get('format', 1)}; this version of disclosure-audit "
                         f"reads format {FORMAT}", str(path),
                         "run audit run (or audit gate) again on the same inputs to write it in this format")
    return doc


def read_json(path: Path, what: str) -> dict:
    """A JSON object from a file; a missing, unreadable or malformed file is the user's error."""
    try:
        with _reading(path, what):
            data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AuditError(f"{what} is not valid JSON ({exc.__class__.__name__})", str(path),
                         "pass the findings.json written by audit run") from None
    if not isinstance(data, dict):
        raise AuditError(f"{what} must be a JSON object", str(path), "pass the findings.json written by audit run")
    return data


def _lazy(fh) -> dict | None:
    """The head parsed, the one-per-line arrays indexed; None when the layout is not the writer's."""
    fh.seek(0)
    head, arrays, key, offsets = [], {}, None, []
    while True:
        at = fh.tell()
        line = fh.readline()
        if not line:
            break
        if key is not None:
            if line.startswith(b" ]"):
                offsets.append(at)
                arrays[key] = JsonLines(fh, np.array(offsets))
                key = None
                head.append(line)
            elif line.startswith(b"{"):
                offsets.append(at)
            else:
                return None
            continue
        opened = _OPEN.match(line)
        if opened:
            key, offsets = opened.group(1).decode(), []
        head.append(line)
    if key is not None:
        return None
    try:
        doc = json.loads(b"".join(head))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    doc.update(arrays)
    return doc
