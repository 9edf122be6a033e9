"""Executing a campaign: one run (:func:`execute_run`, the Dask task), the
Dask client, interruption and progress (:func:`run_campaign`).

Interruption: SIGINT / SIGTERM on the campaign kills the scheduler and
engine processes of the running runs (they are children of this process),
leaves those runs without a marker (they run again on the next invocation),
closes the Dask cluster and exits with 128 + signal number.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from iosched.batsim.outputs import BATSIM_VERSION
from iosched.campaign.files import write_json
from iosched.campaign.inputs import prepare_runs, write_manifest
from iosched.campaign.jobqueue import start_jobqueue_cluster
from iosched.campaign.progress import Progress
from iosched.campaign.rundir import DONE, FAILED, failure_reason, run_metrics, run_status, save_run_metrics
from iosched.campaign.schema import Campaign
from iosched.errors import InputError, one_line
from iosched.record import RECORD_FILE, read_record
from iosched.run.result import RunError
from iosched.run.robin import write_robin
from iosched.run.simulation import (
    DEFAULT_SIMULATION_TIMEOUT,
    engine_command,
    run_simulation,
    strip_in_process_flags,
)
from iosched.run.supervise import INTERRUPT_SIGNALS, Signalled, kill_descendants, signals_raise

__all__ = ["CampaignResult", "execute_run", "run_campaign", "versions"]


#: Set when the campaign is being interrupted: runs failing from then on are
#: left without a marker (they were killed, they will run again).
_STOP = threading.Event()


@functools.lru_cache(maxsize=1)
def versions() -> dict:
    """Versions of the software a run depends on (strings; "unknown" if not found)."""
    out = {"python": sys.version.split()[0]}
    for dist in ("iosched", "pybatsim", "pyzmq", "dask", "distributed", "pandas", "numpy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "unknown"
    try:
        r = subprocess.run([sys.executable, "-m", "iosched.engine.cli", "--simgrid-version"],
                           capture_output=True, text=True, timeout=60)
        out["simgrid"] = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() \
            else "unknown"
    except (OSError, subprocess.SubprocessError):
        out["simgrid"] = "unknown"
    out["batsim_protocol"] = BATSIM_VERSION
    return out


def _replay_robin(run_dir: Path, command: dict, timeout: float | None) -> None:
    """Write robin-batsim.yaml: the run with the real ``batsim`` (outputs in replay/)."""
    engine_argv = strip_in_process_flags(list(command["engine"]["argv"]))
    prefix = engine_command("embedded")
    if engine_argv[: len(prefix)] == prefix:
        rest = engine_argv[len(prefix):]
    else:
        rest = engine_argv[1:]
    replay = run_dir / "replay"
    for i, tok in enumerate(rest[:-1]):
        if tok == "-e":
            rest[i + 1] = str(replay / "out")
    write_robin(run_dir / "robin-batsim.yaml", ["batsim", *rest], command["scheduler"]["argv"],
                replay, simulation_timeout=timeout or DEFAULT_SIMULATION_TIMEOUT,
                ready_timeout=command["timeouts_s"]["ready"],
                success_timeout=command["timeouts_s"]["success"],
                failure_timeout=command["timeouts_s"]["failure"])


def execute_run(spec: dict) -> dict:
    """Execute one run of a campaign (the Dask task).

    Removes and recreates the run folder, writes ``run.json``, runs
    :func:`iosched.run.simulation.run_simulation`, writes ``metrics.json``
    (:func:`iosched.campaign.rundir.run_metrics`: :mod:`iosched.analysis` with the platform's
    compute-host count) and ``robin-batsim.yaml``, then ``done.json`` (atomically: the run
    is finished only once it exists). On a failure writes ``failed.json`` with
    the one-line reason, unless the campaign is being interrupted (then the
    folder is left without a marker, to be re-run).

    :param spec: one item of :func:`iosched.campaign.inputs.prepare_runs`.
    :returns: ``{"id", "status": "done"|"failed"|"interrupted", "reason",
        "wall_time_s"}``. Never raises for a failed run.
    """
    d = Path(spec["dir"])
    t0 = time.monotonic()
    try:
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        write_json(d / "run.json", {
            "id": spec["id"], "params": spec["params"], "identity": spec["identity"],
            "inputs": {"platform": spec["platform"], "workload": spec["workload"]},
            "scheduler": spec["scheduler"], "options": spec["options"],
            "seed": spec["params"]["seed"], "engine": spec["engine"],
            "in_process": spec.get("in_process", False),
            "timeout_s": spec["timeout"], "tau_s": spec["tau"], "versions": versions(),
        })
        run_simulation(spec["platform"], spec["workload"], spec["scheduler"], d,
                       options=spec["options"], engine_cmd=spec["engine"],
                       engine_args=spec.get("engine_args", ()),
                       timeout=spec["timeout"], in_process=spec.get("in_process", False))
        metrics = run_metrics(d, nb_res=spec["nb_res"], tau=spec["tau"])
        save_run_metrics(d, metrics)
        command = read_record(d)
        if command is None:
            raise InputError(f"{d / RECORD_FILE}: missing or unreadable run record")
        _replay_robin(d, command, spec["timeout"])
        wall = time.monotonic() - t0
        write_json(d / DONE, {"id": spec["id"], "status": "done", "metrics": metrics,
                              "wall_time_s": round(wall, 3)})
        return {"id": spec["id"], "status": "done", "reason": None, "wall_time_s": wall}
    except Exception as e:  # noqa: BLE001 - every failure becomes a listed failure
        wall = time.monotonic() - t0
        if isinstance(e, (RunError, InputError)):
            reason = one_line(e)
        else:
            reason = one_line(f"{type(e).__name__}: {e}")
        if _STOP.is_set():
            return {"id": spec["id"], "status": "interrupted", "reason": reason, "wall_time_s": wall}
        try:
            d.mkdir(parents=True, exist_ok=True)
            write_json(d / FAILED, {"id": spec["id"], "status": "failed", "reason": reason,
                                    "wall_time_s": round(wall, 3)})
        except OSError:
            pass
        return {"id": spec["id"], "status": "failed", "reason": reason, "wall_time_s": wall}


# --------------------------------------------------------------------------
# the campaign


@dataclass
class CampaignResult:
    """Outcome of :func:`run_campaign`.

    ``runs``: every run spec; ``skipped``: ids already done (or failed and not
    retried) before this invocation; ``executed``: ids executed now;
    ``failed``: {id: one-line reason} of every failed run (old and new);
    ``interrupted``: True if a signal stopped the campaign; ``wall_time_s``:
    duration of the execution phase (s).
    """

    output: Path
    runs: list
    skipped: list
    executed: list
    failed: dict
    interrupted: bool = False
    interrupted_signal: int | None = None
    wall_time_s: float = 0.0

    @property
    def nb_done(self) -> int:
        """Runs whose folder holds done.json."""
        return sum(1 for r in self.runs if run_status(r["dir"]) == "done")


def _distributed(name: str):
    """``distributed.<name>``: Dask is an optional extra (``pip install
    iosched[campaign]``), imported when a campaign runs.

    :raises InputError: Dask is not installed (one line saying how to get it).
    """
    try:
        module = importlib.import_module("distributed")
    except ImportError:
        raise InputError("campaigns need Dask: pip install 'iosched[campaign]' "
                         "(or dask[distributed])") from None
    return getattr(module, name)


def _start_client(workers: int | None, cluster: str | None, jobqueue: dict | None = None):
    """A dask.distributed Client and the cluster to close after it (or None).

    On *cluster* (an address); else on a cluster whose workers are batch jobs
    (*jobqueue*: settings of :func:`iosched.campaign.jobqueue.jobqueue_settings`,
    :func:`~iosched.campaign.jobqueue.start_jobqueue_cluster`); else on a new
    local cluster of *workers* thread workers of this process (in-process
    transport; the only sockets are the HTTP servers distributed always starts
    for its scheduler and workers, bound to loopback on free ports).

    :raises InputError: unreachable *cluster*, a jobqueue that cannot start,
        a local cluster that cannot start (one line).
    """
    Client, LocalCluster = _distributed("Client"), _distributed("LocalCluster")

    for name in ("distributed", "distributed.core", "distributed.worker", "distributed.scheduler",
                 "distributed.nanny", "distributed.http.proxy"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if cluster:
        try:
            return Client(cluster, timeout="20s"), None
        except (OSError, TimeoutError, ValueError) as e:
            raise InputError(f"--cluster {cluster}: cannot connect: {one_line(e)}") from None
    if jobqueue:
        jc = start_jobqueue_cluster(jobqueue)
        try:
            return Client(jc, timeout="20s"), jc
        except (OSError, TimeoutError, ValueError) as e:
            jc.close()
            raise InputError(f"jobqueue {jobqueue['system']}: cannot connect to its scheduler: "
                             f"{one_line(e)}") from None
    n = workers or os.cpu_count() or 1
    # Thread workers in this process talk over Dask's in-process transport:
    # nothing listens on any network interface.
    try:
        lc = LocalCluster(n_workers=n, threads_per_worker=1, processes=False,
                          dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
                          silence_logs=logging.ERROR)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"cannot start the local Dask cluster: {one_line(e)}") from None
    return Client(lc), lc


@contextlib.contextmanager
def _quiet_distributed(restore: bool = True):
    """Silence distributed's loggers while the client and the cluster close:
    a worker closed while a signal stops the campaign logs a traceback
    (``asyncio.CancelledError`` in ``Worker.close``) that is shutdown noise,
    not a run's failure (those are in the campaign's result). The levels are
    restored after when *restore* (not after a signal: the process ends, and
    distributed's exit handlers may still log)."""
    names = ["distributed", *(n for n in list(logging.root.manager.loggerDict)
                              if n.startswith("distributed."))]
    old = {n: logging.getLogger(n).level for n in names}
    try:
        for n in names:
            logging.getLogger(n).setLevel(logging.CRITICAL + 1)
        yield
    finally:
        if restore:
            for n, level in old.items():
                logging.getLogger(n).setLevel(level)


def run_campaign(campaign: Campaign, workers: int | None = None, cluster: str | None = None,
                 retry_failed: bool = False, progress: bool = True,
                 echo=None) -> CampaignResult:
    """Run (or resume) a campaign on Dask; see :mod:`iosched.campaign`.

    :param workers: local cluster size (default: number of cores); ignored
        with *cluster*; given, the runs execute locally even when the
        campaign has a ``jobqueue``.
    :param cluster: address of an existing distributed scheduler
        (``tcp://host:8786``), or None: the campaign's ``jobqueue`` (workers
        started as batch jobs, :mod:`iosched.campaign.jobqueue`) when it has
        one and *workers* is None, else a local cluster.
    :param retry_failed: also re-run the runs that have ``failed.json``.
    :param progress: show a tqdm progress bar on stderr.
    :param echo: callable(str) for status lines (default: nothing).
    :returns: a :class:`CampaignResult` (failures are in it, not raised).
    :raises InputError: bad inputs (see :func:`prepare_runs`), unreachable
        cluster, a jobqueue whose jobs cannot be submitted, bad *workers*.
    """
    echo = echo or (lambda s: None)
    if workers is not None and workers < 1:
        raise InputError(f"--workers: must be >= 1, got {workers}")
    runs = prepare_runs(campaign)
    write_manifest(campaign, runs)
    todo, skipped, failed = [], [], {}
    for r in runs:
        st = run_status(r["dir"])
        if st == "done":
            skipped.append(r["id"])
        elif st == "failed" and not retry_failed:
            skipped.append(r["id"])
            failed[r["id"]] = failure_reason(r["dir"])
        else:
            todo.append(r)
    result = CampaignResult(output=campaign.output, runs=runs, skipped=skipped, executed=[],
                            failed=failed)
    echo(f"campaign {campaign.name}: {len(runs)} runs, {len(runs) - len(todo)} already finished "
         f"or failed, {len(todo)} to run")
    if not todo:
        return result
    _STOP.clear()
    t0 = time.monotonic()
    client = lc = None
    bar = Progress(len(runs), len(runs) - len(todo), progress)
    bar.update(failed=len(failed))
    try:
        with signals_raise(INTERRUPT_SIGNALS):
            as_completed = _distributed("as_completed")
            jobqueue = campaign.jobqueue if cluster is None and workers is None else None
            if jobqueue:
                echo(f"campaign {campaign.name}: jobqueue {jobqueue['system']}: submitting "
                     f"{jobqueue['jobs']} job(s) of one worker with {jobqueue['cores']} "
                     f"thread(s)")
            client, lc = _start_client(workers, cluster, jobqueue)
            nthreads = max(1, sum(client.nthreads().values()))
            futures = client.map(execute_run, todo, key=[f"iosched-run-{r['id']}" for r in todo],
                                 pure=False)
            pending = len(futures)
            bar.update(running=min(nthreads, pending), failed=len(failed))
            for fut in as_completed(futures):
                try:
                    out = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker died, a task was lost
                    rid = todo[futures.index(fut)]["id"]
                    out = {"id": rid, "status": "failed",
                           "reason": one_line(f"task lost: {type(e).__name__}: {e}")}
                pending -= 1
                result.executed.append(out["id"])
                if out["status"] == "failed":
                    failed[out["id"]] = out["reason"]
                bar.update(done=1, running=min(nthreads, pending), failed=len(failed))
    except Signalled as e:
        result.interrupted = True
        _STOP.set()
        echo(f"campaign {campaign.name}: interrupted by signal {e.signum}, stopping the running runs")
        kill_descendants()
        result.interrupted_signal = e.signum
    finally:
        bar.close()
        with _quiet_distributed(restore=not result.interrupted):
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)
            if lc is not None:
                with contextlib.suppress(Exception):
                    lc.close(timeout=10)
        if result.interrupted:
            kill_descendants()
    result.wall_time_s = time.monotonic() - t0
    return result
