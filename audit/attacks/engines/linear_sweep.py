"""The linear attack swept over each mitigation's parameter: accuracy, error and privacy loss per point, and
their plots."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...outputs.svg import line_chart
from ...errors import AuditError
from .linear import LinearReconstruction
from .linear_mitigations import Mitigation
from .linear_privacy import DP_HINT, opendp_available, privacy_loss
from .linear_target import NOTEBOOK_PUBLIC, Target, prepare


@dataclass(frozen=True)
class SweepPoint:
    """Mean over repeated seeded trials at one mitigation parameter."""

    mitigation: str
    param: float
    trials: int
    accuracy: float
    accuracy_sd: float
    accuracy_min: float
    accuracy_max: float
    rmse: float
    epsilon: float | None = None
    delta: float | None = None
    epsilon_per_query: float | None = None

    def to_dict(self) -> dict:
        out = dict(self.__dict__)
        for key in ("epsilon", "epsilon_per_query"):
            if out[key] is not None and math.isinf(out[key]):
                out[key] = "inf"
        return out


@dataclass(frozen=True)
class Sweep:
    points: tuple[SweepPoint, ...]
    baseline: float
    n_rows: int
    n_queries: int
    method: str
    mechanism: str
    delta: float
    privacy_note: str
    secret: str

    def curve(self, mitigation: str, y: str = "accuracy", x: str = "param") -> list[tuple[float, float]]:
        return [(getattr(p, x), getattr(p, y)) for p in self.points
                if p.mitigation == mitigation and getattr(p, x) is not None and getattr(p, y) is not None]

    @property
    def mitigations(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.mitigation for p in self.points))

    def to_dict(self) -> dict:
        return {"baseline": self.baseline, "n_rows": self.n_rows, "n_queries": self.n_queries, "method": self.method,
                "mechanism": self.mechanism, "delta": self.delta, "privacy": self.privacy_note,
                "points": [p.to_dict() for p in self.points]}

    def plots(self) -> dict[str, str]:
        """Inline SVG line charts: accuracy and RMSE by parameter, accuracy against RMSE, epsilon by scale."""
        names = self.mitigations
        base = {f"baseline {self.baseline:.2f}": self.baseline}
        out = {
            "accuracy": line_chart({m: self.curve(m) for m in names}, title=f"Reconstruction of {self.secret}",
                                   xlabel="parameter (round r, noise scale, sample t)",
                                   ylabel="reconstruction accuracy", hlines=base, ylim=(0, 1)),
            "rmse": line_chart({m: self.curve(m, "rmse") for m in names}, title="Answer error",
                               xlabel="parameter", ylabel="answer RMSE"),
            "tradeoff": line_chart({m: self.curve(m, "accuracy", "rmse") for m in names},
                                   title="Accuracy against answer error", xlabel="answer RMSE",
                                   ylabel="reconstruction accuracy", hlines=base, ylim=(0, 1)),
        }
        eps = [(p.param, p.epsilon) for p in self.points
               if p.mitigation == "noise" and p.epsilon is not None and math.isfinite(p.epsilon)]
        if eps:
            out["epsilon"] = line_chart({f"{self.mechanism}, all {self.n_queries} answers": eps,
                                         "one answer": [(p.param, p.epsilon_per_query) for p in self.points
                                                        if p.mitigation == "noise" and p.epsilon_per_query is not None
                                                        and math.isfinite(p.epsilon_per_query)]},
                                        title=f"Privacy loss (delta = {self.delta:g})" if "gaussian" in self.mechanism
                                        else "Privacy loss (pure DP)", xlabel="noise scale", ylabel="epsilon")
        return out


def default_params(n: int) -> list[int]:
    """The notebook's grid: 1, 11, 21, ... up to n."""
    return list(range(1, n + 1, 10))


def mitigation_sweep(data, secret: str | None = None, public: Sequence[str] = NOTEBOOK_PUBLIC, *,
                     params: Sequence[float] | None = None, mitigations: Sequence[str] = ("round", "noise", "sample"),
                     trials: int = 10, seed: int = 0, n_queries: int | None = None, method: str = "lstsq",
                     mechanism: str = "gaussian", delta: float = 1e-6, source: str = "<data>") -> Sweep:
    """Reconstruction accuracy and answer RMSE over a parameter grid, ``trials`` fresh seeded query sets each.

    Every trial draws new random queries (as the notebook's ``evaluate_performance``); trial ``i`` of
    parameter ``j`` of mitigation ``m`` is seeded by ``(seed, m, j, i)``. RMSE is against the exact
    answers to the same queries. Noise points carry OpenDP's epsilon for ``mechanism`` (or None).
    """
    target = data if isinstance(data, Target) else prepare(data, secret, public, source)
    if trials < 1:
        raise AuditError("trials must be at least 1", "--trials", "e.g. --trials 10")
    grid = list(params) if params is not None else default_params(target.n)
    k = n_queries or 2 * target.n
    points, note = [], ""
    for mi, kind in enumerate(mitigations):
        for pj, param in enumerate(grid):
            if kind == "sample" and param > target.n:
                continue
            mitigation = Mitigation(kind, float(param), mechanism)
            accs, rmses = [], []
            for trial in range(trials):
                run = LinearReconstruction(target, secret or target.secret_name, n_queries=k, method=method,
                                           mitigation=mitigation, seed=_seed(seed, mi, pj, trial)).evaluate()
                accs.append(run.accuracy)
                rmses.append(run.answer_rmse)
            eps = dlt = eps1 = None
            if kind == "noise":
                loss = privacy_loss(mechanism, float(param), k, delta)
                eps, dlt, eps1, note = loss.epsilon, loss.delta, loss.epsilon_per_query, loss.note
            points.append(SweepPoint(kind, float(param), trials, float(np.mean(accs)), float(np.std(accs)),
                                     float(np.min(accs)), float(np.max(accs)), float(np.mean(rmses)), eps, dlt, eps1))
    if not note:
        note = ("rounding and subsampling give no differential-privacy guarantee" if opendp_available()
                else f"epsilon unavailable: OpenDP is not installed ({DP_HINT})")
    return Sweep(tuple(points), target.baseline, target.n, k, method, mechanism, delta, note, target.secret_name)


def _seed(seed: int, *parts: int) -> int:
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0])
