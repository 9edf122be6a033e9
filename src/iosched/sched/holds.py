"""A holds-only availability model, for a policy that keeps its own.

The core (:class:`iosched.sched.core.Scheduler`) keeps an
:class:`~iosched.sched.profile.AvailabilityProfile`: the free capacity over
all future time, which EASY, conservative backfilling and list scheduling
query. A policy that decides placements on a model of its own (the
locality planner's per-core available times,
:class:`iosched.locality.cluster.Cluster`) never queries it, and on a
machine of thousands of scattered one-core resources keeping it costs more
than the policy itself (every start and end updates every segment of the
job's window: bit masks of the whole machine). Such a policy runs the core
with :class:`HoldsOnly` (``Scheduler(..., profile=HoldsOnly)``): what is
held *now*, an int bit mask, nothing about the future.

What it keeps of the profile's contract: :meth:`HoldsOnly.reserve`
refuses resources held by another live hold (a core given twice) or not
on the machine (:class:`~iosched.errors.ProfileError`); a hold frees its
resources when its holder ends (:meth:`~HoldsOnly.release`, as the
profile's ``release``: an end before now counts as now, an end after the
hold's own end changes nothing) or when time passes its end
(:meth:`~HoldsOnly.advance`: the core then re-holds an overrunning job's
resources, as with the profile); ``resources`` and ``pool_totals`` (the
placer's rejection checks). What it does not do: queries about free
capacity (``fit_at``, ``earliest_start``, ``snapshot``...: a policy that
needs them needs the profile), holds that start in the future, pools.

Costs: :meth:`~HoldsOnly.reserve`, :meth:`~HoldsOnly.release`,
:meth:`~HoldsOnly.remove` are O(1) int operations on masks of the
machine's size; :meth:`~HoldsOnly.advance` O(log H) per hold ending.
"""

from __future__ import annotations

import heapq
import math
from typing import Mapping, Optional

from procset import ProcSet

from iosched.errors import ProfileError
from iosched.sched.timeline import mask_of, procset_of_mask

__all__ = ["HoldsOnly", "Hold"]


class Hold:
    """Resources held by one job from ``start`` to ``end`` (s; ``end`` may
    be inf and is shortened by :meth:`HoldsOnly.release`): ``mask`` (int bit
    mask), ``resources`` (ProcSet), ``pools`` (always empty), ``tag``
    (caller data), ``live`` (whether its resources are held now)."""

    __slots__ = ("start", "end", "mask", "tag", "live", "_seq")

    def __init__(self, start: float, end: float, mask: int, tag, seq: int):
        self.start, self.end, self.mask, self.tag = start, end, mask, tag
        self.live = end > start
        self._seq = seq

    @property
    def resources(self) -> ProcSet:
        """The held resources (ProcSet)."""
        return procset_of_mask(self.mask)

    @property
    def pools(self) -> dict:
        """No pool is held (:class:`HoldsOnly` models none)."""
        return {}

    def __repr__(self):
        return f"<Hold [{self.start}, {self.end}) res={self.resources} tag={self.tag!r} live={self.live}>"


