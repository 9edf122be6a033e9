"""The direct layer on two processes: iosched's own schedulers over ZeroMQ
without pybatsim's message layer.

``python -m iosched.run.direct_launcher FILE -s ENDPOINT [-t MS] [-o JSON]
[-v LEVEL] [--layer auto|direct]`` is pybatsim's launcher (``python -m
batsim.cmds.launcher``: the same options, the same REP socket bound at
``-s``, the same exchange, printed lines and exit status) with pybatsim's
``Batsim`` message handling replaced by the in-process path's direct layer
(:class:`iosched.engine.inproc.DirectPeer`): each message received is
parsed (:func:`parse_message`: ``orjson``, which gives the objects
``json.loads`` gives, 4 times faster; ``json.loads`` for what ``orjson``
refuses, so that anything Python's parser reads is read the same, and its
error is the one reported) and handed to the scheduler's handlers through
:class:`~iosched.engine.inproc.DirectBatsim` (pybatsim's ``Batsim`` API,
job objects and counters), and the reply is sent as ``json.dumps`` of the
structure pybatsim builds, so the engine receives the same text. What is
left out is pybatsim's work that changes no reply: the text of every
message received and sent, built for a log line whatever the log level
(pybatsim 3.2.1 ``Batsim._read_bat_msg``), and, in each log record, the
source line, thread and process that pybatsim's log format never prints
(:func:`~iosched.engine.inproc.lean_log_records`: the lines are the same).

``--layer auto`` (the default) runs a file that is not one of iosched's
own schedulers (:class:`iosched.sched.adapter.PybatsimScheduler`) with
pybatsim's own ``launch_scheduler``, unchanged; ``--layer direct`` refuses
it (one line, status 1). As in pybatsim, the first reply is sent before
the scheduler's ``onAfterBatsimInit``, a receive that waits more than
``-t`` ms while the simulation runs calls the scheduler's ``onDeadlock``
and waits again, and the exit status is 1 when the jobs submitted are not
all scheduled, rejected or changed. Unlike pybatsim, bad input (options,
endpoint, a message that is not JSON) is one line and status 1, and
``-s`` defaults to loopback.

``iosched run`` uses it for the shipped schedulers on two processes
(``--layer``, :func:`iosched.run.simulation.run_simulation`).
"""

from __future__ import annotations

import gc
import json
import re
import sys
import traceback

import click
import orjson
import zmq
from batsim.tools.launcher import launch_scheduler

from iosched.engine.inproc import (LAYERS, DirectPeer, SchedulerError, configure_logging,
                                   instantiate, is_adapter_scheduler, lean_log_records)
from iosched.errors import one_line

__all__ = ["LAUNCHER_LAYERS", "main", "serve", "parse_message"]

#: A run of digits long enough to be an integer beyond 64 bits (:func:`parse_message`).
_LONG_DIGITS = re.compile(rb"\d{19}")

#: ``--layer`` values of this launcher (pybatsim's layer is pybatsim's own launcher)
LAUNCHER_LAYERS = tuple(layer for layer in LAYERS if layer != "pybatsim")


def _fail(line: str, details: str = "") -> None:
    if details:
        sys.stderr.write(details)
    sys.stdout.flush()
    click.echo(f"Error: {line}", err=True)
    sys.exit(1)


def parse_message(data: bytes):
    """The JSON value of one message (UTF-8 bytes), exactly as ``json.loads``
    gives it.

    ``orjson.loads`` parses it (RFC 8259; the same dicts, lists, strings,
    ints and floats, each float correctly rounded as ``json`` does), unless
    the text holds a run of 19 digits or more: ``orjson`` reads an integer
    beyond 64 bits as a float, ``json`` as an int (every integer of at most
    18 digits is within 64 bits). What ``orjson`` refuses (``NaN`` and
    ``Infinity``, numbers beyond the float range, lone surrogates, a byte
    order mark, nesting deeper than 1,024, or text that is not JSON) goes
    to ``json.loads`` as well, which reads the first ones as Python does
    and raises its own error for the rest.

    :raises ValueError: the text is not JSON (``json.JSONDecodeError``, or
        ``UnicodeDecodeError`` for bytes that are not UTF-8).
    :raises RecursionError: nesting too deep for ``json.loads``.
    """
    if _LONG_DIGITS.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


