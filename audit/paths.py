"""Paths checked before any long work: outputs this process can write (or create) that are none of the
inputs, and inputs that are regular files (a device or a pipe may never end)."""
from __future__ import annotations

import fnmatch
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Optional

from .errors import AuditError

MAX_LINE = 1 << 20  # bytes one line of a CSV input may hold
Inputs = Optional[Mapping[str, Optional[Path]]]  # what names an input on the command line -> its path


def output_folder(path: Path, option: str = "--out", inputs: Inputs = None, writes: Iterable[str] = ()) -> Path:
    """Check, before any long work, that ``path`` is a folder this process can write (or can create), and
    that none of ``inputs`` is what the command writes there: ``writes`` names files, ``*`` patterns, or
    folders (ending ``/``)."""
    _not_an_input(path, option, inputs, tuple(writes))
    if path.exists() and not path.is_dir():
        raise AuditError("is a file, not a folder", f"{option} {path}",
                         f"give a folder (it is created if missing), e.g. {option} {path.parent / 'audit-out'}")
    _writable(path, path, option)
    return path


def output_file(path: Path, option: str = "--out", inputs: Inputs = None) -> Path:
    """Check, before any work, that the file ``path`` can be written: none of ``inputs``, not a folder, in a
    writable folder."""
    _not_an_input(path, option, inputs, None)
    if path.is_dir():
        raise AuditError("is a folder, not a file", f"{option} {path}", f"give a file name, e.g. {option} {path / 'out'}")
    _writable(path.parent, path, option)
    return path


def _not_an_input(path: Path, option: str, inputs: Inputs, writes: tuple[str, ...] | None) -> None:
    """Refuse an output that is an input, or a folder where the command would write over (or remove) one:
    an input named as ``writes`` lists, or the folder an input folder (partitioned Parquet) or inside one.
    A dangling symbolic link is refused too: what it names cannot be created through it."""
    if path.is_symlink() and not path.exists():
        raise AuditError(f"is a symbolic link to {os.readlink(path)}, which does not exist", f"{option} {path}",
                         "create what it points to, or give another path")
    real = Path(os.path.realpath(path))
    for name, given in (inputs or {}).items():
        if given is None:
            continue
        src = Path(os.path.realpath(given))
        if src == real or (path.exists() and Path(given).exists() and os.path.samefile(given, path)):
            raise AuditError(f"is the input {name} ({given}): writing it would overwrite it", f"{option} {path}",
                             f"give another folder for the output, e.g. {option} {path.parent / 'audit-out'}"
                             if writes is not None else "give the output another file name than the input's")
        if writes is None or not src.exists():
            continue
        inside = src.is_dir() and (real == src or src in real.parents)
        hit = next((w for w in writes if (src.parent == real and not w.endswith("/") and fnmatch.fnmatch(src.name, w))
                    or (w.endswith("/") and real / w.rstrip("/") in (src, *src.parents))), None)
        if inside or hit:
            what = f"lies in the input folder {name} ({given})" if inside else \
                f"holds the input {name} ({given}), which the command would overwrite or remove (it writes {hit} there)"
            raise AuditError(what, f"{option} {path}",
                             f"give a folder that holds none of the inputs, e.g. {option} {real.parent / 'audit-out'}"
                             if inside else f"give another folder, e.g. {option} {path / 'audit-out'}")


def named_file(name: Optional[str]) -> Optional[Path]:
    """The file an option names where it may also name a built-in (``--rules strict``): None for a built-in."""
    return Path(name) if name and Path(name).exists() else None


def input_file(path: Path, what: str = "input") -> Path:
    """Refuse an input that exists but is neither a regular file nor a folder (a device such as /dev/zero,
    a named pipe, a socket): its stream may never end. A missing path or a folder is left to the reader."""
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return path
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device")
        raise AuditError(f"is {kind}, not a regular file: the {what} must be a file of known size", str(path),
                         f"save the {what} to a file first and give that file's path")
    return path


def check_lines(path: Path, limit: int = MAX_LINE) -> None:
    """Refuse a text file with a line longer than ``limit`` bytes (a CSV row never runs that long; a
    file that does would be read whole into memory), in one pass of ``limit``-byte blocks."""
    run, line = 0, 1  # bytes since the last line break; line number
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(limit), b""):
            first = block.find(b"\n")
            if run + (len(block) if first < 0 else first) > limit:
                raise AuditError(f"line {line} is longer than {limit:,} bytes", str(path),
                                 "give a CSV with one record a line (is it a CSV file, with line breaks?)")
            if first >= 0:
                line += block.count(b"\n")
                run = len(block) - block.rfind(b"\n") - 1
            else:
                run += len(block)


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


def read_text(path: str | Path, what: str = "file") -> str:
    """A UTF-8 text input, read whole; an error names the file and the fix (missing, a folder, not UTF-8)."""
    path = input_file(Path(path), what)
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise AuditError("file not found", str(path), "check the path") from None
    except IsADirectoryError:
        raise AuditError(f"is a folder, not a {what}", str(path), f"give the path of the {what}") from None
    except UnicodeDecodeError as exc:
        raise AuditError(f"not UTF-8 text (byte {exc.start})", str(path), "save the file as UTF-8") from None
    except OSError as exc:
        raise AuditError(f"cannot read the file ({exc.strerror or exc.__class__.__name__})", str(path),
                         "check the path and its permissions") from None
