"""PFS-bandwidth-aware backfilling of Goponenko et al. (PMBS 2024,
"Workload-adaptive scheduling for efficient use of parallel file systems in
HPC clusters").

Launch: ``pybatsim schedulers/pfsbw.py -o '{"policy": "adaptive", "limit": 21474836480}'``
(embedded engine or real Batsim 4.2.x; jobs are plain EXECUTE_JOBs with a
``storage_mapping`` of the label ``pfs`` to the platform's storage host).

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
  of jobs run alone (``python -m iosched.pfsbw.workload pretrain``); without
  it the estimator starts untrained;
* ``decay`` -- the estimator's ``a`` (default 0.2);
* ``measured`` -- use the measured current throughput ``R_now`` (default
  true); ``window`` -- its window (s, default 60);
* ``overshoot`` -- adaptive: share of a regular job's ``r_j'`` allowed
  above the adjusted target (default 0.5, the implementation's; 1 = the
  paper's Algorithm 7 literally);
* ``trace`` -- path of a CSV written at the end, one row per pass: time,
  measured ``R_now``, target, r_star, r_zero, adjusted target (bytes/s);
* ``stats`` -- path of a JSON file written at the end with one record per
  scheduling pass: ``queue`` (waiting jobs before the pass) and ``seconds``
  (wall-clock time of the pass); for benchmarks (:mod:`iosched.bench.pfsbw`).

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
from iosched.pfsbw.estimator import DECAY, RecentThroughput, VarietyEstimator
from iosched.pfsbw.policy import SlurmBackfill
from iosched.pfsbw.trackers import POOL, AdaptiveTracker, IoAwareTracker, NodeTracker
from iosched.sched.adapter import PybatsimScheduler, state_name
from iosched.sched.core import Scheduler, plain_job
from iosched.sched.orders import fcfs

__all__ = ["Pfsbw", "POLICIES", "VARIANTS", "OPTIONS", "KNOWN_OPTIONS", "PfsRequest"]

#: bytes in a GiB
GIB = 2 ** 30
POLICIES = ("slurm-backfill", "io-aware", "adaptive")
VARIANTS = ("two-group", "naive")
#: The options the scheduler reads (``iosched.sched.options``): name -> meaning
#: (docs/pfsbw.md).
OPTIONS = {
    "policy": "slurm-backfill, io-aware or adaptive",
    "variant": "adaptive: two-group (default) or naive",
    "limit": "file-system throughput limit R_limit, bytes/s",
    "backfill_max": "jobs reserved per pass (1 = EASY, unlimited = Slurm's default)",
    "pretrain": "JSON file of the job types run alone (pre-trained estimator)",
    "decay": "estimator decay a (0.2)",
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


def read_pfs_job(batsim_job, cores_per_node: int = 1) -> tuple:
    """``(nb_res, estimate, pools, PfsRequest)`` of a job (walltime as the
    estimate). A job with the extra field ``nodes`` asks that many whole
    nodes: ``nb_res = nodes * cores_per_node`` (its ``res`` executors are
    mapped onto them at launch); without it, ``nb_res`` is Batsim's ``res``.

    :raises InputError: ``bytes_written`` not a finite number >= 0,
        ``variety`` not a string, ``nodes`` not an integer >= 1.
    """
    nb_res, estimate, pools, _ = plain_job(batsim_job)
    d = getattr(batsim_job, "json_dict", None) or {}
    if "nodes" in d:
        nodes = d["nodes"]
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise InputError(f"job {batsim_job.id}: field 'nodes' must be an integer >= 1, got {nodes!r}")
        if nb_res > nodes * cores_per_node:
            raise InputError(f"job {batsim_job.id}: res={nb_res} executors do not fit on {nodes} "
                             f"node(s) of {cores_per_node} cores")
        nb_res = nodes * cores_per_node
    variety = d.get("variety", getattr(batsim_job, "profile", None))
    if not isinstance(variety, str):
        raise InputError(f"job {batsim_job.id}: field 'variety' must be a string, got {variety!r}")
    nbytes = d.get("bytes_written", 0.0)
    if type(nbytes) not in (int, float) or not math.isfinite(nbytes) or nbytes < 0:
        raise InputError(f"job {batsim_job.id}: field 'bytes_written' must be a finite number >= 0, "
                         f"got {nbytes!r}")
    return nb_res, estimate, pools, PfsRequest(variety, float(nbytes))


class Pfsbw(PybatsimScheduler):
    """pybatsim scheduler of the pfsbw family (see the module documentation).

    Public state: ``estimator`` (:class:`VarietyEstimator`), ``measured``
    (:class:`RecentThroughput` or None), ``trace`` (list of per-pass rows).

    :raises InputError: unknown policy/variant, bad option values, an
        unreadable pretrain file.
    """

    OPTIONS = OPTIONS

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
        self.estimator = VarietyEstimator(option_number(opts, "decay", DECAY, minimum=0, maximum=1,
                                                        exclusive_minimum=True))
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
        pools = {} if pol == "slurm-backfill" else {POOL: self.limit}
        return Scheduler(SlurmBackfill(self._tracker, self.backfill_max), order=fcfs,
                         read_job=self._read_job, pools=pools, name="Pfsbw")

    def _read_job(self, batsim_job) -> tuple:
        nodes = self.core.machine.nodes
        return read_pfs_job(batsim_job, nodes[0].cores if nodes else 1)

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
    def launch(self, running) -> None:
        """EXECUTE_JOB on the job's whole nodes, its ``res`` executors
        mapped to the first allocated cores when fewer (``mapping``), the
        label ``pfs`` mapped to the platform's (first) storage host."""
        job = running.job.batsim
        storage = self.core.machine.storage
        if storage:
            job.storage_mapping = {"pfs": min(storage)}
        if job.requested_resources < len(running.resources):
            job.mapping = {str(i): i for i in range(job.requested_resources)}
        super().launch(running)

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
