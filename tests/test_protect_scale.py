"""``audit protect`` on a worker pool: the same pattern with one worker or two, a tract searched with its
blocks in one task, and a task whose worker fails is undecided (fail closed)."""
from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from audit.attacks.exact import ExactOptions
from audit.cli import run as cli
from audit.inputs import load_inputs
from audit.policy.rules import load_rules
from audit.protection.group import Search, failed_group, groups
from audit.protection.options import Policy, ProtectOptions
from audit.protection.protect import protect
from audit.scale.protect import ProtectPool

STABLE = ("geo", "level", "status", "cells", "primary", "complementary", "reconstruction", "minimal", "lower_bound")


def _two_tracts(folder, tract_table: bool = True):
    """Two tracts of two blocks each; block b1 of each tract has 1 man (small_cells fails it), with a
    tract table by sex that gives a block's hidden cell away unless the tract is searched with its blocks."""
    schema = {"unit": "person", "geography": ["tract", "block"],
              "columns": {"sex": {"type": "categorical", "values": {"M": "Male", "F": "Female"}}}}
    tables = [{"id": "B1", "geography": "block", "by": ["sex"], "margins": True}]
    if tract_table:
        tables.append({"id": "R1", "geography": "tract", "by": ["sex"], "margins": True})
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    (folder / "tables.yaml").write_text(yaml.safe_dump({"tables": tables}))
    (folder / "rules.yaml").write_text("name: levels\nsmall_cells: {threshold: 3}\nprotection_levels: {upper: 1, lower: 1}\n")
    rows = []
    for tract, women in (("t1", 4), ("t2", 5)):
        rows += [(tract, "b1", "M")] + [(tract, "b1", "F")] * women + [(tract, "b2", "M")] * 4 + [(tract, "b2", "F")] * 4
    pd.DataFrame([{"tract": t, "block": b, "sex": s} for t, b, s in rows]).to_csv(folder / "data.csv", index=False)
    return load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml"), load_rules(folder / "rules.yaml")


def _pattern(report: dict) -> tuple:
    units = [{k: d.get(k) for k in STABLE} for d in report["units"] + report.get("levels", [])]
    return report["suppress"], units, report["totals"]


def test_one_and_two_workers_give_the_same_pattern_with_each_tract_and_its_blocks_in_one_task(tmp_path):
    inputs, rules = _two_tracts(tmp_path)
    options = ProtectOptions(exact=ExactOptions(explain="none"))
    tasks = list(groups(inputs, {"t1/b1", "t2/b1"}))
    assert [(sorted(set(g.inputs.frame.tract)), sorted(g.todo), g.coupled) for g in tasks] == [
        (["t1"], ["t1/b1"], True), (["t2"], ["t2/b1"], True)]  # a tract's rows and its failing blocks, together
    one = protect(inputs, options, rules, tmp_path / "one", pool=ProtectPool())
    two = protect(inputs, options, rules, tmp_path / "two", pool=ProtectPool(workers=2))
    assert _pattern(one) == _pattern(two)
    assert [d["geo"] for d in two["levels"]] == ["t1", "t2"] and all(d["status"] == "protected" for d in two["levels"])
    assert two["recommendation"] is not None and two["after"]["verdict"] == "pass"
    assert (tmp_path / "one" / "protected.yaml").read_text() == (tmp_path / "two" / "protected.yaml").read_text()


def test_the_cli_with_two_workers_writes_what_one_worker_writes(tmp_path):
    _two_tracts(tmp_path, tract_table=False)
    args = [str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t", str(tmp_path / "tables.yaml"),
            "-r", str(tmp_path / "rules.yaml"), "-q"]
    assert cli(["protect", *args, "-o", str(tmp_path / "one")]) == 0
    assert cli(["protect", *args, "-o", str(tmp_path / "two"), "--workers", "2", "--memory-mb", "4096"]) == 0
    one, two = (json.loads((tmp_path / d / "protection.json").read_text()) for d in ("one", "two"))
    assert _pattern(one) == _pattern(two) and len(one["units"]) == 2  # one task per failing block
    assert (tmp_path / "one" / "protected.yaml").read_text() == (tmp_path / "two" / "protected.yaml").read_text()


def test_a_task_whose_worker_failed_leaves_its_units_undecided(tmp_path):
    inputs, rules = _two_tracts(tmp_path)
    group = next(groups(inputs, {"t1/b1"}))
    search = Search(Policy.from_rules(rules), ProtectOptions(), rules)
    failed = failed_group(group, search, "error", "the worker process died on this unit")
    (unit,) = failed["units"]
    assert unit["geo"] == "t1/b1" and unit["status"] == "undecided" and unit["failing_rules"] == ["undecided"]
    assert "worker process died" in unit["reason"] and failed["suppress"] == {} and failed["levels"] == []


