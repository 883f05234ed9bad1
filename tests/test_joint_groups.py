"""Tracts whose blocks group codes differently from the tract (issue 30): claims over either level's
groupings, checked against every dataset that reproduces the release (tabulated with the real tabulator).

A block table may publish race as white / non-white while the tract publishes detailed race by sex;
"the block's one resident is a non-white woman" then follows from the two together, over a value set
(non-white) that only the block's grouping makes and a column (sex) that only the tract's tables split.
"""
from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from _oracle import _primary_only, release_matches

from audit.inputs import load_inputs
from audit.pipeline import AuditOptions, run_audit
from audit.release.tabulate import tabulate

RACES = ("W", "B", "A", "O")
SEXES = ("M", "F")
CODES = {"race": RACES, "sex": SEXES}
KINDS = list(itertools.product(RACES, SEXES))
SCHEMA = {"unit": "person", "geography": ["tract", "block"],
          "columns": {"race": {"type": "categorical", "values": list(RACES)},
                      "sex": {"type": "categorical", "values": list(SEXES)}}}


def _groups(rng: np.random.Generator) -> list[list[str]]:
    """A random partition of the race codes into 2 to 4 groups."""
    while True:
        label = rng.integers(0, 4, size=len(RACES))
        groups = [[r for r, g in zip(RACES, label) if g == k] for k in sorted(set(label.tolist()))]
        if len(groups) > 1:
            return groups


def _table(tid: str, level: str, groups: list[list[str]], by_sex: bool, protection: dict | None) -> dict:
    cells = []
    for k, group in enumerate(groups):
        for sex in (SEXES if by_sex else (None,)):
            where = {"race": group} | ({"sex": [sex]} if sex else {})
            cells.append({"id": f"g{k}{sex or ''}", "where": where})
    return {"id": tid, "geography": level, "cells": cells} | ({"protection": protection} if protection else {})


def random_tract(rng: np.random.Generator) -> tuple[dict, list[dict]]:
    """Tables (block total, block race groups maybe by sex, tract race groups by sex or the reverse) and
    the rows of a tract of 2-3 blocks of 1-2 persons, race grouped at random at each level."""
    block_groups, tract_groups = _groups(rng), _groups(rng)
    suppress = {"suppress_below": 3}
    tables = [{"id": "P1", "geography": "block", "cells": [{"id": "total", "where": {}}]},
              _table("P2", "block", block_groups, bool(rng.random() < 0.4), suppress if rng.random() < 0.4 else None),
              _table("T1", "tract", tract_groups, bool(rng.random() < 0.8), suppress if rng.random() < 0.2 else None)]
    if rng.random() < 0.3:
        tables.append({"id": "P3", "geography": "block", "by": ["sex"], "protection": suppress})
    sizes = rng.integers(1, 3, size=int(rng.integers(2, 4)))
    rows = [{"tract": "1", "block": str(b + 1), "race": KINDS[k][0], "sex": KINDS[k][1]}
            for b, n in enumerate(sizes) for k in rng.integers(0, len(KINDS), size=int(n))]
    return {"tables": tables}, rows


def _write(folder: Path, tables: dict, rows: list[dict]) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "schema.yaml").write_text(yaml.safe_dump(SCHEMA))
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables))
    pd.DataFrame(rows, columns=["tract", "block", "race", "sex"]).to_csv(folder / "data.csv", index=False)
    return folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml"


def _tabulated(schema, schedule, worlds: list[list[list[tuple]]]) -> dict:
    """Every world (rows per block) tabulated at once, world ``i`` as tract ``t{i}``."""
    rows = [{"tract": f"t{i}", "block": str(b + 1), "race": r, "sex": s}
            for i, blocks in enumerate(worlds) for b, block in enumerate(blocks) for r, s in block]
    frame = pd.DataFrame(rows, columns=["tract", "block", "race", "sex"])
    return {r.geo: r for r in tabulate(frame, schema, _primary_only(schedule))}


def consistent_worlds(inputs) -> list[list[list[tuple]]]:
    """Every dataset of the tract (rows of codes per block) whose release shows what the published one shows."""
    published = {r.geo: r for r in inputs.release()}
    frame = inputs.frame
    per_block = []
    for block, rows in sorted(frame.groupby("block"), key=lambda x: int(x[0])):
        combos = [list(c) for c in itertools.combinations_with_replacement(KINDS, len(rows))]
        pad = [[] for _ in range(int(block) - 1)]
        got = _tabulated(inputs.schema, inputs.schedule, [pad + [c] for c in combos])
        per_block.append([c for i, c in enumerate(combos)
                          if release_matches(published[("1", block)], got[(f"t{i}", block)], inputs.schedule)])
    worlds = [list(w) for w in itertools.product(*per_block)]
    got = _tabulated(inputs.schema, inputs.schedule, worlds)
    return [w for i, w in enumerate(worlds) if release_matches(published[("1",)], got[(f"t{i}",)], inputs.schedule)]


