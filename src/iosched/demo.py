"""The main job (``make demo``, ``iosched demo``): a small I/O arena, then
the burst-buffer showcase on request, on the embedded engine.

**The arena demo** (the default; issue 27, item 5): :data:`ARENA_SCHEDULERS`
-- EASY and one representative of each I/O-aware family (burst buffers
``sjf-bb``, list scheduling ``io-list``, data locality ``loc-fcfs``,
data-aware dispatch ``dad``, PFS-bandwidth-aware backfilling
``io-aware``) -- on the :data:`ARENA_REGIMES` regime of the first
``--jobs`` jobs of the KTH-SP2 trace (``--swf``), seed ``--seed``, on the
arena's 100-node reference machine, run as an arena
(:func:`iosched.experiments.arena.campaign.run_arena`: a campaign
on a local Dask cluster of ``--parallel`` workers, each scheduler inside
the engine's process). It prints the leaderboard and writes, under
``--output``, the campaign (``n100/``), its leaderboard
(``n100/leaderboard/``) and ``report.md`` / ``report.html`` with the I/O
views (bytes per tier, burst-buffer occupancy, PFS throughput over time).
A second run of the same command re-runs nothing (the campaign resumes).

**The burst-buffer showcase** (``--bb``): the first 1000 jobs of the
KTH-SP2 trace with burst-buffer requests -- by default the burst-buffer
paper's own draws (its artifact's
1000-job workload, ``../shared/data/bb-artifact``, read by
:mod:`iosched.experiments.bb.artifact`); with ``--generator``, or when that
folder is absent (e.g. after a plain ``pip install``; :func:`default_runs`),
iosched's generator :func:`iosched.experiments.bb.workload.generate` with
``--seed`` on the default trace (the same model: Kopanski & Rzadca,
Euro-Par 2021, Section 4.1) -- run on the paper's
``dragonfly96`` platform (96 compute nodes,
12 burst-buffer nodes, one PFS; every stage-in, stage-out and PFS transfer
is simulated by SimGrid) by three schedulers of that paper:

* ``fcfs-easy`` -- EASY backfilling that reserves compute nodes only (the
  I/O-unaware baseline);
* ``sjf-bb`` -- EASY with a simultaneous node + burst-buffer reservation,
  shortest job first;
* ``plan-2`` -- plan-based scheduling with simulated annealing (alpha = 2).

It prints a comparison table (times with their units, ratios to the
baseline) and writes to ``results/demo/`` (the checkout's, or the working
directory's when installed: :data:`iosched.paths.RESULTS_DIR`): one folder per run (Batsim's
CSV files, ``metrics.json``, the scheduler's I/O record), ``comparison.csv`` /
``comparison.md``, the figures, and ``report.html`` (self-contained) and
``report.md``, with the runs' I/O (:func:`iosched.analysis.ioplots.io_blocks`:
bytes per tier, burst-buffer occupancy, throughput over time).

Adding a run to the showcase (e.g. one representative of a new family on its own
platform) takes one entry of :data:`RUNS`: a :class:`DemoRun` naming its
label, scheduler, platform and workload builder (a function
``(swf path, nb_jobs, seed, nb_compute) -> Batsim workload dict``). The
first entry is the baseline of the ratios.

The simulations run in parallel, as many at once as the machine has CPUs
(at most 2 by default, ``--parallel``). Same inputs and seed give the same
tables and figures.

Usage: ``python -m iosched.demo [--bb [--generator]] [--swf PATH] [--seed 1]
[--jobs 1000] [--output results/demo] [--parallel N]``.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import click
import pandas as pd

from iosched.analysis.format import markdown_table
from iosched.analysis.io import load_io
from iosched.analysis.ioplots import io_blocks
from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics import job_metrics
from iosched.analysis.metrics_file import write_metrics
from iosched.analysis.plots import plot_ecdf, plot_gantt, plot_utilization
from iosched.analysis.report import render_html, render_markdown
from iosched.analysis.units import format_duration
from iosched.engine.platform import count_compute_hosts
from iosched.errors import InputError
from iosched.experiments.bb import artifact
from iosched.experiments.arena.campaign import arena_board_text, run_arena
from iosched.experiments.bb.workload import first_jobs, generate, write_workload
from iosched.paths import PLATFORMS_DIR, RESULTS_DIR
from iosched.run.result import RunError
from iosched.run.simulation import run_simulation
from iosched.workloads.default_swf import DEFAULT_SWF_HELP, find_default_swf

__all__ = ["ARENA_SCHEDULERS", "ARENA_REGIMES", "DemoRun", "RUNS", "GENERATOR_RUNS", "bb_workload",
           "artifact_workload", "default_runs", "run_arena_demo", "run_demo", "comparison_rows",
           "main"]

#: The arena demo's schedulers: the baseline EASY, then the cheapest
#: representative of each family that serves its part of the regime.
ARENA_SCHEDULERS = ("easy", "sjf-bb", "io-list", "loc-fcfs", "dad", "io-aware")
#: The arena demo's regimes (:data:`iosched.experiments.arena.regimes.REGIMES`).
ARENA_REGIMES = ("mixed",)
#: Compute nodes of the arena demo's machine.
ARENA_NODES = 100

PLATFORMS = PLATFORMS_DIR


def bb_workload(swf, nb_jobs: int, seed: int, nb_compute: int) -> dict:
    """The burst-buffer workload of the demo: the first ``nb_jobs`` jobs of
    ``swf`` with burst-buffer requests (:func:`iosched.experiments.bb.workload.generate`).

    :param swf: SWF path (plain or ``.swf.gz``).
    :param nb_jobs: number of jobs kept from the start of the trace (>= 1).
    :param seed: random seed of the burst-buffer draws.
    :param nb_compute: compute nodes of the platform (the workload's ``nb_res``).
    :returns: a Batsim workload dict (jobs with ``bb``, ``flops``, ``com`` fields).
    :raises InputError: unreadable SWF, bad arguments.
    """
    return generate(swf, seed=seed, first=nb_jobs, nb_res=nb_compute)


def artifact_workload(swf, nb_jobs: int, seed: int, nb_compute: int) -> dict:
    """The burst-buffer paper's own workload: the first ``nb_jobs`` (at most
    1000) jobs of its artifact's 1000-job file (:mod:`iosched.experiments.bb.artifact`);
    ``swf``, ``seed`` and ``nb_compute`` are not used (fixed draws for 96
    compute nodes).

    :raises InputError: the artifact's folder is missing, ``nb_jobs`` > 1000.
    """
    w = artifact.load(artifact.default_dir() / artifact.FIRST_1000)
    if nb_jobs > len(w["jobs"]):
        raise InputError(f"demo: --jobs {nb_jobs}: the artifact's workload has "
                         f"{len(w['jobs'])} jobs (use --generator for more)")
    return first_jobs(w, nb_jobs)


@dataclass(frozen=True)
class DemoRun:
    """One simulation of the demo.

    :param label: name in the tables and figures (unique).
    :param scheduler: a registered scheduler name (``iosched.schedulers.registry``).
    :param platform: SimGrid platform XML.
    :param workload: builder ``(swf, nb_jobs, seed, nb_compute) -> workload
        dict``; runs with the same builder and platform share one file.
    :param options: scheduler options (pybatsim ``-o``).
    """

    label: str
    scheduler: str
    platform: Path
    workload: Callable[..., dict]
    options: dict = field(default_factory=dict)


#: The demo's runs, baseline first. One entry per scheduler shown.
RUNS: list[DemoRun] = [
    DemoRun("fcfs-easy", "fcfs-easy", PLATFORMS / "dragonfly96.xml", artifact_workload),
    DemoRun("sjf-bb", "sjf-bb", PLATFORMS / "dragonfly96.xml", artifact_workload),
    DemoRun("plan-2", "plan-2", PLATFORMS / "dragonfly96.xml", artifact_workload),
]
#: The same runs on iosched's generator (``--generator``).
GENERATOR_RUNS: list[DemoRun] = [DemoRun(r.label, r.scheduler, r.platform, bb_workload)
                                 for r in RUNS]



def default_runs(echo=print) -> list:
    """The runs of ``iosched demo`` without ``--generator``: :data:`RUNS`
    (the paper's own workload) when the artifact's folder is found
    (:func:`iosched.experiments.bb.artifact.default_dir`), else
    :data:`GENERATOR_RUNS` (iosched's generator on the default trace, which
    ships with the package), with a note to ``echo``. Raises nothing.
    """
    try:
        artifact.default_dir()
    except InputError:
        echo(f"demo: the burst-buffer paper's workloads ({artifact.ARTIFACT_DIR_NAME}) are not in "
             "the shared data folder: using iosched's generator instead (as --generator)")
        return GENERATOR_RUNS
    return RUNS


#: comparison columns: (metric key, header, kind) -- kind "time" (seconds,
#: shown with a unit), "ratio" or "int"
_COLUMNS = (
    ("waiting_time.mean", "mean wait", "time"),
    ("waiting_time.p95", "p95 wait", "time"),
    ("waiting_time.max", "max wait", "time"),
    ("turnaround.mean", "mean turnaround", "time"),
    ("bounded_slowdown.mean", "mean bounded slowdown", "number"),
    ("makespan", "makespan", "time"),
    ("utilization", "utilization", "number"),
    ("nb_jobs_started", "jobs started", "int"),
)


def _get(metrics: dict, key: str):
    v = metrics
    for k in key.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    return v


def comparison_rows(results: dict[str, dict], baseline: str) -> tuple[list, list, pd.DataFrame]:
    """The comparison table of the demo's runs.

    :param results: label -> metrics dict (``metrics.json``), in run order.
    :param baseline: the label the ratios are relative to.
    :returns: ``(header, rows, frame)``: the printed table (times with
        their unit, e.g. ``"1.50 h"``; below each other run, the ratios to
        the baseline as ``x0.83``), and a DataFrame with the raw values in
        seconds (one row per run, column names as the metric keys).
    """
    header = ["scheduler", *(h for _, h, _ in _COLUMNS)]
    rows, raw = [], []
    base = results.get(baseline)
    for label, m in results.items():
        cells, rec = [label], {"scheduler": label}
        for key, _, kind in _COLUMNS:
            v = _get(m, key)
            rec[key] = v
            if v is None:
                text = "-"
            elif kind == "time":
                text = format_duration(v)
            elif kind == "int":
                text = str(int(v))
            else:
                text = f"{v:.2f}"
            b = _get(base, key) if base is not None else None
            if label != baseline and kind != "int" and v is not None and b:
                text += f" (x{v / b:.2f})"
            cells.append(text)
        rows.append(cells)
        raw.append(rec)
    return header, rows, pd.DataFrame(raw)


def _text_table(header: list, rows: list) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in [header, *rows]]
    return "\n".join(lines)


def run_demo(swf, nb_jobs: int, seed: int, output, parallel: int, runs=None,
             echo=print) -> dict:
    """Run the demo and write its outputs (module docstring).

    :param swf: SWF path (None: the default trace, :func:`~iosched.workloads.default_swf.find_default_swf`).
    :param nb_jobs: jobs taken from the start of the trace.
    :param seed: seed of the workload draws.
    :param output: output folder (created).
    :param parallel: simulations at once (>= 1).
    :param runs: the :class:`DemoRun` list (default :data:`RUNS`; the first
        is the baseline).
    :param echo: where progress lines go.
    :returns: ``{"metrics": label -> metrics, "table": str, "simulation_s":
        wall time of the simulations, "report": path}``.
    :raises InputError: bad input; :raises RunError: a simulation failed.
    """
    runs = list(RUNS if runs is None else runs)
    if not runs:
        raise InputError("demo: no run to make")
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        raise InputError(f"demo: duplicate labels in {labels}")
    swf = find_default_swf() if swf is None else swf
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    # workloads: one file per (builder, platform)
    files: dict = {}
    for r in runs:
        key = (r.workload, str(r.platform))
        if key in files:
            continue
        nb_compute = count_compute_hosts(str(r.platform))
        wl = r.workload(swf, nb_jobs, seed, nb_compute)
        path = out / f"workload_{len(files)}_{Path(r.platform).stem}.json"
        write_workload(wl, path)
        files[key] = path
        echo(f"workload {path.name}: {len(wl['jobs'])} jobs ({wl.get('description', '')}) "
             f"for {nb_compute} compute nodes of {Path(r.platform).name}")
    echo(f"simulating {', '.join(labels)} ({min(parallel, len(runs))} at once, embedded engine)...")

    def simulate(r: DemoRun):
        t = time.monotonic()
        res = run_simulation(r.platform, [files[(r.workload, str(r.platform))]], r.scheduler,
                             out / r.label, options=dict(r.options), timeout=3600, cpu="none")
        echo(f"  {r.label}: done in {time.monotonic() - t:.1f} s")
        return res

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(runs)))) as pool:
        results = list(pool.map(simulate, runs))
    sim_s = time.monotonic() - t0

    metrics, tables = {}, []
    for r, res in zip(runs, results):
        metrics[r.label] = write_metrics(out / r.label, nb_resources=res.compute_hosts)
    header, rows, frame = comparison_rows(metrics, runs[0].label)
    frame.to_csv(out / "comparison.csv", index=False)
    (out / "comparison.md").write_text("\n".join(markdown_table(header, rows)) + "\n",
                                       encoding="utf-8")
    table = _text_table(header, rows)

    figdir = out / "figures"
    figdir.mkdir(exist_ok=True)
    per_job = []
    for r, res in zip(runs, results):
        jobs = load_jobs(out / r.label)
        jobs.attrs["path"] = f"{r.label}/out_jobs.csv"
        plot_utilization(jobs, int(res.compute_hosts or metrics[r.label]["nb_resources"]),
                         figdir / f"utilization_{r.label}.png")
        plot_gantt(jobs, figdir / f"gantt_{r.label}.png")
        pj = job_metrics(jobs)
        pj["scheduler"] = r.label
        per_job.append(pj)
    plot_ecdf(pd.concat(per_job, ignore_index=True), figdir / "ecdf_waiting_time.png")

    base = runs[0].label
    blocks: list = [("h1", "iosched demo: I/O-aware scheduling with burst buffers"),
                    ("p", f"First {nb_jobs} jobs of {Path(swf).name} with burst-buffer requests "
                          f"(seed {seed}), simulated by the embedded Batsim-compatible engine "
                          "(SimGrid computes every compute phase, stage-in, stage-out and PFS "
                          "transfer). Schedulers of Kopanski & Rzadca (Euro-Par 2021): "
                          + ", ".join(f"{r.label} ({r.scheduler} on {Path(r.platform).name})"
                                      for r in runs) + "."),
                    ("h2", "Comparison"),
                    ("p", f"Times with their unit; in brackets, the ratio to {base} "
                          "(below 1 is better except for utilization). Waits are measured "
                          "from submission to start; utilization over the compute nodes."),
                    ("table", header, rows)]
    records = {r.label: rec for r in runs if (rec := load_io(out / r.label)) is not None}
    blocks += io_blocks(records, figdir)
    blocks += [("h2", "Waiting times"),
                    ("img", "figures/ecdf_waiting_time.png", "ECDF of the waiting times")]
    for r in runs:
        blocks += [("h3", r.label),
                   ("img", f"figures/utilization_{r.label}.png",
                    f"Busy compute nodes and queue length, {r.label}"),
                   ("img", f"figures/gantt_{r.label}.png",
                    f"Allocations of every job, coloured by waiting time, {r.label}")]
    blocks.append(("p", "Raw values (seconds): comparison.csv; per run: <label>/out_jobs.csv "
                        "(Batsim's format, readable by evalys), metrics.json, and the I/O record "
                        "io_phases.csv, io_holds.csv, io_inputs.csv (docs/outputs.md)."))
    (out / "report.md").write_text(render_markdown(blocks), encoding="utf-8")
    html = out / "report.html"
    html.write_text(render_html(blocks, "iosched demo", out), encoding="utf-8")
    return {"metrics": metrics, "table": table, "simulation_s": sim_s, "report": html}


def run_arena_demo(swf, nb_jobs: int, seed: int, output, parallel: int, echo=print) -> dict:
    """The arena demo (module docstring): :data:`ARENA_SCHEDULERS` on
    :data:`ARENA_REGIMES`, seed *seed*, the first *nb_jobs* jobs of *swf*
    (None: the default trace) on the 100-node reference machine.

    :param parallel: local Dask workers (runs at once, >= 1).
    :returns: :func:`iosched.experiments.arena.campaign.run_arena`'s result.
    :raises InputError: bad input (a failed run is in the result's ``failed``).
    """
    return run_arena(ARENA_SCHEDULERS, ARENA_REGIMES, [seed], [ARENA_NODES], output,
                     jobs=nb_jobs, trace=swf, workers=parallel, in_process=True, echo=echo)


@click.command(name="demo")
@click.option("--swf", type=click.Path(dir_okay=False), default=None,
              help=f"SWF trace, plain or .swf.gz [default: {DEFAULT_SWF_HELP}]")
@click.option("--jobs", "nb_jobs", type=click.IntRange(min=1), default=1000, show_default=True,
              help="number of jobs taken from the start of the trace")
@click.option("--seed", type=click.IntRange(min=0), default=1, show_default=True,
              help="seed of the I/O draws")
@click.option("--output", type=click.Path(file_okay=False),
              default=str(RESULTS_DIR / "demo"), show_default=True)
@click.option("--parallel", type=click.IntRange(min=1), default=min(2, os.cpu_count() or 1),
              show_default=True, help="simulations run at once")
@click.option("--generator", is_flag=True,
              help="use iosched's generator on --swf with --seed instead of the paper's own "
                   "1000-job workload (the default when the paper's workloads are not in the "
                   "shared data folder; with --bb)")
@click.option("--bb", is_flag=True,
              help="the burst-buffer showcase (three schedulers of Kopanski & Rzadca on "
                   "dragonfly96) instead of the arena")
def demo_command(swf, nb_jobs, seed, output, parallel, generator, bb):
    """Run the arena demo (or --bb: the burst-buffer showcase) and print its table."""
    if generator and not bb:
        raise click.UsageError("--generator: only with --bb (the arena always generates its workload)")
    if not bb:
        t0 = time.monotonic()
        try:
            res = run_arena_demo(swf, nb_jobs, seed, output, parallel, echo=click.echo)
        except InputError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo("")
        click.echo(arena_board_text(res["sizes"][0]["leaderboard"]["board"]))
        click.echo("")
        for rid in sorted(res["failed"]):
            click.echo(f"FAILED {rid}: {res['failed'][rid]}")
        click.echo(f"demo: total {time.monotonic() - t0:.1f} s (wall clock); report "
                   f"{res['report']['html']}")
        sys.exit(1 if res["failed"] else 0)
    try:
        t0 = time.monotonic()
        res = run_demo(swf, nb_jobs, seed, output, parallel,
                       runs=GENERATOR_RUNS if generator else default_runs(click.echo),
                       echo=click.echo)
        click.echo("")
        click.echo(res["table"])
        click.echo("")
        click.echo(f"demo: simulations {res['simulation_s']:.1f} s (wall clock), total "
                   f"{time.monotonic() - t0:.1f} s; report {res['report']}")
    except (InputError, RunError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


def main(argv=None):
    """Entry point of ``python -m iosched.demo``."""
    return demo_command.main(args=argv, prog_name="iosched demo", standalone_mode=True)


if __name__ == "__main__":
    sys.exit(main())
