"""Claims about individuals and the verdicts an exact engine gives them."""
from __future__ import annotations

import copy
import hashlib
import itertools
from operator import itemgetter
from dataclasses import dataclass, field
from math import comb, prod
from typing import Iterator

import numpy as np

from ..memo import keep, shelf

VERIFIED, REFUTED, UNDECIDED = "verified", "refuted", "undecided"
PRIOR_TALLIES = 2  # priors whose keyed rows a process keeps (:meth:`ClaimTable.baseline`): a tract's blocks come together, and the memory stays a unit's
_PRIOR_TALLIES: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
SUBSET_WORK = 20_000  # count_candidates' work per column subset, in keys: what one unique() call costs (about 50 us)
# Claims a process keeps to hand out again, each with its plain verified verdict: a state's blocks hold the same
# claims over and over (one person's record, a sex and an age group), and making each unit's claims and
# verdicts anew was a fifth of a small block's CPU. Claims and verdicts are values (frozen, compared by value),
# so a unit given the objects another unit holds sees what new ones would give it. Emptied when full.
INTERNED = 100_000
_INTERNED: dict[tuple[int, ...], dict[int, "Verdict"]] = {}  # columns' atoms -> claim key and count -> verdict
_TABLES: dict[tuple, tuple] = {}  # (atoms, column subsets) -> an empty table's radix, exactness, strides and masks


@dataclass(frozen=True)
class Claim:
    """R(a, m): exactly ``m`` rows match the partial assignment ``a`` (column index -> atom index)."""

    assignment: tuple[tuple[int, int], ...]
    m: int

    def __post_init__(self):
        cols = [c for c, _ in self.assignment]
        if cols != sorted(set(cols)) or not cols:
            raise ValueError("a claim needs at least one column, sorted and unique")
        if self.m < 0:
            raise ValueError("multiplicity must be >= 0")
        object.__setattr__(self, "_hash", hash((self.assignment, self.m)))

    def __hash__(self) -> int:
        # the dataclass's hash (of its fields), kept: a unit's claims are dict keys many times over
        # (baselines, verdict lookups, the claim store), and hashing a tuple of pairs each time cost ~3% of a block
        return self._hash

    @property
    def columns(self) -> tuple[int, ...]:
        return tuple(c for c, _ in self.assignment)

    @property
    def singleton(self) -> bool:
        return self.m == 1

    def count(self, rows: np.ndarray) -> int:
        """How many rows of a dataset (atom indices) match."""
        if len(rows) == 0:
            return 0
        mask = np.ones(len(rows), dtype=bool)
        for c, v in self.assignment:
            mask &= rows[:, c] == v
        return int(mask.sum())


def _claim(assignment: tuple, m: int) -> Claim:
    """A claim built from a truth table, valid by construction (skips the checks of ``__init__``)."""
    claim = object.__new__(Claim)
    object.__setattr__(claim, "__dict__", {"assignment": assignment, "m": m, "_hash": hash((assignment, m))})
    return claim


@dataclass(frozen=True)
class Verdict:
    """verified (with the explaining cells), refuted (with a counterexample dataset) or undecided."""

    claim: Claim
    status: str
    cells: tuple[str, ...] = ()
    minimal: bool = False
    direct: bool = False
    counterexample: np.ndarray | None = field(default=None, compare=False)
    reason: str = ""

    def __post_init__(self):
        if self.status not in (VERIFIED, REFUTED, UNDECIDED):
            raise ValueError(f"unknown status {self.status}")
        if self.status == REFUTED and self.counterexample is None:
            raise ValueError("a refuted claim must carry its counterexample")


def stated_verdicts(stated: list[tuple[Claim, str]]) -> list[Verdict]:
    """``Verdict(claim, VERIFIED, (cell,), True, direct=True)`` for each claim a published cell states, made as
    :func:`verified_verdicts` makes its verdicts."""
    new, fields = object.__new__, object.__setattr__
    out = []
    for claim, cell in stated:
        v = new(Verdict)
        fields(v, "__dict__", {"claim": claim, "status": VERIFIED, "cells": (cell,), "minimal": True, "direct": True,
                               "counterexample": None, "reason": ""})
        out.append(v)
    return out


