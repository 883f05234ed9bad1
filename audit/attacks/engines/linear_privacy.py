"""The privacy loss (epsilon, delta) of the linear attack's noise mechanisms, asked of OpenDP (the ``dp`` extra)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .linear_mitigations import MECHANISMS

DP_HINT = "pip install 'disclosure-audit[dp]'"


@dataclass(frozen=True)
class PrivacyLoss:
    """The guarantee of a noise mechanism on ``queries`` subset sums (one person changes each by ≤ 1).

    ``epsilon``/``delta`` cover all the answers together (L2 sensitivity √k for Gaussian, L1 k for
    Laplace); ``epsilon_per_query`` is one answer alone (the notebook's figure). ``None`` when OpenDP
    is missing or the mitigation gives no guarantee; ``note`` says why.
    """

    mechanism: str
    scale: float
    queries: int
    epsilon: float | None
    delta: float | None
    epsilon_per_query: float | None
    rho: float | None = None
    note: str = ""

    @property
    def available(self) -> bool:
        return self.epsilon is not None


def opendp_available() -> bool:
    try:
        import opendp.prelude  # noqa: F401
    except ImportError:
        return False
    return True


def privacy_loss(mechanism: str, scale: float, queries: int = 1, delta: float = 1e-6) -> PrivacyLoss:
    """Ask OpenDP for (epsilon, delta) of ``mechanism`` at ``scale`` over ``queries`` counting answers."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}")
    if not opendp_available():
        return PrivacyLoss(mechanism, scale, queries, None, None, None,
                           note=f"epsilon unavailable: OpenDP is not installed ({DP_HINT})")
    if scale <= 0:
        return PrivacyLoss(mechanism, scale, queries, math.inf, 0.0, math.inf, note="no noise: no guarantee")
    return _privacy_loss(mechanism, float(scale), int(queries), float(delta))


@lru_cache(maxsize=4096)
def _privacy_loss(mechanism: str, scale: float, queries: int, delta: float) -> PrivacyLoss:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    discrete = mechanism.startswith("discrete_")
    T = int if discrete else float
    atom = dp.atom_domain(T=int) if discrete else dp.atom_domain(T=float, nan=False)
    domain = dp.vector_domain(atom)
    if mechanism.endswith("gaussian"):
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=T), scale)
        approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(meas), delta)
        # OpenDP's integer L2 metric takes an integer bound: √k is rounded up for the discrete Gaussian
        d_all = math.ceil(math.sqrt(queries)) if discrete else math.sqrt(queries)
        d_one = 1 if discrete else 1.0
        eps, dlt = approx.map(d_all)
        eps1, _ = approx.map(d_one)
        note = "zCDP -> (epsilon, delta) by OpenDP" + ("; L2 sensitivity rounded up to an integer" if discrete else "")
        return PrivacyLoss(mechanism, scale, queries, float(eps), float(dlt), float(eps1), float(meas.map(d_all)), note)
    meas = dp.m.make_laplace(domain, dp.l1_distance(T=T), scale)
    d_all, d_one = (queries, 1) if discrete else (float(queries), 1.0)
    return PrivacyLoss(mechanism, scale, queries, float(meas.map(d_all)), 0.0, float(meas.map(d_one)),
                       note="pure DP by OpenDP")
