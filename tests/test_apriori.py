"""A-priori knowledge in the schedule (as tau-Argus's .hst carries it): cells forced to publish, costs and
per-cell protection levels, used by audit protect and by the protection_levels rule. On SSBtools' z1
with GaussSuppression's maxN = 3 (primaries B, D, H x arbeid: 1, 2 and 3 persons)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from audit.cli import run

PEERS = Path(__file__).resolve().parent / "data" / "peers"


@pytest.fixture(scope="module")
def z1(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("z1")
    assert run(["import", "formula", str(PEERS / "gausssuppression_z1.csv"), "-f", "~ region*hovedint", "--freq", "ant",
                "--max-n", "3", "-o", str(out)]) == 0
    return out


def _schedule(z1: Path, folder: Path, apriori: dict) -> Path:
    doc = yaml.safe_load((z1 / "tables.yaml").read_text())
    doc["apriori"] = {"all": apriori}
    (folder / "tables.yaml").write_text(yaml.safe_dump(doc))
    return folder / "tables.yaml"


def _protect(z1: Path, tables: Path, out: Path) -> dict:
    assert run(["protect", str(z1 / "data.csv"), "-s", str(z1 / "schema.yaml"), "-t", str(tables), "-o", str(out),
                "--no-complementary", "--quiet"]) == 0
    unit, = json.loads((out / "protection.json").read_text())["units"]
    return unit


def test_protect_never_hides_a_cell_forced_to_publish_and_avoids_a_costly_one(z1, tmp_path):
    """Without a-priori knowledge protect hides B and D x annet; with both forced to publish (and H x annet
    made costly) it finds another pattern the re-audit passes, hiding none of them."""
    free = _protect(z1, z1 / "tables.yaml", tmp_path / "free")
    assert free["status"] == "protected" and free["cells"] == ["T1:B,annet", "T1:D,annet"]
    held = _protect(z1, _schedule(z1, tmp_path, {"publish": free["cells"], "cost": {"T1:H,annet": 10}}),
                    tmp_path / "held")
    assert held["status"] == "protected" and held["cells"]
    assert not set(held["cells"]) & {"T1:B,annet", "T1:D,annet", "T1:H,annet"}
    assert json.loads((tmp_path / "held" / "findings.json").read_text())["verdict"] == "pass"
    assert "apriori" in yaml.safe_load((tmp_path / "held" / "protected.yaml").read_text())  # kept for the next run


def test_protect_meets_a_cells_own_protection_levels(z1, tmp_path):
    """H x arbeid (3 persons) with its own lower level 1: the claims alone need B and D x annet, which leave
    H x arbeid pinned at 3; protect adds H x annet, widening it to [0, 3] (GaussSuppression's pattern)."""
    unit = _protect(z1, _schedule(z1, tmp_path, {"levels": {"T1:H,arbeid": [1, 0]}}), tmp_path / "out")
    assert unit["status"] == "protected" and unit["cells"] == ["T1:B,annet", "T1:D,annet", "T1:H,annet"]
    found = json.loads((tmp_path / "out" / "findings.json").read_text())["units"][0]
    assert found["intervals"]["T1:H,arbeid"] == [0, 3] and found["cells"]["levels"] == {"T1:H,arbeid": [1, 0]}


def test_last_years_cells_at_a_low_cost_are_preferred(z1, tmp_path):
    """Last year's pattern (B and D x trygd) as a starting point: at cost 0.1 each, protect takes them over
    the cheaper-by-persons B and D x annet it picks without them, and the re-audit passes."""
    unit = _protect(z1, _schedule(z1, tmp_path, {"cost": {"T1:B,trygd": 0.1, "T1:D,trygd": 0.1}}), tmp_path / "o")
    assert unit["status"] == "protected" and unit["cells"] == ["T1:B,trygd", "T1:D,trygd"]


def _levels_check(z1: Path, folder: Path, levels: dict | None) -> dict:
    tables = _schedule(z1, folder, {"levels": levels}) if levels else z1 / "tables.yaml"
    assert run(["run", str(z1 / "data.csv"), "-s", str(z1 / "schema.yaml"), "-t", str(tables), "-o",
                str(folder / "run"), "--quiet"]) == 1  # the derived singletons fail it; the report is written
    assert (folder / "run" / "report.html").is_file()
    doc = json.loads((folder / "run" / "findings.json").read_text())
    check, = [c for c in doc["checks"] if c["rule"] == "protection_levels"]
    return check


def test_a_cells_own_levels_replace_the_rules_in_the_audit(z1, tmp_path):
    """The primaries alone leave B, D, H x arbeid pinned: protection_levels (default: 1 each side) names all
    three; levels [0, 0] of their own accept two of them, and the third is judged by its own [2, 2]."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    rule = _levels_check(z1, tmp_path / "a", None)
    assert rule["outcome"] == "warn" and rule["count"] == 3
    own = _levels_check(z1, tmp_path / "b", {"T1:B,arbeid": [0, 0], "T1:D,arbeid": [0, 0], "T1:H,arbeid": [2, 2]})
    assert own["count"] == 1 and "T1:H,arbeid in [3, 3]" in own["message"] and "needs [1, 5]" in own["message"]


@pytest.mark.parametrize("apriori, words", [
    ({"publish": ["T1:Z,annet"]}, "unknown cell 'T1:Z,annet'"),
    ({"levels": {"T1:B,annet": [1]}}, "levels of 'T1:B,annet' must be [lower, upper]"),
    ({"cost": {"T1:B,annet": -1}}, "cost of 'T1:B,annet' must be a number"),
    ({"hide": ["T1:B,annet"]}, "takes publish, cost, levels"),
])
def test_bad_apriori_names_the_line_and_the_fix(z1, tmp_path, capsys, apriori, words):
    tables = _schedule(z1, tmp_path, apriori)
    assert run(["run", str(z1 / "data.csv"), "-s", str(z1 / "schema.yaml"), "-t", str(tables), "-o",
                str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert words in err and "tables.yaml:" in err and "-- fix:" in err


def test_a_cell_both_suppressed_and_forced_to_publish_is_refused(z1, tmp_path, capsys):
    doc = yaml.safe_load((z1 / "tables.yaml").read_text())
    doc |= {"suppress": {"all": ["T1:B,annet"]}, "apriori": {"all": {"publish": ["T1:B,annet"]}}}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(doc))
    assert run(["run", str(z1 / "data.csv"), "-s", str(z1 / "schema.yaml"), "-t", str(tmp_path / "t.yaml"), "-o",
                str(tmp_path / "run")]) == 2
    assert "both suppressed and forced to publish" in capsys.readouterr().err
