"""The attacker model: what an attacker knows about a person from outside the release, and what they want.

Declared in the schema under ``attacker:`` (see the README)::

    attacker:
      quasi_identifiers: [block, sex, binned_age]   # a geography level, then columns or recodes
      sensitive: [hispanic, white, black]           # columns or recodes the attacker wants to learn

The quasi-identifiers are what a commercial or administrative file holds about a person (where
they live, sex, age, possibly binned by a recode); the sensitive attributes are what the release
might reveal about them (race, ethnicity, tenure). :mod:`audit.attacks.reidentify` measures both.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ._yaml import Located
from ..errors import AuditError


@dataclass(frozen=True)
class Attribute:
    """A column or recode as the attacker sees it: codes, each standing for a set of base-column values."""

    name: str
    column: str
    codes: tuple[str, ...]
    values: tuple[tuple, ...]

    def __post_init__(self):
        if len(self.codes) != len(self.values) or not self.codes:
            raise ValueError(f"attribute {self.name}: codes and value groups differ in length or are empty")

    def code_of(self, values: Sequence) -> np.ndarray:
        """The code index of each base value (``len(codes)`` for a value no code covers)."""
        lookup = {v: i for i, group in enumerate(self.values) for v in group}
        return np.array([lookup.get(v, len(self.codes)) for v in values], dtype=np.int64)

    def atom_codes(self, atoms: Sequence[frozenset]) -> np.ndarray:
        """The code index of each atom of the base column, or -1 where the atom mixes codes (the tables
        do not tell those codes apart)."""
        out = np.empty(len(atoms), dtype=np.int64)
        for i, atom in enumerate(atoms):
            codes = set(self.code_of(sorted(atom, key=str)).tolist())
            out[i] = codes.pop() if len(codes) == 1 else -1
        return out

    def label(self, index: int) -> str:
        return self.codes[index] if 0 <= index < len(self.codes) else "(other)"


@dataclass(frozen=True)
class AttackerModel:
    """Quasi-identifiers (a geography level plus attributes) and sensitive attributes; ``combinations``:
    groups of sensitive attributes (names) measured together as well as each on its own (the policy's)."""

    geography: str
    quasi_identifiers: tuple[Attribute, ...]
    sensitive: tuple[Attribute, ...]
    combinations: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self):
        if not self.sensitive:
            raise ValueError("an attacker model needs at least one sensitive attribute")
        names = {a.name for a in self.sensitive}
        if any(len(c) < 2 or not set(c) <= names for c in self.combinations):
            raise ValueError(f"combinations {self.combinations} must group two or more of {sorted(names)}")
        shared = {a.column for a in self.quasi_identifiers} & {a.column for a in self.sensitive}
        if shared:
            raise ValueError(f"column(s) {sorted(shared)} are both quasi-identifying and sensitive")

    def describe(self) -> dict:
        """The model as the findings show it (names only)."""
        return {"geography": self.geography, "quasi_identifiers": [a.name for a in self.quasi_identifiers],
                "sensitive": [a.name for a in self.sensitive],
                **({"combinations": [list(c) for c in self.combinations]} if self.combinations else {})}

    @property
    def measured(self) -> dict[str, tuple[int, ...]]:
        """What is judged of the sensitive attributes: each on its own, then each combination (named
        ``a+b``), as indices into :attr:`sensitive`."""
        index = {a.name: j for j, a in enumerate(self.sensitive)}
        out = {a.name: (j,) for j, a in enumerate(self.sensitive)}
        out.update({combination_key(c): tuple(index[n] for n in c) for c in self.combinations})
        return out

    @property
    def known(self) -> str:
        """The quasi-identifiers in words: ``block, sex and binned_age``."""
        names = [self.geography] + [a.name for a in self.quasi_identifiers]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def combination_key(names) -> str:
    """The name a combination of sensitive attributes is reported under: ``race+hispanic``."""
    return "+".join(names)


