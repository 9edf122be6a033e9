"""The main job (``make demo``): EASY backfilling on the first 1000 jobs of
the KTH-SP2 trace, on the burst-buffer paper's ``dragonfly96`` platform, with
the embedded engine.

Steps: convert the trace (Standard Workload Format) to a Batsim workload for
the platform's 96 compute nodes (jobs that can never fit are reported and
dropped), run ``schedulers/baseline.py`` (policy ``easy``) against
``iosched-batsim``, then write and print the metrics and draw the
utilization and Gantt figures. Outputs go to ``results/demo/``.

Usage: ``python -m iosched.demo [--swf PATH] [--jobs 1000] [--scheduler easy]
[--platform platforms/dragonfly96.xml] [--output results/demo]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from iosched.engine.platform import count_compute_hosts
from iosched.errors import InputError
from iosched.analysis.format import format_table
from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics_file import write_metrics
from iosched.analysis.plots import plot_gantt, plot_utilization
from iosched.run.result import RunError
from iosched.run.simulation import run_simulation
from iosched.sched.registry import REPO_ROOT
from iosched.workloads.default_swf import find_default_swf
from iosched.workloads.convert import dump_workload, swf_to_batsim


@click.command(name="demo")
@click.option("--swf", type=click.Path(dir_okay=False), default=None,
              help="SWF trace [default: ../shared/data/KTH-SP2-1996-2.1-cln.swf]")
@click.option("--jobs", "nb_jobs", type=click.IntRange(min=1), default=1000, show_default=True,
              help="number of jobs taken from the start of the trace")
@click.option("--scheduler", default="easy", show_default=True)
@click.option("--platform", type=click.Path(dir_okay=False),
              default=str(REPO_ROOT / "platforms" / "dragonfly96.xml"), show_default=True)
@click.option("--output", type=click.Path(file_okay=False),
              default=str(REPO_ROOT / "results" / "demo"), show_default=True)
def demo_command(swf, nb_jobs, scheduler, platform, output):
    """Run the main job and print its metrics."""
    try:
        if swf is None:
            swf = find_default_swf()
        out = Path(output)
        out.mkdir(parents=True, exist_ok=True)
        nb_res = count_compute_hosts(platform)
        workload, report = swf_to_batsim(swf, nb_res=nb_res, first=nb_jobs)
        click.echo(f"workload: {report.kept} jobs from {Path(swf).name} for {nb_res} compute nodes; "
                   f"{report.summary()}")
        wl_path = out / "workload.json"
        with open(wl_path, "w") as f:
            dump_workload(workload, f)
        click.echo(f"simulating with '{scheduler}' on {Path(platform).name} (embedded engine)...")
        result = run_simulation(platform, wl_path, scheduler, out, timeout=3600)
        metrics = write_metrics(out, nb_resources=nb_res)
        click.echo(format_table(metrics))
        jobs = load_jobs(out / "out_jobs.csv")
        plot_utilization(jobs, nb_res, out / "utilization.png")
        plot_gantt(jobs, out / "gantt.png", max_jobs=300)
        click.echo(f"wall time {result.wall_time:.1f} s; outputs in {out}: out_jobs.csv, "
                   "out_schedule.csv, out_machine_states.csv, metrics.json, utilization.png, gantt.png")
    except (InputError, RunError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


def main(argv=None):
    """Entry point of ``python -m iosched.demo``."""
    return demo_command.main(args=argv, prog_name="iosched demo", standalone_mode=True)


if __name__ == "__main__":
    sys.exit(main())
