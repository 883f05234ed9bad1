"""Every user mistake: exit 2, one 'error: WHERE: WHAT -- fix: HOW' line naming the file, key, row or
option, no traceback, and no findings or report written. Each case breaks one thing in a copy of the
7-person block and runs the real CLI in-process."""
from __future__ import annotations

import ast
import os
import shutil
import time
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest

from audit.cli import run
from audit.outputs.terminal import printable

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"
EDIT = "forbid: {marital: [M], age: {max: 14}}"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))


def edit(d: Path, name: str, old: str, new: str) -> None:
    text = (d / name).read_text(encoding="utf-8")
    assert old in text, (name, old)
    (d / name).write_text(text.replace(old, new), encoding="utf-8")


def write(d: Path, name: str, text: str) -> None:
    (d / name).write_text(text, encoding="utf-8")


def table(d: Path, body: str) -> None:
    write(d, "tables.yaml", f"tables:\n  - id: T\n    geography: block\n    {body}\n")


def cmd(d: Path, command: str = "run", *extra: str, data: str = "data.csv") -> list[str]:
    """``audit COMMAND DATA -s schema.yaml -t tables.yaml -o out ...`` on the copy in ``d``."""
    return [command, str(d / data), "-s", str(d / "schema.yaml"), "-t", str(d / "tables.yaml"), "-o", str(d / "out"),
            *extra]


def validate(d: Path, data: bool = False) -> list[str]:
    return ["validate", "-s", str(d / "schema.yaml"), "-t", str(d / "tables.yaml")] + (
        ["-d", str(d / "data.csv")] if data else [])


def rows(d: Path, *lines: str, name: str = "data.csv") -> None:
    write(d, name, "block,age,sex,race,marital\n" + "".join(line + "\n" for line in lines))


def release(d: Path, old: str = "", new: str = "", drop: str = "") -> None:
    """block7's release as audit tabulate writes it, in d/release.csv: ``old`` replaced by ``new``
    (appended when ``old`` is empty and ``new`` is not), or the column ``drop`` left out."""
    from audit.inputs import default_paths, load_inputs
    from audit.release.tabulate import release_frame

    inputs = load_inputs(*default_paths(BLOCK7))
    frame = release_frame(inputs.release(), inputs.schema)
    text = frame.drop(columns=[drop] if drop else []).to_csv(index=False)
    if old:
        assert old in text, old
    write(d, "release.csv", text.replace(old, new, 1) if old else text + new)


def pub(d: Path, *extra: str, command: str = "run", name: str = "release.csv") -> list[str]:
    """``audit run --published d/release.csv`` with the copy's specs."""
    return [command, "--published", str(d / name), "-s", str(d / "schema.yaml"), "-t", str(d / "tables.yaml"),
            "-o", str(d / "out"), *extra]


LP_HEAD = "\\* DB Recon *\\ \nMinimize \nArbitrary_Objective_Function: __dummy \nSubject To \n"
PERSON = "C_291839800001156_female_80.0_0_female_84_Y_N_N_N_N_N_N"


def lp(d: Path, constraints: str, variables: str = PERSON, end: str = "End\n") -> list[str]:
    """A small dbrecon LP in d/x.lp, and ``audit run --published`` on it with the SF1 specs."""
    write(d, "x.lp", LP_HEAD + constraints + "Bounds\n  __dummy = 0 \n Binaries \n" + variables + "\n" + end)
    sf1 = ROOT / "samples" / "sf1"
    return ["run", "--published", str(d / "x.lp"), "-s", str(sf1 / "schema.yaml"), "-t", str(sf1 / "tables.yaml"),
            "-o", str(d / "out")]


COUNT_2A = "0001,block,T1,2A,Female,count,4,published"


def _parquet(d: Path, frame: pd.DataFrame) -> None:
    pytest.importorskip("pyarrow")
    frame.to_parquet(d / "data.parquet")


def _three_races(d: Path) -> None:
    edit(d, "schema.yaml", "{B: Black or African American, W: White}", "{B: Black or African American, W: White, A: Asian}")


