"""Seeded generator of synthetic household blocks over the Household2010 schema.

Usage: ``python samples/households/generate.py --blocks B --min-size A --max-size Z --seed S OUT.csv``
(A..Z households per block). Each household is drawn attribute by attribute so that combinations are
consistent (a 1-person household lives alone, couples with children in both age ranges have 4+
persons, three generations need 3+ persons, a householder aged 75+ makes the household "75+"), and
every row is then checked against the schema's ``constraints``. Blocks differ in their race and
Hispanic-origin mix, as neighbouring blocks do.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["tract", "block", "hhsex", "hhage", "hisp", "hhrace", "size", "hhtype", "elderly", "multi"]
AGE = np.array([0.06, 0.15, 0.17, 0.20, 0.10, 0.09, 0.12, 0.08, 0.03])      # hhage 0..8
RACE = np.array([0.76, 0.12, 0.01, 0.04, 0.002, 0.045, 0.023])              # hhrace 0..6
# hhtype weights: married with children (<6, 6-17, both), married no children; same for same-sex;
# cohabiting opposite/same-sex; alone; single parents; with relatives; nonrelatives.
TYPE = np.array([.07, .11, .07, .22, .001, .002, .001, .004, .012, .012, .006, .005, .03,
                 .001, .001, .001, .001, .004, .24, .03, .05, .02, .07, .04])
CHILD_UNDER6 = {0, 2, 4, 6, 8, 10, 13, 15, 19, 21}
CHILD_ANY = CHILD_UNDER6 | {1, 5, 9, 14, 20}
# parents' age (hhage 0..8) makes children less or more likely; under-6 children need young parents
CHILD_BY_AGE = np.array([0.6, 1.3, 1.5, 0.9, 0.25, 0.08, 0.02, 0.005, 0.0])
UNDER6_BY_AGE = np.array([1.0, 1.0, 0.6, 0.2, 0.05, 0.02, 0.0, 0.0, 0.0])
ALONE_BY_AGE = np.array([0.8, 0.7, 0.6, 0.8, 1.0, 1.2, 1.4, 2.0, 2.8])
MIN_SIZE = {18: 1, 3: 2, 7: 2, 12: 2, 17: 2, 19: 2, 20: 2, 22: 2, 23: 2,
            0: 3, 1: 3, 4: 3, 5: 3, 8: 3, 9: 3, 11: 3, 13: 3, 14: 3, 16: 3, 21: 3,
            2: 4, 6: 4, 10: 4, 15: 4}
NEVER_MULTI = {12, 17, 18, 23}
NOT_MULTI_AT = {3: {0, 1, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14, 16, 17, 21, 23}, 4: {2, 6, 10, 12, 15, 17, 23}}


def household(rng: np.random.Generator, race_mix: np.ndarray, hisp_rate: float) -> dict:
    """One consistent household (codes are the histogram level indices)."""
    hhage = int(rng.choice(9, p=AGE))
    weights = TYPE.copy()
    for t in CHILD_ANY:
        weights[t] *= CHILD_BY_AGE[hhage] * (UNDER6_BY_AGE[hhage] if t in CHILD_UNDER6 else 1.0)
    weights[18] *= ALONE_BY_AGE[hhage]
    hhtype = int(rng.choice(24, p=weights / weights.sum()))
    single = hhtype >= 18
    hhsex = int(rng.random() < (0.62 if single else 0.25))
    hisp = int(rng.random() < hisp_rate)
    race = race_mix.copy()
    if hisp:
        race[5] *= 8.0                                    # Hispanic householders often report SOR
    hhrace = int(rng.choice(7, p=race / race.sum()))
    lo = MIN_SIZE[hhtype]
    size = 1 if hhtype == 18 else min(7, lo + int(rng.geometric(0.55 if lo <= 2 else 0.6)) - 1)
    allowed = size >= 3 and hhtype not in NEVER_MULTI and hhtype not in NOT_MULTI_AT.get(size, set())
    multi = int(allowed and rng.random() < 0.12)
    elderly = [0, 0, 0, 0, 0, 1, 2, 3, 3][hhage]
    if size >= 2 and elderly < 3 and rng.random() < (0.35 if multi else 0.08):
        elderly = int(rng.integers(elderly + 1, 4))       # a spouse, parent or other member is older
    return {"hhsex": hhsex, "hhage": hhage, "hisp": hisp, "hhrace": hhrace, "size": size,
            "hhtype": hhtype, "elderly": elderly, "multi": multi}


def generate(blocks: int, min_size: int, max_size: int, seed: int, per_tract: int = 10) -> pd.DataFrame:
    """``blocks`` blocks of min_size..max_size households, ``per_tract`` blocks to a tract."""
    if blocks < 1 or not 1 <= min_size <= max_size:
        raise ValueError("need blocks >= 1 and 1 <= min-size <= max-size")
    rng = np.random.default_rng(seed)
    rows = []
    for b in range(blocks):
        race_mix = rng.dirichlet(RACE * 40 + 0.05)
        hisp_rate = float(rng.beta(1.2, 7.0))
        tract, block = f"{1 + b // per_tract:04d}00", f"{1001 + b % per_tract}"
        for _ in range(int(rng.integers(min_size, max_size + 1))):
            rows.append({"tract": tract, "block": block, **household(rng, race_mix, hisp_rate)})
    return pd.DataFrame(rows, columns=COLUMNS).astype(str)


def check(frame: pd.DataFrame, schema_path: Path) -> None:
    """Raise if any household breaks a structural edit of the schema."""
    from audit.data.microdata import validate
    from audit.specs.schema import load_schema

    schema = load_schema(schema_path)
    rows = validate(frame, schema, "<generated>")
    for edit in schema.edits:
        bad = edit.forbid.mask(rows)
        if bad.any():
            raise AssertionError(f"generated household breaks '{edit.label}': {rows[bad].iloc[0].to_dict()}")


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--min-size", type=int, default=5, help="fewest households in a block")
    parser.add_argument("--max-size", type=int, default=20, help="most households in a block")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--schema", default=str(Path(__file__).with_name("schema.yaml")),
                        help="schema whose constraints every household must meet")
    args = parser.parse_args(argv)
    frame = generate(args.blocks, args.min_size, args.max_size, args.seed)
    check(frame, Path(args.schema))
    frame.to_csv(args.out, index=False)
    print(f"wrote {len(frame)} households in {args.blocks} blocks to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
