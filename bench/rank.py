"""RAP-RANK in the paper's settings: seconds per unit, rows per second and match rates against baselines.

    python bench/rank.py [--case acs|extract|all|tract|acs-paper|holdout] [--quick] [--device auto|cpu|cuda] [--data DIR]
                         [--compare-old] [--ways 2,3] [--tracts N] [--blocks N] [--block-attr B] [--threads N] [--out DIR] [--record PATH]

Cases (bench/rank_cases.py):

* ``acs``: the cs208 Fulton ACS persons (``FultonPUMS5full.csv``), one unit per PUMA, 14 columns, all 2-way
  (and with ``--ways 2,3`` 3-way) marginals published exactly, uniform start, 16 runs x 300 steps; 7 PUMAs x
  1,000 seeded persons (``--quick``: 2 x 300, 8 runs x 100 steps). Baseline: holdout.
* ``extract``: the Census Bureau's reconstructed 2010 extract (``rhdf_bt_0solvar_extract.csv``, 8,530 blocks
  in 28 tracts) under the SF1 block tables (samples/sf1), every block a unit; starts at the tract baseline
  (``parent``) and uniform. Baselines: holdout, tract, county, state. ``--tracts N`` takes N seeded tracts
  (default all; ``--quick``: 1).

The paper's split (``--case tract``, ``--case acs-paper``; bench/rank_cases.py ``tract_case``, ``acs_paper_case``):
each unit's persons halved at random into ``D`` and the holdout; ``D``'s tables published and every curve scored on
``D`` with ``u`` the smaller of the halves' unique rows; the holdout is the tract baseline and the tract start.

* ``tract``: ``--tracts N`` (default 3) seeded tracts of the extract (of states holding another tract), each cut to
  ``--blocks N`` seeded blocks (default 20; 0: all); ``--block-attr with|without|both``: each person's block a
  column to reconstruct under the per-block SF1 tables, or the block tables summed to the tract; the PCT12 tract
  tables too when the layout file is found. Uniform and tract (holdout) starts; state and county baselines from
  the extract's other tracts (with the block attribute, the block drawn from ``D``'s blocks, as the paper does).
* ``acs-paper``: ``--tracts N`` (default 3) PUMAs x 600 persons halved (``--quick``: 2 x 300), ``--ways`` 2,3.
* ``holdout``: no attack; the block-level holdout and tract baselines of ``extract`` scored on one target.

``--record PATH`` writes the paper cases' figures as a record (bench/record.py).

``--compare-old`` first runs the earlier answer form (``combine=matmul``: log-space products through a dense
incidence, one softmax per column slice) and the new one side by side on a reduced ACS case (1 PUMA x 300
persons, 16 runs x 40 steps, same process, same threads) and prints the ratio and the largest difference
of their match-rate curves. The machine these were measured on is shared: compare the ratio, not the seconds.
``--data DIR`` names a folder holding the two CSV files (a GPU machine without /work/shared).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from audit.attacks.engines.rank import RankAttack  # noqa: E402
from audit.attacks.engines.rank_options import RankOptions, resolve_device  # noqa: E402
from rank_cases import acs_case, extract_case  # noqa: E402
import record  # noqa: E402

GRID = tuple(round(0.1 * i, 1) for i in range(1, 11))
# issue 34's measurement of the earlier code: ACS, 2-way marginals, 16 runs, 2 CPU cores
EARLIER = "earlier (issue 34, 2 cores): 3 PUMAs x 600 persons 177-248 s (59-83 s/unit, 7-10 rows/s); 7 x 1,000 884 s (126 s/unit, 7.9 rows/s)"
# what the paper reports (Dick et al. 2023, seed 001), read off its figures
PAPER = {"acs": "paper (ACS, Fig. 4): above the holdout baseline at every k/u; 2-way well above 0.8 at low k/u, 3-way higher",
         "extract": "paper (Census, Figs. 2-3): above 0.9 up to k/u 0.5 without the block attribute; "
                    "the tract-initialised attack above the tract baseline"}
PAPER["tract"] = PAPER["extract"] + " (match rate at k/u; CPU s: the attack's, all units)"
PAPER["acs-paper"] = PAPER["acs"] + " (match rate at k/u; CPU s: the attack's, all units)"
PAPER_TITLE = {"tract": "RAP-RANK in the paper's tract setting on the extract (halved tracts, SF1 block and PCT12 tables)",
               "acs-paper": "RAP-RANK in the paper's ACS setting (halved PUMAs, k-way marginals of one half)",
               "holdout": "The block-level holdout and tract baselines on one target (extract, no attack)"}
PAPER["holdout"] = ("Scored on the same half of each block, the tract baseline falls from its whole-block figure; "
                    "what remains of the gap is the holdout's size (half of a few persons) in an extract whose "
                    "blocks rarely repeat a row.")


def attack(problems, frame, schema, opts: RankOptions):
    res = RankAttack(problems, frame, schema.geography, opts).evaluate()
    return res, res.pooled()


def row(label: str, curve, extra: str = "") -> str:
    cells = "".join(f"{v:>7.3f}" for v in curve) if curve else "   n/a" * len(GRID)
    return f"{label:<34}{extra:>22}{cells}"


def header() -> str:
    return f"{'curve (match rate at k/u)':<34}{'s  s/unit  rows/s':>22}" + "".join(f"{x:>7}" for x in GRID)


def timing(res, rows: int) -> str:
    return f"{res.seconds:6.1f} {res.seconds / max(1, len(res.units)):6.2f} {rows / res.seconds:7.0f}"


def cpu_seconds() -> float:
    """User + system CPU of this process so far (the machine is shared: wall time measures the load too)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def compare_old(data, device: str, threads: int, seed: int) -> dict:
    """The earlier answer form and the new one, side by side on a reduced ACS case."""
    problems, frame, schema, desc = acs_case(data, 1, 300, 2, seed)
    out = {}
    for combine in ("matmul", "factor"):
        opts = RankOptions(runs=16, steps=40, init="uniform", device=device, seed=seed, grid=GRID, combine=combine,
                           threads=threads)
        res, pooled = attack(problems, frame, schema, opts)
        out[combine] = {"seconds": res.seconds, "attack": pooled["attack"]}
    ratio = out["matmul"]["seconds"] / out["factor"]["seconds"]
    diff = float(np.max(np.abs(np.subtract(out["matmul"]["attack"], out["factor"]["attack"]))))
    print(f"compare-old ({desc}, 16 runs x 40 steps, {device}): earlier form {out['matmul']['seconds']:.1f} s, "
          f"new {out['factor']['seconds']:.1f} s: {ratio:.1f}x faster; largest match-rate difference {diff:.4f}")
    return {"case": desc, "old_s": out["matmul"]["seconds"], "new_s": out["factor"]["seconds"], "ratio": ratio,
            "max_curve_difference": diff}


