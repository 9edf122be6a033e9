"""Metrics of Jeannot, Pallez & Vidal (IJHPCA 2023), section "Evaluation
criterion", computed from Batsim's ``_jobs.csv`` (so they hold for the
embedded engine and the real Batsim alike) and the workload file.

* **stretch** rho_i of J_i (:func:`jeannot_stretch`): its actual execution
  time (end of its last I/O phase minus start of its first compute phase;
  queue waiting excluded) over its execution time alone on the machine
  ``T_i(B)`` (equation 1);
* **utilization** at ``t``: compute work executed so far (node-seconds of
  compute phases) over ``P t`` (the paper's "total work executed over the
  time"); I/O phases are not work;
* **idle ratio**: processor-time of non-allocated nodes over ``P x
  makespan`` (nodes of a started job count as allocated until its end);
* time series (Fig. 8): running applications, used nodes / P and used
  bandwidth / B (each I/O phase at its average rate ``v / duration``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from iosched.batsim.dynamic import RUN_WORKLOAD
from iosched.batsim.job_metrics import runtime
from iosched.errors import InputError
from iosched.listpack.model import PeriodicJob
from iosched.sched.iojob import read_io

__all__ = ["read_phases", "read_workload", "jeannot_stretch", "job_table", "summary", "series",
           "binned_usage", "max_io_overlap", "PHASE_RE"]

#: Phase job ids of :mod:`iosched.schedulers.listpack` (without their workload
#: ``bb``, :func:`iosched.batsim.dynamic.phase_job_id`): ``<J>:<2k>`` computes and
#: ``<J>:<2k+1>`` writes in period ``k``.
PHASE_RE = re.compile(r"^(?P<job>.+):(?P<idx>\d+)$")


def read_phases(jobs_csv) -> pd.DataFrame:
    """Phase jobs of a run: columns ``job`` (workload-local id), ``kind``
    (``c`` compute / ``o`` I/O), ``k`` (period), ``start``, ``end`` (s),
    ``state``, sorted by start then id.

    :raises InputError: unreadable file.
    """
    try:
        df = pd.read_csv(jobs_csv, dtype={"job_id": str, "workload_name": str})
    except (OSError, ValueError) as exc:
        raise InputError(f"{jobs_csv}: cannot read ({exc})") from None
    df = df[df["workload_name"] == RUN_WORKLOAD]
    m = df["job_id"].str.extract(PHASE_RE)
    idx = pd.to_numeric(m["idx"]).values
    out = pd.DataFrame({"job": m["job"].values, "kind": ["c" if i % 2 == 0 else "o" for i in idx],
                        "k": idx // 2,
                        "start": df["starting_time"].astype(float).values,
                        "end": df["finish_time"].astype(float).values,
                        "state": df["final_state"].values})
    return out.sort_values(["start", "job", "kind", "k"], kind="stable").reset_index(drop=True)


def read_workload(path) -> tuple:
    """``(jobs dict local id -> PeriodicJob, listpack record dict)`` of a
    workload written by :mod:`iosched.experiments.listpack.workload`.

    :raises InputError: unreadable file or missing fields.
    """
    try:
        data = json.loads(Path(path).read_text())
        jobs = {}
        for j in data["jobs"]:
            io = read_io(j, f"{path}: job {j['id']}")
            if io.nodes is None or io.periodic is None:
                raise InputError(f"{path}: job {j['id']}: not a periodic job (io.nodes, io.periodic)")
            jobs[str(j["id"])] = PeriodicJob.of(io, float(j.get("x", 0.0)))
        return jobs, dict(data["listpack"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a listpack workload ({exc})") from None


def jeannot_stretch(start: float, end: float, alone: float) -> float:
    """The list-vs-pack paper's stretch rho_i of an application: its actual
    execution time over its execution time alone on the machine.

    Jeannot, Pallez, Vidal, "IO-aware job-scheduling: exploiting the impacts
    of workload characterizations to select the mapping strategy", IJHPCA
    2023, section "Evaluation criterion", item 2 ("a stretch of 2 means
    that due to I/O contention, the application takes twice as long to
    execute as it would normally"), with the minimal execution time
    T_i(B) = sum_j w_ij + v_ij / B of equation 1.  Queue waiting is not
    counted (the paper's workloads are one batch released at once), so it
    is not the glossary's slowdown (F / D) either.

    :param start: start of the application's first compute phase (s).
    :param end: end of its last I/O phase (s).
    :param alone: T_i(B) (s), > 0 (:meth:`iosched.listpack.model.PeriodicJob.time`).
    :returns: (end - start) / alone, >= 1 for a run without contention.
    """
    return runtime(start, end) / alone


def job_table(phases: pd.DataFrame, jobs: dict, B: float) -> pd.DataFrame:
    """One row per workload job that ran: ``job``, ``nodes``, ``periods``,
    ``alone`` (T_i(B), s), ``start``, ``end``, ``stretch``, ``io_volume``
    (bytes), ``complete`` (all its phases ran)."""
    g = phases.groupby("job")
    rows = []
    for jid, grp in g:
        spec = jobs[jid]
        start, end = float(grp["start"].min()), float(grp["end"].max())
        alone = spec.time(B)
        rows.append({"job": jid, "nodes": spec.nodes, "periods": spec.periods, "alone": alone,
                     "start": start, "end": end, "stretch": jeannot_stretch(start, end, alone),
                     "io_volume": spec.periods * spec.v, "x": spec.x,
                     "complete": len(grp) == 2 * spec.periods})
    return pd.DataFrame(rows)


def summary(phases: pd.DataFrame, jobs: dict, P: int, B: float) -> dict:
    """Run metrics: ``makespan`` (s), ``max_stretch``, ``mean_stretch``,
    ``idle_ratio``, ``utilization`` (compute work / (P makespan)),
    ``jobs`` (ran), ``complete`` (jobs with all phases)."""
    jt = job_table(phases, jobs, B)
    makespan = float(jt["end"].max())
    held = float((jt["nodes"] * (jt["end"] - jt["start"])).sum())
    comp = phases[phases["kind"] == "c"]
    work = float((comp["job"].map(lambda j: jobs[j].nodes) * (comp["end"] - comp["start"])).sum())
    return {"makespan": makespan, "max_stretch": float(jt["stretch"].max()),
            "mean_stretch": float(jt["stretch"].mean()),
            "idle_ratio": 1.0 - held / (P * makespan), "utilization": work / (P * makespan),
            "jobs": int(len(jt)), "complete": int(jt["complete"].sum())}


def _step(times, starts, ends, weights):
    """Sum of ``weights`` of intervals [start, end) covering each time."""
    out = np.zeros(len(times))
    s, e, w = np.asarray(starts), np.asarray(ends), np.asarray(weights, dtype=float)
    for i, t in enumerate(times):
        out[i] = w[(s <= t) & (t < e)].sum()
    return out


def series(phases: pd.DataFrame, jobs: dict, P: int, B: float, times) -> pd.DataFrame:
    """Time series at ``times`` (s): ``running`` (applications started and
    not ended), ``nodes`` (used nodes / P), ``bandwidth`` (I/O rate / B),
    ``utilization`` (cumulative compute work / (P t), NaN at t = 0)."""
    times = np.asarray(times, dtype=float)
    jt = job_table(phases, jobs, B)
    io = phases[phases["kind"] == "o"]
    dur = (io["end"] - io["start"]).to_numpy()
    vol = io["job"].map(lambda j: jobs[j].v).to_numpy()
    rate = np.divide(vol, dur, out=np.zeros_like(vol), where=dur > 0)
    comp = phases[phases["kind"] == "c"]
    cs, ce = comp["start"].to_numpy(), comp["end"].to_numpy()
    cq = comp["job"].map(lambda j: jobs[j].nodes).to_numpy(dtype=float)
    done = np.array([(cq * np.clip(np.minimum(ce, t) - cs, 0, None)).sum() for t in times])
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(times > 0, done / (P * times), np.nan)
    return pd.DataFrame({"t": times,
                         "running": _step(times, jt["start"], jt["end"], np.ones(len(jt))),
                         "nodes": _step(times, jt["start"], jt["end"], jt["nodes"]) / P,
                         "bandwidth": _step(times, io["start"], io["end"], rate) / B,
                         "utilization": util})


def _binned(edges, starts, ends, weights):
    s, e, w = (np.asarray(x, dtype=float) for x in (starts, ends, weights))
    out = np.zeros(len(edges) - 1)
    for i, (t0, t1) in enumerate(zip(edges[:-1], edges[1:])):
        out[i] = (w * np.clip(np.minimum(e, t1) - np.maximum(s, t0), 0, None)).sum() / (t1 - t0)
    return out


def binned_usage(phases: pd.DataFrame, jobs: dict, P: int, B: float, edges) -> pd.DataFrame:
    """Fig. 8's quantities averaged over the bins ``[edges[i], edges[i+1])``
    (s): ``t`` (bin middle), ``running``, ``nodes`` (/ P), ``computing``
    (nodes in compute phases / P) and ``bandwidth`` (/ B)."""
    edges = np.asarray(edges, dtype=float)
    jt = job_table(phases, jobs, B)
    io = phases[phases["kind"] == "o"]
    dur = (io["end"] - io["start"]).to_numpy()
    vol = io["job"].map(lambda j: jobs[j].v).to_numpy(dtype=float)
    rate = np.divide(vol, dur, out=np.zeros_like(vol), where=dur > 0)
    comp = phases[phases["kind"] == "c"]
    return pd.DataFrame({
        "t": 0.5 * (edges[:-1] + edges[1:]),
        "running": _binned(edges, jt["start"], jt["end"], np.ones(len(jt))),
        "nodes": _binned(edges, jt["start"], jt["end"], jt["nodes"]) / P,
        "computing": _binned(edges, comp["start"], comp["end"],
                             comp["job"].map(lambda j: jobs[j].nodes)) / P,
        "bandwidth": _binned(edges, io["start"], io["end"], rate) / B})


def max_io_overlap(phases: pd.DataFrame, eps: float = 1e-9) -> int:
    """Largest number of I/O phases transferring at one instant (intervals
    ``[start, end)``; an end and a start closer than ``eps`` s do not overlap)."""
    io = phases[phases["kind"] == "o"]
    ev = sorted([(s + eps, 1) for s in io["start"]] + [(e, -1) for e in io["end"]])
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best
