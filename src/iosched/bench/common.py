"""Pieces shared by the benchmarks: a calibration of the machine
(:func:`calibrate`), the share of CPU time stolen by the hypervisor
(:func:`cpu_times`, :func:`steal_share`) and the result file
(:func:`write_result`)."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import click
import zmq

from iosched.run.simulation import free_port

__all__ = ["calibrate", "cpu_times", "steal_share", "write_result"]


def _zmq_echo(port):  # runs in a child process
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(f"tcp://127.0.0.1:{port}")
    while True:
        msg = sock.recv()
        sock.send(msg)
        if msg == b"end":
            break
    sock.close(0)
    ctx.term()


def calibrate(n: int = 5000) -> dict:
    """Speed of this machine right now, recorded beside every benchmark so that
    figures taken at different times can be compared: the mean round trip (us)
    of a small pyzmq REQ/REP message between two processes on loopback (the
    transport of every Batsim message), and the time (s) of a pure-Python
    loop of 10^7 additions."""
    port = free_port()
    proc = multiprocessing.get_context("spawn").Process(target=_zmq_echo, args=(port,), daemon=True)
    proc.start()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.RCVTIMEO = 10000
    sock.connect(f"tcp://127.0.0.1:{port}")
    payload = b'{"now": 1.0, "events": [{"timestamp": 1.0, "type": "JOB_COMPLETED", "data": {}}]}'
    sock.send(payload)
    sock.recv()  # connection set up
    t0 = time.perf_counter()
    for _ in range(n):
        sock.send(payload)
        sock.recv()
    rtt = (time.perf_counter() - t0) / n
    sock.send(b"end")
    sock.recv()
    sock.close(0)
    ctx.term()
    proc.join(10)
    t0 = time.perf_counter()
    acc = 0
    for i in range(10_000_000):
        acc += i
    loop = time.perf_counter() - t0
    return {"zmq_round_trip_us": round(rtt * 1e6, 1), "python_loop_1e7_s": round(loop, 3)}


def cpu_times() -> tuple[float, float] | None:
    """(steal, total) CPU jiffies of the machine from /proc/stat, or None.

    The share of *steal* time (CPU taken by the hypervisor for other guests)
    over a benchmark tells whether its figures are comparable: on this
    machine type it was seen between 0 and 50 %."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    vals = [float(x) for x in fields]
    steal = vals[7] if len(vals) > 7 else 0.0
    return steal, sum(vals[:8])


def steal_share(before, after) -> float | None:
    """Share (0..1) of CPU time stolen by the hypervisor between two
    :func:`cpu_times` readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 3)


def write_result(res: dict, path: Path) -> None:
    """Write a benchmark result as sorted, indented JSON and print it."""
    path.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")
    click.echo(json.dumps(res, indent=2, sort_keys=True))
    click.echo(f"written to {path}")
