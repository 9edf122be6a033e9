"""PFS-bandwidth-aware backfilling of Goponenko et al. (PMBS 2024,
"Workload-adaptive scheduling for efficient use of parallel file systems in
HPC clusters").

Launch: ``pybatsim schedulers/pfsbw.py -o '{"policy": "adaptive", "limit": 21474836480}'``
(embedded engine or real Batsim 4.2.1, no engine flag).

EXECUTE_JOB (see :meth:`Pfsbw.launch`): Batsim 4.2.1 accepts ``job_id``,
``alloc`` and at most ONE of ``mapping`` / ``storage_mapping`` /
``additional_io_job`` (``protocol.cpp``, ``handle_execute_job``; it aborts
otherwise). A job runs on whole nodes; when it has fewer executors than
allocated cores it gets a ``mapping`` (executor i on the i-th allocated
core). A ``storage_mapping`` is sent only when Batsim needs one: the job's
profile uses a storage label (``parallel_homogeneous_pfs``, through
``composed`` too) and the platform does not have exactly one storage host,
or the profile has a ``data_staging`` step. With exactly one storage host
(``platforms/pfsbw15.xml``) none is sent and Batsim uses that host. A job
that needs both cannot be encoded: it is rejected at submission (REJECT_JOB,
one logged line naming it), and a platform where that can happen is
announced by a warning at SIMULATION_BEGINS.

Options (pybatsim ``-o`` JSON):

* ``policy`` -- ``slurm-backfill`` (Algorithm 1, nodes only: the default
  Slurm scheduler), ``io-aware`` (Algorithms 2-4), ``adaptive``
  (Algorithms 5-7);
* ``variant`` -- ``two-group`` (default) or ``naive`` (adaptive only: no
  two-group approximation);
* ``limit`` -- file-system throughput limit ``R_limit`` (bytes/s, > 0;
  default 20 GiB/s); io-aware and adaptive;
* ``backfill_max`` -- ``BackfillMax`` (int >= 0) or ``"unlimited"``
  (default, Slurm's; 1 = EASY);
* ``pretrain`` -- a JSON file (or dict) ``{variety: {"bytes", "runtime"}}``
  of jobs run alone (``iosched workload pfsbw pretrain``); without
  it the estimator starts untrained;
* ``decay`` -- the estimator's ``a`` (default 0.2);
* ``estimates`` -- ``exact`` (default: runtime and bytes / runtime as
  observed, unrounded; the paper's text) or ``artifact`` (as
  ``pysimserv3.py`` reports them to Slurm: each observed runtime + 1 s, the
  runtime estimate rounded up to whole minutes, the throughput up to units
  of 1,400 bytes/s; docs/pfsbw.md);
* ``measured`` -- use the measured current throughput ``R_now`` (default
  true); ``window`` -- its window (s, default 60);
* ``overshoot`` -- adaptive: share of a regular job's ``r_j'`` allowed
  above the adjusted target (default 0.5, the implementation's; 1 = the
  paper's Algorithm 7 literally);
* ``trace`` -- path of a CSV written at the end, one row per pass: time,
  measured ``R_now``, target, r_star, r_zero, adjusted target (bytes/s);
* ``stats`` -- path of a JSON file written at the end with one record per
  scheduling pass: ``queue`` (waiting jobs before the pass) and ``seconds``
  (wall-clock time of the pass); for benchmarks (:mod:`iosched.experiments.bench.pfsbw`).

Every job may carry the extra fields ``variety`` (job type; default: its
profile name, i.e. the same command line) and ``bytes_written`` (bytes,
default 0). The estimator (:class:`iosched.pfsbw.estimator.VarietyEstimator`)
learns from each successfully completed job ``bytes_written / runtime``,
runtime = JOB_COMPLETED time - start decision time, as seen by the
scheduler. Jobs killed at their walltime teach nothing (their bytes are
unknown).

Built on the shared core (:mod:`iosched.sched`): queue FCFS, the policy
:class:`iosched.pfsbw.policy.SlurmBackfill` with a tracker of
:mod:`iosched.pfsbw.trackers`; the throughput is the core's pool ``pfs``.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from iosched.checks import option_number
from iosched.errors import InputError
from iosched.pfsbw.estimator import (
    ARTIFACT_RATE_UNIT,
    ARTIFACT_RUNTIME_UNIT,
    ARTIFACT_TAIL,
    DECAY,
    RecentThroughput,
    VarietyEstimator,
)
from iosched.pfsbw.policy import SlurmBackfill
from iosched.pfsbw.trackers import POOL, AdaptiveTracker, IoAwareTracker, NodeTracker
from iosched.sched.adapter import PybatsimScheduler, state_name
from iosched.sched.core import Scheduler, plain_job
from iosched.sched.ioplan import STATIC, disk_host
from iosched.sched.iorecord import BANDWIDTH
from iosched.sched.iojob import read_io
from iosched.sched.orders import fcfs

__all__ = ["Pfsbw", "POLICIES", "VARIANTS", "ESTIMATES", "OPTIONS", "KNOWN_OPTIONS", "PfsRequest",
           "storage_needs"]

#: bytes in a GiB
GIB = 2 ** 30
POLICIES = ("slurm-backfill", "io-aware", "adaptive")
VARIANTS = ("two-group", "naive")
#: option ``estimates`` -> the estimator's rounding (VarietyEstimator's keywords)
ESTIMATES = {"exact": {},
             "artifact": {"tail": ARTIFACT_TAIL, "runtime_unit": ARTIFACT_RUNTIME_UNIT,
                          "rate_unit": ARTIFACT_RATE_UNIT}}
#: The options the scheduler reads (``iosched.sched.options``): name -> meaning
#: (docs/pfsbw.md).
OPTIONS = {
    "policy": "slurm-backfill, io-aware or adaptive",
    "variant": "adaptive: two-group (default) or naive",
    "limit": "file-system throughput limit R_limit, bytes/s",
    "backfill_max": "jobs reserved per pass (1 = EASY, unlimited = Slurm's default)",
    "pretrain": "JSON file of the job types run alone (pre-trained estimator)",
    "decay": "estimator decay a (0.2)",
    "estimates": "exact (default) or artifact (runtime + 1 s, whole minutes, as py-sim-serv)",
    "measured": "hold the recently measured throughput as a block (true)",
    "window": "window of the measured throughput, s (60)",
    "overshoot": "h of Algorithm 7: share of a job's rate allowed over the target (0.5)",
    "trace": "path of a per-pass trace file",
    "stats": "path of a per-pass statistics file (benchmarks)",
}
KNOWN_OPTIONS = tuple(OPTIONS)


class PfsRequest:
    """A job's family fields: ``variety`` (str), ``bytes_written`` (bytes)."""

    __slots__ = ("variety", "bytes_written")

    def __init__(self, variety: str, bytes_written: float):
        self.variety, self.bytes_written = variety, bytes_written


