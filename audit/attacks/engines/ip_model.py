"""The integer program of :class:`~audit.attacks.engines.ip.IpEngine`: one-hot rows, edits, hash order
(eq. 8) and every published cell as linear rows."""
from __future__ import annotations

from fractions import Fraction

from ...specs.query import Predicate
from ...release.constraints import Constraint, int_hi as _int_hi, int_lo as _int_lo
from .sat_encoding import integer_bounds

INF = float("inf")


class _Model:
    """A MILP as columns and tagged rows; a solve picks which cells' rows take part."""

    def __init__(self):
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[bool] = []
        self.rows: list[tuple[dict[int, float], float, float, str | None]] = []

    def var(self, lb: float = 0, ub: float = 1, integer: bool = True) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(integer)
        return len(self.lb) - 1

    def row(self, coef: dict[int, float], lo: float = -INF, hi: float = INF, tag: str | None = None) -> None:
        coef = {k: v for k, v in coef.items() if v}
        self.rows.append((coef, lo, hi, tag))


def _lo(v: int | None) -> float:
    return -INF if v is None else v


def _hi(v: int | None) -> float:
    return INF if v is None else v


class _Formulation:
    """The model's rows (eqs. 3-12 and the numeric cells); mixed into :class:`~audit.attacks.engines.ip.IpEngine`,
    whose constructor sets ``problem``, ``model``, ``x``, ``act``, ``sizes`` and ``n``."""

    def _z(self, s: int, pred: Predicate) -> list[list[int]]:
        """Sub-predicates of ``pred`` for slot ``s``: per clause, the one-hot columns it allows."""
        return [[self.x[s][self.problem.index(name)][v] for v in sorted(atoms)] for name, atoms in pred.clauses]

    def w(self, s: int, pred: Predicate) -> int:
        """W[pred, s] (eqs. 5-6): slot ``s`` is an active row satisfying ``pred``."""
        key = (s, pred)
        if key not in self._w_cache:
            z = self._z(s, pred)
            if not z:
                self._w_cache[key] = self.act[s]
                return self.act[s]
            m = self.model
            w = m.var()
            m.row({w: 1, self.act[s]: -1}, -INF, 0)  # the padding sub-predicate
            total: dict[int, float] = {w: 1}
            for part in z:
                m.row({w: 1, **{v: -1 for v in part}}, -INF, 0)  # eq. 5
                for v in part:
                    total[v] = total.get(v, 0) - 1
            m.row(total, -(len(z) - 1), INF)  # eq. 6: W >= sum Z - (r - 1)
            self._w_cache[key] = w
        return self._w_cache[key]

    def _hash_order(self, rng) -> None:
        """Eq. 8: h.X_{s+1} >= h.X_s for active slots (inactive slots are last)."""
        h = [[int(v) for v in rng.integers(1, 1000, size=d)] for d in self.sizes]
        big = sum(max(col) for col in h)
        self.hash = h
        for s in range(self.n - 1):
            coef: dict[int, float] = {}
            for c, d in enumerate(self.sizes):
                for v in range(d):
                    coef[self.x[s + 1][c][v]] = coef.get(self.x[s + 1][c][v], 0) + h[c][v]
                    coef[self.x[s][c][v]] = coef.get(self.x[s][c][v], 0) - h[c][v]
            coef[self.act[s + 1]] = coef.get(self.act[s + 1], 0) - big
            self.model.row(coef, -big, INF)

    def _constraint(self, c: Constraint, tag: str) -> None:
        m, n = self.model, self.n
        ws = [self.w(s, c.predicate) for s in range(n)]
        kind = c.statistic.kind
        if kind == "count":
            lo, hi = integer_bounds(c, n)
            m.row({w: 1 for w in ws}, lo, hi, tag)
            return
        col = self.problem.index(c.statistic.column)
        values = self.problem.domains[col].values
        if kind in ("mean", "median"):
            m.row({w: 1 for w in ws}, 1, INF, tag)  # a published mean or median has rows
        if kind in ("sum", "mean"):
            vmin, vmax = min(min(values), 0), max(max(values), 0)
            big = vmax - vmin
            qs = []
            for s in range(n):
                q = m.var(vmin, vmax, integer=False)
                val = {self.x[s][col][v]: values[v] for v in range(len(values))}
                m.row({q: 1, ws[s]: -vmax}, -INF, 0, tag)
                m.row({q: 1, ws[s]: -vmin}, 0, INF, tag)
                m.row({q: 1, **{k: -v for k, v in val.items()}, ws[s]: big}, -INF, big, tag)  # q - V <= big(1-W)
                m.row({q: 1, **{k: -v for k, v in val.items()}, ws[s]: -big}, -big, INF, tag)  # q - V >= -big(1-W)
                qs.append(q)
            if kind == "sum":
                m.row({q: 1 for q in qs}, _lo(_int_lo(c.lo, c.lo_open)), _hi(_int_hi(c.hi, c.hi_open)), tag)
                return
            for bound, is_lo in ((c.lo, True), (c.hi, False)):
                if bound is None:
                    continue
                p, q_ = bound.numerator, bound.denominator
                coef = {**{q: q_ for q in qs}, **{w: -p for w in ws}}
                if is_lo:
                    m.row(coef, 1 if c.lo_open else 0, INF, tag)
                else:
                    m.row(coef, -INF, -1 if c.hi_open else 0, tag)
            return
        # median: order statistics from threshold counts
        big = 2 * n + 2
        lo2 = _int_lo(None if c.lo is None else 2 * c.lo, c.lo_open)  # bounds on lm + um
        hi2 = _int_hi(None if c.hi is None else 2 * c.hi, c.hi_open)
        vmin, vmax = values[0], values[-1]
        # lm <= um, so lm in [A - vmax, B/2] and um in [A/2, B - vmin]: other thresholds are constants
        lm_rng = (vmin if lo2 is None else lo2 - vmax, vmax if hi2 is None else Fraction(hi2, 2))
        um_rng = (vmin if lo2 is None else Fraction(lo2, 2), vmax if hi2 is None else hi2 - vmin)
        expr: dict[int, float] = {}
        const = 2 * values[0]
        g_cache: dict[int, dict[int, float]] = {}

        def two_g_minus_cnt(j: int) -> dict[int, float]:
            """Coefficients of 2*G[j] - cnt, G[j] = matching rows with value >= v_j (eqs. 5-6 style products)."""
            if j not in g_cache:
                coef: dict[int, float] = {w: -1 for w in ws}
                for s in range(n):
                    b = m.var()
                    ge = [self.x[s][col][v] for v in range(j, len(values))]
                    m.row({b: 1, ws[s]: -1}, -INF, 0, tag)
                    m.row({b: 1, **{k: -1 for k in ge}}, -INF, 0, tag)
                    m.row({b: 1, ws[s]: -1, **{k: -1 for k in ge}}, -1, INF, tag)
                    coef[b] = 2
                g_cache[j] = coef
            return g_cache[j]

        for (a, b), strict in ((lm_rng, 1), (um_rng, 0)):  # lower middle: 2G-cnt >= 1; upper: >= 0
            below = [j for j in range(1, len(values)) if values[j] <= a]
            above = [j for j in range(1, len(values)) if values[j] > b]
            if below:  # the middle value is >= v_j for these j in every solution
                m.row(two_g_minus_cnt(below[-1]), strict, INF, tag)
                const += values[below[-1]] - values[0]
            if above:  # and never reaches these
                m.row(two_g_minus_cnt(above[0]), -INF, strict - 1, tag)
            for j in range(1, len(values)):
                if a < values[j] <= b:
                    ind = m.var()
                    coef = two_g_minus_cnt(j)
                    m.row({**coef, ind: -big}, strict - big, INF, tag)
                    m.row({**coef, ind: -big}, -INF, strict - 1, tag)
                    expr[ind] = values[j] - values[j - 1]
        m.row(expr, _lo(None if lo2 is None else lo2 - const), _hi(None if hi2 is None else hi2 - const), tag)
