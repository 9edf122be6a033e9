"""Tests of iosched.analysis.campaign and the campaign figures of
iosched.analysis.plots: ratios, the tidy table, figures (no simulation here:
campaign folders are written by hand)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iosched.analysis.campaign import (
    METRIC_COLUMNS,
    PARAM_COLUMNS,
    add_ratios,
    campaign_table,
    job_table,
    write_table,
)
from iosched.analysis.plots import plot_ecdf, plot_ratio_boxes, plot_tail
from iosched.errors import InputError

HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
          "requested_time,success,final_state,starting_time,execution_time,finish_time,"
          "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata")


def _metrics(wait_mean: float, makespan: float) -> dict:
    stats = {"mean": wait_mean, "median": wait_mean, "p95": wait_mean, "max": wait_mean}
    return {"waiting_time": stats, "turnaround": stats, "slowdown": stats,
            "bounded_slowdown": stats, "makespan": makespan, "utilization": 0.5,
            "busy_node_seconds": 100.0, "nb_resources": 4, "nb_jobs": 2, "nb_jobs_started": 2,
            "nb_jobs_rejected": 0, "slowdown_nb_undefined": 0}


def make_campaign(tmp_path: Path) -> Path:
    """A fake campaign: 2 workloads x {fcfs, easy} x seed 1; one failed, one pending."""
    runs = []
    spec = [("a", "fcfs", "done", 10.0, 100.0), ("a", "easy", "done", 5.0, 80.0),
            ("b", "fcfs", "done", 0.0, 50.0), ("b", "easy", "failed", None, None),
            ("c", "fcfs", "failed", None, None), ("c", "easy", "pending", None, None)]
    for wl, sched, status, wait, mk in spec:
        rid = f"{wl}-{sched}"
        d = tmp_path / "runs" / rid
        d.mkdir(parents=True)
        if status == "done":
            (d / "done.json").write_text(json.dumps({"metrics": _metrics(wait, mk)}))
            (d / "out_jobs.csv").write_text(
                HEADER + "\n"
                f"1,w0,p,0,1,100,1,COMPLETED_SUCCESSFULLY,{wait},10,{wait + 10},{wait},"
                f"{wait + 10},1,0,0,\n"
                f"2,w0,p,0,2,100,1,COMPLETED_SUCCESSFULLY,0,5,5,0,5,1,1-2,0,\n")
        elif status == "failed":
            (d / "failed.json").write_text(json.dumps({"reason": f"{sched} crashed"}))
        runs.append({"id": rid, "dir": f"runs/{rid}",
                     "params": {"platform": "c4", "workload": wl, "part": None, "scheduler": sched,
                                "options": {}, "seed": 1, "engine": "embedded", "nb_res": 4}})
    (tmp_path / "campaign.json").write_text(json.dumps({"name": "fake", "baseline": "fcfs",
                                                        "runs": runs}))
    return tmp_path


def test_campaign_table_rows_and_ratios(tmp_path):
    df = campaign_table(make_campaign(tmp_path))
    assert list(df.columns[: len(PARAM_COLUMNS)]) == list(PARAM_COLUMNS)
    assert all(c in df.columns for c in METRIC_COLUMNS)
    assert len(df) == 6
    st = dict(zip(df["run_id"], df["status"]))
    assert st == {"a-fcfs": "done", "a-easy": "done", "b-fcfs": "done", "b-easy": "failed",
                  "c-fcfs": "failed", "c-easy": "pending"}
    row = df.set_index("run_id")
    assert row.at["b-easy", "reason"] == "easy crashed"
    assert row.at["a-easy", "ratio_waiting_time_mean"] == pytest.approx(0.5)
    assert row.at["a-easy", "ratio_makespan"] == pytest.approx(0.8)
    assert row.at["a-fcfs", "ratio_makespan"] == 1.0
    # baseline value 0 -> undefined ratio; failed or missing baseline -> NaN
    assert math.isnan(row.at["b-fcfs", "ratio_waiting_time_mean"])
    assert row.at["b-fcfs", "ratio_makespan"] == 1.0
    assert math.isnan(row.at["c-easy", "ratio_makespan"])
    assert math.isnan(row.at["b-easy", "makespan"]) and math.isnan(row.at["b-easy", "ratio_makespan"])
    assert df["nb_jobs"].dtype == "Int64" and df["makespan"].dtype == "float64"


def test_add_ratios_unknown_baseline(tmp_path):
    df = campaign_table(make_campaign(tmp_path), baseline="easy")
    assert df.set_index("run_id").at["a-fcfs", "ratio_makespan"] == pytest.approx(100 / 80)
    with pytest.raises(InputError, match="baseline: 'sjf'"):
        add_ratios(df, "sjf")


def test_write_table_roundtrip_and_deterministic(tmp_path):
    df = campaign_table(make_campaign(tmp_path / "c"))
    pq, csv = write_table(df, tmp_path / "t1")
    back = pd.read_parquet(pq)
    pd.testing.assert_frame_equal(back, df)
    assert len(pd.read_csv(csv)) == 6
    pq2, csv2 = write_table(df, tmp_path / "t2")
    assert pq.read_bytes() == pq2.read_bytes() and csv.read_bytes() == csv2.read_bytes()


def test_missing_manifest_is_one_line_error(tmp_path):
    with pytest.raises(InputError, match="campaign.json"):
        campaign_table(tmp_path)
    with pytest.raises(InputError, match="no such campaign folder"):
        campaign_table(tmp_path / "nope")


def test_job_table_and_figures(tmp_path):
    cdir = make_campaign(tmp_path / "c")
    df = campaign_table(cdir)
    jobs = job_table(cdir, df)
    assert len(jobs) == 6  # 3 finished runs x 2 jobs
    assert set(jobs["scheduler"]) == {"fcfs", "easy"}
    assert sorted(jobs.loc[jobs["run_id"] == "a-fcfs", "waiting_time"]) == [0.0, 10.0]
    outs = []
    for k in (1, 2):
        d = tmp_path / f"f{k}"
        outs.append([plot_ratio_boxes(df, d / "box.png", "fcfs"), plot_ecdf(jobs, d / "ecdf.png"),
                     plot_tail(jobs, d / "tail.png", top=5)])
    for a, b in zip(*outs):
        assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert a.read_bytes() == b.read_bytes()
    with pytest.raises(InputError):
        plot_ecdf(jobs, tmp_path / "x.png", metric="nope")
    with pytest.raises(InputError):
        plot_ratio_boxes(df.drop(columns=["ratio_utilization"]), tmp_path / "x.png", "fcfs")
