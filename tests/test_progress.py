"""Progress inside a long unit (claims decided, phase) and an ETA by the units' sizes (issue 35)."""
import io
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest

from audit.attacks import pulse
from audit.attacks.exact import ExactOptions
from audit.findings.document import run_exact
from audit.inputs import inputs_from
from audit.outputs.progress import Progress
from audit.scale.runner import bounded_runner

pytestmark = pytest.mark.serial  # wall-clock bounds or processes of their own: run alone, not beside -n workers

ROOT = Path(__file__).resolve().parents[1]
HOUSEHOLDS = ROOT / "samples" / "households"


def test_a_note_is_shown_until_its_unit_ends():
    pulse.done()
    pulse.note("0001", "claim by claim", 3, 10)
    assert pulse.notes() == [pulse.Note("0001", "claim by claim", 3, 10)]
    assert pulse.notes()[0].text() == "unit 0001: 3/10 claims decided, claim by claim"
    pulse.note("0001", "claim by claim", 4, 10)  # within EVERY seconds of the last: not noted
    assert pulse.notes()[0].done == 3
    pulse.note("0001", "explaining verified claims", 10, 10)  # a new phase is noted at once
    assert pulse.notes()[0].text() == "unit 0001: 10/10 claims decided, explaining verified claims"
    pulse.done()
    assert pulse.notes() == []
    with pytest.raises(ValueError):
        pulse.Note("0001", "x", -1, 3)


def test_eta_counts_claims_left_and_the_decided_part_of_a_unit():
    """One large unit among small ones: a small unit done says little; half the large one decided says half."""
    p = Progress("units", quiet=True)
    p.total(3, sizes={("block", "a"): 10.0, ("block", "b"): 10.0, ("block", "big"): 980.0})
    p.started = time.monotonic() - 10.0  # 10 s spent on unit a
    p.update(key=("block", "a"))
    eta = p.eta()
    assert eta == pytest.approx(10.0 * 990 / 10, rel=0.01)  # by units it would say 20 s
    half = p.eta([pulse.Note("big", "claim by claim", 490, 980)])  # half its claims: 0.8 * half its work
    assert half == pytest.approx(10.0 * (990 - 392) / (10 + 392), rel=0.01)
    unsized = Progress("units", quiet=True)
    unsized.total(4)
    unsized.started = time.monotonic() - 10.0
    unsized.update()
    assert unsized.eta() == pytest.approx(30.0, rel=0.01)  # no sizes: by units, as before


def test_a_long_unit_in_the_worker_shows_its_claims_decided():
    """The worker process of audit run writes its notes for the parent's display: a plain line names the unit,
    its claims decided of all and its phase, while the unit runs."""
    inputs = inputs_from(HOUSEHOLDS / "data.csv", HOUSEHOLDS / "schema.yaml", HOUSEHOLDS / "tables.yaml")
    inputs = replace(inputs, frame=inputs.frame[inputs.frame["block"].astype(str).str.endswith("1001")])
    options = ExactOptions()
    stream = io.StringIO()
    with Progress("units", stream=stream, every=0.5) as bar:
        doc = run_exact(inputs, options, lambda u: bar.update(key=(u["level"], u["geo"])), run_units=bounded_runner(
            options, 4096), on_total=bar.total)
    lines = stream.getvalue().splitlines()
    assert doc.summary.units >= 1 and lines[-1].startswith(f"units: {doc.summary.units}/{doc.summary.units} (100%) in ")
    within = [line for line in lines if "claims decided" in line]
    assert within, lines
    assert all(re.search(r"ETA \d+(m\d\ds|s) \(by claims left\); unit 000100(/1001)?: [\d,]+/[\d,]+ claims decided, "
                         r"(searching for datasets|claim by claim|explaining verified claims|feasibility intervals "
                         r"of hidden cells|re-identification)", line) for line in within), within
    assert pulse.notes() == []  # the run's notes are removed with it


def test_a_protect_round_is_shown_between_its_attacks():
    pulse.done()
    pulse.during("protect round 3", "0001")
    try:
        assert [n.text() for n in pulse.notes()] == ["unit 0001, protect round 3: choosing cells to hide"]
        pulse.note("0001", "claim by claim", 5, 40)
        assert [n.text() for n in pulse.notes()] == ["unit 0001, protect round 3: 5/40 claims decided, claim by claim"]
    finally:
        pulse.during("")
        pulse.done()
    assert pulse.notes() == []


def test_workers_without_a_display_leave_no_notes_folder(tmp_path):
    """A run on worker processes with no progress display (as ``audit protect``'s searches) removes the
    folder its workers wrote their notes in when it ends, and when it stops on an error."""
    import os

    inputs = inputs_from(HOUSEHOLDS / "data.csv", HOUSEHOLDS / "schema.yaml", HOUSEHOLDS / "tables.yaml")
    inputs = replace(inputs, frame=inputs.frame[inputs.frame["block"].astype(str).str.endswith("1001")])
    options, where, seen = ExactOptions(), pulse.folder(os.getpid()), []

    def record(unit):
        seen.append(where.is_dir())  # a worker's notes went there while the unit ran
        raise RuntimeError("stop")

    doc = run_exact(inputs, options, lambda u: None, run_units=bounded_runner(options, 4096))
    assert doc.summary.units >= 1 and not where.exists()
    with pytest.raises(RuntimeError, match="stop"):
        run_exact(inputs, options, record, run_units=bounded_runner(options, 4096))
    assert seen == [True] and not where.exists()
