"""Workload generators of campaigns: seeded synthetic workloads
(:func:`synthetic_workload`) and consecutive time windows of a workload
(:func:`split_parts`)."""

from __future__ import annotations

import math
import random

from iosched.errors import InputError
from iosched.workloads.subset import workload_subset

__all__ = ["synthetic_workload", "split_parts"]


def synthetic_workload(nb_jobs: int, nb_res: int, seed: int, max_res: int | None = None,
                       runtime=(10.0, 600.0), interarrival: float = 30.0,
                       walltime_factor: float = 1.5) -> dict:
    """A random Batsim workload of ``delay`` jobs, fully determined by its arguments.

    Inter-arrival times are exponential with mean *interarrival* (s; 0: every
    job at t = 0), job sizes uniform in [1, min(max_res, nb_res)], run times
    uniform in [runtime[0], runtime[1]] (s, rounded to 0.1 s), walltimes =
    run time x *walltime_factor* (s, rounded to 0.1 s, >= the run time).
    Uses Python's ``random.Random(seed)`` (stable across versions).

    :returns: a workload dict (``nb_res``, ``jobs``, ``profiles``) for
        :func:`iosched.workloads.writer.dump_workload`.
    :raises InputError: a non-positive count or size, bad run-time range.
    """
    if nb_jobs < 1 or nb_res < 1:
        raise InputError(f"synthetic: nb_jobs and nb_res must be >= 1, got {nb_jobs}, {nb_res}")
    lo, hi = float(runtime[0]), float(runtime[1])
    if not 0 < lo <= hi:
        raise InputError(f"synthetic: runtime must be [min, max] with 0 < min <= max, got {runtime}")
    top = min(nb_res, max_res or nb_res)
    rng = random.Random(seed)
    t = 0.0
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        if i and interarrival > 0:
            t += rng.expovariate(1.0 / interarrival)
        run = max(0.1, round(rng.uniform(lo, hi), 1))
        res = rng.randint(1, top)
        name = f"delay_{run:g}"
        profiles[name] = {"type": "delay", "delay": run}
        jobs.append({"id": i, "subtime": round(t, 3), "res": res, "profile": name,
                     "walltime": max(run, round(run * walltime_factor, 1))})
    return {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}


def split_parts(workload: dict, length: float, count: int | None = None) -> list[tuple[int, dict]]:
    """Cut a workload into consecutive time windows of *length* s.

    Window k holds the jobs with ``k*length <= subtime < (k+1)*length``
    (subtimes measured from the workload's first submission); their subtimes
    are shifted by -k*length and only the profiles they use are kept. Empty
    windows are skipped; *count* keeps the first *count* non-empty windows.

    :returns: list of (window index k, workload dict).
    :raises InputError: non-positive *length*.
    """
    if not (isinstance(length, (int, float)) and math.isfinite(length) and length > 0):
        raise InputError(f"parts: window length must be > 0 s, got {length!r}")
    jobs = workload["jobs"]
    if not jobs:
        return []
    t0 = min(float(j["subtime"]) for j in jobs)
    buckets: dict[int, list] = {}
    for j in jobs:
        k = int((float(j["subtime"]) - t0) // length)
        buckets.setdefault(k, []).append(j)
    out = []
    for k in sorted(buckets):
        if count is not None and len(out) >= count:
            break
        part_jobs = []
        for j in buckets[k]:
            jj = dict(j)
            jj["subtime"] = round(float(j["subtime"]) - t0 - k * length, 6)
            part_jobs.append(jj)
        out.append((k, workload_subset(workload, part_jobs)))
    return out
