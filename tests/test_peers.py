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


def _cross_table(folder, table, by, freq, primary):
    """A frequency table as microdata (one row per person, one block), published as table ``T`` over
    ``by`` with margins, the rows ``primary`` marks suppressed: the unit's context and those cells."""
    table.loc[table.index.repeat(table[freq]), list(by)].assign(block="b1").to_csv(folder / "data.csv", index=False)
    schema = {"unit": "person", "geography": ["block"], "columns": {
        c: {"type": "categorical", "values": {v: v for v in sorted(table[c].unique())}} for c in by}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    cells = ["T:" + ",".join(row) for row in table.loc[primary, list(by)].itertuples(index=False)]
    (folder / "tables.yaml").write_text(yaml.safe_dump({"tables": [{"id": "T", "by": list(by), "margins": True}],
                                                       "suppress": {"b1": cells}}))
    inputs = load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml")
    return unit_contexts(inputs)[0], cells


@pytest.fixture(scope="module")
def sdctable(tmp_path_factory):
    """sdcTable's SIMPLEHEURISTIC table as microdata (one row per person), its primaries suppressed."""
    table = pd.read_csv(PEERS / "sdctable_simpleheuristic.csv")
    return _cross_table(tmp_path_factory.mktemp("sdctable"), table, ("v1", "v2"), "freq", table["primary"] == 1)


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


# GaussSuppression's output rows: region (Total, A..H) x hovedint (Total, then sorted), hovedint fastest.
GAUSS_REGIONS = ["*", *"ABCDEFGH"]
GAUSS_HOVEDINT = ["*", "annet", "arbeid", "soshjelp", "trygd"]
GAUSS_SUPPRESSED = [12, 13, 22, 23, 42, 43]


def _gauss_key(index: int) -> str:
    """GaussSuppression's 1-based output row ``1 + h + 5 r`` as our cell key."""
    r, h = divmod(index - 1, len(GAUSS_HOVEDINT))
    return f"T:{GAUSS_REGIONS[r]},{GAUSS_HOVEDINT[h]}"


@pytest.fixture(scope="module")
def z1(tmp_path_factory):
    """SSBtools' z1 (region x hovedint counts) as microdata, its primaries (``ant <= 3``, GaussSuppression's
    default ``maxN``) suppressed."""
    table = pd.read_csv(PEERS / "gausssuppression_z1.csv")
    ctx, primary = _cross_table(tmp_path_factory.mktemp("z1"), table, ("region", "hovedint"), "ant", table["ant"] <= 3)
    return ctx, primary, {f"T:{a},{b}": n for a, b, n in table.itertuples(index=False)}


def test_gausssuppression_z1_primaries_alone_are_pinned_by_their_region_totals(z1):
    """B, D and H x arbeid (1, 2, 3) are the only cells of at most 3; hidden alone, each is its region's
    total less the region's three other published cells."""
    ctx, primary, counts = z1
    assert primary == ["T:B,arbeid", "T:D,arbeid", "T:H,arbeid"]
    alone = _intervals(ctx)
    assert {k: (iv.lo, iv.hi) for k, iv in alone.items()} == {k: (counts[k], counts[k]) for k in primary}
    assert sorted(k for k, *_ in too_narrow(alone, LEVELS)) == sorted(primary * 2)


def test_gausssuppression_z1_pattern_leaves_no_hidden_cell_too_narrow(z1):
    """GaussSuppression's test expects output rows 12, 13, 22, 23, 42, 43 suppressed: with rows
    region-major (SSBtools' ``CrossCodeFramesReOrder``: the first variable's code repeated ``each`` of the
    second's, Total first) they are B, D, H x annet and arbeid, the three primaries (a hovedint-major
    reading would miss B's and H's) and annet beside each. The hidden 3 x 2 block keeps its row sums
    (8, 15, 12) and column sums (29, 6), so each arbeid cell is anywhere in [0, 6] and each annet cell its
    row sum less that: the exact integer intervals are these, every one wide enough."""
    ctx, primary, counts = z1
    theirs = [_gauss_key(i) for i in GAUSS_SUPPRESSED]
    assert set(primary) < set(theirs)
    secondary = sorted(set(theirs) - set(primary))
    assert secondary == ["T:B,annet", "T:D,annet", "T:H,annet"]
    got = _intervals(ctx, secondary)
    assert {k: (iv.lo, iv.hi) for k, iv in got.items()} == {
        "T:B,arbeid": (0, 6), "T:D,arbeid": (0, 6), "T:H,arbeid": (0, 6),
        "T:B,annet": (2, 8), "T:D,annet": (9, 15), "T:H,annet": (6, 12)}
    assert all(iv.certified for iv in got.values()) and not too_narrow(got, LEVELS)


@pytest.mark.parametrize("cost", ["cells", "persons"])
def test_gausssuppression_z1_our_secondary_suppression_is_theirs(z1, cost):
    """Each of rows B, D, H needs a second hidden cell, so 3 secondaries at least; the cheapest in each
    row is annet (7, 13, 9; D's trygd 13 would need a partner in its column too): 29 persons, and
    GaussSuppression's pattern is the cheapest by cells and by persons."""
    ctx, _, counts = z1
    rules = Rules("levels", (Rule("protection_levels", settings=LEVELS),))
    unit = suppress_unit(ctx, Policy.from_rules(rules), ProtectOptions(exact=ExactOptions(explain="none"), cost=cost))
    assert unit.status == "protected"
    assert unit.complementary == ["T:B,annet", "T:D,annet", "T:H,annet"]
    assert sum(counts[k] for k in unit.complementary) == 29
    assert not too_narrow(_intervals(ctx, unit.complementary), LEVELS)
