"""Legacy burst-buffer variants: iosched's choices before issue 13, kept selectable.

Issue 13 aligned the burst-buffer family with the paper's artifact
(jankopanski/Burst-Buffer-Scheduling, ``alloc_only.py``). What iosched did
before stays available here, in one place, under the same option values:

* policy ``sjf-bb-head`` (:func:`sjf_bb_head`): EASY with the burst-buffer
  placer on a queue sorted entirely by walltime, so the reservation goes to
  the shortest waiting job that does not fit (the paper's ``sjf-bb`` keeps
  FCFS for the reservation and sorts only the backfill candidates);
* plan search ``search: "iosched"`` (:func:`plan_order`, :func:`best_order`):
  nine candidate orders (:func:`initial_orders`), Ben-Ameur's initial
  temperature (:func:`ben_ameur_temperature`), cooling after every
  ``len(queue)`` moves, at most ``iterations`` evaluations, unrounded
  scores, a random generator per pass; no search when no job fits now.

docs/burst-buffers.md ("Artifact semantics and options") compares them with
the artifact's. Nothing else in the family depends on this module.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from typing import Callable, Sequence

from iosched.bb.plan import SearchResult
from iosched.sched.orders import sjf
from iosched.sched.policies import Easy

__all__ = ["LEGACY_POLICIES", "LEGACY_SEARCH", "sjf_bb_head", "plan_order", "best_order",
           "initial_orders", "ben_ameur_temperature"]

#: Legacy values of the burst-buffer scheduler's option ``policy``.
LEGACY_POLICIES = ("sjf-bb-head",)
#: Legacy value of the option ``search`` of the plan-based policies.
LEGACY_SEARCH = "iosched"


def sjf_bb_head() -> tuple:
    """``(policy, order)`` of ``sjf-bb-head`` on the shared core: EASY
    (:class:`~iosched.sched.policies.Easy`, the scheduler's placer for the
    reservation) on the queue order :func:`~iosched.sched.orders.sjf`
    (walltime, then arrival)."""
    return Easy(), sjf


def plan_order(s, lplan, jobs, now: float, *, seed: int, iterations: int, chi0: float, cooling: float,
               searches: list):
    """iosched's plan-alpha step before issue 13: the best order of the
    waiting ``jobs`` found by :func:`best_order` (costs by
    ``lplan.evaluate``, a :class:`~iosched.sched.listschedule.ListPlan`),
    or None (no search, nothing starts) when no job fits now -- planning
    only takes capacity away, so no plan could start a job now; the
    decisions are those of a full search. The chosen order's plan is left
    on ``lplan``'s timeline.

    :param s: the core (:class:`~iosched.sched.core.Scheduler`; ``fit_now``, ``passes``).
    :param now: the pass time (s).
    :param seed: user seed; the pass's generator is ``Random(f"{seed}:{key}")``
        with ``key = f"{s.passes}:{now!r}"``.
    :param searches: list to which a summary of the pass is appended
        (``time``, ``queue``, ``skipped``, ``evaluations``, ``seconds``...).
    :returns: the order (list of jobs) or None.
    """
    t0 = time.perf_counter()
    queue = sorted(jobs, key=lambda j: j.seq)
    rec = {"time": now, "queue": len(queue)}
    if not any(s.fit_now(j, now) for j in queue):
        rec.update(skipped=True, evaluations=0, seconds=time.perf_counter() - t0)
        searches.append(rec)
        return None
    res = best_order(queue, lplan.evaluate, seed=seed, key=f"{s.passes}:{now!r}", iterations=iterations,
                     chi0=chi0, cooling=cooling)
    lplan.evaluate(res.order)  # leaves the plan of the chosen order on the timeline
    rec.update(skipped=False, cost=res.cost, evaluations=res.evaluations, exhaustive=res.exhaustive,
               annealed=res.annealed, t0=res.t0, placements=lplan.placements,
               order=[j.id for j in res.order], seconds=time.perf_counter() - t0)
    searches.append(rec)
    return res.order


def initial_orders(jobs: Sequence) -> list:
    """The 9 candidate orders of ``jobs``.

    :param jobs: :class:`~iosched.sched.job.Job` records with ``seq``
        (arrival rank), ``estimate`` (s), ``nb_res`` (nodes, int) and
        ``request.bb`` (bytes per node).
    :returns: 9 lists (permutations of ``jobs``), ties in FCFS order.
    """
    fcfs = sorted(jobs, key=lambda w: w.seq)
    keys = [
        lambda w: w.estimate,
        lambda w: -w.estimate,
        lambda w: w.nb_res,
        lambda w: -w.nb_res,
        lambda w: w.nb_res * w.request.bb,
        lambda w: -w.nb_res * w.request.bb,
        lambda w: w.nb_res * w.estimate,
        lambda w: -w.nb_res * w.estimate,
    ]
    return [fcfs] + [sorted(fcfs, key=lambda w, k=k: (k(w), w.seq)) for k in keys]


def ben_ameur_temperature(deltas: Sequence[float], chi0: float = 0.8, p: float = 1.0,
                          eps: float = 1e-4, max_iter: int = 200) -> float:
    """Initial temperature for an acceptance probability ``chi0`` of the
    given cost increases (Ben-Ameur 2004, "Computing the initial temperature
    of simulated annealing", iterative formula
    ``T <- T * (ln chi(T) / ln chi0) ** (1/p)`` with
    ``chi(T) = mean(exp(-delta / T))`` for transitions from one state).

    :param deltas: positive cost increases.
    :returns: T (> 0); ``0.0`` if there is no positive delta.
    :raises ValueError: if ``chi0`` is not in (0, 1).
    """
    if not 0 < chi0 < 1:
        raise ValueError(f"chi0={chi0} must be in (0, 1)")
    d = [float(x) for x in deltas if x > 0]
    if not d:
        return 0.0
    T = -(sum(d) / len(d)) / math.log(chi0)
    for _ in range(max_iter):
        chi = sum(math.exp(-x / T) for x in d) / len(d)
        if abs(chi - chi0) < eps or chi <= 0:
            break
        T = T * (math.log(chi) / math.log(chi0)) ** (1.0 / p)
    return T


def best_order(jobs: Sequence, cost: Callable[[list], float], *, seed=0, key="",
               exhaustive_max: int = 5, iterations: int = 200, chi0: float = 0.8,
               cooling: float = 0.9) -> SearchResult:
    """Search an order of ``jobs`` minimising ``cost(order)`` (iosched's
    search before issue 13; module doc).

    :param jobs: see :func:`initial_orders`.
    :param cost: order -> plan cost (e.g. sum of waiting ** alpha).
    :param seed: user seed; ``key`` distinguishes passes (e.g. the time).
    :returns: a :class:`SearchResult`; with an empty queue the order is empty.
    """
    jobs = list(jobs)
    if not jobs:
        return SearchResult([], 0.0, 0, True, False, 0.0)
    if len(jobs) <= exhaustive_max:
        fcfs = sorted(jobs, key=lambda w: w.seq)
        best, best_c, n = None, math.inf, 0
        for perm in itertools.permutations(fcfs):
            c = cost(list(perm))
            n += 1
            if c < best_c:
                best, best_c = list(perm), c
        return SearchResult(best, best_c, n, True, False, 0.0)
    cands = initial_orders(jobs)
    seen, scored = set(), []
    for c in cands:
        sig = tuple(id(w) for w in c)
        if sig in seen:
            continue
        seen.add(sig)
        scored.append((cost(c), len(scored), c))
    n = len(scored)
    best_c, _, best = min(scored, key=lambda x: (x[0], x[1]))
    worst_c = max(s[0] for s in scored)
    if worst_c == best_c:
        return SearchResult(list(best), best_c, n, False, False, 0.0)
    T = ben_ameur_temperature([s[0] - best_c for s in scored if s[0] > best_c], chi0)
    t0 = T
    rng = random.Random(f"{seed}:{key}")
    cur, cur_c = list(best), best_c
    best = list(best)
    L = len(jobs)
    moves = 0
    while n < iterations and T > 0:
        i, j = rng.sample(range(L), 2)
        nb = list(cur)
        nb[i], nb[j] = nb[j], nb[i]
        c = cost(nb)
        n += 1
        delta = c - cur_c
        if delta <= 0 or rng.random() < math.exp(-delta / T):
            cur, cur_c = nb, c
            if c < best_c:
                best, best_c = list(nb), c
        moves += 1
        if moves % L == 0:
            T *= cooling
    return SearchResult(best, best_c, n, False, True, t0)
