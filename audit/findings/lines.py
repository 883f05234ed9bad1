"""A list of JSON objects kept in a file, one per line, read back one at a time: how findings.json's
``units`` and ``checks`` stay out of memory in large runs."""
from __future__ import annotations

import json
import tempfile
from array import array
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np


class JsonLines(Sequence):
    """A list of JSON objects kept in a file, one per line, read back one at a time.

    ``offsets`` holds where each item starts and where the last ends; a trailing comma (as inside
    findings.json) is ignored. ``decode``, when given, makes each object a value as it is read
    (:meth:`decoded`); :meth:`raw` gives the JSON objects again.
    """

    def __init__(self, fh, offsets: np.ndarray, decode: Callable[[dict], Any] | None = None):
        self.fh, self.offsets, self.decode = fh, np.asarray(offsets, dtype=np.int64), decode

    @classmethod
    def write(cls, items: Iterable[dict], folder: Path | None = None) -> "JsonLines":
        """Items in an anonymous temporary file (in ``folder``), gone when the list is."""
        fh = tempfile.TemporaryFile(dir=folder)
        offsets = array("q", [0])  # 8 bytes an item, not a list's 36: the checks of a state are millions
        for item in items:
            fh.write(json.dumps(item, separators=(",", ":")).encode("utf-8") + b"\n")
            offsets.append(fh.tell())
        fh.flush()
        return cls(fh, np.frombuffer(offsets, dtype=np.int64))

    def decoded(self, decode: Callable[[dict], Any]) -> "JsonLines":
        """The same lines, each item read as ``decode(json object)``."""
        return JsonLines(self.fh, self.offsets, decode)

    def raw(self) -> "JsonLines":
        """The same lines as JSON objects."""
        return self if self.decode is None else JsonLines(self.fh, self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _read(self, i: int):
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        self.fh.seek(start)
        item = json.loads(self.fh.read(end - start).rstrip(b",\r\n "))
        return item if self.decode is None else self.decode(item)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._read(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._read(i)

    def __iter__(self) -> Iterator:
        for i in range(len(self)):
            yield self._read(i)

    def __eq__(self, other) -> bool:
        """Equal to any sequence of equal items (read one at a time)."""
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)) or len(other) != len(self):
            return NotImplemented if not isinstance(other, Sequence) else False
        return all(a == b for a, b in zip(self, other))

    __hash__ = None
