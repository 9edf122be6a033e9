"""Names of the iosched schedulers and how to launch them.

:data:`SCHEDULERS` maps a scheduler name to its scheduler file in the
installed package (``iosched/schedulers/launchers/<file>``, launchable with ``pybatsim
<file> -o <options JSON>``) and the pybatsim options that select the
algorithm. :func:`resolve` turns a name, or the path of any pybatsim
scheduler file, into an absolute path and options. The files ship inside
the package, so the names work after a plain ``pip install``.
"""

from __future__ import annotations

import difflib
import importlib
from pathlib import Path

from iosched.errors import InputError
from iosched.paths import LAUNCHERS_DIR, SCHEDULERS_DIR
from iosched.sched.options import check_declared, with_core

__all__ = ["SCHEDULERS", "SCHEDULERS_DIR", "ENGINE_FLAGS", "resolve", "shipped",
           "required_engine_args", "declared_options", "check_options"]

#: name -> (scheduler file name in :data:`SCHEDULERS_DIR`, pybatsim options).
SCHEDULERS: dict[str, tuple[str, dict]] = {
    # FCFS without backfilling
    "fcfs": ("baseline.py", {"policy": "fcfs"}),
    # EASY backfilling, FCFS order (Lifka 1995; Mu'alem & Feitelson 2001)
    "easy": ("baseline.py", {"policy": "easy"}),
    # EASY backfilling, shortest requested time first
    "easy-sjf": ("baseline.py", {"policy": "easy-sjf"}),
    # conservative backfilling (Mu'alem & Feitelson 2001)
    "conservative": ("baseline.py", {"policy": "conservative"}),
    # start every job that fits now, no reservation
    "filler": ("baseline.py", {"policy": "filler"}),
    # burst-buffer policies of Kopanski & Rzadca (Euro-Par 2021); the engine needs
    # --enable-dynamic-jobs (see docs/burst-buffers.md)
    "bb-fcfs": ("burstbuffer.py", {"policy": "fcfs"}),
    "bb-fcfs-easy": ("burstbuffer.py", {"policy": "fcfs-easy"}),
    "fcfs-easy": ("burstbuffer.py", {"policy": "fcfs-easy"}),
    "bb-filler": ("burstbuffer.py", {"policy": "filler"}),
    "fcfs-bb": ("burstbuffer.py", {"policy": "fcfs-bb"}),
    "sjf-bb": ("burstbuffer.py", {"policy": "sjf-bb"}),
    # sjf-bb with the whole queue sorted by walltime (iosched before issue 13)
    "sjf-bb-head": ("burstbuffer.py", {"policy": "sjf-bb-head"}),
    "plan-1": ("burstbuffer.py", {"policy": "plan-1"}),
    "plan-2": ("burstbuffer.py", {"policy": "plan-2"}),
    "plan-3": ("burstbuffer.py", {"policy": "plan-3"}),
    # I/O-aware list vs pack scheduling of Jeannot, Pallez & Vidal (IJHPCA 2023);
    # the engine needs --enable-dynamic-jobs (see docs/listpack.md)
    **{name: ("listpack.py", {"policy": name}) for name in (
        "io-list", "io-list-bf", "io-pack-random", "io-pack-max", "io-pack-char",
        "io-pack-random-bf", "io-pack-max-bf", "io-pack-char-bf")},
    # data-aware dispatch of Li & Tatebe (IEEE Systems Journal 2017) and its
    # Torque FIFO baseline, on NUSA platforms (see docs/dad.md)
    "torque-fifo": ("dad.py", {"policy": "torque-fifo"}),
    "dad": ("dad.py", {"policy": "dad"}),
    "dad-ds": ("dad.py", {"policy": "ds"}),
    # PFS-bandwidth-aware backfilling of Goponenko et al. (PMBS 2024), docs/pfsbw.md
    "slurm-backfill": ("pfsbw.py", {"policy": "slurm-backfill"}),
    "io-aware": ("pfsbw.py", {"policy": "io-aware"}),
    "adaptive": ("pfsbw.py", {"policy": "adaptive"}),
    "adaptive-naive": ("pfsbw.py", {"policy": "adaptive", "variant": "naive"}),
    # data-locality policies of Gonthier et al. (RR-9497); the engine needs
    # --enable-dynamic-jobs (see docs/locality.md)
    **{f"loc-{p}": ("locality.py", {"policy": p}) for p in (
        "fcfs", "eft", "lea", "leo", "lem", "fcfs-bf", "eft-bf", "lea-bf", "leo-bf", "lem-bf")},
}


