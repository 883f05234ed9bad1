"""docs/walkthrough.md and docs/python.md run as written: every file, command and output line in them
(issue 35: a new user's way from their own CSV to a signed-off protected release)."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WALKTHROUGH = ROOT / "docs" / "walkthrough.md"
PYTHON = ROOT / "docs" / "python.md"
ADULT = ROOT / "tests" / "data" / "adult" / "adult.csv"
FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```\n", re.M | re.S)


def blocks(path: Path) -> list[tuple[str, str, str]]:
    """The fenced blocks of a markdown file: (language, the rest of the fence line, body)."""
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(path.read_text(encoding="utf-8"))]


def folder(tmp: Path) -> Path:
    """The walkthrough's folder: the user's CSV and the files it writes, and an `audit` on PATH running this tree."""
    shutil.copy(ADULT, tmp / "adult.csv")
    for lang, rest, body in blocks(WALKTHROUGH):
        if lang == "yaml" and rest.startswith("file="):
            (tmp / rest[5:]).write_text(body, encoding="utf-8")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "audit").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m audit "$@"\n', encoding="utf-8")
    (bin_dir / "audit").chmod((bin_dir / "audit").stat().st_mode | stat.S_IEXEC)
    return bin_dir


def run_line(line: str, cwd: Path, bin_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_walkthrough_runs_as_written(tmp_path):
    bin_dir = folder(tmp_path)
    found = blocks(WALKTHROUGH)
    ran = 0
    for i, (lang, _, body) in enumerate(found):
        if lang != "sh":
            continue
        out = ""
        for line in body.splitlines():
            command, _, comment = line.partition("  # exit ")
            done = run_line(command, tmp_path, bin_dir)
            want = int(comment or 0)
            assert done.returncode == want, (command, done.returncode, done.stderr[-2000:])
            assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
            out += done.stdout
            ran += 1
        if i + 1 < len(found) and found[i + 1][0] == "text":
            for expected in found[i + 1][2].splitlines():
                assert expected in out.splitlines(), (expected, out)
    assert ran >= 6
    report = (tmp_path / "audit-out" / "report.html").read_text(encoding="utf-8")
    # the attacker model, stated where it matters, with what it did here
    assert ("<li id=\"assume-population\"><b>The attacker knows each unit&#39;s population.</b> 1 native-country "
            "publishes no total (e.g. Holand-Netherlands); the attack takes their number of persons as known, as "
            "when totals are held invariant, and proves 15 singleton claims there.") in report
    assert ("<b>Which small-count threshold judges.</b> The policy&#39;s small_cells rule fails a published exact "
            "count from 1 to 2; the schedule suppresses counts below 5 in T1, T2. They are separate choices: the "
            "schedule says what is hidden, the policy what may not be published. A count from 3 to 4 passes the "
            "policy if published; to judge by the schedule&#39;s threshold, use a rules file with "
            "small_cells.threshold: 5.") in report
    assert ("A hidden count the other published numbers pin exactly (interval [v, v]) is only warned about, not "
            "failed, by this policy") in report
    assert "<b>Singletons over fewer than 2 attributes pass.</b>" in report
    passed = (tmp_path / "release-out" / "report.html").read_text(encoding="utf-8")
    assert "PASS – no rule of the default policy fails" in passed
    assert ("<li>1 statement that singles out one person follows from combining published numbers, in 1 of 4 "
            "native-country units.</li>") in passed
    assert "No protection is needed under this policy (a schedule audit protect wrote passes as it is)." in passed
    assert "no published count below 3 (the policy&#39;s threshold); no listed claim uses it" in passed
    release = json.loads((tmp_path / "release-out" / "findings.json").read_text(encoding="utf-8"))
    assert release["summary"]["singletons_by_columns"]["derived"] == {"1": 1}  # "over one attribute", as it says
    if (tmp_path / "protect-out" / "protected.csv").exists():  # written by audit protect where the version has it
        assert "status" in (tmp_path / "protect-out" / "protected.csv").read_text(encoding="utf-8").splitlines()[0]


def test_the_walkthrough_table_of_remedies_is_measured(tmp_path):
    """The remedies' table: dropping T2 (and its columns) and collapsing race, run as the text says."""
    bin_dir = folder(tmp_path)
    (tmp_path / "t1.yaml").write_text("\n".join((tmp_path / "tables.yaml").read_text().splitlines()[:7]) + "\n")
    schema = (tmp_path / "schema.yaml").read_text().splitlines()
    (tmp_path / "s1.yaml").write_text("\n".join(line for line in schema[:6] if "age:" not in line) + "\n")
    (tmp_path / "s2.yaml").write_text("\n".join(schema) + "\n  race2: {from: race, map: {White: [White], Other: "
                                      "[Black, Asian-Pac-Islander, Amer-Indian-Eskimo, Other]}, labels: {White: White, "
                                      "Other: Other races}}\n")
    (tmp_path / "t2.yaml").write_text((tmp_path / "tables.yaml").read_text().replace("[sex, race]", "[sex, race2]"))
    for schema_file, tables, singletons, cells in (("s1.yaml", "t1.yaml", 5, 6), ("s2.yaml", "t2.yaml", 19, 13)):
        done = run_line(f"audit run adult.csv -s {schema_file} -t {tables} -o r-{tables}", tmp_path, bin_dir)
        assert f"({singletons} derived singletons)" in done.stdout, done.stdout
        done = run_line(f"audit protect adult.csv -s {schema_file} -t {tables} -o p-{tables}", tmp_path, bin_dir)
        assert done.returncode == 0 and f"\n{cells} cells suppressed in " in done.stdout, done.stdout


