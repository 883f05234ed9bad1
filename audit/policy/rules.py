"""Rules: the disclosure policy that turns findings into a verdict (pass / fail), one check per rule per unit.

A rules file (YAML) names each rule with its settings; ``off`` disables a rule and ``action: warn``
reports it without failing the release. The keys are listed in :data:`RULES` and documented in
``docs/rules.md``. Rule files ship in the ``rules`` package (``default``, ``strict``, ``lenient``).
"""
from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..specs._yaml import Located, load_yaml
from ..errors import AuditError, InternalError
from ..release.magnitude import MAGNITUDE_RULES, TOP, sensitive_values
from .verdict import FAIL, PASS, RELEASE, SKIPPED, WARN, Check, Failing, Judgement

ACTIONS = ("fail", "warn")

# rule id -> (title, {setting: (type, default, help)})
RULES: dict[str, tuple[str, dict[str, tuple[type, Any, str]]]] = {
    "derived_singletons": ("Verified singleton claims derived from several cells", {
        "min_columns": (int, 2, "fail when a verified singleton claim that no single published cell states "
                                "covers at least this many columns")}),
    "direct_singletons": ("Verified singleton claims published directly (a count of one)", {
        "min_columns": (int, 3, "fail when a published count of exactly one covers at least this many columns")}),
    "full_records": ("Fully reconstructed records", {}),
    "reconstructed_units": ("Units with exactly one consistent dataset", {}),
    "small_cells": ("Published counts under the threshold", {
        "threshold": (int, 3, "fail on a published exact count from 1 to threshold-1 (2 to 10)")}),
    "rank_lift": ("Ranking attack lift over the best baseline", {
        "max": (float, 0.10, "largest allowed match-rate lift (attack minus best baseline), 0 to 1"),
        "up_to_k_over_u": (float, 0.5, "compare the curves at k/u up to this value, 0 to 1")}),
    "linear_accuracy": ("Linear reconstruction accuracy", {
        "max": (float, None, "largest allowed accuracy of the linear attack, 0 to 1"),
        "max_lift": (float, 0.10, "largest allowed accuracy over the majority-guess baseline, 0 to 1")}),
    "reidentification": ("Persons re-identified with their sensitive values", {
        "max_persons": (int, 0, "per unit: fail when more persons than this are linked on the quasi-identifiers "
                                "with every sensitive value proved (exact attack)"),
        "max_rate": (float, 0.05, "release: fail when an attack's confirmed re-identification rate (confirmed / "
                                  "persons) is above this, 0 to 1")}),
    "attribute_inference": ("Sensitive values inferred beyond the baseline", {
        "max_persons": (int, 0, "per unit: fail when more persons unlike their unit's majority than this have "
                                "their sensitive values proved (exact attack)"),
        "max_lift": (float, 0.10, "release: fail when an attack infers the sensitive values of persons unlike "
                                  "their unit's majority more often than the best baseline by more than this, 0 to 1")}),
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


BUILTIN = importlib.resources.files("audit") / "_rules"  # the top-level rules/ folder, shipped inside audit


def builtin_names() -> list[str]:
    return sorted(p.name[:-5] for p in BUILTIN.iterdir() if p.name.endswith(".yaml"))


def load_rules(path: str | Path | None = None) -> Rules:
    """Read a rules file; ``None`` or a built-in name (``default``, ``strict``, ``lenient``) reads the shipped one."""
    name = "default" if path is None else str(path)
    if name in builtin_names() and not Path(name).exists():
        res = BUILTIN / f"{name}.yaml"
        with importlib.resources.as_file(res) as real:
            rules = parse_rules(load_yaml(real))
        return Rules(rules.name, rules.rules, rules.description, f"rules/{name}.yaml (built in)")
    if not Path(name).exists():
        raise AuditError("file not found", name,
                         f"check the path, or name a built-in policy: {', '.join(builtin_names())}")
    return parse_rules(load_yaml(path))


def parse_rules(doc: Located) -> Rules:
    """Validate a loaded rules document, raising AuditError with file:line and the fix."""
    data = doc.data
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise doc.error("a rules file must be a mapping of rule name to settings", fix="see docs/rules.md")
    for key in data:
        if key not in TOP_KEYS:
            raise doc.error(f"unknown rule '{key}'", key, fix=f"use one of {list(TOP_KEYS)}")
    out = []
    for rid, (_, spec) in RULES.items():
        value = data.get(rid, None)
        if value is None or value is False:
            continue  # absent or off
        settings: dict[str, Any] = {k: d for k, (_, d, _) in spec.items()}
        action = "fail"
        if value is True:
            pass
        elif isinstance(value, Mapping):
            for key, v in value.items():
                if key == "action":
                    if v not in ACTIONS:
                        raise doc.error(f"action must be fail or warn, not {v!r}", rid, key, fix="action: fail")
                    action = v
                    continue
                if key not in spec:
                    allowed = [*spec, "action"]
                    raise doc.error(f"unknown setting '{key}' of rule '{rid}'", rid, key, fix=f"use one of {allowed}")
                kind = spec[key][0]
                if v is None or v is False:
                    settings[key] = None
                    continue
                if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not isinstance(v, int)):
                    raise doc.error(f"{rid}.{key} must be {'an integer' if kind is int else 'a number'}, not {v!r}",
                                    rid, key, fix=f"{key}: {spec[key][1] if spec[key][1] is not None else 0.5}")
                settings[key] = kind(v)
        else:
            raise doc.error(f"rule '{rid}' must be on, off or a mapping of settings, not {value!r}", rid,
                            fix=f"e.g. {rid}: on" if not spec else f"e.g. {rid}: {{{next(iter(spec))}: ...}}")
        _check_ranges(doc, rid, settings)
        out.append(Rule(rid, action, settings))
    name = data.get("name", Path(str(doc.file)).stem)
    return Rules(str(name), tuple(out), str(data.get("description", "") or "").strip(), str(doc.file))


