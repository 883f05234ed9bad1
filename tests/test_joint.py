"""Joint solve of a tract with its blocks (issue 20): what it proves holds in every consistent dataset."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _oracle import canonical, release_matches, to_atoms
from conftest import RECON, TRACT_SCHEMA

from audit.attacks.exact import ExactOptions, audit_unit
from audit.attacks.joint import joint_proofs, prove_tract, with_proofs
from audit.problem.build import build_problems
from audit.specs.schedule import load_schedule
from audit.specs.schema import load_schema
from audit.release.tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]

BLOCK_TABLES = ["{id: B0, geography: block, cells: [{id: total, where: {}}]}",
                "{id: B1, geography: block, by: [sex]}",
                "{id: B2, geography: block, cells: [{id: young, where: {age: [c]}}]}",
                "{id: B3, geography: block, cells: [{id: mc, where: {sex: [M], age: [c, a]}}]}"]
TRACT_TABLES = ["{id: T1, geography: tract, by: [sex, age]}",
                "{id: T2, geography: tract, by: [age]}",
                "{id: T3, geography: tract, cells: [{id: fs, where: {sex: [F], age: [s]}}, {id: ma, where: {sex: [M], age: [a]}}]}"]
KINDS = list(itertools.product("MF", "cas"))


def _frame(blocks: list[list[tuple[str, str]]], tract: str = "000100") -> pd.DataFrame:
    return pd.DataFrame([{"tract": tract, "block": str(b + 1), "sex": s, "age": a}
                         for b, rows in enumerate(blocks) for s, a in rows], columns=["tract", "block", "sex", "age"])


def _matching(schema, schedule, published, level: str, datasets: list[list[list[tuple]]]) -> list[bool]:
    """Which datasets (rows per block) reproduce ``published`` at ``level``: all tabulated at once, one tract each."""
    rows = [{"tract": f"t{i}", "block": str(b + 1), "sex": s, "age": a}
            for i, blocks in enumerate(datasets) for b, block in enumerate(blocks) for s, a in block]
    got = {r.geo: r for r in tabulate(pd.DataFrame(rows), schema, schedule) if r.level == level}
    tail = published.geo[1:]
    return [release_matches(published, got[(f"t{i}", *tail)], schedule) for i in range(len(datasets))]


def _worlds(schema, schedule, frame: pd.DataFrame, releases) -> tuple[list[list[tuple]], list[int]]:
    """Every dataset (rows per block) that reproduces every published value, by brute force; and how
    many datasets each block's own tables allow."""
    by_geo = {(r.level, r.geo): r for r in releases}
    per_block = []
    for block, rows in frame.groupby("block", sort=True):
        combos = list(itertools.combinations_with_replacement(KINDS, len(rows)))
        pad = [[] for _ in range(int(block) - 1)]
        ok = _matching(schema, schedule, by_geo[("block", ("000100", block))], "block", [pad + [list(c)] for c in combos])
        per_block.append([c for c, good in zip(combos, ok) if good])
    worlds = [[list(c) for c in combo] for combo in itertools.product(*per_block)]
    ok = _matching(schema, schedule, by_geo[("tract", ("000100",))], "tract", worlds)
    return [w for w, good in zip(worlds, ok) if good], [len(p) for p in per_block]


