"""The samples: they validate and tabulate, their generated specs match their generators, the wheel ships data."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from audit.cli import run
from audit.inputs import default_paths, load_inputs
from audit.release.tabulate import release_frame

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SHARED = ROOT.parent / "shared" / "data"
RECON = SHARED / "recon_replication"
HOUSEHOLD_JSON = SHARED / "das_2010ddp" / "household2010_tables_recodes.json"
DESCRIPTORS = RECON / "layouts" / "DATA_FIELD_DESCRIPTORS_classified.csv"


@pytest.fixture
def shared() -> Path:
    """The shared real data (../shared/data next to the repository)."""
    if not SHARED.is_dir():
        pytest.skip(f"shared test data not found at {SHARED} (see the provenance notes in shared/data/PROVENANCE.md)")
    return SHARED


def script(path: Path, *args: str) -> None:
    subprocess.run([sys.executable, str(path), *args], check=True, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", ["block7", "sf1", "households"])
def test_sample_validates_and_tabulates(name, tmp_path, capsys):
    data, schema, tables = default_paths(SAMPLES / name)
    assert run(["validate", "-s", str(schema), "-t", str(tables), "-d", str(data)]) == 0
    out = tmp_path / "release.csv"
    assert run(["tabulate", str(data), "-s", str(schema), "-t", str(tables), "-o", str(out)]) == 0
    release = pd.read_csv(out, dtype=str)
    assert len(release) and set(release["status"]) <= {"published", "suppressed", "empty"}


def test_sf1_totals_equal_block_populations():
    inputs = load_inputs(*default_paths(SAMPLES / "sf1"))
    frame = release_frame(inputs.release(), inputs.schema)
    totals = frame[frame["cell"] == "P0010001"].set_index("block")["value"].astype(int)
    sizes = inputs.frame.groupby("block").size()
    assert totals.to_dict() == sizes.to_dict()
    assert len(sizes) == 10 and sizes.min() >= 3 and sizes.max() <= 40
    assert inputs.frame["tract"].nunique() == 1
    assert len(inputs.schedule.tables) == 18 and len(inputs.schedule.cells) == 775


def test_sf1_truth_meets_every_edit_and_constraint():
    inputs = load_inputs(*default_paths(SAMPLES / "sf1"))
    for problem in inputs.problems():
        assert problem.violations(problem.truth) == []


def test_sf1_generated_files_match_their_scripts(shared, tmp_path):
    layout = RECON / "layouts" / "sf1_vars_race_binaries.csv"
    script(SAMPLES / "sf1" / "make_tables.py", str(layout), "--descriptors", str(DESCRIPTORS),
           "-o", str(tmp_path / "tables.yaml"))
    assert (tmp_path / "tables.yaml").read_text() == (SAMPLES / "sf1" / "tables.yaml").read_text()
    extract = RECON / "extract" / "rhdf_bt_0solvar_extract.csv"
    script(SAMPLES / "sf1" / "convert.py", str(extract), str(tmp_path / "data.csv"), "--tract", "01073005103",
           "--blocks", "10", "--min-size", "3", "--max-size", "40")
    assert (tmp_path / "data.csv").read_text() == (SAMPLES / "sf1" / "data.csv").read_text()


def test_sf1_convert_keeps_every_person_of_the_extract(shared, tmp_path):
    sys.path.insert(0, str(SAMPLES / "sf1"))
    try:
        from convert import convert
    finally:
        sys.path.pop(0)
    source = pd.read_csv(RECON / "extract" / "rhdf_bt_0solvar_extract.csv", dtype=str, keep_default_na=False)
    out = convert(source)
    assert len(out) == len(source) == 63969
    assert out.groupby(["state", "county", "tract", "block"]).ngroups == 8530
    races = out[["white", "black", "aian", "asian", "nhopi", "sor"]].eq("Y").sum(axis=1)
    assert (races >= 1).all() and ((races >= 2) == out["two_or_more"].eq("Y")).all()
    assert out["age"].max() <= 110


def test_households_generated_files_match_their_scripts(shared, tmp_path):
    script(SAMPLES / "households" / "make_tables.py", str(HOUSEHOLD_JSON), "--descriptors", str(DESCRIPTORS),
           "-o", str(tmp_path / "tables.yaml"))
    assert (tmp_path / "tables.yaml").read_text() == (SAMPLES / "households" / "tables.yaml").read_text()


def test_households_tables_cover_the_expressible_json_tables(shared):
    spec = json.loads(HOUSEHOLD_JSON.read_text())
    inputs = load_inputs(*default_paths(SAMPLES / "households"))
    ids = {t.id for t in inputs.schedule.tables}
    uses_rent = {t for t, queries in spec["tables"].items() if any("rent" in q.split(" * ") for q in queries)}
    assert ids == set(spec["tables"]) - uses_rent
    assert {"P15", "P18", "P19", "P20", "P22", "P23", "P24", "P25", "P26", "P28", "P38"} <= ids
    assert all(t.level == "block" for t in inputs.schedule.tables)


def test_household_generator_is_seeded_consistent_and_sized(tmp_path):
    gen = SAMPLES / "households" / "generate.py"
    script(gen, "--blocks", "10", "--min-size", "5", "--max-size", "20", "--seed", "2010", str(tmp_path / "a.csv"))
    assert (tmp_path / "a.csv").read_text() == (SAMPLES / "households" / "data.csv").read_text()
    script(gen, "--blocks", "40", "--min-size", "1", "--max-size", "30", "--seed", "7", str(tmp_path / "b.csv"))
    inputs = load_inputs(tmp_path / "b.csv", SAMPLES / "households" / "schema.yaml",
                         SAMPLES / "households" / "tables.yaml")
    sizes = inputs.frame.groupby(["tract", "block"]).size()
    assert len(sizes) == 40 and sizes.min() >= 1 and sizes.max() <= 30
    for edit in inputs.schema.edits:
        assert not edit.forbid.mask(inputs.frame).any(), edit.label
    for problem in inputs.problems():
        assert problem.violations(problem.truth) == []


@pytest.mark.slow
def test_wheel_ships_rules_and_reports(tmp_path):
    # from a copy without build/ or *.egg-info: setuptools reuses an old build/lib, which may hold what
    # an earlier version shipped
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        "build", "dist", ".venv", ".git", "*.egg-info", "__pycache__", ".pytest_cache"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(tmp_path)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel, = tmp_path.glob("disclosure_audit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {"audit/cli.py", "audit/pipeline.py"}
    # the top-level rules/ and reports/ folders ship inside audit (audit/_rules, audit/_reports), not as packages
    for folder, shipped, patterns in (("rules", "audit/_rules", ("*.yaml",)),
                                      ("reports", "audit/_reports", ("*.j2", "*.html", "*.css")),
                                      ("audit/samples_data", "audit/samples_data", ("*/*.csv", "*/*.yaml"))):
        for pattern in patterns:
            expected |= {f"{shipped}/{p.relative_to(ROOT / folder).as_posix()}" for p in (ROOT / folder).glob(pattern)}
    assert expected <= names, sorted(expected - names)
    assert {"audit/_rules/default.yaml", "audit/_reports/report.html.j2", "audit/_reports/report.css"} <= names
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"audit"}
