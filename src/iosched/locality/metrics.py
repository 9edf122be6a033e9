"""Metrics of the locality paper, on the evaluated jobs (role 1).

Gonthier et al. (RR-9497), Section 3 and the artifact's ``print_csv``:

* stretch (:func:`gonthier_stretch`) = Flow / ReferenceFlow, Flow =
  completion - submission, ReferenceFlow = duration + size / bandwidth;
* bounded stretch: the same with a denominator of at least 300 s;
* reuses: evaluated jobs that made no transfer or waited for another job's
  transfer (``nb_data_reuse``);
* total time waiting for a load, total transfer time (s), mean queue time
  (start - submission, s), makespan (latest completion, s).
"""

from __future__ import annotations

import csv
from pathlib import Path

from iosched.batsim.job_metrics import turnaround

__all__ = ["summarize", "COLUMNS", "write_jobs", "gonthier_stretch", "BOUNDED_STRETCH_MIN_S"]

#: Smallest denominator (s) of the bounded stretch (the artifact's ``print_csv``).
BOUNDED_STRETCH_MIN_S = 300.0

#: Columns of a summary row.
COLUMNS = ("policy", "jobs", "mean_stretch", "max_stretch", "mean_bounded_stretch",
           "max_bounded_stretch", "reuses", "total_waiting_for_load_s", "total_transfer_s",
           "mean_queue_s", "makespan_s")


def gonthier_stretch(j, bandwidth: float = 0.1, minimum: float = 0.0) -> float:
    """The locality paper's stretch of a finished job: its flow over the
    flow it would have on an empty cluster.

    Gonthier, Marchal, Thibault, Larsson, Nettelblad, "Locality-aware batch
    scheduling of I/O intensive workloads", Inria RR-9497 (2023), Section 3
    ("Framework"): Flow(J) = CompletionTime(J) - SubTime(J),
    ReferenceFlow(J) = Duration(J) + Size(File(J)) / Bandwidth,
    stretch(J) = Flow(J) / ReferenceFlow(J).  With ``minimum`` > 0 the
    reference flow is at least ``minimum`` s: the bounded stretch of the
    artifact's ``print_csv`` (:data:`BOUNDED_STRETCH_MIN_S`).  Not the
    glossary's slowdown (F / D), whose denominator has no load time.

    :param j: a job with ``subtime``, ``end``, ``delay`` (duration, s) and
        ``size`` (its input file, GB).
    :param bandwidth: the load bandwidth (GB/s), > 0.
    :param minimum: the smallest reference flow (s).
    :returns: the stretch (a float, >= 1 on an empty cluster).
    """
    ref = j.delay + float(j.size) / bandwidth
    return turnaround(j.subtime, j.end) / max(ref, minimum)


def summarize(jobs, policy: str = "", bandwidth: float = 0.1) -> dict:
    """Summary row (:data:`COLUMNS`) over the role-1 jobs of ``jobs``
    (objects with ``role``, ``subtime``, ``start``, ``end``, ``delay``,
    ``size``, ``transfer``, ``waiting``).

    :raises ValueError: no evaluated job."""
    ev = [j for j in jobs if j.role == 1]
    if not ev:
        raise ValueError("no evaluated job (role 1)")
    s = [gonthier_stretch(j, bandwidth) for j in ev]
    b = [gonthier_stretch(j, bandwidth, BOUNDED_STRETCH_MIN_S) for j in ev]
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
                        f"{gonthier_stretch(j, bandwidth):.6f}"])


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
