"""Interoperability with the Batsim tool chain and paper-ready outputs
(issue 14): the engine's command line (Batsim 4.2.1's docopt usage,
--dump-execution-context), _machine_states.csv, robin, declared scheduler
options, one compute-host count, SWF .gz and Batsim's converter options,
time units, resampled plots, the demo's comparison table."""

import csv
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from iosched.analysis.format import format_table
from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics import job_metrics
from iosched.analysis.metrics_file import dir_metrics
from iosched.analysis.plots import (
    plot_ecdf,
    plot_gantt,
    plot_ratio_boxes,
    plot_utilization,
    ratio_groups,
    resample_steps,
)
from iosched.analysis.units import format_duration, log_time_ticks, time_unit
from iosched.campaign.schema import load_campaign
from iosched.demo import DemoRun, bb_workload, comparison_rows, run_demo
from iosched.engine.cli import REFUSED, parse_args
from iosched.errors import InputError
from iosched.run.cli import progress_text, summary_line
from iosched.run.simulation import run_simulation
from iosched.sched.options import CORE_OPTIONS
from iosched.schedulers.baseline import Baseline
from iosched.schedulers.registry import check_options, declared_options, resolve
from iosched.workloads.convert import swf_to_batsim
from iosched.workloads.swf import read_swf

REPO = Path(__file__).resolve().parent.parent
CLUSTER16 = REPO / "platforms" / "cluster16_pfs.xml"
EXAMPLE_IO = REPO / "workloads" / "example_io.json"

WORKLOAD = {
    "nb_res": 16,
    "jobs": [
        {"id": 1, "subtime": 0, "walltime": 100, "res": 4, "profile": "d10"},
        {"id": 2, "subtime": 0, "walltime": 100, "res": 8, "profile": "d5"},
        {"id": 3, "subtime": 2, "walltime": 100, "res": 16, "profile": "d5"},
        {"id": 4, "subtime": 3, "walltime": 100, "res": 2, "profile": "d10"},
        {"id": 5, "subtime": 4.123456789, "walltime": 100, "res": 1, "profile": "d5"},
    ],
    "profiles": {"d10": {"type": "delay", "delay": 10}, "d5": {"type": "delay", "delay": 5.5}},
}


