"""Tests of iosched.analysis (jobs, metrics, resources, format, the
``iosched metrics`` command): hand-made jobs.csv with hand-computed values,
Batsim's golden outputs, and the ``iosched metrics`` command."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from iosched.analysis.format import format_table
from iosched.analysis.jobs import allocation_size, load_jobs
from iosched.analysis.metrics import compute_metrics
from iosched.analysis.metrics_file import write_metrics
from iosched.analysis.resources import nb_resources_from_machine_states
from iosched.batsim.outputs import JOBS_COLUMNS
from iosched.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def _shared_dir() -> Path | None:
    for cand in (os.environ.get("IOSCHED_SHARED"), REPO.parent / "shared", "/work/shared"):
        if cand and (Path(cand) / "golden").is_dir():
            return Path(cand)
    return None


SHARED = _shared_dir()
GOLDEN_DIRS = sorted(p for p in (SHARED / "golden").glob("g*") if (p / "out_jobs.csv").is_file()) \
    if SHARED else []


def _dynamic(run: Path) -> bool:
    """A golden run whose scheduler registered dynamic jobs (case.json's
    Batsim flags): its rows are phases, merged into workload jobs by the
    metrics, whereas Batsim's ``out_schedule.csv`` counts every row."""
    case = run / "case.json"
    return case.is_file() and "--enable-dynamic-jobs" in json.loads(case.read_text()).get("batsim_flags", [])


STATIC_GOLDEN_DIRS = [p for p in GOLDEN_DIRS if not _dynamic(p)]
DYNAMIC_GOLDEN_DIRS = [p for p in GOLDEN_DIRS if _dynamic(p)]
needs_golden = pytest.mark.skipif(SHARED is None, reason="shared/golden (real Batsim 4.2.1 outputs) "
                                                         "is not available on this machine")


# ---------------------------------------------------------------------------
# Hand-made inputs
# ---------------------------------------------------------------------------

def job_row(job_id, s, b=None, c=None, alloc="", state="COMPLETED_SUCCESSFULLY", nb=1, walltime=10000,
            workload="w0", profile="p"):
    """A Batsim jobs.csv row; b/c None means rejected (Batsim leaves them empty)."""
    rejected = b is None
    def f(x):
        return "" if x is None else f"{x:.6f}"
    return {
        "job_id": job_id, "workload_name": workload, "profile": profile,
        "submission_time": f(s), "requested_number_of_resources": nb,
        "requested_time": f(walltime), "success": int(state == "COMPLETED_SUCCESSFULLY"),
        "final_state": state, "starting_time": f(b),
        "execution_time": "" if rejected else f(c - b), "finish_time": f(c),
        "waiting_time": "" if rejected else f(b - s),
        "turnaround_time": "" if rejected else f(c - s),
        "stretch": "" if rejected or c == b else f((c - s) / (c - b)),
        "allocated_resources": alloc, "consumed_energy": "" if rejected else "-1.000000",
        "metadata": "",
    }


