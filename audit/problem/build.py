"""Problems: what an attacker knows about one geographic unit, over compressed column domains."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from fractions import Fraction

import numpy as np

from ..errors import AuditError, InconsistentRelease
from .claims import Views
from ..specs.query import Predicate, Statistic
from ..release.constraints import SUPPRESSED, Constraint, UnitRelease, Value, constraints_of, int_hi, int_lo
from ..specs.schedule import Schedule
from ..specs.schema_types import Schema
from ..release.tabulate import median, units_of
from ..lazy import LazyModule
from ..memo import keep

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


@dataclass(frozen=True)
class Domain:
    """A column's domain as atoms: sets of codes that no published cell or edit tells apart."""

    name: str
    atoms: tuple[frozenset, ...]
    labels: tuple[str, ...]
    numeric: bool = False
    source: str = ""  # a bracket column's wide column (:attr:`~audit.specs.schema_types.Column.source`)

    def __post_init__(self):
        if len(self.atoms) != len(self.labels) or not self.atoms:
            raise ValueError(f"domain {self.name}: atoms and labels differ in length or are empty")
        if self.numeric and any(len(a) != 1 for a in self.atoms):
            raise ValueError(f"domain {self.name}: numeric atoms must be single values")

    def __len__(self) -> int:
        return len(self.atoms)

    @property
    def values(self) -> tuple[int, ...]:
        """The integer value of each atom (numeric domains only)."""
        return tuple(next(iter(a)) for a in self.atoms)

    def lookup(self) -> dict:
        return {code: i for i, atom in enumerate(self.atoms) for code in atom}


def compact_atoms(rows: np.ndarray) -> np.ndarray:
    """Rows of atom indices in the smallest unsigned type that holds them: what goes to a worker with each
    unit (a tract's 4,290 rows as the prior of each of its 423 blocks), to be read back with ``astype``."""
    kind = np.min_scalar_type(int(rows.max()) if rows.size else 0)
    return rows.astype(kind) if kind.kind == "u" else rows


def _atom_label(atom: frozenset, ordered: tuple) -> str:
    if len(atom) == 1:
        return str(next(iter(atom)))
    members = [c for c in ordered if c in atom]
    if all(isinstance(c, int) for c in members) and members[-1] - members[0] == len(members) - 1:
        return f"{members[0]}-{members[-1]}"
    return "|".join(str(c) for c in members)


def domains_for(schema: Schema, predicates: list[Predicate], numeric: set[str]) -> tuple[Domain, ...]:
    """Coarsest partition of each column that every predicate respects (partition refinement). A wide
    integer column (:attr:`~audit.specs.schema_types.Column.wide`) has none: the problem leaves it out."""
    out = []
    for col in schema.columns:
        if col.wide:
            continue
        if col.name in numeric:
            out.append(Domain(col.name, tuple(frozenset([c]) for c in col.codes),
                              tuple(str(c) for c in col.codes), True))
            continue
        # each distinct value set once: thousands of cells (SF1 with tract tables) share a few hundred
        sets = list(dict.fromkeys(v for pred in predicates for name, v in pred.clauses if name == col.name))
        signature = {c: tuple(c in values for values in sets) for c in col.codes}
        blocks: dict = {}
        for c in col.codes:
            blocks.setdefault(signature[c], []).append(c)
        atoms = tuple(frozenset(b) for b in blocks.values())
        out.append(Domain(col.name, atoms, tuple(_atom_label(a, col.codes) for a in atoms), source=col.source))
    return tuple(out)


_DOMAINS: dict = {}


def _domains_cached(schema: Schema, predicates: list[Predicate], numeric: set[str]) -> tuple[Domain, ...]:
    """:func:`domains_for`, remembered: a streamed run builds problems piece by piece with one schedule."""
    key = (tuple((c.name, c.codes, c.source) for c in schema.columns), tuple(predicates), frozenset(numeric))
    if key not in _DOMAINS:
        if len(_DOMAINS) > 64:
            _DOMAINS.clear()
        _DOMAINS[key] = domains_for(schema, predicates, numeric)
    return _DOMAINS[key]


_ATOMS: dict[int, tuple[tuple, dict]] = {}