def engine(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "iosched.engine.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------- command line
def test_execution_context_has_batsims_fields_in_order():
    """Batsim 4.2.1 (src/batsim.cpp main) prints these 7 members, compact JSON,
    before any other check (the platform need not exist)."""
    r = engine("-p", "no_such_platform.xml", "-e", "exp/out", "-s", "tcp://host:1234",
               "--dump-execution-context")
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert "\n" not in line and ": " not in line  # rapidjson Writer: no spaces
    ctx = json.loads(line)
    assert list(ctx) == ["socket_endpoint", "redis_enabled", "redis_hostname", "redis_port",
                         "redis_prefix", "export_prefix", "external_scheduler"]
    assert ctx == {"socket_endpoint": "tcp://host:1234", "redis_enabled": False,
                   "redis_hostname": "127.0.0.1", "redis_port": 6379, "redis_prefix": "default",
                   "export_prefix": "exp/out", "external_scheduler": True}
    r = engine("-p", "x.xml", "--no-sched", "--dump-execution-context")
    ctx = json.loads(r.stdout)
    assert ctx["external_scheduler"] is False and ctx["export_prefix"] == "out"
    assert ctx["socket_endpoint"] == "tcp://localhost:28000"


def test_batsim_usage_grammar():
    a = parse_args(["-p", "p.xml", "-w", "a.json", "-w", "b.json", "--sg-cfg", "x:1",
                    "--redis-hostname", "h", "--mmax", "3", "-r", "h1,h2:storage"])
    assert a["--workload"] == ["a.json", "b.json"] and a["--mmax"] == "3"
    assert a["--add-role-to-hosts"] == ["h1,h2:storage"] and a["--redis-hostname"] == "h"
    assert a["--export"] == "out" and a["--verbosity"] == "information"


@pytest.mark.parametrize("args, message", [
    (["--sched-cfg", "a", "--sched-cfg-file", "b"], "mutually exclusive"),
    (["--polcy"], "--polcy: unknown option"),
    (["-Z"], "-Z: unknown option"),
    (["--mmax"], "--mmax requires argument"),
    (["--mmax", "-1"], "--mmax: must be >= 0"),
    (["-v", "chatty"], "--verbosity: invalid level"),
])
def test_bad_command_lines_refused_in_one_line(tmp_path, args, message):
    r = engine("-p", CLUSTER16, "-w", EXAMPLE_IO, "-e", tmp_path / "o", *args)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1 and message in r.stderr, r.stderr


@pytest.mark.parametrize("flag", sorted(REFUSED))
def test_out_of_scope_flags_refused_in_one_line(tmp_path, flag):
    value = {"--workflow": ["wf.xml"], "--WS": ["wf.xml", "3"], "--workflow-jobs-limit": ["2"],
             "--events": ["ev.txt"]}.get(flag, [])
    r = engine("-p", CLUSTER16, "-w", EXAMPLE_IO, "-e", tmp_path / "o", flag, *value)
    assert r.returncode == 2, (flag, r.stderr)
    assert len(r.stderr.splitlines()) == 1 and "out of scope" in r.stderr and flag in r.stderr


# ------------------------------------------------------------ machine states
def test_machine_states_as_batsim_writes_them(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(WORKLOAD))
    out = tmp_path / "run"
    progress = tmp_path / "progress.txt"
    run_simulation(CLUSTER16, [w], "fcfs", out, timeout=120, cpu="none",
                   engine_args=["--progress-file", str(progress)])
    # the engine's progress file (iosched extension): time, jobs ended, static jobs
    now, ended, total = progress.read_text().split()
    assert float(now) >= 0 and 0 <= int(ended) <= 5 and int(total) == 5
    text = (out / "out_machine_states.csv").read_text()
    lines = text.splitlines()
    assert lines[0] == "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing"
    rows = [ln.split(",") for ln in lines[1:]]
    jobs = list(csv.DictReader(open(out / "out_jobs.csv")))
    started = [j for j in jobs if j["starting_time"]]
    # one row per job start and one per job end (Machines::update_machines_on_job_run/end)
    assert len(rows) == 2 * len(started) == 10
    machines = {sum(int(c) for c in r[1:]) for r in rows}
    assert machines == {17}  # 16 compute nodes + the PFS host, not the master
    times = [float(r[0]) for r in rows]
    assert times == sorted(times)
    for r in rows:  # C's %g: 6 significant digits, no trailing zeros
        assert r[0] == "%g" % float(r[0]) and len(r) == 6 and r[1:4] == ["0", "0", "0"]
    # after the last row of each time, nb_computing = nodes of the jobs running then
    last = {}
    for r in rows:
        last[r[0]] = int(r[5])
    for t, computing in last.items():
        x = float(t)
        busy = sum(int(j["requested_number_of_resources"]) for j in started
                   if float(j["starting_time"]) <= x + 5e-6 and float(j["finish_time"]) > x + 5e-6)
        assert computing == busy, (t, computing, busy)


def test_robins_first_step_on_a_project_robin_file(tmp_path):
    """What batexpe's ParseBatsimCommand does (batexpe/batsim.go): run
    ``<batcmd> --dump-execution-context`` with ``bash -eux`` and parse the
    whole stdout as JSON; then it uses socket_endpoint, export_prefix and
    external_scheduler."""
    spec = yaml.safe_load(open(REPO / "examples" / "robin_example_io.yaml"))
    batcmd = spec["batcmd"].replace("python ", f"{sys.executable} ", 1)
    f = tmp_path / "tmp-dump-batcmd"
    f.write_text(batcmd + " --dump-execution-context")
    r = subprocess.run(["bash", "-eux", str(f)], capture_output=True, text=True, timeout=60,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr
    ctx = json.loads(r.stdout)
    assert ctx["socket_endpoint"] == "tcp://127.0.0.1:28123"
    assert ctx["export_prefix"] == "out/robin_example_io/out"
    assert ctx["external_scheduler"] is True


@pytest.mark.skipif(shutil.which("robin") is None, reason="no robin (batexpe) on PATH")
def test_robin_runs_a_project_robin_file(tmp_path):
    """robin first asks the engine for --dump-execution-context, then runs both."""
    spec = yaml.safe_load(open(REPO / "examples" / "robin_example_io.yaml"))
    spec["batcmd"] = spec["batcmd"].replace("python ", f"{sys.executable} ").replace(
        "out/robin_example_io/out", str(tmp_path / "out"))
    spec["batcmd"] = spec["batcmd"].replace("-p platforms/", f"-p {REPO}/platforms/").replace(
        "-w workloads/", f"-w {REPO}/workloads/")
    spec["schedcmd"] = spec["schedcmd"].replace("pybatsim schedulers/",
                                                f"{sys.executable} -m batsim.cmds.launcher "
                                                f"{REPO}/schedulers/")
    spec["output-dir"] = str(tmp_path)
    f = tmp_path / "robin.yaml"
    f.write_text(yaml.safe_dump(spec))
    r = subprocess.run(["robin", str(f)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "out_jobs.csv").is_file()


# ------------------------------------------------------ options and names
def test_declared_options_refuse_typos_everywhere(tmp_path):
    assert declared_options("easy") == {"policy": declared_options("fcfs")["policy"],
                                        **CORE_OPTIONS}
    check_options("easy", {"policy": "fcfs"})
    with pytest.raises(InputError, match=r"unknown option 'polcy' \(did you mean 'policy'\?\)"):
        check_options("easy", {"polcy": "fcfs"})
    with pytest.raises(InputError, match="unknown option 'polcy'"):
        Baseline({"polcy": "fcfs"})  # the scheduler process (pybatsim -o) refuses it too
    with pytest.raises(InputError, match=r"did you mean 'easy'"):
        resolve("esay")
    # iosched run: fails before starting anything, one line, exit 2
    w = tmp_path / "w.json"
    w.write_text(json.dumps(WORKLOAD))
    r = subprocess.run([sys.executable, "-m", "iosched", "run", "-p", CLUSTER16, "-w", w, "-s",
                        "easy", "--options", '{"polcy": "fcfs"}', "-o", tmp_path / "o"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "unknown option 'polcy'" in r.stderr and not (tmp_path / "o" / "sched.log").exists()


def test_campaign_validation_checks_scheduler_options(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(WORKLOAD))
    base = {"name": "c", "platforms": [str(CLUSTER16)], "workloads": [str(w)]}
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({**base, "schedulers": [{"name": "easy", "options": {"polcy": 1}}]}))
    with pytest.raises(InputError, match=r"schedulers\[0\]\.options: .*unknown option 'polcy'"):
        load_campaign(f)
    f.write_text(yaml.safe_dump({**base, "schedulers": [{"name": "easy", "seed_option": "sead"}]}))
    with pytest.raises(InputError, match=r"schedulers\[0\]\.seed_option: .*unknown option 'sead'"):
        load_campaign(f)
    f.write_text(yaml.safe_dump({**base, "schedulers": ["esay"]}))
    with pytest.raises(InputError, match=r"schedulers\[0\]\.name: .*did you mean 'easy'"):
        load_campaign(f)


JOBS_CSV = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
            "requested_time,success,final_state,starting_time,execution_time,finish_time,"
            "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata\n"
            "1,w0,d,0.000000,4,100.000000,1,COMPLETED_SUCCESSFULLY,0.000000,100.000000,"
            "100.000000,0.000000,100.000000,1.000000,0-3,-1.000000,\n")


def test_one_compute_host_count(tmp_path):
    """The runner's record (compute hosts) wins over the machine states, which
    count the storage hosts too: iosched run and iosched metrics agree."""
    (tmp_path / "out_jobs.csv").write_text(JOBS_CSV)
    (tmp_path / "out_machine_states.csv").write_text(
        "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n"
        "0,0,0,0,6,4\n100,0,0,0,10,0\n")
    m = dir_metrics(tmp_path)
    assert (m["nb_resources"], m["nb_resources_source"]) == (10, "machine_states_csv")
    (tmp_path / "command.json").write_text(json.dumps({"compute_hosts": 8}))
    m = dir_metrics(tmp_path)
    assert (m["nb_resources"], m["nb_resources_source"]) == (8, "command_json_compute_hosts")
    assert m["utilization"] == pytest.approx(0.5)


# ------------------------------------------------------------------- SWF
SWF = """; MaxProcs: 16
1 0 5 100 4 -1 -1 2 300 -1 1 1 1 -1 1 -1 -1 -1
2 10 5 50 -1 -1 -1 8 -1 -1 1 1 1 -1 1 -1 -1 -1
3 20 5 400 16 -1 -1 16 200 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_swf_gz_and_batsim_converter_options(tmp_path):
    plain = tmp_path / "t.swf"
    plain.write_text(SWF)
    gz = tmp_path / "t.swf.gz"
    gz.write_bytes(gzip.compress(SWF.encode()))
    assert read_swf(gz).jobs.equals(read_swf(plain).jobs)
    wl, _ = swf_to_batsim(gz)
    by = {j["id"]: j for j in wl["jobs"]}
    assert by[1]["res"] == 2 and by[1]["walltime"] == 300.0  # requested, max(req, run)
    assert "walltime" not in by[2] and by[2]["res"] == 8
    # Batsim's swf_to_batsim_workload_delay.py: allocated processors,
    # walltime max(2 x run time, requested)
    wl, rep = swf_to_batsim(gz, use_allocated=True, walltime_factor=2)
    by = {j["id"]: j for j in wl["jobs"]}
    assert by[1]["res"] == 4 and by[1]["walltime"] == 300.0
    assert by[3]["res"] == 16 and by[3]["walltime"] == 800.0
    assert 2 not in by and rep.dropped["no_resources"] == 1  # no allocated count
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(b"\x1f\x8b" + b"not gzip")
    with pytest.raises(InputError, match="bad.swf.gz: cannot decompress"):
        read_swf(bad)
    with pytest.raises(InputError, match="walltime factor"):
        swf_to_batsim(plain, walltime_factor=0.5)


# ----------------------------------------------------------------- units
def test_time_units():
    assert time_unit(59) == ("s", 1.0) and time_unit(119.9) == ("s", 1.0)
    assert time_unit([10, 7200]) == ("h", 3600.0) and time_unit(933535.0) == ("d", 86400.0)
    assert format_duration(933535.002) == "10.8 d" and format_duration(5400) == "90.0 min"
    assert format_duration(None) == "-" and format_duration(float("nan")) == "-"
    assert log_time_ticks(1, 4000) == ([1.0, 10.0, 60.0, 600.0, 3600.0],
                                       ["1 s", "10 s", "1 min", "10 min", "1 h"])


def test_format_table_uses_units(tmp_path):
    (tmp_path / "out_jobs.csv").write_text(JOBS_CSV)
    lines = format_table(dir_metrics(tmp_path, nb_resources=4)).splitlines()
    assert any(ln.startswith("turnaround (s) ") for ln in lines)
    assert any(ln.split() == ["makespan", "100.0", "s"] for ln in lines)
    assert any(ln.split() == ["busy", "node-hours", "0.1"] for ln in lines)


def test_resample_steps_is_the_exact_mean():
    t = np.array([0.0, 10.0, 30.0])
    n = np.array([2.0, 4.0, 0.0])
    m = resample_steps(t, n, np.array([0.0, 20.0, 40.0]))
    assert m == pytest.approx([(2 * 10 + 4 * 10) / 20, (4 * 10) / 20])
    assert resample_steps(t, n, np.array([-10.0, 0.0])) == pytest.approx([0.0])


def test_no_box_plot_from_fewer_than_five_values(tmp_path):
    df = pd.DataFrame({"scheduler": ["fcfs"] * 5 + ["easy"] * 5 + ["sjf"] * 2,
                       "ratio_utilization": [1.0] * 5 + [1.1, 1.2, 0.9, 1.0, 1.05] + [1.3, np.nan]})
    groups = ratio_groups(df, "fcfs", "utilization")
    assert set(groups) == {"easy", "sjf"}  # the baseline's own ratios are left out
    assert groups["easy"][0] == "box" and groups["easy"][1].size == 5
    assert groups["sjf"][0] == "points" and list(groups["sjf"][1]) == [1.3]
    assert plot_ratio_boxes(df, tmp_path / "b.png", "fcfs", metrics=("utilization",)).is_file()


def test_long_trace_figures(tmp_path):
    """A long trace: utilization resampled, whole-run Gantt, log-scale ECDF."""
    rng = np.random.default_rng(3)
    k = 2500
    sub = np.sort(rng.uniform(0, 30 * 86400, k))
    wait = np.where(rng.random(k) < 0.5, 0.0, 10 ** rng.uniform(0, 5, k))
    run = rng.uniform(10, 3600, k)
    res = rng.integers(0, 60, k)
    lines = [JOBS_CSV.splitlines()[0]]
    for i in range(k):
        b, c = sub[i] + wait[i], sub[i] + wait[i] + run[i]
        lines.append(f"{i},w0,d,{sub[i]:.6f},1,100000.000000,1,COMPLETED_SUCCESSFULLY,{b:.6f},"
                     f"{run[i]:.6f},{c:.6f},{wait[i]:.6f},{c - sub[i]:.6f},1.0,{res[i]},-1.0,")
    (tmp_path / "out_jobs.csv").write_text("\n".join(lines) + "\n")
    jobs = load_jobs(tmp_path)
    assert plot_utilization(jobs, 64, tmp_path / "u.png").stat().st_size > 0
    assert plot_gantt(jobs, tmp_path / "g.png").stat().st_size > 0
    pj = job_metrics(jobs)
    pj["scheduler"] = "x"
    p = plot_ecdf(pj, tmp_path / "e.png")
    assert p.read_bytes() == plot_ecdf(pj, tmp_path / "e2.png").read_bytes()  # deterministic


def test_progress_and_summary_lines():
    assert progress_text("93600.5 120 1000\n", 75.0) == (
        "simulated time 26.0 h, 120 jobs ended (1000 in the workloads), 75.0 s of wall clock")
    assert progress_text("93600.5 12", 1.0) is None and progress_text("", 1.0) is None
    m = {"nb_jobs": 10, "nb_jobs_started": 9, "makespan": 933535.0, "utilization": 0.6360,
         "waiting_time": {"mean": 5412.0}, "nb_resources": 96}
    assert summary_line(m) == ("iosched run: 10 jobs (9 started), makespan 10.8 d, mean wait "
                               "90.2 min, utilization 0.636 over 96 compute nodes")


# ------------------------------------------------------------------- demo
def test_comparison_rows_ratios_to_the_baseline():
    base = {"waiting_time": {"mean": 7200.0, "p95": 100.0, "max": 1000.0},
            "turnaround": {"mean": 9000.0}, "bounded_slowdown": {"mean": 2.0},
            "makespan": 864000.0, "utilization": 0.5, "nb_jobs_started": 10}
    other = {**base, "waiting_time": {"mean": 3600.0, "p95": 100.0, "max": 1000.0}}
    header, rows, frame = comparison_rows({"a": base, "b": other}, "a")
    assert header[1] == "mean wait" and rows[0][1] == "2.00 h" and "(x" not in rows[0][1]
    assert rows[1][1] == "60.0 min (x0.50)" and rows[0][6] == "10.0 d"
    assert list(frame["waiting_time.mean"]) == [7200.0, 3600.0]


def test_demo_end_to_end_small(tmp_path, shared):
    swf = shared / "data" / "KTH-SP2-1996-2.1-cln.swf"
    plat = REPO / "platforms" / "dragonfly96.xml"
    runs = [DemoRun("fcfs-easy", "fcfs-easy", plat, bb_workload),
            DemoRun("sjf-bb", "sjf-bb", plat, bb_workload)]
    res = run_demo(swf, 30, 1, tmp_path, 2, runs=runs, echo=lambda *_: None)
    assert set(res["metrics"]) == {"fcfs-easy", "sjf-bb"}
    rows = list(csv.DictReader(open(tmp_path / "comparison.csv")))
    assert [r["scheduler"] for r in rows] == ["fcfs-easy", "sjf-bb"]
    html = (tmp_path / "report.html").read_text()
    # 5 figures of the jobs, the bytes per tier and one I/O timeline per run
    assert html.count("data:image/png;base64") == 8 and "x" in res["table"]
    assert all((tmp_path / label / "io_phases.csv").is_file() for label in ("fcfs-easy", "sjf-bb"))
    for label in ("fcfs-easy", "sjf-bb"):
        assert res["metrics"][label]["nb_resources"] == 96


def test_demo_default_workload_is_the_artifacts_first_jobs(tmp_path, shared, monkeypatch):
    """The demo's default runs use the burst-buffer paper's own draws (its
    artifact's 1000-job workload: SWF jobs 15..1014), the first --jobs of them."""
    from iosched.experiments.bb import artifact
    from iosched.demo import RUNS, artifact_workload

    # the shared inputs the fixture found, wherever this tree is
    monkeypatch.setattr(artifact, "default_dir", lambda: shared / "data" / "bb-artifact")

    assert all(r.workload is artifact_workload for r in RUNS)
    w = artifact_workload(None, 30, 1, 96)
    assert len(w["jobs"]) == 30 and w["jobs"][0]["id"] == 15
    # the burst-buffer request and computation in the job's I/O model
    assert all(j["io"]["burst_buffer"]["bytes"] > 0 and j["io"]["compute"]["flops"] >= 0
               and "bb" not in j for j in w["jobs"])
    with pytest.raises(InputError, match="--generator"):
        artifact_workload(None, 1001, 1, 96)
