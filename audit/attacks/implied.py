"""Claims implied by the exact counts through linear algebra: proofs without search.

Any consistent dataset is a histogram ``h >= 0`` over the rows that the edits allow. A count
published as 0 zeroes ``h`` on its rows, which leaves the *support*: the rows that can occur at all.
Exact counts say ``A h = b`` there. When a claim's indicator vector on the support is a rational
combination ``y`` of cell rows, every consistent dataset has ``Count(claim) = y . b``: the claim is
verified and the cells of ``y`` (with the zero cells that shaped the support) explain it. ``y`` is
found in floating point and then checked in integer arithmetic, so no verdict rests on a rounding.
"""
from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np

from ..problem.claims import Claim
from ..errors import InternalError
from ..problem.build import Problem
from ..specs.query import Predicate
from ..release.constraints import int_hi, int_lo
from .integer_algebra import _rational, exact_product, rank_mod_p
from .highs import highs, run as run_highs

MAX_SUPPORT = 50_000  # rows; past it (few zero cells over wide schemas) the linear pass stands aside
SUPPORT_WORK = 2 * 10**8  # rows x killers (bytes) :func:`problem_support` may hold while expanding
SPARSE_ROUNDS = 20  # refinements :meth:`LinearProof.sparse` makes while choosing the zero cells a proof needs
COMBINE_ENTRIES = 2**21  # claims x support rows per batch of LinearProof.combine (about 5 arrays of 8 bytes each)
BASIS_PRIME = 67_108_859  # below 2**26: a product of two residues fits in int64 during the basis elimination


@lru_cache(maxsize=1 << 16)
def _flat_of(sizes: tuple[int, ...], names: tuple[str, ...], predicate) -> np.ndarray:
    bounds = np.cumsum((0,) + sizes)
    out = np.ones(bounds[-1], dtype=np.int64)
    for name, atoms in predicate.clauses:
        col = names.index(name)
        out[bounds[col]:bounds[col + 1]] = 0
        out[bounds[col] + np.fromiter(atoms, dtype=np.int64)] = 1
    out.flags.writeable = False
    return out


def flat_mask(problem: Problem, predicate) -> np.ndarray:
    """A conjunctive predicate as one mask over every column's atoms, columns side by side (cached:
    units of one level share their predicates)."""
    return _flat_of(problem.sizes, problem.names, predicate)


