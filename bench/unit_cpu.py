"""CPU of each unit's audit in one process: the work of ``bench/scale.py`` without the pool's noise.

Usage: ``python bench/unit_cpu.py DATA TABLES [--schema samples/sf1/schema.yaml]``, e.g. the
``data.csv`` and ``tables_tract.yaml`` that ``bench/scale.py --tract --out DIR`` leaves in ``DIR``.
Walks the runner's tasks (:func:`audit.scale.runner._tasks`: joint solves, problems, prior rows) and
audits each unit as a worker does (:func:`audit.scale.worker.audit_task`: the default options with the
default policy's attacker model, and the claim store's member encoded), timing it with
:func:`time.process_time`, with the worker's collector settings. Prints a line per coarser unit, then a table of block units by
size and the totals. Two checkouts run side by side on the same files compare their work, not the
machine's load.
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BANDS = ((1, "1"), (2, "2"), (4, "3-4"), (9, "5-9"), (19, "10-19"), (10**9, "20+"))


def main(argv: list[str] | None = None) -> int:
    from audit.attacks.exact import ExactOptions
    from audit.attacks.reidentify import with_attacker
    from audit.findings.claimstore import store_columns
    from audit.findings.document import LISTED_LARGE
    from audit.policy.rules import load_rules
    from audit.problem.coupled import finest_level
    from audit.scale.runner import ScaleOptions, _tasks
    from audit.scale.worker import GC_THRESHOLD, Limits, audit_task
    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("tables")
    ap.add_argument("--schema", default=str(ROOT / "samples" / "sf1" / "schema.yaml"))
    args = ap.parse_args(argv)
    schema = load_schema(Path(args.schema))
    schedule = load_schedule(Path(args.tables), schema)
    options = with_attacker(ExactOptions(), schema, load_rules())
    limits = Limits(claims_cap=LISTED_LARGE, header=store_columns(schema, schedule))  # as a state-sized run
    gc.freeze()  # as a worker sets its collector (audit.scale.worker.init_worker)
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    start = time.process_time()
    tasks = _tasks(args.data, schema, schedule, ScaleOptions(), set(), {"rows": 0}, options.max_rows,
                   options.explain != "none")
    finest = finest_level(schema, schedule)
    bands: dict[str, list] = defaultdict(lambda: [0, 0.0])
    making = audited = 0.0
    while True:
        t = time.process_time()
        try:
            problem, prior, _ = next(tasks)
        except StopIteration:
            break
        making += time.process_time() - t
        t = time.process_time()
        unit = audit_task(problem, options, prior, limits)
        spent = time.process_time() - t
        audited += spent
        if problem.level != finest:
            print(f"{problem.level} {'/'.join(problem.geo)}: {problem.n_rows[1]} persons, "
                  f"{len(problem.constraints)} cells, {spent:.1f} s, {unit.get('status')}")
            continue
        band = next(name for top, name in BANDS if problem.n_rows[1] <= top)
        bands[band][0] += 1
        bands[band][1] += spent
    print(f"\n{'persons':>8} {'units':>6} {'CPU s':>8} {'ms/unit':>8}")
    for _, name in BANDS:
        if name in bands:
            k, s = bands[name]
            print(f"{name:>8} {k:6d} {s:8.1f} {1000 * s / k:8.1f}")
    print(f"\ntasks {making:.1f} s, audits {audited:.1f} s, all {time.process_time() - start:.1f} s of CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
