"""RAP-RANK: confidence-ranked reconstruction by relaxed projection (Dick et al., PNAS 2023; seed 001).

The attack, per geographic unit (a :class:`~audit.problem.build.Problem`):

1. **Relaxed dataset.** ``n`` rows, each a per-column softmax over the column's atoms (the one-hot
   blocks of the problem's domains), parameterised by logits.
2. **Differentiable answers.** A count query (a conjunction of "column in set" clauses) is answered
   by the sum over relaxed rows of the product over its clauses of the row's probability mass inside
   the clause's set. ``sum(col)`` uses the value-weighted mass for ``col``; ``mean(col)`` is the
   pair ``lo * count <= sum <= hi * count``; a median in ``[lo, hi]`` the two counts it implies (at least
   half the group at or below ``hi``, at least half at or above ``lo``), checked exactly on the rounded data.
3. **Loss.** Squared distance of every answer to its published constraint: exact cells to their
   value, interval cells (suppressed, rounded) only outside the interval (integer bounds tightened for
   open ends), noisy cells to their value weighted by ``1 / max(sigma, 1)^2``. The schema's structural
   edits are count-zero queries.
4. **Adam**, then **randomized rounding** (each row's atoms sampled from its softmax; a row that breaks an
   edit is redrawn column by column with the atoms the edits forbid masked, :mod:`.rank_rounding`; on a small
   unit where no run reproduces the release, each run is replaced by the SAT solver's consistent dataset
   nearest it by phase, :mod:`.rank_projection`). During the first
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
when there is one. Units are sorted by size and cut into batches under ``batch_elements`` (and at 25% padding
on CPU, 2x on a GPU). A batch of small units is answered row by row (:mod:`.rank_rows`), else through its
slots' Gram matrix (:mod:`.rank_program`). A unit's result does not depend on the units batched with it (up
to float rounding), so ``workers`` forked processes on CPU give the rankings of one.

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

import multiprocessing
import time
from collections import Counter
from dataclasses import fields
from typing import Mapping, Sequence

import numpy as np

from ...problem.build import Problem
from .rank_options import RankOptions, _seed, _torch, resolve_device, unit_key
from .rank_encoding import _Encoding, skip_notes
from .rank_relaxation import _attack_batch
from .rank_results import RankResults, UnitRank, match_rates, parent_rows, rank_rows


_FORKED = None   # (attack, parents, priors) while a pool of forked workers ranks its units


def _rank_part(indices: list[int]) -> tuple[dict, Counter]:
    attack, parents, priors = _FORKED
    return attack._rank_units(indices, parents, priors)


class RankAttack:
    """RAP-RANK over many units, scored against the truth and the paper's baselines.

    Parameters
    ----------
    problems : units to attack (each with ``truth`` for scoring).
    frame, geography : the microdata and its geography columns (coarse to fine), for the parent
        baselines and ``init='parent'``; without them only the holdout baseline is computed.
    options : :class:`RankOptions`.
    noise : constraint key (or ``"*"``) -> noise standard deviation of that published value.
    workers : on CPU, rank the units in this many forked processes (units of every size in each; the rankings
        are those of one process: a unit's result does not depend on the units batched with it).
    """

    def __init__(self, problems: Sequence[Problem], frame=None, geography: Sequence[str] = (),
                 options: RankOptions | None = None, noise: Mapping[str, float] | None = None, workers: int = 1):
        self.problems = list(problems)
        self.workers = max(1, int(workers))
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
        order = sorted(range(len(self.problems)), key=lambda i: (self.problems[i].n_rows[1], i))
        workers = min(self.workers, len(order))
        if workers > 1 and device == "cpu" and "fork" in multiprocessing.get_all_start_methods():
            global _FORKED
            _FORKED = (self, parents, priors)     # the workers inherit the problems and frame by fork, unpickled
            try:
                with multiprocessing.get_context("fork").Pool(workers) as pool:   # units of every size in each
                    parts = pool.map(_rank_part, [order[w::workers] for w in range(workers)])
            finally:
                _FORKED = None
        else:
            parts = [self._rank_units(order, parents, priors)]
        scored: dict = {}
        skipped: Counter = Counter()
        for part, skips in parts:
            scored.update(part)
            skipped.update(skips)
        units = tuple(UnitRank(p, **scored[i]) for i, p in enumerate(self.problems))
        notes.extend(skip_notes(skipped))
        return RankResults(units, opts, device, time.perf_counter() - start, tuple(notes))

    def _rank_units(self, indices: Sequence[int], parents: list, priors: list) -> tuple[dict, Counter]:
        """Attack and score the units ``indices``: each one's :class:`UnitRank` fields but its problem, and the
        cells left out of the relaxed loss."""
        opts, device = self.options, self._device
        self._parent_ranks: dict = {}
        out: dict = {}
        skipped: Counter = Counter()
        groups: dict = {}
        for i in indices:
            groups.setdefault(self.problems[i].domains, []).append(i)
        for domains, members in groups.items():
            enc = _Encoding([self.problems[i] for i in members], self.noise)
            skipped.update(enc.skipped)
            local = {i: j for j, i in enumerate(members)}
            sub = [self.problems[i] for i in members]
            order = sorted(members, key=lambda i: (self.problems[i].n_rows[1], i))
            for batch in self._batches(order, len(enc.query_slots)):
                res = _attack_batch(sub, [priors[i] for i in members], enc, [local[i] for i in batch], opts, device)
                for j, i in enumerate(batch):
                    unit = self._score(self.problems[i], parents[i], res.rounded[j], res.loss[j], res.consistent[j],
                                       res.broken[j], res.rounded_ok[j])
                    out[i] = {f.name: getattr(unit, f.name) for f in fields(UnitRank) if f.name != "problem"}
        return out, skipped

    def _batches(self, order: list[int], n_queries: int):
        cuda = self._device == "cuda"
        # on CPU past ~2**22 a step's tensors outgrow the caches: 330 blocks of 3-4 persons cost 15-20% more a unit
        # than 80-160 (bench/results/rank/extract-cpu-schedule.md)
        budget = self.options.batch_elements or (2 ** 28 if cuda else 2 ** 22)
        # a GPU step of the extract's small blocks costs its kernel launches, not its padding: wider batches there
        spread = 2.0 if cuda else 1.25
        batch: list[int] = []
        first = 0
        for i in order:   # sorted by size: cut at the memory budget, or when padding would waste > ~25% (CPU)
            n = max(1, self.problems[i].n_rows[1])
            if batch and ((len(batch) + 1) * n * n_queries * self.options.runs > budget or n > first * spread + 1):
                yield batch
                batch = []
            if not batch:
                first = n
            batch.append(i)
        if batch:
            yield batch

    def _score(self, p: Problem, parents: dict, rounded: list, loss: float, consistent: float,
               broken: tuple = (), rounded_ok: float = 0.0) -> UnitRank:
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
        for name, rows in parents.items():   # a parent's ranking once for all its units (the state's: 64k rows)
            if id(rows) not in self._parent_ranks:
                self._parent_ranks[id(rows)] = (rows, rank_rows(rows))
            ranked_parent = self._parent_ranks[id(rows)][1]
            baselines[name] = match_rates(ranked_parent, true_set, u, grid) if len(rows) else None
        return UnitRank(p, ranked, None if attack is None else tuple(attack),
                        {k: None if v is None else tuple(v) for k, v in baselines.items()}, u, loss, consistent,
                        broken, rounded_ok)


def rank_inputs(inputs, options: RankOptions | None = None, noise: Mapping[str, float] | None = None,
                workers: int = 1) -> RankResults:
    """Tabulate the inputs, build every unit's problem and run :class:`RankAttack` on them."""
    problems = inputs.problems(inputs.release())
    return RankAttack(problems, inputs.frame, inputs.schema.geography, options, noise, workers).evaluate()
