"""Generate-then-verify (Liu et al., seed 000) replayed on synthetic household blocks: Tables 2 and 3, Figure 2.

The paper attacks 50 blocks of 2010 PPMF households (486 households, 9.72 a block; each block the median
size of its state) with the 2010 SF1 household tables, and counts the households that verified claims
over k columns single out (Table 2) or name (Table 3), leaving out claims read straight off a published
count. The PPMF blocks are not used here (not public as the paper's selection): the blocks come from
``samples/households/generate.py`` at the paper's sizes (36 blocks of 10 households and 14 of 9), with
the DAS Household2010 tables of ``samples/households/tables.yaml`` and its 8 columns (the paper has 10:
tenure and vacancy are not in the Household2010 histogram, so k stops at 8 here).
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "households"
KS = (5, 6, 7, 8, 9, 10)  # the paper's columns
PER_TRACT = 100  # blocks generated per tract: one attacked, all of them its tract's prior (~970 households)

# Liu et al., Table 2 (verified singleton claims) and Table 3 (all verified claims): households
# identified with k = 5 ... 10 columns over its 50 blocks, n = 486 households.
PAPER = {"blocks": 50, "households": 486,
         "singletons": {5: 166, 6: 148, 7: 109, 8: 61, 9: 19, 10: 2},
         "all": {5: 431, 6: 379, 7: 274, 8: 179, 9: 30, 10: 2}}
PAPER_FIGURE2 = ("Figure 2(a): at least one verified singleton claim with up to 8 columns in the majority "
                 "of the 50 blocks, with 5 columns in over 90%; Figure 2(b, c): the median baseline "
                 "probability under 5% for every k (nearly 0% from 7 columns), none above 50%")


def sizes_like_paper(blocks: int) -> list[int]:
    """Block sizes in the paper's mix (36 of 10 and 14 of 9 households in 50 blocks), for ``blocks`` blocks."""
    tens = round(blocks * 36 / 50)
    return [10] * tens + [9] * (blocks - tens)


def household_blocks(blocks: int, seed: int, per_tract: int = PER_TRACT) -> pd.DataFrame:
    """Generated households: ``blocks`` tracts of ``per_tract`` blocks each, all blocks of a tract one of
    the paper's sizes (see :func:`sizes_like_paper`), checked against the schema's edits. The first
    block of each tract (block 1001) is attacked; the rest are its tract's and state's prior."""
    sys.path.insert(0, str(SAMPLE))
    from generate import check, generate

    parts, offset = [], 0
    for i, (size, count) in enumerate(sorted(_counts(sizes_like_paper(blocks)).items(), reverse=True)):
        part = generate(count * per_tract, size, size, seed + i, per_tract=per_tract)
        tract = part["tract"].str[:4].astype(int) + offset  # tracts numbered on from the previous part's
        offset = int(tract.max())
        parts.append(part.assign(tract=tract.map(lambda t: f"{t:04d}00")))
    frame = pd.concat(parts, ignore_index=True)
    check(frame, SAMPLE / "schema.yaml")
    return frame


def _counts(sizes: list[int]) -> dict[int, int]:
    return {s: sizes.count(s) for s in sorted(set(sizes))}


def replay(blocks: int, seed: int, folder: Path, per_tract: int = PER_TRACT) -> dict:
    """Attack every block (exact attack, defaults, no explanations); the paper's counts per k, and the
    baseline probabilities (eq. 17) of the verified claims under the tract's and all blocks' rows."""
    from audit.attacks.exact import ExactOptions, audit_unit
    from audit.data.microdata import validate
    from audit.findings.document import prior_rows
    from audit.inputs import load_inputs
    from audit.problem.claims import ClaimTable

    frame = household_blocks(blocks, seed, per_tract)
    data = folder / "households.csv"
    frame[frame["block"] == "1001"].to_csv(data, index=False)
    inputs = load_inputs(data, SAMPLE / "schema.yaml", SAMPLE / "tables.yaml")
    everyone = validate(frame, inputs.schema, "generated households")
    problems = inputs.problems()
    state, domains = None, None  # every generated household in the problems' atoms: the paper's state-level prior
    cache: dict = {}
    ks = range(1, len(problems[0].domains) + 1)
    found = {kind: {k: 0 for k in ks} for kind in ("singletons", "all")}
    with_claim = {kind: {k: 0 for k in ks} for kind in ("singletons", "all")}
    base = {prior: {k: [] for k in ks} for prior in ("tract", "state")}
    undecided = unique = households = 0
    for problem in problems:
        if problem.domains != domains:
            domains = problem.domains
            state = np.column_stack([everyone[d.name].map(d.lookup()).to_numpy(dtype=np.int64)
                                     for d in problem.domains])
        result = audit_unit(problem, ExactOptions(explain="none"), prior_rows(everyone, inputs, problem, cache))
        if result.status != "done":
            raise RuntimeError(f"block {problem.geo} not finished: {result.reason}")
        undecided += len(result.undecided)
        unique += result.reconstructed
        households += len(problem.truth)
        claims = [v.claim for v in result.verified if not v.direct]  # the paper leaves out claims read off a count
        table = ClaimTable.of_truth(problem.truth, list(problem.sizes))
        at_state = dict(zip(table.claims, table.baseline(len(problem.truth), state).tolist()))
        for k in ks:
            for kind in ("singletons", "all"):
                named = np.zeros(len(problem.truth), dtype=bool)
                for claim in claims:
                    if len(claim.columns) == k and (kind == "all" or claim.singleton):
                        named |= _matches(claim, problem.truth)
                found[kind][k] += int(named.sum())
                with_claim[kind][k] += bool(named.any())
        for claim in claims:
            base["tract"][len(claim.columns)].append(result.baseline[claim])
            base["state"][len(claim.columns)].append(at_state[claim])
    return {"blocks": len(problems), "households": households, "tract_households": len(everyone) // len(problems),
            "state_households": len(everyone), "undecided": undecided, "unique": unique,
            "columns": list(problems[0].names), "found": found, "blocks_with": with_claim,
            "baselines": {prior: {k: _quartiles(v) for k, v in by_k.items() if v} for prior, by_k in base.items()}}


