"""The four attacks behind one evaluator interface: evaluate(), then results() with one Risk type."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audit.attacks.base import ATTACKS, AttackResult, DifferenceAttack, ExactAttack, LinearAttack, RankingAttack, Risk
from audit.attacks.engines.linear_target import NOTEBOOK_PUBLIC, load_frame, prepare
from audit.attacks.engines.rank_options import RankOptions, torch_available
from audit.errors import InternalError
from audit.attacks.exact import ExactOptions
from audit.inputs import load_inputs

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"
FULTON = Path("/work/shared/data/cs208/FultonPUMS5reconstruction.csv")
if not FULTON.exists():
    FULTON = ROOT.parent / "shared" / "data" / "cs208" / "FultonPUMS5reconstruction.csv"


@pytest.fixture(scope="module")
def block7():
    return load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", BLOCK7 / "tables.yaml")


@pytest.mark.parametrize("bad", [dict(value=1.5), dict(value=0.5, baseline=-0.1),
                                 dict(value=0.5, ci=(0.6, 0.4), confidence=0.95), dict(value=0.5, ci=(0.4, 0.6))])
def test_risk_is_checked_when_made(bad):
    with pytest.raises(InternalError, match="this is a bug"):
        Risk(**bad)


def test_results_before_evaluate_is_a_bug(block7):
    with pytest.raises(InternalError, match="before evaluate"):
        DifferenceAttack(block7).results()
    assert set(ATTACKS) == {"exact", "rank", "linear", "difference"}


def test_exact_attack_reconstructs_block7(block7):
    attack = ExactAttack(block7, ExactOptions(explain="none"))
    result = attack.evaluate().results()
    assert attack.evaluate() is attack and isinstance(result, AttackResult) and result.attack == "exact"
    # the CACM block: one dataset reproduces the release, so the block's seven records are proved
    assert result.risk == Risk(1.0) and result.checks["full_records"] == 7
    assert result.detail["summary"]["units_reconstructed"] == 1


def test_difference_attack_singles_out_two_of_seven(block7):
    result = DifferenceAttack(block7).evaluate().results()
    # female minus Black female, and Black minus Black female: the white woman aged 24 and the Black man aged 84
    assert result.checks == {"exposures": 2, "singled_out": 2}
    assert result.risk == Risk(2 / 7)
    assert {e.revealed()["age"] for e in result.detail} == {24, 84}
    with pytest.raises(TypeError):
        result.checks["exposures"] = 0  # frozen


@pytest.mark.skipif(not FULTON.exists(), reason="cs208 Fulton extract not available")
def test_linear_attack_risk_is_its_accuracy_baseline_and_interval():
    target = prepare(load_frame(FULTON), "uscitizen", NOTEBOOK_PUBLIC, str(FULTON))
    result = LinearAttack(target, "uscitizen", seed=0).evaluate().results()
    truth = target.secret
    majority = max(np.mean(truth == v) for v in np.unique(truth))
    assert result.risk.value == np.mean(result.detail.reconstructed == truth) == 1.0
    assert result.risk.baseline == pytest.approx(majority)
    lo, hi = result.risk.ci
    assert lo < 1.0 == hi and result.risk.confidence == 0.95
    assert result.checks["exact"] and result.risk.lift == pytest.approx(1.0 - majority)


@pytest.mark.skipif(not torch_available(), reason="needs the rank extra (PyTorch)")
def test_ranking_attack_risk_is_the_pooled_curve_at_k_over_u_one(block7):
    result = RankingAttack(block7, RankOptions(runs=4, steps=60, seed=0)).evaluate().results()
    pooled = result.detail.pooled()
    at = pooled["k_over_u"].index(1.0)
    assert result.risk.value == pooled["attack"][at]
    assert result.risk.ci == tuple(pooled["attack_ci"][at])
    assert result.risk.baseline == max(c[at] for c in pooled["baselines"].values() if c)
    assert result.checks["lift"] == pytest.approx(result.risk.value - result.risk.baseline)
