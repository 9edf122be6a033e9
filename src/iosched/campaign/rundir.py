"""A campaign's run folder: its marker files (``done.json``,
``failed.json``), its state (:func:`run_status`) and its metrics
(:func:`run_metrics`, :func:`save_run_metrics`)."""

from __future__ import annotations

import json
from pathlib import Path

from iosched.campaign.files import write_if_changed
from iosched.errors import InputError
from iosched.analysis.metrics_file import dir_metrics, metrics_json

__all__ = [
    "DONE",
    "FAILED",
    "METRICS",
    "OUT_PREFIX",
    "run_status",
    "failure_reason",
    "run_metrics",
    "save_run_metrics",
]

#: Marker of a finished run (written last, atomically).
DONE = "done.json"
#: Marker of a failed run (holds the one-line reason).
FAILED = "failed.json"
#: Metrics of a finished run (also in done.json).
METRICS = "metrics.json"
#: Export prefix of the engine's outputs in a run folder (``out_jobs.csv`` ...).
OUT_PREFIX = "out"


def run_status(run_dir) -> str:
    """State of a run folder: ``"done"`` (valid done.json), ``"failed"``
    (failed.json), ``"partial"`` (folder without a marker: killed mid-way) or
    ``"pending"`` (no folder)."""
    d = Path(run_dir)
    try:
        json.loads((d / DONE).read_text(encoding="utf-8"))
        return "done"
    except (OSError, ValueError):
        pass
    if (d / FAILED).is_file():
        return "failed"
    return "partial" if d.exists() else "pending"


def run_metrics(run_dir, nb_res: int, tau: float) -> dict:
    """Metrics of a campaign run folder, from its engine outputs.

    The one definition of a run's metrics, shared by :func:`iosched.campaign.execute.execute_run` (fresh runs) and
    :func:`iosched.campaign.refresh.refresh_metrics`: :func:`iosched.analysis.jobs.load_jobs` of
    ``RUN_DIR/out_jobs.csv`` (burst-buffer runs merged into their jobs),
    then :func:`iosched.analysis.metrics.compute_metrics` with ``nb_resources=nb_res``
    (the platform's compute hosts) and ``tau``, rounded as
    :func:`iosched.analysis.metrics_file.write_metrics` rounds (6 decimals, non-finite as
    None). Reads only; see :func:`save_run_metrics`.

    :returns: the metrics dict (JSON-ready).
    :raises InputError: missing or unreadable outputs (the message names the file).
    """
    return dir_metrics(run_dir, OUT_PREFIX, nb_resources=nb_res, tau=tau)


def save_run_metrics(run_dir: Path, metrics: dict) -> bool:
    """Write ``RUN_DIR/metrics.json`` atomically (only if it changes); True if written.

    :raises InputError: the file cannot be written.
    """
    target = Path(run_dir) / METRICS
    try:
        return write_if_changed(target, metrics_json(metrics))
    except OSError as e:
        raise InputError(f"{target}: cannot write ({e.strerror or e})") from None


def failure_reason(run_dir) -> str:
    try:
        return str(json.loads((Path(run_dir) / FAILED).read_text(encoding="utf-8"))["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return "failed (failed.json unreadable)"
