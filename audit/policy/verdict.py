"""What the rules produce: one :class:`Check` per rule per unit, a :class:`Failing` row per failing
(or warning) rule, and the :class:`Judgement` that holds them with the verdict.

Frozen values, checked when made; ``to_json`` / ``from_json`` give the shapes findings.json holds
(``checks``, ``failing``, ``warnings``, ``verdict``, ``rules``: see docs/findings.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import InternalError

PASS, FAIL, WARN, SKIPPED = "pass", "fail", "warn", "skipped"
OUTCOMES = (PASS, FAIL, WARN, SKIPPED)
VERDICTS = (PASS, FAIL)
RELEASE = "(release)"  # the unit name of checks that concern the whole release


@dataclass(frozen=True)
class Check:
    """One rule on one unit (or on the release, ``unit`` :data:`RELEASE`); ``cells``: the magnitude
    rules' primary sensitive sums, or the suppressed cells ``small_cells`` finds pinned by their rule,
    cell -> reason; ``attributes``: the re-identification rules' persons
    (unit) or rates (release, those above the bound) per sensitive attribute or combination."""

    rule: str
    unit: str
    outcome: str
    count: int
    message: str
    cells: Mapping[str, str] | None = None
    attributes: Mapping[str, float] | None = None

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise InternalError(f"check of rule '{self.rule}' has outcome {self.outcome!r}, not one of {OUTCOMES}")

    def to_json(self) -> dict:
        out = {"rule": self.rule, "unit": self.unit, "outcome": self.outcome, "count": self.count,
               "message": self.message}
        if self.cells is not None:
            out["cells"] = dict(self.cells)
        if self.attributes is not None:
            out["attributes"] = dict(self.attributes)
        return out

    @classmethod
    def from_json(cls, data: Mapping) -> "Check":
        return cls(data["rule"], data["unit"], data["outcome"], data["count"], data["message"], data.get("cells"),
                   data.get("attributes"))


@dataclass(frozen=True)
class Failing:
    """A rule that fails (or warns): in how many units, claims/cells counted, one example, up to 50 units."""

    rule: str
    title: str
    outcome: str
    units: int
    scope: str
    count: int
    example: str
    unit_list: tuple[str, ...]

    def __post_init__(self):
        if self.outcome not in (FAIL, WARN) or self.scope not in ("units", "release"):
            raise InternalError(f"failing row of rule '{self.rule}': outcome {self.outcome!r}, scope {self.scope!r}")
        object.__setattr__(self, "unit_list", tuple(self.unit_list))

    def to_json(self) -> dict:
        return {"rule": self.rule, "title": self.title, "outcome": self.outcome, "units": self.units,
                "scope": self.scope, "count": self.count, "example": self.example, "unit_list": list(self.unit_list)}

    @classmethod
    def from_json(cls, data: Mapping) -> "Failing":
        return cls(**{k: data[k] for k in ("rule", "title", "outcome", "units", "scope", "count", "example",
                                          "unit_list")})


@dataclass(frozen=True)
class Judgement:
    """The rules applied to findings: the policy (``rules``, as :meth:`Rules.to_dict`), the verdict, the
    failing and warning rules, and every check (a list, or a lazy sequence kept on disk)."""

    rules: Mapping[str, Any]
    verdict: str
    failing: tuple[Failing, ...] = ()
    warnings: tuple[Failing, ...] = ()
    checks: Sequence[Check] = field(default_factory=tuple)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise InternalError(f"verdict {self.verdict!r}, not one of {VERDICTS}")
        if (self.verdict == FAIL) != bool(self.failing):
            raise InternalError(f"verdict {self.verdict} with {len(self.failing)} failing rules")

    def to_json(self) -> dict:
        """The document's keys this judgement sets, checks as JSON objects."""
        return {"verdict": self.verdict, "rules": self.rules, "failing": [f.to_json() for f in self.failing],
                "warnings": [w.to_json() for w in self.warnings], "checks": [c.to_json() for c in self.checks]}
