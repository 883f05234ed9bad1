"""Claims and cells in plain language: labels, never codes."""
from __future__ import annotations

import re
from typing import Any, Mapping


# ------------------------------------------------------------------------------------ plain language

def describe_value(schema: Mapping, column: str, atom: str) -> str:
    """An atom label (a code, ``a-b`` range, or ``x|y`` codes) in words from the schema labels."""
    col = (schema.get("columns") or {}).get(column) or {}
    labels = col.get("labels") or {}
    if atom in labels:
        return labels[atom]
    m = re.fullmatch(r"(-?\d+)-(-?\d+)", atom)
    if col.get("kind") == "integer" and m:
        return f"{m.group(1)} to {m.group(2)}"
    if "|" in atom:
        parts = atom.split("|")
        if all(p in labels for p in parts) or col.get("kind") == "integer":
            return " or ".join(labels.get(p, p) for p in parts)
    return atom


def column_title(schema: Mapping, column: str) -> str:
    col = (schema.get("columns") or {}).get(column) or {}
    return col.get("title") or column


def describe_column(schema: Mapping, column: str, atom: str) -> str:
    """One attribute of a claim in words: 'Age: 45 to 54' with the column's title, else the value's
    label alone ('Not Hispanic or Latino'), else 'name: value' for a column with neither."""
    col = (schema.get("columns") or {}).get(column) or {}
    value = describe_value(schema, column, atom)
    if col.get("title"):
        return f"{col['title']}: {value}"
    labels = col.get("labels") or {}
    return value if labels and all(a in labels for a in atom.split("|")) else f"{column}: {value}"


def claim_text(claim: Mapping, schema: Mapping, unit: Mapping) -> str:
    """'Exactly one household in block 1001: Householder's sex: Female; Householder 65 to 74 years.'"""
    noun = schema.get("unit") or "record"
    m = claim.get("m", 1)
    words = {0: "No", 1: "Exactly one", 2: "Exactly two", 3: "Exactly three"}
    who = f"{words.get(m, f'Exactly {m}')} {noun_form(m, noun)}"
    parts = [describe_column(schema, c, str(v)) for c, v in claim["columns"].items()]
    where = f"{unit.get('level', 'unit')} {unit.get('geo', '')}".strip()
    return f"{who} in {where}: {'; '.join(parts)}."


def label_cells(text: str, cell_labels: Mapping[str, str]) -> str:
    """``text`` with every published cell key (``TABLE:CELL``) in it replaced by the cell's label."""
    return _CELL_KEY.sub(lambda m: cell_labels.get(m.group(0), m.group(0)), text)


_CELL_KEY = re.compile(r"[^\s,;()=:]+:[^\s,;()=]+")


def plural(n: Any, noun: str, many: str | None = None) -> str:
    """'1 block', '2 blocks', '1,234 persons' (``many`` for irregular plurals; see :func:`noun_form`)."""
    word = noun_form(n, noun, many)
    return f"{n:,} {word}" if isinstance(n, int) else f"{n} {word}"


def noun_form(n: Any, noun: str, many: str | None = None) -> str:
    """``noun`` for ``n`` of it: an English word takes its plural ('counties', 'boxes'); a column or level name
    that is no word ('native-country', 'puma_2010') is left whole and counted in units ('native-country units')."""
    if n == 1:
        return noun
    if many:
        return many
    if not _WORDS.fullmatch(noun):
        return f"{noun} units"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "o", "u", ""):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "z", "ch", "sh")) else "s")


def figure(value: Any, decimals: int = 2) -> str:
    """A count or bound for reading: whole numbers as they are, fractions rounded to ``decimals``
    (a mean's bound 30.555555555555557 shows as 30.56, 30.5 as 30.5; findings.json keeps the exact value)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, float):
        return f"{value:,.{decimals}f}".rstrip("0").rstrip(".")
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


_WORDS = re.compile(r"[A-Za-z]+( [A-Za-z]+)*")