def _atoms_of(domains: tuple[Domain, ...]) -> dict:
    """Code-level predicate -> its atom-level one under ``domains`` (one of :func:`_domains_cached`'s), kept
    across calls: a protection round rebuilds its unit's problem each round with the same cells."""
    found = _ATOMS.get(id(domains))
    if found is None or found[0] is not domains:
        if len(_ATOMS) > 64:
            _ATOMS.clear()
        found = _ATOMS[id(domains)] = (domains, {})
    return found[1]


def cell_domains(schema: Schema, cells) -> tuple[Domain, ...]:
    """The compressed domains of a level's cells: the atoms every published predicate and edit
    respects. Structural zeros publish nothing the attacker does not know, so they split no atoms."""
    live = [c for c in cells if not c.structural]
    numeric = {s.column for c in live for s in c.stats if s.column}
    return _domains_cached(schema, [c.predicate for c in live] + [e.forbid for e in schema.edits], numeric)


@dataclass(frozen=True)
class Problem:
    """One unit's reconstruction problem: rows are tuples of atom indices, one per domain."""

    level: str
    geo: tuple[str, ...]
    domains: tuple[Domain, ...]
    n_rows: tuple[int, int]
    constraints: tuple[Constraint, ...]
    edits: tuple[Predicate, ...] = ()
    truth: np.ndarray | None = field(default=None, compare=False)
    notes: tuple[str, ...] = ()
    proof: str = ""  # how the release was proved, outside this problem, to allow the true rows alone (audit.joint.with_proofs)
    proof_cells: object = field(default=None, compare=False)  # the cells behind that proof (audit.attacks.joint_trace.ProofCells)
    hidden: tuple[Constraint, ...] = ()  # suppressed sums, means and medians: unbounded, no constraint, asked for their intervals
    joint: object = field(default=None, compare=False)  # a coarser unit's open joint model (audit.attacks.joint_claims.JointSystem)
    child: str = ""  # a coupled problem's child-unit column (audit.problem.coupled): where a person is, not what
    views: Views | None = None  # a coupled problem's columns that group an attribute as one level does (after the child)
    values: tuple[Constraint, ...] = ()  # published sums, means and medians of wide columns: not in the count model (audit.attacks.values)
    uncoupled: int = 0  # claims across this coarser unit's and its children's tables left unposed (coupled problem too large): undecided

    def __post_init__(self):
        lo, hi = self.n_rows
        if not 0 <= lo <= hi:
            raise ValueError(f"bad row range {self.n_rows}")
        names = {d.name for d in self.domains}
        seen = set()  # units share their predicates: each is checked once
        for c in self.constraints + self.hidden + self.values:
            if id(c.predicate) not in seen:
                seen.add(id(c.predicate))
                if not set(c.predicate.columns) <= names:
                    raise ValueError(f"constraint {c.key} names an unknown column")

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.domains)

    @cached_property
    def sizes(self) -> tuple[int, ...]:
        """Number of atoms of each column."""
        return tuple(len(d) for d in self.domains)

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    def index(self, name: str) -> int:
        return self._positions[name]

    def row_mask(self, rows: np.ndarray, predicate: Predicate) -> np.ndarray:
        """Which rows (atom-index arrays, shape n x columns) satisfy an atom-level predicate."""
        mask = np.ones(len(rows), dtype=bool)
        for col, member in _members(self.names, self.sizes, predicate):
            mask &= member[rows[:, col]]
        return mask

    def value(self, rows: np.ndarray, constraint: Constraint) -> Fraction | None:
        """The exact value of a constraint's statistic on a candidate dataset."""
        mask = self.row_mask(rows, constraint.predicate)
        stat = constraint.statistic
        if stat.kind == "count":
            return Fraction(int(mask.sum()))
        col = self.index(stat.column)
        vals = np.asarray(self.domains[col].values, dtype=np.int64)[rows[mask, col]]
        if stat.kind == "sum":
            return Fraction(int(vals.sum()))
        if len(vals) == 0:
            return None
        return Fraction(int(vals.sum()), len(vals)) if stat.kind == "mean" else median(vals)

    def violations(self, rows: np.ndarray) -> list[str]:
        """Keys of constraints and edits the dataset breaks; empty when it reproduces the release."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, len(self.domains))
        bad = [c.key for c in self.constraints if not c.holds(self.value(rows, c))]
        bad += [f"edit:{i}" for i, e in enumerate(self.edits) if self.row_mask(rows, e).any()]
        lo, hi = self.n_rows
        if not lo <= len(rows) <= hi:
            bad.append("rows")
        return bad

    @cached_property
    def _child_column(self) -> int:
        return next((i for i, d in enumerate(self.domains) if d.name == self.child), -1) if self.child else -1

    @property
    def n_attributes(self) -> int:
        """Columns that describe the persons: every domain but a coupled problem's child-unit column and views."""
        return len(self.domains) - (self._child_column >= 0) - (len(self.views.columns) if self.views else 0)

    @cached_property
    def attributes(self) -> tuple[str, ...]:
        """The attribute each column shows: its name, or for a view the column it groups."""
        if self.views is None:
            return self.names
        return tuple(self.names[self.views.attribute(i)] for i in range(len(self.names)))

    @cached_property
    def published_columns(self) -> frozenset[int]:
        """The columns the unit's release publishes about: those a published or hidden cell selects on or
        sums (a coupled problem's child-unit column aside). A column no cell names is one value to the attacker."""
        names = {c.statistic.column for c in self.constraints + self.hidden}  # None for a count
        for predicate in {id(c.predicate): c.predicate for c in self.constraints + self.hidden}.values():
            names.update(name for name, _ in predicate.clauses)
        names.discard(None)
        return frozenset({self.index(name) for name in names} - {self._child_column})

    def full_record(self, assignment) -> bool:
        """Whether a claim covers every attribute the release publishes about (and so states a whole record
        as published): its columns' attributes, the child-unit column aside, are those of
        :attr:`published_columns` (a view column stands for the attribute it groups)."""
        published = self.published_attributes
        if len(assignment) < len(published) or not published:  # a claim fixes one column per attribute at most
            return False
        attribute = (lambda c: c) if self.views is None else self.views.attribute
        return {attribute(c) for c, _ in assignment if c != self._child_column} == published

    @cached_property
    def published_attributes(self) -> frozenset[int]:
        """The attributes of :attr:`published_columns` (a view column's is the column it groups): a claim
        narrower than these cannot state a whole record."""
        attribute = (lambda c: c) if self.views is None else self.views.attribute
        return frozenset(attribute(c) for c in self.published_columns)

    def width(self, assignment) -> int:
        """How many of a claim's columns describe the persons: a claim naming one block is that block's
        claim over its own columns, one naming none the parent's."""
        return sum(c != self._child_column for c, _ in assignment)

    def describe(self, row: np.ndarray) -> dict[str, str]:
        return {d.name: d.labels[int(v)] for d, v in zip(self.domains, row)}

    def __reduce__(self):
        # Sent to a worker per unit: constraints go as plain tuples, predicates once each (and interned
        # on arrival), which loads several times faster than the default pickle of ~800 dataclasses.
        preds: dict[Predicate, int] = {}
        rows = [[(c.key, preds.setdefault(c.predicate, len(preds)), (c.statistic.kind, c.statistic.column,
                 c.statistic.decimals), _pair(c.lo), _pair(c.hi), c.lo_open, c.hi_open, c.implied) for c in group]
                for group in (self.constraints, self.hidden, self.values)]
        specs = tuple(map(_spec, preds))
        return _restore, (self.level, self.geo, self.domains, self.n_rows, specs, rows[0], self.edits, self.truth,
                          self.notes, self.proof, self.proof_cells, rows[1], self.joint, self.child, self.views, rows[2],
                          self.uncoupled)


