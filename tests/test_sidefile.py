"""A large run's units and checks in side files beside findings.json (issue 37): the document keeps the
riskiest units inline and grows no more with the units; reading it back gives every unit and check."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from audit.errors import AuditError
from audit.findings import files, sidefile
from audit.findings.document import run_exact
from audit.findings.files import read_findings, write_json
from audit.inputs import load_inputs
from audit.attacks.exact import ExactOptions

SF1 = Path(__file__).resolve().parents[1] / "samples" / "sf1"


@pytest.fixture(scope="module")
def findings(small, tmp_path_factory):
    """A real run's findings on the sf1 sample's small blocks, written inline."""
    out = tmp_path_factory.mktemp("inline")
    doc = run_exact(load_inputs(small, SF1 / "schema.yaml", SF1 / "tables.yaml"),
                    ExactOptions(explain="none", max_columns=2), out=out)
    write_json(doc, out / "findings.json")
    return read_findings(out / "findings.json")


@pytest.fixture
def side(findings, tmp_path, monkeypatch) -> Path:
    """The same findings written past a lowered threshold: units and checks in side files."""
    monkeypatch.setattr(files, "SIDE_UNITS", 2)
    monkeypatch.setattr(sidefile, "INLINE", 1)
    monkeypatch.setattr(sidefile, "BATCH", 2)
    write_json(findings, tmp_path / "findings.json")
    return tmp_path / "findings.json"


def test_side_files_read_back_every_unit_and_check(findings, side):
    assert len(findings.units) == 3 and len(findings.checks) > 4  # several gzip members each
    head = json.loads(side.read_text())
    assert head["unit_files"]["units"]["file"] == "findings.units.jsonl.gz" and head["checks"] == []
    assert head["unit_files"]["units"]["count"] == len(findings.units)
    # the riskiest units inline, most derived singletons first, as full entries
    ranked = sorted(findings.units, key=sidefile.risk_key)[:1]
    assert head["units"] == ranked
    back = read_findings(side)
    assert list(back.units) == list(findings.units) and list(back.checks) == list(findings.checks)
    assert back.units[2] == findings.units[2] and back.units[-1] == findings.units[-1]  # by index, one member
    assert back.summary == findings.summary and back.verdict == findings.verdict
    assert back.judged(back_rules(findings)).checks == findings.checks  # the rules over every unit, not the inline ones
    # written again (as audit protect and the extras do): the same files
    before = {p.name: p.read_bytes() for p in side.parent.iterdir()}
    write_json(back, side)
    assert {p.name: p.read_bytes() for p in side.parent.iterdir()} == before


def back_rules(doc):
    from audit.policy.rules import load_rules

    return load_rules(doc.rules["name"])


def test_findings_json_does_not_grow_with_the_units(findings, side):
    inline = sum(len(json.dumps(u)) for u in findings.units)
    assert side.stat().st_size < len(json.dumps(findings.to_json(), default=list)) - inline // 2


@pytest.mark.parametrize("damage, words", [
    ("missing", "that findings.json names is missing"),
    ("truncated", "does not match findings.json's record"),
    ("corrupt", "a gzip member does not decompress"),
])
def test_a_missing_or_damaged_side_file_is_the_users_error(side, damage, words):
    path = side.with_name("findings.units.jsonl.gz")
    data = path.read_bytes()
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(data[:-5])
    else:
        path.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:])
    with pytest.raises(AuditError) as info:
        list(read_findings(side).units)
    line = info.value.line()
    assert words in line and "fix:" in line and "\n" not in line


def test_members_are_plain_gzip(side):
    """Any gzip reader takes the side file whole: one JSON object per line."""
    with gzip.open(side.with_name("findings.checks.jsonl.gz"), "rt") as fh:
        assert all(isinstance(json.loads(line), dict) for line in fh)
