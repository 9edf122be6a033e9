"""Metrics of the locality paper, on the evaluated jobs (role 1).

Gonthier et al. (RR-9497), Section 3 and the artifact's ``print_csv``:

* stretch = (completion - submission) / (duration + size / bandwidth);
* bounded stretch: the same with a denominator of at least 300 s;
* reuses: evaluated jobs that made no transfer or waited for another job's
  transfer (``nb_data_reuse``);
* total time waiting for a load, total transfer time (s), mean queue time
  (start - submission, s), makespan (latest completion, s).
"""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["summarize", "COLUMNS", "write_jobs"]

#: Columns of a summary row.
COLUMNS = ("policy", "jobs", "mean_stretch", "max_stretch", "mean_bounded_stretch",
           "max_bounded_stretch", "reuses", "total_waiting_for_load_s", "total_transfer_s",
           "mean_queue_s", "makespan_s")


def stretch(j, bandwidth: float = 0.1, minimum: float = 0.0) -> float:
    """Stretch of a finished job: ``(end - subtime) / max(minimum, delay +
    size / bandwidth)`` (size GB, bandwidth GB/s, times s)."""
    ref = j.delay + float(j.size) / bandwidth
    return (j.end - j.subtime) / max(ref, minimum)


def summarize(jobs, policy: str = "", bandwidth: float = 0.1) -> dict:
    """Summary row (:data:`COLUMNS`) over the role-1 jobs of ``jobs``
    (objects with ``role``, ``subtime``, ``start``, ``end``, ``delay``,
    ``size``, ``transfer``, ``waiting``).

    :raises ValueError: no evaluated job."""
    ev = [j for j in jobs if j.role == 1]
    if not ev:
        raise ValueError("no evaluated job (role 1)")
    s = [stretch(j, bandwidth) for j in ev]
    b = [stretch(j, bandwidth, 300.0) for j in ev]
    n = len(ev)
    return {"policy": policy, "jobs": n, "mean_stretch": sum(s) / n, "max_stretch": max(s),
            "mean_bounded_stretch": sum(b) / n, "max_bounded_stretch": max(b),
            "reuses": sum(1 for j in ev if j.transfer == 0 or j.waiting != 0),
            "total_waiting_for_load_s": sum(j.waiting for j in ev),
            "total_transfer_s": sum(j.transfer for j in ev),
            "mean_queue_s": sum(j.start - j.subtime for j in ev) / n,
            "makespan_s": max(j.end for j in ev)}


def write_jobs(jobs, path, bandwidth: float = 0.1) -> None:
    """Per-job CSV of the evaluated jobs: id, subtime, start, end, cores,
    node, transfer, waiting, stretch."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "subtime", "start", "end", "cores", "node", "transfer", "waiting", "stretch"])
        for j in sorted((j for j in jobs if j.role == 1), key=lambda j: int(j.id) if j.id.isdigit() else j.id):
            w.writerow([j.id, j.subtime, j.start, j.end, j.cores, j.node.index if j.node else "", j.transfer, j.waiting,
                        f"{stretch(j, bandwidth):.6f}"])


def write_summary(rows, path) -> None:
    """CSV and Markdown tables of summary rows (``path`` without suffix)."""
    path = Path(path)
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[k]:.4f}" if isinstance(r[k], float) else str(r[k])
                                       for k in COLUMNS) + " |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
