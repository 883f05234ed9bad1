"""The rules' checks: one per rule per unit (release-wide rules: one for the release), read from the
findings' units, the re-identification section and the ranking and linear results."""
from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Sequence

from ..errors import InternalError
from ..release.magnitude import MAGNITUDE_RULES, sensitive_values
from ..specs.attacker import combination_key
from .definitions import REID_RULES, Rule, Rules
from .verdict import PASS, RELEASE, SKIPPED, Check


# ----------------------------------------------------------------------------------------------- checks

def _check(rule: Rule, unit: str, failed: bool | None, message: str, count: int = 0,
           cells: Mapping[str, str] | None = None, attributes: Mapping[str, float] | None = None) -> Check:
    outcome = SKIPPED if failed is None else (rule.action if failed else PASS)
    return Check(rule.id, unit, outcome, count, message, cells, attributes)


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
        return _records_check(rule, unit)
    if rule.id == "reconstructed_units":
        hit = bool(unit.get("reconstructed"))
        return _check(rule, geo, hit, "exactly one dataset reproduces the published tables: the unit is fully "
                      "reconstructed" if hit else "more than one dataset reproduces the published tables", int(hit))
    if rule.id == "small_cells":
        t = rule.settings["threshold"]
        cells = unit.get("cells")
        if cells is None:
            return _check(rule, geo, None, "the findings do not list published cell values (re-run audit run)")
        found = {cell: v for cell, v in exact_counts(unit).items() if 1 <= v < t}  # the pinned ones first
        pinned = {cell: pinned_words(v) for cell, v in found.items() if cell in (cells.get("pinned") or {})}
        small = [f"{cell} {pinned[cell]}" if cell in pinned else f"{cell} = {v}" for cell, v in found.items()]
        if not small:
            return _check(rule, geo, False, f"no published exact count below {t}")
        return _check(rule, geo, True, f"{_plural(len(small), 'published count')} below {t}"
                      + (f", {len(pinned)} of them suppressed but pinned by the rule" if pinned else "")
                      + f" (e.g. {', '.join(small[:3])})", len(small), pinned or None)
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


def _records_check(rule: Rule, unit: dict) -> Check:
    """Persons whose record over every published column the release proves for a group smaller than
    the threshold (a larger group is a published count the policy allows)."""
    t, s = rule.settings["threshold"], unit["summary"]
    by_group = s.get("full_records_by_group")
    if by_group is None:  # findings of an older run: every reconstructed record counted, whatever its group
        n = s.get("full_records", 0)
        return _check(rule, unit["geo"], n > 0, f"{_plural(n, 'record')} reconstructed over every column (group "
                      "sizes not in these findings: re-run audit run)" if n else "no record reconstructed", n)
    small = {int(m): n for m, n in by_group.items() if int(m) < t and n}
    if not small:
        return _check(rule, unit["geo"], False, f"no record over every published column proved for fewer than {t} "
                      f"persons ({_plural(s.get('full_records', 0), 'person')} in larger groups)")
    n = sum(small.values())
    groups = ", ".join(f"{_plural(k // m, 'group')} of {m}" for m, k in sorted(small.items()))
    return _check(rule, unit["geo"], True, f"{_plural(n, 'record')} over every published column proved for fewer "
                  f"than {t} persons ({groups})", n)


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


def exact_counts(unit: Mapping) -> dict[str, int]:
    """A findings unit's small exact counts as the attacker has them: published (``cells.small``) or
    suppressed but pinned by their rule (``cells.pinned``)."""
    cells = unit.get("cells") or {}
    return {**(cells.get("pinned") or {}), **(cells.get("small") or {})}


def pinned_words(value: int) -> str:
    """How a check or the report names a suppressed cell its own rule pins."""
    return f"suppressed but pinned by its rule (value {value})"


