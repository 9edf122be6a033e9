"""Tests of iosched.run (simulation, robin, supervise, cli): supervised scheduler + engine runs, robin files, CLI.

Every engine here is a fake written to tmp_path (a small zmq REQ client that
speaks just enough of the Batsim protocol); schedulers are either pybatsim's
shipped fillerSched or small pybatsim scheduler files written to tmp_path.
Fake processes record (pid, create_time) of themselves and of a sleeping
child they spawn, so that the tests can check that every process of both
trees is gone (a zombie would keep its create_time and count as present).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest
import yaml

import batsim
from processes import RECORD

from iosched.errors import InputError
from iosched.run import affinity, robin, simulation, supervise
from iosched.run.result import RunError
from iosched.run.robin import load_robin, run_robin, write_robin
from iosched.run.simulation import free_port, run_simulation

FILLER = Path(batsim.__file__).resolve().parent.parent / "schedulers" / "fillerSched.py"

JOBS_HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
               "requested_time,success,final_state,starting_time,execution_time,finish_time,"
               "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,"
               "metadata")

FAKE_ENGINE = RECORD + textwrap.dedent('''
    import argparse, time
    import zmq

    ap = argparse.ArgumentParser()
    ap.add_argument("-p")
    ap.add_argument("-w", action="append")
    ap.add_argument("-e", default="out")
    ap.add_argument("-s", default="tcp://localhost:28000")
    ap.add_argument("-q", action="store_true")
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--pause", type=float, default=0.0)
    a = ap.parse_args()
    record("FAKE_ENGINE_PIDS", spawn=a.mode != "ok")
    if a.mode == "crash":
        print("engine: bad input: workload field 'jobs' is missing", file=sys.stderr)
        sys.exit(2)
    if a.mode == "abort":  # the real Batsim on a failed xbt_assert: message, backtrace, SIGABRT
        print("[master_host0:Scheduler REQ-REP:(4) 0.000750] ../src/protocol.cpp:913: [root/CRITICAL] "
              "Invalid JSON message: the 'data' value of event 1 (EXECUTE_JOB) should be of size in "
              "{2,3} (size=4)", file=sys.stderr)
        print("Backtrace (displayed in actor Scheduler REQ-REP):", file=sys.stderr)
        for k in range(3):
            print(f"  ->  {k}# frame{k} in libsimgrid.so.3.32", file=sys.stderr)
        sys.stderr.flush()
        os.abort()
    ctx = zmq.Context()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(a.s)
    if a.mode == "hang":
        time.sleep(600)

    def ask(now, events):
        s.send_string(json.dumps({"now": now, "events": events}))
        return json.loads(s.recv_string())

    res = [{"id": i, "name": f"h{i}", "state": "idle", "properties": {}} for i in range(4)]
    config = {"profiles-forwarded-on-submission": False, "dynamic-jobs-enabled": False,
              "dynamic-jobs-acknowledged": False, "forward-unknown-events": False}
    ask(0.0, [{"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": {
        "nb_resources": 4, "nb_compute_resources": 4, "nb_storage_resources": 0,
        "allow_compute_sharing": False, "allow_storage_sharing": False, "config": config,
        "compute_resources": res, "storage_resources": [], "workloads": {"w0": a.w[0]},
        "profiles": {"w0": {}}}}])
    time.sleep(a.pause)
    ask(1.0, [{"timestamp": 1.0, "type": "SIMULATION_ENDS", "data": {}}])
    with open(a.e + "_jobs.csv", "w") as f:
        f.write(HEADER + "\\n")
        f.write('1,w0,delay_10,0.0,1,100.0,1,COMPLETED_SUCCESSFULLY,0.0,10.0,10.0,0.0,10.0,'
                '1.0,0,-1,""\\n')
    with open(a.e + "_schedule.csv", "w") as f:
        f.write("makespan\\n10.0\\n")
    with open(a.e + "_machine_states.csv", "w") as f:
        f.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing,"
                "nb_unavailable\\n0,0,0,0,4,0,0\\n")
    print("engine: simulation ended", file=sys.stderr)
''').replace("HEADER", repr(JOBS_HEADER))

SCHEDULERS = {
    # binds, answers, records the options it received
    "okSched": '''
        from batsim.batsim import BatsimScheduler

        class OkSched(BatsimScheduler):
            def onSimulationBegins(self):
                record("FAKE_SCHED_PIDS", spawn=False)
                if self.options.get("record"):
                    with open(self.options["record"], "w") as f:
                        json.dump(self.options, f)
                if self.options.get("record_placement"):
                    with open(self.options["record_placement"], "w") as f:
                        json.dump({"cpus": sorted(os.sched_getaffinity(0)),
                                   "policy": os.sched_getscheduler(0)}, f)

            def onJobSubmission(self, job):
                self.bs.reject_jobs([job])
    ''',
    # crashes while being imported (never binds)
    "crashSched": '''
        record("FAKE_SCHED_PIDS")
        print("boom: scheduler crashed at import", file=sys.stderr)
        sys.exit(3)
    ''',
    # crashes on the first message
    "crashMidSched": '''
        from batsim.batsim import BatsimScheduler

        class CrashMidSched(BatsimScheduler):
            def onSimulationBegins(self):
                record("FAKE_SCHED_PIDS")
                raise RuntimeError("boom in onSimulationBegins")
    ''',
    # binds, then never answers
    "hangSched": '''
        import time
        from batsim.batsim import BatsimScheduler

        class HangSched(BatsimScheduler):
            def onSimulationBegins(self):
                record("FAKE_SCHED_PIDS")
                time.sleep(600)
    ''',
    # never binds
    "neverBindSched": '''
        import time
        record("FAKE_SCHED_PIDS")
        time.sleep(600)
    ''',
}


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Fake inputs, engine and schedulers in tmp_path; pid files in the environment."""
    d = tmp_path / "fakes"
    d.mkdir()
    (d / "fake_engine.py").write_text(FAKE_ENGINE)
    for name, body in SCHEDULERS.items():
        (d / f"{name}.py").write_text(RECORD + textwrap.dedent(body))
    (d / "platform.xml").write_text("<platform version='4.1'/>\n")
    (d / "workload.json").write_text(json.dumps({"nb_res": 4, "jobs": [], "profiles": {}}))
    pid_files = {"sched": tmp_path / "sched.pids", "engine": tmp_path / "engine.pids"}
    monkeypatch.setenv("FAKE_SCHED_PIDS", str(pid_files["sched"]))
    monkeypatch.setenv("FAKE_ENGINE_PIDS", str(pid_files["engine"]))

    class Env:
        dir = d
        platform = d / "platform.xml"
        workload = d / "workload.json"
        engine = [sys.executable, str(d / "fake_engine.py")]
        pids = pid_files

        @staticmethod
        def sched(name):
            return d / f"{name}.py"

        @staticmethod
        def recorded():
            out = []
            for p in pid_files.values():
                if p.exists():
                    out += [tuple(json.loads(line)) for line in p.read_text().splitlines()]
            return out

    return Env


