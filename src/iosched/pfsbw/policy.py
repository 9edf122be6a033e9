"""Algorithm 1 of Goponenko et al. (PMBS 2024): Slurm's backfill.

``Start job j`` when its earliest start on the reservation tracker is now;
otherwise reserve its resources at that start, for at most ``BackfillMax``
delayed jobs per pass (1 = EASY backfilling; unlimited = every delayed job
reserved, Slurm's default); the others are skipped until the next pass. The
tracker (nodes only, I/O-aware or workload-adaptive) is built by a factory
at the start of each pass (:mod:`iosched.pfsbw.trackers`).

The pass stops early when no later job can start now, which changes no
decision (reservations are remade at the next pass): once no node is free
now, or once fewer nodes than the smallest remaining request, or less of a
pool than the least amount any remaining job needs, are free throughout
``[now, now + shortest remaining estimate)`` (free capacity only shrinks
during a pass, and a job starting now needs its share over at least that
interval).
"""

from __future__ import annotations

import math
from typing import Callable

from iosched.sched.profile import INF

__all__ = ["SlurmBackfill"]


class SlurmBackfill:
    """Algorithm 1.

    :param tracker: ``tracker(s, now)`` -> a tracker
        (:mod:`iosched.pfsbw.trackers`), built once per pass.
    :param backfill_max: ``BackfillMax``, int >= 0 or ``math.inf`` (default).

    Attribute ``last``: the last pass's tracker (for traces and tests).
    """

    def __init__(self, tracker: Callable, backfill_max: float = math.inf):
        self.tracker = tracker
        self.backfill_max = backfill_max
        self.last = None

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``."""
        rt = self.last = self.tracker(s, now)            # line 1
        count = 0                                         # line 3
        queue = s.queue
        need = _suffix_min_demand([rt.pools(job) for job in queue])
        shortest = _suffix_min([job.estimate for job in queue])
        smallest = _suffix_min([job.nb_res for job in queue])
        try:
            for i, job in enumerate(queue):               # line 4 (queue order: line 2)
                if s.profile.free_count(now) == 0:
                    break
                if not _may_fit(smallest[i], need[i], s.profile, now, shortest[i]):
                    break
                t, alloc = rt.earliest(job, now)          # line 5
                if t == now:                              # lines 6-8
                    s.start(job, now, alloc)
                    rt.started(job, now, alloc)
                elif t == INF or count >= self.backfill_max:
                    continue                              # lines 10-11
                else:                                     # lines 12-14
                    rt.reserve(job, t, alloc)
                    count += 1
        finally:
            rt.close()


def _suffix_min_demand(pools: list) -> list:
    """``out[i]``: for each pool, the least amount any of ``pools[i:]``
    needs (a job needing none counts 0); an empty dict when some job of the
    suffix needs no pool at all."""
    out = [None] * len(pools)
    acc = None
    for i in range(len(pools) - 1, -1, -1):
        p = pools[i]
        if not p:
            acc = {}
        elif acc is None:
            acc = dict(p)
        elif acc:
            acc = {k: min(v, p.get(k, 0.0)) for k, v in acc.items()}
        out[i] = acc
    return out


def _suffix_min(values: list) -> list:
    """``out[i] = min(values[i:])``."""
    out, acc = [0.0] * len(values), INF
    for i in range(len(values) - 1, -1, -1):
        acc = min(acc, values[i])
        out[i] = acc
    return out


def _may_fit(nb_res: int, need: dict, profile, now: float, duration: float) -> bool:
    """Whether ``nb_res`` resources and the pool amounts ``need`` are free
    throughout ``[now, now + duration)`` (a necessary condition for any job
    needing at least that much; tolerance as the profile's)."""
    starts, masks, _n, pools, names, tols = profile.raw_view(now)
    end = now + duration
    inside = [i for i, t in enumerate(starts) if i == 0 or t < end]
    free = masks[0]
    for i in inside[1:]:
        free &= masks[i]
        if free.bit_count() < nb_res:
            return False
    if free.bit_count() < nb_res:
        return False
    for k, name in enumerate(names):
        a = need.get(name)
        if not a:
            continue
        low = min(pools[i][k] for i in inside)
        if a > low + tols[k]:
            return False
    return True
