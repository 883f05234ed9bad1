"""What got worse from one findings document to the next, in every respect the rules count: the gate of
``audit diff`` (exit 1 when anything did, even under a rule that already failed)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping

from ..errors import AuditError
from ..findings.model import Findings
from ..findings.provenance import file_digest
from ..policy.checks import too_narrow, unit_intervals
from ..specs.schedule import load_schedule
from ..specs.schema import load_schema

RISKY = {"warn": 1, "fail": 2}  # a check's outcome as risk: pass and skipped are 0
# unit summary counts that are risk (more is worse); ``rows`` and the like are the data's, not the release's
UNIT_COUNTS = {"undecided": "undecided claims", "full_records": "records reconstructed over every column"}
# release totals (Summary fields) that are risk
TOTALS = {"derived_singletons": "derived singleton claims", "verified_singletons": "verified singleton claims",
          "full_records": "records reconstructed over every column", "undecided": "undecided claims",
          "units_reconstructed": "units reconstructed exactly",
          "units_with_derived_singletons": "units singling someone out"}
# what the claim comparison judges when both claim stores are there (rules, unit measures, totals): a
# schedule that refines or coarsens codes moves claims between derived and direct, and restates records
# over coarser codes, so these counts can grow while nothing is newly singled out
BY_CLAIMS = {"derived_singletons", "direct_singletons", "full_records", "reconstructed_units", "reconstructed",
             "verified_singletons", "units_with_derived_singletons"}
# the rule that counts each measure (its action in the new findings' policy says whether it gates)
RULE_OF = {"status": "undecided", "undecided": "undecided", "reconstructed": "reconstructed_units",
           "units_reconstructed": "reconstructed_units", "new_claims": "derived_singletons",
           "verified_singletons": "derived_singletons", "units_with_derived_singletons": "derived_singletons"}
# re-identification counts that describe the data rather than what the release proves
DATA_ONLY = {"persons", "unique", "unique_with_sensitive", "unlike", "baselines"}


def _worse(what: str, unit: str, old, new, text: str, rule: str | None = None) -> dict:
    out = {"what": what, "unit": unit, "old": old, "new": new, "text": text}
    return {**out, "rule": rule} if rule else out


def _at_least(by_columns: Mapping) -> dict[int, int]:
    """Singletons over k or more columns, for every k that has any (``singletons_by_columns`` of one kind)."""
    counts = {int(k): int(n) for k, n in (by_columns or {}).items()}
    return {k: sum(n for c, n in counts.items() if c >= k) for k in counts}


def _counted(rules: Mapping, kind: str) -> int | None:
    """The fewest columns a singleton of ``kind`` (derived, direct) needs for its rule to count it (None: off)."""
    rule = rules.get(f"{kind}_singletons")
    return None if rule is None else int(rule.get("min_columns", 1))


def _singletons(old: Mapping, new: Mapping, geo: str, rules: Mapping) -> Iterator[dict]:
    """More derived or direct singletons over k or more columns, for some k at least the rule's
    ``min_columns``: one entry per kind."""
    for kind in ("derived", "direct"):
        least = _counted(rules, kind)
        if least is None:
            continue
        a = _at_least((old.get("singletons_by_columns") or {}).get(kind))
        b = _at_least((new.get("singletons_by_columns") or {}).get(kind))
        up = [k for k in b if b[k] > a.get(k, 0) and k >= least]
        if not up:
            continue
        k = max(up)
        yield _worse(f"{kind}_singletons", geo, a.get(k, 0), b[k],
                     f"{kind} singleton claims over {k} or more columns {a.get(k, 0)} -> {b[k]}")


def _leaves(tree, prefix: str = "") -> Iterator[tuple[str, float]]:
    """The numeric leaves of a re-identification section, as dotted names."""
    for key, value in (tree or {}).items():
        if key in DATA_ONLY:
            continue
        if isinstance(value, Mapping):
            yield from _leaves(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield f"{prefix}{key}", value


def published_keys(doc: Findings) -> set[str]:
    """Every value the schedule publishes, keyed as intervals are: ``TABLE:CELL`` for a count, else
    ``TABLE:CELL:stat``."""
    return {f"{t['id']}:{c}" + ("" if s == "count" else f":{s}")
            for t in doc.tables or () for c in t.get("cells", ()) for s in t.get("stats", ("count",))}


def _finished(unit: Mapping | None) -> bool:
    return unit is not None and unit.get("status", "done") == "done" and not unit.get("intervals_skipped")


def _narrowed(old: Mapping | None, new: Mapping, settings: Mapping, was: set[str], now: set[str]) -> dict[str, str]:
    """Values newly short of the protection levels: hidden in ``new`` with too narrow an interval where
    ``old`` hid them within the levels or did not publish them, or published exactly in ``new`` where
    ``old`` hid them within the levels (``was``, ``now``: the keys each schedule publishes)."""
    before, after = unit_intervals(old or {}), unit_intervals(new)
    bad_after = too_narrow(settings, after) or {}
    bad_before = too_narrow(settings, before) or {}
    out = {cell: why for cell, why in bad_after.items() if cell not in bad_before
           and not (cell not in before and cell in was and _finished(old))}  # published exactly before
    if _finished(new):
        for cell, iv in before.items():
            if cell in after or cell in bad_before or cell not in now or "value" not in iv:
                continue
            if too_narrow(settings, {cell: {**iv, "lo": iv["value"], "hi": iv["value"], "certified": True}}):
                out[cell] = f"{cell} published exactly (was hidden in [{iv['lo']}, {iv['hi']}])"
    return out


def _unit(old: Mapping | None, new: Mapping, rules: Mapping, keys: tuple[set, set]) -> Iterator[dict]:
    geo, before = new["geo"], old or {"summary": {}}
    was = old.get("status", "done") if old is not None else None
    if new.get("status", "done") != "done" and was in ("done", None):
        yield _worse("status", geo, was, new["status"],
                     f"not attacked to the end: {new['status']}" + (f" ({new['reason']})" if new.get("reason") else ""))
    s, t = before["summary"], new["summary"]
    yield from _singletons(s, t, geo, rules)
    for key, words in UNIT_COUNTS.items():
        if t.get(key, 0) > s.get(key, 0):
            yield _worse(key, geo, s.get(key, 0), t[key], f"{words} {s.get(key, 0)} -> {t[key]}")
    if new.get("reconstructed") and not before.get("reconstructed"):
        yield _worse("reconstructed", geo, False, True, "newly reconstructed exactly (one dataset reproduces it)")
    had = dict(_leaves(before.get("reidentification")))
    for key, n in _leaves(new.get("reidentification")):
        if n > had.get(key, 0):
            yield _worse(f"reidentification.{key}", geo, had.get(key, 0), n, f"persons {key} {had.get(key, 0)} -> {n}")
    if "protection_levels" in rules:
        narrowed = _narrowed(old, new, rules["protection_levels"], *keys)
        if narrowed:
            yield _worse("protection_levels", geo, None, sorted(narrowed), f"{len(narrowed)} values newly below the "
                         f"protection levels (e.g. {'; '.join(list(narrowed.values())[:2])})")


def _found(path: str | None, findings: Path | None) -> str | None:
    """An input path as a run recorded it: as given, else (relative to where that run was started)
    beside the output folder the findings file is in."""
    if not path or Path(path).is_absolute() or Path(path).exists() or findings is None:
        return path
    near = Path(findings).resolve().parent.parent / path
    return str(near) if near.exists() else path


def publishes_within(old: Findings, new: Findings, files: tuple = (None, None)) -> str | None:
    """Why every value the new release publishes is one the old release publishes, so that nothing it
    proves is new (same data and schema, each new table one of the old schedule's with its protection,
    the same named suppressions), or None when that is not shown (a file gone or changed since the run).
    ``files``: the two findings files, to find inputs recorded relative to where their run started."""
    a, b = ({k: _found(d.get(k), f) if k in ("data", "schema", "tables") else v for k, v in d.items()}
            for d, f in zip((old.inputs or {}, new.inputs or {}), files))
    try:
        recorded = [a["fingerprint"], b["fingerprint"]]
        if not a["data"] or any(recorded[0][k] != recorded[1][k] for k in ("data", "schema")):
            return None  # the runs' own records already differ: nothing to hash
        digests: dict = {}  # a file both runs read (the data, most often) is hashed once

        def digest(path) -> str | None:
            key = Path(path).resolve() if path else None
            if key not in digests:
                digests[key] = file_digest(path)
            return digests[key]

        if [{k: digest(d[k]) for k in ("data", "schema", "tables")} for d in (a, b)] != recorded:
            return None
        schema = load_schema(Path(b["schema"]))
        before, after = load_schedule(Path(a["tables"]), schema), load_schedule(Path(b["tables"]), schema)
    except (AuditError, OSError, KeyError, TypeError):
        return None
    tables = {t.id: t for t in before.tables}
    if any(tables.get(t.id) != t for t in after.tables):
        return None
    cells = {c.key for t in after.tables for c in t.cells}

    def named(schedule) -> dict:
        return {u: k for u, k in ((u, frozenset(keys) & cells) for u, keys in (schedule.suppress or {}).items()) if k}

    if named(before) != named(after):
        return None
    return f"every table of {b['tables']} is one of {a['tables']}'s, over the same data: nothing it proves is new"


def got_worse(old: Findings, new: Findings, new_claims: list[dict], by_claims: bool = False,
              within: str | None = None) -> list[dict]:
    """Everything riskier in ``new`` than in ``old``: checks newly failing (or warning) or failing with a
    larger count, per unit and release-wide measures that grew, and singleton claims and full records
    newly verified (``new_claims``, from :func:`audit.outputs.diff.compare`). With ``by_claims`` (every
    claim of both runs compared) the singleton and full-record counts of a unit with no such new claim
    are left to that comparison (:data:`BY_CLAIMS`). With ``within`` (:func:`publishes_within`) only a
    less finished attack counts."""
    out = []
    before = {(c.rule, c.unit): c for c in old.checks}
    for c in new.checks:
        risk = RISKY.get(c.outcome, 0)
        if not risk or c.rule == "protection_levels":  # judged value by value below: a value the old release
            continue                                     # published exactly is no worse for being hidden now
        b = before.get((c.rule, c.unit))
        was = RISKY.get(b.outcome, 0) if b is not None else 0
        if risk > was:
            out.append({**_worse("check", c.unit, b.outcome if b else None, c.outcome,
                                 f"newly {c.outcome}s ({c.count})", c.rule), "action": c.outcome})
        elif b is not None and c.count > b.count:
            out.append({**_worse("check", c.unit, b.count, c.count, f"{b.count} -> {c.count}", c.rule),
                        "action": c.outcome})
    old_at = {(u["level"], u["geo"]): i for i, u in enumerate(old.units)}  # units are read one at a time
    rules = (new.rules or {}).get("rules") or {}
    keys = (published_keys(old), published_keys(new))
    for u in new.units:
        i = old_at.get((u["level"], u["geo"]))
        out += _unit(None if i is None else old.units[i], u, rules, keys)
    counted = [c for c in new_claims if c.get("full") and "full_records" in rules
               or c["m"] == 1 and len(c["columns"]) >= (_counted(rules, "direct" if c.get("direct") else "derived")
                                                       or len(c["columns"]) + 1)]
    fresh = {c["unit"] for c in counted}
    for unit in sorted(fresh):
        n = sum(c["unit"] == unit for c in counted)
        out.append(_worse("new_claims", unit, None, n, f"{n} singleton claims or full records newly verified"))
    for key, words in TOTALS.items():
        a, b = getattr(old.summary, key, 0), getattr(new.summary, key, 0)
        if b > a:
            out.append(_worse(key, "(release)", a, b, f"{words} in total {a} -> {b}"))
    if by_claims:
        out = [w for w in out if w["unit"] in fresh or (w.get("rule") or w["what"]).split(".")[0] not in BY_CLAIMS
               and not w["what"].endswith("_singletons")]
    if within:  # what it proves the old release proved: only a less finished attack is still worse (fail closed)
        out = [w for w in out if w["what"] in ("status", "undecided") or w.get("rule") == "undecided"]
    return [w for w in map(lambda w: _gated(w, new.rules), out) if w["action"] != "off"]


def _gated(w: dict, rules: Mapping | None) -> dict:
    """The item with the rule that counts it and that rule's ``action`` in the policy (fail, warn, or off
    when the policy leaves the rule out; findings with no policy at all: fail)."""
    rule = w.get("rule") or RULE_OF.get(w["what"]) or w["what"]
    if rule.startswith("reidentification."):
        rule = "attribute_inference" if "inferred" in rule or "by_attribute" in rule else "reidentification"
    named = (rules or {}).get("rules")
    action = w.get("action") or ("fail" if not named else (named.get(rule) or {}).get("action", "off"))
    return {**w, "rule": rule, "action": action}


def gates(worse: list[dict]) -> bool:
    """Whether anything that got worse is counted by a rule that fails a release (not one that only warns)."""
    return any(w["action"] == "fail" for w in worse)


def worse_lines(worse: list[dict], limit: int) -> list[str]:
    """What got worse, briefly: one line per unit (its items joined), at most ``limit`` units."""
    by_unit: dict[str, list[str]] = {}
    for w in worse:
        by_unit.setdefault(w["unit"], []).append(f"{w['rule']}{' (warn)' if w['action'] == 'warn' else ''}: {w['text']}")
    lines = [f"WORSE in {unit}: " + "; ".join(items) for unit, items in list(by_unit.items())[:limit]]
    if len(by_unit) > limit:
        lines.append(f"... and {len(by_unit) - limit} more units with something worse")
    return lines
