"""The proved claims a unit fails under the policy, and the clauses ("suppress one of these cells") their explanations give."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..problem.claims import UNDECIDED, VERIFIED, Claim
from ..attacks.engines import get_engine
from ..attacks.exact import UnitResult
from ..attacks.unit_explain import certificate_cells
from ..attacks.stated import stated_claims
from ..attacks.implied import LinearProof
from ..attacks.large import relaxation_proofs
from ..attacks.unit import plan, unit_cost
from ..problem.build import Problem
from ..release.constraints import UnitRelease
from ..findings.document import claim_json, schema_json, unit_json
from ..outputs.words import claim_text
from ..policy.checks import evaluate
from .options import CLAIM_SHARE, Policy, ProtectOptions, cell_of

def failing(result: UnitResult, policy: Policy) -> tuple[list, list]:
    """(failing verified verdicts, undecided verdicts) of one attacked unit under the policy; a claim's
    columns are those that describe the persons (:meth:`audit.problem.build.Problem.width`)."""
    problem = result.problem
    out, undecided = [], []
    for v in result.verdicts:
        if v.status == UNDECIDED:
            undecided.append(v)
            continue
        if v.status != VERIFIED:
            continue
        k = problem.width(v.claim.assignment)
        if ((v.claim.singleton and not v.direct and policy.derived is not None and k >= policy.derived)
                or (v.claim.singleton and v.direct and policy.direct is not None and k >= policy.direct)
                or (policy.full_records is not None and v.claim.m < policy.full_records
                    and problem.full_record(v.claim.assignment))):
            out.append(v)
    if result.reidentification is not None:  # a person whose sensitive values are proved: the claims pinning them
        seen = {v.claim for v in out}
        out += [v for v in result.reidentification.failing(policy.reidentification, policy.inference)
                if v.claim not in seen]
        if policy.reidentification is not None or policy.inference is not None:
            undecided = undecided + result.reidentification.undecided
    return out, undecided


@dataclass(frozen=True)
class Attempt:
    """One pattern of a unit attacked: the failing claims, a unique reconstruction, the interval ends
    too narrow (the joint search's), the summary the unit reports (``before``/``after`` in
    protection.json); ``reason``: undecided, fail closed."""

    result: UnitResult | None
    bad: list
    recon: bool
    short: list
    summary: dict
    reason: str = ""

    @classmethod
    def of(cls, result: UnitResult, policy: Policy) -> "Attempt":
        """The policy's claim rules on an attacked unit (undecided when the attack did not finish, or
        left claims undecided that the policy counts)."""
        bad, undecided = failing(result, policy)
        reason = "" if result.status == "done" and not (undecided and policy.undecided) else (
            result.reason or f"{len(undecided)} claims undecided: no recommendation (fail closed)")
        summary = {"verified": len(result.verified), "failing_claims": len(bad), "undecided": len(undecided),
                   "reconstructed": result.reconstructed, "solutions": result.solutions}
        return cls(result, bad, bool(policy.reconstructed and result.reconstructed), [], summary, reason)

    @property
    def passes(self) -> bool:
        return not self.reason and not self.bad and not self.recon and not self.short

    def without(self, floor: "Attempt | None", hidden: frozenset = frozenset()) -> "Attempt":
        """This attempt less what ``floor`` (the unit with every cell hidden) fails too: the claims and
        the reconstruction no suppression defeats (suppressing more proves no more), and the too narrow
        intervals of ``hidden`` cells (those every pattern hides)."""
        if floor is None:
            return self
        claims = {v.claim for v in floor.bad}
        pinned = {(c, sense) for c, sense, _ in floor.short if c in hidden or c.rsplit(":", 1)[0] in hidden}
        return replace(self, bad=[v for v in self.bad if v.claim not in claims], recon=self.recon and not floor.recon,
                       short=[s for s in self.short if s[:2] not in pinned])


REMEDY = ("merge the unit with a neighbouring unit before publishing (its tables then describe more persons), "
          "or coarsen or drop the columns the schema leaves a single value, or accept the risk for this unit; "
          "suppressing its total does not help: the attacker is taken to know every unit's population")


def undefeatable(floor: Attempt, final: Attempt, problem: Problem, schema, hidden: frozenset = frozenset(),
                 threshold: bool = False) -> list[dict]:
    """What ``final`` (the last pattern's attempt) still fails that ``floor`` (every cell the search may
    hide, hidden) fails too (of intervals, those of the ``hidden`` cells, which every pattern hides), each
    with why no suppression removes it, in plain words; ``threshold``: the floor keeps the schedule's
    threshold suppressions, which the attacker knows lie below the threshold."""
    n, words, unit = problem.n_rows[1], schema_json(schema), {"level": problem.level, "geo": "/".join(problem.geo)}
    known = (f"the unit's population of {n}" + (" and its child units' populations are" if problem.n_attributes
                                                 < len(problem.domains) else " is") + " known to the attacker "
             "(published totals, or assumed known where a total is hidden)")
    given = "the schema's values and constraints (edits)" + (
        ", and the counts the schedule hides below its threshold (known to lie under it)," if threshold else "")
    out = []
    claims = {v.claim for v in floor.bad}
    for v in (v for v in final.bad if v.claim in claims):
        entry = claim_json(v, final.result)
        cols = " and ".join(", ".join(entry["columns"]).rsplit(", ", 1))
        if v.claim.m == n:
            why = (f"{known}, and {given} allow {'that one person' if n == 1 else 'every person'} "
                   f"no other {cols}: the claim holds in every dataset, whatever cells are hidden")
        else:
            why = f"{known}; with {given} it implies the claim, whatever cells are hidden"
        out.append({"claim": claim_text(entry, words, unit), "columns": entry["columns"], "m": v.claim.m, "why": why})
    if final.recon and floor.recon:
        out.append({"claim": f"{unit['level']} {unit['geo']} is reconstructed (exactly one dataset fits)", "why":
                    f"{known}, and {given} allow exactly one dataset of {n}: "
                    "it is reconstructed whatever cells are hidden"})
    for cell, sense in sorted({s[:2] for s in final.short} & {s[:2] for s in floor.short}):
        if cell in hidden or cell.rsplit(":", 1)[0] in hidden:
            out.append({"cell": cell, "claim": f"the hidden count {cell} is known too narrowly "
                                               f"{'below' if sense == 1 else 'above'} its value (protection_levels)",
                        "why": f"it is hidden in every pattern (below the schedule's threshold or the small_cells rule's), "
                               f"and even with every other cell hidden, {known} and with the threshold and the schema's "
                               "constraints they bound its interval too narrowly"})
    return out


class Floor:
    """What fails whatever is hidden: the unit attacked with every cell the search may hide hidden
    (``attack``), made once, when the search first finds a failure no pattern meets; ``hidden``: the
    cells every pattern hides (their too narrow intervals are set aside too). One piece of code for the
    unit loop (:mod:`audit.protection.unit`) and the joint search (:mod:`audit.protection.secondary`)."""

    def __init__(self, attack: Callable[[], "Attempt"], hidden: frozenset = frozenset()):
        self.attack, self.hidden, self.attempt = attack, hidden, None

    def __call__(self, raw: "Attempt") -> "Attempt":
        """``raw`` less what the floor fails too (``raw`` itself before the floor is made)."""
        return raw.without(self.attempt, self.hidden)

    def made(self) -> bool:
        return self.attempt is not None

    def make(self, raw: "Attempt") -> "Attempt":
        """Attack the floor (once) and return ``raw`` less what it fails too."""
        if self.attempt is None:
            self.attempt = self.attack()
        return self(raw)

    def settle(self, out, raw: "Attempt", seen: "Attempt", problem: Problem, schema, threshold: bool = False) -> None:
        """A finished unit (``out``: its UnitProtection) whose last pattern passes but for the floor's failures
        (``raw``, and ``seen`` less those): what no suppression defeats, why, and the unit's reason."""
        if self.attempt is not None and seen.passes and not raw.passes:
            out.undefeatable = undefeatable(self.attempt, raw, problem, schema, self.hidden, threshold)
        if out.undefeatable:
            out.reason = (f"{len(out.undefeatable)} failures no suppression defeats (the rest are defeated by the "
                          "cells listed); see undefeatable")


