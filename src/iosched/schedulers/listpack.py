"""I/O-aware list and pack schedulers of Jeannot, Pallez & Vidal (IJHPCA 2023).

Launch: ``pybatsim schedulers/listpack.py -o '{"policy": "io-pack-char"}'``
with the engine run with ``--enable-dynamic-jobs`` (embedded engine or real
Batsim 4.2.1; no ``--acknowledge-dynamic-jobs``), on a platform with one PFS
storage host behind one link of bandwidth B (``docs/listpack.md``).

Options (pybatsim ``-o`` JSON):

* ``policy`` -- ``io-list`` (FCFS list scheduling, strict constraint: the
  running jobs' average bandwidths never sum above B; the bandwidth is a
  pool of the core's profile), ``io-list-bf`` (the same with EASY
  backfilling), ``io-pack-random``, ``io-pack-max``, ``io-pack-char`` (packs
  under the average constraint, :mod:`iosched.listpack.packs`) and their
  ``-bf`` variants;
* ``io_model`` -- ``exclusive`` (default; the paper's: FIFO, one I/O phase
  at a time, :class:`~iosched.listpack.arbiter.IOArbiter`) or ``shared``
  (SimGrid's fair sharing of the I/O node's link);
* ``bandwidth`` -- B in bytes/s (default
  :data:`~iosched.listpack.model.DEFAULT_BANDWIDTH`, as the generators);
  a job's ``io.throughput_cap`` (the per-node cap ``Q_i b``, issue 30, on a
  platform whose node links carry ``b`` per node) makes every ``T_i(B)``,
  ``beta_i`` and characteristic time the job's alone at ``min(Q_i b, B)``
  (:class:`~iosched.listpack.model.PeriodicJob`);
* ``seed`` (int, Random packs), ``char_order`` (``decreasing`` /
  ``increasing``), ``pfs`` (storage host name, default ``"pfs"``).

Workload jobs carry ``nodes``, ``periods``, ``w`` (s) and ``v`` (bytes)
(:mod:`iosched.experiments.listpack.workload`). A started job ``w0!J`` is rejected and
run (:func:`iosched.sched.ioplan.plan_for`, the part ``io.periodic``) by the core's executor (:mod:`iosched.sched.executor`) as dynamic jobs
of the workload ``bb`` (:mod:`iosched.batsim.dynamic`), one per phase,
period ``k = 0..n-1`` being phases ``2k`` and ``2k + 1``: ``bb!J:2k`` (a
``delay`` of ``w`` on all the job's resources) then ``bb!J:2k+1`` (a
``parallel_homogeneous_pfs`` writing ``v`` bytes from the job's first
resource to the PFS, ``storage_mapping`` pfs -> the PFS's id), which starts
when the I/O arbiter grants it. Each phase gets its own profile ``J:k``
(Batsim collects a dynamic profile when its job ends) and no walltime. The
job's resources are held by the core from its start to the end of its last
I/O phase.
"""

from __future__ import annotations

import math


from iosched.batsim.jobs import walltime_seconds
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.listpack.arbiter import IO_MODELS, IOArbiter
from iosched.listpack.model import DEFAULT_BANDWIDTH, PeriodicJob
from iosched.listpack.packs import PackPolicy, order_key
from iosched.sched.adapter import PybatsimScheduler
from iosched.sched.core import Scheduler
from iosched.sched.ioplan import PERIODIC, Rules
from iosched.sched.iorecord import BANDWIDTH
from iosched.sched.iojob import read_io
from iosched.sched.orders import fcfs
from iosched.sched.policies import Easy, Fcfs

__all__ = ["Listpack", "POLICIES", "OPTIONS", "BW_POOL", "read_periodic_job"]

POLICIES = ("io-list", "io-list-bf", "io-pack-random", "io-pack-max", "io-pack-char",
            "io-pack-random-bf", "io-pack-max-bf", "io-pack-char-bf")
