"""Metrics of burst-buffer runs: each workload job ``w0!J`` is REJECTED when
its dynamic run ``bb!J`` starts, and iosched.analysis merges the two rows
(iosched.analysis.jobs.merge_runs).  Hand-made jobs.csv with hand-computed values,
then one end-to-end run of the burst-buffer scheduler."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from iosched.analysis.campaign import job_table
from iosched.analysis.jobs import jobs_from_rows, load_jobs, merge_job_rows, merge_runs
from iosched.analysis.metrics import compute_metrics, job_metrics
from iosched.analysis.metrics_file import write_metrics
from iosched.batsim.outputs import JOBS_COLUMNS
from iosched.errors import InputError
from iosched.experiments.platforms import cluster_xml
from iosched.paths import REPO_ROOT
from iosched.run.simulation import run_simulation
from test_metrics import job_row, write_jobs

REPO = Path(__file__).resolve().parents[1]


def row(job_id, workload, s, b=None, c=None, alloc="", state="COMPLETED_SUCCESSFULLY", nb=1,
        walltime=10000.0):
    """One Batsim jobs.csv row of workload *workload* (profile named after
    the job); b None means rejected (Batsim leaves the times empty)."""
    return job_row(job_id, s, b, c, alloc, state, nb, walltime, workload=workload, profile=job_id)


# Compute nodes 0-3, burst-buffer node 4, PFS 5 (Batsim numbers compute hosts
# first).  Each run is submitted when it starts (waiting 0 in its own row) and
# holds its compute nodes + burst-buffer node + PFS; its static job is REJECTED.
#   job 1: s=0,  n=2, run [10, 110]    on 0-1 (+4, 5)  W=10  F=110  D=100
#   job 2: s=5,  n=1, run [110, 710]   on 2   (+4, 5)  W=105 F=705  D=600  walltime reached
#   job 3: s=20, n=3, rejected as impossible (no run)
#   job 4: s=30, n=1, run [130, 1330]  on 1   (+4, 5)  W=100 F=1300 D=1200
BB_ROWS = [
    row("1", "w0", 0, state="REJECTED", nb=2, walltime=200),
    row("2", "w0", 5, state="REJECTED", nb=1, walltime=600),
    row("1", "bb", 10, 10, 110, "0-1 4-5", nb=4, walltime=200),
    row("3", "w0", 20, state="REJECTED", nb=3),
    row("4", "w0", 30, state="REJECTED", nb=1, walltime=1500),
    row("2", "bb", 110, 110, 710, "2 4-5", state="COMPLETED_WALLTIME_REACHED", nb=3, walltime=600),
    row("4", "bb", 130, 130, 1330, "1 4 5", nb=3, walltime=1500),
]
BUSY = 100 * 2 + 600 * 1 + 1200 * 1       # compute nodes only: 2000 node-s
MAKESPAN = 1330 - 0


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-9)


@pytest.fixture
def bb_dir(tmp_path):
    write_jobs(tmp_path / "run" / "out_jobs.csv", BB_ROWS)
    return tmp_path / "run"


def test_merged_rows(bb_dir):
    raw = load_jobs(bb_dir, merge=False)
    assert len(raw) == 7 and raw.attrs["nb_runs_merged"] == 0
    jobs = load_jobs(bb_dir)
    assert jobs.attrs["nb_runs_merged"] == 3
    assert list(jobs.columns) == list(JOBS_COLUMNS)
    assert jobs["job_id"].tolist() == ["1", "2", "3", "4"]
    assert set(jobs["workload_name"]) == {"w0"}
    j = jobs.set_index("job_id")
    assert j["submission_time"].tolist() == [0, 5, 20, 30]
    assert j["requested_number_of_resources"].tolist() == [2, 1, 3, 1]
    assert j["requested_time"].tolist() == [200, 600, 10000, 1500]
    assert j["final_state"].tolist() == ["COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED",
                                         "REJECTED", "COMPLETED_SUCCESSFULLY"]
    assert j["allocated_resources"].tolist() == ["0-1", "2", "", "1"]
    assert j.loc[["1", "2", "4"], "waiting_time"].tolist() == [10, 105, 100]
    assert j.loc[["1", "2", "4"], "turnaround_time"].tolist() == [110, 705, 1300]
    assert j.loc[["1", "2", "4"], "execution_time"].tolist() == [100, 600, 1200]
    assert j.loc["2", "stretch"] == approx(705 / 600)
    assert pd.isna(j.loc["3", "starting_time"])
    # merging is idempotent, and a plain table is returned as is
    assert merge_runs(jobs) is jobs
    assert merge_runs(raw).equals(jobs)


def test_metrics_of_a_bb_run(bb_dir):
    m = compute_metrics(load_jobs(bb_dir), nb_resources=4)
    assert m["waiting_time"]["mean"] == approx((10 + 105 + 100) / 3)
    assert m["waiting_time"]["median"] == approx(100)
    assert m["waiting_time"]["max"] == approx(105)
    assert m["turnaround"]["mean"] == approx((110 + 705 + 1300) / 3)
    assert m["turnaround"]["max"] == approx(1300)
    # bounded slowdown, tau = 600: max(1, F / max(D, 600))
    assert m["bounded_slowdown"]["mean"] == approx((1 + 705 / 600 + 1300 / 1200) / 3)
    assert m["bounded_slowdown"]["max"] == approx(705 / 600)
    assert m["slowdown"]["max"] == approx(705 / 600)
    assert m["nb_jobs"] == 4 and m["nb_jobs_started"] == 3 and m["nb_jobs_rejected"] == 1
    assert m["final_states"] == {"COMPLETED_SUCCESSFULLY": 2, "COMPLETED_WALLTIME_REACHED": 1,
                                 "REJECTED": 1}
    assert m["nb_runs_merged"] == 3
    assert m["makespan"] == approx(MAKESPAN)
    assert m["busy_node_seconds"] == approx(BUSY)
    assert m["utilization"] == approx(BUSY / (4 * MAKESPAN))
    # the raw rows give the same metrics: compute_metrics merges them itself
    raw = load_jobs(bb_dir, merge=False)
    assert compute_metrics(raw, nb_resources=4) == m
    # per job: the static ids, real waits, compute nodes only
    pj = job_metrics(raw)
    assert pj["job_id"].tolist() == ["1", "2", "4"]
    assert pj["waiting_time"].tolist() == [10, 105, 100]
    assert pj["nb_allocated"].tolist() == [2, 1, 1]


def test_nb_resources_of_a_bb_run(bb_dir, tmp_path):
    # the machine states count every host, storage ones included: not used
    (bb_dir / "out_machine_states.csv").write_text(
        "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n0,0,0,0,6,0\n")
    m = compute_metrics(load_jobs(bb_dir))
    assert m["nb_resources_source"] == "max_allocated_id_plus_1"
    assert m["nb_resources"] == 3          # largest compute id 2, a lower bound
    # a platform: 4 compute hosts + node_4 (storage via the XML? no: via -r) + pfs
    plat = tmp_path / "p.xml"
    plat.write_text(cluster_xml(4, pfs={"bw": "1GBps", "lat": "1us"}))
    m = compute_metrics(load_jobs(bb_dir), platform=plat)
    assert (m["nb_resources"], m["nb_resources_source"]) == (4, "platform_compute_hosts")
    assert m["utilization"] == approx(BUSY / (4 * MAKESPAN))
    # the run's command.json (iosched run): the compute hosts it records (its
    # platform and -r roles)
    plat5 = tmp_path / "p5.xml"
    plat5.write_text(cluster_xml(5, pfs={"bw": "1GBps", "lat": "1us"}))
    record = {"cwd": str(tmp_path), "engine": {"argv": [
        "iosched-batsim", "-p", "p5.xml", "-w", "w.json", "-e", str(bb_dir / "out"),
        "-r", "node_4:storage", "--enable-dynamic-jobs"]}}
    (bb_dir / "command.json").write_text(json.dumps({**record, "compute_hosts": 4}))
    m = compute_metrics(load_jobs(bb_dir))
    assert (m["nb_resources"], m["nb_resources_source"]) == (4, "command_json_compute_hosts")
    written = write_metrics(bb_dir)
    assert written["nb_resources_source"] == "command_json_compute_hosts"
    assert written["nb_runs_merged"] == 3
    assert written["utilization"] == round(BUSY / (4 * MAKESPAN), 6)
    # a record without the count: nothing is re-derived from the engine command
    write_jobs(tmp_path / "other" / "exp_jobs.csv", BB_ROWS)
    (tmp_path / "other" / "command.json").write_text(json.dumps(record))
    assert compute_metrics(load_jobs(tmp_path / "other"))["nb_resources_source"] \
        == "max_allocated_id_plus_1"
    # an explicit number still wins
    assert compute_metrics(load_jobs(bb_dir), nb_resources=8)["nb_resources_source"] == "argument"


def test_plain_runs_are_untouched(tmp_path):
    # a bb row whose job is not REJECTED, or that has no static job, is not a run of it
    rows = [row("1", "w0", 0, 0, 10, "0"), row("1", "bb", 0, 0, 10, "1"),
            row("2", "bb", 0, 0, 10, "2")]
    jobs = load_jobs(write_jobs(tmp_path / "out_jobs.csv", rows))
    assert len(jobs) == 3 and jobs.attrs["nb_runs_merged"] == 0
    m = compute_metrics(jobs)
    assert m["nb_runs_merged"] == 0 and m["nb_jobs"] == 3


def test_ambiguous_or_short_runs_are_input_errors(tmp_path):
    rows = [row("1", "w0", 0, state="REJECTED"), row("1", "w1", 0, state="REJECTED"),
            row("1", "bb", 5, 5, 10, "0 4 5")]
    with pytest.raises(InputError, match="REJECTED in workloads w0, w1"):
        jobs_from_rows(rows)
    rows = [row("1", "w0", 0, state="REJECTED", nb=3), row("1", "bb", 5, 5, 10, "0 4")]
    with pytest.raises(InputError, match="fewer than the 3 compute nodes"):
        jobs_from_rows(rows)
    # a run killed at its walltime before a phase on all its nodes started (a
    # locality job killed during its one-core load) keeps what it held
    rows = [row("1", "w0", 0, state="REJECTED", nb=3),
            row("1", "bb", 5, 5, 10, "4", state="COMPLETED_WALLTIME_REACHED")]
    jobs = jobs_from_rows(rows)
    assert list(jobs["allocated_resources"]) == ["4"]
    assert list(jobs["final_state"]) == ["COMPLETED_WALLTIME_REACHED"]


def test_model_merge_job_rows_is_the_same_merge(bb_dir):
    recs = merge_job_rows(bb_dir / "out_jobs.csv")
    assert [r["job_id"] for r in recs] == ["1", "2", "3", "4"]
    assert [r["waiting_time"] for r in recs] == [10, 105, None, 100]
    assert [r["final_state"] for r in recs][2] == "REJECTED"
    assert [r["nodes"] for r in recs] == [2, 1, 3, 1]
    with open(bb_dir / "out_jobs.csv", newline="") as fh:
        assert merge_job_rows(list(csv.DictReader(fh))) == recs


def test_job_table_merges_runs(bb_dir, tmp_path):
    (tmp_path / "campaign.json").write_text(json.dumps(
        {"name": "c", "runs": [{"id": "r1", "dir": "run", "params": {}}]}))
    runs = pd.DataFrame([{"run_id": "r1", "status": "done", "platform": "p", "workload": "w",
                          "part": 0, "scheduler": "fcfs-bb", "seed": 1}])
    jt = job_table(tmp_path, runs)
    assert jt["job_id"].tolist() == ["1", "2", "4"]
    assert jt["waiting_time"].tolist() == [10, 105, 100]
    assert jt["busy_node_seconds"].sum() == approx(BUSY)


# ---------------------------------------------------------------------------
# End to end: fcfs-bb on the embedded engine, then `iosched metrics`
# ---------------------------------------------------------------------------

def test_iosched_metrics_on_a_bb_run(tmp_path):
    """4 compute nodes (node_0..3), node_4 a burst-buffer node, the PFS.
    Jobs 1 (3 nodes) and 2 (2 nodes) are submitted at 0: job 2 waits for
    job 1; job 3 asks for 9 nodes and is rejected as impossible."""
    plat = tmp_path / "platform.xml"
    plat.write_text(cluster_xml(5, bw=1e15, bb_bw=1e15, lat="1us", bb_lat="1us",
                                pfs={"bw": 1e15, "lat": "1us"}))
    jobs = [(1, 0, 3, 60), (2, 0, 2, 30), (3, 5, 9, 10), (4, 10, 1, 20)]
    wl = {"nb_res": 4, "profiles": {str(j): {"type": "delay", "delay": 1} for j, *_ in jobs},
          "jobs": [{"id": j, "subtime": s, "res": n, "walltime": run + 10, "profile": str(j),
                    "bb": 1e6, "flops": run * 1e9, "com": 0} for j, s, n, run in jobs]}
    (tmp_path / "w.json").write_text(json.dumps(wl))
    out = tmp_path / "out"
    run_simulation(plat, tmp_path / "w.json", REPO_ROOT / "schedulers" / "burstbuffer.py", out,
                   options={"policy": "fcfs-bb", "bb_capacity": 1e9}, timeout=120,
                   engine_args=["-r", "node_4:storage", "--enable-dynamic-jobs"])
    with open(out / "out_jobs.csv", newline="") as fh:
        raw = list(csv.DictReader(fh))
    static = {r["job_id"]: r for r in raw if r["workload_name"] == "w0"}
    phases: dict = {}      # one dynamic job per phase: J:0 (stage-in), J:1 (compute), J:2 (stage-out)
    for r in raw:
        if r["workload_name"] == "bb":
            base, k = r["job_id"].split(":")
            phases.setdefault(base, {})[int(k)] = r
    assert len(static) == 4 and set(phases) == {"1", "2", "4"}
    assert all(sorted(p) == [0, 1, 2] for p in phases.values())
    for p in phases.values():   # each phase starts when the previous one ends
        assert float(p[1]["starting_time"]) >= float(p[0]["finish_time"])
        assert float(p[2]["starting_time"]) >= float(p[1]["finish_time"])
    runs = {j: {"starting_time": p[0]["starting_time"], "finish_time": p[2]["finish_time"]}
            for j, p in phases.items()}
    assert all(r["final_state"] == "REJECTED" for r in static.values())
    expected_wait = {j: float(runs[j]["starting_time"]) - float(static[j]["submission_time"])
                     for j in runs}
    assert expected_wait["2"] > 50        # job 2 waited for job 1's nodes

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "metrics", str(out)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    m = json.loads((out / "metrics.json").read_text())
    assert m["nb_jobs"] == 4 and m["nb_jobs_started"] == 3 and m["nb_jobs_rejected"] == 1
    assert m["nb_runs_merged"] == 3
    assert m["final_states"] == {"COMPLETED_SUCCESSFULLY": 3, "REJECTED": 1}
    assert m["waiting_time"]["max"] == pytest.approx(max(expected_wait.values()), abs=1e-6)
    assert m["waiting_time"]["mean"] == pytest.approx(sum(expected_wait.values()) / 3, abs=1e-6)
    # utilization over the 4 compute nodes (command.json: platform + -r node_4:storage)
    assert (m["nb_resources"], m["nb_resources_source"]) == (4, "command_json_compute_hosts")
    busy = sum((float(runs[j]["finish_time"]) - float(runs[j]["starting_time"]))
               * int(static[j]["requested_number_of_resources"]) for j in runs)
    assert m["busy_node_seconds"] == pytest.approx(busy, abs=1e-5)
    assert "bb runs merged into jobs  3" in r.stdout
    # one row per workload job, waiting = run start - static submission
    jobs_t = load_jobs(out)
    assert sorted(jobs_t["job_id"]) == ["1", "2", "3", "4"]
    pj = job_metrics(jobs_t)
    assert dict(zip(pj["job_id"], pj["waiting_time"])) == pytest.approx(expected_wait, abs=1e-6)
    assert dict(zip(pj["job_id"], pj["nb_allocated"])) == {"1": 3, "2": 2, "4": 1}
    assert all(int(a.split("-")[-1].split()[-1]) < 4 for a in jobs_t["allocated_resources"] if a)
