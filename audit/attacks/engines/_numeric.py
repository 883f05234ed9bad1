"""Numeric cells (sum, mean, median of an integer column) for the SAT engine.

Encoding (chosen by measurement, see ``bench/ip_vs_sat.py`` and the README):

* **Count of the subgroup**: a totalizer over the slots' match literals, with both directions, so
  that ``C[k]`` ("at least k matching rows") can be used positively and negatively. Every
  statistic whose meaning depends on the subgroup's size is split on ``count == k``
  (``C[k] and not C[k+1]``); a case costs one clause, and the count itself may be unknown
  (suppressed) or fixed by a published count.
* **Sum and mean**: binary adders. Each slot's value (shifted by the column minimum) is written
  in binary once per slot and column (``OR`` of its one-hot atoms, shared between cells), gated by
  the slot's match literal, and summed with a balanced tree of ripple-carry adders; interval bounds
  become comparator clauses against constants, one family per count case: a mean in ``[lo, hi)``
  with ``k`` rows is a sum in ``[lo*k, hi*k)``. Unary sums (totalizers, sequential weight counters)
  propagate better but grow with the square of the value range: an age column (0..125) over 7 rows
  needs ~10^5-10^6 clauses per cell, against ~10^3 for the adders; both solve the 7-person block,
  the adders 10-30x faster end to end.
* **Median**: order statistics without sorting. With ``k`` matching rows and ``G[j]`` of them
  having value ``>= v_j`` (a totalizer per threshold over match literals that conjoin the order
  literal ``o[s][c][j]``), the lower middle value ``lm`` (0-based index ``(k-1)//2``) and the upper
  one ``um`` (index ``k//2``) satisfy ``lm >= v_j  iff  2*G[j] >= k+1`` and ``um >= v_j  iff
  2*G[j] >= k``. The median is ``(lm+um)/2``, so an interval on it bounds ``lm+um``, written as
  "``lm < v_{j+1}`` implies ``um >= A - v_j``" and "``lm >= v_j`` implies ``um <= B - v_j``" for
  each ``j``. Odd and even counts are the same formula (for odd ``k`` the two conditions coincide).

Clauses that restrict datasets carry the cell's ``guard``; so do the definitions local to the cell.
The per-slot value bits are pure definitions (a function of the one-hot literals, like
``SatEngine.match``) shared between cells and left unguarded: they never exclude a dataset.
"""
from __future__ import annotations


from ...specs.query import Predicate
from ...release.constraints import Constraint, int_hi as _int_hi, int_lo as _int_lo


# -- small building blocks ------------------------------------------------------------------------
def _fresh(engine) -> int:
    return engine.pool.id()


def totalizer(engine, lits: list[int], guard: list[int], limit: int | None = None) -> list[int]:
    """Unary count of ``lits``: ``out[r-1]`` true iff at least ``r`` are true, for r up to ``limit``."""
    lits = list(lits)
    limit = len(lits) if limit is None else min(limit, len(lits))
    if len(lits) <= 1:
        return lits[:limit]
    mid = len(lits) // 2
    a, b = totalizer(engine, lits[:mid], guard, limit), totalizer(engine, lits[mid:], guard, limit)
    out = [_fresh(engine) for _ in range(min(len(a) + len(b), limit))]
    for i in range(len(a) + 1):
        for j in range(len(b) + 1):
            # a >= i and b >= j  ->  out >= i+j
            if 1 <= i + j <= len(out):
                engine._add(guard + ([-a[i - 1]] if i else []) + ([-b[j - 1]] if j else []) + [out[i + j - 1]])
            # a <= i and b <= j  ->  out <= i+j   (i.e. not out >= i+j+1); a, b clipped at the limit too
            if i + j < len(out):
                engine._add(guard + ([a[i]] if i < len(a) else []) + ([b[j]] if j < len(b) else [])
                            + [-out[i + j]])
    return out


