"""Tests of campaigns on a cluster: ``iosched campaign --cluster ADDRESS`` and
the workers started as batch jobs (``--jobqueue``, the file's ``jobqueue``
section, :mod:`iosched.campaign.jobqueue`).

No Slurm or PBS is needed: dask's own LocalCluster stands in for the batch
system (a fake system injected in :data:`iosched.campaign.jobqueue.SYSTEMS`),
the real dask-jobqueue clusters are only created (their job scripts read) or
given a fake ``sbatch`` / ``scancel`` on PATH. Every socket is on loopback.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml
from click.testing import CliRunner

from iosched.campaign import jobqueue
from iosched.campaign.cli import campaign_command
from iosched.campaign.jobqueue import JobSystem, jobqueue_settings, start_jobqueue_cluster
from iosched.campaign.schema import load_campaign
from iosched.errors import InputError
from test_campaign import GATED

distributed = pytest.importorskip("distributed")


def tiny_campaign(tmp_path: Path, **extra) -> Path:
    """2 schedulers x 2 seeds of one 8-job synthetic workload on 4 nodes: 4 runs."""
    spec = {
        "name": "tiny",
        "output": "out",
        "platforms": [{"cluster": {"nb_nodes": 4}}],
        "workloads": [{"synthetic": {"nb_jobs": 8, "runtime": [5, 50], "interarrival": 5},
                       "label": "w"}],
        "schedulers": ["fcfs", "easy"],
        "seeds": [1, 2],
        "timeout": 60,
        **extra,
    }
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def invoke(*args):
    """``iosched campaign ARGS`` in this process (so that a test can inject a system)."""
    return CliRunner().invoke(campaign_command, [str(a) for a in args], catch_exceptions=False)


def listening() -> set:
    return {c.laddr for c in psutil.Process(os.getpid()).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN}


def check_finished(out: Path, stdout: str, nb_runs: int) -> None:
    """The summary line, a done.json with metrics per run, the runs table."""
    assert f"campaign tiny: {nb_runs}/{nb_runs} runs finished, 0 failed ({nb_runs} executed now) " \
           f"-> {out}" in stdout
    dones = sorted(out.glob("runs/*/done.json"))
    assert len(dones) == nb_runs
    for d in dones:
        done = json.loads(d.read_text())
        assert done["status"] == "done" and done["metrics"]["nb_jobs"] == 8
        assert (d.parent / "out_jobs.csv").is_file()
    assert len((out / "runs.csv").read_text().splitlines()) == nb_runs + 1


# --------------------------------------------------------------------------
# a campaign to the end


@pytest.fixture
def stand_in(monkeypatch):
    """The batch system "local": each job is a worker process of a dask
    LocalCluster on loopback; yields the list of (settings, cluster) made."""
    made = []

    def make(settings):
        lc = distributed.LocalCluster(n_workers=0, threads_per_worker=settings["cores"],
                                      processes=True, host="127.0.0.1",
                                      dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
        made.append((settings, lc))
        return lc

    monkeypatch.setitem(jobqueue.SYSTEMS, "local", JobSystem(make, None))
    yield made
    for _, lc in made:
        lc.close()


def test_jobqueue_campaign_runs_to_the_end_on_a_stand_in_cluster(tmp_path, stand_in):
    before = listening()
    # an orphan guard lives as long as its runner process: one started in
    # this test process by an earlier test (a run executed here) is not the
    # campaign's
    earlier = {c.pid for c in psutil.Process().children(recursive=True)}
    res = invoke(tiny_campaign(tmp_path), "--jobqueue", "local", "--jobs", "2",
                 "--jobqueue-option", "cores=1", "--jobqueue-option", "walltime=00:10:00")
    assert res.exit_code == 0, res.output
    check_finished(tmp_path / "out", res.stdout, 4)
    assert "jobqueue local: submitting 2 job(s) of one worker with 1 thread(s)" in res.stderr
    # the settings reached the batch system; its cluster was scaled, then closed
    [(settings, lc)] = stand_in
    assert settings == {"system": "local", "jobs": 2, "cores": 1, "memory": "2GB",
                        "walltime": "00:10:00"}
    assert lc.status.name == "closed"
    # the workers ran the runs in their own processes, which are gone
    versions = [json.loads(p.read_text())["versions"]
                for p in (tmp_path / "out").glob("runs/*/run.json")]
    assert len(versions) == 4 and all(v["iosched"] == versions[0]["iosched"] for v in versions)
    spawned = [c for c in psutil.Process().children(recursive=True) if c.pid not in earlier]
    _, alive = psutil.wait_procs(spawned, timeout=10)   # the workers' guards exit with them
    left = [c.cmdline() for c in alive
            if "multiprocessing.resource_tracker" not in " ".join(c.cmdline())]
    assert not left, left
    new = listening() - before
    assert all(ipaddress.ip_address(a.ip).is_loopback for a in new), new


def test_file_section_runs_as_batch_jobs_and_workers_option_runs_locally(tmp_path, stand_in):
    path = tiny_campaign(tmp_path, seeds=[1], jobqueue={"system": "local", "jobs": 1, "cores": 2})
    res = invoke(path, "--workers", "1")           # --workers: local, the section is ignored
    assert res.exit_code == 0, res.output
    assert not stand_in and "jobqueue" not in res.stderr
    check_finished(tmp_path / "out", res.stdout, 2)
    res = invoke(path, "-o", tmp_path / "out2")   # the section: batch jobs
    assert res.exit_code == 0, res.output
    check_finished(tmp_path / "out2", res.stdout, 2)
    # where the runs execute is no part of their identity
    names = [sorted(p.name for p in (tmp_path / o / "runs").iterdir()) for o in ("out", "out2")]
    assert names[0] == names[1]
    assert [s for s, _ in stand_in] == [{"system": "local", "jobs": 1, "cores": 2, "memory": "2GB"}]


def test_cluster_option_runs_on_an_existing_scheduler(tmp_path):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  host="127.0.0.1", protocol="tcp", dashboard_address="127.0.0.1:0",
                                  silence_logs=logging.ERROR) as lc:
        res = invoke(tiny_campaign(tmp_path, seeds=[3]), "--cluster", lc.scheduler_address)
        assert res.exit_code == 0, res.output
        check_finished(tmp_path / "out", res.stdout, 2)


# --------------------------------------------------------------------------
# the real dask-jobqueue classes, without a batch system


def test_slurm_and_pbs_job_scripts_carry_the_settings():
    pytest.importorskip("dask_jobqueue")
    settings = jobqueue_settings(None, "slurm", ["cores=2", "memory=3GB", "walltime=01:30:00",
                                                 "queue=short", "account=proj42", "interface=lo",
                                                 "job_extra_directives=--exclusive",
                                                 "job_script_prologue=module load python"], 3)
    assert settings["jobs"] == 3
    children, before = psutil.Process().children(recursive=True), listening()
    cluster = jobqueue.SYSTEMS["slurm"].make(settings)
    try:
        script = cluster.job_script()
        assert psutil.Process().children(recursive=True) == children    # nothing submitted
        assert all(ipaddress.ip_address(a.ip).is_loopback for a in listening() - before)
    finally:
        cluster.close()
    assert cluster.status.name == "closed"
    for line in ("#SBATCH --cpus-per-task=2", "#SBATCH --mem=3G", "#SBATCH -t 01:30:00",
                 "#SBATCH -p short", "#SBATCH -A proj42", "#SBATCH --exclusive",
                 "module load python"):
        assert line in script.splitlines(), (line, script)
    assert "--nthreads 2" in script and "dask_worker" in script    # one worker, one thread per core
    assert "--dashboard-address 127.0.0.1:0" in script             # its dashboard on loopback
    cluster = jobqueue.SYSTEMS["pbs"].make({**settings, "system": "pbs"})
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#PBS -l walltime=01:30:00" in script and "#PBS -q short" in script
    assert any(line.startswith("#PBS -l select=1:ncpus=2:mem=") for line in script.splitlines())


def fake_bin(tmp_path: Path, monkeypatch, sbatch: str, scancel: str = "") -> Path:
    """sbatch and scancel scripts (bash) first on PATH; each appends its
    arguments to calls.log."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    for name, body in (("sbatch", sbatch), ("scancel", scancel)):
        f = bindir / name
        f.write_text(f'#!/bin/bash\necho "{name} $*" >> {log}\n{body}\n')
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log


