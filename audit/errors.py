"""Exceptions: user errors (bad input, exit code 2) distinct from internal bugs (exit code 3)."""
from __future__ import annotations

from pathlib import Path


def described(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


class AuditError(Exception):
    """A mistake in the user's input: names where it is and how to fix it.

    Parameters
    ----------
    message : str
        What is wrong.
    where : str, optional
        The file, line and key (``tables.yaml:12 tables[2].by``) or data row.
    fix : str, optional
        How to fix it.
    """

    def __init__(self, message: str, where: str | None = None, fix: str | None = None):
        self.message, self.where, self.fix = message, where, fix
        super().__init__(self.line())

    def line(self) -> str:
        """One line for the terminal (a part past :data:`MAX_PART` characters, e.g. a value from a
        damaged file, is shown by its ends)."""
        where, message, fix = (_ends(t) for t in (self.where, self.message, self.fix))
        text = f"{where}: {message}" if where else message
        return f"{text} -- fix: {fix}" if fix else text


MAX_PART = 1000  # characters of one part of an error line


def _ends(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_PART:
        return text
    return f"{text[:600]} ...({len(text) - 900:,} characters left out)... {text[-300:]}"


class InconsistentRelease(AuditError):
    """The published values admit no dataset: a release-side error, never 'safe'."""


class InternalError(Exception):
    """A bug in disclosure-audit, never the user's input: something that cannot happen did.

    Never caught and turned into a result (a unit "unfixable", an attack "failed"); the command line
    prints it as one line and exits 3 (``--debug`` shows the traceback).
    """

    HINT = "this is a bug in disclosure-audit, please report it with the command and this message"

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)  # args: the message alone, so that it pickles back from a worker process

    def __str__(self) -> str:
        return f"{self.message} -- {self.HINT}"


class Undecided(TimeoutError):
    """An engine could not settle a question: a budget ran out, or its answer failed the exact check."""


class OptionalDependencyMissing(AuditError):
    """An optional extra (torch, dask, gurobipy, opendp) is needed but not installed."""

    def __init__(self, package: str, extra: str, first: str = ""):
        super().__init__(
            f"this needs the optional package '{package}', which is not installed",
            fix=(f"{first} && " if first else "") + f"pip install 'disclosure-audit[{extra}]'",
        )


class Halted(Exception):
    """A run stopped by Ctrl-C (SIGINT) or SIGTERM: the message says what it kept and how to go on; the
    command line prints it and exits 130 or 143 (:func:`audit.signals.exit_code`)."""


class Interrupted(Halted):
    """Ctrl-C or SIGTERM during a run at scale: the parts written so far are intact; rerun with --resume."""

    def __init__(self, done: int, total: int, parts: Path):
        self.done, self.total, self.parts = done, total, parts
        super().__init__(f"interrupted: {done} of {total} units are written to {parts}; "
                         "rerun the same command with --resume to continue")
