"""The protected release in the peers' codes (protected.csv, review.csv, tau-Argus CSV/SBS/.hst, SDMX) and
another tool's pattern audited (``audit protect --audit-only --pattern``): tests/data/peers/README.md."""
from __future__ import annotations

import csv
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
import yaml

from audit.cli import run
from audit.errors import AuditError
from audit.inputs import load_inputs
from audit.peers import codes
from audit.peers.pattern import read_pattern, with_pattern
from audit.release.constraints import SUPPRESSED

PEERS = Path(__file__).resolve().parent / "data" / "peers"
BLOCK7 = Path(__file__).resolve().parents[1] / "samples" / "block7"
REGIONS, HOVEDINT = ["Total", *"ABCDEFGH"], ["Total", "annet", "arbeid", "soshjelp", "trygd"]
GAUSS_SUPPRESSED = (12, 13, 22, 23, 42, 43)  # GaussSuppression's z1 test (tests/test_peers.py reads them the same way)
FORMS = ("T.csv", "T.sbs", "T.hst")


def _rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("system", codes.SYSTEMS)
def test_each_code_written_reads_back_to_the_same_code(system):
    """write(read(write(status))) == write(status) for every status and system, and every code a system
    defines reads as published, primary, secondary or a structural zero."""
    for status in codes.STATUSES:
        written = codes.code(status, system)
        raw = ",".join("TRUE" if f else "FALSE" for f in written) if system == "gauss" else str(written)
        assert codes.code(codes.read(raw, system, "f.csv: row 2"), system) == written
    tables = {"tau_argus": codes.TAU_ARGUS_READ, "sbs": codes.SBS_READ, "sdctable": codes.SDCTABLE_READ,
              "sdmx": codes.SDMX_READ}
    for raw, status in tables.get(system, {}).items():
        if status is not None:
            assert codes.read(str(raw), system, "f.csv: row 2") == status


def test_a_code_not_of_its_system_names_the_row_and_the_codes():
    with pytest.raises(AuditError) as err:
        codes.read("q", "sdctable", "f.csv: row 3")
    assert err.value.line() == "f.csv: row 3: 'q' is not a sdctable status code -- fix: use one of ['s', 'z', 'u', 'x', 'w']"
    assert codes.read("-11", "tau_argus", "") == codes.SECONDARY  # tau-Argus's audit negates a failing cell's status


@pytest.fixture(scope="module")
def z1(tmp_path_factory):
    """SSBtools' z1 as microdata, published as GaussSuppression's cross table (no threshold of our own), with
    GaussSuppressionFromData's output for it (``primary``, ``suppressed``: its test's rows) and the same
    output with the primaries alone suppressed."""
    folder = tmp_path_factory.mktemp("z1")
    t = pd.read_csv(PEERS / "gausssuppression_z1.csv")
    t.loc[t.index.repeat(t["ant"]), ["region", "hovedint"]].assign(block="b1").to_csv(folder / "data.csv", index=False)
    schema = {"unit": "person", "geography": ["block"], "columns": {
        c: {"type": "categorical", "values": {v: v for v in sorted(t[c].unique())}} for c in ("region", "hovedint")}}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema))
    (folder / "tables.yaml").write_text(yaml.safe_dump({"tables": [{"id": "T", "by": ["region", "hovedint"],
                                                                    "margins": True}]}))
    rows = []
    for i, (r, h) in enumerate(((r, h) for r in REGIONS for h in HOVEDINT), start=1):
        freq = int(t[((t.region == r) | (r == "Total")) & ((t.hovedint == h) | (h == "Total"))].ant.sum())
        primary = "Total" not in (r, h) and freq <= 3
        rows.append({"region": r, "hovedint": h, "freq": freq, "primary": str(primary).upper(),
                     "suppressed": str(i in GAUSS_SUPPRESSED).upper()})
    pd.DataFrame(rows).to_csv(folder / "gauss.csv", index=False)
    pd.DataFrame(rows).assign(suppressed=[r["primary"] for r in rows]).to_csv(folder / "primaries.csv", index=False)
    return folder


def _audit(folder: Path, pattern: Path, out: str, *extra: str) -> int:
    return run(["protect", str(folder / "data.csv"), "--schema", str(folder / "schema.yaml"), "--tables",
                str(folder / "tables.yaml"), "--audit-only", "--pattern", str(pattern), "--out", str(folder / out),
                *extra])


