"""The rules a policy can name: their titles and settings (:data:`RULES`), and a parsed policy."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping



ACTIONS = ("fail", "warn")

# rule id -> (title, {setting: (type, default, help)})
RULES: dict[str, tuple[str, dict[str, tuple[type, Any, str]]]] = {
    "derived_singletons": ("Verified singleton claims derived from several cells", {
        "min_columns": (int, 2, "fail when a verified singleton claim that no single published cell states "
                                "covers at least this many columns")}),
    "direct_singletons": ("Verified singleton claims published directly (a count of one)", {
        "min_columns": (int, 3, "fail when a published count of exactly one covers at least this many columns")}),
    "full_records": ("Records reconstructed for a small group", {
        "threshold": (int, None, "fail when the release proves a record over every column it publishes about for "
                                 "fewer than this many persons (2 to 10; default: small_cells' threshold, else 3)")}),
    "reconstructed_units": ("Units with exactly one consistent dataset", {}),
    "small_cells": ("Published counts under the threshold", {
        "threshold": (int, 3, "fail on a published exact count from 1 to threshold-1 (2 to 10)")}),
    "rank_lift": ("Ranking attack lift over the best baseline", {
        "max": (float, 0.10, "largest allowed match-rate lift (attack minus best baseline), 0 to 1"),
        "up_to_k_over_u": (float, 0.5, "compare the curves at k/u up to this value, 0 to 1")}),
    "linear_accuracy": ("Linear reconstruction accuracy", {
        "max": (float, None, "largest allowed accuracy of the linear attack, 0 to 1"),
        "max_lift": (float, 0.10, "largest allowed accuracy over the majority-guess baseline, 0 to 1")}),
    "reidentification": ("Persons re-identified with a sensitive value", {
        "max_persons": (int, 0, "per unit: fail when, for some sensitive attribute (or named combination), more "
                                "persons than this are linked on the quasi-identifiers with its value proved "
                                "(exact attack)"),
        "max_rate": (float, 0.05, "release: fail when an attack's confirmed re-identification rate (confirmed / "
                                  "persons) for some sensitive attribute (or combination) is above this, 0 to 1"),
        "combinations": (tuple, (), "sensitive attributes also judged together, e.g. [[race, hispanic]]")}),
    "attribute_inference": ("Sensitive values inferred beyond the baseline", {
        "max_persons": (int, 0, "per unit: fail when, for some sensitive attribute (or named combination), more "
                                "persons unlike their unit's majority on it than this have its value proved "
                                "(exact attack)"),
        "max_lift": (float, 0.10, "release: fail when an attack infers some sensitive attribute (or combination) "
                                  "of persons unlike their unit's majority on it more often than the best baseline "
                                  "by more than this, 0 to 1"),
        "combinations": (tuple, (), "sensitive attributes also judged together, e.g. [[race, hispanic]]")}),
    "protection_levels": ("Hidden cells whose feasibility interval is too narrow", {
        "upper": (int, None, "the interval must reach at least this far above the true count"),
        "lower": (int, None, "the interval must reach at least this far below the true count (at most down to 0)"),
        "upper_share": (float, None, "the same, as a share of the true count (0.2: 20%)"),
        "lower_share": (float, None, "the same below, as a share of the true count")}),
    "dominance": ("Published sums dominated by a few contributors ((n,k) rule: primary sensitive)", {
        "n": (int, 2, "the number of largest contributors, 1 to 10"),
        "k": (float, 85.0, "fail when the n largest contributors make more than k% of the cell total, 0 to 100")}),
    "p_percent": ("Published sums that let a contributor estimate the largest too closely (p% rule: primary sensitive)", {
        "p": (float, 10.0, "fail when the total less the two largest contributions is under p% of the largest, "
                           "0 to 100")}),
    "pq_rule": ("Published sums failing the pq rule (primary sensitive)", {
        "p": (float, 10.0, "the accuracy, in %, to which the largest contribution must stay unknown"),
        "q": (float, 100.0, "the accuracy, in %, to which contributors know each other's values before release "
                            "(q = 100: the p% rule)")}),
    "undecided": ("Claims the attack could not decide (fail closed)", {}),
}
REID_RULES = {"reidentification": ("confirmed", "max_rate"), "attribute_inference": ("inferred_unlike", "max_lift")}
TOP_KEYS = ("name", "description", *RULES)
SMALL_MAX = 10  # findings list exact published counts 1..SMALL_MAX-1, so thresholds go up to 10
RECORD_THRESHOLD = 3  # full_records' group threshold when the policy has no small_cells rule


@dataclass(frozen=True)
class Rule:
    id: str
    action: str = "fail"
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return RULES[self.id][0]


@dataclass(frozen=True)
class Rules:
    """A policy: the enabled rules, in the order of :data:`RULES`."""

    name: str
    rules: tuple[Rule, ...]
    description: str = ""
    source: str = "<rules>"

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "source": self.source,
                "rules": {r.id: {"action": r.action, **r.settings} for r in self.rules}}