def test_joint_proofs_agree_with_brute_force(tmp_path):
    """Random tracts of 2-3 blocks: a unit proved to have one dataset has one histogram over its own
    tables' atoms in every dataset that reproduces the block and tract tables, and it is the truth's."""
    rng = np.random.default_rng(20)
    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    schema = load_schema(tmp_path / "schema.yaml")
    proved = not_alone = 0
    for trial in range(30):
        tables = ["B0"] + [t for t in ("B1", "B2", "B3") if rng.random() < 0.5]
        tract = [t for t in ("T1", "T2", "T3") if rng.random() < 0.5] or ["T3"]
        text = "tables:\n" + "".join(f"  - {spec}\n" for spec in BLOCK_TABLES + TRACT_TABLES
                                      if spec.split(",")[0][5:] in tables + tract)
        path = tmp_path / f"tables{trial}.yaml"
        path.write_text(text)
        schedule = load_schedule(path, schema)
        blocks = [[KINDS[int(k)] for k in rng.integers(0, len(KINDS), size=int(rng.integers(1, 4)))]
                  for _ in range(int(rng.integers(2, 4)))]
        frame = _frame(blocks)
        releases = tabulate(frame, schema, schedule)
        worlds, alone = _worlds(schema, schedule, frame, releases)
        assert worlds, "the truth reproduces its own release"
        proofs = joint_proofs(schema, schedule, releases)
        for problem in build_problems(frame, schema, schedule, releases):
            if problem.level == "block":
                b = int(problem.geo[-1]) - 1
                seen = {canonical(to_atoms(problem, w[b])) for w in worlds}
            else:
                seen = {canonical(to_atoms(problem, [r for rows in w for r in rows])) for w in worlds}
            if proofs.get((problem.level, problem.geo), ("", None))[1] is not None:
                proved += 1
                assert seen == {canonical(problem.truth)}, (text, blocks, problem.geo)
                not_alone += problem.level == "block" and alone[b] > 1
    assert proved > 20 and not_alone > 0  # the coupling proves blocks their own tables leave open


def test_inconsistent_tract_is_an_input_error(tmp_path):
    """A tract table that no dataset of the blocks can meet: one line naming the unit, never a proof."""
    from dataclasses import replace

    from audit.errors import AuditError

    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(f"  - {s}\n" for s in (BLOCK_TABLES[1], TRACT_TABLES[1])))
    schema = load_schema(tmp_path / "schema.yaml")
    schedule = load_schedule(tmp_path / "tables.yaml", schema)
    releases = tabulate(_frame([[("M", "c")], [("F", "a")]]), schema, schedule)
    parent = next(r for r in releases if r.level == "tract")
    wrong = replace(parent, values=tuple(replace(v, value=v.value + 1) if v.value else v for v in parent.values))
    with pytest.raises(AuditError, match="000100.*admit no dataset"):
        prove_tract(schema, schedule, [r for r in releases if r.level == "block"], wrong)


def _real_tract(schema, schedule) -> tuple[pd.DataFrame, list]:
    """Tract 06-037-532400 of the Bureau's extract (112 persons, 5 blocks) and its release."""
    import sys

    sys.path.insert(0, str(ROOT / "samples" / "sf1"))
    from convert import convert

    source = pd.read_csv(RECON / "extract" / "rhdf_bt_0solvar_extract.csv", dtype=str, keep_default_na=False)
    frame = convert(source[source["Block ID"].str.zfill(15).str[:11] == "06037532400"]).reset_index(drop=True)
    frame["age"] = frame["age"].astype(int)
    return frame, tabulate(frame, schema, schedule)


def test_a_real_tract_is_proved_block_by_block(sf1):
    """Tract 06-037-532400 of the Bureau's extract (112 persons, 5 blocks) with block and tract tables:
    every block and the tract proved unique, equal to the truth, and audited with no search."""
    schema, schedule = sf1[0], sf1[1]["tract"]
    frame, releases = _real_tract(schema, schedule)
    parent = next(r for r in releases if r.level == "tract")
    proof = prove_tract(schema, schedule, [r for r in releases if r.level == "block"], parent)
    assert len(proof.children) == 5 and all(proof.unique) and proof.parent_unique
    problems = with_proofs(build_problems(frame, schema, schedule, releases), joint_proofs(schema, schedule, releases))
    for problem, hist in zip([p for p in problems if p.level == "block"], proof.histograms):
        assert canonical(np.repeat(hist[0], hist[1], axis=0)) == canonical(problem.truth)
    assert all(p.proof for p in problems)
    result = audit_unit(next(p for p in problems if p.level == "tract"), ExactOptions(explain="none"))
    assert result.reconstructed and not result.undecided and len(problem.truth) < len(result.problem.truth)