def test_gausssuppression_z1_pattern_passes_with_each_hidden_cell_wide_enough(z1, capsys):
    """GaussSuppression's z1 pattern (B, D, H x annet and arbeid): every hidden count keeps an interval of
    7 values, as tests/test_peers.py finds; protected.csv carries them, with the cells' codes."""
    assert _audit(z1, z1 / "gauss.csv", "gauss", "--quiet") == 0
    hidden = {r["cell"]: r for r in _rows(z1 / "gauss" / "protected.csv") if r["status"] in codes.HIDDEN}
    assert {k: (r["lower"], r["upper"], r["status"], r["tau_argus"], r["sdctable"]) for k, r in hidden.items()} == {
        "B,arbeid": ("0", "6", "primary", "5", "u"), "D,arbeid": ("0", "6", "primary", "5", "u"),
        "H,arbeid": ("0", "6", "primary", "5", "u"), "B,annet": ("2", "8", "secondary", "11", "x"),
        "D,annet": ("9", "15", "secondary", "11", "x"), "H,annet": ("6", "12", "secondary", "11", "x")}
    assert all(r["value"] == "" for r in hidden.values())
    review = _rows(z1 / "gauss" / "review.csv")
    assert len(review) == 6 and {r["protected"] for r in review} == {"yes"}
    assert review[0]["reason"] == f"GaussSuppression primary, suppressed FALSE,TRUE in {z1 / 'gauss.csv'}"
    assert (z1 / "gauss" / "tauargus" / "T.hst").read_text().splitlines() == [
        "b1;B;annet;M", "b1;B;arbeid;U", "b1;D;annet;M", "b1;D;arbeid;U", "b1;H;annet;M", "b1;H;arbeid;U"]


def test_gausssuppression_z1_primaries_alone_are_named_pinned_with_the_cells_that_pin_them(z1, capsys):
    """Without its secondary cells the pattern leaves each primary pinned by its region's total less the
    region's three published cells; the report names them and the claim they prove."""
    capsys.readouterr()
    assert _audit(z1, z1 / "primaries.csv", "primaries") == 1
    out = capsys.readouterr().out
    for line in ("b1 T:B,arbeid: [1, 1]  PINNED", "b1 T:D,arbeid: [2, 2]  PINNED", "b1 T:H,arbeid: [3, 3]  PINNED",
                 "b1 proved: Exactly one person in block b1: arbeid; B. (from T:B,*, T:B,annet, T:B,soshjelp, T:B,trygd)"):
        assert line in out.splitlines()
    assert "proved: Exactly 11 persons" not in out  # a published count's own claim is not listed
    review = _rows(z1 / "primaries" / "review.csv")
    assert [(r["cell"], r["lower"], r["upper"], r["protected"]) for r in review] == [
        ("B,arbeid", "1", "1", "pinned"), ("D,arbeid", "2", "2", "pinned"), ("H,arbeid", "3", "3", "pinned")]


@pytest.mark.parametrize("column", ["status", "tau_argus", "tau_argus_sbs", "sdctable", "sdmx_conf_status"])
def test_protected_csv_read_back_by_any_code_column_writes_the_same_files(z1, column):
    """protected.csv read as a pattern through each code column, then written again: the same statuses,
    intervals and peers' files (write -> read -> write)."""
    if not (z1 / "gauss" / "protected.csv").exists():
        assert _audit(z1, z1 / "gauss.csv", "gauss", "--quiet") == 0
    assert _audit(z1, z1 / "gauss" / "protected.csv", f"again-{column}", "--quiet", "--pattern-status", column) == 0
    cut = lambda rows: [{k: v for k, v in r.items() if k != "reason"} for r in rows]  # noqa: E731
    assert cut(_rows(z1 / f"again-{column}" / "protected.csv")) == cut(_rows(z1 / "gauss" / "protected.csv"))
    for name in FORMS:
        assert (z1 / f"again-{column}" / "tauargus" / name).read_bytes() == (z1 / "gauss" / "tauargus" / name).read_bytes()


@pytest.mark.parametrize("name", ["T.csv", "T.sbs", "protected_sdmx.csv"])
def test_tauargus_and_sdmx_files_read_back_write_the_same_files(z1, name):
    """tau-Argus's code-value CSV (status number) and SBS form, as written (no header), audited as patterns
    of table T; the SDMX long form by its CONF_STATUS."""
    if not (z1 / "gauss" / "protected.csv").exists():
        assert _audit(z1, z1 / "gauss.csv", "gauss", "--quiet") == 0
    copy = z1 / name
    copy.write_bytes((z1 / "gauss" / ("" if name.startswith("protected") else "tauargus") / name).read_bytes())
    assert _audit(z1, copy, f"tau-{name}", "--quiet") == 0
    for form in (*(f"tauargus/{f}" for f in FORMS), "protected_sdmx.csv"):
        assert (z1 / f"tau-{name}" / form).read_bytes() == (z1 / "gauss" / form).read_bytes()