def twins(problem: Problem) -> dict[tuple, list[str]]:
    """Claim (assignment, m) -> every published exact count cell that states it directly."""
    out: dict[tuple, list[str]] = {}
    for key, m, cell in stated_claims(problem):
        out.setdefault((key, m), []).append(cell)
    return out


PER_ITERATION = 64  # derived claims explained per iteration of the hitting-set loop


def _to_explain(bad: list, truth: np.ndarray) -> list:
    """The failing claims whose explanations an iteration adds: every direct one (free), and up to
    :data:`PER_ITERATION` derived ones, narrowest first, taken in turn from each record they single
    out. Any failing claim gives a clause the current suppression does not meet, so the loop still
    converges; explaining every one of the hundreds of claims about the same few records each
    iteration is what made it slow."""
    direct = [v for v in bad if v.direct]
    by_record: dict[tuple, list] = {}
    for v in sorted((v for v in bad if not v.direct), key=lambda v: (len(v.claim.assignment), v.claim.assignment)):
        cols = [c for c, _ in v.claim.assignment]
        vals = np.array([a for _, a in v.claim.assignment])
        match = tuple(np.flatnonzero((truth[:, cols] == vals).all(axis=1)).tolist()) if len(truth) else ()
        by_record.setdefault(match, []).append(v)
    picked = [v for turn in itertools.zip_longest(*by_record.values()) for v in turn if v is not None]
    return direct + picked[:PER_ITERATION]


