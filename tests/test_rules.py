"""Rules: the shipped policies load, bad files fail with file:line and a fix, checks follow the findings."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from audit.errors import AuditError
from audit.policy.checks import evaluate, rank_lift
from audit.policy.rules import RULES, apply, builtin_names, load_rules


def unit(geo="1001", claims=(), **summary):
    """A unit whose summary counts its claims (as findings.unit_summary does), then ``summary``'s overrides."""
    singles = [c for c in claims if c["status"] == "verified" and c["m"] == 1]
    by_columns = {"derived": {}, "direct": {}}
    for c in singles:
        kind = by_columns["direct" if c["direct"] else "derived"]
        kind[str(len(c["columns"]))] = kind.get(str(len(c["columns"])), 0) + 1
    s = {"verified": sum(c["status"] == "verified" for c in claims), "undecided": 0, "refuted": 0,
         "verified_singletons": len(singles), "derived_singletons": sum(by_columns["derived"].values()),
         "full_records": 0, "singletons_by_columns": by_columns}
    s.update(summary)
    return {"geo": geo, "level": "block", "rows": 5, "status": "done", "reason": "", "reconstructed": False,
            "solutions": {"count": 100, "exhausted": False}, "summary": s, "claims": list(claims),
            "cells": {"values": 10, "suppressed": 0, "rounded": 0, "small": {}}}


def claim(m=1, direct=False, ncols=2, status="verified"):
    return {"columns": {f"c{i}": "0" for i in range(ncols)}, "m": m, "status": status, "direct": direct, "cells": []}


def doc(*units):
    return {"units": list(units), "summary": {}}


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "rules.yaml"
    p.write_text(text)
    return p


def outcomes(checks, rule):
    return [c["outcome"] for c in checks if c["rule"] == rule]


def test_builtin_policies_load_and_cover_every_rule():
    assert {"default", "strict", "lenient"} <= set(builtin_names())
    default = load_rules()
    assert default.name == "default" and {r.id for r in default.rules} == set(RULES)
    assert next(r for r in default.rules if r.id == "undecided").action == "fail"  # fail closed
    lenient = load_rules("lenient")
    assert "direct_singletons" not in {r.id for r in lenient.rules}
    strict = load_rules("strict")
    assert next(r for r in strict.rules if r.id == "derived_singletons").settings["min_columns"] == 1


@pytest.mark.parametrize("text, where, words", [
    ("derived_singletons:\n  min_colums: 2\n", ":2", "unknown setting 'min_colums'"),
    ("name: x\nsingletons: on\n", ":2", "unknown rule 'singletons'"),
    ("small_cells:\n  threshold: 40\n", ":2", "threshold must be from 2 to 10"),
    ("rank_lift:\n  max: high\n", ":2", "must be a number"),
    ("undecided:\n  action: maybe\n", ":2", "action must be fail or warn"),
    ("full_records: 3\n", ":1", "must be on, off or a mapping"),
    ("full_records:\n  threshold: 1\n", ":2", "full_records.threshold must be from 2 to 10"),
    ("full_records:\n  threshold: off\n", ":2", "full_records.threshold must be from 2 to 10"),
    ("attribute_inference:\n  combinations: race\n", ":2", "must be a list of lists"),
    ("reidentification:\n  combinations: [[race]]\n", ":2", "combinations[0] must list two or more distinct"),
    ("reidentification:\n  combinations: [[race, race]]\n", ":2", "combinations[0] must list two or more distinct"),
    ("derived_singletons: [1\n", ":", "malformed YAML"),
])
def test_bad_rules_name_file_line_and_fix(tmp_path, text, where, words):
    path = write(tmp_path, text)
    with pytest.raises(AuditError) as info:
        load_rules(path)
    line = info.value.line()
    assert f"{path}{where}" in line and words in line
    if "malformed" not in words:
        assert "fix:" in line


def test_missing_rules_file():
    with pytest.raises(AuditError, match="file not found"):
        load_rules("no/such/rules.yaml")