def unit_intervals(unit: Mapping) -> dict[str, dict]:
    """A findings unit's hidden cells' intervals, each as one object: ``lo``, ``hi`` (from ``intervals``)
    and its ``interval_details``; a suppressed cell its own rule pins (``cells.pinned``) as ``[v, v]``,
    certified, with ``pinned`` true."""
    details, levels = unit.get("interval_details") or {}, (unit.get("cells") or {}).get("levels") or {}
    out = {k: {"lo": lo, "hi": hi, **details.get(k, {})} for k, (lo, hi) in (unit.get("intervals") or {}).items()}
    pinned = (unit.get("cells") or {}).get("pinned") or {}
    out = {k: {"lo": v, "hi": v, "certified": True, "value": v, "pinned": True} for k, v in pinned.items()} | out
    for key, iv in out.items():  # the schedule's a-priori levels of the cell (a value key's cell, or the cell)
        own = levels.get(key.rsplit(":", 1)[0] if key.count(":") > 1 else key)
        if own is not None:
            iv["levels"] = own
    return out


def too_narrow(settings: Mapping, intervals: Mapping[str, dict]) -> dict[str, str]:
    """The hidden cells (:func:`unit_intervals`) whose interval misses the protection levels, cell ->
    why; cells whose true value is not known (a published release alone) are not judged."""
    bad = {}
    for cell, iv in intervals.items():
        if "value" not in iv:
            continue
        v = iv["value"]
        own = iv.get("levels")  # the schedule's a-priori levels replace the rule's for this cell
        below, above = protection_needed({"lower": own[0], "upper": own[1]} if own else settings, v, "stat" not in iv)
        if not iv["certified"] or v - iv["lo"] < below or iv["hi"] - v < above:
            where = pinned_words(v) if iv.get("pinned") else \
                f"in [{iv['lo']}, {iv['hi']}]{'' if iv['certified'] else ' (not certified)'}, true {v}"
            bad[cell] = f"{cell} {where}, needs [{v - below:g}, {v + above:g}]"
    return bad


def _protection_check(rule: Rule, unit: dict) -> Check:
    geo, intervals = unit["geo"], unit_intervals(unit)
    why = unit.get("intervals_skipped")
    if not intervals:
        return _check(rule, geo, None if why else False, why or "no cell is hidden")
    bad = too_narrow(rule.settings, intervals)
    unknown = any("value" not in iv for iv in intervals.values())
    if not bad and (unknown or why):  # only the cells pinned by their rule were judged
        return _check(rule, geo, None, why or "the true values are not known (a published release alone)")
    if not bad:
        return _check(rule, geo, False, f"every hidden cell's interval meets the protection levels ({len(intervals)} cells)")
    return _check(rule, geo, True, f"{_plural(len(bad), 'hidden cell')} with too narrow an interval (e.g. "
                  f"{'; '.join(list(bad.values())[:3])})", len(bad))


def rank_lift(curve: Mapping, k_over_u: list | None, upto: float) -> tuple[float, float | None, str]:
    """Largest (attack - best baseline) over k/u <= upto: (lift, at k/u, baseline name)."""
    ks = curve.get("k_over_u") or k_over_u or []
    attack = curve.get("attack") or []
    best, at, which = float("-inf"), None, ""
    for i, k in enumerate(ks):
        if k is None or k > upto + 1e-12 or i >= len(attack) or attack[i] is None:
            continue
        bases = {n: b[i] for n, b in (curve.get("baselines") or {}).items()   # None: no holdout (a 1-person unit)
                 if b is not None and i < len(b) and b[i] is not None}
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


def _judged(rule: Rule, reid: Mapping) -> list[str]:
    """What a re-identification rule judges: each sensitive attribute, then the combinations it names."""
    return [*reid["attacker"]["sensitive"], *map(combination_key, rule.settings.get("combinations") or ())]


