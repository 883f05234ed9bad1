"""The audit as a library call: run_audit gives the command line's findings, without typer or click."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.cli import run
from audit.errors import AuditError
from audit.pipeline import AuditOptions, run_audit

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"
DATA, SCHEMA, TABLES = BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", BLOCK7 / "tables.yaml"
SAME = ("verdict", "summary", "failing", "warnings", "checks", "attacks")

LIBRARY_ONLY = """
import json, sys
from pathlib import Path
sys.modules["typer"] = sys.modules["click"] = None  # import typer / click -> ImportError
from audit.pipeline import AuditOptions, run_audit
data, schema, tables, out = map(Path, sys.argv[1:5])
seen = []
doc = run_audit(data, schema, tables, out, AuditOptions(explain_budget=5), on_unit=lambda u: seen.append(u["geo"]))
print(json.dumps({"doc": doc.to_json(), "seen": seen, "typer": "typer" in sys.modules and sys.modules["typer"] is not None}))
"""


def _same(doc: dict) -> dict:
    return {k: doc.get(k) for k in SAME}


def test_run_audit_without_typer_gives_the_findings_of_audit_run(tmp_path, capsys):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", LIBRARY_ONLY, str(DATA), str(SCHEMA), str(TABLES), str(tmp_path / "lib")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert not got["typer"] and got["seen"] == ["0001"]
    lib = got["doc"]
    assert lib == json.loads((tmp_path / "lib" / "findings.json").read_text())
    assert {p.name for p in (tmp_path / "lib").iterdir()} >= {"findings.json", "claims.csv.gz", "junit.xml", "report.html"}

    assert run(["run", str(DATA), "-s", str(SCHEMA), "-t", str(TABLES), "-o", str(tmp_path / "cli"),
                "--explain-budget", "5", "--quiet"]) == 1
    cli = json.loads((tmp_path / "cli" / "findings.json").read_text())
    assert _same(lib) == _same(cli) and lib["verdict"] == "fail"
    assert lib["summary"]["units_reconstructed"] == 1 and lib["summary"]["derived_singletons"] > 0
    untimed = [[{k: v for k, v in u.items() if k != "seconds"} for u in d["units"]] for d in (lib, cli)]
    assert untimed[0] == untimed[1]


def test_run_audit_on_a_published_release_matches_audit_run_published(tmp_path, capsys):
    release = tmp_path / "release.csv"
    assert run(["tabulate", str(DATA), "-s", str(SCHEMA), "-t", str(TABLES), "-o", str(release)]) == 0
    options = AuditOptions(published=release, explain_budget=5)
    lib = run_audit(None, SCHEMA, TABLES, tmp_path / "lib", options)
    assert run(["run", "--published", str(release), "-s", str(SCHEMA), "-t", str(TABLES), "-o", str(tmp_path / "cli"),
                "--explain-budget", "5", "--quiet"]) == 1
    cli = json.loads((tmp_path / "cli" / "findings.json").read_text())
    assert _same(lib) == _same(cli) and lib["verdict"] == "fail"
    assert lib["summary"]["units_reconstructed"] == 1


@pytest.mark.parametrize("bad, option", [
    ({"engine": "cplex"}, "--engine"),
    ({"unit_seconds": 0}, "--unit-seconds"),
    ({"linear_secret": "multi"}, "--linear-public"),
    ({"rank": True, "rank_results": Path("rank.json")}, "--rank-results"),
])
def test_a_bad_option_is_an_audit_error_naming_it(bad, option):
    with pytest.raises(AuditError) as err:
        AuditOptions(**bad)
    assert err.value.where == option and err.value.fix


def test_highs_writes_nothing_to_standard_output():
    """HiGHS 1.16 prints a banner on stdout when a process makes its first solver; the package's one
    maker of solvers keeps stdout clean, as JSON or CSV written there needs."""
    code = ("from audit.attacks.highs import highs\n"
            "h = highs(); h.addVar(0, 1); h.run(); highs().run()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
