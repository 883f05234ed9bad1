"""Interval certificates: each exact end of a hidden cell's feasibility interval, written so that a
reviewer can re-check it in exact arithmetic without the solvers (:func:`check_unit`).

One unit's certificates are a JSON object:

* ``level``, ``geo``; ``columns``: each column's ``name``, ``atoms`` (the sets of codes that no published
  cell or edit tells apart; rows and predicates name atoms by position) and ``numeric``; ``rows``: the
  population's least and greatest size; ``edits``: the forbidden combinations, as predicates
  (``{column: [atom, ...]}``).
* ``cells``: the unit's release as the attacker reads it: per published statistic its ``key``, ``where``,
  ``stat`` (``count``, ``sum(x)``, ``mean(x)``, ``median(x)``), ``lo`` and ``hi`` (exact: an integer, an
  ``"a/b"`` string, or null for none) and ``lo_open``/``hi_open``; the suppressed sums, means and medians
  that publish nothing carry ``hidden: true``.
* ``datasets``: the witnesses, each a histogram ``[[atom, ..., count], ...]``. They are reconstructed
  records (the true rows among them), as confidential as the findings.
* ``intervals``: per hidden cell ``cell`` (its position in ``cells``) and its two ends ``lo`` and ``hi``,
  each null when not exact, else ``value``, ``dataset`` (the witness: it reproduces every published
  value and the cell takes ``value`` in it) and ``by``, why no dataset goes further:

  - ``range``: the cell's own published range, the population and its column's values stop there;
  - ``dual``: ``certificates``, each ``{box, scale, multipliers, past}``. ``multipliers`` are integers
    ``y_i`` on count cells (``[cell, y, lo, hi]``; cell null for the population, ``lo``/``hi`` the whole
    numbers the cell allows), ``box`` bounds some support rows' counts (``[[atom, ..., lo, hi], ...]``,
    hi null for none). With ``w`` the cell's indicator over the support (the rows no edit or zero
    cell forbids) for ``lo``, its negation for ``hi``, and ``d = scale * w - sum(y_i * cell_i)``, every
    histogram ``h`` of the box has ``scale * (w.h) = sum(y_i * (cell_i.h)) + d.h >= sum(y_i * (lo_i if
    y_i > 0 else hi_i)) + sum(d_j * (box lo_j if d_j > 0 else box hi_j))``, which must exceed
    ``scale * past``; ``past`` null is a Farkas ray (``w`` = 0: the box holds no dataset). The boxes
    split the histograms into parts (one empty box: the root relaxation; more: a closed branch-and-bound tree).
  - ``sat``: ``asked``, the cell's range past the end (``lo``, ``hi``, ``lo_open``, ``hi_open``), and
    ``answer: "unsat"``: the row-slot SAT solver's answer that no dataset meets it. No proof of it is kept
    and nothing here re-derives it: such an end is *solver-trusted* (its witness and question checked),
    not certified.

The file (:mod:`audit.findings.certfile`) holds a header line, one such object per unit and a seal line
that binds it to its run's findings.json and inputs.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..problem.build import Domain, Problem
from ..problem.claims import distinct_rows
from ..release.constraints import Constraint, int_hi, int_lo
from ..specs.query import Predicate, Statistic
from .implied import flat_mask, in_sets, support
from .intervals import Interval, Proof, hidden_cells, outer_range

FORMAT = 2  # 2: sealed by a last line binding the file to its run (audit/findings/certfile.py)
NOTICE = ("CONFIDENTIAL: the witness datasets are records reconstructed from the microdata (the true rows "
          "among them); handle this file as the findings.")


# -- writing ------------------------------------------------------------------------------------------
def unit_certificates(problem: Problem, intervals: dict[str, Interval]) -> dict | None:
    """One unit's certificates as a JSON object (see the module docstring); None when no end is exact."""
    if not any(p is not None for iv in intervals.values() for p in iv.proofs):
        return None
    cells = list(problem.constraints) + list(problem.hidden)
    at = {id(c): i for i, c in enumerate(cells)}
    datasets: dict[bytes, int] = {}
    seen: dict[int, int] = {}  # most ends share one dataset object (the true rows): histogram it once
    out_sets: list = []

    def dataset(rows: np.ndarray) -> int:
        if id(rows) not in seen:
            seen[id(rows)] = histogram(rows)
        return seen[id(rows)]

    def histogram(rows: np.ndarray) -> int:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, len(problem.domains))
        distinct, counts = distinct_rows(rows, problem.sizes)
        hist = np.column_stack([distinct, counts]).astype(np.int64)
        key = hist.tobytes()
        if key not in datasets:
            datasets[key] = len(out_sets)
            out_sets.append(hist.tolist())
        return datasets[key]

    def end(value, proof: Proof | None) -> dict | None:
        if proof is None:
            return None
        out = {"value": _num(value), "dataset": dataset(proof.rows), "by": proof.by}
        if proof.by == "dual":
            out["certificates"] = [{
                "box": [[*row, lo, hi] for row, lo, hi in box], "scale": scale,
                "multipliers": [[None if c is None else at[id(c)], y, lo, hi] for c, y, lo, hi in multipliers],
                "past": past} for box, scale, multipliers, past in proof.certificates]
        elif proof.by == "sat":
            a = proof.asked
            out.update(asked={"lo": _num(a.lo), "hi": _num(a.hi), "lo_open": a.lo_open, "hi_open": a.hi_open},
                       answer="unsat")
        return out

    hidden = hidden_cells(problem)
    intervals_out = {key: {"cell": at[id(hidden[key])], "lo": end(iv.lo, iv.proofs[0]), "hi": end(iv.hi, iv.proofs[1])}
                     for key, iv in intervals.items()}
    return {
        "level": problem.level, "geo": "/".join(problem.geo),
        "columns": [{"name": d.name, "atoms": [sorted(map(_code, a), key=str) for a in d.atoms], "numeric": d.numeric}
                    for d in problem.domains],
        "rows": list(problem.n_rows),
        "edits": [_where(e) for e in problem.edits],
        "cells": [_cell(c) | ({"hidden": True} if i >= len(problem.constraints) else {}) for i, c in enumerate(cells)],
        "datasets": out_sets, "intervals": intervals_out,
    }