def _gone(pid, create_time=None):
    """True if the process is gone (not a zombie; a reused pid is another process)."""
    if not psutil.pid_exists(pid):
        return True
    if create_time is None:
        return False
    try:
        return abs(psutil.Process(pid).create_time() - create_time) > 1e-3
    except psutil.NoSuchProcess:
        return True


def _assert_all_gone(env, err_or_result=None, expect_min=1):
    """Every recorded process (fake scripts' own records and the runner's) is gone."""
    recorded = dict(env.recorded())
    assert len(recorded) >= expect_min, recorded
    for pid, ct in recorded.items():
        assert _gone(pid, ct), f"process {pid} survived: {psutil.Process(pid)}"
    if err_or_result is not None:
        for name, pids in err_or_result.pids.items():
            assert pids, name
            for pid in pids:
                assert _gone(pid, recorded.get(pid)), (name, pid)


def _run(env, sched, out, **kw):
    kw.setdefault("engine_cmd", env.engine)
    kw.setdefault("timeout", 20)
    kw.setdefault("ready_timeout", 5)
    return run_simulation(env.platform, env.workload, sched, out, **kw)


# --------------------------------------------------------------------------
# free_port


def test_free_port_is_bindable_on_loopback():
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


# --------------------------------------------------------------------------
# run_simulation: success


