"""Text presentation of metrics: rounding for JSON, the plain-text table of
``iosched metrics`` and Markdown tables (reports, the burst-buffer
reproduction).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from iosched.analysis.metrics import JOB_METRICS, STATISTICS

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

    Rows waiting_time (s), turnaround (s), slowdown, bounded_slowdown;
    columns mean, median, p95, max (3 decimals, "-" when undefined); then
    utilization, makespan (s), busy node-seconds, nb_resources (and its
    source), the number of jobs (and of burst-buffer runs merged into them,
    when any), and the number of jobs per final state.  Returns the table as
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
