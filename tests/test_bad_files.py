"""User mistakes with files (issue 30), through the real CLI: an output that is an input is refused by
every command that writes, with nothing written or changed; a unit with many columns is sized without
listing its 2^columns subsets; an input that never ends (a device, a pipe) and a damaged --resume file
are one line and exit 2, in bounded memory (commands that could run away do so in a capped subprocess)."""
from __future__ import annotations

import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from audit.attacks.exact import ExactOptions
from audit.cli import run
from audit.inputs import load_inputs
from audit.policy.rules import load_rules
from audit.problem.claims import candidates, count_candidates, n_subsets
from audit.protection.protect import ProtectInterrupted, ProtectOptions, protect
from audit.scale.protect import ProtectPool

ROOT = Path(__file__).resolve().parents[1]
BLOCK7 = ROOT / "samples" / "block7"
CAP = 3 * 2**30  # address space of a capped command: far below what the old failures took


def _cli(args: list[str], cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    """The real command line in a subprocess capped at :data:`CAP` bytes and ``timeout`` seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "audit", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP)))


def _one_line(err: str, *words: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and " -- fix: " in lines[0], err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def block(tmp_path: Path) -> Path:
    for name in ("schema.yaml", "tables.yaml", "data.csv"):
        shutil.copy(BLOCK7 / name, tmp_path / name)
    (tmp_path / "findings.json").write_text('{"format": 3}\n')  # refused before it is read: any content will do
    (tmp_path / "claims.csv.gz").write_bytes(b"store")
    return tmp_path


def _specs(d: Path) -> list[str]:
    return ["-s", str(d / "schema.yaml"), "-t", str(d / "tables.yaml")]


def _moved(d: Path, name: str, folder: str) -> Path:
    """The input ``name`` moved into ``d/folder`` (created), where the command is about to write."""
    (d / folder).mkdir(parents=True, exist_ok=True)
    return Path(shutil.move(str(d / name), str(d / folder / name)))


# (id, the command -> argv, words the line holds)
OVERWRITES: list[tuple[str, Callable[[Path], list[str]], tuple[str, ...]]] = [
    ("run-out-is-data", lambda d: ["run", str(d / "data.csv"), *_specs(d), "-o", str(d / "data.csv")],
     ("--out", "is the input DATA")),
    ("gate-out-is-schema", lambda d: ["gate", str(d / "data.csv"), *_specs(d), "-o", str(d / "schema.yaml")],
     ("is the input --schema",)),
    ("protect-out-holds-its-tables", lambda d: ["protect", str(d / "data.csv"), "-s", str(d / "schema.yaml"), "-t",
                                                str(_moved(d, "tables.yaml", "out").rename(d / "out" / "protected.yaml")),
                                                "-o", str(d / "out")], ("holds the input --tables", "protected.yaml")),
    ("protect-pattern-is-a-release-file-it-writes", lambda d: ["protect", str(d / "data.csv"), *_specs(d), "--audit-only",
                                                              "--pattern", str(_moved(d, "data.csv", "out/tauargus")),
                                                              "-o", str(d / "out")],
     ("holds the input --pattern", "tauargus/")),
    ("protect-out-is-rules", lambda d: ["protect", str(d / "data.csv"), *_specs(d), "-r", str(d / "tables.yaml"),
                                        "-o", str(d / "tables.yaml")], ("is the input",)),
    ("rank-out-is-data", lambda d: ["rank", str(d / "data.csv"), *_specs(d), "-o", str(d / "data.csv")],
     ("is the input DATA",)),
    ("linear-out-is-data", lambda d: ["linear", str(d / "data.csv"), "--secret", "age", "--public", "sex",
                                      "-o", str(d / "data.csv")], ("is the input DATA",)),
    ("tabulate-out-is-data", lambda d: ["tabulate", str(d / "data.csv"), *_specs(d), "-o", str(d / "data.csv")],
     ("is the input DATA",)),
    ("tabulate-out-links-to-tables", lambda d: (os.symlink(d / "tables.yaml", d / "release.csv"),
                                                ["tabulate", str(d / "data.csv"), *_specs(d), "-o", str(d / "release.csv")])[1],
     ("is the input --tables",)),
    ("tabulate-out-is-a-hard-link", lambda d: (os.link(d / "data.csv", d / "copy.csv"),
                                               ["tabulate", str(d / "data.csv"), *_specs(d), "-o", str(d / "copy.csv")])[1],
     ("is the input DATA",)),
    ("report-out-is-findings", lambda d: ["report", str(d / "findings.json"), "-o", str(d / "findings.json")],
     ("is the input FINDINGS",)),
    ("report-out-is-the-claim-store", lambda d: ["report", str(d / "findings.json"), "-o", str(d / "claims.csv.gz")],
     ("claims.csv.gz beside FINDINGS",)),
    ("report-junit-is-findings", lambda d: ["report", str(d / "findings.json"), "-o", str(d / "r.html"),
                                            "--junit", str(d / "findings.json")], ("--junit", "FINDINGS")),
    ("diff-out-is-new", lambda d: ["diff", str(d / "findings.json"), str(d / "findings.json"), "-o",
                                   str(d / "findings.json")], ("is the input OLD",)),
    ("import-lp-out-is-schema", lambda d: ["import-lp", str(d / "x.lp"), *_specs(d), "-o", str(d / "schema.yaml")],
     ("is the input --schema",)),
    ("import-lp-persons-is-out", lambda d: ["import-lp", str(d / "x.lp"), *_specs(d), "-o", str(d / "r.csv"),
                                            "--solution", str(d / "data.csv"), "--persons", str(d / "r.csv")],
     ("--persons", "is the input --out")),
    ("run-published-findings-in-out", lambda d: ["run", "--published", str(_moved(d, "findings.json", "out")),
                                                 *_specs(d), "-o", str(d / "out")],
     ("holds the input --published", "findings.json")),
    ("run-data-in-out-parts", lambda d: ["run", str(_moved(d, "data.csv", "out/parts")), *_specs(d),
                                         "-o", str(d / "out"), "--resume"], ("holds the input DATA", "parts/")),
    ("run-out-inside-a-parquet-folder", lambda d: (_moved(d, "data.csv", "dataset"),
                                                   ["run", str(d / "dataset"), *_specs(d), "-o", str(d / "dataset" / "o")])[1],
     ("lies in the input folder DATA",)),
]


@pytest.mark.parametrize("case", OVERWRITES, ids=[c[0] for c in OVERWRITES])
def test_an_output_that_is_an_input_is_refused_and_nothing_changes(block, capsys, case):
    _, argv, words = case
    args = argv(block)
    before = _files(block)
    assert run(args) == 2
    _one_line(capsys.readouterr().err, *words)
    assert _files(block) == before  # nothing written, removed or overwritten


def test_an_output_folder_holding_the_inputs_elsewhere_still_runs(block, capsys):
    """The inputs beside the outputs, under names the command does not write, are no mistake."""
    assert run(["tabulate", str(block / "data.csv"), *_specs(block), "-o", str(block / "release.csv")]) == 0
    assert run(["gate", str(block / "data.csv"), *_specs(block), "-o", str(block)]) == 1
    assert (block / "data.csv").read_bytes() == (BLOCK7 / "data.csv").read_bytes()


@pytest.mark.parametrize("columns", [30, 40])
def test_a_unit_with_many_columns_is_too_large_without_listing_its_subsets(tmp_path, columns):
    """2^30 and 2^40 column subsets: the unit is sized in closed form and reported too large, its claims
    undecided (a lower bound on their number), fail closed; under a 3 GB cap, in seconds (it was exit 3,
    or 5.8 GB and killed)."""
    rng = np.random.default_rng(columns)
    (tmp_path / "schema.yaml").write_text("unit: person\ngeography: [block]\ncolumns:\n" + "".join(
        f"  c{i}: {{type: categorical, values: [a, b]}}\n" for i in range(columns)))
    # every column published (one table each): a column no cell tells apart is named by no claim
    (tmp_path / "tables.yaml").write_text("tables:\n" + "".join(
        f"  - {{id: T{i}, geography: block, by: [c{i}]}}\n" for i in range(columns)))
    rows = ["block," + ",".join(f"c{i}" for i in range(columns))]
    rows += ["0001," + ",".join(rng.choice(["a", "b"], columns)) for _ in range(8)]
    (tmp_path / "data.csv").write_text("\n".join(rows) + "\n")
    proc = _cli(["run", "data.csv", "-s", "schema.yaml", "-t", "tables.yaml", "-o", "out", "-q"], tmp_path, timeout=90)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    unit, = doc["units"]
    assert unit["status"] == "too-large" and "too many to count" in unit["reason"]
    assert unit["summary"]["undecided"] >= 2**columns - 1 and unit["summary"]["verified"] == 0
    assert doc["verdict"] == "fail" and "undecided" in {f["rule"] for f in doc["failing"]}


def test_candidate_counts_are_exact_when_small_and_a_bound_when_not():
    rng = np.random.default_rng(0)
    for cols, max_columns in itertools.product((1, 3, 6), (None, 2)):
        truth = rng.integers(0, 3, (7, cols))
        assert count_candidates(truth, max_columns) == (len(candidates(truth, max_columns)), True)
    wide = rng.integers(0, 2, (8, 40))
    n, exact = count_candidates(wide)
    assert not exact and n >= n_subsets(40) == 2**40 - 1  # every subset holds a claim of a true row


@pytest.mark.parametrize("data", ["/dev/zero", "/dev/urandom", "fifo"])
def test_an_input_that_never_ends_is_refused_unread(tmp_path, data):
    """A device or a named pipe (no writer: reading it would block forever) as the data, or as a spec."""
    os.mkfifo(tmp_path / "fifo")
    for name in ("schema.yaml", "tables.yaml", "data.csv"):
        shutil.copy(BLOCK7 / name, tmp_path / name)
    for args in (["run", data, "-s", "schema.yaml", "-t", "tables.yaml", "-o", "out"],
                 ["run", "data.csv", "-s", data, "-t", "tables.yaml", "-o", "out"],
                 ["tabulate", "data.csv", "-s", "schema.yaml", "-t", data],
                 ["run", "data.csv", "-s", "schema.yaml", "-t", "tables.yaml", "-o", "out", "--workers", "2",
                  "-r", data]):
        proc = _cli(args, tmp_path, timeout=60)
        assert proc.returncode == 2, proc.stderr
        _one_line(proc.stderr, data, "not a regular file", "save the")
        assert not (tmp_path / "out" / "findings.json").exists()


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> Path:
    """block7 run with --resume (so through parts): what a damaged copy is compared with."""
    d = tmp_path_factory.mktemp("resumed")
    for name in ("schema.yaml", "tables.yaml", "data.csv"):
        shutil.copy(BLOCK7 / name, d / name)
    assert run(["run", str(d / "data.csv"), *_specs(d), "-o", str(d / "out"), "--resume", "-q"]) == 1
    return d


PART = "out/parts/part-00000.jsonl"
DAMAGE = {
    "record-truncated": ("out/parts/run.json", lambda b: b[:50], "JSONDecodeError"),
    "record-empty": ("out/parts/run.json", lambda b: b"", "JSONDecodeError"),
    "record-binary": ("out/parts/run.json", lambda b: bytes(range(256)) * 4, "UnicodeDecodeError"),
    "record-a-list": ("out/parts/run.json", lambda b: b"[1, 2]\n", "not a JSON object"),
    "line-retyped": (PART, lambda b: b.replace(b'"rows":7', b'"rows":"x"'), "checksum does not match"),
    "line-hand-written": (PART, lambda b: b'{"geo":1,"level":[2],"status":"done"}\n', "carries no checksum"),
    "line-binary": (PART, lambda b: bytes(range(256)) + b"\n", "carries no checksum"),
    "claims-binary": ("out/parts/part-00000.claims", lambda b: bytes(range(256)), "checksum does not match"),
    "certificates-empty": ("out/parts/part-00000.certificates", lambda b: b"", "checksum does not match"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_run_to_resume_is_one_line(resumed, tmp_path, capsys, damage):
    name, change, why = DAMAGE[damage]
    d = tmp_path / "copy"  # the run's outputs copied; the inputs are the run's own (resume compares their paths)
    shutil.copytree(resumed / "out", d / "out")
    (d / name).write_bytes(change((d / name).read_bytes()))
    assert run(["run", str(resumed / "data.csv"), *_specs(resumed), "-o", str(d / "out"), "--resume", "-q"]) == 2
    named = "run.json" if name.endswith("run.json") else "part-00000.jsonl:1"  # a block's damage is its line's
    _one_line(capsys.readouterr().err, named, why, "without --resume", str(d / "out" / "parts"))
    assert not (d / "out" / "findings.json").exists()


def test_a_line_cut_off_by_a_kill_is_redone_not_refused(resumed, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(resumed / "out", d / "out")
    part = d / PART
    part.write_bytes(part.read_bytes()[:-40])  # the unit's line, written in part when the run was killed
    assert run(["run", str(resumed / "data.csv"), *_specs(resumed), "-o", str(d / "out"), "--resume", "-q"]) == 1
    assert json.loads((d / "out" / "findings.json").read_text())["summary"] == \
        json.loads((resumed / "out" / "findings.json").read_text())["summary"]


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> Path:
    """block7's protect stopped by Ctrl-C at its first unit: out/protection.partial.json."""
    d = tmp_path_factory.mktemp("interrupted")
    for name in ("schema.yaml", "tables.yaml", "data.csv"):
        shutil.copy(BLOCK7 / name, d / name)

    def ctrl_c(message: str) -> None:
        if "protecting" in message:
            raise KeyboardInterrupt
    inputs = load_inputs(d / "data.csv", d / "schema.yaml", d / "tables.yaml")
    with pytest.raises(ProtectInterrupted):
        protect(inputs, ProtectOptions(exact=ExactOptions(explain="none")), load_rules(None), d / "out", ctrl_c,
                pool=ProtectPool())
    return d


PARTIAL = {
    "truncated": (lambda b: b[:100], "JSONDecodeError"),
    "empty": (lambda b: b"", "JSONDecodeError"),
    "binary": (lambda b: bytes(range(128, 256)), "UnicodeDecodeError"),
    "a-list": (lambda b: b"[]", "not the partial file"),
    "units-retyped": (lambda b: b.replace(b'"units": [\n ]', b'"units": [7]'), "do not match its checksum"),
    "levels-retyped": (lambda b: b.replace(b'"levels": []', b'"levels": [{"geo": 5}]'), "do not match its checksum"),
}


@pytest.mark.parametrize("damage", PARTIAL, ids=list(PARTIAL))
def test_a_damaged_protect_to_resume_is_one_line(interrupted, tmp_path, capsys, damage):
    change, why = PARTIAL[damage]
    d = tmp_path / "copy"
    shutil.copytree(interrupted, d)
    partial = d / "out" / "protection.partial.json"
    before = partial.read_bytes()
    partial.write_bytes(change(before))
    assert partial.read_bytes() != before
    assert run(["protect", str(d / "data.csv"), *_specs(d), "-o", str(d / "out"), "--resume", "-q"]) == 2
    _one_line(capsys.readouterr().err, "protection.partial.json", why, "without --resume")
    assert not (d / "out" / "protected.yaml").exists()


@pytest.mark.parametrize("command", ["report", "claims", "diff"])
def test_a_damaged_claim_store_is_one_line(resumed, tmp_path, capsys, command):
    """A claims.csv.gz cut short: exit 2 naming it (it was 'Aborted!' and exit 1, a policy failure's code)."""
    d = tmp_path / "out"
    shutil.copytree(resumed / "out", d)
    store = d / "claims.csv.gz"
    store.write_bytes(store.read_bytes()[:300])
    argv = {"report": ["report", str(d / "findings.json"), "-o", str(tmp_path / "r.html")], "claims": ["claims", str(d)],
            "diff": ["diff", str(resumed / "out" / "findings.json"), str(d / "findings.json")]}[command]
    assert run(argv) == 2
    _one_line(capsys.readouterr().err, "claims.csv.gz", "the claim store is damaged (EOFError")


def test_an_end_of_file_no_reader_expected_is_a_bug_not_a_policy_failure(block, capsys, monkeypatch):
    """click turns any EOFError into its Abort (exit 1, as if the release failed): it is exit 3."""
    import audit.commands.validate as validate

    def cut_short(*args, **kwargs):
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")
    monkeypatch.setattr(validate, "load_schema", cut_short)
    assert run(["validate", "-s", str(block / "schema.yaml")]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("internal error: EOFError: Compressed file ended"), err
