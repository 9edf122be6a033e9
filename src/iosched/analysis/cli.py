"""The analysis commands of the ``iosched`` command line (click):
``iosched metrics DIR`` (:func:`metrics_command`), ``iosched report DIR``
(:func:`report_command`) and ``iosched leaderboard CAMPAIGN_DIR``
(:func:`leaderboard_command`).  The burst-buffer reproduction has its own
entry point, ``iosched repro bb``.
"""

from __future__ import annotations

from pathlib import Path

import click

from iosched.analysis.format import format_table
from iosched.analysis.jobs import load_jobs
from iosched.analysis.leaderboard import (DEFAULT_METRIC, PFS_BANDWIDTH, READ_BANDWIDTH, compare_leaderboards,
                                         leaderboard, run_table, write_leaderboard)
from iosched.analysis.metrics_file import write_metrics
from iosched.analysis.plots import plot_gantt, plot_utilization
from iosched.analysis.report import build_report
from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError, one_line

__all__ = ["CommandError", "metrics_command", "report_command", "leaderboard_command"]


class CommandError(click.ClickException):
    """One-line error on stderr, exit status 2."""

    exit_code = 2


@click.command("metrics")
@click.argument("directory", metavar="DIR")
@click.option("--prefix", default="out", show_default=True,
              help="Batsim export prefix: reads DIR/<prefix>_jobs.csv.")
@click.option("--nb-resources", type=int, default=None,
              help="Number of compute resources (default: from --platform, else from "
                   "<prefix>_machine_states.csv, or for burst-buffer runs from the compute "
                   "hosts recorded in DIR/command.json, else largest allocated id + 1).")
@click.option("--platform", type=click.Path(dir_okay=False), default=None,
              help="Platform XML of the run: nb_resources = its compute hosts "
                   "(storage and master hosts left out).")
@click.option("--tau", type=float, default=600.0, show_default=True,
              help="Bounded-slowdown threshold, seconds.")
@click.option("--plots/--no-plots", default=False, show_default=True,
              help="Also write utilization.png and gantt.png in DIR.")
def metrics_command(directory: str, prefix: str, nb_resources: int | None,
                    platform: str | None, tau: float, plots: bool) -> None:
    """Compute job and run metrics of a Batsim output directory.

    Writes DIR/metrics.json and prints a table.  Definitions: waiting
    W = b - s, turnaround F = c - s, slowdown F/D, bounded slowdown
    max(1, F/max(D, tau)), makespan = last finish - first submission,
    utilization = busy node-seconds / (nb_resources x makespan).
    Burst-buffer runs (workload bb) are merged into the REJECTED workload
    job they run: one row per job, its real submission time, its compute
    nodes only.
    """
    try:
        metrics = write_metrics(directory, prefix=prefix, nb_resources=nb_resources, tau=tau,
                                platform=platform)
        if plots:
            jobs = load_jobs(directory, prefix=prefix)
            if metrics["nb_resources"] is not None:
                plot_utilization(jobs, metrics["nb_resources"], Path(directory) / "utilization.png")
            plot_gantt(jobs, Path(directory) / "gantt.png")
    except InputError as exc:
        raise CommandError(one_line(exc)) from None
    click.echo(format_table(metrics), nl=False)


@click.command("report", cls=OneLineErrorCommand)
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--output", "-o", default=None, type=click.Path(file_okay=False),
              help="Report folder (default: results/reports/<campaign name>).")
@click.option("--top", default=50, show_default=True, type=click.IntRange(min=1),
              help="Highest waiting times per scheduler in the tail plot.")
def report_command(directory, output, top):
    """Write a Markdown and an HTML report of the campaign in DIR."""
    try:
        paths = build_report(directory, output, top=top)
    except InputError as e:
        raise click.ClickException(one_line(e)) from None
    click.echo(f"report: {paths['markdown']} and {paths['html']} "
               f"({len(paths['figures'])} figures)")