def _check_ranges(doc: Located, rid: str, s: dict) -> None:
    def bad(key: str, message: str, fix: str) -> AuditError:
        return doc.error(message, rid, key, fix=fix)

    for key in ("min_columns",):
        if key in s and s[key] is not None and s[key] < 1:
            raise bad(key, f"{rid}.{key} must be at least 1", f"{key}: 2")
    if rid == "small_cells" and (s["threshold"] is None or not 2 <= s["threshold"] <= SMALL_MAX):
        raise bad("threshold", f"small_cells.threshold must be from 2 to {SMALL_MAX}", "threshold: 3")
    for key in ("max", "max_lift", "up_to_k_over_u"):
        if rid in ("rank_lift", "linear_accuracy") and s.get(key) is not None and not 0 <= s[key] <= 1:
            raise bad(key, f"{rid}.{key} must be between 0 and 1", f"{key}: 0.1")
    if rid == "rank_lift" and s["max"] is None:
        raise bad("max", "rank_lift needs max", "max: 0.1")
    if rid == "linear_accuracy" and s["max"] is None and s["max_lift"] is None:
        raise bad("max", "linear_accuracy needs max or max_lift", "max_lift: 0.1")
    if rid in REID_RULES:
        if s["max_persons"] is not None and s["max_persons"] < 0:
            raise bad("max_persons", f"{rid}.max_persons must be 0 or more", "max_persons: 0")
        limit = REID_RULES[rid][1]
        if s[limit] is not None and not 0 <= s[limit] <= 1:
            raise bad(limit, f"{rid}.{limit} must be between 0 and 1", f"{limit}: 0.05")
        if s["max_persons"] is None and s[limit] is None:
            raise bad("max_persons", f"{rid} needs max_persons or {limit}", "max_persons: 0")
    if rid == "protection_levels":
        for key, v in s.items():
            if v is not None and v < 0:
                raise bad(key, f"protection_levels.{key} must be 0 or more", f"{key}: 1")
        if all(v is None for v in s.values()):
            raise bad("upper", "protection_levels needs upper, lower, upper_share or lower_share", "upper: 1")
    if rid == "dominance":
        if s["n"] is None or not 1 <= s["n"] <= TOP:
            raise bad("n", f"dominance.n must be from 1 to {TOP}", "n: 2")
        if s["k"] is None or not 0 < s["k"] <= 100:
            raise bad("k", "dominance.k must be above 0 and at most 100", "k: 85")
    if rid in ("p_percent", "pq_rule") and (s["p"] is None or not 0 < s["p"] <= 100):
        raise bad("p", f"{rid}.p must be above 0 and at most 100", "p: 10")
    if rid == "pq_rule" and (s["q"] is None or not s["p"] <= s["q"] <= 100):
        raise bad("q", "pq_rule.q must be from p to 100", "q: 100")
    if rid in ("derived_singletons", "direct_singletons") and s["min_columns"] is None:
        raise bad("min_columns", f"{rid} needs min_columns", "min_columns: 2")


