"""Benchmark of the exact attack: household blocks of N = 5, 10, 20, 40 with the DAS household schedule.

Prints, per block size: seconds to audit a block (median), claims decided per second, verified and
undecided counts, and, when ``--ip`` is given and the IP engine exists, the ratio against the paper's
integer program run in the same process on the same blocks.

    python bench/exact.py [--sizes 5,10,20,40] [--blocks 3] [--ip] [--explain]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from audit.exact import ExactOptions, audit_unit  # noqa: E402
from audit.inputs import load_inputs  # noqa: E402

SAMPLE = ROOT / "samples" / "households"


def blocks(n: int, count: int, seed: int, folder: Path):
    out = folder / f"hh{n}.csv"
    subprocess.run([sys.executable, str(SAMPLE / "generate.py"), "--blocks", str(count), "--min-size", str(n),
                    "--max-size", str(n), "--seed", str(seed), str(out)], check=True, capture_output=True)
    return load_inputs(out, SAMPLE / "schema.yaml", SAMPLE / "tables.yaml").problems()


def measure(problems, options: ExactOptions) -> dict:
    times, decided, verified, undecided, singles, unique = [], 0, 0, 0, 0, 0
    for p in problems:
        t = time.perf_counter()
        r = audit_unit(p, options)
        times.append(time.perf_counter() - t)
        decided += len(r.verified) + r.refuted
        verified += len(r.verified)
        undecided += len(r.undecided)
        singles += sum(v.claim.singleton and not v.direct for v in r.verified)
        unique += r.reconstructed
    return {"median_s": statistics.median(times), "total_s": sum(times), "claims_per_s": decided / sum(times),
            "verified": verified, "derived_singletons": singles, "undecided": undecided, "unique": unique}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5,10,20,40")
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ip", action="store_true", help="also run the paper's IP (slow) for sizes <= 10")
    ap.add_argument("--explain", action="store_true", help="include explanations (one per record, the default of audit run)")
    args = ap.parse_args()
    sat = ExactOptions(explain="records" if args.explain else "none", unit_seconds=600)
    print(f"{'N':>4} {'blocks':>6} {'median s':>9} {'claims/s':>9} {'verified':>9} {'singl.':>7} "
          f"{'undec.':>6} {'unique':>6} {'IP s':>8} {'IP/SAT':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            problems = blocks(n, args.blocks, args.seed, Path(tmp))
            row = measure(problems, sat)
            ip_s = ratio = "-"
            if args.ip and n <= 10:
                try:
                    ip = measure(problems, ExactOptions(engine="ip", explain="none", unit_seconds=600, linear=False))
                    ip_s, ratio = f"{ip['median_s']:.2f}", f"{ip['total_s'] / row['total_s']:.0f}x"
                except ImportError as exc:
                    ip_s = f"n/a ({exc.name})"
            print(f"{n:>4} {len(problems):>6} {row['median_s']:>9.3f} {row['claims_per_s']:>9.0f} {row['verified']:>9} "
                  f"{row['derived_singletons']:>7} {row['undecided']:>6} {row['unique']:>6} {ip_s:>8} {ratio:>7}")


if __name__ == "__main__":
    main()