def fake_slurm(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A fake sbatch that runs the job script dask-jobqueue wrote (a copy in
    ``jobs/``) in the background, in a session of its own (the job id is its
    process id), and a fake scancel that kills that session's processes.

    :returns: (calls.log, the jobs folder: script.N, out.N).
    """
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    log = fake_bin(tmp_path, monkeypatch,
                   f'cp "$1" {jobs}/script.$$\n'
                   f'setsid sh {jobs}/script.$$ > {jobs}/out.$$ 2>&1 < /dev/null &\n'
                   f'echo "Submitted batch job $!"',
                   'kill -KILL -- "-$1"')
    return log, jobs


def test_campaign_on_slurm_jobs_run_by_a_fake_sbatch(tmp_path, monkeypatch):
    """The real SLURMCluster end to end, its jobs run by the fake sbatch."""
    pytest.importorskip("dask_jobqueue")
    log, jobs = fake_slurm(tmp_path, monkeypatch)
    res = invoke(tiny_campaign(tmp_path, seeds=[1]), "--jobqueue", "slurm",
                 "--jobqueue-option", "cores=2",
                 "--jobqueue-option", "interface=lo", "--jobqueue-option", "walltime=00:05:00")
    assert res.exit_code == 0, (res.output, [p.read_text() for p in jobs.glob("out.*")])
    check_finished(tmp_path / "out", res.stdout, 2)
    sbatch, scancel = log.read_text().splitlines()
    assert sbatch.startswith("sbatch ") and scancel.startswith("scancel ")
    script = next(jobs.glob("script.*")).read_text()
    assert "#SBATCH --cpus-per-task=2" in script and "--nthreads 2" in script
    job = psutil.Process(int(scancel.split()[1])) if psutil.pid_exists(int(scancel.split()[1])) \
        else None
    if job is not None:                     # scancel's signal: the job's processes end
        job.wait(timeout=60)


def test_interrupted_jobqueue_campaign_cancels_its_jobs(tmp_path, monkeypatch):
    """SIGINT on a campaign whose workers are Slurm jobs (:func:`fake_slurm`):
    status 130, the jobs cancelled, their runs' processes gone, the
    run left without a marker (importing dask-jobqueue must not replace the
    campaign's SIGINT handler by its own sys.exit())."""
    pytest.importorskip("dask_jobqueue")
    log, jobs = fake_slurm(tmp_path, monkeypatch)
    gate = tmp_path / "gate"
    gate.write_text("closed")
    sched = tmp_path / "gated.py"
    sched.write_text(GATED)
    path = tiny_campaign(tmp_path, seeds=[1], schedulers=[
        {"name": str(sched), "label": "gated", "options": {"gate": str(gate)}}])
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "campaign", str(path),
                             "--jobqueue", "slurm", "--jobqueue-option", "interface=lo"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = tmp_path / "out"
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("runs/*/engine.log")) and time.monotonic() < deadline \
                and proc.poll() is None:
            time.sleep(0.2)
        assert list(out.glob("runs/*/engine.log")), "the run never started"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    assert proc.returncode == 128 + signal.SIGINT, (stdout, stderr)
    assert "campaign tiny: interrupted; run the same command to resume" in stderr
    assert [c.split()[0] for c in log.read_text().splitlines()] == ["sbatch", "scancel"]
    [run] = out.glob("runs/*")
    assert not (run / "done.json").exists() and not (run / "failed.json").exists()

    def left():
        return [p for p in psutil.process_iter(["cmdline"])
                if any(str(tmp_path) in a for a in p.info["cmdline"] or ())]

    deadline = time.monotonic() + 30      # the worker is killed, the run's guard kills the run
    while left() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left()


def test_submitted_jobs_are_cancelled_when_the_cluster_closes(tmp_path, monkeypatch):
    pytest.importorskip("dask_jobqueue")
    log = fake_bin(tmp_path, monkeypatch, "echo 'Submitted batch job 4242'")
    cluster = start_jobqueue_cluster(jobqueue_settings(None, "slurm", ["interface=lo"], 1))
    try:
        calls = log.read_text().splitlines()
        assert len(calls) == 1 and calls[0].startswith("sbatch ")
    finally:
        cluster.close()
    assert log.read_text().splitlines()[1:] == ["scancel 4242"]


def test_refused_submission_and_missing_sbatch_are_one_line_errors(tmp_path, monkeypatch):
    pytest.importorskip("dask_jobqueue")
    fake_bin(tmp_path, monkeypatch, "echo 'sbatch: error: Invalid account' >&2; exit 1")
    settings = jobqueue_settings(None, "slurm", ["interface=lo"], 1)
    before = listening()
    with pytest.raises(InputError, match=r"^jobqueue slurm: job submission failed: .*"
                                         r"Invalid account") as e:
        start_jobqueue_cluster(settings)
    assert "\n" not in str(e.value)
    assert listening() <= before            # its scheduler is closed
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(InputError, match=r"^jobqueue slurm: sbatch is not on PATH"):
        start_jobqueue_cluster(settings)


# --------------------------------------------------------------------------
# bad settings


@pytest.mark.parametrize("args, message", [
    (["--jobqueue", "sge"], "--jobqueue: unknown batch system 'sge' (known: pbs, slurm)"),
    (["--jobqueue", "slurm", "--jobs", "0"], "--jobs: expected a whole number >= 1, got 0"),
    (["--jobqueue", "slurm", "--jobqueue-option", "memory=lots"],
     "--jobqueue-option memory: expected a positive size with a unit"),
    (["--jobqueue", "slurm", "--jobqueue-option", "memory=0GB"],
     "--jobqueue-option memory: expected a positive size with a unit"),
    (["--jobqueue", "slurm", "--jobqueue-option", "walltime=1h"],
     "--jobqueue-option walltime: expected a positive HH:MM:SS, got '1h'"),
    (["--jobqueue", "slurm", "--jobqueue-option", "cores=two"],
     "--jobqueue-option cores: expected a whole number >= 1, got 'two'"),
    (["--jobqueue", "slurm", "--jobqueue-option", "colour=red"],
     "--jobqueue-option colour: unknown key"),
    (["--jobqueue", "slurm", "--jobqueue-option", "queue"],
     "--jobqueue-option 'queue': expected KEY=VALUE"),
    (["--jobs", "2"], "--jobs: needs --jobqueue SYSTEM"),
    (["--cluster", "tcp://127.0.0.1:1", "--jobqueue", "slurm"],
     "--cluster cannot be used with --jobqueue"),
    (["--workers", "2", "--jobs", "2"], "--workers cannot be used with --jobs"),
    (["--refresh-metrics", "--jobqueue", "slurm"], "--jobqueue cannot be used with it"),
])
def test_bad_jobqueue_options_are_one_line_errors(tmp_path, monkeypatch, args, message):
    def no_cluster(settings):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr("iosched.campaign.execute.start_jobqueue_cluster", no_cluster)
    res = invoke(tiny_campaign(tmp_path), *args)
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and len(res.stderr.splitlines()) == 1, res.stderr
    assert message in res.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("section, message", [
    ({"system": "sge"}, "field jobqueue.system: unknown batch system 'sge'"),
    ({"system": "slurm", "jobs": 0}, "field jobqueue.jobs: 0 is less than the minimum of 1"),
    ({"system": "slurm", "memory": "2 lots"}, "field jobqueue.memory: expected a positive size"),
    ({"system": "slurm", "walltime": "01:60:00"},
     "field jobqueue.walltime: expected a positive HH:MM:SS"),
    ({"system": "slurm", "cores": 2, "colour": "red"}, "field jobqueue: unknown field(s) 'colour'"),
    ({"jobs": 2}, "field jobqueue: 'system' is a required property"),
])
def test_bad_jobqueue_sections_are_one_line_errors(tmp_path, section, message):
    path = tiny_campaign(tmp_path, jobqueue=section)
    with pytest.raises(InputError) as e:
        load_campaign(path)
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value)
    assert "\n" not in str(e.value)