def _hrc(d: Path, content: bytes, encoding: str = "") -> None:
    """A tau-Argus hierarchy over race (with a third code, A) in d/area.hrc, named by the schema."""
    _three_races(d)
    (d / "area.hrc").write_bytes(content)
    edit(d, "schema.yaml", "constraints:", f"hierarchies:\n  area: {{from: race, hrc: area.hrc{encoding}}}\nconstraints:")


# (id, what to break -> argv, substrings the error line must hold)
Case = tuple[str, Callable[[Path], list[str]], tuple[str, ...]]
CASES: list[Case] = [
    # 1. numeric options out of range, and other usage errors: one line naming the option
    *[(f"{c}-negative-seed", lambda d, c=c: cmd(d, c, "--seed", "-1"), ("--seed", "0 or more"))
      for c in ("run", "gate", "protect", "rank")],
    ("linear-negative-seed", lambda d: ["linear", str(d / "data.csv"), "--secret", "age", "--public", "sex",
                                        "--seed", "-1", "-o", str(d / "out")], ("--seed",)),
    ("workers-0", lambda d: cmd(d, "run", "--workers", "0"), ("--workers", "1 or more")),
    ("max-rows-0", lambda d: cmd(d, "run", "--max-rows", "0"), ("--max-rows",)),
    ("max-columns-0", lambda d: cmd(d, "gate", "--max-columns", "0"), ("--max-columns",)),
    ("unit-seconds-negative", lambda d: cmd(d, "run", "--unit-seconds", "-1"), ("--unit-seconds",)),
    ("unit-seconds-zero", lambda d: cmd(d, "run", "--unit-seconds", "0"), ("--unit-seconds", "above 0")),
    ("unit-seconds-nan", lambda d: cmd(d, "run", "--unit-seconds", "nan"), ("--unit-seconds",)),
    ("conflicts-0", lambda d: cmd(d, "run", "--conflicts", "0"), ("--conflicts",)),
    ("claims-cap-negative", lambda d: cmd(d, "run", "--claims-cap", "-1"), ("--claims-cap",)),
    ("protect-unit-seconds", lambda d: cmd(d, "protect", "--unit-seconds", "-5"), ("--unit-seconds",)),
    ("protect-alpha", lambda d: cmd(d, "protect", "--alpha", "2"), ("--alpha",)),
    ("rank-runs-0", lambda d: cmd(d, "rank", "--runs", "0"), ("--runs",)),
    ("rank-lr-0", lambda d: cmd(d, "rank", "--lr", "0"), ("--lr",)),
    ("linear-queries-0", lambda d: ["linear", str(d / "data.csv"), "--secret", "age", "--public", "sex",
                                    "--queries", "0"], ("--queries",)),
    ("diff-limit", lambda d: ["diff", "a.json", "b.json", "--limit", "-1"], ("--limit",)),
    ("seed-not-a-number", lambda d: cmd(d, "run", "--seed", "abc"), ("--seed", "integer")),
    ("unknown-option", lambda d: cmd(d, "run", "--sed", "1"), ("audit run", "--sed")),
    ("missing-tables", lambda d: ["run", str(d / "data.csv"), "-s", str(d / "schema.yaml")], ("--tables",)),
    # 2. --out that is a file, lies under a file, or is a folder where a file is due
    *[(f"{c}-out-is-a-file", lambda d, c=c: (write(d, "out", ""), cmd(d, c))[1], ("--out", "is a file"))
      for c in ("run", "gate", "protect", "rank")],
    ("linear-out-is-a-file", lambda d: (write(d, "out", ""), ["linear", str(d / "data.csv"), "--secret", "age",
                                        "--public", "sex", "-o", str(d / "out")])[1], ("--out", "is a file")),
    ("demo-out-is-a-file", lambda d: (write(d, "out", ""), ["demo", "-o", str(d / "out")])[1], ("--out",)),
    ("out-under-a-file", lambda d: (write(d, "f", ""), cmd(d, "run")[:-1] + [str(d / "f" / "out")])[1],
     ("--out", "is a file")),
    ("tabulate-out-is-a-folder", lambda d: (os.mkdir(d / "out"), cmd(d, "tabulate"))[1], ("--out", "is a folder")),
    ("report-out-is-a-folder", lambda d: (write(d, "findings.json", "{}"), os.mkdir(d / "out"),
                                          ["report", str(d / "findings.json"), "-o", str(d / "out")])[2],
     ("--out", "is a folder")),
    # 3. no rows
    ("csv-header-only", lambda d: (rows(d), cmd(d, "run"))[1], ("data.csv", "no rows")),
    ("csv-header-only-gate", lambda d: (rows(d), cmd(d, "gate"))[1], ("data.csv", "no rows")),
    ("csv-header-only-streamed", lambda d: (rows(d), cmd(d, "run", "--workers", "2"))[1], ("data.csv", "no rows")),
    ("csv-header-only-inferred", lambda d: (rows(d), ["run", str(d / "data.csv"), "--infer-schema", "--geography",
                                                      "block", "-t", str(d / "tables.yaml"), "-o", str(d / "out")])[1],
     ("data.csv", "no rows")),
    ("csv-zero-bytes", lambda d: (write(d, "data.csv", ""), cmd(d, "run"))[1], ("data.csv", "empty")),
    ("parquet-no-rows", lambda d: (_parquet(d, pd.read_csv(BLOCK7 / "data.csv", dtype=str).iloc[:0]),
                                   cmd(d, "run", data="data.parquet"))[1], ("data.parquet", "no rows")),
    ("parquet-no-rows-streamed", lambda d: (_parquet(d, pd.read_csv(BLOCK7 / "data.csv", dtype=str).iloc[:0]),
                                            cmd(d, "run", "--workers", "2", data="data.parquet"))[1],
     ("data.parquet", "no rows")),
    # 4. data that break the schema's own edits
    ("row-breaks-an-edit", lambda d: (rows(d, "0001,30,F,B,S", "0001,8,F,B,M"), cmd(d, "run"))[1],
     ("data.csv", "row 2 (line 3)", "Married persons must be 15 or over", "constraints[0]")),
    ("row-breaks-an-edit-validate", lambda d: (rows(d, "0001,8,F,B,M"), validate(d, data=True))[1],
     ("data.csv", "row 1 (line 2)", "age = 8")),
    ("row-breaks-an-edit-streamed", lambda d: (rows(d, "0001,30,F,B,S", "0002,8,F,B,M"),
                                               cmd(d, "run", "--workers", "2"))[1], ("data.csv", "row 2 (line 3)")),
    ("row-breaks-an-unlabelled-edit", lambda d: (edit(d, "schema.yaml", "    label: Married persons must be 15 or over\n",
                                                      ""), rows(d, "0001,8,F,B,M"), cmd(d, "tabulate"))[2],
     ("row 1", "forbid age 0..14, marital in ['M']")),
    # 5. unit
    ("unknown-unit", lambda d: (edit(d, "schema.yaml", "unit: person", "unit: persons"), validate(d))[1],
     ("schema.yaml:2 unit", "persons", "unit: person")),
    # 6. booleans
    ("complementary-yes", lambda d: (edit(d, "tables.yaml", "complementary: false", 'complementary: "yes"'),
                                     validate(d))[1], ("tables.yaml:4 protection.complementary", "true or false")),
    ("margins-1", lambda d: (table(d, "by: [sex]\n    margins: 1"), validate(d))[1], ("tables[0].margins",)),
    ("suppressed-maybe", lambda d: (table(d, "cells: [{id: a, where: {sex: [F]}, suppressed: maybe}]"),
                                    validate(d))[1], ("tables[0].cells[0].suppressed", "'maybe'")),
    ("decimals-yes", lambda d: (table(d, "by: [sex]\n    stats: [mean(age)]\n    decimals: yes"), validate(d))[1],
     ("tables[0].decimals",)),
    ("rules-threshold-bool", lambda d: (write(d, "rules.yaml", "small_cells: {threshold: yes}\n"),
                                        cmd(d, "gate", "-r", str(d / "rules.yaml")))[1],
     ("rules.yaml:1 small_cells.threshold",)),
    # 7. edits that forbid everything or nothing
    ("empty-forbid", lambda d: (edit(d, "schema.yaml", EDIT, "forbid: {}"), cmd(d, "run"))[1],
     ("schema.yaml:10 constraints[0].forbid", "every row")),
    ("all-forbidding-edit", lambda d: (edit(d, "schema.yaml", EDIT, "forbid: {sex: [F, M], age: {min: 0}}"),
                                       cmd(d, "run"))[1], ("constraints[0].forbid", "every row")),
    ("empty-value-list-edit", lambda d: (edit(d, "schema.yaml", EDIT, "forbid: {sex: [], age: {max: 3}}"),
                                         validate(d))[1], ("constraints[0].forbid", "forbids nothing")),
    ("inverted-range-edit", lambda d: (edit(d, "schema.yaml", EDIT, "forbid: {age: {min: 20, max: 14}}"),
                                       validate(d))[1], ("constraints[0].forbid.age", "min 20 is above max 14")),
    # 8. unquoted codes that YAML 1.1 reads as booleans, numbers or null
    ("NO-in-values", lambda d: (edit(d, "schema.yaml", "{S: Single, M: Married}", "{NO: Single, M: Married}"),
                                validate(d))[1], ("schema.yaml:8 columns.marital.values.NO", "quote it: 'NO'")),
    ("yes-in-value-list", lambda d: (edit(d, "schema.yaml", "{F: Female, M: Male}", "[yes, off]"), validate(d))[1],
     ("columns.sex.values[0]", "quote it: 'yes'")),
    ("leading-zero-code", lambda d: (edit(d, "schema.yaml", "{B: Black or African American, W: White}",
                                          "{01: Black, 02: White}"), validate(d))[1],
     ("columns.race.values.01", "quote it: '01'")),
    ("NO-in-where", lambda d: (table(d, "cells: [{id: a, where: {sex: [F, NO]}}]"), validate(d))[1],
     ("tables[0].cells[0].where.sex[1]", "quote it: 'NO'")),
    ("off-in-forbid", lambda d: (edit(d, "schema.yaml", EDIT, "forbid: {marital: off}"), validate(d))[1],
     ("constraints[0].forbid.marital", "quote it: 'off'")),
    ("null-in-recode-map", lambda d: (edit(d, "schema.yaml", "constraints:", "recodes:\n  mar2: {from: marital, "
                                           "map: {single: [S], other: [~]}}\nconstraints:"), validate(d))[1],
     ("recodes.mar2.map.other[0]", "quote it: '~'")),
    ("Y-recode-key", lambda d: (edit(d, "schema.yaml", "constraints:", "recodes:\n  mar2: {from: marital, "
                                     "map: {Yes: [M], No: [S]}}\nconstraints:"), validate(d))[1],
     ("recodes.mar2.map.Yes", "quote it: 'Yes'")),
    # 9. integer domains too large to enumerate (refused before any range is built)
    ("huge-integer-domain", lambda d: (edit(d, "schema.yaml", "max: 125", "max: 1000000000"), cmd(d, "run"))[1],
     ("schema.yaml:10 constraints[0].forbid.age", "at most 10,000 values", "narrow")),  # wide: selecting on it is refused
    ("integer-domain-past-int64", lambda d: (edit(d, "schema.yaml", "min: 0, max: 125", "min: 10000000000000000000000, "
                                                  "max: 10000000000000000000125"), cmd(d, "run"))[1],
     ("schema.yaml:5 columns.age", "values beyond ±1,000,000,000,000", "shift 'age'")),
    # an inferred column past 10,000 values is wide, not refused (test_values: infer_schema)
    # 10. YAML alias bombs and cycles
    ("alias-bomb-schema", lambda d: (write(d, "schema.yaml", BOMB), validate(d))[1], ("schema.yaml", "aliases")),
    ("alias-bomb-tables", lambda d: (write(d, "tables.yaml", BOMB), cmd(d, "run"))[1], ("tables.yaml", "aliases")),
    ("alias-bomb-rules", lambda d: (write(d, "rules.yaml", BOMB), cmd(d, "gate", "-r", str(d / "rules.yaml")))[1],
     ("rules.yaml", "aliases")),
    ("alias-cycle", lambda d: (write(d, "tables.yaml", "tables: &t [*t]\n"), validate(d))[1],
     ("tables.yaml:1", "cycle")),
    # 11. what else a new user or an adversary tries
    ("rules-file-is-a-list", lambda d: (write(d, "rules.yaml", "- small_cells\n"),
                                        cmd(d, "gate", "-r", str(d / "rules.yaml")))[1], ("rules.yaml:1", "mapping")),
    ("rules-name-unknown", lambda d: cmd(d, "gate", "-r", "strictest"), ("strictest", "default")),
    ("by-geography-column", lambda d: (table(d, "by: [block, sex]"), validate(d))[1],
     ("tables[0].by[0]", "geography column")),
    ("where-geography-column", lambda d: (table(d, "cells: [{id: a, where: {block: ['0001']}}]"), validate(d))[1],
     ("tables[0].cells[0].where.block", "geography column")),
    ("engine-unknown", lambda d: cmd(d, "run", "--engine", "cplex"), ("--engine", "sat")),
    ("by-column-twice", lambda d: (table(d, "by: [sex, sex]"), validate(d))[1], ("tables[0].by[1]", "twice")),
    ("duplicate-csv-column", lambda d: (write(d, "data.csv", "block,age,sex,race,marital,sex\n0001,8,F,B,S,M\n"),
                                        cmd(d, "run"))[1], ("data.csv", "'sex' appears twice")),
    ("empty-geography-code", lambda d: (rows(d, "0001,30,F,B,S", ",8,F,B,S"), cmd(d, "run"))[1],
     ("data.csv", "row 2 (line 3)", "block is empty")),
    ("empty-schema-file", lambda d: (write(d, "schema.yaml", ""), cmd(d, "run"))[1], ("schema.yaml:1", "empty")),
    ("empty-tables-file", lambda d: (write(d, "tables.yaml", ""), cmd(d, "run"))[1], ("tables.yaml:1", "empty")),
    ("tables-is-a-folder", lambda d: (os.mkdir(d / "specs"), cmd(d, "run")[:5] + [str(d / "specs")])[1],
     ("specs", "folder")),
    ("data-is-a-folder", lambda d: (os.mkdir(d / "specs"), cmd(d, "run", data="specs"))[1], ("specs", "folder")),
    ("findings-is-a-folder", lambda d: (os.mkdir(d / "runs"), ["report", str(d / "runs")])[1], ("runs", "folder")),
    ("integer-code-is-a-boolean", lambda d: (table(d, "cells: [{id: a, where: {age: [true]}}]"), validate(d))[1],
     ("tables[0].cells[0].where.age", "not an integer")),
    ("integer-code-is-fractional", lambda d: (table(d, "cells: [{id: a, where: {age: [1.5]}}]"), validate(d))[1],
     ("where.age", "not an integer")),
    ("unknown-yaml-tag", lambda d: (edit(d, "schema.yaml", "unit: person", "unit: !!python/name:os.system x"),
                                    validate(d))[1], ("schema.yaml:2",)),
    ("list-as-key", lambda d: (write(d, "tables.yaml", "? [a, b]\n: 1\n"), validate(d))[1], ("tables.yaml:1", "key")),
    ("not-utf8-yaml", lambda d: ((d / "tables.yaml").write_bytes(b"tables: \xff\n"), validate(d))[1],
     ("tables.yaml", "UTF-8")),
    # 12. a published release without microdata (audit run --published): as strict as microdata
    ("published-unknown-table", lambda d: (release(d, COUNT_2A, COUNT_2A.replace("T1", "T9")), pub(d))[1],
     ("release.csv", "row 4 (line 5)", "table 'T9'")),
    ("published-unknown-cell", lambda d: (release(d, COUNT_2A, COUNT_2A.replace("2A", "2Z")), pub(d))[1],
     ("row 4 (line 5)", "cell '2Z'", "T1")),
    ("published-not-a-number", lambda d: (release(d, COUNT_2A, COUNT_2A.replace(",4,", ",four,")), pub(d))[1],
     ("row 4 (line 5)", "'four'", "not a number")),
    ("published-fraction-count", lambda d: (release(d, COUNT_2A, COUNT_2A.replace(",4,", ",4.5,")), pub(d))[1],
     ("row 4 (line 5)", "not an integer")),
    ("published-too-many-decimals", lambda d: (release(d, "Female,median(age),30.0", "Female,median(age),30.05"),
                                               pub(d))[1], ("row 5 (line 6)", "more than the 1 decimals")),
    ("published-missing-value", lambda d: (release(d, COUNT_2A + "\n", ""), pub(d))[1],
     ("release.csv", "unit 0001 has no value for T1:2A count", "1 of the 42 values")),
    ("published-duplicate", lambda d: (release(d, new=COUNT_2A + "\n"), pub(d))[1],
     ("row 43 (line 44)", "given twice", "line 5")),
    ("published-below-threshold", lambda d: (release(d, "Single adults,count,(D),suppressed",
                                                     "Single adults,count,2,published"), pub(d))[1],
     ("count 2 is published though T1 suppresses counts below 3",)),
    ("published-not-rounded", lambda d: (edit(d, "tables.yaml", "complementary: false", "complementary: false\n  round_to: 5"),
                                         release(d), pub(d))[2], ("count 7 is not a multiple of round_to 5",)),
    ("published-bad-status", lambda d: (release(d, COUNT_2A, COUNT_2A.replace("published", "shown")), pub(d))[1],
     ("status 'shown'",)),
    ("published-no-value-column", lambda d: (release(d, drop="value"), pub(d))[1], ("missing column", "value")),
    ("published-no-geography", lambda d: (release(d, drop="block"), pub(d))[1],
     ("missing geography column 'block'",)),
    ("published-empty-geography", lambda d: (release(d, COUNT_2A, COUNT_2A[4:]), pub(d))[1],
     ("row 4 (line 5)", "block is empty")),
    ("published-which-statistic", lambda d: (release(d, drop="statistic"), pub(d))[1],
     ("row 1 (line 2)", "which is this?", "statistic column")),
    ("published-inconsistent", lambda d: (release(d, COUNT_2A, COUNT_2A.replace(",4,", ",5,")), pub(d))[1],
     ("unit 0001", "no dataset reproduces the published values", "conflicting cells")),
    ("published-and-data", lambda d: (release(d), cmd(d, "run", "--published", str(d / "release.csv")))[1],
     ("--published", "not both")),
    ("published-rank", lambda d: (release(d), pub(d, "--rank"))[1], ("--rank", "not available with --published")),
    ("published-workers", lambda d: (release(d), pub(d, "--workers", "2"))[1], ("--published", "--workers")),
    ("published-gate-no-schema", lambda d: (release(d), [a for a in pub(d, command="gate")
                                                         if a not in ("-s", str(d / "schema.yaml"))])[1], ("--schema",)),
    ("published-file-missing", lambda d: pub(d, name="nowhere.csv"), ("nowhere.csv", "not found")),
    ("neither-data-nor-published", lambda d: ["run", "-s", str(d / "schema.yaml"), "-t", str(d / "tables.yaml"),
                                              "-o", str(d / "out")], ("DATA", "--published")),
    ("lp-bad-variable", lambda d: lp(d, "_C_P0010001_291839800001156_1: C_2918_female = 1 \n"),
     ("x.lp", "_C_P0010001_291839800001156_1", "variable 'C_2918_female'")),
    ("lp-term-outside-its-cell", lambda d: lp(d, f"_C_P0060003_291839800001156_1: {PERSON} = 1 \n"),
     ("x.lp", "black = N", "outside cell P6:P0060003")),
    ("lp-fewer-terms-than-its-cell", lambda d: lp(d, f"_C_P0010001_291839800001156_1: {PERSON} = 1 \n",
                                                  PERSON + "\n" + PERSON.replace("_84_", "_83_")),
     ("1 terms, but 2 LP variables", "P1:P0010001")),
    ("lp-not-a-count", lambda d: lp(d, f"_C_P0010001_291839800001156_1: {PERSON} = 0.5 \n"),
     ("right-hand side '0.5'",)),
    ("lp-cut-short", lambda d: lp(d, f"_C_P0010001_291839800001156_1: {PERSON} = 1 \n", end=""), ("x.lp", "cut short")),
    ("lp-not-gzip", lambda d: (write(d, "x.lp.gz", "not gzip"), lp(d, "")[:2] + [str(d / "x.lp.gz")] + lp(d, "")[3:])[1],
     ("x.lp.gz", "cannot read it")),
    # 13. paths that are not what they look like, lines with no end, hierarchies past reason (issue 30;
    # endless streams and damaged --resume files: test_bad_files.py)
    ("out-dangling-symlink", lambda d: (os.symlink(d / "nowhere" / "x", d / "out"), cmd(d, "run"))[1],
     ("--out", "symbolic link", "does not exist")),
    ("tabulate-out-dangling-symlink", lambda d: (os.symlink(d / "nowhere", d / "out"), cmd(d, "tabulate"))[1],
     ("--out", "symbolic link", "does not exist")),
    ("csv-line-never-ends", lambda d: (write(d, "data.csv", "block,age,sex,race,marital\n0001," + "9" * (2 << 20)),
                                       cmd(d, "run"))[1], ("data.csv", "line 2 is longer than 1,048,576 bytes")),
    ("csv-line-never-ends-streamed", lambda d: (write(d, "data.csv", "block,age,sex,race,marital\n0001,8,F,B,S\n"
                                                      + "0," * (1 << 20)), cmd(d, "run", "--workers", "2"))[1],
     ("data.csv", "line 3 is longer")),
    ("labels-as-a-list", lambda d: (edit(d, "schema.yaml", "constraints:", "recodes:\n  mar2: {from: marital, map: "
                                         "{single: [S], married: [M]}, labels: [Single, Married]}\nconstraints:"),
                                    validate(d))[1], ("schema.yaml:10 recodes.mar2.labels", "not be a list", "labels: {")),
    ("hierarchy-labels-as-a-list", lambda d: (_three_races(d), edit(d, "schema.yaml", "constraints:", "hierarchies:\n"
                                              "  r2: {from: race, children: {bw: [B, W], o: [A]}, labels: [x]}\n"
                                              "constraints:"), validate(d))[2], ("hierarchies.r2.labels", "list")),
    ("hrc-latin-1", lambda d: (_hrc(d, "groupé\n@B\n@W\nautre\n@A\n".encode("latin-1")), validate(d))[1],
     ("area.hrc:1", "not utf-8 text (byte 0xe9)", "encoding: latin-1")),
    ("hrc-unknown-encoding", lambda d: (_hrc(d, b"bw\n@B\n@W\no\n@A\n", ", encoding: latin-99"), validate(d))[1],
     ("hierarchies.area.encoding", "unknown encoding 'latin-99'")),
    ("hrc-101-levels", lambda d: (_hrc(d, "".join("@" * i + f"n{i}\n" for i in range(101)).encode()
                                       + b"@" * 101 + b"B\n" + b"@" * 101 + b"W\no\n@A\n"), validate(d))[1],
     ("area.hrc:101", "'n100' is 101 levels down", "at most 100 levels")),
    ("hierarchy-5000-levels", lambda d: (_three_races(d), edit(d, "schema.yaml", "constraints:", "hierarchies:\n  r2:\n"
                                         "    from: race\n    children:\n" + "".join(f"      n{i}: [n{i + 1}]\n" for i in range(4999))
                                         + "      n4999: [B, W]\n      o: [A]\nconstraints:"), cmd(d, "run"))[2],
     ("hierarchies.r2.children.n100", "at most 100 levels")),
    ("import-lp-solution-alone", lambda d: ["import-lp", str(d / "x.lp"), "-s", str(ROOT / "samples/sf1/schema.yaml"),
                                            "-t", str(ROOT / "samples/sf1/tables.yaml"), "-o", str(d / "r.csv"),
                                            "--solution", str(d / "x.sol")], ("--persons", "--solution")),
]


