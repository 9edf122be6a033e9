"""Tests of the list vs pack family (Jeannot, Pallez & Vidal, IJHPCA 2023):
generators' distributions, pack building, the I/O arbiter, and the
constraints on the embedded engine's outputs."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
import pytest

from iosched.api import simulate
from iosched.errors import InputError
from iosched.experiments.bench.listpack import sweep_record
from iosched.experiments.listpack.reproduction import paired
from iosched.listpack.arbiter import IOArbiter
from iosched.listpack.metrics import job_table, max_io_overlap, read_phases, read_workload, summary
from iosched.listpack.model import PeriodicJob, io_load, pack_bandwidth
from iosched.listpack.packs import build_packs
from iosched.experiments.listpack.workload import (LAMBDA, Q_MAX, Q_MIN, generate, mira_median, mira_nodes,
                                                   truncated_mean, truncated_normal, write_workload)
from iosched.experiments.platforms import cluster_xml

B = 240e9


# ------------------------------------------------------------ generators
def test_mira_sizes_follow_the_discrete_exponential():
    u = np.random.default_rng(0).random(200_000)
    q = mira_nodes(u)
    assert q.min() >= Q_MIN and q.max() <= Q_MAX
    k = np.arange(Q_MIN, Q_MAX + 1)
    p = np.exp(-LAMBDA * k)
    p /= p.sum()
    mean = float((k * p).sum())
    sd = math.sqrt(float(((k - mean) ** 2 * p).sum()))
    assert abs(q.mean() - mean) < 4 * sd / math.sqrt(len(q))
    assert abs(q.std() - sd) / sd < 0.02


def test_mira_durations_and_medians():
    wl = generate("M-No", 0.4, seed=3, n_jobs=2000)
    q = np.array([j.nodes for j in wl.jobs])
    d = np.array([j.w * j.periods for j in wl.jobs])
    for lo, hi, med in ((0, 4095, 3600), (4096, 16384, 7200), (16385, 10 ** 9, 1800)):
        sel = d[(q >= lo) & (q <= hi)]
        if len(sel) < 30:
            continue
        assert abs(np.median(sel) - med) < 0.03 * med
        assert abs(sel.std() - 0.1 * med) < 0.2 * 0.1 * med
    assert (mira_median([512, 4096, 16384, 16896]) == [3600, 7200, 7200, 1800]).all()
    assert all(j.nodes % 512 == 0 for j in wl.jobs)


def test_uniform_protocol_and_periods():
    wl = generate("U-No", 0.4, seed=1, n_jobs=3000)
    q = np.array([j.nodes for j in wl.jobs])
    w = np.array([j.w for j in wl.jobs])
    n = np.array([j.periods for j in wl.jobs])
    assert set(q) <= {2 ** j for j in range(12)} and len(set(q)) == 12
    assert abs(q.mean() - 4095 / 12) < 4 * q.std() / math.sqrt(len(q))
    assert w.min() >= 600 and w.max() <= 6000 and abs(w.mean() - 3300) < 60
    assert n.min() >= 10 and n.max() <= 100 and abs(n.mean() - 55) < 1.5


@pytest.mark.parametrize("mu,sd", [(0.1, 0.1), (0.9, 0.1), (0.1, math.sqrt(0.1)), (0.4, 0.1)])
def test_truncated_normal_moments(mu, sd):
    x = truncated_normal(np.random.default_rng(5).random(40_000), mu, sd)
    assert x.min() >= 0 and x.max() <= 1
    assert abs(x.mean() - truncated_mean(mu, sd)) < 0.005


def test_paper_truncated_means_need_variance_01():
    assert truncated_mean(0.1, math.sqrt(0.1)) == pytest.approx(0.289, abs=1e-3)
    assert truncated_mean(0.9, math.sqrt(0.1)) == pytest.approx(0.711, abs=1e-3)


@pytest.mark.parametrize("family,alpha", [("M-BN", 0.2), ("M-BN", 0.6), ("M-No", 0.4),
                                          ("M-No", 0.8), ("U-BN", 0.4), ("U-No", 0.6)])
def test_alpha_reached(family, alpha):
    wl = generate(family, alpha, seed=2, n_jobs=40)
    assert abs(wl.alpha - alpha) <= 0.01
    assert wl.alpha == pytest.approx(io_load(wl.jobs, wl.machine.nodes, B))
    if family.endswith("BN"):  # bimodal: both classes present at mid loads
        xs = [j.x for j in wl.jobs]
        assert 0 < wl.meta["high_jobs"] <= 40
        assert min(xs) < 0.5 or wl.meta["high_jobs"] == 40


def test_generation_is_deterministic(tmp_path):
    a = write_workload(tmp_path / "a.json", generate("U-BN", 0.4, seed=7, n_jobs=20)).read_bytes()
    b = write_workload(tmp_path / "b.json", generate("U-BN", 0.4, seed=7, n_jobs=20)).read_bytes()
    c = write_workload(tmp_path / "c.json", generate("U-BN", 0.4, seed=8, n_jobs=20)).read_bytes()
    assert a == b and a != c


@pytest.mark.parametrize("kwargs,field", [
    ({"family": "X-BN"}, "family"), ({"alpha": 1.5}, "alpha"), ({"alpha": float("nan")}, "alpha"),
    ({"n_jobs": 0}, "n_jobs"), ({"tol": 0}, "tol"), ({"bn_sd": -1}, "bn_sd"),
    ({"volume": "bytes"}, "volume"), ({"seed": -1}, "seed")])
def test_bad_generator_parameters_one_line(kwargs, field):
    args = {"family": "M-BN", "alpha": 0.4, **kwargs}
    with pytest.raises(InputError) as exc:
        generate(args.pop("family"), args.pop("alpha"), **args)
    assert "\n" not in str(exc.value) and field in str(exc.value)


def test_unreachable_target_is_one_line_error():
    # all-high BN under the paper's volume formula cannot reach 0.8 on Mira
    with pytest.raises(InputError, match="no draw reached"):
        generate("M-BN", 0.8, seed=1, n_jobs=30, max_tries=3)


# ------------------------------------------------------------ packs, arbiter
class _J:
    def __init__(self, i, res, spec):
        self.id, self.nb_res, self.request = f"w0!{i}", res, spec


def test_packs_respect_nodes_and_average_constraint():
    rng = np.random.default_rng(4)
    jobs = [_J(i, int(rng.integers(1, 40)),
                PeriodicJob(int(rng.integers(1, 40)), int(rng.integers(10, 101)),
                            float(rng.uniform(60, 600)), float(rng.uniform(0, 300) * B)))
            for i in range(200)]
    packs = build_packs(jobs, 96, B)
    assert sorted(j.id for p in packs for j in p.jobs) == sorted(j.id for j in jobs)
    for p in packs:
        assert sum(j.nb_res for j in p.jobs) <= 96
        assert pack_bandwidth([j.request for j in p.jobs], B) <= B * (1 + 1e-9)
    # first fit: a job opened a pack only if it fitted none of the earlier ones
    assert len(packs) > 1


def test_arbiter_exclusive_fifo_and_shared():
    a = IOArbiter("exclusive")
    assert a.request("a") == ["a"] and a.request("b") == [] and a.request("c") == []
    assert a.release("a") == ["b"] and a.release("b") == ["c"] and a.release("c") == []
    s = IOArbiter("shared")
    assert s.request("a") == ["a"] and s.request("b") == ["b"]
    with pytest.raises(ValueError):
        IOArbiter("fair")


# ------------------------------------------------------------ on the engine
@pytest.fixture(scope="module")
def mira(tmp_path_factory):
    d = tmp_path_factory.mktemp("lp")
    plat = d / "mira.xml"
    plat.write_text(cluster_xml(96, bw="2.4TBps", lat="1us", bb_bw="2.4TBps", bb_lat="1us",
                                pfs={"bw": "240GBps", "lat": "1us"}))
    wl = d / "w.json"
    write_workload(wl, generate("M-BN", 0.6, seed=1, n_jobs=10))
    wt = d / "wt.json"  # volume="time": the bandwidth constraints bind
    write_workload(wt, generate("M-No", 0.8, seed=1, n_jobs=10, volume="time"))
    return d, plat, wl, wt


def _run(mira, wl, sched, options=None, name=None):
    d, plat = mira[0], mira[1]
    out = d / (name or f"{sched}-{wl.stem}-{(options or {}).get('io_model', 'x')}")
    simulate(str(plat), str(wl), sched, options, output_dir=out,
             engine_args=["--enable-dynamic-jobs"], cpu="none")
    jobs, rec = read_workload(wl)
    return read_phases(out / "out_jobs.csv"), jobs, rec


def _beta(spec):
    return spec.bandwidth(B)


@pytest.mark.parametrize("sched", ["io-list", "io-pack-char-bf"])
def test_exclusive_never_overlaps_io_and_shared_does(mira, sched):
    ph, jobs, rec = _run(mira, mira[2], sched)
    assert max_io_overlap(ph) == 1
    s = summary(ph, jobs, rec["nodes"], B)
    assert s["jobs"] == s["complete"] == 10 and (ph["state"] == "COMPLETED_SUCCESSFULLY").all()
    assert s["max_stretch"] >= 1 - 1e-6
    ph2, _, _ = _run(mira, mira[2], sched, {"io_model": "shared"})
    assert max_io_overlap(ph2) > 1


def test_io_list_strict_constraint_on_engine_output(mira):
    ph, jobs, rec = _run(mira, mira[3], "io-list")
    jt = job_table(ph, jobs, B)
    beta = {j: _beta(jobs[j]) for j in jt["job"]}
    peak = 0.0
    for t in sorted(set(jt["start"])):
        run = jt[(jt["start"] <= t) & (jt["end"] > t)]
        tot = sum(beta[j] for j in run["job"])
        assert tot <= B * (1 + 1e-9)
        peak = max(peak, tot)
    assert peak > 0.5 * B   # the constraint is exercised
    # FCFS: starts follow arrival order
    order = jt.sort_values(["start", "job"], key=lambda c: c if c.name == "start" else c.astype(int))
    assert list(order["job"].astype(int)) == sorted(order["job"].astype(int))


def _packs(jt, gap=0.01):
    """Jobs grouped by start time (Batsim's message latencies spread one
    pack's starts over a few microseconds)."""
    jt = jt.sort_values("start")
    groups, last = [], None
    for _, row in jt.iterrows():
        if last is None or row["start"] - last > gap:
            groups.append([])
        groups[-1].append(row)
        last = row["start"]
    return groups


@pytest.mark.parametrize("sched", ["io-pack-max", "io-pack-random-bf"])
def test_packs_average_constraint_on_engine_output(mira, sched):
    ph, jobs, rec = _run(mira, mira[3], sched)
    jt = job_table(ph, jobs, B)
    groups = _packs(jt)
    for grp in groups:
        specs = [jobs[r["job"]] for r in grp]
        assert sum(s.nodes for s in specs) <= rec["nodes"]
        assert pack_bandwidth(specs, B) <= B * (1 + 1e-9)
    if not sched.endswith("-bf"):  # no pack starts before the previous one ended
        assert len(groups) > 1
        for a, b in zip(groups, groups[1:]):
            assert max(r["end"] for r in a) <= min(r["start"] for r in b) + 1e-6


def test_bad_option_is_rejected(mira):
    from iosched.schedulers.listpack import Listpack
    with pytest.raises(InputError, match="io_model"):
        Listpack({"policy": "io-list", "io_model": "fair"})
    with pytest.raises(InputError, match="policy"):
        Listpack({"policy": "io-pack"})


def test_generator_cli_one_line_errors(tmp_path):
    import subprocess
    import sys
    ok = subprocess.run([sys.executable, "-m", "iosched", "workload", "listpack", "U-No", "0.4", str(tmp_path / "w.json"),
                         "--n-jobs", "5", "--platform", str(tmp_path / "p.xml")], capture_output=True, text=True)
    assert ok.returncode == 0 and (tmp_path / "p.xml").exists()
    for args in (["M-XX", "0.4"], ["M-BN", "x"]):
        r = subprocess.run([sys.executable, "-m", "iosched", "workload", "listpack", *args, str(tmp_path / "z.json")],
                           capture_output=True, text=True)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


EVERY_PASS = '''
from iosched.schedulers.listpack import Listpack


class EveryPass(Listpack):
    """Listpack with a scheduling pass at every Batsim message."""

    SKIP_INTERNAL_PASSES = False
'''


@pytest.mark.parametrize("sched", ["io-list-bf", "io-pack-max-bf"])
def test_skipping_phase_passes_keeps_the_schedule(mira, sched):
    """Passes only for job events and due overruns give the schedule of a
    pass at every message (EASY's head reservation moves on overruns)."""
    d = mira[0] / "everypass"
    d.mkdir(exist_ok=True)
    (d / "EveryPass.py").write_text(EVERY_PASS)
    fast, jobs, _ = _run(mira, mira[2], sched, name=f"skip-{sched}")
    _run(mira, mira[2], str(d / "EveryPass.py"), {"policy": sched},
                          name=f"every-{sched}")
    jt = job_table(fast, jobs, B)
    assert (jt["end"] - jt["start"] > jt["job"].map(lambda j: jobs[j].time(B)) + 1).any()  # overruns
    out = mira[0]
    assert ((out / f"skip-{sched}" / "out_jobs.csv").read_bytes()
            == (out / f"every-{sched}" / "out_jobs.csv").read_bytes())


def test_sweep_record_counts_runs_and_span(tmp_path):
    camp = tmp_path / "camp"
    for k, (t0, wall) in enumerate(((1000.0, 4.0), (1003.0, 6.0), (1010.0, 5.0))):
        d = camp / "runs" / f"r{k}"
        d.mkdir(parents=True)
        (d / "run.json").write_text("{}")
        (d / "done.json").write_text(json.dumps({"wall_time_s": wall}))
        os.utime(d / "run.json", (t0, t0))
        os.utime(d / "done.json", (t0 + wall, t0 + wall))
    (camp / "runs" / "killed").mkdir()   # no done.json: not counted
    log = tmp_path / "load.log"
    log.write_text("01:00:00 2.0 1.0 1.0\n01:01:00 4.0 2.0 1.0\n01:02:00 3.0 2.0 1.0\n")
    res = sweep_record([camp], log)
    c = res["campaigns"]["camp"]
    assert (c["runs"], c["run_wall_s_sum"], c["run_wall_s_median"]) == (3, 15.0, 5.0)
    assert c["span_s"] == pytest.approx(15.0) and res["span_s"] == pytest.approx(15.0)
    assert res["load_1min"] == {"samples": 3, "min": 2.0, "median": 3.0, "max": 4.0}
    with pytest.raises(InputError, match="no finished run"):
        sweep_record([tmp_path / "empty"])


def test_paired_differences_seed_by_seed():
    rows = []
    for seed, (a, b) in enumerate(((1.0, 1.1), (2.0, 2.3), (3.0, 3.2)), start=1):
        rows += [{"family": "M-BN", "alpha": 0.6, "scheduler": "io-list", "seed": seed, "m": a},
                 {"family": "M-BN", "alpha": 0.6, "scheduler": "io-pack-max", "seed": seed, "m": b}]
    rows.append({"family": "M-BN", "alpha": 0.6, "scheduler": "io-pack-max", "seed": 9, "m": 5.0})  # no pair
    pt = paired(pd.DataFrame(rows), "m", "io-list")
    assert len(pt) == 1 and pt["n"].iloc[0] == 3
    assert pt["diff"].iloc[0] == pytest.approx(0.2)
    assert pt["ci"].iloc[0] == pytest.approx(4.303 * 0.1 / math.sqrt(3))


@pytest.mark.parametrize("x, word", [("abc", "not a number"), (float("nan"), "not a finite"),
                                     (float("inf"), "not a finite"), ([1], "not a number")])
def test_read_periodic_job_refuses_a_bad_x(x, word):
    """A job whose x is not a finite number: one line naming the job and x
    (a ValueError inside the scheduler before)."""
    from iosched.schedulers.listpack import read_periodic_job

    with pytest.raises(InputError, match=f"job j7: x=.* {word}"):
        read_periodic_job({"id": "j7", "nodes": 1, "periods": 2, "w": 10.0, "v": 1e9, "x": x})
    assert read_periodic_job({"id": "j7", "nodes": 1, "periods": 2, "w": 10.0, "v": 1e9}).x == 0.0
