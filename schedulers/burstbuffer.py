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
  decision); for benchmarks (:mod:`iosched.bb.bench`), never read back;
* ``period`` -- if > 0, also ask to be called every ``period`` s while jobs
  wait (the "scheduler every minute" of the paper's example).

Every workload job needs the extra fields ``bb`` (bytes per node), ``flops``
(per node) and ``com`` (bytes per pair and phase) -- see
:mod:`iosched.bb.workload`; :mod:`iosched.bb.model` says how a started job is
run. Jobs that can never fit (more nodes than the machine, ``bb`` larger than
one burst-buffer node, more burst buffers than the machine holds) are
rejected, as in the artifact (``alloc_only.py::_validate_job``).

Sources: paper Sections 3-4; artifact ``burstbuffer/alloc_only.py``,
``io_aware.py``, ``scheduler_options.json``.
"""

from __future__ import annotations

import json
import logging
import math
import time

from batsim.batsim import BatsimScheduler
from procset import ProcSet

from iosched.availability import INF, AvailabilityProfile
from iosched.bb import model, plan
from iosched.bb.placement import (PlanTimeline, Topology, earliest_nodes, earliest_placement, fit_at,
                                  pool_name)
from iosched.errors import InputError

#: Burst-buffer capacity per storage node (bytes): the expected request of a
#: fully busy machine divided over the 12 burst-buffer nodes, see
#: :func:`iosched.bb.workload.expected_capacity_per_storage`
#: (39.37 GB; the artifact rounds it to 40 GB).
DEFAULT_BB_CAPACITY = 39.37e9

POLICIES = ("fcfs", "fcfs-easy", "filler", "fcfs-bb", "sjf-bb", "plan-1", "plan-2", "plan-3")


class _Waiting:
    __slots__ = ("job", "seq", "estimate", "nodes", "bb", "req", "subtime")

    def __init__(self, job, seq, req):
        self.job, self.seq, self.req = job, seq, req
        self.estimate = req.walltime
        self.nodes = req.nodes
        self.bb = req.bb
        self.subtime = float(job.submit_time)


class _Running:
    __slots__ = ("w", "start", "nodes", "bb_of", "reservation", "run_id")

    def __init__(self, w, start, nodes, bb_of, reservation, run_id):
        self.w, self.start, self.nodes, self.bb_of = w, start, nodes, bb_of
        self.reservation, self.run_id = reservation, run_id


class Burstbuffer(BatsimScheduler):
    """pybatsim scheduler for the burst-buffer policies (see module doc).

    Public state: ``profile`` (AvailabilityProfile: compute nodes + pools
    ``bb:<storage id>``), ``topology``, ``started`` (list of ``(time,
    static id, nodes ProcSet, {node: storage id})``), ``completed`` (dict
    static id -> final state), ``rejections`` (dict id -> reason),
    ``searches`` (list of plan search summaries).

    :raises InputError: unknown policy or bad option.
    """

    def __init__(self, options=None):
        super().__init__(dict(options or {}))
        opts = self.options
        pol = str(opts.get("policy", "fcfs-bb"))
        if pol.startswith("bb-"):
            pol = pol[3:]
        if pol not in POLICIES:
            raise InputError(f"policy={pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        self.policy = pol
        self.seed = int(opts.get("seed", 0))
        self.alpha = float(opts.get("alpha", int(pol[-1]) if pol.startswith("plan-") else 1))
        self.iterations = int(opts.get("iterations", 200))
        self.chi0 = float(opts.get("chi0", 0.8))
        self.cooling = float(opts.get("cooling", 0.9))
        self.capacity = float(opts.get("bb_capacity", DEFAULT_BB_CAPACITY))
        self.pfs_name = str(opts.get("pfs", "pfs"))
        self.period = float(opts.get("period", 0) or 0)
        self.stats_path = opts.get("stats")
        if self.capacity <= 0 or self.period < 0 or self.alpha <= 0:
            raise InputError("bb_capacity and alpha must be > 0, period >= 0")
        self.logger = logging.getLogger("iosched.sched.Burstbuffer")
        self.profile = None
        self.topology = None
        self.pfs = None
        self.queue: list = []
        self.running: dict = {}       # static id -> _Running
        self.by_run: dict = {}        # run id -> static id
        self.started: list = []
        self.completed: dict = {}
        self.rejections: dict = {}
        self.searches: list = []
        self.head_reservation = None
        self._seq = 0
        self._pass = 0
        self._notified = False
        self._calls = set()

    # ------------------------------------------------------------ events
    def onSimulationBegins(self):
        machines = self.bs.machines
        compute = {int(m["id"]): m["name"] for m in machines.get("compute", [])}
        storage = {int(m["id"]): m["name"] for m in machines.get("storage", [])}
        pfs = [i for i, n in storage.items() if n == self.pfs_name]
        if len(pfs) != 1:
            raise InputError(f"the platform needs exactly one storage host named {self.pfs_name!r}")
        self.pfs = pfs[0]
        bbs = {i: n for i, n in storage.items() if i != self.pfs}
        if not bbs:
            raise InputError("the platform has no burst-buffer (storage) node besides the PFS")
        self.topology = Topology(compute, bbs)
        self.profile = AvailabilityProfile(ProcSet(*compute), {pool_name(s): self.capacity for s in bbs},
                                           now=self.bs.time())

    def onJobSubmission(self, job):
        if job.workload == model.DYN_WORKLOAD:
            return  # acknowledgement of our own run job
        try:
            req = model.job_request(job.json_dict)
        except InputError as exc:
            return self._reject(job, str(exc))
        reason = self._impossible(req)
        if reason:
            return self._reject(job, reason)
        self.queue.append(_Waiting(job, self._seq, req))
        self._seq += 1

    def onJobCompletion(self, job):
        self._finish(job.id, getattr(job.job_state, "name", str(job.job_state)))

    def onJobsKilled(self, jobs):
        for job in jobs:
            self._finish(job.id, "KILLED")

    def onRequestedCall(self):
        pass

    def onSimulationEnds(self):
        if self.stats_path:
            with open(self.stats_path, "w") as f:
                json.dump({"policy": self.policy, "passes": self._pass,
                           "searches": [{k: v for k, v in r.items() if k != "order"}
                                        for r in self.searches]}, f)

    def onNoMoreEvents(self):
        if self.profile is None:
            return
        now = self.bs.time()
        self.profile.advance(now)
        self._handle_overruns(now)
        self._pass += 1
        if self.queue:
            name = "plan" if self.policy.startswith("plan-") else self.policy.replace("-", "_")
            getattr(self, "_pass_" + name)(now)
        if self.period > 0 and self.queue:
            t = (math.floor(now / self.period + 1e-9) + 1) * self.period
            if t not in self._calls:
                self._calls.add(t)
                self.bs.wake_me_up_at(t)
        if (self.bs.no_more_static_jobs and not self.queue and not self.running
                and not self._notified):
            self._notified = True
            self.bs.notify_registration_finished()

    # --------------------------------------------------------- internals
    def _impossible(self, req):
        ncomp = len(self.topology.compute)
        if req.nodes > ncomp:
            return f"requests {req.nodes} nodes, the machine has {ncomp}"
        if req.bb > self.capacity:
            return f"requests {req.bb:.0f} bytes per node, a burst-buffer node holds {self.capacity:.0f}"
        if req.nodes > int(self.capacity // req.bb) * len(self.topology.bbs):
            return "requests more burst buffers than the machine holds"
        return None

    def _reject(self, job, reason):
        self.rejections[job.id] = reason
        self.logger.warning("rejecting %s: %s", job.id, reason)
        self.bs.reject_jobs([job])

    def _finish(self, jid, state):
        sid = self.by_run.pop(jid, None)
        if sid is None:
            return
        rec = self.running.pop(sid)
        self.profile.release(rec.reservation, at=self.bs.time())
        self.completed[sid] = state

    def _handle_overruns(self, now):
        for rec in self.running.values():
            r = rec.reservation
            if r.end <= now:  # ran past its walltime estimate: hold until it ends
                rec.reservation = self.profile.reserve(now, math.nextafter(now, INF), rec.nodes,
                                                       self._pools(rec.bb_of, rec.w.bb), tag=r.tag)

    @staticmethod
    def _pools(bb_of, bb):
        return {pool_name(s): b for s, b in model.bb_held(bb_of, bb).items()}

    def _fit_now(self, w, now):
        return fit_at(self.profile, self.topology, w.nodes, w.bb, w.estimate, now)

    def _start(self, w, now, nodes, bb_of, reservation=None):
        if reservation is None:
            reservation = self.profile.reserve(now, now + w.estimate, nodes,
                                               self._pools(bb_of, w.bb), tag=w.job.id)
        self.queue.remove(w)
        run = model.build_run(w.job.id, w.req, list(nodes), bb_of, self.pfs)
        self.bs.register_profiles(model.DYN_WORKLOAD, run.profiles)
        rjob = self.bs.register_job(run.job_id, run.res, run.walltime, run.profile)
        rjob.allocation = run.alloc
        self.bs.execute_job(rjob)
        self.bs.reject_jobs([w.job])
        self.running[w.job.id] = _Running(w, now, nodes, bb_of, reservation, run.job_id)
        self.by_run[run.job_id] = w.job.id
        self.started.append((now, w.job.id, ProcSet(nodes), dict(bb_of)))

    # ----------------------------------------------------------- policies
    def _ordered(self):
        if self.policy == "sjf-bb":
            return sorted(self.queue, key=lambda w: (w.estimate, w.seq))
        return sorted(self.queue, key=lambda w: w.seq)

    def _pass_fcfs(self, now):
        for w in self._ordered():
            got = self._fit_now(w, now)
            if got is None:
                return w
            self._start(w, now, *got)
        return None

    def _pass_filler(self, now):
        for w in self._ordered():
            got = self._fit_now(w, now)
            if got is not None:
                self._start(w, now, *got)

    def _easy(self, now, bb_reservation):
        head = self._pass_fcfs(now)
        if head is None:
            return
        if bb_reservation:
            t, nodes, bb_of = earliest_placement(self.profile, self.topology, head.nodes, head.bb,
                                                 head.estimate, after=now)
            pools = self._pools(bb_of, head.bb) if nodes is not None else {}
        else:
            t, nodes = earliest_nodes(self.profile, self.topology, head.nodes, head.estimate, after=now)
            pools = {}
        hold = None
        if t < INF:
            hold = self.profile.reserve(t, t + head.estimate, nodes, pools, tag=("head", head.job.id))
        self.head_reservation = (head.job.id, t, nodes)
        for w in self._ordered():
            if w is head:
                continue
            got = self._fit_now(w, now)
            if got is not None:
                self._start(w, now, *got)
        if hold is not None:
            self.profile.remove(hold)

    def _pass_fcfs_easy(self, now):
        self._easy(now, bb_reservation=False)

    def _pass_fcfs_bb(self, now):
        self._easy(now, bb_reservation=True)

    def _pass_sjf_bb(self, now):
        self._easy(now, bb_reservation=True)

    def _plan_of(self, order, now):
        """List-schedule ``order``; returns (cost, [(w, t, nodes, bb_of)]).
        The profile is left unchanged."""
        stack = _PlanStack(self, now)
        return stack.evaluate(order), list(stack.out)

    def _pass_plan(self, now):
        t0 = time.perf_counter()
        queue = sorted(self.queue, key=lambda w: w.seq)
        rec = {"time": now, "queue": len(queue)}
        # Nothing fits now -> no plan can start a job now (planning only takes
        # capacity away): skip the search (artifact ``plan_schedule``, "Check if
        # any jobs could be started"). The decisions are those of a full search.
        if not any(fit_at(self.profile, self.topology, w.nodes, w.bb, w.estimate, now) for w in queue):
            rec.update(skipped=True, evaluations=0, seconds=time.perf_counter() - t0)
            self.searches.append(rec)
            return
        stack = _PlanStack(self, now)
        res = plan.best_order(queue, stack.evaluate, seed=self.seed,
                              key=f"{self._pass}:{now!r}", iterations=self.iterations,
                              chi0=self.chi0, cooling=self.cooling)
        stack.evaluate(res.order)
        for w, t, nodes, bb_of in stack.out:
            if nodes is not None and t <= now:
                self._start(w, now, ProcSet(*nodes), bb_of)
        rec.update(skipped=False, cost=res.cost, evaluations=res.evaluations,
                   exhaustive=res.exhaustive, annealed=res.annealed, t0=res.t0,
                   placements=stack.placements, order=[w.job.id for w in res.order],
                   seconds=time.perf_counter() - t0)
        self.searches.append(rec)


class _PlanStack:
    """Incremental list scheduling of orders on a :class:`PlanTimeline` of
    the scheduler's profile (the profile itself is never modified).

    The placements of the last evaluated order stay pushed on the timeline;
    the next order reuses its longest common prefix with it (popping only the
    placements after the prefix) and places the rest. A swap of positions
    ``i < j`` in simulated annealing thus re-places only the jobs from ``i``
    on. Placements and costs are those of list-scheduling the order from
    scratch (same earliest starts, same summation order of the cost).
    """

    def __init__(self, sched, now):
        self.s = sched
        self.tl = PlanTimeline(sched.profile, sched.topology, now)
        self.order, self.out, self.cum = [], [], []
        self.placements = 0

    def _pop_to(self, p):
        tl = self.tl
        while len(self.order) > p:
            if self.out.pop()[2] is not None:  # that placement reserved
                tl.pop()
            self.order.pop()
            self.cum.pop()

    def evaluate(self, order):
        """Cost ``sum (start - submit) ** alpha`` of list-scheduling ``order`` (inf
        if a job never fits)."""
        p, L, cur = 0, min(len(order), len(self.order)), self.order
        while p < L and order[p] is cur[p]:
            p += 1
        self._pop_to(p)
        cost = self.cum[-1] if self.cum else 0.0
        tl, alpha = self.tl, self.s.alpha
        for w in order[p:]:
            self.placements += 1
            t, nodes, bb_of = tl.place(w.nodes, w.bb, w.estimate)
            if nodes is None:
                cost = INF
            else:
                cost += max(0.0, t - w.subtime) ** alpha
            self.order.append(w)
            self.out.append((w, t, nodes, bb_of))
            self.cum.append(cost)
        return cost
