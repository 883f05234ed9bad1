"""Fail closed, keep what finished: units never attacked never pass the sign-off, and a run stopped by
Ctrl-C (SIGINT) or SIGTERM keeps its finished units for ``--resume``, with no SAT solver left broken.

The tests marked ``signals`` start the real command line as a subprocess on a small synthetic state
(8 blocks of 3 persons) and stop it after partial progress; each takes a few seconds.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from audit.cli import run as cli

pytestmark = pytest.mark.serial  # wall-clock bounds or processes of their own: run alone, not beside -n workers

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"
BLOCKS = 8
PEOPLE = [("F", "B", "S", "child"), ("M", "W", "S", "adult"), ("F", "W", "M", "adult"), ("M", "B", "M", "senior"),
          ("F", "B", "M", "adult"), ("M", "W", "S", "child"), ("F", "W", "S", "senior")]


def _visible(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&gt;", ">")


def _signoff(html: str) -> dict[str, tuple[str, str]]:
    """Sign-off rows of the report: output -> (status, reason)."""
    table = re.search(r'<table id="signoff-table">.*?</table>', html, re.S).group(0)
    return {name: (status, reason) for name, status, reason in
            re.findall(r'<tr><td>([^<]+)</td><td>[^<]+</td><td><span class="tag (\w+)">\w+</span></td><td>([^<]*)</td>',
                       table)}


def _memo(html: str) -> str:
    return _visible(re.search(r'<div id="memo">.*?</div>', html, re.S).group(0))


# -- fail closed: a unit never attacked -------------------------------------------------------------
@pytest.mark.parametrize("flag, status, cause", [
    (["--max-rows", "3"], "too-large", "1 block too large to attack (0001: 7 rows > --max-rows 3)"),
    (["--unit-seconds", "0.001"], "timeout", "1 block ran out of time (0001: --unit-seconds 0.001 reached"),
])
def test_a_unit_never_attacked_fails_its_tables_with_the_real_cause(tmp_path, capsys, flag, status, cause):
    code = cli(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml"),
                "-o", str(tmp_path), *flag])
    printed = capsys.readouterr()
    doc = json.loads((tmp_path / "findings.json").read_text())
    unit = doc["units"][0]
    assert code == 1 and unit["status"] == status and unit["summary"]["undecided"] > 0
    assert doc["verdict"] == "fail" and [f["rule"] for f in doc["failing"]] == ["undecided"]
    assert f"FAIL undecided: 1 unit; 0001: {unit['summary']['undecided']} claims undecided ({unit['reason']})" in printed.out
    assert f"{unit['summary']['undecided']} claims could not be decided: they are not shown safe. {cause}" in printed.out
    html = (tmp_path / "report.html").read_text()
    state, reason = _signoff(html)["T1: Age by group"]
    assert state == "fail" and cause in _visible(reason), reason  # never "pass": T1 was never attacked
    memo = _memo(html)
    assert f"{unit['summary']['undecided']} claims could not be decided" in memo and cause in memo
    assert "time given" not in html


def test_a_lenient_policy_still_asks_for_review_of_a_table_never_attacked(tmp_path, capsys):
    code = cli(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml"),
                "-o", str(tmp_path), "--max-rows", "3", "--rules", "lenient"])
    doc = json.loads((tmp_path / "findings.json").read_text())
    assert code == 0 and doc["verdict"] == "pass"  # the lenient policy only warns on undecided claims
    assert "1 block too large to attack (0001: 7 rows > --max-rows 3)" in capsys.readouterr().out
    state, reason = _signoff((tmp_path / "report.html").read_text())["T1: Age by group"]
    assert state == "review" and "too large to attack" in reason


def test_a_table_every_unit_finished_still_passes(tmp_path):
    """The sign-off is unchanged where the attack finished: households block 1001 with its tables."""
    (tmp_path / "data.csv").write_text((ROOT / "tests" / "data" / "protected" / "data.csv").read_text())
    hh = ROOT / "samples" / "households"
    cli(["run", str(tmp_path / "data.csv"), "-s", str(hh / "schema.yaml"), "-t", str(hh / "tables.yaml"),
         "-o", str(tmp_path / "out"), "--quiet"])
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert all(u["status"] == "done" and not u["summary"]["undecided"] for u in doc["units"])
    rows = _signoff((tmp_path / "out" / "report.html").read_text())
    assert not any("not shown safe" in reason for _, reason in rows.values())


def test_a_tract_out_of_time_fails_its_own_tables_and_its_blocks(tmp_path, capsys):
    """Two tracts of 4 blocks, each tract's attack out of time: the tract table, and the block table it
    was attacked with, are not shown safe (the tract table passed before: no count below 3)."""
    folder = write_state(tmp_path, tracts=2)
    cli(["run", *_inputs(folder), "-o", str(tmp_path / "out"), "--unit-seconds", "0.001"])
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert [u["status"] for u in doc["units"] if u["level"] == "tract"] == ["timeout", "timeout"]
    cause = "2 tracts ran out of time (e.g. 01: --unit-seconds 0.001 reached"
    assert cause in capsys.readouterr().out
    rows = _signoff((tmp_path / "out" / "report.html").read_text())
    assert rows["R1: Tract persons"][0] == "fail" and cause in rows["R1: Tract persons"][1]
    assert rows["T1: Persons"][0] == "fail" and cause in rows["T1: Persons"][1]
    assert "blocks" not in rows["R1: Tract persons"][1]  # a block's unit does not publish the tract's table


# -- SIGINT in the middle of a CaDiCaL call -----------------------------------------------------------
SOLVE = textwrap.dedent("""
    import sys, time
    import audit.attacks.engines.sat  # makes python-sat leave SIGINT to Python
    from pysat.examples.genhard import PHP
    from pysat.solvers import Solver

    s = Solver(name="cadical195", bootstrap_with=PHP(9).clauses)
    s.conf_budget(int(sys.argv[1]))
    print("solving", flush=True)
    start = time.perf_counter()
    try:
        s.solve_limited()
        print("no interruption", flush=True)
    except KeyboardInterrupt:
        s.add_clause([-1])  # what the engine's finally does: aborts the process on a solver left mid-search
        s.conf_budget(10)
        print("whole", s.solve_limited(), round(time.perf_counter() - start, 2), flush=True)
        sys.exit(130)