def serve(peer: DirectPeer, endpoint: str, timeout_ms: int) -> int:
    """Answer the engine's messages on a REP socket bound at *endpoint*
    until the one holding SIMULATION_ENDS; returns the launcher's exit
    status (:meth:`~iosched.engine.inproc.Peer.finish`).

    :param timeout_ms: how long a receive waits while the simulation runs
        before the scheduler's ``onDeadlock`` is called (ms; <= 0: forever).
    :raises SystemExit: status 1, with one line on stderr, when the
        endpoint cannot be bound, a message is not JSON or not a Batsim
        message (an object with ``now`` and a list ``events``), or the
        scheduler raises or sends a reply JSON cannot encode (its traceback
        first).
    """
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    try:
        sock.bind(endpoint)
    except zmq.ZMQError as e:
        _fail(f"-s {endpoint}: cannot listen there: {e}")
    name = peer.path.name
    try:
        n = 0
        rcvtimeo = -1  # blocking until the simulation runs, as pybatsim
        sock.RCVTIMEO = rcvtimeo
        while True:
            bs = peer.bs
            want = timeout_ms if bs is not None and bs.running_simulation and timeout_ms > 0 else -1
            if want != rcvtimeo:  # a socket option costs a call into ZeroMQ: set on change only
                sock.RCVTIMEO = rcvtimeo = want
            try:
                text = sock.recv()
            except zmq.Again:
                try:
                    peer.scheduler.onDeadlock()  # pybatsim's: raises "Batsim is not responding"
                except Exception as e:  # noqa: BLE001 - the scheduler's own failure
                    _fail(f"{name}: no message from the engine in {timeout_ms} ms: "
                          f"{one_line(e) or type(e).__name__}", traceback.format_exc())
                continue
            n += 1
            try:
                msg = parse_message(text)
            except (ValueError, RecursionError) as e:  # RecursionError: nesting too deep
                _fail(f"message {n} from the engine is not JSON: {one_line(e) or 'nesting too deep'}")
            if not (isinstance(msg, dict) and "now" in msg and isinstance(msg.get("events"), list)):
                _fail(f"message {n} from the engine is not a Batsim message "
                      "(a JSON object with \"now\" and a list \"events\")")
            first = peer.bs is None
            try:
                reply, finished = peer.handle(msg)
                out = json.dumps(reply)
            except Exception as e:  # noqa: BLE001 - the scheduler's own failure
                _fail(f"{name} failed: {one_line(e) or type(e).__name__}", traceback.format_exc())
            sock.send_string(out)
            if first:
                try:
                    peer.scheduler.onAfterBatsimInit()  # after the first reply, as pybatsim
                except Exception as e:  # noqa: BLE001 - the scheduler's own failure
                    _fail(f"{name} failed: {one_line(e) or type(e).__name__}",
                          traceback.format_exc())
            if finished:
                break
    finally:
        sock.close(linger=0)
        ctx.term()
    return peer.finish()


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("scheduler", type=click.Path(exists=True, dir_okay=False))
@click.option("-s", "--socket-endpoint", "endpoint", default="tcp://127.0.0.1:28000",
              show_default=True, help="ZeroMQ endpoint to bind (loopback by default).")
@click.option("-t", "--timeout", "timeout_ms", default=2000, show_default=True, type=int,
              help="ms a receive waits while the simulation runs before onDeadlock (pybatsim's -t).")
@click.option("-o", "--options", "options_json", default=None, help="scheduler options (JSON object)")
@click.option("-O", "--options-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="a file holding the options (JSON object)")
@click.option("-v", "--verbosity", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error", "critical"]),
              help="pybatsim's log level")
@click.option("--layer", default="auto", show_default=True, type=click.Choice(LAUNCHER_LAYERS),
              help="auto: pybatsim's own launcher for a file that is not an iosched scheduler; "
                   "direct: refuse it")
def main(scheduler, endpoint, timeout_ms, options_json, options_file, verbosity, layer):
    """Run SCHEDULER (a pybatsim scheduler file) as pybatsim's launcher
    does, with the direct layer for iosched's own schedulers."""
    where = "-O" if options_file else "-o"
    try:
        if options_file:
            with open(options_file, encoding="utf-8") as f:
                options = json.load(f)
        else:
            options = json.loads(options_json) if options_json else {}
    except (OSError, ValueError, RecursionError) as e:  # RecursionError: nesting too deep
        _fail(f"{where}: not a JSON object: {one_line(e) or 'nesting too deep'}")
    if not isinstance(options, dict):
        _fail(f"{where}: expected a JSON object such as '{{\"policy\": \"easy\"}}'")
    configure_logging(verbosity)
    try:
        sched = instantiate(scheduler, options)
    except SchedulerError as e:
        _fail(str(e), e.details)
    if not is_adapter_scheduler(sched):
        if layer == "direct":
            _fail(f"--layer direct: {scheduler} is not one of iosched's own schedulers "
                  "(iosched.sched.adapter.PybatsimScheduler); use auto")
        sys.exit(launch_scheduler(sched, endpoint, None, options, timeout_ms, False))
    print("Scheduler: {} ({})".format(sched.__class__.__name__, options))
    sys.stdout.flush()
    # what the imports and the scheduler's constructor made lives as long as
    # the process: out of the collector's reach, its full collections do
    # not walk it again (about 2 % of the scheduler's CPU on KTH-SP2)
    gc.freeze()
    lean_log_records()
    sys.exit(serve(DirectPeer(sched, scheduler), endpoint, timeout_ms))


if __name__ == "__main__":  # pragma: no cover - the process entry point
    main()