def _code(code) -> int | str:
    return int(code) if isinstance(code, (int, np.integer)) else str(code)


def _num(v) -> int | str | None:
    if v is None:
        return None
    v = Fraction(v)
    return v.numerator if v.denominator == 1 else str(v)


def _where(p: Predicate) -> dict:
    return {name: sorted(int(a) for a in atoms) for name, atoms in p.clauses}


def _cell(c: Constraint) -> dict:
    return {"key": c.key, "where": _where(c.predicate), "stat": c.statistic.name, "lo": _num(c.lo), "hi": _num(c.hi),
            "lo_open": c.lo_open, "hi_open": c.hi_open}


# -- checking -----------------------------------------------------------------------------------------
def problem_of(doc: dict) -> Problem:
    """The unit's release as a :class:`Problem` (no rows): what the witnesses must reproduce."""
    domains = tuple(Domain(c["name"], tuple(frozenset(a) for a in c["atoms"]),
                           tuple("|".join(map(str, a)) for a in c["atoms"]), bool(c["numeric"])) for c in doc["columns"])
    cells = [(Constraint(c["key"], _predicate(c["where"]), Statistic.parse(c["stat"]), as_fraction(c["lo"]), as_fraction(c["hi"]),
                         bool(c["lo_open"]), bool(c["hi_open"])), bool(c.get("hidden"))) for c in doc["cells"]]
    lo, hi = doc["rows"]
    return Problem(doc["level"], tuple(str(doc["geo"]).split("/")), domains, (int(lo), int(hi)),
                   tuple(c for c, h in cells if not h), tuple(_predicate(e) for e in doc["edits"]),
                   hidden=tuple(c for c, h in cells if h))


def _predicate(where: dict) -> Predicate:
    return Predicate.of({str(k): frozenset(int(a) for a in v) for k, v in where.items()})


def as_fraction(v) -> Fraction | None:
    """A certificate's number (an int or a "p/q" string) as an exact fraction; None stays None."""
    return None if v is None else Fraction(v)


@dataclass(frozen=True)
class UnitCheck:
    """One unit's certificates re-checked (:func:`check_unit`): ``failures`` (``KEY:lo``/``KEY:hi`` -> what
    is wrong), ``solver`` (the ends resting on a SAT solver's answer: witness checked, unsat not),
    ``checked`` (the ends re-checked in full) and ``reached`` (each interval's key -> the values its cell
    takes in the datasets of the file that reproduce the release: none may lie outside the interval)."""

    failures: dict
    solver: tuple
    checked: tuple
    reached: dict
    proved: dict | None = None  # with proofs checked: each of ``solver`` -> "" (its proof verified) or why not

    def __post_init__(self):
        if set(self.failures) & (set(self.solver) | set(self.checked)):
            raise ValueError("an end both failing and holding")


