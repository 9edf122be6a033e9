"""Refreshing the metrics of a campaign's finished runs
(:func:`refresh_metrics`, ``iosched campaign FILE --refresh-metrics``).

The metrics of every finished run are recomputed from the run's own
``out_*.csv`` with the current :mod:`iosched.analysis` code, through the same
function as a fresh run (:func:`iosched.campaign.rundir.run_metrics`, same
nb_resources and tau), and ``metrics.json`` and ``done.json`` are rewritten
atomically; nothing is simulated, no Dask cluster is started.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from iosched.campaign.files import json_text, write_if_changed
from iosched.campaign.inputs import MANIFEST, prepare_runs, write_manifest
from iosched.campaign.progress import Progress
from iosched.campaign.rundir import DONE, OUT_PREFIX, run_metrics, run_status, save_run_metrics
from iosched.campaign.schema import Campaign
from iosched.errors import InputError, one_line
from iosched.run.supervise import INTERRUPT_SIGNALS, Signalled, signals_raise

__all__ = ["RefreshResult", "refresh_metrics"]


@dataclass
class RefreshResult:
    """Outcome of :func:`refresh_metrics`.

    ``runs``: every run spec of the campaign; ``refreshed``: ids of the
    finished runs whose metrics were recomputed (and saved); ``changed``: the
    subset whose ``done.json`` or ``metrics.json`` changed; ``skipped``:
    {id: status} of the runs without ``done.json`` (``failed``, ``partial``,
    ``pending``), left alone; ``errors``: {id: one-line reason naming the
    file} of the finished runs whose outputs are missing or unreadable (their
    files are left as they were); ``interrupted_signal``: the signal that
    stopped the refresh, or None.
    """

    output: Path
    runs: list
    refreshed: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    interrupted_signal: int | None = None


def _refresh_run(spec: dict) -> bool:
    """Recompute and save the metrics of one finished run; True if a file changed.

    :raises InputError: unreadable done.json, missing or unreadable outputs,
        a file that cannot be written (the message names the file).
    """
    d = Path(spec["dir"])
    done_path = d / DONE
    try:
        done = json.loads(done_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(f"{done_path}: unreadable: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(done, dict):
        raise InputError(f"{done_path}: expected a JSON object")
    try:
        metrics = run_metrics(d, nb_res=spec["nb_res"], tau=spec["tau"])
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure is one line naming the file
        jobs = d / f"{OUT_PREFIX}_jobs.csv"
        raise InputError(f"{jobs}: cannot compute the metrics: {type(e).__name__}: {e}") from None
    changed = save_run_metrics(d, metrics)
    text = json_text({**done, "metrics": metrics})
    try:
        changed = write_if_changed(done_path, text) or changed
    except OSError as e:
        raise InputError(f"{done_path}: cannot write ({e.strerror or e})") from None
    return changed


def refresh_metrics(campaign: Campaign, progress: bool = False, echo=None) -> RefreshResult:
    """Recompute the metrics of the finished runs of a campaign; simulate nothing.

    For every run with ``done.json``: :func:`run_metrics` of the run folder
    (its ``out_jobs.csv``, with the current :mod:`iosched.analysis`, the
    platform's compute hosts and the campaign's ``tau``: exactly what a
    fresh run computes), then ``metrics.json`` and the ``metrics`` of
    ``done.json`` are rewritten atomically (only when they change; the other
    fields of ``done.json`` are kept). Runs without ``done.json`` are left
    alone. Runs in-process, one after the other (no Dask).

    :param campaign: the campaign; its ``output`` must hold a campaign
        (``campaign.json``).
    :param progress: show a tqdm progress bar on stderr.
    :param echo: callable(str) for status lines (default: nothing).
    :returns: a :class:`RefreshResult` (per-run errors are in it, not raised).
    :raises InputError: no campaign in the output folder; bad inputs (see
        :func:`prepare_runs`).
    """
    echo = echo or (lambda s: None)
    out = campaign.output
    if not (out / MANIFEST).is_file():
        raise InputError(f"{out}: no campaign here (no {MANIFEST}); nothing to refresh "
                         f"(run the campaign first, or give its folder with --output)")
    runs = prepare_runs(campaign)
    write_manifest(campaign, runs)
    result = RefreshResult(output=out, runs=runs)
    todo = []
    for r in runs:
        if (Path(r["dir"]) / DONE).exists():
            todo.append(r)
        else:
            result.skipped[r["id"]] = run_status(r["dir"])
    echo(f"campaign {campaign.name}: refreshing the metrics of {len(todo)} finished runs "
         f"({len(result.skipped)} without {DONE} left alone)")
    bar = Progress(len(todo), 0, progress, desc="refresh")
    try:
        with signals_raise(INTERRUPT_SIGNALS):
            for r in todo:
                try:
                    if _refresh_run(r):
                        result.changed.append(r["id"])
                    result.refreshed.append(r["id"])
                except InputError as e:
                    result.errors[r["id"]] = one_line(e)
                except Exception as e:  # noqa: BLE001 - one line per run, never a traceback
                    result.errors[r["id"]] = one_line(f"{Path(r['dir']) / DONE}: "
                                                       f"{type(e).__name__}: {e}")
                bar.update(done=1, postfix=f"changed={len(result.changed)} "
                                           f"errors={len(result.errors)}")
    except Signalled as e:
        result.interrupted_signal = e.signum
    finally:
        bar.close()
    return result