def test_ctrl_c_on_the_pool_keeps_the_finished_tasks_and_resume_gives_the_same_pattern(tmp_path, monkeypatch):
    import pytest

    from audit.protection import protect as protect_module
    from audit.protection.protect import ProtectInterrupted

    inputs, rules = _two_tracts(tmp_path)
    options = ProtectOptions(exact=ExactOptions(explain="none"))
    fresh = protect(inputs, options, rules, tmp_path / "fresh", pool=ProtectPool())

    class StopAfterOne(protect_module.Progress):  # Ctrl-C once the first task is recorded
        def update(self, done=None, note="", key=None):
            super().update(done, note, key)
            if self.label == "protect: units":
                raise KeyboardInterrupt
    monkeypatch.setattr(protect_module, "Progress", StopAfterOne)
    with pytest.raises(ProtectInterrupted, match="interrupted: 1 of 2 units protected and 1 parent units"):
        protect(inputs, options, rules, tmp_path / "out", pool=ProtectPool(workers=2))
    monkeypatch.undo()
    assert not (tmp_path / "out" / "protected.yaml").exists()
    resumed = protect(inputs, options, rules, tmp_path / "out", resume=True, pool=ProtectPool(workers=2))
    assert _pattern(resumed) == _pattern(fresh)


def test_a_unit_with_the_persons_of_one_searched_before_takes_its_search(tmp_path):
    """Blocks b1 of t1 and of t2 hold the same persons in the same order (t2's b1 here): the second
    search is the first's, under its own geography, and the pattern is the one searching both gives."""
    from audit.protection import group as group_module

    _, rules = _two_tracts(tmp_path, tract_table=False)
    frame = pd.read_csv(tmp_path / "data.csv", dtype=str)
    t1 = frame[frame.tract == "t1"]
    pd.concat([t1, t1.assign(tract="t2")]).to_csv(tmp_path / "data.csv", index=False)
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    options = ProtectOptions(exact=ExactOptions(explain="none"))
    group_module._alike.clear()
    calls = []
    real = group_module.suppress_unit
    group_module.suppress_unit = lambda *a, **k: calls.append(a[0].geo) or real(*a, **k)
    try:
        shared = protect(inputs, options, rules, tmp_path / "shared", pool=ProtectPool())
    finally:
        group_module.suppress_unit = real
    assert calls == [("t1", "b1")]  # t2/b1 took t1/b1's search
    group_module._alike.clear()
    alone = protect(inputs, options, rules, tmp_path / "alone", pool=ProtectPool(workers=2))  # one per worker
    assert _pattern(shared) == _pattern(alone)
    cells = {d["geo"]: d["cells"] for d in shared["units"]}
    assert cells["t1/b1"] == cells["t2/b1"] and cells["t1/b1"]


@pytest.mark.slow
def test_sf1_blocks_with_every_block_table_give_the_same_release_with_one_and_two_workers(tmp_path, small):
    """The sf1 sample's three smallest blocks with all of its block tables, default options and seed:
    the search's pattern, protected.yaml, protected.csv and the re-audit's verdict are the same on one
    worker (in this process) as on two."""
    from conftest import SF1

    args = [str(small), "-s", str(SF1 / "schema.yaml"), "-t", str(SF1 / "tables.yaml"), "-q"]
    assert cli(["protect", *args, "-o", str(tmp_path / "one")]) == 0
    assert cli(["protect", *args, "-o", str(tmp_path / "two"), "--workers", "2"]) == 0
    one, two = (json.loads((tmp_path / d / "protection.json").read_text()) for d in ("one", "two"))
    assert _pattern(one) == _pattern(two) and len(one["units"]) == 3 and one["totals"]["cells_suppressed"] > 0
    assert one["after"] == two["after"] and one["after"]["verdict"] == "pass"
    for name in ("protected.yaml", "protected.csv"):
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "two" / name).read_text()


def test_audit_run_at_scale_takes_per_unit_suppress_lists_of_every_chunk_and_refuses_an_unknown_unit(tmp_path, capsys):
    """A schedule whose ``suppress`` names a unit of the last tract (a protected.yaml) is audited on two
    workers as in one process (each chunk of the stream holds some units only); a unit of no chunk is the
    user's error, exit 2, naming it."""
    _two_tracts(tmp_path, tract_table=False)
    doc = yaml.safe_load((tmp_path / "tables.yaml").read_text())
    doc["suppress"] = {"t2/b1": ["B1:M", "B1:F"]}
    (tmp_path / "listed.yaml").write_text(yaml.safe_dump(doc))
    args = [str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t", str(tmp_path / "listed.yaml"),
            "-q", "--no-report"]
    assert cli(["run", *args, "-o", str(tmp_path / "one")]) in (0, 1)
    assert cli(["run", *args, "-o", str(tmp_path / "two"), "--workers", "2"]) in (0, 1)
    one, two = (json.loads((tmp_path / d / "findings.json").read_text()) for d in ("one", "two"))
    hidden = {u["geo"]: sorted(u["intervals"]) for u in two["units"] if u.get("intervals")}
    assert hidden == {"t2/b1": ["B1:F", "B1:M"]}
    assert [(u["geo"], u.get("intervals")) for u in one["units"]] == [(u["geo"], u.get("intervals")) for u in two["units"]]
    doc["suppress"] = {"t9/b9": ["B1:M"]}
    (tmp_path / "listed.yaml").write_text(yaml.safe_dump(doc))
    capsys.readouterr()
    assert cli(["run", *args, "-o", str(tmp_path / "bad"), "--workers", "2"]) == 2
    assert "suppress: unit 't9/b9' is not a geographic unit of the data" in capsys.readouterr().err
