"""Data-locality scheduling (Gonthier et al., RR-9497) on Batsim.

The ten policies of :mod:`iosched.locality.planner` (``policy`` option:
fcfs, eft, lea, leo, lem and their -bf variants; ``W`` 500, ``E`` 1,
``threshold`` 80, ``cache_rule`` artifact|paper, ``leo_rule``
artifact|paper) run as a policy of the shared core
(:class:`iosched.sched.core.Scheduler`), with the artifact's passes: a full
re-plan when a job ended, else the new jobs only after the existing plan
(:mod:`iosched.locality.replay` documents the loop). Planning time is the
engine's time rounded down to the second, as the artifact's integer clock.

A workload job (extra fields ``file``, ``file_size`` in bytes, ``role``,
``history_node``, ``history_start``; see
:func:`iosched.locality.workload.to_batsim`) runs as dynamic jobs with
Batsim-standard profiles (``--enable-dynamic-jobs``; no composed profile):

1. if its file must be loaded on the node: ``ld!<id>``, a
   ``parallel_homogeneous_pfs`` profile reading ``file_size`` bytes from the
   storage ``pfs`` onto the first core of its allocation (SimGrid does the
   transfer; with the ``paper`` platform it takes size/bandwidth);
2. then ``bb!<id>``, a ``delay`` profile of its duration on all its cores,
   with the walltime left. A job whose file is being loaded on the node by
   another job starts its compute phase when that load ends (a
   CALL_ME_LATER); a job whose file is there starts it at once.

The static workload job is rejected (its dynamic jobs replace it), as the
burst-buffer family does. Option ``out``: a CSV of the evaluated jobs and a
summary JSON written at the end (:mod:`iosched.locality.metrics`), plus
``<out>_timing.json`` (scheduler wall and CPU time, time in planning
passes, passes, decisions, and the scheduler's wall time when the last
evaluated job ended; s; these vary from run to run).
"""

from __future__ import annotations

import heapq
import json
import math
import time

from procset import ProcSet

from iosched.batsim.dynamic import PHASE_SEPARATOR, RUN_WORKLOAD, phase_index, phase_job_id
from iosched.batsim.jobs import COMPLETED_SUCCESSFULLY, local_id, walltime_seconds
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.locality.cluster import CACHE_RULES, Cluster
from iosched.locality.metrics import summarize, write_jobs
from iosched.locality.planner import POLICIES, LJob, Planner
from iosched.locality.replay import history_order
from iosched.sched.adapter import PybatsimScheduler, state_name
from iosched.sched.core import Scheduler
from iosched.sched.placer import Allocation

__all__ = ["Locality", "LocalityPolicy", "LocalityCore", "HoldsOnly", "read_locality_job", "LOAD_WORKLOAD",
           "RUN_WORKLOAD"]

#: Workload names of the dynamic jobs: loads and compute phases.
#: Workload of the dynamic jobs: the project's convention
#: (:mod:`iosched.batsim.dynamic`): phase 0 ``bb!J:0`` loads the input file,
#: phase 1 ``bb!J:1`` computes; the metrics merge both into ``w0!J``.
LOAD_WORKLOAD = RUN_WORKLOAD
#: Phase indices of a job's dynamic jobs.
LOAD_PHASE, COMPUTE_PHASE = 0, 1
GB = 1e9