def check_unit(doc: dict) -> UnitCheck:
    """Re-check one unit's certificates in exact arithmetic."""
    problem = problem_of(doc)
    cells = list(problem.constraints) + list(problem.hidden)
    witnesses = [_rows(problem, h) for h in doc["datasets"]]
    bad = [None if rows is None else problem.violations(rows) for rows in witnesses]
    valid = [rows for rows, why in zip(witnesses, bad) if rows is not None and not why]
    space = _Support(problem)
    failures, solver, checked, reached = {}, [], [], {}
    for key, entry in doc["intervals"].items():
        c = cells[int(entry["cell"])]
        reached[key] = [v for v in (problem.value(rows, c) for rows in valid) if v is not None]
        for side, sense in (("lo", 1), ("hi", -1)):
            end = entry[side]
            if end is None:
                continue
            name = f"{key}:{side}"
            try:
                why = _check_end(problem, c, sense, end, witnesses, bad, space)
            except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as exc:
                why = f"malformed entry ({exc.__class__.__name__}: {exc})"
            if why:
                failures[name] = why
            else:
                (solver if end["by"] == "sat" else checked).append(name)
    return UnitCheck(failures, tuple(solver), tuple(checked), reached)


def _rows(problem: Problem, hist) -> np.ndarray | None:
    """A histogram's rows (atom indices), or None when it names no dataset of the unit's columns."""
    hist = np.asarray(hist, dtype=np.int64).reshape(-1, len(problem.domains) + 1)
    rows, counts = hist[:, :-1], hist[:, -1]
    if (counts < 0).any() or (rows < 0).any() or (rows >= np.array(problem.sizes)).any():
        return None
    return np.repeat(rows, counts, axis=0)


def _check_end(problem: Problem, c: Constraint, sense: int, end: dict, witnesses, bad, space: "_Support") -> str:
    value = Fraction(end["value"])
    k = int(end["dataset"])
    if witnesses[k] is None:
        return f"dataset {k} is not a histogram over the unit's atoms"
    if bad[k]:
        return f"dataset {k} does not reproduce the release ({', '.join(bad[k][:3])})"
    if problem.value(witnesses[k], c) != value:
        return f"dataset {k} gives the cell {problem.value(witnesses[k], c)}, not {value}"
    lo, hi = outer_range(problem, c)
    if end["by"] == "range":
        return "" if sense * (lo if sense == 1 else hi) >= sense * value else "the published range does not stop there"
    if end["by"] == "sat":
        if end.get("answer") != "unsat":
            return "a solver end without an unsat answer"
        return "" if _covers_past(c, sense, value, end["asked"], lo, hi) else "the solver was not asked for every value past the end"
    if end["by"] != "dual":
        return f"unknown proof {end['by']!r}"
    if c.statistic.kind != "count":
        return "a dual certificate for a statistic other than a count"
    return space.proves(c, sense, int(value), end["certificates"])


def _covers_past(c: Constraint, sense: int, value: Fraction, asked: dict, lo: Fraction, hi: Fraction) -> bool:
    """Whether ``asked`` holds every value of the cell past ``value`` (up to the cell's outer range)."""
    whole = c.statistic.kind in ("count", "sum")
    a_lo, a_hi = as_fraction(asked["lo"]), as_fraction(asked["hi"])
    near, near_open, far, far_open, edge = ((a_lo, asked["lo_open"], a_hi, asked["hi_open"], hi) if sense == -1
                                            else (a_hi, asked["hi_open"], a_lo, asked["lo_open"], lo))
    step = -sense  # towards the values past the end
    starts = (near is None or step * near < step * value or (near == value and near_open)
              or (whole and not near_open and step * near <= step * value + 1))
    return starts and (far is None or step * far > step * edge or (far == edge and not far_open))


