"""What-if planning on a snapshot of the availability profile.

A :class:`Timeline` is the free capacity of an
:class:`~iosched.sched.profile.AvailabilityProfile` from a time ``now`` on,
copied into flat arrays so that a scheduler can list-schedule many orders of
its queue (plan-based policies, conservative what-ifs) without touching the
profile: :meth:`Timeline.push` reserves an allocation on the copy and
:meth:`Timeline.pop` undoes the last push in O(1).

State: segment starts (s; the first is ``now``, the last segment extends to
infinity) and, per segment, the free resources as an int bit mask (bit ``i``
set iff resource ``i`` is free) and the free amount of every pool as a tuple
indexed like :attr:`Timeline.pool_names` (the profile's sorted pool names).
States are immutable lists shared between stack levels; a push copies the
``O(S)`` segment lists once.

Placement on a timeline is a :class:`~iosched.sched.placer.Placer`'s job
(:meth:`~iosched.sched.placer.Placer.earliest`); :meth:`Timeline.place` is
"earliest placement, then push". Pool arithmetic is that of the profile
(``free - amount`` per pool and segment), so a placement found on a timeline
is the one the profile would give after the same reservations.

Source: list scheduling on the profile of conservative backfilling
(Mu'alem & Feitelson, IEEE TPDS 12(6), 2001), evaluated for many orders per
pass as in the plan-based policies of Kopanski & Rzadca (Euro-Par 2021,
Section 4).
"""

from __future__ import annotations

import bisect
import math

from procset import ProcInt, ProcSet

__all__ = ["Timeline", "mask_of", "procset_of_mask", "procset_of_ids"]

_MASKS: dict = {}


def mask_of(ps: ProcSet) -> int:
    """ProcSet -> int bit mask (bit ``i`` set iff ``i`` in ``ps``).

    Cached by object: the profile replaces its ProcSets and never mutates
    them, and the cache holds a reference, so an ``id`` cannot be reused while
    cached.
    """
    hit = _MASKS.get(id(ps))
    if hit is not None and hit[0] is ps:
        return hit[1]
    m = 0
    for itv in ps.intervals():
        m |= (1 << (itv.sup + 1)) - (1 << itv.inf)
    if len(_MASKS) > 50000:
        _MASKS.clear()
    _MASKS[id(ps)] = (ps, m)
    return m


def _procset_public(itvs: list) -> ProcSet:
    return ProcSet(*itvs)


def _procset_direct(itvs: list) -> ProcSet:
    ps = ProcSet.__new__(ProcSet)
    ps._itvs = itvs  # pylint: disable=protected-access
    return ps


def _procset_builder():
    """The function that makes a ProcSet of sorted, disjoint, non-adjacent
    :class:`ProcInt` intervals (the runs of a bit mask).

    ``ProcSet(*intervals)`` merges each interval into the union of the
    previous ones (quadratic in their number: 0.6 ms for the 21 runs of a
    scattered 100-node allocation), which made ProcSets the largest share
    of an EASY pass once the profile worked on bit masks. Runs of a mask
    are already in ProcSet's canonical form, so they are installed as the
    set's interval list (procset 1.x keeps exactly that list in its only
    slot, ``_itvs``); checked once here on a probe, with the public
    constructor as the fallback if a procset version stores them otherwise.
    """
    try:
        runs = [ProcInt(0, 1), ProcInt(3, 3), ProcInt(5, 9)]
        probe = _procset_direct(list(runs))
        if (ProcSet.__slots__ == ("_itvs",) and probe == ProcSet(*runs) and str(probe) == "0-1 3 5-9"
                and len(probe) == 8 and list(probe.intervals()) == runs and 4 not in probe):
            return _procset_direct
    except Exception:  # noqa: BLE001 -- any surprise: the public constructor
        pass
    return _procset_public


_make_procset = _procset_builder()


def procset_of_mask(mask: int) -> ProcSet:
    """int bit mask -> ProcSet of the set bits' positions.

    Built from the runs of set bits (one interval each, in ProcSet's
    canonical form; see :func:`_procset_builder`), in ``O(runs)``."""
    itvs = []
    while mask:
        lo = (mask & -mask).bit_length() - 1
        x = mask >> lo
        run = (x ^ (x + 1)).bit_length() - 1  # trailing ones of x
        itvs.append(ProcInt(lo, lo + run - 1))
        mask ^= ((1 << run) - 1) << lo
    return _make_procset(itvs)


def procset_of_ids(ids) -> ProcSet:
    """Resource ids (ints, any order, repeats allowed) -> ProcSet, built
    from their maximal runs of consecutive ids (see :func:`procset_of_mask`)."""
    itvs = []
    for x in sorted(set(ids)):
        if itvs and itvs[-1][1] == x - 1:
            itvs[-1][1] = x
        else:
            itvs.append([x, x])
    return _make_procset([ProcInt(a, b) for a, b in itvs])


