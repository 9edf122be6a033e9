"""Naming of the dynamic jobs that run workload jobs.

A scheduler that runs a workload job ``w0!J`` as dynamic jobs it registers
itself (Batsim's ``--enable-dynamic-jobs``; the burst-buffer, list/pack
and locality families do, through :mod:`iosched.sched.executor`) rejects
``w0!J`` and names its runs in the workload :data:`RUN_WORKLOAD`:

* one run per workload job: ``bb!J`` (the embedded-only ``composed``
  encoding of the burst-buffer family);
* one run per phase: ``bb!J:k``, ``k`` = 0, 1, ... in execution order (the
  default; each phase has its own profile, registered once and never
  reused, which the real Batsim 4.2.1 requires, named ``J:k`` or, by
  :func:`phase_profile_name`, ``J:k/n`` with ``n`` the number of phases of
  the run: then the metrics can tell a run that ended before its last
  phase, see :func:`phase_count`).

The metrics merge the static row and its runs into one job (submission of
the static job, start of the first run, end and final state of the last).
This naming is the project's convention, not Batsim's; :data:`PHASE_SEPARATOR`
is not allowed in workload job ids that are run this way.
"""

from __future__ import annotations

from iosched.batsim.jobs import job_id, local_id

__all__ = ["RUN_WORKLOAD", "STATIC_WORKLOAD", "PHASE_SEPARATOR", "run_job_id", "phase_job_id",
           "base_local_id", "phase_index", "static_id_of", "PHASE_COUNT_SEPARATOR",
           "phase_profile_name", "phase_count"]

#: Workload name of the dynamic jobs that run workload jobs.
RUN_WORKLOAD = "bb"
#: Workload name the engine gives the first (static) workload file.
STATIC_WORKLOAD = "w0"
#: Separates a workload job's local id from its phase index in a run's id.
PHASE_SEPARATOR = ":"
#: Separates a phase's index from its run's number of phases in the phase's
#: profile name (``"12:3/7"``, :func:`phase_profile_name`).
PHASE_COUNT_SEPARATOR = "/"


def run_job_id(static_id: str, run_workload: str = RUN_WORKLOAD) -> str:
    """``"w0!12"`` -> ``"bb!12"`` (the dynamic job that runs a workload job)."""
    return job_id(run_workload, local_id(static_id))


def phase_job_id(static_id: str, k: int, run_workload: str = RUN_WORKLOAD) -> str:
    """``("w0!12", 3)`` -> ``"bb!12:3"`` (phase ``k`` of a workload job's run)."""
    return job_id(run_workload, f"{local_id(static_id)}{PHASE_SEPARATOR}{int(k)}")


def base_local_id(run_local_id: str) -> str:
    """``"12:3"`` -> ``"12"``, ``"12"`` -> ``"12"`` (the workload job's local id)."""
    return str(run_local_id).split(PHASE_SEPARATOR, 1)[0]


def phase_index(run_local_id: str) -> int:
    """``"12:3"`` -> 3; a run without phase (``"12"``) -> 0.

    :raises ValueError: the suffix is not an integer.
    """
    parts = str(run_local_id).split(PHASE_SEPARATOR, 1)
    return int(parts[1]) if len(parts) == 2 else 0


def static_id_of(run_id: str, workload: str = STATIC_WORKLOAD) -> str:
    """``"bb!12"`` or ``"bb!12:3"`` -> ``"w0!12"`` (inverse of
    :func:`run_job_id` and :func:`phase_job_id`)."""
    return job_id(workload, base_local_id(local_id(run_id)))


def phase_profile_name(local: str, k: int, n: "int | None" = None) -> str:
    """``("12", 3, 7)`` -> ``"12:3/7"``: the profile of phase ``k`` of a run
    of ``n`` phases of workload job ``12``; ``("12", 3)`` -> ``"12:3"``
    (the number of phases not carried)."""
    if n is None:
        return f"{local}{PHASE_SEPARATOR}{int(k)}"
    return f"{local}{PHASE_SEPARATOR}{int(k)}{PHASE_COUNT_SEPARATOR}{int(n)}"


def phase_count(profile_name) -> "int | None":
    """The number of phases of a run, read from the profile name of one of
    its phases (``"12:3/7"`` -> 7); None when the name does not carry it
    (``"12:3"``, profiles of other runs, outputs written before
    :func:`phase_profile_name`)."""
    parts = str(profile_name).rsplit(PHASE_COUNT_SEPARATOR, 1)
    if len(parts) != 2 or PHASE_SEPARATOR not in parts[0]:
        return None
    try:
        n = int(parts[1])
    except ValueError:
        return None
    return n if n >= 1 else None
