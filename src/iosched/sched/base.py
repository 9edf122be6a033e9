"""Common machinery of the iosched schedulers: a pybatsim ``BatsimScheduler``.

:class:`BaseScheduler` keeps the scheduler's model of the machine and of the
jobs, and runs one *scheduling pass* per Batsim message (in
``onNoMoreEvents``, after every event of the message has been recorded):

* the waiting queue, ordered FCFS (submission order) or SJF (shortest
  requested time first, ties in submission order);
* an :class:`iosched.availability.AvailabilityProfile` over the *compute*
  resources (storage resources are excluded) plus optional scalar pools
  (hook :meth:`BaseScheduler.initial_pools`), holding one reservation per
  running job on ``[start, start + walltime)`` -- the requested walltime is
  the runtime estimate, a job without walltime holds its resources until it
  completes;
* rejection (Batsim ``REJECT_JOB``) of the jobs that can never run: fewer
  than one resource requested, more resources than the machine's compute
  resources, or more of a pool than its total; the reason is logged and kept
  in :attr:`BaseScheduler.rejections`;
* ``JOB_COMPLETED`` (any final state: ``COMPLETED_SUCCESSFULLY``,
  ``COMPLETED_FAILED``, ``COMPLETED_WALLTIME_REACHED``, ``COMPLETED_KILLED``)
  and ``JOB_KILLED`` free the job's resources from the current time on, which
  updates the profile when a job ends before its walltime;
* a job still running past its estimated end (with the real Batsim, a job
  killed at its walltime completes a few milliseconds after ``start +
  walltime`` as seen by the scheduler) keeps its resources: at each pass its
  reservation is extended to just after the current time, so no other job
  is ever given them.

The scheduling pass implements four classic algorithms, selected by the
``backfilling`` argument:

``"none"``
    FCFS without backfilling: start jobs from the head of the queue while
    they fit; stop at the first one that does not.
``"easy"``
    EASY backfilling (Lifka 1995, "The ANL/IBM SP scheduling system";
    Mu'alem & Feitelson 2001, IEEE TPDS 12(6)): start jobs from the head
    while they fit; give the first job that does not fit a reservation at its
    earliest start; start any later job that fits now without delaying that
    reservation. The reservation is recomputed at every pass.
``"conservative"``
    Conservative backfilling (Mu'alem & Feitelson 2001): every waiting job
    gets a reservation at its earliest start, in queue order, when it is
    first seen; a job starts when its reservation starts. When a job ends
    before its walltime, the reservations are *compressed*: in queue order,
    each one is removed and re-made at its earliest start, which is never
    later than before (its old slot is still free), so no reservation is
    ever delayed. The scheduler asks for a REQUESTED_CALL (CALL_ME_LATER) at
    the earliest reservation start, so that a job starts on time even when
    no other event happens then. If a running job overruns its estimate
    (possible only with inexact runtimes), every reservation is re-made in
    queue order.
``"filler"``
    Start, in queue order, every job that fits now; no reservation (like
    pybatsim's ``fillerSched``, but deterministic and walltime-aware).

Only standard Batsim 4.2.1 protocol features are used (EXECUTE_JOB with an
``alloc``, REJECT_JOB, CALL_ME_LATER), so the schedulers run on the real Batsim too.

Subclasses customise the hooks :meth:`~BaseScheduler.initial_pools`,
:meth:`~BaseScheduler.pools_needed`, :meth:`~BaseScheduler.estimate`,
:meth:`~BaseScheduler.rejection_reason`, :meth:`~BaseScheduler.choose_resources`
and :meth:`~BaseScheduler.on_job_started`.
"""

from __future__ import annotations

import logging
import math
from typing import NamedTuple, Optional

from batsim.batsim import BatsimScheduler
from procset import ProcSet
from sortedcontainers import SortedKeyList, SortedSet

from iosched.availability import INF, AvailabilityProfile, Reservation, lowest_ids
from iosched.errors import InputError, ProfileError

__all__ = ["BaseScheduler", "WaitingJob", "RunningJob", "Plan", "HeadReservation",
           "BACKFILLING", "ORDERS", "walltime_estimate"]

#: Scheduling algorithms of :class:`BaseScheduler` (argument ``backfilling``).
BACKFILLING = ("none", "easy", "conservative", "filler")
#: Queue orders of :class:`BaseScheduler` (argument ``order``).
ORDERS = ("fcfs", "sjf")


