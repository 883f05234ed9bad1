"""The paper's integer program (HiGHS) against the SAT engine, on the same problems in one process.

    python bench/ip_vs_sat.py [--sizes 5 10 20] [--unit-seconds 120] [--record PATH [--note TEXT]]

Problems: households blocks of about N households from samples/households, and the CACM 7-person
block. Prints, per problem and engine: time to audit (generate-then-verify, no explanations),
claims decided per second, verified / undecided counts, and the IP/SAT ratios of time and of
claims decided per second (the fair one when the IP stops at its time limit with claims undecided).
The SAT row is the default pipeline (linear proofs, then the solver); the IP row is the paper's
pipeline: every claim the candidates, pruning and enumeration leave is verified by its own MIP.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from audit.attacks.exact import ExactOptions, audit_unit  # noqa: E402
from audit.inputs import load_inputs  # noqa: E402

import record  # noqa: E402


def problems(sizes: list[int]):
    hh = load_inputs(ROOT / "samples/households/data.csv", ROOT / "samples/households/schema.yaml",
                     ROOT / "samples/households/tables.yaml").problems()
    for n in sizes:
        p = min(hh, key=lambda q: (abs(q.n_rows[1] - n), q.geo))
        yield f"households N={p.n_rows[1]} ({'/'.join(p.geo)})", p
    b7 = load_inputs(ROOT / "samples/block7/data.csv", ROOT / "samples/block7/schema.yaml",
                     ROOT / "samples/block7/tables.yaml").problems()[0]
    yield "block7 (CACM)", b7


def run(problem, engine: str, seconds: float):
    start = time.perf_counter()
    try:
        r = audit_unit(problem, ExactOptions(engine=engine, explain="none", unit_seconds=seconds,
                                             linear=engine == "sat"))
    except TimeoutError as err:
        return time.perf_counter() - start, None, str(err)
    return time.perf_counter() - start, r, ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[5, 10, 20])
    ap.add_argument("--unit-seconds", type=float, default=120.0)
    record.add_arguments(ap)
    args = ap.parse_args()
    head = (f"{'problem':32} {'engine':6} {'seconds':>8} {'claims/s':>9} {'verified':>8} {'undecided':>9} "
            f"{'time x':>7} {'rate x':>7}")
    print(head)
    print("-" * len(head))
    rows = []
    for name, problem in problems(args.sizes):
        times, rates = {}, {}
        for engine in ("sat", "ip"):
            secs, r, err = run(problem, engine, args.unit_seconds)
            times[engine] = secs
            if r is None:
                print(f"{name:32} {engine:6} {secs:8.2f} {'-':>9} {'-':>8} {'-':>9} {'':>7}  ({err})")
                rows.append([name, engine, f"{secs:.2f}", "", "", "", "", "", err])
                continue
            rates[engine] = (len(r.verdicts) - len(r.undecided) + r.refuted) / secs
            ratio = rate = ""
            if engine == "ip":
                ratio = f"{'>=' if r.undecided else ''}{secs / times['sat']:.0f}"
                rate = f"{rates['sat'] / max(rates['ip'], 1e-9):.0f}"
            print(f"{name:32} {engine:6} {secs:8.2f} {rates[engine]:9.1f} {len(r.verified):8d} "
                  f"{len(r.undecided):9d} {ratio:>7} {rate:>7}", flush=True)
            rows.append([name, engine, f"{secs:.2f}", f"{rates[engine]:.1f}", len(r.verified), len(r.undecided),
                         ratio and f"{ratio}×", rate and f"{rate}×", ""])
    record.write_from_args(ap, args, "The paper's integer program against the SAT pipeline, same problems", "audit",
                           ["problem", "engine", "seconds", "claims decided / s", "verified", "undecided",
                            "IP / SAT time", "SAT / IP claims per second", "stopped"], rows,
                           "Wall seconds, both engines in one process through the same generate-then-verify steps "
                           "(no explanations); the IP is the paper's eqs. 3-16 on HiGHS.")


if __name__ == "__main__":
    main()
