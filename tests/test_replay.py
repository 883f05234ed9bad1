"""The replay page quotes the replay records (so it cannot drift), and bench/replay.py runs end to end."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "bench" / "results" / "replay"
PAGE = ROOT / "docs" / "explanation" / "replay.md"
NAMES = ("gtv", "cacm", "linear", "rank", "reid")


def table_rows(text: str) -> list[str]:
    """The Markdown table rows of a text, separator rows left out."""
    return [line.strip() for line in text.splitlines()
            if line.startswith("|") and not re.fullmatch(r"\|(-+\|)+", line.strip())]


@pytest.mark.parametrize("name", NAMES)
def test_page_quotes_every_row_of_the_record(name):
    record = (RECORDS / f"{name}.md").read_text(encoding="utf-8")
    assert record.startswith("---\ntitle: ") and "\ntopic: replay\n" in record
    rows = table_rows(record)
    assert rows, f"{name}.md holds no table"
    page = PAGE.read_text(encoding="utf-8")
    missing = [row for row in rows if row not in page]
    assert not missing, f"docs/explanation/replay.md does not quote {name}.md's rows (re-copy them): {missing[:3]}"


def test_page_images_exist_and_the_page_is_in_the_nav():
    page = PAGE.read_text(encoding="utf-8")
    images = re.findall(r"\]\(\.\./images/(replay-[\w-]+\.svg)\)", page)
    assert len(images) >= 5
    for image in images:
        assert (ROOT / "docs" / "images" / image).read_text(encoding="utf-8").lstrip().startswith("<svg")
    assert "explanation/replay.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_records_hold_the_papers_headline_results():
    cacm = json.loads((RECORDS / "cacm.json").read_text(encoding="utf-8"))["figures"]
    assert cacm["equals_table4"] and cacm["Table 1 as published"]["solutions"] == 1
    assert cacm["Table 1 as published"]["exhausted"]
    gtv = json.loads((RECORDS / "gtv.json").read_text(encoding="utf-8"))["figures"]
    assert gtv["blocks"] == 50 and gtv["undecided"] == 0
    for k, singles in gtv["found"]["singletons"].items():  # every singleton claim is a claim
        assert singles <= gtv["found"]["all"][k] <= gtv["households"]


def run_replay(name: str, tmp_path: Path, *extra: str) -> str:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "replay.py"), name, "--out", str(out), "--images",
                           str(tmp_path / "images"), *extra], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return (out / f"{name}.md").read_text(encoding="utf-8")


def test_tiny_generate_then_verify_end_to_end(tmp_path):
    record = run_replay("gtv", tmp_path, "--blocks", "2")
    got = json.loads((tmp_path / "out" / "gtv.json").read_text(encoding="utf-8"))["figures"]
    assert got["blocks"] == 2 and got["households"] == 19  # one block of 10 households, one of 9
    assert "| paper, total (50 PPMF blocks) | 486 | 166 | 148 | 109 | 61 | 19 | 2 |" in record
    singles = got["found"]["singletons"]
    assert (f"| replay, total (2 generated blocks) | 19 | {singles['5']} | {singles['6']} | {singles['7']} | "
            f"{singles['8']} | — | — |") in record
    assert (tmp_path / "images" / "replay-gtv.svg").read_text(encoding="utf-8").startswith("<svg")
    for k in singles:
        assert singles[k] <= got["found"]["all"][k] <= got["households"]
    assert got["undecided"] == 0


def test_cacm_end_to_end(tmp_path):
    record = run_replay("cacm", tmp_path)
    assert "| Table 1 as published | 1 | 1 | yes |" in record
    assert "| 7 | 84MBM | 84MBM |" in record and "equals the paper's Table 4: yes" in record