def test_success_with_pybatsim_filler_creates_nested_output_dir(env, tmp_path):
    out = tmp_path / "a" / "b" / "run1"
    assert not out.exists()
    res = _run(env, FILLER, out)
    assert out.is_dir()
    assert res.scheduler_returncode == 0 and res.engine_returncode == 0
    assert res.jobs_csv == out / "out_jobs.csv" and res.jobs_csv.read_text().startswith("job_id,")
    assert res.schedule_csv == out / "out_schedule.csv"
    assert res.machine_states_csv == out / "out_machine_states.csv"
    assert 0 < res.wall_time < 15
    assert res.logs["scheduler"] == out / "sched.log" and res.logs["engine"] == out / "engine.log"
    assert "engine: simulation ended" in (out / "engine.log").read_text()

    cmd = json.loads((out / "command.json").read_text())
    endpoint = f"tcp://127.0.0.1:{res.port}"
    sched_argv = cmd["scheduler"]["argv"]
    assert sched_argv[:4] == [sys.executable, "-m", "batsim.cmds.launcher", str(FILLER)]
    assert sched_argv[sched_argv.index("-s") + 1] == endpoint
    assert int(sched_argv[sched_argv.index("-t") + 1]) >= 10**9  # not pybatsim's 2000 ms
    eng = cmd["engine"]["argv"]
    assert eng[: len(env.engine)] == env.engine
    assert eng[eng.index("-p") + 1] == str(env.platform)
    assert eng[eng.index("-w") + 1] == str(env.workload)
    assert eng[eng.index("-e") + 1] == str(out / "out")
    assert eng[eng.index("-s") + 1] == endpoint and "-q" in eng
    assert cmd["engine"]["shell"] == shlex.join(eng)
    assert res.scheduler_cmd == sched_argv and res.engine_cmd == eng

    # the robin file replays the same command lines
    spec = load_robin(out / "robin.yaml")
    assert shlex.split(spec["batcmd"]) == eng
    assert shlex.split(spec["schedcmd"]) == sched_argv
    assert spec["output-dir"] == str(out)
    assert spec["batsim"]["port"] == res.port

    for pids in res.pids.values():
        for pid in pids:
            assert not psutil.pid_exists(pid)


def test_options_reach_the_scheduler(env, tmp_path):
    rec = tmp_path / "opts.json"
    res = _run(env, env.sched("okSched"), tmp_path / "out",
               options={"record": str(rec), "alpha": 2, "name": "x y"})
    assert json.loads(rec.read_text()) == {"record": str(rec), "alpha": 2, "name": "x y"}
    assert res.engine_returncode == 0


def _placement(env, tmp_path, **kw):
    rec = tmp_path / "placement.json"
    res = _run(env, env.sched("okSched"), tmp_path / "out", options={"record_placement": str(rec)},
               **kw)
    return res, json.loads(rec.read_text())


def test_both_processes_share_one_claimed_cpu_under_sched_batch(env, tmp_path, monkeypatch):
    # CPU locks of its own: other simulations on the machine may hold every CPU's
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = (os.sched_getaffinity(0), os.sched_getscheduler(0))
    res, seen = _placement(env, tmp_path)
    if len(affinity.allowed_cpus()) < 2:
        assert res.cpus is None  # nothing to gain on one CPU
        return
    assert res.cpus is not None and len(res.cpus) == 1
    assert seen == {"cpus": res.cpus, "policy": os.SCHED_BATCH}
    assert json.loads((tmp_path / "out" / "command.json").read_text())["cpus"] == res.cpus
    # the runner's own thread is back where it was
    assert (os.sched_getaffinity(0), os.sched_getscheduler(0)) == before


def test_cpu_none_leaves_placement_to_the_os(env, tmp_path):
    res, seen = _placement(env, tmp_path, cpu="none")
    assert res.cpus is None
    assert seen == {"cpus": sorted(os.sched_getaffinity(0)), "policy": os.sched_getscheduler(0)}
    assert json.loads((tmp_path / "out" / "command.json").read_text())["cpus"] is None


def test_engine_slower_than_pybatsim_default_timeout_is_fine(env, tmp_path):
    # pybatsim's -t default (2000 ms) would abort with "Batsim is not responding"
    res = _run(env, FILLER, tmp_path / "out", engine_args=["--pause", "2.5"])
    assert res.scheduler_returncode == 0 and res.jobs_csv is not None
    assert "not responding" not in (tmp_path / "out" / "sched.log").read_text()


def test_port_taken_between_free_port_and_bind_is_retried(env, tmp_path, monkeypatch):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        ports = iter([taken, free_port()])
        monkeypatch.setattr(simulation, "free_port", lambda: next(ports))
        res = _run(env, FILLER, tmp_path / "out")
    assert res.port != taken and res.engine_returncode == 0


