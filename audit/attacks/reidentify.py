"""Re-identification and attribute inference, measured as the Census Bureau measured them.

The Bureau linked records reconstructed from the 2010 tables to an external file on block, sex and
binned age (uscensusbureau/recon_replication): a reconstructed record that agrees with an external
record on those quasi-identifiers is a *putative* re-identification, *confirmed* when its race and
ethnicity are right too; precision is confirmed / putative. Attribute inference is scored against
the guess of the block's modal race and ethnicity, overall and for persons unlike their block's
majority. Here the external file is the defender's own microdata (the Bureau's "high-quality
attacker file"), and the attacker model (:mod:`audit.specs.attacker`) names the columns.

* **exact attack**: a person is *linked* when the release proves that exactly one person in the unit
  has their quasi-identifiers (verified claims R(q, 1)); a sensitive value is *proved* when the
  verified claims R(q, m) and R(q ∪ s, m) say that all m persons with those quasi-identifiers have
  it (or the unit has one consistent dataset); *confirmed* = linked and every sensitive value proved.
  The Bureau's measures take every sensitive value together; the rules judge each sensitive
  attribute (and each combination the policy names) on its own, under ``attributes``: hiding one
  attribute's cells must not pass a release that still proves another.
  Soundness: a value is reported proved only if it holds in every dataset consistent with the release.
* **ranking attack**: the unit's top-n ranked rows (n persons) are the reconstruction; a person
  unique on the quasi-identifiers whose values appear in it is a putative match, confirmed when the
  best-ranked such row has their sensitive values; the attacker's guess for every person is that row.

Quasi-identifiers and sensitive values are read at what the published tables tell apart (the
problem's atoms): when an atom mixes codes of an attacker-model column, that column is measured at
the atom and a note says so. The evaluator follows anonymeter's shape: ``ReidentificationAttack(...)
.evaluate().results()`` gives rates with Wilson intervals beside their baselines.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Mapping, Sequence

from ..errors import AuditError
from ..specs.attacker import AttackerModel
from .engines.linear import wilson
from .engines.rank_options import torch_available
from .engines.rank_results import parent_rows
from .reidentify_unit import UnitMeasure, measure_exact, measure_ranking

CONFIDENCE = 0.95

DEFINITIONS = {
    "unique": "persons whose quasi-identifiers no other person in their unit shares (the Bureau's 'BSAb unique')",
    "unique_with_sensitive": "persons unique on the quasi-identifiers and the sensitive attributes together "
                             "('BSAbER unique')",
    "putative": "exact: persons unique on the quasi-identifiers whom the release proves to be the only person with "
                "them; ranking: persons unique on the quasi-identifiers that a top-ranked reconstructed row "
                "matches on them",
    "confirmed": "putative matches whose sensitive values the attack gets right (exact: proves)",
    "precision": "confirmed / putative",
    "inferred": "persons whose sensitive values the attack gets right (exact: proves in every consistent "
                "dataset; ranking: the best-ranked reconstructed row with their quasi-identifiers has them)",
    "unlike_majority": "persons whose sensitive values differ from their unit's modal value",
    "unit_mode": "baseline: guess the unit's modal sensitive value (the published tables show it)",
    "parent_mode": "baseline: guess the parent geography's modal sensitive value",
    "ci": "Wilson score interval at the stated confidence",
    "attributes": "the same measures for each sensitive attribute on its own and each combination the policy "
                  "names (a+b): confirmed = linked with that value proved; unlike = unlike the unit's majority "
                  "on that attribute",
}


# ------------------------------------------------------------------------------------------ release
def _add(total: dict, counts: Mapping) -> dict:
    for k, v in counts.items():
        if k == "notes":
            total.setdefault("notes", [])
            total["notes"] += [n for n in v if n not in total["notes"]]
        elif isinstance(v, Mapping):
            _add(total.setdefault(k, {}), v)
        elif isinstance(v, list):
            total[k] = [a + b for a, b in zip(total.get(k, [0] * len(v)), v)]
        else:
            total[k] = total.get(k, 0) + v
    return total


def rate(k: int, n: int, confidence: float = CONFIDENCE) -> dict:
    """``k`` of ``n`` with its Wilson interval."""
    lo, hi = wilson(int(k), int(n), confidence)
    return {"count": int(k), "of": int(n), "rate": round(k / n, 6) if n else None, "ci": [round(lo, 6), round(hi, 6)]}


@dataclass(frozen=True)
class ReidentificationResults:
    """Summed unit counts of one attack, as rates with intervals beside their baselines."""

    attack: str
    totals: Mapping
    units: int
    confidence: float = CONFIDENCE

    @classmethod
    def of(cls, attack: str, counts: Iterable[Mapping], confidence: float = CONFIDENCE) -> "ReidentificationResults":
        total: dict = {}
        n = 0
        for c in counts:
            _add(total, c)
            n += 1
        return cls(attack, total, n, confidence)

    def _inference(self, k: int, baselines: Mapping[str, int], n: int) -> dict:
        attack = rate(k, n, self.confidence)
        bases = {name: rate(b, n, self.confidence) for name, b in baselines.items()}
        best = max(bases, key=lambda b: bases[b]["rate"] or 0.0)
        return {"persons": n, "attack": attack, "baselines": bases, "best_baseline": best,
                "lift": round((attack["rate"] or 0.0) - (bases[best]["rate"] or 0.0), 6)}

    def _attribute(self, a: Mapping, n: int) -> dict:
        """One sensitive attribute's (or combination's) rates: confirmed, and inferred for all persons
        and for those unlike their unit's majority on it."""
        base = a.get("baselines") or {}
        return {"confirmed": rate(a.get("confirmed", 0), n, self.confidence),
                "inference": {"all": self._inference(a.get("inferred", 0), {k: v[0] for k, v in base.items()}, n),
                              "unlike_majority": self._inference(a.get("inferred_unlike", 0),
                                                                 {k: v[1] for k, v in base.items()},
                                                                 a.get("unlike", 0))}}

    def to_dict(self) -> dict:
        t, c = self.totals, self.confidence
        n = t.get("persons", 0)
        base = t.get("baselines") or {}
        out = {"status": "run", "attack": self.attack, "units": self.units, "persons": n,
               "unique": rate(t.get("unique", 0), n, c),
               "unique_with_sensitive": rate(t.get("unique_with_sensitive", 0), n, c),
               "putative": rate(t.get("putative", 0), n, c), "confirmed": rate(t.get("confirmed", 0), n, c),
               "precision": rate(t.get("confirmed", 0), t.get("putative", 0), c),
               "inference": {
                   "all": self._inference(t.get("inferred", 0), {k: v[0] for k, v in base.items()}, n),
                   "unlike_majority": self._inference(t.get("inferred_unlike", 0), {k: v[1] for k, v in base.items()},
                                                      t.get("unlike", 0))},
               "by_attribute": {k: rate(v, n, c) for k, v in (t.get("by_attribute") or {}).items()},
               "attributes": {name: self._attribute(a, n) for name, a in (t.get("attributes") or {}).items()}}
        if t.get("notes"):
            out["notes"] = list(t["notes"])
        return out


