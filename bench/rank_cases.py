"""The RAP-RANK bench's cases: the Census extract (SF1 block tables) and the Fulton ACS persons (k-way marginals).

Each case returns ``(problems, frame, geography, description)``; bench/rank.py attacks and scores them.
"""
from __future__ import annotations

import importlib.util
import itertools
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXTRACT = "rhdf_bt_0solvar_extract.csv"
ACS = "FultonPUMS5full.csv"
# the 14 person columns of the cs208 Fulton extract (income, continuous, left out; geography: puma)
ACS_COLUMNS = ("sex", "age", "educ", "latino", "black", "asian", "married", "divorced", "uscitizen", "children",
               "disability", "militaryservice", "employed", "englishability")


def find(data: Path | None, name: str) -> Path:
    """``name`` in ``--data DIR``, else in the shared data folders."""
    cands = [data / name] if data else []
    cands += [ROOT.parent / "shared" / "data" / sub / name for sub in ("recon_replication/extract", "cs208")]
    cands += [Path("/work/shared/data") / sub / name for sub in ("recon_replication/extract", "cs208")]
    for c in cands:
        if c.exists():
            return c
    raise SystemExit(f"{name} not found: pass --data DIR holding it")


def extract_case(data: Path | None, tracts: int, seed: int, round_to: int | None = None):
    """Every block of ``tracts`` seeded tracts of the extract (all 28 when ``tracts`` is 0), SF1 block tables."""
    from audit.data.microdata import validate
    from audit.inputs import Inputs
    from audit.specs.schedule import Protection, load_schedule
    from audit.specs.schema import load_schema

    spec = importlib.util.spec_from_file_location("sf1_convert", ROOT / "samples" / "sf1" / "convert.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    schema = load_schema(ROOT / "samples" / "sf1" / "schema.yaml")
    schedule = load_schedule(ROOT / "samples" / "sf1" / "tables.yaml", schema)
    if round_to:
        rounding = Protection(round_to=round_to)
        schedule = replace(schedule, tables=tuple(replace(t, protection=rounding) for t in schedule.tables),
                           protection=rounding)
    raw = pd.read_csv(find(data, EXTRACT), dtype=str, keep_default_na=False)
    full = validate(mod.convert(raw), schema, "extract")
    tract_id = full["state"] + full["county"] + full["tract"]
    names = sorted(tract_id.unique())
    picked = names if not tracts or tracts >= len(names) else sorted(
        np.random.default_rng(seed).choice(names, size=tracts, replace=False).tolist())
    sub = full[tract_id.isin(picked)].reset_index(drop=True)
    problems = Inputs(schema, schedule, sub, "extract").problems()
    return problems, full, schema, f"extract, {len(picked)} tracts"


def acs_schema_tables(frame: pd.DataFrame, way: int, folder: Path) -> tuple[Path, Path]:
    """Schema (geography ``puma``) and every ``way``-way marginal of the 14 columns, exact counts, as YAML files."""
    cols = {}
    for c in ACS_COLUMNS:
        codes = sorted(frame[c].unique().tolist())
        cols[c] = {"type": "categorical", "values": {str(v): str(v) for v in codes}}
    schema = {"unit": "person", "geography": ["puma"], "columns": cols}
    tables = {"tables": [{"id": "M" + "_".join(combo), "geography": "puma", "by": list(combo), "margins": False}
                         for combo in itertools.combinations(ACS_COLUMNS, way)]}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema, sort_keys=False))
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables, sort_keys=False))
    return folder / "schema.yaml", folder / "tables.yaml"


def acs_case(data: Path | None, pumas: int, persons: int, way: int, seed: int):
    """``persons`` seeded persons of each of ``pumas`` PUMAs (one unit each), all ``way``-way marginals."""
    from audit.data.microdata import validate
    from audit.inputs import Inputs
    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    raw = pd.read_csv(find(data, ACS), dtype=str)
    names = sorted(raw["puma"].unique())[:pumas]
    rng = np.random.default_rng(seed)
    parts = []
    for name in names:
        rows = raw[raw["puma"] == name]
        parts.append(rows.iloc[np.sort(rng.choice(len(rows), size=min(persons, len(rows)), replace=False))])
    frame = pd.concat(parts).reset_index(drop=True)[["puma", *ACS_COLUMNS]]
    with tempfile.TemporaryDirectory() as tmp:
        schema_path, tables_path = acs_schema_tables(frame, way, Path(tmp))
        schema = load_schema(schema_path)
        schedule = load_schedule(tables_path, schema)
    frame = validate(frame, schema, "acs")
    problems = Inputs(schema, schedule, frame, "acs").problems()
    return problems, frame, schema, f"ACS Fulton, {len(names)} PUMAs x {persons} persons, all {way}-way marginals"
