"""The typed findings: docs/findings.md's top-level keys are the fields of Findings, a real run reads
back to an equal value and writes back the same bytes, and another format is the user's error."""
from __future__ import annotations

import json
import re
from dataclasses import fields, replace
from pathlib import Path

import pytest

from audit.cli import run
from audit.errors import AuditError
from audit.findings.files import read_findings, write_json
from audit.findings.lines import JsonLines
from audit.findings.model import OPTIONAL, Findings, Summary
from audit.policy.rules import load_rules
from audit.policy.verdict import Check, Failing

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"


@pytest.fixture(scope="module")
def block7(tmp_path_factory) -> Path:
    """findings.json of a real run on samples/block7 (one block, 7 persons)."""
    out = tmp_path_factory.mktemp("block7")
    code = run(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml"),
                "-o", str(out), "--explain-budget", "5", "--no-report", "--quiet"])
    assert code == 1  # the block is reconstructed: the default rules fail it
    return out / "findings.json"


def _top_level_keys() -> list[str]:
    """The keys of docs/findings.md's "Top level" table, in its order."""
    body = (ROOT / "docs" / "findings.md").read_text().split("\n## Top level\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", body, re.M)


def test_documented_top_level_keys_are_the_fields_of_findings():
    documented = _top_level_keys()
    assert len(documented) == len(set(documented))
    assert set(documented) == {f.name for f in fields(Findings)} == set(Findings.KEYS)
    assert documented == list(Findings.KEYS)  # the table lists them in the file's order


def test_a_real_run_reads_back_typed_and_writes_back_the_same_bytes(block7, tmp_path):
    doc = read_findings(block7)
    assert isinstance(doc.summary, Summary) and doc.summary.units == 1 and doc.summary.units_reconstructed == 1
    assert doc.verdict == "fail" and all(isinstance(f, Failing) for f in doc.failing)
    assert {f.rule for f in doc.failing} >= {"full_records"}  # the block's seven are each alone in their record
    assert {w.rule for w in doc.warnings} >= {"reconstructed_units"}  # reported: small groups fail full_records
    # units and checks stay in the file, read one at a time; checks come out as values
    assert isinstance(doc.units, JsonLines) and isinstance(doc.checks, JsonLines)
    assert all(isinstance(c, Check) for c in doc.checks) and doc.units[0]["geo"] == "0001"
    assert Findings.from_json(doc.to_json()) == doc
    whole = json.loads(block7.read_text())
    assert Findings.from_json(whole) == doc  # the same findings, read whole or line by line
    assert doc.to_json() == {k: whole[k] for k in whole if k not in ("units", "checks")} | {
        "units": doc.units, "checks": doc.checks.raw()}
    write_json(doc, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == block7.read_bytes()


def test_the_rules_give_new_findings(block7):
    doc = read_findings(block7)
    lenient = doc.judged(load_rules("lenient"))
    assert lenient is not doc and doc.rules["name"] == "default" and lenient.rules["name"] == "lenient"
    assert lenient.units is doc.units and lenient.summary == doc.summary
    assert isinstance(lenient.checks, JsonLines)  # kept on disk, like the units
    with pytest.raises(AttributeError):
        doc.verdict = "pass"


@pytest.mark.parametrize("change, words", [
    ({"format": 2}, "findings file in format 2; this version of disclosure-audit reads format 3"),
    ({"surprise": 1}, "findings file with unknown key 'surprise'"),
    ({"tool": None, "summary": {"units": 1}}, "findings summary is not complete"),
])
def test_other_formats_and_broken_documents_are_the_users_error(block7, change, words):
    whole = {**json.loads(block7.read_text()), **change}
    with pytest.raises(AuditError) as info:
        Findings.from_json(whole, "f.json")
    line = info.value.line()
    assert line.startswith("f.json: ") and words in line and "fix:" in line and "\n" not in line


def test_optional_keys_are_absent_not_null(block7):
    doc = replace(read_findings(block7), versions=None, scale=None)
    assert "versions" not in doc.to_json() and "versions" not in doc and set(OPTIONAL) - set(doc) >= {"scale"}
