"""`audit linear` on the cs208 Fulton persons: the packed query matrix against the old dense path (issues 6, 31).

    python bench/linear.py [--sizes 1000,5000,25766] [--methods lstsq,lp] [--dense-sizes 1000,5000,25766]
                           [--memory-mb 4096] [--noise 0] [--record PATH [--note TEXT]]

Rows: the first N persons of FultonPUMS5full.csv (25,766 in all, 13,634 distinct public records);
secret ``uscitizen``, the notebook's 13 public columns, 2n random hashed queries, exact answers (or
Gaussian noise of scale ``--noise``). Each measurement runs in a fresh process, capped at
``--memory-mb`` of address space, and reports the whole attack (queries, answers, solver): wall and
CPU seconds, peak resident memory (MB, the process's high-water mark, about 130 MB of it Python and the
libraries) and accuracy. ``ours`` is LinearReconstruction (queries over the distinct public records,
bit-packed; LSQR, or the LP over those groups); a method over ``--memory-mb`` by our estimate is
shown refused, as ``audit linear`` would refuse it (exit 2). ``dense`` is the path before issue 31:
the ``2n x n`` bool masks, ``numpy.linalg.lstsq`` on them as float64 (``8 k n`` bytes: 10.6 GB at
25,766 rows) or the row-by-row LP (tests/test_linear.py's reference).

Measured on the 2-core development machine, shared (load about 12), ``--memory-mb 2000``, wall seconds:

    rows  distinct  method  ours                       dense (before issue 31)
    1000       788  lstsq     1.2 s   146 MB  0.9880     5.7 s   177 MB  0.9880
    1000       788  lp       18.7 s   317 MB  0.9880    31.1 s   429 MB  0.9860
    5000      2980  lstsq    15.3 s   157 MB  0.9766   452.0 s   964 MB  0.9766
    5000      2980  lp      refused (3,733 MB)          out of memory
   25766     13634  lstsq   265.6 s   248 MB  0.9806   out of memory (10.6 GB; the issue's 9.89 GiB error)
   25766     13634  lp      refused (87,240 MB)         out of memory

(``audit linear`` on the 25,766 rows: 51 s of CPU, 257 MB peak RSS.) Accuracies differ only where
alike rows of different secrets tie: the dense path rounded float noise, ours rounds them down.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

import numpy as np  # noqa: E402
import record  # noqa: E402

from audit.attacks.engines.linear import LinearReconstruction, round_secret  # noqa: E402
from audit.attacks.engines.linear_mitigations import Mitigation, answer_queries  # noqa: E402
from audit.attacks.engines.linear_target import (NOTEBOOK_PUBLIC, hashed_masks, load_frame, prepare,  # noqa: E402
                                                 random_predicates)
from audit.errors import AuditError  # noqa: E402


def _data() -> Path:
    for cand in (ROOT.parent / "shared" / "data" / "cs208", Path("/work/shared/data/cs208")):
        if (cand / "FultonPUMS5full.csv").exists():
            return cand / "FultonPUMS5full.csv"
    return Path("data/cs208/FultonPUMS5full.csv")


def one(path: Path, n: int, method: str, path_kind: str, noise: float, memory_mb: int) -> dict:
    """One measurement in this process (the child's side)."""
    frame = load_frame(path).head(n).reset_index(drop=True)
    target = prepare(frame, "uscitizen", NOTEBOOK_PUBLIC, str(path))
    mitigation = Mitigation("noise", noise) if noise else Mitigation()
    start, cpu = time.perf_counter(), time.process_time()
    if path_kind == "ours":
        try:
            attack = LinearReconstruction(target, "uscitizen", method=method, mitigation=mitigation, memory_mb=memory_mb)
        except AuditError as err:
            return {"refused": err.message}
        result = attack.evaluate()
        accuracy, distinct = result.accuracy, attack.distinct
    else:
        from test_linear import dense_lp

        rng = np.random.default_rng(0)
        masks = hashed_masks(target.public, random_predicates(2 * n, target.public.shape[1], rng))
        answers = answer_queries(target.secret, masks, mitigation, rng)
        estimate = (np.linalg.lstsq(masks.astype(float), answers, rcond=None)[0] if method == "lstsq"
                    else dense_lp(masks, answers, target.lo, target.hi)[0])
        accuracy = float((round_secret(estimate, target.lo, target.hi) == target.secret).mean())
        distinct = len(np.unique(target.public, axis=0))
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "accuracy": accuracy,
            "distinct": distinct,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(path: Path, n: int, method: str, kind: str, noise: float, memory_mb: int, timeout: float) -> dict:
    """Run :func:`one` in a fresh process capped at ``memory_mb`` of address space (plus the interpreter's)."""
    cap = (memory_mb + 1024) * 2 ** 20  # address space runs ahead of resident memory (libraries, arenas)
    cmd = [sys.executable, __file__, "--one", f"{n},{method},{kind}", "--noise", str(noise), "--memory-mb",
           str(memory_mb), "--data", str(path)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
    except subprocess.TimeoutExpired:
        return {"failed": f"over {timeout:.0f} s"}
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"failed": "out of memory" if "Memory" in last or "bad_alloc" in last else last[:60]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000,25766", help="row counts taken from FultonPUMS5full.csv")
    ap.add_argument("--methods", default="lstsq,lp")
    ap.add_argument("--dense-sizes", default="1000,5000,25766", help="sizes also run on the old dense path")
    ap.add_argument("--memory-mb", type=int, default=4096, help="our bound, and the dense path's cap")
    ap.add_argument("--noise", type=float, default=0.0, help="Gaussian noise scale on the answers (0: exact)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per measurement")
    ap.add_argument("--data", type=Path, default=_data())
    ap.add_argument("--one", help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.one:
        n, method, kind = args.one.split(",")
        print(json.dumps(one(args.data, int(n), method, kind, args.noise, args.memory_mb)))
        return
    dense_sizes = {int(s) for s in args.dense_sizes.split(",") if s.strip()}
    print(f"# {args.data.name}, secret uscitizen, 2n hashed queries, noise {args.noise:g}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, cores={os.cpu_count()}, cap {args.memory_mb} MB")
    header = f"{'rows':>6} {'distinct':>8} {'queries':>7} {'method':<6} {'path':<6} {'seconds':>8} {'CPU s':>8} {'peak MB':>8} {'accuracy':>8}"
    print(header)
    print("-" * len(header))
    rows = []
    for n in (int(s) for s in args.sizes.split(",") if s.strip()):
        for method in args.methods.split(","):
            for kind in ("ours", "dense") if n in dense_sizes else ("ours",):
                r = measure(args.data, n, method, kind, args.noise, args.memory_mb, args.timeout)
                head = f"{n:>6} {r.get('distinct', ''):>8} {2 * n:>7} {method:<6} {kind:<6}"
                if "seconds" in r:
                    print(f"{head} {r['seconds']:>8.2f} {r['cpu']:>8.2f} {r['peak_mb']:>8.0f} {r['accuracy']:>8.4f}", flush=True)
                    rows.append([n, r["distinct"], 2 * n, method, kind, f"{r['seconds']:.2f}", f"{r['cpu']:.2f}",
                                 f"{r['peak_mb']:.0f}", f"{r['accuracy']:.4f}"])
                else:
                    print(f"{head} {r.get('refused') or r['failed']}", flush=True)
                    rows.append([n, r.get("distinct", ""), 2 * n, method, kind, r.get("refused") or r["failed"],
                                 "", "", ""])
    record.write_from_args(ap, args, f"`audit linear` on the first {args.sizes} Fulton persons, ours against the dense "
                           f"path", "linear", ["rows", "distinct", "queries", "method", "path", "wall s", "CPU s",
                                               "peak MB", "accuracy"], rows,
                           f"Each measurement in a fresh process capped at {args.memory_mb} MB; noise {args.noise:g}.")


if __name__ == "__main__":
    main()
