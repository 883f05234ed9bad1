"""Wide numeric columns (income in dollars): sums, means and medians decided through the counts of their
value classes (audit.attacks.values), against brute force and the row-slot encoding on small domains,
and on a Fulton County PUMA (samples/fulton)."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit.attacks.exact import ExactOptions, audit_unit
from audit.attacks.values import boxes, strict
from audit.errors import AuditError
from audit.problem.build import Domain, Problem
from audit.problem.claims import ClaimTable
from audit.specs.query import Predicate
from audit.specs.schema_types import MAX_INTEGER_VALUES, Column

from _oracle import _random_predicate, all_datasets, published, verified_claims

ROOT = Path(__file__).resolve().parents[1]
FULTON = ROOT / "samples" / "fulton"


def value_problem(seed: int) -> Problem:
    """Categorical columns, an integer column ``age`` (last), cells selecting on the categorical columns
    only, each publishing a count and some of sum, mean and median of ``age`` (exact, an interval, or
    suppressed), from a random truth of up to 4 rows."""
    rng = np.random.default_rng(7000 + seed)
    domains = [Domain(f"c{i}", tuple(frozenset([v]) for v in range(s)), tuple(str(v) for v in range(s)))
               for i, s in enumerate(rng.integers(2, 4, size=int(rng.integers(1, 3))))]
    start = int(rng.integers(-3, 4))
    ages = sorted(set(int(v) for v in start + np.cumsum(rng.integers(1, 4, size=int(rng.integers(2, 4)))) - 1))
    domains.append(Domain("age", tuple(frozenset([v]) for v in ages), tuple(map(str, ages)), True))
    n = int(rng.integers(1, 5))
    truth = np.column_stack([rng.integers(0, len(d), size=n) for d in domains]).astype(np.int64)
    shell = Problem("block", ("1",), tuple(domains), (n, n), ())
    cons = [c for cell in range(int(rng.integers(2, 5)))
            for c in published(rng, shell, truth, _random_predicate(rng, domains[:-1]), f"T:{cell}", True)]
    return Problem("block", ("1",), tuple(domains), (n, n), tuple(cons), (), truth)


def widened(problem: Problem) -> Problem:
    """``problem`` with ``age`` as a wide column: out of the count model, its cells kept apart."""
    keep = list(range(len(problem.domains) - 1))
    return replace(problem, domains=problem.domains[:-1], truth=problem.truth[:, keep],
                   constraints=tuple(c for c in problem.constraints if c.statistic.column != "age"),
                   values=tuple(c for c in problem.constraints if c.statistic.column == "age"))


def completed(rows: np.ndarray, problem: Problem, classes) -> np.ndarray:
    """A count dataset given the true rows' ages value class by value class (same counts per class)."""
    wide = widened(problem)
    ages = np.zeros(len(rows), dtype=np.int64)
    for box in classes:
        here, there = wide.row_mask(rows, box), wide.row_mask(wide.truth, box)
        assert here.sum() == there.sum()
        ages[here] = problem.truth[there, -1]
    return np.column_stack([rows, ages])


@pytest.mark.parametrize("seed", range(30))
def test_wide_verdicts_are_sound_against_brute_force(seed):
    """Verified through the counts: verified by the oracle and by the row-slot encoding; refuted: a claim
    neither verifies. Where the published counts fix every value class, both encodings agree exactly."""
    problem = value_problem(seed)
    truths = verified_claims(problem, all_datasets(problem))
    wide = widened(problem)
    options = ExactOptions(samples=4, explain="none")
    new, old = audit_unit(wide, options), audit_unit(problem, options)
    assert new.problem is wide and all(v.reason for v in new.undecided)
    age = len(problem.domains) - 1
    exact = {v.claim for v in old.verified if age not in v.claim.columns}  # the row-slot encoding: exact here
    assert not old.undecided and exact == {c for c in truths if age not in c.columns}
    verified, undecided = {v.claim for v in new.verified}, {v.claim for v in new.undecided}
    assert verified <= exact
    everyone = ClaimTable.of_truth(wide.truth, list(wide.sizes)).claims
    refuted = set(everyone) - verified - undecided
    assert len(refuted) == new.refuted
    assert not refuted & exact, "refuted only where some dataset reproducing the whole release differs"
    if strict(wide, boxes(wide)) is None:  # every count dataset completes: nothing is lost
        assert verified == exact and not undecided


