"""The ``iosched campaign`` command: run or resume a campaign, or refresh
the metrics of its finished runs, then write its tidy table."""

from __future__ import annotations

import dataclasses
import signal
import sys

import click

from iosched.analysis.campaign import campaign_table, write_table
from iosched.campaign.execute import run_campaign
from iosched.campaign.jobqueue import jobqueue_settings
from iosched.campaign.refresh import refresh_metrics
from iosched.campaign.rundir import DONE
from iosched.campaign.schema import Campaign, load_campaign
from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError, one_line
from iosched.run.simulation import engine_command

__all__ = ["campaign_command"]


def _write_campaign_table(camp: Campaign) -> None:
    """OUTPUT/runs.parquet and OUTPUT/runs.csv; exits 2 with one line on error."""
    try:
        write_table(campaign_table(camp.output), camp.output)
    except InputError as e:
        click.echo(f"Error: {one_line(e)}", err=True)
        sys.exit(2)


def _refresh_command(camp: Campaign, progress: bool, table: bool) -> None:
    """``iosched campaign FILE --refresh-metrics``: prints, then exits."""
    try:
        res = refresh_metrics(camp, progress=progress, echo=lambda s: click.echo(s, err=True))
    except InputError as e:
        click.echo(f"Error: {one_line(e)}", err=True)
        sys.exit(2)
    if res.interrupted_signal is not None:
        click.echo(f"campaign {camp.name}: metrics refresh interrupted; run the same command "
                   f"again", err=True)
        sys.exit(128 + int(res.interrupted_signal))
    if table:
        _write_campaign_table(camp)
    err = f", {len(res.errors)} error{'s' if len(res.errors) != 1 else ''}" if res.errors else ""
    click.echo(f"campaign {camp.name}: metrics: {len(res.refreshed)} refreshed, "
               f"{len(res.changed)} changed, {len(res.skipped)} skipped (no {DONE}){err} "
               f"-> {camp.output}")
    for rid in sorted(res.skipped):
        click.echo(f"NOT REFRESHED {rid}: {res.skipped[rid]}, no {DONE}")
    for rid in sorted(res.errors):
        click.echo(f"ERROR {rid}: {res.errors[rid]}")
    sys.exit(1 if res.errors else 0)


# --------------------------------------------------------------------------
# command line


@click.command("campaign", cls=OneLineErrorCommand)
@click.argument("file", metavar="FILE.yaml", type=click.Path(dir_okay=False))
@click.option("--workers", "-j", type=int, default=None,
              help="Local Dask workers (default: number of cores).")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Use an existing dask.distributed scheduler (e.g. tcp://host:8786) "
                   "instead of a local cluster.")
@click.option("--jobqueue", "jobqueue", default=None, metavar="SYSTEM",
              help="Start the workers as batch jobs of SYSTEM (slurm or pbs; needs "
                   "dask-jobqueue); overrides the file's 'jobqueue' system.")
@click.option("--jobs", type=int, default=None,
              help="Batch jobs kept running, one worker each (default: the file's, else 1).")
@click.option("--jobqueue-option", "jobqueue_options", multiple=True, metavar="KEY=VALUE",
              help="A setting of the batch jobs: cores, memory, walltime, queue, account, "
                   "interface, python, job_name, local_directory, log_directory, "
                   "job_extra_directives, job_script_prologue (repeatable); overrides the file's.")
@click.option("--output", "-o", default=None, type=click.Path(file_okay=False),
              help="Output folder (default: the file's 'output').")
@click.option("--retry-failed", is_flag=True, help="Re-run the runs that failed before.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal).")
@click.option("--table/--no-table", default=True, show_default=True,
              help="Write OUTPUT/runs.parquet and OUTPUT/runs.csv at the end.")
@click.option("--engine", default=None, metavar="ENGINE",
              help="Engine for every run: 'embedded', 'batsim' (the real Batsim on PATH) or a "
                   "command; overrides the file's 'engine' (default: embedded).")
@click.option("--in-process/--two-process", "in_process", default=None,
              help="Run each scheduler inside the embedded engine's process, called by function "
                   "(same outputs, faster), or as a second process over ZeroMQ; overrides the "
                   "file's 'in_process' (default: two processes).")
