"""Run the command line in this process and print what it cost: ``python bench/peak_rss.py protect DATA ...``.

Prints one line to stderr: the peak RSS of this process (the parent, which streams the inputs and writes
the outputs), the largest of its worker processes', CPU seconds (user + sys, the parent and its workers) and
wall seconds. The figures of memory flat in the number of units (bench/results/protect/parent-memory.md).
"""
from __future__ import annotations

import resource
import runpy
import sys
import time
from pathlib import Path


def main() -> int:
    sys.path.append(str(Path(__file__).resolve().parents[1]))  # PYTHONPATH first: another checkout can be measured
    start = time.perf_counter()
    sys.argv = ["audit", *sys.argv[1:]]
    code = 0
    try:
        runpy.run_module("audit", run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"parent peak RSS {own.ru_maxrss / 1024:.0f} MB, largest worker {kids.ru_maxrss / 1024:.0f} MB, "
          f"CPU {own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime:.1f} s, "
          f"wall {time.perf_counter() - start:.1f} s, exit {code}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # spawned workers import this module as __mp_main__: they must not run it
    raise SystemExit(main())
