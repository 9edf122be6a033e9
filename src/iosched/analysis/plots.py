"""Figures of runs and campaigns (PNG).

Every figure is drawn with matplotlib's Agg canvas (no display, no pyplot
global state: safe to call from any process or thread) and is
deterministic: fixed size, dpi, colours and an empty PNG ``Software``
metadata entry, so the same input gives the same bytes with the same
matplotlib and FreeType.

* one run (the jobs table of :func:`iosched.analysis.jobs.load_jobs`, times
  in s): :func:`plot_utilization` (busy resources and queue length over
  time) and :func:`plot_gantt`;
* a campaign (the tables of :mod:`iosched.analysis.campaign`):
  :func:`plot_ratio_boxes`, :func:`plot_ecdf`, :func:`plot_tail`; a
  leaderboard (:mod:`iosched.analysis.leaderboard`): :func:`plot_paired_differences`;
* the pieces the burst-buffer reproduction's figures share
  (:mod:`iosched.experiments.bb.reproduction`): :func:`new_figure`,
  :func:`save_png`, :func:`log_yscale`, :func:`tail_values`,
  :func:`tail_figure`.

evalys (the Batsim team's analysis package) is not a dependency: the
outputs stay readable by it (``docs/outputs.md``: ``evalys.jobset.JobSet.from_csv``
reads ``out_jobs.csv`` and draws its Gantt chart), and these figures are
drawn with matplotlib directly.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

from iosched.analysis.campaign import scheduler_labels
from iosched.analysis.jobs import parse_allocation, source_of
from iosched.analysis.metrics import job_metrics
from iosched.analysis.units import log_time_ticks, time_unit
from iosched.batsim.jobs import COMPLETED_SUCCESSFULLY
from iosched.errors import InputError

__all__ = ["step_changes", "usage_steps", "queue_steps", "resample_steps", "ratio_groups", "plot_utilization", "plot_gantt", "plot_ratio_boxes",
           "plot_ecdf", "plot_tail", "plot_paired_differences", "tail_values", "tail_figure", "new_figure", "save_png",
           "log_yscale"]

# PNG text chunks: no matplotlib version, so bytes do not depend on it.
_PNG_METADATA = {"Software": None}
_DPI = 100


def new_figure(width: float, height: float) -> Figure:
    """A matplotlib Figure of ``width`` x ``height`` inches on an Agg canvas,
    constrained layout."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path: str | Path, mkdir: bool = False) -> Path:
    """Write ``fig`` as a PNG at ``path`` (100 dpi, no ``Software`` metadata);
    with ``mkdir``, create its folder first.  Returns the path.

    :raises InputError: the file (or, with ``mkdir``, its folder) cannot be
        written.
    """
    p = Path(path)
    try:
        if mkdir:
            p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, format="png", dpi=_DPI, metadata=_PNG_METADATA)
    except OSError as exc:
        raise InputError(f"{p}: cannot write ({exc.strerror or exc})") from None
    return p


def log_yscale(ax, values: np.ndarray, symlog_linthresh: float | None = None) -> None:
    """Log y axis when every value drawn is > 0; else a symlog axis with
    ``symlog_linthresh`` when given (0 has no logarithm), else linear."""
    if values.size and (values > 0).all():
        ax.set_yscale("log")
    elif values.size and symlog_linthresh is not None:
        ax.set_yscale("symlog", linthresh=symlog_linthresh)


# --------------------------------------------------------------------------
# one run


