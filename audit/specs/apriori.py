"""A-priori knowledge of a schedule, per unit (as tau-Argus's ``.hst`` files carry it): cells forced to
publish, the cost of suppressing a cell, and a hidden cell's own protection levels. Cells forced to hide
are the schedule's ``suppress:``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ._yaml import Located

KEYS = ("publish", "cost", "levels")


@dataclass(frozen=True)
class Apriori:
    """One unit's a-priori knowledge: ``publish`` cells that audit protect never suppresses, ``cost`` per cell
    (what suppressing it costs; 1 when not given), ``levels`` per cell (lower, upper protection)."""

    publish: frozenset = frozenset()
    cost: Mapping[str, float] = field(default_factory=dict)
    levels: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self):
        if any(c < 0 for c in self.cost.values()) or any(min(v) < 0 for v in self.levels.values()):
            raise ValueError("costs and protection levels are 0 or more")


def load_apriori(doc: Located, spec: Any, known: set[str], hidden: Mapping[str, frozenset]) -> dict[str, Apriori]:
    """``apriori: {"<geo>": {publish: [cells], cost: {cell: number}, levels: {cell: [lower, upper]}}}``,
    its cells checked against ``known`` and against the unit's ``suppress`` list (``hidden``)."""
    if spec is None:
        return {}
    example = 'e.g. apriori: {"all": {publish: ["T1:*,3"], cost: {"T1:2,1": 5}, levels: {"T1:1,3": [2, 2]}}}'
    if not isinstance(spec, Mapping):
        raise doc.error("apriori must map a unit (its geography codes joined by '/') to publish, cost and levels",
                        "apriori", fix=example)
    out = {}
    for key, unit in spec.items():
        geo = doc.code(key, "apriori", key, key=True)
        if not isinstance(unit, Mapping) or set(unit) - set(KEYS):
            raise doc.error(f"apriori['{geo}'] takes {', '.join(KEYS)}", "apriori", key, fix=example)

        def cell(name: Any, *path: Any) -> str:
            text = doc.code(name, "apriori", key, *path)
            if text not in known:
                raise doc.error(f"unknown cell '{text}' in apriori['{geo}']", "apriori", key, *path,
                                fix="use TABLE:CELL with a table id and a cell id of this schedule")
            return text

        publish = unit.get("publish") or []
        if not isinstance(publish, list):
            raise doc.error("publish must be a list of 'TABLE:CELL' keys", "apriori", key, "publish", fix=example)
        publish = frozenset(cell(c, "publish", j) for j, c in enumerate(publish))
        both = sorted(publish & hidden.get(geo, frozenset()))
        if both:
            raise doc.error(f"'{both[0]}' is both suppressed and forced to publish in unit '{geo}'", "apriori", key,
                            "publish", fix="keep it in one of suppress and apriori.publish")
        numbers = {}
        for part, size in (("cost", 1), ("levels", 2)):
            given = unit.get(part) or {}
            if not isinstance(given, Mapping):
                raise doc.error(f"{part} must map 'TABLE:CELL' to {'a number' if size == 1 else '[lower, upper]'}",
                                "apriori", key, part, fix=example)
            numbers[part] = {}
            for name, value in given.items():
                values = value if size == 2 else [value]
                if not isinstance(values, list) or len(values) != size or not all(
                        isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values):
                    raise doc.error(f"{part} of '{name}' must be {'a number' if size == 1 else '[lower, upper]'}, "
                                    "0 or more", "apriori", key, part, name, fix=example)
                numbers[part][cell(name, part, name)] = values[0] if size == 1 else tuple(values)
        out[geo] = Apriori(publish, numbers["cost"], numbers["levels"])
    return out
