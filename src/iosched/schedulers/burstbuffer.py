"""Burst-buffer-aware schedulers of Kopanski & Rzadca (Euro-Par 2021).

Launch: ``pybatsim schedulers/burstbuffer.py -o '{"policy": "sjf-bb"}'`` with
the engine run with ``--enable-dynamic-jobs`` (embedded engine or real Batsim
4.2.x; do *not* pass ``--acknowledge-dynamic-jobs``).

Options (pybatsim ``-o`` JSON):

* ``policy`` -- ``fcfs`` (no backfilling), ``fcfs-easy`` (EASY, reservation
  of compute nodes only), ``filler`` (start whatever fits, no reservation),
  ``fcfs-bb`` / ``sjf-bb`` (EASY with a simultaneous node + burst-buffer
  reservation, FCFS or SJF order), ``plan-1``, ``plan-2``, ``plan-3``
  (plan-based with simulated annealing, alpha = 1, 2, 3). Aliases with the
  prefix ``bb-`` are accepted (``bb-fcfs``...).
* ``seed`` (int, default 0), ``alpha`` (float, overrides the plan's alpha),
  ``iterations`` (SA evaluations, default 200), ``chi0`` (0.8), ``cooling``
  (0.9) -- plan-based only;
* ``bb_capacity`` -- bytes per burst-buffer node (default
  :data:`DEFAULT_BB_CAPACITY`); ``pfs`` -- host name of the PFS (``"pfs"``);
* ``stats`` -- path of a JSON file written at the end of the simulation with
  one record per plan-based scheduling pass (``time``, ``queue`` length,
  ``skipped``, ``evaluations``, ``placements``, wall-clock ``seconds`` of the
  decision); for benchmarks (:mod:`iosched.bench.bb`), never read back;
* ``period`` -- if > 0, also ask to be called every ``period`` s while jobs
  wait (the "scheduler every minute" of the paper's example).

Every workload job needs the extra fields ``bb`` (bytes per node), ``flops``
(per node) and ``com`` (bytes per pair and phase) -- see
:mod:`iosched.bb.workload`; :mod:`iosched.bb.model` says how a started job is
run. Jobs that can never fit (more nodes than the machine, ``bb`` larger than
one burst-buffer node, more burst buffers than the machine holds) are
rejected, as in the artifact (``alloc_only.py::_validate_job``).

Each policy is order x policy x placer on the shared core
(:mod:`iosched.sched`): the placer is
:class:`~iosched.bb.placement.BurstBufferPlacer`; ``fcfs-easy`` reserves the
head job's nodes with :class:`~iosched.bb.placement.NodesOnlyPlacer`; the
plan-based policies list-schedule (:mod:`iosched.sched.listschedule`) the
order found by :func:`iosched.bb.plan.best_order`. This file keeps the
options and the Batsim side: each started job runs as one dynamic job
(:func:`iosched.bb.model.build_run`).

Sources: paper Sections 3-4; artifact ``burstbuffer/alloc_only.py``,
``io_aware.py``, ``scheduler_options.json``.
"""

from __future__ import annotations

import json
import math
import time

from procset import ProcSet

from iosched.bb import model, plan
from iosched.bb.placement import BurstBufferPlacer, NodesOnlyPlacer
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.sched.adapter import PybatsimScheduler, state_name
from iosched.sched.core import Scheduler
from iosched.sched.listschedule import ListSchedule, waiting_cost
from iosched.sched.orders import fcfs, sjf
from iosched.sched.policies import Easy, Fcfs, Filler

__all__ = ["Burstbuffer", "POLICIES", "DEFAULT_BB_CAPACITY"]

#: Burst-buffer capacity per storage node (bytes): the expected request of a
#: fully busy machine divided over the 12 burst-buffer nodes, see
#: :func:`iosched.bb.workload.expected_capacity_per_storage`
#: (39.37 GB; the artifact rounds it to 40 GB).
DEFAULT_BB_CAPACITY = 39.37e9

