"""Analysis of a campaign: the tidy runs table, ratios to a baseline, the
per-job table.

* :func:`campaign_table` reads ``OUTPUT/campaign.json`` (written by
  :mod:`iosched.campaign`) and every run's ``done.json`` / ``failed.json``
  and returns one row per run: the run's parameters, its status, and every
  run metric of :func:`iosched.analysis.metrics.compute_metrics` flattened
  (``waiting_time_mean`` ... ``bounded_slowdown_max``, ``makespan``,
  ``utilization``, ...). Wall-clock durations are left out, so the same
  campaign gives the same table.
* :func:`add_ratios`: each metric of :data:`RATIO_METRICS` divided by the
  baseline scheduler's value for the same workload part (same platform,
  workload, part, seed and engine), as the papers normalise. A ratio is NaN
  when the baseline run is missing or failed, or its value is 0 or NaN.
* :func:`write_table`: ``runs.parquet`` (pyarrow) and ``runs.csv``.
* :func:`job_table`: per-job metrics of every finished run, with the run's
  parameters (for ECDFs and tail plots). Burst-buffer runs are merged into
  their workload jobs (:func:`iosched.analysis.jobs.merge_runs`): one row per
  workload job, waiting time from its real submission, compute nodes only;
  the runs table's metrics come from each run's ``metrics.json``, computed
  the same way (``nb_runs_merged`` says how many runs were merged).
* :func:`summary_by_scheduler`: mean metrics and run counts per scheduler.

Their figures: :mod:`iosched.analysis.plots`. The I/O of runs (bytes per
tier, throughput, burst-buffer occupancy) comes from each run's I/O record
(:mod:`iosched.analysis.io`); :data:`IO_NOTE` says why a report has none.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics import JOB_METRICS, STATISTICS, job_metrics
from iosched.errors import InputError

__all__ = [
    "PARAM_COLUMNS",
    "METRIC_COLUMNS",
    "RATIO_METRICS",
    "IO_NOTE",
    "load_manifest",
    "campaign_table",
    "add_ratios",
    "write_table",
    "job_table",
    "ratios",
    "scheduler_labels",
    "summary_by_scheduler",
]

#: Parameter columns of the runs table, in order.
PARAM_COLUMNS = ("run_id", "status", "reason", "platform", "workload", "part", "scheduler",
                 "options", "seed", "engine", "nb_res")
#: Metric columns of the runs table (floats; NaN for a run not finished).
METRIC_COLUMNS = tuple(f"{m}_{s}" for m in JOB_METRICS for s in STATISTICS) + (
    "makespan", "utilization", "busy_node_seconds", "nb_resources", "nb_jobs",
    "nb_jobs_started", "nb_jobs_rejected", "slowdown_nb_undefined", "nb_runs_merged")
#: Metric columns holding counts (nullable Int64 in the table; ``nb_runs_merged``
#: is missing for runs whose metrics.json predates it).
INT_METRIC_COLUMNS = ("nb_resources", "nb_jobs", "nb_jobs_started", "nb_jobs_rejected",
                      "slowdown_nb_undefined", "nb_runs_merged")
#: Metrics normalised by the baseline in :func:`add_ratios`.
RATIO_METRICS = ("waiting_time_mean", "waiting_time_max", "turnaround_mean", "slowdown_mean",
                 "bounded_slowdown_mean", "makespan", "utilization")
#: Why a report has no I/O figure.
IO_NOTE = ("No I/O figure: the runs have no I/O record (io_phases.csv, written by the "
           "schedulers built on iosched's core when run by iosched run or a campaign; "
           "docs/outputs.md).")
#: Columns that identify a workload part (the unit of the ratios).
GROUP_COLUMNS = ("platform", "workload", "part", "seed", "engine")


def load_manifest(campaign_dir) -> dict:
    """Read ``campaign_dir/campaign.json``.

    :returns: the manifest dict (``name``, ``baseline``, ``runs`` ...).
    :raises InputError: missing folder or manifest, invalid JSON.
    """
    d = Path(campaign_dir)
    if not d.is_dir():
        raise InputError(f"{d}: no such campaign folder")
    p = d / "campaign.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: no campaign manifest (run 'iosched campaign FILE.yaml' first)") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{p}: unreadable manifest: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise InputError(f"{p}: field 'runs': missing or not a list")
    return data


def _read_marker(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def campaign_table(campaign_dir, baseline: str | None = None) -> pd.DataFrame:
    """One row per run of a campaign (tidy table).

    :param campaign_dir: a campaign output folder (holding campaign.json).
    :param baseline: scheduler label for the ratio columns (default: the
        manifest's ``baseline``; no ratio columns when there is none).
    :returns: DataFrame with :data:`PARAM_COLUMNS` (``status`` is ``done``,
        ``failed`` or ``pending``; ``reason`` the failure's one-line reason or
        ""; ``part`` nullable Int64; ``options`` canonical JSON text), then
        :data:`METRIC_COLUMNS` (float64, times in s; the counts of
        :data:`INT_METRIC_COLUMNS` nullable Int64; missing for a run not
        finished), then ``ratio_<metric>``
        for :data:`RATIO_METRICS` when there is a baseline. Rows sorted by
        platform, workload, part, scheduler, seed, run_id.
    :raises InputError: see :func:`load_manifest`; an unknown baseline.
    """
    d = Path(campaign_dir)
    manifest = load_manifest(d)
    rows = []
    for i, run in enumerate(manifest["runs"]):
        try:
            params = run["params"]
            rdir = d / run["dir"]
            rid = run["id"]
        except (KeyError, TypeError):
            raise InputError(f"{d / 'campaign.json'}: field runs[{i}]: missing id, dir or params") from None
        row = {"run_id": rid, "platform": params.get("platform"), "workload": params.get("workload"),
               "part": params.get("part"), "scheduler": params.get("scheduler"),
               "options": json.dumps(params.get("options") or {}, sort_keys=True),
               "seed": params.get("seed"), "engine": params.get("engine"),
               "nb_res": params.get("nb_res"), "reason": ""}
        done = _read_marker(rdir / "done.json")
        failed = _read_marker(rdir / "failed.json") if done is None else None
        metrics = {}
        if done is not None:
            row["status"] = "done"
            metrics = done.get("metrics") or {}
        elif failed is not None:
            row["status"] = "failed"
            row["reason"] = str(failed.get("reason", ""))
        else:
            row["status"] = "pending"
        for m in JOB_METRICS:
            stats = metrics.get(m) or {}
            for s in STATISTICS:
                row[f"{m}_{s}"] = stats.get(s)
        for k in METRIC_COLUMNS[len(JOB_METRICS) * len(STATISTICS):]:
            row[k] = metrics.get(k)
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(PARAM_COLUMNS + METRIC_COLUMNS))
    for c in ("run_id", "status", "reason", "platform", "workload", "scheduler", "options", "engine"):
        df[c] = df[c].astype(str)
    df["part"] = pd.array(df["part"].tolist(), dtype="Int64")
    df["seed"] = pd.to_numeric(df["seed"]).astype("int64")
    df["nb_res"] = pd.to_numeric(df["nb_res"]).astype("int64")
    for c in METRIC_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
        if c in INT_METRIC_COLUMNS:
            df[c] = df[c].astype("Int64")
    df = df.sort_values(["platform", "workload", "part", "scheduler", "seed", "run_id"],
                        kind="mergesort", na_position="first").reset_index(drop=True)
    baseline = manifest.get("baseline") if baseline is None else baseline
    if baseline:
        df = add_ratios(df, baseline)
    return df


def add_ratios(df: pd.DataFrame, baseline: str, metrics=RATIO_METRICS) -> pd.DataFrame:
    """Add ``ratio_<metric>`` columns: value / the baseline's value for the same
    workload part (:data:`GROUP_COLUMNS`).

    :param df: a table from :func:`campaign_table` (before ratios).
    :param baseline: the scheduler label of the reference policy.
    :returns: a new DataFrame (same rows and order).
    :raises InputError: *baseline* is not one of the table's schedulers.
    """
    if baseline not in set(df["scheduler"]):
        raise InputError(f"baseline: {baseline!r} is not a scheduler of the campaign "
                         f"({', '.join(sorted(set(df['scheduler'])))})")
    out = df.copy()
    base = df[(df["scheduler"] == baseline) & (df["status"] == "done")]
    for m, r in ratios(df, base, GROUP_COLUMNS, metrics).items():
        out[f"ratio_{m}"] = r
    return out


def ratios(rows: pd.DataFrame, reference: pd.DataFrame, keys, metrics) -> dict:
    """Each of *metrics* of *rows* divided by the value of the *reference*
    row with the same *keys* (the first such row).

    :param rows: a table with the *keys* and *metrics* columns.
    :param reference: the rows to divide by (same columns).
    :returns: {metric: float64 array aligned with *rows*}; NaN where no
        reference row matches or its value is 0 or not finite.
    """
    keys = list(keys)
    base = reference.drop_duplicates(subset=keys, keep="first")[keys + list(metrics)]
    base = base.rename(columns={m: f"__base_{m}" for m in metrics})
    merged = rows[keys].astype(object).merge(base.astype(object), on=keys, how="left")
    out = {}
    for m in metrics:
        num = pd.to_numeric(rows[m], errors="coerce").to_numpy(float)
        den = pd.to_numeric(merged[f"__base_{m}"], errors="coerce").to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(np.isfinite(den) & (den != 0), num / np.where(den != 0, den, 1.0), np.nan)
        out[m] = r.astype("float64")
    return out


def write_table(df: pd.DataFrame, out_dir, stem: str = "runs") -> tuple[Path, Path]:
    """Write *df* as ``out_dir/<stem>.parquet`` (pyarrow, no index) and
    ``out_dir/<stem>.csv`` (UTF-8, "\\n" line ends, floats in shortest repr).
    pyarrow is an optional extra (``iosched[campaign]``): without it only the
    CSV file is written.

    :returns: (parquet path or None without pyarrow, csv path).
    :raises InputError: the folder cannot be created or written.
    """
    d = Path(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
        pq = d / f"{stem}.parquet"
        csv = d / f"{stem}.csv"
        if importlib.util.find_spec("pyarrow") is not None:
            tmp = d / f".{stem}.parquet.tmp"
            df.to_parquet(tmp, engine="pyarrow", index=False)
            tmp.replace(pq)
        else:
            pq = None
        tmp = d / f".{stem}.csv.tmp"
        df.to_csv(tmp, index=False, lineterminator="\n")
        tmp.replace(csv)
    except OSError as e:
        raise InputError(f"{d}: cannot write the table: {e.strerror or e}") from None
    return pq, csv


def job_table(campaign_dir, runs: pd.DataFrame, tau: float = 600.0) -> pd.DataFrame:
    """Per-job metrics of the finished runs of *runs* (rows of
    :func:`campaign_table`), with columns ``run_id``, ``platform``,
    ``workload``, ``part``, ``scheduler``, ``seed`` prepended to those of
    :func:`iosched.analysis.metrics.job_metrics` (times in s).

    Each run's jobs CSV is read with :func:`iosched.analysis.jobs.load_jobs`,
    which merges the burst-buffer runs (workload ``bb``) into the REJECTED
    workload jobs they run (:func:`iosched.analysis.jobs.merge_runs`): one row per
    workload job, ``waiting_time`` = run start - static submission,
    ``nb_allocated`` = its compute nodes.

    :raises InputError: a finished run's jobs CSV is unreadable.
    """
    manifest = load_manifest(campaign_dir)
    dirs = {r["id"]: Path(campaign_dir) / r["dir"] for r in manifest["runs"]}
    frames = []
    for row in runs[runs["status"] == "done"].itertuples(index=False):
        pj = job_metrics(load_jobs(dirs[row.run_id]), tau=tau).reset_index(drop=True)
        pj["job_id"] = pj["job_id"].astype(str)
        for c in ("seed", "scheduler", "part", "workload", "platform", "run_id"):
            pj.insert(0, c, getattr(row, c))
        frames.append(pj)
    if not frames:
        return pd.DataFrame(columns=["run_id", "platform", "workload", "part", "scheduler", "seed",
                                     "job_id", "waiting_time"])
    return pd.concat(frames, ignore_index=True)


def summary_by_scheduler(df: pd.DataFrame, columns) -> pd.DataFrame:
    """Mean over finished runs of *columns* per scheduler, plus run counts.

    :returns: DataFrame indexed by scheduler with ``runs``, ``done``,
        ``failed`` and ``mean_<column>`` columns (NaN where no finished run).
    """
    out = []
    for s in scheduler_labels(df):
        sub = df[df["scheduler"] == s]
        done = sub[sub["status"] == "done"]
        row = {"scheduler": s, "runs": len(sub), "done": len(done),
               "failed": int((sub["status"] == "failed").sum())}
        for c in columns:
            if c in df.columns:
                v = done[c].to_numpy(float)
                v = v[np.isfinite(v)]
                row[c] = float(v.mean()) if v.size else math.nan
        out.append(row)
    return pd.DataFrame(out).set_index("scheduler")


def scheduler_labels(df: pd.DataFrame) -> list[str]:
    """The scheduler labels of a runs or job table, sorted."""
    return sorted(set(df["scheduler"].astype(str)))
