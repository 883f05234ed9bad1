"""RAP-RANK's scoring against the truth (top-k match rates, baselines) and its per-unit and pooled results."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np

from ...problem.build import Problem
from ...outputs.svg import line_chart
from .rank_options import RankOptions


def rank_rows(rows: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
    """R(X): the unique rows of the multiset ``rows``, most frequent first (ties in row order)."""
    counts = Counter(map(tuple, np.asarray(rows, dtype=np.int64).tolist()))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def match_rates(ranked: Sequence[tuple[tuple, int]], truth: set, u: int, grid: Sequence[float]) -> list[float] | None:
    """Expected top-k match rate at ``k = max(1, round(x * u))`` for each ``x``, ties broken at random."""
    if u <= 0:
        return None
    groups: list[tuple[int, int]] = []           # (size, matches) per frequency, in rank order
    need, seen = max(1, int(round(max(grid) * u))), 0
    for row, freq in ranked:
        if seen >= need and groups[-1][2] != freq:   # the groups the largest k reaches are complete
            break
        seen += 1
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
        whole = ("atoms", problem.domains)    # every row's atoms, mapped once (not once per ancestor)
        if whole not in cache:
            cache[whole] = (np.column_stack([frame[d.name].map(d.lookup()).to_numpy(dtype=np.int64)
                                             for d in problem.domains]) if len(frame)
                            else np.zeros((0, len(problem.domains)), np.int64))
        m = np.ones(len(frame), dtype=bool)
        for col, value in zip(geography[:depth], problem.geo[:depth]):
            m &= frame[col].to_numpy() == value
        cache[key] = cache[whole][m]
    return cache[key]


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
    broken: tuple = ()                                 # ((cell key, runs breaking it), ...) most often first
    rounded: float = 0.0                               # share of runs reproducing the release before projection

    def explain(self) -> list[str]:
        """Plain notes on why runs fail to reproduce the release or rows fail to match (empty when neither)."""
        p, out = self.problem, []
        if self.consistent == 0:
            worst = ", ".join(f"{key} ({n} breaks)" for key, n in self.broken) or "none recorded"
            out.append(f"no run's rounded dataset reproduces the release; cells most often broken: {worst}. "
                       "The relaxed optimum is not an integer dataset, and the rounding misses it: more --steps or "
                       "--runs help on small units")
        elif self.rounded == 0:
            out.append(f"the rounding alone reproduced the release in no run; each run was replaced by the consistent "
                       f"dataset the SAT solver found nearest it ({self.consistent:.0%} of runs reproduce it)")
        if self.attack is not None and max(self.attack) == 0:
            loose = averaged_only(p)
            if loose:
                out.append("no ranked row matches a true row exactly: "
                           + "; ".join(f"{name} is published only as a {how}, so a row must guess its exact value "
                                       f"among {size}" for name, how, size in loose))
            else:
                out.append("no ranked row matches a true row exactly: the published cells leave the unit's rows "
                           "too free for whole-row matches")
        return out

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
                "rounded_consistent_runs": round(self.rounded, 4),
                "broken": [[k, int(n)] for k, n in self.broken],
                "notes": list(p.notes) + self.explain()}


def averaged_only(p: Problem) -> list[tuple[str, str, int]]:
    """Numeric columns no published cell selects on, only sums, means or medians: ``(name, how, values)``."""
    selected = {name for c in p.constraints for name in c.predicate.columns}
    stats: dict = {}
    for c in p.constraints:
        if c.statistic.column:
            stats.setdefault(c.statistic.column, set()).add(c.statistic.kind)
    return [(name, " and ".join(sorted(kinds)), len(p.domains[p.index(name)])) for name, kinds in stats.items()
            if name not in selected and len(p.domains[p.index(name)]) > 2]


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
