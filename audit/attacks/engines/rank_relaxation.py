"""RAP-RANK's relaxed datasets: start rows, the batched tensor program, Adam and randomized rounding."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ...memo import keep
from ...problem.build import Problem
from .rank_options import RankOptions, _seed, _torch, unit_key
from .rank_encoding import _Encoding
from .rank_program import _Program
from .rank_projection import exact_engine, project
from .rank_rounding import breaks, edit_tables, medians_hold, respect_edits


def _row_logits(rows: np.ndarray, sizes: Sequence[int], mass: float) -> np.ndarray:
    """Logits whose softmax puts ``mass`` on each row's atom and spreads the rest evenly (all rows at once)."""
    a = np.asarray(sizes, dtype=np.float64)
    cold = (1 - mass) / a
    out = np.repeat(np.log(cold), np.asarray(sizes, dtype=np.int64))[None].repeat(len(rows), 0)
    if len(sizes):
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        out[np.arange(len(rows))[:, None], rows + starts] = np.log(cold + mass)
    return out


def _uniform_rows(problem: Problem, n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random dataset of the schema: codes uniform, so atoms in proportion to their size (each column
    drawn as ``rng.choice(atoms, n, p=sizes / total)`` draws it, from the same uniforms, without its checks)."""
    cols = [cdf.searchsorted(rng.random(n), side="right") for cdf in _atom_cdfs(problem.domains)]
    return np.column_stack(cols).astype(np.int64) if cols else np.zeros((n, 0), np.int64)


_CDFS: dict = {}


def _atom_cdfs(domains) -> list[np.ndarray]:
    """Per column, the cumulative share of its codes in each atom (normalised as ``Generator.choice`` does)."""
    key = tuple(map(id, domains))
    if key not in _CDFS:
        out = []
        for d in domains:
            w = np.array([len(a) for a in d.atoms], dtype=np.float64)
            cdf = (w / w.sum()).cumsum()
            out.append(cdf / cdf[-1])
        keep(_CDFS, key, (domains, out), 64)  # the domains kept alive: their ids stay theirs
    return _CDFS[key][1]


def _start_rows(problem: Problem, n: int, prior: np.ndarray | None, init: str, rng) -> np.ndarray:
    if init == "parent" and prior is not None and len(prior):
        replace = len(prior) < n
        return prior[rng.choice(len(prior), size=n, replace=replace)]
    return _uniform_rows(problem, n, rng)


@dataclass(frozen=True)
class _BatchOut:
    rounded: list          # per unit: list over runs of (n, C) atom arrays
    loss: list             # per unit: final relaxed loss (mean over runs)
    consistent: list       # per unit: fraction of runs whose rounded dataset reproduces the release
    broken: list           # per unit: the (cell key, runs) most often broken by the rounded datasets
    rounded_ok: list       # per unit: the same share before projection (the rounding alone)


def relaxed_residuals(problem: Problem, rows: np.ndarray, noise: Mapping[str, float] | None = None,
                      combine: str = "factor") -> np.ndarray:
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
    with torch.no_grad():
        return prog.residual(prog.integer_answers(torch.tensor(rows[None])))[0, :len(enc.terms[0])].numpy()


def _attack_batch(problems: Sequence[Problem], priors: Sequence[np.ndarray | None], enc: _Encoding,
                  unit_ids: Sequence[int], opts: RankOptions, device: str) -> _BatchOut:
    torch = _torch()
    dev = torch.device(device)
    torch.manual_seed(opts.seed)
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
        starts = []
        for k in range(K):
            rng = _seed(opts.seed, unit_key(p), k)
            starts.append(_start_rows(p, n, priors[u], opts.init, rng))
            uniforms[b, k, :n] = rng.random((n, C))
        init[b, :, :n] = _row_logits(np.concatenate(starts), sizes, opts.init_mass).reshape(K, n, width)
    prog = _Program(enc, [enc.terms[u] for u in unit_ids], K, rowmask.reshape(B * K, N), dev, opts.combine)
    R = B * K
    theta = prog.leaves(init.reshape(R, N, width))
    residual, tw = prog.residual, prog.w
    opt = _Adam(theta, opts.lr)
    loss_r = torch.zeros(R, device=dev)
    # stochastic terms (the "randomness of SGD"): during the first ``explore`` share of the steps each
    # term enters a step's loss with probability ``keep``, on a low-discrepancy schedule whose phase is
    # drawn per (unit, run, term) from the numpy generators: deterministic and batch-independent.
    phase = torch.tensor(np.repeat(np.stack([_seed(opts.seed, unit_key(problems[u]), 0x5EED).random(tw.shape[1])
                                             for u in unit_ids]), K, axis=0), device=dev, dtype=torch.float32)
    run = torch.arange(K, device=dev, dtype=torch.float32).repeat(B)[:, None]     # the run, not the batch row: batch-independent
    phase = torch.remainder(phase + run * 0.7548776662, 1.0)
    phase, tw = prog.orient(phase), prog.orient(tw)
    explore = int(opts.steps * opts.explore) if opts.keep < 1 else 0
    for step in range(opts.steps):
        weight = tw
        if step < explore:
            weight = tw * (torch.remainder(phase + step * 0.6180339887, 1.0) < opts.keep)
        loss_r = prog.loss(prog.forward(theta), weight)
        loss_r.sum().backward()
        opt.step()
    with torch.no_grad():
        ps = prog.column_probs(theta)
        if opts.steps == 0:
            loss_r = prog.loss(prog.forward(theta), tw)
        u = torch.tensor(uniforms.reshape(R, N, C), device=dev)
        picks = []
        for c in range(C):
            cdf = torch.cumsum(ps[c], dim=-1)
            picks.append((cdf < u[..., c:c + 1]).sum(-1).clamp_max(sizes[c] - 1))
        rounded = torch.stack(picks, dim=-1)                                     # (R, N, C)
        rounded_np = _respect_edits(problems, unit_ids, rounded.cpu().numpy().reshape(B, K, N, C), ps, ns, opts)
        rounded = torch.tensor(rounded_np.reshape(R, N, C), device=dev)
        r = residual(prog.integer_answers(rounded))
        failed = ((r > 1e-3) & prog.check).cpu().numpy().reshape(B, K, -1)
        loss_np = loss_r.detach().cpu().numpy().reshape(B, K)
    rows = [[rounded_np[b, k, :ns[b]] for k in range(K)] for b in range(B)]
    goods, before = [], []
    for b, u in enumerate(unit_ids):
        medians = enc.medians.get(u, ())
        goods.append([not failed[b, k].any() and medians_hold(problems[u], rows[b][k], medians) for k in range(K)])
        before.append(float(np.mean(goods[-1])))
    projected = [(b, k, near) for b, u in enumerate(unit_ids) if not any(goods[b]) and opts.project
                 and 0 < ns[b] <= opts.project_rows for k, near in _project_unit(problems[u], rows[b])]
    if projected:   # the SAT solver's datasets checked against every cell at once, as the rounded ones were
        near_np = rounded_np.reshape(R, N, C).copy()
        for b, k, near in projected:
            if len(near) == ns[b]:
                near_np[b * K + k, :ns[b]] = near
        with torch.no_grad():
            r = residual(prog.integer_answers(torch.tensor(near_np, device=dev)))
            missed = ((r > 1e-3) & prog.check).any(1).cpu().numpy()
        for b, k, near in projected:
            u = unit_ids[b]
            exact = len(near) == ns[b] and not enc.notes    # every cell is a checked term: the tensor check
            fits = not missed[b * K + k] if exact else not problems[u].violations(near)
            if fits and medians_hold(problems[u], near, enc.medians.get(u, ())):
                rows[b][k], goods[b][k] = near, True
    ok, why = [], []
    for b, u in enumerate(unit_ids):
        medians, good = enc.medians.get(u, ()), goods[b]
        ok.append(float(np.mean(good)))
        broken: Counter = Counter(enc.terms[u][t].key for k in range(K) for t in np.flatnonzero(failed[b, k]))
        broken.update(c.key for k in range(K) for c in medians if not c.holds(problems[u].value(rows[b][k], c)))
        broken = broken if before[-1] == 0 else Counter()
        why.append(tuple(broken.most_common(3)))
    return _BatchOut(rows, [float(loss_np[b].mean()) for b in range(B)], ok, why, before)


class _Adam:
    """``torch.optim.Adam(params, lr)`` (the single-tensor CPU path, the same float operations in the same order),
    without the optimiser machinery: its first use imports torch's compiler (seconds of CPU in every worker)."""

    def __init__(self, params: list, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params, self.lr, self.betas, self.eps, self.t = params, lr, betas, eps, 0
        self.m = [p.detach().new_zeros(p.shape) for p in params]
        self.v = [p.detach().new_zeros(p.shape) for p in params]

    def step(self) -> None:
        torch = _torch()
        b1, b2 = self.betas
        self.t += 1
        step_size = self.lr / (1 - b1 ** self.t)
        root = (1 - b2 ** self.t) ** 0.5
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                g, p.grad = p.grad, None
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m, (v.sqrt() / root).add_(self.eps), value=-step_size)


def _respect_edits(problems, unit_ids, rounded: np.ndarray, ps, ns, opts: RankOptions) -> np.ndarray:
    """Redraw the rounded rows that break an edit (:func:`respect_edits`), fetching only their softmaxes. Units
    with the same edits (a level's) are checked in one pass over all their runs' rows."""
    B, K, N, C = rounded.shape
    torch = _torch()
    groups: dict = {}
    for b, u in enumerate(unit_ids):
        groups.setdefault(tuple(map(id, problems[u].edits)), []).append(b)
    for members in groups.values():
        edits = edit_tables(problems[unit_ids[members[0]]])
        if not edits:
            continue
        sub = rounded[members]
        bad_rows = breaks(sub.reshape(-1, C), edits).reshape(len(members), K, N)
        bad_rows &= np.arange(N) < np.asarray([ns[b] for b in members])[:, None, None]
        at = np.nonzero(bad_rows)                       # every bad row's softmaxes fetched at once, a column each
        flat = torch.as_tensor(np.asarray(members)[at[0]] * K + at[1], device=ps[0].device)
        rows_at = torch.as_tensor(at[2], device=ps[0].device)
        fetched = [p[flat, rows_at].cpu().numpy() for p in ps]
        start = 0
        for i, k in zip(*np.nonzero(bad_rows.any(2))):   # row-major, as np.nonzero lists the bad rows
            b, u = members[i], unit_ids[members[i]]
            rows, bad = rounded[b, k, :ns[b]], np.flatnonzero(bad_rows[i, k])
            probs = [np.zeros((len(rows), p.shape[-1]), np.float64) for p in ps]
            for c, got in enumerate(fetched):
                probs[c][bad] = got[start:start + len(bad)]
            start += len(bad)
            rounded[b, k, :ns[b]] = respect_edits(problems[u], rows, probs, opts.seed, k, edits)
    return rounded


def _project_unit(problem: Problem, runs: list):
    """For each of a unit's rounded datasets, the consistent dataset the SAT solver finds nearest it
    (:func:`~audit.attacks.engines.rank_projection.project`) as ``(run, rows)``, where it finds one; none without
    python-sat. The caller checks them against the release."""
    engine = exact_engine(problem)
    if engine is None:
        return
    for k, rows in enumerate(runs):
        near = project(engine, rows)
        if near is not None:
            yield k, near
