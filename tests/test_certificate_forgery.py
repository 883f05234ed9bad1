"""Forged certificates fail ``audit check-certificates``: real runs through the CLI, tampered the ways an
adversary would (a narrowed interval in findings.json, a deleted unit line or interval certificate, a
made-up "unsat", a file of another run, altered digests), and brute force on random releases: no
narrowing of a true interval is accepted while the file keeps its witnesses."""
from __future__ import annotations

import copy
import gzip
import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from _oracle import all_datasets, random_problem

from audit.attacks.certificates import check_unit, problem_of, unit_certificates
from audit.attacks.exact import ExactOptions, make_engine
from audit.attacks.implied import LinearProof
from audit.attacks.intervals import feasibility_intervals, hidden_cells, intervals_json
from audit.cli import run
from audit.findings.certcheck import unit_against
from audit.findings.certproofs import UnitProofs
from audit.findings.certfile import FILE, Content, intervals_digest, line_bytes, release_digest, unit_release_digest
from audit.findings.files import write_json

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"
# block7's persons under a two-way table with a rule of three and complementary suppression: the
# black and white men's counts are hidden in [0, 3] (dual and range ends), the means pinned (SAT ends)
TABLES = """protection: {suppress_below: 3, complementary: true}
tables:
  - id: T1
    title: Sex by race
    geography: block
    stats: [count, mean(age)]
    decimals: 1
    cells:
      - {id: 1A, label: Total population, where: {}}
      - {id: 2A, label: Female, where: {sex: [F]}}
      - {id: 2B, label: Male, where: {sex: [M]}}
      - {id: 4A, label: Black female, where: {race: [B], sex: [F]}}
      - {id: 4B, label: Black male, where: {race: [B], sex: [M]}}
      - {id: 4C, label: White male, where: {race: [W], sex: [M]}}
      - {id: 4D, label: White female, where: {race: [W], sex: [F]}}
"""


def _audit(out: Path, tables: Path) -> None:
    assert run(["run", str(BLOCK7 / "data.csv"), "-s", str(BLOCK7 / "schema.yaml"), "-t", str(tables),
                "-o", str(out), "--no-report", "--quiet"]) == 1  # the block fails the default rules


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two real runs: the two-way table above, and block7 as shipped (another run)."""
    base = tmp_path_factory.mktemp("runs")
    (base / "tables.yaml").write_text(TABLES)
    _audit(base / "two_way", base / "tables.yaml")
    _audit(base / "block7", BLOCK7 / "tables.yaml")
    return {"two_way": base / "two_way", "block7": base / "block7"}


@pytest.fixture
def folder(runs, tmp_path) -> Path:
    """A copy of the two-way run to tamper with."""
    return Path(shutil.copytree(runs["two_way"], tmp_path / "run"))


def _certs(folder: Path) -> list[dict]:
    with gzip.open(folder / FILE, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _write_certs(folder: Path, lines: list[dict]) -> None:
    with gzip.open(folder / FILE, "wb") as fh:
        fh.writelines(line_bytes(x) for x in lines)


def _findings(folder: Path) -> dict:
    return json.loads((folder / "findings.json").read_text())


def _reseal(folder: Path, lines: list[dict], doc: dict) -> None:
    """What a forger who knows the scheme does: the seal and findings.json's record recomputed."""
    units = [x for x in lines[1:-1]]
    release = release_digest({(u["level"], u["geo"]): unit_release_digest(u) for u in units})
    lines[-1]["run"].update(intervals=intervals_digest(doc["units"]), release=release, units=len(units))
    _write_certs(folder, lines)
    content = Content()
    for line in lines:
        content.add(line)
    doc["certificates"].update(sha256=content.hexdigest(), release=release)
    write_json(doc, folder / "findings.json")


def _check(capsys, *args) -> tuple[int, str]:
    code = run(["check-certificates", *map(str, args)])
    return code, capsys.readouterr().out


def _ends(unit: dict) -> list[tuple[str, str, dict]]:
    return [(k, s, v[s]) for k, v in unit["intervals"].items() for s in ("lo", "hi") if v[s] is not None]