def test_singleton_rules_count_columns_and_direct_separately(tmp_path):
    rules = load_rules(write(tmp_path, "derived_singletons: {min_columns: 3}\ndirect_singletons: {min_columns: 1}\n"))
    d = doc(unit("a", [claim(ncols=2)]), unit("b", [claim(ncols=3)]), unit("c", [claim(direct=True, ncols=1)]),
            unit("d", [claim(m=2, ncols=5), claim(ncols=4, status="undecided")]))
    checks = evaluate(d, rules)
    assert outcomes(checks, "derived_singletons") == ["pass", "fail", "pass", "pass"]
    assert outcomes(checks, "direct_singletons") == ["pass", "pass", "fail", "pass"]
    d = apply(d, rules)  # a new document: the one passed in is not changed
    assert d["verdict"] == "fail" and {f["rule"] for f in d["failing"]} == {"derived_singletons", "direct_singletons"}


def test_records_units_small_cells_and_undecided(tmp_path):
    rules = load_rules(write(tmp_path, "full_records: on\nreconstructed_units: on\nsmall_cells: {threshold: 3}\n"
                                       "undecided: on\n"))
    a = unit("a", full_records=1)
    b = unit("b")
    b["reconstructed"] = True
    c = unit("c")
    c["cells"]["small"] = {"T:x": 3, "T:y": 2}
    e = unit("e", undecided=4)
    f = unit("f")
    f["cells"]["small"] = {"T:x": 3}
    checks = evaluate(doc(a, b, c, e, f), rules)
    assert outcomes(checks, "full_records") == ["fail", "pass", "pass", "pass", "pass"]
    assert outcomes(checks, "reconstructed_units") == ["pass", "fail", "pass", "pass", "pass"]
    assert outcomes(checks, "small_cells") == ["pass", "pass", "fail", "pass", "pass"]
    assert outcomes(checks, "undecided") == ["pass", "pass", "pass", "fail", "pass"]
    assert "T:y = 2" in next(c["message"] for c in checks if c["rule"] == "small_cells" and c["outcome"] == "fail")


def test_warn_action_does_not_fail_and_off_disables(tmp_path):
    rules = load_rules(write(tmp_path, "undecided: {action: warn}\nfull_records: off\n"))
    d = apply(doc(unit("a", undecided=2, full_records=3)), rules)
    assert d["verdict"] == "pass" and d["warnings"][0]["rule"] == "undecided"
    assert {c["rule"] for c in d["checks"]} == {"undecided"}


def test_empty_rules_file_passes_everything(tmp_path):
    d = apply(doc(unit("a", full_records=3)), load_rules(write(tmp_path, "")))
    assert d["verdict"] == "pass" and d["checks"] == []


def test_rank_lift_per_unit_and_skipped_without_rank(tmp_path):
    rules = load_rules(write(tmp_path, "rank_lift: {max: 0.1, up_to_k_over_u: 0.5}\n"))
    d = doc(unit("a"), unit("b"), unit("c"))
    assert outcomes(evaluate(d, rules), "rank_lift") == ["skipped"] * 3
    rank = {"pooled": {"k_over_u": [0.1, 0.5, 1.0], "attack": [0.9, 0.8, 0.5], "baselines": {"holdout": [0.5, 0.6, 0.5]}},
            "units": [{"geo": "a", "attack": [0.9, 0.6, 1.0], "baselines": {"holdout": [0.5, 0.6, 0.2], "tract": [0.7, 0.55, 0.1]}},
                      {"geo": "b", "attack": [0.55, 0.6, 1.0], "baselines": {"holdout": [0.5, 0.6, 0.1]}}]}
    checks = evaluate(d, rules, rank=rank)
    assert outcomes(checks, "rank_lift") == ["fail", "pass", "skipped"]
    lift, at, which = rank_lift(rank["units"][0], rank["pooled"]["k_over_u"], 0.5)
    assert lift == pytest.approx(0.2) and at == 0.1 and which == "tract"  # k/u = 1.0 ignored (above 0.5)
    # a 1-person unit has no holdout baseline (None): the other baselines stand (crashed audit run --rank)
    one = {"attack": [1.0, 1.0, 1.0], "baselines": {"holdout": None, "tract": [0.3, 0.2, 0.2]}}
    assert rank_lift(one, rank["pooled"]["k_over_u"], 0.5) == (pytest.approx(0.8), 0.5, "tract")


