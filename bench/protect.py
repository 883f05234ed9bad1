"""``audit protect`` on the bundled samples: cells, proved minima and CPU, the exact search beside the greedy one.

Usage: ``python bench/protect.py [SAMPLE ...] [--tables FILE] [--out DIR]``; SAMPLE is ``sf1``
(default), ``households`` or ``block7``. Runs :func:`audit.protection.protect.protect` with the
default options and the default rules (the product's figure), then with ``--hitting greedy`` (the
baseline: a greedy hitting set, as the peers' heuristics, no lower bound), one after the other in
this process, and prints per sample: units protected, cells suppressed, units proved minimal, cells
the pruning took out, whether the re-audit passes, and CPU seconds (:func:`time.process_time`), with
the ratios exact / greedy. ``--tables`` replaces the sample's schedule (e.g. the tract tables of
``samples/sf1/make_tables.py --tract``).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _run(inputs, options, rules, out: Path) -> dict:
    from audit.protection.protect import protect

    start = time.process_time()
    report = protect(inputs, options, rules, out)
    units = list(report.get("units", ())) + list(report.get("levels", ()))
    return {"units": sum(u["status"] == "protected" for u in units),
            "cells": report.get("totals", {}).get("cells_suppressed"),
            "minimal": sum(bool(u.get("minimal")) for u in units if u["status"] == "protected"),
            "pruned": sum(u.get("pruned", 0) for u in units),
            "passes": report["recommendation"] is not None, "cpu": time.process_time() - start}


def main(argv: list[str] | None = None) -> int:
    from audit.inputs import load_inputs
    from audit.policy.rules import load_rules
    from audit.protection.options import ProtectOptions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", nargs="*", default=["sf1"], choices=["sf1", "households", "block7"])
    ap.add_argument("--tables", help="a schedule in place of the sample's tables.yaml")
    ap.add_argument("--out", help="keep the outputs here (default: a temporary folder)")
    args = ap.parse_args(argv)
    rules = load_rules(None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        for name in args.samples:
            folder = ROOT / "samples" / name
            inputs = load_inputs(folder / "data.csv", folder / "schema.yaml", Path(args.tables or folder / "tables.yaml"))
            exact = _run(inputs, ProtectOptions(), rules, out / name / "exact")
            greedy = _run(inputs, replace(ProtectOptions(), hitting="greedy"), rules, out / name / "greedy")
            rows.append((name, exact, greedy))
            print(f"{name}: exact {exact}, greedy {greedy}", file=sys.stderr, flush=True)
    print("| sample | search | units protected | cells | proved minimal | pruned | re-audit | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, exact, greedy in rows:
        for label, r in (("exact (default)", exact), ("greedy", greedy)):
            print(f"| {name} | {label} | {r['units']} | {r['cells']} | {r['minimal']} | {r['pruned']} | "
                  f"{'pass' if r['passes'] else 'FAIL'} | {r['cpu']:.1f} |")
        ratio = lambda k: f"{exact[k] / greedy[k]:.2f}x" if greedy[k] else "-"  # noqa: E731
        print(f"| {name} | exact / greedy | | {ratio('cells')} | | | | {ratio('cpu')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