def walltime_estimate(job) -> float:
    """Runtime estimate of a pybatsim job: its requested walltime.

    :param job: a ``batsim.batsim.Job`` (``requested_time`` in seconds; Batsim
        and pybatsim use ``-1`` or no value for "no walltime").
    :returns: the walltime in seconds, or ``math.inf`` when it is missing,
        non-positive or not a finite number.
    """
    wt = getattr(job, "requested_time", None)
    try:
        wt = float(wt)
    except (TypeError, ValueError):
        return INF
    if not math.isfinite(wt) or wt <= 0:
        return INF
    return wt


class WaitingJob:
    """A queued job: the pybatsim ``job``, its arrival rank ``seq``, the queue
    ``key``, ``nb_res`` (int), ``estimate`` (s, may be inf) and ``pools``
    (dict pool -> amount)."""

    __slots__ = ("job", "seq", "key", "nb_res", "estimate", "pools")

    def __init__(self, job, seq, key, nb_res, estimate, pools):
        self.job = job
        self.seq = seq
        self.key = key
        self.nb_res = nb_res
        self.estimate = estimate
        self.pools = pools

    def __repr__(self):
        return f"<WaitingJob {self.job.id} res={self.nb_res} est={self.estimate}>"


class RunningJob:
    """A started job: ``job``, ``seq``, ``start`` (s), ``resources``
    (ProcSet), ``pools`` (dict) and the profile ``reservation`` holding them
    until the job's (estimated, then actual) end."""

    __slots__ = ("job", "seq", "start", "resources", "pools", "reservation")

    def __init__(self, job, seq, start, resources, pools, reservation):
        self.job = job
        self.seq = seq
        self.start = start
        self.resources = resources
        self.pools = pools
        self.reservation = reservation

    @property
    def estimated_end(self) -> float:
        """Current estimated end (s) of the job (its reservation end)."""
        return self.reservation.end

    def __repr__(self):
        return f"<RunningJob {self.job.id} start={self.start} res={self.resources}>"


class Plan(NamedTuple):
    """Conservative-backfilling reservation of a waiting job.

    ``start`` (s; ``inf`` if the job cannot be planned yet, e.g. behind a
    job without walltime), ``resources`` (ProcSet, empty if ``start`` is
    inf), ``reservation`` (profile reservation, None if ``start`` is inf).
    """

    job_id: str
    start: float
    resources: ProcSet
    reservation: Optional[Reservation]


class HeadReservation(NamedTuple):
    """EASY reservation of the first job that does not fit: ``job_id``,
    ``start`` (s, inf if unknown) and ``resources`` (ProcSet)."""

    job_id: str
    start: float
    resources: ProcSet


