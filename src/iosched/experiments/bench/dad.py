"""``iosched bench dad``: speed of the data-aware dispatchers.

A benchmark, not a test (it asserts nothing; its figures depend on the
machine): the scale-out of :func:`iosched.experiments.dad.reproduction.scale` on 64 and 512
nodes x 16 slots (:func:`iosched.experiments.platforms.nusa_xml`) with the
trace-driven workload of :func:`iosched.experiments.dad.workload.trace_driven` (the first
``--jobs`` KTH-SP2 jobs on 512 nodes, default 4000, 2000 on 64 nodes,
arrivals compressed to load 0.9, seed 0), for ``torque-fifo``, ``dad`` and
``dad-ds``. For the 512-node runs it records

* the wall time (s) of each whole simulation (embedded engine + scheduler);
* the scheduler's time per dispatch decision (the ``stats`` option records
  the wall-clock time of every call of Algorithm 1 / the Torque choice):
  count, mean, median, p99 and max (us), and the decisions per kind (local,
  remote, delayed, no-free-node);

in ``results/bench/dad_512.json`` with a machine calibration
(:func:`iosched.experiments.common.calibrate`); the scale-out table goes to
``results/dad/scale.csv``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from iosched.clicommon import OneLineErrorCommand
from iosched.experiments.dad.reproduction import scale
from iosched.paths import RESULTS_DIR
from iosched.workloads.default_swf import find_default_swf


@click.command(name="dad", cls=OneLineErrorCommand)
@click.option("--jobs", type=int, default=4000, show_default=True, help="KTH jobs on 512 nodes")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="result file (default results/bench/dad_512.json)")
def bench_command(jobs, out):
    """Time the data-aware dispatchers on 512 NUSA nodes (and 64)."""
    path = Path(out) if out else RESULTS_DIR / "bench" / "dad_512.json"
    with tempfile.TemporaryDirectory(prefix="iosched-bench-dad-") as t:
        scale(Path(t), RESULTS_DIR / "dad", find_default_swf(), ((64, 2000), (512, jobs)), bench=path)
    click.echo(json.dumps(json.loads(path.read_text()), indent=2, sort_keys=True))
    click.echo(f"written to {path}")