# --------------------------------------------------------------------------
# run_simulation: failures, no orphans


def test_scheduler_crashing_at_import(env, tmp_path):
    t0 = time.monotonic()
    with pytest.raises(RunError) as ei:
        _run(env, env.sched("crashSched"), tmp_path / "out")
    msg = str(ei.value)
    assert msg.startswith("scheduler exited with code 3 before listening on tcp://127.0.0.1:")
    assert msg.endswith("boom: scheduler crashed at import")
    assert "\n" not in msg
    assert ei.value.returncodes == {"scheduler": 3, "engine": None}
    assert time.monotonic() - t0 < 8
    _assert_all_gone(env, ei.value, expect_min=2)


def test_scheduler_crashing_mid_run_kills_engine_tree(env, tmp_path):
    with pytest.raises(RunError) as ei:
        _run(env, env.sched("crashMidSched"), tmp_path / "out", engine_args=["--mode", "wait"],
             failure_timeout=0.3)
    msg = str(ei.value)
    assert msg.startswith("scheduler exited with code 1: ")
    assert "boom in onSimulationBegins" in msg
    assert ei.value.returncodes["scheduler"] == 1
    assert ei.value.returncodes["engine"] is not None  # killed, reaped
    # engine (with its child) and scheduler (with its child)
    _assert_all_gone(env, ei.value, expect_min=4)


def test_scheduler_that_never_binds_is_not_ready(env, tmp_path):
    t0 = time.monotonic()
    with pytest.raises(RunError) as ei:
        _run(env, env.sched("neverBindSched"), tmp_path / "out", ready_timeout=1.0)
    assert str(ei.value).startswith("scheduler not ready after 1 s: nothing listens on tcp://")
    assert ei.value.returncodes["engine"] is None
    assert time.monotonic() - t0 < 1.0 + supervise.KILL_GRACE + 3
    _assert_all_gone(env, ei.value, expect_min=2)


def test_hanging_scheduler_times_out(env, tmp_path):
    t0 = time.monotonic()
    with pytest.raises(RunError) as ei:
        _run(env, env.sched("hangSched"), tmp_path / "out", timeout=2)
    elapsed = time.monotonic() - t0
    assert str(ei.value) == "simulation timed out after 2 s"
    assert 2 <= elapsed < 2 + supervise.KILL_GRACE + 3
    _assert_all_gone(env, ei.value, expect_min=3)


def test_hanging_engine_times_out(env, tmp_path):
    t0 = time.monotonic()
    with pytest.raises(RunError) as ei:
        _run(env, env.sched("okSched"), tmp_path / "out", timeout=1.5,
             engine_args=["--mode", "hang"])
    assert str(ei.value) == "simulation timed out after 1.5 s"
    assert time.monotonic() - t0 < 1.5 + supervise.KILL_GRACE + 3
    _assert_all_gone(env, ei.value, expect_min=2)


def test_engine_failing_kills_scheduler(env, tmp_path):
    with pytest.raises(RunError) as ei:
        _run(env, FILLER, tmp_path / "out", engine_args=["--mode", "crash"])
    assert str(ei.value) == ("engine exited with code 2: engine: bad input: "
                             "workload field 'jobs' is missing")
    assert ei.value.returncodes["engine"] == 2
    assert ei.value.returncodes["scheduler"] is not None
    _assert_all_gone(env, ei.value, expect_min=2)
    # the command lines were recorded before the failure
    assert json.loads((tmp_path / "out" / "command.json").read_text())["engine"]["argv"]


def test_engine_abort_reports_its_assertion_not_its_backtrace(env, tmp_path):
    """The real Batsim dies on a failed assertion with SIGABRT after printing
    the assertion and a SimGrid backtrace: the reason given is the assertion."""
    with pytest.raises(RunError) as ei:
        _run(env, FILLER, tmp_path / "out", engine_args=["--mode", "abort"])
    msg = str(ei.value)
    assert msg.startswith("engine was killed by signal 6 (SIGABRT): ")
    assert msg.endswith("[root/CRITICAL] Invalid JSON message: the 'data' value of event 1 (EXECUTE_JOB) "
                        "should be of size in {2,3} (size=4)")
    _assert_all_gone(env, ei.value, expect_min=2)


