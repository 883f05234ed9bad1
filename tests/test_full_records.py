"""The full_records rule on real runs: a record counts when the release proves it, over the columns it
publishes about, for fewer persons than the threshold; a schema column no table names takes no part.
Brute force over every consistent dataset checks the count."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from audit.attacks.exact import ExactOptions, audit_unit
from audit.findings.document import run_exact, unit_summary
from audit.inputs import load_inputs
from audit.policy.checks import evaluate
from audit.policy.rules import apply, load_rules

from _oracle import consistent_worlds, to_atoms
from test_exact import _load
from test_oracle import SETTINGS, cases

PEERS = Path(__file__).resolve().parent / "data" / "peers"
OPTIONS = ExactOptions(explain="none")


def _two_way(folder: Path, counts: dict[tuple[str, str], int], unpublished: bool = False,
             suppress: list[str] | None = None):
    """One block of persons with these (sex, age) counts, published as the table sex x age with margins;
    ``unpublished`` adds a column ``region`` that no table names (its values vary from person to person)."""
    rows = [{"block": "b1", "sex": s, "age": a} for (s, a), n in counts.items() for _ in range(n)]
    columns = {"sex": {"type": "categorical", "values": {"F": "female", "M": "male"}},
               "age": {"type": "categorical", "values": {"y": "young", "o": "old"}}}
    if unpublished:
        columns["region"] = {"type": "categorical", "values": {"n": "north", "s": "south"}}
        rows = [{**r, "region": "ns"[i % 2]} for i, r in enumerate(rows)]
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / "data.csv", index=False)
    (folder / "schema.yaml").write_text(yaml.safe_dump({"unit": "person", "geography": ["block"], "columns": columns}))
    tables = {"tables": [{"id": "T", "by": ["sex", "age"], "margins": True}]}
    if suppress:
        tables["suppress"] = {"b1": suppress}
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables))
    return load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml")


def _check(doc, rule: str = "full_records", policy: str = "default") -> dict:
    check, = [c for c in evaluate(doc, load_rules(policy)) if c["rule"] == rule]
    return check


PLAIN = {("F", "y"): 3, ("F", "o"): 4, ("M", "y"): 5, ("M", "o"): 3}
ONE = {("F", "y"): 3, ("F", "o"): 1, ("M", "y"): 5, ("M", "o"): 3}


@pytest.mark.parametrize("unpublished", [False, True])
def test_a_plain_two_way_table_of_counts_of_three_or_more_passes_the_default_policy(tmp_path, unpublished):
    """Every record is proved (one dataset fits), but for groups of 3 or more: a count the policy
    publishes. The default policy passes it; strict (threshold 5) fails the groups of 3 and 4."""
    doc = run_exact(_two_way(tmp_path, PLAIN, unpublished), OPTIONS)
    unit, = doc["units"]
    assert unit["reconstructed"] and unit["summary"]["full_records"] == 15
    assert unit["summary"]["full_records_by_group"] == {"3": 6, "4": 4, "5": 5}
    assert _check(doc)["outcome"] == "pass"
    judged = apply(doc, load_rules("default"))
    assert judged["verdict"] == "pass"
    assert [w["rule"] for w in judged["warnings"]] == ["reconstructed_units"]
    strict = _check(doc, policy="strict")
    assert strict["outcome"] == "fail" and strict["count"] == 10 and "fewer than 5 persons" in strict["message"]


@pytest.mark.parametrize("unpublished, max_columns", [(False, None), (True, None), (True, 2)])
def test_a_published_one_over_every_published_column_fails(tmp_path, unpublished, max_columns):
    """The woman aged old is alone in her record: full_records fails with that one person, whether or not
    the schema has a column no table names, and when --max-columns covers only the published columns."""
    doc = run_exact(_two_way(tmp_path, ONE, unpublished), ExactOptions(explain="none", max_columns=max_columns))
    check = _check(doc)
    assert check["outcome"] == "fail" and check["count"] == 1 and "1 group of 1" in check["message"]
    full = [c for c in doc["units"][0]["claims"] if c["status"] == "verified" and set(c["columns"]) == {"sex", "age"}]
    assert {(c["columns"]["sex"], c["columns"]["age"], c["m"]) for c in full} >= {("F", "o", 1)}


def test_a_reconstructed_unit_counts_its_small_groups_even_past_max_columns(tmp_path):
    """With --max-columns 1 no claim covers both published columns, but the unit has one dataset: every
    true record is proved, and the lone person still fails full_records."""
    doc = run_exact(_two_way(tmp_path, ONE), ExactOptions(explain="none", max_columns=1))
    unit, = doc["units"]
    assert unit["reconstructed"] and unit["summary"]["full_records_by_group"] == {"1": 1, "3": 6, "5": 5}
    assert _check(doc)["count"] == 1


def test_suppressing_the_one_and_its_partners_passes_full_records(tmp_path):
    """The lone person's cell suppressed with three partners (a 2 x 2 rectangle): no record is proved."""
    cells = ["T:F,o", "T:F,y", "T:M,o", "T:M,y"]
    doc = run_exact(_two_way(tmp_path, ONE, suppress=cells), OPTIONS)
    assert doc["units"][0]["summary"]["full_records"] == 0 and _check(doc)["outcome"] == "pass"


