"""RAP-RANK: confidence-ranked reconstruction by relaxed projection (Dick et al., PNAS 2023; seed 001).

The attack, per geographic unit (a :class:`~audit.problem.build.Problem`):

1. **Relaxed dataset.** ``n`` rows, each a per-column softmax over the column's atoms (the one-hot
   blocks of the problem's domains), parameterised by logits.
2. **Differentiable answers.** A count query (a conjunction of "column in set" clauses) is answered
   by the sum over relaxed rows of the product over its clauses of the row's probability mass inside
   the clause's set. ``sum(col)`` uses the value-weighted mass for ``col``; ``mean(col)`` is the
   pair ``lo * count <= sum <= hi * count``; ``median`` cells are skipped (noted).
3. **Loss.** Squared distance of every answer to its published constraint: exact cells to their
   value, interval cells (suppressed, rounded) only outside the interval (integer bounds tightened for
   open ends), noisy cells to their value weighted by ``1 / max(sigma, 1)^2``. The schema's structural
   edits are count-zero queries.
4. **Adam**, then **randomized rounding** (each row's atoms sampled from its softmax). During the first
   ``explore`` share of the steps each term enters a step's loss with probability ``keep`` (the
   stochastic-gradient randomness of RAP; it also lets runs leave the relaxation's local minima),
   then every term.
5. **K runs** with different seeds; the rounded datasets' multiset union ranks rows by frequency.

Initialisation is ``uniform`` (a uniformly random dataset of the schema, sampled afresh per run) or
``parent`` (``n`` rows sampled afresh per run from the parent geography's rows: the paper's "initialise
at the baseline"). A sampled start row ``x`` becomes logits ``log(m * onehot(x) + (1 - m) / A)`` with
``m = init_mass`` (0.9 for parent starts, which the attacker trusts, and 0.5 for uniform ones: at 0.5 a
parent start rounds back to itself too rarely when the release barely moves it, e.g. rounded counts).

**Batching.** Units of one level share their domains, so every (unit, run) pair of a batch is one
slice of a ``[units * runs, rows, atoms]`` tensor (units padded to a common row count, pad rows masked
out of every answer) and one Adam optimiser steps them all: one tensor program per batch, on the GPU
when there is one. Units are sorted by size and cut into batches under ``batch_elements``.

**Determinism.** All randomness (start datasets, rounding uniforms, holdout splits) comes from numpy
generators seeded by ``(seed, crc32(unit geo), run)``, independent of batching and device; the
optimisation itself is deterministic on CPU for a fixed thread count (one thread by default). On
CUDA, the answer product is one dense matmul in log space (no scatter/atomics in its backward pass;
the only atomics are in the backward of the term gathers, where duplicate indices fall on the constant
column whose gradient is discarded), which cuBLAS computes
deterministically on one GPU model and driver, but float results can differ from CPU in the last bits
and a rounding uniform that falls within that difference flips a sample: same seed, same device, same
ranking; CPU vs GPU rankings agree up to such rare flips. Set ``CUBLAS_WORKSPACE_CONFIG=:4096:8``
for bitwise repeatability across processes on CUDA.

**Scoring** (the defender knows the truth), following the paper's definitions: the top-k match rate
of a ranking ``R`` is the fraction of the rows ranked 1..k that appear in the private dataset ``D``,
plotted at ``k = round(x * u)`` for ``x`` in the ``k/u`` grid, ``u`` the number of unique rows of ``D``.
Ties in frequency are broken uniformly at random in expectation (the expected match rate over all
tie orders), so curves need no tie-breaking seed. If a ranking holds fewer than ``k`` rows, the
missing candidates count as misses. Baselines:

* ``holdout``: the unit split at random into halves ``D`` and ``D_holdout``; ``R(D_holdout)`` (rows by
  their frequency in the holdout) scored against the other half, with ``u = min(u_D, u_holdout)`` as
  in the paper. (The paper also tabulates the attacked half; an audit attacks the real release, so
  here the attack is scored against the whole unit, the holdout against the half it did not see.)
* one per coarser geography level (``tract``, ``county``, ``state`` for blocks): rows ranked by their
  frequency among all rows of the parent unit (the exact distribution the paper approximates by
  sampling), scored against the unit.

Lift is the attack's match rate minus the baseline's at each ``k/u``.
"""
from __future__ import annotations

import math
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np