def run_acs(args, device: str) -> dict:
    pumas, persons, runs, steps = (2, 300, 8, 100) if args.quick else (7, 1000, 16, 300)
    doc = {}
    for way in map(int, args.ways.split(",")):
        problems, frame, schema, desc = acs_case(args.data, pumas, persons, way, args.seed)
        rows = sum(p.n_rows[1] for p in problems)
        opts = RankOptions(runs=runs, steps=steps, init="uniform", device=device, seed=args.seed, grid=GRID,
                           threads=args.threads)
        cpu = cpu_seconds()
        res, pooled = attack(problems, frame, schema, opts)
        cpu = cpu_seconds() - cpu
        print(f"\n{desc}; {runs} runs x {steps} steps on {device}\n{header()}")
        print(row("RAP-RANK uniform", pooled["attack"], timing(res, rows)) + f"   CPU {cpu:.1f} s")
        print(row("  holdout", pooled["baselines"]["holdout"]))
        lift = pooled["lift"]["holdout"]
        print(f"  beats holdout at every k/u: {all(v > 0 for v in lift)} (lift {min(lift):+.3f} .. {max(lift):+.3f})")
        doc[f"{way}-way"] = {"case": desc, "seconds": res.seconds, "cpu_seconds": cpu, "seconds_per_unit": res.seconds / len(res.units),
                             "rows_per_second": rows / res.seconds, "pooled": pooled,
                             "consistent_runs": [u.consistent for u in res.units]}
    print(EARLIER)
    print(PAPER["acs"])
    return doc


