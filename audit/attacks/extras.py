"""The ranking and linear attacks run and written beside the findings (``rank.json``, ``linear.json``).

``audit rank``, ``audit linear`` and the pipeline (``--rank``, ``--linear-secret``) share these.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Optional

from .base import DifferenceAttack, LinearAttack, RankingAttack
from .engines.linear import METHODS
from .engines.linear_mitigations import MECHANISMS
from .engines.linear_sweep import mitigation_sweep
from .engines.linear_target import load_frame, prepare
from ..errors import AuditError
from ..findings.document import NOTICE
from ..findings.files import write_json
from ..inputs import load_inputs
from ..paths import output_folder
from ..findings.provenance import fingerprint
from .reidentify import ranking_part

RANK_WRITES = ("rank.json", "rank.svg", "*.tmp")  # what audit rank writes in its folder
LINEAR_WRITES = ("linear.json", "linear_*.svg", "*.tmp")  # and audit linear


def write_ranking(inputs, options, out: Path, top: Optional[int] = None, made_from: dict | None = None,
                  workers: int = 1):
    """Run the ranking attack (on CPU in ``workers`` processes), write ``out/rank.json`` (with the inputs'
    fingerprint) and ``rank.svg``; return the document and the results."""
    results = RankingAttack(inputs, options, workers=workers).evaluate().results().detail
    doc = {"notice": NOTICE, "confidential": True,
           "inputs": {"data": inputs.data_path, "schema": inputs.schema.source, "tables": inputs.schedule.source},
           "fingerprint": {**(made_from or {}), "options": asdict(options)},
           **results.to_dict(top)}
    if inputs.schema.attacker is not None:
        doc["reidentification"] = ranking_part(results, inputs.frame, inputs.schema.geography, inputs.schema.attacker)
    out.mkdir(parents=True, exist_ok=True)
    write_json(doc, out / "rank.json")
    (out / "rank.svg").write_text(results.svg(), encoding="utf-8")
    return doc, results


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _params(text: str | None) -> list[float] | None:
    if not text:
        return None
    try:
        values = [float(t) for t in _split(text)]
    except ValueError:
        raise AuditError(f"--params '{text}' is not a comma-separated list of numbers", "--params",
                         "e.g. --params 1,5,10,20,40") from None
    if not values or any(v < 0 for v in values):
        raise AuditError("--params must be non-negative numbers", "--params", "e.g. --params 1,5,10,20,40")
    return values


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def linear_target(data: Path, secret: str, public: str):
    """The attacked table: the data checked for a 0/1 or small-integer ``secret`` and the ``public`` columns."""
    return prepare(load_frame(data), secret, _split(public), str(data))


def write_linear(data: Path, secret: str, public: str, out: Path, *, queries: Optional[int] = None, seed: int = 0,
                 method: str = "lstsq", sweep: bool = False, params: Optional[str] = None, trials: int = 10,
                 mechanism: str = "gaussian", delta: float = 1e-6, tables: Optional[Path] = None,
                 schema: Optional[Path] = None, memory_mb: Optional[int] = 4096) -> dict:
    """Run the linear attack (and the sweep), write ``out/linear.json`` with the inputs' fingerprint and
    the SVG plots; return the report. OpenDP is optional: without it epsilon is left out.

    A headline ``method`` estimated to need more than ``memory_mb`` stops with an AuditError (exit 2)
    before any work; the other method is then skipped, its reason in ``methods``."""
    if method not in METHODS:
        raise AuditError(f"unknown --method '{method}'", "--method", f"use one of {list(METHODS)}")
    if mechanism not in MECHANISMS:
        raise AuditError(f"unknown --mechanism '{mechanism}'", "--mechanism", f"use one of {list(MECHANISMS)}")
    if not 0 < delta < 1:
        raise AuditError(f"--delta must be between 0 and 1, not {delta}", "--delta", "e.g. --delta 1e-6")
    if (tables is None) != (schema is None):
        raise AuditError("--tables and --schema go together", "--tables" if schema is None else "--schema",
                         "pass both to look for difference attacks, or neither")
    output_folder(out, inputs={"DATA": data, "--tables": tables, "--schema": schema}, writes=LINEAR_WRITES)
    target = linear_target(data, secret, public)
    grid = _params(params)
    attacks, skipped = {}, {}
    for m in (method, *(m for m in METHODS if m != method)):  # the headline first: its bound is an error
        try:
            attacks[m] = LinearAttack(target, secret, n_queries=queries, method=m, seed=seed, source=str(data),
                                      memory_mb=memory_mb)
        except AuditError as err:
            if m == method:
                raise
            skipped[m] = {"method": m, "skipped": err.line()}
    runs = {m: a.evaluate().results() for m, a in attacks.items()}
    head = runs[method]
    report = {"data": str(data), "secret": secret, "public": list(target.names), "n_rows": target.n,
              "n_queries": head.detail.n_queries, "seed": seed, "method": method, "accuracy": head.risk.value,
              "baseline": head.risk.baseline, "ci": list(head.risk.ci), "confidence": head.risk.confidence,
              "methods": {m: runs[m].detail.to_dict() if m in runs else skipped[m] for m in METHODS},
              "sweep": [], "plots": {}}
    out.mkdir(parents=True, exist_ok=True)
    if sweep:
        result = mitigation_sweep(target, secret, params=grid, trials=trials, seed=seed, n_queries=queries,
                                  method=method, mechanism=mechanism, delta=delta, source=str(data))
        meta = result.to_dict()
        report["sweep"] = meta.pop("points")
        report["sweep_settings"] = {**meta, "trials": trials}
        report["privacy"] = result.privacy_note
        for name, svg in result.plots().items():
            (out / f"linear_{name}.svg").write_text(svg)
            report["plots"][name] = f"linear_{name}.svg"
    if tables is not None:
        inputs = load_inputs(data, schema, tables)
        report["differences"] = [f.to_dict() for f in DifferenceAttack(inputs).evaluate().results().detail]
    report["fingerprint"] = {**fingerprint(data, schema, tables),
                             "options": {"secret": secret, "public": list(target.names), "seed": seed,
                                         "queries": queries, "sweep": sweep, "memory_mb": memory_mb}}
    tmp = out / "linear.json.tmp"
    tmp.write_text(json.dumps(report, indent=2, default=_json_default), encoding="utf-8")
    tmp.replace(out / "linear.json")
    return json.loads(json.dumps(report, default=_json_default))