def test_a_unit_publishing_no_column_reconstructs_no_record(tmp_path):
    """Only the block's total is published (one person): no table names a column, so no claim states a
    record; the small count is small_cells' to judge."""
    _two_way(tmp_path, {("F", "o"): 1})
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump({"tables": [{"id": "P", "cells": [{"id": "all", "where": {}}]}]}))
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    doc = run_exact(inputs, OPTIONS)
    assert doc["units"][0]["summary"]["full_records"] == 0 and _check(doc)["outcome"] == "pass"
    assert _check(doc, "small_cells")["outcome"] == "fail"


@pytest.fixture(scope="module")
def z1(tmp_path_factory):
    """SSBtools' z1 (8 regions x 4 hovedint, 596 persons; tests/data/peers/README.md) as microdata."""
    table = pd.read_csv(PEERS / "gausssuppression_z1.csv")
    folder = tmp_path_factory.mktemp("z1")
    table.loc[table.index.repeat(table["ant"]), ["region", "hovedint"]].assign(block="b1").to_csv(
        folder / "data.csv", index=False)
    schema = {"unit": "person", "geography": ["block"], "columns": {
        c: {"type": "categorical", "values": {v: v for v in sorted(table[c].unique())}} for c in ("region", "hovedint")}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    return folder


@pytest.mark.parametrize("suppress, count", [(None, 3), (["B,arbeid", "D,arbeid", "H,arbeid", "B,annet", "D,annet",
                                                          "H,annet"], 0)])
def test_gausssuppression_z1_fails_on_its_one_and_two_and_passes_with_its_pattern(z1, suppress, count):
    """z1 published whole: its 596 persons are all proved (one dataset), but only B x arbeid (1) and
    D x arbeid (2) are groups under 3 (H x arbeid is 3). With GaussSuppression's pattern (the primaries
    and B, D, H x annet) no record is proved for fewer than 3."""
    tables = {"tables": [{"id": "T", "by": ["region", "hovedint"], "margins": True}]}
    if suppress:
        tables["suppress"] = {"b1": [f"T:{c}" for c in suppress]}
    (z1 / "tables.yaml").write_text(yaml.safe_dump(tables))
    inputs = load_inputs(z1 / "data.csv", z1 / "schema.yaml", z1 / "tables.yaml")
    doc = run_exact(inputs, ExactOptions(explain="none", max_rows=600))
    unit, = doc["units"]
    assert unit["status"] == "done" and unit["summary"]["undecided"] == 0
    assert unit["summary"]["full_records"] == (596 if not suppress else 596 - 1 - 2 - 3 - 7 - 13 - 9)
    check = _check(doc)
    assert check["count"] == count and check["outcome"] == ("fail" if count else "pass")


# -- brute force ---------------------------------------------------------------------------------------
@SETTINGS
@given(cases(), st.integers(2, 4), st.booleans())
def test_full_records_count_equals_brute_force(case, threshold, unpublished):
    """The persons full_records counts are those of every true record over the published columns that
    holds for the same m < threshold persons in every consistent dataset; a column no table names
    (values drawn at random) changes nothing."""
    schema, tables, rows = case
    with tempfile.TemporaryDirectory() as tmp:
        inputs = _load(schema, tables, rows, Path(tmp))
        release, = inputs.release()
        problem, = inputs.problems([release])
        worlds = [to_atoms(problem, w) for w in consistent_worlds(inputs.schema, inputs.schedule, release, len(rows))]
        summary = unit_summary(audit_unit(problem, OPTIONS))
        if unpublished:
            rng = np.random.default_rng(len(rows))
            extra = {**schema, "columns": {**schema["columns"], "z": {"type": "categorical", "values": {"u": "u", "v": "v"}}}}
            wider = [{**r, "z": "uv"[int(rng.integers(0, 2))]} for r in rows]
            (Path(tmp) / "z").mkdir()
            other = _load(extra, tables, wider, Path(tmp) / "z")
            assert unit_summary(audit_unit(other.problems()[0], OPTIONS))["full_records_by_group"] \
                == summary["full_records_by_group"]
    cols = sorted(problem.published_columns)
    expected = 0
    if cols:
        records, sizes = np.unique(problem.truth[:, cols], axis=0, return_counts=True)
        for record, m in zip(records, sizes.tolist()):
            if m < threshold and all(int((w[:, cols] == record).all(axis=1).sum()) == m for w in worlds):
                expected += m
    unit = {"geo": "b1", "summary": summary}
    check, = evaluate({"units": [unit]}, load_rules_text(f"full_records: {{threshold: {threshold}}}\n"))
    assert check["count"] == expected, (summary, expected)


def load_rules_text(text: str):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rules.yaml"
        path.write_text(text)
        return load_rules(path)
