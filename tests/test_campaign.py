"""Tests of iosched.campaign (schema, generators, inputs, execute, refresh, cli): expansion, resumption, failures, interruption, CLI.

Campaigns here are tiny: synthetic delay workloads of 10 jobs on a 4-node
cluster_xml, 2 schedulers x 2 workloads x 2 seeds = 8 runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
import yaml

from iosched.analysis.campaign import campaign_table, write_table
from iosched.campaign.execute import run_campaign
from iosched.campaign.generators import split_parts, synthetic_workload
from iosched.campaign.inputs import prepare_runs
from iosched.campaign.refresh import refresh_metrics
from iosched.campaign.rundir import run_status
from iosched.campaign.schema import load_campaign
from iosched.errors import InputError
from iosched.run.robin import load_robin

REPO = Path(__file__).resolve().parent.parent
MISBEHAVING = REPO / "tests" / "schedulers" / "misbehaving.py"

# A FCFS scheduler that blocks at the start of the simulation while a "gate" file exists.
GATED = textwrap.dedent('''
    import os, time
    from batsim.batsim import BatsimScheduler
    from procset import ProcSet

    class Gated(BatsimScheduler):
        def onAfterBatsimInit(self):
            self.free = ProcSet((0, self.bs.nb_compute_resources - 1))
            self.queue = []
            gate = self.options.get("gate")
            while gate and os.path.exists(gate):
                time.sleep(0.05)

        def onJobSubmission(self, job):
            self.queue.append(job)
            self.schedule()

        def onJobCompletion(self, job):
            self.free |= job.allocation
            self.schedule()

        def schedule(self):
            todo = []
            while self.queue and self.queue[0].requested_resources <= len(self.free):
                job = self.queue.pop(0)
                job.allocation = ProcSet(*list(self.free)[: job.requested_resources])
                self.free -= job.allocation
                todo.append(job)
            if todo:
                self.bs.execute_jobs(todo)
''')


def write_campaign(tmp_path: Path, schedulers=None, **extra) -> Path:
    spec = {
        "name": "t",
        "output": "out",
        "platforms": [{"cluster": {"nb_nodes": 4}}],
        "workloads": [
            {"synthetic": {"nb_jobs": 10, "runtime": [5, 50], "interarrival": 5}, "label": "a"},
            {"synthetic": {"nb_jobs": 10, "runtime": [20, 100], "interarrival": 2}, "label": "b"},
        ],
        "schedulers": schedulers or ["fcfs", "easy"],
        "seeds": [1, 2],
        "baseline": "fcfs",
        "timeout": 60,
    }
    spec.update(extra)
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run_cli(*args, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "iosched.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_campaign_runs_every_combination(tmp_path):
    camp = load_campaign(write_campaign(tmp_path))
    res = run_campaign(camp, workers=2, progress=False)
    assert not res.failed and not res.interrupted
    assert len(res.runs) == 8 and len(res.executed) == 8 and res.nb_done == 8
    df = campaign_table(camp.output)
    assert len(df) == 8 and set(df["status"]) == {"done"}
    combos = set(zip(df["workload"], df["scheduler"], df["seed"]))
    assert combos == {(w, s, k) for w in "ab" for s in ("fcfs", "easy") for k in (1, 2)}
    assert (df["nb_jobs"] == 10).all() and (df["nb_jobs_started"] == 10).all()
    # ratios: the baseline is 1, the others are value / baseline of the same part
    base = df[df["scheduler"] == "fcfs"]
    assert (base["ratio_makespan"] == 1.0).all()
    for row in df[df["scheduler"] == "easy"].itertuples():
        ref = base[(base["workload"] == row.workload) & (base["seed"] == row.seed)].iloc[0]
        assert row.ratio_makespan == pytest.approx(row.makespan / ref.makespan)
    # recorded inputs of one run
    run = res.runs[0]
    d = Path(run["dir"])
    for name in ("run.json", "command.json", "robin.yaml", "robin-batsim.yaml", "metrics.json",
                 "done.json", "out_jobs.csv"):
        assert (d / name).is_file(), name
    info = json.loads((d / "run.json").read_text())
    assert info["seed"] == run["params"]["seed"]
    assert info["versions"]["iosched"] and info["versions"]["pybatsim"] == "3.2.1"
    replay = load_robin(d / "robin-batsim.yaml")
    assert replay["batcmd"].startswith("batsim -p ")
    assert str(d / "replay") == replay["output-dir"]
    assert load_robin(d / "robin.yaml")["output-dir"] == str(d)
    # the same seed gives the same synthetic workload, another seed another one
    wl = {(r["params"]["workload"], r["params"]["seed"]): r["workload"] for r in res.runs}
    assert wl[("a", 1)] != wl[("a", 2)]
    assert len({r["workload"] for r in res.runs if r["params"]["workload"] == "a"
                and r["params"]["seed"] == 1}) == 1


def test_resume_reruns_nothing_finished_and_reruns_partial(tmp_path):
    camp = load_campaign(write_campaign(tmp_path))
    first = run_campaign(camp, workers=2, progress=False)
    assert first.nb_done == 8
    stamps = {r["id"]: (Path(r["dir"]) / "done.json").stat().st_mtime_ns for r in first.runs}
    again = run_campaign(camp, workers=2, progress=False)
    assert again.executed == [] and len(again.skipped) == 8
    assert stamps == {r["id"]: (Path(r["dir"]) / "done.json").stat().st_mtime_ns for r in again.runs}
    # a run killed mid-way: no marker, leftovers in its folder
    victim = first.runs[3]
    d = Path(victim["dir"])
    (d / "done.json").unlink()
    (d / "leftover.txt").write_text("partial")
    assert run_status(d) == "partial"
    third = run_campaign(camp, workers=2, progress=False)
    assert third.executed == [victim["id"]]
    assert run_status(d) == "done" and not (d / "leftover.txt").exists()


def test_failing_scheduler_is_listed_not_fatal(tmp_path):
    crashy = {"name": str(MISBEHAVING), "options": {"mode": "crash"}, "label": "crashy"}
    path = write_campaign(tmp_path, schedulers=["fcfs", crashy])
    r = run_cli("campaign", path, "--workers", "2", "--no-progress")
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    failed_lines = [ln for ln in r.stdout.splitlines() if ln.startswith("FAILED ")]
    assert len(failed_lines) == 4 and all("crashy" in ln for ln in failed_lines)
    assert all("crashes on purpose" in ln or "scheduler" in ln for ln in failed_lines)
    camp = load_campaign(path)
    df = campaign_table(camp.output)
    assert sorted(df["status"]) == ["done"] * 4 + ["failed"] * 4
    assert (df.loc[df["status"] == "failed", "reason"].str.len() > 0).all()
    assert (tmp_path / "out" / "runs.csv").is_file() and (tmp_path / "out" / "runs.parquet").is_file()
    # failed runs are not retried by default, and are with retry_failed
    res = run_campaign(camp, workers=2, progress=False)
    assert res.executed == [] and len(res.failed) == 4
    res = run_campaign(camp, workers=2, progress=False, retry_failed=True)
    assert sorted(res.executed) == sorted(df.loc[df["status"] == "failed", "run_id"])
    assert len(res.failed) == 4


def _alive(pids):
    out = []
    for pid, ctime in pids:
        try:
            p = psutil.Process(pid)
            if p.create_time() == ctime and p.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.Error:
            pass
    return out


def test_killed_campaign_leaves_no_process_and_resumes(tmp_path):
    gate = tmp_path / "gate"
    gate.write_text("closed")
    sched = tmp_path / "gated.py"
    sched.write_text(GATED)
    path = write_campaign(tmp_path, schedulers=["fcfs", {"name": str(sched), "label": "gated",
                                                          "options": {"gate": str(gate)}}])
    camp = load_campaign(path)
    runs = prepare_runs(camp)
    gated = sorted(r["id"] for r in runs if r["params"]["scheduler"] == "gated")
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "campaign", str(path),
                             "--workers", "2", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # wait until two gated runs are blocked (their schedulers are running)
        deadline = time.monotonic() + 60
        seen = set()
        while time.monotonic() < deadline:
            for r in runs:
                if r["id"] in gated and (Path(r["dir"]) / "engine.log").exists():
                    seen.add(r["id"])
            if len(seen) >= 2:
                break
            time.sleep(0.1)
        assert len(seen) >= 2, "gated runs never started"
        time.sleep(0.5)
        pids = [(p.pid, p.create_time()) for p in psutil.Process(proc.pid).children(recursive=True)]
        assert pids
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    time.sleep(0.2)
    assert _alive(pids) == []
    # interrupted runs have no marker; nothing was marked failed
    for r in runs:
        assert run_status(r["dir"]) in ("done", "partial", "pending")
    assert all(run_status(r["dir"]) != "done" for r in runs if r["id"] in seen)
    finished = {r["id"] for r in runs if run_status(r["dir"]) == "done"}
    gate.unlink()
    res = run_campaign(camp, workers=2, progress=False)
    assert not res.failed and res.nb_done == 8
    assert set(res.executed) == {r["id"] for r in runs} - finished
    assert set(gated) <= set(res.executed)


def test_bad_campaign_files_give_one_line_errors(tmp_path):
    good = yaml.safe_load(write_campaign(tmp_path).read_text())
    cases = {
        "unknown": ({**good, "schedulerz": ["easy"]}, "schedulerz"),
        "missing": ({k: v for k, v in good.items() if k != "workloads"}, "workloads"),
        "nested": ({**good, "platforms": [{"cluster": {"nb_nodes": 4, "cores": 2}}]},
                   "platforms[0].cluster"),
        "type": ({**good, "seeds": ["one"]}, "seeds[0]"),
        "baseline": ({**good, "baseline": "sjf"}, "baseline"),
        "file": ({**good, "workloads": ["nope.json"]}, "workloads[0].file"),
        "kind": ({**good, "workloads": [{"foo": 1}]}, "workloads[0]"),
    }
    for name, (spec, field) in cases.items():
        p = tmp_path / f"{name}.yaml"
        p.write_text(yaml.safe_dump(spec))
        with pytest.raises(InputError) as ei:
            load_campaign(p)
        msg = str(ei.value)
        assert str(p) in msg and field in msg and "\n" not in msg, (name, msg)
    p = tmp_path / "unknown.yaml"
    r = run_cli("campaign", p)
    assert r.returncode == 2 and "schedulerz" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    r = run_cli("campaign", tmp_path / "broken.yaml")
    assert r.returncode == 2 and "invalid YAML" in r.stderr


def test_synthetic_workload_is_seeded():
    a = synthetic_workload(30, 8, seed=3)
    assert a == synthetic_workload(30, 8, seed=3)
    assert a != synthetic_workload(30, 8, seed=4)
    assert len(a["jobs"]) == 30 and all(1 <= j["res"] <= 8 for j in a["jobs"])
    assert all(j["walltime"] >= a["profiles"][j["profile"]]["delay"] for j in a["jobs"])
    subs = [j["subtime"] for j in a["jobs"]]
    assert subs == sorted(subs) and subs[0] == 0.0
    with pytest.raises(InputError):
        synthetic_workload(5, 4, seed=1, runtime=(10, 5))


def test_split_parts_windows():
    w = {"nb_res": 4, "jobs": [{"id": i, "subtime": t, "res": 1, "profile": f"p{i}"}
                               for i, t in enumerate([0.0, 10.0, 99.0, 250.0, 260.0])],
         "profiles": {f"p{i}": {"type": "delay", "delay": 1.0} for i in range(5)}}
    parts = split_parts(w, 100.0)
    assert [k for k, _ in parts] == [0, 2]  # window 1 is empty and skipped
    assert [j["subtime"] for j in parts[1][1]["jobs"]] == [50.0, 60.0]
    assert set(parts[1][1]["profiles"]) == {"p3", "p4"}
    assert [k for k, _ in split_parts(w, 100.0, count=1)] == [0]


def test_swf_workload_parts(tmp_path):
    swf = tmp_path / "t.swf"
    lines = ["; MaxProcs: 4"]
    for i in range(12):  # one job every 12 hours: 6 days
        lines.append(f"{i + 1} {i * 43200} 0 100 2 -1 -1 2 200 -1 1 1 1 1 1 -1 -1 -1")
    swf.write_text("\n".join(lines) + "\n")
    path = write_campaign(tmp_path, workloads=[{"swf": str(swf), "parts": {"days": 2}}],
                          seeds=[0])
    runs = prepare_runs(load_campaign(path))
    parts = sorted({r["params"]["part"] for r in runs})
    assert parts == [0, 1, 2] and len(runs) == 6
    w = json.loads(Path(next(r["workload"] for r in runs if r["params"]["part"] == 1)).read_text())
    assert [j["subtime"] for j in w["jobs"]] == [0.0, 43200.0, 86400.0, 129600.0]


def test_engine_option_selects_the_engine_of_every_run(tmp_path, monkeypatch):
    path = write_campaign(tmp_path, schedulers=["fcfs"], seeds=[1])
    # the real Batsim is not on PATH here: a clear one-line refusal, nothing run
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "campaign", str(path), "--engine", "batsim"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "no 'batsim' on PATH" in r.stderr
    assert not (tmp_path / "out" / "runs").exists() or not any((tmp_path / "out" / "runs").iterdir())
    # the embedded engine, explicitly
    monkeypatch.undo()
    r = run_cli("campaign", path, "--engine", "embedded", "-j", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    runs = sorted((tmp_path / "out" / "runs").iterdir())
    assert len(runs) == 2
    for run in runs:
        assert json.loads((run / "run.json").read_text())["engine"] == "embedded"


def bb_tiny_workload(seed, nb_jobs=3, parts=None):
    """A generator for the ``python`` workload hook (deterministic in its arguments)."""
    jobs = [{"id": i, "subtime": 1 + 10 * i + seed, "res": 1, "walltime": 100, "profile": "p"}
            for i in range(nb_jobs)]
    w = {"nb_res": 4, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 5}}}
    if parts is None:
        return w
    return [dict(w, jobs=jobs[k::parts]) for k in range(parts)]


def test_python_workload_hook_and_engine_args(tmp_path):
    hook = "tests.test_campaign:bb_tiny_workload"
    camp = load_campaign(write_campaign(
        tmp_path, schedulers=["fcfs"], seeds=[1, 2],
        workloads=[{"python": hook, "args": {"nb_jobs": 4}, "label": "one"},
                   {"python": hook, "args": {"nb_jobs": 4, "parts": 2}}],
        engine_args=["--enable-dynamic-jobs"]))
    assert camp.engine_args == ["--enable-dynamic-jobs"]
    runs = prepare_runs(camp)
    # 2 seeds x (1 + 2 parts) x 1 scheduler; the default label is the function name
    assert len(runs) == 6
    assert {(r["params"]["workload"], r["params"]["part"]) for r in runs} == {
        ("one", None), ("bb_tiny_workload", 0), ("bb_tiny_workload", 1)}
    one = {r["params"]["seed"]: json.loads(Path(r["workload"]).read_text())
           for r in runs if r["params"]["workload"] == "one"}
    assert one[1] == bb_tiny_workload(1, nb_jobs=4) and one[2] == bb_tiny_workload(2, nb_jobs=4)
    assert all(r["engine_args"] == ["--enable-dynamic-jobs"] for r in runs)
    # same file -> same run ids; the engine args are part of the identity
    assert [r["id"] for r in prepare_runs(camp)] == [r["id"] for r in runs]
    camp2 = load_campaign(write_campaign(
        tmp_path, schedulers=["fcfs"], seeds=[1, 2],
        workloads=[{"python": hook, "args": {"nb_jobs": 4}, "label": "one"}]))
    assert {r["id"] for r in prepare_runs(camp2)}.isdisjoint(r["id"] for r in runs)
    # the runs execute with the engine arguments: with dynamic jobs enabled the
    # engine waits for NOTIFY registration_finished, which the core's executor
    # sends for any scheduler once nothing is left (the run ends, all jobs done)
    camp3 = load_campaign(write_campaign(
        tmp_path, schedulers=["fcfs"], seeds=[1],
        workloads=[{"python": hook, "args": {"nb_jobs": 3}}], engine_args=["--enable-dynamic-jobs"]))
    res = run_campaign(camp3, workers=1, progress=False)
    assert res.nb_done == 1 and not res.failed
    jobs = (Path(res.runs[0]["dir"]) / "out_jobs.csv").read_text().splitlines()
    assert len(jobs) == 1 + 3 and all(",COMPLETED_SUCCESSFULLY," in line for line in jobs[1:])


def test_python_workload_hook_errors(tmp_path):
    for spec, msg in (({"python": "no_such_module_x:f"}, "cannot import"),
                      ({"python": "json:dumps", "args": {"nope": 1}}, "workload"),
                      ({"python": "not a ref"}, "workloads\\[0\\]\\.python")):
        path = write_campaign(tmp_path, workloads=[spec])
        with pytest.raises(InputError, match=msg):
            prepare_runs(load_campaign(path))


def _snapshot(d: Path) -> dict:
    """{file name: (mtime_ns, bytes)} of a run folder."""
    return {f.name: (f.stat().st_mtime_ns, f.read_bytes()) for f in sorted(d.iterdir()) if f.is_file()}


def test_refresh_metrics_recomputes_without_simulating(tmp_path, monkeypatch):
    import shutil

    import iosched.campaign.execute as execute_mod
    from iosched.analysis.metrics_file import write_metrics

    path = write_campaign(tmp_path, seeds=[1])  # 2 workloads x 2 schedulers = 4 runs
    r = run_cli("campaign", path, "-j", "2", "--no-progress")
    assert r.returncode == 0, r.stderr
    camp = load_campaign(path)
    runs = sorted(prepare_runs(camp), key=lambda x: x["id"])
    dirs = [Path(x["dir"]) for x in runs]
    orig_done = [json.loads((d / "done.json").read_text()) for d in dirs]
    orig_metrics_json = [(d / "metrics.json").read_bytes() for d in dirs]
    snaps = [_snapshot(d) for d in dirs]
    # the run path computes exactly what iosched.analysis.metrics_file.write_metrics writes
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("out_jobs.csv", "out_machine_states.csv", "command.json", "io_phases.csv",
                 "io_holds.csv", "io_inputs.csv"):
        shutil.copy(dirs[0] / name, copy / name)
    assert write_metrics(copy, nb_resources=runs[0]["nb_res"], tau=camp.tau) == orig_done[0]["metrics"]
    assert (copy / "metrics.json").read_bytes() == orig_metrics_json[0]

    tampered, unfinished = dirs[0], dirs[1]
    bad = json.loads((tampered / "done.json").read_text())
    bad["metrics"]["waiting_time"]["mean"] = 12345
    (tampered / "done.json").write_text(json.dumps(bad))
    (tampered / "metrics.json").write_text(json.dumps(bad["metrics"]))
    (unfinished / "done.json").unlink()  # no marker: a run killed mid-way
    unfinished_snap = _snapshot(unfinished)
    write_table(campaign_table(camp.output), camp.output)
    assert "12345" in (camp.output / "runs.csv").read_text()

    # in-process: no simulation, no Dask
    def forbidden(*a, **k):
        raise AssertionError("a simulation or a Dask cluster was started")

    monkeypatch.setattr(execute_mod, "run_simulation", forbidden)
    monkeypatch.setattr(execute_mod, "execute_run", forbidden)
    monkeypatch.setattr(execute_mod, "_start_client", forbidden)
    res = refresh_metrics(camp, progress=False)
    assert sorted(res.refreshed) == sorted([runs[0]["id"], runs[2]["id"], runs[3]["id"]])
    assert res.changed == [runs[0]["id"]]
    assert res.skipped == {runs[1]["id"]: "partial"} and res.errors == {}
    done = json.loads((tampered / "done.json").read_text())
    assert done == orig_done[0]  # metrics back, id / status / wall_time_s kept
    assert (tampered / "metrics.json").read_bytes() == orig_metrics_json[0]
    assert _snapshot(unfinished) == unfinished_snap  # left alone
    for d, snap in zip(dirs, snaps):
        for name in ("out_jobs.csv", "out_schedule.csv", "engine.log", "sched.log", "run.json"):
            assert (d / name).stat().st_mtime_ns == snap[name][0], (d.name, name)
    for i in (2, 3):  # unchanged runs: files not even rewritten
        assert _snapshot(dirs[i]) == snaps[i]

    # the command line: a run whose outputs are gone is reported, the others refreshed
    (tampered / "done.json").write_text(json.dumps(bad))
    broken = dirs[2]
    (broken / "out_jobs.csv").unlink()
    broken_done = (broken / "done.json").read_bytes()
    r = run_cli("campaign", path, "--refresh-metrics", "--no-progress")
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    errors = [ln for ln in r.stdout.splitlines() if ln.startswith("ERROR ")]
    assert len(errors) == 1 and runs[2]["id"] in errors[0] and "out_jobs.csv" in errors[0], r.stdout
    summary = [ln for ln in r.stdout.splitlines() if " refreshed, " in ln]
    assert len(summary) == 1 and "2 refreshed, 1 changed, 1 skipped" in summary[0], r.stdout
    assert [ln for ln in r.stdout.splitlines() if ln.startswith("NOT REFRESHED ")] == [
        f"NOT REFRESHED {runs[1]['id']}: partial, no done.json"]
    assert json.loads((tampered / "done.json").read_text()) == orig_done[0]
    assert (broken / "done.json").read_bytes() == broken_done  # left as it was
    assert not (unfinished / "done.json").exists()
    for d, snap in zip(dirs, snaps):
        if d != broken:
            assert (d / "out_jobs.csv").stat().st_mtime_ns == snap["out_jobs.csv"][0]
    # the table is rewritten with the recomputed metrics
    assert "12345" not in (camp.output / "runs.csv").read_text()
    df = campaign_table(camp.output)
    row = df[df["run_id"] == runs[0]["id"]].iloc[0]
    assert row["waiting_time_mean"] == orig_done[0]["metrics"]["waiting_time"]["mean"]
    assert dict(zip(df["run_id"], df["status"]))[runs[1]["id"]] == "pending"


def test_refresh_metrics_with_output_option(tmp_path):
    path = write_campaign(tmp_path, schedulers=["fcfs"], seeds=[1])  # 2 runs
    elsewhere = tmp_path / "elsewhere"
    r = run_cli("campaign", path, "-o", elsewhere, "-j", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    r = run_cli("campaign", path, "-o", elsewhere, "--refresh-metrics", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "2 refreshed, 0 changed, 0 skipped" in r.stdout and str(elsewhere) in r.stdout
    assert (elsewhere / "runs.csv").is_file()
    # the file's own output folder holds no campaign: a one-line error, nothing created
    r = run_cli("campaign", path, "--refresh-metrics", "--no-progress")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "no campaign here" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
    # options that only make sense when simulating are refused
    r = run_cli("campaign", path, "-o", elsewhere, "--refresh-metrics", "--workers", "2")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "--workers" in r.stderr


def test_local_cluster_listens_on_loopback_only():
    import ipaddress
    import os

    import psutil

    from iosched.campaign.execute import _start_client

    def listening():
        return [c.laddr for c in psutil.Process(os.getpid()).net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN]

    before = set(listening())
    client, lc = _start_client(2, None)
    try:
        assert client.submit(sum, [1, 2]).result() == 3
        new = [a for a in listening() if a not in before]
        assert all(ipaddress.ip_address(a.ip).is_loopback for a in new), new
    finally:
        client.close()
        lc.close()


def test_engine_arg_roles_change_the_compute_hosts(tmp_path):
    # node_3 becomes a storage host: 3 compute hosts for the workload and the metrics
    camp = load_campaign(write_campaign(
        tmp_path, schedulers=["fcfs"], seeds=[1],
        workloads=[{"synthetic": {"nb_jobs": 6, "runtime": [5, 20], "interarrival": 3},
                    "label": "a"}],
        engine_args=["-r", "node_3:storage"]))
    runs = prepare_runs(camp)
    assert [r["nb_res"] for r in runs] == [3]
    w = json.loads(Path(runs[0]["workload"]).read_text())
    assert w["nb_res"] == 3 and max(j["res"] for j in w["jobs"]) <= 3
    res = run_campaign(camp, workers=1, progress=False)
    assert not res.failed
    m = json.loads((Path(res.runs[0]["dir"]) / "metrics.json").read_text())
    assert m["nb_resources"] == 3
