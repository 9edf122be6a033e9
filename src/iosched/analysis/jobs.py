"""Batsim's ``<prefix>_jobs.csv`` as a table: finding and reading the file,
parsing its columns and allocations, and merging each burst-buffer run into
the workload job it runs.

Columns: :data:`iosched.batsim.outputs.JOBS_COLUMNS` (Batsim's
``docs/output-jobs.rst``); times in s.

Burst-buffer runs (dynamic jobs, :func:`merge_runs`).  The burst-buffer
scheduler (``schedulers/burstbuffer.py``, :mod:`iosched.sched.bbrun`) runs each
workload job ``w0!J`` as a dynamic job ``bb!J`` (workload
:data:`iosched.batsim.dynamic.RUN_WORKLOAD`) and rejects ``w0!J`` when the
run starts, so the jobs CSV has two rows per job: the static one (REJECTED,
with the real submission time, requested compute nodes and requested time)
and the run (submitted when it starts, allocated its compute nodes + its
burst-buffer storage nodes + the PFS host).  :func:`load_jobs`,
:func:`iosched.analysis.metrics.job_metrics` and
:func:`iosched.analysis.metrics.compute_metrics` merge every such pair into
one row before computing anything:

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
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from procset import ProcSet

from iosched.batsim.dynamic import (PHASE_SEPARATOR, RUN_WORKLOAD, STATIC_WORKLOAD, phase_count,
                                    phase_index)
from iosched.batsim.job_metrics import runtime, slowdown, turnaround, waiting_time
from iosched.batsim.jobs import COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED, REJECTED
from iosched.batsim.outputs import JOBS_COLUMNS, check_not_torn
from iosched.errors import InputError
from iosched.record import RECORD_FILE

__all__ = [
    "load_jobs",
    "collapse_phases",
    "jobs_from_rows",
    "merge_runs",
    "nb_runs_merged",
    "merge_job_rows",
    "find_jobs_file",
    "parse_allocation",
    "allocation_size",
    "source_of",
    "require_columns",
]

_STRING_COLUMNS = ("job_id", "workload_name", "profile", "final_state",
                   "allocated_resources", "metadata")


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
    """The run record ``command.json`` (:mod:`iosched.record`, written by
    the runner) next to ``<prefix>_jobs.csv``, if any."""
    cand = jobs_file.with_name(RECORD_FILE)
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
    CSV, torn (:func:`check_not_torn`), lacks a column, has a non-numeric
    value in a numeric column, or has
    a non-rejected job without a submission, starting or finish time; and
    as :func:`merge_runs` does.
    """
    f = find_jobs_file(path, prefix)
    check_not_torn(f)
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
    :data:`iosched.batsim.outputs.JOBS_COLUMNS` (e.g. ``csv.DictReader`` rows: strings, ``""`` for
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
    lowest ids (all of them when an unsuccessful run held fewer), n = the static row's ``requested_number_of_resources``
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
    malformed, or when a run that completed successfully holds fewer than n
    resources (a run killed at its walltime or failed before a phase on all
    its nodes started keeps the resources its started phases held).
    """
    if not {"job_id", "workload_name", "final_state"} <= set(jobs.columns) or not len(jobs):
        return jobs
    jobs = collapse_phases(jobs, run_workload)
    wl = jobs["workload_name"].astype(str).to_numpy()
    ids = jobs["job_id"].astype(str).to_numpy()
    states = jobs["final_state"].astype(str).to_numpy()
    is_run = wl == run_workload
    is_static = (~is_run) & (states == REJECTED)
    if not is_run.any() or not is_static.any():
        return jobs
    where = source_of(jobs)
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
    require_columns(jobs, ("submission_time", "starting_time", "finish_time",
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
        ps = parse_allocation(alloc, where, ids[s])
        if len(ps) < n and state != COMPLETED_SUCCESSFULLY:
            # killed or failed before a phase on all its nodes started (e.g. a
            # locality job killed during its one-core load): what it held
            allocs.append(str(ps))
            continue
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
        ex = runtime(b, c)
    flow = turnaround(sub, c)
    # Batsim's columns, under Batsim's names
    recomputed = {"waiting_time": waiting_time(sub, b), "turnaround_time": flow,
                  "stretch": slowdown(flow, ex)}
    for col, values in recomputed.items():
        if col in jobs.columns:
            out.iloc[spos, jobs.columns.get_loc(col)] = values
    keep = np.ones(len(jobs), dtype=bool)
    keep[rpos] = False
    out = out.iloc[keep]
    out.attrs = {**jobs.attrs, "nb_runs_merged": nb_runs_merged(jobs) + len(pairs)}
    return out


def collapse_phases(jobs: pd.DataFrame, run_workload: str = RUN_WORKLOAD) -> pd.DataFrame:
    """One row per run from the per-phase rows ``J:0``, ``J:1``... of
    workload ``run_workload`` (:func:`iosched.batsim.dynamic.phase_job_id`).

    The collapsed row, at the place of phase 0's row, has ``job_id`` ``J``,
    the columns of its first phase, ``starting_time`` the earliest start and
    ``finish_time`` the latest finish of its started phases,
    ``execution_time`` = finish - start, ``success`` and ``final_state`` of
    its last phase (the highest index: a phase killed at the walltime is the
    last one), ``consumed_energy`` summed and ``allocated_resources`` the union
    of the phases' allocations. When the last phase completed successfully
    but its profile name says the run had more phases
    (:func:`~iosched.batsim.dynamic.phase_count`, ``"12:1/5"``), the
    scheduler ran no further phase because the workload job's walltime was
    reached (a phase that ends exactly at the walltime): the run's
    ``final_state`` is ``COMPLETED_WALLTIME_REACHED`` and ``success`` 0, as
    Batsim's ``_jobs.csv`` says of a job killed at its walltime. Returns
    ``jobs`` itself when no row has a phase index; ``attrs`` are kept.

    :raises InputError: a phase suffix that is not an integer.
    """
    ids = jobs["job_id"].astype(str)
    is_phase = (jobs["workload_name"].astype(str) == run_workload) & ids.str.contains(
        PHASE_SEPARATOR, regex=False)
    if not is_phase.any():
        return jobs
    sub = jobs[is_phase]
    base = ids[is_phase].str.split(PHASE_SEPARATOR, n=1).str[0]
    try:
        k = ids[is_phase].map(phase_index)
    except ValueError as exc:
        raise InputError(f"{source_of(jobs)}: column job_id: a phase index is not an integer "
                         f"({exc})") from None
    groups: dict = {}
    for pos, b, kk in zip(range(len(sub)), base.to_numpy(), k.to_numpy()):
        groups.setdefault(b, []).append((int(kk), pos))
    first_rows, values = [], []
    start = pd.to_numeric(sub.get("starting_time"), errors="coerce").to_numpy(float) \
        if "starting_time" in sub else None
    finish = pd.to_numeric(sub.get("finish_time"), errors="coerce").to_numpy(float) \
        if "finish_time" in sub else None
    energy = pd.to_numeric(sub["consumed_energy"], errors="coerce").to_numpy(float) \
        if "consumed_energy" in sub else None
    allocs = sub["allocated_resources"].to_numpy() if "allocated_resources" in sub else None
    profiles = sub["profile"].to_numpy() if "profile" in sub else None
    last_cols = [(col, sub[col].to_numpy()) for col in ("success", "final_state") if col in sub]
    sub_ids = sub["job_id"].to_numpy()
    where = source_of(jobs)
    for b, members in groups.items():
        members.sort()
        poss = [p for _, p in members]
        first, last = poss[0], poss[-1]
        rec = {"job_id": b}
        if start is not None:
            st = [start[p] for p in poss if not math.isnan(start[p])]
            fi = [finish[p] for p in poss if finish is not None and not math.isnan(finish[p])]
            rec["starting_time"] = min(st) if st else math.nan
            if finish is not None:
                rec["finish_time"] = max(fi) if fi else math.nan
                if "execution_time" in sub:
                    rec["execution_time"] = rec["finish_time"] - rec["starting_time"]
        for col, arr in last_cols:
            rec[col] = arr[last]
        if profiles is not None and rec.get("final_state") == COMPLETED_SUCCESSFULLY:
            n = phase_count(profiles[last])
            if n is not None and members[-1][0] + 1 < n:    # phases left: the walltime ended it
                rec["final_state"] = COMPLETED_WALLTIME_REACHED
                if "success" in rec:
                    rec["success"] = 0
        if energy is not None:
            rec["consumed_energy"] = float(np.nansum([energy[p] for p in poss]))
        if allocs is not None:
            texts = {}   # the phases' distinct allocations, each parsed once
            for p in poss:
                texts.setdefault(allocs[p], p)
            if len(texts) == 1:
                a, p = next(iter(texts.items()))
                rec["allocated_resources"] = str(parse_allocation(a, where, sub_ids[p]))
            else:
                ps = ProcSet()
                for a, p in texts.items():
                    ps |= parse_allocation(a, where, sub_ids[p])
                rec["allocated_resources"] = str(ps)
        first_rows.append(sub.index[first])
        values.append(rec)
    out = jobs.copy()
    for col in values[0]:
        if col == "allocated_resources" or col == "final_state" or col == "job_id":
            out[col] = out[col].astype(object)
        out.loc[first_rows, col] = [v[col] for v in values]
    mask = ~is_phase.to_numpy().copy()
    mask[[jobs.index.get_loc(i) for i in first_rows]] = True
    out = out.iloc[mask]
    out.attrs = dict(jobs.attrs)
    return out


def source_of(jobs: pd.DataFrame) -> str:
    """The name of a jobs table in error messages: the file it was read from
    (``attrs["path"]``), else ``"<jobs table>"``."""
    return str(jobs.attrs.get("path") or "<jobs table>")


def parse_allocation(value: Any, where: str, job_id: Any) -> ProcSet:
    """A job's ``allocated_resources`` (e.g. ``"0-3 7"``; ``""``, None or NaN
    for none) as a :class:`procset.ProcSet`.

    :raises InputError: not an interval set; the message names ``where``
        (the file) and ``job_id``.
    """
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
    return len(parse_allocation(allocated_resources, "allocated_resources", "?"))


def require_columns(jobs: pd.DataFrame, columns: tuple[str, ...]) -> None:
    """:raises InputError: ``jobs`` lacks one of ``columns`` (all are named)."""
    missing = [c for c in columns if c not in jobs.columns]
    if missing:
        raise InputError(f"{source_of(jobs)}: missing column(s) {', '.join(missing)}")


def merge_job_rows(rows, workload: str = STATIC_WORKLOAD) -> list:
    """Per-workload-job records from a Batsim ``_jobs.csv`` (a thin view of
    :func:`merge_runs`, which the metrics use).

    The workload job ``w0!J`` is REJECTED when its run ``bb!J`` starts; the
    merged job has the submission time of the first and the start, finish
    and final state of the second. Jobs rejected as impossible have no run
    and stay REJECTED.

    :param rows: an iterable of dicts (``csv.DictReader`` rows) or the path
        of a ``_jobs.csv`` file.
    :param workload: the static workload whose jobs are listed.
    :returns: list of dicts ``job_id`` (str, local id), ``submission_time``,
        ``starting_time``, ``finish_time``, ``waiting_time``,
        ``turnaround`` (s, float or None when the job did not start;
        :mod:`iosched.batsim.job_metrics`),
        ``final_state`` (str), ``requested_time`` (s), ``nodes`` (int,
        requested compute nodes), sorted by local id (numeric when
        possible).
    :raises InputError: as :func:`load_jobs` and :func:`merge_runs` do.
    """
    if isinstance(rows, (str, bytes)) or hasattr(rows, "__fspath__"):
        jobs = load_jobs(rows)
    else:
        jobs = jobs_from_rows(rows)

    def num(x):
        return None if x is None or not math.isfinite(x) else float(x)

    out = []
    for r in jobs[jobs["workload_name"] == workload].itertuples(index=False):
        started = r.final_state != REJECTED
        out.append({"job_id": r.job_id, "submission_time": float(r.submission_time),
                    "requested_time": num(r.requested_time),
                    "nodes": int(r.requested_number_of_resources),
                    "starting_time": num(r.starting_time) if started else None,
                    "finish_time": num(r.finish_time) if started else None,
                    "waiting_time": (num(waiting_time(r.submission_time, r.starting_time))
                                     if started else None),
                    "turnaround": num(turnaround(r.submission_time, r.finish_time)) if started else None,
                    "final_state": r.final_state})

    def key(rec):
        j = rec["job_id"]
        return (0, int(j), "") if j.isdigit() else (1, 0, j)

    return sorted(out, key=key)
