"""Re-identification and attribute inference (audit.attacks.reidentify): the Bureau's uniqueness flags on its
own extract, brute force on small blocks, the findings section, the rules and the protection hook."""
from __future__ import annotations

import json
from dataclasses import replace
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from audit.specs.attacker import attribute
from audit.cli import run
from audit.attacks.exact import ExactOptions, audit_unit, make_engine
from audit.findings.document import run_exact
from audit.inputs import load_inputs
from audit.attacks.reidentify import ReidentificationAttack
from audit.attacks.reidentify_unit import measure_ranking, proofs, uniqueness
from audit.policy.rules import apply, load_rules

from _oracle import consistent_worlds
from test_exact import _load
from test_oracle import SETTINGS, cases

ROOT = Path(__file__).resolve().parents[1]
SF1 = ROOT / "samples" / "sf1"
BLOCK7 = ROOT / "samples" / "block7"
EXTRACT = next((p / "recon_replication" / "extract" / "rhdf_bt_0solvar_extract.csv"
                for p in (ROOT.parent / "shared" / "data", Path("/work/shared/data"))
                if (p / "recon_replication").is_dir()), None)


def _block7(folder: Path, attacker: dict | None = None) -> tuple[Path, Path, Path]:
    """The CACM block with age groups known to the attacker and race sensitive."""
    schema = yaml.safe_load((BLOCK7 / "schema.yaml").read_text())
    schema["recodes"] = {"agegrp": {"from": "age", "bins": [{"code": "child", "min": 0, "max": 17},
                                                             {"code": "adult", "min": 18, "max": 64},
                                                             {"code": "senior", "min": 65, "max": 125}]}}
    schema["attacker"] = attacker or {"quasi_identifiers": ["block", "sex", "agegrp"], "sensitive": ["race"]}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    return BLOCK7 / "data.csv", folder / "schema.yaml", BLOCK7 / "tables.yaml"


