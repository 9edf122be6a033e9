"""End-to-end tests of ``iosched-batsim``: bad input, protocol violations,
determinism, output files. Each run is two processes (engine + pybatsim)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from iosched.engine.server import EngineConfig, Simulation
from iosched.errors import ProtocolError
from iosched.run.result import RunError
from iosched.run.simulation import run_simulation

HERE = Path(__file__).resolve().parent
PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="c" prefix="node_" suffix="" radical="0-3" speed="1Gf" bw="125MBps" lat="50us"
           bb_bw="2.25GBps" bb_lat="500us"/>
  <cluster id="m" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="125MBps" lat="50us"
           bb_bw="2.25GBps" bb_lat="500us"><prop id="role" value="master"/></cluster>
  <link id="backbone" bandwidth="1.25GBps" latency="500us"/>
  <zoneRoute src="c" dst="m" gw_src="node_c_router" gw_dst="master_hostm_router">
    <link_ctn id="backbone"/>
  </zoneRoute>
</zone>
</platform>
"""
WORKLOAD = {
    "nb_res": 4,
    "jobs": [
        {"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "d10"},
        {"id": 2, "subtime": 1, "walltime": 100, "res": 2, "profile": "ph"},
        {"id": 3, "subtime": 2, "walltime": 5, "res": 4, "profile": "d10"},
        {"id": 4, "subtime": 3, "walltime": 100, "res": 9, "profile": "d10"},
    ],
    "profiles": {
        "d10": {"type": "delay", "delay": 10},
        "ph": {"type": "parallel_homogeneous", "cpu": 2e9, "com": 1e6},
    },
}


def engine(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "iosched.engine.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def inputs(tmp_path):
    p = tmp_path / "platform.xml"
    p.write_text(PLATFORM)
    w = tmp_path / "workload.json"
    w.write_text(json.dumps(WORKLOAD))
    return p, w


def filler():
    import schedulers

    return Path(schedulers.__file__).parent / "fillerSched.py"


def test_run_writes_batsim_outputs_and_every_job_ends_once(inputs, tmp_path):
    p, w = inputs
    out = tmp_path / "deep" / "new" / "dir"  # created by the run
    run_simulation(p, w, filler(), out, timeout=60)
    rows = list(csv.DictReader(open(out / "out_jobs.csv")))
    assert sorted(r["job_id"] for r in rows) == ["1", "2", "3", "4"]
    state = {r["job_id"]: r["final_state"] for r in rows}
    assert state == {"1": "COMPLETED_SUCCESSFULLY", "2": "COMPLETED_SUCCESSFULLY",
                     "3": "COMPLETED_WALLTIME_REACHED", "4": "REJECTED"}
    r3 = next(r for r in rows if r["job_id"] == "3")
    assert float(r3["execution_time"]) == pytest.approx(5.0)
    r2 = next(r for r in rows if r["job_id"] == "2")
    assert float(r2["execution_time"]) > 2.0  # 2e9 flops at 1 Gflop/s + communications
    ms = list(csv.DictReader(open(out / "out_machine_states.csv")))
    assert all(int(m["nb_idle"]) + int(m["nb_computing"]) == 4 for m in ms)
    sched = list(csv.DictReader(open(out / "out_schedule.csv")))[0]
    assert sched["nb_jobs"] == "4" and sched["nb_jobs_rejected"] == "1"


def test_same_inputs_give_identical_outputs(inputs, tmp_path):
    p, w = inputs
    run_simulation(p, w, filler(), tmp_path / "a", timeout=60)
    run_simulation(p, w, filler(), tmp_path / "b", timeout=60)
    for name in ("out_jobs.csv", "out_machine_states.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.parametrize("mode, message", [
    ("unknown_job", "EXECUTE_JOB at t=.*unknown job 'w0!no_such_job'"),
    ("outside", "EXECUTE_JOB w0!1 .*outside the machine"),
    ("double", "resource 0 is already used by running job w0!1"),
    ("bad_size", "has 3 resources, the job requests 2"),
    ("ignore", "stalled.*neither executed nor rejected"),
])
def test_protocol_violations_are_one_line_errors(inputs, tmp_path, mode, message):
    p, w = inputs
    with pytest.raises(RunError, match=message) as exc:
        run_simulation(p, w, HERE / "schedulers" / "misbehaving.py", tmp_path / mode,
                       options={"mode": mode}, timeout=60)
    assert "\n" not in str(exc.value) and "Traceback" not in str(exc.value)


def test_crashing_scheduler(inputs, tmp_path):
    p, w = inputs
    with pytest.raises(RunError, match="scheduler"):
        run_simulation(p, w, HERE / "schedulers" / "misbehaving.py", tmp_path / "crash",
                       options={"mode": "crash"}, timeout=60)


def test_hanging_scheduler_times_out(inputs, tmp_path):
    p, w = inputs
    with pytest.raises(RunError, match="timed out|did not answer|no reply"):
        run_simulation(p, w, HERE / "schedulers" / "misbehaving.py", tmp_path / "hang",
                       options={"mode": "hang"}, timeout=4)


def test_unreachable_scheduler_engine_gives_up(inputs, tmp_path):
    p, w = inputs
    r = engine("-p", p, "-w", w, "-e", tmp_path / "o", "-s", "tcp://127.0.0.1:1", "--sched-timeout", "1")
    assert r.returncode == 4
    assert "no reply from the scheduler" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("content, code, message", [
    ("{not json", 1, "invalid JSON"),
    (json.dumps({"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "x"}],
                 "profiles": {"x": {"type": "warp"}}}), 1, "unknown profile type 'warp'"),
    (json.dumps({"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "nope"}],
                 "profiles": {}}), 1, "unknown profile 'nope'"),
    (json.dumps({"nb_res": 1, "jobs": [{"id": 1, "subtime": "soon", "res": 1, "profile": "x"}],
                 "profiles": {"x": {"type": "delay", "delay": 1}}}), 1, "subtime"),
])
def test_engine_bad_workload_one_line(inputs, tmp_path, content, code, message):
    p, _ = inputs
    w = tmp_path / "bad.json"
    w.write_text(content)
    r = engine("-p", p, "-w", w, "-e", tmp_path / "o", "-s", "tcp://127.0.0.1:1", "--sched-timeout", "1")
    assert r.returncode == code, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "xbt_cfg" not in ln]
    assert len(lines) == 1 and message in lines[0] and str(w) in lines[0]