def _xor3(engine, x, y, z, guard):
    """s <-> x xor y xor z and c <-> maj(x, y, z); ``None`` is constant false."""
    ins = [v for v in (x, y, z) if v is not None]
    if not ins:
        return None, None
    if len(ins) == 1:
        return ins[0], None
    s, c = _fresh(engine), _fresh(engine)
    if len(ins) == 2:
        p, q = ins
        for cl in ([-p, -q, -s], [p, q, -s], [p, -q, s], [-p, q, s],
                   [-p, -q, c], [p, -c], [q, -c]):
            engine._add(guard + cl)
        return s, c
    p, q, r = ins
    for cl in ([-p, -q, -r, s], [-p, q, r, s], [p, -q, r, s], [p, q, -r, s],
               [p, q, r, -s], [p, -q, -r, -s], [-p, q, -r, -s], [-p, -q, r, -s],
               [-p, -q, c], [-p, -r, c], [-q, -r, c], [p, q, -c], [p, r, -c], [q, r, -c]):
        engine._add(guard + cl)
    return s, c


def add_bits(engine, a: list, b: list, guard: list[int]) -> list:
    """Binary sum (little-endian lists of literals or None) with a ripple-carry adder."""
    out, carry = [], None
    for i in range(max(len(a), len(b))):
        s, carry = _xor3(engine, a[i] if i < len(a) else None, b[i] if i < len(b) else None, carry, guard)
        out.append(s)
    if carry is not None:
        out.append(carry)
    return out


def sum_bits(engine, numbers: list[list], guard: list[int]) -> list:
    """Balanced adder tree over binary numbers."""
    numbers = [n for n in numbers if any(v is not None for v in n)]
    if not numbers:
        return []
    while len(numbers) > 1:
        nxt = [add_bits(engine, numbers[i], numbers[i + 1], guard) for i in range(0, len(numbers) - 1, 2)]
        if len(numbers) % 2:
            nxt.append(numbers[-1])
        numbers = nxt
    return numbers[0]


def _max_value(bits: list) -> int:
    return sum(1 << i for i, v in enumerate(bits) if v is not None)


def _agree_above(bits: list, bound: int, i: int, width: int) -> list[int] | None:
    """Literals falsified exactly when ``bits`` agree with ``bound`` on every position above ``i``;
    None when they never can (a missing bit where the bound has a 1)."""
    out = []
    for j in range(i + 1, width):
        bj = bits[j] if j < len(bits) else None
        if (bound >> j) & 1:
            if bj is None:
                return None
            out.append(-bj)
        elif bj is not None:
            out.append(bj)
    return out


def ge_const(engine, bits: list, bound: int, prefix: list[int]) -> None:
    """Clauses ``prefix or (bits >= bound)``."""
    if bound <= 0:
        return
    if bound > _max_value(bits):
        engine._add(list(prefix))
        return
    width = max(len(bits), bound.bit_length())
    for i in range(width):
        if not (bound >> i) & 1:
            continue
        # forbid: bits agree with bound above i, and bit i is 0 while bound's bit i is 1
        above = _agree_above(bits, bound, i, width)
        if above is not None:  # else this prefix can never agree with the bound: nothing to forbid
            bit = bits[i] if i < len(bits) else None
            engine._add(list(prefix) + ([bit] if bit is not None else []) + above)


def le_const(engine, bits: list, bound: int, prefix: list[int]) -> None:
    """Clauses ``prefix or (bits <= bound)``."""
    if bound < 0:
        engine._add(list(prefix))
        return
    if bound >= _max_value(bits):
        return
    for i in range(len(bits)):
        if (bound >> i) & 1 or bits[i] is None:
            continue
        # forbid: bits agree with bound above i, and bit i is 1 while bound's bit i is 0
        above = _agree_above(bits, bound, i, len(bits))
        if above is not None:  # else a 0 bit where the bound has 1: already below the bound
            engine._add(list(prefix) + [-bits[i]] + above)


