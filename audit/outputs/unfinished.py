"""Units the attack did not finish (too large, out of time or memory, failed) in words, for the report's
summary and sign-off: their claims are undecided, so the tables they publish never pass (fail closed)."""
from __future__ import annotations

from ..findings.model import Findings
from .words import plural

# a unit's status -> what happened to it, after "N blocks"
CAUSES = {"too-large": "too large to attack", "timeout": "ran out of time", "out-of-memory": "ran out of memory",
          "error": "whose attack failed", "inconsistent": "whose release admits no dataset",
          "done": "with claims past the solver's budget"}


def unfinished(unit: dict) -> bool:
    """Whether the attack left the unit open: a status other than ``done``, or a claim undecided."""
    return unit.get("status", "done") != "done" or unit["summary"].get("undecided", 0) > 0


def reason(unit: dict) -> str:
    """The unit's reason, else the first listed undecided claim's (``conflict budget 200000 exhausted``)."""
    return unit.get("reason") or next((c["reason"] for c in unit.get("claims", ())
                                       if c.get("status") == "undecided" and c.get("reason")), "")


def causes(units) -> str:
    """Unfinished units by cause, each with an example: ``1 block too large to attack (0001: 7 rows >
    --max-rows 3)``."""
    by: dict[tuple[str, str], list[dict]] = {}
    for u in units:
        by.setdefault((u.get("status", "done"), u.get("level") or "unit"), []).append(u)
    parts = []
    for (status, level), group in by.items():
        first = group[0]
        why = reason(first)
        example = f" ({'e.g. ' if len(group) > 1 else ''}{first['geo']}{': ' + why if why else ''})"
        parts.append(f"{plural(len(group), level)} {CAUSES.get(status, status)}{example}")
    return "; ".join(parts)


def undecided_sentence(doc: Findings) -> str:
    """The summary's sentence on undecided claims, naming each cause with an example unit."""
    why = causes(u for u in doc.units if unfinished(u))
    return (f"{plural(doc.summary.undecided, 'claim')} could not be decided: they are not shown safe"
            + (f". {why[0].upper()}{why[1:]}." if why else "."))


def unfinished_tables(doc: Findings, tables) -> dict[str, list[dict]]:
    """Table id -> the unfinished units that publish it, for the tables ``tables``: a unit's own level's
    tables and the finer levels' (a coarser unit is attacked with its children's tables); a table or
    unit whose level is not known, every one."""
    geography = list((doc.schema or {}).get("geography") or ())
    levels = {t["id"]: t.get("level") for t in doc.tables or ()}
    out: dict[str, list[dict]] = {}
    for u in doc.units:
        if not unfinished(u):
            continue
        level = u.get("level")
        for table in tables:
            at = levels.get(table)
            if level not in geography or at not in geography or geography.index(at) >= geography.index(level):
                out.setdefault(table, []).append(u)
    return out


def table_status(units: list[dict], rules: dict) -> tuple[str, str]:
    """The sign-off status and reason of a table published by these unfinished units: ``fail`` when a claim is
    undecided and the ``undecided`` rule fails, else ``review``; never ``pass``."""
    undecided = sum(u["summary"].get("undecided", 0) for u in units)
    action = (rules.get("undecided") or {}).get("action", "fail")
    status = "fail" if undecided and action == "fail" else "review"
    return status, f"not shown safe: {plural(undecided, 'claim')} undecided; {causes(units)}"
