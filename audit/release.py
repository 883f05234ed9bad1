"""The release: every published value per geographic unit, and what it tells an attacker."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil, floor

from .query import Predicate, Statistic
from .schedule import CellDef, Protection

PUBLISHED, SUPPRESSED, EMPTY = "published", "suppressed", "empty"


def round_half_up(value: Fraction, decimals: int) -> Fraction:
    """Round to ``decimals`` places, halves towards +infinity (-2.5 -> -2): ``floor(x * 10^d + 1/2) / 10^d``.

    The values that round to ``v`` are exactly ``[v - h, v + h)`` with ``h = 10^-d / 2``, for any sign.
    """
    scale = 10 ** decimals
    return Fraction(floor(value * scale + Fraction(1, 2)), scale)


def round_to_base(value: int, base: int) -> int:
    """Round a count to the nearest multiple of ``base``, halves up."""
    return base * floor(Fraction(value, base) + Fraction(1, 2))


def decimal_text(value: Fraction, decimals: int) -> str:
    """A value with at most ``decimals`` places, written exactly (no float, no "-0.0")."""
    scaled = value * 10 ** decimals
    if scaled.denominator != 1:
        raise ValueError(f"{value} has more than {decimals} decimals")
    whole, frac = divmod(abs(scaled.numerator), 10 ** decimals)
    sign = "-" if scaled < 0 else ""
    return f"{sign}{whole}" + (f".{frac:0{decimals}d}" if decimals else "")


def int_lo(lo: Fraction | None, lo_open: bool) -> int | None:
    """The smallest integer in an interval with lower end ``lo`` (None: unbounded)."""
    if lo is None:
        return None
    return floor(lo) + 1 if lo_open and lo == floor(lo) else ceil(lo)


def int_hi(hi: Fraction | None, hi_open: bool) -> int | None:
    """The largest integer in an interval with upper end ``hi`` (None: unbounded)."""
    if hi is None:
        return None
    return ceil(hi) - 1 if hi_open and hi == ceil(hi) else floor(hi)


@dataclass(frozen=True)
class Value:
    """One published number: status is published, suppressed, or empty (a mean of no rows)."""

    cell: CellDef
    stat: Statistic
    status: str
    value: Fraction | None = None

    @property
    def key(self) -> str:
        return f"{self.cell.key}:{self.stat.name}"

    def text(self) -> str:
        if self.status == SUPPRESSED:
            return "(D)"
        if self.status == EMPTY:
            return "-"
        if self.stat.rounded:
            return decimal_text(self.value, self.stat.decimals)
        return str(int(self.value))


@dataclass(frozen=True)
class UnitRelease:
    """Everything published for one geographic unit at one level."""

    level: str
    geo: tuple[str, ...]
    values: tuple[Value, ...]
    protection: dict  # table id -> Protection


@dataclass(frozen=True)
class Constraint:
    """What the attacker knows about one statistic: it lies in [lo, hi] (None = unbounded; ends may be open)."""

    key: str
    predicate: Predicate
    statistic: Statistic
    lo: Fraction | None
    hi: Fraction | None
    lo_open: bool = False
    hi_open: bool = False

    def holds(self, value: Fraction | None) -> bool:
        if value is None:
            return False
        if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
            return False
        return not (self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi)))

    @property
    def exact(self) -> bool:
        return self.lo is not None and self.lo == self.hi and not (self.lo_open or self.hi_open)


def constraints_of(value: Value, protection: Protection) -> list[Constraint]:
    """Translate one published value into the constraint an attacker who knows the rules derives."""
    cell, stat, key = value.cell, value.stat, value.key
    count = Statistic()
    if value.status == EMPTY:
        return [Constraint(f"{cell.key}:count", cell.predicate, count, Fraction(0), Fraction(0))]
    threshold = protection.suppress_below
    # a cell is suppressed or not by its count: when the count itself is not published, its first
    # other statistic carries what the status says about it
    implied = (stat.kind != "count" and threshold is not None and stat == cell.stats[0]
               and not any(s.kind == "count" for s in cell.stats))
    if value.status == SUPPRESSED:
        upper = None
        if threshold and not protection.complementary and not cell.suppressed:
            upper = Fraction(threshold - 1)
        if stat.kind == "count":
            return [Constraint(key, cell.predicate, stat, Fraction(0), upper)]
        return [Constraint(f"{cell.key}:count", cell.predicate, count, Fraction(0), upper)] \
            if implied and upper is not None else []
    v = value.value
    published = [Constraint(f"{cell.key}:count", cell.predicate, count, Fraction(threshold), None)] if implied else []
    if stat.rounded:  # what rounds half-up to v, whatever the sign: the column's domain bounds it further
        half = Fraction(1, 2 * 10 ** stat.decimals)
        return [Constraint(key, cell.predicate, stat, v - half, v + half, lo_open=False, hi_open=True)] + published
    if stat.kind == "count" and protection.round_to and protection.round_to > 1:
        r = protection.round_to
        lo = max(0, ceil(v - Fraction(r, 2)))
        hi = ceil(v + Fraction(r, 2)) - 1
        lo_fixed = lo if protection.suppress_below is None else max(lo, protection.suppress_below)
        return [Constraint(key, cell.predicate, stat, Fraction(lo_fixed), Fraction(hi))]
    if stat.kind == "count" and protection.suppress_below and v < protection.suppress_below:
        raise AssertionError("a published count below the threshold")
    return [Constraint(key, cell.predicate, stat, v, v)] + published
