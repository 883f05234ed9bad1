"""Least squares vs LP reconstruction on the cs208 Fulton PUMS extract (issue 6).

    python bench/linear.py [--sizes 100,1000] [--repeats 3] [--data-dir DIR]

Rows: the 100-row reconstruction extract, then the first N rows of FultonPUMS5full.csv; secret
``uscitizen``, the notebook's 13 public columns, 2n random hashed queries with exact answers, and
(a second block) Gaussian noise sigma = 2. Prints n, queries, method, seconds (median of the
repeats, solver only), accuracy and the LP/LS time ratio. The full file has duplicate public
records, so exact reconstruction is not always possible there (see 'dup' = rows sharing their
public identifiers with another row).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from audit.attacks.engines.linear import reconstruct  # noqa: E402
from audit.attacks.engines.linear_mitigations import Mitigation, answer_queries  # noqa: E402
from audit.attacks.engines.linear_target import (NOTEBOOK_PUBLIC, hashed_masks, load_frame, prepare,  # noqa: E402
                                                 random_predicates)


def _data_dir() -> Path:
    for cand in (Path(__file__).resolve().parents[2] / "shared" / "data" / "cs208", Path("/work/shared/data/cs208")):
        if cand.exists():
            return cand
    return Path("data/cs208")


def bench(frame, label: str, repeats: int, mitigation: Mitigation) -> list[tuple]:
    target = prepare(frame, "uscitizen", NOTEBOOK_PUBLIC, label)
    n = target.n
    dup = int(frame[list(NOTEBOOK_PUBLIC)].duplicated(keep=False).sum())
    rows, times = [], {}
    warm = hashed_masks(target.public, random_predicates(8, target.public.shape[1], np.random.default_rng(99)))
    for method in ("lstsq", "lp"):  # warm-up: first-call costs (BLAS threads, HiGHS import) are not the solver's
        reconstruct(warm, warm @ target.secret, method, target.lo, target.hi)
    for method in ("lstsq", "lp"):
        secs, accs = [], []
        for rep in range(repeats):
            rng = np.random.default_rng(rep)
            masks = hashed_masks(target.public, random_predicates(2 * n, target.public.shape[1], rng))
            answers = answer_queries(target.secret, masks, mitigation, rng)
            start = time.perf_counter()
            guess = reconstruct(masks, answers, method, target.lo, target.hi)
            secs.append(time.perf_counter() - start)
            accs.append(float((guess == target.secret).mean()))
        times[method] = statistics.median(secs)
        rows.append((label, n, 2 * n, dup, mitigation.label, method, times[method], statistics.mean(accs), target.baseline))
    rows.append((label, n, 2 * n, dup, mitigation.label, "lp/ls", times["lp"] / times["lstsq"], None, None))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000", help="row counts taken from FultonPUMS5full.csv")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=_data_dir())
    args = parser.parse_args()
    small = load_frame(args.data_dir / "FultonPUMS5reconstruction.csv")
    full = load_frame(args.data_dir / "FultonPUMS5full.csv")
    frames = [("extract", small)] + [(f"full[:{s}]", full.head(int(s)).reset_index(drop=True))
                                     for s in args.sizes.split(",") if s.strip()]
    print(f"# OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, cores={os.cpu_count()}, "
          f"repeats={args.repeats} (median seconds, mean accuracy)")
    header = f"{'data':<11} {'n':>5} {'queries':>7} {'dup':>4} {'answers':<24} {'method':<6} {'seconds':>9} {'accuracy':>8} {'baseline':>8}"
    print(header)
    print("-" * len(header))
    for mitigation in (Mitigation(), Mitigation("noise", 2.0)):
        for label, frame in frames:
            for r in bench(frame, label, args.repeats, mitigation):
                label_, n, k, dup, ans, method, secs, acc, base = r
                if acc is None:
                    print(f"{label_:<11} {n:>5} {k:>7} {dup:>4} {ans:<24} {method:<6} {secs:>8.1f}x")
                else:
                    print(f"{label_:<11} {n:>5} {k:>7} {dup:>4} {ans:<24} {method:<6} {secs:>9.4f} {acc:>8.3f} {base:>8.3f}")


if __name__ == "__main__":
    main()