def test_audit_run_without_workers_uses_the_joint_proofs(tmp_path):
    """`audit run` in one process: the blocks are proved jointly; a tract past --max-rows is coupled with
    them in cell space (issue 31), not too large, and decides what its row-slot coupled problem decides."""
    from audit.findings.document import run_exact
    from audit.inputs import load_inputs

    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(f"  - {s}\n" for s in (BLOCK_TABLES[0], TRACT_TABLES[0])))
    _frame([[("M", "c"), ("F", "a")], [("F", "a"), ("M", "s")]]).to_csv(tmp_path / "data.csv", index=False)
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    runs = [{u["geo"]: u for u in run_exact(inputs, ExactOptions(explain="none", max_rows=rows))["units"]}
            for rows in (3, 200)]
    for geo, unit in runs[0].items():
        assert unit["status"] == "done" and unit["summary"]["undecided"] == 0, geo
        assert unit["summary"] == runs[1][geo]["summary"] and unit["reconstructed"] == runs[1][geo]["reconstructed"]
        assert unit["level"] == "tract" or "proved jointly" in unit["notes"][-1]
    assert any("coupled" in n for n in runs[0]["000100"]["notes"])


def test_a_support_too_large_proves_nothing(tmp_path, monkeypatch):
    """Past MAX_SUPPORT atoms the joint solve gives up: no unit is proved, and the run goes on."""
    import audit.attacks.joint

    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(f"  - {s}\n" for s in (BLOCK_TABLES[0], TRACT_TABLES[0])))
    schema = load_schema(tmp_path / "schema.yaml")
    releases = tabulate(_frame([[("M", "c")], [("F", "a")]]), schema, load_schedule(tmp_path / "tables.yaml", schema))
    assert joint_proofs(schema, load_schedule(tmp_path / "tables.yaml", schema), releases)
    monkeypatch.setattr(audit.attacks.joint, "MAX_SUPPORT", 1)
    assert joint_proofs(schema, load_schedule(tmp_path / "tables.yaml", schema), releases) == {}


def _only(release, names: set[str], prefix: str = ""):
    """The release with only the count values named ``prefix + TABLE:CELL`` in ``names``."""
    from dataclasses import replace

    return replace(release, values=tuple(v for v in release.values if prefix + v.cell.key in names))


def _implied_by(schema, schedule, releases, parent, block: int, names: set[str], assignment, m: int) -> bool:
    """Whether propagation over the named cells alone (the block's own and the tract's as TABLE:CELL, the
    other blocks' as BLOCK/TABLE:CELL) fixes the block's count of rows matching ``assignment`` at ``m``."""
    kids = [_only(r, names, "" if j == block else f"{'/'.join(r.geo[len(parent.geo):])}/") for j, r in enumerate(releases)]
    rows, low, up = prove_tract(schema, schedule, kids, _only(parent, names), explain=False).bounds[block]
    hit = np.ones(len(rows), dtype=bool)
    for col, atom in assignment:
        hit &= rows[:, col] == atom
    return bool((low[hit] == up[hit]).all() and low[hit].sum() == m)


