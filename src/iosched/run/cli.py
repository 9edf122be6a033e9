"""The ``iosched run`` command: one simulation (scheduler + engine), or a
robin experiment file, then its metrics.

SIGTERM / SIGHUP / Ctrl-C end the command cleanly: the processes of the run
are cleaned up (:mod:`iosched.run.supervise`), then one line is printed and
the status is 128+signal (130 for Ctrl-C).
"""

from __future__ import annotations

import signal

import click

from iosched.clicommon import OneLineErrorCommand
from iosched.checks import loads_json
from iosched.errors import InputError, one_line
from iosched.analysis.format import format_table
from iosched.analysis.metrics_file import write_metrics
from iosched.run.result import RunError, RunResult
from iosched.run.robin import run_robin
from iosched.run.simulation import (
    DEFAULT_FAILURE_TIMEOUT,
    DEFAULT_READY_TIMEOUT,
    DEFAULT_SUCCESS_TIMEOUT,
    run_simulation,
)
from iosched.run.supervise import Signalled, signals_raise

__all__ = ["run_command"]


def _print_metrics(result: RunResult, no_metrics: bool) -> None:
    """Write and print the run's metrics; utilization counts the compute
    nodes of the engine command (storage and master hosts excluded, roles
    given with ``-r`` included; ``result.compute_hosts``, counted by the
    runner with :func:`iosched.run.hosts.compute_hosts_of_argv`) when its
    platform is readable."""
    if no_metrics:
        return
    if result.jobs_csv is None:
        raise RunError(f"the engine wrote no {result.export_prefix.name}_jobs.csv in "
                       f"{result.export_prefix.parent}")
    metrics = write_metrics(result.export_prefix.parent, prefix=result.export_prefix.name,
                            nb_resources=result.compute_hosts)
    click.echo(format_table(metrics))


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
@click.option("--verbose", is_flag=True, help="Do not pass -q to the engine.")
@click.option("--no-metrics", is_flag=True, help="Do not compute and print metrics.")
@click.option("--cpu", default="auto", show_default=True, metavar="auto|none|N",
              help="Run the engine and the scheduler on one CPU: auto claims a CPU no other "
                   "run holds, none leaves placement to the OS, N names the CPU.")
@click.pass_context
def run_command(ctx, robin_file, platform, workload, scheduler, options_json, output, timeout,
                ready_timeout, success_timeout, failure_timeout, engine, engine_args, verbose,
                no_metrics, cpu):
    """Run one simulation (scheduler + engine), or a robin experiment file.

    \b
    iosched run -p PLATFORM.xml -w WORKLOAD.json -s easy -o DIR [--timeout S]
    iosched run ROBIN.yaml
    """
    try:
        with signals_raise():
            if robin_file is not None:
                given = [name for name, v in (("--platform", platform), ("--workload", workload),
                                               ("--scheduler", scheduler), ("--output", output),
                                               ("--options", options_json),
                                               ("--timeout", timeout), ("--engine", engine),
                                               ("--engine-arg", engine_args)) if v]
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
                result = run_simulation(
                    platform, list(workload), scheduler, output, options=options,
                    engine_cmd=engine, engine_args=engine_args, timeout=timeout,
                    ready_timeout=ready_timeout, quiet=not verbose,
                    success_timeout=success_timeout, failure_timeout=failure_timeout, cpu=cpu)
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
