"""Printing to a terminal: data values (codes, labels, file names) cannot act on it.

A geography code or label read from a file may hold control characters or ANSI escape sequences
(``"\\x1b[2J"`` clears the screen; U+202E reverses the text after it). Everything the CLI prints
goes through :func:`printable`, which shows such characters escaped (``\\x1b``) instead.
"""
from __future__ import annotations

import re
import sys

# C0 and C1 controls, DEL, bidirectional overrides and isolates, line and paragraph separators
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``str(text)`` with every control, escape and bidi character shown escaped (one line, inert)."""
    return _UNSAFE.sub(_escape, str(text))


def echo(text: object = "", err: bool = False) -> None:
    """Print one line of messages to stdout (or stderr), made :func:`printable`."""
    print(printable(text), file=sys.stderr if err else sys.stdout, flush=True)
