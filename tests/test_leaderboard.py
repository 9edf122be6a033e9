"""Tests of iosched.analysis.leaderboard (``iosched leaderboard``) on a tiny
real campaign: easy, conservative and sjf-bb, strict (option ``io_fallback``
false: a job outside the family's model is rejected), on the dragonfly (the
platform with burst-buffer nodes), two workloads (plain delay jobs; a mix of plain,
burst-buffer, periodic and input-reading jobs), two seeds, embedded engine,
in process. Every expected figure is computed here from the runs' own files
(done.json, out_jobs.csv, the workload), never written down.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from iosched.analysis.cli import leaderboard_command
from iosched.analysis.leaderboard import (PFS_BANDWIDTH, READ_BANDWIDTH, board_metrics_of,
                                          compare_leaderboards, leaderboard, render_blocks, run_table,
                                          t_interval, write_leaderboard)
from iosched.analysis.report import render_markdown
from iosched.analysis.units import bytes_unit
from iosched.campaign.execute import run_campaign
from iosched.campaign.schema import load_campaign
from iosched.errors import InputError

SCHEDULERS = ("easy", "conservative", "sjf-bb")
SEEDS = (1, 2)


def mixed_workload(seed, nb_jobs=16):
    """Jobs of four kinds in turn: plain, burst-buffer (easy and
    conservative reject them), periodic, one input and a delay (sjf-bb
    rejects all but the burst-buffer ones)."""
    r = random.Random(seed)
    jobs, profiles, t = [], {}, 0
    for i in range(nb_jobs):
        t += r.randint(1, 10)
        d = r.randint(20, 200)
        profiles[f"p{i}"] = {"type": "delay", "delay": d}
        job = {"id": i, "subtime": t, "res": r.randint(8, 64), "walltime": 3 * d, "profile": f"p{i}"}
        kind = i % 4
        if kind == 1:
            job["io"] = {"burst_buffer": {"bytes": 1e9}, "compute": {"flops": 1e11}}
        elif kind == 2:
            job["io"] = {"periodic": {"periods": 2, "compute": d / 2, "bytes": 5e9}}
        elif kind == 3:
            job["io"] = {"inputs": [{"file": str(i), "bytes": 2e9}], "compute": {"delay": d}}
        jobs.append(job)
    return {"nb_res": 96, "jobs": jobs, "profiles": profiles}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("board")
    spec = {
        "name": "board", "output": "out",
        "platforms": [{"dragonfly96": {}, "label": "df96"}],
        "workloads": [
            {"synthetic": {"nb_jobs": 10, "max_res": 64, "runtime": [10, 300], "interarrival": 5},
             "label": "plain"},
            {"python": "tests.test_leaderboard:mixed_workload", "label": "mixed"},
        ],
        # strict (io_fallback false): each family serves its own parts only,
        # so the mixed workload has jobs rejected for the board to count
        "schedulers": [{"name": s, "options": {"io_fallback": False}, "label": s} for s in SCHEDULERS],
        "seeds": list(SEEDS), "baseline": "easy",
        "engine_args": ["--enable-dynamic-jobs"], "in_process": True, "timeout": 60,
    }
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    camp = load_campaign(path)
    res = run_campaign(camp, workers=2, progress=False)
    assert not res.failed and res.nb_done == 12
    return Path(camp.output)


def _runs(cdir: Path) -> dict:
    """(workload, scheduler, seed) -> (run folder, workload file, metrics of done.json)."""
    manifest = json.loads((cdir / "campaign.json").read_text())
    out = {}
    for r in manifest["runs"]:
        p = r["params"]
        done = json.loads((cdir / r["dir"] / "done.json").read_text())
        out[(p["workload"], p["scheduler"], p["seed"])] = (cdir / r["dir"], cdir / r["workload"],
                                                          done["metrics"])
    return out


def _t975_df1(values):
    """Mean and 95 % half-width of two values: the t quantile with one degree
    of freedom is the Cauchy one, tan(0.475 pi)."""
    a, b = values
    sd = abs(a - b) / math.sqrt(2.0)
    return (a + b) / 2.0, math.tan(0.475 * math.pi) * sd / math.sqrt(2.0)


def test_rows_counts_intervals_and_paired_differences(campaign):
    board = leaderboard(run_table(campaign))
    assert len(board) == 2 * len(SCHEDULERS)
    assert set(zip(board["regime"], board["machine"], board["scheduler"])) == {
        (w, "df96", s) for w in ("plain", "mixed") for s in SCHEDULERS}
    assert (board["runs"] == 2).all() and (board["failed"] == 0).all() and (board["pairs"] == 2).all()
    runs = _runs(campaign)
    for m, key in (("waiting_time_mean", ("waiting_time", "mean")),
                   ("waiting_time_p95", ("waiting_time", "p95")),
                   ("bounded_slowdown_mean", ("bounded_slowdown", "mean")),
                   ("utilization", None)):
        def value(w, s, k, m=m, key=key):
            met = runs[(w, s, k)][2]
            return met[key[0]][key[1]] if key else met[m]
        for w in ("plain", "mixed"):
            row = board[(board["regime"] == w) & (board["scheduler"] == "conservative")].iloc[0]
            mean, half = _t975_df1([value(w, "conservative", k) for k in SEEDS])
            assert row[m] == pytest.approx(mean, abs=1e-9)
            assert row[f"{m}_ci95"] == pytest.approx(half, abs=1e-9)
            diffs = [value(w, "conservative", k) - value(w, "easy", k) for k in SEEDS]
            dmean, dhalf = _t975_df1(diffs)
            assert row[f"{m}_diff"] == pytest.approx(dmean, abs=1e-9)
            assert row[f"{m}_diff_ci95"] == pytest.approx(dhalf, abs=1e-9)
    # the baseline's difference to itself is 0
    base = board[board["scheduler"] == "easy"]
    assert (base["waiting_time_mean_diff"] == 0).all() and (base["utilization_diff_ci95"] == 0).all()
    # ranks: 1..3 per regime, in order of the metric (NaN last), ties by name
    for _, g in board.groupby("regime"):
        assert list(g["rank"]) == [1, 2, 3]
        v = g["bounded_slowdown_mean"].to_numpy(float)
        finite = v[np.isfinite(v)]
        assert list(finite) == sorted(finite)
        assert not np.isfinite(v[len(finite):]).any()


def test_rejected_jobs_are_counted(campaign):
    board = leaderboard(run_table(campaign)).set_index(["regime", "scheduler"])
    runs = _runs(campaign)
    for seed in SEEDS:
        wl = json.loads(runs[("mixed", "easy", seed)][1].read_text())
        nb_bb = sum(1 for j in wl["jobs"] if "burst_buffer" in j.get("io", {}))
        assert nb_bb == 4
        # easy cannot serve a burst-buffer request: Batsim writes those jobs REJECTED,
        # success 0, with no phase job (the jobs run by phases are REJECTED too, and
        # their phases bb!J:k follow them)
        jobs = pd.read_csv(runs[("mixed", "easy", seed)][0] / "out_jobs.csv", dtype={"job_id": str})
        ran = {j.split(":")[0] for j in jobs.loc[jobs["workload_name"] == "bb", "job_id"]}
        static = jobs[jobs["workload_name"] == "w0"]
        rejected = static[(static["final_state"] == "REJECTED") & ~static["job_id"].isin(ran)]
        assert len(rejected) == nb_bb and (rejected["success"] == 0).all()
        assert {int(j) for j in rejected["job_id"]} == {
            j["id"] for j in wl["jobs"] if "burst_buffer" in j.get("io", {})}
    assert board.loc[("mixed", "easy"), "jobs_rejected"] == 4
    assert board.loc[("mixed", "conservative"), "jobs_rejected"] == 4
    # sjf-bb serves burst-buffer requests only: it rejects the 12 other jobs
    assert board.loc[("mixed", "sjf-bb"), "jobs_rejected"] == 12
    assert board.loc[("mixed", "sjf-bb"), "jobs_rejected_diff"] == 8
    assert board.loc[("plain", "sjf-bb"), "jobs_rejected"] == 10
    assert board.loc[("plain", "easy"), "jobs_rejected"] == 0


def test_family_stretches_from_the_runs_files(campaign):
    table = run_table(campaign)
    runs = _runs(campaign)
    rdir, wpath, _ = runs[("mixed", "easy", 1)]
    wl = {str(j["id"]): j for j in json.loads(wpath.read_text())["jobs"]}
    jobs = pd.read_csv(rdir / "out_jobs.csv", dtype={"job_id": str})
    # the periodic and input-reading jobs run by phases bb!J:k: J starts with its
    # first phase and ends with its last one; its submission is the static row's
    phases = jobs[jobs["workload_name"] == "bb"].copy()
    phases["job"] = phases["job_id"].str.split(":").str[0]
    span = phases.groupby("job").agg(start=("starting_time", "min"), end=("finish_time", "max"))
    sub = jobs[jobs["workload_name"] == "w0"].set_index("job_id")["submission_time"]
    g, r = [], []
    for jid, row in span.iterrows():
        io = wl[jid].get("io", {})
        if "inputs" in io:
            ref = io["compute"]["delay"] + io["inputs"][0]["bytes"] / READ_BANDWIDTH
            g.append((row["end"] - sub[jid]) / ref)
        if "periodic" in io:
            p = io["periodic"]
            alone = p["periods"] * (p["compute"] + p["bytes"] / PFS_BANDWIDTH)
            r.append((row["end"] - row["start"]) / alone)
    assert len(g) == 4 and len(r) == 4
    got = table[(table["workload"] == "mixed") & (table["scheduler"] == "easy")
                & (table["seed"] == 1)].iloc[0]
    assert got["gonthier_stretch_mean"] == pytest.approx(np.mean(g), rel=1e-9)
    assert got["jeannot_stretch_mean"] == pytest.approx(np.mean(r), rel=1e-9)
    # no job of the plain workload has either model: no stretch
    plain = table[table["workload"] == "plain"]
    assert plain["gonthier_stretch_mean"].isna().all() and plain["jeannot_stretch_mean"].isna().all()


def test_io_metrics_hook(campaign, tmp_path):
    # the runs' I/O records fill the hook (docs/outputs.md): sjf-bb's jobs of
    # the mixed regime use burst buffers, the plain regime moves no byte
    board = leaderboard(run_table(campaign))
    assert {"io_bytes_pfs", "io_bytes_bb", "io_bb_utilization"} <= set(board.columns)
    row = board[(board["regime"] == "mixed") & (board["scheduler"] == "sjf-bb")].iloc[0]
    assert row["io_bytes_bb"] > 0 and 0 < row["io_bb_utilization"] <= 1
    assert (board.loc[board["regime"] == "plain", "io_bytes_pfs"] == 0).all()
    copy = tmp_path / "c"
    shutil.copytree(campaign, copy)
    runs = _runs(copy)
    for rdir, _, _ in runs.values():      # no record: no column (left out, not 0)
        p = rdir / "metrics.json"
        p.write_text(json.dumps({k: v for k, v in json.loads(p.read_text()).items() if k != "io"}))
    assert not [c for c in leaderboard(run_table(copy)).columns if c.startswith("io_")]
    for (w, s, k), (rdir, _, _) in runs.items():
        p = rdir / "metrics.json"
        data = json.loads(p.read_text())
        data["io"] = {"bytes": {"pfs": 1e9 * (k + (s == "sjf-bb")), "bb": 0.0},
                      "pfs_utilization": 0.1 * k}
        p.write_text(json.dumps(data))
    board = leaderboard(run_table(copy))
    for c in ("io_bytes_pfs", "io_bytes_bb", "io_pfs_utilization"):
        assert c in board.columns and f"{c}_diff_ci95" in board.columns
    row = board[(board["regime"] == "plain") & (board["scheduler"] == "sjf-bb")].iloc[0]
    assert row["io_bytes_pfs"] == pytest.approx(2.5e9)
    assert row["io_bytes_pfs_diff"] == pytest.approx(1e9) and row["io_bytes_pfs_diff_ci95"] == 0
    md = render_markdown(render_blocks(board, "t", 600.0))
    # bytes shown in the unit of the column (GB here), sjf-bb's 2 and 3 GB over the seeds
    assert "| bytes pfs (GB) |" in md and "| pfs utilization |" in md and f"| 2.5 ± {_t975_df1([2.0, 3.0])[1]:.2g} |" in md
    rdir = next(iter(runs.values()))[0]
    data = json.loads((rdir / "metrics.json").read_text())
    data["io"] = {"bytes": "many"}
    (rdir / "metrics.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"metrics.json: field io.bytes: not a number"):
        run_table(copy)


def test_bytes_unit():
    assert bytes_unit(2.5e9) == ("GB", 1e9)
    assert bytes_unit([1e3, -5e12, math.nan]) == ("TB", 1e12)
    assert bytes_unit(12.0) == ("B", 1.0) and bytes_unit([]) == ("B", 1.0)


def test_t_interval():
    assert t_interval([1.0, 3.0]) == pytest.approx((2.0, math.tan(0.475 * math.pi), 2))
    mean, half, n = t_interval([2.0])
    assert (mean, n) == (2.0, 1) and math.isnan(half)
    assert t_interval([math.nan, 5.0, 7.0])[2] == 2
    assert math.isnan(t_interval([])[0])


def test_outputs_are_deterministic_and_complete(campaign, tmp_path):
    a = write_leaderboard(campaign, tmp_path / "a", metric="waiting_time_mean")
    b = write_leaderboard(campaign, tmp_path / "b", metric="waiting_time_mean")
    for kind in ("csv", "markdown", "html", "figure"):
        assert a["paths"][kind].read_bytes() == b["paths"][kind].read_bytes(), kind
    csv = pd.read_csv(a["paths"]["csv"])
    assert len(csv) == 6 and list(csv.columns[:4]) == ["regime", "machine", "rank", "scheduler"]
    md = a["paths"]["markdown"].read_text()
    assert "## Regime mixed on machine df96" in md and "## Regime plain on machine df96" in md
    assert "![" in md and "figures/leaderboard_waiting_time_mean.png" in md
    html = a["paths"]["html"].read_text()
    assert html.count("<table>") == 4 and "data:image/png;base64," in html
    assert a["paths"]["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_prints_and_errors(campaign, tmp_path):
    runner = CliRunner()
    r = runner.invoke(leaderboard_command, [str(campaign), "--out", str(tmp_path / "o"),
                                            "--baseline", "conservative"])
    assert r.exit_code == 0, r.output
    assert "# Leaderboard of campaign board" in r.stdout
    assert "Paired difference to conservative" in r.stdout
    assert (tmp_path / "o" / "leaderboard.csv").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "campaign.json").write_text(json.dumps({"name": "e", "runs": []}))
    cases = [
        ([str(tmp_path / "nope")], "no such campaign folder"),
        ([str(empty)], "the campaign has no run"),
        ([str(campaign), "--baseline", "fcfs"], "option --baseline: 'fcfs' is not a scheduler"),
        ([str(campaign), "--metric", "speed"], "option --metric: unknown metric 'speed'"),
        ([str(campaign), "--read-bandwidth", "0"], "option --read-bandwidth: must be a positive"),
    ]
    for args, msg in cases:
        r = runner.invoke(leaderboard_command, args + ["--out", str(tmp_path / "x")])
        assert r.exit_code == 2, (args, r.output)
        assert msg in r.output and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1, r.output
    # through the installed command line: one line on stderr, status 2
    p = subprocess.run([sys.executable, "-m", "iosched", "leaderboard", str(tmp_path / "nope")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "no such campaign folder" in p.stderr


def test_a_scheduler_that_rejected_jobs_ranks_after_those_that_ran_them_all():
    """A scheduler whose metrics cover only the jobs it ran (it rejected
    some) never outranks one that ran every job, even with a better mean."""
    rows = []
    for seed in (1, 2):
        for sched, bsld, rejected in (("easy", 5.0 + seed, 0), ("picky", 1.0, 3), ("other", 4.0, 0)):
            rows.append({"regime": "r", "machine": "m", "platform": "m", "workload": "r", "part": None,
                         "seed": seed, "engine": "embedded",
                         "scheduler": sched, "status": "done", "waiting_time_mean": 10.0 * bsld,
                         "waiting_time_p95": 20.0 * bsld, "bounded_slowdown_mean": bsld,
                         "gonthier_stretch_mean": np.nan, "jeannot_stretch_mean": np.nan,
                         "utilization": 0.5, "jobs_rejected": rejected})
    board = leaderboard(pd.DataFrame(rows), baseline="easy", metric="bounded_slowdown_mean")
    assert list(board["scheduler"]) == ["other", "easy", "picky"]
    assert list(board["rank"]) == [1, 2, 3]


def _board(bslds, waits):
    rows = []
    for seed in (1, 2):
        for sched, bsld in bslds.items():
            rows.append({"regime": "r", "machine": "m", "platform": "m", "workload": "r", "part": None,
                         "seed": seed, "engine": "embedded", "scheduler": sched, "status": "done",
                         "waiting_time_mean": waits[sched], "waiting_time_p95": 2 * waits[sched],
                         "bounded_slowdown_mean": bsld, "gonthier_stretch_mean": np.nan,
                         "jeannot_stretch_mean": np.nan, "utilization": 0.5, "jobs_rejected": 0})
    return leaderboard(pd.DataFrame(rows), baseline="easy", metric="bounded_slowdown_mean")


def test_compare_leaderboards_order_and_tolerance(tmp_path):
    a = _board({"easy": 5.0, "x": 3.0, "y": 4.0}, {"easy": 100.0, "x": 0.0, "y": 50.0})
    same = compare_leaderboards(a, a.copy())
    assert same["agree"] and same["order"] == [] and same["outside"] == []
    assert set(same["metrics"]["max_relative_difference"]) == {0.0}   # NaN = NaN, 0 = 0
    # 0.5 % off: inside 1 %, outside 0.1 %
    b = _board({"easy": 5.0, "x": 3.0, "y": 4.0}, {"easy": 100.5, "x": 0.0, "y": 50.0})
    near = compare_leaderboards(a, b)
    assert near["agree"]
    row = near["metrics"].set_index("metric").loc["waiting_time_mean"]
    assert row["max_relative_difference"] == pytest.approx(0.5 / 100.5) and row["where"] == "r/m/easy"
    strict = compare_leaderboards(a, b, tolerance=0.001)
    assert not strict["agree"] and len(strict["outside"]) == 2      # the mean and its p95 (x2)
    assert strict["outside"][0][:4] == ("r", "m", "easy", "waiting_time_mean")
    # another order
    c = _board({"easy": 5.0, "x": 4.5, "y": 4.0}, {"easy": 100.0, "x": 0.0, "y": 50.0})
    swapped = compare_leaderboards(a, c, tolerance=1.0)
    assert not swapped["agree"] and swapped["order"] == [("r", "m", ["x", "y", "easy"], ["y", "x", "easy"])]
    # read back from the CSV (no attrs): the same metrics
    a.to_csv(tmp_path / "a.csv", index=False)
    back = pd.read_csv(tmp_path / "a.csv")
    assert board_metrics_of(back) == a.attrs["metrics"]
    assert compare_leaderboards(back, a)["agree"]
    with pytest.raises(InputError, match="in one board only"):
        compare_leaderboards(a, a[a["scheduler"] != "y"])
    with pytest.raises(InputError, match="--tolerance"):
        compare_leaderboards(a, a, tolerance=float("nan"))


def test_cli_against_another_run_of_the_campaign(campaign, tmp_path):
    runner = CliRunner()
    r = runner.invoke(leaderboard_command, [str(campaign), "--out", str(tmp_path / "o"),
                                            "--against", str(campaign)])
    assert r.exit_code == 0, r.output
    assert "agree: rank order same, 0 metric means outside the tolerance" in r.stdout
    r = runner.invoke(leaderboard_command, [str(campaign), "--out", str(tmp_path / "o"),
                                            "--against", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such campaign folder" in r.output