def test_an_untouched_run_passes_with_its_solver_ends_trusted_not_certified(runs, capsys):
    lines = _certs(runs["two_way"])
    ends = _ends(lines[1])
    sat = [f"{k}:{s}" for k, s, e in ends if e["by"] == "sat"]
    assert sat and len(sat) < len(ends)  # both kinds
    code, out = _check(capsys, runs["two_way"])
    assert code == 0
    assert f"{len(ends) - len(sat)} certified" in out and f"{len(sat)} solver-trusted" in out and " 0 failing" in out
    assert "PASS, not all certified" in out
    details = _findings(runs["two_way"])["units"][0]["interval_details"]
    assert sorted(f"{k}:{s}" for k, d in details.items() for s in d.get("solver_trusted", ())) == sorted(sat)
    code, out = _check(capsys, runs["two_way"], "--strict")
    assert code == 1 and all(f"FAIL block 0001 {name}: solver-trusted" in out for name in sat)
    assert run(["check-certificates", str(runs["block7"] / FILE)]) == 0  # the file's path works as the folder
    # the report says which exact ends rest on the solver (block7's T1:3A count, its means and medians)
    assert run(["report", str(runs["block7"] / "findings.json"), "--out", str(runs["block7"].parent / "r.html"), "--quiet"]) == 0
    html = (runs["block7"].parent / "r.html").read_text()
    assert "exact (solver-trusted)" in html and "exact, solver-trusted" in html


def test_a_narrowed_interval_in_findings_fails(folder, capsys):
    doc = _findings(folder)
    assert doc["units"][0]["intervals"]["T1:4B"] == [0, 3]
    doc["units"][0]["intervals"]["T1:4B"] = [1, 3]
    write_json(doc, folder / "findings.json")
    code, out = _check(capsys, folder)
    assert code == 1
    assert "FAIL block 0001 T1:4B:lo: findings.json states 1; the certificate is for 0" in out
    assert "FAIL findings.json intervals: not the intervals the certificates file was sealed with" in out


def test_a_changed_fraction_end_fails(folder, capsys):
    """A mean's end in findings.json moved (its exact fraction left, or moved with it)."""
    doc = _findings(folder)
    unit = doc["units"][0]
    unit["intervals"]["T1:4A:mean(age)"] = [36.7, 36.666666666666664]
    write_json(doc, folder / "findings.json")
    code, out = _check(capsys, folder)
    assert code == 1 and "T1:4A:mean(age):lo: findings.json states 36.7 and exact 110/3" in out
    unit["interval_details"]["T1:4A:mean(age)"]["exact"]["lo"] = "367/10"
    _reseal(folder, _certs(folder), doc)
    code, out = _check(capsys, folder)
    assert code == 1 and "T1:4A:mean(age):lo: findings.json states 36.7; the certificate is for 110/3" in out


def test_a_deleted_unit_line_fails_naming_every_end(folder, capsys):
    lines = _certs(folder)
    certified = [f"{k}:{s}" for k, s, _ in _ends(lines[1])]
    _write_certs(folder, [lines[0], lines[-1]])
    code, out = _check(capsys, folder)
    assert code == 1
    for name in certified:
        assert f"FAIL block 0001 {name}: findings.json states it certified; the file has no certificate for it (no line for the unit)" in out
    assert "FAIL interval_certificates.jsonl.gz units: the seal records 1 unit lines; the file has 0" in out
    _reseal(folder, [lines[0], lines[-1]], _findings(folder))  # digests recomputed: the ends still fail
    code, out = _check(capsys, folder)
    assert code == 1 and out.count("(no line for the unit)") == len(certified)


@pytest.mark.parametrize("how", ["interval", "end"])
def test_a_deleted_interval_certificate_fails(folder, capsys, how):
    lines = _certs(folder)
    if how == "interval":
        del lines[1]["intervals"]["T1:4B"]
    else:
        lines[1]["intervals"]["T1:4B"]["hi"] = None
    _reseal(folder, lines, _findings(folder))
    code, out = _check(capsys, folder)
    assert code == 1
    assert "FAIL block 0001 T1:4B:hi: findings.json states it certified; the file has no certificate for it" in out
    assert ("T1:4B:lo" in out) == (how == "interval")


