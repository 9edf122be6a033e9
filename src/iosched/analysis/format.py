"""Text presentation of metrics: rounding for JSON, the plain-text table of
``iosched metrics`` and Markdown tables (reports, the burst-buffer
reproduction).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from iosched.analysis.metrics import JOB_METRICS, STATISTICS
from iosched.analysis.units import format_duration, time_unit

__all__ = ["rounded", "format_table", "markdown_table"]


def rounded(value: Any, ndigits: int = 6) -> Any:
    """Copy of ``value`` with floats rounded and non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): rounded(v, ndigits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, ndigits) for v in value]
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


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def format_table(metrics: dict) -> str:
    """Plain-text table of a :func:`~iosched.analysis.metrics.compute_metrics` dict.

    Rows waiting time and turnaround (in the unit of their largest value:
    s, min, h or d, :func:`iosched.analysis.units.time_unit`), slowdown,
    bounded slowdown; columns mean, median, p95, max (3 decimals, "-" when
    undefined); then utilization, makespan (with its unit), busy
    node-hours, nb_resources (and its
    source), the number of jobs (and of burst-buffer runs merged into them,
    when any), and the number of jobs per final state.  Returns the table as
    one string ending with a newline.  Raises KeyError when ``metrics``
    lacks one of the keys above.
    """
    labels = {"waiting_time": "waiting time", "turnaround": "turnaround",
              "slowdown": "slowdown",
              "bounded_slowdown": f"bounded slowdown (tau={metrics['tau']:g} s)"}
    rows = [["metric", *STATISTICS]]
    for name in JOB_METRICS:
        values = [metrics[name][k] for k in STATISTICS]
        label = labels[name]
        if name in ("waiting_time", "turnaround"):
            unit, factor = time_unit([v for v in values if v is not None])
            values = [None if v is None else v / factor for v in values]
            label = f"{label} ({unit})"
        rows.append([label, *(_fmt(v) for v in values)])
    w0 = max(len(r[0]) for r in rows)
    wn = max(len(c) for r in rows for c in r[1:])
    lines = []
    for r in rows:
        lines.append(r[0].ljust(w0) + "".join("  " + c.rjust(wn) for c in r[1:]))
    lines.append("")
    util = metrics["utilization"]
    extra = [
        ("utilization", "-" if util is None else f"{util:.4f}"),
        ("makespan", format_duration(metrics["makespan"], 4)),
        ("busy node-hours", "-" if metrics["busy_node_seconds"] is None
         else f"{metrics['busy_node_seconds'] / 3600.0:.1f}"),
        ("nb_resources", f"{_fmt(metrics['nb_resources'])} ({metrics['nb_resources_source']})"),
        ("jobs", f"{metrics['nb_jobs']} ({metrics['nb_jobs_started']} started)"),
    ]
    if metrics.get("nb_runs_merged"):
        extra.append(("bb runs merged into jobs", str(metrics["nb_runs_merged"])))
    if metrics.get("slowdown_nb_undefined"):
        extra.append(("slowdown undefined (D=0)", str(metrics["slowdown_nb_undefined"])))
    extra += [(f"  {state}", str(n)) for state, n in sorted(metrics["final_states"].items())]
    wk = max(len(k) for k, _ in extra)
    lines += [f"{k.ljust(wk)}  {v}" for k, v in extra]
    return "\n".join(lines) + "\n"


def markdown_table(header: list, rows: list) -> list[str]:
    """A GitHub-flavoured Markdown table: the header line, the ``---``
    separator and one line per row (cells as ``str``, ``|`` escaped).
    Returns the lines, without newlines."""
    esc = [[str(c).replace("|", "\\|") for c in r] for r in [header, *rows]]
    return (["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---" for _ in header) + "|"]
            + ["| " + " | ".join(r) + " |" for r in esc[1:]])
