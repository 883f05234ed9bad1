"""The linear attack's query matrix, kept small: one bit per query and distinct public record.

Rows that share their public identifiers fall in the same queries (hashed predicates read only the
public values; a schedule's cells are grouped by identical mask columns), so the ``k x n`` mask
matrix ``F`` is ``G E``: ``G`` (``k x g``) over the ``g`` distinct groups, ``E`` mapping each row to
its group. ``G`` is stored bit-packed, by byte planes (``planes[b, i]`` holds queries ``i``'s bits
for groups ``8b .. 8b+7``), and multiplied through 256-entry byte tables; nothing ``k x n`` is built.
Memory is ``k g / 8`` bytes (88 MB for the 25,766 Fulton persons' 51,532 queries) instead of the
dense path's ``8 k n`` (10.6 GB).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(float)  # (256, 8)
POPCOUNT = BYTE_BITS.sum(axis=1).astype(np.int64)
CHUNK = 1 << 20  # elements per temporary block (8 MB of float64)
EXACT_FLOAT32 = 1 << 24  # integers below this are exact in float32


def hash_bits(public: np.ndarray, descs: np.ndarray, prime: int) -> np.ndarray:
    """``(rows, k)`` bits ``(z · d) mod prime mod 2`` (the notebook's hashed predicates).

    The products go through float32 BLAS when every sum is an integer below 2**24 (exact there),
    and int64 otherwise; the parity uses ``x mod p ≡ x + floor(x / p) (mod 2)`` for odd ``p``.
    """
    bound = float(np.abs(public).max(initial=0)) * float(np.abs(descs).max(initial=0)) * public.shape[1]
    if bound < EXACT_FLOAT32:
        x = (public.astype(np.float32) @ descs.T.astype(np.float32)).astype(np.int64)
    else:
        x = public @ descs.T
    if prime % 2:
        return ((x + x // prime) & 1).astype(bool)
    return (x % prime % 2).astype(bool)


def _first_seen(inverse: np.ndarray, g: int) -> np.ndarray:
    """Group labels renumbered by first appearance (so that distinct rows keep their order)."""
    first = np.unique(inverse, return_index=True)[1]  # each group's first row
    rank = np.empty(g, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(g)
    return rank[inverse]


@dataclass(frozen=True)
class QueryMatrix:
    """``k`` 0/1 queries over ``n`` rows as ``G`` over the ``g`` groups of rows no query tells apart.

    Parameters
    ----------
    planes : ``(ceil(g / 8), k)`` uint8 byte planes of ``G`` (bit ``j`` of ``planes[b, i]``: query ``i``
        holds group ``8 b + j``).
    groups : ``(n,)`` each row's group, numbered by first appearance.
    """

    planes: np.ndarray = field(repr=False)
    groups: np.ndarray = field(repr=False)
    k: int
    g: int

    def __post_init__(self):
        if self.planes.dtype != np.uint8 or self.planes.shape != (-(-self.g // 8), self.k):
            raise ValueError(f"planes must be uint8 of shape ({-(-self.g // 8)}, {self.k}), not {self.planes.shape}")
        if len(self.groups) and (self.groups.min() < 0 or self.groups.max() >= self.g):
            raise ValueError("groups must lie in 0 .. g-1")

    @classmethod
    def from_bits(cls, rows_of_bits, groups: np.ndarray, k: int, g: int) -> "QueryMatrix":
        """Pack ``(chunk, g)`` bool blocks of consecutive queries (``rows_of_bits`` yields them)."""
        planes = np.zeros((-(-g // 8), k), dtype=np.uint8)
        at = 0
        for bits in rows_of_bits:
            planes[:, at:at + len(bits)] = np.packbits(bits, axis=1, bitorder="little").T
            at += len(bits)
        if at != k:
            raise ValueError(f"got {at} queries, expected {k}")
        return cls(planes, np.asarray(groups, dtype=np.int64), k, g)

    @classmethod
    def hashed(cls, public: np.ndarray, descs: np.ndarray, prime: int) -> "QueryMatrix":
        """The notebook's hashed predicates over the distinct public records, hashed a block at a time."""
        uniq, inverse = np.unique(public, axis=0, return_inverse=True)
        groups = _first_seen(inverse.ravel(), len(uniq))
        order = np.empty(len(uniq), dtype=np.int64)
        order[groups] = inverse.ravel()
        uniq = uniq[order]
        step = max(1, CHUNK // max(1, len(uniq)))
        blocks = (hash_bits(uniq, descs[s:s + step], prime).T for s in range(0, len(descs), step))
        return cls.from_bits(blocks, groups, len(descs), len(uniq))

    @classmethod
    def from_masks(cls, masks: np.ndarray) -> "QueryMatrix":
        """An explicit ``(k, n)`` 0/1 mask matrix, rows with identical columns grouped."""
        masks = np.asarray(masks, dtype=bool)
        k, n = masks.shape
        columns = np.packbits(masks, axis=0).T  # (n, ceil(k/8)): one byte string per row
        uniq, inverse = np.unique(columns, axis=0, return_inverse=True)
        groups = _first_seen(inverse.ravel(), len(uniq))
        first = np.unique(groups, return_index=True)[1]
        return cls.from_bits([masks[:, first]], groups, k, len(uniq))

    @property
    def n(self) -> int:
        return len(self.groups)

    @property
    def sizes(self) -> np.ndarray:
        """Rows per group."""
        return np.bincount(self.groups, minlength=self.g)

    @property
    def ones(self) -> int:
        """How many 1s ``G`` holds."""
        return int(sum(int(POPCOUNT[plane].sum()) for plane in self.planes))

    @property
    def nbytes(self) -> int:
        return self.planes.nbytes + self.groups.nbytes

    def totals(self, values: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Sum of ``values`` per group (over ``rows`` only, when given)."""
        groups = self.groups if rows is None else self.groups[rows]
        values = values if rows is None else values[rows]
        return np.bincount(groups, weights=values, minlength=self.g)

    def dot(self, x: np.ndarray) -> np.ndarray:
        """``G x`` for ``x`` over the groups: a byte table per plane, looked up by each query's byte."""
        padded = np.zeros(self.planes.shape[0] * 8)
        padded[:self.g] = x
        tables = padded.reshape(-1, 8) @ BYTE_BITS.T  # (planes, 256): the sum of x over each byte's bits
        out = np.zeros(self.k)
        for table, plane in zip(tables, self.planes):
            out += table[plane]
        return out

    def tdot(self, y: np.ndarray) -> np.ndarray:
        """``G^T y``: per plane, ``y`` summed by byte value, then spread over the byte's bits."""
        sums = np.stack([np.bincount(plane, weights=y, minlength=256) for plane in self.planes]) \
            if len(self.planes) else np.zeros((0, 256))
        return (sums @ BYTE_BITS).ravel()[:self.g]

    def answers(self, values: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Exact subset sums ``F values`` (over ``rows`` only, when given)."""
        return self.dot(self.totals(values, rows))

    def group_bits(self, start: int, stop: int) -> np.ndarray:
        """``(k, stop - start)`` bool columns of ``G`` for groups ``start .. stop-1``."""
        lo, hi = start // 8, -(-stop // 8)
        bits = np.unpackbits(self.planes[lo:hi].T, axis=1, bitorder="little")
        return bits[:, start - 8 * lo:stop - 8 * lo].astype(bool)

    def dense(self) -> np.ndarray:
        """The ``(k, n)`` mask matrix (small inputs and tests only)."""
        return self.group_bits(0, self.g)[:, self.groups]


def distinct_rows(public: np.ndarray) -> int:
    """How many distinct public records (the groups hashed queries see)."""
    return len(np.unique(public, axis=0)) if len(public) else 0


LSQR_BASE_MB = 30  # hashing blocks and LSQR's vectors beyond the packed bits (20 MB measured at 3,000 rows)
LP_BYTES_PER_NONZERO = 130  # HiGHS' copies of the matrix and its factor: 115-126 measured at 1k-2k rows (bench/linear.py)


def needs_mb(method: str, n: int, g: int, k: int, ones: int | None = None) -> int:
    """Estimated peak memory (MB) of a reconstruction from ``k`` queries over ``n`` rows in ``g`` groups.

    ``ones`` is the number of 1s in ``G`` (half of ``k g`` for hashed queries). Least squares holds the
    packed bits and a few vectors; the LP adds ``2 ones + 2 k`` constraint nonzeros.
    """
    packed = k * (-(-g // 8)) + 8 * (n + 16 * (k + g))
    if method == "lp":
        nonzeros = 2 * (k * g // 2 if ones is None else ones) + 2 * k
        return -(-(packed + nonzeros * LP_BYTES_PER_NONZERO) // 2 ** 20) + LSQR_BASE_MB
    return -(-packed // 2 ** 20) + LSQR_BASE_MB


def as_queries(masks) -> QueryMatrix:
    """A :class:`QueryMatrix` as is, or one built from a ``(k, n)`` 0/1 array."""
    return masks if isinstance(masks, QueryMatrix) else QueryMatrix.from_masks(masks)


def lsqr(dot, tdot, b: np.ndarray, size: int, tol: float = 1e-12, max_iter: int | None = None) -> tuple[np.ndarray, int]:
    """Paige and Saunders' LSQR from zero: the minimum-norm least-squares solution of ``A x = b``.

    ``dot`` and ``tdot`` apply ``A`` and ``A^T``; returns the solution and the iterations used. Stops
    when the residual or the normal-equation residual is below ``tol`` relative to the norms.
    """
    x = np.zeros(size)
    beta = float(np.linalg.norm(b))
    if beta == 0 or size == 0:
        return x, 0
    u = b / beta
    v = tdot(u)
    alpha = float(np.linalg.norm(v))
    if alpha == 0:
        return x, 0
    v = v / alpha
    w, phibar, rhobar, bnorm, anorm2 = v.copy(), beta, alpha, beta, 0.0
    limit = max_iter or 4 * size + 100
    for it in range(1, limit + 1):
        u = dot(v) - alpha * u
        beta = float(np.linalg.norm(u))
        if beta > 0:
            u /= beta
        anorm2 += alpha * alpha + beta * beta
        v = tdot(u) - beta * v
        alpha = float(np.linalg.norm(v))
        if alpha > 0:
            v /= alpha
        rho = float(np.hypot(rhobar, beta))
        c, s = rhobar / rho, beta / rho
        theta, rhobar, phi, phibar = s * alpha, -c * alpha, c * phibar, s * phibar
        x += (phi / rho) * w
        w = v - (theta / rho) * w
        anorm = np.sqrt(anorm2)
        if phibar <= tol * (bnorm + anorm * np.linalg.norm(x)) or phibar * alpha * abs(c) <= tol * anorm * phibar:
            return x, it
    return x, limit
