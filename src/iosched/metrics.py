"""Job and run metrics computed from Batsim's ``<prefix>_jobs.csv``.

Definitions (the "Terms" section of DESIGN.md; per job j):

* s_j = ``submission_time``, b_j = ``starting_time``, c_j = ``finish_time``
  (seconds of simulated time, as written by Batsim, see Batsim's
  ``docs/output-jobs.rst``);
* runtime D_j = c_j - b_j;
* waiting time W_j = b_j - s_j;
* turnaround (flow) F_j = c_j - s_j;
* slowdown F_j / D_j.  It is undefined when D_j = 0 (a job that ran for no
  time): such a job is left out of the slowdown statistics (and only of
  those) and counted in ``slowdown_nb_undefined``.  Batsim itself would
  divide by zero there (``stretch`` = inf);
* bounded slowdown max(1, F_j / max(D_j, tau)), tau = 600 s unless stated
  (Feitelson et al., "Theory and practice in parallel job scheduling",
  JSSPP 1997; tau > 0 so it is always defined).

Job statistics (mean, median, p95, max) are taken over the jobs that
*started*, i.e. every job whose ``final_state`` is not ``REJECTED``: jobs
killed by their walltime or by the scheduler did occupy their resources and
are included, exactly as Batsim's own ``*_schedule.csv`` does.  Rejected jobs
are counted (``nb_jobs``, ``final_states``) but have no W, F or D.  The p95
is numpy's default percentile (linear interpolation between order
statistics, Hyndman & Fan type 7).

Run metrics:

* makespan = max_j c_j over started jobs - min_j s_j over all jobs.  This is
  the length of the period the workload occupied the platform.  Batsim's
  ``makespan`` in ``*_schedule.csv`` is different: it is max_j c_j measured
  from time 0; both agree when the first job is submitted at t = 0;
* busy node-seconds = sum over started jobs of D_j x |allocated_resources_j|;
* utilization = busy node-seconds / (nb_resources x makespan), a number in
  [0, 1] for a valid schedule.

``nb_resources`` comes, in this order, from the argument, from the sum of the
state columns of one row of ``<prefix>_machine_states.csv`` (Batsim's
``docs/output-machines.rst``: every row counts every machine once; it counts
all the hosts Batsim manages, storage hosts included, so pass nb_resources
to leave them out), or from the largest allocated resource id + 1 (a lower
bound: resources that never ran a job are not seen).  The dict says which in
``nb_resources_source``.

Burst-buffer runs (dynamic jobs, :func:`merge_runs`).  The burst-buffer
scheduler (``schedulers/burstbuffer.py``, :mod:`iosched.bb.model`) runs each
workload job ``w0!J`` as a dynamic job ``bb!J`` (workload
:data:`RUN_WORKLOAD` = ``iosched.bb.model.DYN_WORKLOAD``) and rejects
``w0!J`` when the run starts, so the jobs CSV has two rows per job: the
static one (REJECTED, with the real submission time, requested compute nodes
and requested time) and the run (submitted when it starts, allocated its
compute nodes + its burst-buffer storage nodes + the PFS host).
:func:`load_jobs`, :func:`job_metrics` and :func:`compute_metrics` merge
every such pair into one row before computing anything:

* rule: a row of workload ``bb`` whose ``job_id`` equals the ``job_id`` of a
  REJECTED row of another workload is that job's run (Batsim writes the
  job id without its workload prefix: ``w0!J`` and ``bb!J`` both have
  ``job_id`` ``J``);
* the merged row keeps the static row's ``job_id``, ``workload_name``,
  ``profile``, ``submission_time``, ``requested_number_of_resources``,
  ``requested_time`` and ``metadata``, and takes the run's ``success``,
  ``final_state``, ``starting_time``, ``execution_time``, ``finish_time``,
  ``consumed_energy`` and ``allocated_resources`` restricted to the job's
  compute nodes; ``waiting_time``, ``turnaround_time`` and ``stretch`` are
  recomputed (W = b - s with the static s);
* compute nodes: the ``requested_number_of_resources`` (= n) lowest ids of
  the run's allocation.  This is exact because Batsim numbers the compute
  hosts first (ids 0..n_c-1) and the storage hosts after them (n_c..), as
  does the embedded engine (:mod:`iosched.engine.platform`), so a run's n
  compute nodes are below all its storage hosts.  Busy node-seconds of a
  merged job are therefore D x n;
* a REJECTED row without a run (a job rejected as impossible) stays
  REJECTED; ``nb_jobs`` counts workload jobs, not CSV rows;
* ``nb_runs_merged`` in the metrics says how many runs were merged (0 for a
  run without dynamic jobs, whose metrics are unchanged).

``nb_resources`` of a run with merged rows (utilization over compute nodes
only): the argument; else the compute hosts of the ``platform`` argument
(:func:`iosched.engine.platform.count_compute_hosts`: neither master nor
storage); else those of the platform named by the engine command in the
run's ``command.json`` (written by ``iosched run`` / the campaigns next to
``<prefix>_jobs.csv``; its ``-p``, ``-r``, ``-m``, ``--mmax``); else the
largest allocated id + 1 of the merged rows (a lower bound).  The
``*_machine_states.csv`` is *not* used for such runs: it counts every host
Batsim manages, the storage hosts included (dragonfly96: 109 = 96 compute +
12 burst-buffer + the PFS).  ``nb_resources_source`` is then
``"argument"``, ``"platform_compute_hosts"``,
``"command_json_compute_hosts"`` or ``"max_allocated_id_plus_1"``.  An
explicit ``platform`` argument is used the same way for runs without merged
rows (after ``nb_resources``, before the machine states).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd
from procset import ProcSet

from iosched.bb.model import DYN_WORKLOAD
from iosched.errors import InputError

__all__ = [
    "JOBS_COLUMNS",
    "JOB_METRICS",
    "STATISTICS",
    "RUN_WORKLOAD",
    "load_jobs",
    "jobs_from_rows",
    "merge_runs",
    "nb_runs_merged",
    "find_jobs_file",
    "nb_resources_from_machine_states",
    "allocation_size",
    "job_metrics",
    "compute_metrics",
    "dir_metrics",
    "metrics_json",
    "write_metrics",
    "format_table",
    "metrics_command",
]

#: Header of Batsim 4.2.x ``*_jobs.csv`` (Batsim's ``docs/output-jobs.rst``).
JOBS_COLUMNS = (
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
)

_STRING_COLUMNS = ("job_id", "workload_name", "profile", "final_state",
                   "allocated_resources", "metadata")

#: Per-job metrics summarised by :func:`compute_metrics`, in table order.
JOB_METRICS = ("waiting_time", "turnaround", "slowdown", "bounded_slowdown")
#: Statistics computed for each of :data:`JOB_METRICS`.
STATISTICS = ("mean", "median", "p95", "max")

REJECTED = "REJECTED"
#: Workload of the dynamic jobs that run workload jobs (``bb!J`` runs
#: ``w0!J``): :data:`iosched.bb.model.DYN_WORKLOAD`.  See :func:`merge_runs`.
RUN_WORKLOAD = DYN_WORKLOAD
# Tolerance (s) on b >= s and c >= b: Batsim writes times with 6 decimals.
_TIME_TOLERANCE = 1e-6


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------

def find_jobs_file(path: str | Path, prefix: str | None = None) -> Path:
    """Resolve ``path`` to one Batsim jobs CSV file.

    ``path`` is either the file itself, or a directory.  In a directory,
    ``<prefix>_jobs.csv`` is taken when ``prefix`` is given; otherwise
    ``out_jobs.csv`` if present, else the only ``*_jobs.csv``.

    Returns the file's :class:`~pathlib.Path`.
    Raises :class:`~iosched.errors.InputError` when the path does not exist,
    when the wanted file is missing, or when the directory holds several
    ``*_jobs.csv`` and none is ``out_jobs.csv``.
    """
    p = Path(path)
    if p.is_file():
        return p
    if not p.exists():
        raise InputError(f"{p}: no such file or directory")
    if not p.is_dir():
        raise InputError(f"{p}: not a file nor a directory")
    found = sorted(q.name for q in p.glob("*_jobs.csv") if q.is_file())
    if prefix is not None:
        wanted = p / f"{prefix}_jobs.csv"
        if wanted.is_file():
            return wanted
        hint = f" (found: {', '.join(found)})" if found else ""
        raise InputError(f"{wanted}: no such file{hint}")
    if "out_jobs.csv" in found:
        return p / "out_jobs.csv"
    if len(found) == 1:
        return p / found[0]
    if not found:
        raise InputError(f"{p}: no *_jobs.csv file in this directory")
    raise InputError(f"{p}: several *_jobs.csv files ({', '.join(found)}), "
                     "name the file or give a prefix")


def _machine_states_sibling(jobs_file: Path) -> Path | None:
    """``<prefix>_machine_states.csv`` next to ``<prefix>_jobs.csv``, if any."""
    name = jobs_file.name
    if not name.endswith("_jobs.csv"):
        return None
    sibling = jobs_file.with_name(name[: -len("_jobs.csv")] + "_machine_states.csv")
    return sibling if sibling.is_file() else None


def _command_json_sibling(jobs_file: Path) -> Path | None:
    """``command.json`` (written by :func:`iosched.runner.run_simulation`) next
    to ``<prefix>_jobs.csv``, if any."""
    cand = jobs_file.with_name("command.json")
    return cand if cand.is_file() else None


def load_jobs(path: str | Path, prefix: str | None = None, merge: bool = True) -> pd.DataFrame:
    """Read a Batsim ``*_jobs.csv`` into a DataFrame.

    ``path``: the CSV file, or a directory holding it (see
    :func:`find_jobs_file`: ``<prefix>_jobs.csv`` if ``prefix`` is given,
    else ``out_jobs.csv``, else the only ``*_jobs.csv``).  ``merge``: merge
    the burst-buffer runs into their workload jobs (:func:`merge_runs`;
    a no-op for a run without dynamic ``bb`` jobs); False gives the raw rows.

    Returns one row per job (n_jobs x 17 columns, the header of Batsim's
    ``docs/output-jobs.rst``; with ``merge``, one row per workload job).
    ``job_id``, ``workload_name``, ``profile``,
    ``final_state``, ``allocated_resources`` and ``metadata`` are strings
    (empty string when Batsim left the field empty, e.g. the allocation of a
    rejected job); every other column is float64 in seconds (times) or plain
    numbers, NaN where Batsim left the field empty (rejected jobs).
    ``df.attrs["path"]`` is the file read, ``df.attrs["machine_states"]``
    the sibling ``<prefix>_machine_states.csv`` or None,
    ``df.attrs["command_json"]`` the sibling ``command.json`` or None, and
    ``df.attrs["nb_runs_merged"]`` the number of runs merged (0 unless
    ``merge``).

    Raises :class:`~iosched.errors.InputError` (one line naming the file, and
    the column and line when relevant) when the file is missing, empty, not
    CSV, lacks a column, has a non-numeric value in a numeric column, or has
    a non-rejected job without a submission, starting or finish time; and
    as :func:`merge_runs` does.
    """
    f = find_jobs_file(path, prefix)
    try:
        raw = pd.read_csv(f, dtype=str, keep_default_na=False, na_filter=False)
    except pd.errors.EmptyDataError:
        raise InputError(f"{f}: empty file, expected a Batsim jobs CSV header") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{f}: not a readable CSV file ({first})") from None
    except OSError as exc:
        raise InputError(f"{f}: cannot read ({exc.strerror or exc})") from None
    df = _parse_jobs(raw, str(f))
    df.attrs["path"] = str(f)
    ms = _machine_states_sibling(f)
    df.attrs["machine_states"] = str(ms) if ms is not None else None
    cmd = _command_json_sibling(f)
    df.attrs["command_json"] = str(cmd) if cmd is not None else None
    df.attrs["nb_runs_merged"] = 0
    return merge_runs(df) if merge else df


def jobs_from_rows(rows, merge: bool = True, source: str = "<jobs rows>") -> pd.DataFrame:
    """The :func:`load_jobs` table of jobs.csv rows given as dicts.

    ``rows``: an iterable of dicts keyed by the columns of
    :data:`JOBS_COLUMNS` (e.g. ``csv.DictReader`` rows: strings, ``""`` for
    an empty field; numbers are accepted too).  ``merge``: as in
    :func:`load_jobs`.  ``source``: the name used in error messages and
    ``attrs["path"]``.  Returns the same table as :func:`load_jobs` would
    for a file holding these rows (``attrs["machine_states"]`` and
    ``attrs["command_json"]`` are None).  Raises
    :class:`~iosched.errors.InputError` as :func:`load_jobs` does.
    """
    records = [{k: ("" if v is None else str(v)) for k, v in dict(r).items()} for r in rows]
    if records:
        raw = pd.DataFrame(records, dtype=object).fillna("")
    else:
        raw = pd.DataFrame(columns=list(JOBS_COLUMNS), dtype=object)
    df = _parse_jobs(raw, source)
    df.attrs["path"] = source
    df.attrs["machine_states"] = None
    df.attrs["command_json"] = None
    df.attrs["nb_runs_merged"] = 0
    return merge_runs(df) if merge else df


def _parse_jobs(raw: pd.DataFrame, where: str) -> pd.DataFrame:
    """Typed jobs table from an all-string one (see :func:`load_jobs`)."""
    missing = [c for c in JOBS_COLUMNS if c not in raw.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {', '.join(missing)}")
    df = pd.DataFrame(index=raw.index)
    for col in JOBS_COLUMNS:
        values = raw[col].astype(str).str.strip()
        if col in _STRING_COLUMNS:
            df[col] = values
            continue
        num = pd.to_numeric(values.where(values != "", None), errors="coerce")
        bad = num.isna() & (values != "") & (values.str.lower() != "nan")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{where}: column {col}, line {i + 2}: "
                             f"not a number: {values.iloc[i]!r}")
        df[col] = num.astype("float64")
    started = df["final_state"] != REJECTED
    required = {"submission_time": np.ones(len(df), dtype=bool),
                "starting_time": started.to_numpy(),
                "finish_time": started.to_numpy()}
    for col, mask in required.items():
        missing_rows = df[col].isna().to_numpy() & mask
        if missing_rows.any():
            i = int(np.flatnonzero(missing_rows)[0])
            raise InputError(f"{where}: column {col}, line {i + 2}: empty for job "
                             f"{df['job_id'].iloc[i]!r} "
                             f"(final_state {df['final_state'].iloc[i] or 'empty'})")
    return df


def nb_runs_merged(jobs: pd.DataFrame) -> int:
    """Number of burst-buffer runs merged into ``jobs`` by :func:`merge_runs`
    (``jobs.attrs["nb_runs_merged"]``, 0 when absent)."""
    return int(jobs.attrs.get("nb_runs_merged") or 0)


# Columns a merged row takes from the run; the others come from the static row.
_FROM_RUN = ("success", "final_state", "starting_time", "execution_time", "finish_time",
             "consumed_energy")


def merge_runs(jobs: pd.DataFrame, run_workload: str = RUN_WORKLOAD) -> pd.DataFrame:
    """Merge each burst-buffer run into the workload job it runs.

    ``jobs``: a table shaped like :func:`load_jobs`'s (times in s).  A row
    of workload ``run_workload`` (``"bb"``) whose ``job_id`` equals the
    ``job_id`` of a REJECTED row of another workload is that job's run.
    Each such pair becomes one row, at the static row's place: the static
    row's ``job_id``, ``workload_name``, ``profile``, ``submission_time``,
    ``requested_number_of_resources``, ``requested_time``, ``metadata``; the
    run's ``success``, ``final_state``, ``starting_time``,
    ``execution_time``, ``finish_time``, ``consumed_energy``; the run's
    ``allocated_resources`` restricted to its compute nodes, i.e. its n
    lowest ids, n = the static row's ``requested_number_of_resources``
    (Batsim numbers compute hosts before storage hosts); ``waiting_time`` = b - s and
    ``turnaround_time`` = c - s (s), ``stretch`` = turnaround /
    execution_time (NaN when the execution time is 0) recomputed.  The run
    rows are dropped.  Other rows (plain jobs, jobs rejected with no run,
    ``bb`` rows without a rejected job) are kept unchanged.

    Returns ``jobs`` itself when there is nothing to merge (so a plain
    Batsim run is untouched), else a new table whose
    ``attrs["nb_runs_merged"]`` is the previous count + the pairs merged
    (merging again is a no-op).  Index labels of kept rows are kept.

    Raises :class:`~iosched.errors.InputError` when a job id is REJECTED in
    several workloads or run several times (the pair is ambiguous), when n
    is not a positive integer, or when a started run's allocation is
    malformed or holds fewer than n resources.
    """
    if not {"job_id", "workload_name", "final_state"} <= set(jobs.columns) or not len(jobs):
        return jobs
    wl = jobs["workload_name"].astype(str).to_numpy()
    ids = jobs["job_id"].astype(str).to_numpy()
    states = jobs["final_state"].astype(str).to_numpy()
    is_run = wl == run_workload
    is_static = (~is_run) & (states == REJECTED)
    if not is_run.any() or not is_static.any():
        return jobs
    where = _source(jobs)
    static_pos: dict[str, list[int]] = {}
    for i in np.flatnonzero(is_static):
        static_pos.setdefault(ids[i], []).append(int(i))
    run_pos: dict[str, list[int]] = {}
    for i in np.flatnonzero(is_run):
        run_pos.setdefault(ids[i], []).append(int(i))
    pairs = []
    for jid, rps in run_pos.items():
        sps = static_pos.get(jid)
        if not sps:
            continue
        if len(sps) > 1:
            raise InputError(f"{where}: job {jid!r}: REJECTED in workloads "
                             f"{', '.join(sorted(wl[i] for i in sps))} and run in workload "
                             f"{run_workload!r}: cannot tell which job the run belongs to")
        if len(rps) > 1:
            raise InputError(f"{where}: job {jid!r}: {len(rps)} rows of workload "
                             f"{run_workload!r}: cannot tell which one runs the job")
        pairs.append((sps[0], rps[0]))
    if not pairs:
        return jobs
    _require(jobs, ("submission_time", "starting_time", "finish_time",
                    "requested_number_of_resources", "allocated_resources"))
    pairs.sort()
    spos = np.array([s for s, _ in pairs], dtype=np.int64)
    rpos = np.array([r for _, r in pairs], dtype=np.int64)
    out = jobs.copy()
    for col in _FROM_RUN:
        if col in jobs.columns:
            j = jobs.columns.get_loc(col)
            out.iloc[spos, j] = jobs.iloc[rpos, j].to_numpy()
    nreq = pd.to_numeric(jobs["requested_number_of_resources"], errors="coerce").to_numpy(float)
    run_states = states[rpos]
    run_allocs = jobs["allocated_resources"].to_numpy()[rpos]
    allocs = []
    for s, state, alloc in zip(spos, run_states, run_allocs):
        if state == REJECTED:  # a run that never started: nothing to restrict
            allocs.append("" if alloc is None or (isinstance(alloc, float) and math.isnan(alloc))
                          else str(alloc))
            continue
        n = nreq[s]
        if not (math.isfinite(n) and n >= 1 and n == math.floor(n)):
            raise InputError(f"{where}: column requested_number_of_resources, job {ids[s]!r}: "
                             f"not a positive integer: {jobs['requested_number_of_resources'].iloc[s]!r}")
        n = int(n)
        ps = _parse_allocation(alloc, where, ids[s])
        if len(ps) < n:
            raise InputError(f"{where}: column allocated_resources, job {ids[s]!r}: "
                             f"its {run_workload!r} run holds {len(ps)} resources "
                             f"({str(ps)!r}), fewer than the {n} compute nodes requested")
        allocs.append(str(ProcSet(*list(ps)[:n])))
    out.iloc[spos, jobs.columns.get_loc("allocated_resources")] = np.array(allocs, dtype=object)
    sub = pd.to_numeric(jobs["submission_time"], errors="coerce").to_numpy(float)[spos]
    b = pd.to_numeric(jobs["starting_time"], errors="coerce").to_numpy(float)[rpos]
    c = pd.to_numeric(jobs["finish_time"], errors="coerce").to_numpy(float)[rpos]
    if "execution_time" in jobs.columns:
        ex = pd.to_numeric(jobs["execution_time"], errors="coerce").to_numpy(float)[rpos]
    else:
        ex = c - b
    turnaround = c - sub
    recomputed = {"waiting_time": b - sub, "turnaround_time": turnaround}
    with np.errstate(divide="ignore", invalid="ignore"):
        recomputed["stretch"] = np.where(ex > 0, turnaround / np.where(ex > 0, ex, 1.0), np.nan)
    for col, values in recomputed.items():
        if col in jobs.columns:
            out.iloc[spos, jobs.columns.get_loc(col)] = values
    keep = np.ones(len(jobs), dtype=bool)
    keep[rpos] = False
    out = out.iloc[keep]
    out.attrs = {**jobs.attrs, "nb_runs_merged": nb_runs_merged(jobs) + len(pairs)}
    return out


def nb_resources_from_machine_states(path: str | Path) -> int:
    """Number of machines in a Batsim ``*_machine_states.csv``.

    The file (Batsim's ``docs/output-machines.rst``) has a ``time`` column
    and one ``nb_<state>`` column per machine state (``nb_sleeping``,
    ``nb_switching_on``, ``nb_switching_off``, ``nb_idle``, ``nb_computing``,
    and ``nb_unavailable`` in some versions); every row counts each machine
    once, so the sum of the state columns of a row is the number of
    machines.  Returns that sum (an int); every row must agree.

    Raises :class:`~iosched.errors.InputError` when the file is missing,
    empty, has no ``nb_*`` column or no row, has a non-integer count, or
    when the rows do not all sum to the same number.
    """
    p = Path(path)
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


# --------------------------------------------------------------------------
# Computing
# --------------------------------------------------------------------------

def _source(jobs: pd.DataFrame) -> str:
    return str(jobs.attrs.get("path") or "<jobs table>")


def _parse_allocation(value: Any, where: str, job_id: Any) -> ProcSet:
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    text = " ".join(text.split())
    try:
        return ProcSet.from_str(text)
    except ValueError:
        raise InputError(f"{where}: column allocated_resources, job {job_id!r}: "
                         f"not an interval set such as '0-3 7': {text!r}") from None


def allocation_size(allocated_resources: str) -> int:
    """Number of resources in a Batsim interval-set string.

    ``allocated_resources``: e.g. ``"0-3 7"`` (closed integer intervals
    separated by spaces, Batsim's ``docs/interval-set.rst``), parsed with
    :meth:`procset.ProcSet.from_str`; ``""`` is the empty set.
    Returns the number of distinct ids (``"0-3 7"`` -> 5).
    Raises :class:`~iosched.errors.InputError` for a malformed string.
    """
    return len(_parse_allocation(allocated_resources, "allocated_resources", "?"))


def _require(jobs: pd.DataFrame, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in jobs.columns]
    if missing:
        raise InputError(f"{_source(jobs)}: missing column(s) {', '.join(missing)}")


def job_metrics(jobs: pd.DataFrame, tau: float = 600.0) -> pd.DataFrame:
    """Per-job metrics of the jobs that started (final_state != REJECTED).

    ``jobs``: a table shaped like :func:`load_jobs`'s (columns ``job_id``,
    ``submission_time``, ``starting_time``, ``finish_time``,
    ``final_state``, ``allocated_resources`` are used; times in s).
    Burst-buffer runs still in it are first merged into their workload
    jobs (:func:`merge_runs`), so each job is counted once, with its real
    submission time and its compute nodes only.
    ``tau``: the bounded-slowdown threshold in s, > 0.

    Returns a DataFrame, one row per started job in input order, with
    columns ``job_id``, ``submission`` (s), ``start`` (b), ``finish`` (c),
    ``runtime`` (D = c - b), ``waiting_time`` (W = b - s), ``turnaround``
    (F = c - s), ``slowdown`` (F / D, NaN when D = 0), ``bounded_slowdown``
    (max(1, F / max(D, tau))), ``nb_allocated`` (|allocation|) and
    ``busy_node_seconds`` (D x nb_allocated).  Definitions: DESIGN.md
    "Terms".

    Raises :class:`~iosched.errors.InputError` for a missing column, tau <= 0,
    a started job without times, a start before submission or a finish
    before start (beyond 1e-6 s), or a malformed or empty allocation; and
    as :func:`merge_runs` does.
    """
    _require(jobs, ("job_id", "submission_time", "starting_time", "finish_time",
                    "final_state", "allocated_resources"))
    jobs = merge_runs(jobs)
    if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
        raise InputError(f"tau: must be a positive number of seconds, got {tau!r}")
    where = _source(jobs)
    started = jobs[jobs["final_state"].astype(str) != REJECTED]
    s = pd.to_numeric(started["submission_time"], errors="coerce").to_numpy(dtype=float)
    b = pd.to_numeric(started["starting_time"], errors="coerce").to_numpy(dtype=float)
    c = pd.to_numeric(started["finish_time"], errors="coerce").to_numpy(dtype=float)
    ids = started["job_id"].to_numpy()
    for name, arr in (("submission_time", s), ("starting_time", b), ("finish_time", c)):
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{where}: column {name}, job {ids[i]!r}: "
                             "missing or not a finite number for a started job")
    if (b < s - _TIME_TOLERANCE).any():
        i = int(np.flatnonzero(b < s - _TIME_TOLERANCE)[0])
        raise InputError(f"{where}: column starting_time, job {ids[i]!r}: "
                         f"starts at {b[i]} before its submission at {s[i]}")
    if (c < b - _TIME_TOLERANCE).any():
        i = int(np.flatnonzero(c < b - _TIME_TOLERANCE)[0])
        raise InputError(f"{where}: column finish_time, job {ids[i]!r}: "
                         f"finishes at {c[i]} before its start at {b[i]}")
    sizes = []
    for jid, alloc in zip(ids, started["allocated_resources"].to_numpy()):
        n = len(_parse_allocation(alloc, where, jid))
        if n == 0:
            raise InputError(f"{where}: column allocated_resources, job {jid!r}: "
                             "empty allocation for a job that started")
        sizes.append(n)
    d = np.maximum(c - b, 0.0)
    w = np.maximum(b - s, 0.0)
    f = np.maximum(c - s, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(d > 0, f / np.where(d > 0, d, 1.0), np.nan)
    bounded = np.maximum(1.0, f / np.maximum(d, float(tau)))
    nb = np.asarray(sizes, dtype=np.int64)
    return pd.DataFrame({
        "job_id": ids,
        "submission": s, "start": b, "finish": c,
        "runtime": d, "waiting_time": w, "turnaround": f,
        "slowdown": slowdown, "bounded_slowdown": bounded,
        "nb_allocated": nb, "busy_node_seconds": d * nb,
    }, index=started.index)


def _stats(values: np.ndarray) -> dict[str, float | None]:
    v = values[~np.isnan(values)]
    if v.size == 0:
        return {k: None for k in STATISTICS}
    return {"mean": float(np.mean(v)), "median": float(np.median(v)),
            "p95": float(np.percentile(v, 95)), "max": float(np.max(v))}


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
    from iosched.engine.platform import count_compute_hosts

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


def compute_hosts_of_command(command_json: str | Path, jobs_path: str | None = None) -> int | None:
    """Compute hosts of the engine command recorded in a run's ``command.json``
    (``engine.argv`` and ``cwd``, as :func:`iosched.runner.run_simulation`
    writes them): :func:`compute_hosts_of_argv`, or None when the file
    cannot be read."""
    try:
        cmd = json.loads(Path(command_json).read_text(encoding="utf-8"))
        argv = [str(a) for a in cmd["engine"]["argv"]]
        cwd = Path(str(cmd.get("cwd") or Path(command_json).parent))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return compute_hosts_of_argv(argv, cwd, jobs_path)


def _resolve_nb_resources(jobs: pd.DataFrame, nb_resources: int | None,
                          machine_states: str | Path | None,
                          platform: str | Path | None = None,
                          merged: bool = False) -> tuple[int | None, str]:
    if nb_resources is not None:
        if isinstance(nb_resources, bool) or not isinstance(nb_resources, (int, np.integer)) \
                or nb_resources <= 0:
            raise InputError(f"nb_resources: must be a positive integer, got {nb_resources!r}")
        return int(nb_resources), "argument"
    if platform is not None:
        from iosched.engine.platform import count_compute_hosts

        n = count_compute_hosts(str(platform))
        if n <= 0:
            raise InputError(f"{platform}: the platform has no compute host")
        return n, "platform_compute_hosts"
    if merged:
        # machine_states counts the storage hosts, which the runs allocated
        cmd = jobs.attrs.get("command_json")
        n = compute_hosts_of_command(cmd, jobs.attrs.get("path")) if cmd else None
        if n is not None:
            return n, "command_json_compute_hosts"
    else:
        ms = machine_states if machine_states is not None else jobs.attrs.get("machine_states")
        if ms:
            return nb_resources_from_machine_states(ms), "machine_states_csv"
    where = _source(jobs)
    top = -1
    for jid, alloc in zip(jobs["job_id"].to_numpy(), jobs["allocated_resources"].to_numpy()):
        ps = _parse_allocation(alloc, where, jid)
        if len(ps):
            top = max(top, int(ps.max))
    if top < 0:
        return None, "none"
    return top + 1, "max_allocated_id_plus_1"


def compute_metrics(jobs: pd.DataFrame, nb_resources: int | None = None,
                    tau: float = 600.0,
                    machine_states: str | Path | None = None,
                    platform: str | Path | None = None) -> dict:
    """Run metrics of one Batsim run.

    ``jobs``: a table shaped like :func:`load_jobs`'s (n_jobs rows; times
    in s); burst-buffer runs still in it are merged into their workload
    jobs first (:func:`merge_runs`).  ``nb_resources``: number of compute
    resources (> 0) or None to derive it: from ``platform`` (a platform
    XML: its compute hosts) when given; else, for a run without merged
    rows, from ``machine_states`` (a ``*_machine_states.csv`` path) or
    ``jobs.attrs["machine_states"]`` (set by :func:`load_jobs`) when there
    is one, and for a run with merged rows from the platform of the run's
    ``command.json`` (``jobs.attrs["command_json"]``) when readable (the
    machine states count the storage hosts); else from the largest
    allocated id + 1 (see the module docstring).  ``tau``: the
    bounded-slowdown threshold in s (> 0).

    Returns a dict (JSON-ready, plain Python types):

    * ``waiting_time``, ``turnaround``, ``slowdown``, ``bounded_slowdown``:
      each ``{"mean", "median", "p95", "max"}`` over the started jobs (None
      when no job qualifies); slowdown leaves out jobs with D = 0;
    * ``slowdown_nb_undefined``: started jobs with D = 0;
    * ``makespan`` (s): last finish of a started job - first submission of
      any job (None when no job started);
    * ``busy_node_seconds`` (node x s): sum of D_j x |allocation_j|;
    * ``utilization``: busy_node_seconds / (nb_resources x makespan), None
      when nb_resources is unknown or makespan is 0 or None;
    * ``nb_resources``, ``nb_resources_source`` (``"argument"``,
      ``"platform_compute_hosts"``, ``"command_json_compute_hosts"``,
      ``"machine_states_csv"``, ``"max_allocated_id_plus_1"`` or
      ``"none"``);
    * ``final_states``: {final_state: number of jobs}; ``nb_jobs`` (all
      rows after merging, rejected included), ``nb_jobs_started``,
      ``nb_jobs_rejected``;
    * ``nb_runs_merged``: burst-buffer runs merged into their workload job
      (0 for a run without dynamic ``bb`` jobs);
    * ``tau`` (s).

    Definitions and their sources: this module's docstring (DESIGN.md
    "Terms"; Batsim's ``docs/output-jobs.rst``).
    Raises :class:`~iosched.errors.InputError` as :func:`job_metrics` does,
    and for a non-positive ``nb_resources``, a bad machine_states file or an
    unreadable ``platform``.
    """
    _require(jobs, ("job_id", "submission_time", "final_state", "allocated_resources"))
    jobs = merge_runs(jobs)
    merged = nb_runs_merged(jobs)
    per_job = job_metrics(jobs, tau=tau)
    out: dict[str, Any] = {}
    for name in JOB_METRICS:
        out[name] = _stats(per_job[name].to_numpy(dtype=float))
    out["slowdown_nb_undefined"] = int(per_job["slowdown"].isna().sum())

    states = jobs["final_state"].astype(str).replace("", "(empty)")
    out["final_states"] = {str(k): int(v) for k, v in sorted(states.value_counts().items())}
    out["nb_jobs"] = int(len(jobs))
    out["nb_jobs_started"] = int(len(per_job))
    out["nb_jobs_rejected"] = int((states == REJECTED).sum())

    if len(per_job):
        subs = pd.to_numeric(jobs["submission_time"], errors="coerce").to_numpy(dtype=float)
        subs = subs[np.isfinite(subs)]
        first = float(np.min(subs))
        makespan = float(per_job["finish"].max()) - first
    else:
        makespan = None
    busy = float(per_job["busy_node_seconds"].sum())
    n, source = _resolve_nb_resources(jobs, nb_resources, machine_states, platform,
                                      merged=merged > 0)
    out["makespan"] = makespan
    out["busy_node_seconds"] = busy
    out["nb_resources"] = n
    out["nb_resources_source"] = source
    out["utilization"] = (busy / (n * makespan)
                          if n is not None and makespan is not None and makespan > 0
                          else None)
    out["nb_runs_merged"] = merged
    out["tau"] = float(tau)
    return out


def _rounded(value: Any, ndigits: int = 6) -> Any:
    """Copy of ``value`` with floats rounded and non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): _rounded(v, ndigits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v, ndigits) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if not math.isfinite(x):
            return None
        x = round(x, ndigits)
        return 0.0 if x == 0 else x  # no "-0.0"
    return value


