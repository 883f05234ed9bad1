"""interval_certificates.jsonl.gz: the certificates of every exact feasibility-interval end of a run
(:mod:`audit.attacks.certificates`), one unit per line after a header line, and their re-check."""
from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..attacks.certificates import FORMAT, NOTICE, check_unit
from ..errors import AuditError

FILE = "interval_certificates.jsonl.gz"


class CertificateWriter:
    """Writes units' certificates to ``path``, created with the first unit that has any (a run with no
    exact interval end writes no file)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.fh = self._raw = None  # the gzip stream and the file under it, opened with the first unit
        self.units = 0

    def add(self, unit: dict) -> None:
        if self.fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._raw = self.tmp.open("wb")
            self.fh = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)  # mtime 0: the same bytes each run
            self._line({"format": FORMAT, "notice": NOTICE, "confidential": True})
        self._line(unit)
        self.units += 1

    def _line(self, doc: dict) -> None:
        self.fh.write((json.dumps(doc, separators=(",", ":")) + "\n").encode("utf-8"))

    def close(self) -> Path | None:
        """Finish the file; its path, or None when no unit had certificates."""
        if self.fh is None:
            return None
        self.fh.close()
        self._raw.close()
        self.tmp.replace(self.path)
        return self.path


@dataclass
class CertificateCheck:
    """What :func:`check_certificates` found: ends re-checked in full, ends resting on a SAT solver's
    answer (witness checked, proof not), and the failing ends (``LEVEL GEO KEY:lo`` -> why)."""

    units: int = 0
    checked: int = 0
    solver: int = 0
    failures: dict[str, str] = field(default_factory=dict)


def check_certificates(path: Path) -> CertificateCheck:
    """Re-check every certificate in ``path`` (the file, or the output folder that holds it) without the
    solvers. A missing, unreadable or garbled file is the user's error (:class:`AuditError`)."""
    path = Path(path)
    path = path / FILE if path.is_dir() else path
    if not path.is_file():
        raise AuditError("certificates file not found", str(path),
                         f"give the output folder of audit run (with {FILE}: written when hidden cells have intervals)")
    out = CertificateCheck()
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise AuditError(f"line {number} is not JSON ({exc.msg})", str(path), f"pass the {FILE} of audit run") from None
                if number == 1:
                    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                        raise AuditError(f"not a certificates file of format {FORMAT} (first line)", str(path),
                                         f"pass the {FILE} of audit run")
                    continue
                out.units += 1
                try:
                    failures, solver, checked = check_unit(doc)
                except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                    raise AuditError(f"line {number}: malformed unit ({exc.__class__.__name__}: {exc})", str(path),
                                     f"pass the {FILE} of audit run, unedited") from None
                where = f"{doc['level']} {doc['geo']}"
                out.failures.update({f"{where} {k}": why for k, why in failures.items()})
                out.solver += len(solver)
                out.checked += checked
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot be read as gzip'd JSON lines ({exc.__class__.__name__})", str(path),
                         f"pass the {FILE} of audit run") from None
    return out