def test_engine_bad_platform_and_flags(inputs, tmp_path):
    p, w = inputs
    bad = tmp_path / "bad.xml"
    bad.write_text("<platform><zone></platform>")
    for args, code, message in [
        (["-p", bad, "-w", w], 1, "invalid platform XML"),
        (["-p", tmp_path / "nope.xml", "-w", w], 1, "cannot be read"),
        (["-p", p, "-w", tmp_path / "nope.json"], 1, "cannot be read"),
        (["-p", p, "-w", w, "-r", "ghost:storage"], 1, "unknown host 'ghost'"),
        (["-p", p, "-w", w, "-E"], 2, "energy is out of scope"),
        (["-p", p, "-w", w, "--enable-redis"], 2, "Redis is out of scope"),
        (["-p", p, "-w", w, "--mmax", "x"], 2, "--mmax"),
    ]:
        r = engine(*args, "-e", tmp_path / "o", "-s", "tcp://127.0.0.1:1", "--sched-timeout", "1")
        lines = [ln for ln in r.stderr.splitlines() if "xbt_cfg" not in ln]
        assert r.returncode == code, (args, r.stderr)
        assert len(lines) == 1 and message in lines[0], (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_call_me_later_kill_and_metadata(inputs, tmp_path):
    p, w = inputs
    out = tmp_path / "kill"
    run_simulation(p, w, HERE / "schedulers" / "protocolExerciser.py", out,
                   options={"kill_at": 4.0, "metadata": "tag-1"}, timeout=60)
    rows = {r["job_id"]: r for r in csv.DictReader(open(out / "out_jobs.csv"))}
    assert rows["1"]["final_state"] == "COMPLETED_KILLED"
    # killed by the decision taken at t=4 (after the REQUESTED_CALL), not at its 10 s end
    assert 4.0 <= float(rows["1"]["finish_time"]) < 4.1
    assert rows["2"]["metadata"] == "tag-1"
    assert rows["4"]["final_state"] == "REJECTED"


def _one_job_workload(tmp_path):
    """One 10 s delay job on 2 of 4 resources (for the dynamic-job tests)."""
    w = tmp_path / "small.json"
    w.write_text(json.dumps({
        "nb_res": 4,
        "jobs": [{"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "d10"}],
        "profiles": {"d10": {"type": "delay", "delay": 10}},
    }))
    return w


def test_dynamic_registration(inputs, tmp_path):
    p, _ = inputs
    w = _one_job_workload(tmp_path)
    out = tmp_path / "dyn"
    run_simulation(p, w, HERE / "schedulers" / "protocolExerciser.py", out,
                   options={"dynamic": True}, timeout=60,
                   engine_args=["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs"])
    rows = {(r["workload_name"], r["job_id"]): r for r in csv.DictReader(open(out / "out_jobs.csv"))}
    assert set(rows) == {("w0", "1"), ("dyn", "extra")}
    assert rows[("dyn", "extra")]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert float(rows[("dyn", "extra")]["execution_time"]) == pytest.approx(5.0)


def test_dynamic_profiles_are_garbage_collected_unless_reuse(inputs, tmp_path):
    # Batsim >= 4.0 frees the profile of a finished dynamic job: a later job
    # naming it is an error, unless --enable-profile-reuse
    p, _ = inputs
    w = _one_job_workload(tmp_path)
    sched = HERE / "schedulers" / "protocolExerciser.py"
    with pytest.raises(RunError, match="REGISTER_JOB dyn!again .*profile 'd5' of workload 'dyn' was collected"):
        run_simulation(p, w, sched, tmp_path / "gc", options={"dynamic": True, "reuse": True},
                       timeout=60, engine_args=["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs"])
    out = tmp_path / "reuse"
    # dynamic profiles with --enable-profile-reuse crash the real Batsim 4.2.1:
    # an embedded-only feature
    run_simulation(p, w, sched, out, options={"dynamic": True, "reuse": True}, timeout=60,
                   engine_args=["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs",
                                "--enable-profile-reuse", "--embedded-extensions"])
    rows = {(r["workload_name"], r["job_id"]): r for r in csv.DictReader(open(out / "out_jobs.csv"))}
    assert rows[("dyn", "again")]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert float(rows[("dyn", "again")]["starting_time"]) >= float(rows[("dyn", "extra")]["finish_time"])


DYN_ARGS = ["--enable-dynamic-jobs", "--acknowledge-dynamic-jobs"]


def test_every_event_passes_through_the_server_mailbox(inputs, tmp_path):
    """Registering a profile and a job at t=0: each event is one message to
    Batsim's server (0.6 ms on this platform), so the static job of subtime 0,
    whose message the submitter sends after its HELLO, is announced first,
    as on the real Batsim 4.2.1."""
    p, _ = inputs
    w = _one_job_workload(tmp_path)
    out = tmp_path / "mailbox"
    run_simulation(p, w, HERE / "schedulers" / "protocolExerciser.py", out,
                   options={"dynamic_at_begin": True}, timeout=60,
                   engine_args=DYN_ARGS + ["--transcript", str(out / "transcript.jsonl")])
    submitted = []
    with open(out / "transcript.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            if rec["dir"] == "engine->sched":
                submitted += [(e["data"]["job_id"], e["timestamp"]) for e in rec["msg"]["events"]
                              if e["type"] == "JOB_SUBMITTED"]
    assert [j for j, _ in submitted] == ["w0!1", "dyn!extra"]
    assert submitted[0][1] < submitted[1][1]


@pytest.mark.parametrize("options, extra_args, keyword", [
    ({"dynamic": True, "reuse": True}, ["--enable-profile-reuse"], "with --enable-profile-reuse"),
    ({"dynamic": True, "reuse": True, "reregister": True}, [], "name of a collected dynamic profile"),
])
def test_requests_the_real_batsim_cannot_serve(inputs, tmp_path, options, extra_args, keyword):
    """Refused in one line by default (the real Batsim 4.2.1 crashes or
    aborts on them); served, without a warning, with --embedded-extensions.
    --strict-batsim is accepted and changes nothing."""
    p, _ = inputs
    w = _one_job_workload(tmp_path)
    sched = HERE / "schedulers" / "protocolExerciser.py"
    for strict in ([], ["--strict-batsim"]):
        with pytest.raises(RunError, match=r"REGISTER_PROFILE dyn!d5 .*real Batsim 4\.2\.1.*"
                                           r"--embedded-extensions only") as exc:
            run_simulation(p, w, sched, tmp_path / f"strict{len(strict)}", options=options, timeout=60,
                           engine_args=DYN_ARGS + extra_args + strict)
        assert keyword in str(exc.value)
    out = tmp_path / "extensions"
    run_simulation(p, w, sched, out, options=options, timeout=60,
                   engine_args=DYN_ARGS + extra_args + ["--embedded-extensions"])
    rows = {(r["workload_name"], r["job_id"]): r for r in csv.DictReader(open(out / "out_jobs.csv"))}
    assert rows[("dyn", "again")]["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert not [ln for ln in (out / "engine.log").read_text().splitlines() if "warning" in ln]


def test_dynamic_composed_profile_needs_the_extensions(inputs, tmp_path):
    """A dynamically registered composed profile (the real Batsim 4.2.1
    crashes running such jobs): refused by default, served with
    --embedded-extensions."""
    p, _ = inputs
    w = _one_job_workload(tmp_path)
    for ext in (False, True):
        cfg = EngineConfig(p, [w], export_prefix=str(tmp_path / "o"), dynamic_jobs=True)
        cfg.embedded_extensions = ext
        sim = Simulation(cfg)
        sim._h_register_profile(0.0, {"workload_name": "dyn", "profile_name": "d1",
                                      "profile": {"type": "delay", "delay": 1}})
        composed = {"workload_name": "dyn", "profile_name": "c",
                    "profile": {"type": "composed", "seq": ["d1"]}}
        if ext:
            sim._h_register_profile(0.0, composed)
            assert sim.profiles["dyn"]["c"]["type"] == "composed"
        else:
            with pytest.raises(ProtocolError, match="registered composed profiles.*--embedded-extensions only"):
                sim._h_register_profile(0.0, composed)


def test_dynamic_registration_refused_when_disabled(inputs, tmp_path):
    p, w = inputs
    with pytest.raises(RunError, match="REGISTER_PROFILE .*dynamic jobs are disabled"):
        run_simulation(p, w, HERE / "schedulers" / "protocolExerciser.py", tmp_path / "nodyn",
                       options={"dynamic": True}, timeout=60)


PHYSICS_PLATFORM = PLATFORM.replace('radical="0-3"', 'radical="0-11"').replace(
    'bb_bw="2.25GBps" bb_lat="500us"/>', 'bb_bw="100MBps" bb_lat="500us"/>', 1)


def _ph(cpu, com=0.0):
    return {"type": "parallel_homogeneous", "cpu": cpu, "com": com}


PHYSICS_WORKLOAD = {
    "nb_res": 12,
    "jobs": [
        {"id": 1, "subtime": 0, "walltime": 10, "res": 1, "profile": "ph10"},   # runtime == walltime
        {"id": 2, "subtime": 0, "walltime": 9.5, "res": 1, "profile": "ph10"},  # walltime first
        {"id": 3, "subtime": 0, "walltime": 100, "res": 1, "profile": "ph4"},
        {"id": 4, "subtime": 0, "walltime": 100, "res": 1, "profile": "ph4"},
        {"id": 5, "subtime": 0, "walltime": 100, "res": 1, "profile": "ph0"},   # zero duration
        {"id": 6, "subtime": 0, "walltime": 100, "res": 1, "profile": "seq"},   # two steps: a worker
        {"id": 7, "subtime": 0, "walltime": 100, "res": 2, "profile": "com"},   # 7 and 8 share the
        {"id": 8, "subtime": 0, "walltime": 8, "res": 2, "profile": "com"},     # backbone; killed
        {"id": 9, "subtime": 3, "walltime": 100, "res": 1, "profile": "ph4"},
    ],
    "profiles": {
        "ph10": _ph(10e9), "ph4": _ph(4e9), "ph0": _ph(0.0), "ph1": _ph(1e9),
        "com": _ph(1e9, 5e8),
        "seq": {"type": "composed", "repeat": 2, "seq": ["ph1", "ph4"]},
    },
}


def test_direct_tasks_match_worker_actors_and_batsim_tie_rules(tmp_path):
    """Jobs of one parallel task run as direct tasks of the server actor; the
    results are the same, byte for byte, as with every job on a worker actor
    (--no-direct-tasks), including the cases the server hands over or settles:
    a task ending exactly at its walltime (completed, as SimGrid's wait_for in
    Batsim), a zero-duration task, a two-step job running beside direct jobs,
    and two jobs slowed by a shared link (past their lower bounds, unfinished:
    handed over to workers), one of them killed at its walltime (its task must
    stop loading the link)."""
    p = tmp_path / "platform.xml"
    p.write_text(PHYSICS_PLATFORM)
    w = tmp_path / "workload.json"
    w.write_text(json.dumps(PHYSICS_WORKLOAD))
    order = {"order": [f"w0!{j['id']}" for j in PHYSICS_WORKLOAD["jobs"]]}
    outs = {}
    for name, extra in (("direct", []), ("workers", ["--no-direct-tasks"])):
        rusage = tmp_path / f"{name}.json"
        run_simulation(p, w, HERE / "schedulers" / "orderedFiller.py", tmp_path / name,
                       options=order, engine_args=[*extra, "--rusage-file", rusage], timeout=60)
        outs[name] = {f: (tmp_path / name / f).read_bytes()
                      for f in ("out_jobs.csv", "out_machine_states.csv")}
        outs[name]["stats"] = json.loads(rusage.read_text())
    assert outs["direct"]["out_jobs.csv"] == outs["workers"]["out_jobs.csv"]
    assert outs["direct"]["out_machine_states.csv"] == outs["workers"]["out_machine_states.csv"]
    assert outs["workers"]["stats"]["direct_jobs"] == 0
    # every one-task job started direct; the pairs that could not be ordered were handed over
    assert outs["direct"]["stats"]["direct_jobs"] == 8
    assert outs["direct"]["stats"]["handovers"] >= 2

    rows = {r["job_id"]: r for r in csv.DictReader(open(tmp_path / "direct" / "out_jobs.csv"))}
    assert {j: r["final_state"] for j, r in rows.items()} == {
        "1": "COMPLETED_SUCCESSFULLY", "2": "COMPLETED_WALLTIME_REACHED",
        "8": "COMPLETED_WALLTIME_REACHED", **{j: "COMPLETED_SUCCESSFULLY" for j in "345679"}}
    ex = {j: float(r["execution_time"]) for j, r in rows.items()}
    assert ex["1"] == pytest.approx(10.0, abs=1e-6) and ex["2"] == pytest.approx(9.5, abs=1e-6)
    assert ex["3"] == ex["4"] == pytest.approx(4.0, abs=1e-6)
    assert ex["5"] == pytest.approx(0.0, abs=1e-6)
    assert ex["6"] == pytest.approx(10.0, abs=1e-6)  # 2 x (1 s + 4 s)
    # 1 Gflop each, but 2 x 2 x 5e8 bytes through a 100 MB/s backbone: SimGrid decides
    assert ex["7"] > 10.0 and ex["8"] == pytest.approx(8.0, abs=1e-6)
    assert ex["9"] == pytest.approx(4.0, abs=1e-6)


def _random_ph_workload(seed, n=400):
    """n one-task jobs on 12 nodes: bursts of submissions, runtimes from 1 s
    to 5547 s, 40 % with walltime == runtime. The job start and timer times
    depend on float rounding; on this trace the direct and worker paths give
    the same outputs (a variant of the direct path that skipped syncing
    SimGrid's clock before waiting changed one job's state here). The two
    paths may differ only at exact runtime == walltime ties (docs/engine.md, Known
    differences)."""
    import random

    rng = random.Random(seed)
    jobs, profiles, sub = [], {}, 0.0
    for i in range(n):
        sub += rng.choice([0, 0, 1, 13, 250, 1800])
        rt = rng.choice([1, 7, 60, 300, 1205, 3600, 5547])
        profiles[f"p{rt}"] = _ph(rt * 1e9)
        wt = rt if rng.random() < 0.4 else 2 * rt
        jobs.append({"id": i + 1, "subtime": sub, "walltime": wt, "res": rng.choice([1, 1, 2, 4]),
                     "profile": f"p{rt}"})
    return {"nb_res": 12, "jobs": jobs, "profiles": profiles}


def test_direct_tasks_match_worker_actors_on_a_generated_trace(tmp_path):
    import schedulers

    p = tmp_path / "platform.xml"
    p.write_text(PHYSICS_PLATFORM)
    w = tmp_path / "workload.json"
    w.write_text(json.dumps(_random_ph_workload(7)))
    easy = Path(schedulers.__file__).parent / "easyBackfill.py"
    out = {}
    for name, extra in (("direct", []), ("workers", ["--no-direct-tasks"])):
        run_simulation(p, w, easy, tmp_path / name, engine_args=extra, timeout=120)
        out[name] = (tmp_path / name / "out_jobs.csv").read_bytes()
    assert out["direct"] == out["workers"]
    assert out["direct"].count(b"\n") == 401


def test_iosched_run_metrics_count_the_compute_hosts_of_the_engine_command(inputs, tmp_path):
    """`-r node_3:storage` given to the engine: node_3 is no compute host, so the
    utilization is over 3 nodes, not the platform's 4."""
    p, _ = inputs
    w = tmp_path / "small.json"
    w.write_text(json.dumps({"nb_res": 3, "jobs": [
        {"id": i, "subtime": i, "walltime": 100, "res": 1 + i % 3, "profile": "d10"} for i in range(4)],
        "profiles": {"d10": {"type": "delay", "delay": 10}}}))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "run", "-p", str(p), "-w", str(w),
                        "-s", "fcfs", "-o", str(out), "--engine-arg=-r",
                        "--engine-arg=node_3:storage"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    m = json.loads((out / "metrics.json").read_text())
    assert m["nb_resources"] == 3 and m["final_states"] == {"COMPLETED_SUCCESSFULLY": 4}
    allocs = [row["allocated_resources"] for row in csv.DictReader(open(out / "out_jobs.csv"))]
    assert all("3" not in a for a in allocs)  # node_3 (resource 3) holds no job


# A platform whose every route is one 10 B/s link without latency: each of
# Batsim's internal 1-byte messages then costs 0.1 s.
SLOW_PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <host id="master_host" speed="1Gf"/>
  <host id="n0" speed="1Gf"/><host id="n1" speed="1Gf"/><host id="n2" speed="1Gf"/>
  <link id="mloop" bandwidth="10Bps" latency="0s"/>
  <link id="l0" bandwidth="10Bps" latency="0s"/><link id="l1" bandwidth="10Bps" latency="0s"/>
  <link id="l2" bandwidth="10Bps" latency="0s"/>
  <route src="master_host" dst="master_host"><link_ctn id="mloop"/></route>
  <route src="n0" dst="master_host"><link_ctn id="l0"/></route>
  <route src="n1" dst="master_host"><link_ctn id="l1"/></route>
  <route src="n2" dst="master_host"><link_ctn id="l2"/></route>
</zone>
</platform>
"""


def test_internal_messages_cost_one_byte_over_their_route(tmp_path):
    """Batsim's actors exchange 1-byte messages (src/ipp.cpp): on 10 B/s
    links each costs 0.1 s. The expected rows are the real Batsim 4.2.1's
    on these inputs with pybatsim's fillerSched (recorded 2026-11-27): job 0
    submitted at 0 starts at 0.405 (HELLO, submission, EXECUTE_JOB: 0.3 s,
    and fillerSched's first reply is 5 ms late), jobs 1 and 2 submitted at
    20 start at 20.5 and 20.6; with latency only they would start at 0.005
    and 20."""
    p = tmp_path / "slow.xml"
    p.write_text(SLOW_PLATFORM)
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"nb_res": 3, "profiles": {"d10": {"type": "delay", "delay": 10}}, "jobs": [
        {"id": 0, "subtime": 0, "res": 1, "profile": "d10"},
        {"id": 1, "subtime": 20, "res": 2, "profile": "d10"},
        {"id": 2, "subtime": 20, "res": 1, "profile": "d10", "walltime": 5}]}))
    run_simulation(p, w, filler(), tmp_path / "out", timeout=60)
    rows = [(r["job_id"], r["final_state"], r["starting_time"], r["finish_time"], r["allocated_resources"])
            for r in csv.DictReader(open(tmp_path / "out" / "out_jobs.csv"))]
    assert rows == [("0", "COMPLETED_SUCCESSFULLY", "0.405000", "10.405000", "0"),
                    ("2", "COMPLETED_WALLTIME_REACHED", "20.600000", "25.600000", "2"),
                    ("1", "COMPLETED_SUCCESSFULLY", "20.500000", "30.500000", "0-1")]


@pytest.mark.parametrize("args, expected", [(["--mmax", "3"], 3), (["--mmax-workload"], 4),
                                            (["--mmax", "3", "--mmax-workload"], 3),
                                            (["--mmax", "9", "--mmax-workload"], 4)])
def test_mmax_and_mmax_workload_as_batsim(tmp_path, args, expected):
    """Batsim 4.2.1 (load_workloads_and_workflows, src/batsim.cpp): with
    both flags, the smaller of --mmax and the workloads' largest nb_res."""
    plat = tmp_path / "p.xml"
    plat.write_text(PLATFORM.replace('radical="0-3"', 'radical="0-5"'))  # 6 compute hosts
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"nb_res": 4, "profiles": {"d": {"type": "delay", "delay": 1}},
                             "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}]}))
    t = tmp_path / "t.jsonl"
    run_simulation(plat, w, filler(), tmp_path / "out", timeout=60,
                   engine_args=[*args, "--transcript", str(t)])
    begins = json.loads(t.read_text().splitlines()[0])["msg"]["events"][0]
    assert begins["type"] == "SIMULATION_BEGINS"
    assert begins["data"]["nb_compute_resources"] == expected