def test_the_python_example_runs(tmp_path, monkeypatch, capsys):
    folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = [body for lang, _, body in blocks(PYTHON) if lang == "python"]
    assert code
    namespace = {"__name__": "__walkthrough__"}  # one, as a notebook's cells share theirs
    for body in code:
        exec(compile(body, str(PYTHON), "exec"), namespace)
    out = capsys.readouterr().out
    for lang, _, body in blocks(PYTHON):
        if lang == "text":
            for expected in body.splitlines():
                assert expected in out.splitlines(), (expected, out)
    notebook = json.loads((ROOT / "docs" / "python.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert [c.strip() for c in cells] == [b.strip() for b in code]  # the notebook is the page's code


def test_an_unguarded_script_is_told_to_guard_its_call(tmp_path):
    """A script calling run_audit at its top level: each worker process imports it and would call it again; it
    stops there with one line saying what to do, and the units it could not attack are undecided, never safe."""
    folder(tmp_path)
    code = next(body for lang, _, body in blocks(PYTHON) if lang == "python")
    (tmp_path / "audit_me.py").write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, "audit_me.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = ("error: run_audit: the script that calls it runs again in each of the audit's worker processes (Python "
            "starts them by importing the script) -- fix: put the call under `if __name__ == \"__main__\":` (not "
            "needed in Jupyter)")
    assert line in done.stderr.splitlines(), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith("fail 0 ")  # every claim undecided: the verdict fails closed


def test_inferring_a_schema_names_what_it_lacks(tmp_path):
    """A new user's first try, --infer-schema on the whole file: Adult's fnlwgt (383,706 values) is inferred as a
    wide column (summed, never selected on) instead of refused, and the next message names the schedule's
    recoded column that an inferred schema cannot hold, with the columns it has."""
    bin_dir = folder(tmp_path)
    done = run_line("audit run adult.csv -t tables.yaml --infer-schema --geography native-country -o inferred",
                    tmp_path, bin_dir)
    assert done.returncode == 2
    assert "fnlwgt" not in done.stderr.split("error:")[0]  # no refusal of the wide column before the error
    assert done.stderr.splitlines()[-1] == (
        "error: tables.yaml:11 tables[1].by[0]: unknown column 'agegrp' -- fix: use one of ['age', 'workclass', "
        "'fnlwgt', 'education', 'education-num', 'marital-status', 'occupation', 'relationship', 'race', 'sex', "
        "'capital-gain', 'capital-loss', 'hours-per-week', 'income']")