"""Hardening (issue #12): non-finite numbers, nesting bombs, platform errors
SimGrid would abort on, unwritable or torn outputs, orphans after SIGKILL,
campaign validation and the loopback launcher. Every case is one line, no
traceback."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from iosched.analysis.jobs import load_jobs
from iosched.campaign.schema import load_campaign
from iosched.checks import check_output_file, option_number
from iosched.engine.export import JobRow, write_jobs
from iosched.engine.platform import validate_platform
from iosched.engine.workload import load_workload
from iosched.errors import InputError
from iosched.run.sched_cli import check_endpoint_free
from iosched.run.simulation import run_simulation
from test_engine_e2e import PLATFORM, WORKLOAD, engine, filler

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def _workload(tmp_path, job=None, profile=None, raw=None):
    w = tmp_path / "w.json"
    if raw is None:
        job = job or '"subtime": 0, "walltime": 10'
        profile = profile or '"delay": 5'
        raw = ('{"nb_res": 4, "jobs": [{"id": 7, "res": 1, "profile": "d", %s}], '
               '"profiles": {"d": {"type": "delay", %s}}}' % (job, profile))
    w.write_text(raw)
    return str(w)


# the battery of bad inputs: every class of issue #12 (numbers, nesting)
BAD_WORKLOADS = [
    ('"subtime": NaN', None, "jobs[0] (id '7'): field 'subtime': nan is not a finite number"),
    ('"subtime": Infinity', None, "field 'subtime': inf is not a finite number"),
    ('"subtime": 1e400', None, "field 'subtime': inf is not a finite number"),
    ('"subtime": 1e20', None, "field 'subtime': 1e+20 s is too large (times must be <= 2^32 s"),
    ('"subtime": 0, "walltime": NaN', None, "field 'walltime': nan is not a finite number"),
    ('"subtime": 0, "walltime": Infinity', None, "field 'walltime': inf is not a finite number"),
    ('"subtime": 0, "walltime": 1e12', None, "field 'walltime': 1e+12 s is too large"),
    ('"subtime": 0, "extra": [1, -Infinity]', None, "field 'extra/1': -inf is not a finite"),
    ('"subtime": 0, "big": ' + "9" * 400, None, "field 'big': an integer of 400 digits"),
    (None, '"delay": NaN', "profile 'd': field 'delay': nan is not a finite number"),
    (None, '"delay": 1e400', "profile 'd': field 'delay': inf is not a finite number"),
    (None, '"delay": 1e15', "profile 'd': field 'delay': 1e+15 s is too large"),
    (None, '"delay": 5, "note": NaN', "profile 'd': field 'note': nan is not a finite"),
]


@pytest.mark.parametrize("job, profile, message", BAD_WORKLOADS)
def test_workload_numbers_finite_and_in_range(tmp_path, job, profile, message):
    path = _workload(tmp_path, job, profile)
    with pytest.raises(InputError) as exc:
        load_workload(path, "w0")
    assert message in str(exc.value) and path in str(exc.value) and "\n" not in str(exc.value)


def test_parallel_profile_non_finite_is_named(tmp_path):
    raw = json.dumps({"nb_res": 4, "jobs": [],
                      "profiles": {"p": {"type": "parallel", "cpu": [1, 2], "com": [0, 0, 0, 0]}}})
    path = _workload(tmp_path, raw=raw.replace("[1, 2]", "[1, NaN]"))
    with pytest.raises(InputError, match=r"profile 'p': field 'cpu/1': nan"):
        load_workload(path, "w0")


def test_valid_edge_times_still_accepted(tmp_path):
    # (Batsim 4.2.1 refuses a delay of 0: the smallest positive one is an edge)
    path = _workload(tmp_path, '"subtime": 4294967296, "walltime": -1', '"delay": 5e-324')
    wl = load_workload(path, "w0")
    assert wl.jobs[0].subtime == 2.0 ** 32 and wl.jobs[0].walltime is None


@pytest.fixture
def platform(tmp_path):
    p = tmp_path / "platform.xml"
    p.write_text(PLATFORM)
    return p


@pytest.mark.parametrize("raw, message", [
    ("[" * 100000, "invalid JSON: nesting too deep"),
    ('{"nb_res": 1, "jobs": [{"id": 1, "subtime": NaN, "res": 1, "profile": "d"}], '
     '"profiles": {"d": {"type": "delay", "delay": 1}}}', "nan is not a finite number"),
])
def test_engine_cli_bad_workload_one_line(tmp_path, platform, raw, message):
    w = _workload(tmp_path, raw=raw)
    r = engine("-p", platform, "-w", w, "-e", tmp_path / "o", "-s", "tcp://127.0.0.1:1",
               "--sched-timeout", "1")
    lines = [ln for ln in r.stderr.splitlines() if "xbt_cfg" not in ln]
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert message in lines[0] and w in lines[0] and "Traceback" not in r.stderr


@pytest.mark.parametrize("change, message", [
    (('routing="Full"', 'routing="Bogus"'), "<zone id='AS0'>: unknown routing 'Bogus'"),
    (('speed="1Gf"', 'speed="nanf"'), "attribute 'speed': 'nanf' is not a finite"),
    (('lat="50us"', 'lat="1e400s"'), "attribute 'lat': '1e400s' is not a finite"),
    (('bandwidth="1.25GBps"', 'bandwidth="infBps"'), "attribute 'bandwidth'"),
])
def test_platform_errors_simgrid_would_abort_on(tmp_path, change, message):
    p = tmp_path / "bad.xml"
    p.write_text(PLATFORM.replace(*change, 1))
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        validate_platform(str(p))
    w = _workload(tmp_path)
    r = engine("-p", p, "-w", w, "-e", tmp_path / "o", "-s", "tcp://127.0.0.1:1", "--sched-timeout", "1")
    assert r.returncode == 1, r.stderr  # not 134 (SIGABRT)
    lines = [ln for ln in r.stderr.splitlines() if "xbt_cfg" not in ln]
    assert len(lines) == 1 and str(p) in lines[0] and message in lines[0]


def test_output_path_that_is_a_directory_refused_before_running(tmp_path, platform):
    out = tmp_path / "out"
    (out / "out_jobs.csv").mkdir(parents=True)
    w = _workload(tmp_path)
    t0 = time.monotonic()
    with pytest.raises(InputError, match="out_jobs.csv: output path exists and is not a regular file"):
        run_simulation(platform, w, filler(), out, timeout=60)
    assert not (out / "sched.log").exists()  # nothing was started
    r = engine("-p", platform, "-w", w, "-e", out / "out", "-s", "tcp://127.0.0.1:1", "--sched-timeout", "30")
    assert r.returncode == 1 and "not a regular file" in r.stderr and "Traceback" not in r.stderr
    assert time.monotonic() - t0 < 25  # refused before waiting for a scheduler


def test_outputs_written_atomically(tmp_path, monkeypatch):
    prefix = str(tmp_path / "out")
    row = JobRow("1", "w0", "p", 0.0, 1, 10.0, "COMPLETED_SUCCESSFULLY", 0.0, 5.0, 5.0, 0.0, 5.0, 1.0, "0")

    class Boom(Exception):
        pass

    def explode(src, dst):
        raise Boom()

    monkeypatch.setattr(os, "replace", explode)
    with pytest.raises(Boom):
        write_jobs(prefix, [row])
    assert os.listdir(tmp_path) == []  # neither a torn out_jobs.csv nor a temporary file
    monkeypatch.undo()
    write_jobs(prefix, [row])
    assert os.listdir(tmp_path) == ["out_jobs.csv"]


def test_torn_jobs_csv_refused_by_load_jobs_and_metrics(tmp_path):
    cols = "job_id,workload_name,profile,submission_time,requested_number_of_resources," \
           "requested_time,success,final_state,starting_time,execution_time,finish_time," \
           "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata\n"
    f = tmp_path / "out_jobs.csv"
    f.write_text(cols + "1,w0,d,0,1,10,1,COMPLETED_SUCCESSFULLY,0,5,5,0,5,1,0,-1,\"\"\n74993,w0,d")
    with pytest.raises(InputError, match="torn file"):
        load_jobs(tmp_path)
    r = subprocess.run([sys.executable, "-m", "iosched", "metrics", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "torn file" in r.stderr and "Traceback" not in r.stderr


def _session_procs(sids):
    out = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) in sids and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (OSError, psutil.Error):
            pass
    return out


def test_sigkill_of_the_runner_leaves_no_survivor(tmp_path, platform):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(WORKLOAD))
    env = dict(os.environ, PYTHONPATH=str(SRC))
    runner = subprocess.Popen(
        [sys.executable, "-m", "iosched", "run", "-p", str(platform), "-w", str(w),
         "-s", str(HERE / "schedulers" / "misbehaving.py"), "--options", '{"mode": "hang"}',
         "-o", str(tmp_path / "out"), "--timeout", "600"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    me = psutil.Process(runner.pid)
    kids = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = me.children(recursive=True)
        if any("iosched.engine.cli" in " ".join(k.cmdline()) for k in kids if k.is_running()):
            break
        time.sleep(0.1)
    else:
        runner.kill()
        pytest.fail("the engine never started")
    sids = {os.getsid(k.pid) for k in kids} - {os.getsid(0)}
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _session_procs(sids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _session_procs(sids)
    for p in left:  # do not leak them into other tests
        p.kill()
    assert left == []


def test_runner_killed_before_registering_a_session_leaves_no_survivor(tmp_path):
    """The window between starting a child and telling the guard its session:
    a runner that dies there (here: it never registers) still takes the child
    with it, found by the guard's token in the child's environment."""
    script = tmp_path / "runner.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "from iosched.run.supervise import guard_token\n"
        "env = dict(os.environ, IOSCHED_GUARD=guard_token())\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],\n"
        "                     env=env, start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "os.kill(os.getpid(), 9)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(SRC)))
    assert r.returncode == -signal.SIGKILL
    child = psutil.Process(int(r.stdout.split()[0]))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    else:
        child.kill()
        pytest.fail("the unregistered child outlived its runner")


def test_campaign_validated_in_full_before_anything_runs(tmp_path, platform):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(WORKLOAD))

    def campaign(extra="", scheduler="easy", wfile=w):
        c = tmp_path / "c.yaml"
        c.write_text(f"name: t\nplatforms: [{platform}]\nworkloads: [{wfile}]\n"
                     f"schedulers: [{scheduler}]\n{extra}")
        return c

    with pytest.raises(InputError, match=r"schedulers\[0\].name: scheduler 'nosuch'"):
        load_campaign(campaign(scheduler="nosuch"))
    with pytest.raises(InputError, match=r"field 'tau': nan is not a finite number"):
        load_campaign(campaign("tau: .nan\n"))
    with pytest.raises(InputError, match=r"field 'schedulers/0/options/alpha': inf"):
        load_campaign(campaign(scheduler="{name: plan-2, options: {alpha: .inf}}"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"nb_res": 1, "jobs": [{"id": 1, "subtime": NaN, "res": 1, "profile": "d"}], '
                   '"profiles": {"d": {"type": "delay", "delay": 1}}}')
    with pytest.raises(InputError, match=r"workloads\[0\].file: .*nan is not a finite"):
        load_campaign(campaign(wfile=bad))
    badp = tmp_path / "badp.xml"
    badp.write_text(PLATFORM.replace('routing="Full"', 'routing="Bogus"'))
    c = tmp_path / "c2.yaml"
    c.write_text(f"name: t\nplatforms: [{badp}]\nworkloads: [{w}]\nschedulers: [easy]\n")
    with pytest.raises(InputError, match=r"platforms\[0\].file: .*unknown routing 'Bogus'"):
        load_campaign(c)
    r = subprocess.run([sys.executable, "-m", "iosched", "campaign", str(campaign(scheduler="nosuch")),
                        "--output", str(tmp_path / "camp")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "nosuch" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "camp").exists()


def test_yaml_nesting_bomb_one_line(tmp_path):
    c = tmp_path / "c.yaml"
    c.write_text("[" * 100000)
    with pytest.raises(InputError, match="nesting too deep|invalid YAML"):
        load_campaign(c)


def test_scheduler_options_checked_where_read():
    assert option_number({"alpha": 2}, "alpha", 1, minimum=0, exclusive_minimum=True) == 2.0
    for value in (float("nan"), float("inf"), 0, "x", True):
        with pytest.raises(InputError, match="option 'alpha': expected a finite number > 0"):
            option_number({"alpha": value}, "alpha", 1, minimum=0, exclusive_minimum=True)
    with pytest.raises(InputError, match="option 'seed': expected an integer >= 0"):
        option_number({"seed": 1.5}, "seed", 0, integer=True, minimum=0)


def test_sched_launcher_loopback_and_busy_port():
    env = dict(os.environ, PYTHONPATH=str(SRC))
    r = subprocess.run([sys.executable, "-m", "iosched", "sched", "easy", "--dry-run"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "-s tcp://127.0.0.1:28000" in r.stdout
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(InputError, match="Address already in use"):
            check_endpoint_free(f"tcp://127.0.0.1:{port}")
        r = subprocess.run([sys.executable, "-m", "iosched", "sched", "easy", "-s",
                            f"tcp://127.0.0.1:{port}"], capture_output=True, text=True,
                           timeout=60, env=env)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "Address already in use" in r.stderr and "Traceback" not in r.stderr


def test_check_output_file(tmp_path):
    """An output file's folder must exist and the path must not be a folder."""
    check_output_file(tmp_path / "out.json")            # a new file in an existing folder
    with pytest.raises(InputError, match="does not exist"):
        check_output_file(tmp_path / "missing" / "out.json")
    with pytest.raises(InputError, match="is a folder"):
        check_output_file(tmp_path)
