"""GaussSuppression's z3 test table (SSBtools' ``z3``) through our secondary suppression (tests/test_peers.py).

    python bench/peers_z3.py [--kostragr 100,400] [--max-n 5] [--exact-rounds 40] [--max-iterations 60]

The table as ``z3_context`` builds it (the whole of z3, or the regions of the given kostragr), its
primaries ``count <= max-n`` (zeros included), protection levels 1 below and 1 above (as the other
peer rows). Prints the cells, primaries and those the exact intervals leave too narrow alone, then our
secondary suppression (cells, persons, rounds, minimal, lower bound) and its exact re-audit, with CPU
seconds (time.process_time). GaussSuppression's own z3 pattern is not known here: its tests check only
sums of its row indices.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from audit.attacks.exact import ExactOptions  # noqa: E402
from audit.policy.rules import Rule, Rules  # noqa: E402
from audit.protection.options import Policy, ProtectOptions  # noqa: E402
from audit.protection.secondary import suppress_unit, too_narrow  # noqa: E402
from test_peers import LEVELS, _intervals, z3_context  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kostragr", default="", help="comma-separated kostragr codes to keep (default: all of z3)")
    ap.add_argument("--max-n", type=int, default=5)
    ap.add_argument("--exact-rounds", type=int, default=40)
    ap.add_argument("--max-iterations", type=int, default=60)
    args = ap.parse_args()
    start = time.process_time()
    kostragr = tuple(args.kostragr.split(",")) if args.kostragr else None
    ctx, primary, counts = z3_context(Path(tempfile.mkdtemp()), kostragr, args.max_n)
    alone = {k for k, *_ in too_narrow(_intervals(ctx), LEVELS)}
    print(f"z3{' kostragr ' + args.kostragr if kostragr else ''}: {len(counts)} cells, {len(primary)} primaries "
          f"({sum(counts[k] == 0 for k in primary)} zeros), {len(alone)} too narrow alone "
          f"[{time.process_time() - start:.1f} s CPU]", flush=True)
    rules = Rules("levels", (Rule("protection_levels", settings=LEVELS),))
    options = ProtectOptions(exact=ExactOptions(explain="none"), exact_rounds=args.exact_rounds,
                             max_iterations=args.max_iterations)
    unit = suppress_unit(ctx, Policy.from_rules(rules), options, log=lambda m: print(m, flush=True))
    print(f"ours: {unit.status} {unit.reason}, {len(unit.complementary)} secondary cells, "
          f"{sum(counts[k] for k in unit.complementary)} persons in them, {unit.iterations} rounds, "
          f"minimal {unit.minimal}, lower bound {unit.lower_bound} [{time.process_time() - start:.1f} s CPU]")
    if unit.status == "protected":
        after = _intervals(ctx, unit.complementary)
        print(f"re-audit: {len({k for k, *_ in too_narrow(after, LEVELS)})} hidden cells too narrow, "
              f"all certified {all(iv.certified for iv in after.values())} [{time.process_time() - start:.1f} s CPU]")


if __name__ == "__main__":
    main()
