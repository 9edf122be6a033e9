"""Burst-buffer policies on the embedded engine (iosched/schedulers/burstbuffer.py).

The example is the paper's own (Kopanski & Rzadca, Euro-Par 2021, Section
3.1, Table 1): 4 compute nodes (CPUs), 10 TB of shared burst buffer, the 8
jobs of Table 1 with walltimes equal to their runtimes, the scheduler called
every minute. Here the 10 TB is one storage node of 10 "TB" (scaled to 1e9
bytes so that the I/O of the job model takes milliseconds on the test
platform); a job's BB column is its total request, split evenly over its
CPUs. Walltimes equal runtimes, as in the paper; each job computes for its
walltime minus 0.05 s, so that its stage-in and stage-out (a few ms) end
within the walltime. Jobs submitted after time 0 are submitted 0.5 s before
their minute, so that the engine's microsecond message delays (as in
Batsim: a job submitted at 180 s is seen at 180.000012 s) do not push a job
that fits exactly in a hole (job 6 under fcfs-easy) past it.

What the paper's text states, and is asserted:

* fcfs-easy (Fig. 2, left): job 6 is backfilled before job 3 (at time 3);
  job 3 holds a CPU-only reservation "now" from time 4 and blocks jobs 4
  and 5 until job 1 completes (time 10); job 3 then starts, and job 7 is
  backfilled ahead of jobs 4 and 5;
* fcfs-bb (Fig. 2, right): job 3's reservation is at job 1's end, so job 4
  starts when it is submitted (time 2), jobs 5-8 all start before job 3,
  and job 3 starts at time 10.

Where the text is not unambiguous, nothing is asserted: the paper says that
"at time 10, there are only left jobs 3 and 7" under fcfs-bb, while job 7
(1 CPU, 2 TB, 5 min), free to start at time 4 beside jobs 1 and 4, ends at
time 9 here; the figure itself is not in the text.

Every run is also checked on the engine's own output (``_jobs.csv`` times
and the transcript's registered stage-in profiles): at no instant do the
burst buffers held on a storage node exceed its capacity.
"""

import csv
import json
from pathlib import Path

import pytest

from iosched.analysis.jobs import collapse_phases, jobs_from_rows, merge_job_rows
from iosched.batsim.dynamic import RUN_WORKLOAD
from iosched.experiments.platforms import cluster_xml
from iosched.paths import REPO_ROOT
from iosched.run.simulation import run_simulation
from iosched.schedulers.registry import SCHEDULERS_DIR, required_engine_args, resolve

SCHED = SCHEDULERS_DIR / "burstbuffer.py"
MIN = 60.0
TB = 1e9   # the example's "TB", scaled down so that the I/O takes ~ms (TCP-gamma bound)
CAP = 10 * TB
IO_SLACK = 0.05   # s of computation given to the job model's stage-in/out
EARLY = 0.5   # s: submissions after time 0 come this much before their minute
# Table 1 of the paper: id, submit (min), runtime (min), CPUs, BB (TB, the job's total)
JOBS = [
    (1, 0, 10, 1, 4),
    (2, 0, 4, 1, 2),
    (3, 1, 1, 3, 8),
    (4, 2, 3, 2, 4),
    (5, 3, 1, 3, 4),
    (6, 3, 1, 2, 2),
    (7, 4, 5, 1, 2),
    (8, 4, 3, 2, 4),
]


def example_workload():
    jobs = []
    for jid, sub, run_min, n, bb_tb in JOBS:
        wt = run_min * MIN
        jobs.append({"id": jid, "subtime": sub * MIN - (EARLY if sub else 0), "res": n, "walltime": wt,
                     "profile": str(jid), "bb": bb_tb * TB / n,
                     "flops": (wt - IO_SLACK) * 1e9, "com": 0})
    return {"nb_res": 4, "jobs": jobs,
            "profiles": {str(j["id"]): {"type": "delay", "delay": 1} for j in jobs}}


