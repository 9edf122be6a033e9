"""The burst-buffer family's artifact semantics (issue 13): the generator's
cap and bandwidth, the artifact's workloads and parts, sjf-bb's backfill
order, the artifact's plan search (with its early rejection), and the
per-phase job encoding against the composed one."""

import json
import math
import random
from types import SimpleNamespace

import pandas as pd
import pytest

from iosched.analysis.jobs import collapse_phases, load_jobs, merge_runs
from iosched.batsim.dynamic import base_local_id, phase_index, phase_job_id, static_id_of
from iosched.bb import plan
from iosched.bb.model import MB
from iosched.errors import InputError
from iosched.experiments.bb import artifact
from iosched.experiments.bb import workload as W
from iosched.experiments.platforms import cluster_xml
from iosched.run.simulation import run_simulation
from iosched.sched.core import Scheduler
from iosched.sched.machine import Machine
from iosched.sched.orders import fcfs, sjf
from iosched.sched.placer import FirstFit
from iosched.sched.policies import Easy
from iosched.schedulers.registry import SCHEDULERS_DIR


# ------------------------------------------------------------ the generator
def test_artifact_cap_rule():
    C, S = 40e9, 12
    assert W.cap_bb(5e9, 4, C, S, "artifact") == 5e9            # below every cap
    assert W.cap_bb(55e9, 1, C, S, "artifact") == 40e9          # 40 GB per processor
    # 30 nodes: 3 burst buffers per storage node; 20 GB each would need 60 GB
    assert W.cap_bb(20e9, 30, C, S, "artifact") == math.floor(C / 3)
    # the old rule caps only the total: 30 x 20 GB = 600 GB > 480 GB -> 16 GB
    assert W.cap_bb(20e9, 30, C, S, "total") == 16e9
    with pytest.raises(InputError, match="cap="):
        W.cap_bb(1e9, 1, C, S, "none")


@pytest.fixture(scope="module")
def kth(shared):
    return shared / "data" / "KTH-SP2-1996-2.1-cln.swf"


def test_generator_defaults_are_the_artifacts(kth):
    w = W.generate(kth, seed=3, first=300)
    assert w["bb_capacity_per_storage"] == 40e9 and w["io_bandwidth"] == 1250 * MB
    for j in w["jobs"]:
        n, bb = j["res"], j["io"]["burst_buffer"]["bytes"]
        assert bb * math.ceil(n / 12) <= 40e9                  # every job fits the machine
    # the compute-time correction uses 1,250 MB/s: flops = speed * max(run - 40 bb / B, 0.05 run)
    log = {int(r.job_number): r for r in W.read_swf(kth).jobs.itertuples() if r.job_number <= 400}
    checked = 0
    for j in w["jobs"]:
        r = log.get(int(j["id"]))
        if r is None or j["walltime"] <= 120:
            continue
        want = round(1e9 * max(r.run_time - 40 * j["io"]["burst_buffer"]["bytes"] / (1250 * MB),
                               0.05 * r.run_time))
        assert j["io"]["compute"]["flops"] == want
        checked += 1
    assert checked > 50


def test_artifact_workloads_satisfy_the_cap_rule_and_load(shared):
    base = shared / "data" / "bb-artifact"
    w = artifact.load(base / artifact.FIRST_1000)
    assert len(w["jobs"]) == 1000 and w["jobs"][0]["id"] == 15
    for j in w["jobs"]:
        p = w["profiles"][j["profile"]]
        io = j["io"]
        assert (io["burst_buffer"]["bytes"], io["compute"]["flops"], io["compute"]["com"]) == \
            (p["bb"], p["cpu"], p["com"])
        assert W.cap_bb(io["burst_buffer"]["bytes"], j["res"], 40e9, 12, "artifact") == io["burst_buffer"]["bytes"]
    parts = artifact.campaign_workload(folder=str(base), parts=True)
    assert len(parts) == 16
    ids = [(p["jobs"][0]["id"], p["jobs"][-1]["id"]) for p in parts]
    assert [lo for lo, _n in W.ARTIFACT_PARTS] == [a for a, _b in ids]
    assert all(b <= lo + n - 1 for (lo, n), (_a, b) in zip(W.ARTIFACT_PARTS, ids))


def test_artifact_loader_errors_name_file_job_and_field(tmp_path):
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps({"jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": 10,
                                         "profile": "1"}],
                               "profiles": {"1": {"type": "parallel_homogeneous", "cpu": 1e9,
                                                  "com": 0}}}))
    with pytest.raises(InputError, match=r"w\.json: job 1: profile field 'bb'"):
        artifact.load(bad)
    bad.write_text("{")
    with pytest.raises(InputError, match="not JSON"):
        artifact.load(bad)


