"""Batsim 4.2.1 export files: ``PREFIX_jobs.csv``, ``PREFIX_schedule.csv``,
``PREFIX_machine_states.csv`` (columns and number format).

Source: Batsim's ``docs/output-jobs.rst``, ``docs/output-schedule.rst`` and
``src/export.cpp`` at tag v4.2.1, and the files of ``shared/golden``.
"""

from __future__ import annotations

import os

from iosched.errors import InputError

__all__ = ["check_not_torn", "BATSIM_VERSION", "JOBS_COLUMNS", "SCHEDULE_COLUMNS", "MACHINE_STATES_COLUMNS",
           "JOBS_SUFFIX", "SCHEDULE_SUFFIX", "MACHINE_STATES_SUFFIX", "F6", "f6", "g"]

BATSIM_VERSION = "4.2.1"

JOBS_SUFFIX = "_jobs.csv"
SCHEDULE_SUFFIX = "_schedule.csv"
MACHINE_STATES_SUFFIX = "_machine_states.csv"

#: Header of ``_jobs.csv``, in order.
JOBS_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time",
    "requested_number_of_resources", "requested_time", "success", "final_state",
    "starting_time", "execution_time", "finish_time", "waiting_time",
    "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
    "metadata",
)

#: Header of ``_schedule.csv``, in order.
SCHEDULE_COLUMNS = (
    "batsim_version", "consumed_joules", "makespan", "max_slowdown",
    "max_turnaround_time", "max_waiting_time", "mean_slowdown",
    "mean_turnaround_time", "mean_waiting_time", "nb_computing_machines",
    "nb_grouped_switches", "nb_jobs", "nb_jobs_finished", "nb_jobs_killed",
    "nb_jobs_rejected", "nb_jobs_success", "nb_machine_switches",
    "scheduling_time", "simulation_time", "success_rate", "time_computing",
    "time_idle", "time_sleeping", "time_switching_off", "time_switching_on",
    "time_unavailable",
)

#: Header of ``_machine_states.csv``, in order (Batsim 4.2.1's
#: ``MachineStateTracer::set_filename``, src/export.cpp: ``time`` then one
#: ``nb_<state>`` column per state sleeping, switching on, switching off, idle,
#: computing).
MACHINE_STATES_COLUMNS = (
    "time", "nb_sleeping", "nb_switching_on", "nb_switching_off", "nb_idle",
    "nb_computing",
)


#: The ``%`` conversion of Batsim's times and amounts (C's ``%f``: 6 decimals)
F6 = "%.6f"


def f6(x: float) -> str:
    """A number as Batsim writes times and amounts (:data:`F6`: 6 decimals)."""
    return F6 % x


def g(x: float) -> str:
    """A time as Batsim writes it in ``_machine_states.csv`` (C's ``%g``:
    6 significant digits, e.g. ``0``, ``4.70916``, ``933535``, ``1.23457e+06``;
    ``MachineStateTracer::write_machine_states``, src/export.cpp)."""
    return "%g" % x


def check_not_torn(path: str | os.PathLike) -> None:
    """Refuse an output file cut short: a non-empty file whose last line does
    not end with a newline (an engine or a copy killed while writing; the
    embedded engine writes its outputs atomically, so a torn file comes from
    elsewhere, e.g. a real Batsim killed mid-write).

    :raises InputError: one line naming the file.
    """
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return
            fh.seek(-1, os.SEEK_END)
            last = fh.read(1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if last != b"\n":
        raise InputError(f"{path}: torn file (the last line is incomplete: the run that "
                         "wrote it was killed or is still writing)")
