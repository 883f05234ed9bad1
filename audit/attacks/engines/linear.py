"""Linear reconstruction: a secret column from subset-sum answers (Dinur–Nissim; the OpenDP notebook).

The attacker knows every row's public identifiers ``z_j`` and receives answers ``a_i ≈ F_i · s`` to
subset-sum queries over the secret column ``s``, where ``F_i`` is a 0/1 mask over rows. Two solvers:

* **least squares** (the notebook): ``argmin |F s - a|²``, then rounded;
* **LP** (lecture notes §2.4, eq. 23): ``min_{s ∈ [lo, hi]^n} max_i |F_i · s - a_i|``, written as a
  linear program with one extra variable ``e`` (minimise ``e`` subject to ``-e ≤ F_i·s - a_i ≤ e``),
  solved by HiGHS, then rounded.

Queries are the notebook's random hashed predicates (``(z · d) mod 691 mod 2`` for a random vector
``d``; seeded here) or any 0/1 mask matrix, e.g. the cells of a table schedule
(:func:`~audit.attacks.engines.linear_target.cell_masks`). Mitigations applied to the answers follow
the notebook (:mod:`~audit.attacks.engines.linear_mitigations`): rounding to base ``r``, additive
noise of scale ``σ`` and subsampling ``t`` rows (scaled by ``n/t``).
:func:`~audit.attacks.engines.linear_privacy.privacy_loss` asks OpenDP (the ``dp`` extra) for the
epsilon/delta of the noise mechanisms instead of hand-written formulas.

The evaluator follows anonymeter's shape: ``LinearReconstruction(...).evaluate()`` returns a frozen
:class:`LinearResults` with the accuracy, the majority-class baseline and a Wilson interval.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Sequence

import numpy as np
import pandas as pd

from ...errors import AuditError
from .linear_mitigations import Mitigation, answer_queries
from .linear_target import NOTEBOOK_PUBLIC, Target, hashed_masks, prepare, random_predicates
from ..highs import highs

METHODS = ("lstsq", "lp")


# -------------------------------------------------------------------------------------- solvers
def solve_lstsq(masks: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """Least-squares estimate of the secret (real-valued)."""
    return np.linalg.lstsq(masks.astype(float), answers, rcond=None)[0]


def solve_lp(masks: np.ndarray, answers: np.ndarray, lo: float = 0.0, hi: float = 1.0,
             solver: str = "choose") -> tuple[np.ndarray, float]:
    """``min_{s ∈ [lo,hi]^n} max_i |F_i · s - a_i|`` with HiGHS; returns (s, the optimal max error)."""
    import highspy

    k, n = masks.shape
    inf = highspy.kHighsInf
    stacked = np.vstack([masks, masks]).astype(bool)          # rows: F s - e <= a ; F s + e >= a
    cols, rows = np.nonzero(stacked.T)                         # column-major order
    counts = np.bincount(cols, minlength=n)
    start = np.concatenate([[0], np.cumsum(counts)])
    index = np.concatenate([rows, np.arange(2 * k)]).astype(np.int32)
    value = np.concatenate([np.ones(len(rows)), -np.ones(k), np.ones(k)])
    start = np.concatenate([start, [len(index)]]).astype(np.int32)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n + 1, 2 * k
    lp.col_cost_ = np.concatenate([np.zeros(n), [1.0]])
    lp.col_lower_ = np.concatenate([np.full(n, float(lo)), [0.0]])
    lp.col_upper_ = np.concatenate([np.full(n, float(hi)), [inf]])
    a = np.asarray(answers, dtype=float)
    lp.row_lower_ = np.concatenate([np.full(k, -inf), a])
    lp.row_upper_ = np.concatenate([a, np.full(k, inf)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
    h = highs()
    h.setOptionValue("solver", solver)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS did not solve the reconstruction LP: {h.modelStatusToString(status)}")
    x = np.asarray(h.getSolution().col_value)
    return x[:n], float(x[n])


def round_secret(estimate: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Round to the nearest allowed value; a tie goes down (the notebook's ``> 0.5`` for 0/1)."""
    return np.clip(np.ceil(np.asarray(estimate) - 0.5), lo, hi).astype(np.int64)


def reconstruct(masks: np.ndarray, answers: np.ndarray, method: str = "lstsq", lo: int = 0, hi: int = 1) -> np.ndarray:
    """Reconstructed secret column (integers in [lo, hi]) from masks and answers."""
    if method == "lstsq":
        return round_secret(solve_lstsq(masks, answers), lo, hi)
    if method == "lp":
        return round_secret(solve_lp(masks, answers, lo, hi)[0], lo, hi)
    raise ValueError(f"method must be one of {METHODS}, not {method!r}")