def test_generator_cut_into_the_artifacts_parts(kth):
    w = W.generate(kth, seed=1, first=3100)
    parts = W.artifact_parts(w)
    assert len(parts[0]["jobs"]) > 1000 and parts[0]["jobs"][0]["subtime"] == 1
    # part 0 holds SWF jobs 15..1780, part 1 starts at 1781 (artifact part-1.yaml)
    assert parts[0]["jobs"][-1]["id"] <= 1780 and parts[1]["jobs"][0]["id"] >= 1781


# ------------------------------------------------------------ dynamic ids
def test_phase_job_ids_round_trip():
    assert phase_job_id("w0!12", 3) == "bb!12:3"
    assert static_id_of("bb!12:3") == "w0!12" and static_id_of("bb!12") == "w0!12"
    assert base_local_id("12:3") == "12" and phase_index("12:3") == 3 and phase_index("12") == 0


def test_collapse_phases_merges_a_run():
    rows = pd.DataFrame([
        {"job_id": "7", "workload_name": "w0", "final_state": "REJECTED", "starting_time": math.nan,
         "finish_time": math.nan, "execution_time": math.nan, "allocated_resources": "",
         "success": 0, "consumed_energy": 0.0},
        {"job_id": "7:0", "workload_name": "bb", "final_state": "COMPLETED_SUCCESSFULLY",
         "starting_time": 10.0, "finish_time": 12.0, "execution_time": 2.0,
         "allocated_resources": "0-1 4", "success": 1, "consumed_energy": 1.0},
        {"job_id": "7:1", "workload_name": "bb", "final_state": "COMPLETED_WALLTIME_REACHED",
         "starting_time": 12.0, "finish_time": 50.0, "execution_time": 38.0,
         "allocated_resources": "0-1 4", "success": 0, "consumed_energy": 2.0},
    ])
    out = collapse_phases(rows)
    run = out[out["workload_name"] == "bb"].iloc[0]
    assert len(out) == 2 and run["job_id"] == "7"
    assert (run["starting_time"], run["finish_time"], run["execution_time"]) == (10.0, 50.0, 40.0)
    assert run["final_state"] == "COMPLETED_WALLTIME_REACHED" and run["consumed_energy"] == 3.0


# ------------------------------------------------------------ sjf-bb
class _BJ:
    def __init__(self, jid, n, wt):
        self.id, self.workload = f"w0!{jid}", "w0"
        self.requested_resources, self.requested_time = n, wt
        self.submit_time = 0.0
        self.json_dict = {"id": self.id, "res": n, "walltime": wt}


class _Launcher:
    def __init__(self):
        self.started = []

    def start(self, rec):
        self.started.append(rec.job.id)

    def reject(self, *a):
        raise AssertionError(a)

    def call_me_later(self, t):
        pass


@pytest.mark.parametrize("name,order,policy,reserved", [
    ("sjf-bb", fcfs, Easy(backfill_order=sjf), "w0!2"),
    ("sjf-bb-head", sjf, Easy(), "w0!4"),
])
def test_sjf_bb_reserves_the_first_fcfs_job_and_sorts_only_the_backfill(name, order, policy,
                                                                        reserved):
    """4 nodes; job 1 holds 3 of them for 100 s. Waiting: job 2 (4 nodes,
    50 s), job 3 (1 node, 90 s), job 4 (2 nodes, 10 s). sjf-bb (paper,
    artifact): the reservation is job 2's (first in FCFS order that does not
    fit) and job 3 backfills (ends before it); sjf-bb-head: the queue is
    sorted by walltime, so job 4 (shortest) gets the reservation."""
    s = Scheduler(policy, FirstFit(), order)
    s.launcher = _Launcher()
    s.begin(Machine([{"id": i, "name": f"n{i}"} for i in range(4)]), 0.0)
    s.submit(_BJ(1, 3, 100))
    s.schedule(0.0)
    for jid, n, wt in ((2, 4, 50), (3, 1, 90), (4, 2, 10)):
        s.submit(_BJ(jid, n, wt))
    s.schedule(1.0)
    assert s.head_reservation.job_id == reserved
    if name == "sjf-bb":
        assert s.launcher.started == ["w0!1", "w0!3"]


# ------------------------------------------------------------ plan search
class _PJ:
    def __init__(self, seq, est, nodes=1, bb=1.0):
        self.seq, self.estimate, self.nb_res = seq, est, nodes
        self.request = SimpleNamespace(bb=bb)


def _single_machine_cost(order):
    t, c = 0.0, 0.0
    for w in order:
        c += (t + 0.3) ** 2     # non-integer costs, so that rounding matters
        t += w.estimate
    return c


