"""Tests of iosched.workloads.convert (SWF -> Batsim workload) and its CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.errors import InputError
from iosched.workloads import cli as wcli
from iosched.workloads import default_swf
from iosched.workloads.convert import (
    DROP_REASONS,
    ConversionReport,
    swf_to_batsim,
)
from iosched.workloads.swf import read_swf
from iosched.workloads.writer import dump_workload

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
KTH = SHARED / "data" / "KTH-SP2-1996-2.1-cln.swf"
GOLDEN = SHARED / "golden" / "inputs" / "kth1000_delay.json"
needs_kth = pytest.mark.skipif(not KTH.is_file(), reason=f"shared data not available: {KTH}")
needs_golden = pytest.mark.skipif(
    not (KTH.is_file() and GOLDEN.is_file()), reason=f"shared golden data not available: {GOLDEN}"
)


def swf_line(number, submit, run, req, alloc=None, walltime=3600, user=1, group=2, queue=-1):
    """One SWF line; fields not given are -1 (missing)."""
    alloc = req if alloc is None else alloc
    fields = [number, submit, 0, run, alloc, -1, -1, req, walltime, -1, 1, user, group, -1, queue, -1, -1, -1]
    return " ".join(str(f) for f in fields)


def write_swf(tmp_path, lines, header="; MaxProcs: 16\n", name="w.swf"):
    path = tmp_path / name
    path.write_text(header + "\n".join(lines) + "\n")
    return path


def run_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "iosched.cli", "workload", "swf", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=300,
    )


def assert_one_line_error(proc, *parts):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])


# ------------------------------------------------------------------ golden


@needs_golden
def test_first_1000_kth_jobs_reproduce_the_golden_workload():
    golden = json.loads(GOLDEN.read_text())
    workload, report = swf_to_batsim(KTH, first=1000, nb_res=100)
    assert workload["nb_res"] == golden["nb_res"]
    assert len(workload["jobs"]) == len(golden["jobs"]) == 1000
    for ours, theirs in zip(workload["jobs"], golden["jobs"]):
        # Every field of the golden job, same value and same JSON type.
        for key, value in theirs.items():
            assert ours[key] == value, (theirs["id"], key, ours[key], value)
            assert type(ours[key]) is type(value), (theirs["id"], key)
    assert workload["profiles"] == golden["profiles"]
    assert report.kept == 1000 and report.total_dropped == 0
    # Extra fields forwarded to the scheduler.
    for job in workload["jobs"]:
        assert job["swf_id"] == job["id"]
        assert {"user_id", "group_id"} <= set(job)
        assert "queue" not in job  # KTH has no queue numbers (-1)


@needs_golden
def test_golden_conventions_against_the_swf_itself():
    """subtime = submit - first submit; walltime = max(requested, run)."""
    jobs, _ = read_swf(KTH)
    first = jobs.iloc[:1000].set_index("job_number")
    golden = json.loads(GOLDEN.read_text())
    t0 = float(first["submit_time"].iloc[0])
    for job in golden["jobs"]:
        rec = first.loc[job["id"]]
        assert job["subtime"] == rec["submit_time"] - t0
        assert job["walltime"] == max(rec["requested_time"], rec["run_time"])
        assert golden["profiles"][job["profile"]]["delay"] == rec["run_time"]
    workload, report = swf_to_batsim(KTH, first=1000, nb_res=100)
    raised = int((first["run_time"] > first["requested_time"]).sum())
    assert raised > 0 and report.walltime_raised == raised


@needs_kth
def test_full_kth_trace_on_100_nodes():
    jobs, header = read_swf(KTH)
    workload, report = swf_to_batsim(KTH)  # nb_res from the header (MaxProcs)
    assert report.nb_res == workload["nb_res"] == int(header["MaxProcs"]) == 100
    assert report.selected == len(jobs) == 28476
    assert report.kept == len(workload["jobs"]) == 28467
    # Independent count of the unusable records.
    no_run = jobs[~(jobs["run_time"] > 0)]
    res = jobs["requested_processors"].where(jobs["requested_processors"] > 0, jobs["allocated_processors"])
    no_res = jobs[(jobs["run_time"] > 0) & ~(res.fillna(0) > 0)]
    assert report.dropped == {"no_run_time": len(no_run), "no_resources": len(no_res), "too_many_resources": 0}
    assert report.dropped_ids["no_run_time"] == tuple(int(n) for n in no_run["job_number"])
    assert report.summary() == f"dropped 9 jobs: {len(no_run)} have no run time, {len(no_res)} request no resources"
    assert all(1 <= j["res"] <= 100 for j in workload["jobs"])


@needs_kth
def test_kth_on_a_smaller_platform_reports_oversized_jobs():
    jobs, _ = read_swf(KTH)
    workload, report = swf_to_batsim(KTH, nb_res=32)
    res = jobs["requested_processors"].where(jobs["requested_processors"] > 0, jobs["allocated_processors"])
    too_big = int(((jobs["run_time"] > 0) & (res > 32)).sum())
    assert report.dropped["too_many_resources"] == too_big > 0
    assert report.kept + report.total_dropped == report.selected
    assert max(j["res"] for j in workload["jobs"]) <= 32


# ---------------------------------------------------------- small traces


def test_mapping_of_one_job(tmp_path):
    path = write_swf(tmp_path, [swf_line(3, 100, 50, 4, walltime=60, user=9, group=8, queue=2)])
    workload, _ = swf_to_batsim(path, nb_res=8)
    assert workload == {
        "nb_res": 8,
        "jobs": [
            {"id": 3, "subtime": 0.0, "res": 4, "walltime": 60.0, "profile": "delay_50",
             "swf_id": 3, "user_id": 9, "group_id": 8, "queue": 2}
        ],
        "profiles": {"delay_50": {"type": "delay", "delay": 50.0}},
    }


def test_requested_processors_fall_back_to_allocated(tmp_path):
    path = write_swf(tmp_path, [swf_line(1, 0, 10, -1, alloc=3), swf_line(2, 1, 10, 0, alloc=5), swf_line(3, 2, 10, 6, alloc=2)])
    workload, _ = swf_to_batsim(path, nb_res=16)
    assert [j["res"] for j in workload["jobs"]] == [3, 5, 6]


def test_drops_are_counted_per_reason_with_precedence(tmp_path):
    lines = [
        swf_line(1, 10, 0, 4),  # run time 0
        swf_line(2, 11, -1, 4),  # run time missing
        swf_line(3, 12, 0, 200),  # run time 0 AND too big: counted once, as no_run_time
        swf_line(4, 13, 5, -1, alloc=-1),  # no processors
        swf_line(5, 14, 5, 17),  # too big for 16
        swf_line(6, 15, 5, 16),  # fits exactly
    ]
    workload, report = swf_to_batsim(write_swf(tmp_path, lines), nb_res=16)
    assert [j["id"] for j in workload["jobs"]] == [6]
    assert report.dropped == {"no_run_time": 3, "no_resources": 1, "too_many_resources": 1}
    assert report.dropped_ids == {"no_run_time": (1, 2, 3), "no_resources": (4,), "too_many_resources": (5,)}
    assert report.total_dropped == 5 and report.selected == 6 and report.kept == 1
    # subtime counts from the first *kept* job
    assert workload["jobs"][0]["subtime"] == 0.0
    assert report.first_submit_time == 15.0


def test_summary_wording_from_the_spec(tmp_path):
    lines = [swf_line(i, i, 10, 101) for i in range(1, 11)] + [swf_line(11, 20, 0, 1), swf_line(12, 21, -1, 1)]
    lines.append(swf_line(13, 22, 10, 1))
    _, report = swf_to_batsim(write_swf(tmp_path, lines), nb_res=100)
    assert report.summary() == "dropped 12 jobs: 10 request more than 100 resources, 2 have no run time"
    empty = ConversionReport(source="x", nb_res=4, selected=0, kept=0,
                             dropped={r: 0 for r in DROP_REASONS}, dropped_ids={r: () for r in DROP_REASONS})
    assert empty.summary() == "dropped 0 jobs"


def test_jobs_are_sorted_by_submit_time_then_number(tmp_path):
    lines = [swf_line(5, 30, 1, 1), swf_line(2, 10, 1, 1), swf_line(9, 10, 1, 1), swf_line(1, 20, 1, 1)]
    workload, _ = swf_to_batsim(write_swf(tmp_path, lines), nb_res=4)
    assert [j["id"] for j in workload["jobs"]] == [2, 9, 1, 5]
    assert [j["subtime"] for j in workload["jobs"]] == [0.0, 0.0, 10.0, 20.0]


def test_profiles_are_shared_by_equal_run_times(tmp_path):
    lines = [swf_line(1, 0, 7, 1), swf_line(2, 1, 7, 2), swf_line(3, 2, 7.5, 1)]
    workload, _ = swf_to_batsim(write_swf(tmp_path, lines), nb_res=4)
    assert [j["profile"] for j in workload["jobs"]] == ["delay_7", "delay_7", "delay_7.5"]
    assert workload["profiles"] == {"delay_7": {"type": "delay", "delay": 7.0},
                                    "delay_7.5": {"type": "delay", "delay": 7.5}}


def test_parallel_homogeneous_profiles(tmp_path):
    lines = [swf_line(1, 0, 30, 2), swf_line(2, 5, 30, 1), swf_line(3, 6, 2, 1)]
    speed = 2.5e9
    workload, _ = swf_to_batsim(write_swf(tmp_path, lines), nb_res=4, profile_type="parallel_homogeneous", speed=speed)
    assert [j["profile"] for j in workload["jobs"]] == ["parallel_homogeneous_30"] * 2 + ["parallel_homogeneous_2"]
    for name, run in (("parallel_homogeneous_30", 30), ("parallel_homogeneous_2", 2)):
        prof = workload["profiles"][name]
        assert prof["type"] == "parallel_homogeneous"
        assert prof["cpu"] / speed == run  # lasts `run` seconds on hosts of `speed`
        assert prof["com"] == 0


def test_first_and_time_window(tmp_path):
    lines = [swf_line(i, 100 * i, 10, 1) for i in range(1, 11)]
    path = write_swf(tmp_path, lines)
    workload, report = swf_to_batsim(path, nb_res=4, first=3)
    assert [j["id"] for j in workload["jobs"]] == [1, 2, 3] and report.selected == 3
    workload, report = swf_to_batsim(path, nb_res=4, start=300, end=700)
    assert [j["id"] for j in workload["jobs"]] == [3, 4, 5, 6]
    assert [j["subtime"] for j in workload["jobs"]] == [0.0, 100.0, 200.0, 300.0]
    workload, _ = swf_to_batsim(path, nb_res=4, start=300, first=2)
    assert [j["id"] for j in workload["jobs"]] == [3, 4]
    workload, report = swf_to_batsim(path, nb_res=4, start=5000)
    assert workload["jobs"] == [] and report.first_submit_time is None


def test_first_counts_records_not_kept_jobs(tmp_path):
    lines = [swf_line(1, 0, 0, 1), swf_line(2, 1, 5, 1), swf_line(3, 2, 5, 1)]
    workload, report = swf_to_batsim(write_swf(tmp_path, lines), nb_res=4, first=2)
    assert [j["id"] for j in workload["jobs"]] == [2]
    assert report.dropped["no_run_time"] == 1


def test_walltime_rules(tmp_path):
    lines = [swf_line(1, 0, 100, 1, walltime=60), swf_line(2, 1, 100, 1, walltime=-1), swf_line(3, 2, 10, 1, walltime=60)]
    workload, report = swf_to_batsim(write_swf(tmp_path, lines), nb_res=4)
    jobs = {j["id"]: j for j in workload["jobs"]}
    assert jobs[1]["walltime"] == 100.0  # raised to the run time
    assert "walltime" not in jobs[2]  # no limit
    assert jobs[3]["walltime"] == 60.0
    assert report.walltime_raised == 1 and report.without_walltime == 1


def test_missing_user_group_queue_are_omitted(tmp_path):
    workload, _ = swf_to_batsim(write_swf(tmp_path, [swf_line(1, 0, 5, 1, user=-1, group=-1, queue=-1)]), nb_res=2)
    assert not {"user_id", "group_id", "queue"} & set(workload["jobs"][0])


def test_nb_res_defaults_to_header(tmp_path):
    path = write_swf(tmp_path, [swf_line(1, 0, 5, 1)], header="; MaxNodes: 12\n; MaxProcs: 48\n")
    assert swf_to_batsim(path)[0]["nb_res"] == 48
    path = write_swf(tmp_path, [swf_line(1, 0, 5, 1)], header="; MaxNodes: 12\n", name="n.swf")
    assert swf_to_batsim(path)[0]["nb_res"] == 12


def test_accepts_an_already_read_log(tmp_path):
    path = write_swf(tmp_path, [swf_line(1, 0, 5, 1), swf_line(2, 3, 6, 2)])
    assert swf_to_batsim(read_swf(path), nb_res=4)[0] == swf_to_batsim(path, nb_res=4)[0]


# -------------------------------------------------------------- bad input


def test_no_nb_res_and_no_header(tmp_path):
    path = write_swf(tmp_path, [swf_line(1, 0, 5, 1)], header="")
    with pytest.raises(InputError) as exc:
        swf_to_batsim(path)
    assert str(path) in str(exc.value) and "MaxProcs" in str(exc.value)


def test_bad_header_value(tmp_path):
    path = write_swf(tmp_path, [swf_line(1, 0, 5, 1)], header="; MaxProcs: many\n")
    with pytest.raises(InputError) as exc:
        swf_to_batsim(path)
    assert "MaxProcs" in str(exc.value) and "\n" not in str(exc.value)


def test_duplicate_job_numbers_name_both_lines(tmp_path):
    path = write_swf(tmp_path, [swf_line(4, 0, 5, 1), swf_line(4, 3, 5, 1)])
    with pytest.raises(InputError) as exc:
        swf_to_batsim(path, nb_res=4)
    message = str(exc.value)
    assert f"{path}:3" in message and "line 2" in message and "job_number" in message


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"nb_res": 0}, "nb_res"),
        ({"nb_res": 2.5}, "nb_res"),
        ({"first": 0}, "first"),
        ({"profile_type": "smpi"}, "profile type"),
        ({"speed": 0}, "speed"),
        ({"speed": float("nan")}, "speed"),
        ({"start": 10, "end": 5}, "start"),
        ({"end": float("inf")}, "end"),
    ],
)
def test_bad_options(tmp_path, kwargs, word):
    path = write_swf(tmp_path, [swf_line(1, 0, 5, 1)])
    kwargs.setdefault("nb_res", 4)
    with pytest.raises(InputError) as exc:
        swf_to_batsim(path, **kwargs)
    assert word in str(exc.value) and "\n" not in str(exc.value)


def test_malformed_swf_propagates_with_line(tmp_path):
    path = write_swf(tmp_path, [swf_line(1, 0, 5, 1), "2 0 0 abc 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1"])
    with pytest.raises(InputError) as exc:
        swf_to_batsim(path, nb_res=4)
    assert f"{path}:3" in str(exc.value) and "run_time" in str(exc.value)


# ------------------------------------------------------- properties/JSON

_job = st.tuples(
    st.integers(0, 10_000),  # submit
    st.one_of(st.just(-1), st.integers(0, 5000)),  # run time
    st.one_of(st.just(-1), st.integers(0, 40)),  # requested processors
    st.one_of(st.just(-1), st.integers(0, 40)),  # allocated processors
    st.one_of(st.just(-1), st.integers(1, 9000)),  # requested time
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=st.lists(_job, max_size=40), nb_res=st.integers(1, 32), first=st.one_of(st.none(), st.integers(1, 50)))
def test_conversion_invariants(tmp_path, jobs, nb_res, first):
    lines = [swf_line(i + 1, s, r, q, alloc=a, walltime=w) for i, (s, r, q, a, w) in enumerate(jobs)]
    path = write_swf(tmp_path, lines, name="p.swf")
    workload, report = swf_to_batsim(path, nb_res=nb_res, first=first)
    out = workload["jobs"]
    assert report.selected == (len(jobs) if first is None else min(first, len(jobs)))
    assert report.kept == len(out) == report.selected - report.total_dropped
    # The selected records are the first N by (submit time, job number).
    order = sorted(range(1, len(jobs) + 1), key=lambda n: (jobs[n - 1][0], n))
    selected = order if first is None else order[:first]
    ids = [j["id"] for j in out]
    dropped = sum(report.dropped_ids.values(), ())
    assert len(set(ids)) == len(ids) and len(set(dropped)) == len(dropped)
    assert not set(ids) & set(dropped)
    assert set(ids) | set(dropped) == set(selected)
    assert ids == [n for n in selected if n in set(ids)]  # order kept
    subs = [j["subtime"] for j in out]
    assert subs == sorted(subs)
    if out:
        assert subs[0] == 0.0
    for job in out:
        submit, run, req, alloc, wall = jobs[job["id"] - 1]
        assert 1 <= job["res"] <= nb_res
        assert job["res"] == (req if req > 0 else alloc)
        assert workload["profiles"][job["profile"]]["delay"] == run > 0
        if wall > 0:
            assert job["walltime"] == max(wall, run)
        else:
            assert "walltime" not in job
    assert set(workload["profiles"]) == {j["profile"] for j in out}
    text = dump_workload(workload)
    assert json.loads(text) == workload
    assert dump_workload(swf_to_batsim(path, nb_res=nb_res, first=first)[0]) == text


def test_dump_is_deterministic_and_sorted(tmp_path):
    workload = {"profiles": {"b": {"type": "delay", "delay": 1.0}, "a": {"delay": 2.0, "type": "delay"}},
                "nb_res": 2, "jobs": [{"res": 1, "id": 2, "profile": "b", "subtime": 0.0},
                                      {"id": 1, "profile": "a", "res": 1, "subtime": 1.0}]}
    text = dump_workload(workload)
    assert json.loads(text) == workload
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert [k for k in json.loads(text)] == ["jobs", "nb_res", "profiles"]
    assert text.index('"a": {') < text.index('"b": {')  # profiles by name
    assert text.index('"id": 2') < text.index('"id": 1')  # job order kept
    assert lines[2] == '    {"id": 2, "profile": "b", "res": 1, "subtime": 0.0},'
    reordered = {"nb_res": 2, "jobs": workload["jobs"], "profiles": dict(reversed(workload["profiles"].items()))}
    assert dump_workload(reordered) == text


# -------------------------------------------------------------------- CLI


def test_cli_converts_and_reports(tmp_path):
    lines = [swf_line(1, 0, 5, 1), swf_line(2, 1, 0, 1), swf_line(3, 2, 5, 9)]
    swf = write_swf(tmp_path, lines)
    out = tmp_path / "o.json"
    proc = run_cli(swf, out, "--nb-res", 4)
    assert proc.returncode == 0, proc.stderr
    assert "dropped 2 jobs: 1 have no run time, 1 request more than 4 resources" in proc.stdout
    assert json.loads(out.read_text()) == swf_to_batsim(swf, nb_res=4)[0]
    first = out.read_bytes()
    assert run_cli(swf, out, "--nb-res", 4).returncode == 0
    assert out.read_bytes() == first  # byte-identical


def test_cli_profile_type_and_speed(tmp_path):
    swf = write_swf(tmp_path, [swf_line(1, 0, 5, 1)])
    out = tmp_path / "o.json"
    proc = run_cli(swf, out, "--profile-type", "parallel_homogeneous", "--speed", "2e9")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["profiles"] == {
        "parallel_homogeneous_5": {"type": "parallel_homogeneous", "cpu": 1e10, "com": 0.0}}


@pytest.mark.parametrize(
    "content, extra, parts",
    [
        ("1 0 0 5 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1\n", [], ["w.swf:2", "18 fields"]),
        ("1 0 0 five 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", [], ["w.swf:2", "run_time"]),
        ("1 0 0 5 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", ["--nb-res", "0"], ["nb_res"]),
        ("1 0 0 5 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", ["--first", "x"], ["--first"]),
        ("1 0 0 5 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n", ["--profile-type", "smpi"], ["--profile-type"]),
    ],
)
def test_cli_bad_input_is_one_line_on_stderr(tmp_path, content, extra, parts):
    swf = tmp_path / "w.swf"
    swf.write_text("; MaxProcs: 4\n" + content)
    out = tmp_path / "o.json"
    proc = run_cli(swf, out, *extra)
    assert_one_line_error(proc, *parts)
    assert not out.exists()


def test_cli_missing_swf_and_unwritable_output(tmp_path):
    assert_one_line_error(run_cli(tmp_path / "none.swf", tmp_path / "o.json"), "none.swf", "cannot read")
    swf = write_swf(tmp_path, [swf_line(1, 0, 5, 1)])
    assert_one_line_error(run_cli(swf, tmp_path / "no" / "dir" / "o.json"), "cannot write")
    assert_one_line_error(run_cli(swf, tmp_path / "a.json", tmp_path / "b.json"), "3 arguments")


@needs_kth
def test_cli_default_swf_is_the_shared_kth_trace(tmp_path):
    assert default_swf.default_swf_candidates()[0] == KTH.resolve()
    out = tmp_path / "kth.json"
    proc = run_cli(out, "--first", "50", cwd=tmp_path)  # cwd elsewhere: found from the package
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == swf_to_batsim(KTH, first=50)[0]
    assert str(KTH) in proc.stdout


def test_cli_missing_default_swf_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(default_swf, "default_swf_candidates", lambda: [tmp_path / "absent.swf"])
    result = CliRunner().invoke(wcli.swf_command, [str(tmp_path / "o.json")])
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit)
    message = result.output.strip().splitlines()
    assert len(message) == 1 and "absent.swf" in message[0] and "pass the SWF path" in message[0]
