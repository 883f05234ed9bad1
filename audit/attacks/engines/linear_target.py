"""The table the linear attack reads (public identifiers as integers, a small-integer secret column) and the
query masks over its rows: the notebook's hashed predicates or a schedule's cells."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ...errors import AuditError
from ...data.microdata import read_table
from .linear_queries import hash_bits
from ...lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

PRIME = 691  # the notebook's hashing modulus
NOTEBOOK_PUBLIC = ("sex", "age", "educ", "latino", "black", "asian", "married", "divorced", "children",
                   "disability", "militaryservice", "employed", "englishability")
MAX_SECRET_RANGE = 15  # "small integer": at most 16 consecutive values


@dataclass(frozen=True)
class Target:
    """The attacked table in solver form: public identifiers as integers and the secret column."""

    public: np.ndarray = field(repr=False)   # (n, p) int64
    secret: np.ndarray = field(repr=False)   # (n,) int64
    lo: int
    hi: int
    names: tuple[str, ...]
    secret_name: str

    @property
    def n(self) -> int:
        return len(self.secret)

    @property
    def baseline(self) -> float:
        """Majority-class accuracy: what guessing the commonest value for everyone achieves."""
        return float(np.bincount(self.secret - self.lo).max() / self.n) if self.n else 0.0


def load_frame(path: str | Path) -> pd.DataFrame:
    """Read CSV/Parquet (errors name the file) and turn every all-numeric column into numbers."""
    frame = read_table(path)
    for col in frame.columns:
        values = pd.to_numeric(frame[col], errors="coerce")
        if not values.isna().any():
            frame[col] = values
    return frame


def prepare(frame: pd.DataFrame, secret: str, public: Sequence[str], source: str = "<data>") -> Target:
    """Check the columns and encode them; user mistakes raise AuditError naming file, column and fix."""
    public = tuple(public)
    columns = list(frame.columns)
    if not public:
        raise AuditError("no public columns given", source, "pass --public C1,C2,... (the identifiers an attacker knows)")
    for col, option in [(secret, "--secret")] + [(c, "--public") for c in public]:
        if col not in columns:
            raise AuditError(f"{option} column '{col}' is not in the data", source, f"use one of {columns}")
    if secret in public:
        raise AuditError(f"'{secret}' is both the secret and a public column", source,
                         "remove it from --public: the attacker must not already know the secret")
    if len(frame) == 0:
        raise AuditError("the data has no rows", source, "give a table with at least one row")
    raw = frame[secret]
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() | (values != values.round())
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise AuditError(f"secret column '{secret}' is not integer: row {row + 1} (line {row + 2}) is {raw.iloc[row]!r}",
                         source, "choose a 0/1 or small-integer column as --secret (recode it first)")
    ints = values.to_numpy().astype(np.int64)
    lo, hi = int(ints.min()), int(ints.max())
    if hi - lo > MAX_SECRET_RANGE:
        raise AuditError(f"secret column '{secret}' is not binary or a small integer (values {lo}..{hi})", source,
                         f"recode it to at most {MAX_SECRET_RANGE + 1} consecutive values, e.g. a 0/1 indicator")
    encoded = []
    for col in public:
        numbers = pd.to_numeric(frame[col], errors="coerce")
        if not numbers.isna().any() and (numbers == numbers.round()).all():
            encoded.append(numbers.to_numpy().astype(np.int64))
        else:  # categorical codes: any fixed encoding of public values serves the attacker's hash
            codes, _ = pd.factorize(frame[col].astype(str), sort=True)
            encoded.append(codes.astype(np.int64))
    return Target(np.column_stack(encoded), ints, lo, hi, public, secret)


def random_predicates(k: int, p: int, rng: np.random.Generator, prime: int = PRIME) -> np.ndarray:
    """``k`` hashing vectors ``d`` (the notebook's ``np.random.randint(prime, size=len(pub))``), seeded."""
    return rng.integers(prime, size=(k, p))


def hashed_masks(public: np.ndarray, descs: np.ndarray, prime: int = PRIME) -> np.ndarray:
    """Masks ``(k, n)``: row ``j`` is in query ``i`` iff ``(z_j · d_i) mod prime mod 2 == 1``."""
    return hash_bits(public, descs, prime).T


def cell_masks(frame: pd.DataFrame, cells) -> np.ndarray:
    """Masks ``(k, n)`` of published cells (``CellDef`` or ``Predicate``): queries from a table schedule."""
    return np.stack([getattr(c, "predicate", c).mask(frame) for c in cells]) if len(cells) else np.zeros((0, len(frame)), bool)
