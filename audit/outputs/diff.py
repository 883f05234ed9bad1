"""Compare two findings: what a schedule change adds to (or removes from) the risk."""
from __future__ import annotations

from typing import Mapping

from ..findings.model import Findings
from .words import claim_text


def _derived(unit: Mapping, store, by_position: bool = False) -> dict:
    """A unit's verified derived singleton claims by their columns: every one from the claim store
    (raw rows, turned into claims only when shown), else those findings.json lists. With
    ``by_position`` (two stores with one header) a row's values are its key, which is faster."""
    if store is None or not unit.get("store"):
        return {frozenset((k, str(v)) for k, v in c["columns"].items()): c for c in unit.get("claims", ())
                if c.get("status") == "verified" and c.get("m") == 1 and not c.get("direct")}
    attrs, first = store.attributes, 6
    last = first + len(attrs)
    rows = (row for row in store.rows(unit["store"]) if row[2] == "verified" and row[3] == "1" and row[4] == "0")
    if by_position:
        return {tuple(row[first:last]): row for row in rows}
    return {frozenset((a, v) for a, v in zip(attrs, row[first:last]) if v): row for row in rows}


def _claim(found, store) -> Mapping:
    return store.claim(found) if isinstance(found, list) else found


def _failing(doc: Findings) -> set[tuple[str, str]]:
    return {(c.rule, c.unit) for c in doc.checks if c.outcome == "fail"}


def compare(old: Findings, new: Findings, old_store=None, new_store=None) -> dict:
    """Units newly at risk, derived singleton claims newly verified (and no longer), checks newly failing.

    Claims are compared unit by unit over the claim stores when both are given, else over the
    claims the documents list (a bounded selection per unit).
    """
    if old_store is None or new_store is None:
        old_store = new_store = None
    same = old_store is not None and old_store.header == new_store.header
    schema = new.schema or old.schema or {}
    old_at = {(u["level"], u["geo"]): i for i, u in enumerate(old.units)}
    seen, added, removed, at_risk = set(), [], [], []
    for u in new.units:
        key = (u["level"], u["geo"])
        seen.add(key)
        before = old.units[old_at[key]] if key in old_at else None
        a = _derived(before, old_store, same) if before is not None else {}
        b = _derived(u, new_store, same)
        for k, found in b.items():
            if k not in a:
                c = _claim(found, new_store)
                added.append({"unit": u["geo"], "columns": c["columns"], "text": claim_text(c, schema, u),
                              "cells": c.get("cells", [])})
        removed += [{"unit": u["geo"], "columns": _claim(found, old_store)["columns"]} for k, found in a.items()
                    if k not in b]
        if u["summary"].get("derived_singletons", 0) > 0 and \
                (before is None or before["summary"].get("derived_singletons", 0) == 0):
            at_risk.append(u["geo"])
    for key, i in old_at.items():
        if key not in seen:
            removed += [{"unit": key[1], "columns": _claim(found, old_store)["columns"]}
                        for found in _derived(old.units[i], old_store).values()]
    added.sort(key=lambda c: (c["unit"], -len(c["columns"])))
    fa, fb = _failing(old), _failing(new)
    newly = sorted(fb - fa)
    fixed = sorted(fa - fb)
    lines = [f"verdict: {str(old.verdict).upper()} -> {str(new.verdict).upper()}",
             f"derived singleton claims: {old.summary.derived_singletons} -> {new.summary.derived_singletons} "
             f"({len(added)} newly verified, {len(removed)} no longer verified)",
             f"units newly singling out someone: {len(at_risk)}" + (f" ({', '.join(at_risk[:10])}"
                                                                  f"{', ...' if len(at_risk) > 10 else ''})" if at_risk else "")]
    if old_store is None:
        lines.append("(claims compared over those findings.json lists: a claim store is missing beside one of the files)")
    lines += [f"NEWLY FAILING {r} in {u}" for r, u in newly]
    lines += [f"no longer failing {r} in {u}" for r, u in fixed]
    return {"old_verdict": old.verdict, "new_verdict": new.verdict,
            "newly_failing": [{"rule": r, "unit": u} for r, u in newly],
            "no_longer_failing": [{"rule": r, "unit": u} for r, u in fixed],
            "units_newly_at_risk": at_risk, "new_claims": added, "removed_claims": removed, "lines": lines}