def _reid_unit(rule: Rule, unit: Mapping, names: list[str], bound: int) -> Check:
    """One unit: fail when, for some sensitive attribute or combination, more persons than ``bound`` have
    its value proved (linked, or unlike the unit's majority on it), counting undecided ones (fail closed)."""
    key = REID_RULES[rule.id][0]
    what = "linked on the quasi-identifiers with it proved" if key == "confirmed" else \
        "unlike their unit's majority on it with it proved"
    counts, geo = unit.get("reidentification"), unit["geo"]
    if counts is None:
        return _check(rule, geo, None, "not measured: the exact attack did not finish this unit")
    attrs = counts.get("attributes") or {}
    missing = [n for n in names if n not in attrs]
    if missing:
        return _check(rule, geo, True, f"{', '.join(missing)} not measured in these findings (an older run, or a "
                      "combination the run's policy did not name): re-run audit run with this policy", 1)
    persons = {n: attrs[n][key] + (attrs[n].get("undecided") or {}).get(key, 0) for n in names}
    over = {n: v for n, v in persons.items() if v > bound}
    joint = f"every sensitive value together: {counts[key]}"
    if not over:
        return _check(rule, geo, False, f"no sensitive attribute proved for more than {bound} persons {what} ("
                      + ", ".join(f"{n}: {v}" for n, v in persons.items()) + f"; {joint})", 0, attributes=persons)
    words = "; ".join(f"{n}: {_plural(v, 'person')}" + (f" ({attrs[n]['undecided'][key]} undecided, not known to "
                      "be safe)" if (attrs[n].get("undecided") or {}).get(key) else "") for n, v in over.items())
    return _check(rule, geo, True, f"{words} {what} (more than {bound}; {joint})", max(over.values()),
                  attributes=persons)


def _reid_release(rule: Rule, reid: Mapping, names: list[str], limit: float) -> Check | None:
    """The release: each attack's rate (confirmed) or lift (inference, persons unlike the majority), per
    sensitive attribute and combination; one above ``limit`` fails."""
    ran = [(name, reid[name]) for name in ("exact", "ranking") if (reid.get(name) or {}).get("status") == "run"]
    if not ran:
        return None
    confirmed = REID_RULES[rule.id][0] == "confirmed"
    values, texts, unmeasured = {}, [], []
    for attack, part in ran:
        attrs = part.get("attributes") or {}
        parts = []
        if not attrs:  # a rank.json of an older version: its every-value figure is judged, as before (never
            # passed unjudged; a confirmed rate per attribute is at least the every-value one)
            values[f"{attack}: every sensitive value"] = ((part["confirmed"]["rate"] or 0.0) if confirmed
                                                          else part["inference"]["unlike_majority"]["lift"])
        for n in names:
            a = attrs.get(n)
            if a is None:
                unmeasured.append(f"{attack}: {n}")
                continue
            if confirmed:
                v = a["confirmed"]["rate"] or 0.0
                parts.append(f"{n} {_pct(a['confirmed'])}")
            else:
                inf = a["inference"]["unlike_majority"]
                v = inf["lift"]
                parts.append(f"{n} {_pct(inf['attack'])}, {v:+.1%} over the {inf['best_baseline']} baseline")
            values[f"{attack}: {n}"] = v
        texts.append(f"{attack} attack: " + ("; ".join(parts) or "no attribute measured")
                     + (f" (every sensitive value together: confirmed {_pct(part['confirmed'])})" if confirmed else ""))
    over = [k for k, v in values.items() if v > limit]
    # the exact attack measures what the policy names; an older findings file or rank.json may not
    failed = bool(over) or any(u.startswith("exact:") for u in unmeasured)
    note = f"; not measured: {', '.join(unmeasured)}" if unmeasured else ""
    what = "confirmed rate" if confirmed else "inference lift for persons unlike their unit's majority"
    return _check(rule, RELEASE, failed, " | ".join(texts) + note + (
        f" ({what} above the bound {limit:.0%}: {', '.join(over)})" if over else f" (within the bound {limit:.0%})"),
        len(over) + sum(u.startswith("exact:") for u in unmeasured), attributes={k: values[k] for k in over} or None)


def _reid_checks(rule: Rule, units: Iterable[Mapping], reid: Mapping | None) -> Iterator[Check]:
    """Per unit (exact attack: persons whose values are proved) and for the release (each attack's rate),
    each sensitive attribute and named combination judged on its own; one at a time (none held)."""
    reid = reid or {}
    if reid.get("status") != "run":
        yield _check(rule, RELEASE, None, reid.get("reason") or "the findings have no re-identification section")
        return
    names = _judged(rule, reid)
    bound, limit = rule.settings["max_persons"], rule.settings[REID_RULES[rule.id][1]]
    for unit in (units if bound is not None else ()):
        if unit.get("level") == reid["attacker"]["geography"]:
            yield _reid_unit(rule, unit, names, bound)
    if limit is not None:
        release = _reid_release(rule, reid, names, limit)
        if release is not None:
            yield release


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
