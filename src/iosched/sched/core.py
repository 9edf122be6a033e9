"""The scheduler core shared by every family: queue, running jobs, profile.

:class:`Scheduler` keeps the scheduler's model of the machine and of the
jobs, independent of pybatsim (the adapter, :mod:`iosched.sched.adapter`,
translates Batsim's events into calls of this class and its decisions back
into Batsim's):

* the waiting queue, sorted by an *order* (:mod:`iosched.sched.orders`);
* an :class:`~iosched.sched.profile.AvailabilityProfile` (or, for a
  policy that keeps its own availability model, the holds-only
  :class:`~iosched.sched.holds.HoldsOnly`: constructor argument
  ``profile``) over the compute resources (storage resources excluded)
  plus scalar pools (fixed ones given to the constructor, and the
  placer's, e.g. burst-buffer bytes per storage node), holding one
  reservation per running job on ``[start, start + estimate)`` -- the requested walltime is the runtime estimate, a job
  without walltime holds its resources until it completes;
* rejection of the jobs that can never run (:meth:`Placer.rejection_reason
  <iosched.sched.placer.Placer.rejection_reason>`, or a job whose fields the
  family cannot read); the reason is kept in :attr:`Scheduler.rejections`;
* job ends (any final state, or a kill) free the job's resources from the
  current time on, which updates the profile when a job ends before its
  walltime;
* a job still running past its estimated end (with the real Batsim, a job
  killed at its walltime completes a few milliseconds after ``start +
  walltime`` as the scheduler sees it) keeps its resources: at each pass its
  reservation is extended to just after the current time, so no other job is
  ever given them.

One *scheduling pass* runs per Batsim message (:meth:`Scheduler.schedule`):
the *policy* (:mod:`iosched.sched.policies`) decides which waiting jobs
start now, with allocations chosen by the *placer*
(:mod:`iosched.sched.placer`). Order x policy x placer are independent axes,
as in batsched's queue orders and resource selectors.

Decisions leave through the *launcher* given to the constructor (the
adapter): ``launcher.start(running_job)``, ``launcher.reject(job, reason)``,
``launcher.call_me_later(t)``.
"""

from __future__ import annotations

import heapq
import logging
import math
from typing import Callable, Optional

from procset import ProcSet
from sortedcontainers import SortedKeyList, SortedSet

from iosched.batsim.jobs import COMPLETED_FAILED, COMPLETED_KILLED, COMPLETED_WALLTIME_REACHED, walltime_seconds
from iosched.errors import InputError, ProfileError
from iosched.sched.job import Job, RunningJob
from iosched.sched.machine import Machine
from iosched.sched.orders import fcfs
from iosched.sched.placer import FirstFit, Placer
from iosched.sched.profile import INF, AvailabilityProfile

__all__ = ["Scheduler", "plain_job", "STATS"]

#: Counters of :attr:`Scheduler.stats`.
STATS = ("submitted", "rejected", "started", "completed", "walltime_reached", "killed", "failed",
         "overruns", "compressions", "replans")


def plain_job(batsim_job) -> tuple:
    """The default reading of a pybatsim job: ``(nb_res, estimate, pools,
    request)`` = (``requested_resources``, its walltime in s by
    :func:`iosched.batsim.jobs.walltime_seconds` (inf when none), no pool,
    no family request)."""
    return batsim_job.requested_resources, walltime_seconds(getattr(batsim_job, "requested_time", None)), {}, None


