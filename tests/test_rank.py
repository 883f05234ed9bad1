"""RAP-RANK (audit/attacks/engines/rank.py, ``audit rank``): CPU only, small sizes."""
from __future__ import annotations

import json
import subprocess
from dataclasses import replace
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from audit.problem.build import Domain, Problem
from audit.specs.query import Predicate, Statistic
from audit.release.constraints import Constraint

ROOT = Path(__file__).resolve().parents[1]
SF1 = ROOT / "samples" / "sf1"


def test_the_tool_does_not_import_torch():
    code = "import sys, audit.cli, audit.attacks.engines.rank; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_ranking_runs_without_the_exact_solvers():
    # the GPU image has torch but neither python-sat nor highspy: the bench and the attack import and run
    code = ("import sys; sys.modules['pysat'] = sys.modules['highspy'] = None; sys.path.insert(0, 'bench')\n"
            "import rank as bench\n"
            "from audit.attacks.reidentify import ranking_part  # the extract case's re-identification figures\n"
            "from audit.inputs import load_inputs\n"
            "p = load_inputs('samples/block7/data.csv', 'samples/block7/schema.yaml', 'samples/block7/tables.yaml').problems()[0]\n"
            "u = bench.RankAttack([p], options=bench.RankOptions(runs=2, steps=20, device='cpu')).evaluate().units[0]\n"
            "assert u.consistent == u.rounded and len(u.ranked) > 0\n"
            "assert not any(m.startswith(('pysat', 'highspy')) for m in sys.modules if sys.modules[m] is not None)")
    pytest.importorskip("torch")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_without_torch_the_command_says_how_to_install(monkeypatch, capsys, tmp_path):
    from audit.cli import run

    monkeypatch.setitem(sys.modules, "torch", None)          # import torch -> ImportError
    code = run(["rank", str(SF1 / "data.csv"), "-s", str(SF1 / "schema.yaml"), "-t", str(SF1 / "tables.yaml"),
                "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.endswith("pip install torch==2.13.0 && pip install 'disclosure-audit[rank]'")   # the README's CPU build
    assert not (tmp_path / "rank.json").exists()


def test_match_rate_follows_the_paper():
    from audit.attacks.engines.rank_results import match_rates, rank_rows

    ranked = rank_rows(np.array([[0], [0], [0], [1], [1], [2], [3]]))
    assert ranked == [((0,), 3), ((1,), 2), ((2,), 1), ((3,), 1)]
    truth = {(0,), (2,)}                                         # u = 2
    # k = 1: row 0 (hit) -> 1; k = 2: rows 0, 1 -> 1/2; k/u = 1.5 -> k = 3: 0, 1 and one of the tied {2, 3}
    assert match_rates(ranked, truth, 2, [0.5, 1.0, 1.5]) == [1.0, 0.5, pytest.approx((1 + 0.5) / 3)]
    # a ranking shorter than k: the missing candidates are misses
    assert match_rates([((0,), 1)], truth, 2, [1.0]) == [0.5]
    assert match_rates([], truth, 0, [1.0]) is None


pytest.importorskip("torch", reason="the rank extra (PyTorch) is not installed: pip install 'disclosure-audit[rank]'")

from audit.attacks.engines.rank import RankAttack  # noqa: E402
from audit.attacks.engines.rank_encoding import _Encoding  # noqa: E402
from audit.attacks.engines.rank_options import RankOptions  # noqa: E402
from audit.attacks.engines.rank_relaxation import relaxed_residuals  # noqa: E402


def _tiny(truth: np.ndarray, cells: str = "full", noise: float = 0.0, seed: int = 0) -> Problem:
    """sex (2) x age (3 atoms) x flag (2); 'full' publishes the whole 3-way histogram (data determined)."""
    domains = (Domain("sex", (frozenset("M"), frozenset("F")), ("M", "F")),
               Domain("age", (frozenset([0]), frozenset([1]), frozenset([2])), ("0", "1", "2"), True),
               Domain("flag", (frozenset("Y"), frozenset("N")), ("Y", "N")))
    rng = np.random.default_rng(seed)
    cons = []
    for s in range(2):
        for a in range(3):
            for f in range(2):
                pred = Predicate.of({"sex": [s], "age": [a], "flag": [f]})
                v = int(((truth[:, 0] == s) & (truth[:, 1] == a) & (truth[:, 2] == f)).sum())
                key = f"T:{s}{a}{f}:count"
                if cells == "interval" and v <= 2:
                    cons.append(Constraint(key, pred, Statistic(), Fraction(0), Fraction(2)))
                elif noise:
                    x = Fraction(v + rng.normal(0, noise)).limit_denominator(1000)
                    cons.append(Constraint(key, pred, Statistic(), x, x))
                else:
                    cons.append(Constraint(key, pred, Statistic(), Fraction(v), Fraction(v)))
    cons.append(Constraint("P:total:count", Predicate(), Statistic(), Fraction(len(truth)), Fraction(len(truth))))
    return Problem("block", ("1", str(len(truth))), domains, (len(truth), len(truth)), tuple(cons), (), truth)


TRUTH = np.array([[0, 0, 0], [0, 2, 1], [1, 1, 0], [1, 1, 0], [1, 2, 1]])


def test_answers_determine_the_data_and_rank_the_true_rows_first():
    p = _tiny(TRUTH)
    res = RankAttack([p], options=RankOptions(runs=4, steps=150, lr=0.2, device="cpu")).evaluate()
    unit = res.units[0]
    true_rows = set(map(tuple, TRUTH.tolist()))
    top = {row for row, _ in unit.ranked[:len(true_rows)]}
    assert top == true_rows
    assert unit.attack == tuple([1.0] * len(res.grid))
    assert unit.consistent >= 0.5


def test_relaxation_is_exact_on_integer_data():
    # counts, a sum, a mean interval and an edit, on the true rows and on a wrong dataset
    p = _tiny(TRUTH)
    extra = (Constraint("S:sum", Predicate.of({"sex": [1]}), Statistic("sum", "age"), Fraction(4), Fraction(4)),
             Constraint("S:mean", Predicate.of({"flag": [0]}), Statistic("mean", "age"), Fraction(65, 100),
                        Fraction(75, 100), hi_open=True),                 # ages 0, 1, 1: mean 0.7 rounded
             Constraint("S:median", Predicate(), Statistic("median", "age"), Fraction(1), Fraction(1)))
    p = Problem(p.level, p.geo, p.domains, p.n_rows, p.constraints + extra, (Predicate.of({"age": [2], "flag": [0]}),),
                p.truth)
    assert p.violations(TRUTH) == []
    for combine in ("factor", "matmul", "gather"):
        assert np.abs(relaxed_residuals(p, TRUTH, combine=combine)).max() < 1e-4
        wrong = TRUTH.copy()
        wrong[0, 1] = 2                                          # age 2 with flag Y: breaks counts, sum, edit
        r = relaxed_residuals(p, wrong, combine=combine)
        assert r.max() > 0.5 and p.violations(wrong)
    enc = _Encoding([p], {})
    assert not enc.notes and list(enc.medians) == [0]             # the median is encoded, as two counts
    assert sum(t.lo == 0.5 and t.hi == np.inf and not t.check for t in enc.terms[0]) == 2
    older = TRUTH.copy()
    older[[0, 2, 3], 1] = 2                                        # ages 2, 2, 2, 2, 2: median 2, not 1
    older[[0, 2, 3], 2] = 1                                        # (flag N: the edit still holds)
    assert "S:median" in p.violations(older)
    assert relaxed_residuals(p, older).max() > 0.4


def test_interval_bounds_tighten_to_integers():
    p = _tiny(TRUTH)
    pred = Predicate.of({"sex": [0]})
    cases = [(Constraint("a", pred, Statistic(), Fraction(3, 2), Fraction(9, 2)), (2.0, 4.0)),
             (Constraint("b", pred, Statistic(), Fraction(2), Fraction(4), lo_open=True, hi_open=True), (3.0, 3.0)),
             (Constraint("c", pred, Statistic(), Fraction(0), None), (0.0, float("inf")))]
    for c, (lo, hi) in cases:
        q = Problem(p.level, p.geo, p.domains, p.n_rows, (c,), (), p.truth)
        term = _Encoding([q], {}).terms[0][0]
        assert (term.lo, term.hi) == (lo, hi)


def test_interval_answers_are_met_by_the_rounded_data():
    truth = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 2, 1], [0, 1, 0]])
    p = _tiny(truth, cells="interval")
    assert any(not c.exact for c in p.constraints)
    unit = RankAttack([p], options=RankOptions(runs=6, steps=150, lr=0.2, device="cpu")).evaluate().units[0]
    assert unit.consistent >= 0.5                                # most runs reproduce the protected release
    assert unit.ranked[0][0] == (0, 0, 0)                        # the published count of 3 pins this row
    assert unit.attack[0] == 1.0