def test_command_line_overrides_the_file_section(tmp_path):
    camp = load_campaign(tiny_campaign(tmp_path, jobqueue={
        "system": "pbs", "jobs": 4, "cores": 8, "queue": "long",
        "job_script_prologue": ["module load python"]}))
    assert camp.jobqueue == {"system": "pbs", "jobs": 4, "cores": 8, "memory": "2GB",
                             "queue": "long", "job_script_prologue": ["module load python"]}
    merged = jobqueue_settings(camp.jobqueue, "slurm", ["cores=2", "job_script_prologue=a",
                                                        "job_script_prologue=b"], 3)
    assert merged == {"system": "slurm", "jobs": 3, "cores": 2, "memory": "2GB", "queue": "long",
                      "job_script_prologue": ["a", "b"]}
    assert jobqueue_settings(None) is None


def test_the_documented_section_is_valid(tmp_path):
    doc = (Path(__file__).resolve().parents[1] / "docs" / "campaigns.md").read_text()
    blocks = [b.split("```")[0] for b in doc.split("```yaml\n")[1:]]
    [block] = [b for b in blocks if b.startswith("jobqueue:")]
    camp = load_campaign(tiny_campaign(tmp_path, **yaml.safe_load(block)))
    assert camp.jobqueue["system"] == "slurm" and camp.jobqueue["jobs"] == 8
    assert set(camp.jobqueue) - {"system", "jobs"} <= set(jobqueue.OPTION_KEYS)
