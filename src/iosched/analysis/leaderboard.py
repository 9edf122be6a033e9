"""The leaderboard of a campaign: every scheduler on each regime and machine,
with 95 % intervals over seeds and paired differences to a baseline
(``iosched leaderboard CAMPAIGN_DIR``, :func:`iosched.analysis.cli.leaderboard_command`;
definitions: ``docs/leaderboard.md``).

* :func:`run_table` -- one row per run: the runs table of
  :func:`iosched.analysis.campaign.campaign_table` (regime = the run's
  workload label, machine = its platform label), plus the families' own
  stretches (:func:`family_stretches`) and the I/O metrics a run records
  (:func:`io_metrics`, the hook ``io`` of its ``metrics.json``);
* :func:`t_interval` -- a mean and its 95 % Student t half-width;
* :func:`leaderboard` -- one row per (regime, machine, scheduler): each
  metric's mean over the replicates (seeds, and workload parts when the
  workload is cut into parts) with its 95 % half-width, the paired
  difference to the baseline (same regime, machine, part and seed) with
  its 95 % half-width, and a rank per (regime, machine);
* :func:`render_blocks`, :func:`write_leaderboard` -- the Markdown and HTML
  leaderboard (:mod:`iosched.analysis.report`'s renderers), the CSV table
  and the rankings figure (:func:`iosched.analysis.plots.plot_paired_differences`).

Nothing depends on the wall clock: the same campaign gives the same bytes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy.special import stdtrit

from iosched.analysis.campaign import GROUP_COLUMNS, campaign_table, load_manifest, write_table
from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics import job_metrics
from iosched.analysis.plots import METRIC_LABELS, plot_paired_differences
from iosched.analysis.report import render_html, render_markdown
from iosched.analysis.units import bytes_unit, time_unit
from iosched.errors import InputError
from iosched.listpack.metrics import jeannot_stretch
from iosched.listpack.model import DEFAULT_BANDWIDTH, PeriodicJob
from iosched.locality.metrics import gonthier_stretch
from iosched.sched.iojob import read_io

__all__ = ["READ_BANDWIDTH", "PFS_BANDWIDTH", "METRICS", "IO_PREFIX", "DEFAULT_METRIC",
           "CONFIDENCE", "family_stretches", "io_metrics", "run_table", "t_interval",
           "board_metrics", "higher_is_better", "leaderboard", "compare_leaderboards", "board_metrics_of",
           "render_blocks", "write_leaderboard"]

#: Load bandwidth (bytes/s) of the locality paper's reference flow (Gonthier
#: et al., RR-9497, Section 5: 0.1 GB/s per node; the locality scheduler's
#: default ``bandwidth``).
READ_BANDWIDTH = 0.1e9
#: I/O bandwidth B (bytes/s) of the list-vs-pack paper's time alone T_i(B)
#: (Jeannot et al., IJHPCA 2023: Mira's 240 GB/s,
#: :data:`iosched.listpack.model.DEFAULT_BANDWIDTH`).
PFS_BANDWIDTH = DEFAULT_BANDWIDTH
#: The leaderboard's metrics of every run, in column order (per run: the
#: runs table's columns; ``jobs_rejected`` is its ``nb_jobs_rejected``).
#: The two stretches are left out of a leaderboard where no job has them.
METRICS = ("waiting_time_mean", "waiting_time_p95", "bounded_slowdown_mean",
           "gonthier_stretch_mean", "jeannot_stretch_mean", "utilization", "jobs_rejected")
#: Prefix of the I/O metrics' columns (the ``io`` object of a run's metrics.json).
IO_PREFIX = "io_"
#: The ranking metric by default.
DEFAULT_METRIC = "bounded_slowdown_mean"
#: Confidence level of every interval.
CONFIDENCE = 0.95
_STRETCHES = ("gonthier_stretch_mean", "jeannot_stretch_mean")
#: replicate keys within a (regime, machine): the workload part (-1: none) and the seed
_NO_PART = -1


# --------------------------------------------------------------------------
# per run


def _job_key(job_id) -> str:
    """A workload job id as ``out_jobs.csv`` writes it (no workload prefix)."""
    return str(job_id).rsplit("!", 1)[-1]


def _reference_times(path: Path, read_bandwidth: float, pfs_bandwidth: float) -> tuple[dict, dict]:
    """The families' reference times of the jobs of a workload file.

    :returns: ``(gonthier, jeannot)``: {job id: (delay s, input bytes)} of the
        jobs with inputs and ``compute.delay`` (the locality model), and
        {job id: T_i(B) s} of the periodic jobs (the list-vs-pack model).
    :raises InputError: unreadable file, a malformed ``io``.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        jobs = data["jobs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"{path}: unreadable workload ({' '.join(str(e).split())})") from None
    gonthier, jeannot = {}, {}
    for j in jobs:
        key = _job_key(j.get("id"))
        io = read_io(j, f"{path}: job {key}")
        if io.inputs and io.compute is not None and io.compute.delay is not None:
            gonthier[key] = (float(io.compute.delay), float(sum(f.bytes for f in io.inputs)))
        if io.periodic is not None:
            p = io.periodic
            spec = PeriodicJob(int(io.nodes or j.get("res") or 1), p.periods, p.compute, p.bytes)
            jeannot[key] = spec.time(pfs_bandwidth)
    return gonthier, jeannot


def family_stretches(run_dir, workload, read_bandwidth: float = READ_BANDWIDTH,
                     pfs_bandwidth: float = PFS_BANDWIDTH, _cache: dict | None = None) -> dict:
    """The families' own stretches of one run, averaged over its started jobs
    that have the model they are defined on.

    * ``gonthier_stretch_mean``: Gonthier et al. (RR-9497, Section 3), flow
      over reference flow, F / (delay + input bytes / *read_bandwidth*)
      (:func:`iosched.locality.metrics.gonthier_stretch`), over the jobs with
      ``io.inputs`` and ``io.compute.delay`` (several inputs: their bytes
      summed, read one after the other);
    * ``jeannot_stretch_mean``: Jeannot, Pallez & Vidal (IJHPCA 2023,
      "Evaluation criterion"), execution time (finish - start, queue
      waiting excluded) over the time alone T_i(B) = n (w + v / B), B =
      *pfs_bandwidth* (:func:`iosched.listpack.metrics.jeannot_stretch`),
      over the jobs with ``io.periodic``.

    :param run_dir: the run's folder (its ``out_jobs.csv``; burst-buffer and
        phase jobs merged into their workload jobs).
    :param workload: the run's workload file (each job's ``io``).
    :param read_bandwidth: bytes/s, > 0. :param pfs_bandwidth: bytes/s, > 0.
    :returns: {name: float}, NaN where no started job has the model (the
        run's jobs CSV is read only when some job has one).
    :raises InputError: unreadable workload or jobs CSV.
    """
    key = (str(workload), read_bandwidth, pfs_bandwidth)
    if _cache is not None and key in _cache:
        gonthier, jeannot = _cache[key]
    else:
        gonthier, jeannot = _reference_times(Path(workload), read_bandwidth, pfs_bandwidth)
        if _cache is not None:
            _cache[key] = (gonthier, jeannot)
    out = {name: math.nan for name in _STRETCHES}
    if not gonthier and not jeannot:
        return out
    pj = job_metrics(load_jobs(run_dir))
    g, r = [], []
    for jid, s, b, c in zip(pj["job_id"].map(_job_key), pj["submission"], pj["start"], pj["finish"]):
        if jid in gonthier:
            delay, size = gonthier[jid]
            g.append(gonthier_stretch(SimpleNamespace(subtime=s, end=c, delay=delay, size=size),
                                      bandwidth=read_bandwidth))
        if jid in jeannot and jeannot[jid] > 0:
            r.append(jeannot_stretch(b, c, jeannot[jid]))
    if g:
        out["gonthier_stretch_mean"] = float(np.mean(g))
    if r:
        out["jeannot_stretch_mean"] = float(np.mean(r))
    return out


def _flatten(obj, prefix: str, where: str, out: dict) -> None:
    for k in sorted(obj):
        v = obj[k]
        name = f"{prefix}_{k}"
        if isinstance(v, dict):
            _flatten(v, name, where, out)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[name] = float(v)
        elif v is None:
            out[name] = math.nan
        else:
            raise InputError(f"{where}: field {name.replace('_', '.', 1)}: "
                             f"not a number or an object ({v!r})")


def io_metrics(run_dir) -> dict:
    """The I/O metrics a run recorded: the ``io`` object of its
    ``metrics.json`` (the per-run metrics hook, ``docs/leaderboard.md``),
    its numeric leaves flattened as ``io_<key>[_<key>...]`` (e.g.
    ``{"io": {"bytes": {"pfs": 1e9}}}`` -> ``io_bytes_pfs``; null -> NaN).

    :returns: {column: float}; empty when the file or its ``io`` is absent.
    :raises InputError: ``io`` or one of its leaves has another type.
    """
    p = Path(run_dir) / "metrics.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    io = data.get("io") if isinstance(data, dict) else None
    if io is None:
        return {}
    if not isinstance(io, dict):
        raise InputError(f"{p}: field io: not an object")
    out: dict = {}
    _flatten(io, "io", str(p), out)
    return out


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise InputError(f"option {name}: must be a positive number of bytes/s, got {value!r}")
    return float(value)


def run_table(campaign_dir, read_bandwidth: float = READ_BANDWIDTH,
              pfs_bandwidth: float = PFS_BANDWIDTH) -> pd.DataFrame:
    """One row per run of a campaign, with the leaderboard's per-run metrics.

    :param campaign_dir: a campaign output folder (``campaign.json``).
    :param read_bandwidth: :func:`family_stretches`' (bytes/s, > 0).
    :param pfs_bandwidth: :func:`family_stretches`' (bytes/s, > 0).
    :returns: the columns of :func:`~iosched.analysis.campaign.campaign_table`
        (no ratios) plus ``regime`` (= ``workload``), ``machine`` (=
        ``platform``), ``jobs_rejected`` (= ``nb_jobs_rejected``, float),
        ``gonthier_stretch_mean``, ``jeannot_stretch_mean`` and the
        ``io_*`` columns of :func:`io_metrics` (NaN for runs without them
        and for runs not finished), in the runs table's row order.
    :raises InputError: as :func:`~iosched.analysis.campaign.campaign_table`,
        a bad option, an unreadable workload, jobs CSV or ``io``.
    """
    read_bandwidth = _positive(read_bandwidth, "--read-bandwidth")
    pfs_bandwidth = _positive(pfs_bandwidth, "--pfs-bandwidth")
    d = Path(campaign_dir)
    manifest = load_manifest(d)
    runs = campaign_table(d, baseline="")
    where = {r["id"]: r for r in manifest["runs"]}
    extra, cache = [], {}
    for row in runs.itertuples(index=False):
        values = {name: math.nan for name in _STRETCHES}
        if row.status == "done":
            entry = where[row.run_id]
            rdir = d / entry["dir"]
            if entry.get("workload"):
                values.update(family_stretches(rdir, d / entry["workload"], read_bandwidth,
                                               pfs_bandwidth, cache))
            values.update(io_metrics(rdir))
        extra.append(values)
    ex = pd.DataFrame(extra, index=runs.index)
    io_cols = sorted(c for c in ex.columns if c.startswith(IO_PREFIX))
    out = runs.copy()
    out["regime"] = out["workload"]
    out["machine"] = out["platform"]
    out["jobs_rejected"] = out["nb_jobs_rejected"].astype("float64")
    for c in (*_STRETCHES, *io_cols):
        out[c] = ex[c].astype("float64")
    return out


# --------------------------------------------------------------------------
# statistics


def t_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float, int]:
    """Mean of the finite *values* and the half-width of its Student t
    confidence interval, t_{(1+confidence)/2, n-1} s / sqrt(n) (s: the
    sample standard deviation, ddof 1; the t quantile is
    ``scipy.special.stdtrit``, the inverse of Student's t distribution
    function, as ``scipy.stats.t.ppf`` computes it, without importing
    ``scipy.stats``: seconds on every ``iosched metrics``).

    :returns: ``(mean, half_width, n)``; the mean NaN when n = 0, the
        half-width NaN when n < 2.
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return math.nan, math.nan, 0
    mean = float(v.mean())
    if n < 2:
        return mean, math.nan, n
    half = float(stdtrit(n - 1, 0.5 + confidence / 2.0) * v.std(ddof=1) / math.sqrt(n))
    return mean, half, n


def board_metrics(runs: pd.DataFrame) -> list[str]:
    """The metrics a leaderboard of *runs* (a :func:`run_table`) shows:
    :data:`METRICS` (a stretch only when some finished run has it), then the
    ``io_*`` columns some finished run has, sorted."""
    done = runs[runs["status"] == "done"]

    def present(c):
        return c in done.columns and bool(np.isfinite(done[c].to_numpy(float)).any())

    out = [m for m in METRICS if m not in _STRETCHES or present(m)]
    return out + sorted(c for c in runs.columns if c.startswith(IO_PREFIX) and present(c))


def higher_is_better(metric: str) -> bool:
    """Ranking direction: utilizations (names ending in ``utilization``) rank
    the highest first; every other metric the lowest first."""
    return metric.endswith("utilization")


def leaderboard(runs: pd.DataFrame, baseline: str = "easy",
                metric: str = DEFAULT_METRIC) -> pd.DataFrame:
    """The leaderboard of a :func:`run_table`.

    Replicates: the finished runs of a (regime, machine, scheduler), one per
    (workload part, seed). For each metric *m* of :func:`board_metrics`:
    ``m`` (mean over the replicates), ``m_ci95`` (95 % t half-width,
    :func:`t_interval`), ``m_diff`` (mean of the paired differences run -
    baseline run over the replicates where both finished: same regime,
    machine, part, seed and engine) and ``m_diff_ci95`` (its half-width).

    :param baseline: the scheduler label the differences are taken to.
    :param metric: the ranking metric (lowest mean first, highest for a
        utilization, :func:`higher_is_better`; NaN last; ties by scheduler
        label). A scheduler that rejected jobs (mean ``jobs_rejected`` > 0:
        its metrics cover only the jobs it ran) ranks after every scheduler
        that rejected none.
    :returns: one row per (regime, machine, scheduler): ``regime``,
        ``machine``, ``rank`` (1 = best within the regime and machine),
        ``scheduler``, ``runs`` (finished), ``failed``, ``pairs`` (replicates
        paired with the baseline), then the metric columns; rows sorted by
        regime, machine, rank. ``attrs``: ``baseline``, ``metric``,
        ``metrics``.
    :raises InputError: no finished run; *baseline* not a scheduler of the
        campaign; *metric* not one of :func:`board_metrics`.
    """
    done = runs[runs["status"] == "done"].copy()
    if done.empty:
        raise InputError("leaderboard: the campaign has no finished run")
    scheds = sorted(set(runs["scheduler"]))
    if baseline not in scheds:
        raise InputError(f"option --baseline: {baseline!r} is not a scheduler of the campaign "
                         f"({', '.join(scheds)})")
    metrics = board_metrics(runs)
    if metric not in metrics:
        raise InputError(f"option --metric: unknown metric {metric!r} (one of {', '.join(metrics)})")
    done["part"] = done["part"].fillna(_NO_PART).astype("int64")
    keys = list(GROUP_COLUMNS)
    base = done[done["scheduler"] == baseline][keys + metrics].drop_duplicates(subset=keys)
    base = base.rename(columns={m: f"__base_{m}" for m in metrics})
    rows = []
    for (regime, machine, sched), g in runs.groupby(["regime", "machine", "scheduler"], sort=True):
        gd = done[(done["regime"] == regime) & (done["machine"] == machine)
                  & (done["scheduler"] == sched)]
        paired = gd.merge(base, on=keys, how="inner")
        row = {"regime": regime, "machine": machine, "scheduler": sched, "runs": len(gd),
               "failed": int((g["status"] == "failed").sum()), "pairs": len(paired)}
        for m in metrics:
            row[m], row[f"{m}_ci95"], _ = t_interval(gd[m])
            diff = paired[m].to_numpy(float) - paired[f"__base_{m}"].to_numpy(float)
            row[f"{m}_diff"], row[f"{m}_diff_ci95"], _ = t_interval(diff)
        rows.append(row)
    board = pd.DataFrame(rows)
    sign = -1.0 if higher_is_better(metric) else 1.0
    board["__key"] = sign * board[metric]
    # a scheduler that rejected jobs is measured on the jobs it ran only: it
    # ranks after every scheduler that ran them all, whatever its metric
    rejected = board["jobs_rejected"] if "jobs_rejected" in board else pd.Series(0.0, board.index)
    board["__partial"] = rejected.fillna(0.0).to_numpy(float) > 0
    board = board.sort_values(["regime", "machine", "__partial", "__key", "scheduler"],
                              kind="mergesort", na_position="last")
    board["rank"] = board.groupby(["regime", "machine"], sort=False).cumcount() + 1
    cols = ["regime", "machine", "rank", "scheduler", "runs", "failed", "pairs"]
    cols += [c for m in metrics for c in (m, f"{m}_ci95", f"{m}_diff", f"{m}_diff_ci95")]
    board = board[cols].reset_index(drop=True)
    board["rank"] = board["rank"].astype("int64")
    board.attrs.update(baseline=baseline, metric=metric, metrics=list(metrics))
    return board


def _relative_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| / max(|a|, |b|) elementwise; 0 where both are 0 or both NaN,
    inf where only one is NaN."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    both_nan = np.isnan(a) & np.isnan(b)
    scale = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(scale > 0, np.abs(a - b) / scale, 0.0)
    rel = np.where(np.isnan(a) ^ np.isnan(b), np.inf, rel)
    return np.where(both_nan, 0.0, rel)


def compare_leaderboards(a: pd.DataFrame, b: pd.DataFrame, tolerance: float = 0.01) -> dict:
    """Do two leaderboards of the same campaign (e.g. run on two engines)
    agree: the same schedulers in the same rank order in every (regime,
    machine), and every metric's mean within a relative *tolerance*?

    :param a, b: tables of :func:`leaderboard`.
    :param tolerance: largest relative difference |x_a - x_b| / max(|x_a|,
        |x_b|) accepted for a metric's mean (0.01: 1 %); 0 when both are 0
        or both NaN.
    :returns: ``{"agree": bool, "order": [(regime, machine, a's order,
        b's order)] where they differ, "metrics": DataFrame (metric,
        max_relative_difference, where: "regime/machine/scheduler" of the
        largest; empty when 0), "outside": [(regime, machine, scheduler, metric, x_a,
        x_b)] beyond the tolerance}``.
    :raises InputError: a negative or non-finite tolerance; the two boards
        have different (regime, machine, scheduler) rows or metrics.
    """
    if not (math.isfinite(tolerance) and tolerance >= 0):
        raise InputError(f"option --tolerance: not a finite number >= 0: {tolerance!r}")
    key = ["regime", "machine", "scheduler"]
    ka = set(map(tuple, a[key].to_numpy().tolist()))
    kb = set(map(tuple, b[key].to_numpy().tolist()))
    if ka != kb:
        only = sorted(ka ^ kb)[0]
        raise InputError(f"leaderboards: row {'/'.join(map(str, only))} is in one board only")
    metrics = list(a.attrs.get("metrics") or board_metrics_of(a))
    if metrics != list(b.attrs.get("metrics") or board_metrics_of(b)):
        raise InputError("leaderboards: the two boards have different metrics")
    order = []
    for (regime, machine), ga in a.groupby(["regime", "machine"], sort=True):
        gb = b[(b["regime"] == regime) & (b["machine"] == machine)]
        oa = list(ga.sort_values("rank")["scheduler"])
        ob = list(gb.sort_values("rank")["scheduler"])
        if oa != ob:
            order.append((regime, machine, oa, ob))
    m = a.merge(b, on=key, suffixes=("_a", "_b"))
    rows, outside = [], []
    for metric in metrics:
        rel = _relative_difference(m[f"{metric}_a"], m[f"{metric}_b"])
        i = int(np.argmax(rel)) if len(rel) else 0
        worst = float(rel[i]) if len(rel) else 0.0
        rows.append({"metric": metric, "max_relative_difference": worst,
                     "where": "/".join(str(m[c].iat[i]) for c in key) if worst > 0 else ""})
        for j in np.flatnonzero(rel > tolerance):
            outside.append((m["regime"].iat[j], m["machine"].iat[j], m["scheduler"].iat[j], metric,
                            float(m[f"{metric}_a"].iat[j]), float(m[f"{metric}_b"].iat[j])))
    return {"agree": not order and not outside, "order": order,
            "metrics": pd.DataFrame(rows, columns=["metric", "max_relative_difference", "where"]),
            "outside": outside}


def board_metrics_of(board: pd.DataFrame) -> list[str]:
    """The metric columns of a leaderboard table (read back from a CSV,
    without ``attrs``): each ``m`` that has ``m_ci95`` beside it."""
    return [c for c in board.columns if f"{c}_ci95" in board.columns and not c.endswith("_diff")]


# --------------------------------------------------------------------------
# presentation


def _label(metric: str) -> str:
    extra = {"bounded_slowdown_mean": "mean bounded slowdown",
             "gonthier_stretch_mean": "mean stretch (Gonthier)",
             "jeannot_stretch_mean": "mean stretch (Jeannot)", "jobs_rejected": "jobs rejected"}
    if metric.startswith(f"{IO_PREFIX}bytes_"):
        return f"bytes {metric[len(IO_PREFIX) + 6:]}"
    if metric.startswith(IO_PREFIX):
        return metric[len(IO_PREFIX):].replace("_", " ")
    return extra.get(metric) or METRIC_LABELS.get(metric) or metric


def _unit(metric: str, values) -> tuple[str, float]:
    """(unit shown in the header, divisor) of a metric's column."""
    if metric.startswith("waiting_time"):
        return time_unit(values)
    if metric.startswith(f"{IO_PREFIX}bytes"):
        return bytes_unit(values)
    return "", 1.0


def _cell(mean: float, half: float, factor: float) -> str:
    if not math.isfinite(mean):
        return "-"
    text = f"{mean / factor:.4g}"
    return text if not math.isfinite(half) else f"{text} ± {half / factor:.2g}"


def _header(metric: str, unit: str) -> str:
    return f"{_label(metric)} ({unit})" if unit else _label(metric)


def render_blocks(board: pd.DataFrame, title: str, tau: float, figure: str | None = None) -> list:
    """Report blocks (:func:`iosched.analysis.report.render_markdown`) of a
    :func:`leaderboard`: what the columns mean, then per (regime, machine)
    the values (mean ± 95 % half-width, ranked) and the paired differences
    to the baseline; durations and bytes in the unit of their column's
    header; *figure* (a PNG path relative to the output) when given."""
    baseline, metric, metrics = board.attrs["baseline"], board.attrs["metric"], board.attrs["metrics"]
    blocks: list = [("h1", title)]
    blocks.append(("p", f"One row per scheduler, ranked by {_label(metric)} "
                        f"({'highest' if higher_is_better(metric) else 'lowest'} first; ties by "
                        "name; a scheduler that rejected jobs, measured on the jobs it ran only, "
                        "after every one that ran them all). Each cell: the mean over the replicates (seeds, and workload parts "
                        "when the workload has parts) ± the half-width of its 95 % Student t "
                        "interval (no interval from one replicate). Bounded slowdown with "
                        f"tau = {tau:g} s. Differences: scheduler − {baseline} on the same "
                        "regime, machine, part and seed, mean ± 95 % t half-width over the "
                        "pairs (below 0 is better, but for utilization). Definitions: "
                        "docs/leaderboard.md."))
    if figure:
        blocks.append(("img", figure, f"Paired difference to {baseline} of {_label(metric)} "
                                      "per scheduler (mean and 95 % t interval), one panel per "
                                      "regime and machine"))
    for (regime, machine), g in board.groupby(["regime", "machine"], sort=True):
        blocks.append(("h2", f"Regime {regime} on machine {machine}"))
        units = {m: _unit(m, g[m].to_numpy(float)) for m in metrics}
        head = ["rank", "scheduler", "runs", "failed"] + [_header(m, units[m][0]) for m in metrics]
        rows = [[r["rank"], r["scheduler"], r["runs"], r["failed"]]
                + [_cell(r[m], r[f"{m}_ci95"], units[m][1]) for m in metrics]
                for _, r in g.iterrows()]
        blocks.append(("table", head, rows))
        dunits = {m: _unit(m, g[f"{m}_diff"].to_numpy(float)) for m in metrics}
        head = ["scheduler", "pairs"] + [_header(m, dunits[m][0]) for m in metrics]
        rows = [[r["scheduler"], r["pairs"]]
                + [_cell(r[f"{m}_diff"], r[f"{m}_diff_ci95"], dunits[m][1]) for m in metrics]
                for _, r in g.iterrows() if r["scheduler"] != baseline]
        blocks.append(("p", f"Paired difference to {baseline} (scheduler − {baseline}):"))
        blocks.append(("table", head, rows))
    return blocks


def write_leaderboard(campaign_dir, out_dir=None, baseline: str = "easy",
                      metric: str = DEFAULT_METRIC, read_bandwidth: float = READ_BANDWIDTH,
                      pfs_bandwidth: float = PFS_BANDWIDTH) -> dict:
    """Compute the leaderboard of a campaign and write it.

    Writes in *out_dir* (default ``results/leaderboards/<campaign name>``
    under the current directory): ``leaderboard.csv`` (and
    ``leaderboard.parquet`` with pyarrow) -- the :func:`leaderboard` table;
    ``leaderboard.md`` and ``leaderboard.html`` (figure embedded: one
    self-contained file); ``figures/leaderboard_<metric>.png``
    (:func:`iosched.analysis.plots.plot_paired_differences`).

    :returns: {"board": DataFrame, "markdown": text, "paths": {kind: Path}}.
    :raises InputError: as :func:`run_table` and :func:`leaderboard`; an
        unwritable folder.
    """
    cdir = Path(campaign_dir)
    manifest = load_manifest(cdir)
    if not manifest["runs"]:
        raise InputError(f"{cdir / 'campaign.json'}: the campaign has no run")
    name = str(manifest.get("name") or cdir.name)
    board = leaderboard(run_table(cdir, read_bandwidth, pfs_bandwidth), baseline, metric)
    out = Path(out_dir) if out_dir is not None else Path("results") / "leaderboards" / name
    fig = out / "figures" / f"leaderboard_{metric}.png"
    pq, csv = write_table(board, out, stem="leaderboard")
    plot_paired_differences(board, fig, metric, baseline, label=_label(metric),
                            unit=_unit(metric, board[f"{metric}_diff"].to_numpy(float)))
    tau = float(manifest.get("tau_s") or 600.0)
    blocks = render_blocks(board, f"Leaderboard of campaign {name}", tau,
                           figure=str(fig.relative_to(out)))
    md_text = render_markdown(blocks)
    md, ht = out / "leaderboard.md", out / "leaderboard.html"
    try:
        md.write_text(md_text, encoding="utf-8")
        ht.write_text(render_html(blocks, f"Leaderboard of campaign {name}", out), encoding="utf-8")
    except OSError as e:
        raise InputError(f"{out}: cannot write the leaderboard: {e.strerror or e}") from None
    return {"board": board, "markdown": md_text,
            "paths": {"csv": csv, "parquet": pq, "markdown": md, "html": ht, "figure": fig}}
