"""State-scale benchmark (issue 37): a synthetic state built from the Census extract, audited with the defaults.

Usage: ``python bench/state.py [--blocks 270000] [--counties 67] [--seed 0] [--run-blocks N] [--workers 2]
[--tract] [--out DIR]``.

The state is built from the Bureau's reconstructed extract (converted by samples/sf1/convert.py), so that
blocks are as varied as real ones: every synthetic tract copies one real tract of the extract (drawn at
random), its blocks' sizes are drawn from that tract's block sizes, and each block's persons are drawn with
replacement from that tract's persons (so the state's block sizes follow the extract's). Counties take
whole tracts, about ``blocks / counties`` blocks each. The file is written in geography order, one tract at a time (memory flat in the state's size).

``--run-blocks N`` audits the first N blocks only (whole tracts) and extrapolates; without it the whole state
is run. The run is the product's own command, ``audit run DATA -s schema -t tables -o OUT --workers W``
(the SF1 block tables; ``--tract`` adds the tract tables), timed with its peak memory per process
(``/usr/bin/time -v`` of the parent process), and the sizes of
findings.json (with its side files past 10,000 units), claims.csv.gz and report.html, and the CPU seconds of the parent and its workers,
each (the parent reads, tabulates, builds and sends every unit and merges their findings: at 590 blocks, a seventh of the CPU). Per block-size band it prints units, seconds and their share
of the time, so the next optimisation goes where the time is.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "samples" / "sf1"))
_FILE = Path("shared", "data", "recon_replication", "extract", "rhdf_bt_0solvar_extract.csv")
EXTRACT = next((p / _FILE for p in ROOT.parents[:2] if (p / _FILE).exists()), ROOT.parent / _FILE)
BANDS = [(1, 9), (10, 29), (30, 99), (100, 199), (200, 10**9)]


def build_state(out: Path, blocks: int, counties: int, seed: int, source: Path = EXTRACT) -> dict:
    """Write the synthetic state's persons to ``out`` (CSV, sorted by geography); return its shape."""
    from convert import convert

    rng = np.random.default_rng(seed)
    data = convert(pd.read_csv(source, dtype=str, keep_default_na=False))
    geo = ["state", "county", "tract", "block"]
    data["_tract"] = data["state"] + data["county"] + data["tract"]
    tracts = {t: g.drop(columns=geo + ["_tract"]).reset_index(drop=True) for t, g in data.groupby("_tract")}
    sizes = {t: data[data["_tract"] == t].groupby("block").size().to_numpy() for t in tracts}
    names = sorted(tracts)
    written = persons = n_tracts = county = in_county = 0
    per_county = max(1, -(-blocks // counties))
    with open(out, "w", newline="") as fh:
        header = True
        while written < blocks:
            if in_county >= per_county:  # whole tracts per county, so every tract keeps its real block count
                county, in_county = county + 1, 0
            source_tract = names[rng.integers(len(names))]
            pool, sz = tracts[source_tract], sizes[source_tract]
            n_blocks = min(len(sz), blocks - written)
            block_sizes = rng.choice(sz, size=n_blocks, replace=True)
            rows = pool.iloc[rng.integers(len(pool), size=int(block_sizes.sum()))].reset_index(drop=True)
            rows.insert(0, "block", np.repeat([f"{b + 1000:04d}" for b in range(n_blocks)], block_sizes))
            rows.insert(0, "tract", f"{n_tracts % 1000000:06d}")
            rows.insert(0, "county", f"{2 * county + 1:03d}")
            rows.insert(0, "state", "99")
            rows.to_csv(fh, index=False, header=header)
            header = False
            written += n_blocks
            in_county += n_blocks
            persons += len(rows)
            n_tracts += 1
    return {"blocks": written, "persons": persons, "tracts": n_tracts, "counties": county + 1}


def _first_blocks(path: Path, n: int, out: Path) -> int:
    """Copy the first ``n`` blocks' rows (whole tracts) of ``path`` to ``out``; return the blocks copied."""
    seen, tract_of_last = set(), None
    with open(path) as src, open(out, "w") as dst:
        dst.write(src.readline())
        for line in src:
            state, county, tract, block = line.split(",", 4)[:4]
            key = (state, county, tract, block)
            if key not in seen:
                if len(seen) >= n and tract != tract_of_last:
                    break
                seen.add(key)
                tract_of_last = tract
            dst.write(line)
    return len(seen)


def _peak_mb(stderr: str) -> float:
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(found.group(1)) / 1024 if found else float("nan")


def _cpu_s(stderr: str) -> float:
    """User + system seconds of the command and the workers it waited for (``/usr/bin/time -v``)."""
    found = [re.search(rf"{kind} time \(seconds\): ([0-9.]+)", stderr) for kind in ("User", "System")]
    return sum(float(f.group(1)) for f in found) if all(found) else float("nan")


# The product's command, then the CPU of this process (the parent: reading, tabulating, building and sending the
# units, merging their findings) and of its workers, which the pool has joined by then.
_SPLIT = ("import resource, sys\nfrom audit.cli import main\nsys.argv = ['audit', *sys.argv[1:]]\ntry:\n    main()\n"
          "finally:\n    s, c = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
          "    print(f'CPU split: parent {s.ru_utime + s.ru_stime:.2f} workers {c.ru_utime + c.ru_stime:.2f}', file=sys.stderr)")


def _split(stderr: str) -> tuple[float, float]:
    """The parent's and its workers' CPU seconds (:data:`_SPLIT`)."""
    found = re.search(r"CPU split: parent ([0-9.]+) workers ([0-9.]+)", stderr)
    return (float(found.group(1)), float(found.group(2))) if found else (float("nan"), float("nan"))


def run(data: Path, out: Path, workers: int, tract: bool) -> dict:
    """The product's command on ``data`` with the defaults; wall time, peak memory and output sizes."""
    tables = ROOT / "samples" / "sf1" / "tables.yaml"
    if tract:
        from make_tables import main as make_tables

        layouts = EXTRACT.parents[1] / "layouts"
        tables = out.parent / "tables_tract.yaml"
        make_tables([str(layouts / "sf1_vars_race_binaries.csv"), "--descriptors",
                     str(layouts / "DATA_FIELD_DESCRIPTORS_classified.csv"), "--tract", "-o", str(tables)])
    cmd = ["/usr/bin/time", "-v", sys.executable, "-c", _SPLIT, "run", str(data), "-s",
           str(ROOT / "samples" / "sf1" / "schema.yaml"), "-t", str(tables), "-o", str(out),
           "--workers", str(workers), "--resume"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"audit run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    doc = json.loads((out / "findings.json").read_text())
    files = ("findings.json", "findings.units.jsonl.gz", "findings.checks.jsonl.gz", "claims.csv.gz", "report.html")
    return {"wall": wall, "parent_mb": _peak_mb(done.stderr), "cpu": _cpu_s(done.stderr), "split": _split(done.stderr), "doc": doc,
            "sizes": {f: (out / f).stat().st_size / 2**20 for f in files if (out / f).exists()}}


def bands(parts: Path) -> list[tuple[str, int, float]]:
    """Units and seconds per block-size band, from the run's parts."""
    acc = {b: [0, 0.0] for b in BANDS}
    for part in parts.glob("part-*.jsonl"):
        for line in part.read_text().splitlines():
            try:
                u = json.loads(line)
            except json.JSONDecodeError:
                continue
            for lo, hi in BANDS:
                if lo <= u.get("rows", 0) <= hi:
                    acc[(lo, hi)][0] += 1
                    acc[(lo, hi)][1] += u.get("seconds", 0.0)
    return [(f"{lo}-{hi}" if hi < 10**9 else f"{lo}+", n, s) for (lo, hi), (n, s) in acc.items()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=270_000, help="blocks in the state (default 270,000: about 2M persons)")
    ap.add_argument("--counties", type=int, default=67)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run-blocks", type=int, help="audit only the first N blocks (whole tracts) and extrapolate")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tract", action="store_true", help="add the tract tables (PCT12, PCT12A-O)")
    ap.add_argument("--out", default="/tmp/audit-bench-state")
    ap.add_argument("--build-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state = out / f"state-{args.blocks}-{args.seed}.csv"
    if not state.exists():
        t = time.perf_counter()
        shape = build_state(state.with_suffix(".tmp"), args.blocks, args.counties, args.seed)
        state.with_suffix(".tmp").rename(state)
        (out / f"{state.stem}.json").write_text(json.dumps(shape))
        print(f"built {state} in {time.perf_counter() - t:.0f} s: {shape}")
    shape = json.loads((out / f"{state.stem}.json").read_text())
    print(f"state: {shape['blocks']:,} blocks, {shape['persons']:,} persons, {shape['tracts']:,} tracts, "
          f"{shape['counties']} counties ({state.stat().st_size / 2**20:.0f} MB)")
    if args.build_only:
        return 0
    data, n = state, shape["blocks"]
    if args.run_blocks and args.run_blocks < n:
        data = out / f"first-{args.run_blocks}.csv"
        n = _first_blocks(state, args.run_blocks, data)
    r = run(data, out / f"run-{n}{'-tract' if args.tract else ''}", args.workers, args.tract)
    doc, scale = r["doc"], r["doc"]["scale"]
    factor = shape["blocks"] / n
    print(f"\naudit run, defaults, --workers {args.workers}{' + tract tables' if args.tract else ''}: {n:,} blocks "
          f"({doc['inputs']['rows']:,} persons)")
    rows = [("wall time", f"{r['wall']:.0f} s"), ("blocks / s", f"{n / r['wall']:.1f}"),
            ("CPU (parent and workers)", f"{r['cpu']:.0f} s, {1000 * r['cpu'] / n:.0f} ms per block"),
            ("of which the parent, the workers", f"{r['split'][0]:.0f} s, {r['split'][1]:.0f} s ("
             f"{1000 * r['split'][0] / n:.0f} and {1000 * r['split'][1] / n:.0f} ms per block)"),
            ("core-hours per million blocks", f"{r['cpu'] / n * 1e6 / 3600:.0f}"),
            ("peak RSS (largest process)", f"{r['parent_mb']:.0f} MB"),
            ("units by status", ", ".join(f"{k} {v}" for k, v in scale["units_by_status"].items())),
            ("undecided claims", f"{doc['summary']['undecided']:,}"),
            *[(f"{name}", f"{mb:.1f} MB") for name, mb in r["sizes"].items()]]
    if factor > 1:
        rows += [(f"whole state (x{factor:.1f}), extrapolated", f"{r['wall'] * factor / 3600:.2f} h"),
                 ("whole state's CPU on 2 cores, extrapolated", f"{r['cpu'] * factor / 2 / 3600:.2f} h"),
                 *[(f"{name}, extrapolated", f"{mb * factor:.0f} MB") for name, mb in r["sizes"].items()
                   if name not in ("report.html", "findings.json")]]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    by_band = bands(out / f"run-{n}{'-tract' if args.tract else ''}" / "parts")
    total = sum(s for _, _, s in by_band)
    print("\nby block size: persons, units, unit seconds, share of unit seconds")
    for band, units, secs in by_band:
        print(f"  {band:>8}  {units:>7,}  {secs:>9.0f}  {secs / max(total, 1e-9):>6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
