"""How many compute resources a run had: the ``nb_resources`` its
utilization is computed over, and where that number came from.

One definition for every command (``iosched run``, ``iosched metrics``,
campaign tables, reports, the demo): the **compute hosts** of the simulated
machine, i.e. the hosts Batsim can allocate to jobs -- master and storage
hosts excluded, roles given with ``-r`` included, capped by ``--mmax``
(:func:`iosched.engine.platform.count_compute_hosts`,
:func:`iosched.run.hosts.compute_hosts_of_argv`). ``nb_resources`` is, in
this order:

1. the argument (``"argument"``);
2. the compute hosts of the ``platform`` argument
   (``"platform_compute_hosts"``);
3. the compute hosts the runner recorded in the run's ``command.json``
   (:func:`iosched.record.compute_hosts`; ``"command_json_compute_hosts"``;
   an explicit ``machine_states`` argument comes before it):
   every run made by ``iosched run``, ``iosched campaign`` or the demo has it;
4. for a run made elsewhere (e.g. by hand with the real Batsim) without merged
   rows, the sum of the state columns of one row of
   ``<prefix>_machine_states.csv`` (``"machine_states_csv"``; Batsim counts
   every host it manages, storage hosts included: dragonfly96 gives 109 = 96
   compute + 12 burst-buffer + the PFS, so this is an upper bound when the
   platform has storage hosts; pass ``nb_resources`` or ``platform``);
5. the largest allocated resource id + 1 (``"max_allocated_id_plus_1"``, a
   lower bound: resources that never ran a job are not seen).

The machine states are never used for runs with merged rows (burst-buffer
runs merged into their workload jobs, :func:`iosched.analysis.jobs.merge_runs`),
whose storage hosts are allocated. The metrics say which source was used in
``nb_resources_source``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from iosched.analysis.jobs import parse_allocation, source_of
from iosched.batsim.outputs import check_not_torn
from iosched.engine.platform import count_compute_hosts
from iosched.errors import InputError
from iosched.record import compute_hosts

__all__ = ["nb_resources_from_machine_states", "resolve_nb_resources"]


def nb_resources_from_machine_states(path: str | Path) -> int:
    """Number of machines in a Batsim ``*_machine_states.csv``.

    The file (Batsim's ``docs/output-machines.rst``) has a ``time`` column
    and one ``nb_<state>`` column per machine state (``nb_sleeping``,
    ``nb_switching_on``, ``nb_switching_off``, ``nb_idle``, ``nb_computing``,
    and ``nb_unavailable`` in some versions); every row counts each machine
    once, so the sum of the state columns of a row is the number of
    machines.  Returns that sum (an int); every row must agree.

    Raises :class:`~iosched.errors.InputError` when the file is missing,
    torn (:func:`iosched.batsim.outputs.check_not_torn`), empty, has no ``nb_*`` column or no row, has a non-integer count, or
    when the rows do not all sum to the same number.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    check_not_torn(p)
    try:
        ms = pd.read_csv(p)
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{p}: empty file, expected a machine_states CSV header") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{p}: not a readable CSV file ({first})") from None
    cols = [c for c in ms.columns if str(c).startswith("nb_")]
    if not cols:
        raise InputError(f"{p}: no nb_<state> column (expected e.g. nb_idle, nb_computing)")
    if ms.empty:
        raise InputError(f"{p}: no row")
    for c in cols:
        v = pd.to_numeric(ms[c], errors="coerce")
        if v.isna().any() or (v != np.floor(v)).any() or (v < 0).any():
            i = int(np.flatnonzero((v.isna() | (v != np.floor(v)) | (v < 0)).to_numpy())[0])
            raise InputError(f"{p}: column {c}, line {i + 2}: "
                             f"not a machine count: {ms[c].iloc[i]!r}")
    totals = ms[cols].astype("int64").sum(axis=1)
    if totals.nunique() != 1:
        i = int(np.flatnonzero((totals != totals.iloc[0]).to_numpy())[0])
        raise InputError(f"{p}: line {i + 2}: state columns sum to {int(totals.iloc[i])}, "
                         f"line 2 to {int(totals.iloc[0])}")
    n = int(totals.iloc[0])
    if n <= 0:
        raise InputError(f"{p}: line 2: state columns sum to {n}, expected > 0")
    return n



def resolve_nb_resources(jobs: pd.DataFrame, nb_resources: int | None,
                         machine_states: str | Path | None,
                         platform: str | Path | None = None,
                         merged: bool = False) -> tuple[int | None, str]:
    """``(nb_resources, nb_resources_source)`` of a run (module docstring).

    ``jobs``: the run's jobs table (:func:`iosched.analysis.jobs.load_jobs`;
    its ``attrs["machine_states"]`` and ``attrs["command_json"]`` are the
    files next to its jobs CSV); ``nb_resources``, ``machine_states``,
    ``platform``: as :func:`iosched.analysis.metrics.compute_metrics` takes
    them; ``merged``: the table holds burst-buffer runs merged into their
    workload jobs.  Returns ``(None, "none")`` when nothing tells.

    :raises InputError: a non-positive ``nb_resources``, a platform without
        compute host, a bad machine_states file or allocation.
    """
    if nb_resources is not None:
        if isinstance(nb_resources, bool) or not isinstance(nb_resources, (int, np.integer)) \
                or nb_resources <= 0:
            raise InputError(f"nb_resources: must be a positive integer, got {nb_resources!r}")
        return int(nb_resources), "argument"
    if platform is not None:
        n = count_compute_hosts(str(platform))
        if n <= 0:
            raise InputError(f"{platform}: the platform has no compute host")
        return n, "platform_compute_hosts"
    if machine_states is not None and not merged:  # an explicit file wins over the record
        return nb_resources_from_machine_states(machine_states), "machine_states_csv"
    cmd = jobs.attrs.get("command_json")
    n = compute_hosts(Path(cmd).parent) if cmd else None
    if n:  # a count of 0 tells nothing: fall back as without one
        return n, "command_json_compute_hosts"
    if not merged:  # machine_states counts the storage hosts, which merged runs allocated
        ms = machine_states if machine_states is not None else jobs.attrs.get("machine_states")
        if ms:
            return nb_resources_from_machine_states(ms), "machine_states_csv"
    where = source_of(jobs)
    top = -1
    for jid, alloc in zip(jobs["job_id"].to_numpy(), jobs["allocated_resources"].to_numpy()):
        ps = parse_allocation(alloc, where, jid)
        if len(ps):
            top = max(top, int(ps.max))
    if top < 0:
        return None, "none"
    return top + 1, "max_allocated_id_plus_1"