#: The options the scheduler reads (``iosched.sched.options``): name -> meaning.
OPTIONS = {
    "policy": "io-list, io-pack-random, io-pack-max, io-pack-char, each also with -bf",
    "io_model": "exclusive (FIFO I/O arbiter, default) or shared (SimGrid fair sharing)",
    "char_order": "Char packs: decreasing (default) or increasing characteristic time",
    "bandwidth": "bandwidth B of the I/O node, bytes/s",
    "seed": "seed of the Random packs (int)",
    "pfs": "host name of the file system (pfs)",
}
#: Name of the bandwidth pool (bytes/s) of io-list.
BW_POOL = "bw"


def read_periodic_job(job_json) -> PeriodicJob:
    """The :class:`~iosched.listpack.model.PeriodicJob` of a workload job:
    its I/O model (:func:`iosched.sched.iojob.read_io`: ``io.nodes`` and
    ``io.periodic``, or the earlier fields ``nodes``, ``periods``, ``w``,
    ``v``; ``io.throughput_cap``, the per-node cap ``Q_i b``, when the
    workload has one) and the plain field ``x`` (the draw's record, default 0).

    :raises InputError: a field missing, not a number or out of range (one
        line naming the job and the field).
    """
    jid = job_json.get("id")
    io = read_io(job_json, f"job {jid}")
    if io.nodes is None or io.periodic is None:
        missing = "io.nodes" if io.nodes is None else "io.periodic"
        raise InputError(f"job {jid}: listpack fields missing or invalid ({missing} is missing; "
                         "or the fields nodes, periods, w, v)")
    try:
        x = float(job_json.get("x", 0.0))
    except (TypeError, ValueError):
        raise InputError(f"job {jid}: x={job_json.get('x')!r} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"job {jid}: x={x!r} is not a finite number")
    return PeriodicJob.of(io, x)


class Listpack(PybatsimScheduler):
    """pybatsim scheduler of the list / pack policies (module doc).

    Public state: ``arbiter`` (:class:`~iosched.listpack.arbiter.IOArbiter`),
    ``phases`` (number of phase jobs launched), ``completed`` (static id ->
    final state), ``pack_policy`` (the :class:`PackPolicy`, or None).

    :raises InputError: unknown policy or bad option.
    """

    OPTIONS = OPTIONS
    DYNAMIC_JOBS = True
    #: periodic jobs only (their writes gated by the I/O arbiter)
    SERVES = frozenset({PERIODIC})
    #: A phase's end changes nothing the core sees (the job holds its
    #: resources until its last I/O phase), so a message holding only phase
    #: events gets no pass -- unless a running job's estimate has just run
    #: out (:meth:`onNoMoreEvents`).
    SKIP_INTERNAL_PASSES = True

    def make_core(self, options: dict) -> Scheduler:
        pol = str(options.get("policy", "io-list"))
        if pol not in POLICIES:
            raise InputError(f"policy={pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        model = str(options.get("io_model", "exclusive"))
        if model not in IO_MODELS:
            raise InputError(f"io_model={model!r} is unknown; expected one of {', '.join(IO_MODELS)}")
        char_order = str(options.get("char_order", "decreasing"))
        if char_order not in ("decreasing", "increasing"):
            raise InputError(f"char_order={char_order!r}: expected decreasing or increasing")
        self.policy_name, self.io_model = pol, model
        self.B = option_number(options, "bandwidth", DEFAULT_BANDWIDTH, minimum=0, exclusive_minimum=True)
        self.seed = option_number(options, "seed", 0, integer=True, minimum=0)
        self.pfs = str(options.get("pfs", "pfs"))
        self.arbiter = IOArbiter(model)
        # a capped job's writes need no more hosts than reach B (ioplan.Rules)
        self.RULES = Rules(io_bandwidth=self.B)
        self._pfs_id = None
        bf = pol.endswith("-bf")
        base = pol[:-3] if bf else pol
        self.pack_policy = None
        if base == "io-list":
            return Scheduler(Easy() if bf else Fcfs(), order=fcfs, read_job=self._read_list,
                             pools={BW_POOL: self.B}, name="Listpack")
        self.pack_policy = PackPolicy(self.B, backfill=bf)
        return Scheduler(self.pack_policy, order=order_key(base.split("-")[-1], self.B, self.seed, char_order),
                         read_job=self._read_pack, name="Listpack")

    # ------------------------------------------------------------ jobs
    def _read_list(self, batsim_job) -> tuple:
        spec = read_periodic_job(batsim_job.json_dict)
        return batsim_job.requested_resources, spec.time(self.B), {BW_POOL: spec.bandwidth(self.B)}, spec

    def _read_pack(self, batsim_job) -> tuple:
        spec = read_periodic_job(batsim_job.json_dict)
        return batsim_job.requested_resources, spec.time(self.B), {}, spec

    def foreign_job(self, batsim_job, io) -> tuple:
        """A job without ``io.periodic``: one period of its walltime (s, the
        estimate) writing nothing, on ``io.nodes`` nodes (default its
        resources), so the bandwidth arbiter and the packs count no I/O
        for it (bandwidth 0)."""
        wall = walltime_seconds(getattr(batsim_job, "requested_time", None))
        res = batsim_job.requested_resources
        spec = PeriodicJob(io.nodes if io.nodes is not None else int(res), 1, wall, 0.0)
        pools = {BW_POOL: 0.0} if self.pack_policy is None else {}
        return res, spec.time(self.B), pools, spec

    @property
    def phases(self) -> int:
        """Number of phase jobs launched."""
        return self.executor.phases_started

    @property
    def completed(self) -> dict:
        """Static id -> final state of the ended jobs."""
        return self.executor.ended

    def _pfs(self) -> int:
        if self._pfs_id is None:
            ids = [i for i, name in self.core.machine.storage.items() if name == self.pfs]
            if not ids:
                raise InputError(f"platform: no storage host named {self.pfs!r} (option pfs)")
            self._pfs_id = ids[0]
        return self._pfs_id

    def allocation(self, running, io):
        """The placer's allocation with the I/O arbiter as the gate of the
        job's writes (the core runs its periods,
        :func:`iosched.sched.ioplan.plan_for`)."""
        a = running.allocation
        return a.with_io(a.mapping, a.storage_mapping, a.inputs, gate=self.arbiter)

    def pfs_id(self):
        """The PFS's resource id (the storage host named by option ``pfs``)."""
        return self._pfs()

    def io_holds(self, running, io) -> tuple:
        """For the I/O record: the job's average bandwidth ``n v / T(B)``
        (bytes/s), what io-list holds of the pool B and the packs sum
        against B (Jeannot, Pallez & Vidal, the average constraint)."""
        return ((BANDWIDTH, "", running.job.request.bandwidth(self.B), "bytes/s"),)

    def io_capacity(self, kind: str):
        """For the I/O record: B (bytes/s) for the bandwidth shares."""
        return self.B if kind == BANDWIDTH else None

    def _overrun_due(self, now: float) -> bool:
        """Whether a running job's estimated end ``T_i(B)`` (not yet
        extended by the core) is at or before ``now`` (s)."""
        for rec in self.core.running.values():
            res = rec.reservation
            # the core extends an overrun to [pass time, next float): one ulp
            if res.end <= now and res.end != math.nextafter(res.start, math.inf):
                return True
        return False

    def onNoMoreEvents(self):
        """The pass of the shared core, skipped for a message of phase
        events only unless an estimate ran out since the last pass: then
        the pass extends it, which can move EASY's head reservation. Any
        other pass would find the same free resources and no start (the
        list and pack policies only start jobs on freed resources or
        within an estimate that only shrinks as time passes), so the
        schedule is the one with a pass at every message."""
        if not self._for_core and self.core.profile is not None and not self.core.ended:
            if self._overrun_due(self.bs.time()):
                self._core_event()
        super().onNoMoreEvents()