class BaseScheduler(BatsimScheduler):
    """pybatsim scheduler with a queue, an availability profile and four
    classic policies (see the module documentation).

    :param options: the pybatsim options dict (``-o`` JSON), kept in
        ``self.options``.
    :param backfilling: one of :data:`BACKFILLING`.
    :param order: queue order, one of :data:`ORDERS`.
    :raises InputError: on an unknown ``backfilling`` or ``order``.

    Public state (read it, do not modify it):

    * :attr:`profile` -- the :class:`~iosched.availability.AvailabilityProfile`
      (None before SIMULATION_BEGINS);
    * :attr:`compute` -- ProcSet of the compute resources;
    * :attr:`queue` -- the waiting jobs in queue order;
    * :attr:`running` -- dict job id -> :class:`RunningJob`;
    * :attr:`rejections` -- dict job id -> reason (str);
    * :attr:`plans` -- dict job id -> :class:`Plan` (conservative only);
    * :attr:`head_reservation` -- :class:`HeadReservation` made by the last
      EASY pass, or None;
    * :attr:`stats` -- counters (submitted, rejected, started, completed,
      walltime_reached, killed, failed, overruns, compressions, replans).
    """

    def __init__(self, options=None, *, backfilling: str = "easy", order: str = "fcfs"):
        super().__init__(dict(options or {}))
        if backfilling not in BACKFILLING:
            raise InputError(
                f"backfilling={backfilling!r} is unknown; expected one of {', '.join(BACKFILLING)}")
        if order not in ORDERS:
            raise InputError(f"order={order!r} is unknown; expected one of {', '.join(ORDERS)}")
        self.logger = logging.getLogger(f"iosched.sched.{type(self).__name__}")
        self.backfilling = backfilling
        self.order = order
        self.profile: Optional[AvailabilityProfile] = None
        self.compute = ProcSet()
        self.running: dict = {}
        self.rejections: dict = {}
        self.plans: dict = {}
        self.head_reservation: Optional[HeadReservation] = None
        self.stats = dict.fromkeys(
            ("submitted", "rejected", "started", "completed", "walltime_reached",
             "killed", "failed", "overruns", "compressions", "replans"), 0)
        self._queue = SortedKeyList(key=lambda w: w.key)
        self._waiting: dict = {}
        self._running_by_end = SortedKeyList(key=lambda r: (r.reservation.end, r.seq))
        self._seq = 0
        self._to_execute: list = []
        self._freed_early = False
        self._plans_invalid = False
        self._ended = False
        self._calls = SortedSet()   # CALL_ME_LATER times requested and not yet passed

    # ------------------------------------------------------------- hooks
    def initial_pools(self) -> dict:
        """Scalar pools of the profile: name -> total (float). Default none.

        Called once at SIMULATION_BEGINS (``self.bs`` is set).
        """
        return {}

    def pools_needed(self, job) -> dict:
        """Pool amounts a job holds while it runs: name -> amount. Default none."""
        return {}

    def estimate(self, job) -> float:
        """Runtime estimate of ``job`` in seconds (default: its walltime,
        :func:`walltime_estimate`; ``inf`` when it has none)."""
        return walltime_estimate(job)

    def choose_resources(self, candidates: ProcSet, count: int) -> ProcSet:
        """Pick ``count`` resources among ``candidates`` (all free over the
        job's whole interval). Default: lowest ids first
        (:func:`iosched.availability.lowest_ids`)."""
        return lowest_ids(candidates, count)

    def rejection_reason(self, job) -> Optional[str]:
        """Why ``job`` can never run on this machine, or None if it can.

        Default checks: the requested number of resources is an integer
        between 1 and the number of compute resources, and every pool amount
        of :meth:`pools_needed` is known and at most the pool's total.
        """
        res = job.requested_resources
        ncomp = len(self.compute)
        if isinstance(res, bool) or not isinstance(res, int):
            return f"requested resources {res!r} is not an integer"
        if res <= 0:
            return f"requests {res} resources (at least 1 is needed)"
        if res > ncomp:
            return f"requests {res} resources but the machine has only {ncomp} compute resources"
        totals = self.profile.pool_totals
        for name, amount in sorted(self.pools_needed(job).items()):
            if name not in totals:
                return f"needs pool {name!r}, which this machine does not have"
            if not (0 <= amount <= totals[name]):
                return f"needs {amount} of pool {name!r}, whose total is {totals[name]}"
        return None

    def on_job_started(self, job, running: RunningJob) -> None:
        """Called when ``job`` is started (before EXECUTE_JOB is sent); set
        e.g. ``job.storage_mapping`` here. Default: nothing."""

    # --------------------------------------------------------- accessors
    @property
    def queue(self) -> list:
        """The waiting pybatsim jobs, in queue order (a new list)."""
        return [w.job for w in self._queue]

    def waiting(self, job_id: str) -> Optional[WaitingJob]:
        """The :class:`WaitingJob` of a queued job id, or None."""
        return self._waiting.get(job_id)

    # --------------------------------------------------- pybatsim events
    def onSimulationBegins(self):
        """Build the profile over the compute resources (SIMULATION_BEGINS)."""
        machines = getattr(self.bs, "machines", None) or {}
        ids = [int(m["id"]) for m in machines.get("compute", [])]
        if not ids:
            ids = list(range(int(self.bs.nb_compute_resources)))
        self.compute = ProcSet(*ids)
        if len(self.compute) != int(self.bs.nb_compute_resources):
            self.logger.warning("nb_compute_resources=%s but %d compute resources listed",
                                self.bs.nb_compute_resources, len(self.compute))
        self.profile = AvailabilityProfile(self.compute, self.initial_pools(), now=self.bs.time())
        self.logger.info("%s (backfilling=%s, order=%s) on compute resources %s",
                         type(self).__name__, self.backfilling, self.order, self.compute)

    def onAfterBatsimInit(self):
        """Nothing to do: the profile is built at SIMULATION_BEGINS."""

    def onJobSubmission(self, job):
        """Queue ``job``, or reject it (REJECT_JOB) if it can never run."""
        self.stats["submitted"] += 1
        if self.profile is None:
            raise ProfileError(f"JOB_SUBMITTED {job.id} before SIMULATION_BEGINS")
        reason = self.rejection_reason(job)
        if reason is not None:
            self.rejections[job.id] = reason
            self.stats["rejected"] += 1
            self.logger.warning("rejecting job %s: %s", job.id, reason)
            self.bs.reject_jobs([job])
            return
        if job.id in self._waiting or job.id in self.running:
            raise ProfileError(f"JOB_SUBMITTED {job.id}: this job id is already known")
        seq = self._seq
        self._seq += 1
        est = self.estimate(job)
        key = (seq,) if self.order == "fcfs" else (est, seq)
        w = WaitingJob(job, seq, key, job.requested_resources, est,
                       dict(self.pools_needed(job)))
        self._waiting[job.id] = w
        self._queue.add(w)

    def onJobCompletion(self, job):
        """Free the resources of a completed job from the current time on."""
        state = getattr(getattr(job, "job_state", None), "name", str(getattr(job, "job_state", "")))
        self.stats["completed"] += 1
        if state == "COMPLETED_WALLTIME_REACHED":
            self.stats["walltime_reached"] += 1
        elif state == "COMPLETED_KILLED":
            self.stats["killed"] += 1
        elif state == "COMPLETED_FAILED":
            self.stats["failed"] += 1
        self._finish(job, state)

    def onJobsKilled(self, jobs):
        """JOB_KILLED: free the resources of the jobs still held (idempotent)."""
        for job in jobs:
            if job.id in self.running:
                self.stats["killed"] += 1
            self._finish(job, "KILLED")

    def onRequestedCall(self):
        """REQUESTED_CALL: nothing to record; the pass runs in onNoMoreEvents."""

    def onNoMoreEvents(self):
        """Run the scheduling pass, once per Batsim message."""
        if self.profile is None or self._ended:
            return
        now = self.bs.time()
        self.profile.advance(now)
        self._handle_overruns(now)
        if self.backfilling == "none":
            self._pass_fcfs(now)
        elif self.backfilling == "easy":
            self._pass_easy(now)
        elif self.backfilling == "conservative":
            self._pass_conservative(now)
        else:
            self._pass_filler(now)
        self._freed_early = False
        if self._to_execute:
            jobs, self._to_execute = self._to_execute, []
            self.bs.execute_jobs(jobs)

    def onSimulationEnds(self):
        """Log a summary; warn about jobs left waiting or running."""
        self._ended = True
        self.logger.info("simulation ends: %s", self.stats)
        if self._queue:
            self.logger.warning("%d jobs still waiting at the end: %s", len(self._queue),
                                [w.job.id for w in self._queue][:10])
        if self.running:
            self.logger.warning("%d jobs still running at the end: %s", len(self.running),
                                list(self.running)[:10])

    # ---------------------------------------------------------- internals
    def _finish(self, job, state):
        rec = self.running.pop(job.id, None)
        if rec is None:
            self.logger.debug("end of job %s (%s) ignored: not running", job.id, state)
            return
        self._running_by_end.remove(rec)
        now = self.bs.time()
        if now < rec.reservation.end:
            self._freed_early = True
        self.profile.release(rec.reservation, at=now)

    def _handle_overruns(self, now):
        over = []
        while self._running_by_end and self._running_by_end[0].reservation.end <= now:
            over.append(self._running_by_end.pop(0))
        if not over:
            return
        self.stats["overruns"] += len(over)
        self._drop_plans()
        new_end = math.nextafter(now, INF)
        for rec in over:
            self.logger.debug("job %s runs past its estimated end %s", rec.job.id,
                              rec.reservation.end)
            rec.reservation = self.profile.reserve(now, new_end, rec.resources, rec.pools,
                                                   tag=rec.job.id)
            self._running_by_end.add(rec)

    def _drop_plans(self):
        if self.plans:
            for plan in self.plans.values():
                if plan.reservation is not None:
                    self.profile.remove(plan.reservation)
            self.plans = {}
            self._plans_invalid = True

    def wake_up_at(self, t: float) -> None:
        """Ask Batsim for a REQUESTED_CALL at time ``t`` (CALL_ME_LATER),
        once per distinct time.

        :param t: seconds, ``now < t < inf``.
        :raises ValueError: if ``t`` is not after the current time or not finite.
        """
        now = self.bs.time()
        if not (now < t < INF):
            raise ValueError(f"wake_up_at({t}): the time must be after now ({now}) and finite")
        while self._calls and self._calls[0] <= now:
            self._calls.pop(0)
        if t not in self._calls:
            self._calls.add(t)
            self.bs.wake_me_up_at(t)

    def _fit_now(self, w, now) -> Optional[ProcSet]:
        return self.profile.fit_at(now, w.nb_res, w.estimate, w.pools,
                                   chooser=self.choose_resources)

    def _start(self, w, now, resources, reservation=None):
        if reservation is None:
            reservation = self.profile.reserve(now, now + w.estimate, resources, w.pools,
                                               tag=w.job.id)
        self._queue.remove(w)
        del self._waiting[w.job.id]
        rec = RunningJob(w.job, w.seq, now, resources, w.pools, reservation)
        self.running[w.job.id] = rec
        self._running_by_end.add(rec)
        w.job.allocation = resources
        self.stats["started"] += 1
        self.on_job_started(w.job, rec)
        self._to_execute.append(w.job)

    def _pass_fcfs(self, now):
        while self._queue:
            w = self._queue[0]
            res = self._fit_now(w, now)
            if res is None:
                break
            self._start(w, now, res)

    def _pass_filler(self, now):
        for w in list(self._queue):
            if self.profile.free_count(now) == 0:
                break
            res = self._fit_now(w, now)
            if res is not None:
                self._start(w, now, res)

    def _pass_easy(self, now):
        self.head_reservation = None
        self._pass_fcfs(now)
        if not self._queue:
            return
        head = self._queue[0]
        t, res = self.profile.earliest_start(head.nb_res, head.estimate, head.pools,
                                             after=now, chooser=self.choose_resources)
        self.head_reservation = HeadReservation(head.job.id, t, res)
        hold = None
        if t < INF:
            hold = self.profile.reserve(t, t + head.estimate, res, head.pools, tag=head.job.id)
        for w in list(self._queue)[1:]:
            if self.profile.free_count(now) == 0:
                break
            res = self._fit_now(w, now)
            if res is not None:
                self._start(w, now, res)
        if hold is not None:
            self.profile.remove(hold)

    def _plan(self, w, now) -> Plan:
        t, res = self.profile.earliest_start(w.nb_res, w.estimate, w.pools, after=now,
                                             chooser=self.choose_resources)
        if t == INF:
            return Plan(w.job.id, INF, ProcSet(), None)
        r = self.profile.reserve(t, t + w.estimate, res, w.pools, tag=w.job.id)
        return Plan(w.job.id, t, res, r)

    def _pass_conservative(self, now):
        if not self._plans_invalid and any(p.start < now for p in self.plans.values()):
            # a reservation's start passed without a pass (inexact estimates)
            self._drop_plans()
        if self._plans_invalid:
            self.stats["replans"] += 1
            self._plans_invalid = False
        elif self._freed_early and self.plans:
            self.stats["compressions"] += 1
            self._compress(now)
        for w in self._queue:
            if w.job.id not in self.plans:
                self.plans[w.job.id] = self._plan(w, now)
        for w in list(self._queue):
            plan = self.plans[w.job.id]
            if plan.start <= now:
                del self.plans[w.job.id]
                self._start(w, now, plan.resources, plan.reservation)
        # a reservation may start when no event is due (its start was the end
        # of a reservation that compression moved): be called then, unless a
        # running job is expected to end at that very time
        nxt = min((p.start for p in self.plans.values()), default=INF)
        if nxt < INF and not self._running_ends_at(nxt):
            self.wake_up_at(nxt)

    def _running_ends_at(self, t) -> bool:
        by_end = self._running_by_end
        i = by_end.bisect_key_left((t, -1))
        return i < len(by_end) and by_end[i].reservation.end == t

    def _compress(self, now):
        profile = self.profile
        for w in self._queue:
            old = self.plans.get(w.job.id)
            if old is None or old.start <= now:
                continue
            if old.reservation is not None:
                profile.remove(old.reservation)
            new = self._plan(w, now)
            if new.start > old.start:
                # cannot happen: the old slot is free again; keep it if it does
                if new.reservation is not None:
                    profile.remove(new.reservation)
                self.logger.error("compression would delay job %s from %s to %s",
                                  w.job.id, old.start, new.start)
                r = profile.reserve(old.start, old.start + w.estimate, old.resources, w.pools,
                                    tag=w.job.id)
                new = Plan(w.job.id, old.start, old.resources, r)
            self.plans[w.job.id] = new
