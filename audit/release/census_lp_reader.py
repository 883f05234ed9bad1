"""dbrecon's LP files read: constraints (cell, geoid, value, what the terms cover) and the persons the
binary variables describe."""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import AuditError, described
from ..paths import input_file

GEOID = (("state", 2), ("county", 3), ("tract", 6), ("block", 4))  # the Census GEOID, coarse to fine
RACES = ("white", "black", "aian", "asian", "nhopi", "sor")
COLUMNS = ("sex", "age", *RACES, "two_or_more", "hispanic")  # the SF1 sample's person columns
SEX = {"male": "M", "female": "F"}
SENSES = ("=", "<=", ">=", "=<", "=>")
SECTIONS = {"subject": "constraints", "st": "constraints", "s.t.": "constraints", "bounds": "bounds",
            "binaries": "binaries", "binary": "binaries", "bin": "binaries", "end": "end",
            "minimize": "objective", "maximize": "objective", "minimise": "objective", "maximise": "objective"}
_NAME = re.compile(r"_C_([A-Z0-9]+)_(\d+)_(\d+):")
FIX = "give an LP written by dbrecon (recon_replication's s3_pandas_synth_lp_files.py), .lp or .lp.gz"


@dataclass
class LpRow:
    """One constraint: the SF1 cell, the geography, the published value, and what its terms cover."""

    name: str
    cell: str
    geoid: str
    value: int
    terms: int = 0
    seen: dict[str, set] = field(default_factory=dict)  # column (and 'geoid') -> values among the terms


@dataclass
class LpModel:
    """A dbrecon LP: its constraints and, per distinct person its variables describe, how many variables."""

    path: str
    rows: list[LpRow]
    persons: dict[tuple, int]  # (block geoid, sex, age, white..sor, two_or_more, hispanic) -> variables


def is_lp(path: str | Path) -> bool:
    """Whether a path names an LP file (``.lp`` or ``.lp.gz``)."""
    name = str(path).lower()
    return name.endswith(".lp") or name.endswith(".lp.gz")


def _open(path: Path):
    input_file(path, "LP file" if is_lp(path) else "solution file")
    return gzip.open(path, "rt", encoding="ascii") if path.suffix == ".gz" else open(path, encoding="ascii")


def tokens(path: str | Path, block: int = 1 << 20) -> Iterator[str]:
    """The whitespace-separated tokens of a text file (gzip or plain), read ``block`` characters at a time."""
    path = Path(path)
    if not path.exists() or path.is_dir():
        raise AuditError("file not found" if not path.exists() else "is a folder, not an LP file", str(path),
                         "check the path")
    try:
        with _open(path) as fh:
            rest = ""
            while True:
                text = fh.read(block)
                if not text:
                    break
                parts = (rest + text).split()
                rest = "" if text[-1].isspace() else parts.pop() if parts else ""
                yield from parts
            if rest:
                yield rest
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read it ({described(exc)})",
                         str(path), "give an uncorrupted .lp or .lp.gz file (ASCII text)") from None


def decode_variable(name: str, where: str) -> tuple:
    """``C_<block>_<sex>_<start>_<p>_<sex>_<age>_<W>_<B>_<AI>_<AS>_<NH>_<SOR>_<HISP>`` as
    (block geoid, sex, age, six race flags, two_or_more, hispanic), codes as in the SF1 sample."""
    parts = name.split("_")
    if (len(parts) != 14 or parts[0] != "C" or len(parts[1]) != 15 or not parts[1].isdigit()
            or parts[2] not in SEX or parts[5] != parts[2] or not parts[6].isdigit() or int(parts[6]) > 110
            or any(f not in ("Y", "N") for f in parts[7:])):
        raise AuditError(f"variable '{name[:120]}' is not C_<15-digit block>_<sex>_<start age>_<n>_<sex>_<age>"
                         "_<7 Y/N flags: white, black, aian, asian, nhopi, sor, hispanic>", where, FIX)
    races = tuple(parts[7:13])
    return (parts[1], SEX[parts[2]], int(parts[6]), *races, "Y" if races.count("Y") >= 2 else "N", parts[13])


