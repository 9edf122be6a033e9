"""The classic scheduling policies, each a small object with
``schedule(s, now)`` over a :class:`~iosched.sched.core.Scheduler` ``s``.

A policy decides which waiting jobs start now; the queue order and the
placer are the scheduler's, so each policy works with any order and any
placer (burst buffers, node-local files, PFS bandwidth...).

``Fcfs``
    First come, first served without backfilling: start jobs from the head
    of the queue while they fit; stop at the first one that does not.
``Easy``
    EASY backfilling (Lifka 1995, "The ANL/IBM SP scheduling system";
    Mu'alem & Feitelson 2001, IEEE TPDS 12(6)): start jobs from the head
    while they fit; give the first job that does not fit a reservation at
    its earliest start; start any later job that fits now without delaying
    that reservation. The reservation is recomputed at every pass.
``Conservative``
    Conservative backfilling (Mu'alem & Feitelson 2001): every waiting job
    gets a reservation at its earliest start, in queue order, when it is
    first seen; a job starts when its reservation starts. When a job ends
    before its walltime, the reservations are *compressed*: in queue order,
    each one is removed and re-made at its earliest start, which is never
    later than before (its old slot is still free), so no reservation is
    ever delayed. The policy asks for a REQUESTED_CALL (CALL_ME_LATER) at
    the earliest reservation start, so that a job starts on time even when
    no other event happens then. If a running job overruns its estimate
    (possible only with inexact runtimes), every reservation is re-made in
    queue order.
``Filler``
    Start, in queue order, every job that fits now; no reservation (like
    pybatsim's ``fillerSched``, but deterministic and walltime-aware).

List scheduling of a whole queue order is in :mod:`iosched.sched.listschedule`.
Only standard Batsim 4.2.1 protocol features follow from these decisions
(EXECUTE_JOB with an ``alloc``, REJECT_JOB, CALL_ME_LATER), so the
schedulers run on the real Batsim too.
"""

from __future__ import annotations

import heapq
from typing import NamedTuple, Optional

from procset import ProcSet

from iosched.sched.profile import INF, Reservation

__all__ = ["Fcfs", "Easy", "Conservative", "Filler", "HeadReservation", "Plan",
           "start_in_order", "backfill"]


class HeadReservation(NamedTuple):
    """EASY reservation of the first job that does not fit: ``job_id``,
    ``start`` (s, inf if unknown) and ``allocation`` (the
    :class:`~iosched.sched.placer.Allocation`, None if unknown);
    :attr:`resources` is its ProcSet (empty if unknown), made when read."""

    job_id: str
    start: float
    allocation: object = None

    @property
    def resources(self) -> ProcSet:
        """The reserved resources (ProcSet, empty if unknown)."""
        return self.allocation.resources if self.allocation is not None else ProcSet()


class Plan(NamedTuple):
    """Conservative-backfilling reservation of a waiting job.

    ``start`` (s; ``inf`` if the job cannot be planned yet, e.g. behind a
    job without walltime), ``reservation`` (profile reservation, None if
    ``start`` is inf), ``allocation`` (the
    :class:`~iosched.sched.placer.Allocation`, None if ``start`` is inf);
    :attr:`resources` is its ProcSet (empty if ``start`` is inf), made
    when read.
    """

    job_id: str
    start: float
    reservation: Optional[Reservation]
    allocation: object = None

    @property
    def resources(self) -> ProcSet:
        """The reserved resources (ProcSet, empty if ``start`` is inf)."""
        return self.allocation.resources if self.allocation is not None else ProcSet()


def start_in_order(s, now: float):
    """Start waiting jobs in queue order while they fit now.

    :returns: the first job that does not fit (the head), or None when the
        queue is empty.
    """
    for job in s.queue:
        alloc = s.fit_now(job, now)
        if alloc is None:
            return job
        s.start(job, now, alloc)
    return None


def backfill(s, now: float, skip=None, order=None, hold=None) -> None:
    """Start every waiting job (but ``skip``) that fits now, in queue order
    or, if ``order`` (a key function of :mod:`iosched.sched.orders`) is
    given, in that order.

    :param hold: ``None``, or a function ``hold(job) -> bool`` called
        before ``job`` is tried (EASY's head reservation made only when a
        candidate's window reaches it, see :meth:`Easy.schedule`).
    """
    profile = s.profile
    by_count = s.placer.needs_nb_res_free
    for job in (s.queue if order is None else sorted(s.queue, key=order)):
        free = profile.free_count(now)
        if free == 0:
            break
        if job is skip or (by_count and job.nb_res > free):
            continue
        if hold is not None and hold(job):
            hold = None
        alloc = s.fit_now(job, now)
        if alloc is not None:
            s.start(job, now, alloc)


