"""``iosched sched``: start one pybatsim scheduler by hand, bound to loopback.

pybatsim's own launcher (``pybatsim FILE``) listens on ``tcp://*:28000``
(every interface) unless given ``-s``, and prints a ZeroMQ traceback when the
port is taken. ``iosched sched`` resolves a scheduler name or file as
``iosched run`` does, listens on ``tcp://127.0.0.1:28000`` by default,
checks that the port is free (one line and exit 1 otherwise), then replaces
itself with the scheduler's launcher: the direct layer's
(:mod:`iosched.run.direct_launcher`) for iosched's shipped schedulers,
pybatsim's (``python -m batsim.cmds.launcher``) for any other file, as
``iosched run`` chooses (``--layer``).
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys

import click

from iosched.checks import check_finite, loads_json
from iosched.errors import InputError, one_line
from iosched.run.simulation import RUN_LAYERS, resolve_scheduler, scheduler_argv

__all__ = ["DEFAULT_ENDPOINT", "check_endpoint_free", "sched_argv", "sched_command"]

#: Where ``iosched sched`` listens by default (loopback only).
DEFAULT_ENDPOINT = "tcp://127.0.0.1:28000"
_TCP = re.compile(r"tcp://(\*|\[[^\]]+\]|[^:/]+):(\d+)")


def check_endpoint_free(endpoint: str) -> None:
    """Check that a ``tcp://HOST:PORT`` endpoint can be bound now (``*`` means
    every interface).

    :raises InputError: not a ``tcp://HOST:PORT`` endpoint, port out of
        range, or address unusable or already in use (one line).
    """
    m = _TCP.fullmatch(endpoint)
    if m is None:
        raise InputError(f"-s {endpoint}: expected tcp://HOST:PORT (e.g. {DEFAULT_ENDPOINT})")
    host, port = m.group(1), int(m.group(2))
    if not 0 < port < 65536:
        raise InputError(f"-s {endpoint}: port {port} out of range 1-65535")
    host = "0.0.0.0" if host == "*" else host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as ZeroMQ does
        try:
            s.bind((host, port))
        except OSError as e:
            raise InputError(f"-s {endpoint}: cannot listen there: {e.strerror or e}"
                             + (" (another scheduler or run holds the port; choose another "
                                "with -s)" if e.errno == 98 else "")) from None


def sched_argv(scheduler: str, options: dict | None, endpoint: str, verbosity: str | None,
               layer: str = "auto") -> list[str]:
    """The scheduler's command line for *scheduler* (a registry name or a
    file), *options* merged over the registry's defaults: pybatsim's
    launcher, or the direct layer's for iosched's schedulers
    (:func:`iosched.run.simulation.scheduler_argv`, *layer*).

    :raises InputError: unknown scheduler, missing pybatsim, options not a
        JSON object or holding a non-finite number.
    """
    path, defaults = resolve_scheduler(scheduler)
    if options is not None and not isinstance(options, dict):
        raise InputError("-o: expected a JSON object such as '{\"policy\": \"easy\"}'")
    check_finite(options, "-o")
    merged = {**defaults, **(options or {})}
    return scheduler_argv(path, endpoint, json.dumps(merged, allow_nan=False), verbosity, layer)


@click.command("sched")
@click.argument("scheduler")
@click.option("-o", "--options", "options_json", default=None,
              help="Scheduler options as a JSON object (merged over the registry's defaults).")
@click.option("-s", "--socket-endpoint", "endpoint", default=DEFAULT_ENDPOINT, show_default=True,
              help="ZeroMQ endpoint to listen on (loopback by default; tcp://*:PORT listens "
                   "on every interface).")
@click.option("-v", "--verbosity", default=None,
              type=click.Choice(["debug", "info", "warning", "error"]),
              help="pybatsim's log level.")
@click.option("--layer", type=click.Choice(RUN_LAYERS), default="auto", show_default=True,
              help="auto: iosched's shipped schedulers with the direct layer, any other file "
                   "with pybatsim's launcher; pybatsim; direct (iosched's schedulers only).")
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
def sched_command(scheduler, options_json, endpoint, verbosity, layer, dry_run):
    """Run a pybatsim scheduler by hand (name or file), listening on loopback.

    iosched sched easy            # then: iosched-batsim -p P.xml -w W.json -s tcp://127.0.0.1:28000

    Exit status 1 with one line on bad input or a busy port.
    """
    try:
        options = loads_json(options_json, "-o") if options_json is not None else None
        argv = sched_argv(scheduler, options, endpoint, verbosity, layer)
        check_endpoint_free(endpoint)
    except InputError as e:
        click.echo(f"Error: {one_line(e)}", err=True)
        sys.exit(1)
    if dry_run:
        click.echo(" ".join(argv))
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
