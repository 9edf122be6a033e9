"""A small Python API for notebooks: one simulation in, one table out.

```python
import iosched
jobs = iosched.simulate("platforms/dragonfly96.xml", "W.json", "easy")
jobs[["job_id", "waiting_time", "bounded_slowdown"]].head()
jobs.attrs["metrics"]["utilization"]
```
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics import compute_metrics, job_metrics
from iosched.run.simulation import run_simulation

__all__ = ["simulate", "PER_JOB"]

#: Per-job metric columns added to the jobs table (NaN for rejected jobs).
PER_JOB = ("waiting_time", "turnaround", "slowdown", "bounded_slowdown", "nb_allocated",
           "busy_node_seconds")


def simulate(platform, workload, scheduler, options: dict | None = None, *, output_dir=None,
             engine_args=(), tau: float = 600.0, timeout: float | None = None,
             cpu: str = "auto", in_process: bool = False) -> pd.DataFrame:
    """Run one simulation (embedded engine + scheduler) and return its jobs.

    :param platform: SimGrid platform XML (path).
    :param workload: Batsim workload JSON (path).
    :param scheduler: a registered name (``"easy"``, ``"sjf-bb"``... see
        :data:`iosched.schedulers.registry.SCHEDULERS`) or a pybatsim scheduler file.
    :param options: the scheduler's options (pybatsim ``-o``), merged over the
        registered name's.
    :param output_dir: keep Batsim's outputs there (default: a temporary
        folder, removed afterwards).
    :param engine_args: extra engine arguments (e.g. ``["-r", "node_4:storage"]``).
    :param tau: bounded-slowdown threshold (s).
    :param timeout: simulation timeout (s; default one week).
    :param cpu: CPU placement of both processes (``"auto"``, ``"none"`` or a CPU number).
    :param in_process: run the scheduler inside the engine's process, called
        by function (no socket, no second process; the same outputs byte for
        byte); default: two processes over ZeroMQ, as with the real Batsim.
    :returns: a DataFrame with one row per workload job (dynamic runs merged
        into their jobs, :func:`iosched.analysis.jobs.load_jobs`): Batsim's
        ``_jobs.csv`` columns (times in s) and the per-job metrics
        :data:`PER_JOB` of :func:`iosched.analysis.metrics.job_metrics`
        (``waiting_time`` replaces Batsim's column of that name, which is
        wrong for merged dynamic runs; NaN for rejected jobs);
        ``df.attrs["metrics"]`` holds the run metrics of
        :func:`iosched.analysis.metrics.compute_metrics` (makespan,
        utilization over the compute hosts, statistics).
    :raises InputError: bad arguments (missing file, unknown scheduler...).
    :raises RunError: the engine or the scheduler failed or timed out.
    """
    if output_dir is not None:
        return _simulate(Path(output_dir), platform, workload, scheduler, options, engine_args,
                         tau, timeout, cpu, in_process)
    with tempfile.TemporaryDirectory(prefix="iosched-") as tmp:
        return _simulate(Path(tmp), platform, workload, scheduler, options, engine_args, tau,
                         timeout, cpu, in_process)


def _simulate(out, platform, workload, scheduler, options, engine_args, tau, timeout, cpu,
              in_process):
    result = run_simulation(platform, workload, scheduler, out, options=options,
                            engine_args=list(engine_args), timeout=timeout, cpu=cpu,
                            in_process=in_process)
    jobs = load_jobs(out / "out_jobs.csv")
    per_job = job_metrics(jobs, tau)[list(PER_JOB)]
    table = jobs.drop(columns=[c for c in PER_JOB if c in jobs.columns]).join(per_job)
    table.attrs["metrics"] = compute_metrics(jobs, nb_resources=result.compute_hosts, tau=tau)
    return table
