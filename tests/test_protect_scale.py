"""``audit protect`` on a worker pool: the same pattern with one worker or two, a tract searched with its
blocks in one task, and a task whose worker fails is undecided (fail closed)."""
from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
import yaml

from audit.attacks.exact import ExactOptions
from audit.cli import run as cli
from audit.inputs import load_inputs
from audit.peers import codes
from audit.peers.pattern import read_pattern
from audit.peers.release import CODE_COLUMNS, PEER_CODES
from audit.policy.rules import load_rules
from audit.protection.group import Search, failed_group, groups
from audit.protection.options import Policy, ProtectOptions
from audit.protection.protect import protect
from audit.release.constraints import SUPPRESSED
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
    units = [{k: d.get(k) for k in STABLE} for d in [*report["units"], *report.get("levels", [])]]
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


def release_matches_reaudit(out: Path, data: Path, schema: Path, tables: Path) -> int:
    """protected.csv read back against protected.yaml's release and its re-audit (findings.json): one row per
    published value; each hidden one blank, with a reason and the re-audit's interval, primary where the search
    (or the schedule) hid it as such, else secondary; the rest as the data give them; each status in the peers'
    codes; read back as a pattern, the same hidden cells. The number of hidden values (bench/protect.py runs it)."""
    original, protected = load_inputs(data, schema, tables), load_inputs(data, schema, out / "protected.yaml")
    release = {("/".join(r.geo), v.key): v for r in protected.release() for v in r.values}
    truth = {("/".join(r.geo), v.key): v for r in original.release() for v in r.values}
    findings = json.loads((out / "findings.json").read_text())
    intervals = {u["geo"]: u.get("intervals") or {} for u in findings["units"]}
    report = json.loads((out / "protection.json").read_text())
    primary = {(d["geo"], cell) for d in report["units"] for cell in d["primary"]}
    with (out / "protected.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(release)
    hidden = 0
    for r in rows:
        geo, cell = "/".join(r[g] for g in original.schema.geography if r[g]), f"{r['table']}:{r['cell']}"
        key = f"{cell}:{r['statistic']}"
        assert {c: r[c] for c in CODE_COLUMNS} == {c: str(v) for c, v in PEER_CODES[r["status"]].items()}
        assert (r["status"] in codes.HIDDEN) == (release[(geo, key)].status == SUPPRESSED), (geo, key)
        if r["status"] in codes.HIDDEN:
            hidden += 1
            iv = intervals[geo][cell if r["statistic"] == "count" else key]
            given = truth[(geo, key)]  # the schedule's own threshold suppression is primary too
            own = given.status == SUPPRESSED and given.suppression == "primary"
            assert r["value"] == "" and r["reason"] and r["status"] == ("primary" if (geo, cell) in primary or own
                                                                        else "secondary")
            assert [Fraction(r["lower"]), Fraction(r["upper"])] == [Fraction(x).limit_denominator(1000) for x in iv]
        else:
            assert r["value"] == truth[(geo, key)].text() and r["lower"] == r["upper"] == ""
    back = {geo: cells for geo, cells in read_pattern(out / "protected.csv", original).hidden().items() if cells}
    hidden_counts: dict[str, set] = {}
    for (geo, key), v in release.items():
        if v.status == SUPPRESSED and key.endswith(":count"):
            hidden_counts.setdefault(geo, set()).add(key.rpartition(":")[0])
    assert back == hidden_counts
    return hidden


def test_the_cli_with_two_workers_writes_what_one_worker_writes(tmp_path):
    """The pattern, protected.yaml and protected.csv are the same with one worker and two, and protected.csv
    is the re-audited release (:func:`release_matches_reaudit`)."""
    _two_tracts(tmp_path, tract_table=False)
    files = [tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml"]
    args = [str(files[0]), "-s", str(files[1]), "-t", str(files[2]), "-r", str(tmp_path / "rules.yaml"), "-q"]
    assert cli(["protect", *args, "-o", str(tmp_path / "one")]) == 0
    assert cli(["protect", *args, "-o", str(tmp_path / "two"), "--workers", "2", "--memory-mb", "4096"]) == 0
    one, two = (json.loads((tmp_path / d / "protection.json").read_text()) for d in ("one", "two"))
    assert _pattern(one) == _pattern(two) and len(one["units"]) == 2  # one task per failing block
    for name in ("protected.yaml", "protected.csv"):
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "two" / name).read_text()
    assert two["after"]["verdict"] == "pass" and two["after"]["summary"]["undecided"] == 0
    assert release_matches_reaudit(tmp_path / "two", *files) == 4  # each tract's b1: its man and a complement


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