def test_engine_command_not_found(env, tmp_path):
    with pytest.raises(RunError) as ei:
        _run(env, FILLER, tmp_path / "out", engine_cmd=[str(tmp_path / "no-such-engine")])
    assert str(ei.value).startswith("cannot start engine")
    for pid in ei.value.pids["scheduler"]:
        assert not psutil.pid_exists(pid)


@pytest.mark.parametrize("kwargs, needle", [
    ({"platform": "missing.xml"}, "platform: file not found"),
    ({"workload": "missing.json"}, "workload: file not found"),
    ({"scheduler": "no/such/sched.py"}, "scheduler: file not found"),
    ({"scheduler": "no-such-scheduler-name"}, "no-such-scheduler-name"),
    ({"timeout": -1}, "timeout: expected a positive number"),
    ({"ready_timeout": "soon"}, "ready timeout: expected a number"),
    ({"options": [1, 2]}, "options: expected a JSON object"),
    ({"cpu": "fast"}, "cpu: expected auto, none or a CPU number"),
    ({"cpu": 10**6}, "cpu: CPU 1000000 is not available"),
])
def test_bad_arguments_are_input_errors(env, tmp_path, kwargs, needle):
    args = {"platform": env.platform, "workload": env.workload, "scheduler": FILLER,
            "output_dir": tmp_path / "o", "engine_cmd": env.engine}
    for key in ("platform", "workload"):
        if key in kwargs:
            kwargs[key] = tmp_path / kwargs[key]
    args.update(kwargs)
    with pytest.raises(InputError) as ei:
        run_simulation(**args)
    assert needle in str(ei.value) and "\n" not in str(ei.value)
    assert env.recorded() == []  # nothing was started


# --------------------------------------------------------------------------
# robin files


