"""The notebook's mitigations of the linear attack's answers: rounding, additive noise (four mechanisms),
subsampling."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .linear_queries import as_queries

MITIGATIONS = ("none", "round", "noise", "sample")
MECHANISMS = ("gaussian", "laplace", "discrete_gaussian", "discrete_laplace")


@dataclass(frozen=True)
class Mitigation:
    """What the query interface does to the exact answers: none, round (base r), noise (scale), sample (t rows)."""

    kind: str = "none"
    param: float = 0.0
    mechanism: str = "gaussian"

    def __post_init__(self):
        if self.kind not in MITIGATIONS:
            raise ValueError(f"mitigation must be one of {MITIGATIONS}, not {self.kind!r}")
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}, not {self.mechanism!r}")
        if self.kind in ("round", "sample") and self.param < 1:
            raise ValueError(f"{self.kind} needs a parameter of at least 1")
        if self.kind == "noise" and self.param < 0:
            raise ValueError("noise scale must be non-negative")

    @property
    def label(self) -> str:
        if self.kind == "none":
            return "exact"
        if self.kind == "noise":
            return f"{self.mechanism} noise scale {self.param:g}"
        return {"round": "round to base", "sample": "subsample t ="}[self.kind] + f" {self.param:g}"


def sample_noise(mechanism: str, scale: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """Seeded noise for simulation (a real release should draw with OpenDP's samplers)."""
    if scale == 0:
        return np.zeros(size)
    if mechanism == "gaussian":
        return rng.normal(0.0, scale, size)
    if mechanism == "laplace":
        return rng.laplace(0.0, scale, size)
    if mechanism == "discrete_laplace":  # P(x) ∝ exp(-|x|/scale): difference of two geometrics
        q = -math.expm1(-1.0 / scale)
        return (rng.geometric(q, size) - rng.geometric(q, size)).astype(float)
    if mechanism == "discrete_gaussian":  # P(x) ∝ exp(-x²/2σ²): Canonne–Kamath–Steinke rejection sampler
        out = np.empty(size)
        todo = np.arange(size)
        t = math.floor(scale) + 1
        q = -math.expm1(-1.0 / t)
        while len(todo):
            y = rng.geometric(q, len(todo)) - rng.geometric(q, len(todo))
            keep = rng.random(len(todo)) < np.exp(-((np.abs(y) - scale ** 2 / t) ** 2) / (2 * scale ** 2))
            out[todo[keep]] = y[keep]
            todo = todo[~keep]
        return out
    raise ValueError(f"unknown mechanism {mechanism!r}")


def answer_queries(secret: np.ndarray, masks, mitigation: Mitigation,
                   rng: np.random.Generator) -> np.ndarray:
    """The query interface: subset sums of the secret over each mask (a 0/1 array or a
    :class:`~audit.attacks.engines.linear_queries.QueryMatrix`), with the mitigation applied."""
    queries = as_queries(masks)
    exact = queries.answers(secret)
    if mitigation.kind == "round":
        return np.round(exact / mitigation.param) * mitigation.param  # numpy rounds halves to even, as the notebook
    if mitigation.kind == "noise":
        return exact + sample_noise(mitigation.mechanism, mitigation.param, len(exact), rng)
    if mitigation.kind == "sample":
        n = len(secret)
        t = min(int(mitigation.param), n)
        rows = rng.choice(n, size=t, replace=False)
        return queries.answers(secret, rows) * (n / t)
    return exact
