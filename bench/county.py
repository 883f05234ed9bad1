"""A synthetic county-level table set (issue 31): N persons, tracts within districts, four linked tables
of about 10,000 cells with hierarchies and margins, audited (and optionally protected) with the defaults.

Usage: ``python bench/county.py [--persons 100000] [--tracts 80] [--out DIR] [--protect]``. Writes
``data.csv``, ``schema.yaml`` and ``tables.yaml`` under ``--out`` (seeded: the same files every time),
runs ``audit run`` (and ``audit protect`` with ``--protect``) with the default options through the
library, and prints the cells, wall and CPU time, peak memory (ru_maxrss of this process and its
children), the unit's status and its reason. Tables (one county unit; tract is a column, grouped into
districts by a recode): T1 district > tract x age group x sex, T2 district > tract x race x Hispanic,
T3 age group x sex x race x Hispanic, T4 employment x sex x age group, every one with margins.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AGES = [f"a{k:02d}" for k in range(18)]
RACES = ["white", "black", "aian", "asian", "nhpi", "other", "two"]


def write_county(out: Path, persons: int, tracts: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """The county's microdata, schema and tables (skewed tract sizes and race shares, as real counties)."""
    rng = np.random.default_rng(seed)
    names = [f"t{k:03d}" for k in range(tracts)]
    size = rng.gamma(2.0, 1.0, tracts)
    race = rng.dirichlet(np.full(len(RACES), 0.7), tracts)  # each tract its own mix
    tract = rng.choice(tracts, persons, p=size / size.sum())
    frame = pd.DataFrame({
        "county": "c1",
        "tract": np.array(names)[tract],
        "agegrp": np.array(AGES)[rng.integers(0, len(AGES), persons)],
        "sex": rng.choice(["M", "F"], persons),
        "race": [RACES[rng.choice(len(RACES), p=race[t])] for t in tract],
        "hisp": rng.choice(["N", "Y"], persons, p=[0.8, 0.2]),
        "emp": rng.choice(["employed", "unemployed", "notinlf"], persons, p=[0.6, 0.05, 0.35]),
    })
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "data.csv", index=False)
    districts = {f"d{d}": names[d * 10:(d + 1) * 10] for d in range((tracts + 9) // 10)}
    schema = {"unit": "person", "geography": ["county"],
              "columns": {"tract": {"type": "categorical", "values": names},
                          "agegrp": {"type": "categorical", "values": AGES},
                          "sex": {"type": "categorical", "values": ["M", "F"]},
                          "race": {"type": "categorical", "values": RACES},
                          "hisp": {"type": "categorical", "values": ["N", "Y"]},
                          "emp": {"type": "categorical", "values": ["employed", "unemployed", "notinlf"]}},
              "recodes": {"district": {"from": "tract", "map": districts}}}
    tables = [{"id": "T1", "by": ["district", "tract", "agegrp", "sex"], "margins": True},
              {"id": "T2", "by": ["district", "tract", "race", "hisp"], "margins": True},
              {"id": "T3", "by": ["agegrp", "sex", "race", "hisp"], "margins": True},
              {"id": "T4", "by": ["emp", "sex", "agegrp"], "margins": True}]
    (out / "schema.yaml").write_text(yaml.safe_dump(schema))
    (out / "tables.yaml").write_text(yaml.safe_dump({"tables": tables}))
    return out / "data.csv", out / "schema.yaml", out / "tables.yaml"


def _peak() -> float:
    return max(resource.getrusage(r).ru_maxrss for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


def _cpu() -> float:
    """CPU seconds (user + sys) of this process and its finished children."""
    return sum(sum(resource.getrusage(r)[:2]) for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def _protect(args, paths) -> int:
    """``audit protect`` with the defaults (its own audit of the release first), each stage's wall and CPU
    seconds: the before-audit, the search, the re-audit (the audits timed on the pool, the search the rest)."""
    from audit.inputs import load_inputs
    from audit.policy.rules import load_rules
    from audit.protection.options import ProtectOptions
    from audit.protection.protect import protect
    from audit.scale.protect import ProtectPool

    stages: list[tuple[float, float]] = []

    class Timed(ProtectPool):
        def audit(self, *a, **k):
            wall, cpu = time.perf_counter(), _cpu()
            try:
                return super().audit(*a, **k)
            finally:
                stages.append((time.perf_counter() - wall, _cpu() - cpu))

    wall, cpu = time.perf_counter(), _cpu()
    log = (lambda line: print(f"[{time.perf_counter() - wall:7.1f}s] {line}", file=sys.stderr, flush=True)) \
        if args.verbose else None
    report = protect(load_inputs(*paths), ProtectOptions(), load_rules("default"), args.out / "protect",
                     log=log, pool=Timed())
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    audits = [(round(w, 1), round(c, 1)) for w, c in stages]
    units = report.get("units", [])
    print(json.dumps({"persons": args.persons, "before": report["before"]["verdict"],
                      "before_summary": report["before"]["summary"], "after": report["after"]["verdict"],
                      "after_summary": report["after"]["summary"],
                      "recommendation": bool(report.get("recommendation")), "reason": report.get("reason", ""),
                      "cells_suppressed": report.get("totals", {}).get("cells_suppressed"),
                      "units": [{k: u.get(k) for k in ("status", "iterations", "explanations", "suppressed", "seconds")}
                                for u in units],
                      "audits_wall_cpu_s": audits, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                      "search_cpu_s": round(cpu - sum(c for _, c in stages), 1), "peak_mb": round(_peak())}))
    return 0 if report.get("recommendation") else 1


def main() -> int:
    from audit.pipeline import AuditOptions, run_audit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=100_000)
    ap.add_argument("--tracts", type=int, default=80)
    ap.add_argument("--out", type=Path, default=Path("county-out"))
    ap.add_argument("--protect", action="store_true", help="run audit protect (which audits first) instead of audit run")
    ap.add_argument("--verbose", action="store_true", help="with --protect, the search's lines on stderr")
    args = ap.parse_args()
    paths = write_county(args.out / "inputs", args.persons, args.tracts)
    if args.protect:  # protect audits the release first: one audit, not run_audit's and then protect's
        return _protect(args, paths)
    wall, cpu = time.perf_counter(), _cpu()
    doc = run_audit(*paths, args.out / "run", AuditOptions(report=False))
    unit = doc["units"][0]
    cells = (unit.get("cells") or {}).get("values")  # published values of the unit
    print(json.dumps({"persons": args.persons, "cells": cells, "status": unit["status"], "reason": unit.get("reason", ""),
                      "summary": {k: unit["summary"][k] for k in ("verified", "undecided", "refuted", "derived_singletons")},
                      "verdict": doc["verdict"], "wall_s": round(time.perf_counter() - wall, 1),
                      "cpu_s": round(_cpu() - cpu, 1), "peak_mb": round(_peak())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
