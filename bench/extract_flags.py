"""The Census extract tract by tract (issue 31): every block measured (none too large) with the default
options, and each tract's uniqueness counts from the exact attack's findings equal to the Bureau's
``BSAb Unique`` / ``BSAbER Unique`` flags.

Usage: ``python bench/extract_flags.py [--tracts N] [--workers 2] [--out DIR] [--report]``. Converts the
extract with samples/sf1/convert.py (block tables, samples/sf1/tables.yaml), keeps the first N tracts
(default all 28; the tract holding the largest block is always kept), runs
:func:`audit.scale.runner.run_scaled`, and prints per tract: blocks, persons, units not done, unique and
unique-with-sensitive beside the flags. ``--report``: no run, the units an earlier (perhaps interrupted)
run left in ``DIR/parts``, every tract whose blocks are all there compared (the others listed as
partial). Exit 1 when a block is not measured or a count differs.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "samples" / "sf1"))
from scale import EXTRACT  # noqa: E402 (bench/scale.py: the extract beside the checkout)


def main(argv: list[str] | None = None) -> int:
    from convert import convert

    from audit.attacks.exact import ExactOptions
    from audit.scale.parts import read_parts
    from audit.scale.runner import ScaleOptions, run_scaled
    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tracts", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("extract-flags-out"))
    ap.add_argument("--report", action="store_true", help="compare the units already in OUT/parts; run nothing")
    args = ap.parse_args(argv)
    source = pd.read_csv(EXTRACT, dtype=str, keep_default_na=False)
    frame = convert(source)
    frame.index = source.index
    where = frame["county"] + "/" + frame["tract"]  # a tract's code repeats across counties
    tracts = sorted(where.unique())
    if args.tracts is not None:
        biggest = frame.groupby([where, frame["block"]]).size().idxmax()[0]
        tracts = sorted(set(tracts[: args.tracts]) | {biggest})
    frame, where = frame[where.isin(tracts)], where[where.isin(tracts)]
    sf1 = ROOT / "samples" / "sf1"
    schema = load_schema(sf1 / "schema.yaml")
    schedule = load_schedule(sf1 / "tables.yaml", schema)
    start = time.perf_counter()
    if args.report:
        units = list(read_parts(args.out / "parts"))
    else:
        units = run_scaled(frame.reset_index(drop=True), schema, schedule, ExactOptions(explain="none"),
                           ScaleOptions(workers=args.workers), args.out)["units"]
    wall = time.perf_counter() - start
    blocks = frame.groupby(where)["block"].nunique()
    got: dict[str, Counter] = {}
    for unit in units:
        tract = "/".join(unit["geo"].split("/")[1:3])
        c = got.setdefault(tract, Counter())
        c["blocks"] += 1
        c["persons"] += unit["rows"]
        c["not_done"] += unit["status"] != "done"
        measure = unit.get("reidentification") or {}
        c["unique"] += measure.get("unique", 0)
        c["unique_with_sensitive"] += measure.get("unique_with_sensitive", 0)
    flags = source.loc[frame.index].assign(tract=where)
    bsab = flags["BSAb Unique"].eq("TRUE").groupby(flags["tract"]).sum()
    bsaber = flags["BSAbER Unique"].eq("TRUE").groupby(flags["tract"]).sum()
    print(f"{'tract':>10} {'blocks':>6} {'persons':>7} {'not done':>8} {'unique':>7} {'BSAb':>7} {'u+sens':>7} {'BSAbER':>7}")
    bad, partial = 0, []
    for tract in tracts:
        c = got.get(tract, Counter())
        if args.report and c["blocks"] < blocks[tract]:
            partial.append(f"{tract} ({c['blocks']} of {blocks[tract]} blocks)")
            continue
        ok = c["not_done"] == 0 and c["unique"] == bsab[tract] and c["unique_with_sensitive"] == bsaber[tract]
        bad += not ok
        print(f"{tract:>10} {c['blocks']:>6} {c['persons']:>7} {c['not_done']:>8} {c['unique']:>7} {bsab[tract]:>7} "
              f"{c['unique_with_sensitive']:>7} {bsaber[tract]:>7}{'' if ok else '  DIFFERS'}")
    done = [t for t in tracts if got.get(t, Counter())["blocks"] == blocks[t]]
    print(f"{len(done)} of {len(tracts)} tracts complete, {len(units)} blocks, "
          f"{sum(got[t]['persons'] for t in done)} persons in them ({wall:.0f} s wall); "
          f"{bad} tracts differ or have a block not measured" + (f"; not finished: {', '.join(partial)}" if partial else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