class ReidentificationAttack:
    """Re-identification and attribute inference over many units, shaped like anonymeter's evaluators.

    Parameters
    ----------
    attacker : the attacker model (``schema.attacker``).
    exact : the exact attack's ``UnitResult`` of each unit, or
    ranking : ``(problem, ranked rows)`` of each unit (e.g. from :class:`audit.attacks.engines.rank_results.RankResults`).
    priors : rows of each unit's parent geography (in the unit's atoms), for the parent baseline.
    """

    def __init__(self, attacker: AttackerModel, exact: Sequence = (), ranking: Sequence = (),
                 priors: Sequence | None = None, confidence: float = CONFIDENCE):
        if bool(exact) == bool(ranking):
            raise ValueError("pass the units of one attack: exact results or ranked units")
        self.attacker, self.exact, self.ranking = attacker, list(exact), list(ranking)
        self.priors = list(priors) if priors is not None else [None] * len(self.exact or self.ranking)
        self.confidence = confidence
        self.measures: list[UnitMeasure] | None = None

    def evaluate(self) -> "ReidentificationAttack":
        if self.exact:
            self.measures = [measure_exact(r, self.attacker, pr) for r, pr in zip(self.exact, self.priors)]
        else:
            self.measures = [measure_ranking(p, ranked, self.attacker, pr)
                             for (p, ranked), pr in zip(self.ranking, self.priors)]
        return self

    def results(self) -> ReidentificationResults:
        if self.measures is None:
            raise RuntimeError("run evaluate() first")
        return ReidentificationResults.of("exact" if self.exact else "ranking",
                                          [m.counts for m in self.measures], self.confidence)


