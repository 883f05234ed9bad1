"""Convert the Census Bureau's reconstructed-person extract (recon_replication) to the sf1 schema.

Usage: ``python samples/sf1/convert.py SOURCE.csv OUT.csv [--tract TRACT] [--blocks N] [--min-size A]
[--max-size Z]``. SOURCE is ``rhdf_bt_0solvar_extract.csv`` (or ``rmdf_...``); the 15-digit Block ID
is split into state, county, tract and block; ``two_or_more`` is derived from the six race binaries.
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

RACES = {"White": "white", "Black": "black", "American Indian or Alaskan Native": "aian",
         "Asian": "asian", "Native Hawaiian or Pacific Island": "nhopi", "Some Other Race": "sor"}
SEX = {"male": "M", "female": "F"}
COLUMNS = ["state", "county", "tract", "block", "sex", "age", *RACES.values(), "two_or_more", "hispanic"]


def convert(source: pd.DataFrame) -> pd.DataFrame:
    """Map the extract's columns to the schema's names and codes, in block order."""
    geo = source["Block ID"].astype(str).str.zfill(15)
    if not geo.str.fullmatch(r"\d{15}").all():
        raise ValueError("every Block ID must be 15 digits (state2 county3 tract6 block4)")
    out = pd.DataFrame({"state": geo.str[:2], "county": geo.str[2:5], "tract": geo.str[5:11],
                        "block": geo.str[11:], "sex": source["Sex"].str.lower().map(SEX),
                        "age": source["Age"].astype(int)})
    for name, col in RACES.items():
        out[col] = source[name].str.upper()
    n_races = (out[list(RACES.values())] == "Y").sum(axis=1)
    out["two_or_more"] = (n_races >= 2).map({True: "Y", False: "N"})
    out["hispanic"] = source["Hispanic"].str.upper()
    if out["sex"].isna().any():
        raise ValueError(f"unknown Sex values: {sorted(source['Sex'][out['sex'].isna()].unique())}")
    return out.sort_values(["state", "county", "tract", "block"], kind="stable")[COLUMNS]


def pick_blocks(frame: pd.DataFrame, tract: str | None, n: int, lo: int, hi: int) -> pd.DataFrame:
    """Keep ``n`` blocks of one tract with lo..hi persons, spread over the range of sizes."""
    if tract:
        full = frame["state"] + frame["county"] + frame["tract"]
        frame = frame[(full if len(tract) == 11 else frame["tract"]) == tract]
    sizes = frame.groupby(["state", "county", "tract", "block"]).size()
    sizes = sizes[(sizes >= lo) & (sizes <= hi)].sort_values(kind="stable")
    if sizes.empty:
        raise ValueError("no block in that size range")
    picks = sizes.iloc[[round(i * (len(sizes) - 1) / max(n - 1, 1)) for i in range(min(n, len(sizes)))]]
    keys = set(picks.index)
    mask = [k in keys for k in zip(frame["state"], frame["county"], frame["tract"], frame["block"])]
    return frame[mask]


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("--tract", help="keep one tract (11 digits state+county+tract, or 6)")
    parser.add_argument("--blocks", type=int, help="keep this many blocks, spread over sizes")
    parser.add_argument("--min-size", type=int, default=1)
    parser.add_argument("--max-size", type=int, default=10**9)
    args = parser.parse_args(argv)
    frame = convert(pd.read_csv(args.source, dtype=str, keep_default_na=False))
    if args.blocks or args.tract:
        frame = pick_blocks(frame, args.tract, args.blocks or 10**9, args.min_size, args.max_size)
    frame.to_csv(args.out, index=False)
    print(f"wrote {len(frame)} persons in {frame.groupby(['state', 'county', 'tract', 'block']).ngroups} "
          f"blocks to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
