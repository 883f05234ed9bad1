"""Hierarchical code lists (schema ``hierarchies:``, inline or tau-Argus .hrc): every level's cells, the
lines between them, the exact attack against brute force, and one-line errors for bad hierarchies."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from _oracle import consistent_worlds, to_atoms, verified_claims
from audit.cli import run
from audit.errors import AuditError
from audit.attacks.exact import ExactOptions, audit_unit
from audit.inputs import load_inputs
from audit.specs.schema import load_schema

COLUMNS = "columns:\n  region: {type: categorical, values: [a, b, c, d]}\n  sex: {type: categorical, values: [F, M]}\n"
TREE = "hierarchies:\n  area:\n    from: region\n    children: {north: [n1, d], n1: [a, b], south: [c]}\n"


def _inputs(folder: Path, hierarchy: str = TREE, tables: str = "tables:\n  - {id: T, by: [area, sex]}\n",
            rows=(("a", "F"), ("b", "M"), ("c", "F"))):
    (folder / "schema.yaml").write_text(f"unit: person\ngeography: [block]\n{COLUMNS}{hierarchy}")
    (folder / "tables.yaml").write_text(tables)
    pd.DataFrame([{"block": "1", "region": r, "sex": s} for r, s in rows]).to_csv(folder / "data.csv", index=False)
    return load_inputs(folder / "data.csv", folder / "schema.yaml", folder / "tables.yaml")


def test_every_level_is_published_with_its_lines(tmp_path):
    inputs = _inputs(tmp_path)
    table, = inputs.schedule.tables
    ids = [c.id for c in table.cells]
    area = ["north", "n1", "a", "b", "d", "south", "c", "*"]  # depth first, a node before its codes
    assert ids == [f"{x},{s}" for x in area for s in ("F", "M", "*")]
    preds = {c.id: c.predicate.as_dict().get("region") for c in table.cells}
    assert preds["north,F"] == {"a", "b", "d"} and preds["n1,*"] == {"a", "b"} and preds["*,*"] is None
    lines = {(ids[t], tuple(ids[j] for j in parts)) for t, parts in table.lines}
    assert ("*,F", ("north,F", "c,F")) in lines  # the total is the sum of the top nodes (south is its one code)
    assert ("north,*", ("n1,*", "d,*")) in lines and ("n1,M", ("a,M", "b,M")) in lines
    assert ("south,F", ("c,F",)) in lines  # a node with a single code
    assert ("north,*", ("north,F", "north,M")) in lines  # and along sex


def test_hrc_file_reads_like_children(tmp_path):
    (tmp_path / "area.hrc").write_text("north\n@n1\n@@a\n@@b\n@d\nsouth\n@c\n")
    hrc = _inputs(tmp_path, "hierarchies:\n  area: {from: region, hrc: area.hrc}\n")
    inline = _inputs(tmp_path / ".." / tmp_path.name)
    assert load_schema(tmp_path / "schema.yaml").recode("area").groups == dict(inline.schema.recode("area").groups)
    assert [c.key for c in hrc.schedule.cells] == [c.key for c in inline.schedule.cells]


def test_where_takes_a_node(tmp_path):
    inputs = _inputs(tmp_path, tables="tables:\n  - {id: U, cells: [{id: x, where: {area: [north]}}]}\n")
    assert inputs.schedule.cells[0].predicate.as_dict() == {"region": {"a", "b", "d"}}


@pytest.mark.parametrize("rows", [(("a", "F"), ("b", "M"), ("c", "F")), (("a", "F"), ("d", "F"), ("d", "M"))])
def test_exact_attack_on_a_hierarchy_equals_brute_force(tmp_path, rows):
    tables = "protection: {suppress_below: 2}\ntables:\n  - {id: T, by: [area, sex]}\n"
    inputs = _inputs(tmp_path, tables=tables, rows=rows)
    release, = inputs.release()
    problem, = inputs.problems()
    worlds = [to_atoms(problem, combo) for combo in consistent_worlds(inputs.schema, inputs.schedule, release,
                                                                       len(inputs.frame))]
    result = audit_unit(problem, ExactOptions(explain="none", solution_cap=10_000))
    assert worlds and not result.undecided
    assert {v.claim for v in result.verified} == verified_claims(problem, worlds)


@pytest.mark.parametrize("tree, words", [
    ("children: {north: [a, z]}", "'z' is not a code of 'region' nor a node of the hierarchy"),
    ("children: {north: [n1], n1: [north, a], south: [b, c, d]}", "the hierarchy has a cycle: north -> n1 -> north"),
    ("children: {north: [a, b], south: [b, c, d]}", "'b' is under both 'north' and 'south'"),
    ("children: {north: [a, b], south: [c]}", "code 'd' of 'region' is in no node of hierarchy 'area'"),
    ("children: {total: [a, b, c, d]}", "node 'total' covers every code of 'region'"),
    ("children: {a: [b]}", "node 'a' is also a code of 'region'"),
])
def test_bad_hierarchy_is_one_line_naming_file_and_key(tmp_path, capsys, tree, words):
    (tmp_path / "schema.yaml").write_text(f"unit: person\ngeography: [block]\n{COLUMNS}"
                                          f"hierarchies:\n  area:\n    from: region\n    {tree}\n")
    with pytest.raises(AuditError) as err:
        load_schema(tmp_path / "schema.yaml")
    assert words in str(err.value) and "schema.yaml:" in str(err.value)
    assert run(["validate", "-s", str(tmp_path / "schema.yaml")]) == 2
    out = capsys.readouterr().err.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("error:") and words in out[0]


def test_bad_hrc_names_the_file_and_line(tmp_path):
    (tmp_path / "area.hrc").write_text("north\n@a\n@@@b\n")
    (tmp_path / "schema.yaml").write_text(f"unit: person\ngeography: [block]\n{COLUMNS}"
                                          "hierarchies:\n  area: {from: region, hrc: area.hrc}\n")
    with pytest.raises(AuditError, match=r"area.hrc:3"):
        load_schema(tmp_path / "schema.yaml")
