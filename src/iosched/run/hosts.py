"""The compute hosts of a run: how many hosts of the simulated machine run
jobs, counted from the engine's command line.

The runner counts them once, when it builds the engine command, and records
the count in the run record (``compute_hosts`` of ``command.json``, see
:mod:`iosched.record`); campaigns count them to size their workloads.
Utilization is computed over this count: storage and master hosts excluded,
roles given with ``-r`` included, capped by ``--mmax``.
"""

from __future__ import annotations

from pathlib import Path

from iosched.engine.platform import count_compute_hosts
from iosched.errors import InputError

__all__ = ["compute_hosts_of_argv"]


def compute_hosts_of_argv(argv: list[str], cwd: str | Path | None = None,
                          jobs_path: str | Path | None = None) -> int | None:
    """Compute hosts Batsim exposes for an engine command line.

    ``argv``: the engine's arguments, possibly after the command that
    starts it (``batsim``, ``iosched-batsim`` or ``python -m
    iosched.engine.cli``, which is skipped);
    Batsim's flags ``-p/--platform``, ``-r/--add-role-to-hosts``,
    ``-m/--master-host``, ``--mmax`` and ``-e/--export`` are read, a
    relative platform path being relative to ``cwd`` (default: the current
    directory). Returns :func:`iosched.engine.platform.count_compute_hosts`
    (capped at ``--mmax``), or None when there is no platform, it cannot be
    read, it has no compute host, or ``jobs_path`` is given and is not the
    command's ``<export prefix>_jobs.csv``.
    """
    argv = [str(a) for a in argv]
    # drop the command itself (``python -m iosched.engine.cli``: its ``-m`` is
    # not Batsim's --master-host)
    for k, a in enumerate(argv):
        if a == "iosched.engine.cli" or Path(a).name in ("batsim", "iosched-batsim"):
            argv = argv[k + 1:]
            break
    values: dict[str, list[str]] = {}
    names = {"-p": "platform", "--platform": "platform", "-r": "roles",
             "--add-role-to-hosts": "roles", "-m": "master", "--master-host": "master",
             "--mmax": "mmax", "-e": "export", "--export": "export"}
    i = 0
    while i < len(argv):
        a = argv[i]
        key, value = a, None
        if a.startswith("--") and "=" in a:
            key, value = a.split("=", 1)
        if key in names:
            if value is None:
                if i + 1 >= len(argv):
                    break
                value = argv[i + 1]
                i += 1
            values.setdefault(names[key], []).append(value)
        i += 1
    if "platform" not in values:
        return None
    export = values.get("export", ["out"])[-1]
    if jobs_path is not None and Path(jobs_path).name != f"{Path(export).name}_jobs.csv":
        return None
    platform = Path(values["platform"][-1])
    if not platform.is_absolute():
        platform = Path(cwd if cwd is not None else ".") / platform
    try:
        n = count_compute_hosts(str(platform), values.get("master", ["master_host"])[-1],
                                values.get("roles", []))
        mmax = int(values.get("mmax", ["0"])[-1])
    except (InputError, OSError, ValueError):
        return None
    if mmax > 0:
        n = min(n, mmax)
    return n if n > 0 else None