def read_pfs_job(batsim_job, cores_per_node: int = 1, *, whole_nodes: bool = True) -> tuple:
    """``(nb_res, estimate, pools, PfsRequest)`` of a job (walltime as the
    estimate), from its I/O model (:func:`iosched.sched.iojob.read_io`:
    ``io.nodes``, ``io.application``, ``io.writes.bytes``, or the earlier
    fields ``nodes``, ``variety``, ``bytes_written``). A job giving ``nodes``
    asks that many whole nodes: ``nb_res = nodes * cores_per_node`` (its
    ``res`` executors are mapped onto them at launch); without it, ``nb_res``
    is Batsim's ``res``. The variety is the application, else the profile's
    name; the bytes written are 0 when not given. ``whole_nodes=False``:
    ``io.nodes`` is not read (``nb_res`` is Batsim's ``res``; another
    family's ``io.nodes``, e.g. listpack's Q_i, is not pfsbw's).

    :raises InputError: bytes written not a finite number >= 0, variety not
        a string, nodes not an integer >= 1 or too few for ``res`` (one line
        naming the job and the field).
    """
    nb_res, estimate, pools, _ = plain_job(batsim_job)
    d = getattr(batsim_job, "json_dict", None) or {}
    where = f"job {batsim_job.id}"
    io = read_io(d, where)
    if io.nodes is not None and whole_nodes:
        if nb_res > io.nodes * cores_per_node:
            raise InputError(f"{where}: res={nb_res} executors do not fit on {io.nodes} "
                             f"node(s) of {cores_per_node} cores")
        nb_res = io.nodes * cores_per_node
    variety = io.application if io.application is not None else getattr(batsim_job, "profile", None)
    if not isinstance(variety, str):
        raise InputError(f"{where}: field 'variety' must be a string, got {variety!r}")
    nbytes = io.writes.bytes if io.writes is not None else 0.0
    return nb_res, estimate, pools, PfsRequest(variety, float(nbytes))