def _count(unit: dict, hist: list, where: dict) -> int:
    """A count cell (``where``: column -> atoms) in a histogram of the file."""
    names = [c["name"] for c in unit["columns"]]
    return sum(r[-1] for r in hist if all(r[names.index(n)] in atoms for n, atoms in where.items()))


def _fabricate(lines: list[dict], doc: dict, key: str, value: int, drop_witnesses: bool) -> None:
    """Narrow ``key``'s lo to ``value`` in both files, the end 'proved' by a made-up unsat; with
    ``drop_witnesses`` the datasets below it are taken out of the file too (ends re-pointed)."""
    unit, stated = lines[1], doc["units"][0]
    where = unit["cells"][unit["intervals"][key]["cell"]]["where"]
    counts = [_count(unit, h, where) for h in unit["datasets"]]
    unit["intervals"][key]["lo"] = {"value": value, "dataset": counts.index(value), "by": "sat", "answer": "unsat",
                                    "asked": {"lo": None, "hi": value, "lo_open": False, "hi_open": True}}
    if drop_witnesses:
        keep = [i for i, n in enumerate(counts) if n >= value]
        unit["datasets"] = [unit["datasets"][i] for i in keep]
        for _, _, end in _ends(unit):
            end["dataset"] = keep.index(end["dataset"]) if end["dataset"] in keep else 0
    stated["intervals"][key][0] = value
    stated["interval_details"][key]["solver_trusted"] = ["lo"]


@pytest.mark.parametrize("drop_witnesses", [False, True])
def test_a_fabricated_unsat_fails(folder, capsys, drop_witnesses):
    """T1:4B in [0, 3] narrowed to [1, 3], its lo 'proved' by a made-up unsat: the witnesses of 4B = 0
    still in the file refute it; taken out, the ends that needed them fail. Resealed or not."""
    lines, doc = _certs(folder), _findings(folder)
    _fabricate(lines, doc, "T1:4B", 1, drop_witnesses)
    _write_certs(folder, lines)
    write_json(doc, folder / "findings.json")
    code, out = _check(capsys, folder)
    assert code == 1 and "FAIL findings.json intervals" in out and "FAIL findings.json certificates" in out
    _reseal(folder, lines, doc)
    code, out = _check(capsys, folder)
    assert code == 1 and "findings.json intervals" not in out
    if drop_witnesses:
        assert "does not reproduce the release" in out or "gives the cell" in out
    else:
        assert "FAIL block 0001 T1:4B: a dataset of the file reproduces the release and gives 0, outside the stated [1, 3]" in out


def test_a_file_of_another_run_fails(runs, folder, capsys):
    shutil.copy(runs["block7"] / FILE, folder / FILE)
    code, out = _check(capsys, folder)
    assert code == 1
    assert "FAIL findings.json intervals" in out and "FAIL findings.json certificates: records another certificates file" in out
    assert "FAIL findings.json inputs: made from other tables than the certificates file" in out
    assert "a certificate for an interval findings.json does not state" in out
    code, out = _check(capsys, runs["block7"] / FILE, "--findings", runs["two_way"] / "findings.json")
    assert code == 1 and "made from other tables" in out


def test_tampered_digests_fail(folder, capsys):
    pristine = _certs(folder)

    def with_seal(change) -> str:
        lines = copy.deepcopy(pristine)
        change(lines)
        _write_certs(folder, lines)
        code, out = _check(capsys, folder)
        assert code == 1
        return out

    assert "FAIL findings.json intervals" in with_seal(lambda x: x[-1]["run"].update(intervals="0" * 64))
    assert "FAIL interval_certificates.jsonl.gz release" in with_seal(lambda x: x[-1]["run"].update(release="0" * 64))
    assert "made from other data" in with_seal(lambda x: x[-1]["run"]["inputs"].update(data="0" * 16))
    assert "no seal line" in with_seal(lambda x: x.pop())
    assert "a line after the seal" in with_seal(lambda x: x.append(x[1]))
    assert "a unit line changed" in with_seal(lambda x: x[1]["cells"][0].update(lo=6, hi=6))
    with gzip.open(folder / FILE, "wt", encoding="utf-8") as fh:  # the same lines written another way
        fh.writelines(json.dumps(x, indent=None) + "\n" for x in pristine)
    assert _check(capsys, folder)[0] == 0  # the digest is of their content, not their bytes
    doc = _findings(folder)
    doc["certificates"]["sha256"] = "0" * 64
    write_json(doc, folder / "findings.json")
    code, out = _check(capsys, folder)
    assert code == 1 and "FAIL findings.json certificates: records another certificates file" in out


