"""Batsim 4.2.1 job conventions: identifiers, walltimes, final states.

Sources: Batsim's ``docs/input-workload.rst`` (job fields), ``src/jobs.cpp``
(``JobIdentifier``: ``workload_name!job_name``) and ``docs/output-jobs.rst``
(final states) at tag v4.2.1.
"""

from __future__ import annotations

import math

__all__ = ["SEPARATOR", "job_id", "split_job_id", "local_id", "NO_WALLTIME", "walltime_seconds",
           "walltime_field_ok", "COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED",
           "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED", "REJECTED", "FINAL_STATES"]

#: Separator of a job's workload name and local id in a Batsim job id.
SEPARATOR = "!"

#: The walltime value that means "no walltime" in workloads and in ``_jobs.csv``.
NO_WALLTIME = -1

COMPLETED_SUCCESSFULLY = "COMPLETED_SUCCESSFULLY"
COMPLETED_FAILED = "COMPLETED_FAILED"
COMPLETED_WALLTIME_REACHED = "COMPLETED_WALLTIME_REACHED"
COMPLETED_KILLED = "COMPLETED_KILLED"
REJECTED = "REJECTED"
#: Every final state a job can have in ``_jobs.csv`` (one per job).
FINAL_STATES = (COMPLETED_SUCCESSFULLY, COMPLETED_FAILED, COMPLETED_WALLTIME_REACHED,
                COMPLETED_KILLED, REJECTED)


def job_id(workload: str, local: str) -> str:
    """``("w0", "12")`` -> ``"w0!12"``."""
    return f"{workload}{SEPARATOR}{local}"


def split_job_id(full_id: str) -> tuple[str, str]:
    """``"w0!12"`` -> ``("w0", "12")``.

    :raises ValueError: if the id has no ``!``.
    """
    workload, sep, local = str(full_id).partition(SEPARATOR)
    if not sep:
        raise ValueError(f"job id {full_id!r} is not of the form WORKLOAD!ID")
    return workload, local


def local_id(full_id: str) -> str:
    """``"w0!12"`` -> ``"12"`` (an id without ``!`` is returned as is)."""
    return str(full_id).split(SEPARATOR, 1)[-1]


def walltime_field_ok(value) -> bool:
    """Whether a workload's ``walltime`` value is valid: absent (None), ``-1``
    (no walltime) or a number > 0 (seconds)."""
    return value is None or value == NO_WALLTIME or value > 0


def walltime_seconds(value) -> float:
    """The walltime rule: a job's walltime in seconds, ``math.inf`` for none.

    :param value: a workload or protocol ``walltime`` / pybatsim
        ``requested_time`` (s): ``None``, ``-1``, a non-positive or
        non-numeric value all mean "no walltime".
    :returns: a float > 0, or ``math.inf``.
    """
    try:
        wt = float(value)
    except (TypeError, ValueError):
        return math.inf
    if not math.isfinite(wt) or wt <= 0:
        return math.inf
    return wt
