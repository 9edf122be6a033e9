"""The ``metrics.json`` of a run's output folder: the run metrics of
:func:`iosched.analysis.metrics.compute_metrics` for the folder's
``<prefix>_jobs.csv``, rounded and written so that the same input gives
byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

from iosched.analysis.format import rounded
from iosched.analysis.io import load_io, run_io_metrics
from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics import compute_metrics
from iosched.errors import InputError

__all__ = ["dir_metrics", "metrics_json", "write_metrics"]


def dir_metrics(output_dir: str | Path, prefix: str = "out",
                nb_resources: int | None = None, tau: float = 600.0,
                platform: str | Path | None = None) -> dict:
    """The metrics :func:`write_metrics` writes, without writing them:
    :func:`~iosched.analysis.jobs.load_jobs` of
    ``<output_dir>/<prefix>_jobs.csv``, then
    :func:`~iosched.analysis.metrics.compute_metrics` (same arguments),
    plus ``io`` (:func:`iosched.analysis.io.run_io_metrics`) when the folder
    has an I/O record; floats rounded to 6 decimals and non-finite values as
    None.

    :raises InputError: as :func:`write_metrics`, except for writing.
    """
    d = Path(output_dir)
    if not d.is_dir():
        raise InputError(f"{d}: no such directory")
    jobs = load_jobs(d, prefix=prefix)
    metrics = compute_metrics(jobs, nb_resources=nb_resources, tau=tau, platform=platform)
    record = load_io(d)
    if record is not None:
        metrics["io"] = run_io_metrics(record, metrics.get("makespan"))
    return rounded(metrics)


def metrics_json(metrics: dict) -> str:
    """The text of ``metrics.json`` for a :func:`dir_metrics` dict: keys
    sorted, indent 2, no NaN, a final newline (byte-identical for equal
    dicts)."""
    return json.dumps(metrics, sort_keys=True, indent=2, allow_nan=False) + "\n"


def write_metrics(output_dir: str | Path, prefix: str = "out",
                  nb_resources: int | None = None, tau: float = 600.0,
                  platform: str | Path | None = None) -> dict:
    """Compute the metrics of a Batsim output directory and save them.

    Reads ``<output_dir>/<prefix>_jobs.csv`` (burst-buffer runs merged into
    their workload jobs, :func:`~iosched.analysis.jobs.merge_runs`), and when ``nb_resources`` and
    ``platform`` are None ``<output_dir>/<prefix>_machine_states.csv`` (a
    run without merged rows) or ``<output_dir>/command.json`` (a run with
    merged rows) when present; computes :func:`~iosched.analysis.metrics.compute_metrics` and writes
    ``<output_dir>/metrics.json``: UTF-8, keys sorted, indent 2, floats
    rounded to 6 decimals, non-finite values as null, a final newline, so
    the same input gives byte-identical output.

    Returns the dict as written (rounded).
    Raises :class:`~iosched.errors.InputError` when the directory or the
    file is missing or bad (see :func:`~iosched.analysis.jobs.load_jobs`,
    :func:`~iosched.analysis.metrics.compute_metrics`)
    or when metrics.json cannot be written.
    """
    metrics = dir_metrics(output_dir, prefix, nb_resources, tau, platform)
    target = Path(output_dir) / "metrics.json"
    try:
        target.write_text(metrics_json(metrics), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    return metrics
