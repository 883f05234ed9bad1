"""The reviewer's CLI: gate/run exit codes (0 pass, 1 policy failure, 2 input error), JUnit, --json, diff, demo,
help text for every option, and every command and rules key documented (README.md or docs/*.md)."""
from __future__ import annotations

import importlib.util
import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import typer.main

from audit.cli import app, run
from audit.errors import InternalError
from audit.policy.rules import RULES, TOP_KEYS

ROOT = Path(__file__).resolve().parents[1]
PROTECTED = ROOT / "tests" / "data" / "protected"
HOUSEHOLDS = ROOT / "audit" / "samples_data" / "households"
BLOCK7 = ROOT / "samples" / "block7"


def protected(*extra: str) -> list[str]:
    return [str(PROTECTED / "data.csv"), "-s", str(PROTECTED / "schema.yaml"), "-t", str(PROTECTED / "tables.yaml"),
            *extra]


def unprotected(*extra: str) -> list[str]:
    """The same household block published with the full household schedule (no protection)."""
    return [str(PROTECTED / "data.csv"), "-s", str(HOUSEHOLDS / "schema.yaml"), "-t", str(HOUSEHOLDS / "tables.yaml"),
            "--explain-budget", "5", *extra]


@pytest.fixture(scope="module")
def failing(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("failing")
    assert run(["gate", *unprotected("-o", str(out), "--quiet")]) == 1
    return out


@pytest.fixture(scope="module")
def passing(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("passing")
    assert run(["gate", *protected("-o", str(out), "--quiet")]) == 0
    return out


def test_gate_fails_an_unprotected_block_and_passes_a_protected_one(failing, passing, capsys):
    assert json.loads((failing / "findings.json").read_text())["verdict"] == "fail"
    assert json.loads((passing / "findings.json").read_text())["verdict"] == "pass"
    assert not (failing / "report.html").exists()  # gate writes the report only with --report
    assert run(["gate", *protected("-o", str(passing))]) == 0
    assert capsys.readouterr().out.startswith("PASS (default policy, 1 unit)")


def test_gate_prints_failing_rules_and_json(failing, capsys):
    assert run(["gate", *unprotected("-o", str(failing))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("FAIL") and any(line.startswith("FAIL derived_singletons:") for line in out)
    assert run(["gate", *unprotected("-o", str(failing), "--json")]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "fail" and "derived_singletons" in {f["rule"] for f in doc["failing"]}
    assert set(doc["outputs"]) == {"findings", "claims", "junit"}


@pytest.mark.skipif(importlib.util.find_spec("audit.attacks.engines._numeric") is None,
                    reason="numeric cells (issue 4) are not in this tree yet")
def test_gate_fails_the_seven_person_block(tmp_path, capsys):
    assert run(["gate", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml"),
                "-o", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAIL derived_singletons" in out and "FAIL full_records" in out


def test_junit_has_a_testcase_per_rule_and_per_failing_unit(failing):
    doc = json.loads((failing / "findings.json").read_text())
    root = ET.parse(failing / "junit.xml").getroot()
    cases = root.findall(".//testcase")
    unit_rules = [r for r in doc["rules"]["rules"] if r != "linear_accuracy"]
    failing_checks = [c for c in doc["checks"] if c["outcome"] == "fail"]
    # one case per rule over all units (linear_accuracy: one for the release), one per failing unit
    assert len(cases) == len(unit_rules) + 1 + len(failing_checks)
    failed = {(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None}
    assert ("disclosure.derived_singletons", doc["units"][0]["geo"]) in failed
    assert ("disclosure.derived_singletons", "(all units)") in failed
    rules_failing = {c["rule"] for c in failing_checks}
    assert int(root.get("failures")) == len(failed) == len(failing_checks) + len(rules_failing)
    assert root.find(".//testcase[@classname='disclosure.rank_lift']/skipped") is not None


def test_junit_stays_small_and_names_every_failing_unit():
    from audit.findings.junit import UNIT_CASES, junit_xml

    geos = [f"01/{i:05d}" for i in range(3 * UNIT_CASES)]
    checks = [{"rule": "full_records", "unit": g, "outcome": "fail" if i % 2 else "pass", "count": 1,
               "message": "1 record reconstructed over every column"} for i, g in enumerate(geos)]
    root = ET.fromstring(junit_xml({"checks": checks, "rules": {"name": "default", "rules": {}}}).split("\n", 1)[1])
    cases = root.findall(".//testcase")
    assert len(cases) == 1 + UNIT_CASES  # the rule, then the first failing units
    every = cases[0].find("failure")
    assert every.get("message") == f"{len(geos) // 2} of {len(geos)} units fail"
    assert every.text.split("\n")[1:] == geos[1::2]  # every failing unit is named


def test_run_writes_everything_and_exits_1_on_failure(tmp_path, capsys):
    assert run(["run", *unprotected("-o", str(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "Verdict: FAIL under the 'default' policy" in out and "report:" in out
    assert {p.name for p in tmp_path.iterdir()} >= {"findings.json", "junit.xml", "report.html"}
    assert run(["run", *unprotected("-o", str(tmp_path), "--rules", "lenient", "--quiet", "--no-report")]) == 1
    assert capsys.readouterr().out == ""


def test_explain_budget_is_reported_and_the_old_seconds_option_maps_to_it(tmp_path, capsys):
    assert run(["run", *protected("-o", str(tmp_path), "--explain-seconds", "2", "--quiet", "--no-report")]) == 0
    assert "--explain-seconds is deprecated" in capsys.readouterr().err
    options = json.loads((tmp_path / "findings.json").read_text())["options"]
    assert options["explain_budget"] == 10 and options["explain"] == "records" and "explain_seconds" not in options


def test_rules_option_accepts_files_and_names(failing, tmp_path):
    lax = tmp_path / "lax.yaml"
    lax.write_text("name: lax\nundecided: on\n")
    assert run(["gate", *unprotected("-o", str(tmp_path), "--rules", str(lax), "--quiet")]) == 0
    assert json.loads((tmp_path / "findings.json").read_text())["rules"]["name"] == "lax"


@pytest.mark.parametrize("args, words", [
    (["gate", *protected("--rules", "nope.yaml")], "nope.yaml: file not found"),
    (["gate", "missing.csv", "-s", str(PROTECTED / "schema.yaml"), "-t", str(PROTECTED / "tables.yaml")], "missing.csv"),
    (["run", "missing.csv", "-s", str(PROTECTED / "schema.yaml"), "-t", str(PROTECTED / "tables.yaml"), "--workers", "2"],
     "missing.csv: file not found"),
    (["report", "missing.json"], "findings file not found"),
    (["diff", "a.json", "b.json"], "not found"),
    (["gate", *protected("--linear-secret", "hisp")], "--linear-secret and --linear-public go together"),
])
def test_input_errors_exit_2_with_one_line(args, words, capsys, tmp_path):
    assert run(args + (["-o", str(tmp_path)] if args[0] in ("gate", "run") else [])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and words in err[0] and "Traceback" not in err[0]


def test_bad_rules_file_names_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsmall_cells:\n  treshold: 3\n")
    assert run(["gate", *protected("--rules", str(bad), "-o", str(tmp_path))]) == 2
    assert f"{bad}:3 small_cells.treshold: unknown setting" in capsys.readouterr().err


def test_a_bug_is_one_internal_error_line_and_exit_3(tmp_path, capsys, monkeypatch):
    """A rule registered without a check (a developer's slip) reaches the real rule evaluation's
    InternalError: one line saying it is a bug, exit 3, not a traceback and not an input error's 2."""
    import audit.policy.rules as rules

    monkeypatch.setitem(rules.RULES, "new_rule", ("A rule added without its check", {}))
    monkeypatch.setattr(rules, "TOP_KEYS", (*rules.TOP_KEYS, "new_rule"))
    policy = tmp_path / "new.yaml"
    policy.write_text("new_rule: on\n")
    args = ["gate", *protected("--rules", str(policy), "-o", str(tmp_path / "out"))]
    assert run(args) == 3
    err = [line for line in capsys.readouterr().err.strip().splitlines()  # the data's unpublished columns warned
           if "no table publishes" not in line]
    assert len(err) == 1 and err[0].startswith("internal error: rule 'new_rule' has no check -- this is a bug"), err
    assert "please report it" in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "out" / "findings.json").exists()
    with pytest.raises(InternalError, match="has no check"):  # --debug: the traceback
        run(["--debug", *args])


def test_an_unexpected_failure_is_an_internal_error_not_a_policy_fail(tmp_path, capsys, monkeypatch):
    """A report template out of step with the code (as when the package is upgraded under a running
    audit) raises jinja's own error: one internal-error line and exit 3, never exit 1, which a CI gate
    reads as the policy failing; no findings.json is written."""
    import audit.outputs.report as report

    templates = tmp_path / "templates"
    templates.mkdir()
    for f in report.TEMPLATES.iterdir():
        if f.is_file():
            (templates / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    (templates / "report.html.j2").write_text("{{ a_name_the_code_does_not_give }}", encoding="utf-8")
    monkeypatch.setattr(report, "TEMPLATES", templates)
    args = ["run", *protected("-o", str(tmp_path / "out"))]
    assert run(args) == 3
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("units: ") and "no table publishes" not in line]
    assert len(err) == 1 and err[0].startswith("internal error: UndefinedError:") and "please report it" in err[0], err
    assert not (tmp_path / "out" / "findings.json").exists()


def test_an_internal_error_pickles_back_from_a_worker_process():
    import pickle

    err = pickle.loads(pickle.dumps(InternalError("a dataset meets every cell and contradicts its claim")))
    assert str(err).count("this is a bug") == 1 and err.message.startswith("a dataset meets")


def test_diff_shows_what_a_schedule_change_adds(failing, passing, capsys, tmp_path):
    old, new = passing / "findings.json", failing / "findings.json"
    assert run(["diff", str(old), str(new), "--out", str(tmp_path / "d.json")]) == 1
    out = capsys.readouterr().out
    assert "verdict: PASS -> FAIL" in out and "NEWLY FAILING derived_singletons" in out and "  + " in out
    result = json.loads((tmp_path / "d.json").read_text())
    assert result["units_newly_at_risk"] and result["new_claims"][0]["text"].startswith("Exactly one household")
    assert run(["diff", str(new), str(old), "--json"]) == 0  # removing tables adds no risk
    assert json.loads(capsys.readouterr().out)["no_longer_failing"]
    assert run(["diff", str(new), str(new), "--quiet"]) == 0


@pytest.mark.slow
def test_demo_runs_on_the_bundled_samples(tmp_path, capsys):
    assert run(["demo", "-o", str(tmp_path), "--explain-seconds", "0.5", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results["households"]["verdict"] == "fail"
    assert Path(results["households"]["report"]).is_file()
    assert "verdict" in results["block7"] or "error" in results["block7"]


def test_demo_samples_are_package_data():
    root = ROOT / "audit" / "samples_data"
    for name in ("block7", "households"):
        assert {p.name for p in (root / name).iterdir()} >= {"data.csv", "schema.yaml", "tables.yaml"}
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-data", {})
    assert {"*/*.csv", "*/*.yaml"} <= set(data["audit.samples_data"])
    # the packaged copies are the samples themselves, not forks of them
    for name in ("block7", "households"):
        for file in ("schema.yaml", "tables.yaml"):
            assert (root / name / file).read_text() == (ROOT / "samples" / name / file).read_text(), (name, file)


def _commands():
    return typer.main.get_command(app).commands


def test_every_option_has_help():
    for name, command in _commands().items():
        assert command.help, name
        for param in command.params:
            assert getattr(param, "help", None), f"audit {name} {param.name} has no help text"


def _docs() -> str:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n".join(p.read_text() for p in files if p.is_file())


MINE = ("run", "gate", "report", "diff", "demo")


def test_every_command_and_option_is_documented():
    docs = _docs()
    for name, command in _commands().items():
        assert re.search(rf"audit {name}\b", docs), f"'audit {name}' is not documented in README.md or docs/*.md"
        if name in MINE:
            for param in command.params:
                for opt in getattr(param, "opts", ()):
                    if opt.startswith("--"):
                        assert opt in docs, f"audit {name} {opt} is not documented"


def test_every_rules_key_is_documented():
    docs = _docs()
    for key in TOP_KEYS:
        assert f"`{key}`" in docs, f"rules key '{key}' is not documented"
    for rid, (_, settings) in RULES.items():
        for setting in settings:
            assert f"`{rid}.{setting}`" in docs, f"rules setting '{rid}.{setting}' is not documented"
    assert "`action`" in docs


def test_run_with_the_linear_attack_applies_its_rule(tmp_path):
    code = run(["run", str(HOUSEHOLDS / "data.csv"), "-s", str(PROTECTED / "schema.yaml"), "-t",
                str(PROTECTED / "tables.yaml"), "-o", str(tmp_path), "--linear-secret", "multi",
                "--linear-public", "hhsex,hhage,size,hhtype", "--rules", "strict", "--quiet"])
    doc = json.loads((tmp_path / "findings.json").read_text())
    assert doc["attacks"] == ["exact", "linear"] and (tmp_path / "linear.json").is_file()
    check, = [c for c in doc["checks"] if c["rule"] == "linear_accuracy"]
    assert check["outcome"] in ("pass", "fail") and "multi reconstructed with accuracy" in check["message"]
    assert code == (1 if doc["verdict"] == "fail" else 0)
    assert 'class="chart-linear"' in (tmp_path / "report.html").read_text()


def _block7_run(out: Path, tables: Path) -> Path:
    assert run(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(tables), "-o", str(out),
                "--explain", "none", "--no-report", "--quiet"]) == 1
    return out / "findings.json"


def test_diff_fails_when_a_table_adds_risk_to_a_rule_already_failing(tmp_path, capsys):
    """block7 without its race-by-sex cells already fails derived_singletons (13 over 2+ columns); adding
    them back makes it 59, reconstructs the block and narrows 12 values: exit 1 and each said per rule and
    unit. Removing them again adds nothing (exit 0), though no rule newly passes derived_singletons."""
    fewer = tmp_path / "fewer.yaml"
    fewer.write_text("".join(line for line in (BLOCK7 / "tables.yaml").read_text().splitlines(True)
                             if not re.search(r"id: 4[A-D]\b", line)))
    old, new = _block7_run(tmp_path / "old", fewer), _block7_run(tmp_path / "new", BLOCK7 / "tables.yaml")
    failing_before = {(c["rule"], c["outcome"]) for c in json.loads(old.read_text())["checks"]}
    assert ("derived_singletons", "fail") in failing_before
    capsys.readouterr()
    assert run(["diff", str(old), str(new), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    worse = {(w["rule"], w["what"], w["action"]): w for w in result["worse"]}
    assert worse["derived_singletons", "check", "fail"]["old"] == 13 and worse["derived_singletons", "check", "fail"]["new"] == 59
    # reconstructed_units only warns under the default policy (a complete cross table is one dataset)
    assert ("full_records", "check", "fail") in worse and ("reconstructed_units", "check", "warn") in worse
    assert len(result["new_claims"]) == 50  # 46 of them over 2 or more columns, as the rule counts
    assert worse["derived_singletons", "new_claims", "fail"]["new"] == 46
    assert worse["protection_levels", "protection_levels", "warn"]["unit"] == "0001"
    assert run(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "WORSE in 0001: derived_singletons: 13 -> 59;" in out and "protection_levels (warn): 12 values" in out
    only = tmp_path / "wide.yaml"  # a policy counting only singletons over 5 or more columns: none got worse
    only.write_text("derived_singletons: {min_columns: 5}\ndirect_singletons: {min_columns: 5}\n")
    assert run(["diff", str(old), str(new), "--rules", str(only), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["worse"] == []
    assert run(["diff", str(new), str(old), "--json"]) == 0  # the table removed: less risk
    back = json.loads(capsys.readouterr().out)
    assert back["worse"] == [] and back["new_claims"] == [] and len(back["removed_claims"]) == 50
    # a table of age groups publishing counts of 1 and 2: small cells, where nothing else got worse;
    # taken away again, the release publishes a subset of its values: nothing it proves is new
    grouped = tmp_path / "grouped.yaml"
    grouped.write_text((BLOCK7 / "tables.yaml").read_text() + """  - id: T2
    title: Persons by age group
    geography: block
    protection: {suppress_below: 1}
    cells:
      - {id: a, label: Under 30, where: {age: {max: 29}}}
      - {id: b, label: 30 to 59, where: {age: {min: 30, max: 59}}}
      - {id: c, label: 60 or over, where: {age: {min: 60}}}
""")
    more = _block7_run(tmp_path / "more", grouped)
    assert run(["diff", str(new), str(more), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert [(w["rule"], w["old"], w["new"]) for w in result["worse"]] == [("small_cells", "pass", "fail")]
    assert run(["diff", str(more), str(new), "--json"]) == 0
    assert "nothing it proves is new" in json.loads(capsys.readouterr().out)["within"]


def test_a_release_publishes_within_another_only_with_the_same_protection(tmp_path):
    """Same data, schema and table ids: a table whose threshold changed publishes other values."""
    from dataclasses import replace as changed

    from audit.findings.files import read_findings
    from audit.findings.provenance import fingerprint
    from audit.outputs.diff_risk import publishes_within

    assert run(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml"),
                "-o", str(tmp_path / "a"), "--explain", "none", "--no-report", "--quiet", "--max-columns", "1"]) == 1
    doc = read_findings(tmp_path / "a" / "findings.json")
    assert publishes_within(doc, doc)
    lower = tmp_path / "lower.yaml"
    lower.write_text((BLOCK7 / "tables.yaml").read_text().replace("suppress_below: 3", "suppress_below: 2"))
    inputs = {**doc.inputs, "tables": str(lower)}
    other = changed(doc, inputs={**inputs, "fingerprint": fingerprint(inputs["data"], inputs["schema"], lower)})
    assert publishes_within(doc, other) is None
    assert publishes_within(doc, changed(doc, inputs={**doc.inputs, "tables": str(lower)})) is None  # file changed


def test_diff_gate_compares_claims_not_labels(tmp_path):
    """A singleton restated over coarser codes (age 30-34 where the old release said 32) is not new; one
    over finer codes, or that the old release did not know, is."""
    from audit.outputs.diff import _uncovered

    key = lambda m, **cols: (m, frozenset(cols.items()))  # noqa: E731
    old = {key(1, age="32", sex="M"): None, key(2, age="40-44", sex="F"): None, key(1, age="45", sex="F"): None}
    new = [key(1, age="30-34", sex="M"), key(2, age="40-49", sex="F"), key(1, age="30-34", sex="F"),
           key(1, age="40-49", sex="F")]
    assert _uncovered(old, dict.fromkeys(new), {"age"}) == [new[2]]  # the one woman of 40-49 is the one of 45
    assert _uncovered({key(2, age="40-44", sex="F"): None}, {new[3]: None}, {"age"}) == [new[3]]  # m differs
    finer = {key(1, age="32", sex="M"): None, key(1, sex="F|M"): None}
    assert _uncovered({key(1, age="30-34", sex="M"): None}, finer, {"age"}) == list(finer)


def test_run_summary_counts_in_plain_plurals(tmp_path, capsys):
    """One block: '1 unit', never '1 units' (issue 35)."""
    args = [str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml")]
    assert run(["run", *args, "-o", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    doc = json.loads((tmp_path / "findings.json").read_text())
    s = doc["summary"]
    assert out[0] == (f"1 unit: {s['verified']} verified claims ({s['derived_singletons']} derived singletons), "
                      f"{s['undecided']} undecided, 1 unit reconstructed exactly.")
    assert out[1] == f"Verdict: FAIL under the 'default' policy ({len(doc['failing'])} failing rules)"
    assert out[2].startswith("  FAIL derived_singletons: 1 unit; 0001: ")
