"""Burst-buffer-aware schedulers of Kopanski & Rzadca (Euro-Par 2021).

Launch: ``pybatsim schedulers/burstbuffer.py -o '{"policy": "sjf-bb"}'`` with
the engine run with ``--enable-dynamic-jobs`` (embedded engine or real Batsim
4.2.x; do *not* pass ``--acknowledge-dynamic-jobs``).

Options (pybatsim ``-o`` JSON). Defaults follow the paper's artifact
(jankopanski/Burst-Buffer-Scheduling, final version); the values iosched
used before issue 13 stay available where they are defensible modelling
choices (docs/burst-buffers.md, "Artifact semantics and options"):

* ``policy`` -- ``fcfs`` (no backfilling), ``fcfs-easy`` (EASY, reservation
  of compute nodes only), ``filler`` (start whatever fits, no reservation),
  ``fcfs-bb`` (EASY with a simultaneous node + burst-buffer reservation),
  ``sjf-bb`` (the same, with the backfill candidates sorted by walltime:
  jobs start in FCFS order while they fit and the reservation goes to the
  first FCFS job that does not -- paper Algorithm 1, artifact
  ``alloc_only.py``), ``sjf-bb-head`` (iosched before issue 13: the whole
  queue sorted by walltime, so the reservation goes to the shortest waiting
  job that does not fit), ``plan-1``, ``plan-2``, ``plan-3`` (plan-based
  with simulated annealing, alpha = 1, 2, 3). Aliases with the prefix
  ``bb-`` are accepted (``bb-fcfs``...);
* plan-based only (:class:`iosched.bb.search.PlanOrder`): ``search``
  (``"artifact"``, default, or the legacy ``"iosched"``: :mod:`iosched.bb.legacy`), ``reservation_depth`` (int, default 1 as the
  artifact's 1,000-job setup; its 16-part setup uses 0): the first jobs of
  the queue that are placed in FCFS order before the others are ordered,
  ``seed`` (int, default 0: the simulation's random generator),
  ``time_limit`` (s of wall clock per search, default 0 = none; the
  artifact: 20), ``alpha`` (float, overrides the policy's),
  ``evaluator`` (``"compiled"``, default: the search's list scheduling in
  machine code, :mod:`iosched.bb.compiled`, for ``nodes`` and ``storage``
  ``"first"``, else the Python path; ``"python"``: always the Python
  path; both give the same schedule), and for
  ``search: "iosched"``: ``iterations`` (200), ``chi0`` (0.8), ``cooling``
  (0.9);
* ``bb_capacity`` -- bytes per burst-buffer node (default
  :data:`DEFAULT_BB_CAPACITY`, 40 GB; 39.37e9 is the paper's computed
  value); ``pfs`` -- host name of the PFS (``"pfs"``);
* ``nodes`` -- compute-node choice, ``"first"`` (default) or
  ``"consecutive"``; ``storage`` -- burst-buffer node choice within a
  proximity tier, ``"first"`` (default) or ``"most-free"``
  (:mod:`iosched.bb.placement`);
* ``encoding`` -- ``"phases"`` (default: one dynamic job per phase, runs on
  the real Batsim 4.2.1) or ``"composed"`` (one dynamic job with a composed
  profile: embedded engine only) (:mod:`iosched.sched.bbrun`);
* ``stats`` -- path of a JSON file written at the end of the simulation with
  one record per plan-based scheduling pass (``time``, ``queue`` length,
  ``skipped``, ``evaluations``, ``placements``, wall-clock ``seconds`` of the
  decision); for benchmarks (:mod:`iosched.experiments.bench.bb`), never read back;
* ``period`` -- if > 0, also ask to be called every ``period`` s while jobs
  wait (the "scheduler every minute" of the paper's example).

Every workload job needs the extra fields ``bb`` (bytes per node), ``flops``
(per node) and ``com`` (bytes per pair and phase) -- see
:mod:`iosched.experiments.bb.workload`; :mod:`iosched.sched.bbrun` says how a started job is
run. Jobs that can never fit (more nodes than the machine, ``bb`` larger than
one burst-buffer node, more burst buffers than the machine holds) are
rejected, as in the artifact (``alloc_only.py::_validate_job``).

Each policy is order x policy x placer on the shared core
(:mod:`iosched.sched`): the placer is
:class:`~iosched.bb.placement.BurstBufferPlacer`; ``fcfs-easy`` reserves the
head job's nodes with :class:`~iosched.bb.placement.NodesOnlyPlacer`; the
plan-based policies list-schedule (:mod:`iosched.sched.listschedule`) the
order chosen by :class:`iosched.bb.search.PlanOrder`
(:func:`iosched.bb.plan.artifact_order`, or the legacy
:func:`iosched.bb.legacy.best_order`); ``sjf-bb-head`` is
:func:`iosched.bb.legacy.sjf_bb_head`. This file binds the options and keeps
the Batsim side to the core: each started job runs as one dynamic job per
phase (:func:`iosched.sched.ioplan.plan_for`, :mod:`iosched.sched.bbrun`),
by the core's executor (:mod:`iosched.sched.executor`, walltime rule
``DEADLINE``); the launcher gives the PFS and the composed-encoding rule.

Sources: paper Sections 3-4; artifact ``burstbuffer/alloc_only.py``,
``io_aware.py``, ``scheduler_options.json``.
"""