def test_joint_explanations_alone_imply_their_claims(tmp_path):
    """Random tracts: each record of a jointly proved block is explained by cells that, re-propagated
    without every other cell, still fix its count; some explanations need the tract's cells."""
    rng = np.random.default_rng(21)
    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    schema = load_schema(tmp_path / "schema.yaml")
    checked = tract_cells = 0
    for trial in range(30):
        tract = [t for t in ("T1", "T2", "T3") if rng.random() < 0.6] or ["T1"]
        path = tmp_path / f"tables{trial}.yaml"
        path.write_text("tables:\n" + "".join(f"  - {spec}\n" for spec in BLOCK_TABLES + TRACT_TABLES
                                              if spec.split(",")[0][5:] in ["B0", "B3"] + tract))
        schedule = load_schedule(path, schema)
        frame = _frame([[KINDS[int(k)] for k in rng.integers(0, len(KINDS), size=int(rng.integers(1, 4)))]
                        for _ in range(int(rng.integers(2, 4)))])
        releases = tabulate(frame, schema, schedule)
        kids, parent = [r for r in releases if r.level == "block"], next(r for r in releases if r.level == "tract")
        proof = prove_tract(schema, schedule, kids, parent)
        problems = with_proofs(build_problems(frame, schema, schedule, releases), joint_proofs(schema, schedule, releases))
        for j, (ok, why) in enumerate(zip(proof.unique, proof.explanations)):
            if not ok:
                continue
            problem = next(p for p in problems if p.geo == kids[j].geo)
            result = audit_unit(problem, ExactOptions())
            explained = [v for v in result.verdicts if v.cells and not v.direct]
            assert all(not v.minimal for v in explained)
            for v in explained:
                assert _implied_by(schema, schedule, kids, parent, j, set(v.cells), v.claim.assignment, v.claim.m)
                checked += 1
                tract_cells += any(c.startswith("T") for c in v.cells)
    assert checked > 10 and tract_cells > 0


def test_a_real_tracts_explanations_hold_alone(sf1):
    """Tract 06-037-532400 (112 persons, 5 blocks, block and tract tables): each block's records are
    explained by block and tract cells that alone fix them; findings list the tract cells by key."""
    from audit.findings.document import unit_json

    schema, schedule = sf1[0], sf1[1]["tract"]
    frame, releases = _real_tract(schema, schedule)
    kids, parent = [r for r in releases if r.level == "block"], next(r for r in releases if r.level == "tract")
    problems = with_proofs(build_problems(frame, schema, schedule, releases), joint_proofs(schema, schedule, releases))
    j = 0  # block 1066: its record needs tract cells (PCT12H, PCT12I)
    result = audit_unit(next(p for p in problems if p.geo == kids[j].geo), ExactOptions())
    verdict = next(v for v in result.verdicts if v.cells and not v.direct)
    assert any(c.startswith("PCT12") for c in verdict.cells)
    assert _implied_by(schema, schedule, kids, parent, j, set(verdict.cells), verdict.claim.assignment, verdict.claim.m)
    listed = [c for c in unit_json(result, kids[j])["claims"] if c.get("cells")]
    assert listed and any(k.startswith("PCT12") for c in listed for k in c["cells"])


def test_a_published_release_is_proved_jointly(tmp_path):
    """`audit run --published` on block and tract tables, no microdata: the joint solve of the published
    values gives each proved unit its one dataset, which is the truth's; its claims are verified with no
    search, and a tract past --max-rows is proved rather than too large."""
    from audit.published import run_published
    from audit.release.tabulate import release_frame

    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(f"  - {s}\n" for s in (BLOCK_TABLES[0], TRACT_TABLES[0])))
    schema = load_schema(tmp_path / "schema.yaml")
    schedule = load_schedule(tmp_path / "tables.yaml", schema)
    frame = _frame([[("M", "c"), ("F", "a")], [("F", "a"), ("M", "s")]])
    releases = tabulate(frame, schema, schedule)
    release_frame(releases, schema).to_csv(tmp_path / "release.csv", index=False)
    doc = run_published(tmp_path / "release.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml",
                        ExactOptions(max_rows=3))
    units = {u["geo"]: u for u in doc["units"]}
    truth = {p.geo: p for p in build_problems(frame, schema, schedule, releases)}
    for geo, unit in units.items():  # the tract past --max-rows: coupled with its blocks in cell space
        assert unit["status"] == "done" and unit["summary"]["undecided"] == 0, geo
        assert geo == "000100" or (unit["reconstructed"] and "proved jointly" in unit["notes"][-1])
    # the verified claims are the truth's, as a microdata audit finds them
    block = next(p for p in truth.values() if p.level == "block")
    mine = audit_unit(next(p for p in with_proofs([block], joint_proofs(schema, schedule, releases))), ExactOptions())
    listed = units["/".join(block.geo)]["claims"]
    assert {tuple(sorted(c["columns"].items())) for c in listed} <= {
        tuple(sorted((block.domains[c].name, block.domains[c].labels[a]) for c, a in v.claim.assignment)) for v in mine.verified}
    assert set(units) == {"000100", "000100/1", "000100/2"} and units["000100"]["rows"] == 4 > 3


