"""Protection: the recommended suppression is minimal (brute force on small cases) and re-audits clean."""
from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from audit.cli import run as cli
from audit.commands.protect import _bound_note
from audit.errors import AuditError
from audit.attacks.exact import ExactOptions, audit_unit
from audit.findings.document import unit_json
from audit.inputs import load_inputs
from audit.protection.options import Policy, ProtectOptions
from audit.protection.protect import protect
from audit.scale.protect import ProtectPool
from audit.protection.rounds import PRUNE, Rounds, prune
from audit.protection.unit import suppress_unit, unit_contexts
from audit.policy.checks import evaluate
from audit.policy.rules import load_rules
from audit.protection.suppress import determined, relations, simple_heuristic

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

RULES = "name: derived\nderived_singletons: {min_columns: 2}\nundecided: on\n"


def _case(folder: Path, columns: dict, tables: list, rows: list, rules: str = RULES):
    schema = {"unit": "person", "geography": ["block"],
              "columns": {n: {"type": "categorical", "values": {v: v for v in vals}} for n, vals in columns.items()}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    (folder / "tables.yaml").write_text(yaml.safe_dump({"tables": tables}))
    (folder / "rules.yaml").write_text(rules)
    pd.DataFrame([{"block": "b1", **dict(zip(columns, r))} for r in rows]).to_csv(folder / "data.csv", index=False)
    return load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml"), load_rules(folder / "rules.yaml")


def _fails(ctx, cells, rules, exact) -> bool:
    """The official verdict (rules on the unit's findings) with these cells suppressed."""
    problem, release = ctx.problem(set(cells))
    unit = unit_json(audit_unit(problem, exact), release)
    return any(c["outcome"] == "fail" for c in evaluate({"units": [unit]}, rules))


def brute_force_minimum(ctx, rules, exact) -> int:
    """Fewest cells whose suppression passes the rules, over every subset by increasing size."""
    problem, _ = ctx.problem()
    cells = sorted({c.key.rsplit(":", 1)[0] for c in problem.constraints if c.predicate.clauses})
    for k in range(len(cells) + 1):
        for subset in itertools.combinations(cells, k):
            if not _fails(ctx, subset, rules, exact):
                return k
    raise AssertionError("suppressing everything still fails")


def _random_case(rng):
    cols = {"a": ["a0", "a1"], "b": ["b0", "b1", "b2"][: rng.integers(2, 4)], "c": ["c0", "c1"]}
    names = list(cols)
    n = int(rng.integers(2, 5))
    rows = [[str(rng.choice(cols[k])) for k in names] for _ in range(n)]
    pairs = [("a", "b"), ("b", "c"), ("a", "c")]
    tables = [{"id": f"T{i}", "by": list(p), "margins": bool(rng.integers(0, 2))}
              for i, p in enumerate(pairs[: int(rng.integers(1, 3))])]
    return cols, tables, rows


CASES = [
    ({"a": ["x", "y"], "b": ["p", "q"], "c": ["u", "v"]},
     [{"id": "T1", "by": ["a", "b"], "margins": True}, {"id": "T2", "by": ["b", "c"], "margins": False}],
     [["x", "p", "u"], ["y", "q", "v"], ["y", "q", "u"]]),
    ({"a": ["x", "y"], "b": ["p", "q", "r"]},
     [{"id": "T1", "by": ["a", "b"], "margins": True}],
     [["x", "p"], ["x", "q"], ["y", "q"], ["y", "r"]]),
]


@pytest.mark.parametrize("i", range(len(CASES) + 3))
def test_suppression_is_brute_force_minimal(tmp_path, i):
    if i < len(CASES):
        cols, tables, rows = CASES[i]
    else:
        cols, tables, rows = _random_case(np.random.default_rng(100 + i))
    inputs, rules = _case(tmp_path, cols, tables, rows)
    exact = ExactOptions(explain="none")
    ctx = unit_contexts(inputs)[0]
    result = suppress_unit(ctx, Policy.from_rules(rules), ProtectOptions(exact=exact))
    assert result.status in ("pass", "protected"), result.reason
    assert not _fails(ctx, result.cells, rules, exact)
    assert len(result.cells) == brute_force_minimum(ctx, rules, exact) == result.lower_bound and result.minimal


def test_rounds_switch_to_monotone_after_the_limit_and_back_on_restart():
    """Two exact rounds raise the lower bound to their larger optimum, then monotone rounds count the
    widening without touching the bound; a restart gives exact rounds again from zero."""
    rounds = Rounds(2, 1)
    rounds.advance(3)
    assert (rounds.monotone, rounds.lower_bound, rounds.base({"a"}, {"f"})) == (False, 3, {"f"})
    rounds.advance(2)
    assert (rounds.monotone, rounds.lower_bound, rounds.base({"a"}, {"f"})) == (True, 3, {"a"})
    rounds.advance(9)
    rounds.advance(12)
    assert (rounds.completions, rounds.lower_bound) == (2, 3)
    assert not rounds.minimal("protected", 12) and rounds.minimal("protected", 3) and rounds.minimal("pass", 12)
    rounds.restart()
    assert (rounds.monotone, rounds.exact, rounds.completions) == (False, 0, 0)
    greedy = Rounds(1, None)
    greedy.advance(4)
    assert greedy.monotone and greedy.lower_bound is None and not greedy.minimal("protected", 4)
    with pytest.raises(ValueError):
        Rounds(0, 0)


def test_rounds_stall_into_monotone_rounds_whose_widening_doubles_until_a_halving():
    """With ``stall``, exact rounds after which no fewer claims fail end the exact search early; a
    monotone round's widening doubles, and starts again at 1 once what fails is halved."""
    rounds = Rounds(40, 0, stall=2)
    for failing, cost in ((10, 1), (10, 2), (9, 2), (9, 3)):
        rounds.observe(failing)
        assert not rounds.monotone
        rounds.advance(cost)
    assert not rounds.monotone and rounds.still == 1  # 9 after 10 reset the count
    rounds.observe(12)
    rounds.advance(3)
    assert rounds.monotone and (rounds.exact, rounds.lower_bound, rounds.widening) == (5, 3, 1)
    widths = []
    for failing in (12, 11, 11, 5, 5):
        rounds.observe(failing)
        widths.append(rounds.widening)
        rounds.advance(20)
    assert widths == [1, 2, 4, 1, 2]
    quiet = Rounds(40, 0, stall=1)  # protection levels alone: no claims fail, no stall
    for _ in range(3):
        quiet.observe(0)
        quiet.advance(1)
    assert not quiet.monotone
    with pytest.raises(ValueError):
        Rounds(1, 0, stall=0)


@pytest.mark.parametrize("seed", range(40))
def test_prune_keeps_a_passing_pattern_and_drops_every_needless_cell_it_can_reach(seed):
    """Against brute force on random "hit each of these sets" rules: the pruned pattern passes, within
    :data:`PRUNE` attacks; on 8 cells (14 attacks at most) no remaining cell is needless."""
    rng = np.random.default_rng(seed)
    cells = [f"c{i}" for i in range(8)]
    rules = [frozenset(rng.choice(cells, size=rng.integers(1, 4), replace=False)) for _ in range(rng.integers(1, 5))]
    attacks = []

    def attack(pattern):
        attacks.append(pattern)
        return all(pattern & rule for rule in rules)
    full = frozenset(cells)
    kept, found = prune(full, [{c} for c in reversed(cells)], attack, bool, True)
    assert found and attack(kept) and len(attacks) - 1 <= PRUNE
    assert not any(attack(kept - {c}) for c in kept)  # 1-minimal
    assert len(kept) >= min(len(s) for r in range(len(cells) + 1) for s in map(frozenset, itertools.combinations(cells, r))
                            if all(s & rule for rule in rules))
    big = frozenset(f"d{i}" for i in range(300))  # past the budget: still a passing pattern
    attacks.clear()
    needed = frozenset(f"d{i}" for i in range(0, 300, 10))
    kept, _ = prune(big, [{c} for c in sorted(big)], lambda p: attacks.append(p) or needed <= p, bool, True)
    assert needed <= kept and len(attacks) == PRUNE and len(kept) < len(big)


@pytest.mark.parametrize("seed", [103])
def test_monotone_completion_passes_with_an_honest_lower_bound(tmp_path, seed):
    """One exact hitting set, then only cells added: the pattern re-audits clean, and is reported not
    minimal, with a lower bound at most the true minimum (brute force)."""
    inputs, rules = _case(tmp_path, *_random_case(np.random.default_rng(seed)))
    exact = ExactOptions(explain="none")
    ctx = unit_contexts(inputs)[0]
    result = suppress_unit(ctx, Policy.from_rules(rules), ProtectOptions(exact=exact, exact_rounds=1))
    assert result.status == "protected", result.reason
    assert not _fails(ctx, result.cells, rules, exact)
    least = brute_force_minimum(ctx, rules, exact)
    assert result.lower_bound <= least < len(result.cells) and not result.minimal
    assert result.to_dict()["lower_bound"] == result.lower_bound and result.to_dict()["minimal"] is False
    assert _bound_note(result.to_dict()) == f" (not proved minimal; at least {result.lower_bound} needed)"


def test_simple_heuristic_protects_primary_cells_in_a_table_with_margins(tmp_path):
    inputs, _ = _case(tmp_path, {"a": ["x", "y", "z"], "b": ["p", "q", "r"]}, [{"id": "T", "by": ["a", "b"]}],
                      [["x", "p"]])
    table = inputs.schedule.table("T")
    ids = [c.id for c in table.cells]
    assert ids == [f"{a},{b}" for a in ("x", "y", "z", "*") for b in ("p", "q", "r", "*")]
    counts = np.array([5, 1, 6, 12, 4, 7, 3, 14, 2, 2, 2, 6, 11, 10, 11, 32])
    primary = (counts > 0) & (counts < 3)
    flags = simple_heuristic(table, counts, primary)
    assert flags[primary].all()
    assert not (determined(relations(table.lines, len(ids)), flags) & primary).any()
    # a lone primary cell needs its rectangle: 4 cells, no margin
    one = np.zeros(16, dtype=bool)
    one[1] = True
    flags = simple_heuristic(table, counts, one)
    assert flags.sum() == 4 and not any(flags[j] for j, c in enumerate(ids) if "*" in c)


def test_per_unit_suppress_key_is_validated(tmp_path):
    inputs, _ = _case(tmp_path, *CASES[0])
    doc = yaml.safe_load((tmp_path / "tables.yaml").read_text())
    doc["suppress"] = {"b1": ["T1:x,p", "T9:nope"]}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(AuditError, match="unknown cell 'T9:nope'"):
        load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "bad.yaml")
    doc["suppress"] = {"zz": ["T1:x,p"]}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(AuditError, match="'zz' is not a geographic unit"):
        load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "bad.yaml").release()
    doc["suppress"] = {"b1": ["T1:x,p"]}
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(doc))
    release = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "ok.yaml").release()[0]
    hidden = [v for v in release.values if v.status == "suppressed"]
    assert [v.cell.key for v in hidden] == ["T1:x,p"] and hidden[0].cell.suppressed