def verified_verdicts(claims: list[Claim]) -> list[Verdict]:
    """A plain verified verdict for each claim (no cells yet), as ``Verdict(claim, VERIFIED)`` makes it: without
    its checks, which cannot fail here, and its per-field setting (a unit verifies thousands of claims at once)."""
    new, fields = object.__new__, object.__setattr__
    out = []
    for claim in claims:
        v = new(Verdict)
        fields(v, "__dict__", {"claim": claim, "status": VERIFIED, "cells": (), "minimal": False, "direct": False,
                               "counterexample": None, "reason": ""})
        out.append(v)
    return out


@dataclass(frozen=True)
class Views:
    """A coupled problem's view columns: an attribute's codes as one published level groups them.

    View column ``columns[k]`` is a function of the attribute column ``base[k]`` (tied by edits), so a
    claim fixes at most one column of each attribute: its value set is an atom of the common
    refinement or of one level's grouping, per attribute. A claim that names child unit ``b`` (column
    ``child``) over ``child_columns`` only (the child level's own groupings) is that unit's own claim;
    where ``b`` is in ``proved`` (its unit has one dataset, proved jointly) it is verified there and is
    left out here, as is such a claim naming no child when ``every`` child is proved.
    """

    columns: tuple[int, ...]
    base: tuple[int, ...]
    child: int
    child_columns: frozenset[int]
    proved: frozenset[int] = frozenset()
    every: bool = False

    def __post_init__(self):
        if len(self.columns) != len(self.base) or set(self.columns) & set(self.base) or self.child in self.columns:
            raise ValueError("a view column is a function of another attribute column")

    def attribute(self, column: int) -> int:
        """The attribute column a column shows (itself unless a view)."""
        return self.base[self.columns.index(column)] if column in self.columns else column

    def subsets(self, n_cols: int, max_columns: int | None = None, among=None) -> list[tuple[int, ...]]:
        """:func:`column_subsets`, at most one column of each attribute."""
        return [cols for cols in column_subsets(n_cols, max_columns, among)
                if len({self.attribute(c) for c in cols}) == len(cols)]

    def redundant(self, subsets: list[tuple[int, ...]], subset: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Which claims are a proved child unit's own (see the class): claim ``k`` over the columns
        ``subsets[subset[k]]`` with the values of row ``rows[k]``."""
        own = np.array([any(c in self.columns for c in cols) and
                        all(c in self.child_columns for c in cols if c != self.child) for cols in subsets], dtype=bool)
        named = np.array([self.child in cols for cols in subsets], dtype=bool)
        proved = np.zeros(int(rows[:, self.child].max(initial=0)) + 1, dtype=bool)
        proved[[b for b in self.proved if b < len(proved)]] = True
        return own[subset] & np.where(named[subset], proved[rows[:, self.child]], self.every)


def candidates(truth: np.ndarray, max_columns: int | None = None, views: Views | None = None,
               sizes: list[int] | None = None) -> list[Claim]:
    """Every claim true in the confidential rows, over every subset of up to ``max_columns`` columns
    (``views``: at most one column per attribute, proved units' claims left out; ``sizes``: the atoms
    per column, whose one-atom columns no claim names, see :func:`claimable`)."""
    if len(truth) == 0:
        return []
    if sizes is None:  # every column claimable (sizes of 2 or more: the keys only need them large enough)
        sizes = (truth.max(axis=0) + 2).tolist()
    return ClaimTable.of_truth(truth, list(sizes), max_columns, views).claims


def claimable(sizes) -> list[int]:
    """The columns a claim names: those of two atoms or more. A column of one atom (no cell tells its
    values apart) holds for every row, so a claim naming it is the same claim without it."""
    return [c for c, size in enumerate(sizes) if size > 1]


def column_subsets(n_cols: int, max_columns: int | None = None, among=None) -> list[tuple[int, ...]]:
    """Every subset of up to ``max_columns`` of ``n_cols`` columns (or of the columns ``among``),
    fewest columns first."""
    return list(iter_subsets(n_cols, max_columns, among))


def iter_subsets(n_cols: int, max_columns: int | None = None, among=None) -> Iterator[tuple[int, ...]]:
    """:func:`column_subsets` one at a time (there are 2^n_cols - 1 with no ``max_columns``)."""
    columns = list(range(n_cols) if among is None else among)
    top = len(columns) if max_columns is None else min(max_columns, len(columns))
    return (cols for k in range(1, top + 1) for cols in itertools.combinations(columns, k))


def n_subsets(n_cols: int, max_columns: int | None = None) -> int:
    """``len(column_subsets(n_cols, max_columns))``, without listing them."""
    top = n_cols if max_columns is None else min(max_columns, n_cols)
    return sum(comb(n_cols, k) for k in range(1, top + 1))


def distinct_rows(rows: np.ndarray, sizes: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows and how often each occurs, as ``np.unique(axis=0)`` gives them. With ``sizes`` (each
    column's atoms) each row is one mixed-radix number, whose order is the rows' lexicographic order: several
    times faster, the same rows, order and counts (np.unique where the radix would overflow)."""
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return rows.reshape(0, rows.shape[1] if rows.ndim == 2 else 0), np.zeros(0, dtype=np.int64)
    if (sizes and prod(sizes) < 2**62 and rows.ndim == 2 and rows.shape[1] == len(sizes)
            and not ((rows < 0) | (rows >= np.array(sizes))).any()):
        radix = np.cumprod((1,) + tuple(sizes[:0:-1]))[::-1].astype(np.int64)
        keys, counts = np.unique(rows @ radix, return_counts=True)
        return keys[:, None] // radix % np.array(sizes, dtype=np.int64), counts
    return np.unique(rows, axis=0, return_counts=True)


def count_candidates(truth: np.ndarray, max_columns: int | None = None, budget: int = 10**8,
                     views: Views | None = None, sizes: list[int] | None = None) -> tuple[int, bool]:
    """How many claims :func:`candidates` would list, counted one column subset at a time (memory of
    one subset's keys); past ``budget`` work (keys, and :data:`SUBSET_WORK` per subset) the count is
    returned as a lower bound (``exact`` False): the count so far plus one claim per subset left."""
    rows, _ = distinct_rows(truth)
    if not len(rows):
        return 0, True
    among = None if sizes is None else claimable(sizes)
    listed = None if views is None else views.subsets(rows.shape[1], max_columns, among)
    total, seen = 0, 0
    left = (n_subsets(rows.shape[1] if among is None else len(among), max_columns) if listed is None
            else len(listed))
    for cols in iter_subsets(rows.shape[1], max_columns, among) if listed is None else listed:
        if seen >= budget:
            return total + left, False
        values = np.unique(rows[:, cols], axis=0)
        if views is not None and (views.proved or views.every):  # a proved child unit's own claims are left out
            full = np.zeros((len(values), rows.shape[1]), np.int64)
            full[:, cols] = values
            values = values[~views.redundant([cols], np.zeros(len(values), np.int64), full)]
        total += len(values)
        seen += len(rows) + SUBSET_WORK
        left -= 1
    return total, True


def _claims(subsets: list[tuple[int, ...]], rows: np.ndarray, subset: np.ndarray, row: np.ndarray,
            m: np.ndarray) -> list[Claim]:
    """Claim ``k`` over the columns ``subsets[subset[k]]``, with the values of ``rows[row[k]]`` and count ``m[k]``."""
    data = rows.tolist()
    picks = [itemgetter(*cols) if len(cols) > 1 else (lambda row, c=cols[0]: (row[c],)) for cols in subsets]
    return [_claim(tuple(zip(subsets[s], picks[s](data[r]))), n)
            for s, r, n in zip(subset.tolist(), row.tolist(), m.tolist())]


COUNT_BITS = 24  # a kept claim's key and count, as one int64: key << COUNT_BITS | count


def _interned(table: "ClaimTable") -> list | None:
    """The plain verified verdict the process keeps for each claim of the table (None where it has none), or
    None when its keys and counts do not fit one int64 (see :data:`INTERNED`)."""
    if not table.exact or not len(table.keys):
        return None
    if int(table.keys.max()) >= 2 ** (62 - COUNT_BITS) or int(table.m.max()) >= 2 ** COUNT_BITS:
        return None
    memo = (table.strides.dtype.str, table.strides.tobytes())  # the columns' atoms
    known = shelf(_INTERNED, memo, 4, INTERNED)
    table._known, table._combined = known, (table.keys << COUNT_BITS) | table.m
    return list(map(known.get, table._combined.tolist()))


class ClaimTable:
    """Claims as arrays, so that one dataset is checked against thousands of them in one pass.

    A claim's key is sum((atom + 1) * stride[column]) over its assignment; a row's key for a column
    subset is the same sum over that subset, computed for every subset at once by one product.
    """

    def __init__(self, sizes: list[int], subsets: list[tuple[int, ...]]):
        """An empty table for claims over ``subsets`` of columns with ``sizes`` atoms (see :meth:`of_truth`); its
        arrays are read only, shared by the tables of the same sizes and subsets a process makes."""
        memo = (tuple(sizes), tuple(subsets))
        if memo not in _TABLES:
            radix = np.array([size + 1 for size in sizes], dtype=object)
            exact = int(np.prod(radix)) < 2 ** 62  # keys fit in int64
            dtype = np.int64 if exact else object
            strides = np.array([int(np.prod(radix[:c])) for c in range(len(sizes))], dtype=dtype)
            masks = np.zeros((len(subsets), len(sizes)), dtype=dtype)
            for i, cols in enumerate(subsets):
                masks[i, list(cols)] = 1
            for array in (radix, strides, masks):
                array.flags.writeable = False
            keep(_TABLES, memo, (radix, exact, strides, masks), 8)
        self.radix, self.exact, self.strides, self.masks = _TABLES[memo]
        self.claims: list[Claim] = []
        self._plain: list[Verdict] | None = None  # each claim's plain verified verdict, when interned
        self.keys = np.zeros(0, dtype=self.strides.dtype)
        self.m = np.zeros(0, dtype=np.int64)

    @classmethod
    def of_truth(cls, truth: np.ndarray, sizes: list[int], max_columns: int | None = None,
                 views: Views | None = None, cap: int | None = None) -> "ClaimTable":
        """The table of every claim true in ``truth``, by column subset (fewest columns first), then
        by the values in column order (``views``: see :class:`Views`; ``cap``: only claims of a count
        up to it, the atom combinations of small counts).

        Keys are built over the distinct rows only (with their multiplicities), so the table costs
        distinct rows x subsets, not rows x subsets.
        """
        among = claimable(sizes)
        subsets = (column_subsets(truth.shape[1], max_columns, among) if views is None
                   else views.subsets(truth.shape[1], max_columns, among))
        table = cls(sizes, subsets)
        rows, weights = distinct_rows(truth)
        n_rows = max(len(rows), 1)
        keys = (((rows + 1) * table.strides) @ table.masks.T).T.ravel()  # subset-major, one per distinct row
        values, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=np.tile(weights, len(subsets)), minlength=len(values))
        if cap is not None:  # the small counts alone: the claims of large groups are never built
            small = counts <= cap
            values, first, counts = values[small], first[small], counts[small]
        subset, row = first // n_rows, first % n_rows
        backward = np.array([int(np.prod(table.radix[c + 1:])) for c in range(len(sizes))], dtype=table.strides.dtype)
        order_key = ((rows[row] + 1) * backward) * table.masks[subset]
        order = np.lexsort((order_key.sum(axis=1), subset))
        table.keys, table.m = values[order], counts[order].astype(np.int64)
        table._plain = _interned(table)
        if table._plain is None:
            table.claims = _claims(subsets, rows, subset[order], row[order], table.m)
        else:
            table._fill(subsets, rows, subset[order], row[order])
            table.claims = [v.claim for v in table._plain]
        if views is not None and (views.proved or views.every):
            keep = ~views.redundant(subsets, subset[order], rows[row[order]])
            table.claims = [c for c, k in zip(table.claims, keep.tolist()) if k]
            table._plain = None if table._plain is None else [v for v, k in zip(table._plain, keep.tolist()) if k]
            table.keys, table.m = table.keys[keep], table.m[keep]
        return table

    def _fill(self, subsets: list[tuple[int, ...]], rows: np.ndarray, subset: np.ndarray, row: np.ndarray) -> None:
        """Make the claims (and plain verdicts) :func:`_interned` did not find, and keep them."""
        missing = [k for k, v in enumerate(self._plain) if v is None]
        if not missing:
            return
        made = verified_verdicts(_claims(subsets, rows, subset[missing], row[missing], self.m[missing]))
        for k, v, key in zip(missing, made, self._combined[missing].tolist()):
            self._plain[k] = self._known[key] = v

    def lean(self) -> "ClaimTable":
        """The table without what only :meth:`verified` needs (to be kept, see :mod:`audit.attacks.unit_memo`)."""
        out = copy.copy(self)
        out._plain = out._combined = out._known = None
        return out

    def verified(self, idx) -> list[Verdict]:
        """Plain verified verdicts of the claims at positions ``idx``, as :func:`verified_verdicts` makes them."""
        if self._plain is None:
            return verified_verdicts([self.claims[i] for i in idx])
        return [self._plain[i] for i in idx]

    def counts(self, rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """How many rows of the dataset match each claim (each row counted ``weights`` times if given)."""
        if len(rows) == 0 or len(self.keys) == 0:
            return np.zeros(len(self.keys), dtype=np.int64)
        return self._matched(*self._tallies(rows, weights))

    def _tallies(self, rows: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every claim key the rows have (over each column subset of the table), sorted, and its rows."""
        row_keys = ((np.asarray(rows) + 1) * self.strides) @ self.masks.T
        if weights is None:
            return np.unique(row_keys.ravel(), return_counts=True)
        values, inverse = np.unique(row_keys.ravel(), return_inverse=True)
        return values, np.bincount(inverse.ravel(), weights=np.repeat(weights, row_keys.shape[1]))

    def _matched(self, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each claim's count among :meth:`_tallies`' keys (0 where its key is not among them)."""
        at = np.searchsorted(values, self.keys)
        inside = at < len(values)
        at = np.where(inside, at, 0)
        found = inside & (values[at] == self.keys)
        return np.where(found, counts[at], 0).astype(np.int64)

    def _prior_tallies(self, prior_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_tallies` of the prior's distinct rows, weighted: worked out once for the units that share a
        prior and the table's subsets (a tract's blocks: the tract's every row keyed and sorted was a twentieth
        of a block's CPU)."""
        prior = np.ascontiguousarray(prior_rows)
        memo = None
        if self.exact:
            digest = hashlib.blake2b(prior.tobytes(), digest_size=16)
            for part in (str(prior.shape).encode(), prior.dtype.str.encode(), self.strides.tobytes(), self.masks.tobytes()):
                digest.update(part)
            memo = digest.digest()
            if memo in _PRIOR_TALLIES:
                return _PRIOR_TALLIES[memo]
        found = self._tallies(*np.unique(prior, axis=0, return_counts=True))
        if memo is not None:
            keep(_PRIOR_TALLIES, memo, found, PRIOR_TALLIES)
        return found

    def baseline(self, n: int, prior_rows: np.ndarray) -> np.ndarray:
        """Probability each claim holds in ``n`` rows drawn from the prior (Generate-then-Verify eq. 17)."""
        empty = len(self.keys) == 0 or len(prior_rows) == 0
        p = (np.zeros(len(self.keys), dtype=np.int64) if empty else self._matched(*self._prior_tallies(prior_rows))
             ) / len(prior_rows)
        m = np.minimum(self.m, n)
        if n <= 1000:  # comb(n, k) is a float up to n = 1029
            ways = np.array([comb(n, k) for k in range(n + 1)], dtype=float)
            return np.where(self.m <= n, ways[m] * p ** m * (1 - p) ** (n - m), 0.0)
        # in logarithms past it (a count-only unit of any size is attacked in histogram space)
        log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
        with np.errstate(divide="ignore", invalid="ignore"):  # p = 1 (or 0): -inf times 0, not selected
            log = (log_fact[n] - log_fact[m] - log_fact[n - m] + np.where(m > 0, m * np.log(p), 0.0)
                   + np.where(n - m > 0, (n - m) * np.log1p(-p), 0.0))
        return np.where(self.m <= n, np.exp(log), 0.0)

    def refuted(self, idx: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """For each claim of the table at positions ``idx``, whether the dataset contradicts it."""
        rows = np.asarray(rows)
        if len(rows) > 256:  # count each distinct row once, weighted: persons repeat the same few rows
            sizes = tuple(int(r) - 1 for r in self.radix)  # the mixed-radix path of distinct_rows where it fits
            return self.counts(*distinct_rows(rows, sizes))[idx] != self.m[idx]
        return self.counts(rows)[idx] != self.m[idx]