from __future__ import annotations

import json
import math

from procset import ProcSet

from iosched.batsim.jobs import walltime_seconds
from iosched.bb import model
from iosched.bb.legacy import LEGACY_POLICIES, sjf_bb_head
from iosched.bb.placement import NODE_CHOICES, STORAGE_CHOICES, BurstBufferPlacer, NodesOnlyPlacer
from iosched.bb.search import EVALUATORS, SEARCHES, PlanOrder
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.sched.adapter import PybatsimScheduler
from iosched.sched.core import Scheduler
from iosched.sched.executor import BB_TIER
from iosched.sched.ioplan import BURST_BUFFER, Rules
from iosched.sched.listschedule import ListSchedule, waiting_cost
from iosched.sched.orders import fcfs, sjf
from iosched.sched.policies import Easy, Fcfs, Filler

__all__ = ["Burstbuffer", "POLICIES", "ENCODINGS", "EVALUATORS", "DEFAULT_BB_CAPACITY", "OPTIONS"]

#: The options the scheduler reads (``iosched.sched.options``): name -> meaning.
OPTIONS = {
    "policy": "fcfs, fcfs-easy, filler, fcfs-bb, sjf-bb, sjf-bb-head, plan-1, plan-2, plan-3",
    "seed": "seed of the plan search's random generator (int)",
    "alpha": "exponent of the plan score (overrides plan-k's k)",
    "search": "plan search: artifact (default) or iosched",
    "reservation_depth": "plan-k: jobs placed in FCFS order before the search (int, default 1)",
    "time_limit": "plan-k: wall-clock limit of a search in s (0 = none)",
    "evaluator": "plan-k, search artifact: compiled (default) or python (same schedule)",
    "iterations": "search iosched: evaluations per search (200)",
    "chi0": "search iosched: initial acceptance probability (0.8)",
    "cooling": "search iosched: cooling factor (0.9)",
    "bb_capacity": "bytes per burst-buffer node (default 40e9)",
    "pfs": "host name of the PFS (pfs)",
    "nodes": "compute-node choice: first (default) or consecutive",
    "storage": "burst-buffer node choice in a tier: first (default) or most-free",
    "encoding": "phases (default, real Batsim) or composed (embedded engine only)",
    "stats": "path of a JSON file of per-pass plan statistics (benchmarks)",
    "period": "call the scheduler every period s while jobs wait",
}

