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

    :param profile: the scheduler's profile.
    :param placer: places each job (:class:`~iosched.sched.placer.Placer`).
    :param now: planning time (s).
    :param cost: ``cost(job, t) -> float`` of placing ``job`` at ``t``
        (default :func:`waiting_cost` with alpha 1).

    Attributes: ``out`` (list of ``(job, t, Allocation or None)`` of the last
    evaluated order), ``placements`` (number of placements computed).
    """

    def __init__(self, profile, placer, now: float, cost: Callable = None):
        self.profile, self.now = profile, now
        self._tl = None
        self.placer = placer
        self.cost_of = cost or waiting_cost(1.0)
        self.order, self.out, self.cum = [], [], []
        self.placements = 0

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
        p, L, cur = 0, min(len(order), len(self.order)), self.order
        while p < L and order[p] is cur[p]:
            p += 1
        self._pop_to(p)
        cost = self.cum[-1] if self.cum else 0.0
        tl, placer, cost_of = self.tl, self.placer, self.cost_of
        for job in order[p:]:
            self.placements += 1
            t, alloc = tl.place(job, placer)
            if alloc is None:
                cost = INF
            else:
                cost += cost_of(job, t)
            self.order.append(job)
            self.out.append((job, t, alloc))
            self.cum.append(cost)
            if stop is not None and len(self.order) < len(order) and stop(cost):
                return cost, False
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