def test_a_missing_file_or_an_old_one(folder, capsys):
    (folder / FILE).unlink()
    code, out = _check(capsys, folder)
    assert code == 1 and "FAIL interval_certificates.jsonl.gz: missing" in out and "T1:4B:lo" in out
    _write_certs(folder, [{"format": 1}])
    assert run(["check-certificates", str(folder)]) == 2
    assert "format 2" in capsys.readouterr().err
    (folder / "findings.json").unlink()
    assert run(["check-certificates", str(folder)]) == 2
    assert "findings.json not found" in capsys.readouterr().err


@pytest.mark.parametrize("seed", range(40))
def test_no_narrowing_of_a_true_interval_is_accepted(seed):
    """Random releases against brute force: move any end of any interval inward to a value some
    dataset reaches, in both the certificate and the stated interval, with a made-up unsat or the
    end's own proof: the check fails every time, while the untouched unit passes."""
    rng = np.random.default_rng(9100 + seed)
    problem = random_problem(rng, max_rows=4, numeric=seed % 2 == 0, n_cells=int(rng.integers(2, 6)))
    intervals = feasibility_intervals(problem, LinearProof(problem), lambda: make_engine(problem, ExactOptions()))
    unit = unit_certificates(problem, intervals)
    if unit is None:
        return
    unit = json.loads(json.dumps(unit))
    stated, details = intervals_json(intervals)
    assert unit_against(unit, stated, details).failures == {}
    cells, datasets = hidden_cells(problem), all_datasets(problem)
    tried = 0
    for key, iv in intervals.items():
        values = sorted({v for v in (problem.value(rows, cells[key]) for rows in datasets) if v is not None})
        assert (iv.lo, iv.hi) == (values[0], values[-1])
        for side, inner in (("lo", values[1:]), ("hi", values[:-1][::-1])):
            if not inner:
                continue
            value = inner[0]
            witness = next(rows for rows in datasets if problem.value(rows, cells[key]) == value)
            for fabricated in (True, False):
                forged, s, d = copy.deepcopy(unit), copy.deepcopy(stated), copy.deepcopy(details)
                end = forged["intervals"][key][side]
                forged["datasets"].append(_histogram(witness))
                end.update(value=_num(value), dataset=len(forged["datasets"]) - 1)
                if fabricated:
                    end.update(by="sat", answer="unsat", asked={
                        "lo": None if side == "lo" else _num(value), "hi": _num(value) if side == "lo" else None,
                        "lo_open": side == "hi", "hi_open": side == "lo"})
                    d[key]["solver_trusted"] = sorted({*d[key].get("solver_trusted", ()), side})
                s[key] = [float(value) if side == "lo" else s[key][0], float(value) if side == "hi" else s[key][1]]
                d[key]["exact"] = {**d[key].get("exact", {}), side: str(Fraction(value))}
                assert unit_against(forged, s, d).failures, (key, side, fabricated)
                tried += 1
    assert tried or all(iv.lo == iv.hi for iv in intervals.values())
    assert check_unit(unit).failures == {}


def _histogram(rows: np.ndarray) -> list:
    distinct, counts = np.unique(np.asarray(rows, dtype=np.int64), axis=0, return_counts=True)
    return np.column_stack([distinct, counts]).tolist()


def _num(v):
    v = Fraction(v)
    return v.numerator if v.denominator == 1 else str(v)


