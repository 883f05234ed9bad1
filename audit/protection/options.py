"""What ``audit protect`` is asked to do: the strategy's options, and what makes a unit fail (read from the rules)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import AuditError
from ..attacks.exact import ExactOptions
from ..release.magnitude import MAGNITUDE_RULES

STRATEGIES = ("suppress", "round", "noise")
COSTS = ("cells", "persons", "values")
ALPHA = 0.05
ROUND_BASES = (2, 3, 4, 5, 10, 20)
NOISE_SCALES = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0)


@dataclass(frozen=True)
class Policy:
    """What makes a unit fail, read from the rules (only rules whose action is ``fail``)."""

    derived: int | None = 2        # verified derived singleton claims over >= k columns
    direct: int | None = None      # verified direct singleton claims (a published 1) over >= k columns
    full_records: int | None = None  # verified claims over every published column for fewer persons than this
    reconstructed: bool = False    # exactly one dataset fits
    small: int | None = None       # published exact counts 1..t-1
    undecided: bool = True         # fail closed
    reidentification: int | None = None  # persons linked with every sensitive value proved, per unit
    inference: int | None = None   # persons unlike their unit's majority with their sensitive values proved
    magnitude: tuple = ()          # (rule, settings) of the magnitude rules: published sums they find sensitive
    protection: dict | None = None  # protection_levels settings: every hidden count's interval must meet them

    @classmethod
    def from_rules(cls, rules) -> "Policy":
        on = {r.id: r for r in rules.rules if r.action == "fail"}
        get = lambda rid, key: on[rid].settings.get(key) if rid in on else None  # noqa: E731
        return cls(derived=get("derived_singletons", "min_columns"), direct=get("direct_singletons", "min_columns"),
                   full_records=get("full_records", "threshold"), reconstructed="reconstructed_units" in on,
                   small=get("small_cells", "threshold"), undecided="undecided" in on,
                   reidentification=get("reidentification", "max_persons"),
                   inference=get("attribute_inference", "max_persons"),
                   magnitude=tuple((rid, dict(on[rid].settings)) for rid in MAGNITUDE_RULES if rid in on),
                   protection=dict(on["protection_levels"].settings) if "protection_levels" in on else None)


# Explanation work for protect's attacks: its suppression search is built from the explanations, and
# with the audit's default of 5 they are cut short more often (less minimal), so on samples/sf1 the
# search took 140 s of CPU against 90 s with 10, for the same 352 cells.
PROTECT_EXPLAIN_BUDGET = 10.0
# The most of a round's explanation budget one failing claim gets (a 1/CLAIM_SHARE part): spent on whichever claim
# came first, the whole budget went to one hard claim's 45-cell explanation in each of the 11 rounds of extract
# block 04/013/040525/5003 (44 s); shared, five claims are explained a round and it takes 4 rounds (13 s).
CLAIM_SHARE = 5


@dataclass(frozen=True)
class ProtectOptions:
    strategy: str = "suppress"
    exact: ExactOptions = ExactOptions(explain_budget=PROTECT_EXPLAIN_BUDGET)
    primary: bool = True           # suppress the published counts the small_cells rule fails
    complementary: bool = True     # SIMPLEHEURISTIC around them in tables with margins
    hitting: str = "exact"         # exact (MaxSAT) | greedy
    cost: str = "cells"            # what suppression costs: cells | persons | values (tau-Argus' options)
    max_iterations: int = 60
    # Rounds of exact minimum hitting sets before the search only adds cells to its last pattern (see
    # audit.protection.unit.suppress_unit). sf1's slowest block converges in 11 (19 before one explanation
    # solver served a unit); on the households sample the lower bound rose 9 cells in 45 rounds, 3 s each.
    exact_rounds: int = 40
    round_bases: tuple[int, ...] = ROUND_BASES
    noise_scales: tuple[float, ...] = NOISE_SCALES
    alpha: float = ALPHA
    rank: bool = True              # re-run the ranking attack at the chosen noise scale when torch is there

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise AuditError(f"unknown strategy '{self.strategy}'", "--strategy", f"use one of {list(STRATEGIES)}")
        if self.hitting not in ("exact", "greedy"):
            raise AuditError(f"unknown hitting-set method '{self.hitting}'", "--hitting", "use exact or greedy")
        if self.cost not in COSTS:
            raise AuditError(f"unknown cost '{self.cost}'", "--cost", f"use one of {list(COSTS)}")
        if self.exact_rounds < 1:
            raise AuditError("exact rounds must be 1 or more", "--exact-rounds", "e.g. --exact-rounds 20")
        if not 0 < self.alpha < 1:
            raise AuditError("alpha must be between 0 and 1", "--alpha", "e.g. --alpha 0.05")


def geo_key(geo: tuple[str, ...]) -> str:
    return "/".join(geo)


def cell_of(key: str) -> str:
    return key.rsplit(":", 1)[0]


def kept(status: str, undefeatable=()) -> bool:
    """Whether a unit's (or parent unit's) search result goes into the pattern: it passes, or it fails only
    what no suppression defeats (the rest it defeats)."""
    return status in ("protected", "pass") or bool(undefeatable)