@pytest.mark.parametrize("strategy", ["round", "noise"])
def test_round_and_noise_find_the_smallest_passing_parameter(tmp_path, strategy):
    inputs, rules = _case(tmp_path, *CASES[0])
    options = ProtectOptions(strategy=strategy, rank=False)
    report = protect(inputs, options, rules, tmp_path / "out", pool=ProtectPool())
    sweep = report["sweep"]
    assert [p["passes"] for p in sweep] == [False] * (len(sweep) - 1) + [True]
    assert report["recommendation"] is not None and report["after"]["verdict"] == "pass"
    if strategy == "noise":
        assert report["epsilon"] > 0 and report["alpha"] == 0.05 and "not a proof" in report["model"]
        assert report["rank"]["run"] is False
        # the re-audit's tables show each count as published: noisy, with the value drawn
        drawn = pd.read_csv(tmp_path / "out" / "noisy_release.csv", dtype={"geo": str})
        (unit,) = json.loads((tmp_path / "out" / "findings.json").read_text())["units"]
        noisy = {k: float(code[1:]) for k, code in unit["grid"].items() if code[0] == "n"}
        assert noisy == dict(zip(drawn.cell, drawn.noisy)) and noisy
        assert cli(["report", str(tmp_path / "out" / "findings.json"), "-q"]) == 0
        html = (tmp_path / "out" / "report.html").read_text()
        shown = re.findall(r'<td class="s-noise" data-k="[^"]+"[^>]*>([^<]+)</td>', html)
        assert sorted(t.split(" [")[0] for t in shown) == sorted(f"{v:g}" for v in noisy.values())
        assert '<span class="g s-noise">noisy</span>' in html
    else:
        assert "round_to" in yaml.safe_load((tmp_path / "out" / "protected.yaml").read_text())["protection"]


