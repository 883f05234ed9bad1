"""The rounding and noise strategies of ``audit protect``: the least base, or the least Laplace scale, whose
release passes the rules (noise in an attacker-at-confidence model, not a proof)."""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AuditError, InconsistentRelease, InternalError
from ..attacks.exact import ExactOptions, UnitResult, audit_unit
from ..inputs import Inputs
from ..problem.build import Problem
from ..release.constraints import PUBLISHED, Constraint
from ..findings.cells import GridKeeper, grid_cap, grid_json
from ..findings.document import document, unit_json
from ..policy.rules import apply
from ..attacks.engines.linear_privacy import privacy_loss
from .claims import failing, rules_failed
from .options import Policy, ProtectOptions, geo_key
from .protected import protected_schedule
from .unit import unit_contexts
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

def _audit_truthful(problem: Problem, exact: ExactOptions) -> UnitResult:
    """:func:`audit_unit` on a rounded or noisy release whose intervals hold the true rows: a release
    that admits no dataset is then a bug, never a scheme that fails."""
    try:
        return audit_unit(problem, exact)
    except InconsistentRelease as err:
        raise InternalError(f"unit {'/'.join(problem.geo)}: no dataset reproduces a release whose intervals "
                            f"hold the true rows ({err.message})") from err


# ------------------------------------------------------------------------------ rounding

def _sweep_failing(sweep: list) -> dict[str, list[str]]:
    """Unit -> rules it fails at the last step of a round or noise sweep (the sweep stops at the first)."""
    return {geo: d["failing_rules"] for geo, d in (sweep[-1]["units"] if sweep else {}).items() if d.get("failing_rules")}


def _round_sweep(inputs: Inputs, options: ProtectOptions, policy: Policy, failing_units: set[str], log,
                 rules) -> tuple[list, int | None]:
    sweep = []
    contexts = [c for c in unit_contexts(inputs) if geo_key(c.geo) in failing_units]
    exact = replace(options.exact, explain="none")
    for base in options.round_bases:
        sched = protected_schedule(inputs.schedule, round_to=base)
        ok, detail = True, {}
        for ctx in contexts:
            p, release = ctx.problem(schedule=replace(sched, tables=tuple(t for t in sched.tables if t.level == ctx.level),
                                                     suppress={}))
            res = _audit_truthful(p, exact)
            bad, undecided = failing(res, policy)
            recon = policy.reconstructed and res.reconstructed
            detail[geo_key(ctx.geo)] = {"failing_claims": len(bad), "undecided": len(undecided), "reconstructed": res.reconstructed}
            if bad or recon or (undecided and policy.undecided):
                detail[geo_key(ctx.geo)]["failing_rules"] = rules_failed(res, release, rules)
                ok = False
                break
        sweep.append({"round_to": base, "passes": ok, "units": detail})
        if log:
            log(f"round_to {base}: {'passes' if ok else 'fails'}")
        if ok:
            return sweep, base
    return sweep, None


# ------------------------------------------------------------------------------ noise

def confidence_z(alpha: float) -> float:
    """Half-width of Laplace(b) at confidence 1-α, in units of b: P(|X| > z b) = e^-z = α."""
    return math.log(1.0 / alpha)


def noisy_problem(problem: Problem, scale: float, alpha: float) -> Problem:
    """Exact published counts widened to the true count ± z·b (integers, clipped at 0)."""
    half = confidence_z(alpha) * scale
    cons = []
    for c in problem.constraints:
        if c.statistic.kind == "count" and c.exact and c.predicate.clauses:
            t = float(c.lo)
            cons.append(Constraint(c.key, c.predicate, c.statistic, Fraction(max(0, math.ceil(t - half))),
                                   Fraction(math.floor(t + half))))
        else:
            cons.append(c)
    return replace(problem, constraints=tuple(cons))


def l1_sensitivity(inputs: Inputs, level: str) -> int:
    """Most count cells of one level a single record can fall in (summed per table: an upper bound)."""
    schema, total = inputs.schema, 0
    for t in (t for t in inputs.schedule.tables if t.level == level):
        cells = [c for c in t.cells if any(s.kind == "count" for s in c.stats)]
        cols = sorted({n for c in cells for n, _ in c.predicate.clauses})
        combos = math.prod(len(schema.column(n).codes) for n in cols) if cols else 1
        if combos > 200_000:
            total += len(cells)
            continue
        grid = pd.DataFrame(list(itertools.product(*(schema.column(n).codes for n in cols))), columns=cols) \
            if cols else pd.DataFrame(index=[0])
        hits = np.zeros(len(grid), dtype=np.int64)
        for c in cells:
            hits += c.predicate.mask(grid)
        total += int(hits.max()) if len(hits) else 0
    return total