class _Support:
    """The support (rows no edit or zero count cell forbids) and count cells over it, built when a
    dual certificate first needs them."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.rows = None

    def _build(self) -> str:
        p = self.problem
        self.bounds = np.cumsum((0,) + p.sizes)
        zero = [c.predicate for c in p.constraints if c.statistic.kind == "count" and c.hi is not None
                and int_hi(c.hi, c.hi_open) <= 0]
        zero += [Predicate(())] if p.n_rows[1] <= 0 else []
        killers = np.array([flat_mask(p, e) for e in list(p.edits) + zero], dtype=np.int64).reshape(-1, self.bounds[-1])
        self.rows = support(killers, self.bounds)
        if self.rows is None:
            return "the support is too large to check"
        self.index = {row: j for j, row in enumerate(map(tuple, self.rows.tolist()))}
        return ""

    def member(self, predicate: Predicate) -> np.ndarray:
        return in_sets(self.rows, flat_mask(self.problem, predicate)[None], self.bounds)[:, 0].astype(np.int64)

    def bounds_of(self, cell: Constraint | None) -> tuple[int, int | None]:
        """The whole numbers a count cell (None: the population) allows, as the certificates use them."""
        if cell is None:
            lo, hi = self.problem.n_rows
            return (lo, hi) if lo == hi else (0, None)
        return int_lo(cell.lo, cell.lo_open) or 0, None if cell.hi is None else int_hi(cell.hi, cell.hi_open)

    def proves(self, c: Constraint, sense: int, value: int, certificates: list) -> str:
        """Why the certificates fail to prove that no dataset has ``sense * count < sense * value``; "" when they prove it."""
        if self.rows is None and (why := self._build()):
            return why
        w = sense * self.member(c.predicate)
        cells = self.problem.constraints
        boxes = []
        for i, cert in enumerate(certificates):
            scale, past = int(cert["scale"]), cert["past"]
            if scale <= 0:
                return f"certificate {i}: scale {scale} is not positive"
            if past is not None and int(past) < sense * value - 1:
                return f"certificate {i} proves less than the end"
            d = (scale * w if past is not None else np.zeros(len(self.rows), dtype=np.int64)).astype(object)
            low = 0
            for ref, y, lo, hi in cert["multipliers"]:
                cell = None if ref is None else cells[int(ref)]
                if cell is not None and cell.statistic.kind != "count":
                    return f"certificate {i}: cell {cell.key} is not a count"
                b_lo, b_hi = self.bounds_of(cell)
                if (lo, hi) != (b_lo, b_hi):
                    return f"certificate {i}: bounds [{lo}, {hi}] of {'the population' if cell is None else cell.key} are not the release's"
                y = int(y)
                if y < 0 and b_hi is None:
                    return f"certificate {i}: a negative multiplier on an unbounded cell"
                d = d - y * self.member(Predicate(()) if cell is None else cell.predicate).astype(object)
                low += y * (b_lo if y > 0 else b_hi)
            box = {}
            for entry in cert["box"]:
                j = self.index.get(tuple(int(a) for a in entry[:-2]))
                if j is None:
                    return f"certificate {i}: a box row off the support"
                box[j] = (int(entry[-2]), None if entry[-1] is None else int(entry[-1]))
            if any(d[j] < 0 and box.get(j, (0, None))[1] is None for j in np.flatnonzero(d < 0).tolist()):
                return f"certificate {i}: a row the multipliers over-count is unbounded"
            low += sum(d[j] * (lo if d[j] > 0 else hi) for j, (lo, hi) in box.items() if d[j] != 0)
            if low <= scale * (0 if past is None else int(past)):
                return f"certificate {i} does not prove its bound"
            boxes.append({j: b for j, b in box.items() if b != (0, None)})
        return "" if boxes and _partition({}, boxes) else "the certificates' boxes do not cover every dataset"


def _partition(region: dict, boxes: list[dict]) -> bool:
    """Whether ``boxes`` (``{row: (lo, hi)}``, hi None for none) split ``region`` into parts by cuts
    ``h_j <= f`` / ``h_j >= f + 1``, as a branch-and-bound tree does."""
    if len(boxes) == 1:
        return boxes[0] == region
    cuts = set()
    for b in boxes:
        for j, (lo, hi) in b.items():
            r_lo, r_hi = region.get(j, (0, None))
            if lo > r_lo:
                cuts.add((j, lo - 1))
            if hi is not None and (r_hi is None or hi < r_hi):
                cuts.add((j, hi))
    for j, f in sorted(cuts):
        down = [b for b in boxes if b.get(j, (0, None))[1] is not None and b[j][1] <= f]
        up = [b for b in boxes if b.get(j, (0, None))[0] >= f + 1]
        if down and up and len(down) + len(up) == len(boxes):
            r_lo, r_hi = region.get(j, (0, None))
            below, above = {**region, j: (r_lo, f)}, {**region, j: (f + 1, r_hi)}
            return (_partition({k: v for k, v in below.items() if v != (0, None)}, down)
                    and _partition({k: v for k, v in above.items() if v != (0, None)}, up))
    return False
