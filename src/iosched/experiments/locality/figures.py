"""Figures of the locality reproduction (Gonthier et al., RR-9497, Figs. 3 and 5).

* :class:`UsageTrace` records, at every event second of
  :func:`iosched.experiments.locality.replay.replay`, the cores running, the cores
  requested by queued jobs, the cores loading a file (or waiting for a
  load), and the same for the evaluated jobs (paper Fig. 3);
* :func:`usage_figure` draws it: running cores below the axis' middle line,
  queued cores above it (as the paper: the y axis is running cores, then
  ``total + queued``);
* :func:`ratio_figure` draws each evaluated job's stretch ratio
  ``stretch(fcfs) / stretch(policy)`` against its submission time, marker
  area proportional to its duration (paper Fig. 5; above 1 = the policy
  improves the job's stretch).
"""

from __future__ import annotations

import csv
import heapq
import json
from pathlib import Path

import click
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["UsageTrace", "usage_figure", "ratio_figure", "read_usage"]


class UsageTrace:
    """Callable for ``replay(..., trace=UsageTrace())``; rows ``(t, running,
    queued, loading, running_eval, queued_eval)`` in cores, one per event
    second (consecutive identical rows are merged)."""

    def __init__(self):
        self.rows: list = []
        self._seen = 0
        self._ev_ends: list = []   # heap of (end, cores) of started evaluated jobs
        self._run_ev = 0

    def __call__(self, t, cluster, queue, loads, started):
        for j in started[self._seen:]:
            if j.role == 1:
                heapq.heappush(self._ev_ends, (j.end, j.cores))
                self._run_ev += j.cores
        self._seen = len(started)
        while self._ev_ends and self._ev_ends[0][0] <= t:
            self._run_ev -= heapq.heappop(self._ev_ends)[1]
        queued = sum(j.cores for j in queue)
        queued_ev = sum(j.cores for j in queue if j.role == 1)
        loading = sum(c for _, c, _ in loads)
        row = (t, cluster.busy_cores, queued, loading, self._run_ev, queued_ev)
        if not self.rows or self.rows[-1][1:] != row[1:]:
            self.rows.append(row)

    def write(self, path) -> None:
        """CSV ``t,running,queued,loading,running_eval,queued_eval``."""
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t", "running", "queued", "loading", "running_eval", "queued_eval"])
            w.writerows(self.rows)


def read_usage(path) -> list:
    """Rows of a usage CSV as tuples of ints."""
    with open(path) as f:
        r = csv.reader(f)
        next(r)
        return [tuple(int(x) for x in row) for row in r]


def usage_figure(rows, total: int, window: tuple, title: str, out) -> None:
    """Fig. 3: cores running (lower half), ``total + queued`` (upper half),
    cores loading, evaluated jobs' cores; ``window`` = (first, last
    submission of the evaluated jobs) drawn as vertical lines; times in
    hours from the first row."""
    t0 = rows[0][0]
    h = [(r[0] - t0) / 3600 for r in rows]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    ax.step(h, [r[1] for r in rows], where="post", color="tab:blue", lw=0.8, label="cores running (all jobs)")
    ax.step(h, [total + r[2] for r in rows], where="post", color="tab:blue", lw=0.8, ls="--",
            label="total + cores queued (all jobs)")
    ax.step(h, [r[4] for r in rows], where="post", color="tab:red", lw=0.8, label="cores running (evaluated)")
    ax.step(h, [total + r[5] for r in rows], where="post", color="tab:red", lw=0.8, ls="--",
            label="total + cores queued (evaluated)")
    ax.step(h, [r[3] for r in rows], where="post", color="gray", lw=0.8, label="cores loading a file")
    ax.axhline(total, color="black", lw=0.6)
    for w in window:
        ax.axvline((w - t0) / 3600, color="orange", ls=":", lw=1)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("cores")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def _stretches(path) -> dict:
    with open(path) as f:
        return {r["id"]: (float(r["stretch"]), int(r["subtime"]), float(r["end"]) - float(r["start"]))
                for r in csv.DictReader(f)}


def ratio_figure(fcfs_csv, policy_csv, policy: str, out) -> dict:
    """Fig. 5 for one policy; returns ``{"better": n, "worse": n, "equal": n}``
    (jobs whose stretch ratio is above, below, equal to 1)."""
    a, b = _stretches(fcfs_csv), _stretches(policy_csv)
    ids = sorted(set(a) & set(b), key=lambda i: a[i][1])
    ratio = [a[i][0] / b[i][0] for i in ids]
    t0 = min(a[i][1] for i in ids)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.scatter([(a[i][1] - t0) / 3600 for i in ids], ratio,
               s=[max(2.0, a[i][2] / 600) for i in ids], alpha=0.4, edgecolors="none")
    ax.axhline(1, color="black", ls=":", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("submission time (h from the first evaluated job)")
    ax.set_ylabel(f"stretch(fcfs) / stretch({policy})")
    ax.set_title(f"Per-job stretch ratio, {policy} vs fcfs (above 1: {policy} is better)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return {"better": sum(r > 1 for r in ratio), "worse": sum(r < 1 for r in ratio),
            "equal": sum(r == 1 for r in ratio)}


@click.command(name="figures")
@click.option("--dir", "folder", default="results/locality")
@click.option("--total", type=int, default=9720, help="cores of the cluster")
def repro_command(folder, total):
    """Fig. 5 for every jobs_<policy>.csv of --dir beside jobs_fcfs.csv (and
    jobs_<p>-bf.csv against jobs_fcfs-bf.csv), Fig. 3 for every
    usage_<policy>.csv; writes ratios.json (jobs better / worse / equal
    than with the reference)."""
    d = Path(folder)
    counts = {}
    for f in sorted(d.glob("jobs_*.csv")):
        pol = f.stem[len("jobs_"):]
        ref = "fcfs-bf" if pol.endswith("-bf") else "fcfs"
        if pol == ref or not (d / f"jobs_{ref}.csv").exists():
            continue
        counts[pol] = ratio_figure(d / f"jobs_{ref}.csv", f, pol, d / f"fig5_ratio_{pol}.png")
        counts[pol]["reference"] = ref
    for f in sorted(d.glob("usage_*.csv")):
        pol = f.stem[len("usage_"):]
        rows = read_usage(f)
        win = json.loads((d / "evaluated_window.json").read_text()) if (d / "evaluated_window.json").exists() else []
        usage_figure(rows, total, tuple(win), f"Cluster usage, {pol}", d / f"fig3_usage_{pol}.png")
    (d / "ratios.json").write_text(json.dumps(counts, indent=1, sort_keys=True))
