"""The I/O-aware job model (iosched.bb.model): profiles and phase order."""

import json

import pytest

from iosched.analysis.jobs import merge_job_rows
from iosched.bb import model
from iosched.bb.model import JobRequest
from iosched.sched.bbrun import build_run, num_compute_phases
from iosched.errors import InputError
from iosched.experiments.platforms import cluster_xml
from iosched.run.simulation import run_simulation
from iosched.schedulers.registry import SCHEDULERS_DIR


def test_phase_count_artifact_rule():
    assert num_compute_phases(0) == 1
    assert num_compute_phases(1799e9) == 1
    assert num_compute_phases(5400e9) == 2      # round half to even: 1.5 -> 2
    assert num_compute_phases(3 * 3600e9) == 3
    assert num_compute_phases(1e18) == 10


def test_profiles_structure_and_order():
    req = JobRequest(nodes=3, bb=4e9, flops=3 * 3600e9, com=1e6, walltime=20000)
    bb_of = {0: 10, 1: 10, 2: 11}
    run = build_run("w0!7", req, [2, 0, 1], bb_of, pfs=12)
    assert run.job_id == "bb!7" and run.profile == "7"
    assert list(run.alloc) == [0, 1, 2, 10, 11, 12] and run.res == 6
    assert run.phases == 3
    assert run.sequence == ["7:si", "7:c", "7:k", "7:cd", "7:k", "7:cd", "7:so"]
    assert run.profiles["7"] == {"type": "composed", "repeat": 1, "seq": run.sequence}
    assert run.bb_per_storage == {10: 8e9, 11: 4e9}
    m = 6
    idx = {h: i for i, h in enumerate([0, 1, 2, 10, 11, 12])}
    nz = lambda p: {(i, j): v for i in range(m) for j in range(m) if (v := p["com"][i * m + j])}
    si, c, k, cd, so = (run.profiles[f"7:{x}"] for x in ("si", "c", "k", "cd", "so"))
    assert nz(si) == {(idx[12], idx[10]): 8e9, (idx[12], idx[11]): 4e9} and not any(si["cpu"])
    assert nz(so) == {(idx[10], idx[12]): 8e9, (idx[11], idx[12]): 4e9}
    assert nz(k) == {(idx[0], idx[10]): 2e9, (idx[1], idx[10]): 2e9, (idx[2], idx[11]): 2e9}
    assert c["cpu"] == [3600e9] * 3 + [0.0] * 3
    assert set(nz(c).values()) == {1e6} and len(nz(c)) == 6
    drains = {key: v for key, v in nz(cd).items() if key[1] == idx[12]}
    assert drains == {(idx[10], idx[12]): 4e9, (idx[11], idx[12]): 2e9}
    assert cd["cpu"] == c["cpu"]
    # the whole thing is JSON (registered over the wire)
    json.dumps(run.profiles)


def test_single_phase_has_no_checkpoint():
    run = build_run("w0!1", JobRequest(1, 1e9, 10e9, 0, 100), [0], {0: 5}, pfs=6)
    assert run.sequence == ["1:si", "1:c", "1:so"] and "1:k" not in run.profiles


def test_bad_placement_raises():
    req = JobRequest(2, 1e9, 1e9, 0, 100)
    with pytest.raises(InputError):
        build_run("w0!1", req, [0], {0: 5}, pfs=6)
    with pytest.raises(InputError):
        build_run("w0!1", req, [0, 1], {0: 5}, pfs=6)
    with pytest.raises(InputError):
        build_run("w0!1", req, [0, 1], {0: 6, 1: 6}, pfs=6)


def test_job_request_validation():
    assert model.job_request({"res": 2, "bb": 1e9, "walltime": -1}).walltime == float("inf")
    for bad in ({"res": 0, "bb": 1e9}, {"res": 1}, {"res": 1, "bb": 0}, {"res": 1, "bb": 1, "flops": -1}):
        with pytest.raises(InputError):
            model.job_request(bad)


def test_phases_run_in_order_on_the_engine(tmp_path):
    """One job, 2 phases, on a platform whose links give exact durations:
    stage-in 2 s, compute 3600 s, checkpoint 1 s, compute+drain 3600 s
    (the drain, 1 s of transfer, overlaps the compute), stage-out 2 s.
    Sequential execution gives 7205 s; any overlap of the steps would be shorter."""
    plat = tmp_path / "p.xml"
    plat.write_text(cluster_xml(3, bw="1GBps", bb_bw="100GBps", lat="1us", bb_lat="1us",
                                pfs={"bw": "100GBps", "lat": "1us"}))
    wl = {"nb_res": 2, "profiles": {"1": {"type": "delay", "delay": 1}},
          "jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": 10000, "profile": "1",
                    "bb": 2e9, "flops": 7200e9, "com": 0}]}
    (tmp_path / "w.json").write_text(json.dumps(wl))
    run_simulation(plat, tmp_path / "w.json", SCHEDULERS_DIR / "burstbuffer.py",
                   tmp_path / "out", options={"policy": "fcfs-bb", "bb_capacity": 10e9},
                   engine_args=["-r", "node_2:storage", "--enable-dynamic-jobs"], timeout=60)
    rows = merge_job_rows(tmp_path / "out" / "out_jobs.csv")
    assert len(rows) == 1 and rows[0]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert abs(rows[0]["finish_time"] - rows[0]["starting_time"] - 7205) < 0.1
