"""Benchmark records (issue 36): every file under bench/results/<topic>/ follows the record format, the
benchmarks page is generated from them (docs/hooks.py), and a bench script's ``--record`` writes one."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "docs")]

import record  # noqa: E402
from hooks import BENCH_MARKER, benchmark_page, on_page_markdown  # noqa: E402

sys.path[:2] = []

GOOD = """---
title: A figure
topic: protect
date: 2026-11-27
commit: 0012345
machine: 2 cores
command: python bench/protect.py block7
options: defaults
---
| input | cells |
|---|---|
| block7 | 3 |

Three cells.
"""


def test_every_committed_record_is_on_the_page():
    found = record.records()
    assert {r.topic for r in found} >= {"audit", "scale", "protect", "rank", "linear"}
    page = on_page_markdown((ROOT / "docs" / "benchmarks.md").read_text(), None, None, None)
    assert BENCH_MARKER not in page
    for rec in found:
        assert rec.path.parent.name == rec.topic and f"### {rec.title}" in page
        assert " ".join(rec.command.split()) in page and rec.body in page
    headings = [page.index(f"## {record.HEADINGS[t]}\n") for t in record.TOPICS if any(r.topic == t for r in found)]
    assert headings == sorted(headings)


def test_the_page_holds_no_hand_written_figures():
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    assert BENCH_MARKER in text
    assert "|---" not in text, "figure tables belong in bench/results/<topic>/*.md records, not on the page"


def test_records_sort_by_topic_then_newest_first(tmp_path):
    for topic, name, date in [("rank", "a", "2026-11-20"), ("audit", "b", "on or before 2026-11-22"),
                              ("audit", "c", "2026-11-27"), ("audit", "a", "before 2026-11-27")]:
        (tmp_path / topic).mkdir(exist_ok=True)
        (tmp_path / topic / f"{name}.md").write_text(GOOD.replace("protect", topic).replace("2026-11-27", date, 1))
    (tmp_path / "gpu-run").mkdir()
    (tmp_path / "gpu-run" / "raw.txt").write_text("raw output a record links to")
    got = [(r.topic, r.path.stem) for r in record.records(tmp_path)]
    assert got == [("audit", "a"), ("audit", "c"), ("audit", "b"), ("rank", "a")]
    page = record.render(record.records(tmp_path))
    assert page.index("## Audit") < page.index("## Ranking") and page.count("### A figure") == 4


def test_a_record_keeps_its_values_as_written(tmp_path):
    path = tmp_path / "protect" / "x.md"
    path.parent.mkdir()
    path.write_text(GOOD)
    rec = record.read(path)
    assert (rec.commit, rec.date, rec.title) == ("0012345", "2026-11-27", "A figure")
    assert rec.body.startswith("| input | cells |") and rec.body.endswith("Three cells.")
    assert "**Date** 2026-11-27 · **commit** `0012345` · **machine** 2 cores  \n**Command** " \
           "`python bench/protect.py block7` · **options** defaults" in record.render([rec])
    path.write_text(rec.text())
    assert record.read(path) == rec


@pytest.mark.parametrize("change,message", [
    (("topic: protect", "topic: speed"), "topic 'speed' is not one of audit"),
    (("commit: 0012345\n", ""), "'commit' is missing"),
    (("machine: 2 cores", "machine: ''"), "'machine' is missing or empty"),
    (("options: defaults", "options: defaults\ncpu: 3"), "unknown front-matter key(s) cpu"),
    (("options: defaults", "options: [--workers, 2]"), "'options' is a list; give it as one line of text"),
    (("|---|---|\n", ""), "no Markdown table"),
    (("---\ntitle", "title"), "no YAML front matter"),
    (("title: A figure", "title: [A"), "the front matter is not YAML"),
])
def test_a_bad_record_is_named_with_the_fix(tmp_path, change, message):
    path = tmp_path / "protect" / "x.md"
    path.parent.mkdir()
    path.write_text(GOOD.replace(*change, 1))
    with pytest.raises(record.RecordError, match="x.md: ") as err:
        record.records(tmp_path)
    assert message in str(err.value)


def test_a_record_in_another_topics_folder_is_refused(tmp_path):
    (tmp_path / "rank").mkdir()
    (tmp_path / "rank" / "x.md").write_text(GOOD)
    with pytest.raises(record.RecordError, match="topic 'protect' but the file is in 'rank/'"):
        record.records(tmp_path)


def test_write_records_the_run(tmp_path):
    rec = record.write(tmp_path / "scale" / "run.md", "A run", "scale", ["measure", "value"],
                       [["wall | s", 3.5], ["cells", 12]], "Nothing undecided.", "--workers 2",
                       command_="python bench/scale.py --workers 2")
    back = record.read(tmp_path / "scale" / "run.md")
    assert back == rec and back.date == datetime.now(timezone.utc).strftime("%Y-%m-%d")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    assert back.commit.startswith(head.strip())
    assert back.machine.startswith(f"{os.cpu_count()} cores (load ")
    assert "| wall \\| s | 3.5 |" in back.body and back.body.endswith("Nothing undecided.")


def test_options_names_only_what_differs_from_the_defaults():
    ap = argparse.ArgumentParser()
    ap.add_argument("samples", nargs="*")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--greedy", action="store_true")
    ap.add_argument("--tables", nargs="+", default=["z1"])
    record.add_arguments(ap)
    assert record.options(ap, ap.parse_args(["sf1", "--record", "x.md"])) == "defaults"
    assert record.options(ap, ap.parse_args(["--workers", "2", "--greedy", "--tables", "z1", "z2"])) == \
        "--workers 2, --greedy, --tables z1 z2"
    assert record.command(["/x/bench/protect.py", "a b"]) == "python /x/bench/protect.py 'a b'"
    assert record.command([str(ROOT / "bench" / "protect.py")]) == "python bench/protect.py"


def test_a_bench_script_writes_a_record(tmp_path):
    out = tmp_path / "peers" / "z1.md"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "peers.py"), "--tables", "z1", "--record", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    rec = record.records(tmp_path)[0]
    assert rec.topic == "peers" and rec.options == "--tables z1"
    assert rec.command == f"python bench/peers.py --tables z1 --record {out}"
    row = next(line for line in rec.body.splitlines() if line.startswith("| z1 |"))
    assert row.split(" | ")[1:5] == ["GaussSuppression", "maxN 3", "45", "3"]  # the table's cells and primaries
    assert benchmark_page()  # the committed records still render beside it
