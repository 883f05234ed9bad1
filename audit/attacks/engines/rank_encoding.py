"""RAP-RANK's queries: a group of problems' published cells as clause slots and per-unit loss terms."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ...problem.build import Problem


@dataclass
class _Term:
    """One constraint in solver form: lo * ans[q2] <= ans[q1] <= hi * ans[q2], weight w."""

    q1: int
    q2: int        # index of the divisor query; -1 for the constant 1 (count/sum)
    lo: float
    hi: float
    w: float
    check: bool = True   # counts towards "the rounded dataset reproduces the release" (not noisy cells)
    key: str = ""        # the constraint (or edit) it encodes


class _Encoding:
    """The queries of a group of problems sharing domains: clause slots and per-unit terms."""

    def __init__(self, problems: Sequence[Problem], noise: Mapping[str, float]):
        first = problems[0]
        self.domains = first.domains
        self.sizes = [len(d) for d in self.domains]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.slots: list[dict] = [dict() for _ in self.domains]   # per column: (atoms, weighted) -> j
        self.queries: dict = {}                                   # (clauses, weighted col) -> q
        self.query_slots: list[list[tuple[int, int]]] = []
        self.notes: list[str] = []
        self.terms: list[list[_Term]] = []
        self._seen: dict[int, tuple] = {}
        self._counts: dict[int, int] = {}                         # predicate -> its count query
        self.medians: dict[int, list] = {}                        # unit -> its median constraints (checked exactly)
        skipped: Counter = Counter()
        for p in problems:
            if p.domains != self.domains:
                raise ValueError("problems of one encoding must share their domains")
            terms = []
            for c in p.constraints:
                term = self._term(p, c, noise, skipped)
                if isinstance(term, list):
                    terms.extend(term)
                    self.medians.setdefault(len(self.terms), []).append(c)
                elif term is not None:
                    terms.append(term)
            for i, e in enumerate(p.edits):
                terms.append(_Term(self.query(self._clauses(p, e)), -1, 0.0, 0.0, 1.0, True, f"edit:{i}"))
            self.terms.append(terms)
        self.skipped = skipped
        self.notes.extend(skip_notes(skipped))

    def _clauses(self, p: Problem, predicate) -> tuple:
        key = id(predicate)          # units of a level share their predicates (kept alive by the problems)
        if key not in self._seen:
            self._seen[key] = tuple((p.index(name), frozenset(atoms)) for name, atoms in predicate.clauses)
        return self._seen[key]

    def _slot(self, col: int, atoms: frozenset, weighted: bool) -> int:
        table = self.slots[col]
        return table.setdefault((atoms, weighted), len(table))

    def query(self, clauses: tuple, weighted: int | None = None) -> int:
        key = (clauses, weighted)
        if key not in self.queries:
            slots = [(col, self._slot(col, atoms, col == weighted)) for col, atoms in clauses]
            if weighted is not None and all(col != weighted for col, _ in clauses):
                slots.append((weighted, self._slot(weighted, frozenset(range(self.sizes[weighted])), True)))
            self.queries[key] = len(self.query_slots)
            self.query_slots.append(slots)
        return self.queries[key]

    def _term(self, p: Problem, c, noise: Mapping[str, float], skipped: Counter) -> _Term | list[_Term] | None:
        stat = c.statistic
        sigma = (getattr(c, "noise_scale", None) or noise.get(c.key) or noise.get("*")) if noise else None
        lo_, hi_ = c.lo, c.hi
        if (stat.kind == "count" and not sigma and lo_ is not None and hi_ is not None and lo_.denominator == 1
                and hi_.denominator == 1 and lo_.numerator == hi_.numerator and not (c.lo_open or c.hi_open)):
            # the common case (an exact count), without Fraction arithmetic: thousands of units share it
            q = self._counts.get(id(c.predicate))
            if q is None:
                q = self._counts[id(c.predicate)] = self.query(self._clauses(p, c.predicate))
            v = float(lo_.numerator)
            return _Term(q, -1, v, v, 1.0, True, c.key)
        clauses = self._clauses(p, c.predicate)
        if stat.kind == "median":
            return self._median(p, c, clauses)
        lo = -math.inf if c.lo is None else float(c.lo)
        hi = math.inf if c.hi is None else float(c.hi)
        if stat.kind in ("count", "sum") and not sigma:
            # integer statistics: open ends and fractional bounds tighten to integers
            if c.lo is not None:
                lo = float(math.floor(c.lo) + 1 if c.lo_open and c.lo == math.floor(c.lo) else math.ceil(c.lo))
            if c.hi is not None:
                hi = float(math.ceil(c.hi) - 1 if c.hi_open and c.hi == math.ceil(c.hi) else math.floor(c.hi))
        w = 1.0 / max(float(sigma), 1.0) ** 2 if sigma else 1.0
        check = not sigma
        if stat.kind == "count":
            return _Term(self.query(clauses), -1, lo, hi, w, check, c.key)
        col = p.index(stat.column)
        vmin = min(self.domains[col].values)
        q_sum = self.query(clauses, col)            # sum of (value - vmin): non-negative
        q_cnt = self.query(clauses)
        if stat.kind == "sum":
            # sum = sum' + vmin * count: fold the shift into the divisor form when vmin != 0
            if vmin == 0:
                return _Term(q_sum, -1, lo, hi, w, check, c.key)
            skipped["sum (negative domain)"] += 1
            return None
        # mean in [lo, hi]  <=>  (lo - vmin) * count <= sum' <= (hi - vmin) * count
        return _Term(q_sum, q_cnt, lo - vmin, hi - vmin, w, check, c.key)

    def _median(self, p: Problem, c, clauses: tuple) -> list[_Term]:
        """A median in [lo, hi] as the two counts it implies: at least half the group's rows at or
        below ``hi`` and at least half at or above ``lo`` (necessary; the exact check is on the rounded data)."""
        col = p.index(c.statistic.column)
        values = np.asarray(self.domains[col].values)
        q_cnt = self.query(clauses)
        out = []
        if c.hi is not None:
            top = math.ceil(c.hi) - 1 if c.hi_open and c.hi == math.ceil(c.hi) else math.floor(c.hi)
            out.append(_Term(self.query(_with(clauses, col, values <= top)), q_cnt, 0.5, math.inf, 1.0, False, c.key))
        if c.lo is not None:
            bottom = math.floor(c.lo) + 1 if c.lo_open and c.lo == math.floor(c.lo) else math.ceil(c.lo)
            out.append(_Term(self.query(_with(clauses, col, values >= bottom)), q_cnt, 0.5, math.inf, 1.0, False, c.key))
        return out

    def tensors(self, torch, device):
        """Clause matrices per column, the slot index table, and its log-space incidence matrix."""
        mats, base = [], []
        total = 0
        for col, table in enumerate(self.slots):
            d = self.domains[col]
            m = np.zeros((len(d), max(len(table), 1)), dtype=np.float32)
            values = np.asarray(d.values, dtype=np.float32) - min(d.values) if d.numeric else None
            for (atoms, weighted), j in table.items():
                idx = sorted(atoms)
                m[idx, j] = values[idx] if weighted else 1.0
            mats.append(torch.tensor(m, device=device))
            base.append(total)
            total += m.shape[1]
        width = max(1, max(len(s) for s in self.query_slots))
        gather = np.full((len(self.query_slots), width), total, dtype=np.int64)   # total = the constant-1 slot
        for q, slots in enumerate(self.query_slots):
            for i, (col, j) in enumerate(slots):
                gather[q, i] = base[col] + j
        incidence = np.zeros((total + 1, len(self.query_slots)), dtype=np.float32)
        for q, slots in enumerate(self.query_slots):
            for col, j in slots:
                incidence[base[col] + j, q] += 1.0
        return mats, torch.tensor(gather, device=device), torch.tensor(incidence, device=device)

    def groups(self) -> list[list[int]]:
        """Columns with the same number of atoms, together (one softmax call for each group)."""
        out: dict[int, list[int]] = {}
        for c, a in enumerate(self.sizes):
            out.setdefault(a, []).append(c)
        return list(out.values())


def skip_notes(skipped: Counter) -> list[str]:
    """The notes on the cells left out of the relaxed loss, by kind (counts of :attr:`_Encoding.skipped`)."""
    return [f"{n} {kind} cells are not in the relaxed loss (no differentiable form here)"
            for kind, n in sorted(skipped.items())]


def _with(clauses: tuple, col: int, member: np.ndarray) -> tuple:
    """``clauses`` and ``col in member`` (intersected with the clause already on ``col``), sorted by column."""
    atoms = frozenset(np.flatnonzero(member).tolist())
    merged = dict(clauses)
    merged[col] = merged[col] & atoms if col in merged else atoms
    return tuple(sorted(merged.items()))


def factor_plan(query_slots: Sequence[Sequence[tuple[int, int]]], base: Sequence[int], const: int, width: int):
    """The factorised answer plan over ``width`` slots (``const`` the constant-1 slot): queries of at most
    two clauses read off the slots' Gram matrix ``mass^T mass`` (a flat index into it, padded with the
    constant slot), longer ones are products of gathered slots. Returns ``(low flat indices, high gather
    table, order)``: ``order`` puts the answers ``[low..., high...]`` back in query order."""
    low, high, low_q, high_q = [], [], [], []
    kmax = max([len(s) for s in query_slots if len(s) > 2], default=3)
    for q, slots in enumerate(query_slots):
        idx = [base[col] + j for col, j in slots]
        if len(idx) <= 2:
            idx += [const] * (2 - len(idx))
            low.append(idx[0] * width + idx[1])
            low_q.append(q)
        else:
            high.append(idx + [const] * (kmax - len(idx)))
            high_q.append(q)
    order = np.argsort(np.asarray(low_q + high_q, dtype=np.int64))
    return (np.asarray(low, dtype=np.int64), np.asarray(high, dtype=np.int64).reshape(-1, kmax), order)


def split_plan(high: np.ndarray, right: set, const: int):
    """Longer queries as products of a left and a right factor: each query's slots in the ``right`` set
    (the slots of the widest columns) form its right factor, the rest its left. Returns the distinct left
    and right slot tuples (padded with ``const``) and each query's flat index into their ``left x right``
    Gram matrix."""
    lefts: dict = {}
    rights: dict = {}
    flat = []
    for q in high:
        r = tuple(sorted(int(s) for s in q if s in right))
        left = tuple(sorted(int(s) for s in q if s not in right and s != const))
        i = lefts.setdefault(left, len(lefts))
        j = rights.setdefault(r, len(rights))
        flat.append((i, j))

    def table(d: dict) -> np.ndarray:
        width = max(1, max(len(k) for k in d))
        return np.asarray([list(k) + [const] * (width - len(k)) for k in d], dtype=np.int64).reshape(len(d), width)
    return table(lefts), table(rights), np.asarray([i * len(rights) + j for i, j in flat], dtype=np.int64)
