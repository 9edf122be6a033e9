"""Pieces shared by the benchmarks and the reproductions of the experiment
wing: a calibration of the machine
(:func:`calibrate`), the share of CPU time stolen by the hypervisor
(:func:`cpu_times`, :func:`steal_share`), the result file
(:func:`write_result`), and runs of a reference source tree beside the
current one (:func:`run_in_tree`, :func:`side_by_side`)."""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import click
import zmq

from iosched.paths import REPO_ROOT
from iosched.run.simulation import free_port

__all__ = ["calibrate", "cpu_times", "steal_share", "write_result", "run_in_tree", "side_by_side",
           "same_files"]

#: this tree (the folder holding ``src/iosched``)
THIS_TREE = REPO_ROOT


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


def run_in_tree(tree, spec: dict, timeout: float = 4 * 3600) -> dict:
    """One timed run (:mod:`iosched.experiments.bench.tree_run`, *spec* as there) with
    the code of the source tree *tree* (a folder holding ``src/iosched``,
    e.g. a worktree of main): ``tree_run.py`` of this tree runs as a file
    with ``PYTHONPATH=TREE/src``, so the run, its engine and its scheduler
    import that tree's ``iosched``.

    :param tree: source tree (path).
    :param spec: the run (JSON-serialisable); written to ``spec["out"]/spec.json``.
    :param timeout: s before the run is stopped.
    :returns: the run's figures (``wall_s``, ``cpu_s`` ... in s).
    :raises RuntimeError: the tree has no ``src/iosched``, or the run fails
        or times out (its stderr in the message).
    """
    tree = Path(tree).resolve()
    if not (tree / "src" / "iosched").is_dir():
        raise RuntimeError(f"{tree}: no src/iosched (not an iosched source tree)")
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    script = Path(__file__).parent / "bench" / "tree_run.py"
    try:
        p = subprocess.run([sys.executable, str(script), str(out / "spec.json")], env=env, cwd=str(tree),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{tree}: run timed out after {timeout} s") from None
    if p.returncode != 0:
        raise RuntimeError(f"{tree}: run failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if Path(res["iosched"]).resolve() != (tree / "src" / "iosched"):
        raise RuntimeError(f"{tree}: the run imported {res['iosched']}")
    return res


def same_files(a, b, names) -> dict:
    """``{name: True/False}``: whether file *name* is byte-identical in the
    folders *a* and *b* (False if either is missing)."""
    out = {}
    for n in names:
        pa, pb = Path(a) / n, Path(b) / n
        out[n] = pa.is_file() and pb.is_file() and pa.read_bytes() == pb.read_bytes()
    return out


def side_by_side(reference, spec_of, rounds: int, compare=("out_jobs.csv",), label="case") -> dict:
    """*rounds* rounds, each running the *reference* tree and this tree on
    the same case (:func:`run_in_tree`; the reference first in odd rounds,
    this tree first in even ones), with outputs kept and compared.

    :param reference: the reference source tree (e.g. a worktree of main).
    :param spec_of: ``spec_of(side, k) -> spec`` for side ``"reference"`` or
        ``"this"`` and round ``k`` (each with its own ``out``).
    :param rounds: number of rounds (>= 1).
    :param compare: files of ``out`` compared byte for byte in every round.
    :returns: ``{"reference": [runs], "this": [runs], "ratio_wall": [per
        round this / reference], "ratio_cpu": [...], "median": {...},
        "same_outputs": bool, "differing": [...]}`` (times in s).
    :raises RuntimeError: a run fails (see :func:`run_in_tree`).
    """
    runs: dict = {"reference": [], "this": []}
    differing = []
    for k in range(rounds):
        specs = {side: spec_of(side, k) for side in runs}
        pair = (("reference", reference), ("this", THIS_TREE))
        for side, tree in (pair if k % 2 == 0 else pair[::-1]):   # who goes first alternates
            runs[side].append(run_in_tree(tree, specs[side]))
            r = runs[side][-1]
            print(f"{label} round {k + 1}/{rounds} {side}: wall {r['wall_s']:.1f} s, "
                  f"cpu {r['cpu_s']:.1f} s, load {r['load_1min']}", flush=True)
        same = same_files(specs["reference"]["out"], specs["this"]["out"], compare)
        differing += [f"round {k + 1}: {n}" for n, ok in same.items() if not ok]
    rw = [round(b["wall_s"] / a["wall_s"], 3) for a, b in zip(runs["reference"], runs["this"])]
    rc = [round(b["cpu_s"] / a["cpu_s"], 3) for a, b in zip(runs["reference"], runs["this"])]
    med = {side: {"wall_s": statistics.median(r["wall_s"] for r in rs),
                  "cpu_s": statistics.median(r["cpu_s"] for r in rs)} for side, rs in runs.items()}
    med["ratio_wall"] = statistics.median(rw)
    med["ratio_cpu"] = statistics.median(rc)
    return {**runs, "ratio_wall": rw, "ratio_cpu": rc, "median": med, "rounds": rounds,
            "compared": list(compare), "same_outputs": not differing, "differing": differing}
