"""What ``audit protect`` reports agrees with the re-audit of what it writes: a unit no suppression can
fix is named with the reason while the rest stands, and with complementary suppression in the schedule
protected.yaml re-tabulates to exactly the pattern the search verified (real solvers, brute force)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from _oracle import all_datasets, consistent_worlds, to_atoms, verified_claims
from audit.cli import run as cli
from audit.inputs import load_inputs
from audit.outputs.sections import protection_section
from audit.protection import group as group_module
from audit.protection.unit import unit_contexts
from audit.release.constraints import SUPPRESSED

LONE_SCHEMA = {
    "unit": "person", "geography": ["block"],
    "columns": {"sex": {"type": "categorical", "values": {"F": "F", "M": "M"}},
                "race": {"type": "categorical", "values": {"W": "W", "B": "B"}},
                "age": {"type": "categorical", "values": {"C": "child", "A": "adult"}}},
    "constraints": [{"forbid": {"age": ["C"]}, "label": "group quarters hold adults only"},
                    {"forbid": {"race": ["B"]}, "label": "a single-race frame"}],
}
LONE_TABLES = {"tables": [{"id": "T", "geography": "block", "by": ["sex", "race"], "margins": True},
                          {"id": "U", "geography": "block", "by": ["age", "sex"], "margins": True}]}
# block b2 holds one person: the schema leaves race and age a single value, so "the one person of b2 is
# white and an adult" is proved from the known population alone, whatever is hidden
LONE_ROWS = [("b1", "F"), ("b1", "F"), ("b1", "M"), ("b1", "F"), ("b1", "F"), ("b1", "M"), ("b2", "F")]


def _write(folder: Path, schema: dict, tables: dict, frame: pd.DataFrame) -> list[str]:
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables))
    frame.to_csv(folder / "data.csv", index=False)
    return [str(folder / "data.csv"), "-s", str(folder / "schema.yaml"), "-t", str(folder / "tables.yaml")]


def _hidden(release) -> set[str]:
    return {v.cell.key for v in release.values if v.status == SUPPRESSED}


def test_a_unit_no_suppression_fixes_is_named_and_the_other_units_are_protected(tmp_path, capsys):
    frame = pd.DataFrame([{"block": b, "sex": s, "race": "W", "age": "A"} for b, s in LONE_ROWS])
    args = _write(tmp_path, LONE_SCHEMA, LONE_TABLES, frame)
    assert cli(["protect", *args, "-o", str(tmp_path / "out")]) == 1  # the release still fails in b2: honest
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "protection.json").read_text())
    rec = report["recommendation"]
    assert rec is not None and rec["complete"] is False and rec["still_failing"] == ["b2"]
    assert report["failing_units"] == {} and "pattern stands for the others" in report["reason"]
    units = {u["geo"]: u for u in report["units"]}
    assert units["b1"]["status"] == "protected" and units["b1"]["cells"]
    stuck = report["undefeatable"]["b2"]
    assert stuck["failing_rules"] == ["derived_singletons"] and "merge the unit" in stuck["remedy"]
    (claim,) = stuck["undefeatable"]
    assert claim["columns"] == {"race": "W", "age": "A"} and claim["m"] == 1
    assert "population of 1 is known to the attacker" in claim["why"]
    assert "population of 1" in out and "merge the unit" in out and "Recommendation for every unit but b2" in out
    section = protection_section(report)  # the report's protection section names them too
    assert section["still_failing"] == ["b2"] and section["undefeatable"][0][:2] == ("b2", claim["claim"])
    # protected.yaml is written, and its re-audit fails in b2 alone, on that rule alone
    written = yaml.safe_load((tmp_path / "out" / "protected.yaml").read_text())["suppress"]
    assert written["b1"] == units["b1"]["cells"]
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert findings["verdict"] == "fail"
    assert {(c["unit"], c["rule"]) for c in findings["checks"] if c["outcome"] == "fail"} == {("b2", "derived_singletons")}
    # brute force: with every cell of b2 hidden, every dataset the schema allows proves the claim
    inputs = load_inputs(*args[:1], args[2], args[4])
    ctx = next(c for c in unit_contexts(inputs) if c.geo == ("b2",))
    problem = ctx.problem(ctx.every_cell())[0]
    proved = [{problem.domains[c].name: problem.domains[c].labels[a] for c, a in k.assignment}
              for k in verified_claims(problem, all_datasets(problem)) if k.m == 1]
    assert claim["columns"] in proved


def test_protection_levels_a_threshold_pins_are_named_and_the_rest_is_protected(tmp_path):
    """The joint search (protection levels): a cell the schedule hides below its threshold that no
    pattern widens enough is named, and the pattern for the other rules stands."""
    counts = {("x", "p"): 2, ("x", "q"): 4, ("y", "p"): 3, ("y", "q"): 5}  # the 2 is hidden, known to be 1 or 2
    frame = pd.DataFrame([{"block": "b1", "a": a, "b": b} for (a, b), n in counts.items() for _ in range(n)])
    schema = {"unit": "person", "geography": ["block"],
              "columns": {"a": {"type": "categorical", "values": {"x": "x", "y": "y"}},
                          "b": {"type": "categorical", "values": {"p": "p", "q": "q"}}}}
    tables = {"protection": {"suppress_below": 3}, "tables": [{"id": "T", "geography": "block", "by": ["a", "b"],
                                                               "margins": True}]}
    args = _write(tmp_path, schema, tables, frame)
    (tmp_path / "rules.yaml").write_text("name: pl\nprotection_levels: {upper: 1, lower: 1}\n")
    assert cli(["protect", *args, "-r", str(tmp_path / "rules.yaml"), "-o", str(tmp_path / "out"), "-q"]) == 1
    report = json.loads((tmp_path / "out" / "protection.json").read_text())
    (unit,) = report["units"]
    assert unit["status"] == "unfixable"
    assert [e["cell"] for e in unit["undefeatable"]] == ["T:x,p"]  # it cannot reach 3: the threshold is known
    assert "above its value" in unit["undefeatable"][0]["claim"] and unit["cells"]  # its lower end is protected
    assert report["recommendation"]["complete"] is False
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert {(c["unit"], c["rule"]) for c in findings["checks"] if c["outcome"] == "fail"} == {("b1", "protection_levels")}


# a tract of three blocks where the schedule's complementary suppression hid B1:*,b0 (a count of 2) in block
# 3; rerun over protect's pattern, the heuristic published it again and the re-audit failed small_cells
TRACT = [("1", "a1", "b1", "c1"), ("1", "a1", "b2", "c0"), ("1", "a0", "b1", "c0"), ("1", "a0", "b1", "c1"),
         ("1", "a1", "b0", "c1"), ("2", "a0", "b1", "c0"), ("2", "a1", "b0", "c0"), ("2", "a1", "b1", "c0"),
         ("2", "a1", "b2", "c1"), ("2", "a1", "b1", "c1"), ("3", "a1", "b2", "c1"), ("3", "a0", "b1", "c1"),
         ("3", "a0", "b2", "c0"), ("3", "a1", "b0", "c1"), ("3", "a0", "b0", "c1")]
ABC = {"unit": "person", "geography": ["tract", "block"],
       "columns": {n: {"type": "categorical", "values": {v: v for v in vals}}
                   for n, vals in {"a": ["a0", "a1"], "b": ["b0", "b1", "b2"], "c": ["c0", "c1"]}.items()}}


def _tract_case(rng: np.random.Generator | None):
    if rng is None:
        return TRACT, 2, False, False
    rows = [(blk, *(str(rng.choice(v)) for v in (["a0", "a1"], ["b0", "b1", "b2"], ["c0", "c1"])))
            for blk in ["1", "2", "3"][: rng.integers(1, 4)] for _ in range(int(rng.integers(1, 6)))]
    return rows, int(rng.integers(2, 4)), bool(rng.integers(0, 2)), bool(rng.integers(0, 2))


@pytest.mark.parametrize("seed", [None, 3, 12])
def test_with_complementary_suppression_the_reaudit_attacks_the_verified_pattern(tmp_path, seed):
    rows, t, margins, tract_table = _tract_case(None if seed is None else np.random.default_rng(seed))
    tables = [{"id": "B1", "geography": "block", "by": ["a", "b"], "margins": True},
              {"id": "B2", "geography": "block", "by": ["b", "c"], "margins": margins}]
    tables += [{"id": "T1", "geography": "tract", "by": ["a", "c"], "margins": True}] if tract_table else []
    frame = pd.DataFrame([{"tract": "t1", "block": b, "a": a, "b": bb, "c": c} for b, a, bb, c in rows])
    args = _write(tmp_path, ABC, {"protection": {"suppress_below": t, "complementary": True}, "tables": tables}, frame)
    assert cli(["protect", *args, "-o", str(tmp_path / "out"), "-q"]) == 0
    report = json.loads((tmp_path / "out" / "protection.json").read_text())
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    failing = {c["unit"] for c in findings["checks"] if c["outcome"] == "fail"}
    said = {u["geo"]: u["status"] for u in [*report["units"], *report.get("levels", [])]}
    assert not failing and all(s in ("protected", "pass") for s in said.values()), (said, failing)
    # each unit the search protected: the cells its last attack saw hidden are those protected.yaml hides
    inputs = load_inputs(*args[:1], args[2], args[4])
    again = {"/".join(r.geo): _hidden(r) for r in load_inputs(*args[:1], args[2], tmp_path / "out" / "protected.yaml").release()}
    for ctx in unit_contexts(inputs):
        unit = next((u for u in report["units"] if u["geo"] == "/".join(ctx.geo)), None)
        if unit is not None and not any(d["cells"] for d in report.get("levels", ())):
            assert _hidden(ctx.release(set(unit["cells"]))) == again[unit["geo"]]
        if "/".join(ctx.geo) in report["suppress"]:
            assert set(report["suppress"]["/".join(ctx.geo)]) == again["/".join(ctx.geo)]
    if seed is None:  # brute force on block 3: every dataset that tabulates to its protected release
        _no_claim_the_rules_forbid(load_inputs(*args[:1], args[2], tmp_path / "out" / "protected.yaml"), ("t1", "3"))


def _no_claim_the_rules_forbid(inputs, geo) -> None:
    """Over every dataset of the unit's size that the real tabulator turns into its published release: no
    singleton over two or more columns (none is published: the threshold hides every 1), no full record
    and more than one dataset (the default rules)."""
    release = next(r for r in inputs.release() if r.geo == geo)
    problem = next(p for p in inputs.problems([release]))
    worlds = consistent_worlds(inputs.schema, inputs.schedule, release, len(problem.truth))
    proved = verified_claims(problem, [to_atoms(problem, w) for w in worlds])
    assert len({tuple(sorted(w)) for w in worlds}) > 1
    assert not [c for c in proved if c.m == 1 and len(c.assignment) >= 2]
    assert not [c for c in proved if len(c.assignment) == problem.n_attributes]


def test_a_unit_the_reaudit_fails_is_never_printed_protected(tmp_path, capsys, monkeypatch):
    """Without the pinning (the heuristic rerun over protect's pattern, as before), the re-audit fails
    block 3: the printout and protection.json take its status from the re-audit, and no recommendation."""
    monkeypatch.setattr(group_module, "pin", lambda frame, schema, schedule, suppress: suppress)
    tables = [{"id": "B1", "geography": "block", "by": ["a", "b"], "margins": True},
              {"id": "B2", "geography": "block", "by": ["b", "c"], "margins": False}]
    frame = pd.DataFrame([{"tract": "t1", "block": b, "a": a, "b": bb, "c": c} for b, a, bb, c in TRACT])
    args = _write(tmp_path, ABC, {"protection": {"suppress_below": 2, "complementary": True}, "tables": tables}, frame)
    assert cli(["protect", *args, "-o", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "protection.json").read_text())
    unit = next(u for u in report["units"] if u["geo"] == "t1/3")
    assert unit["status"] == "fails-reaudit" and unit["search_status"] == "protected"
    assert unit["failing_rules"] == ["small_cells"] and report["failing_units"] == {"t1/3": ["small_cells"]}
    assert report["recommendation"] is None and not (tmp_path / "out" / "protected.yaml").exists()
    assert "t1/3: fails the re-audit (small_cells" in out and "t1/3: protected" not in out


def test_two_tracts_with_tract_tables_are_each_protected_with_their_blocks(tmp_path):
    """The coupled step of one tract holds only its own units' cells: with a second tract's blocks in
    the pattern, re-tabulating the tract's rows stopped with "unit 't2' is not a geographic unit"."""
    tables = [{"id": "B1", "geography": "block", "by": ["a", "b"], "margins": True},
              {"id": "T1", "geography": "tract", "by": ["a", "c"], "margins": True}]
    frame = pd.DataFrame([{"tract": tract, "block": b, "a": a, "b": bb, "c": c} for tract in ("t1", "t2")
                          for b, a, bb, c in TRACT])
    args = _write(tmp_path, ABC, {"protection": {"suppress_below": 2, "complementary": True}, "tables": tables}, frame)
    assert cli(["protect", *args, "-o", str(tmp_path / "out"), "-q"]) == 0
    report = json.loads((tmp_path / "out" / "protection.json").read_text())
    assert {d["geo"] for d in report["levels"]} == {"t1", "t2"}
    assert {k.split("/")[0] for k in report["suppress"]} == {"t1", "t2"}
