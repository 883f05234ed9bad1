"""The attacker model and the policy's choices, stated where they matter (issue 35).

Each is a choice a disclosure-review officer may make otherwise: what the attacker is assumed to know,
which small-count threshold judges, what only warns. :func:`assumptions` words each for one run, with
what it changed there, for the report (``#attacker-model``); docs/rules.md, "The attacker model and the
defaults", says why each default is what it is.
"""
from __future__ import annotations

from typing import Mapping

from ..findings.model import Findings
from .words import plural

KNOWN_POPULATION = "no total is published: the attacker is assumed to know the unit's population"


def _thresholds(doc: Findings) -> dict[int, list[str]]:
    """The schedule's ``suppress_below`` thresholds, each with its tables (findings' ``tables``)."""
    out: dict[int, list[str]] = {}
    for t in doc.tables or ():
        t_below = ((t.get("protection") or {}).get("suppress_below")) if isinstance(t, Mapping) else None
        if t_below:
            out.setdefault(int(t_below), []).append(str(t.get("id")))
    return out


def assumptions(doc: Findings, level: str = "unit") -> list[dict]:
    """The choices behind this run's verdict: each ``{"key", "title", "text"}``, the text saying what it did here."""
    rules = (doc.rules or {}).get("rules") or {}
    hidden_total, singled = [], 0
    for u in doc.units:
        if any(str(n).startswith(KNOWN_POPULATION) for n in u.get("notes") or ()):
            hidden_total.append(u["geo"])
            singled += (u.get("summary") or {}).get("verified_singletons", 0)
    out = [{"key": "population", "title": "The attacker knows each unit's population",
            "text": (f"{plural(len(hidden_total), level)} {'publishes' if len(hidden_total) == 1 else 'publish'} no "
                     f"total (e.g. {hidden_total[0]}); the attack takes "
                     f"their number of {doc.inputs.get('unit', 'person')}s as known, as when totals are held invariant, "
                     f"and proves {plural(singled, 'singleton claim')} there. An attacker who does not know it proves "
                     "less; the cautious choice is kept, since populations usually are published or estimable."
                     if hidden_total else "Every unit publishes its total, so nothing is assumed beyond the tables.")}]
    small = rules.get("small_cells") or {}
    below = _thresholds(doc)
    if small.get("action") in ("fail", "warn"):
        t = small.get("threshold")
        schedule = "; ".join(f"below {k} in {', '.join(v)}" for k, v in sorted(below.items())) or "nothing"
        differ = [k for k in below if k != t]
        text = (f"The policy's small_cells rule fails a published exact count from 1 to {t - 1}; the schedule "
                f"suppresses counts {schedule}.")
        if differ:
            text += (f" They are separate choices: the schedule says what is hidden, the policy what may not be "
                     f"published. A count from {t} to {max(differ) - 1} passes the policy if published; to judge by "
                     f"the schedule's threshold, use a rules file with small_cells.threshold: {max(differ)}.")
        out.append({"key": "thresholds", "title": "Which small-count threshold judges", "text": text})
    levels = rules.get("protection_levels") or {}
    action = levels.get("action", "off") if levels else "off"
    warned = next((w for w in (*(doc.failing or ()), *(doc.warnings or ())) if w.rule == "protection_levels"), None)
    text = {"fail": "A hidden count the other published numbers pin too closely fails the release.",
            "warn": "A hidden count the other published numbers pin exactly (interval [v, v]) is only warned "
                    "about, not failed, by this policy; its singletons still fail derived_singletons, but a "
                    "recovered count of 2 or more does not fail small_cells."}.get(
        action, "Hidden counts' intervals are not judged by this policy.")
    if warned:
        text += f" Here: {plural(warned.count, 'hidden cell')} in {plural(warned.units, level)}."
    if action == "warn":
        text += (" For the same reason audit protect adds no complementary cells for them unless the policy makes "
                 "protection_levels fail (action: fail), or the schedule asks for complementary: true.")
    out.append({"key": "pinned", "title": "Suppressed counts the margins give away", "text": text})
    derived = rules.get("derived_singletons") or {}
    k = derived.get("min_columns")
    if derived.get("action") in ("fail", "warn") and k and k > 1:
        by = ((doc.summary.singletons_by_columns or {}).get("derived") or {})
        narrow = sum(n for c, n in by.items() if int(c) < k)
        out.append({"key": "narrow", "title": f"Singletons over fewer than {k} attributes pass",
                    "text": f"A claim that one {doc.inputs.get('unit', 'person')} has one value (the only woman of a "
                            f"{level}) singles them out but tells nothing more about them; derived_singletons counts "
                            f"only claims over {k} or more attributes. Here {plural(narrow, 'such claim')} "
                            f"{'passes' if narrow == 1 else 'pass'} (min_columns: 1 fails them, as the strict policy does)."})
    return out