class Scheduler:
    """Queue, running jobs and availability profile of one scheduler.

    :param policy: a policy object (:mod:`iosched.sched.policies`).
    :param placer: a :class:`~iosched.sched.placer.Placer` (default
        :class:`~iosched.sched.placer.FirstFit`).
    :param order: queue key function (default
        :func:`~iosched.sched.orders.fcfs`).
    :param launcher: receives the decisions (see the module documentation).
    :param read_job: ``read_job(batsim_job) -> (nb_res, estimate, pools,
        request)`` (default :func:`plain_job`); may raise
        :class:`~iosched.errors.InputError`, which rejects the job.
    :param pools: fixed scalar pools of the profile (name -> total), or a
        callable ``pools(machine) -> dict``.
    :param pools_needed: ``pools_needed(batsim_job) -> dict`` fixed pool
        demand of a job, added to what ``read_job`` returns.
    :param name: used in log messages.
    :param profile: the class (or factory) of the availability model,
        called as ``profile(machine.compute, pools, now=now)`` at
        :meth:`begin`; default
        :class:`~iosched.sched.profile.AvailabilityProfile`. A policy that
        keeps its own availability model and never queries the core's
        (``fit_now``, ``earliest``, the placer's ``fit_at``/``earliest``)
        may pass :class:`~iosched.sched.holds.HoldsOnly`: what is held now
        only, so a resource given twice is still refused, at a fraction of
        the cost on machines of many scattered resources (the locality
        family: :mod:`iosched.locality.policy`).
    :param check_io: ``check_io(batsim_job) -> reason or None``, asked
        first at submission: why the scheduler cannot serve the job's I/O
        model (a one-line reason: the job is rejected); None (default):
        nothing asked. The pybatsim adapter sets its
        :meth:`~iosched.sched.adapter.PybatsimScheduler.io_reason`.

    Public state (read it, do not modify it): :attr:`machine`,
    :attr:`profile` (None before :meth:`begin`), :attr:`compute` (ProcSet),
    :attr:`running` (dict job id -> :class:`~iosched.sched.job.RunningJob`),
    :attr:`rejections` (dict job id -> reason), :attr:`stats` (counters
    :data:`STATS`), :attr:`passes` (number of scheduling passes).
    """

    def __init__(self, policy, placer: Optional[Placer] = None, order: Callable = fcfs, *,
                 launcher=None, read_job: Callable = plain_job, pools=None,
                 pools_needed: Optional[Callable] = None, name: str = "Scheduler",
                 profile: Callable = AvailabilityProfile, check_io: Optional[Callable] = None):
        self.policy = policy
        self.placer = placer if placer is not None else FirstFit()
        self.order = order
        self.launcher = launcher
        self.read_job = read_job
        self.check_io = check_io
        self.pools_needed = pools_needed
        self._pools = pools
        self.name = name
        self._make_profile = profile
        self.logger = logging.getLogger(f"iosched.sched.{name}")
        self.machine: Optional[Machine] = None
        self.profile: Optional[AvailabilityProfile] = None
        self.running: dict = {}
        self.rejections: dict = {}
        self.stats = dict.fromkeys(STATS, 0)
        self.passes = 0
        self._queue = SortedKeyList(key=lambda j: j.key)
        self._waiting: dict = {}
        # running jobs by estimated end: a heap of (end, seq, RunningJob) whose
        # entries of ended jobs linger until popped, and end -> running jobs
        self._by_end: list = []
        self._end_count: dict = {}
        self._seq = 0
        self.ended = False
        self._calls = SortedSet()   # CALL_ME_LATER times requested and not yet passed

    # ------------------------------------------------------------ state
    @property
    def compute(self) -> ProcSet:
        """ProcSet of the compute resources (empty before :meth:`begin`)."""
        return self.machine.compute if self.machine is not None else ProcSet()

    @property
    def queue(self) -> list:
        """The waiting :class:`~iosched.sched.job.Job` records, in queue order (a new list)."""
        return list(self._queue)

    def __len__(self) -> int:
        """Number of waiting jobs."""
        return len(self._queue)

    def waiting(self, job_id: str) -> Optional[Job]:
        """The waiting :class:`~iosched.sched.job.Job` of an id, or None."""
        return self._waiting.get(job_id)

    @property
    def plans(self) -> dict:
        """The policy's reservations of waiting jobs (conservative
        backfilling), else an empty dict."""
        return getattr(self.policy, "plans", {})

    @property
    def head_reservation(self):
        """The reservation of the last EASY pass's head job, else None."""
        return getattr(self.policy, "head_reservation", None)

    # ----------------------------------------------------------- events
    def begin(self, machine: Machine, now: float) -> None:
        """SIMULATION_BEGINS: build the profile (the ``profile`` argument of
        the constructor) over ``machine.compute`` with the fixed pools and
        the placer's (``placer.begin(machine)``)."""
        self.machine = machine
        pools = self._pools(machine) if callable(self._pools) else dict(self._pools or {})
        begin = getattr(self.placer, "begin", None)
        if begin is not None:
            pools.update(begin(machine) or {})
        self.profile = self._make_profile(machine.compute, pools, now=now)

    def submit(self, batsim_job) -> Optional[Job]:
        """JOB_SUBMITTED: queue the job, or reject it if it can never run.

        :returns: the queued :class:`~iosched.sched.job.Job`, or None if rejected.
        :raises ProfileError: before :meth:`begin`, or on a duplicate job id.
        """
        self.stats["submitted"] += 1
        if self.profile is None:
            raise ProfileError(f"JOB_SUBMITTED {batsim_job.id} before SIMULATION_BEGINS")
        if self.check_io is not None:
            reason = self.check_io(batsim_job)
            if reason is not None:
                self._reject(batsim_job, reason)
                return None
        try:
            nb_res, estimate, pools, request = self.read_job(batsim_job)
            if self.pools_needed is not None:
                pools = {**pools, **self.pools_needed(batsim_job)}
        except InputError as exc:
            self._reject(batsim_job, str(exc))
            return None
        job = Job(batsim_job, self._seq, nb_res, estimate, pools, request)
        reason = self.placer.rejection_reason(job, self.profile)
        if reason is not None:
            self._reject(batsim_job, reason)
            return None
        if job.id in self._waiting or job.id in self.running:
            raise ProfileError(f"JOB_SUBMITTED {job.id}: this job id is already known")
        self._seq += 1
        job.key = self.order(job)
        self._waiting[job.id] = job
        self._queue.add(job)
        return job

    def end(self, job_id: str, state: str, now: float) -> None:
        """JOB_COMPLETED (``state`` is Batsim's final state): free the job's
        resources from ``now`` on; unknown or finished ids are ignored."""
        self.stats["completed"] += 1
        if state == COMPLETED_WALLTIME_REACHED:
            self.stats["walltime_reached"] += 1
        elif state == COMPLETED_KILLED:
            self.stats["killed"] += 1
        elif state == COMPLETED_FAILED:
            self.stats["failed"] += 1
        self._finish(job_id, now)

    def kill(self, job_id: str, now: float) -> None:
        """JOB_KILLED: free the job's resources if still held (idempotent)."""
        if job_id in self.running:
            self.stats["killed"] += 1
        self._finish(job_id, now)

    def schedule(self, now: float) -> None:
        """One scheduling pass at ``now`` (once per Batsim message)."""
        if self.profile is None or self.ended:
            return
        self.profile.advance(now)
        self._handle_overruns(now)
        self.passes += 1
        self.policy.schedule(self, now)

    def finish(self) -> None:
        """SIMULATION_ENDS: log a summary; warn about jobs left waiting or running."""
        self.ended = True
        self.logger.info("simulation ends: %s", self.stats)
        if self._queue:
            self.logger.warning("%d jobs still waiting at the end: %s", len(self._queue),
                                [j.id for j in self._queue][:10])
        if self.running:
            self.logger.warning("%d jobs still running at the end: %s", len(self.running),
                                list(self.running)[:10])

    # -------------------------------------------- what policies call
    def fit_now(self, job: Job, now: float):
        """The job's allocation if it starts at ``now``, or None."""
        return self.placer.fit_at(self.profile, job, now)

    def earliest(self, job: Job, after: float, placer: Optional[Placer] = None) -> tuple:
        """Earliest ``(t, Allocation)`` of ``job`` at or after ``after`` on the
        profile (by ``placer``, default the scheduler's), or ``(inf, None)``."""
        return (placer or self.placer).earliest(self.profile, job, after)

    def reserve(self, job: Job, t: float, allocation, tag=None):
        """Hold ``allocation`` on ``[t, t + job.estimate)`` in the profile;
        returns the :class:`~iosched.sched.profile.Reservation`."""
        return self.profile.reserve(t, t + job.estimate, allocation.mask, allocation.pools,
                                    tag=job.id if tag is None else tag)

    def start(self, job: Job, now: float, allocation, reservation=None) -> RunningJob:
        """Start a waiting job now on ``allocation`` (reserving it unless
        ``reservation`` already holds it) and hand it to the launcher."""
        if reservation is None:
            reservation = self.reserve(job, now, allocation)
        self._queue.remove(job)
        del self._waiting[job.id]
        rec = RunningJob(job, now, allocation, reservation)
        self.running[job.id] = rec
        self._add_end(rec)
        self.stats["started"] += 1
        self.launcher.start(rec)
        return rec

    def wake_up_at(self, t: float, now: float) -> None:
        """Ask for a REQUESTED_CALL at ``t`` (CALL_ME_LATER), once per distinct time.

        :raises ValueError: if ``t`` is not after ``now`` or not finite.
        """
        if not (now < t < INF):
            raise ValueError(f"wake_up_at({t}): the time must be after now ({now}) and finite")
        while self._calls and self._calls[0] <= now:
            self._calls.pop(0)
        if t not in self._calls:
            self._calls.add(t)
            self.launcher.call_me_later(t)

    def running_ends_at(self, t: float) -> bool:
        """Whether some running job's reservation ends exactly at ``t``."""
        return t in self._end_count

    # -------------------------------------------------------- internals
    def _reject(self, batsim_job, reason: str) -> None:
        self.rejections[batsim_job.id] = reason
        self.stats["rejected"] += 1
        self.logger.warning("rejecting job %s: %s", batsim_job.id, reason)
        self.launcher.reject(batsim_job, reason)

    def _finish(self, job_id: str, now: float) -> None:
        rec = self.running.pop(job_id, None)
        if rec is None:
            self.logger.debug("end of job %s ignored: not running", job_id)
            return
        self._drop_end(rec)
        early = now < rec.reservation.end
        self.profile.release(rec.reservation, at=now)
        on_end = getattr(self.policy, "on_job_end", None)
        if on_end is not None:
            on_end(self, rec, early)

    def _add_end(self, rec) -> None:
        end = rec.reservation.end
        heapq.heappush(self._by_end, (end, rec.job.seq, rec))
        self._end_count[end] = self._end_count.get(end, 0) + 1

    def _drop_end(self, rec) -> None:
        end = rec.reservation.end
        n = self._end_count[end] - 1
        if n:
            self._end_count[end] = n
        else:
            del self._end_count[end]

    def _handle_overruns(self, now: float) -> None:
        over = []
        by_end = self._by_end
        while by_end and by_end[0][0] <= now:
            end, _, rec = heapq.heappop(by_end)
            if self.running.get(rec.job.id) is rec and rec.reservation.end == end:
                self._drop_end(rec)
                over.append(rec)
        if not over:
            return
        self.stats["overruns"] += len(over)
        on_overrun = getattr(self.policy, "on_overrun", None)
        if on_overrun is not None:
            on_overrun(self)
        new_end = math.nextafter(now, INF)
        for rec in over:
            self.logger.debug("job %s runs past its estimated end %s", rec.job.id, rec.reservation.end)
            rec.reservation = self.profile.reserve(now, new_end, rec.allocation.mask, rec.pools,
                                                   tag=rec.job.id)
            self._add_end(rec)

