"""The shipped examples run: workloads/example_io.json on
platforms/cluster16_pfs.xml with every baseline, and the robin file
examples/robin_example_io.yaml through ``iosched run``."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iosched.run.simulation import run_simulation

REPO = Path(__file__).resolve().parent.parent

EXPECTED = {
    "sleep": "COMPLETED_SUCCESSFULLY", "compute": "COMPLETED_SUCCESSFULLY",
    "reader": "COMPLETED_SUCCESSFULLY", "writer": "COMPLETED_SUCCESSFULLY",
    "cycle": "COMPLETED_SUCCESSFULLY", "total": "COMPLETED_SUCCESSFULLY",
    "too_long": "COMPLETED_WALLTIME_REACHED", "too_wide": "REJECTED",
}


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "easy-sjf", "conservative", "filler"])
def test_example_workload_with_every_baseline(tmp_path, scheduler):
    run_simulation(REPO / "platforms" / "cluster16_pfs.xml", REPO / "workloads" / "example_io.json",
                   scheduler, tmp_path, timeout=120)
    rows = {r["job_id"]: r for r in csv.DictReader(open(tmp_path / "out_jobs.csv"))}
    assert {j: r["final_state"] for j, r in rows.items()} == EXPECTED
    # 4 nodes reading 1 GB each through their 125 MB/s links: at least 8 s
    assert float(rows["reader"]["execution_time"]) >= 8.0
    # the composed job does two read/compute/write cycles, each >= 8 + 10 + 8 s
    assert float(rows["cycle"]["execution_time"]) >= 52.0


def test_robin_example_runs_from_the_repository_layout(tmp_path):
    for d in ("platforms", "workloads", "schedulers", "examples"):
        os.symlink(REPO / d, tmp_path / d)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "run", "examples/robin_example_io.yaml"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "out" / "robin_example_io" / "out_jobs.csv")))
    assert {row["job_id"]: row["final_state"] for row in rows} == EXPECTED