CORES = 16  # explanations sought per explained claim and iteration


class Explanations:
    """A unit's explanation solver for every round of its search: made on the first problem it is given
    (in the unit loop the forced cells hidden, which every later pattern hides too) and asked, in a
    later round hiding at least those cells, among the cells published then. Building it was most of
    a round's explaining on the sf1 tract (8 of 10 s); its pool of counterexamples carries over, its
    work budget is renewed. A round that publishes one of the first problem's hidden cells gets a
    solver of its own (the first one holds that cell as [0, N])."""

    def __init__(self, options: ProtectOptions):
        self.options, self.engine, self.hidden = options, None, frozenset()

    def _make(self, problem: Problem):
        if plan(unit_cost(problem, self.options.exact), self.options.exact)[0]:
            return LinearExplainer(problem)  # a count-only unit past its row slots' bounds
        engine = get_engine("sat", problem, conflicts=self.options.exact.conflicts, seed=self.options.exact.seed,
                            main=False)
        engine.explainer(self.options.exact.explain_budget)
        return engine

    def __call__(self, problem: Problem, hidden: set[str]) -> tuple[object, list[str] | None]:
        """The solver for a round's ``problem`` (its ``hidden`` cells), and the cells explanations may
        name (None: every cell of the solver's own problem)."""
        if self.engine is None:
            self.engine, self.hidden = self._make(problem), frozenset(hidden)
            return self.engine, None
        if not self.hidden <= hidden:
            return self._make(problem), None
        self.engine.explainer().renew(self.options.exact.explain_budget)
        return self.engine, [k for k in self.engine.cells if k not in hidden]