def write_jobs(path: Path, rows, columns=JOBS_COLUMNS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    return path


# A schedule on resources 0..5 (drawn by hand):
#   A: s=0,  b=0,   c=100,  res 0-1    W=0   F=100 D=100
#   B: s=10, b=100, c=400,  res 0-3    W=90  F=390 D=300
#   C: s=20, b=400, c=1000, res 2 and 5 (walltime reached)  W=380 F=980 D=600
#   E: s=0,  b=90,  c=100,  res 4      W=90  F=100 D=10
#   R: s=30, rejected
FIVE = [
    job_row("A", 0, 0, 100, "0-1", nb=2),
    job_row("B", 10, 100, 400, "0-3", nb=4),
    job_row("C", 20, 400, 1000, "2 5", state="COMPLETED_WALLTIME_REACHED", nb=2),
    job_row("E", 0, 90, 100, "4"),
    job_row("R", 30, state="REJECTED", nb=3),
]


@pytest.fixture
def five_dir(tmp_path):
    write_jobs(tmp_path / "run" / "out_jobs.csv", FIVE)
    return tmp_path / "run"


def approx(x):
    return pytest.approx(x, rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------------------
# compute_metrics on the hand-made schedule
# ---------------------------------------------------------------------------

def test_waiting_and_turnaround_statistics(five_dir):
    m = compute_metrics(load_jobs(five_dir))
    # W of started jobs, sorted: 0, 90, 90, 380.  p95 (linear interpolation
    # between order statistics): rank 0.95 * 3 = 2.85 -> 90 + 0.85 * (380 - 90).
    assert m["waiting_time"] == {"mean": approx((0 + 90 + 380 + 90) / 4), "median": approx(90),
                                 "p95": approx(90 + 0.85 * 290), "max": approx(380)}
    # F sorted: 100, 100, 390, 980.
    assert m["turnaround"] == {"mean": approx((100 + 390 + 980 + 100) / 4),
                               "median": approx((100 + 390) / 2),
                               "p95": approx(390 + 0.85 * (980 - 390)), "max": approx(980)}


def test_slowdown_and_bounded_slowdown_with_default_tau(five_dir):
    m = compute_metrics(load_jobs(five_dir))
    sd = sorted([100 / 100, 390 / 300, 980 / 600, 100 / 10])
    assert m["slowdown"]["mean"] == approx(sum(sd) / 4)
    assert m["slowdown"]["median"] == approx((sd[1] + sd[2]) / 2)
    assert m["slowdown"]["p95"] == approx(sd[2] + 0.85 * (sd[3] - sd[2]))
    assert m["slowdown"]["max"] == approx(10.0)
    # tau = 600: only C (D = 600) is above 1: 980 / 600.
    assert m["bounded_slowdown"]["max"] == approx(980 / 600)
    assert m["bounded_slowdown"]["median"] == approx(1.0)
    assert m["bounded_slowdown"]["mean"] == approx((1 + 1 + 1 + 980 / 600) / 4)
    assert m["tau"] == 600.0


@pytest.mark.parametrize("tau, expected", [
    # bounded slowdown per job max(1, F / max(D, tau)) for A, B, C, E
    (50.0, [1.0, 390 / 300, 980 / 600, 100 / 50]),
    (5.0, [1.0, 390 / 300, 980 / 600, 100 / 10]),
    (1000.0, [1.0, 1.0, 1.0, 1.0]),
])
def test_bounded_slowdown_depends_on_tau(five_dir, tau, expected):
    m = compute_metrics(load_jobs(five_dir), tau=tau)
    assert m["bounded_slowdown"]["mean"] == approx(sum(expected) / 4)
    assert m["bounded_slowdown"]["max"] == approx(max(expected))
    assert m["tau"] == tau


def test_rejected_jobs_are_counted_but_not_in_time_statistics(five_dir):
    m = compute_metrics(load_jobs(five_dir))
    assert m["nb_jobs"] == 5
    assert m["nb_jobs_started"] == 4
    assert m["nb_jobs_rejected"] == 1
    assert m["final_states"] == {"COMPLETED_SUCCESSFULLY": 2 + 1, "COMPLETED_WALLTIME_REACHED": 1,
                                 "REJECTED": 1}
    # Without the rejected job the statistics are the same.
    started_only = load_jobs(five_dir)
    started_only = started_only[started_only["final_state"] != "REJECTED"]
    m2 = compute_metrics(started_only)
    for key in ("waiting_time", "turnaround", "slowdown", "bounded_slowdown"):
        assert m2[key] == m[key]


def test_makespan_busy_node_seconds_and_utilization(five_dir):
    jobs = load_jobs(five_dir)
    m = compute_metrics(jobs)
    # last finish 1000 - first submission 0
    assert m["makespan"] == approx(1000.0)
    busy = 100 * 2 + 300 * 4 + 600 * 2 + 10 * 1
    assert m["busy_node_seconds"] == approx(busy)
    # largest allocated id is 5 -> 6 resources
    assert m["nb_resources"] == 6
    assert m["nb_resources_source"] == "max_allocated_id_plus_1"
    assert m["utilization"] == approx(busy / (6 * 1000))
    m4 = compute_metrics(jobs, nb_resources=8)
    assert m4["nb_resources_source"] == "argument"
    assert m4["utilization"] == approx(busy / (8 * 1000))


def test_makespan_counts_from_first_submission(tmp_path):
    # first submission at 50 (a rejected job), last finish at 250
    rows = [job_row("r", 50, state="REJECTED"), job_row("a", 100, 150, 250, "0")]
    jobs = load_jobs(write_jobs(tmp_path / "out_jobs.csv", rows))
    m = compute_metrics(jobs)
    assert m["makespan"] == approx(250 - 50)
    assert m["utilization"] == approx(100 * 1 / (1 * 200))


def test_full_utilization_of_a_packed_schedule(tmp_path):
    # two resources busy all the time from 0 to 30
    rows = [job_row("a", 0, 0, 10, "0-1", nb=2), job_row("b", 0, 10, 30, "0"),
            job_row("c", 0, 10, 30, "1")]
    m = compute_metrics(load_jobs(write_jobs(tmp_path / "out_jobs.csv", rows)))
    assert m["utilization"] == approx(1.0)


def test_zero_runtime_job_has_no_slowdown(tmp_path):
    rows = [job_row("z", 0, 5, 5, "0"), job_row("a", 0, 5, 25, "1")]
    m = compute_metrics(load_jobs(write_jobs(tmp_path / "out_jobs.csv", rows)))
    assert m["slowdown_nb_undefined"] == 1
    assert m["slowdown"]["mean"] == approx(25 / 20)  # only job a
    assert m["slowdown"]["max"] == approx(25 / 20)
    # bounded slowdown is defined for both: max(1, 5/600) = 1 and max(1, 25/600) = 1
    assert m["bounded_slowdown"]["mean"] == approx(1.0)
    assert m["waiting_time"]["mean"] == approx(5.0)


def test_all_rejected_gives_undefined_statistics(tmp_path):
    rows = [job_row("r1", 0, state="REJECTED"), job_row("r2", 3, state="REJECTED")]
    m = compute_metrics(load_jobs(write_jobs(tmp_path / "out_jobs.csv", rows)))
    assert m["nb_jobs"] == 2 and m["nb_jobs_started"] == 0
    assert m["waiting_time"] == {"mean": None, "median": None, "p95": None, "max": None}
    assert m["makespan"] is None and m["utilization"] is None
    assert m["nb_resources"] is None and m["nb_resources_source"] == "none"


def test_allocation_size():
    assert allocation_size("0-3 7") == 5
    assert allocation_size("7") == 1
    assert allocation_size("") == 0
    with pytest.raises(InputError):
        allocation_size("3,4")


# ---------------------------------------------------------------------------
# nb_resources from machine_states.csv
# ---------------------------------------------------------------------------

MACHINE_STATES = ("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n"
                  "0,0,0,0,8,0\n"
                  "0.000000,0,0,0,6,2\n"
                  "90,1,0,0,2,5\n")


def test_nb_resources_from_machine_states(five_dir):
    (five_dir / "out_machine_states.csv").write_text(MACHINE_STATES)
    assert nb_resources_from_machine_states(five_dir / "out_machine_states.csv") == 8
    m = compute_metrics(load_jobs(five_dir))
    assert m["nb_resources"] == 8
    assert m["nb_resources_source"] == "machine_states_csv"
    assert m["utilization"] == approx(2610 / (8 * 1000))
    # an explicit argument wins
    assert compute_metrics(load_jobs(five_dir), nb_resources=6)["nb_resources"] == 6


def test_machine_states_next_to_a_prefixed_jobs_file(tmp_path):
    write_jobs(tmp_path / "exp1_jobs.csv", FIVE)
    (tmp_path / "exp1_machine_states.csv").write_text(MACHINE_STATES)
    m = write_metrics(tmp_path, prefix="exp1")
    assert m["nb_resources"] == 8


def test_inconsistent_machine_states_is_an_input_error(tmp_path):
    p = tmp_path / "out_machine_states.csv"
    p.write_text("time,nb_idle,nb_computing\n0,4,0\n1,2,1\n")
    with pytest.raises(InputError, match=r"out_machine_states\.csv.*line 3"):
        nb_resources_from_machine_states(p)
    p.write_text("time,foo\n0,4\n")
    with pytest.raises(InputError, match="nb_"):
        nb_resources_from_machine_states(p)


# ---------------------------------------------------------------------------
# load_jobs: paths and bad input
# ---------------------------------------------------------------------------

def test_load_jobs_types_and_rejected_fields(five_dir):
    jobs = load_jobs(five_dir / "out_jobs.csv")
    assert list(jobs.columns) == list(JOBS_COLUMNS)
    assert len(jobs) == 5
    assert jobs["job_id"].tolist() == ["A", "B", "C", "E", "R"]
    r = jobs[jobs["job_id"] == "R"].iloc[0]
    assert math.isnan(r["starting_time"]) and r["allocated_resources"] == ""
    assert jobs.attrs["path"].endswith("out_jobs.csv")


def test_numeric_job_ids_stay_strings(tmp_path):
    rows = [job_row("007", 0, 0, 1, "0")]
    jobs = load_jobs(write_jobs(tmp_path / "out_jobs.csv", rows))
    assert jobs["job_id"].tolist() == ["007"]


def test_directory_lookup_prefers_out_jobs(tmp_path):
    write_jobs(tmp_path / "a_jobs.csv", [job_row("x", 0, 0, 1, "0")])
    assert load_jobs(tmp_path)["job_id"].tolist() == ["x"]  # the only one
    write_jobs(tmp_path / "b_jobs.csv", [job_row("y", 0, 0, 1, "0")])
    with pytest.raises(InputError, match="several"):
        load_jobs(tmp_path)
    write_jobs(tmp_path / "out_jobs.csv", [job_row("z", 0, 0, 1, "0")])
    assert load_jobs(tmp_path)["job_id"].tolist() == ["z"]
    assert load_jobs(tmp_path, prefix="b")["job_id"].tolist() == ["y"]


@pytest.mark.parametrize("setup, pattern", [
    ("missing_file", r"nope_jobs\.csv: no such file"),
    ("empty_dir", r"no \*_jobs\.csv"),
    ("empty_file", "empty file"),
    ("missing_column", r"out_jobs\.csv: missing column\(s\) finish_time"),
    ("bad_number", r"out_jobs\.csv: column starting_time, line 3: not a number: 'soon'"),
    ("no_start", r"out_jobs\.csv: column starting_time, line 2: empty for job 'A'"),
])
def test_bad_input_is_one_line_input_error(tmp_path, setup, pattern):
    target = tmp_path
    if setup == "missing_file":
        target = tmp_path / "nope_jobs.csv"
    elif setup == "empty_file":
        (tmp_path / "out_jobs.csv").write_text("")
    elif setup == "missing_column":
        write_jobs(tmp_path / "out_jobs.csv", FIVE, [c for c in JOBS_COLUMNS if c != "finish_time"])
    elif setup == "bad_number":
        rows = [dict(r) for r in FIVE]
        rows[1]["starting_time"] = "soon"
        write_jobs(tmp_path / "out_jobs.csv", rows)
    elif setup == "no_start":
        rows = [dict(r) for r in FIVE]
        rows[0]["starting_time"] = ""
        write_jobs(tmp_path / "out_jobs.csv", rows)
    with pytest.raises(InputError, match=pattern) as info:
        load_jobs(target)
    assert "\n" not in str(info.value)


def test_inconsistent_times_and_allocations_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="finish_time, job 'a'"):
        compute_metrics(load_jobs(write_jobs(tmp_path / "out_jobs.csv",
                                             [job_row("a", 0, 10, 5, "0")])))
    with pytest.raises(InputError, match="allocated_resources, job 'a'"):
        compute_metrics(load_jobs(write_jobs(tmp_path / "out_jobs.csv",
                                             [job_row("a", 0, 1, 5, "0;1")])))
    with pytest.raises(InputError, match="empty allocation"):
        compute_metrics(load_jobs(write_jobs(tmp_path / "out_jobs.csv",
                                             [job_row("a", 0, 1, 5, "")])))
    with pytest.raises(InputError, match="tau"):
        compute_metrics(load_jobs(write_jobs(tmp_path / "out_jobs.csv",
                                             [job_row("a", 0, 1, 5, "0")])), tau=0)
    with pytest.raises(InputError, match="nb_resources"):
        compute_metrics(load_jobs(tmp_path / "out_jobs.csv"), nb_resources=0)


def test_compute_metrics_names_missing_column():
    with pytest.raises(InputError, match="missing column.*allocated_resources"):
        compute_metrics(pd.DataFrame({"job_id": ["a"], "submission_time": [0.0],
                                      "final_state": ["REJECTED"]}))


# ---------------------------------------------------------------------------
# write_metrics / format_table
# ---------------------------------------------------------------------------

def test_write_metrics_is_sorted_rounded_and_deterministic(five_dir):
    m = write_metrics(five_dir)
    text = (five_dir / "metrics.json").read_text()
    assert json.loads(text) == m
    assert text.endswith("\n")
    keys = list(json.loads(text).keys())
    assert keys == sorted(keys)
    # 2610 / 6000 = 0.435 exactly; 980/600 = 1.6333... rounded to 6 decimals
    assert m["utilization"] == 0.435
    assert m["bounded_slowdown"]["max"] == 1.633333
    first = (five_dir / "metrics.json").read_bytes()
    write_metrics(five_dir)
    assert (five_dir / "metrics.json").read_bytes() == first


def test_write_metrics_missing_prefix_names_the_file(five_dir):
    with pytest.raises(InputError, match=r"exp_jobs\.csv: no such file \(found: out_jobs\.csv\)"):
        write_metrics(five_dir, prefix="exp")


def test_format_table(five_dir):
    table = format_table(compute_metrics(load_jobs(five_dir)))
    lines = table.splitlines()
    assert lines[0].split() == ["metric", "mean", "median", "p95", "max"]
    row = {ln.split()[0]: ln.split() for ln in lines[1:5]}
    # waiting times up to 380 s: shown in minutes (140 s = 2.333 min)
    assert row["waiting"][:3] == ["waiting", "time", "(min)"]
    assert row["waiting"][-4:] == ["2.333", "1.500", "5.608", "6.333"]
    assert row["slowdown"][-1] == "10.000"
    assert "tau=600 s" in table
    assert "utilization" in table and "0.4350" in table
    assert any(ln.split() == ["makespan", "16.67", "min"] for ln in lines)
    for state, n in (("COMPLETED_SUCCESSFULLY", 3), ("COMPLETED_WALLTIME_REACHED", 1),
                     ("REJECTED", 1)):
        assert any(ln.split() == [state, str(n)] for ln in lines)


# ---------------------------------------------------------------------------
# Golden outputs of the real Batsim 4.2.1
# ---------------------------------------------------------------------------

@needs_golden
@pytest.mark.parametrize("run", STATIC_GOLDEN_DIRS, ids=lambda p: p.name)
def test_golden_jobs_load_and_are_consistent(run):
    jobs = load_jobs(run)
    with (run / "out_jobs.csv").open() as fh:
        nb_rows = sum(1 for _ in fh) - 1
    m = compute_metrics(jobs)
    assert m["nb_jobs"] == nb_rows
    assert sum(m["final_states"].values()) == nb_rows
    started = jobs[jobs["final_state"] != "REJECTED"]
    # Batsim prints each time with 6 decimals (error <= 5e-7 each): a
    # difference of two printed values vs. the printed difference differ by
    # at most 3 * 5e-7.
    tol = 1.5e-6 + 1e-12 * started["finish_time"].abs().max()
    assert ((started["waiting_time"] - (started["starting_time"] - started["submission_time"]))
            .abs() <= tol).all()
    assert ((started["turnaround_time"] - (started["finish_time"] - started["submission_time"]))
            .abs() <= tol).all()
    assert ((started["execution_time"] - (started["finish_time"] - started["starting_time"]))
            .abs() <= tol).all()
    assert 0 < m["utilization"] <= 1 + 1e-9
    assert m["waiting_time"]["max"] == pytest.approx(started["waiting_time"].max(), abs=tol)


@needs_golden
@pytest.mark.parametrize("run", DYNAMIC_GOLDEN_DIRS, ids=lambda p: p.name)
def test_golden_dynamic_runs_merge_into_the_workload_jobs(run):
    """The rows of a run with dynamic jobs merge into exactly the workload's
    jobs, each with one final state, and Batsim's row count is the raw one."""
    case = json.loads((run / "case.json").read_text())
    wl = json.loads((SHARED / "golden" / case["workloads"][0]).read_text())
    m = compute_metrics(load_jobs(run))
    assert m["nb_jobs"] == len(wl["jobs"])
    assert sum(m["final_states"].values()) == len(wl["jobs"])
    sched = pd.read_csv(run / "out_schedule.csv").iloc[0]
    assert len(load_jobs(run, merge=False)) == sched["nb_jobs"] > len(wl["jobs"])


@needs_golden
@pytest.mark.parametrize("run", STATIC_GOLDEN_DIRS, ids=lambda p: p.name)
def test_golden_metrics_agree_with_batsim_schedule_csv(run):
    """Batsim's own aggregates (``out_schedule.csv``) are computed from
    unrounded times; ours from the 6-decimal jobs.csv."""
    jobs = load_jobs(run)
    m = compute_metrics(jobs)
    sched = pd.read_csv(run / "out_schedule.csv").iloc[0]
    assert m["nb_jobs"] == sched["nb_jobs"]
    assert m["nb_jobs_rejected"] == sched["nb_jobs_rejected"]
    assert m["final_states"].get("COMPLETED_SUCCESSFULLY", 0) == sched["nb_jobs_success"]
    tol = 2e-6  # two printed values per job time (1e-6) + one printed aggregate (5e-7)
    # Batsim divides its means by nb_jobs; with no rejected job that is ours.
    if m["nb_jobs_rejected"] == 0:
        assert m["waiting_time"]["mean"] == pytest.approx(sched["mean_waiting_time"], abs=tol)
        assert m["turnaround"]["mean"] == pytest.approx(sched["mean_turnaround_time"], abs=tol)
    assert m["waiting_time"]["max"] == pytest.approx(sched["max_waiting_time"], abs=tol)
    assert m["turnaround"]["max"] == pytest.approx(sched["max_turnaround_time"], abs=tol)
    # Batsim's makespan is the last completion time measured from t = 0.
    first = jobs["submission_time"].min()
    assert m["makespan"] + first == pytest.approx(sched["makespan"], abs=tol)
    # busy node-seconds = Batsim's time spent computing over all machines;
    # each job's D carries <= 1e-6 of rounding, times its resource count.
    started = jobs[jobs["final_state"] != "REJECTED"]
    nodes = sum(allocation_size(a) for a in started["allocated_resources"])
    assert m["busy_node_seconds"] == pytest.approx(sched["time_computing"], abs=1e-6 * nodes + 5e-7)
    # slowdown F/D: the rounding error of F and D (1e-6 each) is amplified by
    # 1/D + F/D^2, large for the jobs that ran for a few milliseconds.
    ok = started["finish_time"] > started["starting_time"]
    d = (started["finish_time"] - started["starting_time"])[ok]
    f = (started["finish_time"] - started["submission_time"])[ok]
    bound = float((1e-6 * (1 / d + f / d**2)).max()) + 5e-7
    assert m["slowdown"]["max"] == pytest.approx(sched["max_slowdown"], abs=bound)
    assert m["slowdown"]["mean"] == pytest.approx(sched["mean_slowdown"], abs=bound)


# ---------------------------------------------------------------------------
# The `iosched metrics` command
# ---------------------------------------------------------------------------

def run_cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "iosched.cli", "metrics", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_good_directory(five_dir):
    r = run_cli(five_dir, "--tau", "50")
    assert r.returncode == 0, r.stderr
    written = json.loads((five_dir / "metrics.json").read_text())
    assert written["tau"] == 50.0
    assert written["bounded_slowdown"]["max"] == 2.0  # job E: 100 / max(10, 50)
    assert r.stdout.splitlines()[0].split() == ["metric", "mean", "median", "p95", "max"]
    assert "REJECTED" in r.stdout
    assert r.stderr == ""


def test_cli_nb_resources_and_plots(five_dir):
    r = run_cli(five_dir, "--nb-resources", "10", "--plots")
    assert r.returncode == 0, r.stderr
    assert json.loads((five_dir / "metrics.json").read_text())["utilization"] == 0.261
    for name in ("utilization.png", "gantt.png"):
        assert (five_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("case", ["missing_dir", "missing_column", "bad_nb_resources"])
def test_cli_errors_are_one_line_without_traceback(tmp_path, case):
    args = [tmp_path]
    if case == "missing_dir":
        args = [tmp_path / "does-not-exist"]
    elif case == "missing_column":
        write_jobs(tmp_path / "out_jobs.csv", FIVE, [c for c in JOBS_COLUMNS if c != "final_state"])
    else:
        write_jobs(tmp_path / "out_jobs.csv", FIVE)
        args += ["--nb-resources", "-3"]
    r = run_cli(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    expected = {"missing_dir": "does-not-exist", "missing_column": "final_state",
                "bad_nb_resources": "nb_resources"}[case]
    assert expected in lines[0]
    assert not (tmp_path / "metrics.json").exists()


def test_job_metrics_one_derivation_for_floats_and_arrays():
    """The engine (floats, one job) and the analysis (arrays) share one derivation."""
    import numpy as np

    from iosched.batsim import job_metrics as jm

    s, b, c = 10.0, 40.0, 100.0
    assert (jm.waiting_time(s, b), jm.turnaround(s, c), jm.runtime(b, c)) == (30.0, 90.0, 60.0)
    assert jm.slowdown(90.0, 60.0) == 1.5
    assert math.isnan(jm.slowdown(90.0, 0.0))
    assert jm.slowdown(90.0, 0.0, undefined=0.0) == 0.0
    assert jm.slowdown(90.0, 0.0, undefined=None) is None
    assert jm.bounded_slowdown(90.0, 60.0) == 1.0  # 90 / 600 < 1
    assert jm.bounded_slowdown(1200.0, 60.0) == 2.0
    assert jm.bounded_slowdown(1200.0, 60.0, tau=100.0) == 12.0
    f = np.array([90.0, 90.0, 1200.0])
    d = np.array([60.0, 0.0, 60.0])
    got = jm.slowdown(f, d)
    assert got[0] == 1.5 and math.isnan(got[1]) and got[2] == 20.0
    assert jm.bounded_slowdown(f, d).tolist() == [1.0, 1.0, 2.0]
    # the engine's _jobs.csv stretch equals the analysis' slowdown
    assert [jm.slowdown(float(x), float(y), undefined=0.0) for x, y in zip(f, d)] == \
        np.nan_to_num(got, nan=0.0).tolist()


def test_paper_stretches_are_named_after_their_papers():
    """Locality (RR-9497 Section 3): flow / (duration + size / bandwidth);
    listpack (IJHPCA 2023, equation 1): execution time / T_i(B)."""
    from types import SimpleNamespace

    from iosched.listpack.metrics import jeannot_stretch
    from iosched.locality.metrics import BOUNDED_STRETCH_MIN_S, gonthier_stretch

    j = SimpleNamespace(subtime=100.0, end=400.0, delay=50.0, size=10.0)
    # reference flow 50 + 10 GB / 0.1 GB/s = 150 s; flow 300 s
    assert gonthier_stretch(j, bandwidth=0.1) == 2.0
    assert gonthier_stretch(j, bandwidth=0.1, minimum=BOUNDED_STRETCH_MIN_S) == 1.0
    assert jeannot_stretch(start=20.0, end=80.0, alone=30.0) == 2.0
