"""A campaign's Dask workers started as batch jobs of the site's scheduler
(Slurm, PBS) through dask-jobqueue: the ``jobqueue`` settings (the campaign
file's section, :data:`JOBQUEUE_SCHEMA`, and ``iosched campaign --jobqueue
SYSTEM --jobs N --jobqueue-option KEY=VALUE``), the known batch systems
(:data:`SYSTEMS`) and :func:`start_jobqueue_cluster`.

Each batch job runs one Dask worker process with ``cores`` threads, so up to
``cores`` runs at a time; a run uses two processes (its engine and its
scheduler, which alternate on one CPU) or one with ``in_process``. The Dask
scheduler runs in the campaign's process; the workers connect to it, so it
listens on the network interface named by ``interface`` (by default on every
interface, dask-jobqueue's default); its dashboard and the workers' listen on
loopback only.

dask-jobqueue is an optional extra (``pip install 'iosched[jobqueue]'``),
imported when a jobqueue cluster is made.
"""

from __future__ import annotations

import importlib
import re
import shutil
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from iosched.errors import InputError, one_line

__all__ = ["DEFAULTS", "JOBQUEUE_SCHEMA", "SYSTEMS", "JobSystem", "check_settings",
           "jobqueue_settings", "parse_options", "start_jobqueue_cluster"]

_TEXT = {"type": "string", "minLength": 1}
_TEXTS = {"type": "array", "items": {"type": "string"}}

#: JSON schema of the campaign file's ``jobqueue`` section (values are
#: checked further by :func:`check_settings`).
JOBQUEUE_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "required": ["system"],
    "properties": {
        "system": _TEXT,                                   # a key of SYSTEMS
        "jobs": {"type": "integer", "minimum": 1},         # batch jobs kept running
        "cores": {"type": "integer", "minimum": 1},        # per job = worker threads
        "memory": _TEXT,                                   # per job, e.g. "2GB"
        "walltime": _TEXT,                                 # per job, HH:MM:SS
        "queue": _TEXT,                                    # Slurm partition, PBS queue
        "account": _TEXT,
        "interface": _TEXT,                                # network interface, e.g. ib0
        "python": _TEXT,                                   # the workers' Python
        "job_name": _TEXT,
        "local_directory": _TEXT,                          # the workers' scratch folder
        "log_directory": _TEXT,                            # the jobs' output files
        "job_extra_directives": _TEXTS,                    # e.g. ["--exclusive"]
        "job_script_prologue": _TEXTS,                     # e.g. ["module load python"]
    },
}

#: Settings a campaign gets when neither the file nor the command line gives them.
DEFAULTS: dict = {"jobs": 1, "cores": 1, "memory": "2GB"}

#: Keys of ``--jobqueue-option`` (``system`` and ``jobs`` have their own options).
OPTION_KEYS = tuple(k for k in JOBQUEUE_SCHEMA["properties"] if k not in ("system", "jobs"))
_INT_KEYS = ("jobs", "cores")
_LIST_KEYS = tuple(k for k, v in JOBQUEUE_SCHEMA["properties"].items() if v.get("type") == "array")

# dask.utils.parse_bytes' sizes, with a unit: 2GB, 1500 MB, 4GiB, 512kB
_MEMORY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]i?)?b\s*$", re.IGNORECASE)
# what sbatch --time and qsub -l walltime both read: hours:minutes:seconds
_WALLTIME = re.compile(r"^([0-9]+):([0-5][0-9]):([0-5][0-9])$")


@dataclass(frozen=True)
class JobSystem:
    """A batch system that starts Dask workers.

    ``make(settings)`` returns a Dask cluster (a
    :class:`distributed.deploy.SpecCluster`, not yet scaled) whose workers are
    batch jobs of one worker process each; ``submit_command``: the command
    that submits a job (checked on PATH before anything starts), or None.
    """

    make: Callable[[dict], object]
    submit_command: str | None


