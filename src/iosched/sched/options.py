"""The options a scheduler accepts, declared once in its scheduler file.

A scheduler class (a :class:`~iosched.sched.adapter.PybatsimScheduler`
subclass in ``iosched/schedulers/<family>.py``) declares the names of the
pybatsim options (``-o`` JSON keys) it reads in its class attribute
``OPTIONS``: a dict ``name -> one-line description``. That one declaration
is checked in three places, so a typo (``{"polcy": "fcfs"}``) fails before
anything runs instead of being ignored:

* in the scheduler process, when pybatsim builds the scheduler
  (:meth:`PybatsimScheduler.__init__ <iosched.sched.adapter.PybatsimScheduler>`,
  also when the file is launched by hand with ``pybatsim FILE -o ...``);
* in ``iosched run``, before any process starts
  (:func:`iosched.schedulers.registry.check_options`);
* in campaign validation, for each scheduler entry's ``options`` and
  ``seed_option``.

A class whose ``OPTIONS`` is None (the default) declares nothing and its
options are not checked. Every scheduler of the core also accepts
:data:`CORE_OPTIONS` (:func:`with_core`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from iosched.errors import InputError

__all__ = ["check_declared", "CORE_OPTIONS", "IO_RECORD", "IO_FALLBACK", "fallback_option", "record_option", "with_core"]

#: Option of every core scheduler: the folder where it writes its I/O record
#: (:mod:`iosched.sched.iorecord`); absent, null or "": no record.
IO_RECORD = "io_record"
#: Option of every core scheduler: whether a job of an I/O part its family
#: has no model of runs as an I/O-unaware scheduler would run it (true, the
#: default) or is rejected (false: strict; :mod:`iosched.sched.adapter`).
IO_FALLBACK = "io_fallback"
#: The options every scheduler built on the core accepts, besides its own.
CORE_OPTIONS = {
    IO_RECORD: "folder where the scheduler writes its I/O record (io_phases.csv, io_holds.csv, "
               "io_inputs.csv; docs/outputs.md); null: none",
    IO_FALLBACK: "run a job of an I/O part the family has no model of as an I/O-unaware scheduler "
                 "would (true, default) or reject it (false; docs/io-job-model.md)",
}


def fallback_option(options: Mapping, where: str) -> bool:
    """The value of :data:`IO_FALLBACK` in ``options`` (default true).

    :param where: what to name in the message (a scheduler name).
    :raises InputError: not a boolean (one line naming the option).
    """
    value = options.get(IO_FALLBACK, True)
    if not isinstance(value, bool):
        raise InputError(f"{where}: option {IO_FALLBACK!r}: expected true or false, got {value!r}")
    return value


def record_option(options: Mapping, where: str) -> str | None:
    """The folder of :data:`IO_RECORD` in ``options``, or None (absent, null
    or ""): no record.

    :param where: what to name in the message (a scheduler name).
    :raises InputError: neither a string nor null (one line naming the option).
    """
    folder = options.get(IO_RECORD)
    if folder is not None and not isinstance(folder, str):
        raise InputError(f"{where}: option {IO_RECORD}: expected a folder path or null, got {folder!r}")
    return folder or None


def with_core(declared: Mapping | None) -> dict | None:
    """A scheduler's declared options plus :data:`CORE_OPTIONS` (None stays
    None: nothing is checked)."""
    return None if declared is None else {**declared, **CORE_OPTIONS}


def check_declared(options: Mapping, declared: Mapping | None, where: str) -> None:
    """Refuse option names a scheduler does not declare.

    :param options: the options given (a dict of pybatsim options).
    :param declared: the scheduler's ``OPTIONS`` (name -> description), or
        None when it declares nothing (then nothing is checked).
    :param where: what to name in the message (a scheduler name or file).
    :raises InputError: one line naming the first unknown option, the
        closest declared name when one is close, and the accepted names.
    """
    if declared is None:
        return
    unknown = sorted(str(k) for k in options if k not in declared)
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, list(declared), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
    accepted = ", ".join(declared) if declared else "none"
    raise InputError(f"{where}: unknown option {name!r}{more}{hint}; accepted options: {accepted}")
