"""Fixtures shared by several test modules."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

SF1 = Path(__file__).resolve().parents[1] / "samples" / "sf1"


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> Path:
    """The sf1 sample's blocks of at most 9 persons, as a CSV: small, cheap units."""
    data = pd.read_csv(SF1 / "data.csv", dtype=str)
    sizes = data.groupby("block").size()
    path = tmp_path_factory.mktemp("sf1") / "small.csv"
    data[data["block"].isin(sizes[sizes <= 9].index)].to_csv(path, index=False)
    return path
