"""A real Dask cluster (issue 37): a scheduler and two workers in their own processes, as on a cluster.

`audit run --scheduler ADDRESS` over them gives the local pool's findings, and a worker lost mid-run (its
process group killed) does not lose the run: Dask reschedules its units on the worker left.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.attacks.exact import ExactOptions
from audit.scale.runner import ScaleOptions, run_scaled

pytestmark = pytest.mark.serial  # wall-clock bounds or processes of their own: run alone, not beside -n workers

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[1]
SF1 = ROOT / "samples" / "sf1"
OPTIONS = ExactOptions(explain="none", max_columns=2)


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with open(log, "wb") as out:  # a process group of its own, so a test can kill a worker and its nanny at once
        return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=ROOT, start_new_session=True)


def _wait_for(predicate, what: str, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture()
def cluster(tmp_path):
    """A `dask scheduler` and two `dask worker` processes on loopback; yields (address, worker processes)."""
    from distributed import Client

    info = tmp_path / "scheduler.json"
    procs = [_start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(info)], tmp_path / "scheduler.log")]
    try:
        _wait_for(info.exists, "the scheduler file")
        _wait_for(lambda: json.loads(info.read_text() or "{}").get("address"), "the scheduler address")
        address = json.loads(info.read_text())["address"]
        workers = [_start(["worker", address, "--nthreads", "1", "--no-dashboard", "--memory-limit", "2GiB"],
                          tmp_path / f"worker{i}.log") for i in range(2)]
        procs += workers
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _units(doc: dict) -> list[dict]:
    return [{k: v for k, v in u.items() if k not in ("seconds", "store")} for u in doc["units"]]



@pytest.fixture(scope="module")
def pooled(sf1_spec, tmp_path_factory) -> dict:
    schema, schedule = sf1_spec
    return run_scaled(SF1 / "data.csv", schema, schedule, OPTIONS, ScaleOptions(workers=2),
                      tmp_path_factory.mktemp("pool"))


def test_cluster_in_separate_processes_equals_local_pool(cluster, sf1_spec, pooled, tmp_path):
    address, _ = cluster
    schema, schedule = sf1_spec
    doc = run_scaled(SF1 / "data.csv", schema, schedule, OPTIONS, ScaleOptions(scheduler=address), tmp_path)
    assert _units(doc) == _units(pooled)
    assert doc["summary"] == pooled["summary"] and doc["verdict"] == pooled["verdict"]
    assert (tmp_path / "claims.csv.gz").exists()


def test_cli_scheduler_option_over_a_cluster(cluster, pooled, tmp_path):
    address, _ = cluster
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "audit", "run", str(SF1 / "data.csv"),
                           "--schema", str(SF1 / "schema.yaml"), "--tables", str(SF1 / "tables.yaml"),
                           "--explain", "none", "--max-columns", "2", "--scheduler", address, "--out", str(out),
                           "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode in (0, 1), done.stderr  # 1: the release fails its rules, as in the local run
    doc = json.loads((out / "findings.json").read_text())
    assert _units(doc) == _units(pooled)


def test_a_worker_lost_mid_run_does_not_lose_the_run(cluster, sf1_spec, pooled, tmp_path):
    address, workers = cluster
    schema, schedule = sf1_spec
    killed = []

    def on_unit(unit, done, total):
        if not killed:  # the first unit is back: kill one worker (and its nanny) while others are in flight
            os.killpg(workers[1].pid, signal.SIGKILL)
            killed.append(unit["geo"])

    doc = run_scaled(SF1 / "data.csv", schema, schedule, OPTIONS, ScaleOptions(scheduler=address), tmp_path,
                     on_unit=on_unit)
    assert killed and workers[1].wait(timeout=20) is not None
    assert doc["scale"]["units_by_status"] == {"done": len(pooled["units"])}
    assert _units(doc) == _units(pooled)
