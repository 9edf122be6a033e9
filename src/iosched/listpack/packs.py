"""Pack scheduling under the average constraint (Jeannot, Pallez & Vidal,
IJHPCA 2023, sections "I/O-aware Pack-Scheduling", "Variants for building
packs" and "Backfilling"; packs as in Carretero et al., ICS 2020).

Packs are built from the waiting jobs taken in the variant's order: a job
joins the first existing pack where (i) the pack's resources plus its own
fit the machine and (ii) the pack's average bandwidth -- total I/O volume
``sum n_i v_i`` over the pack's duration ``max T_i(B)`` -- stays within
``B``; otherwise it opens a new pack after the existing ones. The next pack
starts when every job of the previous one (and every backfilled job) has
ended. Orders:

* ``random``: a seeded random rank per job (baseline);
* ``max``: non-increasing execution time ``T_i(B)``;
* ``char``: non-increasing characteristic time ``w_i + v_i / B`` (the paper
  does not give the direction; option ``char_order="increasing"``).

Backfilling (``-bf``): while a pack runs, any later job (in pack order) that
fits the free resources now, whose end ``now + T_j(B)`` is not after the
running pack's estimated end (its start + its duration) and whose volume
keeps the pack window's average bandwidth within ``B`` starts now; it leaves
its pack (later packs are rebuilt from the remaining queue, which is how
"the schedule is modified accordingly").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from iosched.listpack.model import PeriodicJob

__all__ = ["ORDERS", "order_key", "Pack", "build_packs", "PackPolicy"]

ORDERS = ("random", "max", "char")


def order_key(order: str, B: float, seed: int = 0, char_order: str = "decreasing"):
    """Queue key ``key(job)`` of a pack variant, for the core's queue
    (``job.request`` is a :class:`~iosched.listpack.model.PeriodicJob`);
    ties in arrival order.

    :raises ValueError: unknown order.
    """
    if order == "random":
        return lambda job: (random.Random(f"{seed}:{job.id}").random(), job.seq)
    if order == "max":
        return lambda job: (-job.request.time(B), job.seq)
    if order == "char":
        sign = -1.0 if char_order == "decreasing" else 1.0
        return lambda job: (sign * job.request.characteristic_time(B), job.seq)
    raise ValueError(f"unknown pack order {order!r}")


@dataclass
class Pack:
    """A pack: ``jobs`` (core jobs), ``res`` (resources held, int),
    ``volume`` (bytes), ``duration`` (s, max T_i(B))."""

    jobs: list = field(default_factory=list)
    res: int = 0
    volume: float = 0.0
    duration: float = 0.0

    def admits(self, job, nres: int, B: float) -> bool:
        """Whether ``job`` fits the pack: resources and average constraint."""
        r: PeriodicJob = job.request
        if self.res + job.nb_res > nres:
            return False
        dur = max(self.duration, r.time(B))
        return dur <= 0 or (self.volume + r.periods * r.v) / dur <= B * (1 + 1e-12)

    def add(self, job, B: float) -> None:
        """Add ``job`` (no check)."""
        r: PeriodicJob = job.request
        self.jobs.append(job)
        self.res += job.nb_res
        self.volume += r.periods * r.v
        self.duration = max(self.duration, r.time(B))

    @property
    def bandwidth(self) -> float:
        """Average bandwidth ``volume / duration`` (bytes/s)."""
        return self.volume / self.duration if self.duration > 0 else 0.0


def build_packs(jobs, nres: int, B: float) -> list:
    """First-fit packs of ``jobs`` (in the given order) on ``nres``
    resources under the average constraint (module doc); list of :class:`Pack`.

    :raises ValueError: a job that fits no empty pack (more resources than
        the machine or an average bandwidth above ``B`` alone).
    """
    packs: list = []
    for job in jobs:
        for p in packs:
            if p.admits(job, nres, B):
                p.add(job, B)
                break
        else:
            p = Pack()
            if not p.admits(job, nres, B):
                raise ValueError(f"job {job.id} fits no pack alone")
            p.add(job, B)
            packs.append(p)
    return packs


class PackPolicy:
    """Pack scheduling on the shared core (module doc).

    :param B: I/O-node bandwidth (bytes/s).
    :param backfill: backfill later packs' jobs into the running pack.

    Attributes: ``packs_started`` (list of ``(time, [job ids])``),
    ``backfilled`` (list of ``(time, job id)``), ``current`` (the running
    :class:`Pack` window: ``(start, end estimate, volume)``, or None).
    """

    def __init__(self, B: float, backfill: bool = False):
        self.B = B
        self.backfill = backfill
        self.packs_started: list = []
        self.backfilled: list = []
        self.current = None

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``: start the next pack
        when nothing runs, else backfill (option)."""
        if s.running:
            if self.backfill and self.current is not None:
                self._backfill(s, now)
            return
        queue = s.queue
        if not queue:
            return
        packs = build_packs(queue, len(s.compute), self.B)
        first = packs[0]
        ids = []
        for job in first.jobs:
            alloc = s.fit_now(job, now)
            if alloc is None:  # cannot happen: nothing runs and the pack fits
                raise RuntimeError(f"pack job {job.id} does not fit an empty machine")
            s.start(job, now, alloc)
            ids.append(job.id)
        self.packs_started.append((now, ids))
        self.current = [now, now + first.duration, first.volume, first.duration]
        if self.backfill:
            self._backfill(s, now)

    def _backfill(self, s, now: float) -> None:
        start, end, volume, duration = self.current
        if now >= end or s.profile.free_count(now) == 0:
            return
        packs = build_packs(s.queue, len(s.compute), self.B)
        for pack in packs:
            for job in pack.jobs:
                r: PeriodicJob = job.request
                t = r.time(self.B)
                if now + t > end:
                    continue
                vol = r.periods * r.v
                if duration > 0 and (volume + vol) / duration > self.B * (1 + 1e-12):
                    continue
                alloc = s.fit_now(job, now)
                if alloc is None:
                    continue
                s.start(job, now, alloc)
                volume += vol
                self.backfilled.append((now, job.id))
        self.current[2] = volume
