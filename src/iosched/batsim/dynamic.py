"""Naming of the dynamic jobs that run workload jobs.

A scheduler that runs a workload job ``w0!J`` as a dynamic job it registers
itself (Batsim's ``--enable-dynamic-jobs``; the burst-buffer family does)
names that job ``<RUN_WORKLOAD>!J`` and rejects ``w0!J``; the metrics merge
the two rows into one job (submission of the first, start, end and state of
the second). This naming is the project's convention, not Batsim's.
"""

from __future__ import annotations

from iosched.batsim.jobs import job_id, local_id

__all__ = ["RUN_WORKLOAD", "STATIC_WORKLOAD", "run_job_id", "static_id_of"]

#: Workload name of the dynamic jobs that run workload jobs.
RUN_WORKLOAD = "bb"
#: Workload name the engine gives the first (static) workload file.
STATIC_WORKLOAD = "w0"


def run_job_id(static_id: str, run_workload: str = RUN_WORKLOAD) -> str:
    """``"w0!12"`` -> ``"bb!12"`` (the dynamic job that runs a workload job)."""
    return job_id(run_workload, local_id(static_id))


def static_id_of(run_id: str, workload: str = STATIC_WORKLOAD) -> str:
    """``"bb!12"`` -> ``"w0!12"`` (inverse of :func:`run_job_id`)."""
    return job_id(workload, local_id(run_id))