def _protect_cli(tmp_path, data, schema, tables, *extra) -> dict:
    out = tmp_path / "out"
    code = cli(["protect", str(data), "--schema", str(schema), "--tables", str(tables), "--out", str(out), "-q", *extra])
    assert code == 0
    report = json.loads((out / "protection.json").read_text())
    # the protected schedule is accepted by `audit run`, and the re-audit passes the rules it failed
    assert cli(["run", str(data), "--schema", str(schema), "--tables", str(out / "protected.yaml"),
                "--out", str(tmp_path / "rerun"), "-q", *extra]) == 0
    rerun = json.loads((tmp_path / "rerun" / "findings.json").read_text())
    assert report["before"]["verdict"] == "fail" and report["after"]["verdict"] == "pass"
    assert rerun["summary"]["undecided"] == 0 and rerun["summary"]["derived_singletons"] == 0
    return report


def test_households_block_protected_and_reaudited(tmp_path):
    frame = pd.read_csv(SAMPLES / "households" / "data.csv", dtype=str)
    frame[frame.block == "1003"].to_csv(tmp_path / "data.csv", index=False)
    report = _protect_cli(tmp_path, tmp_path / "data.csv", SAMPLES / "households" / "schema.yaml",
                          SAMPLES / "households" / "tables.yaml", "--max-columns", "2")
    (unit,) = report["units"]
    assert unit["status"] == "protected" and unit["suppressed"] == len(unit["cells"]) > 0
    assert unit["information_loss"]["cells_suppressed"] == unit["suppressed"]


