"""Findings: the exact attack's results for every unit, as the JSON document the report and CI read.

Format 3 (``"format": 3``): every count is exact (per unit and overall), each unit lists a bounded
number of its most telling claims and its hidden cells' intervals as ``[lo, hi]``, and the full claim set lies beside the document in the claim
store (:mod:`audit.findings.claimstore`). findings.json is written with one unit and one check per line, so
that large documents are read back one unit at a time (:class:`JsonLines`). The document is built
and read as a :class:`audit.findings.model.Findings`.
"""
from __future__ import annotations

import heapq
from operator import itemgetter
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..problem.claims import UNDECIDED, VERIFIED, candidates, distinct_rows
from .claimstore import FILE as STORE_FILE
from .claimstore import StoreWriter, encode, store_columns
from ..attacks.exact import ExactOptions, UnitResult, audit_unit
from ..attacks.certificates import unit_certificates
from ..attacks.intervals import intervals_json
from .certfile import FILE as CERTIFICATES_FILE
from .certfile import CertificateWriter
from .provenance import fingerprint
from ..inputs import Inputs
from ..problem.build import Problem
from ..attacks.reidentify import section as reidentification_section, with_attacker
from ..release.constraints import UnitRelease
from ..policy.rules import load_rules
from ..policy.definitions import SMALL_MAX
from ..attacks.joint import joint_proofs
from ..attacks.joint_problems import level_problems
from ..attacks.unit import candidate_keys
from ..problem.coupled import coupled_levels
from .model import NOTICE, Findings, Summary  # noqa: F401 (NOTICE: read from here by attacks/extras.py)
from .cells import AUTO_CAP_UNITS, GridKeeper, ProofCounts, attach_cells, cells_json, grid_cap, tables_json
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

LISTED = 10  # claims of each kind listed per unit (derived singletons, full records, undecided)
LISTED_LARGE = 3  # the same in runs of more than AUTO_CAP_UNITS units
UNIT_OVERHEAD = 100  # candidate claims a unit's fixed work (encoding, explaining, intervals) is worth in the ETA


def listing_cap(units: int, cap: int | None = None) -> int:
    """Claims of each kind listed per unit: ``cap`` when given, else by the size of the run."""
    return cap if cap is not None else (LISTED if units <= AUTO_CAP_UNITS else LISTED_LARGE)


def prior_rows(frame: pd.DataFrame, inputs: Inputs, problem: Problem, cache: dict) -> np.ndarray | None:
    """The parent unit's rows in the problem's atoms: the prior for baseline probabilities (eq. 17).

    None for a unit of the top geography level, and for one of a coarser published level than the
    finest: a coupled problem's child column has no prior, and a run at scale holds whole tracts,
    not whole counties."""
    geo_cols = inputs.schema.geography
    depth = geo_cols.index(problem.level)
    if depth == 0 or problem.level in coupled_levels(inputs.schema, inputs.schedule):
        return None
    key = (problem.level, problem.geo[:depth])
    if key not in cache:
        mask = np.ones(len(frame), dtype=bool)
        for col, value in zip(geo_cols[:depth], problem.geo[:depth]):
            mask &= frame[col].to_numpy() == value
        sub = frame[mask]
        cache[key] = np.column_stack([sub[d.name].map(d.lookup()).to_numpy(dtype=np.int64) for d in problem.domains])
    return cache[key]


