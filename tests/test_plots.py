"""Tests of iosched.analysis.plots (run figures): the step series behind the figures, PNG output,
determinism, and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iosched.errors import InputError
from iosched.analysis.jobs import load_jobs
from iosched.analysis.plots import plot_gantt, plot_utilization, queue_steps, usage_steps
from iosched.batsim.outputs import JOBS_COLUMNS

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPO = Path(__file__).resolve().parents[1]
SHARED = next((Path(c) for c in (REPO.parent / "shared", Path("/work/shared"))
               if (Path(c) / "golden" / "g2_hpc250_easy" / "out_jobs.csv").is_file()), None)
needs_golden = pytest.mark.skipif(SHARED is None, reason="shared/golden (real Batsim 4.2.1 "
                                                         "outputs) is not available on this machine")


def job_row(job_id, s, b=None, c=None, alloc="", state="COMPLETED_SUCCESSFULLY"):
    """A Batsim jobs.csv line (fields in JOBS_COLUMNS order); b/c None = rejected."""
    def f(x):
        return "" if x is None else f"{x:.6f}"
    rejected = b is None
    return [job_id, "w0", "p", f(s), "1", "10000.000000", str(int(state == "COMPLETED_SUCCESSFULLY")),
            state, f(b), "" if rejected else f(c - b), f(c),
            "" if rejected else f(b - s), "" if rejected else f(c - s), "",
            alloc, "" if rejected else "-1.000000", '""']


def write_jobs(path, rows):
    path.write_text(",".join(JOBS_COLUMNS) + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


# Resources 0..5:  A: s=0 b=0 c=100 on 0-1;  B: s=10 b=100 c=400 on 0-3;
# C: s=20 b=400 c=1000 on 2 and 5 (walltime reached);  E: s=0 b=90 c=100 on 4;
# R: s=30 rejected.
FIVE = [
    job_row("A", 0, 0, 100, "0-1"),
    job_row("B", 10, 100, 400, "0-3"),
    job_row("C", 20, 400, 1000, "2 5", state="COMPLETED_WALLTIME_REACHED"),
    job_row("E", 0, 90, 100, "4"),
    job_row("R", 30, state="REJECTED"),
]


@pytest.fixture
def jobs(tmp_path):
    return load_jobs(write_jobs(tmp_path / "out_jobs.csv", FIVE))


def value_at(t, v, when):
    """Value of a right-continuous step series at time ``when``."""
    i = np.searchsorted(t, when, side="right") - 1
    return 0 if i < 0 else v[i]


def test_usage_steps_follow_the_hand_made_schedule(jobs):
    t, n = usage_steps(jobs)
    # A (2 res) on [0,100), E (1) on
    # [90,100), B (4) on [100,400), C (2) on [400,1000); R rejected.
    expected = {0: 2, 50: 2, 90: 3, 99.9: 3, 100: 4, 399: 4, 400: 2, 999: 2, 1000: 0}
    for when, busy in expected.items():
        assert value_at(t, n, when) == busy, when
    assert list(t) == [0, 90, 100, 400, 1000]  # simultaneous ends/starts merged


def test_queue_steps_count_submitted_not_started_jobs(jobs):
    t, q = queue_steps(jobs)
    # waiting: A never (s=b=0), E on [0,90), B on [10,100), C on [20,400);
    # R is rejected and left out.
    expected = {0: 1, 10: 2, 20: 3, 89: 3, 90: 2, 100: 1, 399: 1, 400: 0}
    for when, waiting in expected.items():
        assert value_at(t, q, when) == waiting, when


def test_plot_utilization_writes_a_deterministic_png(jobs, tmp_path):
    a = plot_utilization(jobs, 6, tmp_path / "u1.png")
    b = plot_utilization(jobs, 6, tmp_path / "u2.png")
    data = Path(a).read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 1000
    assert Path(b).read_bytes() == data
    assert b"matplotlib" not in data  # no Software/version text chunk


def test_plot_gantt_writes_a_deterministic_png(jobs, tmp_path):
    a = plot_gantt(jobs, tmp_path / "g1.png")
    b = plot_gantt(jobs, tmp_path / "g2.png")
    data = Path(a).read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 1000
    assert Path(b).read_bytes() == data


def test_plot_gantt_max_jobs_changes_the_figure(jobs, tmp_path):
    full = Path(plot_gantt(jobs, tmp_path / "all.png")).read_bytes()
    two = Path(plot_gantt(jobs, tmp_path / "two.png", max_jobs=2)).read_bytes()
    assert two[:8] == PNG_SIGNATURE
    assert two != full


def test_plots_with_no_started_job(tmp_path):
    jobs = load_jobs(write_jobs(tmp_path / "out_jobs.csv", [job_row("r", 0, state="REJECTED")]))
    assert usage_steps(jobs)[0].size == 0
    assert Path(plot_gantt(jobs, tmp_path / "g.png")).read_bytes()[:8] == PNG_SIGNATURE
    assert Path(plot_utilization(jobs, 4, tmp_path / "u.png")).read_bytes()[:8] == PNG_SIGNATURE


def test_plot_bad_input(jobs, tmp_path):
    with pytest.raises(InputError, match="nb_resources"):
        plot_utilization(jobs, 0, tmp_path / "u.png")
    with pytest.raises(InputError, match="max_jobs"):
        plot_gantt(jobs, tmp_path / "g.png", max_jobs=-1)
    with pytest.raises(InputError, match="allocated_resources"):
        plot_gantt(jobs.drop(columns=["allocated_resources"]), tmp_path / "g.png")
    with pytest.raises(InputError, match="cannot write"):
        plot_gantt(jobs, tmp_path / "no-such-dir" / "g.png")


@needs_golden
def test_golden_gantt_and_utilization(tmp_path):
    jobs = load_jobs(SHARED / "golden" / "g2_hpc250_easy")
    t, n = usage_steps(jobs)
    assert n.min() >= 0 and n.max() <= 512 and n[-1] == 0
    assert Path(plot_gantt(jobs, tmp_path / "g.png", max_jobs=100)).stat().st_size > 1000
    assert Path(plot_utilization(jobs, 512, tmp_path / "u.png")).stat().st_size > 1000