def test_tract_cells_that_explain_a_block_show_their_published_values(tmp_path):
    """A block proved with its tract: the tract cells among its explanations carry the tract's published
    counts in the findings (what the report prints as "label = value"), in one process and at scale."""
    from audit.findings.document import run_exact
    from audit.inputs import load_inputs
    from audit.scale.runner import ScaleOptions, run_scaled

    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(
        f"  - {s}\n" for s in (BLOCK_TABLES[0], BLOCK_TABLES[3], TRACT_TABLES[0])))
    _frame([[("M", "a"), ("M", "a")], [("M", "s"), ("F", "s"), ("M", "s")]]).to_csv(tmp_path / "data.csv", index=False)
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    tract = next(r for r in inputs.release() if r.level == "tract")
    published = {v.key.rsplit(":", 1)[0]: int(v.value) for v in tract.values}
    scaled = run_scaled(tmp_path / "data.csv", inputs.schema, inputs.schedule, ExactOptions(),
                        ScaleOptions(workers=1), tmp_path / "scaled")
    for doc in (run_exact(inputs, ExactOptions()), scaled):
        block = next(u for u in doc["units"] if u["geo"] == "000100/2")
        assert "proved jointly" in block["notes"][-1]
        named = {k for c in block["claims"] for k in c.get("cells", ()) if k.startswith("T1:")}
        explaining = block["cells"]["explaining"]
        assert named and all(explaining[k] == published[k] for k in named)


def _open_tracts(tmp_path, seed: int, trials: int):
    """Random tracts of 2-3 blocks that the joint propagation leaves open: (tract problem with its joint
    system, the tract's atom rows in every dataset that reproduces the block and tract tables)."""
    rng = np.random.default_rng(seed)
    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    schema = load_schema(tmp_path / "schema.yaml")
    for trial in range(trials):
        tables = ["B0"] + [t for t in ("B1", "B2", "B3") if rng.random() < 0.5]
        tract = [t for t in ("T1", "T2", "T3") if rng.random() < 0.5] or ["T3"]
        path = tmp_path / f"tables{seed}-{trial}.yaml"
        path.write_text("tables:\n" + "".join(f"  - {spec}\n" for spec in BLOCK_TABLES + TRACT_TABLES
                                              if spec.split(",")[0][5:] in tables + tract))
        schedule = load_schedule(path, schema)
        frame = _frame([[KINDS[int(k)] for k in rng.integers(0, len(KINDS), size=int(rng.integers(1, 4)))]
                        for _ in range(int(rng.integers(2, 4)))])
        releases = tabulate(frame, schema, schedule)
        proofs = joint_proofs(schema, schedule, releases, explain=bool(trial % 2))
        if proofs[("tract", ("000100",))][1] is not None:
            continue  # proved: nothing left open
        parent = next(r for r in releases if r.level == "tract")
        problem = with_proofs(build_problems(frame, schema, schedule, [parent]), proofs)[0]
        worlds, _ = _worlds(schema, schedule, frame, releases)
        yield problem, [to_atoms(problem, [r for rows in w for r in rows]) for w in worlds]