def test_noisy_answers_are_weighted_and_still_rank():
    p = _tiny(TRUTH, noise=0.3, seed=1)
    assert any(c.lo.denominator != 1 for c in p.constraints)
    enc = _Encoding([p], {"*": 2.0})
    assert {t.w for t in enc.terms[0]} == {0.25} and not any(t.check for t in enc.terms[0])
    res = RankAttack([p], options=RankOptions(runs=6, steps=150, lr=0.2, device="cpu"), noise={"*": 0.3}).evaluate()
    unit = res.units[0]
    assert np.isfinite(unit.loss)
    assert unit.attack[res.grid.index(0.6)] == 1.0               # the first 3 of 4 unique rows are right


def test_same_seed_same_ranking_and_batching_does_not_matter():
    ps = [_tiny(TRUTH), _tiny(np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]]))]
    ps = [Problem(p.level, (str(i), *p.geo), p.domains, p.n_rows, p.constraints, (), p.truth, ()) for i, p in enumerate(ps)]
    # projection off: these releases pin the data, so projected runs would all agree whatever the seed
    opts = RankOptions(runs=3, steps=20, lr=0.1, device="cpu", seed=7, project=False)
    a = RankAttack(ps, options=opts).evaluate()
    b = RankAttack(ps, options=opts).evaluate()
    one = RankAttack(ps[1:], options=opts).evaluate()           # unit 1 alone, in a batch of its own
    c = RankAttack(ps, options=replace(opts, seed=8)).evaluate()
    assert [u.ranked for u in a.units] == [u.ranked for u in b.units]
    assert a.units[1].ranked == one.units[0].ranked
    assert [u.ranked for u in a.units] != [u.ranked for u in c.units]


