"""The exact engine against brute force: every dataset over tiny domains, re-tabulated.

The oracle knows nothing of atoms, encodings or constraints: a raw dataset is consistent when
tabulating it gives the published release, and a claim is verified when it holds in all of them.
"""
from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.problem.claims import REFUTED, UNDECIDED, VERIFIED, candidates
from audit.attacks.engines.sat import SatEngine
from audit.attacks.exact import ExactOptions, audit_unit
from audit.inputs import load_inputs

from _oracle import consistent_worlds, to_atoms, verified_claims


@st.composite
def cases(draw):
    """A tiny schema, schedule and block: at most 12 possible rows and 4 persons."""
    n_cols = draw(st.integers(2, 3))
    columns, sizes = {}, []
    for i in range(n_cols):
        if i == n_cols - 1 and draw(st.booleans()):
            hi = draw(st.integers(1, 3))
            columns[f"c{i}"] = {"type": "integer", "min": 0, "max": hi}
            sizes.append(hi + 1)
        else:
            k = draw(st.integers(2, 3))
            columns[f"c{i}"] = {"type": "categorical", "values": {f"v{j}": f"value {j}" for j in range(k)}}
            sizes.append(k)
    if int(np.prod(sizes)) > 12:
        columns.pop(f"c{n_cols - 1}")
        sizes.pop()
    names = list(columns)
    codes = {n: (list(range(columns[n]["max"] + 1)) if columns[n]["type"] == "integer"
                 else list(columns[n]["values"])) for n in names}
    n_rows = draw(st.integers(1, 4 if int(np.prod(sizes)) <= 8 else 3))
    rows = [{n: draw(st.sampled_from(codes[n])) for n in names} for _ in range(n_rows)]
    schema = {"unit": "person", "geography": ["block"], "columns": columns}
    if draw(st.booleans()):
        a, b = names[0], names[1]
        schema["constraints"] = [{"forbid": {a: [codes[a][0]], b: [codes[b][-1]]}}]
        rows = [r for r in rows if not (r[a] == codes[a][0] and r[b] == codes[b][-1])] or \
               [{n: codes[n][-1] for n in names}]
    tables = []
    for t in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            by = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
            tables.append({"id": f"T{t}", "by": by, "margins": draw(st.booleans())})
        else:
            cells = []
            for j in range(draw(st.integers(1, 3))):
                where = {}
                for n in draw(st.lists(st.sampled_from(names), max_size=2, unique=True)):
                    where[n] = draw(st.lists(st.sampled_from(codes[n]), min_size=1, unique=True))
                cells.append({"id": f"c{j}", "where": where})
            tables.append({"id": f"T{t}", "cells": cells})
    protection = {}
    if draw(st.booleans()):
        protection["suppress_below"] = draw(st.integers(2, 3))
    if draw(st.booleans()):
        protection["round_to"] = draw(st.integers(2, 3))
    return schema, {"tables": tables, "protection": protection}, rows


def _load(schema, tables, rows, folder: Path):
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables))
    pd.DataFrame([{"block": "b1", **r} for r in rows]).to_csv(folder / "data.csv", index=False)
    return load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml")


