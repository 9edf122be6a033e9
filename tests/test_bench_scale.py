"""Tests of the scale benchmark (iosched.experiments.bench.scale): its workload
generator (determinism, shapes, scaling), one tiny run end to end with the
peak-memory figures, and bad input. Nothing here is timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iosched.errors import InputError
from iosched.experiments.bench import scale
from iosched.workloads.writer import dump_workload

REPO = Path(__file__).resolve().parents[1]
KTH = REPO.parent / "shared" / "data" / "KTH-SP2-1996-2.1-cln.swf"
needs_kth = pytest.mark.skipif(not KTH.is_file(), reason=f"shared data not available: {KTH}")

SWF_LINES = [
    # number submit wait run alloc cpu mem req_procs req_time ...
    "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",
    "2 10 0 50 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1",
    "3 15 0 30 100 -1 -1 100 -1 -1 1 1 1 -1 1 -1 -1 -1",
    "4 40 0 0 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1",  # no run time: dropped
    "5 70 0 20 50 -1 -1 50 10 -1 1 1 1 -1 1 -1 -1 -1",  # ran longer than requested
]


@pytest.fixture
def swf(tmp_path):
    p = tmp_path / "tiny.swf"
    p.write_text("; MaxProcs: 100\n" + "\n".join(SWF_LINES) + "\n")
    return p


def test_same_arguments_give_byte_identical_workloads(swf):
    a, ia = scale.synthetic_workload(50, 16, "delay", seed=3, swf=swf)
    b, ib = scale.synthetic_workload(50, 16, "delay", seed=3, swf=swf)
    assert dump_workload(a) == dump_workload(b) and ia == ib
    c, _ = scale.synthetic_workload(50, 16, "delay", seed=4, swf=swf)
    assert dump_workload(c) != dump_workload(a)


def test_shapes_and_scaling(swf):
    wl, info = scale.synthetic_workload(200, 1000, "delay", seed=0, swf=swf)
    jobs = wl["jobs"]
    assert wl["nb_res"] == 1000 and len(jobs) == 200
    assert [j["id"] for j in jobs] == list(range(200))
    assert jobs[0]["subtime"] == 0.0
    assert all(a["subtime"] <= b["subtime"] for a, b in zip(jobs, jobs[1:]))
    # sizes are the trace's x 1000 / 100; the 0-run-time job is never drawn
    assert {j["res"] for j in jobs} <= {40, 10, 1000, 500}
    assert {j["profile"] for j in jobs} <= {"delay_100", "delay_50", "delay_30", "delay_20"}
    assert set(wl["profiles"]) == {j["profile"] for j in jobs}
    by_profile = {j["profile"]: j for j in jobs}
    assert "walltime" not in by_profile.get("delay_30", {})  # no requested time in the trace
    if "delay_20" in by_profile:
        assert by_profile["delay_20"]["walltime"] == 20.0  # raised to the run time
    assert info["source_jobs"] == 4 and info["max_res"] <= 1000
    work = sum(j["res"] * wl["profiles"][j["profile"]]["delay"] for j in jobs)
    assert info["work_node_s"] == work
    assert info["offered_load"] == round(work / (1000 * jobs[-1]["subtime"]), 4)


def test_small_machines_keep_at_least_one_node_and_parallel_profiles(swf):
    wl, _ = scale.synthetic_workload(30, 3, "parallel_homogeneous", seed=1, swf=swf)
    assert all(1 <= j["res"] <= 3 for j in wl["jobs"])
    assert all(p["type"] == "parallel_homogeneous" and p["com"] == 0.0 for p in wl["profiles"].values())


@pytest.mark.parametrize("kwargs, message", [
    ({"nb_jobs": 0}, "jobs must be an integer >= 1"),
    ({"nb_nodes": -2}, "nodes must be an integer >= 1"),
    ({"nb_jobs": 2.5}, "jobs must be an integer >= 1"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"profile_type": "composed"}, "profile type 'composed'"),
])
def test_bad_arguments_are_one_line_input_errors(swf, kwargs, message):
    args = {"nb_jobs": 5, "nb_nodes": 4, "profile_type": "delay", "seed": 0, "swf": swf, **kwargs}
    with pytest.raises(InputError, match=message) as exc:
        scale.synthetic_workload(**args)
    assert "\n" not in str(exc.value)


def test_missing_trace_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        scale.synthetic_workload(5, 4, swf=tmp_path / "none.swf")


def test_write_inputs(swf, tmp_path):
    wl, plat, info = scale.write_inputs(tmp_path / "in", 20, 8, "delay", seed=0, swf=swf)
    assert json.loads(wl.read_text())["nb_res"] == 8
    assert 'radical="0-7"' in plat.read_text()
    assert info["workload_bytes"] == wl.stat().st_size


def test_tiny_run_end_to_end(swf, tmp_path):
    wl, plat, _ = scale.write_inputs(tmp_path / "in", 30, 8, "delay", seed=0, swf=swf)
    r = scale.measure(plat, wl, "easy", tmp_path / "run", timeout=120)
    assert r["nb_jobs"] == 30 and r["makespan_s"] > 0 and r["wall_s"] > 0
    for who in ("engine", "scheduler"):
        assert r[who]["max_rss_mb"] > 1 and r[who]["cpu_s"] >= 0
    # the larger of the sampled peak and the one the engine writes
    assert r["engine"]["max_rss_mb"] >= r["engine"]["max_rss_mb_at_end"]
    ip = scale.measure(plat, wl, "easy", tmp_path / "run-ip", in_process=True, timeout=120)
    assert ip["scheduler"] == ip["engine"]
    assert (tmp_path / "run" / "out_jobs.csv").read_bytes() == (tmp_path / "run-ip" / "out_jobs.csv").read_bytes()


def test_cli_writes_a_result_file(swf, tmp_path):
    out = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-m", "iosched", "bench", "scale", "--nodes", "8", "--jobs", "20",
                           "--swf", str(swf), "--output", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "scale_delay_8x20.json").read_text())
    assert res["points"][0]["nb_jobs"] == 20 and res["points"][0]["runs"][0]["nb_jobs"] == 20
    assert res["command"].startswith("iosched bench scale --nodes 8 --jobs 20 --swf ")
    assert len(res["load_1min"]) == 4


@pytest.mark.parametrize("args, message", [
    (["--nodes", "0"], "--nodes"),
    (["--scheduler", "no-such"], "no-such"),
    (["--profiles", "composed"], "--profiles"),
])
def test_cli_bad_input_is_one_line(swf, tmp_path, args, message):
    proc = subprocess.run([sys.executable, "-m", "iosched", "bench", "scale", "--swf", str(swf),
                           "--output", str(tmp_path), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr

