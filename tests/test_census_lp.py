"""The Census Bureau's reconstruction LPs (recon_replication's lp_tests): read, mapped onto the SF1
schedule, reconstructed from their published values alone, and compared with the Bureau's solution."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import RECON

from audit.release.census_lp import release_frame
from audit.release.census_lp_reader import read_lp
from audit.release.census_lp_solution import compare, read_solution
from audit.cli import run
from audit.attacks.exact import ExactOptions
from audit.published import attack_unit, published_problems, read_release

ROOT = Path(__file__).resolve().parents[1]
SF1 = ROOT / "samples" / "sf1"
LP = RECON / "lp_tests" if RECON else None
MODELS = {"model_29183980000": (1, 1, 226), "model_29165030307": (2, 11, 1206)}  # blocks, persons, constraints
DROPPED = {"P8", "P10", "P12G", "PCT12G", "PCT12O"}  # tables these LPs leave out (dbrecon before 2+ races)
QUICK = ExactOptions(explain="none")


@pytest.mark.parametrize("model", MODELS)
def test_every_constraint_is_its_sf1_cell_and_the_rest_is_zero_or_unknown(model, sf1):
    schema, schedules = sf1
    blocks, persons, constraints = MODELS[model]
    lp = read_lp(LP / f"{model}.lp.gz")
    assert len(lp.rows) == constraints
    imported = release_frame(lp, schema, schedules["tract"])  # raises unless each constraint is its cell exactly
    c = imported.counts
    assert (c["blocks"], c["tracts"], c["persons"], c["from_lp"], imported.left_out) == (blocks, 1, persons, constraints, {})
    assert c["values"] == len(imported.frame) == 775 * blocks + 3296 == c["from_lp"] + c["zero"] + c["unknown"]
    unknown = imported.frame[imported.frame["status"] == "suppressed"]
    assert set(unknown["table"]) == DROPPED  # only what dbrecon left out while a variable could fall in it
    alone = release_frame(lp, schema, schedules["block"])
    assert alone.counts["tracts"] == 0 and sum(alone.left_out.values()) == sum(r.geoid.__len__() == 11 for r in lp.rows)
    assert set(alone.left_out) <= {"PCT012", *(f"PCT012{x}" for x in "ABCDEFGHIJKLMN")}


@pytest.mark.parametrize("model", MODELS)
def test_the_tool_reconstructs_each_tract_as_the_bureaus_solution(model, sf1):
    """Blocks with their block tables, and the tract with block and tract tables coupled: one dataset
    each, equal to the Bureau's solution, which reproduces every value the tool read from the LP."""
    schema, schedules = sf1
    blocks, persons, _ = MODELS[model]
    bureau = read_solution(LP / f"{model}.sol.gz")
    assert len(bureau) == persons and bureau["block"].nunique() == blocks
    for kind, schedule in schedules.items():
        releases, notes = read_release(LP / f"{model}.lp.gz", schema, schedule)
        problems = published_problems(releases, schema, schedule)
        assert [p.level for p in problems] == ["block"] * blocks + (["tract"] if kind == "tract" else [])
        for problem in problems:
            result = attack_unit(problem, QUICK)
            found = compare(result, bureau, schema)
            assert found["breaks"] == [], found
            assert result.reconstructed and found["differ"] == [], found
            assert found["agree"] == found["persons"] == problem.n_rows[1]


def test_a_solution_that_differs_is_reported_with_why(sf1):
    """The 1-person tract with the person one year younger: the tool's proved record differs, and the
    changed solution breaks the tract's single-year PCT12 cells."""
    schema, schedules = sf1
    releases, _ = read_release(LP / "model_29183980000.lp.gz", schema, schedules["tract"])
    tract = published_problems(releases, schema, schedules["tract"])[-1]
    bureau = read_solution(LP / "model_29183980000.sol.gz")
    assert bureau[["sex", "age", "white", "hispanic"]].values.tolist() == [["F", 84, "Y", "N"]]
    younger = bureau.assign(age=83)
    found = compare(attack_unit(tract, QUICK), younger, schema)
    assert found["agree"] == 0 and found["differ"][0]["proved"] == 1 and found["differ"][0]["solution"] == 0
    assert found["differ"][0]["record"]["age"] == "84"
    assert {"PCT12:PCT0120190:count", "PCT12:PCT0120191:count", "PCT12A:PCT012A191:count"} <= set(found["breaks"])


def test_cli_import_lp_then_run_published_equals_reading_the_lp(sf1, tmp_path, capsys):
    schema, tables = str(SF1 / "schema.yaml"), str(SF1 / "tables.yaml")
    lp, sol = LP / "model_29165030307.lp.gz", LP / "model_29165030307.sol.gz"
    release, persons = tmp_path / "release.csv", tmp_path / "persons.csv"
    assert run(["import-lp", str(lp), "-s", schema, "-t", tables, "-o", str(release), "--solution", str(sol),
                "--persons", str(persons)]) == 0
    err = capsys.readouterr().err
    assert "2 blocks and 0 tracts, 11 persons: 1550 values, 408 from the LP's constraints" in err
    assert "798 LP constraints name cells that are not in the schedule" in err
    assert len(pd.read_csv(persons, dtype=str)) == 11
    claims = {}
    for name, source in (("csv", ["--published", str(release)]), ("lp", ["--published", str(lp)]),
                         ("persons", [str(persons)])):  # the Bureau's solution audited as if it were microdata
        assert run(["run", *source, "-s", schema, "-t", tables, "-o", str(tmp_path / name), "--explain", "none",
                    "-q"]) == 1
        doc = json.loads((tmp_path / name / "findings.json").read_text())
        assert doc["summary"]["units_reconstructed"] == 2 and doc["summary"]["full_records"] == 11
        claims[name] = {u["geo"]: sorted((sorted(c["columns"].items()), c["m"]) for c in u["claims"]
                                         if c["status"] == "verified") for u in doc["units"]}
    assert claims["csv"] == claims["lp"] == claims["persons"]