@lru_cache(maxsize=1 << 16)
def _members(names: tuple[str, ...], sizes: tuple[int, ...], predicate: Predicate) -> tuple:
    """Per clause of a predicate: its column and a lookup of which atoms it allows (cached: units of
    a level share their predicates, and every dataset is checked against all of them)."""
    out = []
    for name, atoms in predicate.clauses:
        member = np.zeros(sizes[names.index(name)], dtype=bool)
        member[list(atoms)] = True
        out.append((names.index(name), member))
    return tuple(out)


_SPECS: dict[Predicate, tuple] = {}  # a predicate as Problem.__reduce__ sends it: the units of a level share them


def _spec(predicate: Predicate) -> tuple:
    """``predicate``'s clauses as sorted tuples, kept: a block's ~800 predicates are the level's, block after block
    (working them out per unit was half of what sending a unit cost the parent)."""
    found = _SPECS.get(predicate)
    if found is None:
        found = keep(_SPECS, predicate, tuple((name, tuple(sorted(atoms))) for name, atoms in predicate.clauses), 1 << 16)
    return found


def _pair(value: Fraction | None) -> tuple[int, int] | None:
    return None if value is None else (value.numerator, value.denominator)


_INTERNED: dict = {}


def _interned(spec):
    """The one Predicate, Statistic or Fraction a worker keeps for a spec (units of a level share them)."""
    found = _INTERNED.get(spec)
    if found is None:
        if len(_INTERNED) > 1 << 16:
            _INTERNED.clear()
        if spec[0] == "stat":
            found = Statistic(*spec[1])
        elif spec[0] == "frac":
            found = Fraction(*spec[1])
        else:
            found = Predicate(tuple((name, frozenset(atoms)) for name, atoms in spec[1]))
        _INTERNED[spec] = found
    return found


