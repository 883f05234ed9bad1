"""Rules: the disclosure policy that turns findings into a verdict (pass / fail), one check per rule per unit.

A rules file (YAML) names each rule with its settings; ``off`` disables a rule and ``action: warn``
reports it without failing the release. The keys are listed in :data:`RULES` and documented in
``docs/rules.md``. Rule files ship in the ``rules`` package (``default``, ``strict``, ``lenient``).
"""
from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..specs._yaml import Located, load_yaml
from ..errors import AuditError
from ..release.magnitude import TOP
from .checks import checks_of
from .definitions import ACTIONS, RECORD_THRESHOLD, REID_RULES, RULES, SMALL_MAX, TOP_KEYS, Rule, Rules
from .verdict import FAIL, RELEASE, WARN, Check, Failing, Judgement


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
                if kind is tuple:
                    settings[key] = _combinations(doc, rid, key, v)
                    continue
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
    out = _resolve_record_threshold(doc, out)
    name = data.get("name", Path(str(doc.file)).stem)
    return Rules(str(name), tuple(out), str(data.get("description", "") or "").strip(), str(doc.file))


def _combinations(doc: Located, rid: str, key: str, value: Any) -> tuple[tuple[str, ...], ...]:
    """A list of combinations, each a list of two or more distinct attribute names (off: none)."""
    if value is None or value is False:
        return ()
    fix = f"{key}: [[race, hispanic]]"
    if not isinstance(value, list):
        raise doc.error(f"{rid}.{key} must be a list of lists of sensitive attributes, not {value!r}", rid, key, fix=fix)
    out = []
    for i, combo in enumerate(value):
        if (not isinstance(combo, list) or len(combo) < 2 or len(set(map(str, combo))) != len(combo)
                or not all(isinstance(a, str) for a in combo)):
            raise doc.error(f"{rid}.{key}[{i}] must list two or more distinct sensitive attributes, not {combo!r}",
                            rid, key, i, fix=fix)
        if tuple(combo) not in out:
            out.append(tuple(combo))
    return tuple(out)


def _resolve_record_threshold(doc: Located, rules: list[Rule]) -> list[Rule]:
    """full_records' threshold, when not given: small_cells' (a group the policy would not publish as a
    count is one it must not reconstruct), else :data:`RECORD_THRESHOLD`."""
    by_id = {r.id: r for r in rules}
    full = by_id.get("full_records")
    if full is None or full.settings["threshold"] is not None:
        return rules
    given = doc.data.get("full_records") if isinstance(doc.data, Mapping) else None
    if isinstance(given, Mapping) and "threshold" in given:  # threshold: off
        raise doc.error("full_records.threshold must be from 2 to 10", "full_records", "threshold",
                        fix=f"threshold: {RECORD_THRESHOLD}")
    small = by_id.get("small_cells")
    t = small.settings["threshold"] if small is not None else RECORD_THRESHOLD
    return [Rule(r.id, r.action, {**r.settings, "threshold": t}) if r is full else r for r in rules]


def _check_ranges(doc: Located, rid: str, s: dict) -> None:
    def bad(key: str, message: str, fix: str) -> AuditError:
        return doc.error(message, rid, key, fix=fix)

    for key in ("min_columns",):
        if key in s and s[key] is not None and s[key] < 1:
            raise bad(key, f"{rid}.{key} must be at least 1", f"{key}: 2")
    if rid == "small_cells" and (s["threshold"] is None or not 2 <= s["threshold"] <= SMALL_MAX):
        raise bad("threshold", f"small_cells.threshold must be from 2 to {SMALL_MAX}", "threshold: 3")
    if rid == "full_records" and s["threshold"] is not None and not 2 <= s["threshold"] <= SMALL_MAX:
        raise bad("threshold", f"full_records.threshold must be from 2 to {SMALL_MAX}", "threshold: 3")
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