POLICIES = ("fcfs", "fcfs-easy", "filler", "fcfs-bb", "sjf-bb", "plan-1", "plan-2", "plan-3")


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
    static id -> final state), ``rejections`` (dict id -> reason),
    ``searches`` (list of plan search summaries).

    :raises InputError: unknown policy or bad option.
    """

    def make_core(self, options: dict) -> Scheduler:
        opts = options
        pol = str(opts.get("policy", "fcfs-bb"))
        if pol.startswith("bb-"):
            pol = pol[3:]
        if pol not in POLICIES:
            raise InputError(f"policy={pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        self.policy = pol
        self.seed = option_number(opts, "seed", 0, integer=True, minimum=0)
        self.alpha = option_number(opts, "alpha", int(pol[-1]) if pol.startswith("plan-") else 1,
                                   minimum=0, exclusive_minimum=True)
        self.iterations = option_number(opts, "iterations", 200, integer=True, minimum=0)
        self.chi0 = option_number(opts, "chi0", 0.8, minimum=0, maximum=1, exclusive_minimum=True)
        self.cooling = option_number(opts, "cooling", 0.9, minimum=0, maximum=1,
                                     exclusive_minimum=True)
        self.capacity = option_number(opts, "bb_capacity", DEFAULT_BB_CAPACITY, minimum=0,
                                      exclusive_minimum=True)
        self.period = option_number(opts, "period", 0, minimum=0) if opts.get("period") else 0.0
        self.stats_path = opts.get("stats")
        self.placer = BurstBufferPlacer(self.capacity, str(opts.get("pfs", "pfs")))
        self.by_run: dict = {}        # run id -> static id
        self.started: list = []
        self.completed: dict = {}
        self.searches: list = []
        self._notified = False
        self._calls: set = set()
        policy = {
            "fcfs": Fcfs(),
            "fcfs-easy": Easy(reserve_with=NodesOnlyPlacer(self.placer)),
            "filler": Filler(),
            "fcfs-bb": Easy(),
            "sjf-bb": Easy(),
        }.get(pol) or ListSchedule(self._plan_order, waiting_cost(self.alpha))
        return Scheduler(policy, self.placer, sjf if pol == "sjf-bb" else fcfs,
                         read_job=read_bb_job, name="Burstbuffer")

    @property
    def topology(self):
        """The dragonfly's :class:`~iosched.bb.placement.Topology` (None
        before SIMULATION_BEGINS)."""
        return self.placer.topology

    # ------------------------------------------------------- Batsim side
    def accepts(self, batsim_job) -> bool:
        """Our own dynamic jobs are not workload jobs."""
        return batsim_job.workload != model.DYN_WORKLOAD

    def completed_id(self, batsim_job):
        """The workload job a dynamic run job ran (None for other jobs)."""
        sid = self.by_run.pop(batsim_job.id, None)
        if sid is not None:
            self.completed[sid] = state_name(batsim_job)
        return sid

    def launch(self, running) -> None:
        """Register the job's run (profiles + one dynamic job), execute it on
        the job's nodes, burst-buffer nodes and the PFS, and reject the
        workload job (its run replaces it)."""
        job, alloc = running.job, running.allocation
        run = model.build_run(job.id, job.request, list(alloc.resources), alloc.data, self.placer.pfs)
        self.bs.register_profiles(model.DYN_WORKLOAD, run.profiles)
        rjob = self.bs.register_job(run.job_id, run.res, run.walltime, run.profile)
        rjob.allocation = run.alloc
        self.bs.execute_job(rjob)
        self.bs.reject_jobs([job.batsim])
        self.by_run[run.job_id] = job.id
        self.started.append((running.start, job.id, ProcSet(alloc.resources), dict(alloc.data)))

    def after_pass(self, now: float) -> None:
        """Periodic calls while jobs wait (option ``period``), and the end of
        dynamic registrations once every job is done."""
        core = self.core
        if self.period > 0 and len(core):
            t = (math.floor(now / self.period + 1e-9) + 1) * self.period
            if t not in self._calls:
                self._calls.add(t)
                self.bs.wake_me_up_at(t)
        if (self.bs.no_more_static_jobs and not len(core) and not core.running
                and not self._notified):
            self._notified = True
            self.bs.notify_registration_finished()

    def onSimulationEnds(self):
        super().onSimulationEnds()
        if self.stats_path:
            with open(self.stats_path, "w") as f:
                json.dump({"policy": self.policy, "passes": self.core.passes,
                           "searches": [{k: v for k, v in r.items() if k != "order"}
                                        for r in self.searches]}, f)

    # -------------------------------------------------------- plan-based
    def _plan_order(self, s, lplan, jobs, now):
        """The order plan-alpha applies: the best found by
        :func:`iosched.bb.plan.best_order`, or None (no search) when no job
        fits now -- planning only takes capacity away, so no plan could
        start a job now (artifact ``plan_schedule``, "Check if any jobs could
        be started"); the decisions are those of a full search."""
        t0 = time.perf_counter()
        queue = sorted(jobs, key=lambda j: j.seq)
        rec = {"time": now, "queue": len(queue)}
        if not any(s.fit_now(j, now) for j in queue):
            rec.update(skipped=True, evaluations=0, seconds=time.perf_counter() - t0)
            self.searches.append(rec)
            return None
        res = plan.best_order(queue, lplan.evaluate, seed=self.seed,
                              key=f"{s.passes}:{now!r}", iterations=self.iterations,
                              chi0=self.chi0, cooling=self.cooling)
        lplan.evaluate(res.order)  # leaves the plan of the chosen order on the timeline
        rec.update(skipped=False, cost=res.cost, evaluations=res.evaluations,
                   exhaustive=res.exhaustive, annealed=res.annealed, t0=res.t0,
                   placements=lplan.placements, order=[j.id for j in res.order],
                   seconds=time.perf_counter() - t0)
        self.searches.append(rec)
        return res.order
