"""Issue 31: a unit's default limit is solver work, not seconds, so the same inputs give the same
verdicts on an idle or a busy machine; a wall-clock limit stays available (--unit-seconds)."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from audit.attacks.exact import ExactOptions, audit_unit
from audit.errors import AuditError
from audit.inputs import load_inputs
from test_bounds import BLOCK7, resampled

pytestmark = pytest.mark.serial  # wall-clock bounds or processes of their own: run alone, not beside -n workers


def _verdicts(result) -> tuple:
    return (result.status, result.reason, result.refuted,
            sorted((v.claim.assignment, v.claim.m, v.status) for v in result.verdicts))


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    """A 9-person resample of block7 (means and medians: row slots, the SAT engine and histogram space)."""
    data = resampled(BLOCK7, 9, tmp_path_factory.mktemp("work") / "b7.csv", seed=1)
    problem, = load_inputs(data, BLOCK7 / "schema.yaml", BLOCK7 / "tables.yaml").problems()
    return problem


def test_the_default_limit_is_work_and_the_verdicts_do_not_depend_on_the_load(block):
    """A work budget that stops the unit part way: the same verdicts, reason and refutations on an idle
    machine and beside two processes burning the CPU; what it verified holds in the data."""
    options = ExactOptions(unit_work=2, explain="none")
    assert ExactOptions().unit_seconds is None  # no wall clock unless asked for
    idle = audit_unit(block, options)
    assert idle.status == "timeout" and "--unit-work 2 " in idle.reason and idle.undecided and idle.verified
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        busy = audit_unit(block, options)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    assert _verdicts(busy) == _verdicts(idle)
    for v in idle.verified:
        assert v.claim.count(block.truth) == v.claim.m


def test_a_wall_clock_limit_is_an_option_and_a_generous_one_changes_nothing(block):
    """--unit-seconds still bounds a unit; one it never reaches leaves the work-bounded verdicts as they are."""
    options = ExactOptions(explain="none")
    free = audit_unit(block, options)
    assert free.status == "done" and not free.undecided
    assert _verdicts(audit_unit(block, replace(options, unit_seconds=3600))) == _verdicts(free)
    with pytest.raises(AuditError, match="--unit-work"):
        ExactOptions(unit_work=0)