def test_a_pattern_of_other_counts_or_cells_is_refused_naming_the_row(z1, capsys):
    inputs = load_inputs(z1 / "data.csv", z1 / "schema.yaml", z1 / "tables.yaml")
    bad = pd.read_csv(z1 / "gauss.csv", keep_default_na=False)
    bad.loc[3, "freq"] = 99
    bad.to_csv(z1 / "bad.csv", index=False)
    with pytest.raises(AuditError) as err:
        read_pattern(z1 / "bad.csv", inputs)
    assert err.value.line() == (f"{z1 / 'bad.csv'}: row 5: cell T:*,soshjelp of unit b1 is 99 in the pattern but 283 in "
                                "the data -- fix: audit the pattern with the data, schema and tables it was made from")
    bad = pd.read_csv(z1 / "gauss.csv", keep_default_na=False)
    bad.loc[3, "region"] = "Z"
    bad.to_csv(z1 / "bad.csv", index=False)
    with pytest.raises(AuditError, match="row 5: the row names no cell of the schedule"):
        read_pattern(z1 / "bad.csv", inputs)
    assert _audit(z1, z1 / "gauss.csv", "x", "--quiet") == 0
    assert run(["protect", str(z1 / "data.csv"), "--schema", str(z1 / "schema.yaml"), "--tables",
                str(z1 / "tables.yaml"), "--pattern", str(z1 / "gauss.csv"), "--out", str(z1 / "y")]) == 2
    assert "--pattern: --pattern is audited, not protected -- fix: add --audit-only" in capsys.readouterr().err


def test_a_pattern_that_publishes_what_the_schedule_hides_is_refused(z1):
    """The schedule's own threshold would hide cells the pattern publishes: the audit would not be of it."""
    (z1 / "threshold.yaml").write_text(yaml.safe_dump({"protection": {"suppress_below": 4}, "tables": [
        {"id": "T", "by": ["region", "hovedint"], "margins": True}]}))
    inputs = load_inputs(z1 / "data.csv", z1 / "schema.yaml", z1 / "threshold.yaml")
    pattern = read_pattern(z1 / "primaries.csv", inputs)
    assert with_pattern(inputs, pattern).schedule.suppress == {"b1": frozenset(["T:B,arbeid", "T:D,arbeid", "T:H,arbeid"])}
    (z1 / "complementary.yaml").write_text(yaml.safe_dump({"protection": {"suppress_below": 4, "complementary": True},
                                                           "tables": [{"id": "T", "by": ["region", "hovedint"],
                                                                       "margins": True}]}))
    inputs = load_inputs(z1 / "data.csv", z1 / "schema.yaml", z1 / "complementary.yaml")
    with pytest.raises(AuditError, match="is published in the pattern, but the schedule's own protection hides it"):
        with_pattern(inputs, read_pattern(z1 / "primaries.csv", inputs))


def test_protected_csv_of_protect_is_the_reaudited_release(tmp_path):
    """audit protect on block7: protected.csv hides exactly what protected.yaml's release hides, publishes
    every other value as the data give it, carries the re-audit's interval for each hidden value and a
    reason; read back as a pattern it hides the same cells."""
    out = tmp_path / "out"
    assert run(["protect", str(BLOCK7 / "data.csv"), "--schema", str(BLOCK7 / "schema.yaml"), "--tables",
                str(BLOCK7 / "tables.yaml"), "--out", str(out), "--quiet"]) == 0
    rows = _rows(out / "protected.csv")
    protected = load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", out / "protected.yaml")
    release = {(("/".join(r.geo)), v.key): v for r in protected.release() for v in r.values}
    truth = {("/".join(r.geo), v.key): v for r in load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml",
                                                               BLOCK7 / "tables.yaml").release() for v in r.values}
    findings = __import__("json").loads((out / "findings.json").read_text())
    intervals = {u["geo"]: u["intervals"] for u in findings["units"]}
    assert len(rows) == len(release) == 42
    for r in rows:
        key = f"{r['table']}:{r['cell']}:{r['statistic']}"
        value = release[(r["block"], key)]
        assert (r["status"] in codes.HIDDEN) == (value.status == SUPPRESSED)
        if value.status == SUPPRESSED:
            iv = intervals[r["block"]].get(key if r["statistic"] != "count" else f"{r['table']}:{r['cell']}")
            assert r["value"] == "" and r["reason"]
            assert iv is None and r["lower"] == "" or [Fraction(r["lower"]), Fraction(r["upper"])] == [
                Fraction(x).limit_denominator(1000) for x in iv]
        else:
            assert r["value"] == truth[(r["block"], key)].text() and r["lower"] == r["upper"] == ""
    reasons = {r["cell"]: r["reason"] for r in rows if r["statistic"] == "count" and r["status"] == "secondary"}
    assert set(reasons) == {"2B", "2D", "4A"} and all(v.startswith("reconstruction: without it the published cells "
                                                                  "prove claims that fail") for v in reasons.values())
    original = load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", BLOCK7 / "tables.yaml")
    back = read_pattern(out / "protected.csv", original)
    assert back.hidden() == {"0001": frozenset(k.rpartition(":")[0] for (_, k), v in release.items()
                                               if v.status == SUPPRESSED and k.endswith(":count"))}
    assert (out / "protected.parquet").exists() == bool(__import__("importlib").util.find_spec("pyarrow"))


