"""Availability profile: the timeline of future reservations of a machine.

The profile is a step function of *free capacity* over time ``[now, +inf)``.
Capacity has two parts:

* a :class:`procset.ProcSet` of free resources (compute nodes, cores...),
  identified by integer ids;
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

Representation: a :class:`sortedcontainers.SortedDict` maps each breakpoint
time ``t`` to the capacity free on ``[t, next breakpoint)``; the first key is
always ``now`` and the last segment extends to ``+inf``. Adjacent equal
segments are merged, so the number of breakpoints is at most twice the number
of live reservations plus one. Costs, with ``B`` breakpoints and ``W`` the
number of segments a request's interval covers: :meth:`reserve`,
:meth:`remove`, :meth:`release` are ``O(log B + W)`` set operations;
:meth:`fit_at` is ``O(log B + W)``; :meth:`earliest_start` is ``O(C * W)`` for
``C`` candidate start times, where candidates are pruned to the breakpoints at
which some relevant capacity increases and whole runs of candidates are
skipped when a single segment is too small.

Times are float seconds of simulated time; pool amounts are floats in the
pool's unit (bytes, bytes/s). Pool comparisons tolerate a relative error of
``1e-9`` of the pool's total (floating-point sums of reservations).
"""

from __future__ import annotations

import math
from typing import Callable, Iterator, Mapping, Optional

from procset import ProcInt, ProcSet
from sortedcontainers import SortedDict, SortedKeyList

from iosched.errors import ProfileError
from iosched.sched.timeline import Timeline

__all__ = ["AvailabilityProfile", "Reservation", "lowest_ids", "INF"]

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


class Reservation:
    """Capacity held on ``[start, end)``: a resource set and pool amounts.

    Created by :meth:`AvailabilityProfile.reserve`; read-only for callers (the
    profile shortens ``end`` on :meth:`AvailabilityProfile.release`).

    Attributes (read-only properties):

    * ``rid`` -- integer id, unique within its profile, increasing with
      creation order (used for deterministic ordering);
    * ``start``, ``end`` -- float seconds, ``start <= end``, ``end`` may be
      ``math.inf``;
    * ``resources`` -- ProcSet of held resources;
    * ``pools`` -- dict pool name -> amount held (only non-zero amounts);
    * ``tag`` -- any caller data (e.g. a job id), not interpreted;
    * ``removed`` -- True once :meth:`AvailabilityProfile.remove` was called.
    """

    __slots__ = ("_owner", "_rid", "_start", "_end", "_resources", "_pools",
                 "_need", "_tag", "_removed")

    def __init__(self, owner, rid, start, end, resources, pools, need, tag):
        self._owner = owner
        self._rid = rid
        self._start = start
        self._end = end
        self._resources = resources
        self._pools = pools
        self._need = need
        self._tag = tag
        self._removed = False

    rid = property(lambda self: self._rid, doc="Integer id (creation order).")
    start = property(lambda self: self._start, doc="Start time (s).")
    end = property(lambda self: self._end, doc="End time (s), may be inf.")
    resources = property(lambda self: ProcSet(self._resources),
                         doc="Held resources (a copy).")
    pools = property(lambda self: dict(self._pools),
                     doc="Held pool amounts (a copy).")
    tag = property(lambda self: self._tag, doc="Caller data.")
    removed = property(lambda self: self._removed,
                       doc="True once removed from its profile.")

    @property
    def duration(self) -> float:
        """``end - start`` in seconds (``inf`` for an unbounded reservation)."""
        return self._end - self._start

    def __repr__(self):
        pools = f" pools={self._pools}" if self._pools else ""
        tag = f" tag={self._tag!r}" if self._tag is not None else ""
        return (f"<Reservation #{self._rid} [{self._start}, {self._end}) "
                f"res={self._resources}{pools}{tag}>")