#: scheduler file name -> engine flags it needs:
#: the burst-buffer schedulers run each job as a dynamic job (Batsim's
#: ``--enable-dynamic-jobs``, without ``--acknowledge-dynamic-jobs``).
ENGINE_FLAGS: dict[str, tuple[str, ...]] = {
    "burstbuffer.py": ("--enable-dynamic-jobs",),
    "listpack.py": ("--enable-dynamic-jobs",),
    "locality.py": ("--enable-dynamic-jobs",),
}


def _shipped_path(scheduler_file) -> Path | None:
    """The resolved path of *scheduler_file* if it is a shipped scheduler
    file (see :func:`shipped`), else None."""
    try:
        path = Path(scheduler_file).resolve()
    except (OSError, RuntimeError):
        return None
    return path if path.parent in (SCHEDULERS_DIR, LAUNCHERS_DIR.resolve()) else None


def shipped(scheduler_file) -> bool:
    """Whether *scheduler_file* (a path, any form) is one of iosched's
    shipped scheduler files (:data:`SCHEDULERS_DIR`) or its thin launcher in
    the source tree's ``schedulers/``."""
    return _shipped_path(scheduler_file) is not None


def required_engine_args(scheduler_file) -> tuple:
    """Engine flags a scheduler file needs (see :data:`ENGINE_FLAGS`).

    :param scheduler_file: path of a scheduler file (any form): one of
        :data:`SCHEDULERS_DIR` or its thin launcher in the source tree's
        ``schedulers/``.
    :returns: a tuple of flags (empty for other schedulers or without
        requirements).
    """
    path = _shipped_path(scheduler_file)
    return ENGINE_FLAGS.get(path.name, ()) if path is not None else ()


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
        name, options = SCHEDULERS[key]
        path = SCHEDULERS_DIR / name
        if not path.is_file():
            raise InputError(f"scheduler {key!r}: its file {path} is missing")
        return path, dict(options)
    path = Path(key)
    if path.is_file():
        return path.resolve(), {}
    close = difflib.get_close_matches(key, list(SCHEDULERS), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise InputError(
        f"scheduler {key!r}: not a known name{hint} ({', '.join(SCHEDULERS)}) nor an existing file")


def declared_options(name_or_path) -> dict | None:
    """The options a shipped scheduler declares (its class's ``OPTIONS``,
    :mod:`iosched.sched.options`).

    :param name_or_path: a key of :data:`SCHEDULERS`, or the path of one of
        the shipped launcher files (:data:`SCHEDULERS_DIR` or the source
        tree's ``schedulers/``).
    :returns: the ``name -> description`` dict (with the core's
        :data:`~iosched.sched.options.CORE_OPTIONS`), or None for another file or
        a scheduler that declares nothing (its options are not checked here;
        the scheduler process still checks what it declares).
    :raises InputError: as :func:`resolve` (unknown name).
    """
    path, _ = resolve(name_or_path)
    if not shipped(path):
        return None
    if not (SCHEDULERS_DIR / path.name).is_file():
        return None
    stem = path.stem
    # pybatsim's launcher: the class is named after the file (``module_to_class``)
    module = importlib.import_module(f"iosched.schedulers.{stem}")
    cls = getattr(module, stem[0].upper() + stem[1:], None)
    return with_core(getattr(cls, "OPTIONS", None))


def check_options(name_or_path, options: dict) -> None:
    """Refuse options a shipped scheduler does not declare, before it runs.

    :param name_or_path: as :func:`declared_options`.
    :param options: the options the user gives (merged over the registered
        defaults by the caller or not: registered defaults are declared).
    :raises InputError: an unknown scheduler name (:func:`resolve`) or an
        unknown option (one line, :func:`iosched.sched.options.check_declared`).
    """
    check_declared(options, declared_options(name_or_path), f"scheduler {str(name_or_path)!r}")
