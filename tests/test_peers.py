"""Peers' published examples (tests/data/peers/README.md): our exact intervals and secondary suppression
on the same tables."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from audit.attacks.exact import ExactOptions
from audit.attacks.implied import LinearProof
from audit.inputs import load_inputs
from audit.attacks.intervals import feasibility_intervals
from audit.protection.options import Policy, ProtectOptions
from audit.protection.unit import unit_contexts
from audit.policy.rules import Rule, Rules
from audit.protection.secondary import suppress_unit, too_narrow

PEERS = Path(__file__).resolve().parent / "data" / "peers"
LEVELS = {"upper": 1, "lower": 1}


@pytest.fixture(scope="module")
def sdctable(tmp_path_factory):
    """sdcTable's SIMPLEHEURISTIC table as microdata (one row per person), its primaries suppressed."""
    table = pd.read_csv(PEERS / "sdctable_simpleheuristic.csv")
    folder = tmp_path_factory.mktemp("sdctable")
    rows = table.loc[table.index.repeat(table["freq"]), ["v1", "v2"]].assign(block="b1")
    rows.to_csv(folder / "data.csv", index=False)
    schema = {"unit": "person", "geography": ["block"], "columns": {
        c: {"type": "categorical", "values": {v: v for v in sorted(table[c].unique())}} for c in ("v1", "v2")}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    primary = [f"T:{a},{b}" for a, b in table.loc[table["primary"] == 1, ["v1", "v2"]].itertuples(index=False)]
    (folder / "tables.yaml").write_text(yaml.safe_dump({"tables": [{"id": "T", "by": ["v1", "v2"], "margins": True}],
                                                       "suppress": {"b1": primary}}))
    inputs = load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml")
    return unit_contexts(inputs)[0], primary


def _intervals(ctx, extra=()):
    problem, _ = ctx.problem(set(extra))
    return feasibility_intervals(problem, LinearProof.of(problem), None)


def test_sdctable_primaries_alone_leave_w_b_computable_and_x_b_protects_it_as_attack_finds(sdctable):
    """sdcTable: with its 9 primaries and no secondary cell, w|b = 47 follows from the margins; with x|b
    suppressed too, attack() gives w|b in [0, 141]. The exact integer intervals agree on both."""
    ctx, primary = sdctable
    alone = _intervals(ctx)
    assert set(alone) == set(primary)
    assert (alone["T:w,b"].lo, alone["T:w,b"].hi) == (47, 47)
    assert [k for k, *_ in too_narrow(alone, LEVELS)] == ["T:w,b", "T:w,b"]
    theirs = _intervals(ctx, {"T:x,b"})
    assert (theirs["T:w,b"].lo, theirs["T:w,b"].hi) == (0, 141)
    assert all(iv.certified for iv in theirs.values()) and not too_narrow(theirs, LEVELS)


@pytest.mark.parametrize("cost, cells", [("cells", 1), ("persons", 1)])
def test_sdctable_our_secondary_suppression_needs_one_cell_and_the_fewest_persons(sdctable, cost, cells):
    """Ours also adds one cell; by persons it picks x|d (31 persons) where sdcTable picked x|b (124)."""
    ctx, _ = sdctable
    rules = Rules("levels", (Rule("protection_levels", settings=LEVELS),))
    unit = suppress_unit(ctx, Policy.from_rules(rules), ProtectOptions(exact=ExactOptions(explain="none"), cost=cost))
    assert unit.status == "protected" and len(unit.complementary) == cells
    assert not too_narrow(_intervals(ctx, unit.complementary), LEVELS)
    if cost == "persons":
        assert unit.complementary == ["T:x,d"]


REGIONS = "ABIJKLMN"


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """sdcTable's linked tables: region within county, and region within big / small, one unit; its
    primaries (counts of at most 3) suppressed in both tables."""
    data = pd.read_csv(PEERS / "sdctable_linked.csv")
    folder = tmp_path_factory.mktemp("linked")
    data.loc[data.index.repeat(data["n"]), ["region"]].assign(block="b1").to_csv(folder / "data.csv", index=False)
    schema = {"unit": "person", "geography": ["block"],
              "columns": {"region": {"type": "categorical", "values": {r: r for r in REGIONS}}}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))

    def cells(groups: dict[str, list[str]]) -> list[dict]:
        return ([{"id": "Total", "where": {}}] + [{"id": g, "where": {"region": rs}} for g, rs in groups.items()]
                + [{"id": r, "where": {"region": [r]}} for r in REGIONS])

    county = data.groupby("county")["region"].apply(list).to_dict()
    group = data.groupby("group")["region"].apply(list).to_dict()
    primary = list(data.loc[data["n"] <= 3, "region"])
    schedule = {"tables": [{"id": "A", "cells": cells(county)}, {"id": "B", "cells": cells(group)}],
                "suppress": {"b1": [f"{t}:{r}" for t in "AB" for r in primary]}}
    (folder / "tables.yaml").write_text(yaml.safe_dump(schedule))
    inputs = load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml")
    return unit_contexts(inputs)[0]


def test_sdctable_linked_tables_give_k_away_until_n_is_suppressed_as_protect_linked_tables_does(linked):
    """Each table alone keeps K hidden; together K = (small - county-1) - N = 10 - 7 = 3, exactly as the
    sdcTable test explains; with N suppressed in both tables (its protectLinkedTables result) every
    hidden cell's interval is wide: K and N in [0, 10]."""
    together = _intervals(linked)
    assert (together["A:K"].lo, together["A:K"].hi) == (3, 3) == (together["B:K"].lo, together["B:K"].hi)
    assert {k for k, *_ in too_narrow(together, LEVELS)} == {"A:K", "B:K"}
    theirs = _intervals(linked, {"A:N", "B:N"})
    assert (theirs["A:K"].lo, theirs["A:K"].hi) == (0, 10) == (theirs["A:N"].lo, theirs["A:N"].hi)
    assert all(iv.certified for iv in theirs.values()) and not too_narrow(theirs, LEVELS)


def test_sdctable_linked_tables_our_secondary_suppression_also_hides_n_alone(linked):
    rules = Rules("levels", (Rule("protection_levels", settings=LEVELS),))
    unit = suppress_unit(linked, Policy.from_rules(rules), ProtectOptions(exact=ExactOptions(explain="none")))
    assert unit.status == "protected" and unit.complementary == ["A:N", "B:N"]