class HoldsOnly:
    """What is held now on ``resources`` (module doc): the core's profile
    for a policy that keeps its own availability model.

    :param resources: ProcSet of the machine's compute resources.
    :param pools: scalar pools (name -> total); only reported by
        :attr:`pool_totals` (for rejections), never held.
    :param now: the current time (s).

    Same constructor as :class:`~iosched.sched.profile.AvailabilityProfile`,
    so that ``Scheduler(..., profile=HoldsOnly)`` builds it at
    SIMULATION_BEGINS.
    """

    def __init__(self, resources: ProcSet, pools: Optional[Mapping[str, float]] = None, now: float = 0.0):
        self._resources = ProcSet(resources)
        self._all = mask_of(self._resources)
        self._totals = {str(k): float(v) for k, v in (pools or {}).items()}
        self._now = float(now)
        self._held = 0
        self._ends: list = []     # heap of (end, seq, Hold) of live holds with a finite end
        self._seq = 0

    @property
    def now(self) -> float:
        """The current time (s)."""
        return self._now

    @property
    def resources(self) -> ProcSet:
        """The machine's compute resources (a copy)."""
        return self._resources.copy()

    @property
    def pool_totals(self) -> dict:
        """Pool name -> total (a copy)."""
        return dict(self._totals)

    @property
    def held_mask(self) -> int:
        """The resources held now (int bit mask)."""
        return self._held

    def free_count(self) -> int:
        """Number of resources not held now."""
        return (self._all & ~self._held).bit_count()

    def reserve(self, start: float, end: float, resources, pools: Optional[Mapping[str, float]] = None,
                tag=None) -> Hold:
        """Hold ``resources`` (ProcSet or int bit mask) from ``start`` (which
        must be now) to ``end`` (s, ``>= start``, may be inf).

        :raises ProfileError: a start other than now, an end before the
            start, a pool amount, resources not on the machine or held by a
            live hold (nothing is changed then).
        """
        start, end = float(start), float(end)
        if start != self._now:
            raise ProfileError(f"reserve: a holds-only profile holds from now ({self._now}) only, not {start}")
        if math.isnan(end) or end < start:
            raise ProfileError(f"reserve: end {end} is before start {start}")
        if any(a for a in (pools or {}).values()):
            raise ProfileError("reserve: a holds-only profile holds no pool")
        if isinstance(resources, ProcSet):
            mask = mask_of(resources)
        elif isinstance(resources, int) and not isinstance(resources, bool) and resources >= 0:
            mask = resources
        else:
            raise ProfileError(f"reserve: resources must be a ProcSet or a bit mask, got {resources!r}")
        if mask & ~self._all:
            raise ProfileError(f"reserve: resources {procset_of_mask(mask & ~self._all)} are not managed "
                               "by this profile")
        h = Hold(start, end, mask, tag, self._seq)
        self._seq += 1
        if h.live:
            if mask & self._held:
                raise ProfileError(f"reserve: resources {procset_of_mask(mask & self._held)} are already held")
            self._held |= mask
            if end < math.inf:
                heapq.heappush(self._ends, (end, h._seq, h))
        return h

    def release(self, hold: Hold, at: Optional[float] = None) -> None:
        """The holder ended at ``at`` (default now; earlier counts as now):
        the hold ends there unless it already ended (an overrun), and its
        resources are free from then on (as
        :meth:`AvailabilityProfile.release <iosched.sched.profile.AvailabilityProfile.release>`).

        :raises ProfileError: ``at`` is NaN.
        """
        at = self._now if at is None else float(at)
        if math.isnan(at):
            raise ProfileError("release: at is NaN")
        a = max(at, self._now, hold.start)
        if a >= hold.end:
            return
        hold.end = a
        if a <= self._now:
            self._free(hold)
        else:
            heapq.heappush(self._ends, (a, hold._seq, hold))

    def remove(self, hold: Hold) -> None:
        """Cancel a hold: its resources are free from now on."""
        if hold.end > self._now:
            hold.end = max(self._now, hold.start)
        self._free(hold)

    def advance(self, now: float) -> None:
        """Move the current time to ``now`` (s): holds whose end is passed
        free their resources.

        :raises ProfileError: ``now`` before the current time or not finite.
        """
        now = float(now)
        if not math.isfinite(now):
            raise ProfileError(f"advance: now must be finite, got {now}")
        if now < self._now:
            raise ProfileError(f"advance: time cannot go back from {self._now} to {now}")
        self._now = now
        ends = self._ends
        while ends and ends[0][0] <= now:
            _, _, h = heapq.heappop(ends)
            if h.end <= now:
                self._free(h)

    def _free(self, hold: Hold) -> None:
        if hold.live:
            hold.live = False
            self._held &= ~hold.mask