#: Job encodings (option ``encoding``): one dynamic job per phase (runs on
#: the real Batsim 4.2.1), or one job with a composed profile (embedded
#: engine only: the real Batsim 4.2.1 crashes on composed dynamic profiles).
ENCODINGS = ("phases", "composed")

INF = float("inf")


#: Burst-buffer capacity per storage node (bytes): the artifact's 40 GB
#: (``platforms/dragonfly96.yaml``). The paper's reasoning gives 39.37 GB
#: (:func:`iosched.experiments.bb.workload.expected_capacity_per_storage`), which the
#: artifact rounds; ``{"bb_capacity": 39.37e9}`` selects it.
DEFAULT_BB_CAPACITY = 40e9

#: The paper's policies, plus the legacy ``sjf-bb-head`` (iosched before
#: issue 13: the whole queue sorted by walltime, so the reservation goes to
#: the shortest waiting job that does not fit; :mod:`iosched.bb.legacy`).
POLICIES = ("fcfs", "fcfs-easy", "filler", "fcfs-bb", "sjf-bb", *LEGACY_POLICIES, "plan-1",
            "plan-2", "plan-3")


def read_bb_job(batsim_job) -> tuple:
    """``(nb_res, estimate, pools, request)`` of a burst-buffer workload job
    (:func:`iosched.bb.model.job_request`; its walltime is the estimate).

    :raises InputError: the burst-buffer fields are missing or invalid.
    """
    req = model.job_request(batsim_job.json_dict)
    return req.nodes, req.walltime, {}, req


