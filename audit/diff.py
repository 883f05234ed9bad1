"""Compare two findings documents: what a schedule change adds to (or removes from) the risk."""
from __future__ import annotations

from typing import Mapping


def _claims(doc: Mapping) -> dict[tuple, dict]:
    out = {}
    for u in doc.get("units", ()):
        for c in u.get("claims", ()):
            if c.get("status") == "verified" and c.get("m") == 1 and not c.get("direct"):
                key = (u["geo"], tuple(sorted((k, str(v)) for k, v in c["columns"].items())))
                out[key] = (u, c)
    return out


def _failing(doc: Mapping) -> set[tuple[str, str]]:
    return {(c["rule"], c["unit"]) for c in doc.get("checks", ()) if c.get("outcome") == "fail"}


def compare(old: Mapping, new: Mapping) -> dict:
    """Units newly at risk, derived singleton claims newly verified (and no longer), checks newly failing."""
    from .report import claim_text

    schema = new.get("schema") or old.get("schema") or {}
    a, b = _claims(old), _claims(new)
    added = [{"unit": k[0], "columns": dict(k[1]), "text": claim_text(b[k][1], schema, b[k][0]),
              "cells": b[k][1].get("cells", [])} for k in b if k not in a]
    added.sort(key=lambda c: (c["unit"], -len(c["columns"])))
    removed = [{"unit": k[0], "columns": dict(k[1])} for k in a if k not in b]
    fa, fb = _failing(old), _failing(new)
    newly = sorted(fb - fa)
    fixed = sorted(fa - fb)
    old_units = {u["geo"]: u for u in old.get("units", ())}
    at_risk = []
    for u in new.get("units", ()):
        before = old_units.get(u["geo"], {}).get("summary", {}).get("derived_singletons", 0)
        after = u["summary"].get("derived_singletons", 0)
        if after > 0 and before == 0:
            at_risk.append(u["geo"])
    lines = [f"verdict: {str(old.get('verdict')).upper()} -> {str(new.get('verdict')).upper()}",
             f"derived singleton claims: {old.get('summary', {}).get('derived_singletons', 0)} -> "
             f"{new.get('summary', {}).get('derived_singletons', 0)} "
             f"({len(added)} newly verified, {len(removed)} no longer verified)",
             f"units newly singling out someone: {len(at_risk)}" + (f" ({', '.join(at_risk[:10])}"
                                                                  f"{', ...' if len(at_risk) > 10 else ''})" if at_risk else "")]
    lines += [f"NEWLY FAILING {r} in {u}" for r, u in newly]
    lines += [f"no longer failing {r} in {u}" for r, u in fixed]
    return {"old_verdict": old.get("verdict"), "new_verdict": new.get("verdict"),
            "newly_failing": [{"rule": r, "unit": u} for r, u in newly],
            "no_longer_failing": [{"rule": r, "unit": u} for r, u in fixed],
            "units_newly_at_risk": at_risk, "new_claims": added, "removed_claims": removed, "lines": lines}
