"""Reservation trackers of Goponenko et al. (PMBS 2024), Algorithms 1-7, on
the shared core's availability profile.

A tracker is built at the start of every scheduling pass (Slurm rebuilds its
tracker every backfill round: ``InitializeReservationTracker``) and closed at
its end; all it reserves is removed then. Its interface, used by
:class:`iosched.pfsbw.policy.SlurmBackfill`:

* ``earliest(job, t)`` -> ``(start, Allocation)`` -- ``EarliestStartTime``;
* ``reserve(job, t, allocation)`` -- ``ReserveResources`` of a delayed job;
* ``started(job, now, allocation)`` -- ``ReserveResources`` of a job just
  started (the core already holds its nodes until its end);
* ``close()``.

:class:`NodeTracker` is Slurm's standard tracker (nodes only, Algorithm 1).
:class:`IoAwareTracker` (Algorithms 2-4) adds the file-system throughput as
the profile pool :data:`POOL` whose total is the limit ``R_limit``
(bytes/s): each running job holds its latest estimate ``r_j`` until its
reservation ends (``b_j + L_j``), the measured current throughput in excess
of ``sum r_j`` is held as one block until the last of those ends (Algorithm 2
lines 7-8), and a job fits when ``r_j`` is free over ``[t, t + L_j)`` along
with its nodes (Algorithm 4). As in the implementation
(``backfill_licenses.c``), an estimate not below the limit is clipped just
below it when tested against the limit (so a job can always run alone), and
holds that would exceed the limit (the jobs already running use more than the
limit) are clipped to what is free: the pool is then simply full.
:class:`AdaptiveTracker` (Algorithms 5-7) adds the adjusted tracker AT.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from typing import Callable

from procset import ProcSet

from iosched.pfsbw.twogroup import Demand, TwoGroup, two_group
from iosched.sched.placer import Allocation
from iosched.sched.profile import INF

__all__ = ["POOL", "NodeTracker", "IoAwareTracker", "AdaptiveTracker", "StepUsage", "min_free"]

#: Name of the file-system throughput pool (bytes/s) in the core's profile.
POOL = "pfs"

_NO_POOL: dict = {}


def min_free(profile, pool: str, start: float, end: float) -> float:
    """Minimum free amount of ``pool`` on the profile over ``[start, end)``."""
    starts, _res, _n, pools, names, _tols = profile.raw_view(start)
    k = names.index(pool)
    low = INF
    for i, t in enumerate(starts):
        if i > 0 and t >= end:
            break
        low = min(low, pools[i][k])
    return low


class NodeTracker:
    """Nodes only: Slurm's standard reservation tracker (Algorithm 1).

    :param s: the core (:class:`~iosched.sched.core.Scheduler`).
    :param now: the pass time (s).
    """

    def __init__(self, s, now: float):
        self.s, self.now = s, now
        self.holds: list = []

    def pools(self, job) -> dict:
        """Pool amounts the job needs (none here)."""
        return _NO_POOL

    def earliest(self, job, t: float) -> tuple:
        """``EarliestStartTime(j, t)``: ``(start s, Allocation)`` or ``(inf, None)``."""
        start, res = self.s.profile.earliest_start(job.nb_res, job.estimate, self.pools(job) or None,
                                                   after=t)
        return (INF, None) if start == INF else (start, Allocation(res))

    def reserve(self, job, t: float, allocation) -> None:
        """``ReserveResources(j, t)`` of a delayed job: nodes and pools on ``[t, t + L_j)``."""
        self.holds.append(self.s.profile.reserve(t, t + job.estimate, allocation.resources,
                                                 self.pools(job), tag=("plan", job.id)))

    def started(self, job, now: float, allocation) -> None:
        """``ReserveResources(j, t_now)`` of a started job: its pools (the core holds its nodes)."""
        pools = self.pools(job)
        if pools:
            self.holds.append(self.s.profile.reserve(now, now + job.estimate, ProcSet(), pools,
                                                     tag=("pfs", job.id)))

    def close(self) -> None:
        """Remove everything this pass reserved."""
        for h in self.holds:
            self.s.profile.remove(h)
        self.holds = []


class IoAwareTracker(NodeTracker):
    """Algorithms 2-4 (see the module documentation).

    :param rate: ``rate(job) -> r_j`` (bytes/s), the latest estimate of a
        core :class:`~iosched.sched.job.Job`.
    :param measured: ``R_now`` (bytes/s), the current measured throughput.
    """

    def __init__(self, s, now: float, rate: Callable, measured: float):
        super().__init__(s, now)
        self.rate = rate
        self.limit = s.profile.pool_totals[POOL]
        self._cap = self.limit * (1 - 1e-6)
        self.running_total = 0.0
        last_end = now
        for rec in sorted(s.running.values(), key=lambda r: r.job.seq):
            r = rate(rec.job)
            end = rec.reservation.end
            self.running_total += r
            last_end = max(last_end, end)
            self._hold(now, end, r, ("running", rec.job.id))
        self.measured = measured
        if self.running_total < measured:   # Algorithm 2, lines 7-8
            self._hold(now, last_end, measured - self.running_total, ("measured",))

    def _hold(self, start: float, end: float, amount: float, tag) -> None:
        if amount <= 0 or end <= start:
            return
        amount = min(amount, min_free(self.s.profile, POOL, start, end))
        if amount > 0:
            self.holds.append(self.s.profile.reserve(start, end, ProcSet(), {POOL: amount}, tag=tag))

    def pools(self, job) -> dict:
        """``{POOL: r_j}`` clipped just below the limit, or none when ``r_j = 0``."""
        r = min(self.rate(job), self._cap)
        return {POOL: r} if r > 0 else _NO_POOL


class StepUsage:
    """The adjusted tracker AT: a step function of reserved amounts over time
    (amounts may be negative: ``r_j - n_j r_zero`` of a running zero job)."""

    def __init__(self):
        self._times: list = []      # sorted change times
        self._delta: dict = {}      # time -> change

    def add(self, start: float, end: float, amount: float) -> None:
        """Reserve ``amount`` on ``[start, end)`` (``end`` may be inf)."""
        if amount == 0 or end <= start:
            return
        for t, d in ((start, amount), (end, -amount)):
            if t == INF:
                continue
            if t not in self._delta:
                insort(self._times, t)
                self._delta[t] = 0.0
            self._delta[t] += d

    def level(self, t: float) -> float:
        """Reserved amount at time ``t``."""
        i = bisect_right(self._times, t)
        return sum(self._delta[x] for x in self._times[:i])

    def earliest_at_most(self, t: float, duration: float, cap: float) -> float:
        """Earliest ``t' >= t`` such that the reserved amount never exceeds
        ``cap`` on ``[t', t' + duration)``, or inf."""
        times, delta = self._times, self._delta
        i = bisect_right(times, t)
        level = sum(delta[x] for x in times[:i])
        tol = 1e-9 * max(1.0, abs(cap))
        cand = t
        while True:
            # check [cand, cand + duration): level now, then the changes inside
            ok, lv, j = level <= cap + tol, level, i
            while ok and j < len(times) and times[j] < cand + duration:
                lv += delta[times[j]]
                ok = lv <= cap + tol
                j += 1
            if ok:
                return cand
            # next candidate: the next change time after which the level decreases
            while i < len(times):
                level += delta[times[i]]
                cand = times[i]
                i += 1
                if delta[cand] < 0:
                    break
            else:
                return INF


class AdaptiveTracker(IoAwareTracker):
    """Algorithms 5-7: the I/O-aware tracker RT (this object's base) plus the
    adjusted tracker AT.

    :param duration: ``duration(job) -> d_j`` (s), the runtime estimate.
    :param naive: no two-group approximation (``r* = r_zero = 0``).
    :param overshoot: share ``h`` in ``[0, 1]`` of a regular job's ``r_j'``
        allowed above the adjusted target ``R~'``: it may start when AT is
        at most ``R~' - (1 - h) min(r_j', R~')`` over ``[t, t + L_j)``. The
        paper's Algorithm 7 is ``h = 1`` (AT at most ``R~'``); the
        implementation (``backfill_licenses.c``, ``random = 0.5``) uses 0.5.
    """

    def __init__(self, s, now: float, rate: Callable, measured: float, duration: Callable,
                 naive: bool = False, overshoot: float = 0.5):
        super().__init__(s, now, rate, measured)
        self.overshoot = overshoot
        running = [Demand(rec.job.nb_res, rate(rec.job), rec.start + duration(rec.job) - now)
                   for rec in s.running.values()]
        waiting = [Demand(j.nb_res, rate(j), duration(j)) for j in s.queue]
        n_total = len(s.profile.resources)
        self.groups: TwoGroup = two_group(running, waiting, n_total, self.limit, naive)
        self.at = StepUsage()
        for rec in s.running.values():          # Algorithm 5, lines 10-11
            self.at.add(rec.start, rec.reservation.end,
                        rate(rec.job) - rec.job.nb_res * self.groups.r_zero)

    def earliest(self, job, t: float) -> tuple:
        """Algorithm 7: a zero job's earliest start is RT's; a regular job's
        also waits until AT leaves room for it."""
        g, r = self.groups, self.rate(job)
        if not g.is_regular(job.nb_res, r):
            return super().earliest(job, t)
        share = r - job.nb_res * g.r_zero
        cap = g.adjusted - (1 - self.overshoot) * max(0.0, min(share, g.adjusted))
        while True:
            t_rt, alloc = super().earliest(job, t)
            if t_rt == INF:
                return INF, None
            t = self.at.earliest_at_most(t_rt, job.estimate, cap)
            if t == t_rt:
                return t, alloc
            if t == INF:
                return INF, None

    def _adjust(self, job, t: float) -> None:
        g, r = self.groups, self.rate(job)
        if g.is_regular(job.nb_res, r):        # Algorithm 6, lines 2-3
            self.at.add(t, t + job.estimate, r - job.nb_res * g.r_zero)

    def reserve(self, job, t: float, allocation) -> None:
        super().reserve(job, t, allocation)
        self._adjust(job, t)

    def started(self, job, now: float, allocation) -> None:
        super().started(job, now, allocation)
        self._adjust(job, now)