def attribute(schema, name: str) -> Attribute:
    """The schema's column or recode ``name`` as an :class:`Attribute`."""
    recode = schema.recode(name)
    if recode is not None:
        codes = tuple(recode.groups)
        return Attribute(name, recode.source, codes,
                         tuple(tuple(sorted(recode.groups[c], key=str)) for c in codes))
    col = schema.column(name)
    if col.wide:
        raise AuditError(f"'{name}' has {len(col.codes):,} values: an attacker model cannot name a column that "
                         "is only summed, averaged or its median published", name,
                         f"name a bins recode of it (its brackets), or give '{name}' at most 10,000 values")
    return Attribute(name, name, tuple(str(c) for c in col.codes), tuple((c,) for c in col.codes))


def load_attacker(doc: Located, schema, spec: Any) -> AttackerModel:
    """Validate the schema's ``attacker:`` mapping, raising AuditError with file:line and the fix."""
    here = ("attacker",)
    example = "e.g. attacker: {quasi_identifiers: [block, sex, agegrp], sensitive: [race]}"
    if not isinstance(spec, Mapping):
        raise doc.error("attacker must be a mapping with quasi_identifiers and sensitive", *here, fix=example)
    unknown = sorted(map(str, set(spec) - {"quasi_identifiers", "sensitive"}))
    if unknown:
        raise doc.error(f"unknown key(s) {unknown} in attacker", *here, unknown[0],
                        fix="allowed: quasi_identifiers, sensitive")
    lists = {}
    for key in ("quasi_identifiers", "sensitive"):
        value = spec.get(key)
        if not isinstance(value, list) or not value:
            raise doc.error(f"attacker.{key} must be a non-empty list of names", *here, key, fix=example)
        lists[key] = [doc.code(v, *here, key, i) for i, v in enumerate(value)]
    known = schema.known()
    seen: dict[str, tuple] = {}
    for key, names in lists.items():
        for i, name in enumerate(names):
            where = (*here, key, i)
            if name in schema.geography and key == "sensitive":
                raise doc.error(f"'{name}' is a geography level; the attacker model takes it as a quasi-identifier",
                                *where, fix=f"move '{name}' to quasi_identifiers")
            if name in seen:
                raise doc.error(f"'{name}' is listed twice in the attacker model", *where,
                                fix="list each column once, as quasi-identifier or as sensitive")
            seen[name] = where
            if name not in schema.geography and name not in known:
                close = difflib.get_close_matches(name, known + list(schema.geography), n=1)
                raise doc.error(f"unknown column '{name}' in the attacker model", *where,
                                fix=f"did you mean '{close[0]}'?" if close else f"use one of {known}")
            recode = schema.recode(name)
            if recode is not None and recode.nested:
                raise doc.error(f"'{name}' is a hierarchy, whose codes overlap (a subtotal holds its leaves)", *where,
                                fix=f"name its column '{recode.source}', or a recode of it")
    levels = [n for n in lists["quasi_identifiers"] if n in schema.geography]
    if len(levels) != 1:
        raise doc.error("the quasi-identifiers must name exactly one geography level (where the attacker "
                        f"knows the person lives), not {levels or 'none'}", *here, "quasi_identifiers",
                        fix=f"add one of {list(schema.geography)}, e.g. {schema.geography[-1]}")
    qis = tuple(attribute(schema, n) for n in lists["quasi_identifiers"] if n not in schema.geography)
    sensitive = tuple(attribute(schema, n) for n in lists["sensitive"])
    for i, s in enumerate(sensitive):
        clash = next((q for q in qis if q.column == s.column), None)
        if clash is not None:
            raise doc.error(f"sensitive '{s.name}' and quasi-identifier '{clash.name}' both derive from the "
                            f"column '{s.column}'", *here, "sensitive", i,
                            fix="a column is either known to the attacker or sensitive, not both")
    return AttackerModel(levels[0], qis, sensitive)
