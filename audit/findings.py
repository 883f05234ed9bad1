"""Findings: the exact attack's results for every unit, as the JSON document the report and CI read."""
from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from . import __version__
from .claims import UNDECIDED, VERIFIED
from .exact import ExactOptions, UnitResult, audit_unit
from .inputs import Inputs
from .problem import Problem
from .reidentify import section as reidentification_section, with_attacker
from .release import PUBLISHED, STRUCTURAL, SUPPRESSED, UnitRelease

NOTICE = ("CONFIDENTIAL: this file contains records reconstructed from confidential microdata. "
          "Handle it as the microdata itself.")


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


def cells_json(release: UnitRelease) -> dict:
    """What one unit publishes: counts of values by status, and every exact published count below 10
    (structural zeros, which no row can fall in, are neither small nor suppressed)."""
    from .rules import SMALL_MAX

    out = {"values": len(release.values), "suppressed": 0, "structural": 0, "rounded": 0, "small": []}
    for v in release.values:
        protection = release.protection.get(v.cell.table)
        if v.status in (SUPPRESSED, STRUCTURAL):
            out[v.status] += 1
        elif v.status == PUBLISHED and v.stat.kind == "count":
            if protection is not None and protection.round_to and protection.round_to > 1:
                out["rounded"] += 1
            elif 1 <= v.value < SMALL_MAX:
                out["small"].append({"cell": v.key.rsplit(":", 1)[0], "value": int(v.value)})
    return out


def claim_rank(status: str, direct: bool, m: int, n_columns: int) -> tuple:
    """Order of the claims listed under a cap: derived singletons first, then undecided, then other
    derived claims, then direct ones; wider claims first within each."""
    derived = status == VERIFIED and not direct
    return (0 if derived and m == 1 else 1 if status == UNDECIDED else 2 if derived else 3), -n_columns


def unit_json(result: UnitResult, release: UnitRelease | None = None, cap: int | None = None) -> dict:
    """One unit's findings (codes as atom labels, i.e. as they appear in the data or as a range).

    With ``cap``, at most that many claims are listed (by :func:`claim_rank`); the summary still
    counts them all and ``claims_omitted`` says how many were left out.
    """
    p = result.problem
    claims = []
    listed = [v for v in result.verdicts if v.status in (VERIFIED, UNDECIDED)]
    omitted = 0
    if cap is not None and len(listed) > cap:
        ranked = sorted(range(len(listed)), key=lambda i: (claim_rank(listed[i].status, listed[i].direct,
                                                                      listed[i].claim.m, len(listed[i].claim.assignment)), i))
        omitted, listed = len(listed) - cap, [listed[i] for i in ranked[:cap]]
    for v in listed:
        entry = {"columns": {p.domains[c].name: p.domains[c].labels[a] for c, a in v.claim.assignment},
                 "m": v.claim.m, "status": v.status, "direct": v.direct, "cells": list(v.cells)}
        if v.status == VERIFIED and not v.direct:
            entry["explained"] = bool(v.cells)
            entry["minimal"] = v.minimal
        if v.claim in result.baseline:
            entry["baseline"] = round(result.baseline[v.claim], 6)
        if v.reason:
            entry["reason"] = v.reason
        claims.append(entry)
    ncols = len(p.domains)
    verified = result.verified
    out = {
        "geo": "/".join(p.geo), "level": p.level, "rows": p.n_rows[1], "status": result.status,
        "reason": result.reason,
        "solutions": {"count": result.solutions, "exhausted": result.exhausted},
        "reconstructed": result.reconstructed,
        "summary": {
            "verified": len(verified), "undecided": len(result.undecided), "refuted": result.refuted,
            "verified_singletons": sum(v.claim.singleton for v in verified),
            "derived_singletons": sum(v.claim.singleton and not v.direct for v in verified),
            "full_records": sum(v.claim.m for v in verified if len(v.claim.assignment) == ncols),
            "singletons_by_columns": _by_columns(v for v in verified if v.claim.singleton),
        },
        "claims": claims, "refuted": result.refuted, "seconds": round(result.seconds, 3),
        "notes": list(p.notes),
    }
    if omitted:
        out["claims_omitted"] = omitted
    if release is not None:
        out["cells"] = cells_json(release)
    if result.reidentification is not None:
        out["reidentification"] = result.reidentification.counts
    return out


def _by_columns(verdicts: Iterable) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in verdicts:
        k = str(len(v.claim.assignment))
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def run_exact(inputs: Inputs, options: ExactOptions, on_unit: Callable[[dict], None] | None = None,
              rules=None) -> dict:
    """Tabulate, attack every unit, and assemble the findings document (verdict from ``rules``, default policy)."""
    start = time.perf_counter()
    options = with_attacker(options, inputs.schema)
    releases = inputs.release()
    problems = inputs.problems(releases)
    by_unit = {(r.level, r.geo): r for r in releases}
    cache: dict = {}
    units = []
    for problem in problems:
        result = audit_unit(problem, options, prior_rows(inputs.frame, inputs, problem, cache))
        units.append(unit_json(result, by_unit.get((problem.level, problem.geo))))
        if on_unit:
            on_unit(units[-1])
    return document(inputs, options, units, time.perf_counter() - start, rules)


def schema_json(schema) -> dict:
    """The labels a reader needs to turn claims into plain language."""
    cols = {c.name: {"kind": c.kind, "labels": {str(k): str(v) for k, v in c.labels.items()} if c.kind == "categorical" else {},
                     **({"title": str(c.title)} if getattr(c, "title", None) else {})}
            for c in schema.columns}
    return {"unit": schema.unit, "geography": list(schema.geography), "columns": cols}


def cell_labels(inputs: Inputs, units: list[dict]) -> dict[str, str]:
    """'table:cell' -> 'table title: cell label' for every cell that explains a claim."""
    used = {k for u in units for c in u["claims"] for k in c.get("cells", ())}
    out = {}
    for table in inputs.schedule.tables:
        for cell in table.cells:
            if cell.key in used:
                out[cell.key] = f"{table.title}: {cell.label}" if cell.label else table.title
    return out


def document(inputs: Inputs, options: ExactOptions, units: list[dict], seconds: float, rules=None) -> dict:
    """The findings document around per-unit results, with the verdict of the rules (default policy when None)."""
    from .rules import apply, load_rules

    total = {k: sum(u["summary"][k] for u in units) for k in
             ("verified", "undecided", "refuted", "verified_singletons", "derived_singletons", "full_records")}
    total["units"] = len(units)
    total["units_reconstructed"] = sum(u["reconstructed"] for u in units)
    total["units_with_derived_singletons"] = sum(u["summary"]["derived_singletons"] > 0 for u in units)
    doc = {
        "notice": NOTICE, "confidential": True,
        "tool": {"name": "disclosure-audit", "version": __version__, "python": platform.python_version()},
        "inputs": {"data": inputs.data_path, "schema": inputs.schema.source, "tables": inputs.schedule.source,
                   "rows": int(len(inputs.frame)), "unit": inputs.schema.unit},
        "options": {k: v for k, v in asdict(options).items()} | (
            {"attacker": options.attacker.describe()} if options.attacker is not None else {}),
        "verdict": None,
        "summary": total, "schema": schema_json(inputs.schema), "cell_labels": cell_labels(inputs, units),
        "units": units, "seconds": round(seconds, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "reidentification": reidentification_section(options.attacker, units),
    }
    return apply(doc, rules if rules is not None else load_rules())


def write_json(doc: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False), encoding="utf-8")
    tmp.replace(path)