def oracle(inputs):
    """Every raw dataset of the same size whose tabulation equals the published release."""
    release, = inputs.release()
    return consistent_worlds(inputs.schema, inputs.schedule, release, len(inputs.frame))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_verdicts_equal_brute_force(case):
    schema, tables, rows = case
    with tempfile.TemporaryDirectory() as tmp:
        inputs = _load(schema, tables, rows, Path(tmp))
        problem, = inputs.problems()
        worlds = [to_atoms(problem, combo) for combo in oracle(inputs)]
        assert worlds, "the true dataset always reproduces its own release"
        result = audit_unit(problem, ExactOptions(explain="all", solution_cap=10_000))
        assert not result.undecided
        truth_claims = candidates(problem.truth, sizes=problem.sizes)
        expected = verified_claims(problem, worlds)
        assert {v.claim for v in result.verified} == expected
        assert result.refuted == len(truth_claims) - len(expected)
        distinct = {tuple(sorted(map(tuple, w.tolist()))) for w in worlds}
        assert (result.solutions, result.exhausted) == (len(distinct), True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_counterexamples_reproduce_release_and_explanations_are_minimal(case):
    schema, tables, rows = case
    with tempfile.TemporaryDirectory() as tmp:
        inputs = _load(schema, tables, rows, Path(tmp))
        problem, = inputs.problems()
        engine = SatEngine(problem)
        for claim in candidates(problem.truth):
            verdict = engine.verify(claim, explain="minimal")
            assert verdict.status != UNDECIDED
            if verdict.status == REFUTED:
                assert problem.violations(verdict.counterexample) == []
                assert claim.count(verdict.counterexample) != claim.m
                continue
            cells = set(verdict.cells)
            assert _implied(problem, claim, cells), (claim, cells)
            for cell in cells:
                assert not _implied(problem, claim, cells - {cell}), f"{cell} is not needed for {claim}"


def _implied(problem, claim, cells: set[str]) -> bool:
    """Brute force over atom datasets: do these cells (plus edits and the population) imply the claim?"""
    from audit.problem.build import Problem

    keep = tuple(c for c in problem.constraints if c.key.rsplit(":", 1)[0] in cells)
    sub = Problem(problem.level, problem.geo, problem.domains, problem.n_rows, keep, problem.edits)
    product = list(itertools.product(*(range(len(d)) for d in problem.domains)))
    for combo in itertools.combinations_with_replacement(product, problem.n_rows[1]):
        rows = np.array(combo, dtype=np.int64)
        if not sub.violations(rows) and claim.count(rows) != claim.m:
            return False
    return True


def test_inconsistent_cells_are_reported_not_safe(tmp_path):
    schema = {"unit": "person", "geography": ["block"],
              "columns": {"sex": {"type": "categorical", "values": {"F": "Female", "M": "Male"}}}}
    tables = {"tables": [{"id": "T", "by": ["sex"]}]}
    inputs = _load(schema, tables, [{"sex": "F"}, {"sex": "M"}], tmp_path)
    problem, = inputs.problems()
    from audit.release.constraints import Constraint
    from fractions import Fraction

    bad = [Constraint(c.key, c.predicate, c.statistic, Fraction(2), Fraction(2)) if c.key == "T:F:count" else c
           for c in problem.constraints]
    from dataclasses import replace

    from audit.errors import InconsistentRelease

    with pytest.raises(InconsistentRelease, match="T:"):
        audit_unit(replace(problem, constraints=tuple(bad)))


def test_solution_enumeration_gives_distinct_datasets(tmp_path):
    schema = {"unit": "person", "geography": ["block"],
              "columns": {"a": {"type": "categorical", "values": {"x": "x", "y": "y", "z": "z"}}}}
    # the total is published; per-value cells are suppressed (no information, but they keep x, y, z apart)
    cells = [{"id": "all", "where": {}}] + [{"id": v, "where": {"a": [v]}, "suppressed": True} for v in "xyz"]
    inputs = _load(schema, {"tables": [{"id": "T", "cells": cells}]}, [{"a": "x"}, {"a": "y"}, {"a": "y"}], tmp_path)
    problem, = inputs.problems()
    engine = SatEngine(problem)
    seen = {tuple(sorted(map(tuple, s.tolist()))) for s in engine.solutions(100)}
    assert len(seen) == 10  # multisets of 3 over 3 values: C(5, 3)
    assert engine.count_solutions(100) == (10, True)
    assert engine.count_solutions(4) == (4, False)
    # blocking clauses are retired: the engine still finds datasets afterwards
    assert engine.solve() is not None


def test_run_writes_findings_with_documented_keys(tmp_path):
    from audit.cli import run as cli

    folder = Path(__file__).parent.parent / "samples" / "households"
    code = cli([ "run", str(folder / "data.csv"), "-s", str(folder / "schema.yaml"), "-t", str(folder / "tables.yaml"),
                "-o", str(tmp_path), "--explain", "none", "--max-columns", "2", "--no-report", "--quiet"])
    import json

    doc = json.loads((tmp_path / "findings.json").read_text())
    assert code in (0, 1)
    assert doc["confidential"] is True
    unit = doc["units"][0]
    assert {"geo", "rows", "solutions", "claims", "summary", "store"} <= set(unit)
    assert {"count", "exhausted"} == set(unit["solutions"])
    claim = unit["claims"][0]
    assert {"columns", "m", "status", "direct", "cells"} <= set(claim)
    assert claim["status"] in (VERIFIED, UNDECIDED)
    assert all(isinstance(v, str) for v in claim["columns"].values())
