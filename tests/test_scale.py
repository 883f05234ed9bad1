"""Scale (issue 9): pool and Dask give the sequential findings; resume; bounds; coupled tract problems."""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import TRACT_SCHEMA

from audit.problem.claims import UNDECIDED, VERIFIED, candidates
from audit.findings.claimstore import ClaimStore
from audit.problem.coupled import build_coupled_problems
from audit.attacks.exact import ExactOptions, audit_unit
from audit.findings.document import run_exact
from audit.inputs import load_inputs
from audit.problem.build import build_problems
from audit.scale.parts import read_parts
from audit.scale.runner import ScaleOptions, run_scaled
from audit.specs.schedule import load_schedule
from audit.specs.schema import load_schema
from audit.data.stream import count_units, stream_chunks
from audit.release.tabulate import tabulate

SF1 = Path(__file__).resolve().parents[1] / "samples" / "sf1"
# Small and cheap: the smallest sample blocks, claims over up to 2 columns, no explanations.
OPTIONS = ExactOptions(explain="none", max_columns=2)



@pytest.fixture(scope="module")
def sequential(small, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("sequential")
    doc = run_exact(load_inputs(small, SF1 / "schema.yaml", SF1 / "tables.yaml"), OPTIONS, out=out)
    return {**doc, "_store": ClaimStore(out / "claims.csv.gz")}  # the findings' JSON parts, and the store


def _units(doc: dict) -> list[dict]:
    return [{k: v for k, v in u.items() if k not in ("seconds", "store")} for u in doc["units"]]


def _stored(doc: dict, store: ClaimStore) -> list[list[dict]]:
    """Every unit's claims in the claim store, read unit by unit from the offsets findings.json keeps."""
    return [list(store.claims(u["store"])) for u in doc["units"]]


def _same_claims(doc: dict, out: Path, sequential: dict) -> None:
    store = ClaimStore(out / "claims.csv.gz")
    assert _stored(doc, store) == _stored(sequential, sequential["_store"])
    assert list(store.claims()) == list(sequential["_store"].claims())  # the file read as one CSV


def test_chunks_give_the_same_problems_as_the_whole_frame(small, sf1_spec):
    schema, schedule = sf1_spec
    whole = load_inputs(small, SF1 / "schema.yaml", SF1 / "tables.yaml")
    expected = whole.problems()
    chunks = list(stream_chunks(small, schema, schedule, chunk_rows=5))
    assert len(chunks) >= 1 and sum(map(len, chunks)) == len(whole.frame)
    got = [p for c in chunks for p in build_problems(c, schema, schedule, tabulate(c, schema, schedule))]
    assert got == expected  # domains, constraints, rows: identical in every chunk
    assert all(np.array_equal(a.truth, b.truth) for a, b in zip(got, expected))
    assert count_units(small, schema, schedule) == {"block": len(expected)}


def test_unsorted_csv_is_refused(tmp_path, sf1_spec):
    schema, schedule = sf1_spec
    data = pd.read_csv(SF1 / "data.csv", dtype=str)
    data = data.assign(tract=np.where(np.arange(len(data)) % 2, "000001", "000002"))
    data.to_csv(tmp_path / "unsorted.csv", index=False)
    from audit.errors import AuditError

    with pytest.raises(AuditError, match="not sorted by geography"):
        list(stream_chunks(tmp_path / "unsorted.csv", schema, schedule, chunk_rows=10))


def test_in_process_stream_equals_sequential(small, sf1_spec, sequential, tmp_path):
    schema, schedule = sf1_spec
    doc = run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(chunk_rows=3), tmp_path)
    assert _units(doc) == _units(sequential)
    _same_claims(doc, tmp_path, sequential)
    assert doc["summary"] == sequential["summary"] and doc["verdict"] == sequential["verdict"]
    assert doc["inputs"]["rows"] == sequential["inputs"]["rows"]
    assert doc["scale"]["units_by_status"] == {"done": len(sequential["units"])}


def test_process_pool_equals_sequential(small, sf1_spec, sequential, tmp_path):
    schema, schedule = sf1_spec
    doc = run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(workers=2), tmp_path)
    assert _units(doc) == _units(sequential)
    _same_claims(doc, tmp_path, sequential)


