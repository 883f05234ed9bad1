"""Interval certificates re-checked without the solvers: every certificate written for real releases
with suppressed cells checks out, tampered ones fail, and ``audit check-certificates``' exit codes."""
from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from _oracle import all_datasets, random_problem

from audit.attacks.certificates import check_unit, unit_certificates
from audit.attacks.exact import ExactOptions, make_engine
from audit.attacks.implied import LinearProof
from audit.attacks.intervals import feasibility_intervals
from audit.attacks.joint_problems import level_problems
from audit.cli import run
from audit.findings.certfile import FILE
from audit.inputs import inputs_from

ROOT = Path(__file__).resolve().parents[1]
HOUSEHOLDS, BLOCK7 = ROOT / "samples" / "households", ROOT / "samples" / "block7"


def _ends(doc: dict):
    """(key, side, end) of every exact end."""
    return [(k, side, v[side]) for k, v in doc["intervals"].items() for side in ("lo", "hi") if v[side] is not None]


@pytest.fixture(scope="module")
def household(tmp_path_factory) -> dict:
    """Block 1009 of the household sample under a rule of three with complementary suppression: its
    counts' ends need dual certificates, some of them closed branch-and-bound trees."""
    folder = tmp_path_factory.mktemp("households")
    tables = folder / "tables.yaml"
    tables.write_text("protection: {suppress_below: 3, complementary: true}\n" + (HOUSEHOLDS / "tables.yaml").read_text())
    inputs = inputs_from(HOUSEHOLDS / "data.csv", HOUSEHOLDS / "schema.yaml", tables, False, None)
    releases = [r for r in inputs.release() if r.geo[-1] == "1009"]
    problem, = level_problems(inputs.frame, inputs.schema, inputs.schedule, releases, {}, 10 ** 6)
    intervals = feasibility_intervals(problem, LinearProof(problem), lambda: make_engine(problem, ExactOptions()))
    return unit_certificates(problem, intervals)


def test_every_certificate_of_a_real_release_rechecks(household):
    result = check_unit(household)
    assert result.failures == {}
    assert len(result.checked) + len(result.solver) == len(_ends(household)) > 100
    assert any(e["by"] == "dual" and len(e["certificates"]) > 1 for _, _, e in _ends(household))  # trees too


@pytest.mark.parametrize("seed", range(12))
def test_certificates_of_random_problems_recheck(seed):
    """Random releases (counts, sums, means, medians; exact, ranges, suppressed): every end is exact,
    is the brute-force extreme, and its certificate re-checks."""
    rng = np.random.default_rng(7000 + seed)
    problem = random_problem(rng, max_rows=4, numeric=seed % 2 == 0, n_cells=int(rng.integers(2, 6)))
    intervals = feasibility_intervals(problem, LinearProof(problem), lambda: make_engine(problem, ExactOptions()))
    doc = unit_certificates(problem, intervals)
    if doc is None:
        assert not intervals
        return
    result = check_unit(doc)
    assert result.failures == {} and len(result.checked) + len(result.solver) == 2 * len(intervals)
    datasets = all_datasets(problem)
    cells = list(problem.constraints) + list(problem.hidden)
    for key, entry in doc["intervals"].items():
        values = [v for v in (problem.value(rows, cells[entry["cell"]]) for rows in datasets) if v is not None]
        assert (intervals[key].lo, intervals[key].hi) == (min(values), max(values))


def test_a_changed_witness_count_fails(household):
    doc = copy.deepcopy(household)
    key, side, end = _ends(doc)[0]
    doc["datasets"][end["dataset"]][0][-1] += 1  # one more person in the witness: the population breaks
    assert "does not reproduce the release" in check_unit(doc).failures[f"{key}:{side}"]


def test_changed_duals_fail(household):
    """A multiplier raised far (rows over-counted without bound), multipliers dropped from an end that
    needs them, bounds that are not the release's, a box of a tree taken away: each fails."""
    dual = [(k, s, e) for k, s, e in _ends(household) if e["by"] == "dual"]
    root = next((k, s, e) for k, s, e in dual if len(e["certificates"]) == 1 and s == "hi")
    tree = next((k, s, e) for k, s, e in dual if len(e["certificates"]) > 1)

    def tampered(where, change) -> str:
        doc = copy.deepcopy(household)
        key, side, _ = where
        change(doc["intervals"][key][side]["certificates"])
        return check_unit(doc).failures.get(f"{key}:{side}", "")

    def raise_first(certs):
        certs[0]["multipliers"][0][1] += 10 ** 6

    def drop(certs):
        certs[0]["multipliers"] = []

    def other_bounds(certs):
        certs[0]["multipliers"][0][2] += 1

    assert "over-count" in tampered(root, raise_first)
    assert "over-count" in tampered(root, drop)
    assert "not the release's" in tampered(root, other_bounds)
    assert "do not cover" in tampered(tree, lambda certs: certs.pop())


def _write(path: Path, lines: list) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(x) + "\n" for x in lines)


def test_check_certificates_exit_codes(tmp_path, capsys):
    out = tmp_path / "run"
    assert run(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml"),
                "-o", str(out), "--no-report", "--quiet"]) == 1  # the block fails the rules; its intervals are exact
    assert json.loads((out / "findings.json").read_text())["outputs"]["interval_certificates"].endswith(FILE)
    assert run(["check-certificates", str(out)]) == 0
    assert " 0 failing" in capsys.readouterr().out
    parts = tmp_path / "parts"  # a run at scale carries the certificates through its parts to the same file
    assert run(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(BLOCK7 / "tables.yaml"),
                "-o", str(parts), "--no-report", "--quiet", "--workers", "2"]) == 1
    assert gzip.decompress((parts / FILE).read_bytes()) == gzip.decompress((out / FILE).read_bytes())
    assert json.loads((parts / "findings.json").read_text())["certificates"] == \
        json.loads((out / "findings.json").read_text())["certificates"]  # the same binding, sealed at the merge
    assert run(["check-certificates", str(parts)]) == 0
    with gzip.open(out / FILE, "rt", encoding="utf-8") as fh:
        header, unit, seal = [json.loads(line) for line in fh]
    key, side, end = _ends(unit)[0]
    end["value"] += 1  # an end no dataset reaches
    _write(out / FILE, [header, unit, seal])
    assert run(["check-certificates", str(out / FILE)]) == 1
    assert f"FAIL block {unit['geo']} {key}:{side}" in capsys.readouterr().out
    (out / FILE).write_bytes(b"not gzip")
    assert run(["check-certificates", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    _write(out / FILE, [{"format": 99}])
    assert run(["check-certificates", str(out)]) == 2
    assert run(["check-certificates", str(tmp_path / "nowhere")]) == 2
    assert str(tmp_path / "nowhere") in capsys.readouterr().err


@pytest.mark.parametrize("sizes", [(3,), (4, 5, 6), (2, 90, 3, 2, 2, 2, 2, 2, 7), (10**7, 10**7, 10**7)])
def test_a_datasets_histogram_is_np_unique_of_its_rows(sizes):
    """The witness datasets are written as distinct rows and counts: the mixed-radix shortcut gives exactly
    np.unique(axis=0)'s rows, order and counts (and falls back to it where the radix would overflow)."""
    from audit.problem.claims import distinct_rows

    rng = np.random.default_rng(len(sizes))
    rows = np.column_stack([rng.integers(0, min(s, 5), 400) for s in sizes]).astype(np.int64)
    for got, want in zip(distinct_rows(rows, sizes), np.unique(rows, axis=0, return_counts=True)):
        assert got.dtype == want.dtype and np.array_equal(got, want)