class _Reader:
    """The state of one pass over an LP file (see :func:`read_lp`)."""

    FLUSH = 50_000  # distinct persons held per constraint before they are folded into per-column sets

    def __init__(self, path: str):
        self.path = path
        self.rows: list[LpRow] = []
        self.persons: dict[tuple, int] = {}
        self.cache: dict[str, tuple] = {}

    def person(self, name: str, where: str) -> tuple:
        found = self.cache.get(name)
        if found is None:
            if len(self.cache) > 1 << 20:
                self.cache.clear()
            found = self.cache[name] = decode_variable(name, where)
        return found

    def constraint(self, name: str, it: Iterator[str]) -> None:
        m = _NAME.fullmatch(name)
        where = f"{self.path}: constraint {name[:-1][:80]}"
        if not m:
            raise AuditError(f"constraint name '{name[:80]}' is not _C_<SF1 cell>_<geoid>_<n>:", where, FIX)
        row = LpRow(name[:-1], m.group(1), m.group(2), 0, seen={c: set() for c in ("geoid", *COLUMNS)})
        distinct: set[tuple] = set()
        expect_term = True
        for tok in it:
            if expect_term:
                distinct.add(self.person(tok, where))
                row.terms += 1
                if len(distinct) >= self.FLUSH:
                    self._fold(row, distinct)
                expect_term = False
            elif tok == "+":
                expect_term = True
            elif tok in SENSES:
                if tok != "=":
                    raise AuditError(f"sense '{tok}': dbrecon's constraints are equalities", where, FIX)
                value = next(it, None)
                try:
                    number = float(value) if value is not None else float("nan")
                except ValueError:
                    number = float("nan")
                if not (number >= 0 and number == int(number)):
                    raise AuditError(f"right-hand side {value!r} is not a count (an integer 0 or more)", where, FIX)
                row.value = int(number)
                self._fold(row, distinct)
                self.rows.append(row)
                return
            else:
                raise AuditError(f"unexpected '{tok[:40]}' (coefficients and '-' are not in dbrecon's LPs)", where, FIX)
        raise AuditError("the file ends inside a constraint", where, "give the whole file (it may be truncated)")

    @staticmethod
    def _fold(row: LpRow, distinct: set) -> None:
        for name, values in zip(("geoid", *COLUMNS), zip(*distinct)):
            row.seen[name].update(values)
        distinct.clear()


def read_lp(path: str | Path) -> LpModel:
    """Read a dbrecon LP file in one streaming pass (memory: the distinct persons of its variables)."""
    reader = _Reader(str(path))
    it = tokens(path)
    section = None
    for tok in it:
        if tok.startswith("\\*"):  # a comment: \* ... *\
            while not tok.endswith("*\\"):
                tok = next(it, "*\\")
            continue
        key = SECTIONS.get(tok.lower())
        if key is not None:
            if key == "constraints" and tok.lower() == "subject":
                if next(it, "").lower() != "to":
                    raise AuditError("'Subject' not followed by 'To'", str(path), FIX)
            section = key
            if key == "end":
                break
            continue
        if section == "constraints":
            reader.constraint(tok, it)
        elif section == "binaries":
            person = reader.person(tok, f"{path}: Binaries")
            reader.persons[person] = reader.persons.get(person, 0) + 1
        elif section is None:
            raise AuditError(f"unexpected '{tok[:40]}' before any section", str(path), FIX)
    if section != "end":
        raise AuditError("no 'End' line: the file is cut short", str(path), "give the whole file")
    if not reader.rows:
        raise AuditError("no constraints ('Subject To' is empty or missing)", str(path), FIX)
    return LpModel(str(path), reader.rows, reader.persons)


def split_geoid(geoid: str) -> tuple[str, ...]:
    """A Census GEOID cut into its codes, coarse to fine (2 digits state, 3 county, 6 tract, 4 block)."""
    out, at = [], 0
    for _, width in GEOID:
        if at == len(geoid):
            break
        out.append(geoid[at: at + width])
        at += width
    if at != len(geoid) or len(out[-1]) != GEOID[len(out) - 1][1]:
        raise ValueError(geoid)
    return tuple(out)