def _import_dask_jobqueue():
    """``dask_jobqueue`` without its side effect: importing it (its module
    ``runner``) replaces the process's SIGINT handler by ``sys.exit()``, which
    would turn an interrupted campaign into a silent exit with status 0; the
    handler in place before is put back (dask-jobqueue 0.9.0, its issue #696,
    fixed after that release by its pull request #697)."""
    before = signal.getsignal(signal.SIGINT)
    try:
        return importlib.import_module("dask_jobqueue")
    finally:
        if before is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, before)


def _jobqueue_class(name: str) -> Callable[[dict], object]:
    """``make`` of a dask-jobqueue cluster class (``SLURMCluster``, ``PBSCluster``)."""

    def make(settings: dict):
        try:
            cls = getattr(_import_dask_jobqueue(), name)
        except ImportError:
            raise InputError(f"jobqueue {settings['system']}: needs dask-jobqueue: "
                             f"pip install 'iosched[jobqueue]'") from None
        kwargs = {k: v for k, v in settings.items() if k not in ("system", "jobs")}
        # one worker process per job, one thread per core; the dashboards on loopback
        return cls(processes=1, scheduler_options={"dashboard_address": "127.0.0.1:0"},
                   worker_extra_args=["--dashboard-address", "127.0.0.1:0"], **kwargs)

    return make


#: Batch system name -> :class:`JobSystem` (``--jobqueue NAME``).
SYSTEMS: dict[str, JobSystem] = {
    "slurm": JobSystem(_jobqueue_class("SLURMCluster"), "sbatch"),
    "pbs": JobSystem(_jobqueue_class("PBSCluster"), "qsub"),
}


def check_settings(settings: dict, label: Callable[[str], str]) -> None:
    """Check the values of jobqueue *settings* (any subset of the keys of
    :data:`JOBQUEUE_SCHEMA`).

    :param label: key -> the name of its field or option in messages
        (``"c.yaml: field jobqueue.memory"``, ``"--jobqueue-option memory"``).
    :raises InputError: one line naming the field or option: an unknown
        system, a number of jobs or cores below 1, a memory that is not a
        positive size with a unit (``2GB``, ``1500MB``, ``4GiB``), a walltime
        that is not a positive ``HH:MM:SS``.
    """
    for key, value in settings.items():
        if key == "system" and value not in SYSTEMS:
            raise InputError(f"{label(key)}: unknown batch system {value!r} "
                             f"(known: {', '.join(sorted(SYSTEMS))})")
        if key in _INT_KEYS and (type(value) is not int or value < 1):  # bool is no number
            raise InputError(f"{label(key)}: expected a whole number >= 1, got {value!r}")
        if key == "memory":
            m = _MEMORY.match(str(value))
            if m is None or float(m.group(1)) <= 0:
                raise InputError(f"{label(key)}: expected a positive size with a unit "
                                 f"(2GB, 1500MB, 4GiB), got {value!r}")
        if key == "walltime":
            m = _WALLTIME.match(str(value))
            if m is None or not any(int(g) for g in m.groups()):
                raise InputError(f"{label(key)}: expected a positive HH:MM:SS, got {value!r}")


def parse_options(pairs: Sequence[str]) -> dict:
    """``--jobqueue-option KEY=VALUE`` pairs -> settings (``cores`` an int;
    ``job_extra_directives`` and ``job_script_prologue`` lists, one item per
    occurrence; other keys strings, the last occurrence kept).

    :raises InputError: a pair without ``=``, an unknown key, a ``cores`` that
        is not a whole number (one line naming the option).
    """
    out: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--jobqueue-option {pair!r}: expected KEY=VALUE")
        if key not in OPTION_KEYS:
            raise InputError(f"--jobqueue-option {key}: unknown key (known: "
                             f"{', '.join(OPTION_KEYS)}; --jobqueue and --jobs set the others)")
        if key in _INT_KEYS:
            try:
                out[key] = int(value)
            except ValueError:
                raise InputError(f"--jobqueue-option {key}: expected a whole number >= 1, "
                                 f"got {value!r}") from None
        elif key in _LIST_KEYS:
            out.setdefault(key, []).append(value)
        elif not value:
            raise InputError(f"--jobqueue-option {key}: empty value")
        else:
            out[key] = value
    return out


