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

from iosched.errors import InputError

__all__ = [
    "JOBS_COLUMNS",
    "JOB_METRICS",
    "STATISTICS",
    "load_jobs",
    "find_jobs_file",
    "nb_resources_from_machine_states",
    "allocation_size",
    "job_metrics",
    "compute_metrics",
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


def load_jobs(path: str | Path, prefix: str | None = None) -> pd.DataFrame:
    """Read a Batsim ``*_jobs.csv`` into a DataFrame.

    ``path``: the CSV file, or a directory holding it (see
    :func:`find_jobs_file`: ``<prefix>_jobs.csv`` if ``prefix`` is given,
    else ``out_jobs.csv``, else the only ``*_jobs.csv``).

    Returns one row per job (n_jobs x 17 columns, the header of Batsim's
    ``docs/output-jobs.rst``).  ``job_id``, ``workload_name``, ``profile``,
    ``final_state``, ``allocated_resources`` and ``metadata`` are strings
    (empty string when Batsim left the field empty, e.g. the allocation of a
    rejected job); every other column is float64 in seconds (times) or plain
    numbers, NaN where Batsim left the field empty (rejected jobs).
    ``df.attrs["path"]`` is the file read and ``df.attrs["machine_states"]``
    the sibling ``<prefix>_machine_states.csv`` or None.

    Raises :class:`~iosched.errors.InputError` (one line naming the file, and
    the column and line when relevant) when the file is missing, empty, not
    CSV, lacks a column, has a non-numeric value in a numeric column, or has
    a non-rejected job without a submission, starting or finish time.
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
    missing = [c for c in JOBS_COLUMNS if c not in raw.columns]
    if missing:
        raise InputError(f"{f}: missing column(s) {', '.join(missing)}")
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
            raise InputError(f"{f}: column {col}, line {i + 2}: "
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
            raise InputError(f"{f}: column {col}, line {i + 2}: empty for job "
                             f"{df['job_id'].iloc[i]!r} "
                             f"(final_state {df['final_state'].iloc[i] or 'empty'})")
    df.attrs["path"] = str(f)
    ms = _machine_states_sibling(f)
    df.attrs["machine_states"] = str(ms) if ms is not None else None
    return df


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
    before start (beyond 1e-6 s), or a malformed or empty allocation.
    """
    _require(jobs, ("job_id", "submission_time", "starting_time", "finish_time",
                    "final_state", "allocated_resources"))
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


def _resolve_nb_resources(jobs: pd.DataFrame, nb_resources: int | None,
                          machine_states: str | Path | None) -> tuple[int | None, str]:
    if nb_resources is not None:
        if isinstance(nb_resources, bool) or not isinstance(nb_resources, (int, np.integer)) \
                or nb_resources <= 0:
            raise InputError(f"nb_resources: must be a positive integer, got {nb_resources!r}")
        return int(nb_resources), "argument"
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
                    machine_states: str | Path | None = None) -> dict:
    """Run metrics of one Batsim run.

    ``jobs``: a table shaped like :func:`load_jobs`'s (n_jobs rows; times
    in s).  ``nb_resources``: number of compute resources (> 0) or None to
    derive it, from ``machine_states`` (a ``*_machine_states.csv`` path) or
    ``jobs.attrs["machine_states"]`` (set by :func:`load_jobs`) when there
    is one, else from the largest allocated id + 1.  ``tau``: the
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
      ``"machine_states_csv"``, ``"max_allocated_id_plus_1"`` or ``"none"``);
    * ``final_states``: {final_state: number of jobs}; ``nb_jobs`` (all
      rows, rejected included), ``nb_jobs_started``, ``nb_jobs_rejected``;
    * ``tau`` (s).

    Definitions and their sources: this module's docstring (DESIGN.md
    "Terms"; Batsim's ``docs/output-jobs.rst``).
    Raises :class:`~iosched.errors.InputError` as :func:`job_metrics` does,
    and for a non-positive ``nb_resources`` or a bad machine_states file.
    """
    _require(jobs, ("job_id", "submission_time", "final_state", "allocated_resources"))
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
    n, source = _resolve_nb_resources(jobs, nb_resources, machine_states)
    out["makespan"] = makespan
    out["busy_node_seconds"] = busy
    out["nb_resources"] = n
    out["nb_resources_source"] = source
    out["utilization"] = (busy / (n * makespan)
                          if n is not None and makespan is not None and makespan > 0
                          else None)
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


def write_metrics(output_dir: str | Path, prefix: str = "out",
                  nb_resources: int | None = None, tau: float = 600.0) -> dict:
    """Compute the metrics of a Batsim output directory and save them.

    Reads ``<output_dir>/<prefix>_jobs.csv`` (and
    ``<output_dir>/<prefix>_machine_states.csv`` when present and
    ``nb_resources`` is None), computes :func:`compute_metrics` and writes
    ``<output_dir>/metrics.json``: UTF-8, keys sorted, indent 2, floats
    rounded to 6 decimals, non-finite values as null, a final newline, so
    the same input gives byte-identical output.

    Returns the dict as written (rounded).
    Raises :class:`~iosched.errors.InputError` when the directory or the
    file is missing or bad (see :func:`load_jobs`, :func:`compute_metrics`)
    or when metrics.json cannot be written.
    """
    d = Path(output_dir)
    if not d.is_dir():
        raise InputError(f"{d}: no such directory")
    jobs = load_jobs(d, prefix=prefix)
    metrics = _rounded(compute_metrics(jobs, nb_resources=nb_resources, tau=tau))
    text = json.dumps(metrics, sort_keys=True, indent=2, allow_nan=False) + "\n"
    target = d / "metrics.json"
    try:
        target.write_text(text, encoding="utf-8")
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
    source), and the number of jobs per final state.  Returns the table as
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
              help="Number of compute resources (default: from "
                   "<prefix>_machine_states.csv, else largest allocated id + 1).")
@click.option("--tau", type=float, default=600.0, show_default=True,
              help="Bounded-slowdown threshold, seconds.")
@click.option("--plots/--no-plots", default=False, show_default=True,
              help="Also write utilization.png and gantt.png in DIR.")
def metrics_command(directory: str, prefix: str, nb_resources: int | None,
                    tau: float, plots: bool) -> None:
    """Compute job and run metrics of a Batsim output directory.

    Writes DIR/metrics.json and prints a table.  Definitions: waiting
    W = b - s, turnaround F = c - s, slowdown F/D, bounded slowdown
    max(1, F/max(D, tau)), makespan = last finish - first submission,
    utilization = busy node-seconds / (nb_resources x makespan).
    """
    try:
        metrics = write_metrics(directory, prefix=prefix, nb_resources=nb_resources, tau=tau)
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