from ...errors import AuditError, OptionalDependencyMissing
from ...problem.build import Problem
from ...outputs.svg import line_chart

INITS = ("uniform", "parent")
DEVICES = ("auto", "cpu", "cuda")
GRID = tuple(round(i / 20, 2) for i in range(1, 21))
HINT = "pip install 'disclosure-audit[rank]'"


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _torch():
    try:
        import torch
    except ImportError:
        raise OptionalDependencyMissing("torch", "rank") from None
    return torch


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU is a usage error."""
    torch = _torch()
    if device not in DEVICES:
        raise AuditError(f"unknown --device '{device}'", "--device", f"use one of {list(DEVICES)}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AuditError("--device cuda but PyTorch sees no CUDA GPU", "--device",
                         "use --device cpu (or auto), or install a CUDA build of torch")
    return device


def _seed(seed: int, *parts: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, *parts]))


def unit_key(problem: Problem) -> int:
    return zlib.crc32("/".join((problem.level, *problem.geo)).encode())


# ------------------------------------------------------------------------------------ options
@dataclass(frozen=True)
class RankOptions:
    """Knobs of the attack; defaults are what ``audit rank`` uses."""

    runs: int = 16
    steps: int = 300
    lr: float = 0.1
    init: str = "uniform"
    init_mass: float | None = None  # softmax mass on a start row's atoms (None: 0.9 parent, 0.5 uniform)
    device: str = "auto"
    seed: int = 0
    grid: tuple[float, ...] = GRID
    batch_elements: int | None = None  # bound on runs * units * rows * queries per tensor program
                                       # (None: 2**24 on CPU, 2**28 on CUDA, ~5 GB of activations)
    combine: str = "auto"           # answer product: matmul (log space; default) or gather (direct product)
    confidence: float = 0.95
    keep: float = 0.5               # share of terms in each step's loss while exploring (1: all)
    explore: float = 0.5            # share of the steps that explore
    threads: int | None = 1         # CPU threads for torch (1: fastest on a shared machine, deterministic)

    def __post_init__(self):
        if self.runs < 1:
            raise AuditError(f"--runs must be at least 1, not {self.runs}", "--runs", "e.g. --runs 16")
        if self.steps < 0:
            raise AuditError(f"--steps must be non-negative, not {self.steps}", "--steps", "e.g. --steps 300")
        if not self.lr > 0:
            raise AuditError(f"--lr must be above 0, not {self.lr}", "--lr", "e.g. --lr 0.1")
        if self.seed < 0:
            raise AuditError(f"--seed must be 0 or more, not {self.seed}", "--seed", "e.g. --seed 0")
        if self.init not in INITS:
            raise AuditError(f"unknown --init '{self.init}'", "--init", f"use one of {list(INITS)}")
        if self.device not in DEVICES:
            raise AuditError(f"unknown --device '{self.device}'", "--device", f"use one of {list(DEVICES)}")
        if self.init_mass is None:
            object.__setattr__(self, "init_mass", 0.9 if self.init == "parent" else 0.5)
        if not 0 < self.init_mass < 1:
            raise AuditError("init_mass must be between 0 and 1", "--init-mass", "e.g. 0.8")
        if self.combine not in ("auto", "gather", "matmul"):
            raise ValueError("combine is auto, gather or matmul")
        if not self.grid or any(not 0 < x <= 1 for x in self.grid):
            raise AuditError("the k/u grid must hold values in (0, 1]", "--grid", "e.g. 0.05,0.1,...,1")


# ----------------------------------------------------------------------------------- encoding
@dataclass
class _Term:
    """One constraint in solver form: lo * ans[q2] <= ans[q1] <= hi * ans[q2], weight w."""

    q1: int
    q2: int        # index of the divisor query; -1 for the constant 1 (count/sum)
    lo: float
    hi: float
    w: float
    check: bool = True   # counts towards "the rounded dataset reproduces the release" (not noisy cells)


class _Encoding:
    """The queries of a group of problems sharing domains: clause slots and per-unit terms."""

    def __init__(self, problems: Sequence[Problem], noise: Mapping[str, float]):
        first = problems[0]
        self.domains = first.domains
        self.sizes = [len(d) for d in self.domains]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.slots: list[dict] = [dict() for _ in self.domains]   # per column: (atoms, weighted) -> j
        self.queries: dict = {}                                   # (clauses, weighted col) -> q
        self.query_slots: list[list[tuple[int, int]]] = []
        self.notes: list[str] = []
        self.terms: list[list[_Term]] = []
        skipped: Counter = Counter()
        for p in problems:
            if p.domains != self.domains:
                raise ValueError("problems of one encoding must share their domains")
            terms = []
            for c in p.constraints:
                term = self._term(p, c, noise, skipped)
                if term is not None:
                    terms.append(term)
            for e in p.edits:
                terms.append(_Term(self.query(self._clauses(p, e)), -1, 0.0, 0.0, 1.0))
            self.terms.append(terms)
        for kind, n in sorted(skipped.items()):
            self.notes.append(f"{n} {kind} cells are not in the relaxed loss (no differentiable form here)")

    def _clauses(self, p: Problem, predicate) -> tuple:
        return tuple((p.index(name), frozenset(atoms)) for name, atoms in predicate.clauses)

    def _slot(self, col: int, atoms: frozenset, weighted: bool) -> int:
        table = self.slots[col]
        return table.setdefault((atoms, weighted), len(table))

    def query(self, clauses: tuple, weighted: int | None = None) -> int:
        key = (clauses, weighted)
        if key not in self.queries:
            slots = [(col, self._slot(col, atoms, col == weighted)) for col, atoms in clauses]
            if weighted is not None and all(col != weighted for col, _ in clauses):
                slots.append((weighted, self._slot(weighted, frozenset(range(self.sizes[weighted])), True)))
            self.queries[key] = len(self.query_slots)
            self.query_slots.append(slots)
        return self.queries[key]

    def _term(self, p: Problem, c, noise: Mapping[str, float], skipped: Counter) -> _Term | None:
        stat = c.statistic
        sigma = getattr(c, "noise_scale", None) or noise.get(c.key) or noise.get("*")
        clauses = self._clauses(p, c.predicate)
        if stat.kind == "median":
            skipped["median"] += 1
            return None
        lo = -math.inf if c.lo is None else float(c.lo)
        hi = math.inf if c.hi is None else float(c.hi)
        if stat.kind in ("count", "sum") and not sigma:
            # integer statistics: open ends and fractional bounds tighten to integers
            if c.lo is not None:
                lo = float(math.floor(c.lo) + 1 if c.lo_open and c.lo == math.floor(c.lo) else math.ceil(c.lo))
            if c.hi is not None:
                hi = float(math.ceil(c.hi) - 1 if c.hi_open and c.hi == math.ceil(c.hi) else math.floor(c.hi))
        w = 1.0 / max(float(sigma), 1.0) ** 2 if sigma else 1.0
        check = not sigma
        if stat.kind == "count":
            return _Term(self.query(clauses), -1, lo, hi, w, check)
        col = p.index(stat.column)
        vmin = min(self.domains[col].values)
        q_sum = self.query(clauses, col)            # sum of (value - vmin): non-negative
        q_cnt = self.query(clauses)
        if stat.kind == "sum":
            # sum = sum' + vmin * count: fold the shift into the divisor form when vmin != 0
            if vmin == 0:
                return _Term(q_sum, -1, lo, hi, w, check)
            skipped["sum (negative domain)"] += 1
            return None
        # mean in [lo, hi]  <=>  (lo - vmin) * count <= sum' <= (hi - vmin) * count
        return _Term(q_sum, q_cnt, lo - vmin, hi - vmin, w, check)

    def tensors(self, torch, device):
        """Clause matrices per column, the slot index table, and its log-space incidence matrix."""
        mats, base = [], []
        total = 0
        for col, table in enumerate(self.slots):
            d = self.domains[col]
            m = np.zeros((len(d), max(len(table), 1)), dtype=np.float32)
            values = np.asarray(d.values, dtype=np.float32) - min(d.values) if d.numeric else None
            for (atoms, weighted), j in table.items():
                idx = sorted(atoms)
                m[idx, j] = values[idx] if weighted else 1.0
            mats.append(torch.tensor(m, device=device))
            base.append(total)
            total += m.shape[1]
        width = max(1, max(len(s) for s in self.query_slots))
        gather = np.full((len(self.query_slots), width), total, dtype=np.int64)   # total = the constant-1 slot
        for q, slots in enumerate(self.query_slots):
            for i, (col, j) in enumerate(slots):
                gather[q, i] = base[col] + j
        incidence = np.zeros((total + 1, len(self.query_slots)), dtype=np.float32)
        for q, slots in enumerate(self.query_slots):
            for col, j in slots:
                incidence[base[col] + j, q] += 1.0
        return mats, torch.tensor(gather, device=device), torch.tensor(incidence, device=device)


# ------------------------------------------------------------------------------------- core
def _row_logits(rows: np.ndarray, sizes: Sequence[int], mass: float) -> np.ndarray:
    """Logits whose softmax puts ``mass`` on each row's atom and spreads the rest evenly."""
    out = []
    for col, a in enumerate(sizes):
        p = np.full((len(rows), a), (1 - mass) / a, dtype=np.float64)
        p[np.arange(len(rows)), rows[:, col]] += mass
        out.append(np.log(p))
    return np.concatenate(out, axis=1) if out else np.zeros((len(rows), 0))