def _breakpoint(st: list, masks: list, free: list, t: float) -> int:
    """Index of the step starting at ``t`` in sorted step starts ``st``
    (``st[0] <= t``) with parallel lists ``masks`` and ``free``; when no step
    starts at ``t``, the step containing it is split there in place."""
    i = bisect.bisect_right(st, t) - 1
    if st[i] < t:
        i += 1
        st.insert(i, t)
        masks.insert(i, masks[i - 1])
        free.insert(i, free[i - 1])
    return i


class Timeline:
    """Snapshot of a profile's free capacity from ``now`` on, with push/pop.

    :param profile: an :class:`~iosched.sched.profile.AvailabilityProfile`
        (not modified, not referenced after construction).
    :param now: snapshot time (s), ``>= profile.now``.
    :raises ProfileError: if ``now`` is before the profile's ``now``.

    Read-only attributes: ``now`` (s), ``pool_names`` (tuple of str),
    ``pool_index`` (name -> position), ``tols`` (per-pool tolerances of the
    profile: ``1e-9`` of the pool total, at least ``1e-9``); ``cache`` (a
    dict where placers keep what they derive once per snapshot).
    """

    __slots__ = ("now", "pool_names", "pool_index", "tols", "cache", "_states")

    def __init__(self, profile, now: float):
        starts, masks, _counts, pools, names, tols = profile.raw_view(now)
        self.now = float(now)
        self.pool_names = tuple(names)
        self.pool_index = {n: i for i, n in enumerate(names)}
        self.tols = list(tols)
        self.cache: dict = {}
        st = list(starts)
        st[0] = self.now
        self._states = [(st, masks, [tuple(p) for p in pools])]

    def __len__(self) -> int:
        """Number of pushed reservations."""
        return len(self._states) - 1

    def state(self) -> tuple:
        """The current state ``(starts, masks, free)``: segment starts (s),
        free-resource bit masks, free pool tuples; shared, do not modify."""
        return self._states[-1]

    def window(self, t: float, duration: float) -> tuple:
        """Capacity free during the whole of ``[t, t + duration)`` on the
        current state (``duration`` 0: the instant ``t``).

        :param t: seconds, ``t >= now``.
        :returns: ``(mask, {pool: minimum free amount})``.
        """
        st, masks, free = self._states[-1]
        i = bisect.bisect_right(st, t) - 1
        end = t + duration
        mask, mins = -1, None
        j = i
        while j < len(st) and (j == i or st[j] < end):
            mask &= masks[j]
            f = free[j]
            mins = list(f) if mins is None else [m if m <= x else x for m, x in zip(mins, f)]
            j += 1
        return mask, dict(zip(self.pool_names, mins or ()))

    def push(self, t: float, duration: float, allocation) -> None:
        """Reserve ``allocation`` (an :class:`~iosched.sched.placer.Allocation`)
        on ``[t, t + duration)`` (``duration`` may be inf) and push the new
        state. The capacity is not checked: place with a placer first."""
        st, masks, free = self._states[-1]
        end = t + duration
        st, masks, free = list(st), list(masks), list(free)
        i = _breakpoint(st, masks, free, t)
        j = len(st) if end == math.inf else _breakpoint(st, masks, free, end)
        keep = ~allocation.mask
        held = allocation.held(self.pool_names, self.pool_index)
        for k in range(i, j):
            masks[k] &= keep
            if held:
                f = list(free[k])
                for x, b in held:
                    f[x] = f[x] - b
                free[k] = tuple(f)
        self._states.append((st, masks, free))

    def pop(self) -> None:
        """Undo the last :meth:`push`.

        :raises IndexError: if nothing was pushed.
        """
        if len(self._states) == 1:
            raise IndexError("Timeline.pop: nothing pushed")
        self._states.pop()

    def base(self) -> tuple:
        """The snapshot's own state (before any push), as :meth:`state`."""
        return self._states[0]

    def saved(self) -> list:
        """The stack of states (a new list of the shared immutable states:
        ``saved()[k]`` is the state after ``k`` pushes), for
        :meth:`restore` and :meth:`extend` (what-if searches that come back
        to an order evaluated before)."""
        return list(self._states)

    def restore(self, saved: list, depth: int) -> None:
        """Make the stack the first ``depth`` pushes of a :meth:`saved`
        stack of this timeline (``0 <= depth < len(saved)``)."""
        self._states = saved[:depth + 1]

    def extend(self, saved: list, a: int, b: int) -> None:
        """Push the states ``saved[a + 1 .. b]`` of a :meth:`saved` stack of
        this timeline; valid when the current state equals ``saved[a]``
        (the pushes that led from ``saved[a]`` to ``saved[b]`` then lead
        from the current state to the same states)."""
        self._states.extend(saved[a + 1:b + 1])

    def place(self, job, placer) -> tuple:
        """The earliest placement of ``job`` by ``placer`` on the current
        state; when there is one, it is pushed for ``job.estimate`` s.

        :returns: ``(t, Allocation)``, or ``(inf, None)`` if the job never fits.
        """
        t, alloc = placer.earliest(self, job, self.now)
        if alloc is not None:
            self.push(t, job.estimate, alloc)
        return t, alloc
