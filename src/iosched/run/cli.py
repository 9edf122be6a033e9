"""The ``iosched run`` command: one simulation (scheduler + engine), or a
robin experiment file, then its metrics and a one-line summary.

On a terminal, a run on the embedded engine shows its progress (simulated
time reached, jobs ended, wall clock) on one rewritten stderr line, read from
the engine's ``--progress-file`` (an embedded-engine extension) in the output
folder (``progress.txt``).

SIGTERM / SIGHUP / Ctrl-C end the command cleanly: the processes of the run
are cleaned up (:mod:`iosched.run.supervise`), then one line is printed and
the status is 128+signal (130 for Ctrl-C).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from pathlib import Path

import click

from iosched.clicommon import OneLineErrorCommand
from iosched.checks import loads_json
from iosched.errors import InputError, one_line
from iosched.run.result import RunError, RunResult
from iosched.run.robin import run_robin
from iosched.run.simulation import (
    DEFAULT_FAILURE_TIMEOUT,
    DEFAULT_READY_TIMEOUT,
    DEFAULT_SUCCESS_TIMEOUT,
    RUN_LAYERS,
    run_simulation,
)
from iosched.run.supervise import Signalled, signals_raise

__all__ = ["run_command", "summary_line", "progress_text", "show_progress", "PROGRESS_FILE"]


def _print_metrics(result: RunResult, no_metrics: bool) -> None:
    """Write and print the run's metrics; utilization counts the compute
    nodes of the engine command (storage and master hosts excluded, roles
    given with ``-r`` included; ``result.compute_hosts``, counted by the
    runner with :func:`iosched.run.hosts.compute_hosts_of_argv`) when its
    platform is readable."""
    if no_metrics:
        return
    # pandas is imported here only: a run with --no-metrics starts without it
    from iosched.analysis.format import format_table
    from iosched.analysis.metrics_file import write_metrics

    if result.jobs_csv is None:
        raise RunError(f"the engine wrote no {result.export_prefix.name}_jobs.csv in "
                       f"{result.export_prefix.parent}")
    metrics = write_metrics(result.export_prefix.parent, prefix=result.export_prefix.name,
                            nb_resources=result.compute_hosts)
    click.echo(format_table(metrics))
    click.echo(summary_line(metrics))


def summary_line(metrics: dict) -> str:
    """The one-line summary ``iosched run`` ends with: jobs, makespan, mean
    wait (with units) and utilization of a metrics dict
    (:func:`iosched.analysis.metrics.compute_metrics`)."""
    from iosched.analysis.units import format_duration

    util = metrics.get("utilization")
    return (f"iosched run: {metrics['nb_jobs']} jobs ({metrics['nb_jobs_started']} started), "
            f"makespan {format_duration(metrics['makespan'])}, mean wait "
            f"{format_duration(metrics['waiting_time']['mean'])}, utilization "
            f"{'-' if util is None else f'{util:.3f}'} over {metrics['nb_resources']} compute nodes")


#: name of the engine's progress file in the output folder (embedded engine)
PROGRESS_FILE = "progress.txt"


def progress_text(line: str, wall: float) -> str | None:
    """The progress shown for one line of the engine's progress file
    (``<simulated time s> <jobs ended> <static jobs>``), or None when the
    line is incomplete (read while the engine rewrites it)."""
    from iosched.analysis.units import format_duration

    parts = line.split()
    try:
        now, ended, total = float(parts[0]), int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return None
    return (f"simulated time {format_duration(now)}, {ended} jobs ended "
            f"({total} in the workloads), {format_duration(wall)} of wall clock")


@contextlib.contextmanager
def show_progress(path: Path, enabled: bool):
    """While the block runs, show the engine's progress (``path``, see
    :func:`progress_text`) on one rewritten stderr line, twice a second;
    nothing unless ``enabled`` (a terminal). The file is removed before and
    after, the line erased at the end."""
    if not enabled:
        yield
        return
    with contextlib.suppress(OSError):
        path.unlink()  # a previous run's
    stop = threading.Event()
    t0 = time.monotonic()
    shown = [0]

    def loop():
        while not stop.wait(0.5):
            try:
                text = progress_text(path.read_text(), time.monotonic() - t0)
            except OSError:
                continue
            if text:
                line = f"iosched run: {text}"
                sys.stderr.write("\r" + line.ljust(shown[0]))
                sys.stderr.flush()
                shown[0] = len(line)

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join()
        with contextlib.suppress(OSError):
            path.unlink()
        if shown[0]:
            sys.stderr.write("\r" + " " * shown[0] + "\r")
            sys.stderr.flush()


@click.command("run", cls=OneLineErrorCommand, error_prefix="iosched run")
@click.argument("robin_file", required=False, type=click.Path(dir_okay=False))
@click.option("-p", "--platform", help="SimGrid platform XML.")
@click.option("-w", "--workload", multiple=True, help="Batsim workload JSON (repeatable).")
@click.option("-s", "--scheduler", help="Scheduler name (fcfs, easy, ...) or pybatsim file.")
@click.option("--options", "options_json", help="Scheduler options as a JSON object.")
@click.option("-o", "--output", help="Output directory (created if needed).")
@click.option("--timeout", type=float, default=None,
              help="Simulation timeout in s (default: one week).")
@click.option("--ready-timeout", type=float, default=DEFAULT_READY_TIMEOUT, show_default=True,
              help="Time allowed to the scheduler to listen, in s.")
@click.option("--success-timeout", type=float, default=DEFAULT_SUCCESS_TIMEOUT,
              show_default=True, help="Time left to the second process after the first "
              "one succeeded, in s.")
@click.option("--failure-timeout", type=float, default=DEFAULT_FAILURE_TIMEOUT,
              show_default=True, help="Time left to the second process after the first "
              "one failed, in s.")
@click.option("--engine", "engine", default=None,
              help="Engine: 'embedded' (default), 'batsim' (the real Batsim on PATH) or a command.")
@click.option("--engine-arg", "engine_args", multiple=True,
              help="Extra engine argument (repeatable), e.g. --engine-arg=--enable-dynamic-jobs.")
@click.option("--in-process", "in_process", is_flag=True,
              help="Run the scheduler inside the embedded engine's process, called by function "
                   "(no socket, no second process; same outputs). Default: two processes "
                   "over ZeroMQ, as with the real Batsim.")
@click.option("--layer", type=click.Choice(RUN_LAYERS), default="auto", show_default=True,
              help="How the scheduler handles the engine's messages: auto (iosched's shipped "
                   "schedulers directly, any other file with pybatsim's launcher), pybatsim "
                   "(pybatsim's message layer for every file), direct (iosched's schedulers "
                   "only). Same outputs.")
@click.option("--verbose", is_flag=True, help="Do not pass -q to the engine.")
@click.option("--no-metrics", is_flag=True, help="Do not compute and print metrics.")
@click.option("--cpu", default="auto", show_default=True, metavar="auto|none|N",
              help="Run the engine and the scheduler on one CPU: auto claims a CPU no other "
                   "run holds, none leaves placement to the OS, N names the CPU.")
@click.pass_context
def run_command(ctx, robin_file, platform, workload, scheduler, options_json, output, timeout,
                ready_timeout, success_timeout, failure_timeout, engine, engine_args, in_process,
                layer, verbose, no_metrics, cpu):
    """Run one simulation (scheduler + engine), or a robin experiment file.

    \b
    iosched run -p PLATFORM.xml -w WORKLOAD.json -s easy -o DIR [--timeout S] [--in-process]
    iosched run ROBIN.yaml
    """
    try:
        with signals_raise():
            if robin_file is not None:
                given = [name for name, v in (("--platform", platform), ("--workload", workload),
                                               ("--scheduler", scheduler), ("--output", output),
                                               ("--options", options_json),
                                               ("--timeout", timeout), ("--engine", engine),
                                               ("--engine-arg", engine_args),
                                               ("--in-process", in_process),
                                               ("--layer", layer != "auto")) if v]
                if given:
                    raise InputError(f"{', '.join(given)} cannot be combined with a robin file "
                                     f"({robin_file})")
                result = run_robin(robin_file, cpu=cpu)
            else:
                for name, v in (("--platform", platform), ("--workload", workload),
                                ("--scheduler", scheduler), ("--output", output)):
                    if not v:
                        raise InputError(f"missing {name} (or give a robin file)")
                options = None
                if options_json is not None:
                    options = loads_json(options_json, "--options")
                    if not isinstance(options, dict):
                        raise InputError("--options: expected a JSON object such as "
                                         "'{\"key\": 1}'")
                live = sys.stderr.isatty() and engine in (None, "embedded")
                progress = Path(output).expanduser().resolve() / PROGRESS_FILE
                extra = ("--progress-file", str(progress)) if live else ()
                with show_progress(progress, live):
                    result = run_simulation(
                        platform, list(workload), scheduler, output, options=options,
                        engine_cmd=engine, engine_args=(*engine_args, *extra), timeout=timeout,
                        ready_timeout=ready_timeout, quiet=not verbose,
                        success_timeout=success_timeout, failure_timeout=failure_timeout, cpu=cpu,
                        in_process=in_process, layer=layer)
            click.echo(f"iosched run: simulation done in {result.wall_time:.2f} s, "
                       f"outputs in {result.output_dir}")
            _print_metrics(result, no_metrics)
    except InputError as e:
        click.echo(f"iosched run: {one_line(e)}", err=True)
        ctx.exit(2)
    except RunError as e:
        click.echo(f"iosched run: {one_line(e)}", err=True)
        ctx.exit(1)
    except OSError as e:
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        click.echo(f"iosched run: {e.strerror or one_line(e)}{where}", err=True)
        ctx.exit(1)
    except click.exceptions.Exit:
        raise
    except KeyboardInterrupt:  # the processes were already cleaned up
        click.echo("iosched run: interrupted", err=True)
        ctx.exit(130)
    except Signalled as e:
        signum = e.signum
        click.echo(f"iosched run: terminated by {signal.Signals(signum).name}", err=True)
        ctx.exit(128 + signum)
    except Exception as e:  # last resort: still one line, no traceback
        click.echo(f"iosched run: {type(e).__name__}: {one_line(e)}", err=True)
        ctx.exit(1)
