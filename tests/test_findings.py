"""The findings format: exact counts, bounded listings, the claim store and `audit claims`, docs/findings.md
checked against real output, old formats refused, progress lines in CI logs."""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from audit.problem.claims import candidates
from audit.findings.claimstore import ClaimStore
from audit.cli import run
from audit.attacks.exact import ExactOptions, audit_unit
from audit.findings.files import read_findings
from audit.findings.lines import JsonLines
from audit.inputs import load_inputs
from audit.policy.checks import evaluate
from audit.policy.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
SF1 = ROOT / "samples" / "sf1"
OPTIONS = ["--max-columns", "3", "--explain-seconds", "0.5"]


@pytest.fixture(scope="module")
def two_blocks(tmp_path_factory) -> Path:
    """The sf1 sample's two smallest blocks (4 and 7 persons)."""
    folder = tmp_path_factory.mktemp("two")
    data = pd.read_csv(SF1 / "data.csv", dtype=str)
    data[data["block"].isin(["1033", "1042"])].to_csv(folder / "data.csv", index=False)
    return folder / "data.csv"


def _run(data: Path, out: Path, *extra: str) -> dict:
    code = run(["run", str(data), "-s", str(SF1 / "schema.yaml"), "-t", str(SF1 / "tables.yaml"), "-o", str(out),
                "--quiet", *OPTIONS, *extra])
    assert code == 1  # these blocks fail the default rules
    return json.loads((out / "findings.json").read_text())


