"""The findings' re-identification section and its checks read the units kept on disk one at a time and hold
none of them: the parent of a run at scale (``audit run``, ``audit protect``) stays flat in the units."""
from __future__ import annotations

import tracemalloc
from dataclasses import replace
from pathlib import Path

from audit.attacks.exact import ExactOptions
from audit.attacks.reidentify import section, with_attacker
from audit.findings.lines import JsonLines
from audit.policy.checks import checks_of
from audit.policy.definitions import REID_RULES
from audit.policy.rules import load_rules
from audit.specs.schema import load_schema

SF1 = Path(__file__).resolve().parents[1] / "samples" / "sf1"
ATTRS = ("hispanic", "white", "black", "aian", "asian", "nhopi", "sor")


def _unit(i: int) -> dict:
    """A block's findings as a run writes them, with about 8 KB of listed claims (which the section never needs)."""
    attr = {"confirmed": i % 2, "inferred": 1, "unlike": 1, "inferred_unlike": 0,
            "baselines": {"unit_mode": [3, 0], "parent_mode": [3, 0]}, "undecided": {"confirmed": 0, "inferred_unlike": 0}}
    counts = {"persons": 3, "unique": 1, "unique_with_sensitive": 1, "putative": 1, "confirmed": i % 2, "inferred": 1,
              "by_attribute": dict.fromkeys(ATTRS, 0), "unlike": 1, "inferred_unlike": 0,
              "baselines": {"unit_mode": [3, 0], "parent_mode": [3, 0]}, "attributes": dict.fromkeys(ATTRS, attr),
              "undecided": {"confirmed": 0, "inferred_unlike": 0}, "notes": []}
    claims = [{"columns": {"sex": "1", "binned_age": f"{k}"}, "m": 1, "status": "verified", "cells": ["P12:P0120003"] * 8}
              for k in range(40)]
    return {"geo": f"01/001/000100/{i:04d}", "level": "block", "rows": 3, "reidentification": counts, "claims": claims}


def test_the_section_and_its_checks_hold_no_unit_of_a_run_on_disk(tmp_path):
    units = JsonLines.write((_unit(i) for i in range(400)), tmp_path)
    rules = load_rules(None)
    attacker = with_attacker(ExactOptions(), load_schema(SF1 / "schema.yaml"), rules).attacker
    reid_rules = replace(rules, rules=tuple(r for r in rules.rules if r.id in REID_RULES))
    tracemalloc.start()
    try:
        reid = section(attacker, units)
        after_section = tracemalloc.get_traced_memory()[1]
        outcomes = [c.outcome for c in checks_of(units, reid, reid_rules)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reid["exact"]["units"] == 400 and reid["exact"]["persons"] == 1200
    assert reid["exact"]["confirmed"]["count"] == 200 and reid["exact"]["units_not_measured"] == 0
    assert len(outcomes) == 2 * 400 + 2 and outcomes.count("fail") >= 200  # a block with a confirmed person fails
    assert after_section < 1_000_000 and peak < 1_000_000  # the units as objects: about 8 MB


def _protected(i: int) -> dict:
    """One task's result as the search returns it: a unit's entry of about 2 KB, its pattern and persons."""
    cells = [f"P12:P01200{k:02d}" for k in range(30)]
    entry = {"geo": f"01/001/000100/{i:04d}", "level": "block", "rows": 7, "status": "protected", "reason": "",
             "cells": cells, "suppressed": 30, "primary": cells[:20], "complementary": [], "reconstruction": cells[20:],
             "information_loss": {"cells": 30, "persons": 40}, "before": {"failing_claims": 3}, "seconds": 0.5}
    return {"units": [entry], "levels": [], "suppress": {entry["geo"]: cells}, "pinned_by_rule": {}, "persons": 4}


def _traced_peak(n: int, folder: Path) -> tuple[float, object]:
    """The traced peak of keeping ``n`` results as they come (in reverse task order), gathering them in task order
    and re-marking their entries (as the re-audit does), less the pattern itself, which protected.yaml needs."""
    from audit.protection.results import Results, gathered, remade

    tracemalloc.start()
    try:
        results = Results(folder)
        for i in reversed(range(n)):
            results.add(i, _protected(i))
        found = gathered(results, folder)
        results.close()
        held = tracemalloc.get_traced_memory()[0]
        units = remade(found["units"], lambda d: {**d, "status": "fails-reaudit"}, folder)
        peak = tracemalloc.get_traced_memory()[1] - held
    finally:
        tracemalloc.stop()
    return peak, units


def test_protect_keeps_its_units_entries_on_disk_in_the_tasks_order(tmp_path):
    small, units = _traced_peak(50, tmp_path)
    assert [u["geo"] for u in units[:3]] == [_protected(i)["units"][0]["geo"] for i in range(3)]
    assert len(units) == 50 and {u["status"] for u in units} == {"fails-reaudit"}
    large, units = _traced_peak(400, tmp_path)
    assert units[399] == {**_protected(399)["units"][0], "status": "fails-reaudit"}
    assert large < small + 50_000  # the entries as objects: about 2 MB