class Shares:
    """A round's explanation budget handed to its claims one at a time, each at most ``most`` (millions of
    propagations; the explainer's work budget, :meth:`Explainer.renew`), so that one hard claim does not spend
    the whole round on a single explanation; what a claim leaves goes to the next ones."""

    def __init__(self, explainer, most: float):
        self.explainer, self.most, self.given = explainer, int(most * 1e6), 0
        self.left = getattr(explainer, "left", None)  # None: no work budget (a LinearExplainer)

    def give(self) -> None:
        """Hand the next claim its share."""
        if self.left is not None:
            self.given = min(self.most, max(self.left, 0))
            self.explainer.renew(self.given / 1e6)

    def take(self) -> None:
        """Charge the claim's work to the round, and hand what is left of the round back to the explainer."""
        if self.left is not None:
            self.left -= self.given - self.explainer.left
            self.explainer.renew(max(self.left, 0) / 1e6)


class LinearExplainer:
    """Explanations without row slots, for a count-only unit attacked in histogram space: a claim's
    cells are those of its checked linear proof (sound, not minimal), never a search over the cells;
    where it has none the caller falls back to every published cell, which imply every claim."""

    def __init__(self, problem: Problem):
        self.cells = tuple(dict.fromkeys(cell_of(c.key) for c in problem.constraints))

    def explainer(self, budget: float | None = None) -> "LinearExplainer":
        return self

    def renew(self, budget: float) -> None:
        """No work budget: nothing is searched."""

    def explain(self, claim: Claim, sufficient=None, certificate: Callable[[], tuple[str, ...] | None] | None = None,
                among=None) -> tuple[tuple[str, ...], bool] | None:
        """The linear proof's cells ``certificate`` gives (when it names only cells ``among``), else None."""
        cells = certificate() if certificate is not None else None
        if not cells or (among is not None and not set(cells) <= set(among)):
            return None
        return tuple(cells), False


def linear_proofs(linear: LinearProof | None, claims: list[Claim]) -> Callable[[Claim], tuple[str, ...] | None]:
    """Claim -> cells of a checked linear proof of it, made when first asked (most claims are explained
    by the solver and never need one): a sparse one (:meth:`LinearProof.sparse`: a few certificate
    cells and the zero cells they need), else the basis combination's or LP bound's with every zero
    cell its regions meet, else None. The basis proof of a claim of the coupled sf1 tract named up to
    4,017 cells, nearly all zero cells, so its clause was met by hiding one cell every proof shares."""
    made: dict[Claim, tuple[str, ...] | None] = {}
    basis: dict[Claim, tuple[str, ...]] = {}

    def proof(claim: Claim) -> tuple[str, ...] | None:
        if linear is None:
            return None
        if claim not in made:
            made[claim] = linear.sparse(claim)
            if made[claim] is None:
                if not basis:
                    basis.update(certificate_cells(linear, claims, {}))
                made[claim] = basis.get(claim)
        return made[claim]
    return proof


def _explain(engine, claim: Claim, hidden: set[str], proof: Callable[[Claim], tuple[str, ...] | None] | None = None,
             among: list[str] | None = None) -> frozenset:
    """A minimal explanation (among the cells ``among`` when given); where the solver finds none within
    the budget, the cells of a checked linear ``proof`` (sound, not minimal), else every published cell
    (all of them imply the claim)."""
    found = engine.explainer().explain(claim, None, (lambda: proof(claim)) if proof else None, among)
    if found == ((), True):  # it needs no published cell: the population and the edits imply it
        return frozenset()
    cells = found[0] if found else ()
    if not cells:
        cells = (proof(claim) if proof else None) or tuple(engine.cells)
    return frozenset(cells) - hidden


