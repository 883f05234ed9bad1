"""Scale benchmark (issue 9): the Bureau's 8,530 reconstructed blocks with the block-level SF1 tables.

Usage: ``python bench/scale.py [--blocks N] [--workers 2] [--out DIR] [--explain records|none] [--tract]
[--record PATH [--note TEXT]]``.
Converts ``../shared/data/recon_replication/extract/rhdf_bt_0solvar_extract.csv`` with
samples/sf1/convert.py, keeps every k-th block when ``--blocks`` is given (the same size mix as the
whole file), and runs :func:`audit.scale.runner.run_scaled` on a process pool. Explanations are as in
``audit run`` by default (``--explain records``: the product's figure); ``--explain none`` measures the
attack alone. ``--tract`` adds the tract tables (``samples/sf1/make_tables.py --tract``: PCT12, PCT12A-O),
so that each tract is solved jointly with its blocks (:mod:`audit.attacks.joint`) before its blocks are audited.
Prints wall time, units per second, peak memory (parent: ru_maxrss and tracemalloc; workers:
ru_maxrss of the largest child), the size of the claim store, the share of blocks uniquely
reconstructed, the per-unit time distribution by block size, and the extrapolation to all 8,530
blocks when a subset was run; ``--record PATH`` writes those figures as a record (bench/README.md).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "samples" / "sf1"))
sys.path.insert(0, str(ROOT / "bench"))
_FILE = Path("shared", "data", "recon_replication", "extract", "rhdf_bt_0solvar_extract.csv")
# beside the checkout (../shared), or beside the folder of worktrees (../../shared)
EXTRACT = next((p / _FILE for p in ROOT.parents[:2] if (p / _FILE).exists()), ROOT.parent / _FILE)


def extract_subset(source, blocks: int | None, out: Path) -> tuple[Path, int]:
    """The extract converted (samples/sf1/convert.py) to ``out/data.csv``, every k-th block kept when
    ``blocks`` is given (about that many: the same size mix as the whole file); (path, blocks in the file)."""
    from convert import convert

    data = convert(pd.read_csv(source, dtype=str, keep_default_na=False))
    key = data["state"] + data["county"] + data["tract"] + data["block"]
    every = key.drop_duplicates().tolist()
    if blocks and blocks < len(every):
        step = len(every) / blocks
        data = data[key.isin({every[int(i * step)] for i in range(blocks)})]
    path = out / "data.csv"
    data.to_csv(path, index=False)
    return path, len(every)


def tract_tables(source, out: Path) -> Path:
    """The SF1 tables with the tract tables (``samples/sf1/make_tables.py --tract``), written to ``out``."""
    from make_tables import main as make_tables

    layouts = Path(source).resolve().parents[1] / "layouts"
    tables = out / "tables_tract.yaml"
    make_tables([str(layouts / "sf1_vars_race_binaries.csv"), "--descriptors",
                 str(layouts / "DATA_FIELD_DESCRIPTORS_classified.csv"), "--tract", "-o", str(tables)])
    return tables


def main(argv: list[str] | None = None) -> int:
    import record
    from audit.attacks.exact import ExactOptions
    from audit.scale.runner import ScaleOptions, run_scaled
    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=str(EXTRACT))
    ap.add_argument("--blocks", type=int, help="run every k-th block, about this many (default: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--explain", default="records")
    ap.add_argument("--unit-seconds", type=float, default=120.0)
    ap.add_argument("--out", default="/tmp/audit-bench-scale")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--tract", action="store_true", help="add the tract tables (PCT12): tracts solved jointly with their blocks")
    ap.add_argument("--tracemalloc", action="store_true", help="trace parent allocations (slows the parent)")
    record.add_arguments(ap)
    args = ap.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path, total_blocks = extract_subset(args.source, args.blocks, out)
    schema = load_schema(ROOT / "samples" / "sf1" / "schema.yaml")
    tables = tract_tables(args.source, out) if args.tract else ROOT / "samples" / "sf1" / "tables.yaml"
    schedule = load_schedule(tables, schema)
    options = ExactOptions(explain=args.explain, unit_seconds=args.unit_seconds)
    if args.tracemalloc:
        tracemalloc.start()
    start, cpu = time.perf_counter(), time.process_time()
    doc = run_scaled(path, schema, schedule, options, ScaleOptions(workers=args.workers, resume=args.resume),
                     out / "run", str(path))
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    _, traced_peak = tracemalloc.get_traced_memory()
    parent_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    s, sc = doc["summary"], doc["scale"]
    n = s["units"]
    rows = [("blocks audited", f"{n} of {total_blocks}"), ("persons", f"{doc['inputs']['rows']}"),
            ("workers", str(args.workers)), ("explanations", args.explain),
            ("wall time", f"{wall:.1f} s"), ("units / s", f"{n / wall:.2f}"),
            ("CPU parent / workers", f"{cpu:.0f} s / {usage.ru_utime + usage.ru_stime:.0f} s"),
            ("unit seconds p50 / p90 / p99 / max", "{p50} / {p90} / {p99} / {max}".format(**sc["seconds_per_unit"])),
            ("sum of unit seconds", f"{sc['seconds_per_unit']['sum']:.0f} s"),
            ("peak RSS parent / largest worker", f"{parent_mb:.0f} MB / {child_mb:.0f} MB"),
            *([("peak Python allocations in parent (tracemalloc)", f"{traced_peak / 2**20:.0f} MB")]
              if args.tracemalloc else []),
            ("uniquely reconstructed", f"{s['units_reconstructed']} ({s['units_reconstructed'] / n:.1%})"),
            ("with derived singletons", f"{s['units_with_derived_singletons']} ({s['units_with_derived_singletons'] / n:.1%})"),
            ("units by status", ", ".join(f"{k} {v}" for k, v in sc["units_by_status"].items())),
            ("undecided claims", str(s["undecided"])),
            ("claim store (claims.csv.gz)", f"{doc['claim_store']['claims']} claims, "
                                            f"{doc['claim_store']['bytes'] / 2**20:.1f} MB")]
    if n < total_blocks:
        rows.append((f"extrapolated to {total_blocks} blocks", f"{wall * total_blocks / n / 60:.1f} min"))
    exact = (doc.get("reidentification") or {}).get("exact") or {}
    if exact.get("status") == "run":  # the schema's attacker model: block, sex, binned age -> race, ethnicity
        def pct(r: dict) -> str:
            return f"{r['count']} of {r['of']} ({r['rate']:.1%}, {r['ci'][0]:.1%}-{r['ci'][1]:.1%})"

        inf = exact["inference"]
        rows += [("unique on the quasi-identifiers", pct(exact["unique"])),
                 ("unique with the sensitive columns", pct(exact["unique_with_sensitive"])),
                 ("putative (linked) / confirmed", f"{pct(exact['putative'])} / {pct(exact['confirmed'])}"),
                 ("precision", pct(exact["precision"])),
                 ("sensitive values proved", pct(inf["all"]["attack"])),
                 ("  baselines unit / parent mode", " / ".join(pct(b) for b in inf["all"]["baselines"].values())),
                 ("proved, persons unlike the majority", pct(inf["unlike_majority"]["attack"])),
                 ("  baselines unit / parent mode",
                  " / ".join(pct(b) for b in inf["unlike_majority"]["baselines"].values())),
                 ("persons not measured", str(exact["persons_not_measured"]))]
    from audit.scale.parts import read_parts

    levels: dict = {}
    for u in read_parts(out / "run" / "parts"):
        lv = levels.setdefault(u["level"], {"units": 0, "reconstructed": 0, "proved jointly": 0})
        lv["units"] += 1
        lv["reconstructed"] += bool(u["reconstructed"])
        lv["proved jointly"] += any("proved jointly" in note for note in u["notes"])
    if len(levels) > 1:
        rows += [(f"{level} units: reconstructed (proved jointly)",
                  f"{c['reconstructed']} of {c['units']} ({c['proved jointly']})") for level, c in levels.items()]
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print("\nby block size: rows, units, reconstructed, mean unit seconds")
    import json

    secs: dict = {}
    for line in (out / "run" / "parts").glob("part-*.jsonl"):
        for unit_line in line.read_text().splitlines():
            try:
                u = json.loads(unit_line)
            except json.JSONDecodeError:
                continue
            secs.setdefault(u["rows"], []).append(u["seconds"])
    for b in sc["by_size"]:
        lo, _, hi = b["rows"].rstrip("+").partition("-")
        hi = hi or (lo if not b["rows"].endswith("+") else 10**9)
        vals = [x for r, xs in secs.items() if int(lo) <= r <= int(hi) for x in xs]
        mean = sum(vals) / max(len(vals), 1)
        print(f"  {b['rows']:>8}  {b['units']:>5}  {b['reconstructed']:>5}  {mean:.2f}")
        rows.append((f"blocks of {b['rows']} persons: units, reconstructed, mean unit s",
                     f"{b['units']}, {b['reconstructed']}, {mean:.2f}"))
    record.write_from_args(ap, args, f"audit run on {n} of the extract's {total_blocks} blocks"
                           f"{' with the tract tables' if args.tract else ''}, {args.workers} workers", "scale",
                           ["measure", "value"], rows,
                           f"{n} blocks in {wall:.0f} s wall, {s['undecided']} claims undecided; CPU is the parent's "
                           f"(process_time) and the workers' (getrusage).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
