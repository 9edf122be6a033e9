"""Data-locality scheduling (Gonthier et al., RR-9497) on Batsim.

The ten policies of :mod:`iosched.locality.planner` (``policy`` option:
fcfs, eft, lea, leo, lem and their -bf variants; ``W`` 500, ``E`` 1,
``threshold`` 80, ``cache_rule`` artifact|paper, ``leo_rule``
artifact|paper) run as a policy of the shared core
(:class:`iosched.sched.core.Scheduler`), with the artifact's passes: a full
re-plan when a job ended, else the new jobs only after the existing plan
(:mod:`iosched.experiments.locality.replay` documents the loop). Planning time is the
engine's time rounded down to the second, as the artifact's integer clock.

A workload job (extra fields ``file``, ``file_size`` in bytes, ``role``,
``history_node``, ``history_start``; see
:func:`iosched.experiments.locality.workload.to_batsim`) runs as dynamic jobs with
Batsim-standard profiles (``--enable-dynamic-jobs``; no composed profile):

1. if its file must be loaded on the node: ``bb!<id>:0``, a
   ``parallel_homogeneous_pfs`` profile reading ``file_size`` bytes from the
   storage ``pfs`` onto the first core of its allocation (SimGrid does the
   transfer; with the ``paper`` platform it takes size/bandwidth);
2. then ``bb!<id>:1``, a ``delay`` profile of its duration on all its cores,
   with the walltime left. A job whose file is being loaded on the node by
   another job starts its compute phase when that load ends (a
   CALL_ME_LATER); a job whose file is there starts it at once.

The core's executor (:mod:`iosched.sched.executor`, walltime rule
``LEFT``) registers and advances these phases.

The static workload job is rejected (its dynamic jobs replace it), as the
burst-buffer family does. The engine run keeps the artifact's integer clock
(:func:`second`, :meth:`LocalityPolicy._ends_pending`; a platform whose
master route has no latency, :func:`iosched.experiments.platforms.locality_xml`), so it gives
the artifact loop's schedule (tested in ``tests/test_locality.py``). Option ``out``: a CSV of the evaluated jobs and a
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

from iosched.batsim.jobs import walltime_seconds
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.locality.cluster import CACHE_RULES, Cluster
from iosched.locality.metrics import summarize, write_jobs
from iosched.locality.planner import POLICIES, LJob, Planner, history_order
from iosched.sched.adapter import PybatsimScheduler
from iosched.sched.core import Scheduler
from iosched.sched.executor import LEFT, At, Phase, Plan
from iosched.sched.iojob import read_io
from iosched.sched.placer import Allocation

__all__ = ["Locality", "LocalityPolicy", "LocalityCore", "HoldsOnly", "read_locality_job"]

#: Phase indices of a job's dynamic jobs (:mod:`iosched.batsim.dynamic`):
#: phase 0 ``bb!J:0`` loads the input file, phase 1 ``bb!J:1`` computes;
#: the metrics merge both into ``w0!J``.
LOAD_PHASE, COMPUTE_PHASE = 0, 1
GB = 1e9
#: How long (s) a pass waits for the ends the model expects in its second
#: (:meth:`LocalityPolicy._ends_pending`).
END_WINDOW = 0.01
#: Engine times within this many seconds below a whole second count as
#: that second (:func:`second`).
TIME_TOLERANCE = 1e-3


def second(now: float) -> int:
    """The artifact's integer clock for the engine time ``now`` (s): ``now``
    rounded down, counting a time up to :data:`TIME_TOLERANCE` below a whole
    second as that second (SimGrid ends a load of ``size / bandwidth`` s a
    few microseconds early or late; the artifact's loads take exactly that
    many whole seconds)."""
    return int(math.floor(now + TIME_TOLERANCE))


#: The largest finite float32 (the planner's sizes, GB, are float32).
_FLOAT32_MAX = 3.4028234663852886e38


def read_locality_job(batsim_job) -> tuple:
    """``(cores, walltime, {}, LJob)`` of a locality workload job.

    Its I/O model (:func:`iosched.sched.iojob.read_io`): one input file
    whose id is a whole number (``io.inputs``, or the earlier fields
    ``file``, ``file_size``), the duration ``io.compute.delay`` (or ``delay``;
    s, rounded down to whole seconds as the artifact's integer clock),
    ``io.cores`` (default: Batsim's ``res``, which it must equal).

    :raises InputError: a missing or invalid input file, duration or
        walltime, ``io.cores`` not ``res``, invalid ``role`` (default 1); one
        line naming the job and the field."""
    d = batsim_job.json_dict
    where = f"job {batsim_job.id}"
    io = read_io(d, where)
    if len(io.inputs) != 1:
        raise InputError(f"{where}: a locality job reads one input file, got {len(io.inputs)} "
                         "(io.inputs, or the fields file and file_size)")
    res = int(batsim_job.requested_resources)
    if io.cores is not None and io.cores != res:
        raise InputError(f"{where}: io.cores={io.cores} differs from res={res} (one Batsim resource per core)")
    try:
        size = float(io.inputs[0].bytes) / GB
        f = int(io.inputs[0].file)
    except ValueError:
        raise InputError(f"{where}: input file {io.inputs[0].file!r}: a locality file id is a whole number") \
            from None
    try:
        role = int(d.get("role", 1))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}: field role must be a number") from None
    if not (0 <= size <= _FLOAT32_MAX):  # the planner keeps sizes (GB) as float32
        raise InputError(f"{where}: input file size {io.inputs[0].bytes!r} is not a size in bytes "
                         "the planner can hold")
    if role not in (-2, -1, 0, 1, 2):
        raise InputError(f"{where}: field role={d.get('role')!r} is not a known role (-2, -1, 0, 1, 2)")
    wall = walltime_seconds(getattr(batsim_job, "requested_time", None))
    if not math.isfinite(wall):
        raise InputError(f"{where}: a walltime is needed")
    prof = d.get("profile")
    if io.compute is None or io.compute.delay is None:
        raise InputError(f"{where}: field delay (the job's duration in s) is missing (io.compute.delay)")
    delay = int(io.compute.delay)
    try:
        subtime = int(round(float(d.get("orig_subtime", batsim_job.submit_time))))
        hist_start, hist_node = int(d.get("history_start", -1)), int(d.get("history_node", -1))
        seq = int(d.get("seq", -1))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}: fields orig_subtime/history_start/history_node/seq "
                         "must be numbers") from None
    lj = LJob(batsim_job.id, subtime, delay, int(round(wall)), int(batsim_job.requested_resources), f,
              size, role, hist_start, hist_node)
    lj.batsim = batsim_job
    lj.hist_start = hist_start
    lj.seq = seq
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
        self.hist_q: list = []    # waiting history jobs (core jobs), in history order
        self.plan_wall = self.plan_cpu = 0.0   # time in planning passes (s, wall and CPU)
        self.passes = 0
        self.cache_rule, self.bandwidth, self.clock = "artifact", 0.1, (lambda: 0.0)
        self.ends: list = []      # heap of (planned end = start + walltime, job id)
        self.expect: dict = {}    # second -> running jobs the model expects to end then

    def on_job_end(self, s, running, early) -> None:
        """A job ended: its cores and file leave the cluster model."""
        lj = running.job.request[0]
        t = second(self.clock())
        self.planner.c.end(lj.node, lj.cores_used, lj.file, t)
        self.ended = True
        self._expected(lj.expected_end, -1)

    def _expected(self, second: int, n: int) -> None:
        left = self.expect.get(second, 0) + n
        if left:
            self.expect[second] = left
        else:
            self.expect.pop(second, None)

    def _ends_pending(self, s, now: float, t: int) -> bool:
        """Whether a job the model expects to end in second ``t`` has not
        been reported yet while ``now`` is within :data:`END_WINDOW` of
        ``t``: the artifact ends every job of a second before it starts or
        plans any (``main.c``), while the engine reports the ends of one
        second in several messages, microseconds apart (SimGrid's
        transfer times are not exact). The pass then waits for them, at most
        until ``t + END_WINDOW`` (a REQUESTED_CALL), where it runs anyway (a
        job slowed by contention under ``shared-pfs`` ends later than the
        model expects)."""
        if self.expect.get(t, 0) <= 0 or now >= t + END_WINDOW - 1e-9:
            return False
        s.wake_up_at(t + END_WINDOW, now)
        return True

    def _build(self, s):
        nodes = s.machine.nodes
        if not nodes:
            raise InputError("locality: the platform has no compute node")
        m = nodes[0].cores
        self.rids = [list(n.resources) for n in nodes]
        mem = nodes[0].memory / GB if nodes[0].memory else 128.0
        self.planner = self.make_planner(Cluster(len(nodes), m, self.bandwidth, mem, cache_rule=self.cache_rule))

    def _in_order(self, s) -> list:
        """The waiting jobs in the artifact's queue order: the history jobs
        not started yet in :func:`~iosched.locality.planner.history_order`,
        then the others in file order (the core's queue order)."""
        q = s.queue
        if not self.hist_q:
            return q
        waiting = {j.id for j in q if j.request[0].role == -2}
        self.hist_q = [j for j in self.hist_q if j.id in waiting]
        return self.hist_q + [j for j in q if j.request[0].role != -2]

    def _start_due(self, s, now, t) -> None:
        c = self.planner.c
        for j in self._in_order(s):
            lj = j.request[0]
            if lj.start == t:
                if any(lj.node.running_end[k] is not None for k in lj.cores_used):
                    # planned after a job killed at its walltime at this second, which
                    # Batsim reports a few ms later: the end triggers a re-plan
                    continue
                res = [self.rids[lj.node.index][k] for k in lj.cores_used]
                lj.transfer, lj.waiting = c.start(lj.node, lj.cores_used, lj.file, lj.size, t, t + lj.walltime)
                over = lj.waiting if lj.transfer == 0 else lj.transfer
                lj.expected_end = t + min(lj.delay + over, lj.walltime)   # the artifact's end (replay)
                self._expected(lj.expected_end, 1)
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
        t = second(now)
        if self._ends_pending(s, now, t):
            return
        new = [j for j in s.queue if j.id not in self.seen]
        for j in new:
            self.seen.add(j.id)
        hist_new = [j.request[0] for j in new if j.request[0].role == -2]
        if hist_new:
            # history jobs (submitted at day 0) start on their historical node, in the
            # artifact's order; the pass at SIMULATION_BEGINS (t = 0) has no job yet
            by_id = {j.id: j for j in new}
            ordered = history_order(hist_new)
            self.hist_q += [by_id[lj.id] for lj in ordered]
            for lj in ordered:
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
            w0, c0 = time.perf_counter(), time.process_time()
            p.reset(t)
            p.plan([j.request[0] for j in self._in_order(s)], t)
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
    ``resources`` (as the core gives them: an int bit mask), ``tag``."""

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

    def submit(self, batsim_job):
        """JOB_SUBMITTED, as the core does; a job asking more cores than a
        node has is rejected with that reason (the model runs every job on
        one node, paper Section 5.1; the planner had no place for it)."""
        nodes = self.machine.nodes if self.machine is not None else []
        res = batsim_job.requested_resources
        if nodes and isinstance(res, int) and not isinstance(res, bool) and res > nodes[0].cores:
            self._reject(batsim_job, f"requests {res} cores but a node has {nodes[0].cores} "
                                     f"(a locality job runs on one node)")
            return None
        return super().submit(batsim_job)


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
    DYNAMIC_JOBS = True

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
        self.jobs: dict = {}         # static id -> LJob
        self.t_start: dict = {}      # static id -> start time (s)
        self._t0 = time.perf_counter()
        self._last_eval_wall = None  # scheduler wall time (s) when the last evaluated job so far ended
        return LocalityCore(self.pol, order=file_order, read_job=read_locality_job, name="Locality")

    # ------------------------------------------------------------ phases
    def run_plan(self, running) -> Plan:
        """The load phase (a ``parallel_homogeneous_pfs`` read of the file
        on the first core, within the job's walltime), or a wait until the
        file's load by another job ends, then the compute phase (a
        ``delay`` on all the job's cores, with the walltime left)."""
        job = running.job
        lj, _prof = job.request
        self.jobs[job.id] = lj
        self.t_start[job.id] = running.start
        compute = Phase({"type": "delay", "delay": float(lj.delay)}, running.resources,
                        index=COMPUTE_PHASE)
        if lj.transfer > 0:
            load = Phase({"type": "parallel_homogeneous_pfs", "bytes_to_read": float(lj.size) * GB,
                          "bytes_to_write": 0, "storage": "pfs"}, ProcSet(min(running.resources)),
                         index=LOAD_PHASE, whole_walltime=True)
            return Plan((load, compute), lj.walltime, LEFT)
        if lj.waiting > 0:
            compute.gate = At(running.start + lj.waiting)
        return Plan((compute,), lj.walltime, LEFT)

    def completed_id(self, batsim_job):
        """The static job a dynamic job ran when the job is over (None while
        its compute phase is still to come); records its start and end."""
        sid = super().completed_id(batsim_job)
        if sid is None:
            return None
        lj = self.jobs[sid]
        lj.start = self.t_start[sid]
        lj.end = self.bs.time()
        if lj.role == 1:
            self._last_eval_wall = time.perf_counter() - self._t0
        return sid

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