def value_sets(inputs) -> dict[str, set[frozenset]]:
    """Per column, the value sets claims range over: the atoms of the common refinement and of each
    level's grouping (the full domain left out: a claim over it says nothing)."""
    from audit.problem.build import cell_domains

    tables = inputs.schedule.tables
    out: dict[str, set[frozenset]] = {c: set() for c in CODES}
    for cells in ([c for t in tables for c in t.cells], *([c for t in tables if t.level == lv for c in t.cells]
                                                          for lv in ("block", "tract"))):
        for d in cell_domains(inputs.schema, cells):
            out[d.name] |= {a for a in d.atoms if len(a) < len(CODES[d.name])}
    return out


def _count(world: list[list[tuple]], block: int | None, claim: frozenset) -> int:
    rows = world[block] if block is not None else [r for b in world for r in b]
    return sum(all(dict(zip(CODES, r))[c] in codes for c, codes in claim) for r in rows)


def provable_singletons(inputs, worlds) -> set[tuple]:
    """(block index or None, claim) for every singleton claim over the value sets that holds in every world."""
    sets = value_sets(inputs)
    n_blocks = len(worlds[0])
    out = set()
    for cols in ((("race",)), ("sex",), ("race", "sex")):
        for choice in itertools.product(*(sorted(sets[c], key=sorted) for c in cols)):
            claim = frozenset(zip(cols, choice))
            for block in [None, *range(n_blocks)]:
                if all(_count(w, block, claim) == 1 for w in worlds):
                    out.add((block, claim))
    return out


def audited_claims(out: Path) -> pd.DataFrame:
    """The run's claim store, each claim as (block index or None, claim over codes)."""
    with gzip.open(out / "claims.csv.gz", "rt") as fh:
        frame = pd.read_csv(fh, dtype=str, keep_default_na=False)
    keys = []
    for _, row in frame.iterrows():
        block = row["geo"].split("/")[1] if row["level"] == "block" else row["block"] or None
        claim = frozenset((c, frozenset(row[c].split("|"))) for c in CODES
                          if row[c] and len(row[c].split("|")) < len(CODES[c]))
        keys.append((None if block is None else int(block) - 1, claim))
    frame["key"] = keys
    return frame


def _flagged(frame: pd.DataFrame) -> set[tuple]:
    return set(frame.loc[frame["status"].isin(["verified", "undecided"]), "key"])


def _missed(provable: set[tuple], flagged: set[tuple], n_blocks: int) -> set[tuple]:
    """Provable claims no unit verified or left undecided (a tract-wide one counts as flagged where a
    block's claim over the same value sets is)."""
    return {(b, c) for b, c in provable if (b, c) not in flagged
            and not (b is None and any((k, c) in flagged for k in range(n_blocks)))}


def _check_run(folder: Path, tables: dict, rows: list[dict],
               max_rows: int = AuditOptions.max_rows) -> tuple[set, set, object]:
    """Audit the tract (``--max-rows``), then check (a) and (b) against every consistent dataset; the provable
    and missed claims, and the run's document."""
    paths = _write(folder, tables, rows)
    inputs = load_inputs(*paths)
    worlds = consistent_worlds(inputs)
    assert worlds, "the truth reproduces its own release"
    doc = run_audit(*paths, folder / "out", AuditOptions(explain="none", rules="strict", report=False,
                                                         max_rows=max_rows))
    claims = audited_claims(folder / "out")
    verified = claims[claims["status"] == "verified"]
    for key, m in zip(verified["key"], verified["m"].astype(int)):
        if key[1]:
            assert all(_count(w, key[0], key[1]) == m for w in worlds), (tables, rows, key, m)
    provable = provable_singletons(inputs, worlds)
    return provable, _missed(provable, _flagged(claims), len(worlds[0])), doc


