"""A count the schedule suppresses but whose interval its own rule pins (``suppress_below: 2`` hides only
1s) is published to the attacker: the same table with the count published gets the same verdict and
the same failing checks, and ``audit protect`` does not take such a suppression as hiding the cell."""
from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from audit.cli import run as cli
from audit.inputs import load_inputs
from audit.pipeline import AuditOptions, run_audit
from audit.policy.checks import unit_intervals
from audit.policy.rules import load_rules
from audit.protection.options import Policy, ProtectOptions
from audit.protection.protect import protect
from audit.scale.protect import ProtectPool
from audit.protection.unit import forced_cells, unit_contexts
from audit.release.constraints import PUBLISHED, SUPPRESSED, Value, pinned_count
from audit.specs.query import Predicate, Statistic
from audit.specs.schedule import CellDef, Protection

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"

# Nine persons, sex and race published one way each: race B has one person, and nothing else is provable
# (which sex the B person has is open), so small_cells is the only rule the published 1 fails.
SCHEMA = {"unit": "person", "geography": ["block"],
          "columns": {"sex": {"type": "categorical", "values": {"F": "Female", "M": "Male"}},
                      "race": {"type": "categorical", "values": {"B": "Black", "W": "White", "A": "Asian"}}}}
ROWS = ["F,B", "F,W", "F,W", "M,W", "M,W", "M,W", "M,A", "F,A", "F,A"]


def _tables(protection: dict | None) -> dict:
    tables = [{"id": "P1", "geography": "block", "by": ["sex"]}, {"id": "P2", "geography": "block", "by": ["race"]}]
    return {"tables": tables, **({"protection": protection} if protection is not None else {})}


def _write(folder: Path, protection: dict | None) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "schema.yaml").write_text(yaml.safe_dump(SCHEMA))
    (folder / "tables.yaml").write_text(yaml.safe_dump(_tables(protection)))
    (folder / "data.csv").write_text("block,sex,race\n" + "".join(f"0001,{r}\n" for r in ROWS))
    return folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml"


def _failing(doc) -> set[str]:
    return {c.rule for c in doc.checks if c.outcome == "fail"}


def _block7(folder: Path, protection: dict) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    spec = yaml.safe_load((BLOCK7 / "tables.yaml").read_text())
    spec["protection"] = protection
    (folder / "tables.yaml").write_text(yaml.safe_dump(spec))
    return BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", folder / "tables.yaml"


@pytest.mark.parametrize("make", [_write, _block7], ids=["one-way", "block7"])
def test_a_count_pinned_by_its_rule_gets_the_verdict_of_the_same_count_published(tmp_path, make):
    pinned = run_audit(*make(tmp_path / "pinned", {"suppress_below": 2}), tmp_path / "out-pinned",
                       AuditOptions(explain_budget=1))
    shown = run_audit(*make(tmp_path / "shown", {}), tmp_path / "out-shown", AuditOptions(explain_budget=1))
    assert pinned.verdict == shown.verdict == "fail"
    assert _failing(pinned) == _failing(shown) and "small_cells" in _failing(pinned)
    unit, = pinned.units
    assert unit["cells"]["pinned"] and all(v == 1 for v in unit["cells"]["pinned"].values())
    small = next(c for c in pinned.checks if c.rule == "small_cells")
    first = sorted(unit["cells"]["pinned"])[0]
    assert f"{first} suppressed but pinned by its rule (value 1)" in small.message
    assert small.cells == {k: "suppressed but pinned by its rule (value 1)" for k in unit["cells"]["pinned"]}
    # protection levels judge it as an interval of one value (a warning in the default policy)
    levels = next(c for c in pinned.checks if c.rule == "protection_levels")
    assert levels.outcome == "warn" and "pinned by its rule (value 1), needs [0, 2]" in levels.message
    assert {k: (iv["lo"], iv["hi"]) for k, iv in unit_intervals(unit).items() if iv.get("pinned")} == \
        {k: (1, 1) for k in unit["cells"]["pinned"]}
    # the claims a pinned cell states are the published cell's: the same verdicts, direct ones included
    assert pinned.units[0]["summary"] == shown.units[0]["summary"]
    report = (tmp_path / "out-pinned" / "report.html").read_text()
    assert "suppressed but pinned by its rule (value 1)" in report