def test_open_tract_claims_agree_with_brute_force(tmp_path):
    """Tracts left open by propagation, audited past --max-rows over their joint model: each verified claim
    holds in every dataset that reproduces the block and tract tables, each refuted one fails in one of
    them, and on these small tracts none is left undecided."""
    from audit.problem.claims import REFUTED, UNDECIDED, VERIFIED, candidates

    tally = {VERIFIED: 0, REFUTED: 0, UNDECIDED: 0}
    tracts = 0
    for problem, seen in _open_tracts(tmp_path, 22, 50):
        assert problem.joint is not None and len(problem.truth) > 1
        result = audit_unit(problem, ExactOptions(max_rows=1, explain="none"))
        assert result.status == "done" and any("joint model" in n for n in result.problem.notes)
        status = {v.claim: v.status for v in result.verdicts}
        histograms = {tuple(sorted(map(tuple, np.asarray(rows).tolist()))) for rows in seen}
        assert not result.exhausted or len(histograms) == 1  # "one dataset" only when it is so
        claims = candidates(problem.truth, sizes=problem.sizes)
        assert result.refuted == len(claims) - len(result.verdicts)  # refuted claims are counted, not listed
        for claim in claims:
            always = all(claim.count(rows) == claim.m for rows in seen)
            got = status.get(claim, REFUTED)
            assert always if got == VERIFIED else not always, (claim, got)
            tally[got] += 1
        tracts += 1
    assert tracts >= 5 and tally[VERIFIED] > 0 and tally[REFUTED] > 0 and tally[UNDECIDED] == 0, (tracts, tally)


def test_joint_points_are_datasets_of_the_release(tmp_path):
    """The MIP of an open tract's joint model: asked for an open atom's count at each value some dataset
    gives it, it finds a point whose tract histogram is one of those datasets'; at another value, none;
    and likewise below a value."""
    from audit.attacks.joint_claims import _Programs

    asked = 0
    for problem, seen in _open_tracts(tmp_path, 23, 20):
        system = problem.joint
        key = {tuple(r): i for i, r in enumerate(system.rows.tolist())}
        hists = set()
        for rows in seen:
            h = np.zeros(len(system.rows), np.int64)
            np.add.at(h, [key[tuple(r)] for r in rows.tolist()], 1)
            hists.add(tuple(h.tolist()))
        programs = _Programs(system, 0, float("inf"))
        for k in np.flatnonzero(system.top >= 0):
            c = np.zeros(system.n, np.int64)
            c[system.top[k]] = 1
            for value in range(len(problem.truth) + 2):
                point = programs.point(c, value, value)
                if any(h[k] == value for h in hists):
                    assert point is not None and tuple(system.histogram(point).tolist()) in hists
                    asked += 1
                else:
                    assert point is None
                below = programs.point(c, -np.inf, value)  # one-sided, as a refutation asks
                assert (below is None) == all(h[k] > value for h in hists)
                assert below is None or (tuple(system.histogram(below).tolist()) in hists
                                         and system.histogram(below)[k] <= value)
    assert asked > 5


def test_audit_run_decides_an_open_tract_past_max_rows(tmp_path):
    """`audit run` in one process and at scale: a tract past --max-rows that propagation leaves open (its
    cells F-senior and M-adult do not fix its sex by age) is decided, coupled with its blocks in cell space
    (issue 31), not too large; the joint system travels to workers with its own tables' problem."""
    import pickle

    from audit.findings.document import run_exact
    from audit.inputs import load_inputs
    from audit.scale.runner import ScaleOptions, run_scaled

    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(f"  - {s}\n" for s in (BLOCK_TABLES[0], TRACT_TABLES[2])))
    _frame([[("M", "a"), ("F", "s")], [("M", "c"), ("F", "c")]]).to_csv(tmp_path / "data.csv", index=False)
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    options = ExactOptions(explain="none", max_rows=3)
    problems = with_proofs(inputs.problems(), joint_proofs(inputs.schema, inputs.schedule, inputs.release()))
    tract = next(p for p in problems if p.level == "tract" and p.joint is not None)
    assert pickle.loads(pickle.dumps(tract)).joint.names == tract.joint.names
    scaled = run_scaled(tmp_path / "data.csv", inputs.schema, inputs.schedule, options, ScaleOptions(workers=1),
                        tmp_path / "scaled")
    for doc in (run_exact(inputs, options), scaled):
        unit = next(u for u in doc["units"] if u["level"] == "tract")
        assert unit["status"] == "done" and unit["summary"]["undecided"] == 0, unit
        assert unit["summary"]["verified"] > 0 and unit["summary"]["refuted"] > 0 and not unit["reconstructed"]
        assert any("coupled" in n for n in unit["notes"])


