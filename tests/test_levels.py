"""Protection across geography levels: a block's hidden cell given away, or a block's claim proved, by its
tract's table, caught by the coupled problem and protected jointly; checked against every dataset of the tract."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import yaml
from _oracle import all_datasets, verified_claims

from audit.attacks.exact import ExactOptions
from audit.attacks.intervals import hidden_cells
from audit.inputs import load_inputs
from audit.policy.rules import load_rules
from audit.protection.levels import CoupledContext, protect_levels
from audit.protection.options import Policy, ProtectOptions
import pytest

from audit import protection
from audit.errors import AuditError
from audit.protection.protect import ProtectInterrupted, protect
from audit.scale.protect import ProtectPool

LEVELS = {"upper": 1, "lower": 1}


def _tract(folder):
    """Tract t1: block b1 has 1 man and 4 women, block b2 4 and 4; sex with a total, per block and per tract."""
    schema = {"unit": "person", "geography": ["tract", "block"],
              "columns": {"sex": {"type": "categorical", "values": {"M": "Male", "F": "Female"}}}}
    tables = {"tables": [{"id": "B1", "geography": "block", "by": ["sex"], "margins": True},
                         {"id": "R1", "geography": "tract", "by": ["sex"], "margins": True}]}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables))
    (folder / "rules.yaml").write_text(f"name: levels\nsmall_cells: {{threshold: 3}}\nprotection_levels: {LEVELS}\n")
    rows = [("b1", "M")] + [("b1", "F")] * 4 + [("b2", "M")] * 4 + [("b2", "F")] * 4
    pd.DataFrame([{"tract": "t1", "block": b, "sex": s} for b, s in rows]).to_csv(folder / "data.csv", index=False)
    return load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml"), load_rules(folder / "rules.yaml")


def _narrow(inputs, suppress: dict) -> dict[str, tuple[int, int]]:
    """Hidden cells of the coupled tract problem whose interval over every dataset misses the levels."""
    ctx = CoupledContext(inputs, "tract", ("t1",), np.arange(len(inputs.frame)), suppress)
    problem, _ = ctx.problem()
    datasets = all_datasets(problem)
    out = {}
    for key, c in hidden_cells(problem).items():
        counts = [int(problem.row_mask(rows, c.predicate).sum()) for rows in datasets]
        value = int(problem.row_mask(problem.truth, c.predicate).sum())
        if value - min(counts) < min(LEVELS["lower"], value) or max(counts) - value < LEVELS["upper"]:
            out[key] = (min(counts), max(counts))
    return out


def _persons_hidden(inputs, cells: dict) -> int:
    """Persons in a recommended cell of their unit (a block's B1 by sex, B2 by age; the tract's R1 by
    sex and age), counted from the rows, summed over units."""
    f, by = inputs.frame, {"B1": ["sex"], "B2": ["age"], "R1": ["sex", "age"]}
    total = 0
    for geo, keys in cells.items():
        rows = f[f["block"] == geo.split("/")[1]] if "/" in geo else f
        hit = pd.Series(False, index=rows.index)
        for key in keys:
            table, cell = key.split(":")
            hit |= pd.concat([rows[c] == v for c, v in zip(by[table], cell.split(","))], axis=1).all(axis=1)
        total += int(hit.sum())
    return total


def test_a_block_suppression_the_tract_table_undoes_is_protected_jointly(tmp_path):
    inputs, rules = _tract(tmp_path)
    report = protect(inputs, ProtectOptions(exact=ExactOptions(explain="none")), rules, tmp_path / "out", pool=ProtectPool())
    per_unit = {u["geo"]: frozenset(u["cells"]) for u in report["units"] if u["cells"]}
    assert per_unit == {"t1/b1": {"B1:M", "B1:F"}}  # the man and his complement: [0, 5] in the block alone
    assert _narrow(inputs, per_unit) == {"b1/B1:M": (1, 1), "b1/B1:F": (4, 4)}  # tract 5 men - b2's 4 = 1
    joint, = report["levels"]
    assert joint["geo"] == "t1" and joint["status"] == "protected" and len(joint["cells"]) == 2
    cells = report["recommendation"]["cells"]
    assert _narrow(inputs, {k: frozenset(v) for k, v in cells.items()}) == {}
    assert report["totals"]["cells_suppressed"] == 4 == sum(map(len, cells.values()))
    # b1's 5 and b2's 8: the cells the coupled step adds count too (only b1's 5 did before)
    assert report["totals"]["persons_in_suppressed_cells"] == _persons_hidden(inputs, cells) == 13
    assert "B1:M" in yaml.safe_load((tmp_path / "out" / "protected.yaml").read_text())["suppress"]["t1/b1"]


def test_protect_prints_the_cells_the_tract_adds(tmp_path, capsys):
    from audit.cli import run

    _tract(tmp_path)
    assert run(["protect", str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t",
                str(tmp_path / "tables.yaml"), "--rules", str(tmp_path / "rules.yaml"), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "t1 (tract, with its child units): protected, 2 more cells to suppress (jointly: protection_levels; before: 2 " \
           "intervals too narrow; after: 0 intervals too narrow)" in out and "(b2/B1:M)" in out


def _claims_tract(folder):
    """Tract t1: block b1 (F senior, M adult) and b2 (F adult, F child, M senior); sex and age per block
    in two one-way tables, sex by age per tract; only derived singletons over 2 columns fail."""
    schema = {"unit": "person", "geography": ["tract", "block"],
              "columns": {"sex": {"type": "categorical", "values": {"M": "Male", "F": "Female"}},
                          "age": {"type": "categorical", "values": {"c": "Child", "a": "Adult", "s": "Senior"}}}}
    tables = {"tables": [{"id": "B1", "geography": "block", "by": ["sex"], "margins": True},
                         {"id": "B2", "geography": "block", "by": ["age"], "margins": True},
                         {"id": "R1", "geography": "tract", "by": ["sex", "age"], "margins": True}]}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables))
    (folder / "rules.yaml").write_text("name: claims\nderived_singletons: {min_columns: 2}\nundecided: {action: fail}\n")
    rows = [("b1", "F", "s"), ("b1", "M", "a"), ("b2", "F", "a"), ("b2", "F", "c"), ("b2", "M", "s")]
    pd.DataFrame([{"tract": "t1", "block": b, "sex": s, "age": a} for b, s, a in rows]).to_csv(folder / "data.csv", index=False)
    return load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml"), load_rules(folder / "rules.yaml")


def _proved_singletons(inputs, suppress: dict) -> set[tuple]:
    """Singleton claims over 2 or more columns besides the block, true in every dataset of the coupled
    tract problem and stated by no published count: (column=value, ...) by name."""
    ctx = CoupledContext(inputs, "tract", ("t1",), np.arange(len(inputs.frame)), suppress)
    problem, _ = ctx.problem()
    stated = {c.predicate.clauses for c in problem.constraints if c.statistic.kind == "count" and c.exact}
    out = set()
    for claim in verified_claims(problem, all_datasets(problem)):
        named = tuple(sorted((problem.names[c], problem.domains[c].labels[a]) for c, a in claim.assignment))
        clauses = tuple(sorted((problem.names[c], frozenset([a])) for c, a in claim.assignment))
        if claim.m == 1 and sum(n != "block" for n, _ in named) >= 2 and clauses not in stated:
            out.add(named)
    return out


def test_a_claim_proved_only_with_the_tract_table_is_protected_jointly(tmp_path):
    inputs, rules = _claims_tract(tmp_path)
    report = protect(inputs, ProtectOptions(exact=ExactOptions(explain="none")), rules, tmp_path / "out", pool=ProtectPool())
    # the audit attacks the tract coupled with its blocks, so it fails from the start; on its own tables
    # every unit passes, so the per-unit search adds nothing and the joint search protects it
    assert report["before"]["failing"][0]["unit_list"] == ["t1"]
    assert [(u["geo"], u["status"], u["cells"]) for u in report["units"]] == [("t1", "pass", [])]
    # the tract's one child is a girl (R1) and b1 has no child (B2): b2's child is a girl
    assert _proved_singletons(inputs, {}) == {(("age", "c"), ("block", "b2"), ("sex", "F"))}
    joint, = report["levels"]
    assert joint["status"] == "protected" and joint["rules"] == ["derived_singletons"]
    assert joint["before"]["failing_claims"] >= 1 and joint["after"]["failing_claims"] == 0
    cells = report["recommendation"]["cells"]
    split = CoupledContext(inputs, "tract", ("t1",), np.arange(len(inputs.frame)), {}).split(joint["cells"])
    assert {k: set(v) for k, v in cells.items()} == {k: set(v) for k, v in split.items()}
    assert _proved_singletons(inputs, {k: frozenset(v) for k, v in cells.items()}) == set()
    assert report["after"]["verdict"] == "pass" and report["totals"]["cells_suppressed"] == len(joint["cells"])
    assert report["totals"]["persons_in_suppressed_cells"] == _persons_hidden(inputs, cells) > 0  # no unit's own search hid any


def test_a_tract_past_max_rows_is_undecided_with_no_recommendation(tmp_path):
    inputs, rules = _claims_tract(tmp_path)
    policy = Policy.from_rules(rules)
    entry, = protect_levels(inputs, {}, policy, ProtectOptions(exact=ExactOptions(explain="none", max_rows=4)))
    assert entry["status"] == "undecided" and entry["failing_rules"] == ["undecided"] and entry["cells"] == []


def test_the_audit_and_protect_count_a_coupled_claims_columns_alike(tmp_path):
    """The block column of a coupled tract problem says where a person is, not what: a claim naming the
    block is that block's claim over its own columns, one naming none the tract's. The audit's summary
    (what the rules judge) and protect's failing claims count the same columns."""
    from audit.attacks.exact import audit_unit
    from audit.findings.document import unit_summary
    from audit.protection.claims import failing

    inputs, _ = _tract(tmp_path)
    problem, _ = CoupledContext(inputs, "tract", ("t1",), np.arange(len(inputs.frame)), {}).problem()
    assert problem.child == "block" and problem.n_attributes == len(problem.domains) - 1 == 1
    block = problem.names.index("block")
    result = audit_unit(problem, ExactOptions(explain="none"))
    summary = unit_summary(result)
    singles = [v for v in result.verdicts if v.status == "verified" and v.claim.m == 1]
    assert any(len(v.claim.assignment) == 2 for v in singles)  # b1's one man: block b1 and sex M, one column
    assert all(problem.width(v.claim.assignment) == len(v.claim.assignment) - any(c == block for c, _ in v.claim.assignment)
               for v in singles)
    for kind, direct in (("derived", False), ("direct", True)):
        by_columns = {int(k): n for k, n in summary["singletons_by_columns"][kind].items()}
        assert by_columns == {k: n for k in (0, 1) if (n := sum(problem.width(v.claim.assignment) == k
                                                               for v in singles if v.direct == direct))}
    bad, _ = failing(result, Policy(derived=1, direct=1))
    assert {v.claim for v in bad} == {v.claim for v in singles if problem.width(v.claim.assignment) >= 1}
    full = sum(v.claim.m for v in result.verdicts if v.status == "verified" and problem.width(v.claim.assignment) == 1)
    assert summary["full_records"] == full > 0


