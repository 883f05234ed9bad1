"""The seeds' headline results replayed beside the papers' own figures (docs/explanation/replay.md).

Usage: ``python bench/replay.py {gtv,cacm,linear,rank,reid,all} [--blocks 50] [--tracts 2] [--seed 0]
[--out bench/results/replay] [--images docs/images]``. Each replay writes ``OUT/NAME.md`` (a record:
front matter, the tables beside the paper's, what it cost) and ``OUT/NAME.json`` (the figures the
page and its plots are drawn from), and its SVG plots to ``IMAGES/replay-*.svg``. Seeded: the same
seed gives the same figures. tests/test_replay.py checks that the page quotes the records' tables.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: see audit/__init__.py

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import record  # noqa: E402
import replay_gtv  # noqa: E402
import replay_seeds as seeds  # noqa: E402

NAMES = ("gtv", "cacm", "linear", "rank", "reid")
TITLES = {"gtv": "Generate-then-verify's Tables 2 and 3 on generated household blocks",
          "cacm": "The CACM 7-person block: its solutions with and without the paper's dropped statistics",
          "linear": "The OpenDP notebook's reconstruction against rounding, noise and subsampling",
          "rank": "RAP-RANK's match rates against its baselines",
          "reid": "The Census Bureau's re-identification rates beside the exact attack's"}


def _usage() -> tuple[float, float]:
    """CPU seconds (user + sys) of this process and its children, and their peak RSS in MB."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
            max(me.ru_maxrss, kids.ru_maxrss) / 1024)


def write_record(out: Path, name: str, command: str, options: str, lines: list[str], note: str,
                 figures: dict, cost: dict) -> Path:
    """``OUT/NAME.md`` (front matter, tables, note, cost) and ``OUT/NAME.json`` (``figures`` and ``cost``)."""
    out.mkdir(parents=True, exist_ok=True)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    spent = (f"Cost: {cost['cpu_s']:.1f} s of CPU (user + sys, this process and its children), "
             f"{cost['wall_s']:.1f} s wall, peak RSS {cost['peak_rss_mb']:.0f} MB.")
    path = out / f"{name}.md"
    rec = record.Record(title=TITLES[name], topic="replay", date=datetime.date.today().isoformat(),
                        commit=record.commit(), command=command, options=options,
                        machine=f"{os.cpu_count()} shared cores (load {cost['load']:.1f}), {memory:.0f} GiB",
                        body="\n".join([*lines, "", note, "", spent]), path=path)
    path.write_text(rec.text(), encoding="utf-8")
    (out / f"{name}.json").write_text(json.dumps({"figures": figures, "cost": cost}, indent=1, default=str) + "\n",
                                      encoding="utf-8")
    return path


def _rank_svg(curves: dict[str, list[float]], title: str) -> str:
    from audit.outputs.svg import line_chart

    return line_chart({name: list(zip(seeds.GRID, curve)) for name, curve in curves.items()}, title=title,
                      xlabel="k/u (top-k rows over unique rows)", ylabel="match rate", ylim=(0.0, 1.0))


