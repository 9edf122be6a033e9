"""What a run gives back: :class:`RunResult` when it succeeded,
:class:`RunError` when it failed, and the engine's output files of an export
prefix (:func:`engine_outputs`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from iosched.errors import one_line

__all__ = ["RunError", "RunResult", "engine_outputs"]


class RunError(RuntimeError):
    """A simulation failed: a process exited non-zero, timed out or never got ready.

    The message is one line giving the reason. Attributes: ``returncodes``
    (process name -> exit code or None), ``pids`` (process name -> every pid
    seen in that process tree), ``logs`` (process name -> log path) and
    ``output_dir`` (Path or None).
    """

    def __init__(self, message, *, returncodes=None, pids=None, logs=None, output_dir=None):
        super().__init__(one_line(message))
        self.returncodes = dict(returncodes or {})
        self.pids = {k: list(v) for k, v in (pids or {}).items()}
        self.logs = dict(logs or {})
        self.output_dir = output_dir


@dataclass
class RunResult:
    """Outcome of a successful run.

    ``jobs_csv``, ``schedule_csv`` and ``machine_states_csv`` are the paths of
    the engine's outputs for ``export_prefix`` (None when the engine did not
    write that file); ``wall_time`` is in s; return codes are None for a
    process that was not started (no scheduler in robin batexec mode);
    ``cpus`` is the CPU set both processes ran on (None: not pinned, see
    :mod:`iosched.run.affinity`); ``compute_hosts`` is the number of compute
    hosts of the engine command (:func:`iosched.run.hosts.compute_hosts_of_argv`,
    None when unknown), counted once when the command was built; ``rusage``
    maps each process that ran (``"scheduler"``, ``"engine"``; with the
    in-process path only ``"engine"``, which holds both) to its own CPU
    times as reaped (``{"user_s", "sys_s"}``, s; absent when the runner
    could not reap it itself). Peak memory is not there: a child's
    ``ru_maxrss`` includes its parent's (:mod:`iosched.procmem`); the
    engine's ``--rusage-file`` gives the engine's own.
    """

    output_dir: Path
    export_prefix: Path
    jobs_csv: Path | None
    schedule_csv: Path | None
    machine_states_csv: Path | None
    wall_time: float
    scheduler_returncode: int | None
    engine_returncode: int | None
    scheduler_cmd: list[str] | str | None
    engine_cmd: list[str] | str
    port: int | None
    logs: dict[str, Path] = field(default_factory=dict)
    pids: dict[str, list[int]] = field(default_factory=dict)
    cpus: list[int] | None = None
    compute_hosts: int | None = None
    rusage: dict[str, dict] = field(default_factory=dict)


def engine_outputs(prefix: Path) -> tuple[Path | None, Path | None, Path | None]:
    """The engine's ``_jobs.csv``, ``_schedule.csv`` and ``_machine_states.csv``
    for export *prefix* (None for a file the engine did not write)."""
    def one(suffix):
        p = Path(f"{prefix}{suffix}")
        return p if p.is_file() else None

    return one("_jobs.csv"), one("_schedule.csv"), one("_machine_states.csv")