# ------------------------------------------------------------------------------------ findings hooks
def with_attacker(options, schema, rules=None):
    """The exact attack's options with the schema's attacker model (unchanged when it has none or the
    options have one), measuring the combinations of sensitive attributes the ``rules`` name."""
    attacker = getattr(schema, "attacker", None)
    if attacker is None or options.attacker is not None:
        return options
    return replace(options, attacker=replace(attacker, combinations=policy_combinations(rules, attacker)))


def policy_combinations(rules, attacker: AttackerModel) -> tuple[tuple[str, ...], ...]:
    """The combinations of sensitive attributes the re-identification rules name, checked against the
    attacker model (AuditError naming the rules file)."""
    names = [a.name for a in attacker.sensitive]
    out: list[tuple[str, ...]] = []
    for rule in getattr(rules, "rules", ()):
        for combo in rule.settings.get("combinations") or ():
            unknown = [n for n in combo if n not in names]
            if unknown:
                raise AuditError(f"{rule.id}.combinations names '{unknown[0]}', not a sensitive attribute of the "
                                 "schema's attacker model", rules.source, f"use two or more of {names}")
            if tuple(combo) not in out:
                out.append(tuple(combo))
    return tuple(out)


def section(attacker: AttackerModel | None, units: Sequence[Mapping], confidence: float = CONFIDENCE) -> dict:
    """The findings' ``reidentification`` section from the units' counts (the ranking part: not run yet)."""
    if attacker is None:
        return {"status": "no attacker model",
                "reason": "the schema has no 'attacker:' (quasi-identifiers and sensitive columns)"}
    seen = {"at_level": 0, "missing": 0, "persons": 0}  # one pass over units that may be on disk, none held

    def measured() -> Iterator[Mapping]:
        for u in units:
            if u.get("level") == attacker.geography:
                seen["at_level"] += 1
                if u.get("reidentification"):
                    yield u["reidentification"]
                else:
                    seen["missing"] += 1
                    seen["persons"] += u.get("rows", 0)
    results = ReidentificationResults.of("exact", measured(), confidence)
    if results.units:
        exact = results.to_dict()
    else:
        exact = {"status": "not measured", "reason": f"no unit at the attacker's level '{attacker.geography}' was "
                 "attacked to the end" if seen["at_level"] else f"no tables are published at '{attacker.geography}'"}
    exact["units_not_measured"] = seen["missing"]
    exact["persons_not_measured"] = int(seen["persons"])
    return {"status": "run", "attacker": attacker.describe(), "confidence": confidence, "definitions": DEFINITIONS,
            "exact": exact, "ranking": {"status": "not run", "reason": "the ranking attack was not run (audit run --rank)"}}


def add_ranking(doc: dict, rank: Mapping | None) -> None:
    """Put the ranking attack's part (from ``rank.json``) into the findings' section."""
    reid = doc.get("reidentification")
    if not reid or reid.get("status") != "run":
        return
    if rank and rank.get("reidentification"):
        reid["ranking"] = rank["reidentification"]
    elif rank:
        reid["ranking"] = {"status": "not run", "reason": "rank.json has no re-identification part: run the ranking "
                           "attack again with this schema (audit run --rank)"}
    else:
        reid["ranking"] = {"status": "not run", "reason": "the ranking attack was not run (audit run --rank)"
                           if torch_available() else "not run: PyTorch is not installed (the 'rank' extra)"}


def ranking_part(results, frame, geography: Sequence[str], attacker: AttackerModel) -> dict:
    """The ranking attack's part for ``rank.json``: every unit at the attacker's level, scored."""
    cache: dict = {}
    units = [u for u in results.units if u.problem.level == attacker.geography]
    if not units:
        return {"status": "not measured", "reason": f"no ranked unit at the attacker's level '{attacker.geography}'"}
    priors = []
    for u in units:
        depth = list(geography).index(u.problem.level)
        priors.append(parent_rows(frame, geography, u.problem, depth, cache) if depth else None)
    attack = ReidentificationAttack(attacker, ranking=[(u.problem, u.ranked) for u in units], priors=priors)
    return attack.evaluate().results().to_dict()
