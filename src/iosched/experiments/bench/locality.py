"""Benchmark of the locality policies on the Uppmax day (21,819 jobs, 9,720 cores).

``iosched bench locality [--policies lea,...] [--out results/bench]``
runs each policy with the artifact's loop (:mod:`iosched.experiments.locality.replay`)
and writes ``results/bench/locality_<policy>.json``: wall time (s), CPU time
of the process (s), planning passes, decisions (jobs planned), and the time
per pass (median, p99, max, s) and per decision (median, p99, s: a pass's
time over its decisions) for queue-length buckets (jobs handed to the pass:
1, 2-9, 10-99, 100-999, 1000+), plus the machine calibration
(:func:`iosched.experiments.common.calibrate`). Target (issue 28): at most
60 s per policy (:data:`TARGET_S`; issue 15's was the artifact's ~4 min).

``--results DIR`` also writes what :mod:`iosched.experiments.locality.reproduction` writes
for the policy (``DIR/jobs_<policy>.csv``, its row merged into
``DIR/uppmax_paper.{csv,md}``), so that one run gives both the table and
the timing. ``--table`` writes ``results/bench/locality_speed.md`` from the
JSON files (:func:`speed_table`). ``--evaluator`` chooses the planner's
passes (:data:`iosched.locality.compiled.EVALUATORS`; the JSON records it
and whether the compiled passes ran, :func:`uses_kernel`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import click
import numpy as np

from iosched.errors import InputError
from iosched.experiments.common import calibrate, cpu_times, steal_share, write_result
from iosched.experiments.locality.reproduction import DATA, merge_rows, run_policy
from iosched.locality import compiled
from iosched.locality.metrics import write_jobs
from iosched.locality.planner import POLICIES

__all__ = ["bench_command", "bucket_stats", "speed_table", "uses_kernel"]

#: wall time per policy on the Uppmax day (s): issue 28's target (issue 15's
#: was 240 s, the artifact's time on this machine type)
TARGET_S = 60.0

BUCKETS = ((1, 1), (2, 9), (10, 99), (100, 999), (1000, 10**9))


def bucket_stats(pass_times) -> dict:
    """``{"1": {...}, "2-9": {...}, ...}`` per queue-length bucket (jobs
    handed to the pass): ``passes``, pass time median/p99/max (s) and the
    time per decision (s: a pass's time over its decisions, passes with at
    least one decision) median/p99. ``pass_times``: (queue length, s,
    decisions) triples (:func:`iosched.experiments.locality.replay.replay`)."""
    out = {}
    for lo, hi in BUCKETS:
        sel = [(s, d) for n, s, d in pass_times if lo <= n <= hi]
        if sel:
            xs = np.array([s for s, _ in sel])
            per = np.array([s / d for s, d in sel if d])
            name = str(lo) if lo == hi else (f"{lo}-{hi}" if hi < 10**9 else f"{lo}+")
            rec = {"passes": int(xs.size), "median_s": float(np.median(xs)),
                   "p99_s": float(np.percentile(xs, 99)), "max_s": float(xs.max()),
                   "decisions": int(sum(d for _, d in sel))}
            if per.size:
                rec["per_decision_median_s"] = float(np.median(per))
                rec["per_decision_p99_s"] = float(np.percentile(per, 99))
            out[name] = rec
    return out


def speed_table(bench_dir) -> str:
    """Markdown table of the ``locality_<policy>.json`` files in
    ``bench_dir`` (policies in :data:`~iosched.locality.planner.POLICIES`
    order): decisions, passes, CPU and wall time (s), load average, time per
    decision median/p99 (us) for passes of 100-999 and 1000+ jobs."""
    rows = ["| policy | decisions | passes | CPU (s) | wall (s) | load avg | per decision, 100-999 jobs: median / p99 (us) | 1000+ jobs: median / p99 (us) |",
            "|---|---|---|---|---|---|---|---|"]
    for p in POLICIES:
        f = Path(bench_dir) / f"locality_{p}.json"
        if not f.exists():
            continue
        d = json.loads(f.read_text())
        b = d["per_pass_by_queue_length"]

        def us(name):
            r = b.get(name, {})
            if "per_decision_median_s" not in r:
                return "-"
            return f"{r['per_decision_median_s'] * 1e6:.0f} / {r['per_decision_p99_s'] * 1e6:.0f}"

        rows.append(f"| {p} | {d['decisions']:,} | {d['passes']:,} | {d['cpu_s']:.0f} | {d['wall_s']:.0f} | "
                    f"{d['load_average_1min']:.1f} | {us('100-999')} | {us('1000+')} |")
    return "\n".join(rows) + "\n"


def uses_kernel(policy: str, evaluator: str) -> bool:
    """Whether :class:`~iosched.locality.planner.Planner` plans ``policy``'s
    passes in compiled code (:mod:`iosched.locality.compiled`):
    ``evaluator="compiled"`` and numba installed (every policy)."""
    return evaluator == "compiled" and compiled.AVAILABLE


@click.command(name="locality")
@click.option("--policies", default=",".join(POLICIES))
@click.option("--workload", default=str(DATA / "2022-09-10_V10000_anonymous.txt"))
@click.option("--cluster", default=str(DATA / "cluster_450_128_32_256_4_1024.txt"))
@click.option("--out", default="results/bench")
@click.option("--results", default="", help="also write the reproduction outputs here")
@click.option("--evaluator", type=click.Choice(compiled.EVALUATORS), default=compiled.EVALUATORS[0],
              show_default=True, help="the planner's passes: compiled (numba; python without it) or python")
@click.option("--table", is_flag=True,
              help="only write OUT/locality_speed.md from the existing locality_<policy>.json")
def bench_command(**options):
    """Time the locality policies on the Uppmax day with the artifact's loop."""
    a = SimpleNamespace(**options)
    if a.table:
        (Path(a.out) / "locality_speed.md").write_text(speed_table(a.out))
        return
    try:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        cal = calibrate()
        for p in [p.strip() for p in a.policies.split(",") if p.strip()]:
            if p not in POLICIES:
                raise InputError(f"--policies: {p!r} is unknown")
            before = cpu_times()
            c0 = time.process_time()
            t0 = time.perf_counter()
            row, res, _ = run_policy(a.workload, a.cluster, p, evaluator=a.evaluator)
            wall = time.perf_counter() - t0
            cpu = time.process_time() - c0
            write_result({"benchmark": "locality_uppmax", "policy": p, "evaluator": a.evaluator,
                          "compiled": uses_kernel(p, a.evaluator), "wall_s": round(wall, 1),
                          "cpu_s": round(cpu, 1), "target_s": TARGET_S, "target_met": wall <= TARGET_S,
                          "passes": res["passes"], "decisions": res["decisions"],
                          "planning_s": round(res["seconds"], 1),
                          "per_pass_by_queue_length": bucket_stats(res["pass_times"]),
                          "mean_stretch": row["mean_stretch"], "reuses": row["reuses"],
                          "load_average_1min": os.getloadavg()[0],
                          "cpu_steal_share_during_run": steal_share(before, cpu_times()),
                          "calibration": cal}, Path(a.out) / f"locality_{p}.json")
            if a.results:
                Path(a.results).mkdir(parents=True, exist_ok=True)
                write_jobs(res["jobs"], Path(a.results) / f"jobs_{p}.csv")
                merge_rows(Path(a.results) / "uppmax_paper", [row])
            print(p, "wall", round(wall, 1), "cpu", round(cpu, 1), {k: row[k] for k in ("mean_stretch", "reuses")},
                  flush=True)
    except InputError as e:
        raise click.ClickException(str(e)) from None