@pytest.fixture
def block(tmp_path: Path) -> Path:
    for name in ("schema.yaml", "tables.yaml", "data.csv"):
        shutil.copy(BLOCK7 / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(block, capsys, case):
    _, breaks, expected = case
    argv = breaks(block)
    start = time.process_time()
    code = run(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and " -- fix: " in lines[0], err
    assert "Traceback" not in err
    for text in expected:
        assert text in lines[0], (text, lines[0])
    out = block / "out"
    assert not (out.is_dir() and {p.name for p in out.iterdir()} & {"findings.json", "report.html", "junit.xml"})
    assert time.process_time() - start < 20  # refused up front, not after the attack


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_out_folder_that_cannot_be_written(block, capsys):
    locked = block / "locked"
    locked.mkdir(mode=0o500)
    assert run(cmd(block, "run")[:-1] + [str(locked / "out")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_what_is_not_a_mistake_still_runs(block, capsys):
    """A BOM, Windows line endings, quoted codes and YAML merge keys are fine."""
    edit(block, "schema.yaml", "{S: Single, M: Married}", "{'NO': Single, M: Married}")
    edit(block, "schema.yaml", "  age:", "  base: &cat {type: categorical, values: [x]}\n  age:")
    edit(block, "schema.yaml", "  sex: {type: categorical, values: {F: Female, M: Male}}",
         "  sex:\n    <<: *cat\n    values: {F: Female, M: Male}")
    edit(block, "tables.yaml", "where: {marital: [S], age: {min: 18}}", "where: {marital: ['NO'], age: {min: 18}}")
    lines = (BLOCK7 / "data.csv").read_text(encoding="utf-8").replace(",S\n", ",NO\n").splitlines()
    text = "\r\n".join([lines[0] + ",base"] + [line + ",x" for line in lines[1:]]) + "\r\n"
    (block / "data.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert run(validate(block, data=True)) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.count("ok  ") == 3


def test_printable_escapes_controls_escapes_and_bidi():
    assert printable("a\x1b[2Jb\u202ec\n\x07") == "a\\x1b[2Jb\\u202ec\\x0a\\x07"
    assert printable("Zoë, 北京 (ok)") == "Zoë, 北京 (ok)"


def test_terminal_output_carries_no_escape_sequences(block, capsys):
    """A geography code holding ESC[2J (clear screen) and U+202E (reverse text) prints inert."""
    frame = pd.read_csv(BLOCK7 / "data.csv", dtype=str)
    frame["block"] = "\x1b[2J\u202e" + frame["block"]
    frame.to_csv(block / "data.csv", index=False)
    assert run(cmd(block, "gate")) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "\\x1b[2J\\u202e0001" in out and "\x1b" not in out and "\u202e" not in out
    frame.loc[2, "sex"] = "\x1b[31mZ"
    frame.to_csv(block / "data.csv", index=False)
    assert run(validate(block, data=True)) == 2
    err = capsys.readouterr().err
    assert "row 3" in err and "\x1b" not in err


def test_every_audit_error_names_a_fix():
    """Each AuditError the package raises names where and a fix: the contract of a user error."""
    missing = []
    for path in sorted((ROOT / "audit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            has_fix = any(k.arg == "fix" for k in node.keywords)
            has_where = len(node.args) >= 2 or any(k.arg == "where" for k in node.keywords)
            if name in ("AuditError", "InconsistentRelease") and not (has_where and (len(node.args) >= 3 or has_fix)):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if name == "error" and isinstance(f.value, ast.Name) and f.value.id == "doc" and not has_fix:
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not missing, missing