@click.option("--refresh-metrics", is_flag=True,
              help="Simulate nothing: recompute the metrics of the finished runs (done.json) "
                   "from their out_*.csv with the current code, rewrite metrics.json, "
                   "done.json and the table.")
def campaign_command(file, workers, cluster, jobqueue, jobs, jobqueue_options, output,
                     retry_failed, progress, table, engine, in_process, refresh_metrics):
    """Run or resume a campaign: platforms x workloads x schedulers x seeds.

    Finished runs (done.json) are skipped, failed runs (failed.json) are
    listed and re-run only with --retry-failed, runs killed mid-way are
    re-run. Exit status: 0 all runs finished, 1 some runs failed, 2 bad
    input, 128+N interrupted by signal N.

    With --refresh-metrics nothing is simulated: the metrics of the finished
    runs are recomputed from their output files; exit status 1 when some
    finished runs have missing or unreadable outputs (each listed).

    Where the runs execute: --cluster ADDRESS, else --jobqueue SYSTEM, else
    --workers N (local), else the file's 'jobqueue' section, else locally.
    """
    if progress is None:
        progress = sys.stderr.isatty()
    batch = (("--jobqueue", jobqueue is not None), ("--jobs", jobs is not None),
             ("--jobqueue-option", bool(jobqueue_options)))
    if refresh_metrics:
        given = [name for name, value in (("--workers", workers is not None),
                                          ("--cluster", cluster is not None),
                                          ("--retry-failed", retry_failed), *batch) if value]
        if given:
            click.echo(f"Error: --refresh-metrics runs no simulation (in-process, no Dask): "
                       f"{' and '.join(given)} cannot be used with it", err=True)
            sys.exit(2)
    for other, value in (("--cluster", cluster is not None), ("--workers", workers is not None)):
        given = [name for name, v in batch if v]
        if value and given:
            where = "an existing Dask scheduler" if other == "--cluster" else "local workers"
            click.echo(f"Error: {other} cannot be used with {' and '.join(given)}: the runs go "
                       f"to {where} or to batch jobs, not both", err=True)
            sys.exit(2)
    try:
        camp = load_campaign(file, output=output)
        if engine is not None and refresh_metrics:
            # selects the runs of that engine (part of their identity); nothing is run
            camp = dataclasses.replace(camp, engine=engine)
        elif engine is not None:
            if engine == "batsim":
                engine_command("batsim")  # one-line error now if batsim is not on PATH
            camp = dataclasses.replace(camp, engine=engine)
        if in_process is not None:
            camp = dataclasses.replace(camp, in_process=in_process)
        if not refresh_metrics:
            camp = dataclasses.replace(camp, jobqueue=jobqueue_settings(
                camp.jobqueue, jobqueue, jobqueue_options, jobs))
        if camp.in_process and camp.engine != "embedded" and not refresh_metrics:
            raise InputError(f"--in-process: the scheduler runs inside the embedded engine only, "
                             f"not with engine {camp.engine!r}")
    except InputError as e:
        click.echo(f"Error: {one_line(e)}", err=True)
        sys.exit(2)
    if refresh_metrics:
        _refresh_command(camp, progress, table)
    try:
        res = run_campaign(camp, workers=workers, cluster=cluster, retry_failed=retry_failed,
                           progress=progress, echo=lambda s: click.echo(s, err=True))
    except InputError as e:
        click.echo(f"Error: {one_line(e)}", err=True)
        sys.exit(2)
    if res.interrupted:
        sig = res.interrupted_signal or signal.SIGINT
        click.echo(f"campaign {camp.name}: interrupted; run the same command to resume", err=True)
        sys.exit(128 + int(sig))
    if table:
        _write_campaign_table(camp)
    nb_done = res.nb_done
    click.echo(f"campaign {camp.name}: {nb_done}/{len(res.runs)} runs finished, "
               f"{len(res.failed)} failed ({len(res.executed)} executed now) -> {camp.output}")
    for rid in sorted(res.failed):
        click.echo(f"FAILED {rid}: {res.failed[rid]}")
    sys.exit(1 if res.failed else 0)
