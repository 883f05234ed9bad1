"""The release: every published value per geographic unit, and what it tells an attacker."""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil, floor

from ..errors import InternalError
from ..specs.query import Predicate, Statistic
from ..specs.schedule import CellDef, Protection

PUBLISHED, SUPPRESSED, EMPTY, STRUCTURAL = "published", "suppressed", "empty", "structural"


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
    if isinstance(lo, Fraction) and lo.denominator == 1:  # most ends: no Fraction arithmetic (a unit has thousands)
        return lo.numerator + 1 if lo_open else lo.numerator
    return floor(lo) + 1 if lo_open and lo == floor(lo) else ceil(lo)


def int_hi(hi: Fraction | None, hi_open: bool) -> int | None:
    """The largest integer in an interval with upper end ``hi`` (None: unbounded)."""
    if hi is None:
        return None
    if isinstance(hi, Fraction) and hi.denominator == 1:
        return hi.numerator - 1 if hi_open else hi.numerator
    return ceil(hi) - 1 if hi_open and hi == ceil(hi) else floor(hi)


@dataclass(frozen=True)
class Value:
    """One published number: status is published, suppressed, empty (a mean of no rows), or
    structural (a cell no row can fall in: its count and sum are 0, its mean and median empty).
    ``suppression`` says why a suppressed value is hidden, where the tabulation knows: ``primary``
    (its count is below the threshold) or ``secondary`` (hidden to protect other cells: the
    complementary heuristic, or the schedule's or ``audit protect``'s list); empty otherwise."""

    cell: CellDef
    stat: Statistic
    status: str
    value: Fraction | None = None
    suppression: str = field(default="", compare=False)  # what the tabulation knew; a release read back does not

    @property
    def key(self) -> str:
        return f"{self.cell.key}:{self.stat.name}"

    def text(self) -> str:
        if self.status == SUPPRESSED:
            return "(D)"
        if self.status == EMPTY or (self.status == STRUCTURAL and self.value is None):
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
    # published sum cells: "TABLE:CELL:sum(col)" -> its contributors (audit.release.magnitude.Contributions)
    magnitude: dict = field(default_factory=dict)
    # the schedule's a-priori protection levels of this unit's cells: "TABLE:CELL" -> (lower, upper)
    levels: dict = field(default_factory=dict)


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
    # a count the attacker infers from a sum, mean or median's status (:func:`_status_count`): a table that
    # lists no counts neither publishes nor hides it, so it is no hidden cell (audit.attacks.intervals)
    implied: bool = field(default=False, compare=False)

    def holds(self, value: Fraction | None) -> bool:
        if value is None:
            return False
        if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
            return False
        return not (self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi)))

    @property
    def exact(self) -> bool:
        # one object at both ends (a published value; a worker's restored problem) needs no Fraction comparison
        return self.lo is not None and (self.lo is self.hi or self.lo == self.hi) and not (self.lo_open or self.hi_open)

    @property
    def unbounded(self) -> bool:
        """The release says nothing of it (a suppressed sum, mean or median)."""
        return self.lo is None and self.hi is None


def constraints_of(value: Value, protection: Protection) -> list[Constraint]:
    """Translate one published value into the constraint an attacker who knows the rules derives.

    A structural zero adds none: every dataset has no row in it (an empty clause, or an edit).
    """
    cell, stat, key = value.cell, value.stat, value.key
    count = Statistic()
    t = protection.suppress_below
    if value.status == STRUCTURAL:
        return []
    if value.status == EMPTY:
        return [Constraint(f"{cell.key}:count", cell.predicate, count, Fraction(0), Fraction(0))]
    if value.status == SUPPRESSED:
        if stat.kind != "count":
            return _status_count(value, protection)
        lo, hi = Fraction(0), None
        if t and not protection.complementary and not cell.suppressed:  # only primary suppression
            lo, hi = Fraction(0 if protection.protect_zeros else 1), Fraction(t - 1)
        return [Constraint(key, cell.predicate, stat, lo, hi)]
    v = value.value
    if stat.rounded:  # what rounds half-up to v, whatever the sign: the column's domain bounds it further
        half = Fraction(1, 2 * 10 ** stat.decimals)
        return [Constraint(key, cell.predicate, stat, v - half, v + half, lo_open=False, hi_open=True),
                *_status_count(value, protection)]
    if stat.kind == "count" and protection.round_to and protection.round_to > 1:
        r = protection.round_to
        lo = max(0, ceil(v - Fraction(r, 2)))
        hi = ceil(v + Fraction(r, 2)) - 1
        if t is not None and (lo > 0 or protection.protect_zeros):
            lo = max(lo, t)  # counts 1..t-1 (and 0 when protected) would have been suppressed
        elif t is not None:
            hi = 0  # counts up to r/2 round to 0, and t >= r/2 (Protection refuses the rest): they were hidden
        return [Constraint(key, cell.predicate, stat, Fraction(lo), Fraction(hi))]
    if stat.kind == "count" and t and v < t and (v > 0 or protection.protect_zeros):
        raise InternalError("a published count below the threshold")
    return [Constraint(key, cell.predicate, stat, v, v), *_status_count(value, protection)]


def pinned_count(value: Value, protection: Protection) -> int | None:
    """The count a suppressed value's own rule pins, when the rule leaves it one value (``suppress_below:
    2`` hides only 1s; ``suppress_below: 1`` with ``protect_zeros`` only 0s): the attacker reads it as
    published. None for any other value."""
    if value.status != SUPPRESSED:
        return None
    return next((int(c.lo) for c in constraints_of(value, protection) if c.statistic.kind == "count" and c.exact), None)


def pinned_counts(release: UnitRelease) -> dict[str, int]:
    """The unit's suppressed cells that their own rule pins: cell key (``TABLE:CELL``) -> the count."""
    out = {}
    for v in release.values:
        protection = release.protection.get(v.cell.table)
        n = pinned_count(v, protection) if protection is not None else None
        if n is not None:
            out[v.cell.key] = n
    return out


def _status_count(value: Value, protection: Protection) -> list[Constraint]:
    """What a sum, mean or median's status says of the cell's count when the count is not published.

    Cells are suppressed by their count, so a suppressed one (primary suppression only) has a count
    below the threshold; a published one has a count at or above it, or 0 when zeros are shown (a
    published mean or median has rows; a sum of 0 may have none, and then says nothing).
    """
    cell, stat, t = value.cell, value.stat, protection.suppress_below
    if t is None or stat.kind == "count" or any(s.kind == "count" for s in cell.stats):
        return []
    key = f"{cell.key}:count"
    if value.status == SUPPRESSED:
        if stat != cell.stats[0] or protection.complementary or cell.suppressed:
            return []
        return [Constraint(key, cell.predicate, Statistic(), Fraction(0 if protection.protect_zeros else 1),
                           Fraction(t - 1), implied=True)]
    carrier = next((s for s in cell.stats if s.rounded), cell.stats[0])  # one constraint per cell
    if stat != carrier or (not stat.rounded and value.value == 0 and not protection.protect_zeros):
        return []
    return [Constraint(key, cell.predicate, Statistic(), Fraction(t), None, implied=True)]