def _uniform_rows(problem: Problem, n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random dataset of the schema: codes uniform, so atoms in proportion to their size."""
    cols = []
    for d in problem.domains:
        w = np.array([len(a) for a in d.atoms], dtype=np.float64)
        cols.append(rng.choice(len(d), size=n, p=w / w.sum()))
    return np.column_stack(cols).astype(np.int64) if cols else np.zeros((n, 0), np.int64)


def _start_rows(problem: Problem, n: int, prior: np.ndarray | None, init: str, rng) -> np.ndarray:
    if init == "parent" and prior is not None and len(prior):
        replace = len(prior) < n
        return prior[rng.choice(len(prior), size=n, replace=replace)]
    return _uniform_rows(problem, n, rng)


@dataclass(frozen=True)
class _BatchOut:
    rounded: list          # per unit: list over runs of (n, C) atom arrays
    loss: list             # per unit: final relaxed loss (mean over runs)
    consistent: list       # per unit: fraction of runs whose rounded dataset satisfies every term


class _Program:
    """The tensors of one batch: clause matrices, answer product, and every unit's terms (repeated per run)."""

    def __init__(self, enc: _Encoding, terms: Sequence[Sequence[_Term]], runs: int, rowmask: np.ndarray, dev,
                 combine: str = "matmul"):
        torch = self.torch = _torch()
        self.enc, self.combine = enc, combine
        B, T = len(terms), max(1, max(len(t) for t in terms))
        cols = {name: np.zeros((B, T), dt) for name, dt in
                (("q1", np.int64), ("q2", np.int64), ("lo", np.float32), ("hi", np.float32), ("w", np.float32),
                 ("has_lo", np.float32), ("has_hi", np.float32), ("check", bool))}
        for b, unit in enumerate(terms):
            for t, term in enumerate(unit):
                cols["q1"][b, t], cols["q2"][b, t] = term.q1 + 1, term.q2 + 1
                cols["has_lo"][b, t], cols["has_hi"][b, t] = math.isfinite(term.lo), math.isfinite(term.hi)
                cols["lo"][b, t] = term.lo if math.isfinite(term.lo) else 0.0
                cols["hi"][b, t] = term.hi if math.isfinite(term.hi) else 0.0
                cols["w"][b, t], cols["check"][b, t] = term.w, term.check
        for name, arr in cols.items():
            setattr(self, name, torch.tensor(np.repeat(arr, runs, axis=0), device=dev))
        self.mats, self.gather, self.incidence = enc.tensors(torch, dev)
        self.mask = torch.tensor(rowmask, device=dev, dtype=torch.float32)

    def probs(self, logits):
        o = self.enc.offsets
        return [self.torch.softmax(logits[..., o[c]:o[c + 1]], dim=-1) for c in range(len(self.enc.sizes))]

    def answers(self, ps):
        """Relaxed answers ``(R, 1 + queries)``: column 0 is the constant 1, then every query."""
        torch = self.torch
        mass = torch.cat([p @ m for p, m in zip(ps, self.mats)] + [torch.ones_like(ps[0][..., :1])], dim=-1)
        if self.combine == "matmul":
            prod = torch.exp(torch.log(mass.clamp_min(1e-30)) @ self.incidence)
        else:
            prod = mass.index_select(-1, self.gather[:, 0])
            for j in range(1, self.gather.shape[1]):
                prod = prod * mass.index_select(-1, self.gather[:, j])
        ans = (prod * self.mask[..., None]).sum(1)
        return torch.cat([torch.ones_like(ans[:, :1]), ans], dim=1)

    def residual(self, ans):
        """How far each term lies outside ``[lo * d, hi * d]`` (0 inside)."""
        torch = self.torch
        a = torch.gather(ans, 1, self.q1)
        d = torch.gather(ans, 1, self.q2)
        return (torch.relu(self.lo * d - a) * self.has_lo + torch.relu(a - self.hi * d) * self.has_hi)


def relaxed_residuals(problem: Problem, rows: np.ndarray, noise: Mapping[str, float] | None = None,
                      combine: str = "matmul") -> np.ndarray:
    """Each term's residual on an integer dataset (one-hot rows): 0 where the dataset meets the term.

    A check that the relaxation is exact on integer data: ``problem.violations(rows) == []`` iff every
    residual of a non-median cell is 0.
    """
    torch = _torch()
    enc = _Encoding([problem], noise or {})
    rows = np.asarray(rows, dtype=np.int64).reshape(-1, len(problem.domains))
    prog = _Program(enc, enc.terms, 1, np.ones((1, max(1, len(rows))), np.float32) * (len(rows) > 0),
                    torch.device("cpu"), combine)
    if len(rows) == 0:
        rows = np.zeros((1, len(problem.domains)), np.int64)
    onehot = [torch.nn.functional.one_hot(torch.tensor(rows[None, :, c]), a).float() for c, a in enumerate(enc.sizes)]
    with torch.no_grad():
        return prog.residual(prog.answers(onehot))[0, :len(enc.terms[0])].numpy()


def _attack_batch(problems: Sequence[Problem], priors: Sequence[np.ndarray | None], enc: _Encoding,
                  unit_ids: Sequence[int], opts: RankOptions, device: str) -> _BatchOut:
    torch = _torch()
    dev = torch.device(device)
    torch.manual_seed(opts.seed)
    combine = "matmul" if opts.combine == "auto" else opts.combine
    K, B = opts.runs, len(unit_ids)
    sizes = enc.sizes
    C = len(sizes)
    ns = [problems[u].n_rows[1] for u in unit_ids]
    N = max(1, max(ns))
    width = int(enc.offsets[-1])
    init = np.zeros((B, K, N, width), dtype=np.float32)
    uniforms = np.zeros((B, K, N, C), dtype=np.float32)
    rowmask = np.zeros((B, K, N), dtype=np.float32)
    for b, u in enumerate(unit_ids):
        p, n = problems[u], ns[b]
        rowmask[b, :, :n] = 1.0
        for k in range(K):
            rng = _seed(opts.seed, unit_key(p), k)
            rows = _start_rows(p, n, priors[u], opts.init, rng)
            init[b, k, :n] = _row_logits(rows, sizes, opts.init_mass)
            uniforms[b, k, :n] = rng.random((n, C))
    prog = _Program(enc, [enc.terms[u] for u in unit_ids], K, rowmask.reshape(B * K, N), dev, combine)
    R = B * K
    theta = torch.tensor(init.reshape(R, N, width), device=dev, requires_grad=True)
    probs, answers, residual, tw = prog.probs, prog.answers, prog.residual, prog.w
    opt = torch.optim.Adam([theta], lr=opts.lr)
    loss_r = torch.zeros(R, device=dev)
    # stochastic terms (the "randomness of SGD"): during the first ``explore`` share of the steps each
    # term enters a step's loss with probability ``keep``, on a low-discrepancy schedule whose phase is
    # drawn per (unit, run, term) from the numpy generators: deterministic and batch-independent.
    phase = torch.tensor(np.repeat(np.stack([_seed(opts.seed, unit_key(problems[u]), 0x5EED).random(tw.shape[1])
                                             for u in unit_ids]), K, axis=0), device=dev, dtype=torch.float32)
    phase = torch.remainder(phase + torch.arange(R, device=dev, dtype=torch.float32)[:, None] * 0.7548776662, 1.0)
    explore = int(opts.steps * opts.explore) if opts.keep < 1 else 0
    for step in range(opts.steps):
        opt.zero_grad(set_to_none=True)
        r = residual(answers(probs(theta)))
        weight = tw
        if step < explore:
            weight = tw * (torch.remainder(phase + step * 0.6180339887, 1.0) < opts.keep)
        loss_r = (weight * r * r).sum(1)
        loss_r.sum().backward()
        opt.step()
    with torch.no_grad():
        ps = probs(theta)
        if opts.steps == 0:
            r = residual(answers(ps))
            loss_r = (tw * r * r).sum(1)
        u = torch.tensor(uniforms.reshape(R, N, C), device=dev)
        picks = []
        for c in range(C):
            cdf = torch.cumsum(ps[c], dim=-1)
            picks.append((cdf < u[..., c:c + 1]).sum(-1).clamp_max(sizes[c] - 1))
        rounded = torch.stack(picks, dim=-1)                                     # (R, N, C)
        onehot = [torch.nn.functional.one_hot(rounded[..., c], sizes[c]).float() for c in range(C)]
        r = residual(answers(onehot))
        ok = ((r <= 1e-3) | ~prog.check).all(1)
        rounded_np = rounded.cpu().numpy().reshape(B, K, N, C)
        loss_np = loss_r.detach().cpu().numpy().reshape(B, K)
        ok_np = ok.cpu().numpy().reshape(B, K)
    return _BatchOut([[rounded_np[b, k, :ns[b]] for k in range(K)] for b in range(B)],
                     [float(loss_np[b].mean()) for b in range(B)],
                     [float(ok_np[b].mean()) for b in range(B)])


# ------------------------------------------------------------------------------------ scoring
def rank_rows(rows: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
    """R(X): the unique rows of the multiset ``rows``, most frequent first (ties in row order)."""
    counts = Counter(map(tuple, np.asarray(rows, dtype=np.int64).tolist()))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def match_rates(ranked: Sequence[tuple[tuple, int]], truth: set, u: int, grid: Sequence[float]) -> list[float] | None:
    """Expected top-k match rate at ``k = max(1, round(x * u))`` for each ``x``, ties broken at random."""
    if u <= 0:
        return None
    groups: list[tuple[int, int]] = []           # (size, matches) per frequency, in rank order
    for row, freq in ranked:
        hit = row in truth
        if groups and groups[-1][2] == freq:
            size, m, _ = groups[-1]
            groups[-1] = (size + 1, m + hit, freq)
        else:
            groups.append((1, int(hit), freq))
    out = []
    for x in grid:
        k = max(1, int(round(x * u)))
        left, got = k, 0.0
        for size, m, _ in groups:
            if left <= 0:
                break
            take = min(left, size)
            got += m * take / size
            left -= take
        out.append(got / k)
    return out


def parent_rows(frame, geography: Sequence[str], problem: Problem, depth: int, cache: dict) -> np.ndarray:
    """All rows of the unit's ancestor ``depth`` levels from the top (1 = the coarsest level), in its atoms."""
    key = (problem.level, problem.domains, problem.geo[:depth])
    if key not in cache:
        m = np.ones(len(frame), dtype=bool)
        for col, value in zip(geography[:depth], problem.geo[:depth]):
            m &= frame[col].to_numpy() == value
        sub = frame[m]
        cache[key] = (np.column_stack([sub[d.name].map(d.lookup()).to_numpy(dtype=np.int64)
                                       for d in problem.domains]) if len(sub)
                      else np.zeros((0, len(problem.domains)), np.int64))
    return cache[key]


# ------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class UnitRank:
    """One unit: the ranking, the attack's match-rate curve and each baseline's."""

    problem: Problem = field(repr=False)
    ranked: tuple = field(repr=False)                  # ((row atoms), frequency), best first
    attack: tuple[float, ...] | None
    baselines: Mapping[str, tuple[float, ...] | None]
    unique: int
    loss: float
    consistent: float

    @property
    def geo(self) -> str:
        return "/".join(self.problem.geo)

    def lift(self) -> dict[str, list[float] | None]:
        return {name: (None if b is None or self.attack is None else [a - v for a, v in zip(self.attack, b)])
                for name, b in self.baselines.items()}

    def to_dict(self, top: int | None = None) -> dict:
        p = self.problem
        ranked = self.ranked if top is None else self.ranked[:top]
        return {"geo": self.geo, "level": p.level, "rows": p.n_rows[1], "unique": self.unique,
                "ranked": [[p.describe(np.asarray(row)), int(freq)] for row, freq in ranked],
                "attack": _r(self.attack), "baselines": {k: _r(v) for k, v in self.baselines.items()},
                "lift": {k: _r(v) for k, v in self.lift().items()},
                "loss": round(self.loss, 6), "consistent_runs": round(self.consistent, 4),
                "notes": list(p.notes)}


def _r(curve):
    return None if curve is None else [round(float(v), 6) for v in curve]


def _mean_ci(values: list[list[float]], confidence: float) -> tuple[list[float], list[tuple[float, float]]]:
    arr = np.asarray(values, dtype=np.float64)
    mean = arr.mean(0)
    if len(arr) < 2:
        return mean.tolist(), [(float(m), float(m)) for m in mean]
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    half = z * arr.std(0, ddof=1) / math.sqrt(len(arr))
    return mean.tolist(), [(float(max(0.0, m - h)), float(min(1.0, m + h))) for m, h in zip(mean, half)]


@dataclass(frozen=True)
class RankResults:
    """All units, and the curves pooled over units (mean match rate at each k/u, as the paper averages)."""

    units: tuple[UnitRank, ...]
    options: RankOptions
    device: str
    seconds: float
    notes: tuple[str, ...] = ()

    @property
    def grid(self) -> tuple[float, ...]:
        return self.options.grid

    def pooled(self) -> dict:
        attack = [u.attack for u in self.units if u.attack is not None]
        mean, ci = _mean_ci(attack, self.options.confidence) if attack else ([], [])
        names = list(dict.fromkeys(n for u in self.units for n in u.baselines))
        base, lift, counts = {}, {}, {}
        for name in names:
            curves = [u.baselines.get(name) for u in self.units]
            have = [c for c in curves if c is not None]
            base[name] = _r(np.mean(have, 0).tolist()) if have else None
            pairs = [(u.attack, c) for u, c in zip(self.units, curves) if c is not None and u.attack is not None]
            lift[name] = _r(np.mean([np.subtract(a, c) for a, c in pairs], 0).tolist()) if pairs else None
            counts[name] = len(have)
        return {"k_over_u": list(self.grid), "attack": _r(mean) if attack else None,
                "attack_ci": [[round(a, 6), round(b, 6)] for a, b in ci], "confidence": self.options.confidence,
                "baselines": base, "lift": lift, "units": len(attack), "baseline_units": counts}

    def blocks_per_minute(self) -> float:
        return 60.0 * len(self.units) / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self, top: int | None = None) -> dict:
        o = self.options
        return {"pooled": self.pooled(), "units": [u.to_dict(top) for u in self.units],
                "options": {"runs": o.runs, "steps": o.steps, "lr": o.lr, "init": o.init, "init_mass": o.init_mass,
                            "seed": o.seed, "device": self.device},
                "seconds": round(self.seconds, 3), "units_per_minute": round(self.blocks_per_minute(), 2),
                "notes": list(self.notes),
                "definitions": {
                    "match_rate": "fraction of the top-k ranked rows that appear in the unit's true rows, "
                                  "k = round(k_over_u * u), u = unique true rows; ties in expectation",
                    "ranked": "rows of the K rounded reconstructions' multiset union with their frequency",
                    "holdout": "ranking of a random half of the unit, scored against the other half, "
                               "u = min(unique rows of each half)",
                    "parents": "rows ranked by frequency in the named coarser geography",
                    "lift": "attack match rate minus the baseline's, at each k_over_u"}}

    def svg(self) -> str:
        pooled = self.pooled()
        xs = pooled["k_over_u"]
        series = {}
        if pooled["attack"]:
            series[f"RAP-RANK ({self.options.init})"] = list(zip(xs, pooled["attack"]))
        for name, curve in pooled["baselines"].items():
            if curve:
                series[name] = list(zip(xs, curve))
        return line_chart(series, title=f"Top-k match rate, {pooled['units']} units", xlabel="k / u",
                          ylabel="match rate", ylim=(0.0, 1.0))


# ---------------------------------------------------------------------------------- evaluator
class RankAttack:
    """RAP-RANK over many units, scored against the truth and the paper's baselines.

    Parameters
    ----------
    problems : units to attack (each with ``truth`` for scoring).
    frame, geography : the microdata and its geography columns (coarse to fine), for the parent
        baselines and ``init='parent'``; without them only the holdout baseline is computed.
    options : :class:`RankOptions`.
    noise : constraint key (or ``"*"``) -> noise standard deviation of that published value.
    """

    def __init__(self, problems: Sequence[Problem], frame=None, geography: Sequence[str] = (),
                 options: RankOptions | None = None, noise: Mapping[str, float] | None = None):
        self.problems = list(problems)
        self.frame, self.geography = frame, tuple(geography)
        self.options = options or RankOptions()
        self.noise = dict(noise or {})

    def _parents(self, p: Problem, cache: dict) -> dict[str, np.ndarray]:
        if self.frame is None or p.level not in self.geography:
            return {}
        depth = self.geography.index(p.level)
        return {self.geography[j - 1]: parent_rows(self.frame, self.geography, p, j, cache)
                for j in range(depth, 0, -1)}

    def evaluate(self) -> RankResults:
        opts = self.options
        device = resolve_device(opts.device)
        start = time.perf_counter()
        torch = _torch()
        threads = torch.get_num_threads()
        if device == "cpu" and opts.threads:
            torch.set_num_threads(opts.threads)
        try:
            return self._evaluate(device, start)
        finally:
            torch.set_num_threads(threads)

    def _evaluate(self, device: str, start: float) -> RankResults:
        opts = self.options
        self._device = device
        cache: dict = {}
        parents = [self._parents(p, cache) for p in self.problems]
        priors = [next(iter(pp.values()), None) for pp in parents]   # the closest parent
        if opts.init == "parent" and any(pr is None for pr in priors):
            notes = ["init=parent: units without a parent geography start uniform"]
        else:
            notes = []
        out: list = [None] * len(self.problems)
        groups: dict = {}
        for i, p in enumerate(self.problems):
            groups.setdefault(p.domains, []).append(i)
        for domains, members in groups.items():
            enc = _Encoding([self.problems[i] for i in members], self.noise)
            notes.extend(n for n in enc.notes if n not in notes)
            local = {i: j for j, i in enumerate(members)}
            order = sorted(members, key=lambda i: (self.problems[i].n_rows[1], i))
            for batch in self._batches(order, len(enc.query_slots)):
                sub = [self.problems[i] for i in members]
                res = _attack_batch(sub, [priors[i] for i in members], enc, [local[i] for i in batch], opts, device)
                for j, i in enumerate(batch):
                    out[i] = (res.rounded[j], res.loss[j], res.consistent[j])
        units = tuple(self._score(p, parents[i], *out[i]) for i, p in enumerate(self.problems))
        return RankResults(units, opts, device, time.perf_counter() - start, tuple(notes))

    def _batches(self, order: list[int], n_queries: int):
        budget = self.options.batch_elements or (2 ** 28 if self._device == "cuda" else 2 ** 24)
        batch: list[int] = []
        first = 0
        for i in order:   # sorted by size: cut at the memory budget, or when padding would waste > ~25%
            n = max(1, self.problems[i].n_rows[1])
            if batch and ((len(batch) + 1) * n * n_queries * self.options.runs > budget or n > first * 1.25 + 1):
                yield batch
                batch = []
            if not batch:
                first = n
            batch.append(i)
        if batch:
            yield batch

    def _score(self, p: Problem, parents: dict, rounded: list, loss: float, consistent: float) -> UnitRank:
        grid = self.options.grid
        ranked = tuple(rank_rows(np.concatenate(rounded)) if rounded and len(rounded[0]) else [])
        truth = p.truth if p.truth is not None else np.zeros((0, len(p.domains)), np.int64)
        true_set = set(map(tuple, truth.tolist()))
        u = len(true_set)
        attack = match_rates(ranked, true_set, u, grid)
        baselines: dict = {"holdout": None}
        if len(truth) >= 2:
            rng = _seed(self.options.seed, unit_key(p), 0x401D)
            perm = rng.permutation(len(truth))
            held, target = truth[perm[: len(truth) // 2]], truth[perm[len(truth) // 2:]]
            tset = set(map(tuple, target.tolist()))
            hranked = rank_rows(held)
            baselines["holdout"] = match_rates(hranked, tset, min(len(tset), len(hranked)), grid)
        for name, rows in parents.items():
            baselines[name] = match_rates(rank_rows(rows), true_set, u, grid) if len(rows) else None
        return UnitRank(p, ranked, None if attack is None else tuple(attack),
                        {k: None if v is None else tuple(v) for k, v in baselines.items()}, u, loss, consistent)


def rank_inputs(inputs, options: RankOptions | None = None, noise: Mapping[str, float] | None = None) -> RankResults:
    """Tabulate the inputs, build every unit's problem and run :class:`RankAttack` on them."""
    problems = inputs.problems(inputs.release())
    return RankAttack(problems, inputs.frame, inputs.schema.geography, options, noise).evaluate()
