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

from ...errors import AuditError
from .linear_mitigations import Mitigation, answer_queries
from .linear_queries import CHUNK, QueryMatrix, as_queries, distinct_rows, lsqr, needs_mb
from .linear_target import NOTEBOOK_PUBLIC, PRIME, Target, prepare, random_predicates
from ..highs import highs
from ...lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

METHODS = ("lstsq", "lp")


# -------------------------------------------------------------------------------------- solvers
def solve_lstsq(masks, answers: np.ndarray) -> np.ndarray:
    """Least-squares estimate of the secret per row (real-valued), the minimum-norm one as dense lstsq's.

    LSQR over the groups of rows no query tells apart, each scaled by the square root of its size: the
    minimum-norm solution there is the dense one's (equal values within a group) without the ``k x n``
    matrix.
    """
    q = as_queries(masks)
    scale = np.sqrt(q.sizes)
    u, _ = lsqr(lambda x: q.dot(scale * x), lambda y: scale * q.tdot(y), np.asarray(answers, dtype=float), q.g)
    return (u / scale)[q.groups]


def solve_lp(masks, answers: np.ndarray, lo: float = 0.0, hi: float = 1.0,
             solver: str = "choose") -> tuple[np.ndarray, float]:
    """``min_{s ∈ [lo,hi]^n} max_i |F_i · s - a_i|`` with HiGHS; returns (s, the optimal max error).

    Solved over the groups (a group's total lies in ``[lo, hi]`` times its size) and spread evenly over
    its rows; with no two rows alike this is the row-by-row LP itself.
    """
    import highspy

    q = as_queries(masks)
    k, g = q.k, q.g
    inf = highspy.kHighsInf
    index, start = [], [np.zeros(1, dtype=np.int64)]
    step = max(1, CHUNK // max(1, k))
    for s in range(0, g, step):  # rows per column: F s - e <= a, then F s + e >= a
        cols, rows = np.nonzero(q.group_bits(s, min(g, s + step)).T)
        order = np.argsort(np.concatenate([cols, cols]), kind="stable")
        index.append(np.concatenate([rows, rows + k]).astype(np.int32)[order])
        start.append(start[-1][-1] + 2 * np.cumsum(np.bincount(cols, minlength=min(g, s + step) - s)))
    index.append(np.arange(2 * k, dtype=np.int32))
    index = np.concatenate(index)
    nz = len(index) - 2 * k
    start = np.concatenate(start + [np.array([len(index)])]).astype(np.int32)
    value = np.concatenate([np.ones(nz), -np.ones(k), np.ones(k)])
    sizes = q.sizes.astype(float)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = g + 1, 2 * k
    lp.col_cost_ = np.concatenate([np.zeros(g), [1.0]])
    lp.col_lower_ = np.concatenate([sizes * lo, [0.0]])
    lp.col_upper_ = np.concatenate([sizes * hi, [inf]])
    a = np.asarray(answers, dtype=float)
    lp.row_lower_ = np.concatenate([np.full(k, -inf), a])
    lp.row_upper_ = np.concatenate([a, np.full(k, inf)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
    del index, value
    h = highs()
    h.setOptionValue("solver", solver)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS did not solve the reconstruction LP: {h.modelStatusToString(status)}")
    x = np.asarray(h.getSolution().col_value)
    return (x[:g] / sizes)[q.groups], float(x[g])


def round_secret(estimate: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Round to the nearest allowed value; a tie goes down (the notebook's ``> 0.5`` for 0/1).

    Estimates are first taken to six decimals, so that a tie the solver leaves a hair off (two alike
    rows of different secrets share their total) goes down every time.
    """
    return np.clip(np.ceil(np.round(np.asarray(estimate), 6) - 0.5), lo, hi).astype(np.int64)


def reconstruct(masks, answers: np.ndarray, method: str = "lstsq", lo: int = 0, hi: int = 1) -> np.ndarray:
    """Reconstructed secret column (integers in [lo, hi]) from masks (or a QueryMatrix) and answers."""
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


def _fix(method: str, memory_mb: int, need, k: int) -> str:
    """How to get under the memory bound: the other method, fewer queries, or a larger bound.
    ``need(method, k)`` is the estimate (MB) for ``k`` queries."""
    lo, hi = 0, k
    while lo < hi:  # the most queries that fit: the estimate grows with k
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(method, mid) <= memory_mb else (lo, mid - 1)
    others = [m for m in METHODS if m != method and need(m, k) <= memory_mb]
    return ((f"use --method {others[0]} (about {need(others[0], k):,} MB), " if others else "")
            + (f"ask at most --queries {lo}, " if lo else "")
            + f"or raise --memory-mb to {need(method, k)}")


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
    memory_mb : refuse (``AuditError``, naming ``--memory-mb``) a reconstruction estimated to need more.
    """

    def __init__(self, data: pd.DataFrame, secret: str, public: Sequence[str] = NOTEBOOK_PUBLIC, *,
                 n_queries: int | None = None, masks: np.ndarray | None = None, method: str = "lstsq",
                 mitigation: Mitigation | None = None, seed: int = 0, confidence: float = 0.95,
                 source: str = "<data>", memory_mb: int | None = None):
        if method not in METHODS:
            raise AuditError(f"unknown method '{method}'", "--method", f"use one of {list(METHODS)}")
        if n_queries is not None and n_queries < 1:
            raise AuditError(f"--queries must be at least 1, not {n_queries}", "--queries", "e.g. --queries 200")
        self.target = data if isinstance(data, Target) else prepare(data, secret, public, source)
        if masks is not None and np.shape(masks)[1:] != (self.target.n,):
            raise ValueError(f"masks must have shape (k, {self.target.n})")
        self.masks = None if masks is None else as_queries(masks)
        self.n_queries = self.masks.k if self.masks is not None else (n_queries or 2 * self.target.n)
        self.method, self.seed, self.confidence = method, seed, confidence
        self.mitigation = mitigation or Mitigation()
        self.distinct = self.masks.g if self.masks is not None else distinct_rows(self.target.public)
        self.memory_mb = memory_mb
        if memory_mb is not None and self.needs_mb > memory_mb:
            raise AuditError(
                f"the {method} reconstruction of {self.target.n:,} rows ({self.distinct:,} distinct public records) "
                f"from {self.n_queries:,} queries needs about {self.needs_mb:,} MB, more than --memory-mb {memory_mb}",
                source, _fix(method, memory_mb, self.need, self.n_queries))

    def need(self, method: str, k: int) -> int:
        """Estimated peak memory (MB) of ``method`` with ``k`` of these queries (1s pro rata)."""
        ones = None if self.masks is None else self.masks.ones * k // max(1, self.n_queries)
        return needs_mb(method, self.target.n, self.distinct, k, ones)

    @property
    def needs_mb(self) -> int:
        """Estimated peak memory of this reconstruction (MB)."""
        return self.need(self.method, self.n_queries)

    def queries(self, rng: np.random.Generator) -> QueryMatrix:
        if self.masks is not None:
            return self.masks
        return QueryMatrix.hashed(self.target.public, random_predicates(self.n_queries, self.target.public.shape[1], rng),
                                  PRIME)

    def evaluate(self) -> LinearResults:
        t = self.target
        rng = np.random.default_rng(self.seed)
        masks = self.queries(rng)
        answers = answer_queries(t.secret, masks, self.mitigation, rng)
        rmse = float(np.sqrt(np.mean((answers - masks.answers(t.secret)) ** 2))) if len(answers) else 0.0
        start = time.perf_counter()
        guess = reconstruct(masks, answers, self.method, t.lo, t.hi)
        seconds = time.perf_counter() - start
        correct = int((guess == t.secret).sum())
        return LinearResults(self.method, t.n, masks.k, self.mitigation, correct / t.n, t.baseline,
                             wilson(correct, t.n, self.confidence), self.confidence, rmse, seconds, t.secret_name, guess)