def _robin(tmp_path, text, name="expe.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


GOOD_ROBIN = """\
    batcmd: batsim -p p.xml -w w.json -e /tmp/x/out -s tcp://localhost:28123
    output-dir: /tmp/x
    schedcmd: pybatsim fillerSched -s tcp://*:28123
    simulation-timeout: 30
    ready-timeout: 5
    success-timeout: 10
    failure-timeout: 0
"""


def test_load_robin_reads_the_seven_fields(tmp_path):
    spec = load_robin(_robin(tmp_path, GOOD_ROBIN))
    assert spec["batcmd"].startswith("batsim -p")
    assert spec["output-dir"] == "/tmp/x"
    assert spec["schedcmd"] == "pybatsim fillerSched -s tcp://*:28123"
    assert spec["simulation-timeout"] == 30.0 and spec["failure-timeout"] == 0.0
    assert spec["batsim"] == {"socket": "tcp://localhost:28123", "port": 28123,
                              "export": "/tmp/x/out", "batexec": False}


def test_load_robin_defaults_and_batexec(tmp_path):
    spec = load_robin(_robin(tmp_path, """\
        batcmd: batsim -p p.xml -w w.json --batexec
        output-dir: out
        schedcmd:
    """))
    assert spec["schedcmd"] == ""
    assert spec["simulation-timeout"] == 604800.0 and spec["ready-timeout"] == 10.0
    assert spec["success-timeout"] == 3600.0 and spec["failure-timeout"] == 5.0
    assert spec["batsim"]["port"] == 28000 and spec["batsim"]["export"] == "out"


@pytest.mark.parametrize("text, needle", [
    ("batcmd: [unclosed\n", "invalid YAML"),
    ("output-dir: /tmp/x\nschedcmd: s\n", "missing required field 'batcmd'"),
    ("batcmd: b -p x\n", "missing required field 'output-dir'"),
    ("batcmd: b -p x\noutput-dir: o\nschedcmd: s\nsocket-timeout: 3\n",
     "unknown field 'socket-timeout'"),
    ("batcmd: b -p x\noutput-dir: o\nschedcmd: s\nsuccess-timeout: -1\n",
     "field 'success-timeout': expected a non-negative number"),
    ("batcmd: b -p x\noutput-dir: o\nschedcmd: s\nsimulation-timeout: 0\n",
     "field 'simulation-timeout': expected a positive number"),
    ("batcmd: b -p x\noutput-dir: o\nschedcmd: s\nready-timeout: soon\n",
     "field 'ready-timeout': expected a number"),
    ("batcmd: 12\noutput-dir: o\nschedcmd: s\n", "field 'batcmd': expected a non-empty string"),
    ("batcmd: b -p x\noutput-dir: o\nschedcmd: [a, b]\n", "field 'schedcmd': expected a string"),
    ("batcmd: b -p x\noutput-dir: o\n", "field 'schedcmd': empty or missing"),
    ("batcmd: b -p x --batexec\noutput-dir: o\nschedcmd: s\n", "field 'schedcmd': set"),
    ("batcmd: b -p 'x\noutput-dir: o\nschedcmd: s\n", "field 'batcmd': cannot split"),
    ("- a\n- b\n", "expected a mapping"),
    ("", "expected a mapping"),
])
def test_bad_robin_files(tmp_path, text, needle):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        load_robin(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}: ") and needle in msg and "\n" not in msg


def test_missing_robin_file(tmp_path):
    with pytest.raises(InputError, match="robin file not found"):
        load_robin(tmp_path / "nope.yaml")


def test_write_robin_round_trip(tmp_path):
    p = write_robin(tmp_path / "r.yaml", ["batsim", "-p", "a b.xml", "-s", "tcp://localhost:28001"],
                    "pybatsim fillerSched", tmp_path / "o", simulation_timeout=60,
                    ready_timeout=1.5, success_timeout=3, failure_timeout=0)
    raw = yaml.safe_load(p.read_text())
    assert list(raw) == list(robin.ROBIN_FIELDS)
    assert raw["batcmd"] == "batsim -p 'a b.xml' -s tcp://localhost:28001"
    assert raw["output-dir"] == str((tmp_path / "o").resolve())
    assert raw["simulation-timeout"] == 60 and raw["ready-timeout"] == 1.5
    spec = load_robin(p)
    assert spec["batsim"]["port"] == 28001
    with pytest.raises(InputError, match="field 'failure-timeout'"):
        write_robin(tmp_path / "r2.yaml", "batsim -p x", "s", tmp_path, failure_timeout=-2)


def _robin_run_file(env, tmp_path, *, sched=None, engine_mode="ok", timeouts=(20, 5, 5, 0.3),
                    port=None):
    port = port or free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    out = tmp_path / "robin-out"
    batcmd = shlex.join([*env.engine, "-p", str(env.platform), "-w", str(env.workload),
                         "-e", str(out / "out"), "-s", endpoint, "--mode", engine_mode])
    if sched is None:
        sched = shlex.join([sys.executable, "-m", "batsim.cmds.launcher", str(FILLER),
                            "-s", endpoint, "-t", "100000"])
    sim, ready, success, failure = timeouts
    return write_robin(tmp_path / "expe.yaml", batcmd, sched, out, simulation_timeout=sim,
                       ready_timeout=ready, success_timeout=success,
                       failure_timeout=failure), out


def test_run_robin_success(env, tmp_path):
    path, out = _robin_run_file(env, tmp_path)
    res = run_robin(path)
    assert res.engine_returncode == 0 and res.scheduler_returncode == 0
    assert res.jobs_csv == out / "out_jobs.csv"
    assert (out / "cmd" / "batsim.bash").read_text().strip() == load_robin(path)["batcmd"]
    assert (out / "cmd" / "sched.bash").exists()
    for log in ("batsim.log", "sched.out.log", "sched.err.log"):
        assert (out / "log" / log).exists()
    assert "engine: simulation ended" in (out / "log" / "batsim.log").read_text()


def test_run_robin_scheduler_failure_uses_failure_timeout(env, tmp_path):
    path, _ = _robin_run_file(env, tmp_path, sched="echo 'sched: no such algorithm' >&2; exit 3",
                              engine_mode="wait", timeouts=(20, 5, 5, 0.3))
    t0 = time.monotonic()
    with pytest.raises(RunError) as ei:
        run_robin(path)
    assert str(ei.value) == "schedcmd exited with code 3: sched: no such algorithm"
    assert time.monotonic() - t0 < 0.3 + supervise.KILL_GRACE + 3
    _assert_all_gone(env, ei.value, expect_min=2)


def test_run_robin_success_timeout_kills_the_other(env, tmp_path):
    path, _ = _robin_run_file(env, tmp_path, sched="true", engine_mode="hang",
                              timeouts=(20, 5, 0.5, 5))
    with pytest.raises(RunError) as ei:
        run_robin(path)
    assert str(ei.value) == ("batcmd did not exit within 0.5 s (success timeout) "
                             "after schedcmd ended successfully")
    _assert_all_gone(env, ei.value, expect_min=2)


def test_run_robin_simulation_timeout(env, tmp_path):
    path, _ = _robin_run_file(env, tmp_path, sched="sleep 600", engine_mode="hang",
                              timeouts=(1, 5, 5, 5))
    t0 = time.monotonic()
    with pytest.raises(RunError, match=r"^simulation timed out after 1 s$") as ei:
        run_robin(path)
    assert time.monotonic() - t0 < 1 + supervise.KILL_GRACE + 3
    _assert_all_gone(env, ei.value, expect_min=2)


def test_run_robin_ready_timeout_when_port_is_busy(env, tmp_path):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        path, _ = _robin_run_file(env, tmp_path, port=port, timeouts=(20, 0.5, 5, 5))
        with pytest.raises(RunError, match=rf"ready timeout\): port {port} is still in use"):
            run_robin(path)
    assert env.recorded() == []  # nothing was started


# --------------------------------------------------------------------------
# command line


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "iosched.cli", "run", *map(str, args)],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def _assert_one_line_failure(proc):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iosched run: "), proc.stderr
    return lines[0]


