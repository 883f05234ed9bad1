"""``audit check-certificates``: a run's interval certificates (:mod:`audit.findings.certfile`) re-checked
without the solvers and held against the findings.json they were written with.

Every interval end findings.json states as exact must have a certificate that proves the same value;
ends resting on a SAT solver's "unsat" are counted *solver-trusted*, not certified; the seal and
findings.json's record of the file must match what is recomputed from both files; and no dataset of
the file that reproduces a unit's release may give a cell a value outside its stated interval.
"""
from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Iterator, Mapping

from ..attacks.certificates import FORMAT, check_unit
from ..errors import AuditError
from .certfile import FILE, Content, intervals_digest, release_digest, unit_release_digest
from .certproofs import UnitProofs
from .files import read_findings

FINDINGS = "findings.json"
SIDES = (("lo", 0), ("hi", 1))


@dataclass
class CertificateCheck:
    """What :func:`check_certificates` found: interval ends ``checked`` in full, ``proved`` (SAT ends whose
    DRUP proof drat-trim verified, with ``--proofs``), ``solver`` (the names of the ends resting on a SAT
    solver's answer: witness checked, unsat not), ``outer`` (ends findings.json
    gives as outer bounds, which claim no certificate) and ``failures`` (``LEVEL GEO KEY:lo`` or the
    file -> why)."""

    units: int = 0
    intervals: int = 0
    checked: int = 0
    proved: int = 0
    outer: int = 0
    solver: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)


def locate(path: Path, findings: Path | None = None) -> tuple[Path, Path]:
    """The certificates file and the findings.json to hold it against: in the output folder ``path``, or
    beside the file ``path``, unless ``findings`` names one."""
    path = Path(path)
    certs = path / FILE if path.is_dir() else path
    if not path.is_dir() and not path.is_file():
        raise AuditError("certificates file or output folder not found", str(path),
                         f"give the output folder of audit run (with {FILE}: written when hidden cells have intervals)")
    findings = Path(findings) if findings is not None else certs.parent / FINDINGS
    if not findings.is_file():
        raise AuditError("findings.json not found beside the certificates", str(findings),
                         "give the output folder of audit run, or --findings FILE")
    return certs, findings


def check_certificates(path: Path, findings: Path | None = None, strict: bool = False,
                       proofs: str | None = None) -> CertificateCheck:
    """Re-check every certificate of a run against its findings.json (see the module docstring); with
    ``strict`` a solver-trusted end fails; with ``proofs`` (drat-trim's path) each SAT end is proved
    again and its proof checked (:mod:`audit.findings.certproofs`). A missing, unreadable or garbled
    file is the user's error (:class:`AuditError`); a missing certificate, a value other than the one
    stated, or a broken binding is a failure."""
    certs, findings = locate(path, findings)
    doc = read_findings(findings)
    units = [{k: u.get(k) for k in ("level", "geo", "intervals", "interval_details")}  # what the digest covers
             for u in doc.units if u.get("intervals")]
    stated = {(u["level"], u["geo"]): (u["intervals"], u["interval_details"] or {}) for u in units}
    out = CertificateCheck(intervals=sum(len(iv) for iv, _ in stated.values()))
    content, releases, seal = Content(), {}, None
    for number, line in _lines(certs):
        content.add(line)
        if number == 1:
            continue
        if seal is not None:
            out.failures[f"{FILE} line {number}"] = "a line after the seal (units appended to a sealed file)"
        elif "run" in line and "cells" not in line:
            seal = line["run"]
        else:
            try:
                key = (str(line["level"]), str(line["geo"]))
                releases[key] = unit_release_digest(line)
                result = check_unit(line)
                if proofs is not None:
                    unit = UnitProofs(line, proofs)
                    result = replace(result, proved={name: unit.why_not(*name.rsplit(":", 1)) for name in result.solver})
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                raise AuditError(f"line {number}: malformed unit ({exc.__class__.__name__}: {exc})", str(certs),
                                 f"pass the {FILE} of audit run, unedited") from None
            out.units += 1
            _against(out, key, line["intervals"], result, stated.pop(key, None), strict)
    for key, (intervals, details) in stated.items():  # units findings.json gives intervals and the file no line
        _against(out, key, {}, None, (intervals, details), strict)
    _binding(out, doc, units, seal, releases, content.hexdigest() if certs.is_file() else None)
    return out


def unit_against(line: dict, intervals: Mapping, details: Mapping, strict: bool = False) -> CertificateCheck:
    """One unit's certificates (a line of the file) re-checked and held against the ``intervals`` and
    ``interval_details`` findings.json states for it (the file's binding aside)."""
    out = CertificateCheck(units=1, intervals=len(intervals))
    _against(out, (str(line["level"]), str(line["geo"])), line["intervals"], check_unit(line), (intervals, details), strict)
    return out


