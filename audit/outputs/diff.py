"""Compare two findings: what a schedule change adds to (or removes from) the risk."""
from __future__ import annotations

import re
from typing import Mapping

from ..findings.model import Findings
from .diff_risk import gates, got_worse, publishes_within
from .words import claim_text

RANGE = re.compile(r"^(-?\d+)-(-?\d+)$")


def _claims(unit: Mapping, store) -> dict:
    """A unit's verified singleton claims and full records (claims over every column), keyed by ``m`` and
    their column values: every one from the claim store (raw rows, turned into claims only when
    shown), else those findings.json lists."""
    if store is None or not unit.get("store"):
        listed = [c for c in unit.get("claims", ()) if c.get("status") == "verified"]
        width = max((len(c["columns"]) for c in listed), default=0)
        return {(c["m"], frozenset((k, str(v)) for k, v in c["columns"].items())): c for c in listed
                if c["m"] == 1 or len(c["columns"]) == width}
    attrs, first = store.attributes, 6
    out = {}
    for row in store.rows(unit["store"]):
        if row[2] == "verified" and (row[3] == "1" or int(row[5]) == len(attrs)):
            out[(int(row[3]), frozenset((a, v) for a, v in zip(attrs, row[first:first + len(attrs)]) if v))] = row
    return out


def _claim(found, store) -> Mapping:
    return store.claim(found) if isinstance(found, list) else found


def _span(value: str, numeric: bool) -> tuple:
    """A claim's value as the codes it covers: ('range', lo, hi) for integers, else ('codes', set)."""
    if numeric:
        m = RANGE.match(value)
        if m:
            return "range", int(m[1]), int(m[2])
        if re.fullmatch(r"-?\d+", value):
            return "range", int(value), int(value)
    return "codes", frozenset(value.split("|")) if "|" in value else frozenset([value])


def _within(inner: tuple, outer: tuple) -> bool:
    if inner[0] == outer[0] == "range":
        return outer[1] <= inner[1] and inner[2] <= outer[2]
    if inner[0] == "range":
        return all(str(i) in outer[1] for i in range(inner[1], inner[2] + 1))
    if outer[0] == "range":
        return all(re.fullmatch(r"-?\d+", c) and outer[1] <= int(c) <= outer[2] for c in inner[1])
    return inner[1] <= outer[1]


def _uncovered(before: dict, after: dict, numeric: set[str]) -> list:
    """Keys of ``after`` that ``before`` does not know at least as finely: no claim with the same ``m``
    over the same columns whose every value lies within the new claim's (a claim over finer codes
    already singles out the same records: a coarser table schedule adds no risk by restating it)."""
    fresh = [k for k in after if k not in before]
    if not fresh or not before:
        return fresh
    labels: dict[str, set[str]] = {}
    for _, pairs in fresh:
        for col, value in pairs:
            labels.setdefault(col, set()).add(value)
    spans = {col: [(v, _span(v, col in numeric)) for v in vs] for col, vs in labels.items()}
    known, cache = set(), {}
    for m, pairs in before:
        mapped = []
        for col, value in pairs:
            if (col, value) not in cache:
                inner = _span(value, col in numeric)
                cache[col, value] = next((v for v, s in spans.get(col, ()) if _within(inner, s)), None)
            mapped.append((col, cache[col, value]))
        if all(v is not None for _, v in mapped):
            known.add((m, frozenset(mapped)))
    return [k for k in fresh if k not in known]


def _failing(doc: Findings) -> set[tuple[str, str]]:
    return {(c.rule, c.unit) for c in doc.checks if c.outcome == "fail"}


def compare(old: Findings, new: Findings, old_store=None, new_store=None, files: tuple = (None, None)) -> dict:
    """Units newly at risk, singleton claims and full records newly verified (and no longer), checks newly
    failing, and ``worse``: everything riskier in ``new`` (:func:`audit.outputs.diff_risk.got_worse`).

    Claims are compared unit by unit over the claim stores when both are given, else over the
    claims the documents list (a bounded selection per unit). ``files``: the two findings files (their
    runs' inputs are looked for beside them).
    """
    if old_store is None or new_store is None:
        old_store = new_store = None
    schema = new.schema or old.schema or {}
    numeric = {n for n, c in (schema.get("columns") or {}).items() if c.get("kind") == "integer"}
    old_at = {(u["level"], u["geo"]): i for i, u in enumerate(old.units)}
    seen, added, removed, at_risk = set(), [], [], []
    for u in new.units:
        key = (u["level"], u["geo"])
        seen.add(key)
        before = old.units[old_at[key]] if key in old_at else None
        a = _claims(before, old_store) if before is not None else {}
        b = _claims(u, new_store)
        width = len(new_store.attributes) if new_store is not None else max((len(k[1]) for k in b), default=0)
        full = {k for k in b if len(k[1]) == width}
        for k in _uncovered(a, b, numeric):
            c = _claim(b[k], new_store)
            added.append({"unit": u["geo"], "columns": c["columns"], "m": c["m"], "direct": bool(c.get("direct")),
                          "full": k in full, "text": claim_text(c, schema, u), "cells": c.get("cells", [])})
        removed += [{"unit": u["geo"], "columns": _claim(found, old_store)["columns"]} for k, found in a.items()
                    if k not in b]
        if u["summary"].get("derived_singletons", 0) > 0 and \
                (before is None or before["summary"].get("derived_singletons", 0) == 0):
            at_risk.append(u["geo"])
    for key, i in old_at.items():
        if key not in seen:
            removed += [{"unit": key[1], "columns": _claim(found, old_store)["columns"]}
                        for found in _claims(old.units[i], old_store).values()]
    added.sort(key=lambda c: (c["unit"], -len(c["columns"])))
    within = publishes_within(old, new, files)
    if within:
        added = []  # implied by the old release's values, which include the new one's
    worse = got_worse(old, new, added, old_store is not None, within)
    fails = gates(worse)
    fa, fb = _failing(old), _failing(new)
    newly = sorted(fb - fa)
    fixed = sorted(fa - fb)
    lines = [f"verdict: {str(old.verdict).upper()} -> {str(new.verdict).upper()}",
             f"derived singleton claims: {old.summary.derived_singletons} -> {new.summary.derived_singletons}",
             f"singleton claims and full records: {len(added)} newly verified (not known before at least as "
             f"finely), {len(removed)} no longer verified as they were",
             f"units newly singling out someone: {len(at_risk)}" + (f" ({', '.join(at_risk[:10])}"
                                                                  f"{', ...' if len(at_risk) > 10 else ''})" if at_risk else "")]
    if old_store is None:
        lines.append("(claims compared over those findings.json lists: a claim store is missing beside one of the "
                     "files, so singleton counts are compared too)")
    if within:
        lines.append(f"the new release publishes a subset of the old one's values: {within}")
    lines.append(f"got worse: {len({w['unit'] for w in worse})} units or totals"
                 + ("" if fails else " (under rules that only warn)") if worse
                 else "got worse: nothing (no rule counts more risk in the new findings)")
    lines += [f"NEWLY FAILING {r} in {u}" for r, u in newly]
    lines += [f"no longer failing {r} in {u}" for r, u in fixed]
    return {"old_verdict": old.verdict, "new_verdict": new.verdict, "worse": worse, "fails": fails, "within": within,
            "newly_failing": [{"rule": r, "unit": u} for r, u in newly],
            "no_longer_failing": [{"rule": r, "unit": u} for r, u in fixed],
            "units_newly_at_risk": at_risk, "new_claims": added, "removed_claims": removed, "lines": lines}
