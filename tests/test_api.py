"""iosched.simulate: one simulation from Python, jobs table + run metrics."""

import math

import pytest

import iosched
from iosched.errors import InputError


def test_simulate_returns_jobs_with_metrics(shared, tmp_path):
    inputs = shared / "golden" / "inputs"
    jobs = iosched.simulate(inputs / "small_platform.xml", inputs / "test_delays.json", "easy",
                            output_dir=tmp_path / "out")
    assert (tmp_path / "out" / "out_jobs.csv").is_file()
    assert len(jobs) == len(set(jobs["job_id"])) > 0
    started = jobs[jobs["final_state"] != "REJECTED"]
    assert (started["waiting_time"] >= 0).all() and (started["bounded_slowdown"] >= 1).all()
    m = jobs.attrs["metrics"]
    assert 0 < m["utilization"] <= 1 and m["makespan"] >= started["finish_time"].max() - 1e-6
    assert math.isclose(m["waiting_time"]["max"], started["waiting_time"].max(), rel_tol=1e-6, abs_tol=1e-6)


def test_simulate_bad_scheduler_is_an_input_error(shared):
    inputs = shared / "golden" / "inputs"
    with pytest.raises(InputError, match="no-such"):
        iosched.simulate(inputs / "small_platform.xml", inputs / "test_delays.json", "no-such")
