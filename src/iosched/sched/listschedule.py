"""List scheduling of a queue order on a what-if timeline.

*List scheduling* an order of the waiting jobs gives each job, in that
order, the earliest start at which its placer finds it an allocation, given
the running jobs and the jobs placed before it (so a later job may be placed
before an earlier one if it fits in a hole). It is the plan of conservative
backfilling for the queue order, and the building block of plan-based
policies, which search over orders (Kopanski & Rzadca, Euro-Par 2021,
Section 4: plan cost ``sum_j (start_j - submit_j) ** alpha``).

:class:`ListPlan` evaluates many orders on one
:class:`~iosched.sched.timeline.Timeline` incrementally;
:class:`ListSchedule` is the policy "list-schedule the queue in an order,
start the jobs planned now".
"""

from __future__ import annotations

from typing import Callable, Sequence

from iosched.sched.profile import INF
from iosched.sched.timeline import Timeline

__all__ = ["ListPlan", "ListSchedule", "waiting_cost"]


def waiting_cost(alpha: float = 1.0) -> Callable:
    """Per-job plan cost ``max(0, start - submit) ** alpha`` (s ** alpha)."""
    def cost(job, t: float) -> float:
        return max(0.0, t - job.subtime) ** alpha
    return cost


class ListPlan:
    """Incremental list scheduling of orders on a timeline of a profile (the
    profile itself is never modified).

    The placements of the last evaluated order stay pushed on the timeline;
    the next order reuses its longest common prefix with it (popping only the
    placements after the prefix) and places the rest. A swap of positions
    ``i < j`` in simulated annealing thus re-places only the jobs from ``i``
    on. Placements and costs are those of list-scheduling the order from
    scratch (same earliest starts, same summation order of the cost).

    A search may also :meth:`keep` an evaluated order as the *reference*
    (e.g. the current order of an annealing, to which a rejected move
    returns): an order then also reuses its common prefix with the
    reference, and when it differs from the reference only before position
    ``q`` and the timeline after its first ``q`` placements equals the
    reference's (same segments, free resources and free pool amounts, e.g.
    two swapped jobs that get the same starts and resources), the
    reference's placements from ``q`` on are reused (placing from an equal
    state gives the same placements; the costs are summed again in order).

    :param profile: the scheduler's profile.
    :param placer: places each job (:class:`~iosched.sched.placer.Placer`).
    :param now: planning time (s).
    :param cost: ``cost(job, t) -> float`` of placing ``job`` at ``t``
        (default :func:`waiting_cost` with alpha 1).

    Attributes: ``out`` (list of ``(job, t, Allocation or None)`` of the last
    evaluated order), ``placements`` (number of placements computed),
    ``reused`` (placements taken from the reference after an equal state).
    """

    def __init__(self, profile, placer, now: float, cost: Callable = None):
        self.profile, self.now = profile, now
        self._tl = None
        self.placer = placer
        self.cost_of = cost or waiting_cost(1.0)
        self.order, self.out, self.cum = [], [], []
        self.lev = []       # timeline depth (pushes) after each position
        self._ref = None    # (order, out, cum, lev, saved stack) of keep()
        self.placements = 0
        self.reused = 0

    @property
    def tl(self) -> Timeline:
        """The timeline of the profile at ``now`` (made at the first use)."""
        if self._tl is None:
            self._tl = self.profile.snapshot(self.now)
        return self._tl

    def _pop_to(self, p: int) -> None:
        tl = self.tl
        while len(self.order) > p:
            if self.out.pop()[2] is not None:  # that placement reserved
                tl.pop()
            self.order.pop()
            self.cum.pop()
            self.lev.pop()

    def keep(self) -> None:
        """Make the last evaluated order (its placements so far) the
        reference that later evaluations may reuse (class documentation)."""
        self._ref = (list(self.order), list(self.out), list(self.cum), list(self.lev),
                     self.tl.saved())

    def evaluate(self, order: Sequence) -> float:
        """Cost of list-scheduling ``order`` (inf if a job never fits)."""
        return self.evaluate_until(order)[0]

    def evaluate_until(self, order: Sequence, stop: Callable = None) -> tuple:
        """List-schedule ``order``, stopping early if ``stop(partial cost)``
        returns True after a placement (per-job costs are >= 0, so the
        partial cost is a lower bound of the order's cost).

        :returns: ``(cost, complete)``: the order's cost and True, or the
            partial cost when stopped and False (the placements made so far
            stay on the timeline, as for a complete order).
        """
        n = len(order)
        p, L, cur = 0, min(n, len(self.order)), self.order
        while p < L and order[p] is cur[p]:
            p += 1
        ref = self._ref
        q = n
        if ref is not None:
            rorder, rout, rcum, rlev, rstack = ref
            L = min(n, len(rorder))
            pr = 0
            while pr < L and order[pr] is rorder[pr]:
                pr += 1
            if pr > p:   # the reference shares more: continue from it
                self.order, self.out = rorder[:pr], rout[:pr]
                self.cum, self.lev = rcum[:pr], rlev[:pr]
                self.tl.restore(rstack, rlev[pr - 1])
                p = pr
            if len(rorder) == n:   # positions >= q hold the reference's jobs
                while q > p and order[q - 1] is rorder[q - 1]:
                    q -= 1
        self._pop_to(p)
        cost = self.cum[-1] if self.cum else 0.0
        tl, placer, cost_of = self.tl, self.placer, self.cost_of
        for k in range(p, n):
            if k == q and k > 0 and tl.state() == rstack[rlev[k - 1]]:
                return self._reuse(order, k, cost, stop)
            job = order[k]
            self.placements += 1
            t, alloc = tl.place(job, placer)
            if alloc is None:
                cost = INF
            else:
                cost += cost_of(job, t)
            self.order.append(job)
            self.out.append((job, t, alloc))
            self.cum.append(cost)
            self.lev.append(len(tl))
            if stop is not None and k + 1 < n and stop(cost):
                return cost, False
        return cost, True

    def _reuse(self, order, q, cost, stop) -> tuple:
        """The rest of :meth:`evaluate_until` from position ``q`` on, where
        the timeline equals the reference's after its first ``q``
        placements and ``order[q:]`` is the reference's: its placements
        (and timeline states) are taken, the costs summed in order."""
        _, rout, _, rlev, rstack = self._ref
        n = len(order)
        tl, cost_of = self.tl, self.cost_of
        base, depth = rlev[q - 1], len(tl)
        for k in range(q, n):
            job, t, alloc = out = rout[k]
            self.reused += 1
            if alloc is None:
                cost = INF
            else:
                cost += cost_of(job, t)
            self.order.append(job)
            self.out.append(out)
            self.cum.append(cost)
            self.lev.append(depth + rlev[k] - base)
            if stop is not None and k + 1 < n and stop(cost):
                tl.extend(rstack, base, rlev[k])
                return cost, False
        tl.extend(rstack, base, rlev[n - 1])
        return cost, True


class ListSchedule:
    """Policy: list-schedule the queue in an order and start the jobs placed
    at ``now``; nothing is kept between passes.

    :param choose_order: ``choose_order(s, plan, jobs, now) -> order`` picks
        the order to apply (it may evaluate candidates with
        ``plan.evaluate``); default: the queue order.
    :param cost: per-job cost for :class:`ListPlan` (default waiting time).
    """

    def __init__(self, choose_order: Callable = None, cost: Callable = None):
        self.choose_order = choose_order
        self.cost = cost

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``: plan the chosen order, start its jobs placed at ``now``."""
        jobs = s.queue
        if not jobs:
            return
        plan = ListPlan(s.profile, s.placer, now, self.cost)
        order = jobs if self.choose_order is None else self.choose_order(s, plan, jobs, now)
        if order is None:
            return
        plan.evaluate(order)
        for job, t, alloc in list(plan.out):
            if alloc is not None and t <= now:
                s.start(job, now, alloc)