def test_cells_a_tract_adds_to_its_blocks_say_so_in_protected_csv(tmp_path, capsys):
    """tests/test_levels.py's tract: block b1's man and his complement are hidden by its own search, two
    more cells by the tract's joint search; protected.csv names each cell's reason by the search that hid it."""
    from test_levels import _tract

    _tract(tmp_path)
    assert run(["protect", str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t",
                str(tmp_path / "tables.yaml"), "--rules", str(tmp_path / "rules.yaml"), "-o", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    assert (f"Release to publish: {out / 'protected.csv'} (statuses in tau-Argus, sdcTable and SDMX codes; tau-Argus "
            f"files and .hst in {out / 'tauargus'}); suppressions to sign: {out / 'review.csv'}") in capsys.readouterr().out
    hidden = {(r["block"], r["cell"]): (r["status"], r["lower"], r["upper"], r["reason"])
              for r in _rows(tmp_path / "out" / "protected.csv") if r["status"] in codes.HIDDEN}
    review = {(r["unit"], r["cell"]): r["protected"] for r in _rows(tmp_path / "out" / "review.csv")}
    coupled = "coupled: without it the tables of t1 and of its child units narrow a hidden cell below the protection levels"
    assert hidden == {
        ("b1", "M"): ("primary", "0", "5", "published count under the small-cell threshold (3; small_cells rule)"),
        ("b1", "F"): ("secondary", "0", "5", "complementary: keeps a primary cell of its line from being recovered "
                                             "from the margins"),
        ("b2", "M"): ("secondary", "0", "8", coupled), ("b2", "F"): ("secondary", "0", "8", coupled)}
    assert set(review.values()) == {"yes"}  # the joint search's pattern meets the levels in the re-audit


def test_a_missing_pattern_file_is_one_line(z1, capsys):
    assert _audit(z1, z1 / "none.csv", "none", "--quiet") == 2
    assert capsys.readouterr().err.strip() == f"error: {z1 / 'none.csv'}: file not found -- fix: check the path"


def test_rounded_counts_are_rounded_in_every_code_and_means_published(tmp_path):
    """A schedule that rounds counts to 5: each count is `rounded` (tau-Argus 1, V, s, F), means stay
    `published`, nothing is hidden, so there is no interval and no reason."""
    from audit.peers.release import release_rows

    doc = yaml.safe_load((BLOCK7 / "tables.yaml").read_text())
    doc["protection"] = {"round_to": 5}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(doc))
    inputs = load_inputs(BLOCK7 / "data.csv", BLOCK7 / "schema.yaml", tmp_path / "tables.yaml")
    rows = list(release_rows(inputs.release(), inputs.schema, {}))
    assert {(r["statistic"] == "count", r["status"]) for r in rows} == {(True, "rounded"), (False, "published")}
    assert {(r["tau_argus"], r["tau_argus_sbs"], r["sdctable"], r["sdmx_conf_status"]) for r in rows} == {(1, "V", "s", "F")}
    assert {r["value"] for r in rows if r["statistic"] == "count"} <= {"0", "5", "10"}
    assert {(r["lower"], r["reason"]) for r in rows} == {("", "")}


def test_z2_primaries_as_sdctable_marks_them_leave_all_nine_pinned(tmp_path, capsys):
    """SSBtools' z2 as tests/test_cellspace.py publishes it (region within fylke, and kostragr, by
    hovedint), one file for both tables as a cross table's rows (a column a table does not break down
    is Total), with sdcTable's statuses after ``primarySuppression(type = "freq", maxN = 3)`` and no
    secondary suppression: every primary is pinned by its margins, and the report names the nine."""
    from test_cellspace import z2_folder

    f = z2_folder(tmp_path)
    inputs = load_inputs(f / "data.csv", f / "schema.yaml", f / "tables.yaml")
    rows = []
    for v in inputs.release()[0].values:
        codes_ = dict(zip(inputs.schedule.table(v.cell.table).by, v.cell.id.split(",")))
        n = int(v.value)
        rows.append({c: codes_.get(c, "*").replace("*", "Total") for c in ("fylke", "region", "kostragr", "hovedint")}
                    | {"freq": n, "sdcStatus": "u" if 0 < n <= 3 else "s"})
    pd.DataFrame(rows).to_csv(f / "sdc.csv", index=False)
    assert _audit(f, f / "sdc.csv", "out") == 1
    pinned = sorted(line.split()[1].rstrip(":") for line in capsys.readouterr().out.splitlines() if line.endswith("PINNED"))
    assert pinned == ["K:400,arbeid", "R:1,I,annet", "R:1,I,trygd", "R:10,*,arbeid", "R:10,K,arbeid", "R:4,*,arbeid",
                      "R:4,B,arbeid", "R:5,D,arbeid", "R:8,H,arbeid"]
    review = _rows(f / "out" / "review.csv")
    assert len(review) == 9 and {r["protected"] for r in review} == {"pinned"} and {r["status"] for r in review} == {"primary"}


def test_a_pattern_row_short_of_fields_or_of_a_unit_is_named(tmp_path):
    """tests/test_levels.py's tract (two blocks): a row without its block, or short of a field."""
    from test_levels import _tract

    inputs, _ = _tract(tmp_path)
    (tmp_path / "p.csv").write_text("tract,sex,status\nt1,M,primary\n")
    with pytest.raises(AuditError) as err:
        read_pattern(tmp_path / "p.csv", inputs)
    assert err.value.line() == (f"{tmp_path / 'p.csv'}: row 2: no block column, and the data have 2 units at level "
                                "block -- fix: add the geography columns ['tract', 'block']")
    (tmp_path / "p.csv").write_text("tract,block,sex,status\nt1,b1,M\n")
    with pytest.raises(AuditError, match="row 2: 3 fields under a header of 4"):
        read_pattern(tmp_path / "p.csv", inputs)
    (tmp_path / "p.csv").write_text("tract,block,sex,status\nt1,b1,M,primary\nt1,*,M,published\n")
    assert read_pattern(tmp_path / "p.csv", inputs).statuses == {"t1/b1": {"B1:M": "primary"}, "t1": {"R1:M": "published"}}


def test_z3_part_primaries_alone_as_gausssuppression_writes_them_agree_with_the_intervals(tmp_path):
    """z3's kostragr 100 regions (tests/test_peers.py's z3): GaussSuppression's cross table of its six
    columns as output rows (primary: its z3 test's maxN = 5 with zeros; suppressed: the primaries alone,
    no secondary cell). The pattern audit finds what test_peers.py finds from the intervals directly:
    of 106 hidden counts 70 pinned and 24 more narrower than 1 each way."""
    from test_peers import z3_context

    z3_context(tmp_path, ("100",), 5)
    doc = yaml.safe_load((tmp_path / "tables.yaml").read_text())
    doc.pop("suppress")
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(doc))
    inputs = load_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml")
    dims = ("fylke", "region", "kostragr", "hovedint", "mnd2", "mnd")
    rows = []
    for v in inputs.release()[0].values:
        given = dict(zip(inputs.schedule.table(v.cell.table).by, v.cell.id.split(",")))
        flag = str(int(v.value) <= 5).upper()
        rows.append({d: given.get(d, "*").replace("*", "Total") for d in dims}
                    | {"freq": int(v.value), "primary": flag, "suppressed": flag})
    pd.DataFrame(rows).to_csv(tmp_path / "gauss.csv", index=False)
    assert _audit(tmp_path, tmp_path / "gauss.csv", "out", "--quiet") == 1
    review = _rows(tmp_path / "out" / "review.csv")
    assert len(review) == 106 and {r["status"] for r in review} == {"primary"}
    assert pd.Series([r["protected"] for r in review]).value_counts().to_dict() == {"pinned": 70, "narrow": 24, "yes": 12}
    assert [(r["lower"], r["upper"], r["protected"]) for r in review if r["cell"] == "*,*,annet,M06M12,m10m12"] == [
        ("1", "1", "pinned")]
