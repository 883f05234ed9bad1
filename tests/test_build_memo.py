"""build_problems translates a published value once per level for the units that share it: the memo must
tell apart what the translation reads, or a unit gets another unit's constraint (an unsound attacker model)."""
from pathlib import Path

import pandas as pd
import yaml

from audit.inputs import load_inputs


def test_a_cell_one_unit_suppresses_by_its_own_list_is_not_given_the_thresholds_interval(tmp_path: Path):
    # two blocks publish the same count 1 in cell T:F (hidden by the threshold: [1, 2] to the attacker);
    # block b2's own suppress list also names it, so there it is [0, N] (the attacker knows only that it is hidden)
    rows = [{"block": b, "sex": s} for b in ("b1", "b2") for s, n in (("F", 1), ("M", 4)) for _ in range(n)]
    pd.DataFrame(rows).to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "schema.yaml").write_text(yaml.safe_dump({"unit": "person", "geography": ["block"], "columns": {
        "sex": {"type": "categorical", "values": ["F", "M"]}}}))
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump({
        "tables": [{"id": "T", "by": ["sex"], "margins": True,
                    "protection": {"suppress_below": 3, "complementary": False}}],
        "suppress": {"b2": ["T:F"]}}))
    problems = {p.geo: p for p in load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml",
                                               tmp_path / "tables.yaml").problems()}
    bounds = {geo: [(c.lo, c.hi) for c in p.constraints if c.key.startswith("T:F")] for geo, p in problems.items()}
    assert bounds[("b1",)] == [(1, 2)]
    assert bounds[("b2",)] == [(0, None)] or all(lo == 0 for lo, _ in bounds[("b2",)]), bounds
