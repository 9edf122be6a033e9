"""Benchmark: the wall time of the I/O arena, and the time per scheduler.

``iosched bench arena [--schedulers all] [--regimes all] [--seeds 5]
[--jobs 5000] [--nodes 100] [--workers N] [--output DIR]`` runs
:func:`iosched.experiments.arena.campaign.run_arena` (each scheduler inside
the engine's process) into a fresh output folder and writes
``results/bench/arena.json`` (``--result``): the wall time of the whole
command (runs, leaderboards and report), the target of issue 27 (the whole
arena -- every scheduler x 5 regimes x 5 seeds, the first 5,000 KTH-SP2
jobs, the 100-node machine -- in at most 1,800 s on a 2-core machine;
``meets_target`` is null for any other scope: a subset is timed, not
judged), and per scheduler and per (scheduler, regime) the number of runs, the sum
and the median of their wall times (each run's ``done.json``, the
campaign's own clock: the engine and the scheduler, its metrics), with
the 1-minute load average before and after. A benchmark, not a test: the
times are the machine's, not the simulation's (whose outputs do not
depend on them).

:raises InputError: (one line, exit status 2) an output folder that already
    holds runs (the times would be those of an earlier invocation), and the
    arena's own errors.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import click

from iosched.campaign.execute import versions
from iosched.errors import InputError, one_line
from iosched.experiments.arena.campaign import parse_names, parse_nodes, parse_seeds, run_arena
from iosched.experiments.arena.regimes import REGIMES
from iosched.paths import RESULTS_DIR
from iosched.schedulers.registry import SCHEDULERS

__all__ = ["TARGET_S", "run_times", "bench_command"]

#: Issue 27's target for the whole arena on a 2-core machine (s).
TARGET_S = 1800.0


def run_times(runs: list) -> dict:
    """Wall times of finished campaign runs, per scheduler and per
    (scheduler, regime).

    :param runs: run specs of :func:`iosched.campaign.execute.run_campaign`
        (``dir``, ``params.scheduler``, ``params.workload``); a run without
        ``done.json`` is left out.
    :returns: ``{"per_scheduler": {name: {"runs", "sum_s", "median_s"}},
        "per_regime": {name: {regime: {...}}}, "sum_s": float}`` (s).
    """
    walls: dict = {}
    for r in runs:
        done = Path(r["dir"]) / "done.json"
        if not done.is_file():
            continue
        w = float(json.loads(done.read_text(encoding="utf-8"))["wall_time_s"])
        walls.setdefault(r["params"]["scheduler"], {}).setdefault(r["params"]["workload"], []).append(w)

    def summary(ws):
        return {"runs": len(ws), "sum_s": round(sum(ws), 3), "median_s": round(statistics.median(ws), 3)}

    per_s = {s: summary([w for ws in by.values() for w in ws]) for s, by in sorted(walls.items())}
    per_r = {s: {g: summary(ws) for g, ws in sorted(by.items())} for s, by in sorted(walls.items())}
    return {"per_scheduler": per_s, "per_regime": per_r,
            "sum_s": round(sum(v["sum_s"] for v in per_s.values()), 3)}


@click.command(name="arena")
@click.option("--schedulers", default="all", show_default=True, help="as iosched arena")
@click.option("--regimes", default="all", show_default=True, help="as iosched arena")
@click.option("--seeds", default="5", show_default=True, help="as iosched arena")
@click.option("--nodes", default="100", show_default=True, help="as iosched arena")
@click.option("--jobs", "nb_jobs", type=click.IntRange(min=1), default=5000, show_default=True,
              help="the first N jobs of the trace that fit the machine")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="local Dask workers [default: the number of cores]")
@click.option("--output", type=click.Path(file_okay=False), default=str(RESULTS_DIR / "campaigns" / "bench_arena"),
              show_default=True, help="the arena's output folder (must hold no run yet)")
@click.option("--result", type=click.Path(dir_okay=False), default=str(RESULTS_DIR / "bench" / "arena.json"),
              show_default=True)
def bench_command(schedulers, regimes, seeds, nodes, nb_jobs, workers, output, result):
    """Time the whole arena and each scheduler in it (module docstring)."""
    try:
        out = Path(output)
        if any(out.glob("n*/runs/*/done.json")):
            raise InputError(f"option --output: {out} already holds finished runs; give a new folder")
        names = parse_names(schedulers, list(SCHEDULERS), "--schedulers")
        regs = parse_names(regimes, list(REGIMES), "--regimes")
        seed_list, sizes = parse_seeds(seeds), parse_nodes(nodes)
        versions()  # warm the cache: not part of the measurement
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        res = run_arena(names, regs, seed_list, sizes, out, jobs=nb_jobs, workers=workers,
                        in_process=True, echo=lambda s: click.echo(s, err=True))
        wall = time.monotonic() - t0
        load1 = os.getloadavg()[0]
    except InputError as e:
        click.echo(f"Error: {one_line(e)}", err=True)
        raise SystemExit(2) from None
    times = run_times([r for size in res["sizes"] for r in size["runs"]])
    # the target is for the whole arena only; a subset is timed, not judged
    whole = (sorted(names) == sorted(SCHEDULERS) and sorted(regs) == sorted(REGIMES)
             and seed_list == [1, 2, 3, 4, 5] and sizes == [100] and nb_jobs == 5000)
    doc = {
        "benchmark": "the I/O arena (iosched arena, each scheduler in the engine's process)",
        "schedulers": names, "regimes": regs, "seeds": seed_list, "nodes": sizes, "jobs": nb_jobs,
        "workers": workers or os.cpu_count(), "cores": os.cpu_count(),
        "wall_time_s": round(wall, 3), "target_s": TARGET_S,
        "target_scope": "every scheduler x 5 regimes x 5 seeds, first 5,000 KTH-SP2 jobs, 100 nodes",
        "whole_arena": whole,
        "meets_target": (wall <= TARGET_S) if whole else None, "failed_runs": sorted(res["failed"]),
        "loadavg_1min_before_after": [round(load0, 2), round(load1, 2)],
        **times, "versions": versions(),
    }
    path = Path(result)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for s, v in times["per_scheduler"].items():
        click.echo(f"{s:18s} {v['runs']:4d} runs  sum {v['sum_s']:9.1f} s  median {v['median_s']:7.1f} s")
    click.echo(f"arena: {wall:.0f} s wall ({'target' if whole else 'a subset; the target is'} "
               f"{TARGET_S:.0f} s for the whole arena), "
               f"{times['sum_s']:.0f} s of runs, {len(res['failed'])} failed -> {path}")
    raise SystemExit(1 if res["failed"] else 0)