def run_extract(args, device: str) -> dict:
    from audit.attacks.reidentify import ranking_part

    tracts = 1 if args.quick and args.tracts is None else (args.tracts or 0)
    runs, steps = (8, 100) if args.quick else (16, 300)
    t0 = time.perf_counter()
    problems, full, schema, desc = extract_case(args.data, tracts, args.seed, args.round_to)
    if args.blocks and args.blocks < len(problems):   # a seeded subset of the blocks, in their order
        keep = np.sort(np.random.default_rng(args.seed).choice(len(problems), size=args.blocks, replace=False))
        problems = [problems[i] for i in keep]
        desc += f", {args.blocks} seeded blocks"
    rows = sum(p.n_rows[1] for p in problems)
    print(f"\n{desc}: {len(problems)} blocks, {rows} persons, prepared in {time.perf_counter() - t0:.1f} s; "
          f"{runs} runs x {steps} steps on {device}\n{header()}")
    doc: dict = {"case": desc, "blocks": len(problems), "persons": rows}
    baselines = None
    for init in args.inits.split(","):
        opts = RankOptions(runs=runs, steps=steps, init=init, device=device, seed=args.seed, grid=GRID,
                           threads=args.threads, project=not args.no_project)
        cpu = cpu_seconds()
        res, pooled = attack(problems, full, schema, opts)
        cpu = cpu_seconds() - cpu
        baselines = baselines or pooled["baselines"]
        print(row(f"RAP-RANK {init}", pooled["attack"], timing(res, rows)) + f"   CPU {cpu:.1f} s")
        part = ranking_part(res, full, schema.geography, schema.attacker) if schema.attacker else None
        doc[init] = {"seconds": res.seconds, "cpu_seconds": cpu, "seconds_per_unit": res.seconds / len(res.units),
                     "rows_per_second": rows / res.seconds, "pooled": pooled,
                     "consistent_runs": float(np.mean([u.consistent for u in res.units])),
                     "reidentification": part}
    for name, curve in baselines.items():
        print(row(f"  {name}", curve))
    parent, tract = doc.get("parent", {}).get("pooled", {}).get("attack"), baselines.get("tract")
    if tract and parent:
        margins = [a - b for a, b, x in zip(parent, tract, GRID) if x <= 0.5]
        doc["target_met"] = all(m > 0 for m in margins)
        print(f"tract-initialised attack above the tract baseline at every k/u <= 0.5: {doc['target_met']} "
              f"(margins {min(margins):+.3f} .. {max(margins):+.3f})")
    for init in args.inits.split(","):
        part = doc[init]["reidentification"]
        if part and part.get("status") == "run":
            print(f"re-identification ({init} start, {part['persons']} persons): putative {part['putative']['rate']:.1%}, "
                  f"confirmed {part['confirmed']['rate']:.1%}")
    print("runs reproducing the release (share, mean over blocks): "
          + ", ".join(f"{init} {doc[init]['consistent_runs']:.2f}" for init in args.inits.split(",")))
    print(PAPER["extract"])
    return doc


# ------------------------------------------------------------------ the paper's split (tract and ACS settings)

def paper_attack(units, geography, opts: RankOptions) -> dict:
    """RAP-RANK on each :class:`rank_cases.PaperUnit` (its own call: each tract has its own domains, and its
    prior, the holdout half, is the only rows its frame holds), scored as the paper does: against ``D``, ``u`` the
    smaller of D's and the holdout's unique rows for every curve; curves averaged over units."""
    from audit.attacks.engines.rank_results import match_rates

    curves: dict = {"attack": []}
    seconds = consistent = 0.0
    cpu = cpu_seconds()
    for unit in units:
        # the holdout is the frame's only rows, so the unit's "closest parent" (the prior of init=parent) is it
        res = RankAttack([unit.problem], unit.prior, geography, opts).evaluate()
        seconds += res.seconds
        consistent += res.units[0].consistent / len(units)
        truth = set(map(tuple, unit.problem.truth.tolist()))
        curves["attack"].append(match_rates(res.units[0].ranked, truth, unit.u, GRID))
        for name, ranked in unit.baselines.items():
            curves.setdefault(name, []).append(match_rates(ranked, truth, unit.u, GRID))
    return {"curves": {k: np.mean(v, 0).round(3).tolist() for k, v in curves.items()},
            "units_with": {k: len(v) for k, v in curves.items()}, "seconds": seconds,
            "cpu_seconds": cpu_seconds() - cpu, "consistent_runs": consistent,
            "persons": sum(u.problem.n_rows[1] for u in units)}


