"""Fixtures shared by several test modules."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

SF1 = Path(__file__).resolve().parents[1] / "samples" / "sf1"
RECON = next((p for p in (SF1.parents[2] / "shared" / "data" / "recon_replication",
                          Path("/work/shared/data/recon_replication")) if p.is_dir()), None)

TRACT_SCHEMA = """
unit: person
geography: [tract, block]
columns:
  sex: {type: categorical, values: {M: Male, F: Female}}
  age: {type: categorical, values: {c: Child, a: Adult, s: Senior}}
"""  # persons in blocks of tracts: the smallest coupled problems


@pytest.fixture(scope="session")
def sf1(tmp_path_factory):
    """The SF1 schema, and its schedule with block tables alone and with the tract tables (make_tables --tract)."""
    import importlib.util

    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    if RECON is None:
        pytest.skip("shared/data/recon_replication not found (see shared/data/PROVENANCE.md)")
    spec = importlib.util.spec_from_file_location("make_tables", SF1 / "make_tables.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    layout = pd.read_csv(RECON / "layouts" / "sf1_vars_race_binaries.csv", dtype=str, keep_default_na=False)
    path = tmp_path_factory.mktemp("sf1") / "tables_tract.yaml"
    path.write_text(make.make_tables(layout, {}, True), encoding="utf-8")
    schema = load_schema(SF1 / "schema.yaml")
    return schema, {"block": load_schedule(SF1 / "tables.yaml", schema), "tract": load_schedule(path, schema)}


@pytest.fixture(scope="session")
def sf1_spec():
    """The sf1 sample's schema and block schedule, loaded once."""
    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    schema = load_schema(SF1 / "schema.yaml")
    return schema, load_schedule(SF1 / "tables.yaml", schema)


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> Path:
    """The sf1 sample's blocks of at most 9 persons, as a CSV: small, cheap units."""
    data = pd.read_csv(SF1 / "data.csv", dtype=str)
    sizes = data.groupby("block").size()
    path = tmp_path_factory.mktemp("sf1") / "small.csv"
    data[data["block"].isin(sizes[sizes <= 9].index)].to_csv(path, index=False)
    return path