class _Seg:
    """Free capacity on one segment: resources, their count, pool amounts."""

    __slots__ = ("res", "n", "pools")

    def __init__(self, res: ProcSet, n: int, pools: list):
        self.res = res
        self.n = n
        self.pools = pools

    def copy(self) -> "_Seg":
        return _Seg(self.res, self.n, list(self.pools))


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
        self._nres = len(self._resources)
        self._names = names
        self._index = {name: i for i, name in enumerate(names)}
        self._totals = totals
        self._tol = [_REL_TOL * max(1.0, t) for t in totals]
        self._now = now
        self._bp = SortedDict({now: _Seg(ProcSet(self._resources), self._nres, list(totals))})
        self._live: dict[int, Reservation] = {}
        self._by_end = SortedKeyList(key=lambda r: (r._end, r._rid))
        self._next_rid = 0

    # ------------------------------------------------------------------ info
    @property
    def now(self) -> float:
        """Current time (s): the profile holds nothing before it."""
        return self._now

    @property
    def resources(self) -> ProcSet:
        """All resources managed by the profile (a copy)."""
        return ProcSet(self._resources)

    @property
    def pool_totals(self) -> dict:
        """Pool name -> total capacity (a copy)."""
        return dict(zip(self._names, self._totals))

    def __len__(self) -> int:
        """Number of breakpoints (segments) of the step function."""
        return len(self._bp)

    def __repr__(self):
        return (f"<AvailabilityProfile now={self._now} resources={self._resources} "
                f"pools={self.pool_totals} breakpoints={len(self._bp)} "
                f"reservations={len(self._live)}>")

    def free_at(self, t: float) -> tuple:
        """Free capacity at time ``t``.

        :param t: time (s), ``t >= now``.
        :returns: ``(ProcSet of free resources, {pool: free amount})`` (copies).
        :raises ProfileError: if ``t`` is before ``now`` or NaN.
        """
        seg = self._seg_at(t)
        return ProcSet(seg.res), dict(zip(self._names, seg.pools))

    def free_count(self, t: float) -> int:
        """Number of free resources at time ``t`` (``t >= now``), in O(log B).

        :raises ProfileError: if ``t`` is before ``now`` or NaN.
        """
        return self._seg_at(t).n

    def segments(self) -> Iterator[tuple]:
        """Iterate the step function from ``now`` on.

        :returns: an iterator of ``(start, end, free ProcSet, {pool: free})``
            for consecutive segments; the last one has ``end == inf``.
        """
        keys = list(self._bp.keys())
        for i, k in enumerate(keys):
            seg = self._bp[k]
            end = keys[i + 1] if i + 1 < len(keys) else INF
            yield k, end, ProcSet(seg.res), dict(zip(self._names, seg.pools))

    def raw_view(self, t: float) -> tuple:
        """Read-only view of the step function from the segment holding ``t``,
        for hot loops (no copies; :meth:`segments` copies every segment).

        :param t: time (s), ``t >= now``.
        :returns: ``(starts, res, counts, pools, names, tols)``: ``starts[i]``
            the start (s) of segment ``i`` (``starts[0] <= t``), ``res[i]`` its
            free ProcSet, ``counts[i]`` ``len(res[i])``, ``pools[i]`` its free
            pool amounts as a list indexed like ``names`` (the sorted pool
            names), ``tols`` the per-pool tolerances. The objects belong to
            the profile: do not modify them, and do not keep them across an
            update (ProcSets are replaced, never mutated; pool lists are
            updated in place).
        :raises ProfileError: if ``t`` is before ``now`` or NaN.
        """
        t = self._check_time(t, "raw_view")
        bp = self._bp
        i = bp.bisect_right(t) - 1
        starts = list(bp.islice(i))
        segs = [bp[k] for k in starts]
        return (starts, [g.res for g in segs], [g.n for g in segs], [g.pools for g in segs],
                self._names, self._tol)

    def snapshot(self, now: Optional[float] = None) -> Timeline:
        """A what-if copy of the free capacity from ``now`` (default: the
        profile's ``now``) on, with push/pop undo
        (:class:`~iosched.sched.timeline.Timeline`); the profile is not changed.

        :raises ProfileError: if ``now`` is before the profile's ``now``.
        """
        return Timeline(self, self._now if now is None else now)

    def reservations(self) -> list:
        """Live reservations (not removed, ending after ``now``), by ``rid``."""
        return [self._live[rid] for rid in sorted(self._live)]

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
        i = self._bp.bisect_right(t) - 1
        ok, x = self._scan(i, t, nb_res, duration, need, among)
        if not ok:
            return None
        return self._choose(x, nb_res, chooser)

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
        need = self._check_request(nb_res, duration, pools_needed, "earliest_start")
        if nb_res > self._nres:
            raise ProfileError(
                f"earliest_start: {nb_res} resources requested, the profile has {self._nres}")
        if among is not None and nb_res > len(among & self._resources):
            raise ProfileError(
                f"earliest_start: {nb_res} resources requested among {among}, "
                "which holds fewer managed resources")
        t = self._now if after is None else max(self._now, float(after))
        if math.isnan(t):
            raise ProfileError("earliest_start: after is NaN")
        if t == INF:
            return INF, ProcSet()
        bp = self._bp
        keys = bp.keys()
        nkeys = len(keys)
        i = bp.bisect_right(t) - 1
        while True:
            ok, x = self._scan(i, t, nb_res, duration, need, among)
            if ok:
                return t, self._choose(x, nb_res, chooser)
            nxt = x + 1  # first candidate that may still succeed
            prev = bp[keys[nxt - 1]] if nxt < nkeys else None
            while nxt < nkeys:
                seg = bp[keys[nxt]]
                if self._increases(prev, seg, nb_res, need):
                    break
                prev = seg
                nxt += 1
            if nxt >= nkeys:
                return INF, ProcSet()
            i = nxt
            t = keys[i]

    # ------------------------------------------------------------ updates
    def reserve(self, start: float, end: float, resources: ProcSet,
                pools: Optional[Mapping[str, float]] = None, tag=None) -> Reservation:
        """Hold ``resources`` and ``pools`` on ``[start, end)``.

        :param start: seconds, ``now <= start < inf``.
        :param end: seconds, ``end >= start`` (may be inf). An empty interval
            holds nothing but still returns a (dead) reservation.
        :param resources: ProcSet, a subset of the profile's resources.
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
        if not isinstance(resources, ProcSet):
            raise ProfileError(f"reserve: resources must be a ProcSet, got {type(resources).__name__}")
        resources = ProcSet(resources)
        if not resources.issubset(self._resources):
            raise ProfileError(
                f"reserve: resources {resources - self._resources} are not managed by this profile")
        need = self._pool_vector(pools, "reserve")
        if end > start:
            self._check_can_take(start, end, resources, need)
            self._apply(start, end, resources, need, take=True)
        r = Reservation(self, self._next_rid, start, end, resources,
                        {self._names[i]: a for i, a in need}, need, tag)
        self._next_rid += 1
        if end > start:
            self._live[r._rid] = r
            self._by_end.add(r)
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
            self._check_can_give(a, b, reservation._resources, reservation._need)
            self._apply(a, b, reservation._resources, reservation._need, take=False)
        reservation._removed = True
        if reservation._rid in self._live:
            del self._live[reservation._rid]
            self._by_end.remove(reservation)

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
        a = max(at, self._now, reservation._start)
        b = reservation._end
        if b <= a:
            return
        self._check_can_give(a, b, reservation._resources, reservation._need)
        self._apply(a, b, reservation._resources, reservation._need, take=False)
        live = reservation._rid in self._live
        if live:
            self._by_end.remove(reservation)
        reservation._end = a
        if live:
            if a > self._now:
                self._by_end.add(reservation)
            else:
                del self._live[reservation._rid]

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
        bp = self._bp
        i = bp.bisect_right(now) - 1
        seg = bp[bp.keys()[i]]
        for k in list(bp.islice(0, i + 1)):
            del bp[k]
        bp[now] = seg
        self._now = now
        by_end = self._by_end
        while by_end and by_end[0]._end <= now:
            r = by_end.pop(0)
            del self._live[r._rid]

    def check_consistency(self) -> None:
        """Recompute the free capacity from the live reservations and compare.

        A debugging/test aid, ``O(B * L)`` for ``L`` live reservations.

        :raises ProfileError: on any disagreement, or if two adjacent
            segments are equal (merging invariant).
        """
        keys = list(self._bp.keys())
        if not keys or keys[0] != self._now:
            raise ProfileError(f"first breakpoint {keys[:1]} is not now ({self._now})")
        prev = None
        for i, k in enumerate(keys):
            seg = self._bp[k]
            res = ProcSet(self._resources)
            pools = list(self._totals)
            for r in self._live.values():
                if r._start <= k < r._end:
                    if not r._resources.issubset(res):
                        raise ProfileError(f"reservations overlap on {r._resources - res} at {k}")
                    res = res - r._resources
                    for idx, amt in r._need:
                        pools[idx] -= amt
            if seg.res != res or seg.n != len(res):
                raise ProfileError(f"segment at {k}: free {seg.res} (n={seg.n}), expected {res}")
            for idx, amt in enumerate(pools):
                if amt < -self._tol[idx]:
                    raise ProfileError(f"pool {self._names[idx]!r} over-committed at {k}")
                if abs(seg.pools[idx] - amt) > 1e3 * self._tol[idx]:
                    raise ProfileError(
                        f"segment at {k}: pool {self._names[idx]!r} free {seg.pools[idx]}, expected {amt}")
            if prev is not None and self._same(prev, seg):
                raise ProfileError(f"segments before and after {k} are equal (not merged)")
            prev = seg

    # ------------------------------------------------------------ internals
    def _check_time(self, t, what):
        t = float(t)
        if math.isnan(t) or t < self._now:
            raise ProfileError(f"{what}: time {t} is before now ({self._now})")
        return t

    def _seg_at(self, t) -> _Seg:
        t = self._check_time(t, "free_at")
        return self._bp[self._bp.keys()[self._bp.bisect_right(t) - 1]]

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
        need = self._pool_vector(pools_needed, what)
        for idx, amt in need:
            if amt > self._totals[idx] + self._tol[idx]:
                raise ProfileError(
                    f"{what}: {amt} of pool {self._names[idx]!r} requested, its total is "
                    f"{self._totals[idx]}")
        return need

    def _scan(self, i, t, nb, duration, need, among):
        """Test the window ``[t, t + duration)`` starting in segment ``i``.

        Returns ``(True, candidates ProcSet)`` on success, else ``(False, j)``
        with ``j`` the index of the last segment examined: if that segment
        alone lacks capacity, every window covering it fails and the caller
        may skip past it; otherwise (intersection too small) ``j == i`` is
        returned so the caller tries the next breakpoint.
        """
        bp = self._bp
        tol = self._tol
        end = t + duration
        inter = None
        j = i
        first = True
        for k in bp.islice(i):
            if not first and k >= end:
                break
            first = False
            seg = bp[k]
            if seg.n < nb:
                return False, j
            for idx, amt in need:
                if seg.pools[idx] + tol[idx] < amt:
                    return False, j
            if nb:
                if inter is None:
                    inter = seg.res if among is None else (seg.res & among)
                else:
                    inter = inter & seg.res
                if len(inter) < nb:
                    return False, i
            j += 1
        return True, inter if inter is not None else ProcSet()

    def _increases(self, prev: _Seg, seg: _Seg, nb, need) -> bool:
        """Whether ``seg`` has more of some capacity relevant to the request."""
        for idx, _ in need:
            if seg.pools[idx] > prev.pools[idx]:
                return True
        if nb:
            if seg.n > prev.n:
                return True
            if seg.res != prev.res and not seg.res.issubset(prev.res):
                return True
        return False

    def _choose(self, candidates, nb, chooser) -> ProcSet:
        if nb == 0:
            return ProcSet()
        chosen = (chooser or lowest_ids)(candidates, nb)
        if not isinstance(chosen, ProcSet) or len(chosen) != nb or not chosen.issubset(candidates):
            raise ProfileError(
                f"chooser returned {chosen!r}, not {nb} resources among {candidates}")
        return chosen

    def _check_owned(self, r, what):
        if not isinstance(r, Reservation) or r._owner is not self:
            raise ProfileError(f"{what}: {r!r} does not belong to this profile")
        if r._removed:
            raise ProfileError(f"{what}: {r!r} was already removed")

    def _overlapping(self, a, b) -> Iterator[tuple]:
        """(key, seg) of the segments overlapping ``[a, b)`` (no split)."""
        bp = self._bp
        i = bp.bisect_right(a) - 1
        first = True
        for k in bp.islice(i):
            if not first and k >= b:
                break
            first = False
            yield k, bp[k]

    def _check_can_take(self, a, b, res, need):
        nr = len(res)
        for k, seg in self._overlapping(a, b):
            if seg.n < nr or not res.issubset(seg.res):
                raise ProfileError(
                    f"over-commit: resources {res - seg.res} are not free at t={max(k, a)} "
                    f"(request [{a}, {b}) on {res})")
            for idx, amt in need:
                if seg.pools[idx] + self._tol[idx] < amt:
                    raise ProfileError(
                        f"over-commit: pool {self._names[idx]!r} has {seg.pools[idx]} free at "
                        f"t={max(k, a)}, {amt} requested on [{a}, {b})")

    def _check_can_give(self, a, b, res, need):
        for k, seg in self._overlapping(a, b):
            if not res.isdisjoint(seg.res):
                raise ProfileError(
                    f"freeing resources {res & seg.res} that are already free at t={max(k, a)}")
            for idx, amt in need:
                if seg.pools[idx] + amt > self._totals[idx] + self._tol[idx]:
                    raise ProfileError(
                        f"freeing {amt} of pool {self._names[idx]!r} at t={max(k, a)} "
                        f"exceeds its total {self._totals[idx]}")

    def _split(self, t):
        bp = self._bp
        if t == INF or t in bp:
            return
        bp[t] = bp[bp.keys()[bp.bisect_right(t) - 1]].copy()

    def _apply(self, a, b, res, need, take):
        """Subtract (take) or add back capacity on ``[a, b)`` (pre-checked)."""
        bp = self._bp
        self._split(a)
        self._split(b)
        nr = len(res)
        totals = self._totals
        for k in bp.irange(a, b, inclusive=(True, False)):
            seg = bp[k]
            pools = seg.pools
            if take:
                seg.res = seg.res - res
                seg.n -= nr
                for idx, amt in need:
                    pools[idx] = max(0.0, pools[idx] - amt)
            else:
                seg.res = seg.res | res
                seg.n += nr
                for idx, amt in need:
                    pools[idx] = min(totals[idx], pools[idx] + amt)
        self._merge_at(b)
        self._merge_at(a)

    def _same(self, x: _Seg, y: _Seg) -> bool:
        if x.n != y.n or x.res != y.res:
            return False
        tol = self._tol
        return all(abs(p - q) <= tol[i] for i, (p, q) in enumerate(zip(x.pools, y.pools)))

    def _merge_at(self, t):
        bp = self._bp
        if t == INF or t not in bp:
            return
        i = bp.index(t)
        if i == 0:
            return
        if self._same(bp[bp.keys()[i - 1]], bp[t]):
            del bp[t]