# ----------------------------------------------------------------------------------------------- checks

def _check(rule: Rule, unit: str, failed: bool | None, message: str, count: int = 0,
           cells: Mapping[str, str] | None = None) -> Check:
    outcome = SKIPPED if failed is None else (rule.action if failed else PASS)
    return Check(rule.id, unit, outcome, count, message, cells)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _singletons(rule: Rule, unit: dict, direct: bool) -> Check:
    k = rule.settings["min_columns"]
    by_columns = unit["summary"]["singletons_by_columns"]["direct" if direct else "derived"]
    hits = {int(c): n for c, n in by_columns.items() if int(c) >= k and n}
    kind = "published count of one" if direct else "derived singleton claim"
    if not hits:
        return _check(rule, unit["geo"], False, f"no verified {kind} over {k} or more columns")
    n = sum(hits.values())
    return _check(rule, unit["geo"], True, f"{_plural(n, 'verified ' + kind)} over {k} or more columns "
                                           f"(widest: {max(hits)} columns)", n)


def _unit_check(rule: Rule, unit: dict, rank_units: dict | None) -> Check:
    geo = unit["geo"]
    if rule.id == "derived_singletons":
        return _singletons(rule, unit, False)
    if rule.id == "direct_singletons":
        return _singletons(rule, unit, True)
    if rule.id == "full_records":
        n = unit["summary"].get("full_records", 0)
        return _check(rule, geo, n > 0, f"{_plural(n, 'record')} reconstructed over every column"
                      if n else "no record reconstructed over every column", n)
    if rule.id == "reconstructed_units":
        hit = bool(unit.get("reconstructed"))
        return _check(rule, geo, hit, "exactly one dataset reproduces the published tables: the unit is fully "
                      "reconstructed" if hit else "more than one dataset reproduces the published tables", int(hit))
    if rule.id == "small_cells":
        t = rule.settings["threshold"]
        cells = unit.get("cells")
        if cells is None:
            return _check(rule, geo, None, "the findings do not list published cell values (re-run audit run)")
        small = [(cell, v) for cell, v in cells.get("small", {}).items() if 1 <= v < t]
        if not small:
            return _check(rule, geo, False, f"no published exact count below {t}")
        return _check(rule, geo, True, f"{_plural(len(small), 'published count')} below {t} (e.g. "
                      f"{', '.join(f'{cell} = {v}' for cell, v in small[:3])})", len(small))
    if rule.id == "protection_levels":
        return _protection_check(rule, unit)
    if rule.id in MAGNITUDE_RULES:
        return _magnitude_check(rule, unit)
    if rule.id == "undecided":
        n = unit["summary"].get("undecided", 0)
        why = f" ({unit['reason']})" if n and unit.get("reason") else ""
        return _check(rule, geo, n > 0, f"{_plural(n, 'claim')} undecided{why}: not known to be safe"
                      if n else "every claim decided", n)
    if rule.id == "rank_lift":
        if rank_units is None:
            return _check(rule, geo, None, "the ranking attack was not run (audit run --rank)")
        entry = rank_units.get(geo)
        if entry is None:
            return _check(rule, geo, None, "the ranking attack has no result for this unit")
        return _lift_check(rule, geo, entry, rank_units.get("__k_over_u__"))
    raise InternalError(f"rule '{rule.id}' has no check")


