"""The order plan-alpha applies at each scheduling pass (Kopanski & Rzadca,
Euro-Par 2021, Section 3.3, Algorithm 2; artifact ``alloc_only.py``
``plan_schedule``).

:class:`PlanOrder` is the ``choose_order`` of the shared core's
:class:`~iosched.sched.listschedule.ListSchedule` policy for ``plan-1``,
``plan-2`` and ``plan-3``: given the pass's
:class:`~iosched.sched.listschedule.ListPlan` and the waiting jobs, it
returns the order whose list schedule the pass applies. It keeps the
search's state across passes: the simulation's random generator (one
``random.Random(seed)``, the artifact's ``seed(42)`` at start-up), the
per-pass summaries (:attr:`PlanOrder.searches`) and the evaluator choice.

Searches (``search``): ``"artifact"`` (default,
:func:`iosched.bb.plan.artifact_order` after a reserved prefix) or
``"iosched"`` (the legacy search, :func:`iosched.bb.legacy.plan_order`).
Evaluators of the artifact search's orders (``evaluator``): ``"compiled"``
(default; :class:`iosched.bb.compiled.CompiledListPlan`, numba machine
code, where :func:`iosched.bb.compiled.supports` the placer's choices) or
``"python"`` (:class:`~iosched.sched.listschedule.ListPlan`); both give the
same schedule (``tests/test_bb_compiled.py``); with ``"compiled"`` the
annealing itself and the test of whether a waiting job can start now also
run in machine code (:meth:`iosched.bb.compiled.CompiledListPlan.anneal`,
:meth:`~iosched.bb.compiled.CompiledListPlan.fits_now`). numba is an optional extra
(``pip install iosched[fast]``): without it, ``"compiled"`` falls back to
the Python evaluator with one logged warning.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Optional

from iosched.bb import compiled, legacy, plan
from iosched.errors import InputError

__all__ = ["PlanOrder", "SEARCHES", "EVALUATORS", "fits_now"]

#: Order searches (option ``search``); the first is the default.
SEARCHES = ("artifact", legacy.LEGACY_SEARCH)

#: Evaluators of the artifact search's orders (option ``evaluator``): the
#: first is the default; both give the same schedule.
EVALUATORS = ("compiled", "python")

logger = logging.getLogger("iosched.bb.search")


def fits_now(lplan, prefix: list, rest: list, now: float) -> bool:
    """Whether some job of ``rest``, list-scheduled alone after ``prefix``
    on ``lplan`` (:class:`~iosched.sched.listschedule.ListPlan`), is given
    an allocation starting at or before ``now`` (s): the artifact's test
    before it searches (``plan_schedule``), on the Python path (the
    compiled one: :meth:`iosched.bb.compiled.CompiledListPlan.fits_now`).
    Leaves ``lplan`` holding ``prefix`` and the last job tried."""
    for j in rest:
        lplan.evaluate(prefix + [j])
        if lplan.out[-1][2] is not None and lplan.out[-1][1] <= now:
            return True
    return False


class PlanOrder:
    """Chooses plan-alpha's order at each pass (module doc); call it as
    ``order = plan_order(s, lplan, jobs, now)``.

    :param placer: the scheduler's :class:`~iosched.bb.placement.BurstBufferPlacer`
        (the compiled evaluator supports only some of its choices).
    :param alpha: exponent of the plan score ``sum (start - submit) ** alpha``
        (s ** alpha), > 0.
    :param search: one of :data:`SEARCHES`.
    :param evaluator: one of :data:`EVALUATORS`.
    :param depth: ``reservation_depth``: the first jobs of the queue placed
        in FCFS order before the others are ordered (int >= 0; the artifact:
        1, its 16-part setup 0).
    :param time_limit: wall-clock seconds per search, 0 = none (the artifact: 20).
    :param seed: seed of the simulation's random generator (artifact search)
        and of the legacy search's per-pass generators.
    :param iterations: the legacy search's budget (iterations).
    :param chi0: the legacy search's initial acceptance probability.
    :param cooling: the legacy search's cooling factor.
    :raises InputError: an unknown ``search`` or ``evaluator``.

    Public state: :attr:`searches` (one summary dict per pass: ``time``,
    ``queue`` length, ``skipped``, ``evaluations``, ``seconds`` of wall
    clock, and for a search ``cost``, ``exhaustive``, ``annealed``, ``t0``,
    ``placements``, ``order``), :attr:`rng`, :attr:`evaluator` (as asked;
    ``"compiled"`` without numba uses the Python evaluator, and the first
    search that would have used it logs a warning, once).
    """

    def __init__(self, placer, alpha: float, *, search: str = SEARCHES[0], evaluator: str = EVALUATORS[0],
                 depth: int = 1, time_limit: float = 0, seed: int = 0, iterations: int = 200,
                 chi0: float = 0.8, cooling: float = 0.9):
        if search not in SEARCHES:
            raise InputError(f"search={search!r} is unknown; expected one of {', '.join(SEARCHES)}")
        if evaluator not in EVALUATORS:
            raise InputError(f"evaluator={evaluator!r} is unknown; expected one of {', '.join(EVALUATORS)}")
        self.placer, self.alpha, self.search, self.evaluator = placer, alpha, search, evaluator
        self.depth, self.time_limit, self.seed = depth, time_limit, seed
        self.iterations, self.chi0, self.cooling = iterations, chi0, cooling
        self.rng = random.Random(seed)
        self.searches: list = []
        self._warned = False

    def __call__(self, s, lplan, jobs, now: float) -> Optional[list]:
        """The order plan-alpha applies at ``now`` (s), or None (no search,
        nothing starts). ``s``: the core; ``lplan``: the pass's
        :class:`~iosched.sched.listschedule.ListPlan`; ``jobs``: the waiting
        jobs."""
        if self.search == "artifact":
            return self._artifact(lplan, jobs, now)
        return legacy.plan_order(s, lplan, jobs, now, seed=self.seed, iterations=self.iterations,
                                 chi0=self.chi0, cooling=self.cooling, searches=self.searches)

    def _artifact(self, lplan, jobs, now):
        """The artifact's ``plan_schedule``: the first ``depth`` jobs of the
        queue (FCFS) are placed first, in queue order (those that fit now
        start, the others get reservations at their earliest start); the
        order of the other jobs is searched with
        :func:`iosched.bb.plan.artifact_order` over the plan left by those
        reservations, unless there is at most one of them or none of them
        fits now (then the prefix alone is applied). Returns the order to
        apply; with the compiled evaluator it ends at the last job planned
        to start now (the jobs after it would start later: ``ListSchedule``
        would not start them, and they do not change the placements before
        them)."""
        t0 = time.perf_counter()
        queue = sorted(jobs, key=lambda j: j.seq)
        prefix, rest = queue[:self.depth], queue[self.depth:]
        rec = {"time": now, "queue": len(queue)}
        if len(rest) <= 1:
            rec.update(skipped=True, evaluations=0, seconds=time.perf_counter() - t0)
            self.searches.append(rec)
            return prefix + rest
        base = lplan.evaluate(prefix)
        cplan = None
        if self.evaluator == "compiled" and compiled.supports(self.placer, lplan.tl, rest):
            cplan = compiled.CompiledListPlan(lplan, rest, self.alpha)   # from the prefix's plan
            fits = cplan.fits_now(now)
        else:
            fits = fits_now(lplan, prefix, rest, now)
        if not fits:
            rec.update(skipped=True, evaluations=0, seconds=time.perf_counter() - t0)
            self.searches.append(rec)
            return prefix
        if self.evaluator == "compiled" and not compiled.AVAILABLE and not self._warned:
            self._warned = True
            logger.warning("evaluator compiled: numba is not installed (pip install 'iosched[fast]'); "
                           "the Python evaluator is used (same schedule, slower)")
        anneal = None
        if cplan is not None:
            cost, until, keep = cplan.evaluate, cplan.evaluate_until, None
            anneal = cplan.anneal if compiled.anneals() else None
        else:
            cost = lambda o: lplan.evaluate(prefix + o) - base   # noqa: E731
            until = plan.limit_until(lambda o, stop: lplan.evaluate_until(prefix + o, stop), base)
            keep = lplan.keep
        res = plan.artifact_order(rest, cost, self.rng, time_limit=self.time_limit or None,
                                  cost_until=until, keep=keep, anneal=anneal)
        order = prefix + res.order
        applied = order
        if cplan is not None:
            # Only the jobs planned to start now are applied (ListSchedule); the
            # compiled plan gives every start, so the plan is made in Python only
            # up to the last job that starts now (list scheduling places each
            # job given those before it only: the same placements).
            starts = cplan.starts(res.order)
            m = max((k + 1 for k, t in enumerate(starts) if t <= now), default=0)
            applied = prefix + res.order[:m]
        lplan.evaluate(applied)  # leaves that plan on the timeline
        rec.update(skipped=False, cost=res.cost, evaluations=res.evaluations,
                   exhaustive=res.exhaustive, annealed=res.annealed, t0=res.t0,
                   placements=lplan.placements, reused=lplan.reused, order=[j.id for j in order],
                   seconds=time.perf_counter() - t0)
        self.searches.append(rec)
        return applied
