"""Job and run metrics of one Batsim run, computed from its jobs table
(:func:`iosched.analysis.jobs.load_jobs`).

Definitions (the "Terms" section of DESIGN.md; per job j), each derived
once in :mod:`iosched.batsim.job_metrics` (shared with the embedded
engine's ``_jobs.csv`` and ``_schedule.csv``), summarised here:

* s_j = ``submission_time``, b_j = ``starting_time``, c_j = ``finish_time``
  (seconds of simulated time, as written by Batsim, see Batsim's
  ``docs/output-jobs.rst``);
* runtime D_j = c_j - b_j;
* waiting time W_j = b_j - s_j;
* turnaround (flow) F_j = c_j - s_j;
* slowdown F_j / D_j.  It is undefined when D_j = 0 (a job that ran for no
  time): such a job is left out of the slowdown statistics (and only of
  those) and counted in ``slowdown_nb_undefined``.  Batsim itself would
  divide by zero there (``stretch`` = inf);
* bounded slowdown max(1, F_j / max(D_j, tau)), tau = 600 s unless stated
  (Feitelson et al., "Theory and practice in parallel job scheduling",
  JSSPP 1997; tau > 0 so it is always defined).

Job statistics (mean, median, p95, max) are taken over the jobs that
*started*, i.e. every job whose ``final_state`` is not ``REJECTED``: jobs
killed by their walltime or by the scheduler did occupy their resources and
are included, exactly as Batsim's own ``*_schedule.csv`` does.  Rejected jobs
are counted (``nb_jobs``, ``final_states``) but have no W, F or D.  The p95
is numpy's default percentile (linear interpolation between order
statistics, Hyndman & Fan type 7).

Run metrics:

* makespan = max_j c_j over started jobs - min_j s_j over all jobs.  This is
  the length of the period the workload occupied the platform.  Batsim's
  ``makespan`` in ``*_schedule.csv`` is different: it is max_j c_j measured
  from time 0; both agree when the first job is submitted at t = 0;
* busy node-seconds = sum over started jobs of D_j x |allocated_resources_j|;
* utilization = busy node-seconds / (nb_resources x makespan), a number in
  [0, 1] for a valid schedule.

``nb_resources`` (the utilization's denominator) and its source:
:mod:`iosched.analysis.resources`.  Burst-buffer runs are merged into the
workload jobs they run first (:func:`iosched.analysis.jobs.merge_runs`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iosched.analysis.jobs import (
    merge_runs,
    nb_runs_merged,
    parse_allocation,
    require_columns,
    source_of,
)
from iosched.analysis.resources import resolve_nb_resources
from iosched.batsim.job_metrics import (
    TAU,
    bounded_slowdown,
    runtime,
    slowdown,
    turnaround,
    waiting_time,
)
from iosched.batsim.jobs import REJECTED
from iosched.errors import InputError

__all__ = ["JOB_METRICS", "STATISTICS", "job_metrics", "statistics", "compute_metrics"]

#: Per-job metrics summarised by :func:`compute_metrics`, in table order.
JOB_METRICS = ("waiting_time", "turnaround", "slowdown", "bounded_slowdown")
#: Statistics computed for each of :data:`JOB_METRICS`.
STATISTICS = ("mean", "median", "p95", "max")
# Tolerance (s) on b >= s and c >= b: Batsim writes times with 6 decimals.
_TIME_TOLERANCE = 1e-6


def job_metrics(jobs: pd.DataFrame, tau: float = TAU) -> pd.DataFrame:
    """Per-job metrics of the jobs that started (final_state != REJECTED).

    ``jobs``: a table shaped like :func:`~iosched.analysis.jobs.load_jobs`'s (columns ``job_id``,
    ``submission_time``, ``starting_time``, ``finish_time``,
    ``final_state``, ``allocated_resources`` are used; times in s).
    Burst-buffer runs still in it are first merged into their workload
    jobs (:func:`~iosched.analysis.jobs.merge_runs`), so each job is counted once, with its real
    submission time and its compute nodes only.
    ``tau``: the bounded-slowdown threshold in s, > 0.

    Returns a DataFrame, one row per started job in input order, with
    columns ``job_id``, ``submission`` (s), ``start`` (b), ``finish`` (c),
    ``runtime`` (D = c - b), ``waiting_time`` (W = b - s), ``turnaround``
    (F = c - s), ``slowdown`` (F / D, NaN when D = 0), ``bounded_slowdown``
    (max(1, F / max(D, tau))), ``nb_allocated`` (|allocation|) and
    ``busy_node_seconds`` (D x nb_allocated).  Definitions: DESIGN.md
    "Terms".

    Raises :class:`~iosched.errors.InputError` for a missing column, tau <= 0,
    a started job without times, a start before submission or a finish
    before start (beyond 1e-6 s), or a malformed or empty allocation; and
    as :func:`~iosched.analysis.jobs.merge_runs` does.
    """
    require_columns(jobs, ("job_id", "submission_time", "starting_time", "finish_time",
                    "final_state", "allocated_resources"))
    jobs = merge_runs(jobs)
    if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
        raise InputError(f"tau: must be a positive number of seconds, got {tau!r}")
    where = source_of(jobs)
    started = jobs[jobs["final_state"].astype(str) != REJECTED]
    s = pd.to_numeric(started["submission_time"], errors="coerce").to_numpy(dtype=float)
    b = pd.to_numeric(started["starting_time"], errors="coerce").to_numpy(dtype=float)
    c = pd.to_numeric(started["finish_time"], errors="coerce").to_numpy(dtype=float)
    ids = started["job_id"].to_numpy()
    for name, arr in (("submission_time", s), ("starting_time", b), ("finish_time", c)):
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{where}: column {name}, job {ids[i]!r}: "
                             "missing or not a finite number for a started job")
    if (b < s - _TIME_TOLERANCE).any():
        i = int(np.flatnonzero(b < s - _TIME_TOLERANCE)[0])
        raise InputError(f"{where}: column starting_time, job {ids[i]!r}: "
                         f"starts at {b[i]} before its submission at {s[i]}")
    if (c < b - _TIME_TOLERANCE).any():
        i = int(np.flatnonzero(c < b - _TIME_TOLERANCE)[0])
        raise InputError(f"{where}: column finish_time, job {ids[i]!r}: "
                         f"finishes at {c[i]} before its start at {b[i]}")
    sizes = []
    for jid, alloc in zip(ids, started["allocated_resources"].to_numpy()):
        n = len(parse_allocation(alloc, where, jid))
        if n == 0:
            raise InputError(f"{where}: column allocated_resources, job {jid!r}: "
                             "empty allocation for a job that started")
        sizes.append(n)
    # clamped at 0: times within the 1e-6 s tolerance above
    d = np.maximum(runtime(b, c), 0.0)
    w = np.maximum(waiting_time(s, b), 0.0)
    f = np.maximum(turnaround(s, c), 0.0)
    slow = slowdown(f, d)
    bounded = bounded_slowdown(f, d, tau)
    nb = np.asarray(sizes, dtype=np.int64)
    return pd.DataFrame({
        "job_id": ids,
        "submission": s, "start": b, "finish": c,
        "runtime": d, "waiting_time": w, "turnaround": f,
        "slowdown": slow, "bounded_slowdown": bounded,
        "nb_allocated": nb, "busy_node_seconds": d * nb,
    }, index=started.index)



def statistics(values: np.ndarray) -> dict[str, float | None]:
    """:data:`STATISTICS` of ``values`` (a 1-D float array; NaN left out):
    ``{"mean", "median", "p95", "max"}`` as floats, all None when no value
    is left (p95: numpy's default, linear interpolation)."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return {k: None for k in STATISTICS}
    return {"mean": float(np.mean(v)), "median": float(np.median(v)),
            "p95": float(np.percentile(v, 95)), "max": float(np.max(v))}



def compute_metrics(jobs: pd.DataFrame, nb_resources: int | None = None,
                    tau: float = TAU,
                    machine_states: str | Path | None = None,
                    platform: str | Path | None = None) -> dict:
    """Run metrics of one Batsim run.

    ``jobs``: a table shaped like :func:`~iosched.analysis.jobs.load_jobs`'s (n_jobs rows; times
    in s); burst-buffer runs still in it are merged into their workload
    jobs first (:func:`~iosched.analysis.jobs.merge_runs`).  ``nb_resources``: number of compute
    resources (> 0) or None to derive it: from ``platform`` (a platform
    XML: its compute hosts) when given; else, for a run without merged
    rows, from ``machine_states`` (a ``*_machine_states.csv`` path) or
    ``jobs.attrs["machine_states"]`` (set by
    :func:`~iosched.analysis.jobs.load_jobs`) when there is one, and for a
    run with merged rows from the compute hosts recorded in the run's
    ``command.json`` (``jobs.attrs["command_json"]``, key
    ``compute_hosts``) when there (the machine states count the storage
    hosts); else from the largest allocated id + 1
    (:mod:`iosched.analysis.resources`).  ``tau``: the
    bounded-slowdown threshold in s (> 0).

    Returns a dict (JSON-ready, plain Python types):

    * ``waiting_time``, ``turnaround``, ``slowdown``, ``bounded_slowdown``:
      each ``{"mean", "median", "p95", "max"}`` over the started jobs (None
      when no job qualifies); slowdown leaves out jobs with D = 0;
    * ``slowdown_nb_undefined``: started jobs with D = 0;
    * ``makespan`` (s): last finish of a started job - first submission of
      any job (None when no job started);
    * ``busy_node_seconds`` (node x s): sum of D_j x |allocation_j|;
    * ``utilization``: busy_node_seconds / (nb_resources x makespan), None
      when nb_resources is unknown or makespan is 0 or None;
    * ``nb_resources``, ``nb_resources_source`` (``"argument"``,
      ``"platform_compute_hosts"``, ``"command_json_compute_hosts"``,
      ``"machine_states_csv"``, ``"max_allocated_id_plus_1"`` or
      ``"none"``);
    * ``final_states``: {final_state: number of jobs}; ``nb_jobs`` (all
      rows after merging, rejected included), ``nb_jobs_started``,
      ``nb_jobs_rejected``;
    * ``nb_runs_merged``: burst-buffer runs merged into their workload job
      (0 for a run without dynamic ``bb`` jobs);
    * ``tau`` (s).

    Definitions and their sources: this module's docstring (DESIGN.md
    "Terms"; Batsim's ``docs/output-jobs.rst``).
    Raises :class:`~iosched.errors.InputError` as :func:`job_metrics` does,
    and for a non-positive ``nb_resources``, a bad machine_states file or an
    unreadable ``platform``.
    """
    require_columns(jobs, ("job_id", "submission_time", "final_state", "allocated_resources"))
    jobs = merge_runs(jobs)
    merged = nb_runs_merged(jobs)
    per_job = job_metrics(jobs, tau=tau)
    out: dict[str, Any] = {}
    for name in JOB_METRICS:
        out[name] = statistics(per_job[name].to_numpy(dtype=float))
    out["slowdown_nb_undefined"] = int(per_job["slowdown"].isna().sum())

    states = jobs["final_state"].astype(str).replace("", "(empty)")
    out["final_states"] = {str(k): int(v) for k, v in sorted(states.value_counts().items())}
    out["nb_jobs"] = int(len(jobs))
    out["nb_jobs_started"] = int(len(per_job))
    out["nb_jobs_rejected"] = int((states == REJECTED).sum())

    if len(per_job):
        subs = pd.to_numeric(jobs["submission_time"], errors="coerce").to_numpy(dtype=float)
        subs = subs[np.isfinite(subs)]
        first = float(np.min(subs))
        makespan = float(per_job["finish"].max()) - first
    else:
        makespan = None
    busy = float(per_job["busy_node_seconds"].sum())
    n, source = resolve_nb_resources(jobs, nb_resources, machine_states, platform,
                                      merged=merged > 0)
    out["makespan"] = makespan
    out["busy_node_seconds"] = busy
    out["nb_resources"] = n
    out["nb_resources_source"] = source
    out["utilization"] = (busy / (n * makespan)
                          if n is not None and makespan is not None and makespan > 0
                          else None)
    out["nb_runs_merged"] = merged
    out["tau"] = float(tau)
    return out
