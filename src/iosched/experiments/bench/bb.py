"""``iosched bench bb``: speed of the burst-buffer schedulers.

Two measurements (a benchmark, not a test: it asserts nothing and its
figures depend on the machine), written to
``results/bench/bb_kth1000_sjf-bb.json`` and printed:

1. **sjf-bb on the first 1000 KTH jobs** (:func:`iosched.experiments.bb.workload.generate`,
   seed 1) on ``platforms/dragonfly96.xml``, embedded engine with
   ``--enable-dynamic-jobs``, with the per-phase encoding (the default) and
   the composed one, ``--repeat`` runs of each alternated (median reported,
   and their ratio: what the per-phase dynamic jobs cost): wall time of the
   whole simulation (s, from the scheduler's start to the end of both
   processes; target of issue 13: at most 5 s), the engine's CPU time (s,
   ``getrusage``), the scheduler's (the run's child processes' CPU time
   less the engine's) and their sum ``cpu_s`` (the two processes take
   turns, so on an idle machine the wall time approaches it; on a loaded
   one the wall time also holds the waits for a core), and the engine /
   scheduler split: ``scheduling_time`` of ``_schedule.csv`` is the wall time
   (s) the engine waited for the scheduler's replies, the rest is the engine.
   The 1-minute load average before and after is recorded.
2. **plan-2 time per scheduling decision** on the first ``--plan-jobs`` jobs
   (default 200) of the same workload: the scheduler's ``stats`` option
   records the wall-clock time of every plan pass; reported per queue-length
   bucket: number of passes, searches skipped (no waiting job fits now),
   median and p99 (s) of the passes that searched, and the whole run's wall
   time.

3. with ``--full POLICY``: the **whole log** (28,467 jobs) with that policy
   (target of issue 13 for plan-2: at most 10 min), with the same
   per-decision table for plan-k, written to ``bb_kth_full_<POLICY>.json``.
   With ``--full-cap SECONDS`` a run still going after that wall time is
   stopped and the file records how far it got instead: the simulated time
   reached (the engine's ``--progress-file``), the workload jobs submitted
   by then, their rate per minute of wall time and the wall time the whole
   log would take at that rate (a lower bound when the queue grows).

4. with ``--full POLICY --reference TREE``: the whole log with ``POLICY``
   run by the source tree ``TREE`` (e.g. a worktree of main) and by this
   one, in turn, ``--full-rounds`` times (:func:`iosched.experiments.common.side_by_side`:
   wall and CPU time of each run, engine and scheduler together, the
   1-minute load average before and after, the ratios this / reference
   per round and their median), every round's ``out_jobs.csv``,
   ``out_machine_states.csv`` compared byte for byte;
   written to ``bb_kth_full_<POLICY>_side_by_side.json`` (the outputs
   under ``--keep DIR`` if given, else in a temporary folder).

A machine calibration (:func:`iosched.experiments.common.calibrate`) is recorded
beside the figures.
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import click

from iosched.errors import InputError
from iosched.experiments.bb import workload as W
from iosched.experiments.common import calibrate, side_by_side, write_result
from iosched.paths import PLATFORMS_DIR, RESULTS_DIR, SCHEDULERS_DIR
from iosched.run.result import RunError
from iosched.run.simulation import run_simulation
from iosched.workloads.default_swf import DEFAULT_SWF_HELP, find_default_swf

BUCKETS = ((1, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 200), (201, 10 ** 9))


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def decision_table(searches: list) -> list:
    """Per queue-length bucket: passes, skipped, median/p99 seconds of searches.

    :param searches: records of the scheduler's ``stats`` file.
    :returns: list of dicts (buckets with at least one pass).
    """
    out = []
    for lo, hi in BUCKETS:
        recs = [r for r in searches if lo <= r["queue"] <= hi]
        if not recs:
            continue
        done = [r["seconds"] for r in recs if not r.get("skipped")]
        row = {"queue": f"{lo}-{hi}" if hi < 10 ** 9 else f">={lo}", "passes": len(recs),
               "skipped": len(recs) - len(done)}
        if done:
            row.update(median_s=round(statistics.median(done), 5), p99_s=round(_pct(done, 0.99), 5),
                       max_s=round(max(done), 5))
        out.append(row)
    return out


def _run(platform, workload, policy, out, timeout, stats=None, encoding="phases", engine_args=()):
    rusage = out / "rusage.json"
    opts = {"policy": policy, "seed": 1, "encoding": encoding}
    if stats is not None:
        opts["stats"] = str(stats)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run_simulation(platform, workload, str(SCHEDULERS_DIR / "burstbuffer.py"), out,
                   options=opts, timeout=timeout,
                   engine_args=["--rusage-file", str(rusage), *engine_args])  # + --enable-dynamic-jobs (runner)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ru = json.loads(rusage.read_text())
    with open(out / "out_schedule.csv") as f:
        header, values = f.read().splitlines()[:2]
    sched = dict(zip(header.split(","), values.split(",")))
    waited = float(sched["scheduling_time"])
    engine_cpu = ru["user_s"] + ru["sys_s"]
    both_cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    res = {"wall_s": round(wall, 2), "engine_cpu_s": round(engine_cpu, 2),
           "scheduler_cpu_s": round(both_cpu - engine_cpu, 2), "cpu_s": round(both_cpu, 2),
           "engine_max_rss_mb": round(ru["max_rss_kb"] / 1024, 1),
           "scheduler_s": round(waited, 2), "engine_s": round(wall - waited, 2),
           "makespan_s": float(sched["makespan"])}
    if stats is not None:  # plan-k: one record per scheduling pass
        searches = json.loads(Path(stats).read_text())["searches"]
        res["passes"] = len(searches)
        res["searches"] = sum(1 for r in searches if not r.get("skipped"))
        res["decisions"] = decision_table(searches)
    return res


def _capped(w: dict, progress: Path, cap: float) -> dict:
    """How far a whole-log run stopped after ``cap`` s of wall time got:
    simulated time reached (s, from the engine's progress file), workload
    jobs submitted by then, their rate (jobs per minute of wall time) and
    the whole log's wall time extrapolated at that rate (s)."""
    try:
        sim_t = float(progress.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        sim_t = 0.0
    submitted = sum(1 for j in w["jobs"] if j["subtime"] <= sim_t)
    rate = submitted / (cap / 60.0)
    return {"capped_at_wall_s": cap, "sim_time_reached_s": round(sim_t, 1),
            "jobs_submitted_by_then": submitted, "jobs_per_min": round(rate, 1),
            "extrapolated_wall_s": round(len(w["jobs"]) / rate * 60.0, 0) if rate else None}


def _full_run(platform, swf, policy, out_dir, cap=None):
    """Whole KTH-SP2 log (28,467 jobs, seed 1) with ``policy``; writes
    ``bb_kth_full_<policy>.json`` (wall time, engine/scheduler split and,
    for plan-k, the per-decision table; with ``cap`` s and a run still
    going then, how far it got: :func:`_capped`). Target of issue 13: 10 min."""
    res = {"benchmark": f"bb_kth_full_{policy}", "platform": "dragonfly96",
           "workload": "iosched.experiments.bb.workload.generate(KTH-SP2, seed=1), whole log",
           "target_wall_s": 600.0}
    with tempfile.TemporaryDirectory(prefix="iosched-bb-bench-") as tmp:
        tmp = Path(tmp)
        w = W.generate(swf, seed=1)
        wl = tmp / "w.json"
        W.write_workload(w, wl)
        click.echo(f"bb bench: {policy}, whole log ({len(w['jobs'])} jobs)...")
        stats = tmp / "stats.json" if policy.startswith("plan-") else None
        progress = tmp / "progress"
        try:
            run = _run(platform, wl, policy, tmp / "run", cap or 4 * 3600, stats=stats,
                       engine_args=["--progress-file", str(progress)])
        except RunError:
            if cap is None or not progress.exists():
                raise
            run = _capped(w, progress, cap)
        run["nb_jobs"] = len(w["jobs"])
        res["run"] = run
    res["target_met"] = run.get("wall_s", math.inf) <= res["target_wall_s"]
    res["machine"] = {"python": sys.version.split()[0], "load_avg_1min": round(os.getloadavg()[0], 2)}
    res["calibration"] = calibrate()
    write_result(res, Path(out_dir) / f"bb_kth_full_{policy}.json")


def _full_side_by_side(platform, swf, policy, out_dir, reference, rounds, keep=None):
    """Whole log with ``policy``, the ``reference`` tree and this one in
    turn, ``rounds`` times (module documentation, item 4); writes
    ``bb_kth_full_<policy>_side_by_side.json``."""
    res = {"benchmark": f"bb_kth_full_{policy}_side_by_side", "platform": "dragonfly96",
           "workload": "iosched.experiments.bb.workload.generate(KTH-SP2, seed=1), whole log",
           "reference_tree": str(Path(reference).resolve()), "target_wall_s": 180.0,
           "calibration": calibrate()}
    with tempfile.TemporaryDirectory(prefix="iosched-bb-bench-") as tmp:
        base = Path(keep) if keep else Path(tmp)
        w = W.generate(swf, seed=1)
        wl = base / "w.json"
        wl.parent.mkdir(parents=True, exist_ok=True)
        W.write_workload(w, wl)
        click.echo(f"bb bench: {policy}, whole log ({len(w['jobs'])} jobs), {reference} and this tree, "
                   f"{rounds} round(s)...")

        def spec(side, k):
            return {"kind": "simulation", "platform": str(platform), "workload": str(wl),
                    "scheduler": "burstbuffer", "options": {"policy": policy, "seed": 1},
                    "timeout": 4 * 3600, "out": str(base / f"{side}-{k}")}

        res.update(side_by_side(reference, spec, rounds,
                                compare=("out_jobs.csv", "out_machine_states.csv"), label=policy))
        res["nb_jobs"] = len(w["jobs"])
    res["target_met"] = res["median"]["this"]["wall_s"] <= res["target_wall_s"]
    res["machine"] = {"python": sys.version.split()[0]}
    write_result(res, Path(out_dir) / f"bb_kth_full_{policy}_side_by_side.json")


@click.command(name="bb")
@click.option("--swf", type=click.Path(dir_okay=False), default=None,
              help=f"SWF trace [default: {DEFAULT_SWF_HELP}]")
@click.option("--jobs", "nb_jobs", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--plan-jobs", type=click.IntRange(min=0), default=200, show_default=True,
              help="jobs of the plan-2 decision-time run (0: skip it)")
@click.option("--full", "full_policies", multiple=True, metavar="POLICY",
              help="also run the whole log with POLICY (repeatable; e.g. --full plan-2); "
                   "writes results/bench/bb_kth_full_POLICY.json")
@click.option("--full-cap", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="stop a --full run after SECONDS of wall time and record its rate instead")
@click.option("--reference", type=click.Path(file_okay=False, exists=True), default=None, metavar="TREE",
              help="with --full: run the whole log with the source tree TREE (e.g. a worktree of "
                   "main) and this one in turn, outputs compared (bb_kth_full_POLICY_side_by_side.json)")
@click.option("--full-rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="with --reference: rounds (reference then this tree)")
@click.option("--keep", type=click.Path(file_okay=False), default=None,
              help="with --reference: keep the runs' outputs in this folder")
@click.option("--skip-1000", is_flag=True, help="skip the sjf-bb run on the first jobs")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="sjf-bb runs per encoding (alternated; the median is reported)")
@click.option("--output", type=click.Path(file_okay=False), default=str(RESULTS_DIR / "bench"),
              show_default=True)
def bench_command(swf, nb_jobs, plan_jobs, full_policies, full_cap, reference, full_rounds, keep,
                  skip_1000, repeat, output):
    """Time sjf-bb on the first KTH jobs (per-phase and composed encodings,
    alternated, medians), plan-2's decisions, and whole-log runs."""
    platform = PLATFORMS_DIR / "dragonfly96.xml"
    load0 = round(os.getloadavg()[0], 2)
    res = {"benchmark": f"bb_kth{nb_jobs}_sjf-bb", "platform": "dragonfly96",
           "workload": f"iosched.experiments.bb.workload.generate(KTH-SP2, seed=1), first {nb_jobs} jobs",
           "target_wall_s": 5.0}
    try:
        swf = swf or find_default_swf()
        out = Path(output)
        out.mkdir(parents=True, exist_ok=True)
        for pol in full_policies:
            if reference:
                _full_side_by_side(platform, swf, pol, out, reference, full_rounds, keep)
            else:
                _full_run(platform, swf, pol, out, full_cap)
        if skip_1000:
            return
        with tempfile.TemporaryDirectory(prefix="iosched-bb-bench-") as tmp:
            tmp = Path(tmp)
            w = W.generate(swf, seed=1, first=nb_jobs)
            wl = tmp / "w.json"
            W.write_workload(w, wl)
            click.echo(f"bb bench: sjf-bb, {len(w['jobs'])} jobs, {repeat} x 2 encodings...")
            runs = {"phases": [], "composed": []}
            for k in range(repeat):
                for enc in runs:
                    runs[enc].append(_run(platform, wl, "sjf-bb", tmp / f"sjf-{enc}-{k}", 3600,
                                          encoding=enc))
            for enc, rs in runs.items():
                med = sorted(rs, key=lambda r: r["wall_s"])[len(rs) // 2]
                res["sjf_bb" if enc == "phases" else "sjf_bb_composed"] = {
                    **med, "wall_s_runs": [r["wall_s"] for r in rs]}
            res["phases_over_composed"] = round(
                res["sjf_bb"]["wall_s"] / res["sjf_bb_composed"]["wall_s"], 3)
            res["nb_jobs"] = len(w["jobs"])
            if plan_jobs:
                wp = tmp / "wp.json"
                W.write_workload(W.first_jobs(w, plan_jobs), wp)
                click.echo(f"bb bench: plan-2, {plan_jobs} jobs...")
                stats = tmp / "stats.json"
                run = _run(platform, wp, "plan-2", tmp / "plan", 7200, stats=stats)
                run["nb_jobs"] = plan_jobs
                res["plan_2"] = run
    except (InputError, RunError, OSError, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from None
    res["target_met"] = res["sjf_bb"]["wall_s"] <= res["target_wall_s"]
    res["machine"] = {"python": sys.version.split()[0], "load_avg_1min": [load0, round(os.getloadavg()[0], 2)]}
    res["calibration"] = calibrate()
    write_result(res, out / f"bb_kth{nb_jobs}_sjf-bb.json")