def test_an_interrupted_protect_resumes_to_the_same_recommendation(tmp_path, monkeypatch):
    """Ctrl-C in the coupled step, then in the re-audit: each time the finished units (and parent units)
    are kept in protection.partial.json, no protected.yaml is left, and ``resume`` continues to the
    recommendation an uninterrupted run gives; a partial file of other rules is refused."""
    inputs, rules = _tract(tmp_path)
    options = ProtectOptions(exact=ExactOptions(explain="none"))
    fresh = protect(inputs, options, rules, tmp_path / "fresh", pool=ProtectPool())
    out = tmp_path / "out"

    def ctrl_c(message):
        if "protecting jointly" in message:
            raise KeyboardInterrupt
    with pytest.raises(ProtectInterrupted, match="interrupted: 1 of 1 units protected, kept in"):
        protect(inputs, options, rules, out, ctrl_c, pool=ProtectPool())
    partial = json.loads((out / "protection.partial.json").read_text())
    assert partial["stage"] == "search" and [u["geo"] for u in partial["units"]] == ["t1/b1"] and partial["levels"] == []
    assert not (out / "protected.yaml").exists() and not (out / "protection.json").exists()

    real = protection.protect.reaudit
    monkeypatch.setattr(protection.protect, "reaudit", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    seen = []
    with pytest.raises(ProtectInterrupted, match="and 1 parent units"):
        protect(inputs, options, rules, out, seen.append, resume=True, pool=ProtectPool())
    assert "unit t1/b1: finished by the interrupted run (protected)" in seen
    assert not (out / "protected.yaml").exists()
    partial = json.loads((out / "protection.partial.json").read_text())
    assert partial["stage"] == "re-audit" and [d["geo"] for d in partial["levels"]] == ["t1"]
    kept = partial["units"]

    monkeypatch.setattr(protection.protect, "reaudit", real)
    seen.clear()
    report = protect(inputs, options, rules, out, seen.append, resume=True, pool=ProtectPool())
    assert "tract t1: finished by the interrupted run (protected)" in seen and not any("protecting" in m for m in seen)
    assert report["recommendation"] == fresh["recommendation"] and report["after"]["verdict"] == "pass"
    assert report["units"] == kept and report["levels"] == partial["levels"]  # taken as they were written
    assert (out / "protected.yaml").exists() and not (out / "protection.partial.json").exists()

    with pytest.raises(ProtectInterrupted):
        protect(inputs, options, rules, out, ctrl_c, pool=ProtectPool())
    (tmp_path / "rules.yaml").write_text("name: levels\nsmall_cells: {threshold: 4}\n")
    with pytest.raises(AuditError, match="was made from other rules"):
        protect(inputs, options, load_rules(tmp_path / "rules.yaml"), out, resume=True, pool=ProtectPool())
