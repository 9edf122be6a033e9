"""Names of the iosched schedulers and how to launch them.

:data:`SCHEDULERS` maps a scheduler name to the scheduler file (a path
relative to the repository root, launchable with ``pybatsim <file> -o
<options JSON>``) and the pybatsim options that select the algorithm.
:func:`resolve` turns a name, or the path of any pybatsim scheduler file,
into an absolute path and options.

The repository root is found from this module's location
(``src/iosched/sched/registry.py`` -> three levels up), so the project must be
used from its source tree (editable install), where ``schedulers/`` lives.
"""

from __future__ import annotations

from pathlib import Path

from iosched.errors import InputError

__all__ = ["SCHEDULERS", "REPO_ROOT", "ENGINE_FLAGS", "resolve", "required_engine_args"]

#: Repository root: ``src/iosched/sched/registry.py`` -> ``.``.
REPO_ROOT = Path(__file__).resolve().parents[3]

#: name -> (scheduler file relative to the repository root, pybatsim options).
SCHEDULERS: dict[str, tuple[str, dict]] = {
    # FCFS without backfilling
    "fcfs": ("schedulers/baseline.py", {"policy": "fcfs"}),
    # EASY backfilling, FCFS order (Lifka 1995; Mu'alem & Feitelson 2001)
    "easy": ("schedulers/baseline.py", {"policy": "easy"}),
    # EASY backfilling, shortest requested time first
    "easy-sjf": ("schedulers/baseline.py", {"policy": "easy-sjf"}),
    # conservative backfilling (Mu'alem & Feitelson 2001)
    "conservative": ("schedulers/baseline.py", {"policy": "conservative"}),
    # start every job that fits now, no reservation
    "filler": ("schedulers/baseline.py", {"policy": "filler"}),
    # burst-buffer policies of Kopanski & Rzadca (Euro-Par 2021); the engine needs
    # --enable-dynamic-jobs (see docs/burst-buffers.md)
    "bb-fcfs": ("schedulers/burstbuffer.py", {"policy": "fcfs"}),
    "bb-fcfs-easy": ("schedulers/burstbuffer.py", {"policy": "fcfs-easy"}),
    "fcfs-easy": ("schedulers/burstbuffer.py", {"policy": "fcfs-easy"}),
    "bb-filler": ("schedulers/burstbuffer.py", {"policy": "filler"}),
    "fcfs-bb": ("schedulers/burstbuffer.py", {"policy": "fcfs-bb"}),
    "sjf-bb": ("schedulers/burstbuffer.py", {"policy": "sjf-bb"}),
    "plan-1": ("schedulers/burstbuffer.py", {"policy": "plan-1"}),
    "plan-2": ("schedulers/burstbuffer.py", {"policy": "plan-2"}),
    "plan-3": ("schedulers/burstbuffer.py", {"policy": "plan-3"}),
}


#: scheduler file (relative to the repository root) -> engine flags it needs:
#: the burst-buffer schedulers run each job as a dynamic job (Batsim's
#: ``--enable-dynamic-jobs``, without ``--acknowledge-dynamic-jobs``).
ENGINE_FLAGS: dict[str, tuple[str, ...]] = {
    "schedulers/burstbuffer.py": ("--enable-dynamic-jobs",),
}


def required_engine_args(scheduler_file) -> tuple:
    """Engine flags a scheduler file needs (see :data:`ENGINE_FLAGS`).

    :param scheduler_file: path of a scheduler file (any form).
    :returns: a tuple of flags (empty for schedulers outside this repository
        or without requirements).
    """
    try:
        rel = Path(scheduler_file).resolve().relative_to(REPO_ROOT.resolve())
    except (ValueError, OSError):
        return ()
    return ENGINE_FLAGS.get(rel.as_posix(), ())


def resolve(name_or_path) -> tuple[Path, dict]:
    """Scheduler file and options for a registered name or a file path.

    :param name_or_path: a key of :data:`SCHEDULERS` (e.g. ``"easy"``), or the
        path (str or Path, absolute or relative to the working directory) of
        an existing pybatsim scheduler file, which gets empty options.
    :returns: ``(absolute Path of the scheduler file, options dict)``; the
        dict is a fresh copy.
    :raises InputError: if the argument is neither a registered name nor an
        existing file, or a registered scheduler's file is missing.
    """
    key = str(name_or_path)
    if key in SCHEDULERS:
        rel, options = SCHEDULERS[key]
        path = (REPO_ROOT / rel).resolve()
        if not path.is_file():
            raise InputError(f"scheduler {key!r}: its file {path} is missing")
        return path, dict(options)
    path = Path(key)
    if path.is_file():
        return path.resolve(), {}
    raise InputError(
        f"scheduler {key!r}: not a known name ({', '.join(SCHEDULERS)}) nor an existing file")
