"""Algorithm 1 of Goponenko et al. (PMBS 2024): Slurm's backfill.

``Start job j`` when its earliest start on the reservation tracker is now;
otherwise reserve its resources at that start, for at most ``BackfillMax``
delayed jobs per pass (1 = EASY backfilling; unlimited = every delayed job
reserved, Slurm's default); the others are skipped until the next pass. The
tracker (nodes only, I/O-aware or workload-adaptive) is built by a factory
at the start of each pass (:mod:`iosched.pfsbw.trackers`).

Once no node is free now, no later job can start in this pass, so the pass
stops there: reserving the rest would change no decision (the tracker is
rebuilt at the next pass).
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
        try:
            for job in s.queue:                           # line 4 (queue order: line 2)
                if s.profile.free_count(now) == 0:
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