def _lines(path: Path) -> Iterator[tuple[int, dict]]:
    """The file's lines (number, JSON), the header checked; none when there is no file."""
    if not path.is_file():
        return
    try:
        with gzip.open(path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                try:
                    line = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise AuditError(f"line {number} is not JSON ({exc})", str(path), f"pass the {FILE} of audit run") from None
                if not isinstance(line, dict):
                    raise AuditError(f"line {number} is not a JSON object", str(path), f"pass the {FILE} of audit run")
                if number == 1 and line.get("format") != FORMAT:
                    raise AuditError(f"not a certificates file of format {FORMAT} (first line: format {line.get('format')!r})",
                                     str(path), f"pass the {FILE} of audit run of this version (run it again to write one)")
                yield number, line
    except (OSError, EOFError, zlib.error) as exc:
        raise AuditError(f"cannot be read as gzip'd JSON lines ({exc.__class__.__name__})", str(path),
                         f"pass the {FILE} of audit run") from None


def _stated(number, exact: str | None) -> tuple[Fraction, str]:
    """An end as findings.json states it (its ``exact`` fraction where given), and what is wrong with it."""
    if exact is None:
        return Fraction(number), ""
    value = Fraction(exact)
    return value, "" if float(value) == number else f"findings.json states {number} and exact {exact}"


def _against(out: CertificateCheck, unit: tuple[str, str], certs: Mapping, result, stated, strict: bool) -> None:
    """One unit's certificates (``certs``, re-checked as ``result``) held against findings.json's
    ``stated`` (intervals, details; None: it states none for the unit)."""
    where = " ".join(unit)
    if result is not None:
        out.failures.update({f"{where} {name}": why for name, why in result.failures.items()})
    intervals, details = stated if stated is not None else ({}, {})
    for key in certs:
        if key not in intervals:
            out.failures[f"{where} {key}"] = "a certificate for an interval findings.json does not state"
    for key, ends in intervals.items():
        info = details.get(key) or {}
        entry = certs.get(key) or {}
        stated = {}
        for side, i in SIDES:
            name = f"{where} {key}:{side}"
            value, why = stated[side] = _stated(ends[i], (info.get("exact") or {}).get(side))
            end = entry.get(side)
            if why:
                out.failures[name] = why
            elif end is None:
                if info.get("certified"):
                    out.failures[name] = ("findings.json states it certified; the file has no certificate for it"
                                          + ("" if key in certs else " (no line for the unit)" if result is None
                                             else " (no entry for the cell)"))
                else:
                    out.outer += 1
            elif Fraction(end["value"]) != value:
                out.failures[name] = f"findings.json states {ends[i]}; the certificate is for {end['value']}"
            elif name in out.failures:
                pass
            elif f"{key}:{side}" in result.solver:
                proof = result.proved.get(f"{key}:{side}") if result.proved is not None else None
                if side not in (info.get("solver_trusted") or ()):
                    out.failures[name] = "findings.json does not call it solver-trusted; its certificate is a SAT solver's unsat"
                elif proof == "":
                    out.proved += 1
                elif proof is not None:
                    out.failures[name] = proof
                else:
                    out.solver.append(name)
                    if strict:
                        out.failures[name] = "solver-trusted: rests on a SAT solver's unsat answer, which no proof re-checks (--strict)"
            elif f"{key}:{side}" in result.checked:
                out.checked += 1
        if result is not None and key in result.reached:
            lo, hi = (stated[side][0] for side, _ in SIDES)
            off = [v for v in result.reached[key] if not lo <= v <= hi]
            if off:
                out.failures[f"{where} {key}"] = (f"a dataset of the file reproduces the release and gives {off[0]}, "
                                                  f"outside the stated [{ends[0]}, {ends[1]}]")


def _binding(out: CertificateCheck, doc, units: list, seal, releases: dict, content: str | None) -> None:
    """The seal and findings.json's record of the file against what both files give now."""
    record = doc.get("certificates")
    if content is None:
        if record is not None or out.failures:
            out.failures[FILE] = ("missing: " + ("findings.json records one" if record is not None else
                                                 "findings.json states certified ends (audit run --published writes none)"))
        return
    if seal is None:
        out.failures[f"{FILE} seal"] = "no seal line: the file is cut short, or was not written by audit run"
        return
    if not isinstance(seal, dict):
        out.failures[f"{FILE} seal"] = "the seal is not a JSON object"
        return
    if seal.get("units") != len(releases):
        out.failures[f"{FILE} units"] = f"the seal records {seal.get('units')} unit lines; the file has {len(releases)}"
    if seal.get("release") != release_digest(releases):
        out.failures[f"{FILE} release"] = "the units' releases are not those the file was sealed with (a unit line changed, added or removed)"
    if seal.get("intervals") != intervals_digest(units):
        out.failures[f"{FINDINGS} intervals"] = ("not the intervals the certificates file was sealed with (changed, added or "
                                                 "removed, or the file is another run's)")
    made_from = (doc.get("inputs") or {}).get("fingerprint")
    theirs = seal.get("inputs") if isinstance(seal.get("inputs"), dict) else {}
    differ = [k for k in ("data", "schema", "tables") if (made_from or {}).get(k) != theirs.get(k)]
    if made_from is None or differ:
        out.failures[f"{FINDINGS} inputs"] = ("records no input digests" if made_from is None else
                                              f"made from other {', '.join(differ)} than the certificates file")
    if not isinstance(record, dict):
        out.failures[f"{FINDINGS} certificates"] = "records no certificates file (another run's findings, or an older version's)"
    elif record.get("sha256") != content:
        out.failures[f"{FINDINGS} certificates"] = (f"records another certificates file (SHA-256 {str(record.get('sha256'))[:16]}..., "
                                                    f"this one {content[:16]}...)")
    elif record.get("release") != seal.get("release"):
        out.failures[f"{FINDINGS} certificates"] = "records another release digest than the file's seal"
