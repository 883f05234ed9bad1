"""RAP-RANK's CPU shortcuts (issue 34, release scale) against the plain computations they replace."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from audit.attacks.engines.rank_options import RUN_SCHEDULE, RankOptions  # noqa: E402
from audit.attacks.engines.rank_relaxation import _Adam, _uniform_rows  # noqa: E402
from audit.attacks.engines.rank_results import parent_rows  # noqa: E402
from audit.problem.build import Domain, Problem  # noqa: E402


def test_written_out_adam_steps_as_torch_adam_bit_for_bit():
    gen = torch.Generator().manual_seed(0)
    ours = [torch.randn(4, 3, 5, generator=gen, requires_grad=True), torch.randn(4, 3, 2, generator=gen, requires_grad=True)]
    theirs = [t.detach().clone().requires_grad_(True) for t in ours]
    mine, torch_adam = _Adam(ours, 0.75), torch.optim.Adam(theirs, lr=0.75)
    for step in range(12):
        for params in (ours, theirs):
            (params[0].sin().sum() * (step + 1) + (params[1] ** 3).sum()).backward()
        mine.step()
        torch_adam.step()
        torch_adam.zero_grad(set_to_none=True)
        assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


def _problem(level: str, geo: tuple) -> Problem:
    domains = (Domain("sex", (frozenset("M"), frozenset("F")), ("M", "F")),
               Domain("age", (frozenset("01234"), frozenset("5"), frozenset("678")), ("0-4", "5", "6-8")))
    return Problem(level, geo, domains, (3, 3), (), (), None, ())


def test_uniform_start_rows_are_generator_choice_draws():
    p = _problem("block", ("1", "a"))
    for n in (1, 4, 9):
        got = _uniform_rows(p, n, np.random.default_rng(n))
        rng = np.random.default_rng(n)          # the plain form: one Generator.choice a column, atoms by size
        plain = np.column_stack([rng.choice(len(d), size=n, p=np.array([len(a) for a in d.atoms]) / sum(map(len, d.atoms)))
                                 for d in p.domains])
        assert np.array_equal(got, plain)


def test_parent_rows_are_each_ancestors_own_rows():
    frame = pd.DataFrame({"tract": ["1", "1", "2", "2", "2"], "block": ["a", "b", "a", "c", "c"],
                          "sex": ["M", "F", "F", "M", "F"], "age": ["5", "3", "7", "6", "5"]})
    p, cache = _problem("block", ("2", "c")), {}
    got = parent_rows(frame, ("tract", "block"), p, 1, cache)
    sub = frame[frame["tract"] == "2"]           # the plain form: the ancestor's rows, then their atoms
    plain = np.column_stack([sub[d.name].map(d.lookup()).to_numpy() for d in p.domains])
    assert np.array_equal(got, plain) and got.shape == (3, 2)
    assert np.array_equal(parent_rows(frame, ("tract", "block"), _problem("block", ("1", "b")), 1, cache),
                          [[0, 1], [1, 0]])


def test_audit_run_rank_uses_the_run_schedule_and_reports_the_ranking_reidentifications(tmp_path):
    import json
    import re

    from audit.cli import run

    sf1 = Path(__file__).resolve().parents[1] / "samples" / "sf1"
    frame = pd.read_csv(sf1 / "data.csv", dtype=str, keep_default_na=False)
    blocks = frame.drop_duplicates(["tract", "block"])[["tract", "block"]].head(3)
    frame.merge(blocks).groupby(["tract", "block"]).head(2).to_csv(tmp_path / "data.csv", index=False)
    code = run(["run", str(tmp_path / "data.csv"), "-s", str(sf1 / "schema.yaml"), "-t", str(sf1 / "tables.yaml"),
                "-o", str(tmp_path / "out"), "--rank", "--quiet"])
    assert code in (0, 1)
    rank = json.loads((tmp_path / "out" / "rank.json").read_text())
    assert {k: rank["fingerprint"]["options"][k] for k in RUN_SCHEDULE} == RUN_SCHEDULE
    ranking = json.loads((tmp_path / "out" / "findings.json").read_text())["reidentification"]["ranking"]
    assert ranking["putative"]["of"] == 6 and 0 <= ranking["confirmed"]["count"] <= ranking["putative"]["count"]
    text = " ".join(re.sub(r"<[^>]+>", " ", (tmp_path / "out" / "report.html").read_text()).split())
    assert f"gives {ranking['putative']['count']} putative re-identification" in text    # the report's ranking part