def in_sets(rows: np.ndarray, flats: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Which rows (atom indices) lie in each product set given as a flat 0/1 mask (rows x sets): a row is
    inside when each of its atoms is (one gather per column: a dense product of one-hot rows cost a
    fifth of a large unit's model building, and rows x sets floats of memory)."""
    member = np.ascontiguousarray(np.asarray(flats).reshape(-1, bounds[-1]).T != 0)  # atoms x sets
    out = np.ones((len(rows), member.shape[1]), dtype=bool)
    rows = np.asarray(rows, dtype=np.int64).reshape(len(rows), len(bounds) - 1)
    for col in range(len(bounds) - 1):
        out &= member[bounds[col] + rows[:, col]]
    return out


def support(killers: np.ndarray, bounds: np.ndarray, limit: int = MAX_SUPPORT) -> np.ndarray | None:
    """Every row (atom indices) that no killer forbids, by expanding one column at a time.

    A killer is a product set given as a flat atom mask (see :func:`flat_mask`); a row inside any
    killer cannot occur. None when more than ``limit`` rows would have to be held at once.
    """
    n_cols = len(bounds) - 1
    sizes = np.diff(bounds)
    free = np.column_stack([killers[:, bounds[c]:bounds[c + 1]].all(axis=1) for c in range(n_cols)]
                           ).reshape(len(killers), n_cols)
    if free.all(axis=1).any():
        return np.zeros((0, n_cols), dtype=np.int64)
    last = n_cols - 1 - np.argmin(free[:, ::-1], axis=1)  # the last column each killer constrains
    rows = np.zeros((1, 0), dtype=np.int64)
    alive = np.ones((1, len(killers)), dtype=bool)  # killers whose clauses so far all hold
    live = np.arange(len(killers))
    for col, size in enumerate(sizes.tolist()):
        n = len(rows)
        if n * size > limit:
            return None
        rows = np.column_stack([np.repeat(rows, size, axis=0), np.tile(np.arange(size), n)])
        table = killers[live, bounds[col]:bounds[col + 1]].astype(bool)
        alive = np.repeat(alive, size, axis=0) & np.tile(table.T, (n, 1))
        ends = last[live] == col
        dead = alive[:, ends].any(axis=1)
        rows, alive = rows[~dead], alive[~dead][:, ~ends]
        live = live[~ends]
        keep = alive.any(axis=0)  # killers that no remaining row still satisfies can be dropped
        alive, live = alive[:, keep], live[keep]
    return rows


def problem_support(problem: Problem) -> np.ndarray | None:
    """The atom rows the edits and the zero count cells leave possible (:func:`support`), None past
    :data:`MAX_SUPPORT`: whether the unit's histogram model can be held at all."""
    bounds = np.cumsum((0,) + problem.sizes)
    zeros = sum(c.statistic.kind == "count" and c.hi is not None and int_hi(c.hi, c.hi_open) <= 0
                for c in problem.constraints)
    if (len(problem.edits) + zeros) * MAX_SUPPORT > SUPPORT_WORK:
        return None  # its expansion would hold rows x killers: too large to try
    killers = [flat_mask(problem, e) for e in problem.edits] + [
        flat_mask(problem, c.predicate) for c in problem.constraints
        if c.statistic.kind == "count" and c.hi is not None and int_hi(c.hi, c.hi_open) <= 0]
    return support(np.array(killers, dtype=np.int64).reshape(len(killers), bounds[-1]), bounds)


class LinearProof:
    """Proves claims from the published counts on the support: by an exact linear combination of
    cells, or by two linear-programming bounds whose dual certificates are checked exactly.

    Build it with :meth:`of`, which gives None when the support is too large to hold.
    """

    @classmethod
    def of(cls, problem: Problem) -> "LinearProof | None":
        try:
            return cls(problem)
        except _TooLarge:
            return None

    def __init__(self, problem: Problem):
        self.problem = problem
        self._bounds = bounds = np.cumsum((0,) + problem.sizes)
        counts = [c for c in problem.constraints if c.statistic.kind == "count"]
        lo, hi = problem.n_rows
        cells = [(c.key.rsplit(":", 1)[0], c.predicate, int_lo(c.lo, c.lo_open) or 0,
                  None if c.hi is None else int_hi(c.hi, c.hi_open)) for c in counts]
        if lo == hi and not any(not c.predicate.clauses and c.exact for c in counts):
            cells.append(("", Predicate(()), hi, hi))  # the population, known though not published
        flats = np.array([flat_mask(problem, c[1]) for c in cells], dtype=np.int64).reshape(len(cells), bounds[-1])
        zero = np.array([c[3] is not None and c[3] <= 0 for c in cells], dtype=bool)
        edits = np.array([flat_mask(problem, e) for e in problem.edits], dtype=np.int64).reshape(len(problem.edits), bounds[-1])
        rows = support(np.vstack([edits, flats[zero]]), bounds)
        if rows is None:
            raise _TooLarge()
        self.rows = rows
        self._edit_flat = edits  # the sparse proofs' row classes need them again, per claim and round
        self._zero_flat, self._zero_keys = flats[zero], [c[0] for c, z in zip(cells, zero) if z]
        # small cells first: the basis and the certificates then name short, specific cells
        volume = np.prod(np.add.reduceat(flats, bounds[:-1], axis=1).astype(float), axis=1) if len(cells) else []
        member = in_sets(self.rows, flats, bounds).T
        self.keys, self.lo, self.hi, keep, seen = [], [], [], [], set()
        packed, empty = np.packbits(member, axis=1), ~member.any(axis=1)
        for i in np.argsort(volume, kind="stable"):
            key, _, lo_, hi_ = cells[i]
            sig = (packed[i].tobytes(), lo_, hi_)
            if zero[i] or (empty[i] and lo_ == 0) or sig in seen:
                continue
            seen.add(sig)
            self.keys.append(key)
            self.lo.append(lo_)
            self.hi.append(hi_)
            keep.append(i)
        self.a = member[keep].astype(np.int64).reshape(len(keep), len(self.rows))
        # each kept cell's constraint (None: the population), for certificates written out
        self.sources = [counts[i] if i < len(counts) else None for i in keep]
        self._cell_flat = flats[keep]
        self._exact = [i for i in range(len(keep)) if self.lo[i] == self.hi[i]]
        self._lp = None
        self._sparse_lp = None
        self._by_cell: np.ndarray | None = None
        self._index: dict | None = None

    def histogram(self, rows: np.ndarray) -> np.ndarray | None:
        """How many of the given rows fall on each support row; None if one lies off the support."""
        if self._index is None:
            self._index = {row: i for i, row in enumerate(map(tuple, self.rows.tolist()))}
        at = [self._index.get(row) for row in map(tuple, np.asarray(rows).tolist())]
        if None in at:
            return None
        return np.bincount(np.array(at, dtype=np.int64), minlength=len(self.rows)).astype(np.int64)

    def determines(self, rows: np.ndarray) -> bool:
        """Whether ``rows`` is the only dataset the release allows, proven by linear algebra.

        True when the rows reproduce every published value and the exact counts have full column
        rank on the support (modulo a prime, so the rank over the rationals is full too): ``A h = b``
        then has one solution.
        """
        h = self.histogram(rows)
        if h is None or not self.fits(h):
            return False
        if any(c.statistic.kind != "count" for c in self.problem.constraints) and self.problem.violations(rows):
            return False
        return len(self._exact) >= len(self.rows) and rank_mod_p(self.a[self._exact]) == len(self.rows)

    @cached_property
    def basis(self) -> np.ndarray:
        """A basis of the exact cells' rows (:meth:`_basis`, small cells first), made when first needed."""
        return self._basis(self._exact)

    def _basis(self, candidates: list[int]) -> np.ndarray:
        """A maximal independent set of exact cell rows, taken greedily in the given order.

        Independence is decided modulo BASIS_PRIME, by elimination on the 0/1 rows themselves (sparse:
        far faster than on a dense random projection of them): rows independent there are independent
        over the rationals (a rational dependency, cleared to coprime integers, survives), and the
        converse fails only where the prime divides a minor. Only the choice of basis rests on this,
        never a verdict.
        """
        if not candidates or not len(self.rows):
            return np.zeros(0, dtype=np.int64)
        m = self.a[candidates]  # a copy (0/1 entries: already residues)
        basis = []
        for i in range(len(m)):
            nonzero = np.flatnonzero(m[i])
            if not len(nonzero):
                continue
            basis.append(candidates[i])
            col = nonzero[0]
            m[i] = m[i] * pow(int(m[i, col]), BASIS_PRIME - 2, BASIS_PRIME) % BASIS_PRIME
            below = i + 1 + np.flatnonzero(m[i + 1:, col])
            if len(below):
                m[below] = (m[below] - m[below, col][:, None] * m[i] % BASIS_PRIME) % BASIS_PRIME
        return np.array(basis, dtype=np.int64)

    def claim_vector(self, claim: Claim) -> np.ndarray:
        """The claim's indicator on the support: its count in a dataset is this vector times the histogram."""
        return self._claim_matrix([claim])[0]

    def cell_vector(self, predicate) -> np.ndarray:
        """A cell's indicator on the support: its count in a dataset is this vector times the histogram."""
        return in_sets(self.rows, flat_mask(self.problem, predicate)[None], self._bounds)[:, 0].astype(np.int64)

    def _claim_matrix(self, claims: list[Claim]) -> np.ndarray:
        return in_sets(self.rows, self._claim_flat(claims), self._bounds).T.astype(np.int64)

    def _claim_flat(self, claims: list[Claim]) -> np.ndarray:
        flat = np.ones((len(claims), self._bounds[-1]), dtype=np.int64)
        for i, claim in enumerate(claims):
            for col, atom in claim.assignment:
                flat[i, self._bounds[col]:self._bounds[col + 1]] = 0
                flat[i, self._bounds[col] + atom] = 1
        return flat

    def combine(self, claims: list[Claim]) -> list[np.ndarray | None]:
        """Per claim, the cells (a mask) of a checked exact linear combination equal to it, or None
        (in batches of :data:`COMBINE_ENTRIES` claim x support entries: memory bounded by the model)."""
        out: list[np.ndarray | None] = [None] * len(claims)
        if not claims or len(self.basis) == 0:
            return out
        b = self.a[self.basis]
        values = np.array([self.lo[k] for k in self.basis], dtype=np.int64)
        # least squares through one QR of the basis (independent rows, so R is invertible); far cheaper
        # than lstsq with thousands of right-hand sides, and every certificate is checked exactly below
        q, r = np.linalg.qr(b.T.astype(float))
        step = max(1, COMBINE_ENTRIES // max(len(self.rows), 1))
        for start in range(0, len(claims), step):
            batch = claims[start:start + step]
            c = self._claim_matrix(batch)
            y = np.linalg.solve(r, q.T @ c.T.astype(float)).T
            close = np.flatnonzero(np.abs(y @ b - c).max(axis=1) < 1e-7)
            certs = [(i, cert) for i in close if (cert := _rational(y[i])) is not None]
            if not certs:
                continue
            scales = np.array([scale for _, (scale, _) in certs], dtype=np.int64)
            coefs = np.array([coef for _, (_, coef) in certs], dtype=np.int64)
            rows = np.array([i for i, _ in certs])
            exact = (exact_product(coefs, b) == scales[:, None] * c[rows]).all(axis=1)
            for i, scale, coef in zip(rows[exact], scales[exact], coefs[exact]):
                if int(coef @ values) != scale * batch[i].m:
                    raise InternalError(f"published counts disagree with the confidential data on {batch[i]}")
                out[start + i] = np.zeros(len(self.keys), dtype=bool)
                out[start + i][self.basis[coef != 0]] = True
        return out

    def bound(self, claim: Claim) -> tuple[str, np.ndarray] | None:
        """Linear-programming bounds on the claim's count.

        Returns ``("verified", used)`` when checked dual certificates pin the count to ``m`` (``used``
        marks their cells, for :meth:`explain`), ``("refuted", rows)`` when an optimum is an integral
        dataset that meets every count cell with another count (the caller checks any mean, sum or
        median cells), and None otherwise.
        """
        import highspy

        if self._lp is None:
            self._lp = self.program()
        h, n = self._lp, len(self.rows)
        c = self.claim_vector(claim)
        used = np.zeros(len(self.keys), dtype=bool)
        for sense in (1, -1):  # minimise c.h, then -c.h
            h.changeColsCost(n, np.arange(n, dtype=np.int32), sense * c.astype(float))
            run_highs(h)
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return None
            sol = h.getSolution()
            coef = self.certificate(self.duals(sol.row_dual), sense * c, sense * claim.m - 1)
            if coef is None:
                counts = self.integral(sol.col_value)
                if counts is not None and counts @ c != claim.m and self.fits(counts):
                    return "refuted", np.repeat(self.rows, counts, axis=0)
                return None
            used |= coef != 0
        return "verified", used

    def fits(self, counts: np.ndarray) -> bool:
        """Whether a histogram on the support meets every count cell exactly."""
        if (counts < 0).any():
            return False
        got = self.a @ counts
        lo, hi = self._ends
        return bool((lo <= got).all() and (got <= hi).all())

    @cached_property
    def _ends(self) -> tuple[np.ndarray, np.ndarray]:
        """The cells' integer ends as arrays (no upper end: the largest int64), for :meth:`fits`."""
        top = np.iinfo(np.int64).max
        return (np.array(self.lo, dtype=np.int64).reshape(-1),
                np.array([top if h is None else h for h in self.hi], dtype=np.int64).reshape(-1))

    @cached_property
    def lp_rows(self) -> np.ndarray:
        """The cells a linear program needs: a basis of the exact ones (the others are their
        combinations on the support) and every interval. Fewer, sparser rows solve several times faster."""
        return np.union1d(self.basis, [i for i in range(len(self.keys)) if self.lo[i] != self.hi[i]]).astype(np.int64)

    @cached_property
    def upper(self) -> np.ndarray:
        """An upper bound on each support row's count in any consistent dataset: its smallest cell."""
        hi = np.array([np.inf if h is None else h for h in self.hi], dtype=float)
        cell, col = self.entries
        out = np.full(len(self.rows), np.inf)
        np.minimum.at(out, col, hi[cell])
        return out

    @cached_property
    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """The cells' nonzero entries, ``(cell, row)`` in cell-major order: :attr:`a` held sparse."""
        cell, col = np.nonzero(self.a)
        return cell.astype(np.int64), col.astype(np.int64)

    def program(self, integer: bool = False):
        """A HiGHS model over the support's counts ``h >= 0`` with the cells of :attr:`lp_rows` (no objective)."""
        import highspy

        h = highs(threads=1, random_seed=0)
        # primal simplex: callers mostly change the objective, which leaves the last basis primal
        # feasible (4x fewer iterations than the default dual simplex on household blocks)
        h.setOptionValue("simplex_strategy", 4)
        n = len(self.rows)
        h.addVars(n, np.zeros(n), self.upper if integer else np.full(n, highspy.kHighsInf))
        cell, col = self.entries
        at = np.full(len(self.keys), -1, dtype=np.int64)
        at[self.lp_rows] = np.arange(len(self.lp_rows))  # lp_rows ascend: the entries stay row-major
        take = at[cell] >= 0
        index = col[take].astype(np.int32)
        starts = np.searchsorted(at[cell[take]], np.arange(len(self.lp_rows))).astype(np.int32)
        hi = [highspy.kHighsInf if self.hi[i] is None else float(self.hi[i]) for i in self.lp_rows]
        h.addRows(len(self.lp_rows), np.array([float(self.lo[i]) for i in self.lp_rows]), np.array(hi), len(index),
                  starts, index, np.ones(len(index)))
        if integer:
            h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger, dtype=np.uint8))
        return h

    def duals(self, values) -> np.ndarray:
        """Row values of a :meth:`program` (duals, rays) spread over every cell, 0 on those it left out."""
        out = np.zeros(len(self.keys))
        out[self.lp_rows] = np.asarray(values, dtype=float)[: len(self.lp_rows)]
        return out

    @staticmethod
    def integral(values, tolerance: float = 1e-9) -> np.ndarray | None:
        """A solver's column values as integer counts, if each lies within ``tolerance`` of one."""
        values = np.asarray(values, dtype=float)
        counts = np.round(values)
        if np.abs(values - counts).max(initial=0) >= tolerance:
            return None
        return counts.astype(np.int64)

    def certificate(self, dual: np.ndarray, c: np.ndarray, past: int, lower: np.ndarray | None = None,
                     upper: np.ndarray | None = None) -> np.ndarray | None:
        """Checked integer dual multipliers proving ``c.h > past`` for every consistent ``h`` within
        ``lower <= h <= upper`` (default: ``h >= 0``; an upper bound of -1 means none).

        With ``d = c - y.A``: ``c.h = y.(A h) + d.h >= sum(y_i * (lo_i if y_i > 0 else hi_i))
        + sum(d_j * (lower_j if d_j > 0 else upper_j))``, all in integers after scaling.
        """
        proof = self.dual_proof(dual, c, past, lower, upper)
        return None if proof is None else proof[1]

    def dual_proof(self, dual: np.ndarray, c: np.ndarray, past: int, lower: np.ndarray | None = None,
                   upper: np.ndarray | None = None) -> tuple[int, np.ndarray] | None:
        """:meth:`certificate` with its scale: ``(scale, multipliers)``, the multipliers over :attr:`keys`
        divided by ``scale`` being the rationalised dual (what :mod:`audit.attacks.certificates` writes)."""
        for y in (dual, -dual):
            cert = _rational(y)
            if cert is None:
                continue
            scale, coef = cert
            nonzero = np.flatnonzero(coef)
            if any(coef[i] < 0 and self.hi[i] is None for i in nonzero):
                continue
            d = scale * np.asarray(c, dtype=np.int64) - exact_product(coef[nonzero], self.a[nonzero])
            if upper is None:
                if (d < 0).any():
                    continue
                low = 0
            else:
                if ((d < 0) & (upper < 0)).any():
                    continue
                low = int(np.where(d > 0, d * lower, d * upper) @ np.ones(len(d), dtype=np.int64))
            low += sum(int(coef[i]) * (self.lo[i] if coef[i] > 0 else self.hi[i]) for i in nonzero)
            if low > scale * past:
                return int(scale), coef
        return None

    def sparse(self, claim: Claim, rounds: int = SPARSE_ROUNDS) -> tuple[str, ...] | None:
        """Few cells that prove a claim: a certificate of least total weight for each bound (a linear
        program over every cell), checked exactly, and only the zero cells that the rows where it
        falls short need, found over the whole row space (see :meth:`_zeros_needed`). None when
        the count is not pinned to ``m`` at a tight bound or no cover is found within ``rounds``."""
        import highspy

        if self._sparse_lp is None:
            self._sparse_lp = self._sparse_program()
        h, k = self._sparse_lp, len(self.keys)
        c = self.claim_vector(claim)
        certs = []
        for sense in (1, -1):  # y.A <= sense * c on the support, bound(y) >= sense * m
            up = np.append(sense * c.astype(float), highspy.kHighsInf)
            lo = np.append(np.full(len(c), -highspy.kHighsInf), float(sense * claim.m))
            h.changeRowsBounds(len(up), np.arange(len(up), dtype=np.int32), lo, up)
            run_highs(h)
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return None
            x = np.asarray(h.getSolution().col_value)
            y = np.where(np.abs(x[:k] - x[k:]) < 1e-9, 0.0, x[:k] - x[k:])
            found = self.dual_proof(y, sense * c, sense * claim.m - 1)
            if found is None:
                return None
            certs.append((sense, *found))
        zeros = self._zeros_needed(claim, certs, rounds)
        if zeros is None:
            return None
        used = certs[0][2].astype(bool) | certs[1][2].astype(bool)
        return tuple(sorted({self.keys[i] for i in np.flatnonzero(used) if self.keys[i]}
                            | {self._zero_keys[z] for z in zeros}))

    def _sparse_program(self):
        """HiGHS model of :meth:`sparse`: ``y = p - q`` over every cell (``q = 0`` where the cell has no
        upper bound), a row per support row (``y.A <= c``) and one for the bound (``p.lo - q.hi >= m``),
        minimising ``sum(p + q)``; the row bounds are set per claim."""
        import highspy

        k, n = len(self.keys), len(self.rows)
        hi = np.array([0.0 if v is None else float(v) for v in self.hi])
        m = np.vstack([np.hstack([self.a.T, -self.a.T]).astype(float),
                       np.concatenate([np.asarray(self.lo, dtype=float), -hi])[None]])
        at, index = np.nonzero(m)
        starts = np.searchsorted(at, np.arange(n + 1)).astype(np.int32)
        h = highs(threads=1, random_seed=0)
        upper = np.concatenate([np.full(k, highspy.kHighsInf),
                                np.where([v is None for v in self.hi], 0.0, highspy.kHighsInf)])
        h.addVars(2 * k, np.zeros(2 * k), upper)
        h.changeColsCost(2 * k, np.arange(2 * k, dtype=np.int32), np.ones(2 * k))
        h.addRows(n + 1, np.full(n + 1, -highspy.kHighsInf), np.full(n + 1, highspy.kHighsInf), len(index),
                  starts, index.astype(np.int32), m[at, index])
        return h

    def _zeros_needed(self, claim: Claim, certs: list, rounds: int) -> list[int] | None:
        """Zero cells (indices) that, with the edits, empty every row of the whole row space where a
        certificate ``(sense, scale, coef)`` falls short (``coef.A > sense * scale * c``), or None.

        The rows are taken in classes: atoms of a column that every cell, zero cell and edit in play
        treats alike are one class, so each class of rows is checked once, exactly in integers. A
        row where a certificate falls short is off the support (it holds there), so some zero cell
        empties it: zero cells holding whole short classes are added first (most classes first),
        the classes refined, until no row is left short; then each one the others make needless is
        dropped (judged on the classes all of them refine, :meth:`_held`)."""
        chosen: list[int] = []
        for _ in range(rounds):
            short = self._short(claim, certs, chosen)
            if short is None:
                return None
            rows, full, reps = short
            if not len(rows):
                break
            some = in_sets(reps, self._zero_flat, self._bounds)  # holds the class's first row at least
            left = np.ones(len(rows), dtype=bool)
            while left.any():
                cover = full if full[left].any() else some
                z = int(cover[left].sum(axis=0).argmax())
                if not cover[left, z].any():
                    raise InternalError(f"a row where a checked certificate of {claim} falls short lies on the support")
                chosen.append(z)
                left &= ~cover[:, z]
        else:
            return None
        held = self._held(claim, certs, chosen)
        for i in reversed(range(len(chosen))):
            rest = [j for j in range(len(chosen)) if j != i and chosen[j] is not None]
            if held is None:
                short = self._short(claim, certs, [chosen[j] for j in rest])
                needless = short is not None and not len(short[0])
            else:
                needless = bool(held[:, rest].any(axis=1).all())
            if needless:
                chosen[i] = None
        return [z for z in chosen if z is not None]

    def _shortfall(self, claim: Claim, certs: list, zeros: list[int], zeros_forbid: bool = True) -> tuple | None:
        """The classes of rows (refined by ``zeros``) that the edits leave, and ``zeros`` too when they
        ``zeros_forbid``, where a certificate falls short: ``(rows, compact masks, class bounds, members)``
        with the zero cells' masks last; None when the classes are too many to hold."""
        used = np.flatnonzero(certs[0][2].astype(bool) | certs[1][2].astype(bool))
        flats = np.vstack([self._claim_flat([claim]), self._cell_flat[used], self._edit_flat, self._zero_flat[zeros]])
        compact, cbounds, members = _classes(flats, self._bounds)
        k = 1 + len(used)
        rows = support(compact[k:] if zeros_forbid else compact[k:k + len(self._edit_flat)], cbounds)
        if rows is None:
            return None
        member = in_sets(rows, compact[:k], cbounds).astype(np.int64)
        short = np.zeros(len(rows), dtype=bool)
        for sense, scale, coef in certs:
            short |= sense * scale * member[:, 0] - member[:, 1:] @ coef[used] < 0
        return rows[short], compact, cbounds, members

    def _held(self, claim: Claim, certs: list, zeros: list[int]) -> np.ndarray | None:
        """Which of ``zeros`` holds each class of rows the edits alone leave where a certificate falls
        short (classes refined by every one of ``zeros``, so any subset is judged on the same rows); None
        when the classes are too many to hold."""
        found = self._shortfall(claim, certs, zeros, zeros_forbid=False)
        if found is None:
            return None
        rows, compact, cbounds, _ = found
        return in_sets(rows, compact[len(compact) - len(zeros):], cbounds)

    def _short(self, claim: Claim, certs: list, zeros: list[int]):
        """The classes of rows (class indices per column) that the edits and ``zeros`` leave and where a
        certificate falls short; which zero cells hold each whole; and the first row of each. None
        when the classes are too many to hold."""
        found = self._shortfall(claim, certs, zeros)
        if found is None:
            return None
        rows, _, _, members = found
        full = np.ones((len(rows), len(self._zero_flat)), dtype=bool)
        for col, groups in enumerate(members):
            zero = self._zero_flat[:, self._bounds[col]:self._bounds[col + 1]].astype(bool)
            whole = np.array([zero[:, g].all(axis=1) for g in groups]).reshape(len(groups), len(zero))
            full &= whole[rows[:, col]]
        reps = np.column_stack([np.array([g[0] for g in groups])[rows[:, col]] for col, groups in enumerate(members)]
                               ) if len(members) else np.zeros((len(rows), 0), dtype=np.int64)
        return rows, full, reps.reshape(len(rows), len(members))

    def explain(self, claims: list[Claim], used: np.ndarray) -> list[tuple[str, ...]]:
        """Certificate cells, and every zero cell whose rows meet the claim's or theirs.

        Rows off the support inside those regions are what a certificate assumes empty; each is
        either forbidden by an edit or inside one of these zero cells, so they complete the proof.
        """
        out = []
        zeros = self._zero_cells(claims, used)
        for j in range(len(claims)):
            cells = {self.keys[k] for k in np.flatnonzero(used[j]) if self.keys[k]}
            cells.update(self._zero_keys[k] for k in np.flatnonzero(zeros[j]))
            out.append(tuple(sorted(cells)))
        return out

    def _meets(self, regions: np.ndarray) -> np.ndarray:
        """Which zero cells share a row with each region (product sets as flat atom masks)."""
        meet = np.ones((len(regions), len(self._zero_flat)), dtype=bool)
        for col in range(len(self._bounds) - 1):
            a, b = self._bounds[col], self._bounds[col + 1]
            meet &= (regions[:, a:b] @ self._zero_flat[:, a:b].T) > 0
        return meet

    def _zero_cells(self, claims: list[Claim], used: np.ndarray) -> np.ndarray:
        if len(self._zero_flat) == 0 or not claims:
            return np.zeros((len(claims), len(self._zero_flat)), dtype=bool)
        flat = self._claim_flat(claims)
        if self._by_cell is None:
            self._by_cell = self._meets(self._cell_flat).astype(np.int64)
        return self._meets(flat) | ((used.astype(np.int64) @ self._by_cell) > 0)


def _classes(flats: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[list[np.ndarray]]]:
    """Each column's atoms grouped by how the flat masks treat them: the masks over the classes, the
    classes' column bounds, and per column the atoms of each class."""
    members, cbounds, first = [], [0], []
    for col in range(len(bounds) - 1):
        groups = _unique_columns(flats[:, bounds[col]:bounds[col + 1]])
        members.append(groups)
        first.append(bounds[col] + np.array([g[0] for g in groups], dtype=np.int64))
        cbounds.append(cbounds[-1] + len(groups))
    compact = np.concatenate([flats[:, f] for f in first], axis=1)
    return compact, np.array(cbounds), members


def _unique_columns(block: np.ndarray) -> list[np.ndarray]:
    """The distinct columns of ``block``, as the ascending indices of the columns equal to each, in the
    order of ``np.unique(block.T, axis=0)`` (lexicographic); a stable lexsort, without the structured
    dtype that made ``np.unique(axis=0)`` most of the sparse proofs' time."""
    n = block.shape[1]
    if n == 0:
        return []
    if block.shape[0] == 0 or n == 1:
        return [np.arange(n)]
    if n == 2:  # most columns (yes/no): the same answer without the sort's overhead
        differ = np.flatnonzero(block[:, 0] != block[:, 1])
        if not len(differ):
            return [np.arange(2)]
        first = int(block[differ[0], 0] > block[differ[0], 1])
        return [np.array([first]), np.array([1 - first])]
    order = np.lexsort(block[::-1])
    ordered = block[:, order]
    cuts = np.flatnonzero((ordered[:, 1:] != ordered[:, :-1]).any(axis=0)) + 1
    return np.split(order, cuts)


class _TooLarge(Exception):
    pass