def test_the_one_way_release_no_longer_passes_with_its_one_suppressed(tmp_path):
    data, schema, tables = _write(tmp_path, {"suppress_below": 2})
    assert cli(["run", str(data), "-s", str(schema), "-t", str(tables), "-o", str(tmp_path / "out"), "-q"]) == 1
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert [f["rule"] for f in doc["failing"]] == ["small_cells"]
    assert doc["units"][0]["cells"]["pinned"] == {"P2:B": 1}
    # a published release alone: the rule pins the same cell
    release = tmp_path / "release.csv"
    assert cli(["tabulate", str(data), "-s", str(schema), "-t", str(tables), "-o", str(release)]) == 0
    assert cli(["run", "--published", str(release), "-s", str(schema), "-t", str(tables), "-o",
                str(tmp_path / "pub"), "-q"]) == 1
    pub = json.loads((tmp_path / "pub" / "findings.json").read_text())
    assert [f["rule"] for f in pub["failing"]] == ["small_cells"] and pub["units"][0]["cells"]["pinned"] == {"P2:B": 1}


def test_a_threshold_with_room_pins_nothing():
    cell = CellDef("T", "a", Predicate(), (Statistic(),), "block")
    hidden = Value(cell, Statistic(), SUPPRESSED)
    assert pinned_count(hidden, Protection(suppress_below=2)) == 1
    assert pinned_count(hidden, Protection(suppress_below=1, protect_zeros=True)) == 0
    for rule in (Protection(suppress_below=3), Protection(suppress_below=2, protect_zeros=True),
                 Protection(suppress_below=2, complementary=True)):
        assert pinned_count(hidden, rule) is None
    # a cell the schedule names (or protect lists) is [0, N]; a published count is not a suppression
    assert pinned_count(replace(hidden, cell=replace(cell, suppressed=True)), Protection(suppress_below=2)) is None
    assert pinned_count(Value(cell, Statistic(), PUBLISHED, Fraction(1)), Protection(suppress_below=1)) is None


def test_protect_lists_a_pinned_cell_and_says_the_rule_pins_it(tmp_path, capsys):
    data, schema, tables = _write(tmp_path, {"suppress_below": 2})
    inputs = load_inputs(data, schema, tables)
    ctx, = unit_contexts(inputs)
    problem, release = ctx.problem()
    primary, complementary = forced_cells(release, problem, ctx.schedule.tables, Policy.from_rules(load_rules()),
                                          ProtectOptions())
    # the 1 the rule pins is primary, and its line needs a partner: the threshold's suppression hides nothing
    assert primary == ["P2:B"] and len(complementary) == 1 and complementary[0].startswith("P2:")
    report = protect(inputs, ProtectOptions(), load_rules(), tmp_path / "out", pool=ProtectPool())
    assert report["before"]["verdict"] == "fail" and report["after"]["verdict"] == "pass"
    rec = report["recommendation"]
    assert "P2:B" in rec["cells"]["0001"] and rec["pinned_by_rule"]["cells"] == {"0001": {"P2:B": 1}}
    assert "suppress_below: 2 hides only 1s" in rec["pinned_by_rule"]["note"]
    after = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert "pinned" not in after["units"][0]["cells"]  # listed, the cell is [0, N]


def test_protect_with_protection_levels_widens_a_pinned_cell(tmp_path):
    """The joint secondary search: the pinned 1 is an interval of one value, so it is listed, with a partner."""
    data, schema, tables = _write(tmp_path, {"suppress_below": 2})
    (tmp_path / "pl.yaml").write_text("name: pl\nprotection_levels: {upper: 1, lower: 1}\n")
    report = protect(load_inputs(data, schema, tables), ProtectOptions(), load_rules(tmp_path / "pl.yaml"), tmp_path / "out",
                     pool=ProtectPool())
    assert [f["rule"] for f in report["before"]["failing"]] == ["protection_levels"]
    assert "P2:B suppressed but pinned by its rule (value 1)" in report["before"]["failing"][0]["example"]
    unit, = report["units"]
    assert unit["primary"] == ["P2:B"] and len(unit["complementary"]) == 1 and report["after"]["verdict"] == "pass"
    assert report["recommendation"]["pinned_by_rule"]["cells"] == {"0001": {"P2:B": 1}}