def dir_metrics(output_dir: str | Path, prefix: str = "out",
                nb_resources: int | None = None, tau: float = 600.0,
                platform: str | Path | None = None) -> dict:
    """The metrics :func:`write_metrics` writes, without writing them:
    :func:`load_jobs` of ``<output_dir>/<prefix>_jobs.csv``, then
    :func:`compute_metrics` (same arguments), floats rounded to 6 decimals
    and non-finite values as None.

    :raises InputError: as :func:`write_metrics`, except for writing.
    """
    d = Path(output_dir)
    if not d.is_dir():
        raise InputError(f"{d}: no such directory")
    jobs = load_jobs(d, prefix=prefix)
    return _rounded(compute_metrics(jobs, nb_resources=nb_resources, tau=tau, platform=platform))


def metrics_json(metrics: dict) -> str:
    """The text of ``metrics.json`` for a :func:`dir_metrics` dict: keys
    sorted, indent 2, no NaN, a final newline (byte-identical for equal
    dicts)."""
    return json.dumps(metrics, sort_keys=True, indent=2, allow_nan=False) + "\n"


def write_metrics(output_dir: str | Path, prefix: str = "out",
                  nb_resources: int | None = None, tau: float = 600.0,
                  platform: str | Path | None = None) -> dict:
    """Compute the metrics of a Batsim output directory and save them.

    Reads ``<output_dir>/<prefix>_jobs.csv`` (burst-buffer runs merged into
    their workload jobs, :func:`merge_runs`), and when ``nb_resources`` and
    ``platform`` are None ``<output_dir>/<prefix>_machine_states.csv`` (a
    run without merged rows) or ``<output_dir>/command.json`` (a run with
    merged rows) when present; computes :func:`compute_metrics` and writes
    ``<output_dir>/metrics.json``: UTF-8, keys sorted, indent 2, floats
    rounded to 6 decimals, non-finite values as null, a final newline, so
    the same input gives byte-identical output.

    Returns the dict as written (rounded).
    Raises :class:`~iosched.errors.InputError` when the directory or the
    file is missing or bad (see :func:`load_jobs`, :func:`compute_metrics`)
    or when metrics.json cannot be written.
    """
    metrics = dir_metrics(output_dir, prefix, nb_resources, tau, platform)
    target = Path(output_dir) / "metrics.json"
    try:
        target.write_text(metrics_json(metrics), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    return metrics


# --------------------------------------------------------------------------
# Presenting
# --------------------------------------------------------------------------

def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def format_table(metrics: dict) -> str:
    """Plain-text table of a :func:`compute_metrics` dict.

    Rows waiting_time (s), turnaround (s), slowdown, bounded_slowdown;
    columns mean, median, p95, max (3 decimals, "-" when undefined); then
    utilization, makespan (s), busy node-seconds, nb_resources (and its
    source), the number of jobs (and of burst-buffer runs merged into them,
    when any), and the number of jobs per final state.  Returns the table as
    one string ending with a newline.  Raises KeyError when ``metrics``
    lacks one of the keys above.
    """
    labels = {"waiting_time": "waiting_time (s)", "turnaround": "turnaround (s)",
              "slowdown": "slowdown",
              "bounded_slowdown": f"bounded_slowdown (tau={metrics['tau']:g} s)"}
    rows = [["metric", *STATISTICS]]
    for name in JOB_METRICS:
        rows.append([labels[name], *(_fmt(metrics[name][k]) for k in STATISTICS)])
    w0 = max(len(r[0]) for r in rows)
    wn = max(len(c) for r in rows for c in r[1:])
    lines = []
    for r in rows:
        lines.append(r[0].ljust(w0) + "".join("  " + c.rjust(wn) for c in r[1:]))
    lines.append("")
    util = metrics["utilization"]
    extra = [
        ("utilization", "-" if util is None else f"{util:.4f}"),
        ("makespan (s)", _fmt(metrics["makespan"])),
        ("busy node-seconds", _fmt(metrics["busy_node_seconds"])),
        ("nb_resources", f"{_fmt(metrics['nb_resources'])} ({metrics['nb_resources_source']})"),
        ("jobs", f"{metrics['nb_jobs']} ({metrics['nb_jobs_started']} started)"),
    ]
    if metrics.get("nb_runs_merged"):
        extra.append(("bb runs merged into jobs", str(metrics["nb_runs_merged"])))
    if metrics.get("slowdown_nb_undefined"):
        extra.append(("slowdown undefined (D=0)", str(metrics["slowdown_nb_undefined"])))
    extra += [(f"  {state}", str(n)) for state, n in sorted(metrics["final_states"].items())]
    wk = max(len(k) for k, _ in extra)
    lines += [f"{k.ljust(wk)}  {v}" for k, v in extra]
    return "\n".join(lines) + "\n"


class _CommandError(click.ClickException):
    """One-line error on stderr, exit status 2."""

    exit_code = 2


@click.command("metrics")
@click.argument("directory", metavar="DIR")
@click.option("--prefix", default="out", show_default=True,
              help="Batsim export prefix: reads DIR/<prefix>_jobs.csv.")
@click.option("--nb-resources", type=int, default=None,
              help="Number of compute resources (default: from --platform, else from "
                   "<prefix>_machine_states.csv, or for burst-buffer runs from the platform "
                   "in DIR/command.json, else largest allocated id + 1).")
@click.option("--platform", type=click.Path(dir_okay=False), default=None,
              help="Platform XML of the run: nb_resources = its compute hosts "
                   "(storage and master hosts left out).")
@click.option("--tau", type=float, default=600.0, show_default=True,
              help="Bounded-slowdown threshold, seconds.")
@click.option("--plots/--no-plots", default=False, show_default=True,
              help="Also write utilization.png and gantt.png in DIR.")
def metrics_command(directory: str, prefix: str, nb_resources: int | None,
                    platform: str | None, tau: float, plots: bool) -> None:
    """Compute job and run metrics of a Batsim output directory.

    Writes DIR/metrics.json and prints a table.  Definitions: waiting
    W = b - s, turnaround F = c - s, slowdown F/D, bounded slowdown
    max(1, F/max(D, tau)), makespan = last finish - first submission,
    utilization = busy node-seconds / (nb_resources x makespan).
    Burst-buffer runs (workload bb) are merged into the REJECTED workload
    job they run: one row per job, its real submission time, its compute
    nodes only.
    """
    try:
        metrics = write_metrics(directory, prefix=prefix, nb_resources=nb_resources, tau=tau,
                                platform=platform)
        if plots:
            from iosched import plots as _plots

            jobs = load_jobs(directory, prefix=prefix)
            if metrics["nb_resources"] is not None:
                _plots.plot_utilization(jobs, metrics["nb_resources"],
                                        Path(directory) / "utilization.png")
            _plots.plot_gantt(jobs, Path(directory) / "gantt.png")
    except InputError as exc:
        raise _CommandError(" ".join(str(exc).split())) from None
    click.echo(format_table(metrics), nl=False)
