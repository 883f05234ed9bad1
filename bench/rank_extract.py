"""RAP-RANK's CPU cost at release scale: the extract's blocks, two option sets side by side (issue 34).

    python bench/rank_extract.py [--blocks 120] [--a KEY=VAL,...] [--b KEY=VAL,...] [--repeat 1] [--workers 1]
                                 [--record PATH]

Every k-th block of the whole extract (about ``--blocks``: the same size mix as the 8,530 blocks, as
bench/scale.py picks them), ranked with ``audit run --rank``'s options (``RankOptions(seed=0)``) changed by
``--a`` and ``--b`` (e.g. ``--b steps=150,lr=0.2``; ``--b`` empty: one set only). The sets alternate in one
process (``--repeat`` rounds) so both see the same load. Per set: CPU seconds (this process and its workers)
per block and per person, the extrapolation to the 8,530 blocks (63,969 persons) on 2 cores, the match rate
at k/u 0.2 / 0.5 / 1.0, the share of runs reproducing the release, the ranking's putative/confirmed
re-identifications, and how many blocks rank the same rows in the same order as set A.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from audit.attacks.engines.rank import RankAttack  # noqa: E402
from audit.attacks.engines.rank_options import RankOptions  # noqa: E402
from rank_cases import extract_blocks  # noqa: E402
import record  # noqa: E402

BLOCKS, PERSONS = 8530, 63969


def options(text: str) -> dict:
    """``KEY=VAL,...`` as RankOptions overrides, each value of its field's type."""
    kinds = {f.name: f.type for f in fields(RankOptions)}
    out: dict = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        key, value = item.split("=")
        kind = kinds[key]
        out[key] = (value.lower() in ("1", "true", "yes")) if "bool" in kind else (
            int(value) if kind.startswith("int") else float(value) if "float" in kind else value)
    return out


def cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(problems, frame, schema, overrides: dict, workers: int) -> dict:
    from audit.attacks.reidentify import ranking_part

    c, w = cpu(), time.perf_counter()
    res = RankAttack(problems, frame, schema.geography, RankOptions(seed=0, **overrides), workers=workers).evaluate()
    c, w = cpu() - c, time.perf_counter() - w
    curves = np.array([u.attack for u in res.units if u.attack])
    part = ranking_part(res, frame, schema.geography, schema.attacker) if schema.attacker else {}
    return {"cpu": c, "wall": w, "match": curves.mean(0), "consistent": float(np.mean([u.consistent for u in res.units])),
            "rounded": float(np.mean([u.rounded for u in res.units])), "ranked": [u.ranked for u in res.units],
            "putative": part.get("putative", {}).get("rate"), "confirmed": part.get("confirmed", {}).get("rate")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=120)
    ap.add_argument("--a", default="", help="set A's RankOptions overrides, KEY=VAL,...")
    ap.add_argument("--b", default=None, help="set B's overrides (omit: set A alone)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--min-rows", type=int, default=0, help="only the picked blocks of at least this many persons")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--data", type=Path, default=None)
    record.add_arguments(ap)
    args = ap.parse_args(argv)
    problems, frame, schema = extract_blocks(args.data, args.blocks)
    RankAttack(problems[:1], options=RankOptions(runs=1, steps=1)).evaluate()   # imports paid before either set
    problems = [p for p in problems if p.n_rows[1] >= args.min_rows]
    persons = sum(p.n_rows[1] for p in problems)
    sets = {"A": options(args.a)} | ({"B": options(args.b)} if args.b is not None else {})
    got: dict = {k: [] for k in sets}
    for _ in range(args.repeat):
        for name, overrides in sets.items():
            got[name].append(measure(problems, frame, schema, overrides, args.workers))
            m = got[name][-1]
            print(f"{name} {overrides}: CPU {m['cpu']:.1f} s, wall {m['wall']:.1f} s", flush=True)
    load = open("/proc/loadavg").read().split()[:3]
    rows = []
    for name, overrides in sets.items():
        ms = got[name]
        c = float(np.median([m["cpu"] for m in ms]))
        m = ms[0]
        total = c / persons * PERSONS
        same = sum(a == b for a, b in zip(got["A"][0]["ranked"], m["ranked"]))
        rows.append([name, ", ".join(f"{k}={v}" for k, v in overrides.items()) or "defaults", len(problems), persons,
                     f"{c:.1f}", f"{c / len(problems):.4f}", f"{c / persons:.4f}", f"{total:.0f}", f"{total / 2 / 60:.1f}",
                     " / ".join(f"{m['match'][i]:.3f}" for i in (3, 9, 19)), f"{m['consistent']:.3f} / {m['rounded']:.3f}",
                     f"{m['putative']:.1%} / {m['confirmed']:.1%}" if m["putative"] is not None else "n/a",
                     f"{same} of {len(problems)}"])
    head = ["set", "options", "blocks", "persons", "CPU s", "CPU s a block", "CPU s a person",
            f"CPU s for {BLOCKS} blocks (by persons)", "min on 2 cores", "match rate k/u 0.2 / 0.5 / 1.0",
            "runs reproducing (after projection / rounded)", "putative / confirmed", "rankings as set A's"]
    print(f"load {' '.join(load)}")
    print(record.table(head, rows))
    record.write_from_args(ap, args, f"RAP-RANK on {len(problems)} extract blocks (every k-th), CPU per block", "rank",
                           head, rows, f"load {' '.join(load)}: sets side by side in one process, the median of "
                           f"{args.repeat} rounds; extrapolated by persons to the {BLOCKS} blocks.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