def run(tmp: Path, policy, workload, nb_nodes=5, storage="node_4", cap=CAP, **opts):
    """Run one policy; returns (rows of _jobs.csv, transcript messages)."""
    plat = tmp / "platform.xml"
    # links fast enough that the I/O of TB-sized burst buffers takes ~ms
    plat.write_text(cluster_xml(nb_nodes, bw=1e15, bb_bw=1e15, lat="1us", bb_lat="1us",
                                pfs={"bw": 1e15, "lat": "1us"}))
    wl = tmp / "w.json"
    wl.write_text(json.dumps(workload))
    out = tmp / policy
    options = {"policy": policy, "bb_capacity": cap, **opts}
    run_simulation(plat, wl, SCHED, out, options=options, timeout=120,
                   engine_args=["-r", f"{storage}:storage", "--enable-dynamic-jobs",
                                "--transcript", str(tmp / f"{policy}.jsonl")])
    with open(out / "out_jobs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    msgs = [json.loads(line) for line in open(tmp / f"{policy}.jsonl")]
    return rows, msgs


def runs_of(rows):
    """One row per run (the per-phase rows ``J:k`` collapsed), as dicts."""
    t = collapse_phases(jobs_from_rows(rows, merge=False), RUN_WORKLOAD)
    return [r for r in t.to_dict("records") if r["workload_name"] == RUN_WORKLOAD]


def starts(rows):
    return {str(r["job_id"]): float(r["starting_time"]) for r in runs_of(rows)}


def ends(rows):
    return {str(r["job_id"]): float(r["finish_time"]) for r in runs_of(rows)}


def max_bb_usage(rows, msgs):
    """Max over time of bytes held per storage id, from the engine's output:
    bytes staged in (PFS -> storage) by each run's registered stage-in
    profile (phase 0, ``J:0/n``), held over the run's [start, finish] of
    _jobs.csv (its phases collapsed)."""
    stage_in = {}
    for m in msgs:
        if m["dir"] != "sched->engine":
            continue
        for ev in m["msg"]["events"]:
            job, _, phase = ev["data"].get("profile_name", "").partition(":")
            if ev["type"] == "REGISTER_PROFILE" and phase.split("/")[0] == "0":
                stage_in[job] = ev["data"]["profile"]
    events = []
    for r in runs_of(rows):
        if not r["starting_time"] == r["starting_time"]:   # NaN: never started
            continue
        hosts = sorted(int(x) for part in str(r["allocated_resources"]).split()
                       for x in (range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)))
        prof = stage_in[str(r["job_id"])]
        m = len(hosts)
        for i in range(m):
            for j in range(m):
                b = prof["com"][i * m + j]
                if b:
                    events.append((float(r["starting_time"]), 1, hosts[j], b))
                    events.append((float(r["finish_time"]), 0, hosts[j], -b))
    held, peak = {}, {}
    for _t, _k, s, b in sorted(events):   # releases (k=0) before acquisitions at equal times
        held[s] = held.get(s, 0.0) + b
        peak[s] = max(peak.get(s, 0.0), held[s])
    return peak


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bb31")
    return {p: run(tmp, p, example_workload(), period=60)
            for p in ("fcfs-easy", "fcfs-bb", "plan-2", "filler", "fcfs", "sjf-bb")}


def test_fcfs_easy_job3_blocks_until_job1_completes(example_runs):
    rows, msgs = example_runs["fcfs-easy"]
    s, e = starts(rows), ends(rows)
    assert abs(e["1"] - 10 * MIN) < 2
    assert abs(s["6"] - 3 * MIN) < 1                  # job 6 backfilled before job 3
    assert abs(s["3"] - e["1"]) < 1                   # job 3 starts when job 1 completes
    # from time 4 (job 3's CPUs free) to job 1's end, job 3 is a barrier
    assert not [j for j, t in s.items() if 4 * MIN + 1 < t < e["1"] - 1e-6]
    assert s["4"] > s["3"] and s["5"] > s["3"]        # jobs 4 and 5 wait behind job 3
    assert abs(s["7"] - s["3"]) < 1 and s["7"] < min(s["4"], s["5"])  # job 7 backfilled with job 3


def test_fcfs_bb_backfills_around_the_bb_reservation(example_runs):
    rows, msgs = example_runs["fcfs-bb"]
    s = starts(rows)
    assert abs(s["4"] - 2 * MIN) < 1                  # job 4 starts when submitted (time 2)
    assert abs(s["3"] - 10 * MIN) < 2                 # job 3 at job 1's end, not delayed
    assert max(s[k] for k in "5678") < s["3"]         # jobs 5-8 all start before job 3
    # fcfs-bb is better here than fcfs-easy
    easy = starts(example_runs["fcfs-easy"][0])
    mean = lambda d: sum(d.values()) / len(d)
    assert mean(s) < mean(easy)


def test_every_job_runs_and_bb_never_overcommitted(example_runs):
    for policy, (rows, msgs) in example_runs.items():
        runs = runs_of(rows)
        assert len(runs) == 8, policy
        assert all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in runs), policy
        peak = max_bb_usage(rows, msgs)
        assert peak and max(peak.values()) <= CAP * (1 + 1e-9), (policy, peak)
        merged = merge_job_rows(rows)
        assert [m["job_id"] for m in merged] == [str(j[0]) for j in JOBS]
        assert all(m["waiting_time"] is not None and m["waiting_time"] >= 0 for m in merged)