def _until(order, stop):
    t, c = 0.0, 0.0
    for k, w in enumerate(order):
        c += (t + 0.3) ** 2
        t += w.estimate
        if k + 1 < len(order) and stop(c):
            return c, False
    return c, True


def test_artifact_candidates_are_stable_sorts():
    jobs = [_PJ(0, 5, 2, 4.0), _PJ(1, 3, 1, 4.0), _PJ(2, 5, 2, 1.0), _PJ(3, 1, 4, 8.0)]
    c = plan.artifact_candidates(jobs)
    assert len(c) == 9 and [w.seq for w in c[0]] == [0, 1, 2, 3]
    assert [w.seq for w in c[1]] == [3, 0, 2, 1]          # processors desc, ties in queue order
    assert [w.seq for w in c[2]] == [3, 0, 1, 2]          # burst buffer desc
    assert [w.seq for w in c[7]] == [3, 1, 0, 2]          # walltime asc
    assert [w.seq for w in c[8]] == [0, 2, 1, 3]          # walltime desc, ties in queue order


def test_artifact_search_exhaustive_small_and_rounded():
    jobs = [_PJ(i, est) for i, est in enumerate([5, 1, 3, 2])]
    res = plan.artifact_order(jobs, _single_machine_cost, random.Random(0))
    assert res.exhaustive and res.evaluations == 24
    assert [w.estimate for w in res.order] == [1, 2, 3, 5] and res.cost == round(res.cost)


@pytest.mark.parametrize("seed", range(6))
def test_early_rejection_gives_the_full_searchs_result(seed):
    ests = random.Random(seed).sample(range(1, 60), 14)
    jobs = [_PJ(i, e, 1 + i % 3, float(e % 7 + 1)) for i, e in enumerate(ests)]
    full = plan.artifact_order(jobs, _single_machine_cost, random.Random(seed))
    fast = plan.artifact_order(jobs, _single_machine_cost, random.Random(seed), cost_until=plan.limit_until(_until))
    assert full.annealed and fast.annealed
    assert [w.seq for w in fast.order] == [w.seq for w in full.order] and fast.cost == full.cost
    assert full.cost <= _single_machine_cost(jobs)      # never worse than the queue order


# ------------------------------------------------------------ encodings
def _small_bb_workload():
    jobs = []
    for k in range(12):
        n = 1 + k % 3
        jobs.append({"id": k + 1, "subtime": 20.0 * k, "res": n, "walltime": 400.0 + 50 * (k % 4),
                     "profile": str(k + 1), "bb": 1e9 * (1 + k % 5), "flops": (150 + 40 * k) * 1e9,
                     "com": 1e6 if n > 1 else 0})
    return {"nb_res": 4, "jobs": jobs, "profiles": {j["profile"]: {"type": "delay", "delay": 1}
                                                    for j in jobs}}


def test_phases_and_composed_encodings_give_the_same_schedule(tmp_path):
    """One dynamic job per phase (the default, real-Batsim compatible) and
    the embedded-only composed profile run the same SimGrid tasks: on a
    short log, same allocations and final states; times differ by the
    per-phase message delays only (ms). Over a long log those delays change
    decisions (docs/burst-buffers.md: plan-2 on the whole log)."""
    plat = tmp_path / "p.xml"
    plat.write_text(cluster_xml(5, bw=1e9, bb_bw=1e9, lat="10us", bb_lat="10us",
                                pfs={"bw": 2e9, "lat": "10us"}))
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps(_small_bb_workload()))
    tables = {}
    for enc in ("phases", "composed"):
        out = tmp_path / enc
        # the composed encoding registers composed profiles: an embedded-only feature
        ext = ["--embedded-extensions"] if enc == "composed" else []
        run_simulation(plat, wl, SCHEDULERS_DIR / "burstbuffer.py", out, timeout=120,
                       options={"policy": "fcfs-bb", "bb_capacity": 20e9, "encoding": enc},
                       engine_args=["-r", "node_4:storage", "--enable-dynamic-jobs", *ext])
        tables[enc] = merge_runs(load_jobs(out)).set_index("job_id")
    a, b = tables["phases"], tables["composed"]
    assert a.attrs["nb_runs_merged"] == b.attrs["nb_runs_merged"] == 12
    assert (a["allocated_resources"] == b["allocated_resources"]).all()
    assert (a["final_state"] == b["final_state"]).all()
    assert (a["starting_time"] - b["starting_time"]).abs().max() < 0.05
    assert (a["finish_time"] - b["finish_time"]).abs().max() < 0.05