def test_proofs_need_drat_trim(runs, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no drat-trim here
    assert run(["check-certificates", str(runs["two_way"]), "--proofs"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "drat-trim not found" in err and "without --proofs" in err


DRAT_TRIM = shutil.which("drat-trim")


@pytest.mark.skipif(DRAT_TRIM is None, reason="drat-trim is not installed (github.com/marijnheule/drat-trim)")
def test_proofs_certify_the_solver_ends_and_refute_a_fabricated_one(runs, folder, capsys):
    """With --proofs every SAT end of the untouched run is proved again and drat-trim verifies each
    proof: all certified. A made-up unsat that no witness in the file contradicts any more (they were
    taken out, and the ends that needed them narrowed too) passes without --proofs, solver-trusted;
    with them the solver finds a dataset past the end."""
    code, out = _check(capsys, runs["two_way"], "--proofs")
    sat = sum(e["by"] == "sat" for _, _, e in _ends(_certs(runs["two_way"])[1]))
    assert code == 0 and f"{sat} by DRUP proofs drat-trim verified" in out and " 0 solver-trusted" in out
    assert "PASS: every exact end certified" in out
    lines, doc = _certs(folder), _findings(folder)
    key, side, value, dropped = _quiet_forgery(lines[1])
    end = lines[1]["intervals"][key][side]
    sense = 1 if side == "lo" else -1
    end.update(value=_num(value), by="sat", answer="unsat", asked={
        "lo": None if sense == 1 else _num(value), "hi": _num(value) if sense == 1 else None,
        "lo_open": sense == -1, "hi_open": sense == 1})
    end["dataset"] = next(i for i, v in enumerate(_values(lines[1], key)) if v == value)
    lines[1]["datasets"][dropped] = lines[1]["datasets"][end["dataset"]]  # its witness, gone (indices kept)
    stated = doc["units"][0]
    stated["intervals"][key][0 if side == "lo" else 1] = float(value)
    stated["interval_details"][key].setdefault("exact", {})[side] = str(value)
    stated["interval_details"][key]["solver_trusted"] = sorted({*stated["interval_details"][key].get("solver_trusted", ()), side})
    _reseal(folder, lines, doc)
    code, out = _check(capsys, folder)
    assert code == 0 and key not in out  # the forgery holds up without proofs: only solver-trusted
    code, out = _check(capsys, folder, "--strict")
    assert code == 1 and f"FAIL block 0001 {key}:{side}: solver-trusted" in out
    code, out = _check(capsys, folder, "--proofs")
    assert code == 1
    assert f"FAIL block 0001 {key}:{side}: not unsat: a dataset reproduces the release and gives the cell" in out


def _values(unit: dict, key: str) -> list:
    """The value of an interval's cell in each dataset of the file (None: undefined there)."""
    problem = problem_of(unit)
    cell = (list(problem.constraints) + list(problem.hidden))[unit["intervals"][key]["cell"]]
    return [problem.value(np.repeat(np.array(h)[:, :-1], np.array(h)[:, -1], axis=0), cell) for h in unit["datasets"]]


def _quiet_forgery(unit: dict) -> tuple[str, str, Fraction, int]:
    """An end (key, side) proved by a certificate whose witness no other end uses, and the value the
    other datasets of the file reach nearest it: narrowed there, with that witness gone, no dataset
    of the file contradicts the narrower interval."""
    ends = _ends(unit)
    for key, side, end in ends:
        if end["by"] == "sat" or sum(e["dataset"] == end["dataset"] for _, _, e in ends) > 1:
            continue
        values = _values(unit, key)
        others = [v for i, v in enumerate(values) if v is not None and i != end["dataset"]]
        inner = (min if side == "lo" else max)(others) if others else None
        if inner is not None and inner != Fraction(end["value"]):
            return key, side, Fraction(inner), end["dataset"]
    raise AssertionError("no end to forge quietly")


@pytest.mark.skipif(DRAT_TRIM is None, reason="drat-trim is not installed (github.com/marijnheule/drat-trim)")
def test_each_proof_stands_for_its_own_question(runs):
    """Both ends of one of block7's medians proved one after the other (the second once failed: its
    question reused auxiliary variables the first one's clauses defined, and found a dataset 'past' the end)."""
    unit = _certs(runs["block7"])[1]
    proofs = UnitProofs(unit, DRAT_TRIM)
    assert [proofs.why_not("T1:3A:median(age)", side) for side in ("lo", "hi")] == ["", ""]
    assert proofs.lines > 1000
