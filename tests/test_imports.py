"""audit import: tau-Argus's own sample metadata, hierarchies and microdata (tests/data/peers/README.md) and
SSBtools' documented formulas, read as our schema, schedule and policy, then audited with the defaults."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from audit.cli import run
from audit.imports.formula import parse_formula, tables_of
from audit.imports.tauargus_files import read_arb, read_rda
from audit.inputs import load_inputs
from audit.release.constraints import PUBLISHED, SUPPRESSED
from audit.release.tabulate import tabulate

PEERS = Path(__file__).resolve().parent / "data" / "peers"
TAU = PEERS / "tauargus"


@pytest.fixture(scope="module")
def cellkey(tmp_path_factory) -> Path:
    """tau-Argus's cellkey/Magnitude sample (microdata.rda, microdata.csv, dim_sex.hrc, dim_age.hrc) with
    cellkey.arb's two tables, imported."""
    out = tmp_path_factory.mktemp("cellkey")
    assert run(["import", "tauargus", str(TAU / "cellkey.arb"), "-o", str(out)]) == 0
    return out


def _doc(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_the_batch_files_tables_rules_and_apriori_become_our_schedule_and_policy(cellkey):
    schema, tables, rules = (_doc(cellkey / n) for n in ("schema.yaml", "tables.yaml", "rules.yaml"))
    for name in ("Sex", "Age"):  # the .hrc files stay where they are, named relative to the schema
        spec = schema["hierarchies"][f"{name}_h"]
        assert spec["from"] == name and (cellkey / spec["hrc"]).resolve() == (TAU / f"dim_{name.lower()}.hrc").resolve()
    assert set(schema["columns"]) == {"Sex", "Age", "Savings"}
    assert [t["by"] for t in tables["tables"]] == [["Sex_h", "Age_h"]] * 2
    assert tables["tables"][0].get("stats", ["count"]) == ["count"] and tables["tables"][1]["stats"] == ["sum(Savings)"]
    assert all(t["protection"] == {"suppress_below": 3} for t in tables["tables"])  # FREQ(3,30)
    assert rules["small_cells"]["threshold"] == 3 and rules["dominance"] == {"n": 2, "k": 85, "action": "fail"}
    assert rules["p_percent"] == {"p": 10, "action": "fail"} and rules["pq_rule"] is False
    assert rules["protection_levels"]["upper_share"] == rules["protection_levels"]["lower_share"] == 0.3
    # cellkey.hst: 1;3;u hides, 2;Total;p publishes, female;A1;c;5 a cost, 1;4;pl;10;12 protection levels
    assert tables["suppress"] == {"all": ["T2:1,3"]}
    assert tables["apriori"] == {"all": {"publish": ["T2:2,*"], "cost": {"T2:female,A1": 5.0},
                                         "levels": {"T2:1,4": [10.0, 12.0]}}}


def test_the_imported_release_hides_what_taus_rules_make_unsafe(cellkey):
    """FREQ(3): the counts 1 and 2 of Sex x Age (leaves and the .hrc nodes) are suppressed, every other
    count published with the value pandas counts; the .hst's 1;3 cell is hidden in the sum table."""
    inputs = load_inputs(cellkey / "data.csv", cellkey / "schema.yaml", cellkey / "tables.yaml")
    release, = tabulate(inputs.frame, inputs.schema, inputs.schedule)
    raw = pd.read_csv(TAU / "microdata.csv", sep=";", header=None, dtype=str).iloc[:, :2]
    groups = {"Sex_h": {"male": {"2"}, "female": {"1"}}, "Age_h": {"A1": {"1"}, "A2": {"2"}}}
    counts = [v for v in release.values if v.cell.table == "T1"]
    assert len(counts) == 5 * 9  # Sex: *, male, 2, female, 1; Age: *, A1, 1, A2, 2, 3, 4, 5, 6
    for v in counts:
        sex, age = v.cell.id.split(",")
        mask = pd.Series(True, index=raw.index)
        for col, code, name in ((0, sex, "Sex_h"), (1, age, "Age_h")):
            if code != "*":
                mask &= raw[col].isin(groups[name].get(code, {code}))
        n = int(mask.sum())
        assert (v.status == SUPPRESSED) == (0 < n < 3) and (v.status != PUBLISHED or v.value == n), v.key
    hidden = {v.cell.key for v in release.values if v.status == SUPPRESSED and v.cell.table == "T2"}
    assert "T2:1,3" in hidden


def test_audit_run_with_the_defaults_on_the_import(cellkey, tmp_path):
    """The imported files run as they are: the dominance and p% checks read the 44 published sums (45 cells,
    one hidden by the .hst) and pass, as the two largest savings of every cell, computed here from the
    microdata, stay under 85% of it; the 4,580-record release, past --max-rows, is decided through its counts
    (its savings are summed, never selected on: audit.attacks.values), nothing undecided."""
    code = run(["run", str(cellkey / "data.csv"), "-s", str(cellkey / "schema.yaml"), "-t",
                str(cellkey / "tables.yaml"), "-r", str(cellkey / "rules.yaml"), "-o", str(tmp_path), "--quiet"])
    doc = json.loads((tmp_path / "findings.json").read_text())
    checks = {c["rule"]: c for c in doc["checks"]}
    assert code in (0, 1) and checks["undecided"]["outcome"] == "pass"
    raw = pd.read_csv(TAU / "microdata.csv", sep=";", header=None).rename(columns={0: "sex", 1: "age", 3: "s"})
    ages = {"A1": [1], "A2": [2], **{str(a): [a] for a in range(1, 7)}, "*": list(range(1, 7))}
    sexes = {"male": [2], "female": [1], "1": [1], "2": [2], "*": [1, 2]}
    share = max(sum(sorted(cell, reverse=True)[:2]) / sum(cell) for sex in sexes.values() for age in ages.values()
                if sum(cell := raw.loc[raw.sex.isin(sex) & raw.age.isin(age), "s"].tolist()) > 0)
    assert share <= 0.85
    for rule in ("dominance", "p_percent"):
        assert checks[rule]["outcome"] == "pass" and "(44 published sums)" in checks[rule]["message"]
    # T2 publishes only sums: the counts they imply are constraints, not hidden cells judged by protection_levels
    # and T2:1,3's suppressed sum of the wide Savings gets no interval: the rule says so rather than pass
    assert checks["protection_levels"]["outcome"] == "skipped"
    assert checks["protection_levels"]["message"] == ("1 suppressed sum, mean or median value of a wide column "
                                                      "(T2:1,3:sum(Savings)) gets no feasibility interval: not judged")
    assert not any(k.startswith("T2:") and k.count(":") == 1 for u in doc["units"] for k in u.get("intervals", {}))


def test_an_import_never_overwrites_without_force_nor_writes_over_an_input(cellkey, tmp_path, capsys):
    assert run(["import", "tauargus", str(TAU / "cellkey.arb"), "-o", str(cellkey)]) == 2
    assert "exists" in capsys.readouterr().err
    assert run(["import", "tauargus", str(TAU / "cellkey.arb"), "-o", str(cellkey), "--force"]) == 0
    data = tmp_path / "data.csv"
    shutil.copy(PEERS / "gausssuppression_z1.csv", data)
    assert run(["import", "formula", str(data), "-f", "~ region*hovedint", "--freq", "ant", "-o", str(tmp_path)]) == 2
    assert "input" in capsys.readouterr().err and data.read_text() == (PEERS / "gausssuppression_z1.csv").read_text()


def _batch(folder: Path, lines: str, hst: str | None = None) -> Path:
    for name in ("microdata.rda", "microdata.csv", "dim_sex.hrc", "dim_age.hrc"):
        shutil.copy(TAU / name, folder / name)
    (folder / "b.arb").write_text('<OPENMICRODATA> "microdata.csv"\n<OPENMETADATA> "microdata.rda"\n' + lines)
    if hst is not None:
        (folder / "a.hst").write_text(hst)
    return folder / "b.arb"


@pytest.mark.parametrize("lines, hst, where, words", [
    ('<SPECIFYTABLE> "Sex""Age"|<freq>||\n<SAFETYRULE> NK(2)\n', None, "b.arb:4", "takes 2 numbers"),
    ('<SPECIFYTABLE> "Sex""Agex"|<freq>||\n', None, "b.arb:3", "variable 'Agex' is not in"),
    ('<SPECIFYTABLE> "Sex""Age"|<freq>||\n<SAFETYRULE> FREQ(3,0)\n<APRIORI> "a.hst", 1, ";"\n',
     "1;3;u\n1;9;u\n", "a.hst:2", "'9' is not a code of 'Age'"),
    ('<SPECIFYTABLE> "Sex""Age"|<freq>||\n<SAFETYRULE> FREQ(3,0)\n<APRIORI> "a.hst", 1, ";"\n',
     "1;3;x\n", "a.hst:1", "unknown a-priori command"),
    ('<SPECIFYTABLE> "Sex""Age"|<freq>||\n<SAFETYRULE> FREQ(3,0)\n<APRIORI> "a.hst", 1, ";"\n',
     "1;3;u\n1;3;p\n", "a.hst:2", "hidden by an earlier line and protected"),
    ('<SPECIFYTABLE> "Sex""Age"|<freq>||\n<SAFETYRULE> FREQ(3,0)\n<APRIORI> "a.hst", 2, ";"\n', None, "b.arb:5",
     "table 2 is not specified"),
])
def test_bad_specifications_name_the_file_line_and_fix(tmp_path, capsys, lines, hst, where, words):
    assert run(["import", "tauargus", str(_batch(tmp_path, lines, hst)), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert where in err and words in err and "-- fix:" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_tau_argus_sample_metadata_and_batch_files_are_read():
    """Tau_TestW.rda (fixed width, a .hrc and digit hierarchy), vars1to5sampleG.rda and TestRecode.arb as
    the repository ships them; TestRecode.arb's microdata (tau_testW.asc) is not in the repository."""
    meta = read_rda(TAU / "Tau_TestW.rda")
    assert [(v.name, v.start, v.length) for v in meta.variables][:4] == [
        ("Year", 1, 2), ("IndustryCode", 4, 5), ("Size", 9, 2), ("Region", 12, 2)]
    region = meta.variable("Region", "")
    assert region.attributes["HIERCODELIST"] == ["region2.hrc"] and region.explanatory
    assert meta.variable("IndustryCode", "").attributes["HIERLEVELS"] == ["3", "1", "1", "0", "0"]
    assert meta.variable("Var2", "").decimals == 2 and meta.variable("Wgt", "").has("WEIGHT")
    batch = read_arb(TAU / "TestRecode.arb")
    assert [(t.explanatory, t.response) for t in batch.tables] == [(("Size", "Region"), "Var2"),
                                                                   (("Region", "IndustryCode"), "Var2")]
    assert [(r.name, r.args, r.index) for r in batch.tables[0].rules] == [("NK", (2, 75), 0), ("NK", (0, 0), 1)]
    assert [c for c, _ in batch.other].count("<RECODE>") == 3


def test_a_batch_file_whose_microdata_is_missing_names_it(tmp_path, capsys):
    """TestRecode.arb opens "tau_testW.rda" (found as Tau_TestW.rda, as Windows would) and tau_testW.asc,
    which the repository does not ship: exit 2 naming that file, nothing written."""
    assert run(["import", "tauargus", str(TAU / "TestRecode.arb"), "-o", str(tmp_path / "out")]) == 2
    assert "tau_testW.asc: file not found" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_fixed_width_file_and_a_digit_hierarchy(tmp_path):
    """vars1to5sampleG.rda's layout (NACE at 1-6 with <HIERLEVELS> 3 1 1 1, Region at 11 with Region.hrc):
    records written at those columns import with NACE's levels as nodes (first 3, 4, 5 digits)."""
    for name in ("vars1to5sampleG.rda", "Region.hrc"):
        shutil.copy(TAU / name, tmp_path / name)
    records = [("011100", "01", "1"), ("011200", "02", "4"), ("012100", "01", "7"), ("021100", "03", "2")]
    (tmp_path / "v.asc").write_text("".join(f"{n}  {s}{r}{1000 * i:>10}{0:>10}{0:>10}{0:>10}{0:>10}\n"
                                            for i, (n, s, r) in enumerate(records)))
    (tmp_path / "v.arb").write_text('<OPENMICRODATA> "v.asc"\n<OPENMETADATA> "vars1to5sampleG.rda"\n'
                                    '<SPECIFYTABLE> "NACE""Region"|<freq>||\n<SAFETYRULE> FREQ(1,0)\n')
    assert run(["import", "tauargus", str(tmp_path / "v.arb"), "-o", str(tmp_path / "out")]) == 0
    schema = _doc(tmp_path / "out" / "schema.yaml")
    assert schema["hierarchies"]["NACE_h"]["children"] == {
        "011": ["0111", "0112"], "0111": ["01110"], "01110": ["011100"], "0112": ["01120"], "01120": ["011200"],
        "012": ["0121"], "0121": ["01210"], "01210": ["012100"],
        "021": ["0211"], "0211": ["02110"], "02110": ["021100"]}
    assert list(schema["columns"]["Region"]["values"]) == [str(i) for i in range(1, 9)]  # Region.hrc's codes
    assert pd.read_csv(tmp_path / "out" / "data.csv", dtype=str)["NACE"].tolist() == [r[0] for r in records]


def test_formula_terms_are_the_ones_ssbtools_documents():
    """MakeHierFormula's example: '~ age*geo*year + age*eu*year' stands for the terms of its n = 0 form;
    the tables are the two three-way terms."""
    _, terms, _ = parse_formula("~ age*geo*year + age*eu*year")
    documented = "age + geo + eu + year + age:geo + age:eu + age:year + geo:year + eu:year + age:geo:year + age:eu:year"
    assert set(terms) == {frozenset(t.split(":")) for t in documented.split(" + ")}
    assert set(tables_of(terms)) == {frozenset({"age", "geo", "year"}), frozenset({"age", "eu", "year"})}
    _, two, _ = parse_formula("~ age*geo + age*eu + age*year + geo*year + eu*year")
    assert set(tables_of(two)) == {frozenset(t.split("*")) for t in "age*geo age*eu age*year geo*year eu*year".split()}
    assert parse_formula("y ~ (a + b):c - 1")[0:2] == ("y", [frozenset({"a", "c"}), frozenset({"b", "c"})])


@pytest.mark.parametrize("formula, cells", [("~ year*geo + year*eu", 24), ("~ year*age*geo + year*age*eu", 72)])
def test_formula_tables_publish_the_cells_formulasums_lists(tmp_path, formula, cells):
    """FormulaSums' examples over sprt_emp_withEU: our tables publish exactly the cells it lists (eu found
    to group geo, as SSBtools finds hierarchies), with its sums (ths_per in tenths as counts)."""
    frame = pd.read_csv(PEERS / "ssbtools_sprt_emp_withEU.csv", dtype=str)
    frame["tenths"] = (pd.to_numeric(frame.pop("ths_per")) * 10).round().astype(int)
    frame.to_csv(tmp_path / "sprt.csv", index=False)
    assert run(["import", "formula", str(tmp_path / "sprt.csv"), "-f", formula, "--freq", "tenths",
                "-o", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    assert _doc(out / "schema.yaml")["recodes"]["eu"] == {"from": "geo", "map": {"EU": ["Portugal", "Spain"],
                                                                                 "nonEU": ["Iceland"]}}
    inputs = load_inputs(out / "data.csv", out / "schema.yaml", out / "tables.yaml")
    release, = tabulate(inputs.frame, inputs.schema, inputs.schedule)
    ours = {}
    for v in release.values:
        by = inputs.schedule.table(v.cell.table).by
        codes = dict(zip(["geo" if b == "eu" else b for b in by], v.cell.id.split(",")))
        key = tuple(codes.get(c, "*").replace("*", "Total") for c in ("year", "age", "geo"))
        ours[key] = int(v.value)
    sums = pd.read_csv(PEERS / "ssbtools_sprt_emp_sums.csv", dtype=str)
    if "age" not in formula:
        sums = sums[sums["age"] == "Total"]
    documented = {(r.year, r.age, r.geo): round(float(r.ths_per) * 10) for r in sums.itertuples()}
    assert len(documented) == cells and ours == documented


def test_a_gausssuppression_formula_imports_and_audits_with_the_defaults(tmp_path):
    """z1 with GaussSuppression's maxN = 3: the primaries B, D, H x arbeid are hidden, and the audit (default
    policy) finds what its test says they need: secondary cells (the hidden counts are recovered)."""
    out = tmp_path / "out"
    assert run(["import", "formula", str(PEERS / "gausssuppression_z1.csv"), "-f", "~ region*hovedint",
                "--freq", "ant", "--max-n", "3", "-o", str(out)]) == 0
    inputs = load_inputs(out / "data.csv", out / "schema.yaml", out / "tables.yaml")
    release, = tabulate(inputs.frame, inputs.schema, inputs.schedule)
    assert sorted(v.cell.id for v in release.values if v.status == SUPPRESSED) == ["B,arbeid", "D,arbeid", "H,arbeid"]
    assert len(release.values) == 45
    assert run(["run", str(out / "data.csv"), "-s", str(out / "schema.yaml"), "-t", str(out / "tables.yaml"),
                "-o", str(tmp_path / "run"), "--quiet"]) == 1
    doc = json.loads((tmp_path / "run" / "findings.json").read_text())
    failing = {c["rule"] for c in doc["checks"] if c["outcome"] == "fail"}
    assert {"derived_singletons", "full_records"} <= failing


def test_a_pre_tabulated_table_is_audited_as_published(tmp_path):
    """tau-Argus's tableinput sample (TestTable.arb over pp.tab, pp.rda, region2.hrc): its frequencies with
    its statuses become a release; its 9 unsafe (U) cells, hidden and no secondary cell beside them, are
    each recovered exactly by audit run --published, at the frequency pp.tab itself gives them."""
    folder = TAU / "tableinput"
    out = tmp_path / "out"
    assert run(["import", "tauargus", str(folder / "TestTable.arb"), "-o", str(out)]) == 0
    release = pd.read_csv(out / "release.csv", dtype=str)
    tab = pd.read_csv(folder / "pp.tab", sep=";", header=None, dtype=str)
    unsafe = {f"T1:{s.strip()},{r.strip()}": int(n) for s, r, n, st in zip(tab[0], tab[1], tab[3], tab[8]) if st == "U"}
    assert len(unsafe) == 9 and set("T1:" + release.loc[release.status == "suppressed", "cell"]) == set(unsafe)
    assert run(["run", "--published", str(out / "release.csv"), "-s", str(out / "schema.yaml"), "-t",
                str(out / "tables.yaml"), "-o", str(tmp_path / "run"), "--quiet"]) == 1
    unit, = json.loads((tmp_path / "run" / "findings.json").read_text())["units"]
    assert unit.get("intervals") == {k: [n, n] for k, n in unsafe.items()}, {k: v for k, v in unit.items() if k in ("status", "reason", "note")}


def test_names_in_front_skips_the_header_line(tmp_path):
    """<NAMESINFRONT>: the free-format data's first line names the variables and is not a record."""
    _batch(tmp_path, '<SPECIFYTABLE> "Sex""Age"|<freq>||\n<SAFETYRULE> FREQ(3,0)\n')
    rda = (tmp_path / "microdata.rda").read_text().replace('<SEPARATOR> ";"', '<SEPARATOR> ";"\n<NAMESINFRONT>', 1)
    (tmp_path / "microdata.rda").write_text(rda)
    data = (TAU / "microdata.csv").read_text()
    (tmp_path / "microdata.csv").write_text("Sex;Age;HighIncome;Savings;Weigt;Key\n" + data)
    assert run(["import", "tauargus", str(tmp_path / "b.arb"), "-o", str(tmp_path / "out")]) == 0
    assert len(pd.read_csv(tmp_path / "out" / "data.csv")) == len(data.splitlines()) == 4580


def _tab_rows(path: Path) -> list[list[str]]:
    return [[f.strip().strip('"').strip() for f in line.split(";")] for line in path.read_text().splitlines()]


def _hundredths(text: str) -> int:
    whole, _, cents = text.partition(",")
    return int(whole) * 100 + int(cents.ljust(2, "0"))


def test_a_tab_s_values_costs_and_levels_are_imported_as_the_file_gives_them(tmp_path):
    """pp.tab's Var2 (2 decimals) becomes sum(Var2) in hundredths beside the counts, hidden where the status is
    U; its Var2_Cost the schedule's apriori cost and its protection levels apriori levels (in the sum's units),
    cell by cell as the file gives them; the published sums carry their frequency and Top1, Top2."""
    folder = TAU / "tableinput"
    out = tmp_path / "out"
    assert run(["import", "tauargus", str(folder / "TestTable.arb"), "-o", str(out)]) == 0
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    sums = release[release.statistic == "sum(Var2)"].set_index("cell")
    apriori = _doc(out / "tables.yaml")["apriori"]["all"]
    rows = [r for r in _tab_rows(folder / "pp.tab") if r[1] != "99"]  # Region 99: no code of region2.hrc
    assert len(rows) == len(sums) == 153
    for size, region, value, freq, _, cost, top1, top2, status, lower, upper in rows:
        cell = ",".join("*" if c == "Total" else c for c in (size, region))
        got = sums.loc[cell]
        if status == "U":
            assert (got.value, got.status, got.top) == ("(D)", "suppressed", "")
        else:
            assert (got.value, got.status, got.contributors) == (str(_hundredths(value)), "published", freq)
            assert got.top == f"{_hundredths(top1)} {_hundredths(top2)}"
        assert apriori["cost"][f"T1:{cell}"] == _hundredths(cost) / 100
        assert apriori["levels"][f"T1:{cell}"] == [_hundredths(lower), _hundredths(upper)]
    schema = _doc(out / "schema.yaml")
    assert schema["columns"]["Var2"] == {"type": "integer", "min": 0,
                                         "max": max(_hundredths(r[6]) for r in rows)}
    assert _doc(out / "rules.yaml")["dominance"] is False  # TestTable.arb has no <SAFETYRULE>


def test_a_tab_s_top_contributors_are_judged_by_the_batch_file_s_dominance_rule(tmp_path, capsys):
    """With NK(1,30) added to TestTable.arb, the cells whose Top1 is over 30% of the value (computed here from
    pp.tab) are sensitive: the hidden ones become the schedule's suppress list, each published one is named by
    the import, and audit run --published fails dominance on exactly those published sums."""
    folder = tmp_path / "tab"
    shutil.copytree(TAU / "tableinput", folder)
    arb = folder / "TestTable.arb"
    arb.write_text(arb.read_text().replace("<READTABLE>", "<SAFETYRULE> NK(1,30)\n<READTABLE>"))
    out = tmp_path / "out"
    assert run(["import", "tauargus", str(arb), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    sensitive = {}
    for size, region, value, _, _, _, top1, _, status, _, _ in _tab_rows(folder / "pp.tab"):
        if _hundredths(value) and 100 * _hundredths(top1) > 30 * _hundredths(value):
            sensitive[",".join("*" if c == "Total" else c for c in (size, region))] = status
    published = {c for c, s in sensitive.items() if s != "U"}
    assert published == {"2,Os", "4,Zd", "4,11"}
    assert _doc(out / "tables.yaml")["suppress"]["all"] == [f"T1:{c}" for c, s in sensitive.items() if s == "U"]
    for cell in published:
        assert f"T1:{cell} is sensitive (dominance: largest contributor 33.3% of the total > k=30%) yet the .tab " \
               "publishes it (status S)" in err
    assert _doc(out / "rules.yaml")["dominance"] == {"n": 1, "k": 30, "action": "fail"}
    assert run(["run", "--published", str(out / "release.csv"), "-s", str(out / "schema.yaml"), "-t",
                str(out / "tables.yaml"), "-r", str(out / "rules.yaml"), "-o", str(tmp_path / "run"), "--quiet"]) == 1
    check, = [c for c in json.loads((tmp_path / "run" / "findings.json").read_text())["checks"]
              if c["rule"] == "dominance"]
    assert check["outcome"] == "fail" and set(check["cells"]) == {f"T1:{c}:sum(Var2)" for c in published}


@pytest.mark.parametrize("old, new, message", [
    ("5,00;6;5,00", "5,0x;6;5,00", "'Var2' is '5,0x', not a number -- fix: give numbers (a decimal point or comma)"),
    ("5,00;6;5,00", "5,001;6;5,00", "'Var2' is 5,001, more decimals than <DECIMALS> 2 -- fix: round it, or raise "
     "<DECIMALS> for Var2"),
    ("5,00;6;5,00", "5,00;6.5;5,00", "frequency '6.5' is not a count -- fix: give whole numbers 0 or more"),
    (";U;", ";X;", "'X' is not a tab status code -- fix: use one of ['S', 'P', 'U', 'M', 'E']"),
    ("U;0,75;0,75", "U;-0,75;0,75", "'LowerProtLevel' is -0,75, below 0 -- fix: give costs and protection levels "
     "0 or more"),
    ("U;0,75;0,75", "U;0,75", "10 fields split at ';', the metadata lists 11 variables -- fix: give one field per "
     "variable of {rda}"),
])
def test_a_malformed_tab_line_is_one_error_naming_the_file_line_and_fix(tmp_path, capsys, old, new, message):
    folder = tmp_path / "tab"
    shutil.copytree(TAU / "tableinput", folder)
    lines = (folder / "pp.tab").read_text().splitlines(keepends=True)
    assert lines[19].startswith('" 2";"Nr";5,00;6;') and old in lines[19]
    lines[19] = lines[19].replace(old, new)
    (folder / "pp.tab").write_text("".join(lines))
    assert run(["import", "tauargus", str(folder / "TestTable.arb"), "-o", str(tmp_path / "out")]) == 2
    expected = f"{folder / 'pp.tab'}:20: " + message.format(rda=folder / "pp.rda")
    assert capsys.readouterr().err == f"error: {expected}\n" and not (tmp_path / "out").exists()


@pytest.mark.parametrize("column, row, text, words", [
    ("top", 0, "1 x", "are not whole numbers"),
    ("contributors", 0, "1", "2 non-zero top contributions but 1 contributors"),
    ("top", "count", "5 1", "is not a published sum"),
])
def test_a_release_s_contributors_are_checked(tmp_path, capsys, column, row, text, words):
    """The release's contributors and top columns (which the .tab import writes) are read strictly."""
    out = tmp_path / "out"
    assert run(["import", "tauargus", str(TAU / "tableinput" / "TestTable.arb"), "-o", str(out)]) == 0
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    i = int(release.index[release.statistic == "count"][0] if row == "count"
            else release.index[release.statistic == "sum(Var2)"][row])
    release.loc[i, column] = text
    release.to_csv(out / "release.csv", index=False)
    capsys.readouterr()
    assert run(["run", "--published", str(out / "release.csv"), "-s", str(out / "schema.yaml"), "-t",
                str(out / "tables.yaml"), "-o", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "release.csv" in err and words in err and "-- fix:" in err and "Traceback" not in err