def test_long_queries_in_log_space_are_exact_on_sf1_blocks():
    # the SF1 race queries (up to 9 clauses) take the factorised form's log-space products: a residual is
    # above 0 exactly on the cells problem.violations names, on the true block and on blocks with one row changed
    from audit.commands import inputs_from

    inputs = inputs_from(SF1 / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml", False, None)
    p = next(q for q in inputs.problems(inputs.release()) if q.level == "block" and q.n_rows[1] <= 10)
    enc = _Encoding([p], {})
    keys = [t.key for t in enc.terms[0]]
    assert max(map(len, enc.query_slots)) >= 8 and not enc.notes
    rng = np.random.default_rng(0)
    for trial in range(4):
        rows = p.truth.copy()
        if trial:                                                  # one value moved to the next atom
            i, c = rng.integers(len(rows)), rng.integers(len(p.sizes))
            rows[i, c] = (rows[i, c] + 1) % p.sizes[c]
        r = relaxed_residuals(p, rows, combine="factor")
        assert {k for k, v in zip(keys, r) if v > 1e-3} == set(p.violations(rows))
        assert bool(trial) == bool(p.violations(rows))


def test_cli_writes_rank_json_on_sf1(tmp_path):
    from audit.cli import run

    out = tmp_path / "rk"
    code = run(["rank", str(SF1 / "data.csv"), "-s", str(SF1 / "schema.yaml"), "-t", str(SF1 / "tables.yaml"),
                "--runs", "2", "--steps", "25", "--init", "parent", "--device", "cpu", "--seed", "3",
                "--out", str(out), "--quiet"])
    assert code == 0
    doc = json.loads((out / "rank.json").read_text())
    pooled = doc["pooled"]
    assert {"k_over_u", "attack", "baselines"} <= set(pooled)
    n = len(pooled["k_over_u"])
    assert len(pooled["attack"]) == n
    assert set(pooled["baselines"]) == {"holdout", "tract", "county", "state"}
    unit = doc["units"][0]
    assert {"geo", "rows", "ranked", "attack", "baselines"} <= set(unit)
    row, freq = unit["ranked"][0]
    assert set(row) == {"sex", "age", "white", "black", "aian", "asian", "nhopi", "sor", "two_or_more", "hispanic"}
    assert isinstance(freq, int) and freq >= 1
    assert len(unit["attack"]) == n and all(len(v) == n for v in unit["baselines"].values() if v is not None)
    assert (out / "rank.svg").read_text().startswith("<svg")


def test_bad_options_are_usage_errors(tmp_path):
    from audit.cli import run

    args = ["rank", str(SF1 / "data.csv"), "-s", str(SF1 / "schema.yaml"), "-t", str(SF1 / "tables.yaml"),
            "--out", str(tmp_path)]
    assert run(args + ["--init", "prior"]) == 2
    assert run(args + ["--device", "tpu"]) == 2


BLOCK7 = ROOT / "samples" / "block7"


def _block7():
    from audit.inputs import load_inputs

    return load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", BLOCK7 / "tables.yaml").problems()[0]


def test_rounding_never_breaks_an_edit():
    from audit.attacks.engines.rank_rounding import breaks, edit_tables, sample_valid

    p = _block7()
    edits = edit_tables(p)
    assert edits                                                  # married persons are 15 or over
    rng = np.random.default_rng(0)
    married = p.domains[p.index("marital")].lookup()["M"]
    young = [i for i, v in enumerate(p.domains[p.index("age")].values) if v <= 14]
    for _ in range(300):                                          # softmaxes leaning hard to a married child
        probs = [rng.dirichlet(np.ones(a)) for a in p.sizes]
        probs[p.index("marital")][:] = 0.01
        probs[p.index("marital")][married] = 0.99
        probs[p.index("age")][young] += 5.0
        probs[p.index("age")] /= probs[p.index("age")].sum()
        row = sample_valid(probs, edits, rng.random(len(p.sizes)))
        assert not breaks(row[None], edits).any()
    # with projection off, every ranked row of a short run still keeps the edits
    unit = RankAttack([p], options=RankOptions(runs=8, steps=30, device="cpu", project=False)).evaluate().units[0]
    ranked = np.array([row for row, _ in unit.ranked])
    assert len(ranked) and not breaks(ranked, edits).any()


def test_runs_reproduce_the_seven_person_block():
    p = _block7()
    unit = RankAttack([p], options=RankOptions(runs=4, steps=100, device="cpu")).evaluate().units[0]
    assert unit.consistent > 0                                    # some runs reproduce every published cell
    top = np.array([row for row, _ in unit.ranked[:7]])
    assert set(map(tuple, top.tolist())) == set(map(tuple, p.truth.tolist()))   # and the block is revealed
    assert unit.to_dict()["consistent_runs"] == unit.consistent
    if unit.rounded == 0:                                         # the projection did it, and the notes say so
        assert unit.explain()[0].startswith("the rounding alone reproduced the release in no run")
    # without projection the rounding alone misses the means: the share is 0 and a note says why
    bare = RankAttack([p], options=RankOptions(runs=2, steps=30, device="cpu", project=False)).evaluate()
    doc = bare.units[0].to_dict()
    assert doc["consistent_runs"] == 0 and doc["broken"]
    assert any(n.startswith("no run's rounded dataset reproduces the release") for n in doc["notes"])


def test_a_match_rate_of_zero_is_explained():
    from audit.attacks.engines.rank_results import UnitRank, averaged_only

    truth = TRUTH
    base = _tiny(truth)
    sex = [c for c in base.constraints if c.key == "P:total:count"]
    mean = Constraint("S:mean", Predicate(), Statistic("mean", "age"), Fraction(1), Fraction(1))
    p = Problem(base.level, base.geo, base.domains, base.n_rows, tuple(sex) + (mean,), (), truth)
    assert averaged_only(p) == [("age", "mean", 3)]
    unit = UnitRank(p, (), (0.0, 0.0), {"holdout": None}, 4, 0.0, 0.5, (), 0.5)
    assert unit.explain() == ["no ranked row matches a true row exactly: age is published only as a mean, "
                              "so a row must guess its exact value among 3"]
    assert averaged_only(base) == []                              # the full histogram selects on age


def _small_sf1_blocks(tmp_path, persons: int = 3):
    """samples/sf1 cut to its first ``persons`` persons a block: units small enough for the row-by-row answers."""
    import pandas as pd
    from audit.inputs import load_inputs

    frame = pd.read_csv(SF1 / "data.csv", dtype=str, keep_default_na=False)
    frame.groupby(["tract", "block"], sort=False).head(persons).to_csv(tmp_path / "data.csv", index=False)
    problems = load_inputs(tmp_path / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml").problems()
    return [p for p in problems if p.level == "block"]


def test_small_units_batched_row_by_row_rank_as_one_unit_at_a_time(tmp_path):
    # the row-by-row answers (auto, small units batched) against the Gram form one unit per batch: same
    # rankings and losses up to float rounding; exact on integer data (residual > 0 exactly on the violations)
    blocks = _small_sf1_blocks(tmp_path)
    assert len(blocks) >= 5 and max(p.n_rows[1] for p in blocks) <= 3
    p = blocks[0]
    keys = [t.key for t in _Encoding([p], {}).terms[0]]
    rng = np.random.default_rng(1)
    for trial in range(3):
        rows = p.truth.copy()
        if trial:
            rows[rng.integers(len(rows)), rng.integers(len(p.sizes))] = 0
        r = relaxed_residuals(p, rows, combine="auto")
        assert {k for k, v in zip(keys, r) if v > 1e-3} == set(p.violations(rows))
    opts = RankOptions(runs=3, steps=30, device="cpu", init="uniform", project=False)
    blocks = blocks[:6]
    batched = RankAttack(blocks, options=opts).evaluate().units
    alone = RankAttack(blocks, options=replace(opts, combine="factor", batch_elements=1)).evaluate().units
    assert [u.ranked for u in batched] == [u.ranked for u in alone]
    two = RankAttack(blocks, options=opts, workers=2).evaluate().units     # forked workers: the same results
    assert [(u.ranked, u.baselines) for u in two] == [(u.ranked, u.baselines) for u in batched]
    assert [u.loss for u in two] == pytest.approx([u.loss for u in batched], rel=1e-4, abs=1e-5)
    assert [u.loss for u in batched] == pytest.approx([u.loss for u in alone], rel=1e-4, abs=1e-5)