def test_block7_suppression_leaves_no_singleton_over_two_columns(tmp_path):
    pytest.importorskip("audit.attacks.engines._numeric", reason="numeric cells (audit/attacks/engines/_numeric.py) have not landed")
    d = SAMPLES / "block7"
    report = _protect_cli(tmp_path, d / "data.csv", d / "schema.yaml", d / "tables.yaml")
    findings = json.loads((tmp_path / "out" / "findings.json").read_text())
    by_columns = findings["summary"]["singletons_by_columns"]  # exact counts, derived and direct
    assert not [k for kind in by_columns.values() for k, n in kind.items() if int(k) >= 2 and n]
    assert report["totals"]["cells_suppressed"] == len(report["recommendation"]["cells"]["0001"])


def test_ctrl_c_keeps_the_units_protected_so_far(tmp_path):
    """SIGINT during the suppression search: exit 130, the finished units in protection.partial.json,
    and no protected.yaml / protection.json that could pass for a recommendation."""
    import signal
    import subprocess
    import sys
    import time

    sf1 = SAMPLES / "sf1"
    proc = subprocess.Popen([sys.executable, "-m", "audit", "protect", str(sf1 / "data.csv"), "-s", str(sf1 / "schema.yaml"),
                             "-t", str(sf1 / "tables.yaml"), "-o", str(tmp_path)],
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            # Ctrl-C as at a terminal, even when the tests run in a background job (which ignores it)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen, deadline = [], time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen.append(line)
        if sum("protecting" in s for s in seen) >= 2:  # one unit done, the next under way
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(seen) + err
    assert "interrupted: 1 of" in err and "Traceback" not in err
    partial = json.loads((tmp_path / "protection.partial.json").read_text())
    assert partial["interrupted"] is True and len(partial["units"]) == 1 and partial["units_total"] > 1
    assert not (tmp_path / "protected.yaml").exists() and not (tmp_path / "protection.json").exists()


# a fact the tables state several ways: T2 and T3 repeat a's zero (a=z) beside T1
REDUNDANT = ({"a": ["x", "y", "z"], "b": ["p", "q"], "c": ["u", "v"]},
             [{"id": "T1", "by": ["a"], "margins": False}, {"id": "T2", "by": ["a", "b"], "margins": False},
              {"id": "T3", "by": ["a", "c"], "margins": False}],
             [["x", "p", "u"], ["y", "q", "v"], ["y", "q", "u"]])


def test_every_explanation_the_loop_adds_implies_its_claim_alone(tmp_path):
    """Each clause's cells, with every other cell suppressed, still prove the claim (so the hitting set
    is a lower bound), and a fact stated several ways gets several explanations in one round."""
    from audit.attacks.engines.sat import SatEngine
    from audit.protection.claims import _cores, failing

    inputs, rules = _case(tmp_path, *REDUNDANT)
    exact = ExactOptions(explain="none")
    ctx = unit_contexts(inputs)[0]
    problem, _ = ctx.problem()
    result = audit_unit(problem, exact)
    bad, _ = failing(result, Policy.from_rules(rules))
    engine = SatEngine(result.problem, conflicts=exact.conflicts, seed=exact.seed)
    engine.explainer(exact.explain_budget)
    cells = set(engine.selectors)
    most = 0
    for v in [v for v in bad if not v.direct][:4]:
        cores = _cores(engine, v.claim, set(), lambda pos: {min(pos)}, set())
        most = max(most, len(cores))
        for core in cores:
            p, _ = ctx.problem(cells - core)
            assert v.claim in {w.claim for w in audit_unit(p, exact).verified}, (v.claim, sorted(core))
    assert most > 1


def test_explain_among_cells_that_do_not_imply_the_claim_is_none(tmp_path):
    from audit.attacks.engines.sat import SatEngine

    inputs, rules = _case(tmp_path, *REDUNDANT)
    exact = ExactOptions(explain="none")
    problem, _ = unit_contexts(inputs)[0].problem()
    result = audit_unit(problem, exact)
    claim = next(v.claim for v in result.verified if len(v.claim.assignment) >= 2 and not v.direct)
    engine = SatEngine(result.problem, conflicts=exact.conflicts, seed=exact.seed)
    explainer = engine.explainer(exact.explain_budget)
    cells, minimal = explainer.explain(claim, among=list(engine.selectors))
    assert minimal and cells
    assert explainer.explain(claim, among=[]) is None
    again = explainer.explain(claim, among=list(engine.selectors))  # a second session for the same claim
    assert again == (cells, True)


def test_failed_suppression_search_writes_no_schedule_and_names_the_rules(tmp_path):
    inputs, rules = _case(tmp_path, *CASES[0])
    report = protect(inputs, ProtectOptions(max_iterations=0, exact=ExactOptions(explain="none")), rules, tmp_path / "out",
                     pool=ProtectPool())
    assert report["recommendation"] is None and not (tmp_path / "out" / "protected.yaml").exists()
    assert report["failing_units"] == {"b1": ["derived_singletons"]}
    assert report["units"][0]["status"] == "gave-up" and "no passing pattern" in report["reason"]


def test_protect_prints_labels_and_a_failed_round_search_exits_1(tmp_path, capsys):
    inputs, _ = _case(tmp_path, *CASES[0])
    args = [str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t", str(tmp_path / "tables.yaml"),
            "-r", str(tmp_path / "rules.yaml")]
    assert cli(["protect", *args, "-o", str(tmp_path / "s")]) == 0
    report = json.loads((tmp_path / "s" / "protection.json").read_text())
    labels = {c.key: f"{t.title}: {c.label}" for t in inputs.schedule.tables for c in t.cells}
    cells = report["units"][0]["cells"]
    assert report["cell_labels"] == {k: labels[k] for k in cells}
    out = capsys.readouterr().out
    assert all(f"  {labels[k]} ({k})" in out for k in cells)
    # rounding cannot pass when every base is 1: no protected.yaml, the rules still failing named, exit 1
    report = protect(inputs, ProtectOptions(strategy="round", round_bases=(1,)), load_rules(tmp_path / "rules.yaml"),
                     tmp_path / "r", pool=ProtectPool())
    assert report["round_to"] is None and report["recommendation"] is None
    assert report["failing_units"] == {"b1": ["derived_singletons"]} and not (tmp_path / "r" / "protected.yaml").exists()


def _implies_alone(ctx, exact, claim, cells, published) -> bool:
    """The exact attack still proves ``claim`` with every published cell but ``cells`` suppressed."""
    p, _ = ctx.problem(published - set(cells))
    return claim in {w.claim for w in audit_unit(p, exact).verified}


def test_a_spent_explanation_budget_gives_the_linear_proofs_cells(tmp_path):
    """With no explanation budget left a claim's clause is its checked linear proof's cells (not every
    published cell, which one more hidden cell would meet), and those cells alone still prove it."""
    from dataclasses import replace

    from audit.attacks.engines.sat import SatEngine
    from audit.protection.claims import claim_clauses, failing, twins

    inputs, rules = _case(tmp_path, *REDUNDANT)
    exact = ExactOptions(explain="none")
    ctx = unit_contexts(inputs)[0]
    problem, _ = ctx.problem()
    result = audit_unit(problem, exact)
    bad = [v for v in failing(result, Policy.from_rules(rules))[0] if not v.direct]
    published = set(SatEngine(problem).selectors)
    spent = ProtectOptions(exact=replace(exact, explain_budget=1e-9))
    clauses = claim_clauses(result, bad, False, set(), twins(problem), spent)
    assert bad and len(clauses) == len(bad)
    for v, (pos, _) in zip(bad, clauses):
        assert pos and len(pos) < len(published), (v.claim, sorted(pos))
        assert _implies_alone(ctx, exact, v.claim, pos, published), (v.claim, sorted(pos))


def test_explanations_of_a_later_round_come_from_the_first_rounds_solver(tmp_path):
    """One solver per unit: made on the first round's problem, asked among the cells a later round
    publishes; its clauses name no hidden cell and each alone proves its claim there."""
    from audit.protection.claims import Explanations, claim_clauses, failing, twins

    inputs, rules = _case(tmp_path, *REDUNDANT)
    exact = ExactOptions(explain="none")
    policy, options = Policy.from_rules(rules), ProtectOptions(exact=exact)
    ctx = unit_contexts(inputs)[0]
    problem, _ = ctx.problem()
    first = audit_unit(problem, exact)
    explanations = Explanations(options)
    bad = failing(first, policy)[0]
    hidden = set(claim_clauses(first, bad, False, set(), twins(problem), options, None, explanations)[0][0])
    engine = explanations.engine
    later, _ = ctx.problem(hidden)
    result = audit_unit(later, exact)
    bad = [v for v in failing(result, policy)[0] if not v.direct]
    assert bad
    clauses = claim_clauses(result, bad, False, hidden, twins(problem), options, lambda pos: {min(pos)}, explanations)
    assert explanations.engine is engine and explanations(later, hidden)[0] is engine
    other = Explanations(options)
    made, _ = other(later, hidden)
    assert other(problem, set())[0] is not made  # a round publishing a cell the first one hid gets its own
    published = set(engine.selectors) - hidden
    for pos, _ in clauses:
        assert pos and not pos & hidden
        assert any(_implies_alone(ctx, exact, v.claim, pos, published) for v in bad), sorted(pos)