def run(name: str, args: argparse.Namespace, folder: Path) -> Path:
    """One replay: measure it, write its record, JSON and plots; the record's path."""
    cpu0, wall0 = _usage()[0], time.perf_counter()
    images: dict[str, str] = {}
    if name == "gtv":
        got = replay_gtv.replay(args.blocks, args.seed, folder)
        lines, images["gtv"], images["gtv-baselines"] = replay_gtv.tables(got), replay_gtv.plot(got), replay_gtv.plot_baselines(got)
        options = f"{args.blocks} blocks, seed {args.seed}, exact attack defaults with --explain none"
        note = (f"Paper: {replay_gtv.PAPER_FIGURE2}. The replay's blocks are generated "
                f"(samples/households/generate.py) at the paper's sizes, each the first block of a tract of "
                f"{replay_gtv.PER_TRACT} generated blocks (~{got['tract_households']} households, its tract prior; all "
                f"{got['state_households']:,} generated households are the state prior); 8 columns, so k stops at 8. "
                f"Undecided claims: {got['undecided']}.")
    elif name == "cacm":
        got = seeds.cacm(folder)
        lines = seeds.cacm_lines(got)
        options = "samples/block7, SAT engine, seed 0, enumeration up to 64 datasets"
        note = (f"The one solution equals the paper's Table 4: {'yes' if got['equals_table4'] else 'NO'}. The records "
                f"8FBS, 36FBM, 66FBM and 84MBM are in every solution without 2A and 2B: "
                f"{'yes' if got['common_holds'] else 'NO'}.")
    elif name == "linear":
        got = seeds.linear(folder, args.seed)
        svg = got.pop("svg")
        images.update({f"linear-{k}": svg[k] for k in ("accuracy", "tradeoff")})
        lines = seeds.linear_lines(got)
        options = f"--sweep --params {','.join(map(str, seeds.NOTEBOOK_GRID))} --seed {args.seed} (10 trials a point)"
        note = ("Notebook: each spot value is one draw; its curves average 10 trials over 1, 11, ..., 91, with 60% "
                "(all zeros) as the baseline, the rounding dip near the mean answer (~20) and noise above 10 "
                "below the baseline.")
    elif name == "rank":
        got = seeds.rank(folder, args.seed)
        lines = seeds.rank_lines(got)
        for case, curves in seeds.rank_curves(got).items():
            images[f"rank-{case}"] = _rank_svg(curves, f"RAP-RANK against its baselines: {case}")
        options = "bench/rank.py --quick --device cpu (1 thread), and the H200 files of 2026-11-27"
        note = ("Paper (Dick et al.): RAP-RANK above every sampling baseline but the holdout when started "
                "uniformly, above the holdout/tract baseline when started at it (Figs. 1-3); on ACS 2-way "
                "marginals above the holdout at every k/u and above 0.8 at low k/u (Fig. 4).")
    else:
        got = seeds.reid(folder, args.seed, args.tracts)
        lines = seeds.reid_lines(got)
        options = f"{args.tracts} seeded tracts (seed {args.seed}), audit run --explain none, SF1 block tables"
        note = (f"Tracts {', '.join(got['tracts'])}: {got['blocks']} blocks. The Bureau's figures as "
                "docs/guides/reidentification.md quotes them; its definitions differ (see the guide).")
    cpu1, peak = _usage()
    cost = {"cpu_s": cpu1 - cpu0, "wall_s": time.perf_counter() - wall0, "peak_rss_mb": peak,
            "load": os.getloadavg()[0]}
    args.images.mkdir(parents=True, exist_ok=True)
    for image, svg in images.items():
        (args.images / f"replay-{image}.svg").write_text(svg, encoding="utf-8")
    command = f"python bench/replay.py {name}" + (f" --blocks {args.blocks}" if name == "gtv" else "")
    return write_record(args.out, name, command, options, lines, note, got, cost)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("replay", choices=(*NAMES, "all"))
    ap.add_argument("--blocks", type=int, default=50, help="gtv: household blocks attacked (the paper's 50)")
    ap.add_argument("--tracts", type=int, default=2, help="reid: seeded tracts of the Bureau's extract")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "replay")
    ap.add_argument("--images", type=Path, default=ROOT / "docs" / "images")
    args = ap.parse_args(argv)
    if args.replay == "all":  # each in its own process, so that each record's peak RSS is its own
        options = ["--blocks", str(args.blocks), "--tracts", str(args.tracts), "--seed", str(args.seed),
                   "--out", str(args.out), "--images", str(args.images)]
        return max(subprocess.run([sys.executable, __file__, name, *options]).returncode for name in NAMES)
    with tempfile.TemporaryDirectory() as folder:
        print(f"wrote {run(args.replay, args, Path(folder))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
