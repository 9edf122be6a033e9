"""The list vs pack cap diagnostics (issue 30): I/O node busy time, bandwidth
while busy and the wait decomposition on a tiny hand-made phases table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from iosched.experiments.listpack.diagnostics import busy_time, io_node_use, waits, write_diagnostics
from iosched.listpack.model import PeriodicJob

B = 10.0   # bytes/s
# a: alone 10 s compute + 100 B at 10 B/s; b: capped at 5 B/s, so 20 s of I/O
JOBS = {"a": PeriodicJob(1, 1, 10.0, 100.0, x=0.5), "b": PeriodicJob(1, 1, 5.0, 100.0, x=0.8, cap=5.0)}
# b starts at 3 s, computes to 8 s and waits for the I/O node until a's phase ends at 20 s
PHASES = pd.DataFrame({"job": ["a", "a", "b", "b"], "kind": ["c", "o", "c", "o"], "k": [0, 0, 0, 0],
                       "start": [0.0, 10.0, 3.0, 20.0], "end": [10.0, 20.0, 8.0, 40.0]})


def test_busy_time_is_the_union_of_intervals():
    assert busy_time([0, 1, 6], [5, 2, 8]) == 7.0      # nested and disjoint
    assert busy_time([6, 0], [8, 6]) == 8.0            # touching, unsorted
    assert busy_time([], []) == 0.0


def test_io_node_use_busy_share_and_bandwidth_while_busy():
    use = io_node_use(PHASES, JOBS, B)
    assert use["busy_frac"] == pytest.approx(30 / 40)              # [10, 40] of 40 s
    assert use["bw_while_busy"] == pytest.approx(200 / 30 / B)     # 200 B in 30 s busy
    assert use["serial_over_makespan"] == pytest.approx((10 + 20) / 40)
    assert use["volume_over_B_makespan"] == pytest.approx(200 / (B * 40))


def test_waits_split_lost_time_into_io_excess_and_gaps():
    w = waits(PHASES, JOBS, B)
    assert w["qwait_h"] == pytest.approx(1.5 / 3600)
    assert w["qwait_max_h"] == pytest.approx(3 / 3600)
    assert w["io_excess_h"] == pytest.approx(0.0)                  # each I/O phase at its rate
    assert w["gap_h"] == pytest.approx(12 / 2 / 3600)              # b waits 8 -> 20
    assert w["lost_h"] == pytest.approx(12 / 2 / 3600)             # b: 37 s run vs T = 25 s
    assert w["qwait_hi_x_h"] == pytest.approx(3 / 3600)            # b has the higher x
    assert w["qwait_lo_x_h"] == pytest.approx(0.0)


def test_write_diagnostics_means_over_seeds_same_bytes(tmp_path):
    slow = PHASES.assign(start=PHASES["start"] * 2, end=PHASES["end"] * 2)
    data = {"r1": (PHASES, JOBS, {"bandwidth": B}), "r2": (slow, JOBS, {"bandwidth": B})}
    df = pd.DataFrame({"run": ["r1", "r2"], "family": "M-No", "alpha": 0.8, "scheduler": "io-list",
                       "io_model": "exclusive", "seed": [1, 2]})
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        write_diagnostics(df, data, tmp_path / d)
    for name in ("io_node.md", "io_node.csv", "waits.md", "waits.csv"):
        assert (tmp_path / "x" / name).read_bytes() == (tmp_path / "y" / name).read_bytes()
    io = pd.read_csv(tmp_path / "x" / "io_node.csv")
    assert len(io) == 1 and io["n"].iloc[0] == 2
    assert io["busy_frac"].iloc[0] == pytest.approx(0.75)          # scaling time keeps the share
    wt = pd.read_csv(tmp_path / "x" / "waits.csv")
    assert wt["gap_h"].iloc[0] == pytest.approx((6 + 12) / 2 / 3600)   # r2: b waits 16 -> 40
    assert not math.isnan(wt["qwait_lo_x_h"].iloc[0])
    assert "| 0.8 | io-list | exclusive | 2 | 0.750 |" in (tmp_path / "x" / "io_node.md").read_text()
