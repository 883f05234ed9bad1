"""``audit protect`` on the bundled samples, the peers' tables and the Census extract: cells, time, memory.

Usage: ``python bench/protect.py [SAMPLE ...] [--tables FILE] [--out DIR] [--greedy] [--extract N] [--tract]
[--workers W] [--record PATH [--note TEXT]]``; SAMPLE is ``sf1`` (default), ``households``, ``block7`` or
``z3`` (GaussSuppression's z3 table with its ``maxN = 5`` primaries suppressed by the schedule,
tests/test_peers.py's ``z3_context``). Runs :func:`audit.protection.protect.protect` with the default
options and the default rules (the product's figure) on ``--workers`` processes
(:class:`audit.scale.protect.ProtectPool`), and with ``--greedy`` also with ``--hitting greedy`` (the
baseline: a greedy hitting set, as the peers' heuristics, no lower bound). Prints per input: units
protected, cells suppressed, units proved minimal, cells the pruning took out, whether the re-audit
passes with nothing undecided, whether protected.csv is the re-audited release (read back by
tests/test_protect_scale.py's ``release_matches_reaudit``), wall and CPU seconds (this process and its
workers), cells per CPU second, and peak memory (this process; the largest worker). ``--extract N``: about N blocks of the
Bureau's extract (every k-th, bench/scale.py's subset; 0: all 8,530) with the SF1 block tables
(``--tract``: with the tract tables), and the wall time extrapolated to every block.
``--tables`` replaces a sample's schedule. ``--record PATH`` also writes the table as a record (bench/README.md).
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "samples" / "sf1"), str(ROOT / "tests")]


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _run(inputs, options, rules, out: Path, pool) -> dict:
    from audit.protection.protect import protect

    start, cpu = time.perf_counter(), _cpu()
    report = protect(inputs, options, rules, out, pool=pool, progress=True)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    csv_check = "not written"
    if report.get("release_files"):  # protected.csv read back against the re-audit (tests/test_protect_scale.py)
        from test_protect_scale import release_matches_reaudit

        files = (inputs.data_path, inputs.schema.source, inputs.schedule.source)
        try:
            csv_check = f"as re-audited ({release_matches_reaudit(out, *map(Path, files))} hidden values)"
        except AssertionError as exc:
            csv_check = f"MISMATCH: {exc}"
    units = list(report.get("units", ())) + list(report.get("levels", ()))
    cells = report.get("totals", {}).get("cells_suppressed") or 0
    return {"units": sum(u["status"] == "protected" for u in units), "cells": cells,
            "minimal": sum(bool(u.get("minimal")) for u in units if u["status"] == "protected"),
            "pruned": sum(u.get("pruned", 0) for u in units),
            "passes": report["recommendation"] is not None and report["after"]["summary"].get("undecided", 0) == 0,
            "undecided": report["after"]["summary"].get("undecided", 0), "blocks": report["before"]["summary"]["units"],
            "csv": csv_check, "wall": wall, "cpu": cpu, "per_s": cells / cpu if cpu else 0.0,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "worker_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def _inputs(name: str, args, out: Path):
    from audit.inputs import load_inputs

    if name == "extract":
        from scale import EXTRACT, extract_subset, tract_tables

        path, total = extract_subset(EXTRACT, args.extract or None, out)
        tables = tract_tables(EXTRACT, out) if args.tract else ROOT / "samples" / "sf1" / "tables.yaml"
        return load_inputs(path, ROOT / "samples" / "sf1" / "schema.yaml", tables), total
    if name == "z3":
        from test_peers import z3_context

        z3_context(out)
        return load_inputs(out / "data.csv", out / "schema.yaml", out / "tables.yaml"), None
    folder = ROOT / "samples" / name
    return load_inputs(folder / "data.csv", folder / "schema.yaml", Path(args.tables or folder / "tables.yaml")), None


def main(argv: list[str] | None = None) -> int:
    import record
    from audit.policy.rules import load_rules
    from audit.protection.options import ProtectOptions
    from audit.scale.protect import ProtectPool

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", nargs="*", help="sf1, households, block7 or z3")
    ap.add_argument("--tables", help="a schedule in place of the sample's tables.yaml")
    ap.add_argument("--out", help="keep the outputs here (default: a temporary folder)")
    ap.add_argument("--greedy", action="store_true", help="also run --hitting greedy")
    ap.add_argument("--extract", type=int, help="about this many blocks of the extract (0: all)")
    ap.add_argument("--tract", action="store_true", help="with --extract: the tract tables too")
    ap.add_argument("--workers", type=int, default=1)
    record.add_arguments(ap)
    args = ap.parse_args(argv)
    if set(args.samples) - {"sf1", "households", "block7", "z3"}:
        ap.error(f"unknown sample: {sorted(set(args.samples) - {'sf1', 'households', 'block7', 'z3'})}")
    names = list(args.samples or ([] if args.extract is not None else ["sf1"]))
    names += ["extract"] if args.extract is not None else []
    rules = load_rules(None)
    pool = ProtectPool(args.workers)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        for name in names:
            (out / name).mkdir(parents=True, exist_ok=True)
            inputs, total = _inputs(name, args, out / name)
            runs = [("exact (default)", _run(inputs, ProtectOptions(), rules, out / name / "exact", pool))]
            if args.greedy:
                runs.append(("greedy", _run(inputs, replace(ProtectOptions(), hitting="greedy"), rules,
                                            out / name / "greedy", pool)))
            rows.append((name, runs, total))
            print(f"{name}: {runs}", file=sys.stderr, flush=True)
    header = ["input", "search", "units", "units protected", "cells", "proved minimal", "pruned", "re-audit",
              "undecided", "protected.csv", "wall s", "CPU s", "cells / CPU s", "peak RSS MB (worker)"]
    table = []
    for name, runs, total in rows:
        for label, r in runs:
            table.append([name, label, r["blocks"], r["units"], r["cells"], r["minimal"], r["pruned"],
                          "pass" if r["passes"] else "FAIL", r["undecided"], r["csv"], f"{r['wall']:.1f}", f"{r['cpu']:.1f}",
                          f"{r['per_s']:.1f}", f"{r['rss']:.0f} ({r['worker_rss']:.0f})"])
        if total and runs[0][1]["blocks"] < total:
            r = runs[0][1]
            scale = total / r["blocks"]
            table.append([name, f"extrapolated to {total} blocks (wall: CPU / {args.workers} workers)", "", "",
                          f"{r['cells'] * scale:.0f}", "", "", "", "", "",
                          f"{r['cpu'] * scale / args.workers / 60:.1f} min",
                          f"{r['cpu'] * scale / 60:.1f} min", "", ""])
    print(f"workers: {args.workers}")
    print(record.table(header, table))
    passes = all(r["passes"] for _, runs, _ in rows for _, r in runs)
    record.write_from_args(ap, args, f"audit protect on {', '.join(names)}, {args.workers} worker(s)", "protect",
                           header, table, f"The re-audit {'passes with nothing undecided' if passes else 'FAILS'} "
                           f"on every input; CPU seconds are this process's and its workers' (getrusage).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
