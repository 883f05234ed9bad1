"""One interface for the attacks (anonymeter's evaluator shape): ``evaluate()``, then ``results()``.

Each attack returns an :class:`AttackResult`: one :class:`Risk` (the measured value, the baseline
an attacker gets without the release, and a confidence interval where the attack samples), the
checks the rules read, and the attack's own results (``detail``) from which its output file is
written. The exact attack (:mod:`audit.attacks.exact`), the ranking attack (:mod:`audit.attacks.engines.rank`), the
linear attack (:mod:`audit.attacks.engines.linear`) and difference attacks (:mod:`audit.attacks.difference`) each
have an evaluator here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Protocol, Sequence

from .difference import Exposure, find_differences
from .engines.linear import LinearReconstruction, LinearResults
from .engines.linear_target import Target
from .engines.rank import rank_inputs
from .engines.rank_options import RankOptions
from .engines.rank_results import RankResults
from ..errors import InternalError
from .exact import ExactOptions
from ..findings.document import run_exact
from ..inputs import Inputs

RANK_AT = 1.0  # the ranking attack's risk: its match rate among the top u rows (k/u = 1)


@dataclass(frozen=True)
class Risk:
    """A measured risk, 0 to 1: ``value``; ``baseline``, what an attacker gets without the release;
    ``ci``, the interval at ``confidence`` where the attack samples (None where it is exact)."""

    value: float
    baseline: float | None = None
    ci: tuple[float, float] | None = None
    confidence: float | None = None

    def __post_init__(self):
        for name, v in (("value", self.value), ("baseline", self.baseline)):
            if v is not None and not 0 <= v <= 1:
                raise InternalError(f"a risk's {name} lies between 0 and 1, not {v}")
        if (self.ci is None) != (self.confidence is None):
            raise InternalError("a risk's interval and its confidence go together")
        if self.ci is not None and not 0 <= self.ci[0] <= self.ci[1] <= 1:
            raise InternalError(f"a risk's interval is a range within 0 to 1, not {self.ci}")

    @property
    def lift(self) -> float | None:
        """What the release adds over the baseline."""
        return None if self.baseline is None else self.value - self.baseline


@dataclass(frozen=True)
class AttackResult:
    """What one attack found: its risk, the checks the rules read, and its own results."""

    attack: str
    risk: Risk
    checks: Mapping[str, Any] = field(default_factory=dict)
    detail: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "checks", MappingProxyType(dict(self.checks)))


class Attack(Protocol):
    """An attack on a release: ``evaluate()`` runs it (and returns it), ``results()`` says what it found."""

    name: str

    def evaluate(self) -> "Attack": ...

    def results(self) -> AttackResult: ...


class _Evaluator:
    """``results()`` for evaluators that keep their result in ``_result``."""

    name = ""
    _result: AttackResult | None = None

    def results(self) -> AttackResult:
        if self._result is None:
            raise InternalError(f"the {self.name} attack's results were asked for before evaluate()")
        return self._result


class ExactAttack(_Evaluator):
    """Generate-then-verify on every unit (:func:`audit.findings.document.run_exact`); ``detail`` is the
    findings document. Risk: the share of units whose every record the release proves (exact: no
    interval, no baseline)."""

    name = "exact"

    def __init__(self, inputs: Inputs, options: ExactOptions, **run: Any):
        self.inputs, self.options, self.run = inputs, options, run

    def evaluate(self) -> "ExactAttack":
        self._result = exact_result(run_exact(self.inputs, self.options, **self.run))
        return self


def exact_result(doc: Mapping) -> AttackResult:
    """The exact attack's result from its findings document."""
    summary = doc["summary"]
    checks = {k: summary[k] for k in ("verified", "undecided", "full_records", "units", "units_reconstructed")}
    units = summary["units"]
    return AttackResult("exact", Risk(summary["units_reconstructed"] / units if units else 0.0), checks, doc)


class RankingAttack(_Evaluator):
    """RAP-RANK on every unit (:func:`audit.attacks.engines.rank.rank_inputs`); ``detail`` is its
    :class:`~audit.attacks.engines.rank_results.RankResults`. Risk: the pooled match rate among the top u rows, the
    best baseline's beside it, and the interval over units."""

    name = "rank"

    def __init__(self, inputs: Inputs, options: RankOptions | None = None, noise: Mapping[str, float] | None = None,
                 workers: int = 1):
        self.inputs, self.options, self.noise, self.workers = inputs, options, noise, workers

    def evaluate(self) -> "RankingAttack":
        self._result = rank_result(rank_inputs(self.inputs, self.options, self.noise, self.workers))
        return self


def rank_result(results: RankResults) -> AttackResult:
    """The ranking attack's result from its :class:`~audit.attacks.engines.rank_results.RankResults`."""
    pooled = results.pooled()
    if not pooled["attack"]:
        return AttackResult("rank", Risk(0.0), {"units": 0}, results)
    at = pooled["k_over_u"].index(RANK_AT)
    value, ci = pooled["attack"][at], tuple(pooled["attack_ci"][at])
    baselines = [curve[at] for curve in pooled["baselines"].values() if curve]
    baseline = max(baselines) if baselines else None
    risk = Risk(value, baseline, ci, pooled["confidence"])
    return AttackResult("rank", risk, {"units": pooled["units"], "k_over_u": RANK_AT, "lift": risk.lift}, results)


class LinearAttack(_Evaluator):
    """Linear reconstruction of a secret column (:class:`~audit.attacks.engines.linear.LinearReconstruction`);
    ``detail`` is its :class:`~audit.attacks.engines.linear.LinearResults`. Risk: the share of the secret
    reconstructed, the majority guess as baseline, and the Wilson interval."""

    name = "linear"

    def __init__(self, target: Target, secret: str, **options: Any):
        self.reconstruction = LinearReconstruction(target, secret, **options)

    def evaluate(self) -> "LinearAttack":
        self._result = linear_result(self.reconstruction.evaluate())
        return self


def linear_result(results: LinearResults) -> AttackResult:
    """The linear attack's result from its :class:`~audit.attacks.engines.linear.LinearResults`."""
    risk = Risk(results.accuracy, results.baseline, tuple(results.ci), results.confidence)
    return AttackResult("linear", risk, {"accuracy": results.accuracy, "baseline": results.baseline,
                                         "exact": results.exact}, results)


class DifferenceAttack(_Evaluator):
    """Differences of nested published cells (:func:`audit.attacks.difference.find_differences`); ``detail``
    is the list of :class:`~audit.attacks.difference.Exposure`. Risk: the share of persons whose row a
    difference of one person singles out (exact: no interval, no baseline)."""

    name = "difference"

    def __init__(self, inputs: Inputs, max_rows: int | None = None):
        self.inputs, self.max_rows = inputs, max_rows

    def evaluate(self) -> "DifferenceAttack":
        i = self.inputs
        self._result = difference_result(find_differences(i.frame, i.schema, i.schedule, max_rows=self.max_rows),
                                         len(i.frame))
        return self


def difference_result(exposures: Sequence[Exposure], rows: int) -> AttackResult:
    """The difference attacks' result from their exposures, over a population of ``rows``."""
    singled = {r for e in exposures if e.singles_out for r in e.rows}
    checks = {"exposures": len(exposures), "singled_out": len(singled)}
    return AttackResult("difference", Risk(len(singled) / rows if rows else 0.0), checks, list(exposures))


ATTACKS: Mapping[str, Callable[..., Attack]] = MappingProxyType(
    {"exact": ExactAttack, "rank": RankingAttack, "linear": LinearAttack, "difference": DifferenceAttack})
