"""The protection search's shortcuts (issue 32) decide what the row-slot engine decides."""
from __future__ import annotations

import itertools
from pathlib import Path

from audit.attacks.exact import ExactOptions, _decided, make_engine
from audit.attacks.engines.histogram import HistogramEngine
from audit.attacks.implied import LinearProof
from audit.inputs import load_inputs
from audit.policy.rules import load_rules
from audit.problem.claims import REFUTED, Claim
from audit.protection.options import Policy, ProtectOptions
from audit.protection.unit import forced_cells, unit_contexts

SF1 = Path(__file__).resolve().parents[1] / "samples" / "sf1"


def _round_problem(block: str):
    """The sf1 block's problem as a protection round attacks it: its forced cells hidden."""
    inputs = load_inputs(SF1 / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml")
    ctx = next(c for c in unit_contexts(inputs) if c.geo[-1] == block)
    problem, release = ctx.problem()
    primary, comp = forced_cells(release, problem, ctx.schedule.tables, Policy.from_rules(load_rules(None)),
                                 ProtectOptions())
    return ctx.problem(set(primary) | set(comp))[0]


def test_zero_counts_decided_without_the_row_slot_engine_agree_with_it():
    """The re-identification measure's zero counts R(t, 0) (a person's values in two columns, one changed):
    where the datasets found, the linear bound or histogram space decide one, the SAT engine decides it
    the same way, and a refutation's dataset reproduces the release."""
    problem = _round_problem("1006")
    linear = LinearProof.of(problem)
    hist = HistogramEngine.of(problem, linear)
    engine = make_engine(problem, ExactOptions())
    asked = decided = refuted = 0
    for row in {tuple(r) for r in problem.truth.tolist()}:
        for a, b in itertools.combinations(range(len(problem.sizes)), 2):
            for atom in range(min(problem.sizes[b], 3)):
                if atom == row[b]:
                    continue
                claim = Claim(((a, row[a]), (b, atom)), 0)
                asked += 1
                found = _decided(claim, linear, hist, problem)
                if found is None:
                    continue
                decided += 1
                assert found.status == engine.verify(claim, explain="none").status, claim
                if found.status == REFUTED:
                    refuted += 1
                    rows = found.counterexample
                    assert not problem.violations(rows) and claim.count(rows) != 0
    assert decided > asked // 2 and 0 < refuted < decided


def test_zero_cells_encoded_at_once_give_the_clauses_slot_by_slot(monkeypatch):
    """The SAT encoding's zero counts built for every slot at once: the same formula, clause for clause."""
    from audit.attacks.engines import get_engine
    from audit.attacks.engines.sat_encoding import SatEncoding

    inputs = load_inputs(SF1 / "data.csv", SF1 / "schema.yaml", SF1 / "tables.yaml")
    problems = [p for p in inputs.problems() if p.geo[-1] in ("1001", "1033")] + [_round_problem("1006")]
    fast = [get_engine("sat", p, main=False)._base for p in problems]
    monkeypatch.setattr(SatEncoding, "_zero_clauses", lambda self, slots, cols, sel: False)
    slow = [get_engine("sat", p, main=False)._base for p in problems]
    assert all(len(a) > 1000 for a in fast)
    assert fast == slow


def test_two_atom_columns_group_as_the_sort_does():
    """:func:`audit.attacks.implied._unique_columns`' shortcut for one or two atoms: the sort's groups."""
    import numpy as np

    from audit.attacks.implied import _unique_columns

    def by_sort(block):
        order = np.lexsort(block[::-1])
        ordered = block[:, order]
        return np.split(order, np.flatnonzero((ordered[:, 1:] != ordered[:, :-1]).any(axis=0)) + 1)

    rng = np.random.default_rng(0)
    for _ in range(300):
        block = rng.integers(0, 2, size=(int(rng.integers(1, 5)), int(rng.integers(1, 3))))
        got, want = _unique_columns(block), by_sort(block)
        assert [g.tolist() for g in got] == [w.tolist() for w in want], block