class Fcfs:
    """FCFS without backfilling (see the module documentation)."""

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``: start from the head while jobs fit."""
        start_in_order(s, now)


class Filler:
    """Start every job that fits now, in queue order (module documentation)."""

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``: start whatever fits, in queue order."""
        backfill(s, now)


class Easy:
    """EASY backfilling (see the module documentation).

    :param reserve_with: the placer of the head job's reservation (default:
        the scheduler's). The burst-buffer paper's ``fcfs-easy`` reserves
        compute nodes only (Kopanski & Rzadca, Euro-Par 2021, Section 3).
    :param backfill_order: order of the backfill candidates (a key function
        of :mod:`iosched.sched.orders`; default: the queue order). Jobs start
        and the reservation is made in queue order either way: with an FCFS
        queue and ``backfill_order=sjf`` this is the burst-buffer paper's
        ``sjf-bb`` (Algorithm 1 with the backfill candidates sorted by
        walltime; artifact ``alloc_only.py``).

    Attribute ``head_reservation``: the :class:`HeadReservation` of the last
    pass, or None.

    The head job's reservation is held in the profile only while the
    backfill needs it: not at all when no job can be backfilled (the head
    is the only waiting job, or no resource is free now); on a profile
    without pools, only from the first candidate whose window ``[now, now +
    estimate)`` reaches the reservation's start (the earlier candidates'
    windows end before it, so it cannot change their answers, and a profile
    without pools is the same step function, hence the same segments,
    whatever the order of its reservations). With pools, whose amounts
    after a reserve and a remove may differ in the last bits, it is held
    for the whole backfill, as the algorithm states.
    """

    def __init__(self, reserve_with=None, backfill_order=None):
        self.reserve_with = reserve_with
        self.backfill_order = backfill_order
        self.head_reservation: Optional[HeadReservation] = None
        self._last = None   # (head, profile.changes, start, allocation) of the last pass

    def _earliest(self, s, head, now: float) -> tuple:
        """The head's reservation ``(start, Allocation)``. When the last pass
        reserved for the same job with the same placer, the profile has not
        changed since (only time went on) and that start is still ahead,
        its answer stands: the earliest start is the first candidate
        (``now``, then the breakpoints after it) at which the job fits; it
        does not fit at ``now`` (it is the head), and the later candidates
        are among the last pass's, with the same windows."""
        last = self._last
        if (last is not None and last[0] is head and last[1] == s.profile.changes and last[2] > now
                and self.reserve_with is None and s.placer.pure):
            return last[2], last[3]
        return s.earliest(head, now, self.reserve_with)

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s`` (Mu'alem & Feitelson 2001, EASY)."""
        self.head_reservation = None
        head = start_in_order(s, now)
        if head is None:
            self._last = None
            return
        t, alloc = self._earliest(s, head, now)
        self.head_reservation = HeadReservation(head.id, t, alloc)
        profile = s.profile
        self._last = (head, profile.changes, t, alloc)
        if len(s) < 2 or profile.free_count(now) == 0:
            return      # backfill would start nothing
        held = []

        def hold(job=None) -> bool:
            """Reserve the head's slot if ``job``'s window ``[now, now +
            estimate)`` reaches it (unconditionally without ``job``);
            whether it is held now."""
            if job is not None and not t < now + job.estimate:
                return False
            held.append(s.reserve(head, t, alloc, tag=("head", head.id)))
            return True

        if t == INF:
            backfill(s, now, skip=head, order=self.backfill_order)
            return
        if profile.has_pools or t <= now:
            hold()
            backfill(s, now, skip=head, order=self.backfill_order)
        else:
            backfill(s, now, skip=head, order=self.backfill_order, hold=hold)
        if held:
            profile.remove(held[0])
        if profile.changes != self._last[1] + 2 * len(held):
            self._last = None       # jobs were backfilled: the profile changed
        else:
            self._last = (head, profile.changes, t, alloc)


class Conservative:
    """Conservative backfilling (see the module documentation).

    Attribute ``plans``: job id -> :class:`Plan` of every waiting job.
    """

    def __init__(self):
        self.plans: dict = {}
        self._starts: list = []  # heap of (start, seq, job id) of plans; replaced ones linger
        self._invalid = False
        self._freed_early = False

    def _set(self, job, plan: Plan) -> None:
        self.plans[job.id] = plan
        if plan.start < INF:
            heapq.heappush(self._starts, (plan.start, job.seq, job.id))

    def _first_start(self) -> float:
        """The earliest start of the plans (inf if none)."""
        h = self._starts
        while h:
            start, _, jid = h[0]
            plan = self.plans.get(jid)
            if plan is not None and plan.start == start:
                return start
            heapq.heappop(h)
        return INF

    # events from the core
    def on_job_end(self, s, running, early: bool) -> None:
        """A job ended; ``early``: before its reservation's end."""
        if early:
            self._freed_early = True

    def on_overrun(self, s) -> None:
        """A running job overran its estimate: every plan is re-made."""
        self._drop(s)

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``: (re)plan, compress, start due plans."""
        if not self._invalid and self._first_start() < now:
            # a reservation's start passed without a pass (inexact estimates)
            self._drop(s)
        if self._invalid:
            s.stats["replans"] += 1
            self._invalid = False
        elif self._freed_early and self.plans:
            s.stats["compressions"] += 1
            self._compress(s, now)
        if len(self.plans) < len(s):    # jobs submitted since the last pass
            for job in s.queue:
                if job.id not in self.plans:
                    self._set(job, self._plan(s, job, now))
        # the plans due now, started in queue order
        due = set()
        h = self._starts
        while h and h[0][0] <= now:
            start, _, jid = heapq.heappop(h)
            plan = self.plans.get(jid)
            if plan is not None and plan.start == start:
                due.add(jid)
        for job in sorted((s.waiting(jid) for jid in due), key=lambda j: j.key):
            plan = self.plans.pop(job.id)
            s.start(job, now, plan.allocation, plan.reservation)
        # a reservation may start when no event is due (its start was the end
        # of a reservation that compression moved): be called then, unless a
        # running job is expected to end at that very time
        nxt = self._first_start()
        if nxt < INF and not s.running_ends_at(nxt):
            s.wake_up_at(nxt, now)
        self._freed_early = False

    def _plan(self, s, job, now) -> Plan:
        t, alloc = s.earliest(job, now)
        if t == INF:
            return Plan(job.id, INF, None)
        return Plan(job.id, t, s.reserve(job, t, alloc), alloc)

    def _drop(self, s) -> None:
        if self.plans:
            for plan in self.plans.values():
                if plan.reservation is not None:
                    s.profile.remove(plan.reservation)
            self.plans = {}
            self._starts = []
            self._invalid = True

    def _compress(self, s, now) -> None:
        profile = s.profile
        # on a profile without pools and with a placer whose answers depend
        # only on the capacity, the new slot is found with the old one freed
        # for the question only (AvailabilityProfile.without); most jobs keep
        # their slot, and removing and re-making it would give the same profile
        what_if = s.placer.pure and not profile.has_pools
        for job in s.queue:
            old = self.plans.get(job.id)
            if old is None or old.start <= now:
                continue
            if what_if and old.reservation is not None:
                with profile.without(old.reservation):
                    t, alloc = s.earliest(job, now)
                if t == old.start and alloc.mask == old.allocation.mask:
                    continue
                if t > old.start:
                    s.logger.error("compression would delay job %s from %s to %s",
                                   job.id, old.start, t)
                    continue
                profile.remove(old.reservation)
                self._set(job, Plan(job.id, t, s.reserve(job, t, alloc), alloc))
                continue
            if old.reservation is not None:
                profile.remove(old.reservation)
            new = self._plan(s, job, now)
            if new.start > old.start:
                # cannot happen: the old slot is free again; keep it if it does
                if new.reservation is not None:
                    profile.remove(new.reservation)
                s.logger.error("compression would delay job %s from %s to %s",
                               job.id, old.start, new.start)
                new = Plan(job.id, old.start, s.reserve(job, old.start, old.allocation),
                           old.allocation)
            self._set(job, new)