def test_the_issues_tract_proves_a_non_white_woman_over_both_groupings(tmp_path):
    """The issue's case: block 1's one resident is non-white (its block's grouping) and a woman (the
    tract's zero for white women and for non-white men): a claim over groups neither level's atoms hold."""
    tables = {"tables": [{"id": "P1", "geography": "block", "cells": [{"id": "total", "where": {}}]},
                         _table("P2", "block", [["W"], ["B", "A", "O"]], False, None),
                         {"id": "T1", "geography": "tract", "by": ["race", "sex"]}]}
    rows = [{"tract": "1", "block": b, "race": r, "sex": s}
            for b, r, s in (("1", "B", "F"), ("2", "A", "F"), ("2", "W", "M"), ("2", "W", "M"))]
    provable, missed, _ = _check_run(tmp_path, tables, rows)
    woman = (0, frozenset({("race", frozenset("BAO")), ("sex", frozenset("F"))}))
    assert woman in provable and not missed


def test_claims_over_either_levels_groupings_agree_with_brute_force(tmp_path):
    """Random tracts, race grouped at random at each level: (a) every verified claim holds in every
    consistent dataset; (b) every singleton over the value sets either level defines that holds in every
    one is verified or undecided in some unit, never missed."""
    rng = np.random.default_rng(30)
    mixed = 0
    for trial in range(24):
        tables, rows = random_tract(rng)
        provable, missed, _ = _check_run(tmp_path / str(trial), tables, rows)
        assert not missed, (tables, rows, missed)
        mixed += any(b is not None and len(c) == 2 for b, c in provable)
    assert mixed >= 3  # claims over a block's race group and sex together were provable and checked


@pytest.mark.parametrize("seed", range(6))
def test_a_protected_tract_that_passes_has_no_provable_singleton(tmp_path, seed):
    """audit protect, then the re-audit: when it passes (derived singletons over one column or more
    fail), no dataset-wide singleton over either level's groupings is provable from the protected
    release unless a published count states it."""
    from audit.attacks.exact import ExactOptions
    from audit.policy.rules import load_rules
    from audit.protection.options import ProtectOptions
    from audit.protection.protect import protect
    from audit.scale.protect import ProtectPool

    rng = np.random.default_rng(300 + seed)
    tables, rows = random_tract(rng)
    paths = _write(tmp_path, tables, rows)
    (tmp_path / "rules.yaml").write_text("name: ds\nderived_singletons: {min_columns: 1}\n")
    report = protect(load_inputs(*paths), ProtectOptions(exact=ExactOptions(explain="none")),
                     load_rules(tmp_path / "rules.yaml"), tmp_path / "out", pool=ProtectPool())
    if report["after"]["verdict"] != "pass":
        pytest.skip("protect found no passing pattern")
    inputs = load_inputs(paths[0], paths[1], tmp_path / "out" / "protected.yaml")
    worlds = consistent_worlds(inputs)
    stated = set()
    for release in inputs.release():
        block = int(release.geo[1]) - 1 if release.level == "block" else None
        for v in release.values:
            if v.status == "published" and v.stat.kind == "count" and v.value == 1:
                stated.add((block, frozenset((c, frozenset(codes)) for c, codes in v.cell.predicate.clauses
                                             if len(codes) < len(CODES[c]))))
    assert provable_singletons(inputs, worlds) <= stated, (tables, rows, report["recommendation"])


def test_a_record_over_a_blocks_grouping_is_a_full_record(tmp_path):
    """Block 1's one resident proved a non-white woman is a whole record over the attributes the release
    publishes (race, grouped as the block groups it, and sex): full_records counts it in the coupled tract
    (a view column stands for its attribute), so the default policy fails the release."""
    tables = {"tables": [{"id": "P1", "geography": "block", "cells": [{"id": "total", "where": {}}]},
                         _table("P2", "block", [["W"], ["B", "A", "O"]], False, None),
                         {"id": "T1", "geography": "tract", "by": ["race", "sex"]}]}
    rows = [{"tract": "1", "block": b, "race": r, "sex": s}
            for b, r, s in (("1", "B", "F"), ("2", "A", "F"), ("2", "W", "M"), ("2", "W", "M"))]
    paths = _write(tmp_path, tables, rows)
    doc = run_audit(*paths, tmp_path / "out", AuditOptions(explain="none", report=False))
    tract = next(u for u in doc.units if u["geo"] == "1")
    # the tract's published 1s (B women, A women) and each block's one non-white woman: 4 (2 before views counted)
    assert tract["summary"]["full_records_by_group"].get("1", 0) >= 4, tract["summary"]
    assert any(f.rule == "full_records" and f.outcome == "fail" for f in doc.failing), doc.failing