# -- the Census Bureau's extract -------------------------------------------------------------------
@pytest.mark.skipif(EXTRACT is None, reason="the shared recon_replication extract is not here")
def test_uniqueness_equals_the_bureaus_flags_on_its_whole_extract():
    sys.path.insert(0, str(SF1))
    try:
        from convert import convert
    finally:
        sys.path.pop(0)
    source = pd.read_csv(EXTRACT, dtype=str, keep_default_na=False)
    frame = convert(source)
    flags = uniqueness(frame, load_inputs(SF1 / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml").schema)
    bsab = source.loc[flags.index, "BSAb Unique"].eq("TRUE")
    bsaber = source.loc[flags.index, "BSAbER Unique"].eq("TRUE")
    assert len(flags) == 63969
    assert (flags["unique"] == bsab).all() and (flags["unique_with_sensitive"] == bsaber).all()
    assert (int(flags["unique"].sum()), int(flags["unique_with_sensitive"].sum())) == (41054, 41821)


def test_the_attacks_unique_counts_equal_the_microdata_flags_on_the_sf1_sample():
    inputs = load_inputs(SF1 / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml")
    doc = run_exact(inputs, ExactOptions(explain="none"))
    flags = uniqueness(inputs.frame, inputs.schema)
    exact = doc["reidentification"]["exact"]
    assert exact["persons"] == len(inputs.frame) == 175
    assert exact["unique"]["count"] == flags["unique"].sum()
    assert exact["unique_with_sensitive"]["count"] == flags["unique_with_sensitive"].sum()
    # baselines and Wilson intervals beside every rate
    for part in (exact["inference"]["all"], exact["inference"]["unlike_majority"]):
        assert set(part["baselines"]) == {"unit_mode", "parent_mode"}
        for r in (part["attack"], *part["baselines"].values()):
            lo, hi = r["ci"]
            assert 0 <= lo <= r["rate"] <= hi <= 1
    assert exact["inference"]["unlike_majority"]["baselines"]["unit_mode"]["count"] == 0  # by definition
    assert exact["precision"]["of"] == exact["putative"]["count"] >= exact["confirmed"]["count"]


# -- brute force: proved only if it holds in every consistent dataset --------------------------------
def _codes(attr, values) -> list:
    return attr.code_of(list(values)).tolist()


@SETTINGS
@given(cases(), st.data())
def test_proved_values_hold_in_every_consistent_dataset(case, data):
    schema, tables, rows = case
    names = list(schema["columns"]) + list(schema.get("recodes", {}))
    qi = data.draw(st.sampled_from(names))
    base = schema["recodes"][qi]["from"] if qi in schema.get("recodes", {}) else qi
    others = [n for n in names if n != base and (schema.get("recodes", {}).get(n, {}).get("from") or n) != base]
    if not others:
        return
    sensitive = data.draw(st.lists(st.sampled_from(others), min_size=1, max_size=2, unique=True))
    schema = {**schema, "attacker": {"quasi_identifiers": ["block", qi], "sensitive": sensitive}}
    with tempfile.TemporaryDirectory() as tmp:
        inputs = _load(schema, tables, rows, Path(tmp))
    release, = inputs.release()
    problem, = inputs.problems([release])
    attacker = inputs.schema.attacker
    if len(attacker.sensitive) > 1:  # the two together too, as a policy's combination
        attacker = replace(attacker, combinations=(tuple(a.name for a in attacker.sensitive),))
    options = ExactOptions(explain="none", samples=2, solution_cap=8, attacker=attacker)
    result = audit_unit(problem, options)
    engine = make_engine(problem, options)
    got = proofs(result, attacker, lambda claim: engine.verify(claim, explain="none"))
    assert not got["undecided"].any()
    worlds = consistent_worlds(inputs.schema, inputs.schedule, release, len(inputs.frame))
    col = {n: i for i, n in enumerate(inputs.schema.names)}
    q_attr, s_attrs = attacker.quasi_identifiers[0], attacker.sensitive
    person_q = _codes(q_attr, inputs.frame[q_attr.column])
    person_s = [_codes(a, inputs.frame[a.column]) for a in s_attrs]
    world_q = [_codes(q_attr, [r[col[q_attr.column]] for r in w]) for w in worlds]
    world_s = [[_codes(a, [r[col[a.column]] for r in w]) for a in s_attrs] for w in worlds]
    every = []
    for i in range(len(inputs.frame)):
        holds = [all(all(ws[j][k] == person_s[j][i] for k in range(len(wq)) if wq[k] == person_q[i])
                     for wq, ws in zip(world_q, world_s)) for j in range(len(s_attrs))]
        every.append(holds)
        for j in range(len(s_attrs)):
            if got["by_attribute"][i, j]:
                assert holds[j], f"person {i}: {s_attrs[j].name} reported inferred, broken by a consistent dataset"
        if got["proved"][i]:
            assert all(holds)
        if got["linked"][i]:
            assert all(sum(v == person_q[i] for v in wq) == 1 for wq in world_q)
        # complete where the quasi-identifier's and the sensitive values' codes are unions of atoms
        if not result.undecided and whole_atoms(problem, q_attr, person_q[i]):
            for j, a in enumerate(s_attrs):
                if whole_atoms(problem, a, person_s[j][i]):
                    assert got["by_attribute"][i, j] == holds[j], (i, a.name)
            if single_atom(problem, q_attr, person_q[i]) and person_q.count(person_q[i]) == 1:
                assert got["linked"][i] == all(wq.count(person_q[i]) == 1 for wq in world_q)
    # each attribute and the combination, as the rules judge them: counted only where brute force proves
    # every value of it, linked only where brute force links
    counts = result.reidentification.counts
    for name, members in attacker.measured.items():
        proved = got["by_attribute"][:, list(members)].all(axis=1)
        assert all(all(every[i][j] for j in members) for i in np.flatnonzero(proved))
        entry = counts["attributes"][name]
        assert entry["inferred"] == proved.sum() and entry["confirmed"] == (proved & got["linked"]).sum()
        assert entry["inferred_unlike"] <= min(entry["inferred"], entry["unlike"])
        assert entry["unlike"] + entry["baselines"]["unit_mode"][0] == len(inputs.frame)
        assert entry["undecided"] == {"confirmed": 0, "inferred_unlike": 0}
    assert counts["inferred"] == got["proved"].sum()  # the Bureau's measure: every value together


def _touching(problem, attr, code) -> list[set]:
    group = set(attr.values[code]) if code < len(attr.codes) else None
    dom = problem.domains[problem.index(attr.column)]
    return [set(a) for a in dom.atoms if (group is None and not any(set(a) & set(v) for v in attr.values))
            or (group is not None and set(a) & group)]


def whole_atoms(problem, attr, code) -> bool:
    """The code's values are a union of the problem's atoms (the tables tell the code apart)."""
    group = set(attr.values[code]) if code < len(attr.codes) else None
    return all(group is None or a <= group for a in _touching(problem, attr, code))


def single_atom(problem, attr, code) -> bool:
    return whole_atoms(problem, attr, code) and len(_touching(problem, attr, code)) == 1


# -- each sensitive attribute on its own ----------------------------------------------------------------
PERSONS = [("F", "y", "W", "N"), ("F", "y", "W", "Y"), ("F", "o", "B", "N"), ("M", "y", "W", "N"),
           ("M", "y", "W", "Y"), ("M", "o", "W", "N"), ("M", "o", "W", "N"), ("F", "y", "W", "Y")]


def _two_sensitive(folder: Path, hide_hisp: bool = True) -> tuple[Path, Path, Path]:
    """A block whose sex x age x race table proves the one old woman Black (the block's majority is
    white); ethnicity is published in its own table, both cells suppressed (``hide_hisp``)."""
    cat = lambda *codes: {"type": "categorical", "values": {c: c for c in codes}}  # noqa: E731
    pd.DataFrame([dict(zip(("sex", "age", "race", "hisp"), p), block="b1") for p in PERSONS]).to_csv(
        folder / "data.csv", index=False)
    schema = {"unit": "person", "geography": ["block"],
              "columns": {"sex": cat("F", "M"), "age": cat("y", "o"), "race": cat("W", "B"), "hisp": cat("Y", "N")},
              "attacker": {"quasi_identifiers": ["block", "sex", "age"], "sensitive": ["race", "hisp"]}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    tables = {"tables": [{"id": "T", "by": ["sex", "age", "race"], "margins": True},
                         {"id": "H", "by": ["hisp"], "margins": True}]}
    if hide_hisp:
        tables["suppress"] = {"b1": ["H:Y", "H:N"]}
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables))
    return folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml"


def test_hiding_one_sensitive_attribute_does_not_pass_a_release_that_proves_another(tmp_path):
    """Ethnicity hidden, race still proved for the old woman: the Bureau's every-value measures are 0
    (reported), and both rules fail on race, by name, per unit and for the release."""
    doc = run_exact(load_inputs(*_two_sensitive(tmp_path)), ExactOptions(explain="none"))
    counts = doc["units"][0]["reidentification"]
    assert (counts["confirmed"], counts["inferred_unlike"]) == (0, 0)  # no one has race and ethnicity proved
    race, hisp = counts["attributes"]["race"], counts["attributes"]["hisp"]
    assert (race["confirmed"], race["unlike"], race["inferred_unlike"]) == (1, 1, 1)
    assert (hisp["inferred"], hisp["confirmed"], hisp["inferred_unlike"]) == (0, 0, 0)
    judged = apply(dict(doc), load_rules("default"))
    checks = {(c["rule"], c["unit"]): c for c in judged["checks"]}
    for rule in ("reidentification", "attribute_inference"):
        unit, release = checks[(rule, "b1")], checks[(rule, "(release)")]
        assert unit["outcome"] == "fail" and unit["message"].startswith("race: 1 person")
        assert unit["attributes"] == {"race": 1, "hisp": 0} and "every sensitive value together: 0" in unit["message"]
        assert release["outcome"] == "fail" and set(release["attributes"]) == {"exact: race"}
    section = doc["reidentification"]["exact"]
    assert section["confirmed"]["count"] == 0 and section["attributes"]["race"]["confirmed"]["count"] == 1
    assert section["attributes"]["race"]["inference"]["unlike_majority"]["lift"] == 1.0


def test_sf1_with_its_hispanic_cells_hidden_still_fails_on_the_race_it_proves(tmp_path):
    """The issue's case: every cell naming hispanic suppressed in each SF1 block, so no person has every
    sensitive value proved (the Bureau's measures are 0, and a conjunction rule passed), while white and
    black stay proved for 169 and 167 of 175. The rules fail the blocks on those, by name."""
    inputs = load_inputs(SF1 / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml")
    hidden = sorted({c.key for t in inputs.schedule.tables for c in t.cells if "hispanic" in c.predicate.columns})
    tables = yaml.safe_load((SF1 / "tables.yaml").read_text())
    tables["suppress"] = {"/".join(p.geo): hidden for p in inputs.problems()}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(tables))
    doc = run_exact(load_inputs(SF1 / "data.csv", SF1 / "schema.yaml", tmp_path / "tables.yaml"),
                    ExactOptions(explain="none"))
    exact = doc["reidentification"]["exact"]
    assert exact["inference"]["all"]["attack"]["count"] == exact["confirmed"]["count"] == 0
    proved = {k: v["inference"]["all"]["attack"]["count"] for k, v in exact["attributes"].items()}
    assert proved["hispanic"] == 0 and (proved["white"], proved["black"]) == (169, 167)
    failed = [c for c in doc["checks"] if c["rule"] == "attribute_inference" and c["outcome"] == "fail"]
    assert len(failed) == 6 and all("hispanic" not in c["message"].split(":")[0] for c in failed)
    assert all(c["attributes"]["hispanic"] == 0 for c in failed if c["unit"] != "(release)")
    assert any(c["message"].startswith(("white:", "black:")) for c in failed)


def test_combinations_the_policy_names_are_measured_and_judged(tmp_path, capsys):
    paths = _two_sensitive(tmp_path, hide_hisp=False)
    combined = _rules(tmp_path, "attribute_inference: {max_persons: 0, max_lift: off, combinations: [[race, hisp]]}\n")
    doc = run_exact(load_inputs(*paths), ExactOptions(explain="none"), rules=combined)
    assert doc["options"]["attacker"]["combinations"] == [["race", "hisp"]]
    both = doc["units"][0]["reidentification"]["attributes"]["race+hisp"]
    race = doc["units"][0]["reidentification"]["attributes"]["race"]
    assert both["inferred"] <= race["inferred"] and both["unlike"] >= race["unlike"]
    check, = [c for c in doc["checks"] if c["rule"] == "attribute_inference"]
    assert set(check["attributes"]) == {"race", "hisp", "race+hisp"}
    # findings of a run whose policy did not name it: the combination is not known to be safe
    plain = run_exact(load_inputs(*paths), ExactOptions(explain="none"))
    check, = [c for c in apply(dict(plain), combined)["checks"] if c["rule"] == "attribute_inference"]
    assert check["outcome"] == "fail" and "race+hisp not measured" in check["message"]
    # a combination of attributes the attacker model does not hold: one line, exit 2
    (tmp_path / "bad.yaml").write_text("attribute_inference: {combinations: [[race, sex]]}\n")
    data, schema, tables = paths
    assert run(["run", str(data), "-s", str(schema), "-t", str(tables), "-r", str(tmp_path / "bad.yaml"),
                "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "attribute_inference.combinations names 'sex'" in err and "bad.yaml" in err and "Traceback" not in err


def test_protection_breaks_the_proof_of_the_attribute_still_proved(tmp_path):
    """With ethnicity hidden, protect for attribute_inference still has race's proof to break."""
    from audit.protection.options import Policy, ProtectOptions
    from audit.protection.unit import suppress_unit, unit_contexts

    inputs = load_inputs(*_two_sensitive(tmp_path))
    policy = Policy.from_rules(_rules(tmp_path, "attribute_inference: {max_persons: 0, max_lift: off}\nundecided: on\n"))
    options = ProtectOptions(exact=ExactOptions(explain="none", attacker=inputs.schema.attacker))
    ctx, = unit_contexts(inputs)
    out = suppress_unit(ctx, policy, options)
    assert out.status == "protected" and out.cells
    after, _ = ctx.problem(set(out.cells))
    counts = audit_unit(after, options.exact).reidentification.counts
    assert counts["attributes"]["race"]["inferred_unlike"] == 0


# -- the ranking measure, without the ranking attack --------------------------------------------------
def test_ranking_measure_links_top_ranked_rows(tmp_path):
    inputs = load_inputs(*_block7(tmp_path))
    problem, = inputs.problems()
    attacker = inputs.schema.attacker
    truth = [tuple(r) for r in problem.truth.tolist()]
    perfect = measure_ranking(problem, [(r, 8) for r in truth], attacker).counts
    assert perfect["putative"] == perfect["confirmed"] == perfect["unique"] == 3  # F child, F senior, M senior
    race = problem.index("race")
    flipped = [tuple(v if c != race else 1 - v for c, v in enumerate(r)) for r in truth]
    wrong = measure_ranking(problem, [(r, 8) for r in flipped], attacker).counts
    assert wrong["putative"] == 3 and wrong["confirmed"] == 0
    assert wrong["inferred"] == 1  # the adult women: the first row's race (B, flipped from W) is right for one
    # the reconstruction is the top-n rows: a wrong row ranked first wins over the right one (the girl),
    # and pushes the last true row (the old man) out of the top 7: one confirmed (the old woman)
    mixed = measure_ranking(problem, [(r, 9) for r in flipped[:1]] + [(r, 8) for r in truth], attacker).counts
    assert (mixed["putative"], mixed["confirmed"]) == (2, 1)
    results = ReidentificationAttack(attacker, ranking=[(problem, [(r, 1) for r in truth])]).evaluate().results()
    assert results.to_dict()["precision"]["rate"] == 1.0 and results.units == 1


def _ranked_findings(tmp_path: Path) -> dict:
    """The 7-person block ranked (`audit rank`, 2 runs) and then audited into the same folder: its findings."""
    data, schema, tables = _block7(tmp_path)
    out = tmp_path / "out"
    assert run(["rank", str(data), "-s", str(schema), "-t", str(tables), "--runs", "2", "--steps", "20",
                "--device", "cpu", "-o", str(out), "--quiet"]) == 0
    assert run(["run", str(data), "-s", str(schema), "-t", str(tables), "-o", str(out), "--explain", "none",
                "--quiet", "--no-report"]) == 1
    return json.loads((out / "findings.json").read_text())


def test_ranking_part_in_findings_from_the_rank_command(tmp_path):
    pytest.importorskip("torch")
    doc = _ranked_findings(tmp_path)
    ranking = doc["reidentification"]["ranking"]
    assert ranking["status"] == "run" and ranking["persons"] == 7
    assert 0 <= ranking["precision"]["ci"][0] <= ranking["precision"]["ci"][1] <= 1


def test_without_torch_the_ranking_part_says_not_run(tmp_path):
    data, schema, tables = _block7(tmp_path)
    out = tmp_path / "out"
    code = ("import sys; sys.modules['torch'] = None\n"  # PyTorch absent, as without the 'rank' extra
            "from audit.cli import run\n"
            f"sys.exit(run(['run', {str(data)!r}, '-s', {str(schema)!r}, '-t', {str(tables)!r}, '-o', {str(out)!r},"
            " '--explain', 'none', '--quiet', '--no-report']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 1, done.stderr
    ranking = json.loads((out / "findings.json").read_text())["reidentification"]["ranking"]
    assert ranking == {"status": "not run", "reason": "not run: PyTorch is not installed (the 'rank' extra)"}


# -- rules ---------------------------------------------------------------------------------------------
def _rules(tmp_path: Path, text: str):
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    return load_rules(path)


def test_rules_fail_and_pass_as_configured(tmp_path):
    inputs = load_inputs(*_block7(tmp_path))
    doc = run_exact(inputs, ExactOptions(explain="none"))
    counts = doc["units"][0]["reidentification"]
    assert (counts["confirmed"], counts["inferred_unlike"]) == (3, 2)  # the block has one dataset

    def outcome(text: str) -> dict:
        checked = apply(dict(doc), _rules(tmp_path, text))
        return {(c["rule"], c["unit"]): c["outcome"] for c in checked["checks"]}

    assert outcome("reidentification: {max_persons: 2, max_rate: off}") == {("reidentification", "0001"): "fail"}
    assert outcome("reidentification: {max_persons: 3, max_rate: off}") == {("reidentification", "0001"): "pass"}
    assert outcome("reidentification: {max_persons: off, max_rate: 0.43}") == {("reidentification", "(release)"): "pass"}
    assert outcome("reidentification: {max_persons: off, max_rate: 0.42}") == {("reidentification", "(release)"): "fail"}
    assert outcome("attribute_inference: {max_persons: 1, max_lift: off}") == {("attribute_inference", "0001"): "fail"}
    assert outcome("attribute_inference: {max_persons: 2, max_lift: 0.7}") == {
        ("attribute_inference", "0001"): "pass", ("attribute_inference", "(release)"): "pass"}  # lift 2/3
    assert outcome("attribute_inference: {max_persons: 2, max_lift: 0.6, action: warn}")[
        ("attribute_inference", "(release)")] == "warn"
    # without an attacker model the rules are skipped, once for the release
    plain = run_exact(load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", BLOCK7 / "tables.yaml"),
                      ExactOptions(explain="none"))
    assert plain["reidentification"]["status"] == "no attacker model"
    assert [c["outcome"] for c in plain["checks"] if c["rule"] in ("reidentification", "attribute_inference")] \
        == ["skipped", "skipped"]


@pytest.mark.parametrize("text, key", [
    ("reidentification: {max_rate: 2}", "reidentification.max_rate"),
    ("attribute_inference: {max_persons: -1}", "attribute_inference.max_persons"),
    ("attribute_inference: {max_persons: off, max_lift: off}", "attribute_inference.max_persons"),
    ("reidentification: {max_persons: 0.5}", "reidentification.max_persons"),
])
def test_bad_rule_settings_name_the_line(tmp_path, text, key):
    from audit.errors import AuditError

    with pytest.raises(AuditError) as err:
        _rules(tmp_path, "name: x\n" + text)
    assert f"rules.yaml:2 {key}" in str(err.value)


# -- the attacker model in the schema -------------------------------------------------------------------
@pytest.mark.parametrize("attacker, message", [
    ({"quasi_identifiers": ["sex", "agegrp"], "sensitive": ["race"]}, "exactly one geography level"),
    ({"quasi_identifiers": ["block", "sx"], "sensitive": ["race"]}, "unknown column 'sx'"),
    ({"quasi_identifiers": ["block", "sex"], "sensitive": ["block"]}, "is a geography level"),
    ({"quasi_identifiers": ["block", "agegrp"], "sensitive": ["age"]}, "both derive from the column 'age'"),
    ({"quasi_identifiers": ["block", "sex"], "sensitive": ["sex"]}, "listed twice"),
    ({"quasi_identifiers": ["block"], "sensitive": []}, "non-empty list"),
    ({"quasi_identifiers": ["block"], "sensitive": ["race"], "known": ["sex"]}, "unknown key(s) ['known']"),
])
def test_attacker_model_errors_name_the_line(tmp_path, capsys, attacker, message):
    data, schema, tables = _block7(tmp_path, attacker)
    assert run(["validate", "-s", str(schema), "-t", str(tables)]) == 2
    err = capsys.readouterr().err
    assert message in err and f"{schema}:" in err and "attacker" in err and "Traceback" not in err


def test_attribute_codes_and_atoms():
    inputs = load_inputs(SF1 / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml")
    binned = attribute(inputs.schema, "binned_age")
    assert binned.code_of([0, 21, 22, 24, 85, 110]).tolist() == [0, 21, 22, 22, 37, 37]
    problem = inputs.problems()[0]
    age = problem.domains[problem.index("age")]
    assert (binned.atom_codes(age.atoms) >= 0).all()  # SF1's age atoms are the Bureau's bins
    assert (attribute(inputs.schema, "age").atom_codes(age.atoms) == -1).sum() == 16  # ranges mix single ages


# -- protection --------------------------------------------------------------------------------------------
def test_protection_hits_the_claims_that_prove_sensitive_values(tmp_path):
    from audit.protection.claims import failing
    from audit.protection.options import Policy, ProtectOptions
    from audit.protection.unit import suppress_unit, unit_contexts

    inputs = load_inputs(*_block7(tmp_path))
    rules = _rules(tmp_path, "attribute_inference: {max_persons: 0, max_lift: off}\nundecided: on\n")
    policy = Policy.from_rules(rules)
    assert (policy.inference, policy.reidentification, policy.derived) == (0, None, None)
    options = ProtectOptions(exact=ExactOptions(explain="none", attacker=inputs.schema.attacker))
    problem, = inputs.problems()
    bad, _ = failing(audit_unit(problem, options.exact), policy)
    # the two white men (the block's majority is black) are proved white by one claim: "exactly one man
    # aged 18 is white" with the unit reconstructed (the pinning claim of the first adult man)
    assert len(bad) == 1 and all(v.claim.m == 1 and len(v.claim.assignment) == 3 for v in bad)
    ctx, = unit_contexts(inputs)
    out = suppress_unit(ctx, policy, options)
    assert out.status == "protected" and out.cells
    after, _ = ctx.problem(set(out.cells))
    counts = audit_unit(after, options.exact).reidentification.counts
    assert counts["inferred_unlike"] == 0 and out.after["failing_claims"] == 0


def test_a_ranking_part_without_attributes_is_still_judged(tmp_path):
    """A rank.json of an older version has no per-attribute measures: its every-value confirmed rate is
    judged against max_rate as before, not passed as "not measured" (a rate above the bound fails)."""
    pytest.importorskip("torch")
    from audit.policy.checks import evaluate
    from audit.policy.rules import load_rules

    doc = _ranked_findings(tmp_path)
    ranking = doc["reidentification"]["ranking"]
    assert ranking["status"] == "run"
    ranking.pop("attributes", None)

    def release(rate: float) -> str:
        ranking["confirmed"]["rate"] = rate
        check, = [c for c in evaluate(doc, load_rules("default"))
                  if c["rule"] == "reidentification" and c["unit"] == "(release)"]
        return check["outcome"], check["message"]

    outcome, message = release(0.5)
    assert outcome == "fail" and "ranking: every sensitive value" in message, message
    doc["reidentification"]["exact"]["confirmed"]["rate"] = 0.0
    for a in (doc["reidentification"]["exact"].get("attributes") or {}).values():
        a["confirmed"]["rate"] = 0.0
    assert release(0.0)[0] == "pass", release(0.0)
