"""Linear reconstruction: a secret column from subset-sum answers (Dinur–Nissim; the OpenDP notebook).

The attacker knows every row's public identifiers ``z_j`` and receives answers ``a_i ≈ F_i · s`` to
subset-sum queries over the secret column ``s``, where ``F_i`` is a 0/1 mask over rows. Two solvers:

* **least squares** (the notebook): ``argmin |F s - a|²``, then rounded;
* **LP** (lecture notes §2.4, eq. 23): ``min_{s ∈ [lo, hi]^n} max_i |F_i · s - a_i|``, written as a
  linear program with one extra variable ``e`` (minimise ``e`` subject to ``-e ≤ F_i·s - a_i ≤ e``),
  solved by HiGHS, then rounded.

Queries are the notebook's random hashed predicates (``(z · d) mod 691 mod 2`` for a random vector
``d``; seeded here) or any 0/1 mask matrix, e.g. the cells of a table schedule (:func:`cell_masks`).
Mitigations applied to the answers follow the notebook: rounding to base ``r``, additive noise of
scale ``σ`` and subsampling ``t`` rows (scaled by ``n/t``). :func:`privacy_loss` asks OpenDP (the
``dp`` extra) for the epsilon/delta of the noise mechanisms instead of hand-written formulas.

The evaluator follows anonymeter's shape: ``LinearReconstruction(...).evaluate()`` returns a frozen
:class:`LinearResults` with the accuracy, the majority-class baseline and a Wilson interval.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Sequence

import numpy as np
import pandas as pd

from ...outputs.svg import line_chart
from ...errors import AuditError
from ...data.microdata import read_table

PRIME = 691  # the notebook's hashing modulus
NOTEBOOK_PUBLIC = ("sex", "age", "educ", "latino", "black", "asian", "married", "divorced", "children",
                   "disability", "militaryservice", "employed", "englishability")
METHODS = ("lstsq", "lp")
MITIGATIONS = ("none", "round", "noise", "sample")
MECHANISMS = ("gaussian", "laplace", "discrete_gaussian", "discrete_laplace")
MAX_SECRET_RANGE = 15  # "small integer": at most 16 consecutive values
DP_HINT = "pip install 'disclosure-audit[dp]'"


# ----------------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Target:
    """The attacked table in solver form: public identifiers as integers and the secret column."""

    public: np.ndarray = field(repr=False)   # (n, p) int64
    secret: np.ndarray = field(repr=False)   # (n,) int64
    lo: int
    hi: int
    names: tuple[str, ...]
    secret_name: str

    @property
    def n(self) -> int:
        return len(self.secret)

    @property
    def baseline(self) -> float:
        """Majority-class accuracy: what guessing the commonest value for everyone achieves."""
        return float(np.bincount(self.secret - self.lo).max() / self.n) if self.n else 0.0


def load_frame(path: str | Path) -> pd.DataFrame:
    """Read CSV/Parquet (errors name the file) and turn every all-numeric column into numbers."""
    frame = read_table(path)
    for col in frame.columns:
        values = pd.to_numeric(frame[col], errors="coerce")
        if not values.isna().any():
            frame[col] = values
    return frame


def prepare(frame: pd.DataFrame, secret: str, public: Sequence[str], source: str = "<data>") -> Target:
    """Check the columns and encode them; user mistakes raise AuditError naming file, column and fix."""
    public = tuple(public)
    columns = list(frame.columns)
    if not public:
        raise AuditError("no public columns given", source, "pass --public C1,C2,... (the identifiers an attacker knows)")
    for col, option in [(secret, "--secret")] + [(c, "--public") for c in public]:
        if col not in columns:
            raise AuditError(f"{option} column '{col}' is not in the data", source, f"use one of {columns}")
    if secret in public:
        raise AuditError(f"'{secret}' is both the secret and a public column", source,
                         "remove it from --public: the attacker must not already know the secret")
    if len(frame) == 0:
        raise AuditError("the data has no rows", source, "give a table with at least one row")
    raw = frame[secret]
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() | (values != values.round())
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise AuditError(f"secret column '{secret}' is not integer: row {row + 1} (line {row + 2}) is {raw.iloc[row]!r}",
                         source, "choose a 0/1 or small-integer column as --secret (recode it first)")
    ints = values.to_numpy().astype(np.int64)
    lo, hi = int(ints.min()), int(ints.max())
    if hi - lo > MAX_SECRET_RANGE:
        raise AuditError(f"secret column '{secret}' is not binary or a small integer (values {lo}..{hi})", source,
                         f"recode it to at most {MAX_SECRET_RANGE + 1} consecutive values, e.g. a 0/1 indicator")
    encoded = []
    for col in public:
        numbers = pd.to_numeric(frame[col], errors="coerce")
        if not numbers.isna().any() and (numbers == numbers.round()).all():
            encoded.append(numbers.to_numpy().astype(np.int64))
        else:  # categorical codes: any fixed encoding of public values serves the attacker's hash
            codes, _ = pd.factorize(frame[col].astype(str), sort=True)
            encoded.append(codes.astype(np.int64))
    return Target(np.column_stack(encoded), ints, lo, hi, public, secret)


# -------------------------------------------------------------------------------------- queries
def random_predicates(k: int, p: int, rng: np.random.Generator, prime: int = PRIME) -> np.ndarray:
    """``k`` hashing vectors ``d`` (the notebook's ``np.random.randint(prime, size=len(pub))``), seeded."""
    return rng.integers(prime, size=(k, p))


def hashed_masks(public: np.ndarray, descs: np.ndarray, prime: int = PRIME) -> np.ndarray:
    """Masks ``(k, n)``: row ``j`` is in query ``i`` iff ``(z_j · d_i) mod prime mod 2 == 1``."""
    return ((public @ descs.T) % prime % 2).astype(bool).T


def cell_masks(frame: pd.DataFrame, cells) -> np.ndarray:
    """Masks ``(k, n)`` of published cells (``CellDef`` or ``Predicate``): queries from a table schedule."""
    return np.stack([getattr(c, "predicate", c).mask(frame) for c in cells]) if len(cells) else np.zeros((0, len(frame)), bool)


# ---------------------------------------------------------------------------------- mitigations
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


def answer_queries(secret: np.ndarray, masks: np.ndarray, mitigation: Mitigation,
                   rng: np.random.Generator) -> np.ndarray:
    """The query interface: subset sums of the secret over each mask, with the mitigation applied."""
    exact = (masks @ secret).astype(float)
    if mitigation.kind == "round":
        return np.round(exact / mitigation.param) * mitigation.param  # numpy rounds halves to even, as the notebook
    if mitigation.kind == "noise":
        return exact + sample_noise(mitigation.mechanism, mitigation.param, len(exact), rng)
    if mitigation.kind == "sample":
        n = len(secret)
        t = min(int(mitigation.param), n)
        rows = rng.choice(n, size=t, replace=False)
        return (masks[:, rows] @ secret[rows]) * (n / t)
    return exact


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
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
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


# --------------------------------------------------------------------------------------- privacy
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


# ----------------------------------------------------------------------------------------- sweep
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