@pytest.mark.parametrize("seed", range(30))
def test_strict_datasets_complete_to_the_release(seed):
    """Every dataset of the strict count problem, given the true values class by class, reproduces every
    published value, sums, means and medians included: why a refutation there is sound."""
    problem = value_problem(seed)
    wide = widened(problem)
    classes = boxes(wide)
    twin = strict(wide, classes) or replace(wide, values=())
    assert not twin.values
    for rows in all_datasets(twin):
        assert problem.violations(completed(rows, problem, classes)) == []


def test_a_wide_column_is_a_range_and_is_never_selected_on():
    wide = Column.integer("income", -19_999, 9_999_999)
    assert wide.wide and isinstance(wide.codes, range) and len(wide.codes) == 10_019_999
    assert not Column.integer("age", 0, MAX_INTEGER_VALUES - 1).wide
    from audit.specs.schema import infer_schema, load_schema
    schema = load_schema(FULTON / "schema.yaml")
    with pytest.raises(AuditError, match="can only be summed, averaged or its median published"):
        schema.predicate({"income": {"min": 0}}, None)
    with pytest.warns(UserWarning, match="inferring the schema"):
        inferred = infer_schema(pd.read_csv(FULTON / "data.csv", nrows=500), ["puma"])
    assert inferred.column("income").wide and not inferred.column("age").wide