def test_linear_accuracy_is_release_wide(tmp_path):
    rules = load_rules(write(tmp_path, "linear_accuracy: {max_lift: 0.1}\n"))
    d = doc(unit("a"), unit("b"))
    assert outcomes(evaluate(d, rules), "linear_accuracy") == ["skipped"]
    high = {"secret": "hisp", "accuracy": 0.97, "baseline": 0.6}
    assert outcomes(evaluate(d, rules, linear=high), "linear_accuracy") == ["fail"]
    assert outcomes(evaluate(d, rules, linear={**high, "accuracy": 0.65}), "linear_accuracy") == ["pass"]
    rules = load_rules(write(tmp_path, "linear_accuracy: {max: 0.9, max_lift: off}\n"))
    assert outcomes(evaluate(d, rules, linear={**high, "accuracy": 0.95}), "linear_accuracy") == ["fail"]


def test_apply_is_idempotent():
    d = doc(unit("a", [claim(ncols=4)]))
    once = copy.deepcopy(apply(d, load_rules()))
    assert apply(d, load_rules()) == once


def test_full_records_count_only_records_proved_for_a_group_under_the_threshold(tmp_path):
    """A record over every published column proved for m persons counts when m < threshold: 1 person
    alone and 2 pairs (5 persons) under 3, a group of 3 only under 4; none under 2 but the one alone."""
    groups = {"1": 1, "2": 4, "3": 3, "7": 7}
    a = unit("a", full_records=15, full_records_by_group=groups)
    b = unit("b", full_records=12, full_records_by_group={"3": 3, "9": 9})
    for threshold, counts in ((2, [1, 0]), (3, [5, 0]), (4, [8, 3]), (10, [15, 12])):
        rules = load_rules(write(tmp_path, f"full_records: {{threshold: {threshold}}}\n"))
        checks = [c for c in evaluate(doc(a, b), rules) if c["rule"] == "full_records"]
        assert [c["count"] for c in checks] == counts
        assert [c["outcome"] for c in checks] == ["fail" if n else "pass" for n in counts]
    rules = load_rules(write(tmp_path, "full_records: on\n"))
    check, = evaluate(doc(a), rules)
    assert "(1 group of 1, 2 groups of 2)" in check["message"] and "fewer than 3 persons" in check["message"]


def test_full_records_threshold_defaults_to_the_small_cells_threshold(tmp_path):
    def threshold(text: str) -> int:
        return next(r for r in load_rules(write(tmp_path, text)).rules if r.id == "full_records").settings["threshold"]

    assert threshold("full_records: on\nsmall_cells: {threshold: 5}\n") == 5
    assert threshold("full_records: on\n") == 3  # no small_cells rule
    assert threshold("full_records: {threshold: 4}\nsmall_cells: {threshold: 5}\n") == 4
    settings = {name: load_rules(name).to_dict()["rules"]["full_records"]["threshold"] for name in builtin_names()}
    assert settings == {"default": 3, "strict": 5, "lenient": 3}


def test_full_records_of_findings_without_group_sizes_count_every_record(tmp_path):
    """An older findings file has no full_records_by_group: every reconstructed record counts (not safe)."""
    check, = evaluate(doc(unit("a", full_records=4)), load_rules(write(tmp_path, "full_records: on\n")))
    assert check["outcome"] == "fail" and check["count"] == 4 and "re-run audit run" in check["message"]
