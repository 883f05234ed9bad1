"""Output paths checked before any long work: a folder or file this process can write (or create)."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterable

from .errors import AuditError


def output_folder(path: Path, option: str = "--out") -> Path:
    """Check, before any long work, that ``path`` is a folder this process can write (or can create)."""
    if path.exists() and not path.is_dir():
        raise AuditError("is a file, not a folder", f"{option} {path}",
                         f"give a folder (it is created if missing), e.g. {option} {path.parent / 'audit-out'}")
    _writable(path, path, option)
    return path


def output_file(path: Path, option: str = "--out") -> Path:
    """Check, before any work, that the file ``path`` can be written: not a folder, in a writable folder."""
    if path.is_dir():
        raise AuditError("is a folder, not a file", f"{option} {path}", f"give a file name, e.g. {option} {path / 'out'}")
    _writable(path.parent, path, option)
    return path


def _writable(start: Path, path: Path, option: str) -> None:
    """``start`` or its nearest existing ancestor is a folder this process can write in (``path``: what to name)."""
    parent = start.absolute()
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise AuditError(f"cannot be created: {parent} is a file", f"{option} {path}", "give a path under a folder")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise AuditError(f"cannot write in {parent} ({exc.strerror or exc.__class__.__name__})", f"{option} {path}",
                         "give a folder you can write to") from None


def clear_outputs(out: Path, names: Iterable[str]) -> None:
    """Remove the outputs ``names`` an earlier run left in ``out``, so that a run that fails (input
    error, exception, Ctrl-C) leaves none that looks current."""
    if out.is_dir():
        for name in names:
            (out / name).unlink(missing_ok=True)