def _run(tmp_path: Path, data: Path, tables: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", "run", str(data), "-s", str(FULTON / "schema.yaml"),
                           "-t", str(tables), "-o", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_a_fulton_puma_is_audited_with_income_in_dollars(tmp_path):
    """The smallest PUMA (2,983 persons) with the default options: done in histogram space, its income
    means and medians published in dollars as tabulated, nothing too large or undecided."""
    frame = pd.read_csv(FULTON / "data.csv")
    data = tmp_path / "puma1107.csv"
    frame[frame.puma == 1107].to_csv(data, index=False)
    done = _run(tmp_path, data, FULTON / "tables.yaml")
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    (unit,) = doc["units"]
    assert (unit["geo"], unit["rows"], unit["status"]) == ("1107", 2983, "done")
    assert unit["summary"]["undecided"] == 0 and unit["summary"]["verified"] > 0
    assert any("decided through the counts" in note for note in unit["notes"])


def test_fulton_income_is_published_in_dollars(tmp_path):
    """The release audited is the one published: means and medians of income in dollars, as tabulated."""
    from audit.inputs import load_inputs
    frame = pd.read_csv(FULTON / "data.csv")
    data = tmp_path / "puma1107.csv"
    frame[frame.puma == 1107].to_csv(data, index=False)
    inputs = load_inputs(data, FULTON / "schema.yaml", FULTON / "tables.yaml")
    (release,) = inputs.release()
    values = {v.key: v.value for v in release.values}
    women = frame[(frame.puma == 1107) & (frame.sex == 1) & (frame.educ >= 13)].income
    assert women.max() > MAX_INTEGER_VALUES  # dollars, not thousands
    assert values["INCOME:1,ba:mean(income)"] == round(women.mean())
    assert values["INCOME:1,ba:median(income)"] == women.median()
    (problem,) = inputs.problems()
    assert "income" not in problem.names and len(problem.values) == 30


def test_selecting_on_a_wide_column_is_one_line_exit_2(tmp_path):
    tables = tmp_path / "tables.yaml"
    tables.write_text("tables:\n  - {id: RICH, geography: puma, cells: [{id: r, where: {income: {min: 100000}}}]}\n")
    done = _run(tmp_path, FULTON / "data.csv", tables)
    assert done.returncode == 2
    assert "income" in done.stderr and "not selected on" in done.stderr and "Traceback" not in done.stderr


def test_fulton_data_is_the_cs208_file_converted(tmp_path):
    """samples/fulton/data.csv is samples/fulton/convert.py applied to the shared CS208 file."""
    source = ROOT.parent / "shared" / "data" / "cs208" / "FultonPUMS5full.csv"
    if not source.is_file():
        pytest.skip(f"shared test data not found at {source}")
    subprocess.run([sys.executable, str(FULTON / "convert.py"), str(source), str(tmp_path / "data.csv")], check=True,
                   capture_output=True, text=True, timeout=120)
    assert (tmp_path / "data.csv").read_text() == (FULTON / "data.csv").read_text()


@pytest.mark.parametrize("seed", range(30))
def test_numeric_cells_past_max_rows_are_decided_as_wide_ones(seed):
    """A unit past --max-rows whose numeric column no cell selects on is decided through its counts,
    with the verdicts of the same column declared wide (not refused as too large)."""
    problem = value_problem(seed)
    options = ExactOptions(samples=4, explain="none", max_rows=1)
    if problem.n_rows[1] <= 1:
        return
    past, wide = audit_unit(problem, options), audit_unit(widened(problem), options)
    assert past.status == "done" and "age" not in past.problem.names and past.problem.values
    assert [(v.claim, v.status) for v in past.verdicts] == [(v.claim, v.status) for v in wide.verdicts]
    assert past.refuted == wide.refuted


def test_fulton_income_in_thousands_is_decided_like_dollars(tmp_path):
    """The same PUMA with income enumerable (in thousands): past --max-rows it is not refused, and the
    counts decide it exactly as with income in dollars."""
    from audit.inputs import load_inputs
    frame = pd.read_csv(FULTON / "data.csv")
    puma = frame[frame.puma == 1107].copy()
    puma.to_csv(tmp_path / "dollars.csv", index=False)
    puma["income"] = puma.income // 1000
    puma.to_csv(tmp_path / "thousands.csv", index=False)
    schema = (FULTON / "schema.yaml").read_text().replace("min: -19999, max: 9999999", "min: -20, max: 9000")
    (tmp_path / "schema.yaml").write_text(schema)
    results = []
    for data, spec in (("dollars.csv", FULTON / "schema.yaml"), ("thousands.csv", tmp_path / "schema.yaml")):
        (problem,) = load_inputs(tmp_path / data, spec, FULTON / "tables.yaml").problems()
        results.append(audit_unit(problem, ExactOptions(explain="none")))
    assert "income" in problem.names  # in thousands: enumerated, an atom per value
    dollars, thousands = results
    assert "income" not in thousands.problem.names and len(thousands.problem.values) == 30
    assert thousands.status == dollars.status == "done"
    assert {v.claim for v in thousands.verified} == {v.claim for v in dollars.verified}
    assert thousands.refuted == dollars.refuted and not thousands.undecided


@pytest.mark.parametrize("seed", range(20))
def test_a_published_release_refutes_nothing_through_its_counts(seed):
    """With no microdata the true values are unknown, so no count dataset is known to complete: verified
    claims hold in every dataset reproducing the whole release, and nothing is refuted."""
    from audit.published import attack_unit
    problem = value_problem(seed)
    datasets = all_datasets(problem)
    result = attack_unit(replace(widened(problem), truth=None), ExactOptions(samples=4, explain="none"))
    assert result.refuted == 0
    assert all(v.claim.count(d) == v.claim.m for v in result.verified for d in datasets)


def bracket_problem(seed: int) -> Problem:
    """Categorical columns, a bracket column ``band`` binning ``age`` (last; bands kept by edits), cells
    selecting on the categorical columns and ``band`` only, each publishing a count and some of sum, mean
    and median of ``age``, from a random truth of up to 4 rows."""
    rng = np.random.default_rng(9000 + seed)
    domains = [Domain(f"c{i}", (frozenset([0]), frozenset([1])), ("0", "1")) for i in range(int(rng.integers(1, 3)))]
    start = int(rng.integers(-3, 4))
    ages = list(range(start, start + int(rng.integers(3, 5))))
    cuts = sorted(rng.choice(np.arange(1, len(ages)), size=int(rng.integers(1, min(3, len(ages)))), replace=False))
    bands = [ages[a:b] for a, b in zip([0, *cuts], [*cuts, len(ages)])]
    domains.append(Domain("band", tuple(frozenset([b]) for b in range(len(bands))), tuple(map(str, range(len(bands))))))
    domains.append(Domain("age", tuple(frozenset([v]) for v in ages), tuple(map(str, ages)), True))
    edits = tuple(Predicate.of({"band": {b}, "age": {i for i, v in enumerate(ages) if v not in band}})
                  for b, band in enumerate(bands))
    n = int(rng.integers(1, 5))
    truth = np.column_stack([rng.integers(0, len(d), size=n) for d in domains]).astype(np.int64)
    truth[:, -2] = [next(b for b, band in enumerate(bands) if ages[a] in band) for a in truth[:, -1]]
    shell = Problem("block", ("1",), tuple(domains), (n, n), (), edits)
    cons = [c for cell in range(int(rng.integers(2, 5)))
            for c in published(rng, shell, truth, _random_predicate(rng, domains[:-1]), f"T:{cell}", True)]
    return Problem("block", ("1",), tuple(domains), (n, n), tuple(cons), edits, truth)


def bracketed(problem: Problem, source: str = "age") -> Problem:
    """``problem`` with ``age`` wide and ``band`` its bracket column (computed from it: no edit needed)."""
    wide = replace(widened(problem), edits=())
    return replace(wide, domains=tuple(replace(d, source=source) if d.name == "band" else d for d in wide.domains))


@pytest.mark.parametrize("seed", range(40))
def test_bracket_verdicts_are_sound_against_brute_force(seed):
    """Income brackets of a wide column: every claim verified through the counts holds in every dataset
    (ages within their bands) reproducing the whole release; none refuted there is verified by the oracle."""
    problem = bracket_problem(seed)
    age = len(problem.domains) - 1
    datasets = all_datasets(problem)
    exact = {c for c in verified_claims(problem, datasets) if age not in c.columns}
    wide = bracketed(problem)
    result = audit_unit(wide, ExactOptions(samples=4, explain="none"))
    verified, undecided = {v.claim for v in result.verified}, {v.claim for v in result.undecided}
    assert verified <= exact
    refuted = set(ClaimTable.of_truth(wide.truth, list(wide.sizes)).claims) - verified - undecided
    assert len(refuted) == result.refuted
    assert not refuted & exact, "refuted only where some dataset reproducing the whole release differs"
    cells = {c.key: c for c in problem.constraints}
    for key, iv in (result.intervals or {}).items():  # outer bounds; exact where certified
        cell = cells.get(key) or cells[f"{key}:{iv.stat or 'count'}"]
        seen = [problem.value(d, cell) for d in datasets]
        assert iv.lo <= min(seen) and max(seen) <= iv.hi
        assert not iv.certified or (iv.lo, iv.hi) == (min(seen), max(seen))


@pytest.mark.parametrize("seed", range(40))
def test_bracket_value_classes_complete_to_the_release(seed):
    """Split band by band, every value class hands its rows true ages within their band: each dataset of the
    strict count problem so completed keeps every edit (band = bin of age) and reproduces the release."""
    problem = bracket_problem(seed)
    wide = bracketed(problem)
    classes = boxes(wide)
    twin = strict(wide, classes) or replace(wide, values=())
    for rows in all_datasets(twin):
        assert problem.violations(banded(rows, problem, wide, classes)) == []


def banded(rows: np.ndarray, problem: Problem, wide: Problem, classes) -> np.ndarray:
    """A count dataset completed: with no published ages, each row the least age of its band; else
    :func:`completed` (the true ages value class by value class)."""
    if wide.values:
        return completed(rows, problem, classes)
    band, age = len(problem.domains) - 2, problem.domains[-1]
    def allowed(b: int, i: int) -> bool:
        return not any(problem.row_mask(np.array([[*[0] * band, b, i]]), e).any() for e in problem.edits)

    least = [min(i for i in range(len(age)) if allowed(b, i)) for b in range(problem.sizes[band])]
    return np.column_stack([rows, np.array([least[b] for b in rows[:, band]], dtype=np.int64).reshape(len(rows))])


def test_value_classes_must_split_the_brackets():
    """Without the band-by-band split some strict dataset takes ages outside its rows' bands: the split is
    what makes the refutations sound (a guard that the bracket's source reaches the value classes)."""
    broken = 0
    for seed in range(40):
        problem = bracket_problem(seed)
        wide = bracketed(problem, source="")
        classes = boxes(wide)
        twin = strict(wide, classes) or replace(wide, values=())
        broken += any(problem.violations(banded(rows, problem, wide, classes)) for rows in all_datasets(twin))
    assert broken


BRACKETS = """\
  incgrp:
    from: income
    bins:
      - {code: "<10k", max: 9999, label: "Under $10,000"}
      - {code: 10k-50k, min: 10000, max: 49999}
      - {code: 50k+, min: 50000}
  incgrp2: {from: incgrp, map: {low: ["<10k"], high: [10k-50k, 50k+]}}
"""
BRACKET_TABLES = """\
protection: {suppress_below: 5, complementary: true}
tables:
  - {id: SEXAGE, geography: puma, by: [sex, agegrp]}
  - {id: INCBR, geography: puma, by: [incgrp, sex, agegrp]}
  - {id: INCOME, geography: puma, by: [incgrp, sex], stats: [count, mean(income), median(income)], decimals: 0}
  - {id: EMPBR, geography: puma, by: [employed, incgrp2], universe: {incgrp: [10k-50k, 50k+]}}
"""


def _brackets(tmp_path: Path) -> tuple[Path, Path, Path, pd.DataFrame]:
    """PUMA 1107, the Fulton schema with income brackets (and a map recode grouping them), and tables of them."""
    frame = pd.read_csv(FULTON / "data.csv")
    puma = frame[frame.puma == 1107]
    puma.to_csv(tmp_path / "puma1107.csv", index=False)
    (tmp_path / "schema.yaml").write_text((FULTON / "schema.yaml").read_text() + BRACKETS)
    (tmp_path / "tables.yaml").write_text(BRACKET_TABLES)
    return tmp_path / "puma1107.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml", puma


@pytest.mark.filterwarnings("ignore:.*no table publishes")
def test_income_brackets_are_tabulated_from_dollars(tmp_path):
    """A bins recode of a wide column is a categorical column of the problem, computed from the dollars."""
    from audit.inputs import load_inputs
    data, schema, tables, puma = _brackets(tmp_path)
    inputs = load_inputs(data, schema, tables)
    (release,) = inputs.release()
    values = {v.key: v.value for v in release.values}
    rich = puma[puma.income >= 50_000]
    assert values["INCOME:50k+,1:count"] == (rich.sex == 1).sum()
    assert values["INCOME:50k+,1:mean(income)"] == round(rich[rich.sex == 1].income.mean())
    assert values["INCOME:<10k,*:median(income)"] == puma[puma.income < 10_000].income.median()
    assert values["EMPBR:1,high:count"] == ((puma.employed == 1) & (puma.income >= 10_000)).sum()
    (problem,) = inputs.problems()
    band = problem.domains[problem.index("incgrp")]
    assert "income" not in problem.names and band.source == "income" and len(band) == 3
    assert any("incgrp" in b.columns for b in boxes(problem))


def test_a_fulton_puma_publishes_income_brackets(tmp_path):
    """`audit run` on a PUMA with income-bracket tables (counts, and means and medians in dollars by bracket):
    done, nothing undecided, claims naming the brackets."""
    data, schema, tables, _ = _brackets(tmp_path)
    done = subprocess.run([sys.executable, "-m", "audit", "run", str(data), "-s", str(schema), "-t", str(tables),
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr
    (unit,) = json.loads((tmp_path / "out" / "findings.json").read_text())["units"]
    assert (unit["rows"], unit["status"], unit["summary"]["undecided"]) == (2983, "done", 0)
    claims = pd.read_csv(tmp_path / "out" / "claims.csv.gz", dtype=str)
    assert claims.incgrp.isin(["<10k", "10k-50k", "50k+"]).any() and claims.income.isna().all()


@pytest.mark.parametrize("bins, message", [
    ("[{code: a, max: 9999}, {code: b, min: 10001}]", "bin 'b' starts at 10,001, not 10,000: the bins of a wide "
     "column must cover -19,999..9,999,999 in ascending order, without gaps or overlaps"),
    ("[{code: a, max: 9999}, {code: b, min: 10000, max: 50000}]", "the last bin ends at 50,000, not at the end of "
     "'income' (9,999,999): every row must fall in a bin"),
    ("[{code: a, max: 9999}, {code: a, min: 10000}]", "code 'a' is listed twice"),
])
def test_income_brackets_must_cover_the_column(tmp_path, bins, message):
    from audit.specs.schema import load_schema
    (tmp_path / "schema.yaml").write_text((FULTON / "schema.yaml").read_text() + f"  incgrp: {{from: income, bins: {bins}}}\n")
    with pytest.raises(AuditError) as err:
        load_schema(tmp_path / "schema.yaml")
    assert message in err.value.message


def test_one_bins_recode_per_wide_column(tmp_path):
    from audit.specs.schema import load_schema
    (tmp_path / "schema.yaml").write_text((FULTON / "schema.yaml").read_text() + BRACKETS
                                          + "  inc2: {from: income, bins: [{code: a, max: 0}, {code: b, min: 1}]}\n")
    with pytest.raises(AuditError, match="'incgrp' already bins the wide column 'income'") as err:
        load_schema(tmp_path / "schema.yaml")
    assert "map recode from 'incgrp'" in err.value.fix
