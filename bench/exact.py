"""Benchmark of the exact attack: household blocks of N = 10 ... 160 with the DAS household schedule.

Prints, per block size: CPU seconds to audit a block (median and largest), claims decided per CPU
second, verified and undecided counts; for sizes up to ``--baseline-max``, the same blocks through
the row-slot pipeline without the histogram engine (``histogram=False``, the pipeline before it) in
the same process, the ratio of the two and whether their verdicts agree (verified claims,
refutation and solution counts); with ``--ip``, the paper's integer program for N <= 10.
Times are CPU seconds (``time.process_time``): wall-clock is noisy on a shared machine.

    python bench/exact.py [--sizes 10,20,40,80,160] [--blocks 3] [--baseline-max 40] [--ip] [--explain]
                          [--record PATH [--note TEXT]]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: see audit/__init__.py

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from audit.attacks.exact import ExactOptions, audit_unit  # noqa: E402
from audit.inputs import load_inputs  # noqa: E402

import record  # noqa: E402

SAMPLE = ROOT / "samples" / "households"


def blocks(n: int, count: int, seed: int, folder: Path):
    out = folder / f"hh{n}.csv"
    subprocess.run([sys.executable, str(SAMPLE / "generate.py"), "--blocks", str(count), "--min-size", str(n),
                    "--max-size", str(n), "--seed", str(seed), str(out)], check=True, capture_output=True)
    return load_inputs(out, SAMPLE / "schema.yaml", SAMPLE / "tables.yaml").problems()


def measure(problems, options: ExactOptions) -> dict:
    times, decided, verified, undecided, singles, unique, verdicts = [], 0, 0, 0, 0, 0, []
    for p in problems:
        t = time.process_time()
        r = audit_unit(p, options)
        times.append(time.process_time() - t)
        verdicts.append(({v.claim for v in r.verified}, r.refuted, len(r.undecided), r.solutions, r.exhausted))
        decided += len(r.verified) + r.refuted
        verified += len(r.verified)
        undecided += len(r.undecided)
        singles += sum(v.claim.singleton and not v.direct for v in r.verified)
        unique += r.reconstructed
    return {"median_s": statistics.median(times), "max_s": max(times), "total_s": sum(times),
            "claims_per_s": decided / sum(times), "verified": verified, "derived_singletons": singles,
            "undecided": undecided, "unique": unique, "verdicts": verdicts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,20,40,80,160")
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--baseline-max", type=int, default=40,
                    help="run the row-slot pipeline (histogram=False) too, for N up to this (0: never)")
    ap.add_argument("--ip", action="store_true", help="also run the paper's IP (slow) for sizes <= 10")
    ap.add_argument("--explain", action="store_true", help="include explanations (one per record, the default of audit run)")
    record.add_arguments(ap)
    args = ap.parse_args()
    options = ExactOptions(explain="records" if args.explain else "none", unit_seconds=600)
    print(f"{'N':>4} {'blocks':>6} {'median s':>9} {'max s':>7} {'claims/s':>9} {'verified':>9} {'singl.':>7} "
          f"{'undec.':>6} {'unique':>6} {'old s':>8} {'old und.':>8} {'old/new':>7} {'same':>5} {'IP s':>8} {'IP/SAT':>7}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            problems = blocks(n, args.blocks, args.seed, Path(tmp))
            row = measure(problems, options)
            old_s = old_u = ratio = same = ip_s = ip_ratio = "-"
            if n <= args.baseline_max:
                old = measure(problems, replace(options, histogram=False))
                old_s, old_u = f"{old['median_s']:.2f}", str(old["undecided"])
                ratio = f"{old['total_s'] / row['total_s']:.1f}x"
                same = "yes" if old["verdicts"] == row["verdicts"] else "NO"
            if args.ip and n <= 10:
                try:
                    ip = measure(problems, ExactOptions(engine="ip", explain="none", unit_seconds=600, linear=False))
                    ip_s, ip_ratio = f"{ip['median_s']:.2f}", f"{ip['total_s'] / row['total_s']:.0f}x"
                except ImportError as exc:
                    ip_s = f"n/a ({exc.name})"
            print(f"{n:>4} {len(problems):>6} {row['median_s']:>9.3f} {row['max_s']:>7.2f} {row['claims_per_s']:>9.0f} "
                  f"{row['verified']:>9} {row['derived_singletons']:>7} {row['undecided']:>6} {row['unique']:>6} "
                  f"{old_s:>8} {old_u:>8} {ratio:>7} {same:>5} {ip_s:>8} {ip_ratio:>7}", flush=True)
            rows.append([n, len(problems), f"{row['median_s']:.3f}", f"{row['max_s']:.2f}",
                         f"{row['claims_per_s']:,.0f}",
                         f"{row['verified']:,}", f"{row['derived_singletons']:,}", row["undecided"], row["unique"],
                         old_s, old_u, ratio, same, ip_s, ip_ratio])
    record.write_from_args(
        ap, args, f"The exact attack on synthetic household blocks, N = {args.sizes.replace(',', ', ')}", "audit",
        ["N households", "blocks", "median s / block", "max s", "claims / s", "verified", "derived singletons",
         "undecided", "uniquely reconstructed", "old s", "old undecided", "old / new", "same", "IP s", "IP / SAT"],
        rows, "CPU seconds per block (`time.process_time`); `old` is the row-slot pipeline (`histogram=False`) on "
              "the same blocks in the same process, `same` whether the two agree on verified claims, refutations "
              "and solution counts.")


if __name__ == "__main__":
    main()