def _fraction(pair: tuple[int, int] | None) -> Fraction | None:
    """The one Fraction a worker keeps for a (numerator, denominator) pair (:func:`_interned`): Fraction() is
    slow, and an exact count's two ends are then one object, which :attr:`Constraint.exact` tells at once."""
    return None if pair is None else _interned(("frac", pair))


def _restore(level, geo, domains, n_rows, specs, rows, edits, truth, notes, proof="", proof_cells=None,
             hidden=(), joint=None, child="", views=None, values=(), uncoupled=0) -> Problem:
    preds = [_interned(("pred", spec)) for spec in specs]
    cons, hide, wide = (tuple(Constraint(key, preds[i], _interned(("stat", stat)), _fraction(lo), _fraction(hi),
                                         lo_open, hi_open, implied)
                        for key, i, stat, lo, hi, lo_open, hi_open, implied in group) for group in (rows, hidden, values))
    return Problem(level, geo, domains, n_rows, cons, edits, truth, notes, proof, proof_cells, hide, joint, child, views,
                   wide, uncoupled)


def _to_atoms(pred: Predicate, domains: dict[str, Domain]) -> Predicate:
    """Map a code-level predicate to atom indices, dropping clauses that allow every atom."""
    clauses = {}
    for name, values in pred.clauses:
        dom = domains[name]
        atoms = frozenset(i for i, a in enumerate(dom.atoms) if a <= values)
        if len(atoms) < len(dom):
            clauses[name] = atoms
    return Predicate.of(clauses)


def _atom_level(pred: Predicate, known: dict, domains: dict[str, Domain]) -> Predicate:
    """:func:`_to_atoms`, remembered in ``known`` (see :func:`_atoms_of`)."""
    found = known.get(pred)
    if found is None:
        found = known[pred] = _to_atoms(pred, domains)
    return found


def population(cons: list[Constraint], known: int | None, where: str, children: tuple[int, int] | None = None
               ) -> tuple[tuple[int, int], tuple[str, ...]]:
    """A unit's number of rows and a note: its published exact total; else the defender's own count
    (``known``, from the microdata); else, for a published release alone, its child units' published
    totals summed (``children``), or the range of a total published as an interval (rounded or
    suppressed with a bound)."""
    totals = [c for c in cons if c.statistic.kind == "count" and not c.predicate.clauses]
    exact = [c for c in totals if c.exact]
    if exact:
        n = int(exact[0].lo)
        return (n, n), ()
    if known is not None:
        return (known, known), ("no total is published: the attacker is assumed to know the unit's population "
                                "(as when totals are held invariant)",)
    if children is not None:
        return children, (f"no total of its own is published: its child units' published totals give "
                          f"{children[0]}{'' if children[0] == children[1] else f' to {children[1]}'} rows",)
    ranges = [(max(int_lo(c.lo, c.lo_open) or 0, 0), int_hi(c.hi, c.hi_open)) for c in totals if c.hi is not None]
    if ranges:
        lo, hi = max(r[0] for r in ranges), min(r[1] for r in ranges)
        if lo > hi:
            raise InconsistentRelease(f"the published totals admit no number of records ({lo} to {hi})", where,
                                      "check the totals' published values")
        return (lo, hi), (f"the total is published as an interval: the unit has {lo} to {hi} rows",)
    raise AuditError("no total is published, so the number of records is unknown", where,
                     "publish a total (a cell with where: {}) in a table at this level, or audit the microdata")


