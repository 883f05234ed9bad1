"""A process's bounded memos: a worker keeps what units share (tables, claims, fields, searches) up to a size."""
from __future__ import annotations

from typing import Any, Hashable


def keep(memo: dict, key: Hashable, value: Any, size: int) -> Any:
    """``memo[key] = value``, the oldest entry dropped first past ``size`` entries; returns ``value``."""
    if key not in memo and len(memo) >= size:
        memo.pop(next(iter(memo)), None)  # None: another thread may have dropped it meanwhile
    memo[key] = value
    return value


def shelf(memo: dict, key: Hashable, shelves: int, entries: int) -> dict:
    """The dict kept under ``key`` (at most ``shelves`` of them): a new one when there is none or it holds more
    than ``entries`` (replaced, never emptied in place, since another thread may be reading it)."""
    found = memo.get(key)
    if found is None or len(found) > entries:
        found = keep(memo, key, {}, shelves)
    return found