@click.command("leaderboard", cls=OneLineErrorCommand, error_prefix="iosched leaderboard")
@click.argument("campaign_dir", metavar="CAMPAIGN_DIR", type=click.Path(file_okay=False))
@click.option("--baseline", default="easy", show_default=True,
              help="Scheduler label the paired differences are taken to.")
@click.option("--metric", default=DEFAULT_METRIC, show_default=True,
              help="Ranking metric (a column of the leaderboard: waiting_time_mean, "
                   "waiting_time_p95, bounded_slowdown_mean, utilization, jobs_rejected, "
                   "gonthier_stretch_mean, jeannot_stretch_mean, io_*).")
@click.option("--out", "-o", "out", default=None, type=click.Path(file_okay=False),
              help="Output folder (default: results/leaderboards/<campaign name>).")
@click.option("--read-bandwidth", type=float, default=READ_BANDWIDTH, show_default=True,
              help="Load bandwidth of the Gonthier stretch's reference flow, bytes/s.")
@click.option("--pfs-bandwidth", type=float, default=PFS_BANDWIDTH, show_default=True,
              help="I/O bandwidth B of the Jeannot stretch's time alone, bytes/s.")
@click.option("--against", default=None, type=click.Path(file_okay=False), metavar="OTHER_DIR",
              help="Compare with the leaderboard of another run of the same campaign (e.g. on the "
                   "other engine): same rank order and every metric within --tolerance, else exit 1.")
@click.option("--tolerance", type=float, default=0.01, show_default=True,
              help="With --against: largest relative difference of a metric's mean.")
def leaderboard_command(campaign_dir, baseline, metric, out, read_bandwidth, pfs_bandwidth, against,
                        tolerance):
    """Print the leaderboard of the campaign in CAMPAIGN_DIR (Markdown) and
    write leaderboard.md, .html, .csv and the rankings figure.

    Per regime (workload), machine (platform) and scheduler: mean and p95
    waiting time, mean bounded slowdown, the families' stretches,
    utilization, jobs rejected and the I/O metrics runs record, as means
    over seeds with 95 % t intervals and paired differences to the
    baseline (docs/leaderboard.md).
    """
    try:
        res = write_leaderboard(campaign_dir, out, baseline=baseline, metric=metric,
                                read_bandwidth=read_bandwidth, pfs_bandwidth=pfs_bandwidth)
        cmp = None
        if against is not None:
            other = leaderboard(run_table(against, read_bandwidth, pfs_bandwidth), baseline, metric)
            cmp = compare_leaderboards(res["board"], other, tolerance)
    except InputError as e:
        raise CommandError(one_line(e)) from None
    click.echo(res["markdown"], nl=False)
    p = res["paths"]
    click.echo(f"leaderboard: {p['markdown']}, {p['html']}, {p['csv']} and {p['figure']}", err=True)
    if cmp is None:
        return
    click.echo(f"\nAgainst {against} (tolerance {tolerance:g}):")
    for _, r in cmp["metrics"].iterrows():
        click.echo(f"  {r['metric']}: largest relative difference {r['max_relative_difference']:.3g}"
                   + (f" ({r['where']})" if r["where"] else ""))
    for regime, machine, oa, ob in cmp["order"]:
        click.echo(f"  ORDER {regime}/{machine}: {', '.join(oa)} | {', '.join(ob)}")
    for regime, machine, sched, m, xa, xb in cmp["outside"]:
        click.echo(f"  OUTSIDE {regime}/{machine}/{sched} {m}: {xa:.6g} | {xb:.6g}")
    click.echo(f"  {'agree' if cmp['agree'] else 'DISAGREE'}: rank order "
               f"{'same' if not cmp['order'] else 'differs in ' + str(len(cmp['order']))}, "
               f"{len(cmp['outside'])} metric means outside the tolerance")
    if not cmp["agree"]:
        raise SystemExit(1)