def paper_rows(setting: str, init: str, got: dict, baselines: bool, names: dict | None = None) -> list[list]:
    """Record rows: the attack's curve, then (once per setting) each baseline's (``names``: their labels)."""
    c = got["curves"]
    out = [[setting, f"RAP-RANK, {init} start", *c["attack"], f"{got['cpu_seconds']:.1f}"]]
    if baselines:
        out += [[setting, f"{(names or {}).get(name, name)} baseline ({got['units_with'][name]} units)", *curve, ""]
                for name, curve in c.items() if name != "attack"]
    return out


def run_tract(args, device: str) -> tuple[dict, list[list]]:
    """The paper's tract-level setting (Figs. 1-2): with and without the block attribute, uniform and tract starts."""
    from rank_cases import tract_case

    runs, steps = (8, 100) if args.quick else (16, 300)
    tracts, blocks = args.tracts or 3, 20 if args.blocks is None else args.blocks
    doc, rows = {}, []
    settings = ("with", "without") if args.block_attr == "both" else (args.block_attr,)
    cases, geography, descs = tract_case(args.data, tracts, blocks, settings, args.seed)
    for attr in settings:
        units, desc = cases[attr], descs[attr]
        print(f"\n{desc}: {sum(u.problem.n_rows[1] for u in units)} persons in D; {runs} runs x {steps} steps on "
              f"{device}\n{header()}")
        for init in ("uniform", "parent"):
            opts = RankOptions(runs=runs, steps=steps, init=init, device=device, seed=args.seed, grid=GRID,
                               threads=args.threads, project=False)
            got = paper_attack(units, geography, opts)
            print(row(f"RAP-RANK {init}", got["curves"]["attack"], f"CPU {got['cpu_seconds']:.1f}"))
            rows += paper_rows(f"{attr} block", "tract" if init == "parent" else init, got, init == "uniform",
                               {"holdout": "holdout (= tract)"})
            doc[f"{attr}-block/{init}"] = {"case": desc, **got}
        for name, curve in got["curves"].items():
            if name != "attack":
                print(row(f"  {name} ({got['units_with'][name]} units)", curve))
    print(PAPER["extract"])
    return doc, rows


def run_acs_paper(args, device: str) -> tuple[dict, list[list]]:
    """The paper's ACS setting (Fig. 4): each PUMA halved, 2- and 3-way marginals of one half, uniform start."""
    from rank_cases import acs_paper_case

    pumas, persons, runs, steps = (2, 300, 8, 100) if args.quick else (args.tracts or 3, 600, 16, 300)
    doc, rows = {}, []
    for way in map(int, args.ways.split(",")):
        units, geography, desc = acs_paper_case(args.data, pumas, persons, way, args.seed)
        opts = RankOptions(runs=runs, steps=steps, init="uniform", device=device, seed=args.seed, grid=GRID,
                           threads=args.threads)
        got = paper_attack(units, geography, opts)
        print(f"\n{desc}; {runs} runs x {steps} steps on {device}\n{header()}")
        print(row("RAP-RANK uniform", got["curves"]["attack"], f"CPU {got['cpu_seconds']:.1f}"))
        print(row("  holdout", got["curves"]["holdout"]))
        rows += paper_rows(f"ACS {way}-way", "uniform", got, True)
        doc[f"{way}-way"] = {"case": desc, **got}
    print(PAPER["acs"])
    return doc, rows