def test_dask_local_cluster_equals_sequential(small, sf1_spec, sequential, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        schema, schedule = sf1_spec
        doc = run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(scheduler=cluster.scheduler_address), tmp_path)
    assert _units(doc) == _units(sequential)


def test_resume_after_an_interrupted_run(small, sf1_spec, sequential, tmp_path):
    schema, schedule = sf1_spec
    run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(), tmp_path)
    parts = tmp_path / "parts"
    lines = (parts / "part-00000.jsonl").read_text().splitlines(keepends=True)
    # interrupted: two units written, the third cut off mid-line
    (parts / "part-00000.jsonl").write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    seen = []
    doc = run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(resume=True), tmp_path,
                     on_unit=lambda u, done, total: seen.append(u["geo"]))
    assert len(seen) == len(lines) - 2  # only the units not fully written were redone
    assert _units(doc) == _units(sequential)
    _same_claims(doc, tmp_path, sequential)
    assert len({(u["level"], u["geo"]) for u in read_parts(parts)}) == len(lines)


def test_resume_refuses_other_options(small, sf1_spec, tmp_path):
    from audit.errors import AuditError

    schema, schedule = sf1_spec
    run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(), tmp_path)
    with pytest.raises(AuditError, match="cannot resume"):
        run_scaled(small, schema, schedule, ExactOptions(explain="none", max_columns=1), ScaleOptions(resume=True), tmp_path)


def test_claims_cap_keeps_counts_and_every_claim_in_the_store(small, sf1_spec, sequential, tmp_path):
    schema, schedule = sf1_spec
    doc = run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(claims_cap=3), tmp_path)
    assert doc["summary"] == sequential["summary"]
    ncols = len(doc["schema"]["columns"])
    for u, full in zip(doc["units"], sequential["units"]):
        assert u["summary"] == full["summary"]
        kinds = [[c for c in u["claims"] if c["status"] == VERIFIED and c["m"] == 1 and not c["direct"]],
                 [c for c in u["claims"] if c["status"] == VERIFIED and len(c["columns"]) == ncols],
                 [c for c in u["claims"] if c["status"] == UNDECIDED]]
        assert all(len(k) <= 3 for k in kinds) and len(kinds[0]) == min(3, u["summary"]["derived_singletons"])
        widest = max(map(int, u["summary"]["singletons_by_columns"]["derived"]), default=0)
        assert all(len(c["columns"]) == widest for c in kinds[0][:1])  # most telling first
    _same_claims(doc, tmp_path, sequential)
    store = ClaimStore(tmp_path / "claims.csv.gz")
    for u in doc["units"]:
        stored = [{k: v for k, v in c.items() if k not in ("level", "geo")} for c in store.claims(u["store"])]
        assert all(c in stored for c in u["claims"])
    parts = {u["geo"]: u for u in read_parts(tmp_path / "parts")}
    assert all(parts[u["geo"]]["claims"] == u["claims"] for u in doc["units"])


def test_units_over_the_bounds_are_undecided_and_the_run_goes_on(small, sf1_spec, tmp_path):
    """A mean cell needs row slots: a block past --max-rows is too large, every claim undecided (a
    count-only block past it is attacked in histogram space: tests/test_cellspace.py)."""
    schema, _ = sf1_spec
    tables = yaml.safe_load((SF1 / "tables.yaml").read_text())
    tables["tables"].append({"id": "M", "geography": "block", "stats": ["mean(age)"], "decimals": 1,
                             "cells": [{"id": "F", "where": {"sex": ["F"]}}]})
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(tables))
    schedule = load_schedule(tmp_path / "tables.yaml", schema)
    doc = run_scaled(small, schema, schedule, ExactOptions(explain="none", max_columns=1, max_rows=5),
                     ScaleOptions(workers=2), tmp_path)
    big = [u for u in doc["units"] if u["rows"] > 5]
    assert big and all(u["status"] == "too-large" and u["summary"]["undecided"] > 0 for u in big)
    assert all(c["status"] == "undecided" for u in big for c in u["claims"])
    assert any(u["status"] == "done" for u in doc["units"])
    assert doc["verdict"] == "fail"  # undecided is never safe


