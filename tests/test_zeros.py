"""Cells that can hold no one (structural zeros), hierarchical tables, and ``protect_zeros``.

The brute-force checks re-tabulate every raw dataset of a tiny unit with the real ``tabulate`` and
keep those that reproduce the release (``test_exact.oracle``): the engines' verdicts must agree.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from audit.protection.suppress import determined, relations, simple_heuristic
from audit.problem.claims import candidates
from audit.cli import run as cli
from audit.errors import AuditError
from audit.attacks.exact import ExactOptions, audit_unit
from audit.findings.cells import cells_json
from audit.protection.protected import protected_schedule, write_schedule_yaml
from audit.release.constraints import PUBLISHED, STRUCTURAL, SUPPRESSED, constraints_of
from audit.specs.schedule import load_schedule
from audit.specs.schema import load_schema
from audit.release.tabulate import release_frame
from _oracle import to_atoms, verified_claims
from test_exact import _load, oracle

SCHEMA = {"unit": "person", "geography": ["block"],
          "columns": {"county": {"type": "categorical", "values": {"a": "A", "b": "B", "c": "C"}},
                      "sex": {"type": "categorical", "values": {"F": "Female", "M": "Male"}},
                      "married": {"type": "categorical", "values": {"n": "No", "y": "Yes"}}},
          "recodes": {"region": {"from": "county", "map": {"north": ["a", "b"], "south": ["c"]}}},
          "constraints": [{"forbid": {"married": ["y"], "county": ["c"]}, "label": "nobody in c is married"}]}
ROWS = [{"county": "a", "sex": "F", "married": "y"}, {"county": "a", "sex": "M", "married": "n"},
        {"county": "c", "sex": "F", "married": "n"}]


def _inputs(folder: Path, tables: list, protection: dict | None = None, rows: list | None = None):
    return _load(SCHEMA, {"tables": tables, "protection": protection or {}}, rows or ROWS, folder)


def _values(inputs) -> dict:
    return {v.key: v for u in inputs.release() for v in u.values}


# ---------------------------------------------------------------------------------------------- crashes

CRASHES = {  # tables, and the structural zeros they publish (a hierarchy publishes no empty combination)
    "universe excludes a by value": ([{"id": "U", "universe": {"sex": ["F"]}, "by": ["sex", "county"]}],
                                     ["U:M,a", "U:M,b", "U:M,c", "U:M,*"]),
    "recode crossed with its base": ([{"id": "H", "by": ["county", "region"]}], []),
    "empty where": ([{"id": "E", "cells": [{"id": "all", "where": {}}, {"id": "none", "where": {"sex": []}}]}],
                    ["E:none"]),
    "inside an edit": ([{"id": "X", "by": ["married", "county"]}], ["X:y,c"]),
}


@pytest.mark.parametrize("case", list(CRASHES))
def test_cells_that_hold_no_one_run_to_completion_as_structural_zeros(tmp_path, case):
    tables, expected = CRASHES[case]
    inputs = _inputs(tmp_path, tables, {"suppress_below": 2})
    out = tmp_path / "out"
    code = cli(["run", str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t",
                str(tmp_path / "tables.yaml"), "-o", str(out), "--quiet", "--explain", "none"])
    assert code in (0, 1)
    doc = json.loads((out / "findings.json").read_text())
    unit, = doc["units"]
    structural = [v for v in _values(inputs).values() if v.status == STRUCTURAL]
    assert [v.cell.key for v in structural] == expected and unit["cells"]["structural"] == len(expected)
    assert all(v.value == 0 and v.text() == "0" and constraints_of(v, inputs.schedule.protection) == []
               for v in structural)
    assert not {v.cell.key for v in structural} & set(unit["cells"]["small"])
    csv = tmp_path / "release.csv"
    assert cli(["tabulate", str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t",
                str(tmp_path / "tables.yaml"), "-o", str(csv)]) == 0
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    assert (frame["status"] == STRUCTURAL).sum() == len(structural)


def test_structural_zeros_are_neither_small_nor_suppressed(tmp_path):
    inputs = _inputs(tmp_path, CRASHES["inside an edit"][0], {"suppress_below": 3, "protect_zeros": True})
    values = _values(inputs)
    assert values["X:y,c:count"].status == STRUCTURAL     # forbidden by the edit: known empty
    assert values["X:n,b:count"].status == SUPPRESSED     # an ordinary zero, protected as asked
    summary = cells_json(inputs.release()[0])
    assert summary["structural"] == 1 and summary["suppressed"] == sum(v.status == SUPPRESSED for v in values.values())
    problem, = inputs.problems()
    assert not any(c.key.startswith("X:y,c") for c in problem.constraints)


def test_rows_inside_a_structural_cell_are_an_input_error(tmp_path):
    bad = ROWS + [{"county": "c", "sex": "M", "married": "y"}]
    # the data are checked against the edits when loaded, before any cell is tabulated
    with pytest.raises(AuditError, match="row 4 .*breaks the schema's edit 'nobody in c is married'"):
        _inputs(tmp_path, CRASHES["inside an edit"][0], rows=bad)


# ------------------------------------------------------------------------------------------ hierarchies

def test_a_hierarchical_table_publishes_the_nested_cells_only(tmp_path):
    inputs = _inputs(tmp_path, [{"id": "H", "by": ["county", "region"]}, {"id": "S", "by": ["sex", "county", "region"]}])
    table = inputs.schedule.table("H")
    assert [c.id for c in table.cells] == ["a,north", "b,north", "c,south", "*,north", "*,south", "*,*"]
    assert not any(c.structural for c in table.cells)
    lines = {(table.cells[t].id, tuple(table.cells[j].id for j in parts)) for t, parts in table.lines}
    assert lines == {("*,north", ("a,north", "b,north")), ("c,south", ("*,south",)), ("*,*", ("*,north", "*,south"))}
    s = inputs.schedule.table("S")
    assert len(s.cells) == 3 * 6 and "F,a,north" in {c.id for c in s.cells} and "F,a,*" not in {c.id for c in s.cells}
    values = _values(inputs)
    assert values["H:*,north:count"].value == values["H:a,north:count"].value + values["H:b,north:count"].value
    assert values["H:*,*:count"].value == 3


def test_complementary_suppression_follows_the_hierarchy(tmp_path):
    rows = ROWS + [{"county": "b", "sex": "F", "married": "n"}] * 3 + [{"county": "c", "sex": "M", "married": "n"}] * 3
    inputs = _inputs(tmp_path, [{"id": "H", "by": ["county", "region"]}],
                     {"suppress_below": 3, "complementary": True}, rows)
    table = inputs.schedule.table("H")
    values = _values(inputs)
    hidden = [values[f"{c.key}:count"].status == SUPPRESSED for c in table.cells]
    assert hidden[0]                                            # a: 2 persons
    for total, parts in table.lines:                            # no line gives a hidden cell away
        assert sum(hidden[j] for j in (total, *parts)) != 1
    assert not determined(relations(table.lines, len(hidden)), np.array(hidden))[hidden].any()
    counts = [int(table.cells[j].predicate.mask(inputs.frame).sum()) for j in range(len(table.cells))]
    primary = np.array([0 < n < 3 for n in counts])
    flags = simple_heuristic(table, counts, primary)
    assert flags[primary].all() and not (determined(relations(table.lines, len(flags)), flags) & primary).any()


def test_complementary_suppression_never_picks_a_structural_zero(tmp_path):
    inputs = _inputs(tmp_path, CRASHES["universe excludes a by value"][0], {"suppress_below": 2, "complementary": True})
    table = inputs.schedule.table("U")
    values = _values(inputs)
    status = [values[f"{c.key}:count"].status for c in table.cells]
    assert status[[c.id for c in table.cells].index("F,c")] == SUPPRESSED      # one woman in c
    assert all((s == STRUCTURAL) == c.structural for s, c in zip(status, table.cells))
    for total, parts in table.lines:
        assert sum(status[j] == SUPPRESSED for j in (total, *parts)) != 1


# ------------------------------------------------------------------------------------------ protect_zeros

def test_protect_zeros_changes_the_release_and_the_attackers_intervals(tmp_path):
    def intervals(tables, protection):
        inputs = _inputs(tmp_path, tables, protection)
        return {k: (v.status, [(c.lo, c.hi) for c in constraints_of(v, inputs.schedule.protection)])
                for k, v in _values(inputs).items()}

    tables = [{"id": "T", "by": ["sex", "county"]}]
    off = intervals(tables, {"suppress_below": 2})
    on = intervals(tables, {"suppress_below": 2, "protect_zeros": True})
    zero, one = "T:M,b:count", "T:F,a:count"
    assert off[zero] == (PUBLISHED, [(0, 0)]) and on[zero] == (SUPPRESSED, [(0, 1)])
    assert off[one] == (SUPPRESSED, [(1, 1)]) and on[one] == (SUPPRESSED, [(0, 1)])
    # the attacker cannot tell primary suppressions from secondary or named ones: [0, N]
    comp = intervals(tables, {"suppress_below": 2, "complementary": True})
    assert comp[one] == (SUPPRESSED, [(0, None)]) and comp[zero][0] == PUBLISHED
    named = intervals([{"id": "T", "cells": [{"id": "x", "where": {"sex": ["M"]}, "suppressed": True},
                                             {"id": "y", "where": {"county": ["b"]}}]}], {"suppress_below": 2})
    assert named["T:x:count"] == (SUPPRESSED, [(0, None)]) and named["T:y:count"] == (PUBLISHED, [(0, 0)])


@pytest.mark.parametrize("protection, message", [
    ({"suppress_below": 2, "protect_zeros": "yes"}, "protect_zeros must be true or false"),
    ({"suppress_below": 2, "round_to": 5}, "publishes 0 both for empty cells and for counts that round to 0"),
])
def test_bad_protect_zeros_settings_are_one_line_input_errors(tmp_path, capsys, protection, message):
    _inputs(tmp_path, [{"id": "T", "by": ["sex"]}])
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"tables": [{"id": "T", "by": ["sex"]}], "protection": protection}))
    code = cli(["validate", "-s", str(tmp_path / "schema.yaml"), "-t", str(tmp_path / "bad.yaml")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0] and "fix:" in err[0]


def test_rounding_sweep_protects_zeros_where_a_rounded_zero_would_be_ambiguous(tmp_path):
    inputs = _inputs(tmp_path, [{"id": "T", "by": ["sex"]}], {"suppress_below": 2})
    assert protected_schedule(inputs.schedule, round_to=3).protection.protect_zeros is False
    rounded = protected_schedule(inputs.schedule, round_to=5)
    assert rounded.protection.protect_zeros and rounded.table("T").protection.protect_zeros
    write_schedule_yaml(str(tmp_path / "tables.yaml"), tmp_path / "protected.yaml", round_to=5)
    again = load_schedule(tmp_path / "protected.yaml", inputs.schema)
    assert again.protection.round_to == 5 and again.protection.protect_zeros


# ------------------------------------------------------------------------------------------ brute force

ORACLE_CASES = {
    "zeros published": ([{"id": "T", "by": ["sex", "county"]}], {"suppress_below": 2}),
    "zeros protected": ([{"id": "T", "by": ["sex", "county"]}], {"suppress_below": 2, "protect_zeros": True}),
    "zeros published, rounded": ([{"id": "T", "by": ["sex", "county"]}], {"suppress_below": 2, "round_to": 3}),
    "zeros protected, rounded": ([{"id": "T", "by": ["sex", "county"]}],
                                 {"suppress_below": 2, "round_to": 5, "protect_zeros": True}),
    "hierarchy": ([{"id": "H", "by": ["county", "region"]}, {"id": "S", "by": ["sex", "region"]}],
                  {"suppress_below": 2}),
    "hierarchy, complementary": ([{"id": "H", "by": ["sex", "county", "region"]}],
                                 {"suppress_below": 2, "complementary": True}),
    "structural": ([{"id": "U", "universe": {"sex": ["F"]}, "by": ["sex", "county"]},
                    {"id": "X", "by": ["married", "region"]},
                    {"id": "E", "cells": [{"id": "none", "where": {"county": []}}, {"id": "all", "where": {}}]}],
                   {"suppress_below": 2}),
}


@pytest.mark.parametrize("case", list(ORACLE_CASES))
@pytest.mark.parametrize("seed", range(3))
def test_verdicts_equal_brute_force_with_zeros_and_hierarchies(tmp_path, case, seed):
    tables, protection = ORACLE_CASES[case]
    rng = np.random.default_rng(seed)
    allowed = [r for r in ({"county": c, "sex": s, "married": m} for c in "abc" for s in "FM" for m in "ny")
               if not (r["county"] == "c" and r["married"] == "y")]
    rows = [allowed[i] for i in rng.integers(0, len(allowed), size=int(rng.integers(2, 4)))]
    inputs = _inputs(tmp_path, tables, protection, rows)
    problem, = inputs.problems()
    worlds = [to_atoms(problem, combo) for combo in oracle(inputs)]
    assert worlds, "the true dataset always reproduces its own release"
    result = audit_unit(problem, ExactOptions(explain="none", solution_cap=10_000))
    assert not result.undecided
    truth = candidates(problem.truth, sizes=problem.sizes)
    expected = verified_claims(problem, worlds)
    distinct = {tuple(sorted(map(tuple, w.tolist()))) for w in worlds}
    if protection.get("complementary"):
        # a suppressed cell is [0, N] to the attacker, who does not replay the heuristic that chose
        # it: fewer claims are proved than re-tabulation allows, and each proof is sound
        assert {v.claim for v in result.verified} <= expected and result.solutions >= len(distinct)
        return
    assert {v.claim for v in result.verified} == expected
    assert result.refuted == len(truth) - len(expected)
    assert (result.solutions, result.exhausted) == (len(distinct), True)


def test_published_zeros_tell_the_attacker_more_than_protected_ones(tmp_path):
    tables = [{"id": "T", "by": ["sex", "county"]}]
    fits = {}
    for zeros in (False, True):
        inputs = _inputs(tmp_path, tables, {"suppress_below": 2, "protect_zeros": zeros})
        fits[zeros] = len(oracle(inputs))
        problem, = inputs.problems()
        result = audit_unit(problem, ExactOptions(explain="none", solution_cap=10_000))
        assert result.solutions == fits[zeros]
    assert fits[False] < fits[True]
    assert release_frame(_inputs(tmp_path, tables, {"suppress_below": 2}).release(), load_schema(
        tmp_path / "schema.yaml"))["value"].tolist().count("0") > 0