def holdout_check(args, device: str) -> tuple[dict, list[list]]:
    """Why the block-level holdout sits below the tract baseline: both scored as the engine does, then the tract's
    ranking scored on the holdout's own target (the other half of the block), then without the block's own persons.
    No attack runs: the baselines only, on every block of ``--tracts`` seeded tracts (default 1)."""
    from collections import Counter

    from audit.attacks.engines.rank_results import match_rates, parent_rows, rank_rows

    problems, full, schema, desc = extract_case(args.data, args.tracts or 1, args.seed)
    rng, cache = np.random.default_rng(args.seed), {}
    got: dict = {k: [] for k in ("holdout: half ranks, other half scored", "tract: scored on the whole block",
                                 "tract: scored on the holdout's half", "tract less the block: on that half")}
    repeats, sizes = [], []
    for p in problems:
        truth = p.truth
        if len(truth) < 2:
            continue
        perm = rng.permutation(len(truth))
        held, target = truth[perm[: len(truth) // 2]], set(map(tuple, truth[perm[len(truth) // 2:]].tolist()))
        whole = set(map(tuple, truth.tolist()))
        u = min(len(target), len(rank_rows(held)))
        tract = Counter(map(tuple, parent_rows(full, schema.geography, p, 3, cache).tolist()))
        others = tract - Counter(map(tuple, truth.tolist()))
        for name, ranked, true, k in zip(got, (rank_rows(held), _ranked(tract), _ranked(tract), _ranked(others)),
                                         (target, whole, target, target), (u, len(whole), u, u)):
            got[name].append(match_rates(ranked, true, k, GRID))
        repeats.append(1 - len(whole) / len(truth))
        sizes.append(len(truth))
    print(f"\n{desc}: {len(sizes)} blocks of 2+ persons (median {np.median(sizes):.0f} persons); "
          f"{np.mean(repeats):.1%} of a block's persons repeat another's row\n{header()}")
    rows = []
    for name, curves in got.items():
        curve = np.mean(curves, 0).round(3).tolist()
        print(row(name[:34], curve))
        rows.append([name, *curve])
    return {"case": desc, "blocks": len(sizes), "median_persons": float(np.median(sizes)),
            "repeat_share": float(np.mean(repeats)), "curves": {r[0]: r[1:] for r in rows}}, rows


def _ranked(counts) -> list[tuple[tuple, int]]:
    return sorted(((r, n) for r, n in counts.items() if n > 0), key=lambda kv: (-kv[1], kv[0]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=("acs", "extract", "all", "tract", "acs-paper", "holdout"), default="all",
                    help="tract, acs-paper: the paper's split (a unit's persons halved, one half published); "
                         "holdout: the block-level baselines scored on one target (no attack)")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a shared 2-core machine")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--data", type=Path, default=None, help="folder holding the case CSV files")
    ap.add_argument("--compare-old", action="store_true", help="time the earlier answer form against the new first")
    ap.add_argument("--ways", default="2", help="ACS marginals: 2, 3 or 2,3")
    ap.add_argument("--tracts", type=int, default=None, help="extract: this many seeded tracts (default all)")
    ap.add_argument("--blocks", type=int, default=None, help="extract: this many seeded blocks of those tracts")
    ap.add_argument("--round-to", type=int, default=None, help="extract: publish every count rounded to this base")
    ap.add_argument("--no-project", action="store_true", help="extract: no SAT projection of the rounded runs")
    ap.add_argument("--inits", default="parent,uniform", help="extract: the starts to run, parent and/or uniform")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--block-attr", choices=("both", "with", "without"), default="both",
                    help="tract: reconstruct the persons' block (with), or not (block tables summed to the tract)")
    ap.add_argument("--out", type=Path, default=None)
    record.add_arguments(ap)
    args = ap.parse_args(argv)
    device = resolve_device(args.device)
    wall = time.perf_counter()
    doc: dict = {"device": device, "quick": args.quick}
    if device == "cuda":
        import torch

        doc["gpu"] = torch.cuda.get_device_name(0)
    if args.compare_old:
        doc["compare_old"] = compare_old(args.data, device, args.threads, args.seed)
    if args.case in ("acs", "all"):
        doc["acs"] = run_acs(args, device)
    if args.case in ("extract", "all"):
        doc["extract"] = run_extract(args, device)
    for case, run in (("tract", run_tract), ("acs-paper", run_acs_paper), ("holdout", holdout_check)):
        if args.case == case:
            doc[case], rows = run(args, device)
            head = ["setting", "curve", *map(str, GRID), "CPU s"] if case != "holdout" else ["curve", *map(str, GRID)]
            whole = (f" The whole run: {time.perf_counter() - wall:.0f} s wall, {cpu_seconds():.0f} s CPU (this process), "
                     f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB.")
            record.write_from_args(ap, args, PAPER_TITLE[case], "rank", head, rows, PAPER[case] + whole)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_rank.json").write_text(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FileNotFoundError as exc:   # a case's data file (rank_cases.find): one line, not a traceback
        sys.exit(str(exc))
