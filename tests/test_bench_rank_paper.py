"""bench/rank.py's tract setting (the paper's, issue 34): what a tract's problem publishes, with and without the
block attribute, is what its blocks' SF1 tables publish; the strengthened coarse baseline's shortcut."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import rank_cases  # noqa: E402
from rank_cases import LOADER  # noqa: E402

sys.path.remove(str(ROOT / "bench"))

from audit.data.microdata import validate  # noqa: E402
from audit.inputs import Inputs  # noqa: E402
from audit.specs.schedule import load_schedule  # noqa: E402
from audit.specs.schema import load_schema  # noqa: E402


def _published(schema, schedule, frame) -> dict[tuple, dict[str, int]]:
    rel = Inputs(schema, schedule, validate(frame, schema, "sf1"), "sf1").release()
    return {r.geo: {v.cell.key: int(v.value) for v in r.values if v.status == "published"} for r in rel}


def test_tract_problem_publishes_its_blocks_tables(tmp_path):
    """samples/sf1 (one tract, 10 blocks; tables P1, P9, P12G): without the block attribute each cell is the sum of
    the blocks' cell; with it, cell ``C_b`` is block ``b``'s ``C``; nothing else is published."""
    frame = pd.read_csv(ROOT / "samples" / "sf1" / "data.csv", dtype=str)
    tables = yaml.load((ROOT / "samples" / "sf1" / "tables.yaml").read_text(), Loader=LOADER)["tables"]
    small = tmp_path / "tables.yaml"
    small.write_text(yaml.safe_dump({"tables": [t for t in tables if t["id"] in ("P1", "P9", "P12G")]}))
    sf1 = load_schema(ROOT / "samples" / "sf1" / "schema.yaml")
    blocks = _published(sf1, load_schedule(small, sf1), frame)
    assert len(blocks) == 10 and len(next(iter(blocks.values()))) == 1 + 64 + 46
    schema, schedule = rank_cases.sf1_tract_spec(None, small)
    (without,) = _published(schema, schedule, frame).values()
    assert without == {k: sum(b[k] for b in blocks.values()) for k in next(iter(blocks.values()))}
    names = sorted(frame["block"].unique())
    (with_,) = _published(*rank_cases.with_block_column(schema, schedule, names), frame).values()
    assert with_ == {f"{k}_{geo[-1]}": v for geo, b in blocks.items() for k, v in b.items()}


def test_strengthened_baseline_keeps_the_top_ranks():
    """A coarse geography's rows times D's blocks: the cut list agrees with the full product ranking on every
    rank up to ``top`` (weights and rows), ties included."""
    rng = np.random.default_rng(3)
    parent = rng.integers(0, 4, size=(60, 2))
    blocks = rng.integers(0, 3, size=(9, 1))
    top = 7
    full = Counter()
    xs, bs = Counter(map(tuple, parent.tolist())), Counter(map(tuple, blocks.tolist()))
    for x, fx in xs.items():
        for b, fb in bs.items():
            full[x[:1] + b + x[1:]] = fx * fb
    want = sorted(full.items(), key=lambda kv: (-kv[1], kv[0]))
    got = rank_cases.with_block(parent, blocks, 1, top)
    assert [w for _, w in got[:top]] == [w for _, w in want[:top]]
    cut = want[top - 1][1]   # every row weighing at least the top-th is kept
    assert {r for r, w in got if w >= cut} == {r for r, w in want if w >= cut}
