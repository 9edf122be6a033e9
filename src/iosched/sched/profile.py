"""Availability profile: the timeline of future reservations of a machine.

The profile is a step function of *free capacity* over time ``[now, +inf)``.
Capacity has two parts:

* a set of free resources (compute nodes, cores...), identified by integer
  ids: given and returned as :class:`procset.ProcSet` (or, on the fast
  paths, an int bit mask: bit ``i`` set iff resource ``i`` is in the set);
* zero or more named scalar *pools* (``{"bb:node_0": 40e9, "pfs_bw": 5e9}``):
  burst-buffer bytes on a storage node, parallel-file-system bandwidth in
  bytes/s, ... Each pool has a total; a reservation holds a constant amount of
  each pool it names over its whole interval.

A :class:`Reservation` holds a set of resources and pool amounts over a
half-open time interval ``[start, end)`` (``end`` may be ``math.inf`` for a
job without walltime). The profile never over-commits: reserving capacity
that is not free, or freeing capacity that is not held, raises
:class:`iosched.errors.ProfileError`.

This is the data structure behind backfilling schedulers: the "profile" of
Mu'alem & Feitelson (IEEE TPDS 12(6), 2001, "Utilization, predictability,
workloads, and user runtime estimates in scheduling the IBM SP2 with
backfilling") used by conservative backfilling, and the shadow-time
computation of EASY backfilling (Lifka 1995, "The ANL/IBM SP scheduling
system"). Unlike the rectangle model of pybatsim's ``easyBackfill``, resource
sets need not be contiguous.

Representation: four parallel Python lists indexed by segment: the start
time ``t`` of each segment (sorted; the first is always ``now``, the last
segment extends to ``+inf``), the free resources on ``[t, next start)`` as
an int bit mask, their number, and the free pool amounts (a list indexed
like the sorted pool names). Adjacent equal segments are merged, so the
number of segments ``B`` is at most twice the number of live reservations
plus one.

Why not ProcSets and a ``SortedDict`` (what the profile used before): every
scheduling pass of EASY or conservative backfilling reserves and frees
resources and intersects the free sets of a window's segments; ProcSet
operations merge interval lists in Python (about 5 us each, the largest
share of a scheduler's time on the full KTH-SP2 trace), where the same
operations on ints are single C calls (``&``, ``|``, ``int.bit_count``)
for any number of resources. Segment lists of at most a few thousand
entries are faster to insert into and delete from (one ``memmove``) than a
``SortedDict``. ProcSets remain the interface (arguments and results) of
the public methods; the ``*_mask`` methods and :meth:`raw_view` are the
int-mask fast paths for placers.

Costs, with ``W`` the number of segments a request's interval covers:
:meth:`reserve`, :meth:`remove`, :meth:`release` are ``O(log B + W)`` int
operations plus ``O(B)`` list inserts/deletes (memmove); :meth:`fit_at` is
``O(log B + W)``; :meth:`earliest_start` is ``O(C * W)`` for ``C``
candidate start times, where candidates are pruned to the breakpoints at
which some relevant capacity increases and whole runs of candidates are
skipped when a single segment is too small.

Times are float seconds of simulated time; pool amounts are floats in the
pool's unit (bytes, bytes/s). Pool comparisons tolerate a relative error of
``1e-9`` of the pool's total (floating-point sums of reservations).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from typing import Callable, Iterator, Mapping, Optional

from procset import ProcInt, ProcSet

from iosched.errors import ProfileError
from iosched.sched.timeline import Timeline, mask_of, procset_of_mask

__all__ = ["AvailabilityProfile", "Reservation", "lowest_ids", "lowest_bits", "INF"]

#: Infinite time: the end of a reservation without walltime, or the start
#: returned by :meth:`AvailabilityProfile.earliest_start` when a request can
#: never be met given the current reservations.
INF = math.inf

#: ``chooser(candidates, count) -> ProcSet``: picks ``count`` resources among
#: ``candidates`` (``len(candidates) >= count``).
Chooser = Callable[[ProcSet, int], ProcSet]

_REL_TOL = 1e-9


def lowest_ids(candidates: ProcSet, count: int) -> ProcSet:
    """Return the ``count`` lowest resource ids of ``candidates``.

    The default, deterministic resource choice of the profile (first-fit by
    id, as in pybatsim's ``fillerSched``; contiguity is not sought).

    :param candidates: resources to choose from.
    :param count: number of resources wanted, ``0 <= count <= len(candidates)``.
    :returns: a new ProcSet of exactly ``count`` ids.
    :raises ProfileError: if ``count`` is negative or exceeds ``len(candidates)``.
    """
    if count < 0:
        raise ProfileError(f"lowest_ids: negative count {count}")
    pieces = []
    remaining = count
    for itv in candidates.intervals():
        if remaining <= 0:
            break
        take = min(len(itv), remaining)
        pieces.append(ProcInt(itv.inf, itv.inf + take - 1))
        remaining -= take
    if remaining > 0:
        raise ProfileError(
            f"lowest_ids: cannot take {count} resources out of {len(candidates)}")
    return ProcSet(*pieces)


def lowest_bits(mask: int, count: int) -> int:
    """:func:`lowest_ids` on an int bit mask: the ``count`` lowest set bits
    of ``mask`` (a binary search on the bit position, ``O(log N)`` int
    operations for ``N``-bit masks).

    :param mask: int >= 0, bit ``i`` set iff resource ``i`` is a candidate.
    :param count: ``0 <= count <= mask.bit_count()``.
    :returns: an int mask with exactly ``count`` bits set.
    :raises ProfileError: if ``count`` is negative or exceeds the set bits.
    """
    have = mask.bit_count()
    if count == have:
        return mask
    if count < 0 or count > have:
        raise ProfileError(f"lowest_bits: cannot take {count} resources out of {have}")
    lo, hi = count, mask.bit_length()
    while lo < hi:  # least k such that bits 0..k-1 hold count set bits
        mid = (lo + hi) >> 1
        if (mask & ((1 << mid) - 1)).bit_count() >= count:
            hi = mid
        else:
            lo = mid + 1
    return mask & ((1 << lo) - 1)


class Reservation:
    """Capacity held on ``[start, end)``: a resource set and pool amounts.

    Created by :meth:`AvailabilityProfile.reserve`; read-only for callers (the
    profile shortens ``end`` on :meth:`AvailabilityProfile.release`).

    Attributes (read-only properties):

    * ``rid`` -- integer id, unique within its profile, increasing with
      creation order (used for deterministic ordering);
    * ``start``, ``end`` -- float seconds, ``start <= end``, ``end`` may be
      ``math.inf``;
    * ``resources`` -- ProcSet of held resources; ``mask`` the same as an
      int bit mask;
    * ``pools`` -- dict pool name -> amount held (only non-zero amounts);
    * ``tag`` -- any caller data (e.g. a job id), not interpreted;
    * ``removed`` -- True once :meth:`AvailabilityProfile.remove` was called.
    """

    __slots__ = ("_owner", "_rid", "_start", "_end", "_mask", "_nres", "_ps", "_need",
                 "_tag", "_removed")

    def __init__(self, owner, rid, start, end, mask, nres, ps, need, tag):
        self._owner = owner
        self._rid = rid
        self._start = start
        self._end = end
        self._mask = mask
        self._nres = nres
        self._ps = ps          # the ProcSet, when known (made from the mask on demand)
        self._need = need
        self._tag = tag
        self._removed = False

    rid = property(lambda self: self._rid, doc="Integer id (creation order).")
    start = property(lambda self: self._start, doc="Start time (s).")
    end = property(lambda self: self._end, doc="End time (s), may be inf.")
    mask = property(lambda self: self._mask, doc="Held resources as an int bit mask.")
    tag = property(lambda self: self._tag, doc="Caller data.")
    removed = property(lambda self: self._removed,
                       doc="True once removed from its profile.")

    @property
    def resources(self) -> ProcSet:
        """Held resources (a copy)."""
        if self._ps is None:
            self._ps = procset_of_mask(self._mask)
        return self._ps.copy()

    @property
    def pools(self) -> dict:
        """Held pool amounts (a copy)."""
        names = self._owner._names
        return {names[i]: a for i, a in self._need}

    @property
    def duration(self) -> float:
        """``end - start`` in seconds (``inf`` for an unbounded reservation)."""
        return self._end - self._start

    def __repr__(self):
        pools = self.pools
        pools = f" pools={pools}" if pools else ""
        tag = f" tag={self._tag!r}" if self._tag is not None else ""
        return (f"<Reservation #{self._rid} [{self._start}, {self._end}) "
                f"res={self.resources}{pools}{tag}>")


class AvailabilityProfile:
    """Step function of free capacity (resources + scalar pools) over time.

    :param resources: every resource the profile manages (e.g. the compute
        nodes ``ProcSet((0, 99))``); all free at ``now``.
    :param pools: pool name -> total capacity (float >= 0, e.g. bytes or
        bytes/s); all free at ``now``. Defaults to no pools.
    :param now: current time (s); the profile never looks before it.
    :raises ProfileError: on a non-ProcSet ``resources``, a negative, NaN or
        infinite pool total, or a non-finite ``now``.

    Source: the free-capacity profile of conservative backfilling
    (Mu'alem & Feitelson 2001), generalised to several capacity kinds.
    """

    def __init__(self, resources: ProcSet, pools: Optional[Mapping[str, float]] = None,
                 now: float = 0.0):
        if not isinstance(resources, ProcSet):
            raise ProfileError(
                f"AvailabilityProfile: resources must be a ProcSet, got {type(resources).__name__}")
        now = float(now)
        if not math.isfinite(now):
            raise ProfileError(f"AvailabilityProfile: now must be finite, got {now}")
        pools = dict(pools or {})
        names = tuple(sorted(pools))
        totals = []
        for name in names:
            total = float(pools[name])
            if not math.isfinite(total) or total < 0:
                raise ProfileError(
                    f"AvailabilityProfile: pool {name!r} total must be finite and >= 0, got {total}")
            totals.append(total)
        self._resources = ProcSet(resources)
        self._all = mask_of(self._resources)
        self._nres = len(self._resources)
        self._names = names
        self._index = {name: i for i, name in enumerate(names)}
        self._totals = totals
        self._tol = [_REL_TOL * max(1.0, t) for t in totals]
        self._now = now
        # the segments: start (s), free mask, free count, free pool amounts
        self._t = [now]
        self._m = [self._all]
        self._n = [self._nres]
        self._p = [list(totals)]
        self._live: dict[int, Reservation] = {}
        self._ends: list = []   # heap of (end, rid); entries of removed or shortened ones linger
        self._next_rid = 0
        self._changes = 0

    # ------------------------------------------------------------------ info
    @property
    def now(self) -> float:
        """Current time (s): the profile holds nothing before it."""
        return self._now

    @property
    def resources(self) -> ProcSet:
        """All resources managed by the profile (a copy)."""
        return self._resources.copy()

    @property
    def pool_totals(self) -> dict:
        """Pool name -> total capacity (a copy)."""
        return dict(zip(self._names, self._totals))

    @property
    def changes(self) -> int:
        """Number of changes of the step function so far (reservations
        made, removed or shortened; :meth:`advance` is none): a caller may
        reuse an answer computed when the count was the same."""
        return self._changes

    @property
    def has_pools(self) -> bool:
        """Whether the profile has any pool (else it holds resources only)."""
        return bool(self._names)

    def __len__(self) -> int:
        """Number of breakpoints (segments) of the step function."""
        return len(self._t)

    def __repr__(self):
        return (f"<AvailabilityProfile now={self._now} resources={self._resources} "
                f"pools={self.pool_totals} breakpoints={len(self._t)} "
                f"reservations={len(self.reservations())}>")

    def free_at(self, t: float) -> tuple:
        """Free capacity at time ``t``.

        :param t: time (s), ``t >= now``.
        :returns: ``(ProcSet of free resources, {pool: free amount})`` (copies).
        :raises ProfileError: if ``t`` is before ``now`` or NaN.
        """
        i = self._index_at(t, "free_at")
        return procset_of_mask(self._m[i]), dict(zip(self._names, self._p[i]))

    def free_mask(self, t: float) -> int:
        """Free resources at time ``t`` (``t >= now``) as an int bit mask, in O(log B).

        :raises ProfileError: if ``t`` is before ``now`` or NaN.
        """
        return self._m[self._index_at(t, "free_mask")]

    def free_count(self, t: float) -> int:
        """Number of free resources at time ``t`` (``t >= now``), in O(log B).

        :raises ProfileError: if ``t`` is before ``now`` or NaN.
        """
        if t == self._now:
            return self._n[0]
        return self._n[self._index_at(t, "free_count")]

    def segments(self) -> Iterator[tuple]:
        """Iterate the step function from ``now`` on.

        :returns: an iterator of ``(start, end, free ProcSet, {pool: free})``
            for consecutive segments; the last one has ``end == inf``.
        """
        T = list(self._t)
        masks = list(self._m)
        pools = [list(p) for p in self._p]
        for i, k in enumerate(T):
            end = T[i + 1] if i + 1 < len(T) else INF
            yield k, end, procset_of_mask(masks[i]), dict(zip(self._names, pools[i]))

    def raw_view(self, t: float) -> tuple:
        """Read-only view of the step function from the segment holding ``t``,
        for hot loops (no ProcSets; :meth:`segments` makes one per segment).

        :param t: time (s), ``t >= now``.
        :returns: ``(starts, masks, counts, pools, names, tols)``: ``starts[i]``
            the start (s) of segment ``i`` (``starts[0] <= t``), ``masks[i]``
            its free resources as an int bit mask, ``counts[i]`` their
            number, ``pools[i]`` its free pool amounts as a list indexed like
            ``names`` (the sorted pool names), ``tols`` the per-pool
            tolerances. The lists are new; the pool lists and ``tols``
            belong to the profile: do not modify them, and do not keep them
            across an update (pool lists are updated in place).
        :raises ProfileError: if ``t`` is before ``now`` or NaN.
        """
        i = self._index_at(t, "raw_view")
        return (self._t[i:], self._m[i:], self._n[i:], self._p[i:], self._names, self._tol)

    def snapshot(self, now: Optional[float] = None) -> Timeline:
        """A what-if copy of the free capacity from ``now`` (default: the
        profile's ``now``) on, with push/pop undo
        (:class:`~iosched.sched.timeline.Timeline`); the profile is not changed.

        :raises ProfileError: if ``now`` is before the profile's ``now``.
        """
        return Timeline(self, self._now if now is None else now)

    def reservations(self) -> list:
        """Live reservations (not removed, ending after ``now``), by ``rid``."""
        now = self._now
        return [r for rid, r in sorted(self._live.items()) if r._end > now]

    # ------------------------------------------------------------- queries
    def fit_at(self, t: float, nb_res: int, duration: float,
               pools_needed: Optional[Mapping[str, float]] = None,
               among: Optional[ProcSet] = None,
               chooser: Optional[Chooser] = None) -> Optional[ProcSet]:
        """Resources for a request starting exactly at ``t``, or None.

        :param t: start time (s), ``t >= now``.
        :param nb_res: number of resources (int >= 0).
        :param duration: seconds (>= 0, may be inf). A zero duration asks for
            the capacity free at the instant ``t``.
        :param pools_needed: pool name -> amount held over the interval.
        :param among: restrict the choice to these resources (default: all).
        :param chooser: resource choice among the candidates free over the
            whole interval (default :func:`lowest_ids`).
        :returns: the chosen ProcSet (empty when ``nb_res == 0``) if the
            request fits on ``[t, t + duration)``, else None (always None
            for ``t = inf``).
        :raises ProfileError: on invalid arguments (see :meth:`earliest_start`).
        """
        t = self._check_time(t, "fit_at")
        need = self._check_request(nb_res, duration, pools_needed, "fit_at")
        if t == INF:
            return None
        i = bisect_right(self._t, t) - 1
        ok, x = self._scan(i, t, nb_res, float(duration), need, self._among(among))
        if not ok:
            return None
        return self._choose(x, nb_res, chooser)

    def fit_mask(self, t: float, nb_res: int, duration: float,
                 pools_needed: Optional[Mapping[str, float]] = None) -> Optional[int]:
        """:meth:`fit_at` with the default choice (lowest ids), answered as
        an int bit mask (the placers' fast path: no ProcSet is made).

        :returns: the mask of the ``nb_res`` chosen resources (0 when
            ``nb_res == 0``), or None if the request does not fit at ``t``.
        :raises ProfileError: on invalid arguments (see :meth:`earliest_start`).
        """
        if t != self._now:
            t = self._check_time(t, "fit_mask")
            if t == INF:
                return None
        need = self._check_request(nb_res, duration, pools_needed, "fit_mask")
        i = 0 if t == self._now else bisect_right(self._t, t) - 1
        ok, x = self._scan(i, t, nb_res, float(duration), need, None)
        if not ok:
            return None
        return lowest_bits(x, nb_res) if nb_res else 0

    def earliest_start(self, nb_res: int, duration: float,
                       pools_needed: Optional[Mapping[str, float]] = None,
                       after: Optional[float] = None,
                       among: Optional[ProcSet] = None,
                       chooser: Optional[Chooser] = None) -> tuple:
        """First time at which a request fits, and the resources to use.

        Finds the least ``t >= after`` such that ``nb_res`` resources (of
        ``among``) and every amount of ``pools_needed`` are free throughout
        ``[t, t + duration)``. The answer is ``after`` itself or a breakpoint
        of the profile (feasibility can only appear where capacity is freed).

        :param nb_res: number of resources (int, ``0 <= nb_res <= total``).
        :param duration: seconds (>= 0, may be ``inf`` for no walltime).
        :param pools_needed: pool name -> amount (>= 0, <= the pool total).
        :param after: earliest allowed start (s); default and lower bound ``now``.
        :param among: restrict the choice to these resources (default: all).
        :param chooser: ``chooser(candidates, nb_res)`` picks the resources
            among those free over the whole interval (default
            :func:`lowest_ids`, deterministic).
        :returns: ``(t, ProcSet)``; ``t`` is ``inf`` and the ProcSet empty
            when the request can never be met given the current reservations
            (e.g. resources held by a reservation that never ends).
        :raises ProfileError: if ``nb_res`` is negative, not an int, or larger
            than the number of resources; ``duration`` is negative or NaN; a
            pool is unknown, or its amount negative or above its total.
        """
        t, x = self._earliest(nb_res, duration, pools_needed, after, among, "earliest_start")
        if t == INF:
            return INF, ProcSet()
        return t, self._choose(x, nb_res, chooser)

    def earliest_mask(self, nb_res: int, duration: float,
                      pools_needed: Optional[Mapping[str, float]] = None,
                      after: Optional[float] = None) -> tuple:
        """:meth:`earliest_start` with the default choice (lowest ids),
        answered as an int bit mask (the placers' fast path).

        :returns: ``(t, mask)``, or ``(inf, None)`` when the request can
            never be met given the current reservations.
        :raises ProfileError: as :meth:`earliest_start`.
        """
        t, x = self._earliest(nb_res, duration, pools_needed, after, None, "earliest_mask")
        if t == INF:
            return INF, None
        return t, (lowest_bits(x, nb_res) if nb_res else 0)

    # ------------------------------------------------------------ updates
    def reserve(self, start: float, end: float, resources,
                pools: Optional[Mapping[str, float]] = None, tag=None) -> Reservation:
        """Hold ``resources`` and ``pools`` on ``[start, end)``.

        :param start: seconds, ``now <= start < inf``.
        :param end: seconds, ``end >= start`` (may be inf). An empty interval
            holds nothing but still returns a (dead) reservation.
        :param resources: ProcSet, or an int bit mask (bit ``i`` for
            resource ``i``), a subset of the profile's resources.
        :param pools: pool name -> amount (>= 0).
        :param tag: caller data stored in the reservation.
        :returns: the new :class:`Reservation`.
        :raises ProfileError: if the interval is invalid or in the past, a
            resource or pool is unknown, or any part of the request is not
            free at some instant of the interval (nothing is changed then).
        """
        start, end = float(start), float(end)
        if math.isnan(start) or math.isnan(end) or not math.isfinite(start):
            raise ProfileError(f"reserve: invalid interval [{start}, {end})")
        if start < self._now:
            raise ProfileError(f"reserve: start {start} is before now ({self._now})")
        if end < start:
            raise ProfileError(f"reserve: end {end} is before start {start}")
        if isinstance(resources, ProcSet):
            ps = resources.copy()
            mask = mask_of(resources)
        elif isinstance(resources, int) and not isinstance(resources, bool) and resources >= 0:
            ps, mask = None, resources
        else:
            raise ProfileError(
                f"reserve: resources must be a ProcSet or a bit mask, got {resources!r}")
        if mask & ~self._all:
            raise ProfileError(
                f"reserve: resources {procset_of_mask(mask & ~self._all)} are not managed "
                "by this profile")
        need = self._pool_vector(pools, "reserve") if pools else ()
        nr = mask.bit_count()
        if end > start:
            self._apply(start, end, mask, nr, need, take=True)
        r = Reservation(self, self._next_rid, start, end, mask, nr, ps, need, tag)
        self._next_rid += 1
        if end > start:
            self._live[r._rid] = r
            if end < INF:
                heapq.heappush(self._ends, (end, r._rid))
        return r

    def remove(self, reservation: Reservation) -> None:
        """Cancel a reservation: free what it holds from ``now`` on.

        Removing a reservation that already ended (``end <= now``) only marks
        it removed.

        :raises ProfileError: if the reservation belongs to another profile
            or was already removed.
        """
        self._check_owned(reservation, "remove")
        a = max(reservation._start, self._now)
        b = reservation._end
        if b > a:
            r = reservation
            self._apply(a, b, r._mask, r._nres, r._need, take=False)
        reservation._removed = True
        self._live.pop(reservation._rid, None)

    def release(self, reservation: Reservation, at: Optional[float] = None) -> None:
        """Shorten a reservation to end at ``at``: its holder finished early.

        Frees the held capacity on ``[max(at, now, start), end)`` and sets the
        reservation's ``end`` accordingly (a job that finished before its
        walltime estimate). A reservation already ended by ``at`` is left
        unchanged (a job that overran its estimate).

        :param at: seconds; default ``now``; values before ``now`` count as ``now``.
        :raises ProfileError: if the reservation belongs to another profile
            or was removed, or ``at`` is NaN.
        """
        self._check_owned(reservation, "release")
        at = self._now if at is None else float(at)
        if math.isnan(at):
            raise ProfileError("release: at is NaN")
        r = reservation
        a = max(at, self._now, r._start)
        b = r._end
        if b <= a:
            return
        self._apply(a, b, r._mask, r._nres, r._need, take=False)
        r._end = a
        if r._rid in self._live:
            if a > self._now:
                heapq.heappush(self._ends, (a, r._rid))
            else:
                del self._live[r._rid]

    def without(self, reservation: Reservation) -> "_Without":
        """Context manager: inside the ``with`` block the profile answers
        queries as if ``reservation`` were removed (its capacity free from
        ``now`` on); on exit it is exactly as before. A what-if for a
        policy that would remove a reservation and make it again, when the
        answer may well be the same slot (compression of conservative
        backfilling): no update, no new reservation.

        Inside, adjacent segments may be equal (they are not merged): the
        step function is that of the removal, so queries whose answers
        depend only on it (:meth:`fit_mask`, :meth:`earliest_mask`,
        :meth:`fit_at`, :meth:`earliest_start`, :meth:`raw_view`) answer
        as after :meth:`remove`. Do not update the profile inside the block.

        :raises ProfileError: as :meth:`remove` (another profile's or a
            removed reservation).
        """
        self._check_owned(reservation, "without")
        return _Without(self, reservation)

    def advance(self, now: float) -> None:
        """Move the current time to ``now``, dropping the past.

        The step function on ``[now, inf)`` is unchanged; reservations that
        ended by ``now`` are dropped from :meth:`reservations`.

        :raises ProfileError: if ``now`` is before the current time or not finite.
        """
        now = float(now)
        if not math.isfinite(now):
            raise ProfileError(f"advance: now must be finite, got {now}")
        if now < self._now:
            raise ProfileError(f"advance: time cannot go back from {self._now} to {now}")
        if now == self._now:
            return
        T = self._t
        i = bisect_right(T, now) - 1
        if i:
            del T[:i], self._m[:i], self._n[:i], self._p[:i]
        T[0] = now
        self._now = now
        ends, live = self._ends, self._live
        while ends and ends[0][0] <= now:
            _, rid = heapq.heappop(ends)
            r = live.get(rid)
            if r is not None and r._end <= now:
                del live[rid]

    def check_consistency(self) -> None:
        """Recompute the free capacity from the live reservations and compare.

        A debugging/test aid, ``O(B * L)`` for ``L`` live reservations.

        :raises ProfileError: on any disagreement, or if two adjacent
            segments are equal (merging invariant).
        """
        T = self._t
        if not T or T[0] != self._now:
            raise ProfileError(f"first breakpoint {T[:1]} is not now ({self._now})")
        if not (len(T) == len(self._m) == len(self._n) == len(self._p)):
            raise ProfileError("segment lists of different lengths")
        if any(T[i] >= T[i + 1] for i in range(len(T) - 1)):
            raise ProfileError(f"breakpoints not increasing: {T}")
        live = self.reservations()
        for i, k in enumerate(T):
            res = self._all
            pools = list(self._totals)
            for r in live:
                if r._start <= k < r._end:
                    if r._mask & ~res:
                        raise ProfileError(
                            f"reservations overlap on {procset_of_mask(r._mask & ~res)} at {k}")
                    res &= ~r._mask
                    for idx, amt in r._need:
                        pools[idx] -= amt
            if self._m[i] != res or self._n[i] != res.bit_count():
                raise ProfileError(f"segment at {k}: free {procset_of_mask(self._m[i])} "
                                   f"(n={self._n[i]}), expected {procset_of_mask(res)}")
            for idx, amt in enumerate(pools):
                if amt < -self._tol[idx]:
                    raise ProfileError(f"pool {self._names[idx]!r} over-committed at {k}")
                if abs(self._p[i][idx] - amt) > 1e3 * self._tol[idx]:
                    raise ProfileError(
                        f"segment at {k}: pool {self._names[idx]!r} free {self._p[i][idx]}, "
                        f"expected {amt}")
            if i > 0 and self._same(i - 1, i):
                raise ProfileError(f"segments before and after {k} are equal (not merged)")

    # ------------------------------------------------------------ internals
    def _check_time(self, t, what):
        t = float(t)
        if math.isnan(t) or t < self._now:
            raise ProfileError(f"{what}: time {t} is before now ({self._now})")
        return t

    def _index_at(self, t, what) -> int:
        """Index of the segment holding ``t``."""
        return bisect_right(self._t, self._check_time(t, what)) - 1

    def _among(self, among) -> Optional[int]:
        return None if among is None else mask_of(among) & self._all

    def _pool_vector(self, pools, what) -> tuple:
        if not pools:
            return ()
        need = []
        for name in sorted(pools):
            if name not in self._index:
                raise ProfileError(f"{what}: unknown pool {name!r} (pools: {list(self._names)})")
            amt = float(pools[name])
            if math.isnan(amt) or amt < 0 or math.isinf(amt):
                raise ProfileError(f"{what}: pool {name!r} amount must be finite and >= 0, got {amt}")
            if amt > 0:
                need.append((self._index[name], amt))
        return tuple(need)

    def _check_request(self, nb_res, duration, pools_needed, what) -> tuple:
        if isinstance(nb_res, bool) or not isinstance(nb_res, int):
            raise ProfileError(f"{what}: nb_res must be an int, got {nb_res!r}")
        if nb_res < 0:
            raise ProfileError(f"{what}: nb_res must be >= 0, got {nb_res}")
        duration = float(duration)
        if math.isnan(duration) or duration < 0:
            raise ProfileError(f"{what}: duration must be >= 0, got {duration}")
        if not pools_needed:
            return ()
        need = self._pool_vector(pools_needed, what)
        for idx, amt in need:
            if amt > self._totals[idx] + self._tol[idx]:
                raise ProfileError(
                    f"{what}: {amt} of pool {self._names[idx]!r} requested, its total is "
                    f"{self._totals[idx]}")
        return need

    def _earliest(self, nb_res, duration, pools_needed, after, among, what) -> tuple:
        """``(t, candidates mask)`` of :meth:`earliest_start`, ``(inf, None)`` if none."""
        need = self._check_request(nb_res, duration, pools_needed, what)
        if nb_res > self._nres:
            raise ProfileError(
                f"{what}: {nb_res} resources requested, the profile has {self._nres}")
        among = self._among(among)
        if among is not None and nb_res > among.bit_count():
            raise ProfileError(
                f"{what}: {nb_res} resources requested among {procset_of_mask(among)}, "
                "which holds fewer managed resources")
        t = self._now if after is None else max(self._now, float(after))
        if math.isnan(t):
            raise ProfileError(f"{what}: after is NaN")
        if t == INF:
            return INF, None
        duration = float(duration)
        T = self._t
        S = len(T)
        i = bisect_right(T, t) - 1
        if nb_res and not need and among is None:
            return self._earliest_resources(i, t, nb_res, duration)
        while True:
            ok, x = self._scan(i, t, nb_res, duration, need, among)
            if ok:
                return t, x
            nxt = x + 1  # first candidate that may still succeed
            while nxt < S:
                if self._increases(nxt - 1, nxt, nb_res, need):
                    break
                nxt += 1
            if nxt >= S:
                return INF, None
            i = nxt
            t = T[i]

    def _earliest_resources(self, i, t, nb, duration) -> tuple:
        """:meth:`_earliest` of a request for ``nb >= 1`` resources only,
        from ``t`` in segment ``i``: the loops of :meth:`_scan` and
        :meth:`_increases` inlined (the search of conservative backfilling,
        whose candidates are many)."""
        T, M, N = self._t, self._m, self._n
        S = len(T)
        while True:
            end = t + duration
            if N[i] < nb:
                x = i               # this segment lacks: skip the windows covering it
            else:
                inter = M[i]
                j = i + 1
                while j < S and T[j] < end:
                    if N[j] < nb:
                        x = j
                        break
                    inter &= M[j]
                    if inter.bit_count() < nb:
                        x = i
                        break
                    j += 1
                else:
                    return t, inter
            # the next candidate: a breakpoint where some resource is freed
            nxt = x + 1
            while nxt < S and M[nxt] | M[nxt - 1] == M[nxt - 1]:
                nxt += 1
            if nxt >= S:
                return INF, None
            i = nxt
            t = T[i]

    def _scan(self, i, t, nb, duration, need, among):
        """Test the window ``[t, t + duration)`` starting in segment ``i``.

        Returns ``(True, candidates mask)`` on success (0 when ``nb`` is 0),
        else ``(False, j)`` with ``j`` the index of the last segment
        examined: if that segment alone lacks capacity, every window
        covering it fails and the caller may skip past it; otherwise
        (intersection too small) ``j == i`` is returned so the caller tries
        the next breakpoint.
        """
        T, M, N = self._t, self._m, self._n
        S = len(T)
        end = t + duration
        inter = 0
        j = i
        while True:
            if N[j] < nb:
                return False, j
            if need:
                seg = self._p[j]
                tol = self._tol
                for idx, amt in need:
                    if seg[idx] + tol[idx] < amt:
                        return False, j
            if nb:
                if j == i:
                    inter = M[j] if among is None else (M[j] & among)
                else:
                    inter &= M[j]
                if inter.bit_count() < nb:
                    return False, i
            j += 1
            if j >= S or T[j] >= end:
                return True, inter

    def _increases(self, a, b, nb, need) -> bool:
        """Whether segment ``b`` has more than segment ``a`` of some capacity
        relevant to the request."""
        if need:
            pa, pb = self._p[a], self._p[b]
            for idx, _ in need:
                if pb[idx] > pa[idx]:
                    return True
        if nb:
            if self._n[b] > self._n[a]:
                return True
            if self._m[b] & ~self._m[a]:
                return True
        return False

    def _choose(self, candidates: int, nb, chooser) -> ProcSet:
        if nb == 0:
            return ProcSet()
        if chooser is None:
            return procset_of_mask(lowest_bits(candidates, nb))
        cands = procset_of_mask(candidates)
        chosen = chooser(cands, nb)
        if not isinstance(chosen, ProcSet) or len(chosen) != nb or not chosen.issubset(cands):
            raise ProfileError(
                f"chooser returned {chosen!r}, not {nb} resources among {cands}")
        return chosen

    def _check_owned(self, r, what):
        if not isinstance(r, Reservation) or r._owner is not self:
            raise ProfileError(f"{what}: {r!r} does not belong to this profile")
        if r._removed:
            raise ProfileError(f"{what}: {r!r} was already removed")

    def _check_can_take(self, ia, ib, a, b, mask, need):
        """Raise unless ``mask`` and ``need`` are free on segments ``ia..ib-1``."""
        T, M, P = self._t, self._m, self._p
        for j in range(ia, ib):
            if M[j] & mask != mask:
                raise ProfileError(
                    f"over-commit: resources {procset_of_mask(mask & ~M[j])} are not free at "
                    f"t={max(T[j], a)} (request [{a}, {b}) on {procset_of_mask(mask)})")
            for idx, amt in need:
                if P[j][idx] + self._tol[idx] < amt:
                    raise ProfileError(
                        f"over-commit: pool {self._names[idx]!r} has {P[j][idx]} free at "
                        f"t={max(T[j], a)}, {amt} requested on [{a}, {b})")

    def _check_can_give(self, ia, ib, a, mask, need):
        """Raise unless ``mask`` and ``need`` are held on segments ``ia..ib-1``."""
        T, M, P = self._t, self._m, self._p
        for j in range(ia, ib):
            if mask & M[j]:
                raise ProfileError(
                    f"freeing resources {procset_of_mask(mask & M[j])} that are already free "
                    f"at t={max(T[j], a)}")
            for idx, amt in need:
                if P[j][idx] + amt > self._totals[idx] + self._tol[idx]:
                    raise ProfileError(
                        f"freeing {amt} of pool {self._names[idx]!r} at t={max(T[j], a)} "
                        f"exceeds its total {self._totals[idx]}")

    def _split(self, t) -> int:
        """Index of the segment starting at ``t`` (``now <= t < inf``),
        splitting the segment holding ``t`` there if needed."""
        T = self._t
        i = bisect_right(T, t) - 1
        if T[i] == t:
            return i
        i += 1
        T.insert(i, t)
        self._m.insert(i, self._m[i - 1])
        self._n.insert(i, self._n[i - 1])
        p = self._p[i - 1]
        # pool lists are updated in place: a copy, unless there are no pools
        self._p.insert(i, list(p) if p else p)
        return i

    def _apply(self, a, b, mask, nr, need, take):
        """Subtract (take) or add back capacity on ``[a, b)`` (``a < b``).

        The segments are split at ``a`` and ``b``, then checked: if any
        lacks (take) or already has (give back) part of the capacity, the
        splits are merged back and :class:`ProfileError` is raised, the
        profile unchanged."""
        ia, ib = self._split_checked(a, b, mask, need, take)
        self._changes += 1
        self._change(ia, ib, mask, nr, need, take)
        self._merge_ends(ia, ib)

    def _split_checked(self, a, b, mask, need, take) -> tuple:
        """Split at ``a`` and ``b``; check the capacity (see :meth:`_apply`);
        return the range ``(ia, ib)`` of the segments of ``[a, b)``."""
        ia = self._split(a)
        ib = len(self._t) if b == INF else self._split(b)
        try:
            if take:
                self._check_can_take(ia, ib, a, b, mask, need)
            else:
                self._check_can_give(ia, ib, a, mask, need)
        except ProfileError:
            self._merge_ends(ia, ib)
            raise
        return ia, ib

    def _change(self, ia, ib, mask, nr, need, take):
        """Subtract (take) or add back capacity on segments ``ia..ib-1``."""
        M, N = self._m, self._n
        if take:
            keep = ~mask
            for k in range(ia, ib):
                M[k] &= keep
                N[k] -= nr
        else:
            for k in range(ia, ib):
                M[k] |= mask
                N[k] += nr
        if need:
            P = self._p
            totals = self._totals
            for k in range(ia, ib):
                pools = P[k]
                if take:
                    for idx, amt in need:
                        pools[idx] = max(0.0, pools[idx] - amt)
                else:
                    for idx, amt in need:
                        pools[idx] = min(totals[idx], pools[idx] + amt)

    def _merge_ends(self, ia, ib):
        """Merge segment ``ib`` into ``ib - 1`` and ``ia`` into ``ia - 1``
        where equal (the merging invariant after a change of ``ia..ib-1``)."""
        if ib < len(self._t) and self._same(ib - 1, ib):
            self._drop(ib)
        if ia > 0 and self._same(ia - 1, ia):
            self._drop(ia)

    def _drop(self, i):
        del self._t[i], self._m[i], self._n[i], self._p[i]

    def _same(self, i, j) -> bool:
        """Whether segments ``i`` and ``j`` hold the same free capacity
        (pools within tolerance)."""
        if self._m[i] != self._m[j]:
            return False
        p, q = self._p[i], self._p[j]
        if p is q:
            return True
        tol = self._tol
        return all(abs(x - y) <= tol[k] for k, (x, y) in enumerate(zip(p, q)))


class _Without:
    """What :meth:`AvailabilityProfile.without` returns (a context manager)."""

    __slots__ = ("_p", "_r", "_saved")

    def __init__(self, profile: AvailabilityProfile, reservation: Reservation):
        self._p, self._r, self._saved = profile, reservation, None

    def __enter__(self) -> AvailabilityProfile:
        p, r = self._p, self._r
        a, b = max(r._start, p._now), r._end
        if b > a:
            ia, ib = p._split_checked(a, b, r._mask, r._need, take=False)
            pools = [list(x) for x in p._p[ia:ib]] if r._need else None
            self._saved = (ia, ib, p._m[ia:ib], p._n[ia:ib], pools)
            p._change(ia, ib, r._mask, r._nres, r._need, take=False)
        return p

    def __exit__(self, *exc) -> None:
        if self._saved is None:
            return
        p = self._p
        ia, ib, masks, counts, pools = self._saved
        self._saved = None
        p._m[ia:ib] = masks
        p._n[ia:ib] = counts
        if pools is not None:
            for k, x in enumerate(pools):
                p._p[ia + k][:] = x
        p._merge_ends(ia, ib)