def read_locality_job(batsim_job) -> tuple:
    """``(cores, walltime, {}, LJob)`` of a locality workload job.

    :raises InputError: missing or invalid ``file``/``file_size``/``role``."""
    d = batsim_job.json_dict
    try:
        size = float(d.get("file_size", 0.0)) / GB
        role = int(d.get("role", 1))
        f = int(d.get("file", 0))
    except (TypeError, ValueError):
        raise InputError(f"job {batsim_job.id}: fields file/file_size/role must be numbers") from None
    if not (size >= 0 and math.isfinite(size)):
        raise InputError(f"job {batsim_job.id}: field file_size={d.get('file_size')!r} is not a size in bytes")
    wall = walltime_seconds(getattr(batsim_job, "requested_time", None))
    if not math.isfinite(wall):
        raise InputError(f"job {batsim_job.id}: a walltime is needed")
    prof = d.get("profile")
    try:
        delay = int(d["delay"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"job {batsim_job.id}: field delay (the job's duration in s) is missing") from None
    lj = LJob(batsim_job.id, int(round(float(d.get("orig_subtime", batsim_job.submit_time)))), delay,
              int(round(wall)), int(batsim_job.requested_resources), f, size, role,
              int(d.get("history_start", -1)), int(d.get("history_node", -1)))
    lj.batsim = batsim_job
    lj.hist_start = int(d.get("history_start", -1))
    lj.seq = int(d.get("seq", -1))
    return int(batsim_job.requested_resources), float(lj.walltime), {}, (lj, prof)


def file_order(job) -> tuple:
    """Queue order: the job's rank in the input file (workload field
    ``seq``; the artifact's list order), then arrival."""
    return (job.request[0].seq, job.seq)


class LocalityPolicy:
    """The artifact's passes on the core (see module doc).

    :param make_planner: ``make_planner(cluster) ->``
        :class:`~iosched.locality.planner.Planner`; the
        :class:`~iosched.locality.cluster.Cluster` is built at the first pass
        from the core's machine (nodes of the platform's ``node`` property,
        cores per node, ``memory`` in bytes).
    :raises InputError: a platform without compute node.

    Attributes set by the scheduler: ``cache_rule``, ``bandwidth`` (GB/s),
    ``clock`` (callable giving the engine time, s).
    """

    def __init__(self, make_planner):
        self.make_planner = make_planner
        self.planner = None
        self.seen: set = set()
        self.ended = False
        self.version = 0
        self.index: dict = {}     # resource id -> (node index, core index)
        self.rids: list = []      # node index -> list of resource ids by core index
        self.hist_done = False
        self.plan_wall = self.plan_cpu = 0.0   # time in planning passes (s, wall and CPU)
        self.passes = 0
        self.cache_rule, self.bandwidth, self.clock = "artifact", 0.1, (lambda: 0.0)
        self.ends: list = []      # heap of (planned end = start + walltime, job id)

    def on_job_end(self, s, running, early) -> None:
        """A job ended: its cores and file leave the cluster model."""
        lj = running.job.request[0]
        t = int(math.floor(self.clock() + 1e-6))
        self.planner.c.end(lj.node, lj.cores_used, lj.file, t)
        self.ended = True

    def _build(self, s):
        nodes = s.machine.nodes
        if not nodes:
            raise InputError("locality: the platform has no compute node")
        m = nodes[0].cores
        self.rids = [list(n.resources) for n in nodes]
        mem = nodes[0].memory / GB if nodes[0].memory else 128.0
        self.planner = self.make_planner(Cluster(len(nodes), m, self.bandwidth, mem, cache_rule=self.cache_rule))

    def _start_due(self, s, now, t) -> None:
        c = self.planner.c
        for j in s.queue:
            lj = j.request[0]
            if lj.start == t:
                if any(lj.node.running_end[k] is not None for k in lj.cores_used):
                    # planned after a job killed at its walltime at this second, which
                    # Batsim reports a few ms later: the end triggers a re-plan
                    continue
                res = [self.rids[lj.node.index][k] for k in lj.cores_used]
                lj.transfer, lj.waiting = c.start(lj.node, lj.cores_used, lj.file, lj.size, t, t + lj.walltime)
                s.start(j, now, Allocation(ProcSet(*res)))
                heapq.heappush(self.ends, (t + lj.walltime, j.id))

    def _hold_overruns(self, s, t) -> None:
        """A job killed at its walltime ends a few ms after ``start +
        walltime`` on the engine (the artifact ends it at that second): until
        Batsim reports its end, its cores stay busy one more second."""
        c = self.planner.c
        while self.ends and self.ends[0][0] <= t:
            _, jid = heapq.heappop(self.ends)
            rec = s.running.get(jid)
            if rec is None:
                continue
            lj = rec.job.request[0]
            node = lj.node
            for k in lj.cores_used:
                node.running_end[k] = t + 1
                if node.avail[k] < t + 1:
                    node.avail[k] = t + 1
            c.dirty.add(node.index)
            node.resort()
            heapq.heappush(self.ends, (t + 1, jid))

    def _timed(self, w0: float, c0: float) -> None:
        self.plan_wall += time.perf_counter() - w0
        self.plan_cpu += time.process_time() - c0
        self.passes += 1

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s): history jobs on their nodes (first pass),
        jobs planned at this second start, then a full re-plan if a job
        ended or a plan of the new jobs, then the jobs planned now start."""
        if self.planner is None:
            self._build(s)
        p, c = self.planner, self.planner.c
        t = int(math.floor(now + 1e-6))
        new = [j for j in s.queue if j.id not in self.seen]
        for j in new:
            self.seen.add(j.id)
        if not self.hist_done:
            self.hist_done = True
            for lj in history_order([j.request[0] for j in new if j.request[0].role == -2]):
                since = t - lj.hist_start
                lj.delay = max(1, lj.delay - since)
                lj.walltime = max(1, lj.walltime - since)
                node = c.nodes[(lj.hist_node - 1) % len(c.nodes)]
                eat = max(node.eat(lj.cores), t)
                ids, _ = c.place(node, eat, lj.walltime, lj.cores, t)
                lj.start, lj.node, lj.cores_used = eat, node, ids
            new = [j for j in new if j.request[0].role != -2]
        self._hold_overruns(s, t)
        self._start_due(s, now, t)
        if self.ended and len(s):
            hist = [j for j in s.queue if j.request[0].role == -2]
            rest = [j for j in s.queue if j.request[0].role != -2]
            w0, c0 = time.perf_counter(), time.process_time()
            p.reset(t)
            p.plan([j.request[0] for j in hist + rest], t)
            self._timed(w0, c0)
        elif new:
            w0, c0 = time.perf_counter(), time.process_time()
            p.plan([j.request[0] for j in new], t)
            self._timed(w0, c0)
        self.ended = False
        self._start_due(s, now, t)
        nxt = min((j.request[0].start for j in s.queue if j.request[0].start > t), default=math.inf)
        if nxt < math.inf:
            s.wake_up_at(float(nxt), now)


class Hold:
    """A running job's hold in :class:`HoldsOnly`: ``start``, ``end`` (s),
    ``resources`` (ProcSet), ``tag``."""

    __slots__ = ("start", "end", "resources", "tag")

    def __init__(self, start: float, end: float, resources, tag=None):
        self.start, self.end, self.resources, self.tag = start, end, resources, tag


class HoldsOnly:
    """What the core needs of its availability profile when the policy
    keeps its own cores' times (the locality planner does:
    :class:`~iosched.locality.cluster.Cluster`): the machine's
    ``resources`` and ``pool_totals`` (job rejection), ``advance``, and
    holds whose ``end`` the core reads (overruns, early ends). The core's
    :class:`~iosched.sched.profile.AvailabilityProfile` merges ProcSets of
    the whole machine at every start and end, which on the Uppmax day
    (9,720 one-core resources, each job's cores scattered) took about 85 %
    of the scheduler's time; no decision of this policy reads it. A core
    used twice is still refused, by :meth:`Cluster.start
    <iosched.locality.cluster.Cluster.start>`."""

    def __init__(self, resources, pool_totals: dict, now: float):
        self.resources, self.pool_totals, self.now = resources, dict(pool_totals), now

    def advance(self, now: float) -> None:
        self.now = max(self.now, now)

    def reserve(self, start: float, end: float, resources, pools=None, tag=None) -> Hold:
        return Hold(start, end, resources, tag)

    def release(self, hold: Hold, at=None) -> None:
        """The holder ended at ``at`` (default now): its hold ends there
        (unless it already ended), as ``AvailabilityProfile.release``."""
        a = max(self.now if at is None else at, self.now, hold.start)
        if a < hold.end:
            hold.end = a

    def remove(self, hold: Hold) -> None:
        """Nothing is held beyond the ``Hold`` itself."""


class LocalityCore(Scheduler):
    """The shared core with :class:`HoldsOnly` in place of its
    availability profile (built at SIMULATION_BEGINS as usual, then
    replaced)."""

    def begin(self, machine, now: float) -> None:
        super().begin(machine, now)
        self.profile = HoldsOnly(self.profile.resources, self.profile.pool_totals, now)


#: The options the scheduler reads (``iosched.sched.options``): name -> meaning.
OPTIONS = {
    "policy": "fcfs, eft, lea, leo, lem and their -bf variants (default lea)",
    "W": "weight of the load time in the scores (LEA: 500)",
    "E": "weight of the eviction time in the scores (LEA: 1)",
    "threshold": "LEM: % of busy nodes above which LEA replaces EFT (80)",
    "cache_rule": "artifact (default) or paper",
    "leo_rule": "artifact (default) or paper",
    "out": "path of the per-job output file",
    "bandwidth": "file-system bandwidth per node, bytes/s (0.1e9)",
}


class Locality(PybatsimScheduler):
    """pybatsim scheduler of the locality policies (module doc).

    :raises InputError: unknown policy or bad option.
    """

    OPTIONS = OPTIONS

    def make_core(self, options: dict) -> Scheduler:
        pol = str(options.get("policy", "lea"))
        if pol not in POLICIES:
            raise InputError(f"policy={pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        W = option_number(options, "W", 500, minimum=0)
        E = option_number(options, "E", 1, minimum=0)
        thr = option_number(options, "threshold", 80, minimum=0, maximum=100)
        rule = str(options.get("cache_rule", "artifact"))
        if rule not in CACHE_RULES:
            raise InputError(f"cache_rule={rule!r} is unknown; expected one of {', '.join(CACHE_RULES)}")
        leo_rule = str(options.get("leo_rule", "artifact"))
        self.out = options.get("out")
        self.policy_name = pol
        self.pol = LocalityPolicy(lambda c: Planner(c, pol, W, E, thr, leo_rule))
        self.pol.cache_rule = rule
        self.pol.bandwidth = option_number(options, "bandwidth", 0.1e9, minimum=0, exclusive_minimum=True) / GB
        self.pol.clock = lambda: self.bs.time()
        self.by_dyn: dict = {}       # dynamic job id -> static job id
        self.jobs: dict = {}         # static id -> LJob
        self.t_start: dict = {}      # static id -> start time (s)
        self.pending: list = []      # heap of (time, static id): compute phases waiting for a load
        self._notified = False
        self._t0 = time.perf_counter()
        self._last_eval_wall = None  # scheduler wall time (s) when the last evaluated job so far ended
        return LocalityCore(self.pol, order=file_order, read_job=read_locality_job, name="Locality")

    def accepts(self, batsim_job) -> bool:
        """Our own dynamic jobs are not workload jobs."""
        return batsim_job.workload != RUN_WORKLOAD

    # ------------------------------------------------------------ phases
    def launch(self, running) -> None:
        """Start the load phase, or the compute phase now or when the file's load ends."""
        job = running.job
        lj, _prof = job.request
        self.jobs[job.id] = lj
        self.t_start[job.id] = running.start
        self.bs.reject_jobs([job.batsim])
        if lj.transfer > 0:
            lid = phase_job_id(job.id, LOAD_PHASE)
            pname = f"{local_id(job.id)}{PHASE_SEPARATOR}{LOAD_PHASE}"
            self.bs.register_profiles(RUN_WORKLOAD, {pname: {
                "type": "parallel_homogeneous_pfs", "bytes_to_read": float(lj.size) * GB,
                "bytes_to_write": 0, "storage": "pfs"}})
            rj = self.bs.register_job(lid, 1, lj.walltime, pname)
            rj.allocation = ProcSet(min(running.resources))
            self.bs.execute_job(rj)
            self.by_dyn[lid] = job.id
        elif lj.waiting > 0:
            t = running.start + lj.waiting
            heapq.heappush(self.pending, (t, job.id))
            self.core.wake_up_at(t, self.bs.time())
        else:
            self._compute(job.id, running.start)

    def _compute(self, sid: str, now: float) -> None:
        lj = self.jobs[sid]
        rec = self.core.running.get(sid)
        if rec is None:
            return
        left = lj.walltime - (now - self.t_start[sid])
        rid = phase_job_id(sid, COMPUTE_PHASE)
        name = f"{local_id(sid)}{PHASE_SEPARATOR}{COMPUTE_PHASE}"
        self.bs.register_profiles(RUN_WORKLOAD, {name: {"type": "delay", "delay": float(lj.delay)}})
        rj = self.bs.register_job(rid, len(rec.resources), max(left, 1e-6), name)
        rj.allocation = rec.resources
        self.bs.execute_job(rj)
        self.by_dyn[rid] = sid

    def completed_id(self, batsim_job):
        """The static job a dynamic job ran when the job is over (None while
        its compute phase is still to come)."""
        sid = self.by_dyn.pop(batsim_job.id, None)
        if sid is None:
            return None
        lj = self.jobs[sid]
        now = self.bs.time()
        if phase_index(local_id(batsim_job.id)) == LOAD_PHASE \
                and state_name(batsim_job) == COMPLETED_SUCCESSFULLY:
            self._compute(sid, now)
            return None
        lj.start = self.t_start[sid]
        lj.end = now
        if lj.role == 1:
            self._last_eval_wall = time.perf_counter() - self._t0
        return sid

    def after_pass(self, now: float) -> None:
        """Compute phases whose file load is over; the end of registrations."""
        while self.pending and self.pending[0][0] <= now + 1e-9:
            _, sid = heapq.heappop(self.pending)
            self._compute(sid, now)
        if self.bs.no_more_static_jobs and not len(self.core) and not self.core.running \
                and not self.pending and not self._notified:
            self._notified = True
            self.bs.notify_registration_finished()

    def onSimulationEnds(self):
        super().onSimulationEnds()
        if self.out:
            done = [j for j in self.jobs.values() if j.end is not None]
            ev = [j for j in done if j.role == 1]
            write_jobs(ev, f"{self.out}_jobs.csv", self.pol.bandwidth)
            if ev:
                with open(f"{self.out}_summary.json", "w") as f:
                    json.dump(summarize(ev, self.policy_name, self.pol.bandwidth), f, indent=1, sort_keys=True)
            # run times (not part of the results: they vary from run to run)
            pol = self.pol
            with open(f"{self.out}_timing.json", "w") as f:
                json.dump({"scheduler_wall_s": round(time.perf_counter() - self._t0, 1),
                           "scheduler_cpu_s": round(time.process_time(), 1),
                           "planning_wall_s": round(pol.plan_wall, 1), "planning_cpu_s": round(pol.plan_cpu, 1),
                           "passes": pol.passes,
                           "decisions": pol.planner.decisions if pol.planner is not None else 0,
                           "wall_at_last_evaluated_end_s": None if self._last_eval_wall is None
                           else round(self._last_eval_wall, 1)}, f, indent=1, sort_keys=True)