def _crash_on_nine(problem, options, prior, limits):
    """A task whose worker dies on the 9-person block (as if killed for memory)."""
    from audit.scale.worker import audit_task

    if problem.n_rows[1] == 9:
        os._exit(3)
    return audit_task(problem, options, prior, limits)


def test_a_worker_crash_is_an_error_unit_not_a_dead_run(small, sf1_spec, sequential, tmp_path):
    schema, schedule = sf1_spec
    doc = run_scaled(small, schema, schedule, OPTIONS, ScaleOptions(workers=2, task=_crash_on_nine), tmp_path)
    by_geo = {u["geo"]: u for u in doc["units"]}
    for u in _units(sequential):
        got = {k: v for k, v in by_geo[u["geo"]].items() if k not in ("seconds", "store")}
        if u["rows"] == 9:
            assert got["status"] == "error" and "died" in got["reason"]
            assert got["summary"]["undecided"] == u["summary"]["verified"] and got["summary"]["verified"] == 0
        else:
            assert got == u


def test_hard_time_limit(small, sf1_spec, tmp_path):
    schema, schedule = sf1_spec
    doc = run_scaled(small, schema, schedule, ExactOptions(explain="none"), ScaleOptions(workers=2, hard_seconds=0.01),
                     tmp_path)
    assert {u["status"] for u in doc["units"]} == {"timeout"}, [u["reason"] for u in doc["units"]]
    assert all(u["summary"]["undecided"] > 0 and u["summary"]["verified"] == 0 for u in doc["units"])


# -- coupled levels ----------------------------------------------------------------------------------------
TABLES = """
tables:
  - {id: B1, geography: block, cells: [{id: total, where: {}}, {id: male, where: {sex: [M]}}]}
  - {id: T1, geography: tract, by: [sex, age]}
"""
ROWS = [("1", "M", "c"), ("1", "F", "a"), ("1", "F", "a"), ("2", "M", "a"), ("2", "F", "s")]


def test_coupled_tract_problem_agrees_with_brute_force(tmp_path):
    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text(TABLES)
    frame = pd.DataFrame([{"tract": "000100", "block": b, "sex": s, "age": a} for b, s, a in ROWS])
    frame.to_csv(tmp_path / "data.csv", index=False)
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    schema, schedule = inputs.schema, inputs.schedule
    releases = tabulate(inputs.frame, schema, schedule)
    [problem] = build_coupled_problems(inputs.frame, schema, schedule, releases)
    assert problem.level == "tract" and problem.names[-1] == "block" and problem.n_rows == (5, 5)
    assert problem.violations(problem.truth) == []

    # brute force: every multiset of 5 persons over block x sex x age that reproduces every published value
    published = [[v.value for v in r.values] for r in releases]
    kinds = list(itertools.product(["1", "2"], ["M", "F"], ["c", "a", "s"]))
    consistent = []
    for combo in itertools.combinations_with_replacement(range(len(kinds)), len(ROWS)):
        alt = pd.DataFrame([{"tract": "000100", "block": kinds[i][0], "sex": kinds[i][1], "age": kinds[i][2]}
                            for i in combo])
        if {b for b, _, _ in (kinds[i] for i in combo)} != {"1", "2"}:
            continue  # both blocks are published, so both have persons
        if [[v.value for v in r.values] for r in tabulate(alt, schema, schedule)] == published:
            consistent.append(np.array([[problem.domains[0].lookup()[s], problem.domains[1].lookup()[a],
                                         problem.domains[2].lookup()[b]] for b, s, a in (kinds[i] for i in combo)]))
    assert len(consistent) >= 2  # the release does not pin the tract down

    result = audit_unit(problem, ExactOptions(explain="none"))
    assert result.status == "done" and not result.undecided
    truth_claims = candidates(problem.truth, sizes=problem.sizes)
    holds_everywhere = {c for c in truth_claims if all(c.count(rows) == c.m for rows in consistent)}
    assert {v.claim for v in result.verified} == holds_everywhere
    assert result.solutions == len(consistent) and result.exhausted

    # per-block problems (block tables only) verify less: everything they verify, the coupled problem verifies
    for block_problem in build_problems(inputs.frame, schema, schedule, [r for r in releases if r.level == "block"]):
        block_verified = {v.claim for v in audit_unit(block_problem, ExactOptions(explain="none")).verified}
        b = problem.domains[-1].lookup()[block_problem.geo[-1]]
        for claim in block_verified:
            lifted = [(problem.index("block"), b)]
            for c, a in claim.assignment:
                dom = block_problem.domains[c]
                col = problem.index(dom.name)
                if dom.atoms[a] == frozenset().union(*problem.domains[col].atoms):
                    continue  # "any value": no clause in the coupled problem
                [atom] = [i for i, at in enumerate(problem.domains[col].atoms) if at == dom.atoms[a]]
                lifted.append((col, atom))
            lifted = tuple(sorted(lifted))
            assert any(v.claim.assignment == lifted and v.claim.m == claim.m for v in result.verified)