def _cores(engine, claim: Claim, hidden: set[str], cheapest: Callable[[frozenset], set], seen: set,
           most: int = CORES, proof: Callable[[Claim], tuple[str, ...] | None] | None = None,
           among: list[str] | None = None) -> list[frozenset]:
    """Explanations of a claim outside the hidden cells, the first over every cell (alone when ``seen``
    holds it already: claims about one record share their explanations), each next one among the
    cells the earlier ones leave aside: first whole explanations (disjoint ones), then only the
    ``cheapest`` cell of each (a cell and its identical copies, as the hitting set would pick),
    until the cells left no longer imply the claim.

    One explanation alone is a weak clause where the tables state the same fact many ways (a zero
    in P6, P7, P8, ...): the hitting set hides one copy, the claim follows from the next, and the
    loop crawls, one attack per copy. Each explanation is a valid clause (its cells alone imply the
    claim whatever else is hidden), so the minimum hitting set stays a lower bound.
    """
    pos = _explain(engine, claim, hidden, proof, among)
    if pos in seen:
        return [pos]
    seen.add(pos)
    out = [pos]
    for whole in (True, False):
        aside: set[str] = set()
        pos = out[0]
        while pos and len(out) < most:
            aside |= set(pos) if whole else cheapest(pos)
            found = engine.explainer().explain(claim, among=[k for k in among or engine.cells if k not in aside])
            if found is None or found == ((), False):  # gone without the cells set aside, or the budget is spent
                break
            pos = frozenset(found[0]) - hidden
            out.append(pos)
    return out


def claim_clauses(result: UnitResult, bad: list, recon: bool, hidden: set[str], direct_of: dict,
                  options: ProtectOptions, cheapest: Callable[[frozenset], set] | None = None,
                  explanations: Explanations | None = None) -> list[tuple[frozenset, frozenset]]:
    """Clauses (pos, neg) "suppress one of pos, or un-suppress one of neg" that every pattern defeating
    the failing claims (and a unique reconstruction, with ``recon``) meets: their explanations (with
    ``cheapest``, several per claim, see :func:`_cores`); ``explanations``: the unit's solver across
    rounds (one made for this round when not given).

    Each claim gets at most a :data:`~audit.protection.options.CLAIM_SHARE` part of the round's explanation
    budget (:class:`Shares`). Where the budget runs out,
    a claim an exact linear combination of published counts proves gets that combination's cells:
    without them it gave the clause "suppress any published cell", which one more hidden cell meets
    without defeating anything (the sf1 tract with its own tables gave up after 60 rounds that way,
    one cell a round)."""
    engine, among = (explanations or Explanations(options))(result.problem, hidden)
    todo = _to_explain(bad, result.problem.truth)
    linear = LinearProof.of(result.problem)  # too large: proofs over its tables' columns (audit.attacks.large)
    proofs = linear_proofs(linear, [v.claim for v in todo if not v.direct]) if linear is not None else relaxation_proofs(result.problem)
    new, seen = [], set()
    shares = Shares(engine.explainer(), options.exact.explain_budget / CLAIM_SHARE)
    for v in todo:
        if v.direct:
            new.append((frozenset(v.cells), frozenset()))
            continue
        neg = frozenset(k for k in direct_of.get((v.claim.assignment, v.claim.m), ()) if k in hidden)
        shares.give()
        if cheapest is None:
            new.append((_explain(engine, v.claim, hidden, proofs, among), neg))
        else:
            new += [(pos, neg) for pos in _cores(engine, v.claim, hidden, cheapest, seen, proof=proofs,
                                                 among=among)]
        shares.take()
    if recon:  # unique solution: every full record is implied; hit the union of their explanations
        truth = result.problem.truth
        union: set = set()
        for row in {tuple(r) for r in truth.tolist()}:
            m = int((truth == np.array(row)).all(axis=1).sum())
            union |= _explain(engine, Claim(tuple(enumerate(row)), m), hidden, proofs, among=among)
        new.append((frozenset(union), frozenset()))
    return new


def rules_failed(result: UnitResult, release: UnitRelease | None, rules) -> list[str]:
    """The rules one attacked unit fails, by the ordinary path (its findings entry, the rules)."""
    return sorted({c["rule"] for c in evaluate({"units": [unit_json(result, release)]}, rules) if c["outcome"] == "fail"})
