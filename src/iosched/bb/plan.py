"""Plan-based scheduling with simulated annealing (plan-alpha).

Source: Kopanski & Rzadca, Euro-Par 2021, Section 3.3 and Algorithm 2;
artifact ``burstbuffer/alloc_only.py`` (``plan_schedule``,
``_sort_iterator``, ``create_execution_plan``; final version af9688d1),
``scheduler_options.json`` (``priority_policy`` sum / square / cube =
alpha 1, 2, 3).

A *plan* of the waiting queue is built from an order of its jobs: each job,
in that order, is given the earliest start at which its compute nodes and
burst buffers are free for its whole walltime, given the running jobs and
the jobs planned before it (list scheduling on the availability profile, so
a later job may be planned before an earlier one if it fits in a hole). The
plan's score is ``sum_j (planned start_j - submit_j) ** alpha`` (waiting
time in s). The scheduler starts the jobs planned to start now and re-plans
at every scheduling pass.

Two searches over orders (option ``search`` of the scheduler,
:class:`iosched.bb.search.PlanOrder` applies them):

* :func:`artifact_order` (``"artifact"``, the default): the artifact's.
  Scores are rounded to integers (Python ``round``). A queue of at most 5
  jobs is searched exhaustively (``itertools.permutations`` of the queue
  order; the first best wins). Otherwise the 9 initial candidates of
  :func:`artifact_candidates` are scored; if the best and the worst differ,
  simulated annealing starts from the best: initial temperature ``worst -
  best``; 30 cooling steps of 6 moves; a move swaps two positions drawn
  uniformly (possibly equal); a better-than-best order is kept as the best
  and current; otherwise a move is accepted if its score is below the
  current one or with probability ``exp((current - score) / T)``, else
  undone; after every 6 moves ``T <- max(0.9 T, 1)``. The artifact also
  stops the annealing after 20 s of wall-clock time (``time_limit``),
  which makes its results depend on the machine; here the limit is an
  option, off by default, so the same inputs give the same schedule. The
  random generator is one ``random.Random(seed)`` for the whole simulation
  (the artifact: ``seed(42)`` at start-up).
* :func:`iosched.bb.legacy.best_order` (``"iosched"``, iosched before
  issue 13; a legacy variant): other candidates, Ben-Ameur's initial
  temperature, cooling after every ``len(queue)`` moves, at most
  ``iterations`` evaluations, unrounded scores, a generator per pass.

The paper (Section 3.3) lists the candidates as: FCFS, processors ascending
and descending, burst buffer per processor ascending and descending, ratio
of burst buffer per processor to processors ascending and descending,
walltime ascending and descending -- the artifact's set, in another order.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from typing import Callable, Optional, Sequence

__all__ = ["SearchResult", "artifact_candidates", "artifact_order", "limit_until"]


class SearchResult:
    """Outcome of a search (:func:`artifact_order`,
    :func:`iosched.bb.legacy.best_order`): ``order`` (list), ``cost`` (float),
    ``evaluations`` (int), ``exhaustive`` (bool), ``annealed`` (bool),
    ``t0`` (initial temperature, 0 if no annealing)."""

    __slots__ = ("order", "cost", "evaluations", "exhaustive", "annealed", "t0")

    def __init__(self, order, cost, evaluations, exhaustive, annealed, t0):
        self.order, self.cost, self.evaluations = order, cost, evaluations
        self.exhaustive, self.annealed, self.t0 = exhaustive, annealed, t0


def artifact_candidates(jobs: Sequence) -> list:
    """The artifact's 9 initial candidate orders (``_sort_iterator``).

    :param jobs: the jobs in queue order; each has ``nb_res`` (processors),
        ``estimate`` (walltime, s) and ``request.bb`` (bytes per processor).
    :returns: 9 lists: the queue order, then stable sorts (ties keep the
        queue order, also when descending) by processors descending, burst
        buffer descending, burst buffer / processors descending and
        ascending, processors ascending, burst buffer ascending, walltime
        ascending and descending.
    """
    q = list(jobs)
    keys = [
        (lambda w: w.nb_res, True),
        (lambda w: w.request.bb, True),
        (lambda w: w.request.bb / w.nb_res, True),
        (lambda w: w.request.bb / w.nb_res, False),
        (lambda w: w.nb_res, False),
        (lambda w: w.request.bb, False),
        (lambda w: w.estimate, False),
        (lambda w: w.estimate, True),
    ]
    return [q] + [sorted(q, key=k, reverse=rev) for k, rev in keys]


def artifact_order(jobs: Sequence, cost: Callable[[list], float], rng: random.Random, *,
                   exhaustive_max: int = 5, cooling_steps: int = 30, moves_per_step: int = 6,
                   cooling: float = 0.9, floor: float = 1.0,
                   time_limit: Optional[float] = None,
                   cost_until: Optional[Callable] = None,
                   keep: Optional[Callable[[], None]] = None,
                   anneal: Optional[Callable] = None) -> SearchResult:
    """The artifact's search for the order of ``jobs`` minimising
    ``round(cost(order))`` (module documentation).

    :param jobs: the jobs to order, in queue order (see
        :func:`artifact_candidates`).
    :param cost: order -> plan score (s ** alpha; inf if a job never fits).
    :param rng: the simulation's random generator (``randint`` twice per
        move, ``random`` when a move is neither better than the best nor
        than the current order).
    :param time_limit: wall-clock seconds after which the annealing stops
        (None: never; the artifact: 20).
    :param cost_until: optional ``cost_until(order, limit) -> (cost,
        complete)`` that stops evaluating an order after a placement (not
        the last) once the partial cost ``p`` is finite and ``round(p) >=
        limit`` (:func:`limit_until` of
        :meth:`iosched.sched.listschedule.ListPlan.evaluate_until`, or
        :meth:`iosched.bb.compiled.CompiledListPlan.evaluate_until`).
        A move is abandoned as soon as its partial cost shows that it will
        be rejected whatever its rest costs; the random draw it needs is
        made at that point, which is where the full evaluation would draw
        it, so the results are those of full evaluations.
    :param keep: optional callable, called right after the evaluation of
        an order that becomes the annealing's current order (the best
        candidate, an accepted move): e.g.
        :meth:`iosched.sched.listschedule.ListPlan.keep`, so that the
        evaluation of the next move, which differs from it by one swap,
        reuses its placements. It changes no result.
    :param anneal: optional ``anneal(order, best, T, rng, cooling_steps,
        moves_per_step, cooling, floor) -> (best order, best score,
        moves)`` that runs the annealing below (with ``cost_until``'s early
        rejection) in one call, drawing from ``rng`` as it would, e.g.
        :meth:`iosched.bb.compiled.CompiledListPlan.anneal`; used when
        there is no ``time_limit``. It changes no result.
    :returns: a :class:`SearchResult` (``t0`` = initial temperature).
    """
    jobs = list(jobs)

    def score(order):
        c = cost(order)
        return c if math.isinf(c) else round(c)

    if not jobs:
        return SearchResult([], 0, 0, True, False, 0.0)
    if len(jobs) <= exhaustive_max:
        best, best_s, n = None, math.inf, 0
        for perm in itertools.permutations(jobs):
            c = score(list(perm))
            n += 1
            if best is None or c < best_s:
                best, best_s = list(perm), c
        return SearchResult(best, best_s, n, True, False, 0.0)
    best, best_s, worst_s, n = None, math.inf, -math.inf, 0
    for cand in artifact_candidates(jobs):
        c = score(cand)
        n += 1
        if best is None or c < best_s:
            best, best_s = cand, c
            if keep is not None:
                keep()
        worst_s = max(worst_s, c)
    if best_s == worst_s or math.isinf(worst_s):
        return SearchResult(list(best), best_s, n, False, False, 0.0)
    T = t0 = float(worst_s - best_s)
    if anneal is not None and not time_limit:
        best, best_s, moves = anneal(list(best), best_s, T, rng, cooling_steps, moves_per_step,
                                     cooling, floor)
        return SearchResult(best, best_s, n + moves, False, True, t0)
    perm = list(best)
    best = list(best)
    current = best_s
    L = len(perm)
    begin = time.perf_counter() if time_limit else 0.0
    stop = False
    for _ in range(cooling_steps):
        for _ in range(moves_per_step):
            if time_limit and time.perf_counter() - begin > time_limit:
                stop = True
                break
            i, j = rng.randint(0, L - 1), rng.randint(0, L - 1)
            perm[i], perm[j] = perm[j], perm[i]
            n += 1
            if cost_until is None:
                c = score(perm)
                accept = c < best_s or c < current or rng.random() < math.exp((current - c) / T)
            else:
                c, accept = _bounded_move(perm, cost_until, rng, current, T)
            if accept and keep is not None:
                keep()
            if accept and c < best_s:
                current = best_s = c
                best = list(perm)
            elif accept:
                current = c
            else:
                perm[i], perm[j] = perm[j], perm[i]
        T = max(cooling * T, floor)
        if stop:
            break
    return SearchResult(best, best_s, n, False, True, t0)


def limit_until(evaluate_until: Callable, base: float = 0.0) -> Callable:
    """The ``cost_until`` of :func:`artifact_order` from an evaluator with a
    stop rule (e.g. :meth:`iosched.sched.listschedule.ListPlan.evaluate_until`).

    :param evaluate_until: ``evaluate_until(order, stop) -> (cost,
        complete)``, calling ``stop(partial cost)`` after each placement
        but the last and stopping when it returns True.
    :param base: subtracted from the costs (e.g. those of reserved jobs
        placed before the order).
    :returns: ``until(order, limit) -> (cost - base, complete)`` that stops
        once the partial cost ``p - base`` is finite and ``round(p - base)
        >= limit``.
    """
    def until(order, limit):
        c, complete = evaluate_until(
            order, lambda p: not math.isinf(p - base) and round(p - base) >= limit)
        return c - base, complete
    return until


def _bounded_move(perm: list, cost_until: Callable, rng: random.Random, current, T: float) -> tuple:
    """One annealing move of :func:`artifact_order` with early rejection.

    The artifact accepts a move of rounded score ``s`` if ``s < current`` or
    ``r < exp((current - s) / T)`` with ``r = random()`` drawn only when
    ``s >= current``. Partial costs ``p`` are lower bounds of the order's
    cost, so ``round(p) >= current`` already implies ``s >= current``: the
    evaluation stops there (limit ``current``), ``r`` is drawn, and the
    evaluation goes on only while ``round(p) <= current - T ln r + 1``
    (limit ``floor(current - T ln r + 1) + 1``; beyond it ``r >= exp((current
    - s) / T)`` for sure). A complete evaluation is decided with the
    artifact's own test. ``r`` is drawn exactly when the full evaluation
    would draw it, so the results are those of full evaluations.

    :param cost_until: ``cost_until(order, limit) -> (cost, complete)``
        (:func:`artifact_order`); a second call on the same order resumes
        the first (both evaluators reuse the placed prefix).
    :returns: ``(s, accepted)`` (``s`` is a lower bound if rejected early).
    """
    c, complete = cost_until(perm, current)
    s = c if math.isinf(c) else round(c)
    if complete and s < current:
        return s, True
    r = rng.random()
    if not complete:
        if r == 0.0:        # exp(.) > r for every score: evaluate to the end
            limit = math.inf
        else:
            bound = current - T * math.log(r) + 1.0
            if s > bound:
                return s, False
            limit = math.floor(bound) + 1
        c, complete = cost_until(perm, limit)
        s = c if math.isinf(c) else round(c)
        if not complete:
            return s, False
    return s, r < math.exp((current - s) / T)