# -- per-cell structures --------------------------------------------------------------------------
def _value_bits(engine, s: int, c: int) -> list:
    """Binary value of slot ``s`` in numeric column ``c``, shifted by the column minimum (shared)."""
    cache = engine.__dict__.setdefault("_value_bits", {})
    if (s, c) not in cache:
        values = engine.problem.domains[c].values
        base = min(values)
        shifted = [v - base for v in values]
        width = max(shifted).bit_length()
        bits = []
        for b in range(width):
            members = [engine.x[s][c][k] for k, u in enumerate(shifted) if (u >> b) & 1]
            if not members:
                bits.append(None)
                continue
            y = _fresh(engine)
            for lit in members:
                engine._add([-lit, y])
            engine._add([-y] + members)
            bits.append(y)
        cache[(s, c)] = bits
    return cache[(s, c)]


def _count_lits(engine, pred: Predicate, guard: list[int]) -> list[int]:
    """Unary count of the rows matching ``pred`` (cached per predicate and guard)."""
    cache = engine.__dict__.setdefault("_numeric_counts", {})
    key = (pred, tuple(guard))
    if key not in cache:
        cache[key] = totalizer(engine, [engine.match(s, pred) for s in range(engine.n)], guard)
    return cache[key]


def _case_prefix(counts: list[int], k: int) -> list[int]:
    """Literals whose disjunction is false exactly when the count equals ``k``."""
    out = []
    if k >= 1:
        out.append(-counts[k - 1])
    if k < len(counts):
        out.append(counts[k])
    return out


def _case_range(engine, c: Constraint) -> range:
    return range(0, engine.n + 1)


def _encode_sum_mean(engine, c: Constraint, guard: list[int]) -> None:
    stat = c.statistic
    col = engine.problem.index(stat.column)
    base = min(engine.problem.domains[col].values)
    slot_numbers = []
    for s in range(engine.n):
        m = engine.match(s, c.predicate)
        gated = []
        for y in _value_bits(engine, s, col):
            if y is None:
                gated.append(None)
                continue
            g = _fresh(engine)
            engine._add(guard + [-g, m])
            engine._add(guard + [-g, y])
            engine._add(guard + [g, -m, -y])
            gated.append(g)
        slot_numbers.append(gated)
    total = sum_bits(engine, slot_numbers, guard)  # sum of (value - base) over matching rows
    if stat.kind == "sum" and base == 0:
        lo, hi = _int_lo(c.lo, c.lo_open), _int_hi(c.hi, c.hi_open)
        if lo is not None:
            ge_const(engine, total, lo, guard)
        if hi is not None:
            le_const(engine, total, hi, guard)
        return
    counts = _count_lits(engine, c.predicate, guard)
    for k in _case_range(engine, c):
        prefix = guard + _case_prefix(counts, k)
        if stat.kind == "mean":
            if k == 0:  # a published mean needs rows
                engine._add(prefix)
                continue
            lo = _int_lo(None if c.lo is None else c.lo * k, c.lo_open)
            hi = _int_hi(None if c.hi is None else c.hi * k, c.hi_open)
        else:
            lo, hi = _int_lo(c.lo, c.lo_open), _int_hi(c.hi, c.hi_open)
        if lo is not None:
            ge_const(engine, total, lo - base * k, prefix)
        if hi is not None:
            le_const(engine, total, hi - base * k, prefix)


def _threshold_counts(engine, pred: Predicate, col: int, j: int, guard: list[int], limit: int) -> list[int]:
    """Unary count of rows matching ``pred`` whose atom index in ``col`` is >= ``j``."""
    name = engine.problem.names[col]
    size = engine.sizes[col]
    allowed = pred.as_dict().get(name, frozenset(range(size)))
    atoms = frozenset(a for a in allowed if a >= j)
    cache = engine.__dict__.setdefault("_numeric_counts", {})
    if not atoms:
        return []
    sub = pred.conjoin(Predicate.of({name: atoms})) if len(atoms) < size else pred
    key = (sub, tuple(guard), limit)
    if key not in cache:
        cache[key] = totalizer(engine, [engine.match(s, sub) for s in range(engine.n)], guard, limit)
    return cache[key]


