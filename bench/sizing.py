"""A unit's estimated memory beside its measured peak (issue 31): the samples and the peer tables.

Usage: ``python bench/sizing.py [--cases block7,z1,z2,z3,...]``. For each case, every unit's cost is
estimated before anything is built (:func:`audit.attacks.unit.unit_cost`, :func:`~audit.attacks.unit.plan`:
row slots, or atoms x cells in histogram space), then the unit is audited with the default options in a
fresh process (the unit pickled, as a worker receives it) whose peak RSS (ru_maxrss) is measured, less
its peak before the attack (interpreter, libraries, the problem: the worker's own footprint,
``BASE_MB`` in the limits). Prints estimate, measured and
their ratio; the target is within 1.5x either way for units of at least ``FLOOR`` MB (below it the
process's own noise dominates). The largest unit of each sample is measured.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

FLOOR = 50  # MB: smaller units are printed, not judged
CHILD = r"""
import json, pickle, resource, sys, time
import highspy, pysat.solvers  # loaded before the baseline: the worker's own footprint
from audit.attacks.exact import ExactOptions, audit_unit
from audit.attacks.unit import plan, unit_cost
problem = pickle.loads(open(sys.argv[1], "rb").read())
options = ExactOptions()
cost = unit_cost(problem, options)
no_slots, refused = plan(cost, options)
estimate = cost.cell_megabytes if no_slots else cost.megabytes
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.process_time()
result = audit_unit(problem, options)
print(json.dumps({"rows": problem.n_rows[1], "cells": cost.cells, "combinations": cost.combinations,
                  "keys": cost.keys, "space": "cells" if no_slots else "slots", "estimate": estimate,
                  "refused": refused, "status": result.status, "cpu": time.process_time() - start,
                  "base": base, "measured": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base}))
"""


def cases(folder: Path) -> dict[str, tuple[Path, Path, Path]]:
    """name -> (data, schema, tables): the samples, and the peer tables written as in tests/test_peers.py."""
    import pandas as pd

    from test_cellspace import z2_folder
    from test_peers import PEERS, _cross_table, z3_context

    out = {s: (ROOT / "samples" / s / "data.csv", ROOT / "samples" / s / "schema.yaml",
               ROOT / "samples" / s / "tables.yaml") for s in ("block7", "households", "sf1")}
    table = pd.read_csv(PEERS / "gausssuppression_z1.csv")
    (folder / "z1").mkdir()
    _cross_table(folder / "z1", table, ("region", "hovedint"), "ant", table["ant"] <= 3)
    (folder / "z2").mkdir()
    z2_folder(folder / "z2")
    (folder / "z3").mkdir()
    z3_context(folder / "z3", None, 5)
    extract = ROOT.parents[1] / "shared" / "data" / "recon_replication" / "extract" / "rhdf_bt_0solvar_extract.csv"
    if not extract.exists():
        extract = ROOT.parent / "shared" / "data" / "recon_replication" / "extract" / "rhdf_bt_0solvar_extract.csv"
    if extract.exists():  # the Census extract's largest block (count cells only: histogram space)
        sys.path.insert(0, str(ROOT / "samples" / "sf1"))
        from convert import convert

        frame = convert(pd.read_csv(extract, dtype=str, keep_default_na=False))
        size = frame.groupby(["tract", "block"])["sex"].transform("size")
        frame[size == size.max()].to_csv(folder / "extract.csv", index=False)
        out["extract"] = (folder / "extract.csv", out["sf1"][1], out["sf1"][2])
    for name in ("z1", "z2", "z3"):
        out[name] = (folder / name / "data.csv", folder / name / "schema.yaml", folder / name / "tables.yaml")
    return out


def largest_unit(data: Path, schema: Path, tables: Path, to: Path) -> str:
    """Pickle the case's largest unit to ``to`` (the child loads it alone: no tabulation in its peak)."""
    import pickle

    from audit.inputs import load_inputs

    problem = max(load_inputs(data, schema, tables).problems(), key=lambda p: p.n_rows[1])
    to.write_bytes(pickle.dumps(problem))
    return "/".join(problem.geo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="block7,households,sf1,z1,z2,z3,extract")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp())
    every = cases(folder)
    print(f"{'case':<11} {'unit':<16} {'rows':>6} {'cells':>6} {'combos':>7} {'space':>6} {'estimate MB':>11} "
          f"{'measured MB':>11} {'ratio':>6} {'cpu s':>6} {'base MB':>7}")
    worst, n_judged = 1.0, 0
    for name in args.cases.split(","):
        data, schema, tables = every[name]
        geo = largest_unit(data, schema, tables, folder / f"{name}.pickle")
        proc = subprocess.run([sys.executable, "-c", CHILD, str(folder / f"{name}.pickle")],
                              capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        if proc.returncode:
            print(f"{name:<11} failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        ratio = r["estimate"] / max(r["measured"], 1.0)
        judged = max(r["estimate"], r["measured"]) >= FLOOR
        if judged:
            worst, n_judged = max(worst, ratio, 1 / ratio), n_judged + 1
        print(f"{name:<11} {geo[-16:]:<16} {r['rows']:>6} {r['cells']:>6} {r['combinations']:>7} {r['space']:>6} "
              f"{r['estimate']:>11.0f} {r['measured']:>11.0f} {ratio:>6.2f} {r['cpu']:>6.1f} {r['base']:>7.0f}"
              + ("" if judged else "  (below the floor: not judged)") + (f"  refused: {r['refused']}" if r["refused"] else ""))
    print(f"worst ratio {worst:.2f} over {n_judged} judged units (target 1.5)")
    return 0 if worst <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
