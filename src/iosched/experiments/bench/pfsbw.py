"""``iosched bench pfsbw``: speed of the pfsbw schedulers
(Goponenko et al., PMBS 2024) on Workload 2.

A benchmark, not a test: it asserts nothing and its figures depend on the
machine. For every configuration of :data:`CONFIGS` it runs Workload 2
(1,550 jobs, 600 s sleep jobs; :func:`iosched.experiments.pfsbw.workload.workload2`) on
``platforms/pfsbw15.xml`` with the embedded engine and records

* the wall time of the whole simulation (s: scheduler + engine, from
  :func:`iosched.api.simulate`'s call to its return; target of issue 16:
  under 30 s), and the makespan (s, simulated) as a sanity check;
* the scheduler's time per decision (the scheduler's ``stats`` option:
  wall-clock seconds of each scheduling pass) against the queue length
  before the pass, per bucket: number of passes, median, p99 and max (s).

Written to ``results/bench/pfsbw_w2.json`` with a machine calibration
(:func:`iosched.experiments.common.calibrate`).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import click

from iosched.api import simulate
from iosched.experiments.common import calibrate, write_result
from iosched.experiments.pfsbw import workload as pw
from iosched.paths import PLATFORMS_DIR, RESULTS_DIR

GIB = pw.GIB
#: label -> (scheduler name, options, pre-trained?)
CONFIGS = {
    "slurm-backfill": ("slurm-backfill", {}, False),
    "io-aware 20": ("io-aware", {"limit": 20 * GIB}, True),
    "io-aware 15": ("io-aware", {"limit": 15 * GIB}, True),
    "adaptive 20": ("adaptive", {"limit": 20 * GIB}, True),
    "adaptive 15": ("adaptive", {"limit": 15 * GIB}, True),
    "adaptive 20 untrained": ("adaptive", {"limit": 20 * GIB}, False),
    "adaptive-naive 20": ("adaptive-naive", {"limit": 20 * GIB}, True),
}
BUCKETS = ((1, 50), (51, 200), (201, 500), (501, 1000), (1001, 10 ** 9))


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def decision_table(passes: list) -> list:
    """Per queue-length bucket: passes, median/p99/max seconds per pass."""
    out = []
    for lo, hi in BUCKETS:
        xs = [p["seconds"] for p in passes if lo <= p["queue"] <= hi]
        if xs:
            out.append({"queue": f"{lo}-{hi}" if hi < 10 ** 9 else f">={lo}", "passes": len(xs),
                        "median_s": round(statistics.median(xs), 6), "p99_s": round(_pct(xs, 0.99), 6),
                        "max_s": round(max(xs), 6)})
    return out


@click.command(name="pfsbw")
@click.option("--out", default=str(RESULTS_DIR / "bench" / "pfsbw_w2.json"), show_default=True)
@click.option("-p", "--platform", "platform", default=str(PLATFORMS_DIR / "pfsbw15.xml"),
              show_default=True)
def bench_command(out, platform):
    """Time Workload 2 with every pfsbw scheduler configuration."""
    res = {"calibration": calibrate(), "workload": "Workload 2 (1550 jobs, sleep 600 s)",
           "target_s": 30, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="pfsbw-bench-") as tmp:
        tmp = Path(tmp)
        wl = pw.workload2()
        wpath = tmp / "w2.json"
        wpath.write_text(json.dumps(wl))
        pre = tmp / "pre.json"
        pre.write_text(json.dumps(pw.pretrain_samples(platform, wl, tmp / "pre")))
        for label, (sched, opts, pretrained) in CONFIGS.items():
            stats = tmp / f"stats_{len(res['runs'])}.json"
            opts = dict(opts, stats=str(stats))
            if pretrained:
                opts["pretrain"] = str(pre)
            t0 = time.perf_counter()
            jobs = simulate(platform, wpath, sched, opts)
            wall = time.perf_counter() - t0
            passes = json.loads(stats.read_text())["passes"]
            res["runs"][label] = {
                "wall_s": round(wall, 2), "makespan_s": round(float(jobs["finish_time"].max()), 1),
                "passes": len(passes), "scheduler_s": round(sum(p["seconds"] for p in passes), 3),
                "per_decision": decision_table(passes)}
            click.echo(f"{label}: {wall:.1f} s", err=True)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_result(res, Path(out))