@pytest.mark.parametrize("total", [True, False])
def test_a_published_open_tract_past_max_rows_is_decided_as_from_microdata(tmp_path, total):
    """`audit run --published`, no microdata: a tract's own tables' problem that propagation leaves open takes
    a dataset of its joint model as its first candidate and is decided over that model, with the same
    verified claims as the microdata audit (a claim true in every dataset is true in any one), not too large.
    Without a total of its own (as SF1's PCT12), its blocks' published totals give its population. The
    run itself couples the tract with its blocks in cell space (issue 31), as from microdata."""
    from audit.attacks.joint import as_proved
    from audit.attacks.joint_claims import a_dataset
    from audit.attacks.joint_problems import level_problems
    from audit.published import attack_unit, published_problems, run_published
    from audit.release.tabulate import release_frame

    (tmp_path / "schema.yaml").write_text(TRACT_SCHEMA)
    tract = ("{id: T4, geography: tract, cells: [" + ("{id: total, where: {}}, " if total else "")
             + "{id: f, where: {sex: [F]}}, {id: s, where: {age: [s]}}]}")
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(f"  - {s}\n" for s in (BLOCK_TABLES[0], tract)))
    schema = load_schema(tmp_path / "schema.yaml")
    schedule = load_schedule(tmp_path / "tables.yaml", schema)
    frame = _frame([[("M", "a"), ("F", "s")], [("M", "c"), ("F", "c")]])
    releases = tabulate(frame, schema, schedule)
    options = ExactOptions(explain="none", max_rows=3)
    truth = with_proofs(build_problems(frame, schema, schedule, [r for r in releases if r.level == "tract"]),
                        joint_proofs(schema, schedule, releases))[0]
    mine = audit_unit(truth, options)
    assert mine.status == "done" and mine.refuted > 0
    # its own tables' problem, as a tract whose coupled problem is too large for cell space is attacked
    own = [r for r in releases if r.level == "tract"]
    blind = as_proved(build_problems(None, schema, schedule, own, {} if total else {("000100",): (4, 4)}),
                      joint_proofs(schema, schedule, releases))[0]
    assert blind.truth is None and blind.joint is not None and blind.n_rows == (4, 4) and 4 > options.max_rows
    assert total or "child units' published totals give 4 rows" in blind.notes[-1]
    first = a_dataset(blind.joint, 0, 10.0)
    assert first is not None and not blind.violations(first)  # a dataset of the tract's own release
    result = attack_unit(blind, options)
    assert result.status == "done" and result.problem.truth is None
    assert {v.claim for v in result.verified} == {v.claim for v in mine.verified}
    assert not [v for v in result.verdicts if v.status == "undecided"]
    release_frame(releases, schema).to_csv(tmp_path / "release.csv", index=False)
    doc = run_published(tmp_path / "release.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml", options)
    unit = next(u for u in doc["units"] if u["level"] == "tract")  # coupled with its blocks in cell space (issue 31)
    coupled = next(p for p in published_problems(releases, schema, schedule, options.max_rows) if p.level == "tract")
    assert coupled.child == "block" and coupled.n_rows == (4, 4) and coupled.truth is None
    micro = next(p for p in level_problems(frame, schema, schedule, releases, joint_proofs(schema, schedule, releases),
                                           options.max_rows) if p.level == "tract")
    assert micro.child == "block"
    assert unit["status"] == "done" and unit["summary"]["undecided"] == 0
    assert unit["summary"]["verified"] == len(audit_unit(micro, options).verified)