def step_changes(times: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative sum of ``deltas`` after each distinct time (ties merged):
    ``(t, v)``, the distinct ``times`` (s) sorted and the sum of the
    ``deltas`` up to each; empty arrays for no time."""
    if times.size == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(times, kind="stable")
    t, dl = times[order], deltas[order]
    uniq, first = np.unique(t, return_index=True)
    summed = np.add.reduceat(dl, first)
    return uniq, np.cumsum(summed)


def usage_steps(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Number of busy resources over time.

    ``jobs``: table shaped like :func:`iosched.analysis.jobs.load_jobs`'s.
    Returns ``(t, n)``, two 1-D arrays of equal length k: from time t[i]
    (s) until t[i+1], n[i] resources are allocated to running jobs (each
    started job adds |allocation| at b_j and removes it at c_j; a job
    ending when another starts is counted once).  Empty arrays when no job
    started.  Raises :class:`~iosched.errors.InputError` as
    :func:`iosched.analysis.metrics.job_metrics` does.
    """
    pj = job_metrics(jobs)
    t = np.concatenate([pj["start"].to_numpy(float), pj["finish"].to_numpy(float)])
    d = np.concatenate([pj["nb_allocated"].to_numpy(float), -pj["nb_allocated"].to_numpy(float)])
    return step_changes(t, d)


def queue_steps(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Number of waiting jobs (submitted, not yet started) over time.

    ``jobs``: table shaped like :func:`iosched.analysis.jobs.load_jobs`'s.
    Returns ``(t, q)`` as :func:`usage_steps`: each started job is waiting
    on [s_j, b_j).  Rejected jobs are left out: Batsim's jobs.csv does not
    say when they were rejected.  Raises :class:`~iosched.errors.InputError`
    as :func:`iosched.analysis.metrics.job_metrics` does.
    """
    pj = job_metrics(jobs)
    n = len(pj)
    t = np.concatenate([pj["submission"].to_numpy(float), pj["start"].to_numpy(float)])
    d = np.concatenate([np.ones(n), -np.ones(n)])
    return step_changes(t, d)


#: above this many steps, :func:`plot_utilization` draws bin means
RESAMPLE_ABOVE = 2000
#: number of bins of a resampled utilization / queue plot
RESAMPLE_BINS = 400


def resample_steps(t: np.ndarray, n: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean of a step function over bins.

    :param t: step times (s), increasing, shape (k,); the value is ``n[i]``
        on ``[t[i], t[i+1])``, 0 before ``t[0]`` and ``n[-1]`` after ``t[-1]``.
    :param n: step values, shape (k,).
    :param edges: bin edges (s), increasing, shape (m + 1,).
    :returns: the exact mean of the function over each bin, shape (m,).
    """
    t = np.asarray(t, dtype=float)
    n = np.asarray(n, dtype=float)
    edges = np.asarray(edges, dtype=float)
    if t.size == 0:
        return np.zeros(max(edges.size - 1, 0))
    area = np.concatenate([[0.0], np.cumsum(n[:-1] * np.diff(t))])  # area up to t[i]

    def integral(x):
        i = np.searchsorted(t, x, side="right") - 1
        inside = i >= 0
        out = np.zeros_like(x)
        ii = i[inside]
        out[inside] = area[ii] + n[ii] * (x[inside] - t[ii])
        return out

    a = integral(edges)
    width = np.diff(edges)
    return np.divide(np.diff(a), width, out=np.zeros_like(width), where=width > 0)


def plot_utilization(jobs: pd.DataFrame, nb_resources: int, path: str | Path,
                     bins: int | None = None) -> Path:
    """PNG of busy resources and queue length over time.

    ``jobs``: table shaped like :func:`iosched.analysis.jobs.load_jobs`'s (times
    in s); ``nb_resources``: platform size (> 0), drawn as a dashed line
    and the top of the left axis; ``path``: the PNG to write; ``bins``:
    number of bins of the resampled curves (None: exact steps up to
    :data:`RESAMPLE_ABOVE` steps, else :data:`RESAMPLE_BINS` bins).
    Left axis: busy resources (step plot of :func:`usage_steps`); right
    axis: waiting jobs (:func:`queue_steps`); x: time in s, min, h or d
    (:func:`iosched.analysis.units.time_unit`). A long trace (many steps)
    would draw a solid block: it is drawn as the time-weighted mean of each
    bin (:func:`resample_steps`), said in the title.
    Returns the path written.  Raises :class:`~iosched.errors.InputError`
    for a bad table (see :func:`iosched.analysis.metrics.job_metrics`), a
    non-positive ``nb_resources`` or ``bins``, or an unwritable path.
    """
    if isinstance(nb_resources, bool) or not isinstance(nb_resources, (int, np.integer)) \
            or nb_resources <= 0:
        raise InputError(f"nb_resources: must be a positive integer, got {nb_resources!r}")
    if bins is not None and (isinstance(bins, bool) or int(bins) != bins or bins < 1):
        raise InputError(f"bins: must be a positive integer or None, got {bins!r}")
    tu, nu = usage_steps(jobs)
    tq, nq = queue_steps(jobs)
    lo = min([a[0] for a in (tu, tq) if a.size], default=0.0)
    hi = max([a[-1] for a in (tu, tq) if a.size], default=1.0)
    unit, factor = time_unit(hi)
    nbins = bins if bins is not None else (
        RESAMPLE_BINS if max(tu.size, tq.size) > RESAMPLE_ABOVE else None)
    fig = new_figure(10, 4.5)
    ax = fig.subplots()
    ax2 = ax.twinx()
    if nbins is not None and hi > lo:
        edges = np.linspace(lo, hi, int(nbins) + 1)
        x = edges / factor
        for a, (tt, vv), colour, lab, lw in ((ax, (tu, nu), "tab:blue", "busy resources", 1.2),
                                             (ax2, (tq, nq), "tab:orange", "waiting jobs", 1.0)):
            if tt.size:
                m = resample_steps(tt, vv, edges)
                a.stairs(m, x, color=colour, linewidth=lw, label=f"{lab} (bin mean)")
        width = (hi - lo) / int(nbins)
        how = f"; means over {int(nbins)} bins of {width / time_unit(width)[1]:.3g} {time_unit(width)[0]}"
    else:
        if tu.size:
            ax.step(tu / factor, nu, where="post", color="tab:blue", linewidth=1.2,
                    label="busy resources")
        if tq.size:
            ax2.step(tq / factor, nq, where="post", color="tab:orange", linewidth=1.0,
                     label="waiting jobs")
        how = ""
    ax.axhline(nb_resources, color="tab:blue", linestyle="--", linewidth=0.8,
               label=f"compute nodes = {int(nb_resources)}")
    ax.set_ylim(0, nb_resources * 1.05)
    ax2.set_ylim(0, max(1.0, float(nq.max()) if nq.size else 1.0) * 1.05)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("busy compute nodes", color="tab:blue")
    ax2.set_ylabel("waiting jobs", color="tab:orange")
    handles = ax.get_legend_handles_labels()
    handles2 = ax2.get_legend_handles_labels()
    ax.legend(handles[0] + handles2[0], handles[1] + handles2[1], loc="upper center",
              bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize="small", frameon=False)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax2.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"Resource usage and queue ({Path(source_of(jobs)).name}{how})", fontsize="medium")
    if not tu.size:
        ax.text(0.5, 0.5, "no job started", transform=ax.transAxes, ha="center")
    return save_png(fig, path)


def plot_gantt(jobs: pd.DataFrame, path: str | Path, max_jobs: int | None = None) -> Path:
    """PNG Gantt chart of the jobs' allocations, coloured by waiting time.

    ``jobs``: table shaped like :func:`iosched.analysis.jobs.load_jobs`'s (times
    in s); ``path``: the PNG to write; ``max_jobs``: draw only the first
    ``max_jobs`` started jobs in order of starting time (ties: input order),
    None for all (the whole run stays readable: rectangles without edges
    when there are many, colours by a meaningful field).  x: time in s,
    min, h or d (:func:`iosched.analysis.units.time_unit`); y: resource id.
    One rectangle per contiguous interval of each job's allocation, from
    b_j to c_j, spanning ids a..b as [a - 0.5, b + 0.5]; its colour is the
    job's waiting time b_j - s_j on a logarithmic scale (colour bar; waits
    under 1 s get the colour of 1 s); jobs reaching a final state other than
    COMPLETED_SUCCESSFULLY get a hatched rectangle; job ids are written in
    the rectangles wide enough for it (4 % of the time span) when at most 40
    jobs are drawn.  Rejected jobs have no allocation and are not drawn.
    Returns the path written.  Raises :class:`~iosched.errors.InputError`
    for a bad table (see :func:`iosched.analysis.metrics.job_metrics`), a
    ``max_jobs`` < 0, or an unwritable path.
    """
    if max_jobs is not None and (isinstance(max_jobs, bool) or int(max_jobs) != max_jobs
                                 or max_jobs < 0):
        raise InputError(f"max_jobs: must be a non-negative integer or None, got {max_jobs!r}")
    pj = job_metrics(jobs)
    order = np.argsort(pj["start"].to_numpy(float), kind="stable")
    pj = pj.iloc[order]
    if max_jobs is not None:
        pj = pj.iloc[: int(max_jobs)]
    where = source_of(jobs)
    states = jobs.loc[pj.index, "final_state"].astype(str).to_numpy()
    allocs = jobs.loc[pj.index, "allocated_resources"].to_numpy()
    waits = np.maximum((pj["start"] - pj["submission"]).to_numpy(float), 1.0)
    wmax = float(waits.max()) if waits.size else 1.0
    norm = LogNorm(vmin=1.0, vmax=max(wmax, 10.0))
    cmap = matplotlib.colormaps["viridis"]
    unit, factor = time_unit(float(pj["finish"].max()) if len(pj) else 0.0)
    fig = new_figure(10, 6)
    ax = fig.subplots()
    plain, hatched = [], []
    label = len(pj) <= 40
    edge = dict(edgecolor="black", linewidth=0.3) if len(pj) <= 300 else dict(edgecolor="none",
                                                                               linewidth=0)
    if len(pj):
        t0 = float(pj["start"].min()) / factor
        t1 = float(pj["finish"].max()) / factor
        span = t1 - t0 if t1 > t0 else 1.0
    top = 0
    for row, state, alloc, w in zip(pj.itertuples(index=False), states, allocs, waits):
        colour = cmap(norm(w))
        ps = parse_allocation(alloc, where, row.job_id)
        x, width = row.start / factor, row.runtime / factor
        for iv in ps.intervals():
            rect = Rectangle((x, iv.inf - 0.5), width, iv.sup - iv.inf + 1, facecolor=colour, **edge)
            (plain if state == COMPLETED_SUCCESSFULLY else hatched).append(rect)
            top = max(top, iv.sup)
            if label and width >= 0.04 * span:
                ax.text(x + width / 2, (iv.inf + iv.sup) / 2, str(row.job_id),
                        ha="center", va="center", fontsize=7, clip_on=True)
    if plain:
        ax.add_collection(PatchCollection(plain, match_original=True))
    if hatched:
        ax.add_collection(PatchCollection(hatched, match_original=True, hatch="//"))
    if len(pj):
        ax.set_xlim(t0 - 0.02 * span, t1 + 0.02 * span)
        ax.set_ylim(-0.5, top + 0.5)
        sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
        bar = fig.colorbar(sm, ax=ax, pad=0.01)
        ticks, labels = log_time_ticks(norm.vmin, norm.vmax)
        bar.ax.yaxis.set_major_locator(FixedLocator(ticks))
        bar.ax.yaxis.set_minor_locator(NullLocator())
        bar.ax.set_yticklabels(labels)
        bar.set_label("waiting time (log scale)")
    else:
        ax.text(0.5, 0.5, "no job started", transform=ax.transAxes, ha="center")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("resource id")
    shown = f", all {len(pj)} started jobs" if max_jobs is None else f", first {len(pj)} jobs"
    ax.set_title(f"Allocations ({Path(where).name}{shown}; hatched: not COMPLETED_SUCCESSFULLY)",
                 fontsize="medium")
    return save_png(fig, path)


# --------------------------------------------------------------------------
# campaigns


#: fewest points a box plot is drawn from; fewer are drawn as points
MIN_BOX_POINTS = 5

#: readable names of the runs table's metric columns
METRIC_LABELS = {
    "waiting_time_mean": "mean wait", "waiting_time_max": "max wait",
    "waiting_time_median": "median wait", "waiting_time_p95": "p95 wait",
    "turnaround_mean": "mean turnaround", "turnaround_max": "max turnaround",
    "slowdown_mean": "mean slowdown", "bounded_slowdown_mean": "mean bounded slowdown",
    "makespan": "makespan", "utilization": "utilization",
}


def ratio_groups(df: pd.DataFrame, baseline: str, metric: str) -> dict:
    """How :func:`plot_ratio_boxes` draws ``ratio_<metric>``: for each
    scheduler but the baseline, ``("box", values)`` when it has at least
    :data:`MIN_BOX_POINTS` finite values, else ``("points", values)``.

    :returns: {scheduler: (kind, 1-D float array)}, schedulers sorted.
    """
    out = {}
    for s in scheduler_labels(df):
        if s == baseline:
            continue
        v = df.loc[df["scheduler"] == s, f"ratio_{metric}"].to_numpy(float)
        v = v[np.isfinite(v)]
        out[s] = ("box" if v.size >= MIN_BOX_POINTS else "points", v)
    return out


def plot_ratio_boxes(df: pd.DataFrame, path, baseline: str,
                     metrics=("waiting_time_mean", "bounded_slowdown_mean", "utilization")) -> Path:
    """Ratios ``ratio_<metric>`` per scheduler other than the baseline (one
    panel per metric, one column per scheduler, one value per workload part
    and seed): a box plot where a scheduler has at least
    :data:`MIN_BOX_POINTS` values, else the values themselves as points (a
    box from 2 points says nothing a point does not).

    :param df: a table from :func:`~iosched.analysis.campaign.campaign_table` with ratio columns.
    :param baseline: the baseline's label (left out: its ratios are all 1).
    :returns: the PNG path. :raises InputError: missing ratio columns,
        unwritable path.
    """
    missing = [m for m in metrics if f"ratio_{m}" not in df.columns]
    if missing:
        raise InputError(f"ratio box plot: no ratio column for {', '.join(missing)} (no baseline?)")
    scheds = [s for s in scheduler_labels(df) if s != baseline]
    fig = new_figure(4.0 * len(metrics), 4.0)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, m in zip(axes, metrics):
        positions = list(range(1, len(scheds) + 1))
        groups = ratio_groups(df, baseline, m)
        boxes = []
        for p, s in zip(positions, scheds):
            kind, v = groups[s]
            if kind == "box":
                boxes.append((p, v))
            elif v.size:
                ax.plot(np.full(v.size, p), v, linestyle="none", marker="o", color="tab:blue",
                        markersize=5)
        if boxes:
            ax.boxplot([v for _, v in boxes], positions=[p for p, _ in boxes], widths=0.6,
                       showmeans=True)
        ax.set_xticks(positions, scheds, rotation=30, ha="right")
        ax.set_xlim(0.4, len(scheds) + 0.6)
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax.set_title(f"{METRIC_LABELS.get(m, m)} / {baseline}", fontsize="medium")
        ax.set_ylabel(f"ratio to {baseline}")
    return save_png(fig, path, mkdir=True)


def plot_paired_differences(board: pd.DataFrame, path, metric: str, baseline: str,
                            label: str | None = None, unit: tuple[str, float] = ("", 1.0),
                            columns: int = 3) -> Path:
    """The rankings figure of a leaderboard: per (regime, machine) panel, one
    dot per scheduler (in rank order, best on top) at its mean paired
    difference to the baseline ``<metric>_diff`` with its 95 % interval
    ``<metric>_diff_ci95`` as a bar (none when NaN; "no value" written
    where the difference is NaN), and a dashed line at 0 (the baseline).

    :param board: a table of :func:`iosched.analysis.leaderboard.leaderboard`.
    :param label: the metric's readable name (default *metric*).
    :param unit: ``(name, divisor)`` of the x axis ("" : no unit).
    :param columns: panels per row of the figure.
    :returns: the PNG path. :raises InputError: no ``<metric>_diff``
        column, unwritable path.
    """
    for c in (f"{metric}_diff", f"{metric}_diff_ci95", "regime", "machine", "rank", "scheduler"):
        if c not in board.columns:
            raise InputError(f"rankings figure: no column {c!r} in the leaderboard")
    groups = list(board.groupby(["regime", "machine"], sort=True))
    ncol = max(1, min(int(columns), len(groups)))
    nrow = max(1, -(-len(groups) // ncol))
    height = max(2.5, 0.35 * max((len(g) for _, g in groups), default=1) + 1.5)
    fig = new_figure(4.5 * ncol, height * nrow)
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    name, factor = unit
    for ax, ((regime, machine), g) in zip(axes, groups):
        g = g.sort_values("rank", kind="mergesort")
        y = np.arange(len(g))[::-1]
        x = g[f"{metric}_diff"].to_numpy(float) / factor
        err = g[f"{metric}_diff_ci95"].to_numpy(float) / factor
        ok = np.isfinite(x)
        ax.errorbar(x[ok], y[ok], xerr=np.where(np.isfinite(err[ok]), err[ok], 0.0),
                    fmt="o", color="tab:blue", ecolor="tab:blue", capsize=3, markersize=5)
        ax.axvline(0.0, color="grey", linestyle="--", linewidth=0.8)
        for yy in y[~ok]:
            ax.text(0.02, yy, "no value", transform=ax.get_yaxis_transform(), va="center",
                    fontsize="small", color="grey")
        ax.set_yticks(y, [f"{r}. {s}" for r, s in zip(g["rank"], g["scheduler"])])
        ax.set_ylim(-0.6, len(g) - 0.4)
        ax.set_title(f"{regime} on {machine}", fontsize="medium")
        ax.set_xlabel(f"{label or metric} − {baseline}" + (f" ({name})" if name else ""))
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    return save_png(fig, path, mkdir=True)


#: an ECDF gets a log x axis when its positive values span more than this ratio
LOG_SPAN = 100.0
_TIME_METRICS = ("waiting_time", "turnaround", "runtime")


def plot_ecdf(jobs: pd.DataFrame, path, metric: str = "waiting_time") -> Path:
    """ECDF of a per-job metric per scheduler, jobs of every finished run pooled.

    When the values span more than :data:`LOG_SPAN` (e.g. waits from seconds
    to days), the x axis is logarithmic, with ticks in s, min, h, d for
    durations; values below the axis's lower end (1 s for durations, else
    the smallest positive value) are drawn at that end, as the label says.
    Durations on a linear axis are shown in the unit of their largest value.

    :param jobs: a table from :func:`~iosched.analysis.campaign.job_table`.
    :returns: the PNG path. :raises InputError: unknown metric column.
    """
    if metric not in jobs.columns:
        raise InputError(f"ECDF: no column {metric!r} in the job table")
    is_time = metric in _TIME_METRICS
    all_v = jobs[metric].to_numpy(float)
    all_v = all_v[np.isfinite(all_v)]
    pos = all_v[all_v > 0]
    lo = 1.0 if is_time else (float(pos.min()) if pos.size else 1.0)
    log = bool(pos.size) and float(pos.max()) / max(lo, float(pos.min())) > LOG_SPAN
    unit, factor = time_unit(all_v) if (is_time and not log) else ("s", 1.0)
    fig = new_figure(7, 4.5)
    ax = fig.subplots()
    for s in scheduler_labels(jobs):
        v = np.sort(jobs.loc[jobs["scheduler"] == s, metric].to_numpy(float))
        v = v[np.isfinite(v)]
        if v.size:
            x = np.maximum(v, lo) if log else v / factor
            ax.step(x, np.arange(1, v.size + 1) / v.size, where="post", label=f"{s} ({v.size} jobs)")
    name = metric.replace("_", " ")
    if log:
        ax.set_xscale("log")
        if is_time:
            ticks, labels = log_time_ticks(lo, float(pos.max()) * 1.5)
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xticklabels(labels)
        ax.set_xlabel(f"{name} (log scale; values below {lo:g}{' s' if is_time else ''} drawn at it)")
    else:
        ax.set_xlabel(f"{name} ({unit})" if is_time else name)
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    ax.set_title(f"ECDF of {name}")
    return save_png(fig, path, mkdir=True)


def tail_values(jobs: pd.DataFrame, metric: str = "waiting_time", top: int = 50,
                schedulers=None) -> dict:
    """The *top* highest finite values of a per-job metric per scheduler, in
    decreasing order.

    :param jobs: a table from :func:`~iosched.analysis.campaign.job_table`.
    :param schedulers: the schedulers, in order (default: every one of
        *jobs*, sorted).
    :returns: {scheduler: numpy array} for the schedulers that have values.
    """
    out = {}
    for s in scheduler_labels(jobs) if schedulers is None else schedulers:
        v = jobs.loc[jobs["scheduler"] == s, metric].to_numpy(float)
        v = np.sort(v[np.isfinite(v)])[::-1][:top]
        if v.size:
            out[s] = v
    return out


def tail_figure(tails: dict, size: tuple, styles: dict,
                symlog_linthresh: float | None = None) -> tuple:
    """A tail plot: each series of *tails* (:func:`tail_values`) against its
    rank, drawn with ``ax.plot(..., **styles[key])`` (give each a
    ``label``); y axis as :func:`log_yscale`; x label ``rank``; a legend
    when there is a series.

    :param size: (width, height) in inches.
    :returns: ``(figure, axes)``, to label and :func:`save_png`.
    """
    fig = new_figure(*size)
    ax = fig.subplots()
    for key, v in tails.items():
        ax.plot(np.arange(1, v.size + 1), v, **styles[key])
    log_yscale(ax, np.concatenate(list(tails.values())) if tails else np.array([]),
               symlog_linthresh)
    ax.set_xlabel("rank")
    if tails:
        ax.legend(fontsize="small")
    return fig, ax


def plot_tail(jobs: pd.DataFrame, path, metric: str = "waiting_time", top: int = 50) -> Path:
    """The *top* highest values of a per-job metric per scheduler, in
    decreasing order against their rank (y in log scale when all are > 0).

    :param jobs: a table from :func:`~iosched.analysis.campaign.job_table`.
    :returns: the PNG path. :raises InputError: unknown column, top < 1.
    """
    if metric not in jobs.columns:
        raise InputError(f"tail plot: no column {metric!r} in the job table")
    if top < 1:
        raise InputError(f"tail plot: top must be >= 1, got {top}")
    tails = tail_values(jobs, metric, top)
    fig, ax = tail_figure(tails, (7, 4.5),
                          {s: {"marker": ".", "linewidth": 1, "label": s} for s in tails})
    name = metric.replace("_", " ")
    values = np.concatenate(list(tails.values())) if tails else np.array([])
    if metric in _TIME_METRICS and ax.get_yscale() == "log" and values.size:
        ticks, labels = log_time_ticks(float(values.min()) / 1.5, float(values.max()) * 1.5)
        if len(ticks) >= 2:
            ax.yaxis.set_major_locator(FixedLocator(ticks))
            ax.yaxis.set_minor_locator(NullLocator())
            ax.set_yticklabels(labels)
        ax.set_ylabel(f"{name} (log scale)")
    else:
        ax.set_ylabel(f"{name} (s)" if metric in _TIME_METRICS else name)
    ax.set_title(f"Tail: the {top} highest {name} values per scheduler")
    return save_png(fig, path, mkdir=True)