def test_coupled_run_reports_tract_units_and_keeps_block_units(tmp_path):
    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text(TABLES)
    pd.DataFrame([{"tract": "000100", "block": b, "sex": s, "age": a} for b, s, a in ROWS]).to_csv(
        tmp_path / "data.csv", index=False)
    schema = load_schema(tmp_path / "schema.yaml")
    schedule = load_schedule(tmp_path / "tables.yaml", schema)
    doc = run_scaled(tmp_path / "data.csv", schema, schedule, ExactOptions(explain="none"), ScaleOptions(),
                     tmp_path / "out")
    assert [(u["level"], u["geo"]) for u in doc["units"]] == [("block", "000100/1"), ("block", "000100/2"),
                                                             ("tract", "000100")]
    tract = doc["units"][-1]
    assert tract["status"] == "done" and tract["notes"][0].startswith("coupled: 2 block units")
    # past --max-rows the tract is still coupled with its blocks, in cell space (issue 31): the same findings
    big = run_scaled(tmp_path / "data.csv", schema, schedule, ExactOptions(explain="none", max_rows=3),
                     ScaleOptions(), tmp_path / "out2")["units"][-1]
    assert big["status"] == "done" and big["notes"][0].startswith("coupled: 2 block units")
    assert (big["summary"], big["reconstructed"]) == (tract["summary"], tract["reconstructed"])


def _same_findings(tmp_path: Path, inputs, options: ExactOptions, scale: ScaleOptions) -> dict:
    """Run in this process (``audit run``) and streamed on ``scale`` (``--workers``): the same units, claims,
    summary and verdict; the in-process findings."""
    one = run_exact(inputs, options, out=tmp_path / "one")
    many = run_scaled(inputs.frame, inputs.schema, inputs.schedule, options, scale, tmp_path / "many")
    assert _units(many) == _units(one)
    assert (many["summary"], many["verdict"]) == (one["summary"], one["verdict"])
    _same_claims(many, tmp_path / "many", {**one, "_store": ClaimStore(tmp_path / "one" / "claims.csv.gz")})
    return one


@pytest.mark.parametrize("max_rows", [ExactOptions.max_rows, 3])
def test_one_process_and_workers_attack_a_tract_alike(tmp_path, max_rows):
    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text(TABLES)
    pd.DataFrame([{"tract": "000100", "block": b, "sex": s, "age": a} for b, s, a in ROWS]).to_csv(
        tmp_path / "data.csv", index=False)
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    doc = _same_findings(tmp_path, inputs, ExactOptions(explain="none", max_rows=max_rows), ScaleOptions(workers=2))
    tract = doc["units"][-1]
    # the coupled problem (past --max-rows in cell space, issue 31): its claims may name the block
    assert tract["notes"][0].startswith("coupled: 2 block units")
    assert any("block" in c["columns"] for c in tract["claims"])


def test_one_process_and_workers_agree_on_the_sample_with_tract_tables(small, sf1, tmp_path):
    from audit.data.microdata import load_microdata
    from audit.inputs import Inputs

    schema, schedules = sf1
    inputs = Inputs(schema, schedules["tract"], load_microdata(small, schema), str(small))
    doc = _same_findings(tmp_path, inputs, OPTIONS, ScaleOptions(workers=2, chunk_rows=5))
    assert doc["units"][-1]["level"] == "tract" and doc["units"][-1]["notes"][0].startswith("coupled: 3 block units")