class Tally:
    """One pass over a unit's verdicts (a small block holds thousands): the exact counts every rule evaluates
    (:attr:`summary`) and the positions of the claims of each listed kind (:attr:`kinds`: derived singletons,
    full records, undecided), each claim's width (:meth:`Problem.width`) and whether it states a full record
    (:meth:`Problem.full_record`) worked out per column subset."""

    def __init__(self, result: UnitResult):
        problem, verdicts = result.problem, result.verdicts
        self.verdicts = verdicts
        known: dict[tuple[int, ...], tuple[int, bool]] = {}  # both depend on the claim's columns alone

        def shape(assignment) -> tuple[int, bool]:
            cols = tuple(map(itemgetter(0), assignment))
            found = known.get(cols)
            if found is None:
                found = known[cols] = (problem.width(assignment), problem.full_record(assignment))
            return found

        child = bool(problem.child)  # a coupled problem: its child-unit column does not describe the persons
        # a claim narrower than the attributes published cannot state a whole record: most claims, no lookup
        least = len(problem.published_attributes) or len(problem.domains) + 1
        self._width = (lambda a: shape(a)[0]) if child else len
        verified = undecided = full = explained = minimal = 0
        by_columns: dict[bool, dict[int, int]] = {False: {}, True: {}}  # direct? -> columns -> singletons
        by_group: dict[int, int] = {}  # group size m < SMALL_MAX -> persons in full records proved for m persons
        derived, fulls, open_ = [], [], []
        for i, v in enumerate(verdicts):
            status = v.status
            if status == VERIFIED:
                verified += 1
                claim = v.claim
                a, m = claim.assignment, claim.m
                if m == 1:
                    k = shape(a)[0] if child else len(a)
                    direct = v.direct
                    columns = by_columns[direct]
                    columns[k] = columns.get(k, 0) + 1
                    if not direct:
                        explained += bool(v.cells)
                        minimal += v.minimal
                        derived.append(i)
                whole = shape(a)[1] if child else (len(a) >= least and shape(a)[1])
                if whole:
                    fulls.append(i)
                    full += m
                    if m < SMALL_MAX:
                        by_group[m] = by_group.get(m, 0) + m
            elif status == UNDECIDED:
                undecided += 1
                open_.append(i)
        self.kinds = (derived, fulls, open_)
        if result.reconstructed and not full and problem.truth is not None and len(problem.truth):
            full, by_group = _reconstructed_records(problem)  # --max-columns cut the full-record claims
        n_derived, n_direct = (sum(by_columns[d].values()) for d in (False, True))
        self.summary = {
            "verified": verified, "undecided": undecided + result.omitted, "refuted": result.refuted,
            "verified_singletons": n_derived + n_direct, "derived_singletons": n_derived,
            "explained_singletons": explained, "minimal_explanations": minimal, "full_records": full,
            "full_records_by_group": {str(m): n for m, n in sorted(by_group.items())},
            "singletons_by_columns": {name: {str(k): n for k, n in sorted(by_columns[d].items())}
                                      for name, d in (("derived", False), ("direct", True))}}

    def width(self, i: int) -> int:
        """The width of the claim of verdict ``i``."""
        return self._width(self.verdicts[i].claim.assignment)


def unit_summary(result: UnitResult, tally: Tally | None = None) -> dict:
    """Exact counts of one unit's verdicts: what every rule evaluates (``tally``: its :class:`Tally`, when made)."""
    return (tally or Tally(result)).summary


def _reconstructed_records(problem: Problem) -> tuple[int, dict[int, int]]:
    """A unit with one consistent dataset proves every true record: (persons, group size -> persons), the
    truth grouped over the published columns (and a coupled problem's child-unit column)."""
    cols = sorted(problem.published_columns | ({problem.index(problem.child)} if problem.child else set()))
    if not problem.published_columns:
        return 0, {}
    _, sizes = distinct_rows(problem.truth[:, cols])
    by_group: dict[int, int] = {}
    for m in sizes.tolist():
        if m < SMALL_MAX:
            by_group[m] = by_group.get(m, 0) + m
    return int(sizes.sum()), by_group


def listed(result: UnitResult, cap: int, tally: Tally | None = None) -> list:
    """The claims a unit lists, most telling first (most columns, then least likely under the
    baseline): the first ``cap`` derived singletons, full records and undecided claims."""
    verdicts = result.verdicts
    if cap <= 0:  # --claims-cap 0: counts only
        return []
    tally = tally or Tally(result)
    widths: dict[int, int] = {}

    def width(i: int) -> int:
        found = widths.get(i)
        if found is None:
            found = widths[i] = tally.width(i)
        return found

    def rank(i: int) -> tuple:  # explained claims first among equally wide ones: the report shows their cells
        return -width(i), not verdicts[i].cells, result.baseline.get(verdicts[i].claim, 1.0), i

    picked: set[int] = set()
    for kind in tally.kinds:
        if len(kind) > cap:  # only the widest can be among the first: rank those alone
            cut = -heapq.nsmallest(cap, (-width(i) for i in kind))[-1]
            kind = [i for i in kind if width(i) >= cut]
        picked.update(heapq.nsmallest(cap, kind, key=rank))
    return [verdicts[i] for i in sorted(picked, key=rank)]