def test_fcfs_never_overtakes(example_runs):
    s = starts(example_runs["fcfs"][0])
    order = sorted(s, key=lambda k: (s[k], int(k)))
    assert order == sorted(order, key=int)


def test_overrun_killed_and_bb_freed(tmp_path):
    # job 1 computes longer than its walltime: killed at its walltime, and
    # job 2, which needs job 1's whole burst buffer, starts right after
    wl = {"nb_res": 4, "profiles": {"1": {"type": "delay", "delay": 1}, "2": {"type": "delay", "delay": 1}},
          "jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": 100, "profile": "1", "bb": 9 * TB,
                    "flops": 500e9, "com": 0},
                   {"id": 2, "subtime": 0, "res": 1, "walltime": 100, "profile": "2", "bb": 9 * TB,
                    "flops": 50e9, "com": 0}]}
    rows, msgs = run(tmp_path, "fcfs-bb", wl)
    r = {str(x["job_id"]): x for x in runs_of(rows)}
    assert r["1"]["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert abs(float(r["1"]["execution_time"]) - 100) < 1e-3
    # killed in its compute phase (1): no stage-out phase was run
    assert sorted(x["job_id"] for x in rows if x["job_id"].startswith("1:")) == ["1:0", "1:1"]
    assert float(r["2"]["starting_time"]) >= float(r["1"]["finish_time"])
    assert float(r["2"]["starting_time"]) - float(r["1"]["finish_time"]) < 0.1
    assert max(max_bb_usage(rows, msgs).values()) <= CAP


def test_impossible_jobs_rejected(tmp_path):
    wl = {"nb_res": 4, "profiles": {str(i): {"type": "delay", "delay": 1} for i in (1, 2, 3)},
          "jobs": [{"id": 1, "subtime": 0, "res": 5, "walltime": 100, "profile": "1", "bb": 1e9, "flops": 1e9, "com": 0},
                   {"id": 2, "subtime": 0, "res": 1, "walltime": 100, "profile": "2", "bb": 11 * TB, "flops": 1e9, "com": 0},
                   {"id": 3, "subtime": 0, "res": 1, "walltime": 100, "profile": "3", "bb": 1e9, "flops": 1e9, "com": 0}]}
    rows, _ = run(tmp_path, "filler", wl)
    runs = {str(x["job_id"]) for x in runs_of(rows)}
    assert runs == {"3"}


def test_registry_names():
    for name in ("fcfs-easy", "fcfs-bb", "sjf-bb", "sjf-bb-head", "plan-1", "plan-2", "plan-3",
                 "bb-fcfs", "bb-filler"):
        path, opts = resolve(name)
        assert path == SCHED.resolve()
        assert opts["policy"] in ("fcfs", "fcfs-easy", "filler", "fcfs-bb", "sjf-bb", "sjf-bb-head",
                                  "plan-1", "plan-2", "plan-3")


@pytest.mark.parametrize("policy", ["sjf-bb", "plan-2"])
def test_empty_workload_ends_cleanly(tmp_path, policy):
    # a workload with no job still has a static submitter: the engine notifies
    # no_more_static_job_to_submit, the scheduler closes the registration
    rows, _ = run(tmp_path, policy, {"nb_res": 4, "profiles": {}, "jobs": []})
    assert rows == []


def test_runner_adds_the_dynamic_jobs_flag(tmp_path):
    # `iosched run -s sjf-bb` needs no --engine-arg: the runner adds the flag
    # the burst-buffer scheduler needs, once
    assert required_engine_args(SCHED) == ("--enable-dynamic-jobs",)
    assert required_engine_args(REPO_ROOT / "schedulers" / "burstbuffer.py") == ("--enable-dynamic-jobs",)
    assert required_engine_args(REPO_ROOT / "schedulers" / "baseline.py") == ()
    plat = tmp_path / "p.xml"
    plat.write_text(cluster_xml(5, bw=1e15, bb_bw=1e15, lat="1us", bb_lat="1us",
                                pfs={"bw": 1e15, "lat": "1us"}))
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "profiles": {"1": {"type": "delay", "delay": 1}},
                              "jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": 100, "profile": "1",
                                        "bb": 1e9, "flops": 1e9, "com": 0}]}))
    res = run_simulation(plat, wl, "sjf-bb", tmp_path / "out", timeout=120,
                         options={"bb_capacity": CAP}, engine_args=["-r", "node_4:storage"])
    argv = json.loads((res.output_dir / "command.json").read_text())["engine"]["argv"]
    assert argv.count("--enable-dynamic-jobs") == 1
    with open(res.output_dir / "out_jobs.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["workload_name"] for r in rows} == {"w0", "bb"}
