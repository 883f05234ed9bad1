"""findings.json on disk: written with ``units`` and ``checks`` last, one item per line, and read back
lazily (:class:`~audit.findings.lines.JsonLines`) so that large runs are read one unit at a time."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np

from ..errors import AuditError
from ..paths import input_file
from .lines import JsonLines
from .model import FORMAT, Findings
from .sidefile import SIDE_UNITS, read_side, write_side


# -- documents on disk ---------------------------------------------------------------------------------
LINE_KEYS = ("units", "checks")  # written one item per line, last in the document


def write_json(doc: Mapping, path: Path) -> None:
    """A JSON document (:class:`Findings`: its :meth:`~Findings.to_json`); ``units`` and ``checks`` last,
    one item per line (see :func:`read_findings`). Findings of more than :data:`SIDE_UNITS` units keep
    them in side files beside ``path`` (:mod:`audit.findings.sidefile`) and list the riskiest inline."""
    path = Path(path)
    if isinstance(doc, Findings):
        doc = {k: v for k, v in doc.to_json().items() if k != "unit_files"}
        if len(doc["units"]) > SIDE_UNITS:
            path.parent.mkdir(parents=True, exist_ok=True)
            files, riskiest = write_side(doc, path)
            at = list(doc).index("units")
            items = [(k, v) for k, v in doc.items() if k not in ("units", "checks")]
            doc = dict(items[:at] + [("unit_files", files), ("units", riskiest), ("checks", [])] + items[at:])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    lines = [k for k in LINE_KEYS if isinstance(doc.get(k), (list, tuple, JsonLines))]
    head = json.dumps({k: v for k, v in doc.items() if k not in lines}, indent=1)
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(head[:-2] if lines else head)
        for key in lines:
            fh.write(f',\n "{key}": [\n')
            first = True
            for item in doc[key]:
                fh.write(("" if first else ",\n") + json.dumps(item, separators=(",", ":")))
                first = False
            fh.write("\n ]" if not first else " ]")
        fh.write("\n}\n" if lines else "\n")
    tmp.replace(path)


_FORMAT_LINE = re.compile(rb'^ "format": (\d+),?\n$')
_OPEN = re.compile(rb'^ "(%s)": \[\n$' % "|".join(LINE_KEYS).encode())


@contextmanager
def _reading(path: Path, what: str) -> Iterator[None]:
    """A missing, folder or unreadable JSON file as the user's error naming it (``what``: "findings file", ...)."""
    try:
        yield
    except FileNotFoundError:
        raise AuditError(f"{what} not found", str(path), "check the path") from None
    except IsADirectoryError:
        raise AuditError("is a folder, not a JSON file", str(path), f"give the path of the {what}") from None
    except OSError as exc:
        raise AuditError(f"{what} cannot be read ({exc.strerror})", str(path), "check the file's permissions") from None


def read_findings(path: Path) -> Findings:
    """Findings from their file (format 3); units and checks are read from the file as they are used."""
    path = Path(path)
    with _reading(path, "findings file"):
        fh = input_file(path, "findings file").open("rb")
    fh.readline()
    match = _FORMAT_LINE.match(fh.readline())
    doc = _lazy(fh) if match and int(match.group(1)) == FORMAT else None
    if doc is None:
        fh.close()
        doc = read_json(path, "findings file")
    if "unit_files" in doc:  # every unit and check from the side files (the document lists the riskiest)
        doc = {**doc, **read_side(doc["unit_files"], path)}
    return Findings.from_json(doc, str(path))


def read_json(path: Path, what: str) -> dict:
    """A JSON object from a file; a missing, unreadable or malformed file is the user's error."""
    try:
        with _reading(path, what):
            data = json.loads(input_file(Path(path), what).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AuditError(f"{what} is not valid JSON ({exc.__class__.__name__})", str(path),
                         "pass the findings.json written by audit run") from None
    if not isinstance(data, dict):
        raise AuditError(f"{what} must be a JSON object", str(path), "pass the findings.json written by audit run")
    return data


def _lazy(fh) -> dict | None:
    """The head parsed, the one-per-line arrays indexed; None when the layout is not the writer's."""
    fh.seek(0)
    head, arrays, key, offsets = [], {}, None, []
    while True:
        at = fh.tell()
        line = fh.readline()
        if not line:
            break
        if key is not None:
            if line.startswith(b" ]"):
                offsets.append(at)
                arrays[key] = JsonLines(fh, np.array(offsets))
                key = None
                head.append(line)
            elif line.startswith(b"{"):
                offsets.append(at)
            else:
                return None
            continue
        opened = _OPEN.match(line)
        if opened:
            key, offsets = opened.group(1).decode(), []
        head.append(line)
    if key is not None:
        return None
    try:
        doc = json.loads(b"".join(head))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    doc.update(arrays)
    return doc

