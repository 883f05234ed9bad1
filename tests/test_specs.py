"""User errors in the specs and data: exit code 2, one line naming file and key or row, a fix, no traceback."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from audit.cli import run
from audit.errors import AuditError

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"
TABLE = """tables:
  - id: {tid}
    geography: block
    {body}
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    """A copy of the 7-person block sample to break one piece at a time."""
    for name in ("schema.yaml", "tables.yaml", "data.csv"):
        shutil.copy(BLOCK7 / name, tmp_path / name)
    return tmp_path


def fail(capsys, *argv: str) -> str:
    """Run the CLI, expect exit code 2 and a single 'error: ... -- fix: ...' line; return it."""
    code = run(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and " -- fix: " in lines[0], err
    assert "Traceback" not in err
    return lines[0]


def validate(spec: Path, tables: bool = True, data: bool = False) -> list[str]:
    argv = ["validate", "--schema", str(spec / "schema.yaml")]
    argv += ["--tables", str(spec / "tables.yaml")] if tables else []
    return argv + (["--data", str(spec / "data.csv")] if data else [])


def write_table(spec: Path, body: str, tid: str = "T") -> None:
    (spec / "tables.yaml").write_text(TABLE.format(tid=tid, body=body), encoding="utf-8")


def test_valid_sample_passes(spec, capsys):
    assert run(validate(spec, data=True)) == 0
    assert capsys.readouterr().out.count("ok  ") == 3


def test_malformed_yaml_names_file_and_line(spec, capsys):
    (spec / "schema.yaml").write_text("unit: person\ngeography: [block\ncolumns: {}\n", encoding="utf-8")
    line = fail(capsys, *validate(spec, tables=False))
    assert "schema.yaml:3" in line and "malformed YAML" in line


def test_unknown_column_in_by(spec, capsys):
    write_table(spec, "by: [sex, colour]")
    line = fail(capsys, *validate(spec))
    assert "tables.yaml:" in line and "tables[0].by[1]" in line and "'colour'" in line


def test_unknown_column_in_where(spec, capsys):
    write_table(spec, "cells:\n      - {id: a, where: {colour: [red]}}")
    line = fail(capsys, *validate(spec))
    assert "tables.yaml:" in line and "tables[0].cells[0].where.colour" in line and "unknown column" in line


def test_unknown_column_in_stats(spec, capsys):
    write_table(spec, "by: [sex]\n    stats: [count, mean(income)]")
    line = fail(capsys, *validate(spec))
    assert "tables.yaml:" in line and "tables[0].stats" in line and "'income'" in line


def test_unknown_column_in_recode_from(spec, capsys):
    text = (spec / "schema.yaml").read_text(encoding="utf-8")
    text += "recodes:\n  agegrp:\n    from: years\n    bins: [{code: a, min: 0, max: 17}]\n"
    (spec / "schema.yaml").write_text(text, encoding="utf-8")
    line = fail(capsys, *validate(spec, tables=False))
    assert "schema.yaml:" in line and "recodes.agegrp.from" in line and "'years'" in line


def test_code_outside_the_domain(spec, capsys):
    write_table(spec, "cells:\n      - {id: a, where: {sex: [X]}}")
    line = fail(capsys, *validate(spec))
    assert "tables[0].cells[0].where.sex" in line and "outside the domain" in line and "['F', 'M']" in line


def test_integer_range_outside_the_schema_is_a_range_error(spec, capsys):
    write_table(spec, "cells:\n      - {id: a, where: {sex: {min: 1}}}")
    line = fail(capsys, *validate(spec))
    assert "tables[0].cells[0].where.sex" in line and "integer column" in line


def test_data_value_not_in_schema_names_the_row(spec, capsys):
    lines = (spec / "data.csv").read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace(",W,", ",Z,")
    (spec / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    line = fail(capsys, *validate(spec, data=True))
    assert "data.csv" in line and "row 3 (line 4)" in line and "race = 'Z'" in line


def test_data_missing_a_schema_column(spec, capsys):
    frame = (spec / "data.csv").read_text(encoding="utf-8").replace("marital", "married")
    (spec / "data.csv").write_text(frame, encoding="utf-8")
    line = fail(capsys, "tabulate", str(spec / "data.csv"), "-s", str(spec / "schema.yaml"),
                "-t", str(spec / "tables.yaml"))
    assert "data.csv" in line and "missing column(s) ['marital']" in line


def test_duplicate_table_ids(spec, capsys):
    body = "by: [sex]\n  - id: T\n    by: [race]"
    write_table(spec, body)
    line = fail(capsys, *validate(spec))
    assert "tables[1].id" in line and "duplicate table id 'T'" in line


def test_duplicate_cell_ids(spec, capsys):
    write_table(spec, "cells:\n      - {id: a, where: {sex: [F]}}\n      - {id: a, where: {sex: [M]}}")
    line = fail(capsys, *validate(spec))
    assert "tables[0].cells[1].id" in line and "duplicate cell id 'a'" in line


@pytest.mark.parametrize("which", ["schema.yaml", "tables.yaml", "data.csv"])
def test_missing_file(spec, capsys, which):
    (spec / which).unlink()
    line = fail(capsys, "tabulate", str(spec / "data.csv"), "-s", str(spec / "schema.yaml"),
                "-t", str(spec / "tables.yaml"))
    assert f"{which}: file not found" in line


def test_debug_raises_the_error_itself(spec):
    write_table(spec, "by: [colour]")
    with pytest.raises(AuditError, match="unknown column 'colour'"):
        run(["--debug", *validate(spec)])


def _audit(*argv: str) -> subprocess.CompletedProcess:
    exe = shutil.which("audit", path=os.path.dirname(sys.executable)) or shutil.which("audit")
    cmd = [exe, *argv] if exe else [sys.executable, "-c", "from audit.cli import main; main()", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_console_script_prints_one_line_and_debug_shows_traceback(spec):
    write_table(spec, "by: [colour]")
    plain = _audit(*validate(spec))
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.count("\n") == 1 and "tables.yaml:" in plain.stderr and "fix:" in plain.stderr
    debug = _audit("--debug", *validate(spec))
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "AuditError" in debug.stderr


ADULT = """age, sex, hours-per-week, native-country
39, Male, 40, United-States
50, Male, 13, United-States
28, Female, 40, Cuba
49, Female, 16, Cuba
"""
ADULT_SCHEMA = """unit: person
geography: [native-country]
columns:
  age: {type: integer, min: 17, max: 90}
  sex: {type: categorical, values: [Male, Female]}
  hours-per-week: {type: integer, min: 1, max: 99}
"""
ADULT_TABLES = """tables:
  - id: H
    geography: native-country
    by: [sex]
    stats: [count, mean(hours-per-week)]
"""


def adult(tmp_path: Path, data: str = ADULT, schema: str = ADULT_SCHEMA) -> list[str]:
    """UCI Adult's shape: ', ' separators and hyphenated column names; the argv of `tabulate` over it."""
    for name, text in (("data.csv", data), ("schema.yaml", schema), ("tables.yaml", ADULT_TABLES)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return ["tabulate", str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"),
            "-t", str(tmp_path / "tables.yaml")]


def test_comma_space_separators_and_a_mean_of_a_hyphenated_column(tmp_path, capsys):
    assert run(adult(tmp_path)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "native-country,level,table,cell,label,statistic,value,status"  # no " sex"
    assert "Cuba,native-country,H,Female,Female,mean(hours-per-week),28.0,published" in out  # (40 + 16) / 2


def test_a_semicolon_file_is_read_with_the_schema_delimiter(tmp_path, capsys):
    semi = ADULT.replace(",", ";")
    line = fail(capsys, *adult(tmp_path, semi))
    assert line.endswith("-- fix: the header looks separated by ';': add \"delimiter: ';'\" to "
                         f"{tmp_path / 'schema.yaml'}")
    assert run(adult(tmp_path, semi, ADULT_SCHEMA + "delimiter: ';'\n")) == 0
    capsys.readouterr()
    line = fail(capsys, *adult(tmp_path, ADULT.replace(", ", ","), ADULT_SCHEMA + "delimiter: tab\n"))
    assert line.endswith("-- fix: the header looks separated by ',': remove 'delimiter: ...' from "
                         f"{tmp_path / 'schema.yaml'} (',' is the default)")
    (tmp_path / "schema.yaml").write_text(ADULT_SCHEMA + "delimiter: ';;'\n", encoding="utf-8")
    line = fail(capsys, *validate(tmp_path, tables=False))
    assert line.endswith("delimiter: delimiter must be one character, not ';;' -- fix: e.g. delimiter: ';' "
                         "(or tab); spaces after it are skipped anyway")


def test_an_edit_beyond_the_domain_is_not_told_to_swap(spec, capsys):
    text = (spec / "schema.yaml").read_text(encoding="utf-8").replace("age: {max: 14}", "age: {min: 130}")
    (spec / "schema.yaml").write_text(text, encoding="utf-8")
    line = fail(capsys, *validate(spec, tables=False))
    assert line.endswith("constraints[0].forbid.age: min 130 is outside the domain of 'age' (0..125), so the range "
                         f"selects no value -- fix: give a min within 0..125, or widen 'age' in {spec / 'schema.yaml'}")
    write_table(spec, "cells:\n      - {id: a, where: {age: {min: 9, max: 3}}}")
    (spec / "schema.yaml").write_text(text.replace("age: {min: 130}", "age: {max: 14}"), encoding="utf-8")
    assert fail(capsys, *validate(spec)).endswith("min 9 is above max 3 -- fix: swap them")


def test_a_schema_column_no_table_publishes_is_warned(tmp_path, capsys):
    assert run(adult(tmp_path)) == 0  # age is in the schema and the data, in no table
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"warning: {tmp_path / 'tables.yaml'}: no table publishes the schema column(s) age "
                   "(in by, where, universe or a statistic); the attack holds each as one value that no claim names "
                   f"(the release says nothing of it) -- remove them from {tmp_path / 'schema.yaml'}, or publish them"]
    (tmp_path / "adults.yaml").write_text(ADULT_TABLES + "    universe: {age: {min: 18}}\n", encoding="utf-8")
    assert run(adult(tmp_path)[:-2] + ["-t", str(tmp_path / "adults.yaml")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_map_recode_labels_name_its_codes(spec, capsys):
    from audit.specs.schema import load_schema
    text = (spec / "schema.yaml").read_text(encoding="utf-8")
    text += "recodes:\n  wed: {from: marital, map: {ever: [M], never: [S]}, labels: {ever: Married, never: Single}}\n"
    (spec / "schema.yaml").write_text(text, encoding="utf-8")
    schema = load_schema(spec / "schema.yaml")
    assert [schema.code_label("wed", c) for c in ("ever", "never")] == ["Married", "Single"]
    unlabelled = text.replace(", labels: {ever: Married, never: Single}", "")
    unlabelled += "  anysex: {from: sex, map: {all: [M, F]}}\n"
    (spec / "schema.yaml").write_text(unlabelled, encoding="utf-8")
    schema = load_schema(spec / "schema.yaml")  # unlabelled: the labels of the codes it groups, in the column's order
    assert [schema.code_label("wed", c) for c in ("ever", "never")] == ["Married", "Single"]
    assert schema.code_label("anysex", "all") == "Female or Male"
    (spec / "schema.yaml").write_text(text.replace("labels: {ever", "labels: {wed"), encoding="utf-8")
    line = fail(capsys, *validate(spec, tables=False))
    assert line.endswith("recodes.wed.labels.wed: labels name 'wed', which is not a code of the map -- fix: label "
                         "the map's codes ['ever', 'never']")


def test_the_streamed_reader_takes_the_delimiter_too(tmp_path, capsys):
    """`--resume` reads the data in chunks (audit/data/stream.py): the same findings as a run in memory."""
    argv = adult(tmp_path, ADULT.replace(",", ";"), ADULT_SCHEMA + "delimiter: ';'\n")[1:]
    summaries = []
    for extra in ([], ["--resume"]):
        out = tmp_path / f"out{len(extra)}"
        assert run(["run", *argv, "-o", str(out), "--quiet", *extra]) in (0, 1), capsys.readouterr().err
        summaries.append(json.loads((out / "findings.json").read_text())["summary"])
    assert summaries[0] == summaries[1] and summaries[0]["units"] == 2
