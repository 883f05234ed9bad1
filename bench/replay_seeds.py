"""The CACM block, the OpenDP notebook, RAP-RANK and the Bureau's re-identification rates, replayed
beside the seeds' own figures (bench/replay.py writes them; generate-then-verify is bench/replay_gtv.py)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FULTON = ROOT.parent / "shared" / "data" / "cs208" / "FultonPUMS5reconstruction.csv"
GPU = ROOT / "bench" / "results" / "gpu-h200-2026-11-27"
GRID = tuple(round(0.1 * i, 1) for i in range(1, 11))

# Garfinkel, Abowd and Martindale (CACM 2019), Table 4: the single satisfying assignment (age, sex,
# race, marital). The seed's text names four of its records (8FBS, 36FBM, 66FBM, 84MBM, common to the 8
# solutions left without statistics 2A and 2B) and the males' median 30 and mean 44 (18, 30, 84).
CACM_TABLE4 = ((8, "F", "B", "S"), (18, "M", "W", "S"), (24, "F", "W", "S"), (30, "M", "W", "M"),
               (36, "F", "B", "M"), (66, "F", "B", "M"), (84, "M", "B", "M"))
CACM_VARIANTS = {"Table 1 as published": ((), 1), "without 2A and 2B": (("2A", "2B"), 8),
                 "without 4A (Table 5)": (("4A",), 2)}
CACM_COMMON = ((8, "F", "B", "S"), (36, "F", "B", "M"), (66, "F", "B", "M"), (84, "M", "B", "M"))

# The OpenDP notebook's spot checks (one draw each): mitigation, parameter -> (answer RMSE, accuracy).
NOTEBOOK = {("none", 0): (0.0, 1.0), ("noise", 2): (4.815, 0.90), ("sample", 10): (13.12, 0.62),
            ("round", 20): (3.466, 0.56), ("round", 40): (20.63, 0.86)}
NOTEBOOK_PUBLIC = ("sex,age,educ,latino,black,asian,married,divorced,children,disability,militaryservice,"
                   "employed,englishability")
NOTEBOOK_GRID = (1, 2, 10, 11, 20, 21, 31, 40, 41, 51, 61, 71, 81, 91)  # its 1, 11, ..., 91 and spot values

# The Bureau's re-identification rates, as docs/guides/reidentification.md quotes them (putative,
# confirmed, precision) for the commercial file and for the CEF.
BUREAU = {"putative": (0.579, 0.970), "confirmed": (0.239, 0.755), "precision": (0.412, 0.779)}


def cacm(folder: Path) -> dict:
    """samples/block7's datasets with Table 1 as published and with the cells the paper drops."""
    from audit.attacks.engines import get_engine
    from audit.inputs import load_inputs

    block = ROOT / "samples" / "block7"
    text = (block / "tables.yaml").read_text(encoding="utf-8")
    out = {}
    for name, (dropped, paper) in CACM_VARIANTS.items():
        kept = "".join(line for line in text.splitlines(keepends=True)
                       if not any(f"{{id: {cell}," in line for cell in dropped))
        tables = folder / f"block7-{len(dropped)}.yaml"
        tables.write_text(kept, encoding="utf-8")
        problem, = load_inputs(block / "data.csv", block / "schema.yaml", tables).problems()
        found = get_engine("sat", problem, seed=0).solutions(64)
        datasets = [sorted(_records(problem, rows)) for rows in found]
        common = set(datasets[0]).intersection(*map(set, datasets))
        out[name] = {"dropped": list(dropped), "paper": paper, "solutions": len(datasets),
                     "exhausted": found.exhausted, "datasets": datasets, "common": sorted(common)}
    out["equals_table4"] = out["Table 1 as published"]["datasets"] == [sorted(CACM_TABLE4)]
    out["common_holds"] = set(CACM_COMMON) <= set(map(tuple, out["without 2A and 2B"]["common"]))
    return out


def _records(problem, rows: np.ndarray) -> list[tuple]:
    """A dataset's rows as (age, sex, race, marital) values (every atom of block7 is one value)."""
    return [tuple(next(iter(d.atoms[a])) for d, a in zip(problem.domains, row)) for row in rows.tolist()]


