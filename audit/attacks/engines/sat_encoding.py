"""The row-slot SAT encoding: one-hot rows, set membership, cardinality constraints, the lexicographic
order of the slots and the published cells (a mixin of :class:`~audit.attacks.engines.sat.SatEngine`).

A coupled problem whose child units' person counts are all published exactly is *laid out*: the
slots are split into one run per child unit (``layout[b]``: the slots of child ``b``), each slot's
child column is fixed, and a cell restricted to some children is encoded over their slots alone (a
block's zero cell: a clause per slot of the block, not per slot of the tract). Slots are
interchangeable, so ordering them by child first and lexicographically within each child is the
same symmetry breaking as the full lexicographic order with the child column first: each dataset
still has exactly one model."""
from __future__ import annotations


import numpy as np
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

    layout: tuple[range, ...] | None = None  # the slots of each child unit, when laid out
    child: int = -1  # the child column's index, when laid out

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

    def _place(self) -> None:
        """Fix each slot's child column to the child whose run holds it."""
        for b, slots in enumerate(self.layout):
            for s in slots:
                self._add([self.x[s][self.child][b]])

    def _local(self, pred: Predicate) -> tuple[range | list[int], tuple]:
        """The slots that may satisfy ``pred`` and the clauses left to check on them: when laid out, a
        clause on the child column keeps only its children's slots and is true on them."""
        if self.layout is not None:
            name = self.problem.names[self.child]
            for i, (col, atoms) in enumerate(pred.clauses):
                if col == name:
                    slots = (self.layout[next(iter(atoms))] if len(atoms) == 1 else
                             [s for b in sorted(atoms) for s in self.layout[b]])
                    return slots, pred.clauses[:i] + pred.clauses[i + 1:]
        return range(self.n), pred.clauses

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

    _columns: dict | None = None  # (column, atoms) -> literal arrays over the slots (see _set_columns)

    def _set_columns(self, c: int, atoms: frozenset) -> list | None:
        """:meth:`_in_set`'s literals for every slot at once (arrays over the slots, signed), where they are
        one-hot or order literals; None where they need a set literal (made slot by slot, in order)."""
        if self._columns is None:
            self._columns = {}
        key = (c, atoms)
        if key not in self._columns:
            a, b, d = min(atoms), max(atoms), self.sizes[c]
            if len(atoms) == 1:
                found = [np.array([self.x[s][c][a] for s in range(self.n)], dtype=np.int64)]
            elif b - a + 1 == len(atoms):
                found = ([np.array([self.o[s][c][a] for s in range(self.n)], dtype=np.int64)] if a > 0 else []) + (
                    [-np.array([self.o[s][c][b + 1] for s in range(self.n)], dtype=np.int64)] if b + 1 < d else [])
            else:
                found = None
            self._columns[key] = found
        return self._columns[key]

    def _zero_clauses(self, slots, cols: list, sel: int) -> bool:
        """A zero count's clauses, one per slot (no active row of it satisfies the cell), built at once: the
        same clauses in the same order as slot by slot. False (nothing added) where a column needs set literals."""
        lits: list = []
        for c, atoms in cols:
            found = self._set_columns(c, atoms)
            if found is None:
                return False
            lits += found
        at = np.asarray(slots, dtype=np.int64)
        if not len(at):
            return True
        if self._columns is None:  # a cell over no column (the unit's total) asked for no set literals
            self._columns = {}
        act = self._columns.get("act")
        if act is None:
            act = self._columns["act"] = np.asarray(self.act, dtype=np.int64)
        rows = np.column_stack([np.full(len(at), -sel, dtype=np.int64), -act[at]]
                               + [-lit[at] for lit in lits]).tolist()
        if self.solver is None:
            self._clauses.extend(rows)
        else:
            for clause in rows:
                self.solver.add_clause(clause)
        return True

    def matches(self, pred: Predicate) -> list[int]:
        """Per slot that may satisfy ``pred`` (see :meth:`_local`), a literal true iff the slot is an
        active row satisfying it (cached per predicate): their sum is the count of ``pred``."""
        lits = self._m_cache.get(pred)
        if lits is None:
            slots, clauses = self._local(pred)
            cols = [(self.problem.index(name), atoms) for name, atoms in clauses]
            lits = []
            for s in slots:
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
        """Literal true iff slot ``s`` is an active row satisfying ``pred`` (a false one for a slot of
        another child unit)."""
        slots, _ = self._local(pred)
        if isinstance(slots, range) and len(slots) == self.n:
            return self.matches(pred)[s]
        where = self._m_slot.get(pred)
        if where is None:
            where = self._m_slot[pred] = dict(zip(slots, self.matches(pred)))
        if s in where:
            return where[s]
        if ("false",) not in self.pool.obj2id:
            self._add([-self.pool.id(("false",))])
        return self.pool.id(("false",))

    def _edit(self, edit: Predicate) -> None:
        for s in range(self.n):
            clause = [-self.act[s]]
            for name, atoms in edit.clauses:
                c = self.problem.index(name)
                clause += [self.x[s][c][v] for v in range(self.sizes[c]) if v not in atoms]
            self._add(clause)

    def _lex(self) -> None:
        """Slot s <= slot s+1 lexicographically whenever slot s+1 is active (when laid out: within each
        child's run, over the other columns)."""
        starts = {r.start for r in self.layout} if self.layout is not None else set()
        cols = [(c, d) for c, d in enumerate(self.sizes) if c != self.child]
        for s in range(self.n - 1):
            if s + 1 in starts:
                continue
            eq = self.act[s + 1]
            for i, (c, d) in enumerate(cols):
                oa, ob = self.o[s][c], self.o[s + 1][c]
                for k in range(1, d):
                    self._add([-eq, -oa[k], ob[k]])
                if i + 1 < len(cols):
                    nxt = self.pool.id(("lexeq", s, c))
                    for v in range(d):
                        self._add([-eq, -self.x[s][c][v], -self.x[s + 1][c][v], nxt])
                    eq = nxt

    def _constraint(self, c: Constraint, sel: int) -> None:
        if c.statistic.kind == "count":
            lo, hi = integer_bounds(c, self.n)
            if hi == 0:  # most cells of a small unit: one clause per slot, no match literals
                slots, clauses = self._local(c.predicate)
                cols = [(self.problem.index(name), atoms) for name, atoms in clauses]
                if self._zero_clauses(slots, cols, sel):
                    return
                for s in slots:
                    conj = [self.act[s]] + [lit for col, atoms in cols for lit in self._in_set(s, col, atoms)]
                    self._add([-sel] + [-lit for lit in conj])
                return
            self._card(self.matches(c.predicate), lo, hi, [-sel])
        else:
            encode_numeric(self, c, [-sel])