def _magnitude_check(rule: Rule, unit: dict) -> Check:
    """A published sum the rule finds primary sensitive fails; ``cells`` names each with the reason."""
    geo, cells = unit["geo"], unit.get("cells")
    if cells is None:
        return _check(rule, geo, None, "the findings do not list published cell values (re-run audit run)")
    found = cells.get("magnitude") or {}
    if not found:
        return _check(rule, geo, False, "no published sum from microdata")
    hits = sensitive_values(found, [(rule.id, rule.settings)])
    if not hits:
        return _check(rule, geo, False, f"no primary sensitive sum ({_plural(len(found), 'published sum')})")
    return _check(rule, geo, True, f"{_plural(len(hits), 'primary sensitive sum')} (e.g. "
                  + "; ".join(f"{key}: {why}" for key, why in list(hits.items())[:2]) + ")", len(hits), hits)


def protection_needed(settings: Mapping, value: float, count: bool = True) -> tuple[float, float]:
    """How far a hidden cell's interval must reach below and above its true ``value`` (tau-Argus and
    sdcTable: absolute, or a share of the value's size, the larger when both are set; for a ``count``
    never below 0)."""
    def level(absolute, share) -> float:
        return max(absolute or 0, (share or 0) * abs(value))

    below = level(settings.get("lower"), settings.get("lower_share"))
    return (min(below, value) if count else below), level(settings.get("upper"), settings.get("upper_share"))


def _protection_check(rule: Rule, unit: dict) -> Check:
    geo, intervals = unit["geo"], unit.get("intervals")
    if intervals is None:
        why = unit.get("intervals_skipped")
        return _check(rule, geo, None if why else False, why or "no cell is hidden")
    bad = []
    for cell, iv in intervals.items():
        if "value" not in iv:
            return _check(rule, geo, None, "the true values are not known (a published release alone)")
        v = iv["value"]
        below, above = protection_needed(rule.settings, v, "stat" not in iv)
        if not iv["certified"] or v - iv["lo"] < below or iv["hi"] - v < above:
            bad.append(f"{cell} in [{iv['lo']}, {iv['hi']}]{'' if iv['certified'] else ' (not certified)'}, "
                       f"true {v}, needs [{v - below:g}, {v + above:g}]")
    if not bad:
        return _check(rule, geo, False, f"every hidden cell's interval meets the protection levels ({len(intervals)} cells)")
    return _check(rule, geo, True, f"{_plural(len(bad), 'hidden cell')} with too narrow an interval (e.g. "
                  f"{'; '.join(bad[:3])})", len(bad))


def rank_lift(curve: Mapping, k_over_u: list | None, upto: float) -> tuple[float, float | None, str]:
    """Largest (attack - best baseline) over k/u <= upto: (lift, at k/u, baseline name)."""
    ks = curve.get("k_over_u") or k_over_u or []
    attack = curve.get("attack") or []
    best, at, which = float("-inf"), None, ""
    for i, k in enumerate(ks):
        if k is None or k > upto + 1e-12 or i >= len(attack) or attack[i] is None:
            continue
        bases = {n: b[i] for n, b in (curve.get("baselines") or {}).items() if i < len(b) and b[i] is not None}
        name, base = max(bases.items(), key=lambda kv: kv[1]) if bases else ("chance", k)
        if attack[i] - base > best:
            best, at, which = attack[i] - base, k, name
    return (best if at is not None else 0.0), at, which