def cacm_lines(got: dict) -> list[str]:
    lines = ["| statistics | paper: solutions | replay: solutions | enumeration complete |", "|---|---|---|---|"]
    lines += [f"| {name} | {v['paper']} | {v['solutions']} | {'yes' if v['exhausted'] else 'no'} |"
              for name, v in got.items() if isinstance(v, dict)]
    lines += ["", "| person | paper, Table 4 | replay, the one solution |", "|---|---|---|"]
    ours = got["Table 1 as published"]["datasets"][0]
    lines += [f"| {i} | {_rec(p)} | {_rec(o)} |" for i, (p, o) in enumerate(zip(sorted(CACM_TABLE4), ours), 1)]
    return lines


def _rec(r) -> str:
    return "".join(str(v) for v in r)


def linear(folder: Path, seed: int) -> dict:
    """`audit linear --sweep` on the notebook's 100-row extract, its public columns and grid."""
    out = folder / "linear"
    cmd = [sys.executable, "-m", "audit", "linear", str(FULTON), "--secret", "uscitizen", "--public",
           NOTEBOOK_PUBLIC, "--sweep", "--params", ",".join(map(str, NOTEBOOK_GRID)), "--seed", str(seed),
           "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    doc = json.loads((out / "linear.json").read_text(encoding="utf-8"))
    doc["svg"] = {name: (out / file).read_text(encoding="utf-8") for name, file in doc["plots"].items()}
    return doc


def linear_lines(doc: dict) -> list[str]:
    points = {(p["mitigation"], int(p["param"])): p for p in doc["sweep"]}
    lines = ["| query answers | notebook: RMSE | notebook: accuracy | replay: RMSE | replay: accuracy (min–max of 10) |",
             "|---|---|---|---|---|"]
    for (kind, param), (rmse, acc) in NOTEBOOK.items():
        label = {"none": "exact", "noise": f"Gaussian noise, σ = {param}", "sample": f"subsample of {param} rows",
                 "round": f"rounded to {param}"}[kind]
        if kind == "none":
            got = doc["methods"]["lstsq"]
            lines.append(f"| {label} | {rmse:.4g} | {acc:.0%} | {got['answer_rmse']:.4g} | {got['accuracy']:.0%} |")
        else:
            p = points[(kind, param)]
            lines.append(f"| {label} | {rmse:.4g} | {acc:.0%} | {p['rmse']:.4g} | "
                         f"{p['accuracy']:.1%} ({p['accuracy_min']:.0%}–{p['accuracy_max']:.0%}) |")
    lines += ["", "| mitigation | " + " | ".join(str(x) for x in NOTEBOOK_GRID) + " |", "|---|" + "---|" * len(NOTEBOOK_GRID)]
    for kind in ("round", "noise", "sample"):
        lines.append(f"| {kind}, accuracy | " + " | ".join(f"{points[(kind, x)]['accuracy']:.2f}" for x in NOTEBOOK_GRID) + " |")
    return lines


def rank(folder: Path, seed: int) -> dict:
    """A small CPU run of bench/rank.py (--quick), beside the H200 run's files of 2026-11-27."""
    out = folder / "rank"
    subprocess.run([sys.executable, str(ROOT / "bench" / "rank.py"), "--quick", "--device", "cpu", "--seed", str(seed),
                    "--out", str(out)], check=True, capture_output=True, cwd=ROOT)
    doc = json.loads((out / "bench_rank.json").read_text(encoding="utf-8"))
    return {"quick": doc, "gpu": {name: _curves(GPU / f"{name}.txt") for name in ("acs", "extract")}}


def _curves(path: Path) -> dict[str, list[float]]:
    """The curves of a bench/rank.py print-out: label -> match rate at k/u 0.1 ... 1.0."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        numbers = re.findall(r"\d+\.\d{3}\b", line)
        if line.lstrip().startswith(("RAP-RANK", "holdout", "tract", "state", "county")) and len(numbers) >= len(GRID):
            out[line.split("  ")[0].strip() if "RAP" in line else line.split()[0]] = [float(x) for x in numbers[-len(GRID):]]
    return out


def rank_curves(got: dict) -> dict[str, dict[str, list[float]]]:
    """The curves the page shows: the ACS case (H200, full size; CPU, quick) and the extract's tract (CPU, quick)."""
    acs, ext = got["quick"]["acs"]["2-way"]["pooled"], got["quick"]["extract"]
    return {"acs": {"RAP-RANK, H200 (7 PUMAs x 1,000, 16 x 300)": got["gpu"]["acs"]["RAP-RANK uniform"],
                    "holdout, H200 run": got["gpu"]["acs"]["holdout"],
                    "RAP-RANK, CPU (2 PUMAs x 300, 8 x 100)": acs["attack"], "holdout, CPU run": acs["baselines"]["holdout"]},
            "extract": {"RAP-RANK, tract start": ext["parent"]["pooled"]["attack"],
                        "RAP-RANK, uniform start": ext["uniform"]["pooled"]["attack"],
                        **{f"{name} baseline": curve for name, curve in ext["parent"]["pooled"]["baselines"].items()}}}


def rank_lines(got: dict) -> list[str]:
    lines = []
    for case, curves in rank_curves(got).items():
        lines += [f"| {case}: match rate at k/u | " + " | ".join(str(x) for x in GRID) + " |", "|---|" + "---|" * len(GRID)]
        lines += [f"| {name} | " + " | ".join(f"{v:.3f}" if v is not None else "—" for v in curve) + " |"
                  for name, curve in curves.items()]
        lines.append("")
    full = got["gpu"]["extract"]["RAP-RANK parent"]
    lines += ["| extract, all 8,530 blocks (H200, 16 x 300): match rate at k/u | " + " | ".join(map(str, GRID)) + " |",
              "|---|" + "---|" * len(GRID), "| RAP-RANK, tract start | " + " | ".join(f"{v:.3f}" for v in full) + " |"]
    return lines


def reid(folder: Path, seed: int, tracts: int) -> dict:
    """`audit run --explain none` over ``tracts`` seeded tracts of the Bureau's extract (bench/rank.py's pick)."""
    sys.path.insert(0, str(ROOT / "samples" / "sf1"))
    sys.path.insert(0, str(ROOT / "bench"))
    from convert import convert
    from scale import EXTRACT

    full = convert(pd.read_csv(EXTRACT, dtype=str, keep_default_na=False))
    tract_id = full["state"] + full["county"] + full["tract"]
    names = sorted(tract_id.unique())
    picked = sorted(np.random.default_rng(seed).choice(names, size=tracts, replace=False).tolist())
    data = folder / "extract.csv"
    full[tract_id.isin(picked)].to_csv(data, index=False)
    sf1 = ROOT / "samples" / "sf1"
    run = subprocess.run([sys.executable, "-m", "audit", "run", str(data), "-s", str(sf1 / "schema.yaml"), "-t",
                          str(sf1 / "tables.yaml"), "-o", str(folder / "reid"), "--explain", "none"],
                         capture_output=True, text=True, cwd=ROOT)
    if run.returncode not in (0, 1):  # 1: the verdict fails, as it does on the extract
        raise RuntimeError(run.stderr[-2000:])
    doc = json.loads((folder / "reid" / "findings.json").read_text(encoding="utf-8"))
    return {"tracts": picked, "blocks": len(doc["units"]), "exact": doc["reidentification"]["exact"]}


def reid_lines(got: dict) -> list[str]:
    exact = got["exact"]
    inf = exact["inference"]

    def rate(r: dict) -> str:
        return f"{r['rate']:.1%} ({r['ci'][0]:.1%}–{r['ci'][1]:.1%})"

    lines = [f"| measure | replay: exact attack, {len(got['tracts'])} tracts ({exact['persons']:,} persons) "
             "| Bureau, commercial file | Bureau, CEF |", "|---|---|---|---|",
             f"| unique on block × sex × binned age | {rate(exact['unique'])} | | |"]
    for key in ("putative", "confirmed", "precision"):
        lines.append(f"| {key} | {rate(exact[key])} | {BUREAU[key][0]:.1%} | {BUREAU[key][1]:.1%} |")
    for part, label in (("all", "all persons"), ("unlike_majority", "persons unlike their block's majority")):
        p = inf[part]
        lines.append(f"| race and ethnicity proved, {label} ({p['persons']:,}) | {rate(p['attack'])} | | |")
        lines.append(f"| — guessing the block's / tract's mode | {p['baselines']['unit_mode']['rate']:.1%} / "
                     f"{p['baselines']['parent_mode']['rate']:.1%} | | |")
    return lines
