"""Compare two findings documents: what a schedule change adds to (or removes from) the risk."""
from __future__ import annotations

from typing import Iterator, Mapping


def _derived(unit: Mapping, store) -> Iterator[dict]:
    """A unit's verified derived singleton claims: all of them from the claim store, else those listed."""
    claims = store.claims(unit["store"]) if store is not None and unit.get("store") else unit.get("claims", ())
    for c in claims:
        if c.get("status") == "verified" and c.get("m") == 1 and not c.get("direct"):
            yield c


def _key(claim: Mapping) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in claim["columns"].items()))


def _failing(doc: Mapping) -> set[tuple[str, str]]:
    return {(c["rule"], c["unit"]) for c in doc.get("checks", ()) if c.get("outcome") == "fail"}


def compare(old: Mapping, new: Mapping, old_store=None, new_store=None) -> dict:
    """Units newly at risk, derived singleton claims newly verified (and no longer), checks newly failing.

    Claims are compared unit by unit over the claim stores when both are given, else over the
    claims the documents list (a bounded selection per unit).
    """
    from .report import claim_text

    if old_store is None or new_store is None:
        old_store = new_store = None
    schema = new.get("schema") or old.get("schema") or {}
    old_at = {(u["level"], u["geo"]): i for i, u in enumerate(old.get("units", ()))}
    seen, added, removed, at_risk = set(), [], [], []
    for u in new.get("units", ()):
        key = (u["level"], u["geo"])
        seen.add(key)
        before = old["units"][old_at[key]] if key in old_at else None
        a = {_key(c): c for c in _derived(before, old_store)} if before is not None else {}
        b = {_key(c): c for c in _derived(u, new_store)}
        added += [{"unit": u["geo"], "columns": dict(k), "text": claim_text(c, schema, u), "cells": c.get("cells", [])}
                  for k, c in b.items() if k not in a]
        removed += [{"unit": u["geo"], "columns": dict(k)} for k in a if k not in b]
        if u["summary"].get("derived_singletons", 0) > 0 and \
                (before is None or before["summary"].get("derived_singletons", 0) == 0):
            at_risk.append(u["geo"])
    for key, i in old_at.items():
        if key not in seen:
            removed += [{"unit": key[1], "columns": dict(_key(c))} for c in _derived(old["units"][i], old_store)]
    added.sort(key=lambda c: (c["unit"], -len(c["columns"])))
    fa, fb = _failing(old), _failing(new)
    newly = sorted(fb - fa)
    fixed = sorted(fa - fb)
    lines = [f"verdict: {str(old.get('verdict')).upper()} -> {str(new.get('verdict')).upper()}",
             f"derived singleton claims: {old.get('summary', {}).get('derived_singletons', 0)} -> "
             f"{new.get('summary', {}).get('derived_singletons', 0)} "
             f"({len(added)} newly verified, {len(removed)} no longer verified)",
             f"units newly singling out someone: {len(at_risk)}" + (f" ({', '.join(at_risk[:10])}"
                                                                  f"{', ...' if len(at_risk) > 10 else ''})" if at_risk else "")]
    if old_store is None:
        lines.append("(claims compared over those findings.json lists: a claim store is missing beside one of the files)")
    lines += [f"NEWLY FAILING {r} in {u}" for r, u in newly]
    lines += [f"no longer failing {r} in {u}" for r, u in fixed]
    return {"old_verdict": old.get("verdict"), "new_verdict": new.get("verdict"),
            "newly_failing": [{"rule": r, "unit": u} for r, u in newly],
            "no_longer_failing": [{"rule": r, "unit": u} for r, u in fixed],
            "units_newly_at_risk": at_risk, "new_claims": added, "removed_claims": removed, "lines": lines}
