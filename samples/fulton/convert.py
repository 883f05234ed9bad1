"""Convert the CS208 Fulton County PUMS 5% persons to this sample's data.csv.

Usage: ``python samples/fulton/convert.py SOURCE.csv OUT.csv``. SOURCE is ``FultonPUMS5full.csv``
(Harvard CS208, ACS PUMS 5% of Fulton County, Georgia: 25,766 persons aged 18 and over in 7 PUMAs).
R wrote some incomes in scientific notation (``1e+05``); they are written back as integers. Only
the columns the schedule publishes are kept, with ``puma`` as the unit's geography.
"""
from __future__ import annotations

import sys

import pandas as pd

COLUMNS = ["puma", "sex", "age", "educ", "income", "latino", "black", "asian", "employed", "disability"]


def convert(source: pd.DataFrame) -> pd.DataFrame:
    """The schema's columns, incomes as exact integers, in PUMA order."""
    income = pd.to_numeric(source["income"], errors="raise")
    if not (income == income.round()).all():
        raise ValueError("every income must be a whole number of dollars")
    out = source[COLUMNS].copy()
    out["income"] = income.astype("int64")
    return out.sort_values("puma", kind="stable")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python samples/fulton/convert.py FultonPUMS5full.csv OUT.csv")
    convert(pd.read_csv(sys.argv[1])).to_csv(sys.argv[2], index=False)