def _encode_median(engine, c: Constraint, guard: list[int]) -> None:
    col = engine.problem.index(c.statistic.column)
    values = engine.problem.domains[col].values
    d = len(values)
    lo2 = _int_lo(None if c.lo is None else 2 * c.lo, c.lo_open)  # bounds on lm + um
    hi2 = _int_hi(None if c.hi is None else 2 * c.hi, c.hi_open)
    counts = _count_lits(engine, c.predicate, guard)
    # the atoms a matching row can take: thresholds outside them are decided by the count alone
    allowed = sorted(c.predicate.as_dict().get(c.statistic.column, frozenset(range(d))))
    limit = (engine.n + 2) // 2  # the largest count a threshold is compared with
    g: dict[int, list[int]] = {}

    def at_least(j: int, need: int):
        """Literal for 'at least ``need`` matching rows have value >= v_j'; True / False when constant."""
        if j <= allowed[0]:
            return True  # every matching row has value >= v_j, and need <= count
        if j > allowed[-1]:
            return False
        if j not in g:
            g[j] = _threshold_counts(engine, c.predicate, col, j, guard, limit)
        return g[j][need - 1] if need <= len(g[j]) else False

    def neg(p):
        return (not p) if isinstance(p, bool) else -p

    for k in _case_range(engine, c):
        prefix = guard + _case_prefix(counts, k)
        if k == 0:  # a published median needs rows
            engine._add(prefix)
            continue
        need_l, need_u = (k + 2) // 2, (k + 1) // 2  # lm >= v_j iff G_j >= ceil((k+1)/2); um: ceil(k/2)

        def lm_ge(j):
            return True if j <= 0 else (False if j >= d else at_least(j, need_l))

        def um_ge(j):
            return True if j <= 0 else (False if j >= d else at_least(j, need_u))

        def clause(*parts):
            out = list(prefix)
            for p in parts:
                if p is True:
                    return
                if p is not False:
                    out.append(p)
            engine._add(out)

        first = lambda pred: next((i for i in range(d) if pred(values[i])), d)  # noqa: E731
        if lo2 is not None:
            clause(um_ge(first(lambda v: 2 * v >= lo2)))  # um >= A/2 (as lm <= um)
            for j in range(allowed[0], allowed[-1] + 1):
                if 2 * values[j] >= lo2:
                    break  # from here um >= lm >= A - lm already
                # lm <= v_j (not lm >= v_{j+1})  ->  um >= A - v_j
                clause(lm_ge(j + 1), um_ge(first(lambda v: v >= lo2 - values[j])))
        if hi2 is not None:
            clause(neg(lm_ge(first(lambda v: 2 * v > hi2))))  # lm <= B/2
            for j in range(allowed[0], allowed[-1] + 1):
                if 2 * values[j] > hi2:
                    break
                # lm >= v_j  ->  um <= B - v_j  (not um >= the first value above it)
                clause(neg(lm_ge(j)), neg(um_ge(first(lambda v: v > hi2 - values[j]))))


def encode_numeric(engine, constraint: Constraint, guard: list[int]) -> None:
    """Add a sum, mean or median constraint to a :class:`~audit.attacks.engines.sat.SatEngine`."""
    kind = constraint.statistic.kind
    col = engine.problem.index(constraint.statistic.column)
    if not engine.problem.domains[col].numeric:
        raise ValueError(f"{constraint.key}: {kind} needs an integer column")
    if kind in ("sum", "mean"):
        _encode_sum_mean(engine, constraint, guard)
    elif kind == "median":
        _encode_median(engine, constraint, guard)
    else:
        raise ValueError(f"not a numeric statistic: {kind}")