def _noise(inputs: Inputs, options: ProtectOptions, policy: Policy, failing_units: set[str], out: Path, log,
           rules) -> dict:
    exact = replace(options.exact, explain="none")
    contexts = [c for c in unit_contexts(inputs) if geo_key(c.geo) in failing_units]
    problems = {geo_key(c.geo): c.problem()[0] for c in contexts}
    z = confidence_z(options.alpha)
    sweep, chosen = [], None
    for b in options.noise_scales:
        ok, detail = True, {}
        for key, p in problems.items():
            res = _audit_truthful(noisy_problem(p, b, options.alpha), exact)
            bad, undecided = failing(res, policy)
            recon = policy.reconstructed and res.reconstructed
            detail[key] = {"failing_claims": len(bad), "undecided": len(undecided), "reconstructed": res.reconstructed}
            if bad or recon or (undecided and policy.undecided):
                detail[key]["failing_rules"] = rules_failed(res, None, rules)
                ok = False
                break
        sweep.append({"scale": b, "half_width": round(z * b, 4), "passes": ok, "units": detail})
        if log:
            log(f"noise scale {b}: {'passes' if ok else 'fails'}")
        if ok:
            chosen = b
            break
    levels = inputs.schedule.levels
    sens = max(l1_sensitivity(inputs, lv) for lv in levels)
    res: dict[str, Any] = {"sweep": sweep, "scale": chosen, "alpha": options.alpha, "z": round(z, 4),
                           "model": ("attacker at confidence 1-alpha, not a proof: each noisy count is known to "
                                     "within +-z*b of the true count (z = ln(1/alpha), per cell); non-count "
                                     "statistics are published unchanged")}
    if chosen is None:
        res["reason"] = f"no scale in {list(options.noise_scales)} meets the rules"
        res["rank"] = {"run": False, "why": "no scale met the rules"}
        return res
    loss = privacy_loss("laplace", chosen, queries=sens)
    res["mechanism"] = "laplace"
    res["l1_sensitivity"] = sens
    res["epsilon"] = loss.epsilon
    res["epsilon_per_cell"] = loss.epsilon_per_query
    res["epsilon_note"] = loss.note or f"epsilon = L1 sensitivity {sens} / scale"
    if loss.epsilon is None:
        res["epsilon"] = sens / chosen
        res["epsilon_note"] = f"OpenDP missing: epsilon = L1 sensitivity {sens} / scale {chosen} (pure DP)"
    # error added: one seeded draw over every exact published count, and its expectation
    rng = np.random.default_rng(options.exact.seed)
    rows, errs = [], []
    drawn: dict[tuple, dict[str, float]] = {}  # (level, geo) -> value key -> the noisy value, for the grids
    for unit in inputs.release():
        for v in unit.values:
            if v.status == PUBLISHED and v.stat.kind == "count":
                e = float(rng.laplace(0.0, chosen))
                errs.append(e)
                rows.append({"geo": geo_key(unit.geo), "cell": v.cell.key, "true": int(v.value),
                             "noisy": round(float(v.value) + e, 3)})
                drawn.setdefault((unit.level, unit.geo), {})[v.key] = rows[-1]["noisy"]
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "noisy_release.csv", index=False)
    res["error"] = {"expected_abs": chosen, "expected_rmse": round(math.sqrt(2) * chosen, 4),
                    "draw_mean_abs": round(float(np.mean(np.abs(errs))), 4) if errs else 0.0,
                    "draw_rmse": round(float(np.sqrt(np.mean(np.square(errs)))), 4) if errs else 0.0,
                    "cells": len(errs), "draw_file": "noisy_release.csv"}
    res["rank"] = _rank_at(inputs, problems, chosen, options) if options.rank else {"run": False, "why": "--no-rank"}
    # the re-audit under the model: every unit at the chosen scale, as a findings document

    start = time.perf_counter()
    units = []
    contexts = unit_contexts(inputs)
    keeper = GridKeeper(grid_cap(len(contexts)))  # the tables as published: noisy counts shown as drawn
    for ctx in contexts:
        p, release = ctx.problem()
        units.append(unit_json(audit_unit(noisy_problem(p, chosen, options.alpha), options.exact), None))
        keeper.offer(units[-1], grid_json(release, drawn.get((release.level, release.geo))))
    doc = document(inputs, options.exact, units, time.perf_counter() - start, rules)
    if res["rank"].get("run") and isinstance(res["rank"].get("result"), dict):
        doc = apply(doc, rules, rank=res["rank"]["result"])  # the rank_lift rule now has its curve
    res["_after"] = doc
    return res


def _rank_at(inputs: Inputs, problems: dict, scale: float, options: ProtectOptions) -> dict:
    try:
        from ..attacks.engines.rank import RankAttack, RankOptions
        from ..attacks.engines.rank_options import torch_available
    except ImportError:
        return {"run": False, "why": "the ranking engine (audit/attacks/engines/rank.py) is not available"}
    if not torch_available():
        return {"run": False, "why": "torch is not installed"}
    rng = np.random.default_rng(options.exact.seed + 1)
    noisy = []
    for p in problems.values():
        cons = []
        for c in p.constraints:
            if c.statistic.kind == "count" and c.exact and c.predicate.clauses:
                v = Fraction(float(c.lo) + float(rng.laplace(0.0, scale))).limit_denominator(1000)
                cons.append(Constraint(c.key, c.predicate, c.statistic, v, v))
            else:
                cons.append(c)
        noisy.append(replace(p, constraints=tuple(cons)))
    try:
        ropts = RankOptions(runs=8, steps=150, seed=options.exact.seed, device="auto")
        res = RankAttack(noisy, inputs.frame, inputs.schema.geography, ropts,
                         noise={"*": math.sqrt(2) * scale}).evaluate()
        return {"run": True, "scale": scale, "runs": ropts.runs, "steps": ropts.steps, "result": res.to_dict()
                if hasattr(res, "to_dict") else str(res)}
    except (AuditError, MemoryError) as exc:  # optional attack: report, do not fail the protection (bugs propagate)
        return {"run": False, "why": f"the ranking attack failed: {exc}"}