def _cli_label(key: str) -> str:
    return {"system": "--jobqueue", "jobs": "--jobs"}.get(key, f"--jobqueue-option {key}")


def jobqueue_settings(section: dict | None, system: str | None = None,
                      options: Sequence[str] = (), jobs: int | None = None) -> dict | None:
    """The jobqueue settings of a campaign: :data:`DEFAULTS`, then the
    campaign file's ``jobqueue`` *section* (already checked), then the
    command line (``--jobqueue`` *system*, ``--jobqueue-option`` *options*,
    ``--jobs`` *jobs*).

    :returns: the merged settings, or None when neither the file nor the
        command line names a system (the campaign runs on a local cluster).
    :raises InputError: a bad command-line value (:func:`parse_options`,
        :func:`check_settings`), or ``--jobs`` / ``--jobqueue-option``
        without a system.
    """
    cli = parse_options(options)
    if system is not None:
        cli["system"] = system
    if jobs is not None:
        cli["jobs"] = jobs
    if section is None and "system" not in cli:
        if cli:
            given = "--jobs" if jobs is not None else "--jobqueue-option"
            raise InputError(f"{given}: needs --jobqueue SYSTEM (or a 'jobqueue' section "
                             f"in the campaign file)")
        return None
    check_settings(cli, _cli_label)
    return {**DEFAULTS, **(section or {}), **cli}


async def _submit(cluster, jobs: int) -> None:
    """In the cluster's event loop: ask for *jobs* workers (one per job) and
    wait until the batch system has accepted every job (not until they run);
    raises what the submission raised.

    The worker specs are added here rather than by ``cluster.scale``, which
    would also submit them from a callback of the event loop that logs a
    refusal as a traceback.
    """
    while len(cluster.worker_spec) < jobs:
        cluster.worker_spec.update(cluster.new_worker_spec())
    await cluster


def _close_refused(cluster) -> None:
    """Close a cluster whose job submission failed: its refused jobs never
    started (nothing to cancel), they are marked failed so that the cluster's
    close accepts them."""
    for job in list(cluster.workers.values()):
        if job.status.name == "created":
            job.status = type(job.status).failed
    cluster.close()


def start_jobqueue_cluster(settings: dict):
    """Make the cluster of ``settings["system"]`` and submit its jobs.

    Submits ``settings["jobs"]`` jobs, waits until the
    batch system has accepted them, then keeps that many jobs
    (``cluster.adapt(minimum=jobs, maximum=jobs)``: a job that ends, at its
    walltime for instance, is replaced, and Dask re-runs its tasks elsewhere).
    The caller closes the cluster, which cancels the jobs.

    :param settings: from :func:`jobqueue_settings`.
    :returns: the cluster (connect a :class:`distributed.Client` to it).
    :raises InputError: the submit command is not on PATH, dask-jobqueue is
        missing or refuses a setting, the batch system refuses a job (one line
        naming the system; nothing is left running).
    """
    name = settings["system"]
    system = SYSTEMS[name]
    if system.submit_command and shutil.which(system.submit_command) is None:
        raise InputError(f"jobqueue {name}: {system.submit_command} is not on PATH (start the "
                         f"campaign on a machine that submits {name} jobs, e.g. a login node)")
    try:
        cluster = system.make(settings)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - dask-jobqueue's checks of its options
        raise InputError(f"jobqueue {name}: {one_line(e)}") from None
    try:
        cluster.sync(_submit, cluster, settings["jobs"])
    except Exception as e:  # noqa: BLE001 - the batch system's refusal
        _close_refused(cluster)
        raise InputError(f"jobqueue {name}: job submission failed: {one_line(e)}") from None
    cluster.adapt(minimum=settings["jobs"], maximum=settings["jobs"])
    return cluster