def storage_needs(profiles: dict, name, _seen=None) -> tuple:
    """The storage a Batsim profile uses, as Batsim 4.2.1 resolves it at
    EXECUTE_JOB (``task_execution.cpp``): ``(labels, staging)``, the sorted
    tuple of its storage labels (``parallel_homogeneous_pfs``: ``storage``,
    or ``host``, default ``pfs``; ``data_staging``: ``from`` and ``to``; ``composed``:
    those of its steps) and whether a ``data_staging`` step is among them
    (those always need a ``storage_mapping``; a ``parallel_homogeneous_pfs``
    step needs one unless the platform has exactly one storage host).

    :param profiles: the workload's profiles (name -> dict), as Batsim sends
        them at SIMULATION_BEGINS.
    :param name: the job's profile; one not in ``profiles`` (or without a
        ``type``: pybatsim's placeholder for a profile it was not sent) is
        assumed to use the label ``pfs`` (the family's profiles).
    """
    seen = set() if _seen is None else _seen
    if name in seen:
        return (), False
    seen.add(name)
    prof = profiles.get(name) if isinstance(name, str) else None
    if not isinstance(prof, dict) or "type" not in prof:
        return ("pfs",), False
    kind = prof.get("type")
    if kind == "parallel_homogeneous_pfs":
        return (str(prof.get("storage", prof.get("host", "pfs"))),), False
    if kind == "data_staging":
        return tuple(sorted({str(prof.get("from")), str(prof.get("to"))})), True
    if kind == "composed":
        labels, staging = set(), False
        for sub in prof.get("seq") or ():
            lab, st = storage_needs(profiles, sub, seen)
            labels.update(lab)
            staging |= st
        return tuple(sorted(labels)), staging
    return (), False


