"""The merge's on-disk index of a run's parts: the units in findings order, the last line of a unit wins, and
the grids kept are the top of grid_rank, as the in-memory dictionaries it replaced gave them."""
from __future__ import annotations

import heapq
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from audit.findings.cells import grid_rank
from audit.findings.document import unit_order
from audit.scale.index import PartIndex


def test_the_index_orders_and_ranks_the_units_as_the_dictionaries_did(tmp_path):
    rng = np.random.default_rng(5)
    schedule = SimpleNamespace(levels=("tract", "block"))
    codes = ["1", "10", "2", "01", "a", "ä", "Z", "", "1b"]
    index, latest, ranks = PartIndex(tmp_path, schedule), {}, {}
    for i in range(400):
        geo = "/".join(rng.choice(codes) for _ in range(int(rng.integers(1, 4))))
        unit = {"level": str(rng.choice(["tract", "block", "county"])), "geo": geo, "cells": {"suppressed": int(rng.integers(3))},
                "summary": {k: int(rng.integers(3)) for k in ("full_records", "derived_singletons", "undecided")}}
        path = tmp_path / f"part-{i % 3:05d}.jsonl"
        index.add(path, i, unit)
        latest[(unit["level"], geo)] = (path, i)
        ranks[(unit["level"], geo)] = grid_rank(unit)
    assert len(index) == len(latest)
    assert [(key, path, at) for key, path, at in index] == [
        (key, *latest[key]) for key in sorted(latest, key=unit_order(schedule))]
    for cap in (1, 7, 1000):
        assert index.top(cap) == set(heapq.nlargest(cap, ranks, key=ranks.__getitem__))
    index.close()
    assert not list(Path(tmp_path).glob(".index-*"))