""")


@pytest.mark.signals
def test_sigint_mid_solve_is_raised_when_the_call_returns_and_leaves_cadical_whole():
    """A real CaDiCaL call on a hard formula (pigeonhole 10 into 9), SIGINT 0.2 s into it: KeyboardInterrupt
    once the call ends, and the solver still takes clauses and answers. (python-sat's own handler longjmps
    out of the call instead, and the next clause added, as the engine's ``finally`` adds one, aborts the
    process: "solver in invalid state", exit 134.)"""
    proc = subprocess.Popen([sys.executable, "-c", SOLVE, "40000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "solving"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and out.startswith("whole None"), (proc.returncode, out, err)
    assert "invalid state" not in err


# -- stopping the command line ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def state(tmp_path_factory) -> Path:
    """The small state, with the reference runs of ``audit run`` and ``audit protect`` never stopped."""
    folder = write_state(tmp_path_factory.mktemp("state"))
    for command in ("run", "protect"):
        assert cli([command, *_inputs(folder), "-o", str(folder / f"ref-{command}"), "--quiet"]) in (0, 1)
    return folder


def write_state(folder: Path, tracts: int = 0) -> Path:
    """8 blocks of 3 persons (categorical columns, one count table: a fraction of a second a block); with
    ``tracts``, that many tracts of 4 blocks each, and a tract table."""
    schema = {"unit": "person", "geography": ["tract", "block"] if tracts else ["block"], "columns": {
        "sex": {"type": "categorical", "values": {"F": "Female", "M": "Male"}},
        "race": {"type": "categorical", "values": {"B": "Black", "W": "White"}},
        "marital": {"type": "categorical", "values": {"S": "Single", "M": "Married"}},
        "age": {"type": "categorical", "values": {"child": "Child", "adult": "Adult", "senior": "Senior"}}}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    cells = [{"id": "1A", "label": "Total", "where": {}}, {"id": "2A", "label": "Female", "where": {"sex": ["F"]}},
             {"id": "2B", "label": "Black", "where": {"race": ["B"]}},
             {"id": "2C", "label": "Single", "where": {"marital": ["S"]}},
             {"id": "2D", "label": "Adults", "where": {"age": ["adult"]}}]
    tables = [{"id": "T1", "title": "Persons", "geography": "block", "stats": ["count"], "cells": cells}]
    if tracts:
        tables.append({"id": "R1", "title": "Tract persons", "geography": "tract", "stats": ["count"],
                       "cells": [cells[0], {"id": "2E", "label": "Seniors", "where": {"age": ["senior"]}}]})
    (folder / "tables.yaml").write_text(yaml.safe_dump({"tables": tables}))
    blocks = [("", b) for b in range(1, BLOCKS + 1)] if not tracts else [
        (f"{t:02d},", t * 5 + b) for t in range(1, tracts + 1) for b in range(1, 5)]
    lines = [("tract," if tracts else "") + "block,sex,race,marital,age"] + [
        f"{tract}{b:04d}," + ",".join(PEOPLE[(b + i) % len(PEOPLE)]) for tract, b in blocks for i in range(3)]
    (folder / "data.csv").write_text("\n".join(lines) + "\n")
    return folder


def _inputs(folder: Path) -> list[str]:
    return [str(folder / "data.csv"), "-s", str(folder / "schema.yaml"), "-t", str(folder / "tables.yaml")]


def _start(args: list[str]) -> subprocess.Popen:
    """The command line in a subprocess, with Ctrl-C handled as at a terminal (a background job ignores it)."""
    return subprocess.Popen([sys.executable, "-m", "audit", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _parts_written(out: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (out / "parts").glob("part-*.jsonl")) if out.exists() else 0


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (its pool's workers, the resource tracker)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _alive(pids: set[int]) -> set[int]:
    deadline = time.monotonic() + 10
    while True:
        alive = {p for p in pids if Path(f"/proc/{p}").exists()
                 and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _stop_after(proc: subprocess.Popen, sig: int, ready, timeout: float = 120) -> tuple[int, str, set[int]]:
    """Send ``sig`` once ``ready()`` holds: the exit code, the stderr and the child processes it had."""
    deadline = time.monotonic() + timeout
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "finished before it could be stopped: " + proc.stderr.read()
    children = _children(proc.pid)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err, children


def _units(doc: dict) -> list:
    return [(u["geo"], u["status"], u["summary"]) for u in doc["units"]]


@pytest.mark.signals
@pytest.mark.parametrize("sig, code, workers", [(signal.SIGINT, 130, "1"), (signal.SIGTERM, 143, "1"),
                                                (signal.SIGTERM, 143, "2")],
                         ids=["SIGINT-1-worker", "SIGTERM-1-worker", "SIGTERM-2-workers"])
def test_a_stopped_run_keeps_its_units_and_resumes_to_the_same_findings(state, tmp_path, sig, code, workers):
    """SIGINT exits 130, SIGTERM 143; either way the finished units stay in OUT/parts, no worker outlives
    the run, and --resume ends with the findings of a run never stopped."""
    out = tmp_path / "out"
    args = ["run", *_inputs(state), "-o", str(out), "--workers", workers, "--resume", "--no-report"]
    returncode, err, children = _stop_after(_start(args), sig, lambda: _parts_written(out) >= 1)
    kept = _parts_written(out)
    match = re.search(r"interrupted: (\d+) of 8 units are written to \S*parts; rerun the same command with --resume", err)
    assert returncode == code and match and "Traceback" not in err, (returncode, err)
    assert 1 <= kept < BLOCKS and int(match.group(1)) == kept and not (out / "findings.json").exists()
    assert children and not _alive(children)
    assert cli(args + ["--quiet"]) == 1
    resumed = json.loads((out / "findings.json").read_text())
    reference = json.loads((state / "ref-run" / "findings.json").read_text())
    assert _units(resumed) == _units(reference) and resumed["summary"] == reference["summary"]
    assert resumed["verdict"] == reference["verdict"] == "fail"


@pytest.mark.signals
def test_a_stopped_plain_run_says_it_kept_nothing(state, tmp_path):
    """Without --resume or --workers nothing is written as it goes: SIGTERM exits 143 and says so."""
    out = tmp_path / "out"
    proc = _start(["run", *_inputs(state), "-o", str(out)])
    returncode, err, children = _stop_after(proc, signal.SIGTERM, lambda: len(_children(proc.pid)) >= 2)
    assert returncode == 143 and err.startswith("interrupted: nothing was kept") and "Traceback" not in err, err
    assert not (out / "findings.json").exists() and not _alive(children)


@pytest.mark.signals
@pytest.mark.parametrize("sig, code, workers", [(signal.SIGINT, 130, "1"), (signal.SIGTERM, 143, "1"),
                                                (signal.SIGINT, 130, "2")],
                         ids=["SIGINT", "SIGTERM", "SIGINT-2-workers"])
def test_a_stopped_protect_keeps_its_units_and_resumes_to_the_same_pattern(state, tmp_path, sig, code, workers):
    """Stopped in its suppression search, protect keeps the units it finished in protection.partial.json
    (and nothing that could pass for a recommendation), and no worker outlives it; --resume (on as many
    workers) ends with the pattern of the uninterrupted run on one worker."""
    out = tmp_path / "out"
    args = ["protect", *_inputs(state), "-o", str(out), "--workers", workers]
    proc = _start(args)
    seen: list[str] = []
    finished = re.compile(r"^block \S+: \S+, \d+ cells$")  # a unit the pool's workers finished

    def ready() -> bool:  # one worker: two units done, the third under way; two: two units done
        seen.append(proc.stderr.readline())
        if workers == "1":
            return sum(": protecting" in line for line in seen) >= 3
        return sum(bool(finished.match(line.strip())) for line in seen) >= 2

    returncode, err, children = _stop_after(proc, sig, ready)
    err = "".join(seen) + err
    partial = json.loads((out / "protection.partial.json").read_text())
    assert returncode == code and "interrupted: " in err and "Traceback" not in err, (returncode, err)
    assert partial["interrupted"] and 2 <= len(partial["units"]) <= partial["units_total"]
    if workers == "1":  # in one process the stop lands inside the search; a pool may have finished it
        assert len(partial["units"]) < partial["units_total"]
    assert not _alive(children)
    assert not (out / "protection.json").exists() and not (out / "protected.yaml").exists()
    assert cli(args + ["--resume", "--quiet"]) == 0
    resumed = json.loads((out / "protection.json").read_text())
    reference = json.loads((state / "ref-protect" / "protection.json").read_text())
    def timeless(units: list) -> list:
        return [{k: v for k, v in u.items() if k != "seconds"} for u in units]
    assert resumed["recommendation"] == reference["recommendation"]
    assert timeless(resumed["units"]) == timeless(reference["units"])
    assert (out / "protected.yaml").read_text() == (state / "ref-protect" / "protected.yaml").read_text()
