"""A workload restricted to some of its jobs: the one way every splitter
(campaign time windows, the burst-buffer paper's three-week parts) builds a
part, so that a part keeps exactly the profiles its jobs use and the
workload's other top-level fields."""

from __future__ import annotations

__all__ = ["workload_subset"]


def workload_subset(workload: dict, jobs: list, **fields) -> dict:
    """A Batsim workload dict holding ``jobs`` (already copied / shifted by the
    caller) and the profiles of ``workload`` they use; the other top-level
    fields are copied, then ``fields`` override them (e.g. ``description``).

    :param workload: a Batsim workload dict (``jobs``, ``profiles``, ...).
    :param jobs: job dicts (each with a ``profile`` name of ``workload``).
    :returns: a new dict; the job and profile objects are shared, not copied.
    """
    used = {j["profile"] for j in jobs}
    out = {k: v for k, v in workload.items() if k not in ("jobs", "profiles")}
    out["jobs"] = jobs
    out["profiles"] = {name: p for name, p in workload["profiles"].items() if name in used}
    out.update(fields)
    return out