@pytest.fixture(scope="module")
def listed(two_blocks, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("listed")
    return out, _run(two_blocks, out)


@pytest.fixture(scope="module")
def capped(two_blocks, tmp_path_factory) -> tuple[Path, dict]:
    """The same run at scale (in process) listing one claim of each kind per unit."""
    out = tmp_path_factory.mktemp("capped")
    return out, _run(two_blocks, out, "--claims-cap", "1")


def _claims(capsys, *args: str) -> list[dict]:
    assert run(["claims", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _key(c: dict) -> tuple:
    return c["geo"], tuple(sorted(c["columns"].items())), c["m"], c["status"]


def test_claims_command_gives_every_claim_the_attack_decided(two_blocks, listed, capsys):
    out, doc = listed
    inputs = load_inputs(two_blocks, SF1 / "schema.yaml", SF1 / "tables.yaml")
    expected = set()
    for problem in inputs.problems():
        result = audit_unit(problem, ExactOptions(max_columns=3, explain="none"))
        geo = "/".join(problem.geo)
        label = lambda claim: tuple(sorted((problem.domains[c].name, problem.domains[c].labels[a])  # noqa: E731
                                           for c, a in claim.assignment))
        expected |= {(geo, label(v.claim), v.claim.m, v.status) for v in result.verdicts}
        decided = {v.claim for v in result.verdicts}
        refuted = [c for c in candidates(problem.truth, 3, sizes=problem.sizes) if c not in decided]
        assert len(refuted) == result.refuted
        expected |= {(geo, label(c), c.m, "refuted") for c in refuted}
    got = _claims(capsys, str(out))
    assert len(got) == len(expected) == doc["claim_store"]["claims"] and {_key(c) for c in got} == expected
    s = doc["summary"]
    assert len(got) == s["verified"] + s["undecided"] + s["refuted"]
    # every claim findings.json lists is in the store, explanations included
    stored = {_key(c): {k: v for k, v in c.items() if k not in ("level", "geo")} for c in got}
    for u in doc["units"]:
        for c in u["claims"]:
            assert stored[_key({**c, "geo": u["geo"]})] == c
    # filters
    geo = doc["units"][0]["geo"]
    one = _claims(capsys, str(out / "findings.json"), "--unit", geo)
    assert one == [c for c in got if c["geo"] == geo]
    wide = _claims(capsys, str(out), "--derived", "--singletons", "--min-columns", "3")
    assert wide == [c for c in got if c["status"] == "verified" and not c["direct"] and c["m"] == 1
                    and len(c["columns"]) >= 3] and wide
    assert _claims(capsys, str(out), "--status", "refuted") == [c for c in got if c["status"] == "refuted"]
    assert run(["claims", str(out), "--limit", "3"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == doc["claim_store"]["columns"] and len(rows) == 4
    assert run(["claims", str(out), "--unit", "nowhere"]) == 2
    assert "no unit 'nowhere'" in capsys.readouterr().err


def test_rules_on_listed_claims_agree_with_the_full_store(two_blocks, listed, capped):
    (_, doc), (capped_out, small) = listed, capped
    assert [len([c for c in u["claims"] if c["m"] == 1 and not c["direct"]]) for u in small["units"]] == [1, 1]
    assert small["checks"] == doc["checks"] and small["summary"] == doc["summary"]
    store = list(ClaimStore(capped_out / "claims.csv.gz").claims())
    ncols = len(doc["schema"]["columns"])
    # --max-columns 3 leaves out the claims over SF1's 10 columns (each published about at block level);
    # a block with one consistent dataset proves every true record anyway: its groups from the data
    data = pd.read_csv(two_blocks, dtype=str)
    groups = {b: data[data["block"] == b].groupby(list(doc["schema"]["columns"])).size().tolist()
              for b in data["block"].unique()}
    reconstructed = {u["geo"]: groups[u["geo"].rsplit("/", 1)[1]] for u in doc["units"] if u["reconstructed"]}
    for policy in ("default", "strict", "lenient"):
        rules = load_rules(policy)
        checks = evaluate(small, rules)
        assert checks == evaluate(doc, rules)
        for c in checks:
            rows = [r for r in store if r["geo"] == c["unit"]]
            verified = [r for r in rows if r["status"] == "verified"]
            settings = rules.to_dict()["rules"][c["rule"]]
            expected = {
                "derived_singletons": lambda: sum(r["m"] == 1 and not r["direct"]
                                                  and len(r["columns"]) >= settings["min_columns"] for r in verified),
                "direct_singletons": lambda: sum(r["m"] == 1 and r["direct"]
                                                 and len(r["columns"]) >= settings["min_columns"] for r in verified),
                "full_records": lambda: sum(m for m in reconstructed[c["unit"]] if m < settings["threshold"])
                if c["unit"] in reconstructed else sum(r["m"] for r in verified
                                                       if len(r["columns"]) == ncols and r["m"] < settings["threshold"]),
                "undecided": lambda: sum(r["status"] == "undecided" for r in rows),
            }.get(c["rule"])
            if expected is not None:
                assert c["count"] == expected(), (policy, c)


def test_findings_json_reads_back_one_unit_at_a_time(listed):
    out, doc = listed
    lazy = read_findings(out / "findings.json")
    assert isinstance(lazy["units"], JsonLines) and isinstance(lazy["checks"], JsonLines)
    assert list(lazy["units"]) == doc["units"] and list(lazy["checks"]) == doc["checks"]
    assert lazy["units"][-1] == doc["units"][-1] and len(lazy["units"]) == len(doc["units"])
    assert {k: v for k, v in lazy.items() if k not in ("units", "checks")} == \
        {k: v for k, v in doc.items() if k not in ("units", "checks")}
    lines = (out / "findings.json").read_text().splitlines()
    assert lines[1] == ' "format": 3,' and sum(line.startswith('{"geo":') for line in lines) == len(doc["units"])


def test_old_formats_are_refused_with_exit_2(listed, tmp_path, capsys):
    out, doc = listed
    old = {k: v for k, v in doc.items() if k != "format"}
    (tmp_path / "old.json").write_text(json.dumps(old, indent=1))
    assert run(["report", str(tmp_path / "old.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "findings file in format 1" in err[0] and "run audit run" in err[0]
    assert run(["diff", str(tmp_path / "old.json"), str(out / "findings.json")]) == 2
    assert "format 1" in capsys.readouterr().err
    assert run(["diff", str(out / "findings.json"), str(out / "findings.json"), "--quiet"]) == 0


def _documented(section: str) -> set[str]:
    """The keys in the first column of the tables under a heading of docs/findings.md."""
    text = (ROOT / "docs" / "findings.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return {k for row in re.findall(r"^\| (.+?) \|", body, re.M) for k in re.findall(r"`([a-z_]+)`", row)}


def test_docs_describe_the_real_output(listed, capped):
    (_, doc), (_, small) = listed, capped
    top = _documented("Top level")
    assert set(doc) <= top and set(small) <= top
    # present only in some runs: at scale; with a stale extra beside the findings; with --published;
    # with interval certificates (hidden cells); past 10,000 units (side files)
    assert top - set(doc) == {"scale", "extras_left_out", "published", "unavailable", "certificates",
                              "unit_files"} and "scale" in small
    unit = _documented("A unit")
    seen = {k for d in (doc, small) for u in d["units"] for k in u}
    # optional keys: units past their bounds; --published; units with counts not published exactly
    assert seen <= unit and unit - seen <= {"not_stored", "claims_unknown", "intervals", "interval_details",
                                             "intervals_skipped", "grid", "certificates"}
    claim = _documented("A claim")
    seen = {k for d in (doc, small) for u in d["units"] for c in u["claims"] for k in c}
    assert seen <= claim and claim - seen <= {"reason"}  # only undecided claims have a reason
    store = _documented("claims.csv.gz")
    header = doc["claim_store"]["columns"]
    assert set(header) - set(doc["schema"]["columns"]) == store
    assert set(doc["summary"]["singletons_by_columns"]) == {"derived", "direct"}


@pytest.mark.slow
def test_sf1_sample_findings_stay_small(tmp_path):
    code = run(["run", str(SF1 / "data.csv"), "-s", str(SF1 / "schema.yaml"), "-t", str(SF1 / "tables.yaml"),
                "-o", str(tmp_path), "--explain-seconds", "0.2", "--no-report", "--quiet"])
    assert code == 1
    size = (tmp_path / "findings.json").stat().st_size
    assert size < 5 * 2**20 and (tmp_path / "junit.xml").stat().st_size < 100_000
    doc = json.loads((tmp_path / "findings.json").read_text())
    s = doc["summary"]
    assert doc["claim_store"]["claims"] == s["verified"] + s["undecided"] + s["refuted"] > 70_000


@pytest.mark.serial  # "a fast run": its wall time must stay under the first progress tick
def test_progress_lines_in_a_non_terminal_stderr(tmp_path):
    folder = ROOT / "tests" / "data" / "protected"
    args = [sys.executable, "-c", "from audit.cli import main; main()", "run", str(folder / "data.csv"), "-s", str(folder / "schema.yaml"),
            "-t", str(folder / "tables.yaml"), "-o", str(tmp_path), "--no-report"]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    warning, progress = done.stderr.split("\n", 1)  # the schema's columns no protected table publishes
    assert warning.startswith("warning: ") and "no table publishes" in warning
    assert re.fullmatch(r"units: 1/1 \(100%\) in \d+s\n", progress)  # a fast run: the closing line only
    quiet = subprocess.run(args + ["--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == warning + "\n"  # a warning, no progress


def test_progress_shows_rate_and_eta_every_few_seconds():
    import time

    from audit.outputs.progress import Progress

    stream = io.StringIO()
    with Progress("units", stream=stream, every=0.2) as p:
        p.total(4)
        for _ in range(3):
            time.sleep(0.15)
            p.update()
        time.sleep(0.3)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3 and lines[-1].startswith("units: 3/4 (75%) in ")
    assert all(re.fullmatch(r"units: \d/4 \(\d+%\)(, \d+\.\d\d units/s, ETA \d+s)?", line) for line in lines[:-1])
    assert any("units/s, ETA" in line for line in lines[:-1])


def test_store_quotes_what_csv_must_quote(tmp_path):
    """Labels, cells and reasons with commas, quotes or newlines read back as written."""
    import numpy as np

    from audit.problem.claims import UNDECIDED, VERIFIED, Claim, Verdict
    from audit.findings.claimstore import LEAD, TAIL, StoreWriter, encode
    from audit.attacks.exact import UnitResult
    from audit.problem.build import Domain, Problem

    odd = ('a,b', 'say "hi"', "two\nlines")
    p = Problem("block", ("01", "9,9"), (Domain("x", tuple(frozenset([v]) for v in odd), odd),
                                         Domain("y", (frozenset(["1"]), frozenset(["2"])), ("1", "2"))),
                (1, 1), (), truth=np.array([[0, 1]]))
    verdicts = [Verdict(Claim(((0, i),), 1), VERIFIED, ('T:"c",1',), True) for i in range(3)]
    verdicts.append(Verdict(Claim(((0, 0), (1, 1)), 2), UNDECIDED, reason="limit, reached"))
    result = UnitResult(p, verdicts=verdicts, baseline={verdicts[0].claim: 0.25})
    header = (*LEAD, "x", "y", *TAIL)
    writer = StoreWriter(tmp_path / "claims.csv.gz", header)
    entry = writer.add(encode(result, header), len(verdicts))
    writer.close()
    store = ClaimStore(tmp_path / "claims.csv.gz")
    got = list(store.claims(entry))
    assert got == list(store.claims()) and len(got) == 4
    assert [c["columns"] for c in got] == [{"x": v} for v in odd] + [{"x": "a,b", "y": "2"}]
    assert got[0]["cells"] == ['T:"c",1'] and got[0]["baseline"] == 0.25 and got[0]["minimal"] is True
    assert got[3]["reason"] == "limit, reached" and got[3]["status"] == UNDECIDED and got[0]["geo"] == "01/9,9"
    assert pd.read_csv(tmp_path / "claims.csv.gz", dtype=str).shape == (4, len(header))


def test_a_claims_cap_of_zero_lists_no_claim_and_keeps_every_count():
    """``--claims-cap 0`` lists nothing and counts (and stores) every claim; it once stopped the run."""
    from audit.findings.claimstore import store_columns
    from audit.findings.document import unit_json

    block7 = ROOT / "samples" / "block7"
    inputs = load_inputs(block7 / "data.csv", block7 / "schema.yaml", block7 / "tables.yaml")
    result = audit_unit(inputs.problems()[0], ExactOptions(explain="none"))
    header = store_columns(inputs.schema, inputs.schedule)
    none, some = (unit_json(result, None, cap, header) for cap in (0, 10))
    assert none["claims"] == [] and some["claims"] and none["summary"] == some["summary"]
    assert none["_store"] == some["_store"]