@pytest.mark.parametrize("args, needle", [
    ((), "missing --platform"),
    (("--timeout", "abc"), "--timeout"),
    (("--bogus",), "--bogus"),
    (("-p", "x.xml", "-w", "w.json", "-s", "fcfs", "-o", "o", "--options", "{bad"),
     "--options: invalid JSON"),
    (("-p", "x.xml", "-w", "w.json", "-s", "fcfs", "-o", "o", "--options", "[1]"),
     "--options: expected a JSON object"),
    (("-p", "missing.xml", "-w", "w.json", "-s", "fcfs", "-o", "o"), "platform: file not found"),
    (("-p", "x.xml", "-w", "w.json", "-s", "fcfs", "-o", "o", "--cpu", "fast"),
     "cpu: expected auto, none or a CPU number"),
])
def test_cli_usage_errors_are_one_line(tmp_path, args, needle):
    line = _assert_one_line_failure(_cli(*args, cwd=tmp_path))
    assert needle in line


def test_cli_bad_robin_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("batcmd: b -p x\noutput-dir: o\nschedcmd: s\nwhat: 1\n")
    line = _assert_one_line_failure(_cli(bad))
    assert str(bad) in line and "unknown field 'what'" in line


def test_cli_run_failure_is_one_line(env, tmp_path):
    proc = _cli("-p", env.platform, "-w", env.workload, "-s", env.sched("crashSched"),
                "-o", tmp_path / "out", "--engine", shlex.join(env.engine), "--timeout", "20")
    line = _assert_one_line_failure(proc)
    assert proc.returncode == 1
    assert "scheduler exited with code 3" in line
    _assert_all_gone(env, None, expect_min=2)


def test_cli_sigterm_leaves_no_process(env, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "iosched.cli", "run", "-p", str(env.platform), "-w",
         str(env.workload), "-s", str(env.sched("hangSched")), "-o", str(tmp_path / "out"),
         "--engine", shlex.join(env.engine), "--timeout", "30"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        # engine (1) + scheduler and its child (2), recorded once the simulation began
        while len(env.recorded()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=15)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 128 + signal.SIGTERM
    assert err.strip() == "iosched run: terminated by SIGTERM"
    _assert_all_gone(env, None, expect_min=3)


def test_cli_run_success(env, tmp_path):
    out = tmp_path / "out"
    proc = _cli("-p", env.platform, "-w", env.workload, "-s", FILLER, "-o", out,
                "--engine", shlex.join(env.engine), "--timeout", "20", "--no-metrics")
    assert proc.returncode == 0, proc.stderr
    assert "simulation done" in proc.stdout
    assert (out / "out_jobs.csv").exists() and (out / "command.json").exists()
    # replay the run through its robin file
    proc = _cli(out / "robin.yaml", "--no-metrics")
    assert proc.returncode == 0, proc.stderr
    assert (out / "cmd" / "batsim.bash").exists()


def test_cli_run_prints_metrics_when_available(env, tmp_path):
    out = tmp_path / "out"
    proc = _cli("-p", env.platform, "-w", env.workload, "-s", FILLER, "-o", out,
                "--engine", shlex.join(env.engine), "--timeout", "20")
    try:
        import iosched.analysis.metrics  # noqa: F401
    except ImportError:
        assert proc.returncode == 0, proc.stderr
        assert "metrics skipped" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.count("\n") > 1  # summary line and a table