class Pfsbw(PybatsimScheduler):
    """pybatsim scheduler of the pfsbw family (see the module documentation).

    Public state: ``estimator`` (:class:`VarietyEstimator`), ``measured``
    (:class:`RecentThroughput` or None), ``trace`` (list of per-pass rows).

    :raises InputError: unknown policy/variant, bad option values, an
        unreadable pretrain file.
    """

    OPTIONS = OPTIONS
    #: static jobs only (their profile does the I/O the estimator learns)
    SERVES = frozenset({STATIC})

    def make_core(self, options: dict) -> Scheduler:
        opts = options
        pol = opts.get("policy", "slurm-backfill")
        if pol not in POLICIES:
            raise InputError(f"option 'policy': {pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        variant = opts.get("variant", "two-group")
        if variant not in VARIANTS:
            raise InputError(f"option 'variant': {variant!r} is unknown; expected one of {', '.join(VARIANTS)}")
        self.policy, self.variant = pol, variant
        self.limit = option_number(opts, "limit", 20.0 * GIB, minimum=0, exclusive_minimum=True)
        bmax = opts.get("backfill_max", "unlimited")
        self.backfill_max = math.inf if bmax in ("unlimited", None) else \
            option_number(opts, "backfill_max", 0, integer=True, minimum=0)
        self.overshoot = option_number(opts, "overshoot", 0.5, minimum=0, maximum=1)
        estimates = opts.get("estimates", "exact")
        if estimates not in ESTIMATES:
            raise InputError(f"option 'estimates': {estimates!r} is unknown; expected one of {', '.join(ESTIMATES)}")
        self.estimator = VarietyEstimator(option_number(opts, "decay", DECAY, minimum=0, maximum=1,
                                                        exclusive_minimum=True), **ESTIMATES[estimates])
        measured = opts.get("measured", True)
        if not isinstance(measured, bool):
            raise InputError(f"option 'measured': expected true or false, got {measured!r}")
        self.measured = RecentThroughput(option_number(opts, "window", 60.0, minimum=0,
                                                       exclusive_minimum=True)) if measured else None
        pre = opts.get("pretrain")
        if isinstance(pre, str):
            try:
                pre = json.loads(Path(pre).read_text())
            except (OSError, ValueError) as exc:
                raise InputError(f"option 'pretrain': cannot read {opts['pretrain']!r}: {exc}") from None
        if pre is not None:
            if not isinstance(pre, dict):
                raise InputError("option 'pretrain': expected a JSON object {variety: {bytes, runtime}}")
            self.estimator.pretrain(pre)
        self.trace_path = opts.get("trace")
        self.trace: list = []
        self.stats_path = opts.get("stats")
        self.pass_stats: list = []
        self._needs_cache: dict = {}   # (workload, profile) -> storage_needs(...)
        self._storage_ids: dict = {}   # storage host name -> lowest id of that name
        pools = {} if pol == "slurm-backfill" else {POOL: self.limit}
        return Scheduler(SlurmBackfill(self._tracker, self.backfill_max), order=fcfs,
                         read_job=self._read_job, pools=pools, name="Pfsbw")

    # --------------------------------------------------------- estimates
    def rate(self, job) -> float:
        """``r_j`` (bytes/s): the estimator's throughput of the job's variety."""
        return self.estimator.throughput(job.request.variety)

    def duration(self, job) -> float:
        """``d_j`` (s): the estimated runtime when known and below the
        walltime, else the walltime (``backfill_licenses.c``)."""
        d = self.estimator.runtime(job.request.variety)
        return d if d is not None and 0 < d < job.estimate else job.estimate

    def _tracker(self, s, now):
        if self.policy == "slurm-backfill":
            return NodeTracker(s, now)
        measured = self.measured.rate(now) if self.measured is not None else 0.0
        if self.policy == "io-aware":
            rt = IoAwareTracker(s, now, self.rate, measured)
            self.trace.append((now, measured, math.nan, math.nan, math.nan, math.nan))
            return rt
        rt = AdaptiveTracker(s, now, self.rate, measured, self.duration,
                             naive=self.variant == "naive", overshoot=self.overshoot)
        g = rt.groups
        self.trace.append((now, measured, g.target, g.r_star, g.r_zero, g.adjusted))
        return rt

    # ------------------------------------------------------- Batsim side
    def onSimulationBegins(self):
        """SIMULATION_BEGINS: the core's machine and profile, the storage
        hosts by name, and a warning when several storage hosts make some
        jobs impossible to encode (see :meth:`launch`)."""
        super().onSimulationBegins()
        storage = self.core.machine.storage
        self._storage_ids = {name: rid for rid, name in sorted(storage.items(), reverse=True)}
        multicore = any(n.cores > 1 for n in self.core.machine.nodes)
        if len(storage) > 1 and multicore:
            self.logger.warning(
                "%d storage hosts (%s): a job with fewer executors than its nodes' cores whose "
                "profile uses storage will be rejected (Batsim 4.2.1's EXECUTE_JOB carries a "
                "mapping or a storage_mapping, not both)", len(storage), ", ".join(sorted(storage.values())))

    def _storage_needs(self, batsim_job) -> tuple:
        """``(labels, staging)`` of a job's profile: the storage labels it
        uses (tuple, sorted) and whether it has a ``data_staging`` step
        (:func:`storage_needs`, on the profiles Batsim sent at
        SIMULATION_BEGINS; a profile not found there is assumed to use the
        label ``pfs``)."""
        key = (getattr(batsim_job, "workload", None), getattr(batsim_job, "profile", None))
        if key not in self._needs_cache:
            profiles = (getattr(self.bs, "profiles", None) or {}).get(key[0]) or {}
            self._needs_cache[key] = storage_needs(profiles, key[1])
        return self._needs_cache[key]

    def storage_mapping(self, batsim_job, io=None):
        """The ``storage_mapping`` EXECUTE_JOB must carry for this job, or
        None when Batsim needs none: a ``data_staging`` step, or storage
        labels on a platform without exactly one storage host. A label that
        is one of the job's input files (``io.inputs``, :class:`IOJob`
        ``io``) is mapped as the core maps it: to the disk of the input's
        first copy, or the PFS (:func:`iosched.sched.ioplan.disk_host`);
        another label to the storage host of that name when there is one,
        else to the storage host of the lowest id.

        :raises InputError: the profile uses storage and the platform has no
            storage host.
        """
        labels, staging = self._storage_needs(batsim_job)
        storage = self.core.machine.storage
        if not labels:
            return None
        if not storage:
            raise InputError(f"job {batsim_job.id}: its profile uses the storage label(s) "
                             f"{', '.join(labels)} but the platform has no storage host")
        if len(storage) == 1 and not staging:
            return None     # Batsim uses the only storage host
        first = min(storage)
        copies = {f.file: disk_host(f.copies[0]) for f in io.inputs} if io is not None else {}
        return {label: self._storage_ids.get(copies.get(label, label), first) for label in labels}

    def _read_job(self, batsim_job) -> tuple:
        nodes = self.core.machine.nodes
        out = read_pfs_job(batsim_job, nodes[0].cores if nodes else 1)
        sm = self.storage_mapping(batsim_job)
        if sm is not None and out[0] > batsim_job.requested_resources:
            raise InputError(
                f"job {batsim_job.id}: {batsim_job.requested_resources} executor(s) on {out[0]} allocated "
                f"cores need a mapping and its storage label(s) {', '.join(sm)} need a storage_mapping "
                f"({len(self.core.machine.storage)} storage hosts); Batsim 4.2.1's EXECUTE_JOB carries at "
                f"most one of them")
        return out

    def foreign_job(self, batsim_job, io) -> tuple:
        """A job of a part run as dynamic jobs: its ``res`` resources, its
        variety and bytes written as for any other job (:func:`read_pfs_job`
        with ``whole_nodes=False``: the estimator sees it as any other),
        without the check of its static profile's storage labels (the core
        runs its phases, not its profile)."""
        return read_pfs_job(batsim_job, whole_nodes=False)

    def allocation(self, running, io):
        """The job's whole nodes with at most one optional field (the core
        sends EXECUTE_JOB, :func:`iosched.sched.ioplan.plan_for`):
        ``mapping`` (its ``res`` executors on the first allocated cores)
        when it has fewer executors than allocated cores, else
        ``storage_mapping`` when Batsim needs one (:meth:`storage_mapping`;
        with exactly one storage host, never). Jobs that would need both
        were rejected at submission."""
        job = running.job.batsim
        sm = self.storage_mapping(job, io)
        if job.requested_resources < len(running.resources):
            assert sm is None, f"job {job.id}: mapping and storage_mapping (should have been rejected)"
            return running.allocation.with_io(mapping={str(i): i for i in range(job.requested_resources)})
        if sm is not None:
            return running.allocation.with_io(storage_mapping=sm)
        return running.allocation

    def io_holds(self, running, io) -> tuple:
        """For the I/O record: the job's estimated throughput ``r_j``
        (bytes/s) when it starts, what the io-aware and adaptive trackers
        hold against the limit (Goponenko et al., Algorithm 2; 0 while
        its variety is untrained)."""
        return ((BANDWIDTH, "", self.rate(running.job), "bytes/s"),)

    def io_capacity(self, kind: str):
        """For the I/O record: the limit ``R_limit`` (bytes/s) for the
        throughput estimates."""
        return self.limit if kind == BANDWIDTH else None

    def onJobCompletion(self, job):
        """JOB_COMPLETED: a successful job teaches the estimator its
        ``bytes_written / runtime``; then the core frees its resources."""
        rec = self.core.running.get(job.id)
        if rec is not None and state_name(job) == "COMPLETED_SUCCESSFULLY":
            now = self.bs.time()
            req = rec.job.request
            self.estimator.observe(req.variety, req.bytes_written, now - rec.start)
            if self.measured is not None:
                self.measured.add(rec.start, now, req.bytes_written)
        super().onJobCompletion(job)

    def onNoMoreEvents(self):
        """The scheduling pass, timed when the ``stats`` option is set."""
        if not self.stats_path:
            return super().onNoMoreEvents()
        queue = len(self.core)
        t0 = time.perf_counter()
        super().onNoMoreEvents()
        self.pass_stats.append({"queue": queue, "seconds": time.perf_counter() - t0})

    def onSimulationEnds(self):
        super().onSimulationEnds()
        if self.stats_path:
            with open(self.stats_path, "w") as f:
                json.dump({"policy": self.policy, "variant": self.variant, "passes": self.pass_stats}, f)
        if self.trace_path:
            with open(self.trace_path, "w") as f:
                f.write("time,measured,target,r_star,r_zero,adjusted\n")
                for row in self.trace:
                    f.write(",".join(f"{x:.6g}" for x in row) + "\n")