def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# ------------------------------------------------------------------------------------ evaluator
@dataclass(frozen=True)
class LinearResults:
    """One reconstruction: accuracy against the truth, majority-class baseline, Wilson interval."""

    method: str
    n_rows: int
    n_queries: int
    mitigation: Mitigation
    accuracy: float
    baseline: float
    ci: tuple[float, float]
    confidence: float
    answer_rmse: float
    seconds: float = field(compare=False)
    secret: str = ""
    reconstructed: np.ndarray = field(default=None, repr=False, compare=False)

    @property
    def correct(self) -> int:
        return int(round(self.accuracy * self.n_rows))

    @property
    def lift(self) -> float:
        """Accuracy above the baseline (what the release adds to a majority guess)."""
        return self.accuracy - self.baseline

    @property
    def exact(self) -> bool:
        return self.accuracy == 1.0

    def to_dict(self) -> dict:
        return {"method": self.method, "secret": self.secret, "n_rows": self.n_rows, "n_queries": self.n_queries,
                "mitigation": self.mitigation.kind, "param": self.mitigation.param,
                "mechanism": self.mitigation.mechanism if self.mitigation.kind == "noise" else None,
                "accuracy": self.accuracy, "baseline": self.baseline, "lift": self.lift,
                "ci": list(self.ci), "confidence": self.confidence, "answer_rmse": self.answer_rmse,
                "seconds": self.seconds}


class LinearReconstruction:
    """Reconstruct ``secret`` from subset sums over ``public`` identifiers, then score against the truth.

    Parameters
    ----------
    data : DataFrame with the public columns and the secret column (0/1 or a small integer).
    secret, public : column names.
    n_queries : number of random hashed queries (default ``2 n``, the notebook's choice).
    masks : optional ``(k, n)`` 0/1 query matrix (e.g. :func:`cell_masks` of a schedule) instead of random queries.
    method : ``lstsq`` (least squares) or ``lp`` (minimise the maximum error, HiGHS).
    mitigation : what the interface does to the answers (default exact answers).
    seed : seeds the queries and the mitigation's randomness.
    """

    def __init__(self, data: pd.DataFrame, secret: str, public: Sequence[str] = NOTEBOOK_PUBLIC, *,
                 n_queries: int | None = None, masks: np.ndarray | None = None, method: str = "lstsq",
                 mitigation: Mitigation | None = None, seed: int = 0, confidence: float = 0.95,
                 source: str = "<data>"):
        if method not in METHODS:
            raise AuditError(f"unknown method '{method}'", "--method", f"use one of {list(METHODS)}")
        if n_queries is not None and n_queries < 1:
            raise AuditError(f"--queries must be at least 1, not {n_queries}", "--queries", "e.g. --queries 200")
        self.target = data if isinstance(data, Target) else prepare(data, secret, public, source)
        if masks is not None and np.shape(masks)[1:] != (self.target.n,):
            raise ValueError(f"masks must have shape (k, {self.target.n})")
        self.masks = None if masks is None else np.asarray(masks, dtype=bool)
        self.n_queries = len(self.masks) if self.masks is not None else (n_queries or 2 * self.target.n)
        self.method, self.seed, self.confidence = method, seed, confidence
        self.mitigation = mitigation or Mitigation()

    def queries(self, rng: np.random.Generator) -> np.ndarray:
        if self.masks is not None:
            return self.masks
        return hashed_masks(self.target.public, random_predicates(self.n_queries, self.target.public.shape[1], rng))

    def evaluate(self) -> LinearResults:
        t = self.target
        rng = np.random.default_rng(self.seed)
        masks = self.queries(rng)
        answers = answer_queries(t.secret, masks, self.mitigation, rng)
        rmse = float(np.sqrt(np.mean((answers - masks @ t.secret) ** 2))) if len(answers) else 0.0
        start = time.perf_counter()
        guess = reconstruct(masks, answers, self.method, t.lo, t.hi)
        seconds = time.perf_counter() - start
        correct = int((guess == t.secret).sum())
        return LinearResults(self.method, t.n, len(masks), self.mitigation, correct / t.n, t.baseline,
                             wilson(correct, t.n, self.confidence), self.confidence, rmse, seconds, t.secret_name, guess)
