"""The row-slot SAT encoding: one-hot rows, set membership, cardinality constraints, the lexicographic
order of the slots and the published cells (a mixin of :class:`~audit.attacks.engines.sat.SatEngine`)."""
from __future__ import annotations


from pysat.card import CardEnc, EncType

from ...specs.query import Predicate
from ...release.constraints import Constraint, int_hi, int_lo
from ._numeric import encode_numeric

DEFAULT_SOLVER = "cadical195"
FIRST_SLICE = 1_000  # conflicts of a call's first slice when a deadline is set


def integer_bounds(c: Constraint, n: int) -> tuple[int, int]:
    """Inclusive integer bounds of a count's interval, clipped below at 0 (for counts only: a sum may be negative)."""
    lo, hi = int_lo(c.lo, c.lo_open), int_hi(c.hi, c.hi_open)
    return max(lo or 0, 0), n if hi is None else hi


class SatEncoding:
    """Clause building for :class:`~audit.attacks.engines.sat.SatEngine`: clauses go to ``self.solver``
    once it exists, else to ``self._clauses`` (the formula being built)."""

    def _add(self, clause: list[int]) -> None:
        if self.solver is None:
            self._clauses.append(clause)
        else:
            self.solver.add_clause(clause)

    def _card(self, lits: list[int], lo: int, hi: int, guard: list[int]) -> None:
        """lo <= sum(lits) <= hi, every clause extended by ``guard`` (negated activation literals)."""
        n = len(lits)
        if lo > n or hi < 0 or lo > hi:
            self._add(list(guard))
            return
        if lo > 0:
            if lo == n:
                for lit in lits:
                    self._add(guard + [lit])
            elif lo == 1:
                self._add(guard + list(lits))
            else:
                for cl in CardEnc.atleast(lits, bound=lo, vpool=self.pool, encoding=EncType.seqcounter).clauses:
                    self._add(guard + cl)
        if hi < n:
            if hi == 0:
                for lit in lits:
                    self._add(guard + [-lit])
            else:
                for cl in CardEnc.atmost(lits, bound=hi, vpool=self.pool, encoding=EncType.seqcounter).clauses:
                    self._add(guard + cl)

    def _rows(self) -> None:
        lo, hi = self.problem.n_rows
        for s in range(self.n):
            act = self.act[s]
            if s < lo:
                self._add([act])
            if s + 1 < self.n:
                self._add([-self.act[s + 1], act])
            for c, d in enumerate(self.sizes):
                xs, os = self.x[s][c], self.o[s][c]
                self._add([-act] + xs)
                if d <= 6:
                    for i in range(d):
                        for j in range(i + 1, d):
                            self._add([-xs[i], -xs[j]])
                else:
                    for cl in CardEnc.atmost(xs, bound=1, vpool=self.pool, encoding=EncType.ladder).clauses:
                        self._add(cl)
                if lo < hi:
                    for v in xs:
                        self._add([act, -v])
                for k in range(d - 1, 0, -1):  # o[k] <-> x[k] or o[k+1]
                    self._add([-xs[k], os[k]])
                    if k + 1 < d:
                        self._add([-os[k + 1], os[k]])
                        self._add([-os[k], xs[k], os[k + 1]])
                    else:
                        self._add([-os[k], xs[k]])

    def _in_set(self, s: int, c: int, atoms: frozenset) -> list[int]:
        """Literals whose conjunction says slot ``s`` has an atom of ``atoms`` in column ``c`` (if active)."""
        if len(atoms) == 1:
            return [self.x[s][c][next(iter(atoms))]]
        a, b, d = min(atoms), max(atoms), self.sizes[c]
        if b - a + 1 == len(atoms):  # a contiguous range: order literals
            return ([self.o[s][c][a]] if a > 0 else []) + ([-self.o[s][c][b + 1]] if b + 1 < d else [])
        key = (s, c, atoms)
        if key not in self._y_cache:
            y = self.pool.id(("y",) + key)
            members = [self.x[s][c][v] for v in sorted(atoms)]
            for v in members:
                self._add([-v, y])
            self._add([-y] + members)
            self._y_cache[key] = y
        return [self._y_cache[key]]

    def matches(self, pred: Predicate) -> list[int]:
        """Per slot, a literal true iff the slot is an active row satisfying ``pred`` (cached per predicate)."""
        lits = self._m_cache.get(pred)
        if lits is None:
            cols = [(self.problem.index(name), atoms) for name, atoms in pred.clauses]
            lits = []
            for s in range(self.n):
                conj = [self.act[s]]
                for c, atoms in cols:
                    conj += self._in_set(s, c, atoms)
                if len(conj) == 1:
                    lits.append(conj[0])
                    continue
                m = self.pool.id()
                for lit in conj:
                    self._add([-m, lit])
                self._add([m] + [-lit for lit in conj])
                lits.append(m)
            self._m_cache[pred] = lits
        return lits

    def match(self, s: int, pred: Predicate) -> int:
        """Literal true iff slot ``s`` is an active row satisfying ``pred``."""
        return self.matches(pred)[s]

    def _edit(self, edit: Predicate) -> None:
        for s in range(self.n):
            clause = [-self.act[s]]
            for name, atoms in edit.clauses:
                c = self.problem.index(name)
                clause += [self.x[s][c][v] for v in range(self.sizes[c]) if v not in atoms]
            self._add(clause)

    def _lex(self) -> None:
        """Slot s <= slot s+1 lexicographically whenever slot s+1 is active."""
        for s in range(self.n - 1):
            eq = self.act[s + 1]
            for c, d in enumerate(self.sizes):
                oa, ob = self.o[s][c], self.o[s + 1][c]
                for k in range(1, d):
                    self._add([-eq, -oa[k], ob[k]])
                if c + 1 < len(self.sizes):
                    nxt = self.pool.id(("lexeq", s, c))
                    for v in range(d):
                        self._add([-eq, -self.x[s][c][v], -self.x[s + 1][c][v], nxt])
                    eq = nxt

    def _constraint(self, c: Constraint, sel: int) -> None:
        if c.statistic.kind == "count":
            lo, hi = integer_bounds(c, self.n)
            if hi == 0:  # most cells of a small unit: one clause per slot, no match literals
                cols = [(self.problem.index(name), atoms) for name, atoms in c.predicate.clauses]
                for s in range(self.n):
                    conj = [self.act[s]] + [lit for col, atoms in cols for lit in self._in_set(s, col, atoms)]
                    self._add([-sel] + [-lit for lit in conj])
                return
            self._card(self.matches(c.predicate), lo, hi, [-sel])
        else:
            encode_numeric(self, c, [-sel])
