"""Batsim 4.2.1 output files: ``PREFIX_jobs.csv``, ``PREFIX_schedule.csv``,
``PREFIX_machine_states.csv``.

Columns and number formats follow the real Batsim 4.2.1 (see
``docs/output-jobs.rst``, ``docs/output-schedule.rst`` and the files in
``shared/golden``): times in seconds with 6 decimals, one row per job in the
order in which jobs reached their final state. Rejected jobs get a row with
``final_state`` REJECTED, ``success`` 0 and empty start/finish fields.
"""

from __future__ import annotations

import os

JOBS_COLUMNS = [
    "job_id", "workload_name", "profile", "submission_time",
    "requested_number_of_resources", "requested_time", "success", "final_state",
    "starting_time", "execution_time", "finish_time", "waiting_time",
    "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
    "metadata",
]

SCHEDULE_COLUMNS = [
    "batsim_version", "consumed_joules", "makespan", "max_slowdown",
    "max_turnaround_time", "max_waiting_time", "mean_slowdown",
    "mean_turnaround_time", "mean_waiting_time", "nb_computing_machines",
    "nb_grouped_switches", "nb_jobs", "nb_jobs_finished", "nb_jobs_killed",
    "nb_jobs_rejected", "nb_jobs_success", "nb_machine_switches",
    "scheduling_time", "simulation_time", "success_rate", "time_computing",
    "time_idle", "time_sleeping", "time_switching_off", "time_switching_on",
    "time_unavailable",
]

MACHINE_STATES_COLUMNS = [
    "time", "nb_sleeping", "nb_switching_on", "nb_switching_off", "nb_idle",
    "nb_computing", "nb_unavailable",
]

BATSIM_VERSION = "4.2.1"


def f6(x: float) -> str:
    """Format a number as Batsim does (``%f``)."""
    return f"{x:.6f}"


def prepare_prefix(prefix: str) -> None:
    """Create the directory part of an output prefix if it does not exist.

    :raises OSError: the directory cannot be created.
    """
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)


def write_jobs(prefix: str, rows: list[dict]) -> str:
    """Write ``PREFIX_jobs.csv``; each row maps :data:`JOBS_COLUMNS` to strings."""
    path = f"{prefix}_jobs.csv"
    with open(path, "w", newline="") as f:
        f.write(",".join(JOBS_COLUMNS) + "\n")
        cols = JOBS_COLUMNS[:-1]
        lines = []
        for r in rows:
            line = ",".join([r[c] for c in cols])
            if line.count(",") != len(cols) - 1 or '"' in line or "\n" in line:
                line = ",".join([_csv_field(r[c]) for c in cols])
            # metadata is always quoted, as Batsim does
            md = r["metadata"].replace('"', '""')
            lines.append(f'{line},"{md}"\n')
        f.write("".join(lines))
    return path


def _csv_field(v: str) -> str:
    if any(c in v for c in ',"\n'):
        return '"' + v.replace('"', '""') + '"'
    return v


def write_schedule(prefix: str, values: dict) -> str:
    """Write ``PREFIX_schedule.csv`` (one header line, one value line)."""
    path = f"{prefix}_schedule.csv"
    with open(path, "w", newline="") as f:
        f.write(",".join(SCHEDULE_COLUMNS) + "\n")
        f.write(",".join(str(values[c]) for c in SCHEDULE_COLUMNS) + "\n")
    return path


def write_machine_states(prefix: str, rows: list[tuple]) -> str:
    """Write ``PREFIX_machine_states.csv``: one row per time the number of
    machines in a state changed (``time`` in s, then counts)."""
    path = f"{prefix}_machine_states.csv"
    with open(path, "w", newline="") as f:
        f.write(",".join(MACHINE_STATES_COLUMNS) + "\n")
        for t, idle, computing in rows:
            f.write(f"{f6(t)},0,0,0,{idle},{computing},0\n")
    return path
