"""The locality policies as a policy of the shared core (Gonthier et al., RR-9497).

:class:`LocalityPolicy` runs the ten planning policies of
:mod:`iosched.locality.planner` (fcfs, eft, lea, leo, lem and their -bf
variants) on :class:`iosched.sched.core.Scheduler`, with the artifact's
passes (``src/main.c``): at every pass the jobs planned at this second
start, then a full re-plan of the waiting queue if a job ended, else a plan
of the new jobs only after the existing plan, then the jobs planned now
start (:mod:`iosched.experiments.locality.replay` runs the same loop without the
engine). Planning time is the engine's time rounded down to the second,
the artifact's integer clock (:func:`second`).

The planner's scheduler-side model is a
:class:`~iosched.locality.cluster.Cluster` (per core its available time, per
node the files in memory: the artifact's model); no decision reads the
core's availability model, so the core keeps the holds-only one
(:data:`PROFILE`, :class:`iosched.sched.holds.HoldsOnly`), which still
refuses a core given twice (:class:`~iosched.errors.ProfileError`). With
the core's full :class:`~iosched.sched.profile.AvailabilityProfile` the
same schedule costs more: on the whole Uppmax day (fcfs, 21,819 jobs on
9,720 one-core resources, each job's cores scattered), the scheduler's
CPU time was 61.4 s against 53.2 s (+15 %; medians of 3 runs alternated
with the holds-only runs, load 5 to 7; issue 26).

The rest of this module is what the policy needs of the core:
:class:`OneNodePlacer` (a job asking more cores than a node has is rejected
at submission through the core's rejection path: the model runs every job
on one node, paper Section 5.1), :func:`file_order` (the queue order),
:func:`history_order` (the artifact's order of the jobs running at day 0).
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Callable, Optional

from procset import ProcSet

from iosched.errors import InputError
from iosched.locality.cluster import Cluster
from iosched.sched.holds import HoldsOnly
from iosched.sched.placer import Allocation, FirstFit

__all__ = ["LocalityPolicy", "OneNodePlacer", "PROFILE", "second", "file_order", "history_order",
           "END_WINDOW", "TIME_TOLERANCE", "GB"]

#: The availability model of the core under :class:`LocalityPolicy`
#: (``Scheduler(..., profile=PROFILE)``; module doc).
PROFILE = HoldsOnly

#: Bytes per GB: the planner counts sizes in GB and bandwidths in GB/s.
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


def file_order(job) -> tuple:
    """Queue order of the core: the job's rank in the input file (workload
    field ``seq``, kept on the :class:`~iosched.locality.planner.LJob` that is
    ``job.request[0]``; the artifact's list order), then arrival."""
    return (job.request[0].seq, job.seq)


def history_order(jobs: list) -> list:
    """History jobs (:class:`~iosched.locality.planner.LJob` with
    ``hist_start``, s) in the artifact's order (``insert_job_in_sorted_list``
    on ``start_time_from_history``: a job goes before the head when its key
    is <= the head's, else after the last job whose key is <= its own).

    :returns: a new list."""
    out: list = []
    for j in jobs:
        if not out or out[0].hist_start >= j.hist_start:
            out.insert(0, j)
            continue
        i = 0
        while i + 1 < len(out) and out[i + 1].hist_start <= j.hist_start:
            i += 1
        out.insert(i + 1, j)
    return out


class OneNodePlacer(FirstFit):
    """The core's placer for the locality policies: a job asking more cores
    than a node has can never run (the model runs every job on one node,
    paper Section 5.1), so :meth:`rejection_reason` refuses it at
    submission, through the core's normal rejection path (logged, kept in
    :attr:`Scheduler.rejections <iosched.sched.core.Scheduler.rejections>`).
    Other checks are :class:`~iosched.sched.placer.FirstFit`'s. The
    allocations themselves are the policy's (its planner chooses the
    cores)."""

    def __init__(self):
        self.cores_per_node: Optional[int] = None

    def begin(self, machine) -> dict:
        """SIMULATION_BEGINS: remember the cores of a node (the first
        compute node's; None without compute node). Adds no pool."""
        nodes = machine.nodes
        self.cores_per_node = nodes[0].cores if nodes else None
        return {}

    def rejection_reason(self, job, profile) -> Optional[str]:
        """``"requests N cores but a node has M (a locality job runs on one
        node)"`` for a job of more cores than a node has, else
        :meth:`FirstFit.rejection_reason <iosched.sched.placer.FirstFit.rejection_reason>`."""
        res, m = job.nb_res, self.cores_per_node
        if m is not None and isinstance(res, int) and not isinstance(res, bool) and res > m:
            return f"requests {res} cores but a node has {m} (a locality job runs on one node)"
        return super().rejection_reason(job, profile)


class LocalityPolicy:
    """The artifact's passes on the core (see module doc). A job's
    ``request`` is ``(LJob, profile name)``
    (:func:`iosched.schedulers.locality.read_locality_job`).

    :param make_planner: ``make_planner(cluster) ->``
        :class:`~iosched.locality.planner.Planner`; the
        :class:`~iosched.locality.cluster.Cluster` is built at the first pass
        from the core's machine (nodes of the platform's ``node`` property,
        cores per node, ``memory`` in bytes; 128 GB if none).
    :param cache_rule: ``artifact`` or ``paper``
        (:data:`~iosched.locality.cluster.CACHE_RULES`).
    :param bandwidth: file-system bandwidth per node (GB/s).
    :param clock: callable giving the engine time (s); the job ends use it.
    :raises InputError: (at the first pass) a platform without compute node.

    Public state: ``planner`` (None before the first pass), ``plan_wall``
    and ``plan_cpu`` (s spent in planning passes), ``passes``.
    """

    def __init__(self, make_planner: Callable, *, cache_rule: str = "artifact", bandwidth: float = 0.1,
                 clock: Callable[[], float] = lambda: 0.0):
        self.make_planner = make_planner
        self.planner = None
        self.seen: set = set()
        self.ended = False
        self.rids: list = []      # node index -> list of resource ids by core index
        self.hist_q: list = []    # waiting history jobs (core jobs), in history order
        self.plan_wall = self.plan_cpu = 0.0   # time in planning passes (s, wall and CPU)
        self.passes = 0
        self.cache_rule, self.bandwidth, self.clock = cache_rule, bandwidth, clock
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
        not started yet in :func:`history_order`, then the others in file
        order (the core's queue order)."""
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
                since = lj.elapsed = t - lj.hist_start
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