def _lift_check(rule: Rule, geo: str, curve: Mapping, k_over_u) -> Check:
    bound, upto = rule.settings["max"], rule.settings["up_to_k_over_u"]
    lift, at, which = rank_lift(curve, k_over_u, upto)
    if at is None:
        return _check(rule, geo, None, f"no ranking curve point at k/u up to {upto}")
    return _check(rule, geo, lift > bound, f"ranking lift {lift:+.1%} over the {which} baseline at k/u = {at:g} "
                  f"({'above' if lift > bound else 'within'} the bound {bound:.0%})", int(lift > bound))


def _linear_check(rule: Rule, linear: Mapping | None) -> Check:
    if linear is None:
        return _check(rule, RELEASE, None, "the linear attack was not run (audit run --linear-secret COL)")
    acc, base = float(linear.get("accuracy", 0.0)), float(linear.get("baseline", 0.0))
    top, top_lift = rule.settings.get("max"), rule.settings.get("max_lift")
    over = []
    if top is not None and acc > top:
        over.append(f"accuracy above {top:.0%}")
    if top_lift is not None and acc - base > top_lift:
        over.append(f"more than {top_lift:.0%} over the baseline")
    secret = linear.get("secret", "the secret column")
    text = f"{secret} reconstructed with accuracy {acc:.1%} (majority-guess baseline {base:.1%})"
    return _check(rule, RELEASE, bool(over), text + (": " + ", ".join(over) if over else ": within the bounds"),
                  int(bool(over)))


def _pct(part: Mapping) -> str:
    lo, hi = part["ci"]
    return f"{part['rate']:.1%} (95% CI {lo:.1%}-{hi:.1%})" if part.get("rate") is not None else "n/a (nobody)"


def _reid_checks(rule: Rule, units: Iterable[Mapping], reid: Mapping | None) -> list[Check]:
    """Per unit (exact attack: persons whose values are proved) and for the release (each attack's rate)."""
    reid = reid or {}
    if reid.get("status") != "run":
        return [_check(rule, RELEASE, None, reid.get("reason") or "the findings have no re-identification section")]
    key, limit_key = REID_RULES[rule.id]
    bound, limit = rule.settings["max_persons"], rule.settings[limit_key]
    what = ("linked on the quasi-identifiers with every sensitive value proved" if key == "confirmed"
            else "unlike their unit's majority with their sensitive values proved")
    out = []
    for unit in units if bound is not None else ():
        if unit.get("level") != reid["attacker"]["geography"]:
            continue
        counts = unit.get("reidentification")
        if counts is None:
            out.append(_check(rule, unit["geo"], None, "not measured: the exact attack did not finish this unit"))
            continue
        n, held = counts[key], (counts.get("undecided") or {}).get(key, 0)
        out.append(_check(rule, unit["geo"], n + held > bound, f"{_plural(n, 'person')} {what}"
                          + (f", {held} more undecided (not known to be safe)" if held else "")
                          + (f" (more than {bound})" if n + held > bound else ""), n + held))
    ran = [(name, reid[name]) for name in ("exact", "ranking") if (reid.get(name) or {}).get("status") == "run"]
    if limit is not None and ran:
        if key == "confirmed":
            values = [(name, part["confirmed"]["rate"] or 0.0, f"{name} attack: confirmed {_pct(part['confirmed'])}")
                      for name, part in ran]
        else:
            values = []
            for name, part in ran:
                inf = part["inference"]["unlike_majority"]
                values.append((name, inf["lift"], f"{name} attack: {_pct(inf['attack'])} of persons unlike their "
                               f"unit's majority inferred, {inf['lift']:+.1%} over the {inf['best_baseline']} baseline"))
        over = [v for v in values if v[1] > limit]
        out.append(_check(rule, RELEASE, bool(over), "; ".join(t for _, _, t in values)
                          + (f" (above the bound {limit:.0%})" if over else f" (within the bound {limit:.0%})"),
                          len(over)))
    return out