def _matches(claim, rows: np.ndarray) -> np.ndarray:
    mask = np.ones(len(rows), dtype=bool)
    for column, atom in claim.assignment:
        mask &= rows[:, column] == atom
    return mask


def _quartiles(values: list[float]) -> dict:
    """Median, quartiles and largest value (Figure 2's boxes), over ``values``."""
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return {"claims": len(values), "q1": q1, "median": median, "q3": q3, "max": max(values)}


def tables(got: dict) -> list[str]:
    """Tables 2 and 3 beside the paper's, then Figure 2's measures (Markdown lines)."""
    n, blocks = got["households"], got["blocks"]
    lines = []
    for kind, name in (("singletons", "Table 2 (verified singleton claims)"), ("all", "Table 3 (all verified claims)")):
        lines += [f"| {name} | n | " + " | ".join(f"k={k}" for k in KS) + " |", "|---|---|" + "---|" * len(KS)]
        paper = PAPER[kind]
        lines.append(f"| paper, total ({PAPER['blocks']} PPMF blocks) | {PAPER['households']} | "
                     + " | ".join(str(paper[k]) for k in KS) + " |")
        lines.append("| paper, share of n | 100% | " + " | ".join(f"{paper[k] / PAPER['households']:.0%}" for k in KS) + " |")
        ours = got["found"][kind]
        lines.append(f"| replay, total ({blocks} generated blocks) | {n} | "
                     + " | ".join(str(ours[k]) if k in ours else "—" for k in KS) + " |")
        lines.append("| replay, share of n | 100% | "
                     + " | ".join(f"{ours[k] / n:.0%}" if k in ours else "—" for k in KS) + " |")
        lines.append(f"| replay, avg per block | {n / blocks:.2f} | "
                     + " | ".join(f"{ours[k] / blocks:.2f}" if k in ours else "—" for k in KS) + " |")
        lines.append("")
    ks = sorted(got["found"]["singletons"])
    lines += ["| Figure 2 (replay) | " + " | ".join(f"k={k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
    lines.append("| blocks with a verified singleton claim | "
                 + " | ".join(f"{got['blocks_with']['singletons'][k]} of {blocks}" for k in ks) + " |")
    for prior in ("tract", "state"):
        quart = got["baselines"][prior]
        lines.append(f"| {prior} baseline, median (Q1–Q3) | "
                     + " | ".join(f"{_pct(quart[k]['median'])} ({_pct(quart[k]['q1'])}–{_pct(quart[k]['q3'])})"
                                  if k in quart else "—" for k in ks) + " |")
        lines.append(f"| {prior} baseline, largest | "
                     + " | ".join(_pct(quart[k]["max"]) if k in quart else "—" for k in ks) + " |")
    return lines


def _pct(p: float) -> str:
    return f"{p:.1%}" if p >= 0.001 else ("0%" if p == 0 else "<0.1%")


def plot(got: dict) -> str:
    """Households identified per k, the paper's and the replay's, as a share of all households (SVG)."""
    from audit.outputs.charts import bar_chart

    groups = {}
    for k in KS:
        row = {}
        for kind, label in (("singletons", "singleton claims"), ("all", "all claims")):
            row[f"paper, {label}"] = 100 * PAPER[kind][k] / PAPER["households"]
            if k in got["found"][kind]:  # the replay's 8 columns have no k = 9, 10: no bar
                row[f"replay, {label}"] = 100 * got["found"][kind][k] / got["households"]
        groups[f"k={k}"] = row
    return bar_chart(groups, title="Households identified by verified claims with k columns (replay: 8 columns)",
                     xlabel="columns in the claim (k)", ylabel="% of households")


def plot_baselines(got: dict) -> str:
    """Figure 2 (b, c) as lines: the median and quartiles of the verified claims' baseline probability per k (SVG)."""
    from audit.outputs.svg import line_chart

    series = {}
    for prior in ("tract", "state"):
        for stat, label in (("median", "median"), ("q3", "third quartile")):
            series[f"{prior} prior, {label}"] = [(k, 100 * q[stat]) for k, q in got["baselines"][prior].items()]
    return line_chart(series, title="Baseline probability of the verified claims (eq. 17)",
                      xlabel="columns in the claim (k)", ylabel="%", ylim=(0.0, 50.0),
                      hlines={"paper: every median under 5%": 5.0})