def claim_json(verdict, result: UnitResult) -> dict:
    """One listed claim (codes as atom labels, i.e. as they appear in the data or as a range)."""
    p = result.problem
    entry = {"columns": {p.attributes[c]: p.domains[c].labels[a] for c, a in verdict.claim.assignment},
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
    problem = result.problem
    return [c for c in candidates(problem.truth, max_columns, problem.views, problem.sizes) if c not in kept]


def unit_json(result: UnitResult, release: UnitRelease | None = None, cap: int = LISTED,
              header: tuple[str, ...] | None = None, max_columns: int | None = None) -> dict:
    """One unit's entry in findings.json: exact counts and up to ``cap`` claims of each kind.

    With a store ``header``, the unit's every claim (verified, undecided, refuted) is attached as a
    gzip member under ``"_store"`` (bytes, claims) for the writer to move into the claim store, and
    its interval certificates (:mod:`audit.attacks.certificates`) under ``"_certificates"``.
    """
    p = result.problem
    tally = Tally(result)
    out = {
        "geo": "/".join(p.geo), "level": p.level, "rows": p.n_rows[1], "status": result.status,
        "reason": result.reason,
        "solutions": {"count": result.solutions, "exhausted": result.exhausted},
        "reconstructed": result.reconstructed,
        "summary": tally.summary,
        "claims": [claim_json(v, result) for v in listed(result, cap, tally)],
        "seconds": round(result.seconds, 3), "notes": list(p.notes),
    }
    if result.omitted:  # an unfinished unit with too many candidate claims: counted, neither listed nor stored
        out["not_stored"] = result.omitted
    if release is not None:
        attach_cells(out, cells_json(release))
    if result.reidentification is not None:
        out["reidentification"] = result.reidentification.counts
    if result.intervals:
        out["intervals"], out["interval_details"] = intervals_json(result.intervals)
    elif result.intervals_note:
        out["intervals_skipped"] = result.intervals_note
    if header is not None:
        certificates = unit_certificates(p, result.intervals) if result.intervals else None
        if certificates is not None:
            out["_certificates"] = certificates
        refuted = refuted_claims(result, max_columns)
        out["_store"] = (encode(result, header, refuted), len(result.verdicts) + len(refuted))
    return out


def store_unit(unit: dict, writer: StoreWriter | None, certificates: CertificateWriter | None = None) -> dict:
    """Move a unit's claims (``"_store"``) into the claim store and record where they lie, and its
    interval certificates (``"_certificates"``) into their file (findings.json names it per unit)."""
    block = unit.pop("_store", None)
    if writer is not None and block is not None:
        unit["store"] = writer.add(*block)
    certs = unit.pop("_certificates", None)
    if certificates is not None and certs is not None:
        certificates.add(certs)
        unit["certificates"] = CERTIFICATES_FILE
    return unit


def run_exact(inputs: Inputs, options: ExactOptions, on_unit: Callable[[dict], None] | None = None,
              rules=None, run_units: Callable | None = None, out: Path | None = None, cap: int | None = None,
              on_total: Callable[[int], None] | None = None) -> Findings:
    """Tabulate, attack every unit, and assemble the findings (verdict from ``rules``, default policy).

    With ``out``, the claim store is written to ``out/claims.csv.gz`` as units finish.
    ``run_units(tasks, options, record, header, cap)``, when given, runs the units elsewhere (``audit
    run``: in a worker process, see :func:`audit.scale.runner.bounded_runner`): ``tasks`` yields (problem,
    prior rows, release), ``record(unit, release)`` takes each unit's findings, and ``header`` and
    ``cap`` are :func:`unit_json`'s; by default they run in this process.
    """
    start = time.perf_counter()
    options = with_attacker(options, inputs.schema, rules)
    releases = inputs.release()
    proofs = joint_proofs(inputs.schema, inputs.schedule, releases, explain=options.explain != "none")
    problems = level_problems(inputs.frame, inputs.schema, inputs.schedule, releases, proofs, options.max_rows)
    if on_total:
        on_total(len(problems), sizes={(p.level, "/".join(p.geo)): UNIT_OVERHEAD + candidate_keys(p, options.max_columns)
                                       for p in problems})
    by_unit = {(r.level, r.geo): r for r in releases}
    header = store_columns(inputs.schema, inputs.schedule)
    writer = StoreWriter(Path(out) / STORE_FILE, header) if out is not None else None
    certificates = CertificateWriter(Path(out) / CERTIFICATES_FILE) if out is not None else None
    cap = listing_cap(len(problems), cap)
    keeper = GridKeeper(grid_cap(len(problems)))
    cache: dict = {}
    tasks = ((p, prior_rows(inputs.frame, inputs, p, cache), by_unit.get((p.level, p.geo))) for p in problems)
    units = []

    counts_of = ProofCounts(by_unit, inputs.schema, inputs.schedule)
    outside = {(p.level, p.geo): counts_of(p) for p in problems if p.proof_cells is not None}

    def record(unit: dict, release: UnitRelease | None) -> None:
        if release is not None:
            attach_cells(unit, cells_json(release, outside.get((release.level, release.geo))), keeper)
        units.append(store_unit(unit, writer, certificates))
        if on_unit:
            on_unit(unit)

    stored = header if writer is not None else None
    if run_units is None:
        for problem, prior, release in tasks:
            record(unit_json(audit_unit(problem, options, prior), None, cap, stored, options.max_columns), release)
    else:
        run_units(tasks, options, record, stored, cap)
    key = unit_order(inputs.schedule)
    units.sort(key=lambda u: key((u["level"], u["geo"])))
    store = writer.close() if writer is not None else None
    sealed = certificates.close(input_digests(inputs), units) if certificates is not None else None
    return document(inputs, options, units, time.perf_counter() - start, rules, store, sealed)


def unit_order(schedule) -> Callable[[tuple[str, str]], tuple]:
    """The sort key of a (level, geo) unit in findings: by the schedule's levels, then by geography codes."""
    order = {lv: i for i, lv in enumerate(schedule.levels)}
    return lambda key: (order.get(key[0], len(order)), key[1].split("/"))


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


def input_digests(inputs: Inputs) -> dict:
    """The inputs' fingerprint (:func:`audit.findings.provenance.fingerprint`) as findings.json records it."""
    return fingerprint(inputs.data_path, inputs.schema.source, inputs.schedule.source)


def document(inputs: Inputs, options: ExactOptions, units: Sequence[dict], seconds: float, rules=None,
             store: dict | None = None, certificates: dict | None = None) -> Findings:
    """The findings around per-unit results, with the verdict of the rules (default policy when None);
    ``certificates``: the sealed certificates file (:meth:`CertificateWriter.close`), when one was written."""
    from .. import __version__  # package metadata, read when a document is made (not in every worker)

    return Findings(
        tool={"name": "disclosure-audit", "version": __version__, "python": platform.python_version()},
        inputs={"data": inputs.data_path, "schema": inputs.schema.source, "tables": inputs.schedule.source,
                "rows": int(len(inputs.frame)), "unit": inputs.schema.unit, "fingerprint": input_digests(inputs)},
        options={k: v for k, v in asdict(options).items()} | (
            {"attacker": options.attacker.describe()} if options.attacker is not None else {}),
        summary=Summary.of(units), schema=schema_json(inputs.schema), cell_labels=cell_labels(inputs.schedule),
        tables=tables_json(inputs.schedule, inputs.schema), claim_store=store, units=units, seconds=round(seconds, 3),
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        reidentification=reidentification_section(options.attacker, units), certificates=certificates,
    ).judged(rules if rules is not None else load_rules())