def evaluate(doc: Mapping, rules: Rules, rank: Mapping | None = None, linear: Mapping | None = None) -> list[dict]:
    """One check per rule per unit (release-wide rules: one check for the release), rule by rule, as
    findings.json holds them; ``doc``: a findings document (or any mapping with its ``units``)."""
    return [c.to_json() for c in checks_of(doc.get("units", ()), doc.get("reidentification"), rules, rank, linear)]


def checks_of(units: Sequence[Mapping], reidentification: Mapping | None, rules: Rules, rank: Mapping | None = None,
              linear: Mapping | None = None) -> Iterator[Check]:
    """The checks of the units and the findings' ``reidentification`` section, one at a time (units are
    read once per rule)."""
    rank_units = None
    if rank is not None:
        pooled = rank.get("pooled") or {}
        rank_units = {u.get("geo"): u for u in rank.get("units") or ()}
        rank_units["__k_over_u__"] = pooled.get("k_over_u")
    for rule in rules.rules:
        if rule.id in REID_RULES:
            yield from _reid_checks(rule, units, reidentification)
            continue
        if rule.id == "linear_accuracy":
            yield _linear_check(rule, linear)
            continue
        if rule.id == "rank_lift" and rank_units is not None and not rank.get("units") and rank.get("pooled"):
            yield _lift_check(rule, RELEASE, rank["pooled"], None)
            continue
        for unit in units:
            yield _unit_check(rule, unit, rank_units)


UNIT_LIST = 50  # units named per failing rule


class _Tally:
    """Failing and warning checks counted per rule as the checks go by (:meth:`counted`)."""

    def __init__(self, rules: Rules):
        self.titles, self.rows = {r.id: r.title for r in rules.rules}, {}

    def counted(self, checks: Iterable[Check]) -> Iterator[Check]:
        for c in checks:
            if c.outcome in (FAIL, WARN):
                self._add(c)
            yield c

    def _add(self, c: Check) -> None:
        row = self.rows.get((c.rule, c.outcome))
        if row is None:
            release = c.unit == RELEASE
            row = self.rows[(c.rule, c.outcome)] = {
                "rule": c.rule, "title": self.titles.get(c.rule, c.rule), "outcome": c.outcome, "units": 0,
                "scope": "release" if release else "units", "count": 0,
                "example": c.message if release else f"{c.unit}: {c.message}", "unit_list": []}
        row["units"] += 1
        row["count"] += c.count
        if len(row["unit_list"]) < UNIT_LIST:
            row["unit_list"].append(c.unit)

    def verdict(self) -> tuple[str, list[Failing], list[Failing]]:
        failing = [Failing(**r) for r in self.rows.values() if r["outcome"] == FAIL]
        warnings = [Failing(**r) for r in self.rows.values() if r["outcome"] == WARN]
        return ("fail" if failing else "pass"), failing, warnings


def judge(units: Sequence[Mapping], reidentification: Mapping | None, rules: Rules, rank: Mapping | None = None,
          linear: Mapping | None = None, keep: Callable[[Iterator[Check]], Sequence[Check]] = list) -> Judgement:
    """The rules' verdict on the units (``keep`` holds the checks: a list, or a sequence kept on disk);
    the checks are made, counted and kept in one pass."""
    tally = _Tally(rules)
    checks = keep(tally.counted(checks_of(units, reidentification, rules, rank, linear)))
    verdict, failing, warnings = tally.verdict()
    return Judgement(rules.to_dict(), verdict, tuple(failing), tuple(warnings), checks)


def apply(doc: Mapping, rules: Rules, rank: Mapping | None = None, linear: Mapping | None = None) -> Mapping:
    """The document with the rules' verdict, failing rules and every check: a new value, ``doc`` unchanged.

    A :class:`audit.findings.model.Findings` gives a new one (:meth:`~audit.findings.model.Findings.judged`);
    any other mapping with ``units`` (and ``reidentification``) a new dict.
    """
    judged = getattr(doc, "judged", None)
    if judged is not None:
        return judged(rules, rank, linear)
    return {**doc, **judge(doc.get("units", ()), doc.get("reidentification"), rules, rank, linear).to_json()}
