"""Why the I/O model matters under the per-node cap (issue 30): per-run
I/O node use and wait decomposition of the list vs pack runs, read from
their phase jobs (``out_jobs.csv``) and workloads.

:func:`write_diagnostics` writes ``io_node.md`` / ``io_node.csv`` and
``waits.md`` / ``waits.csv``: per (family, alpha, scheduler label, I/O
model) the means over seeds of :func:`io_node_use` and :func:`waits`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["busy_time", "io_node_use", "waits", "write_diagnostics"]

KEYS = ["family", "alpha", "scheduler", "io_model"]

IO_NODE_COLS = {
    "busy_frac": "I/O node busy / makespan",
    "bw_while_busy": "bandwidth while busy / B",
    "serial_over_makespan": "sum v / min(Q b, B) over makespan",
    "volume_over_B_makespan": "volume / (B x makespan)",
}
WAIT_COLS = {
    "qwait_h": "queue wait (h)",
    "qwait_max_h": "max queue wait (h)",
    "io_excess_h": "I/O excess (h)",
    "gap_h": "gaps (h)",
    "lost_h": "lost (h)",
    "qwait_hi_x_h": "queue wait, x >= median (h)",
    "qwait_lo_x_h": "queue wait, x < median (h)",
}


def busy_time(starts, ends) -> float:
    """Length (s) of the union of the intervals ``[starts[i], ends[i]]``
    (s, equal-length sequences); 0 for none."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(zip(starts, ends)):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return float(total)


def io_node_use(phases: pd.DataFrame, jobs: dict, B: float) -> dict:
    """I/O node use of one run (all dimensionless):

    * ``busy_frac``: union of the I/O phases (:func:`busy_time`) over the
      makespan (the last phase end, the batch released at 0);
    * ``bw_while_busy``: the I/O volume over that busy time, over ``B``;
    * ``serial_over_makespan``: ``sum v_i / rate_i(B)`` over the I/O phases
      (the time an exclusive I/O node needs at least) over the makespan;
    * ``volume_over_B_makespan``: the I/O volume over ``B x makespan``.

    ``phases`` is a :func:`iosched.listpack.metrics.read_phases` table,
    ``jobs`` maps its job ids to :class:`iosched.listpack.model.PeriodicJob`,
    ``B`` is the I/O node bandwidth (bytes/s). A run without I/O phase has
    zeros.
    """
    io = phases[phases["kind"] == "o"]
    makespan = float(phases["end"].max())
    busy = busy_time(io["start"], io["end"])
    vol = float(sum(jobs[j].v for j in io["job"]))
    serial = float(sum(jobs[j].io_time(B) for j in io["job"]))
    return {"busy_frac": busy / makespan,
            "bw_while_busy": vol / busy / B if busy > 0 else 0.0,
            "serial_over_makespan": serial / makespan,
            "volume_over_B_makespan": vol / B / makespan}


def waits(phases: pd.DataFrame, jobs: dict, B: float) -> dict:
    """Where the jobs of one run lose time (hours, means over its jobs):

    * ``qwait_h`` / ``qwait_max_h``: a job's start (its first phase; the
      batch is released at 0), mean and max;
    * ``io_excess_h``: its I/O phases' time minus ``n v / rate(B)`` (time
      lost to I/O contention: sharing, or nothing under exclusivity);
    * ``gap_h``: its run time (last end minus first start) minus its phases'
      time (waits between phases, e.g. for the exclusive I/O node);
    * ``lost_h``: its run time minus ``T_i(B)`` (Equation (1) of Jeannot,
      Pallez & Vidal, IJHPCA 2023), about ``io_excess_h + gap_h``;
    * ``qwait_hi_x_h`` / ``qwait_lo_x_h``: mean start of the jobs whose I/O
      share ``x`` is at least / below the run's median ``x``.

    Arguments as in :func:`io_node_use`.
    """
    q, excess, gap, lost, xs = [], [], [], [], []
    for jid, g in phases.groupby("job", sort=True):
        job = jobs[jid]
        start, end = float(g["start"].min()), float(g["end"].max())
        io = g[g["kind"] == "o"]
        q.append(start)
        excess.append(float((io["end"] - io["start"]).sum()) - len(io) * job.io_time(B))
        gap.append((end - start) - float((g["end"] - g["start"]).sum()))
        lost.append((end - start) - job.time(B))
        xs.append(job.x)
    q, xs = np.array(q), np.array(xs)
    hi = xs >= np.median(xs)
    h = 3600.0
    return {"qwait_h": q.mean() / h, "qwait_max_h": q.max() / h,
            "io_excess_h": float(np.mean(excess)) / h, "gap_h": float(np.mean(gap)) / h,
            "lost_h": float(np.mean(lost)) / h,
            "qwait_hi_x_h": q[hi].mean() / h if hi.any() else float("nan"),
            "qwait_lo_x_h": q[~hi].mean() / h if (~hi).any() else float("nan")}


def _table(df: pd.DataFrame, cols: dict, title: str, note: str) -> tuple:
    mean = df.groupby(KEYS)[list(cols)].mean().reset_index()
    n = df.groupby(KEYS)["seed"].count().reset_index(drop=True)
    lines = [f"# {title}", "", note, ""]
    for fam, sub in mean.groupby("family"):
        lines += [f"## {fam}", "", "| alpha | scheduler | I/O model | n | " + " | ".join(cols.values()) + " |",
                  "|---|---|---|---|" + "---|" * len(cols)]
        for i, r in sub.iterrows():
            lines.append(f"| {r['alpha']} | {r['scheduler']} | {r['io_model']} | {n[i]} | "
                         + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")
        lines.append("")
    return lines, mean.assign(n=n)


def write_diagnostics(df: pd.DataFrame, data: dict, out: Path) -> None:
    """``io_node.md`` / ``.csv`` and ``waits.md`` / ``.csv`` in ``out``: the
    means over seeds of :func:`io_node_use` and :func:`waits` per (family,
    alpha, scheduler label, I/O model). ``df`` is the runs table of
    :func:`iosched.experiments.listpack.reproduction.collect` (columns
    ``run``, ``seed`` and :data:`KEYS`), ``data`` its ``{run id: (phases,
    jobs, record)}``; the CSVs have the same means (``n``: seeds) at 6
    significant digits."""
    rows = []
    for r in df.itertuples(index=False):
        ph, jobs, rec = data[r.run]
        B = rec["bandwidth"]
        rows.append({**{k: getattr(r, k) for k in KEYS}, "seed": r.seed,
                     **io_node_use(ph, jobs, B), **waits(ph, jobs, B)})
    per_run = pd.DataFrame(rows).sort_values(KEYS + ["seed"], kind="stable").reset_index(drop=True)
    for name, cols, title, note in (
            ("io_node", IO_NODE_COLS, "I/O node use per family, alpha and scheduler",
             "mean over seeds (n); busy: the union of the I/O phases; makespan: the last phase end"),
            ("waits", WAIT_COLS, "Where jobs lose time per family, alpha and scheduler",
             "mean over seeds (n) of the per-run means over jobs, hours; lost = run time - T_i(B), "
             "about I/O excess (I/O phases - n v / min(Q b, B)) + gaps (waits between phases)")):
        lines, mean = _table(per_run, cols, title, note)
        (out / f"{name}.md").write_text("\n".join(lines) + "\n")
        mean[KEYS + ["n"] + list(cols)].to_csv(out / f"{name}.csv", index=False, float_format="%.6g")
