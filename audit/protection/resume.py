"""Resuming an interrupted ``audit protect --strategy suppress``: the units and parent units its
search finished, kept in ``protection.partial.json`` with the key of the run that made them."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import AuditError, described
from ..findings.provenance import content_digest, fingerprint
from ..inputs import Inputs

PARTIAL = "protection.partial.json"


def run_key(inputs: Inputs, report: dict) -> dict:
    """What a resumed run must share with the interrupted one: the inputs' digests, the options and the rules."""
    key = {"inputs": fingerprint(inputs.data_path, inputs.schema.source, inputs.schedule.source),
           "parameters": report["parameters"], "rules": report["rules"]}
    return json.loads(json.dumps(key, default=str))


def finished(out: Path, key: dict) -> tuple[dict[str, dict], dict[str, dict]]:
    """(units, parent units) the interrupted run in ``out`` finished, by geo key; both empty when it left
    no partial file. A user error when the file is not one, or was made from other inputs, options or rules."""
    path = out / PARTIAL
    if not path.is_file():
        return {}, {}
    fix = "run without --resume to start afresh"
    damaged = f"delete it, or {fix}"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AuditError(f"cannot be read: it is damaged ({described(exc)})", str(path), damaged) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("resume_key"), dict):
        raise AuditError("is not the partial file of an interrupted `audit protect`", str(path), damaged)
    kept = {k: doc.get(k) for k in ("resume_key", "units", "levels")}
    if doc.get("resume_sum") != content_digest(kept):
        raise AuditError("is damaged: its units do not match its checksum (resume_sum)", str(path), damaged)
    made = doc["resume_key"]
    if made != key:
        differs = [f"inputs ({', '.join(n for n in key[k] if made.get(k, {}).get(n) != key[k][n])})" if k == "inputs"
                   else "options" if k == "parameters" else k for k in key if made.get(k) != key[k]]
        raise AuditError(f"was made from other {', '.join(differs)} than this run's", str(path),
                         f"give the inputs, options and rules of the interrupted run, or {fix}")
    return ({u["geo"]: u for u in doc.get("units", ())}, {d["geo"]: d for d in doc.get("levels", ())})
