"""Benchmark: parallel efficiency of a campaign on this machine's cores.

``iosched bench campaign [--runs 16] [--jobs 500] [--workers N]``
builds a campaign of *runs* identical short runs (one synthetic workload of
*jobs* delay jobs on a 16-node cluster, EASY backfilling, the runs differ only
by their seed label), executes it once with 1 local Dask worker (time T1) and
once with N workers (time TN, N = number of cores by default), each in a
fresh temporary folder, and writes ``results/bench/campaign_efficiency.json``
with T1, TN and the parallel efficiency T1 / (N x TN) (target >= 0.8). Each
is measured ``--repeat`` times (alternately) and the smallest kept.
Times are wall-clock seconds of :func:`iosched.campaign.execute.run_campaign`'s
execution phase (cluster start included). A benchmark, not a test.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path

import click
import yaml

from iosched.campaign.execute import run_campaign, versions
from iosched.campaign.generators import synthetic_workload
from iosched.campaign.schema import load_campaign
from iosched.workloads.writer import dump_workload

__all__ = ["measure", "bench_command"]


def _campaign(folder: Path, runs: int, jobs: int) -> Path:
    wl = folder / "workload.json"
    wl.write_text(dump_workload(synthetic_workload(jobs, 16, seed=1, interarrival=20)))
    spec = {"name": "bench", "output": "out", "platforms": [{"cluster": {"nb_nodes": 16}}],
            "workloads": [str(wl)], "schedulers": ["easy"], "seeds": list(range(runs)),
            "timeout": 600}
    path = folder / "campaign.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def measure(workers: int, runs: int = 16, jobs: int = 500) -> dict:
    """Run the benchmark campaign with *workers* local workers in a temporary
    folder; return ``{"workers", "wall_time_s", "nb_runs", "mean_run_s"}``.

    :raises RuntimeError: a run failed.
    """
    with tempfile.TemporaryDirectory(prefix="iosched-campaign-bench-") as tmp:
        camp = load_campaign(_campaign(Path(tmp), runs, jobs))
        res = run_campaign(camp, workers=workers, progress=False)
        if res.failed or res.nb_done != runs:
            raise RuntimeError(f"benchmark campaign: {len(res.failed)} runs failed: "
                               f"{next(iter(res.failed.values()), '')}")
        walls = []
        for r in res.runs:
            done = json.loads((Path(r["dir"]) / "done.json").read_text())
            walls.append(done["wall_time_s"])
    return {"workers": workers, "wall_time_s": round(res.wall_time_s, 3), "nb_runs": runs,
            "mean_run_s": round(sum(walls) / len(walls), 3)}


@click.command(name="campaign")
@click.option("--runs", default=16, show_default=True, type=click.IntRange(min=1))
@click.option("--jobs", default=500, show_default=True, type=click.IntRange(min=1),
              help="Delay jobs per run (16-node cluster, EASY).")
@click.option("--workers", default=None, type=click.IntRange(min=1),
              help="N (default: number of cores).")
@click.option("--repeat", default=2, show_default=True, type=click.IntRange(min=1),
              help="Measure T1 and TN this many times, alternately, and keep the smallest "
                   "of each (robust to other load on the machine).")
@click.option("--output", default="results/bench/campaign_efficiency.json", show_default=True)
def bench_command(runs, jobs, workers, repeat, output):
    """Measure T1 / (N x TN) for a campaign of identical short runs."""
    n = workers or os.cpu_count() or 1
    versions()  # warm the cache: not part of either measurement
    ones, manys = [], []
    for _ in range(repeat):
        ones.append(measure(1, runs, jobs))
        manys.append(measure(n, runs, jobs))
    one = min(ones, key=lambda m: m["wall_time_s"])
    many = min(manys, key=lambda m: m["wall_time_s"])
    eff = one["wall_time_s"] / (n * many["wall_time_s"])
    result = {
        "benchmark": "campaign parallel efficiency",
        "definition": "T1 / (N x TN), wall-clock s of run_campaign's execution phase",
        "nb_runs": runs, "jobs_per_run": jobs, "platform": "cluster_xml(16)",
        "scheduler": "easy", "engine": "embedded", "cores": os.cpu_count(), "N": n,
        "t1_s": one["wall_time_s"], "tn_s": many["wall_time_s"], "repeat": repeat,
        "t1_all_s": [m["wall_time_s"] for m in ones], "tn_all_s": [m["wall_time_s"] for m in manys],
        "mean_run_s_1_worker": one["mean_run_s"], "mean_run_s_n_workers": many["mean_run_s"],
        "efficiency": round(eff, 3), "target": 0.8, "meets_target": eff >= 0.8,
        "note": ("each run keeps one core busy: its scheduler and engine alternate and are "
                 "pinned to one CPU claimed by the run (iosched.run.affinity); the campaign's "
                 "own supervision is not pinned and competes with N workers"),
        "machine": {"python": sys.version.split()[0], "system": platform.system(),
                    "machine": platform.machine()},
        "versions": versions(),
    }
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    click.echo(f"T1 = {one['wall_time_s']:.2f} s, T{n} = {many['wall_time_s']:.2f} s, "
               f"efficiency = {eff:.3f} (target 0.8) -> {out}")
