"""Plan-based scheduling with simulated annealing (plan-alpha).

Source: Kopanski & Rzadca, Euro-Par 2021, Section 4 and Algorithm 2 (as
corrected in arXiv 2109.00082v2); artifact ``scheduler_options.json``
(``algorithm: plan``, ``priority_policy`` sum / square / cube = alpha 1, 2, 3).

A *plan* of the waiting queue is built from an order of its jobs: each job,
in that order, is given the earliest start at which its compute nodes and
burst buffers are free for its whole walltime, given the running jobs and
the jobs planned before it (list scheduling on the availability profile, so
a later job may be planned before an earlier one if it fits in a hole). The
plan's cost is ``sum_j (planned start_j - submit_j) ** alpha`` (waiting time
in s). The scheduler starts the jobs planned to start now and re-plans at
every scheduling pass.

Search over orders (:func:`best_order`):

* 9 initial candidates (:func:`initial_orders`; the paper's list is not
  restated here verbatim, our choice is stated in ``docs/burst-buffers.md``):
  submission order (FCFS), walltime ascending (SJF) and descending, nodes
  ascending and descending, burst buffer (nodes x bb) ascending and
  descending, area (nodes x walltime) ascending and descending;
* a queue of at most 5 jobs is searched exhaustively (all permutations,
  ties broken by the first permutation in lexicographic order of the FCFS
  positions);
* otherwise simulated annealing from the best candidate: neighbour = swap of
  two random positions; Metropolis acceptance ``exp(-delta / T)``; initial
  temperature by Ben-Ameur's method (Comput. Optim. Appl. 29, 2004) on the
  transitions from the best to each worse candidate, acceptance probability
  ``chi0`` (default 0.8); geometric cooling ``T <- cooling * T`` (default 0.9)
  after every ``len(queue)`` moves; at most ``iterations`` evaluations
  (default 200); if the best and worst candidates have the same cost the
  annealing is skipped.

Determinism: the random generator is seeded from ``seed`` and the pass
(``random.Random(f"{seed}:{key}")``), never from the wall clock.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Callable, Sequence

__all__ = ["initial_orders", "ben_ameur_temperature", "best_order", "SearchResult"]


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


class SearchResult:
    """Outcome of :func:`best_order`: ``order`` (list), ``cost`` (float),
    ``evaluations`` (int), ``exhaustive`` (bool), ``annealed`` (bool),
    ``t0`` (initial temperature, 0 if no annealing)."""

    __slots__ = ("order", "cost", "evaluations", "exhaustive", "annealed", "t0")

    def __init__(self, order, cost, evaluations, exhaustive, annealed, t0):
        self.order, self.cost, self.evaluations = order, cost, evaluations
        self.exhaustive, self.annealed, self.t0 = exhaustive, annealed, t0


def best_order(jobs: Sequence, cost: Callable[[list], float], *, seed=0, key="",
               exhaustive_max: int = 5, iterations: int = 200, chi0: float = 0.8,
               cooling: float = 0.9) -> SearchResult:
    """Search an order of ``jobs`` minimising ``cost(order)``.

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