def hidden_value(value: Value) -> list[Constraint]:
    """A suppressed sum, mean or median as an unbounded constraint (the release says nothing of it; it
    is kept apart in :attr:`Problem.hidden` for its feasibility interval)."""
    if value.status != SUPPRESSED or value.stat.kind == "count":
        return []
    return [Constraint(value.key, value.cell.predicate, value.stat, None, None)]


def build_problems(frame: pd.DataFrame | None, schema: Schema, schedule: Schedule,
                   releases: list[UnitRelease], populations: dict | None = None) -> list[Problem]:
    """One problem per published unit, holding the defender's true rows for generate-then-verify
    (``frame`` None: a published release alone, no true rows). ``populations``: geo -> (lo, hi) rows of
    units that publish no total of their own but whose child units' totals give it."""
    problems = []
    for level in (lv for lv in schedule.levels if any(r.level == lv for r in releases)):
        domains = cell_domains(schema, [c for t in schedule.tables if t.level == level for c in t.cells])
        by_name = {d.name: d for d in domains}
        lookups = [d.lookup() for d in domains]
        atoms_of = _atoms_of(domains)  # units, and rounds of a protection search, share their cells' predicates
        edits = tuple(_atom_level(e.forbid, atoms_of, by_name) for e in schema.edits)
        unit_rows = dict(units_of(frame, schema, level)) if frame is not None else {}
        # every row's atoms at once (one map per column, not per unit and column)
        atoms = (np.column_stack([frame[d.name].map(lk).to_numpy(dtype=np.int64) for d, lk in zip(domains, lookups)])
                 if frame is not None and len(frame) else np.zeros((0, len(domains)), np.int64))
        made_of: dict[tuple, list[tuple[int, Constraint]]] = {}
        wide = {c.name for c in schema.columns if c.wide}
        for unit in (r for r in releases if r.level == level):
            truth, known = None, None
            if frame is not None:
                truth = atoms[unit_rows[unit.geo]]
                known = len(truth)
            cons, hidden, values = [], [], []
            for v in unit.values:
                protection = unit.protection[v.cell.table]
                key = (v.cell.key, v.cell.suppressed, v.stat, v.status, v.value, protection)  # what constraints_of reads
                # (cell.suppressed: a cell a unit's own suppress list hides is [0, N], not the threshold's interval)
                made = made_of.get(key)
                if made is None:  # units share most published values (zeros above all): each is translated once
                    made = made_of[key] = []
                    for group, found in ((0, constraints_of(v, protection)), (1, hidden_value(v))):
                        for c in found:
                            pred = _atom_level(c.predicate, atoms_of, by_name)
                            made.append((group if c.statistic.column not in wide else 2, replace(c, predicate=pred)))
                for group, c in made:  # a hidden one unbounded (2): noted, not judged
                    (cons, hidden, values)[group].append(c)
            n_rows, notes = population(cons, known, f"unit {'/'.join(unit.geo)}", (populations or {}).get(unit.geo))
            if values:
                notes += (f"{sum(not c.unbounded for c in values)} published sum, mean and median values of {', '.join(sorted(wide))} "
                          "(too many values to enumerate) are decided through the counts of the groups they "
                          "are published for (audit.attacks.values)",)
            problems.append(Problem(level, unit.geo, domains, n_rows, tuple(cons), edits, truth, notes,
                                    hidden=tuple(hidden), values=tuple(values)))
    return problems