class Burstbuffer(PybatsimScheduler):
    """pybatsim scheduler for the burst-buffer policies (see module doc).

    Public state: ``profile`` (AvailabilityProfile: compute nodes + pools
    ``bb:<storage id>``), ``topology``, ``started`` (list of ``(time,
    static id, nodes ProcSet, {node: storage id})``), ``completed`` (dict
    static id -> final state, :attr:`Executor.ended
    <iosched.sched.executor.Executor.ended>`), ``rejections`` (dict id ->
    reason), ``searches`` (list of plan search summaries).

    :raises InputError: unknown policy or bad option.
    """

    OPTIONS = OPTIONS
    DYNAMIC_JOBS = True
    #: burst-buffer jobs only: the placer gives each compute node its burst-buffer node
    SERVES = frozenset({BURST_BUFFER})
    #: a message holding only phase completions runs no pass (the composed
    #: encoding has no such message, so both encodings decide alike)
    SKIP_INTERNAL_PASSES = True

    def foreign_job(self, batsim_job, io) -> tuple:
        """A job without ``io.burst_buffer``: a request of its nodes with no
        burst buffer (``bb`` 0: the placer gives it compute nodes only,
        :class:`~iosched.bb.placement.BurstBufferPlacer`), its walltime the
        estimate."""
        req = model.JobRequest(int(batsim_job.requested_resources), 0.0, 0.0, 0.0,
                               walltime_seconds(getattr(batsim_job, "requested_time", None)))
        return req.nodes, req.walltime, {}, req

    def make_core(self, options: dict) -> Scheduler:
        opts = options
        pol = str(opts.get("policy", "fcfs-bb"))
        if pol.startswith("bb-"):
            pol = pol[3:]
        if pol not in POLICIES:
            raise InputError(f"policy={pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        self.policy = pol
        alpha = option_number(opts, "alpha", int(pol[-1]) if pol.startswith("plan-") else 1,
                              minimum=0, exclusive_minimum=True)
        search_opts = dict(
            search=str(opts.get("search", SEARCHES[0])),
            evaluator=str(opts.get("evaluator", EVALUATORS[0])),
            depth=option_number(opts, "reservation_depth", 1, integer=True, minimum=0),
            time_limit=option_number(opts, "time_limit", 0, minimum=0),
            seed=option_number(opts, "seed", 0, integer=True, minimum=0),
            iterations=option_number(opts, "iterations", 200, integer=True, minimum=0),
            chi0=option_number(opts, "chi0", 0.8, minimum=0, maximum=1, exclusive_minimum=True),
            cooling=option_number(opts, "cooling", 0.9, minimum=0, maximum=1, exclusive_minimum=True))
        self.capacity = option_number(opts, "bb_capacity", DEFAULT_BB_CAPACITY, minimum=0,
                                      exclusive_minimum=True)
        self.period = option_number(opts, "period", 0, minimum=0) if opts.get("period") else 0.0
        self.stats_path = opts.get("stats")
        self.placer = BurstBufferPlacer(self.capacity, str(opts.get("pfs", "pfs")),
                                        nodes=str(opts.get("nodes", NODE_CHOICES[0])),
                                        storage=str(opts.get("storage", STORAGE_CHOICES[0])))
        self.encoding = str(opts.get("encoding", "phases"))
        if self.encoding not in ENCODINGS:
            raise InputError(f"encoding={self.encoding!r} is unknown; expected one of {', '.join(ENCODINGS)}")
        self.RULES = Rules(composed=self.encoding == "composed")
        self.started: list = []
        self._calls: set = set()
        # the search's options are checked for every policy, as before
        self.plan_order = PlanOrder(self.placer, alpha, **search_opts)
        order = fcfs
        if pol.startswith("plan-"):
            policy = ListSchedule(self.plan_order, waiting_cost(alpha))
        elif pol in LEGACY_POLICIES:
            policy, order = sjf_bb_head()
        else:
            policy = {
                "fcfs": Fcfs(),
                "fcfs-easy": Easy(reserve_with=NodesOnlyPlacer(self.placer)),
                "filler": Filler(),
                "fcfs-bb": Easy(),
                "sjf-bb": Easy(backfill_order=sjf),
            }[pol]
        return Scheduler(policy, self.placer, order, read_job=read_bb_job, name="Burstbuffer")

    @property
    def searches(self) -> list:
        """Summaries of the plan searches, one per plan-based pass
        (:attr:`iosched.bb.search.PlanOrder.searches`)."""
        return self.plan_order.searches

    @property
    def topology(self):
        """The dragonfly's :class:`~iosched.bb.placement.Topology` (None
        before SIMULATION_BEGINS)."""
        return self.placer.topology

    @property
    def completed(self) -> dict:
        """Static id -> final state of the ended jobs (a phase that
        completed at the walltime while phases remain ends its job as
        ``COMPLETED_WALLTIME_REACHED``)."""
        return self.executor.ended

    # ------------------------------------------------------- Batsim side
    def allocation(self, running, io):
        """The placer's allocation (``data``: compute id -> burst-buffer
        node), recorded in ``started``; the core runs the job's burst-buffer
        phases on it (:func:`iosched.sched.ioplan.plan_for`)."""
        alloc = running.allocation
        self.started.append((running.start, running.job.id, ProcSet(alloc.resources), dict(alloc.data)))
        return alloc

    def pfs_id(self):
        """The PFS's resource id (the placer's, option ``pfs``)."""
        return self.placer.pfs

    def io_capacity(self, kind: str):
        """For the I/O record: the bytes all burst-buffer nodes hold
        (option ``bb_capacity`` per node)."""
        if kind != BB_TIER or self.placer.topology is None:
            return None
        return self.capacity * len(self.placer.topology.bbs)

    def after_pass(self, now: float) -> None:
        """Periodic calls while jobs wait (option ``period``)."""
        core = self.core
        if self.period > 0 and len(core):
            t = (math.floor(now / self.period + 1e-9) + 1) * self.period
            if t not in self._calls:
                self._calls.add(t)
                self.bs.wake_me_up_at(t)

    def onSimulationEnds(self):
        super().onSimulationEnds()
        if self.stats_path:
            with open(self.stats_path, "w") as f:
                json.dump({"policy": self.policy, "passes": self.core.passes,
                           "searches": [{k: v for k, v in r.items() if k != "order"}
                                        for r in self.searches]}, f)
