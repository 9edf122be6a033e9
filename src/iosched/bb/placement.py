"""Compute-node and burst-buffer choice, and window queries on a profile.

Source: the artifact ``jankopanski/Burst-Buffer-Scheduling``,
``burstbuffer/alloc_only.py`` (``_create_ordered_compute_resource_ids``,
``_create_burst_buffer_proximity``, ``_find_sufficient_burst_buffers``,
``_create_resource_filter``).

* **Compute nodes**: the artifact takes compute nodes that are consecutive
  in the dragonfly's node order (``node_0 .. node_107``, cyclic), so a job
  sits in as few chassis/groups as possible. Here: the first cyclic run of
  ``n`` consecutive free nodes in that order; if there is none (fragmented
  machine) the first ``n`` free nodes in that order (the artifact would not
  start the job then -- we do, which never delays it).
* **Burst buffers**: each compute node gets one storage node holding its
  ``bb`` bytes, chosen by proximity tier -- the burst-buffer node of its own
  chassis, then one of its group, then any other (artifact). Within a tier
  the artifact takes the first node in id order with enough space; we take
  the one with the most free space (ties: lowest id), which spreads the load
  over the storage nodes' links.
* **Feasibility**: since any node may use any storage node, a request of
  ``n`` nodes x ``bb`` bytes fits iff ``sum_s floor(free_s / bb) >= n``
  whatever compute nodes are chosen; the greedy tiered choice then always
  succeeds.

Burst-buffer capacity lives in the availability profile as one pool per
storage node, named ``bb:<resource id>`` (bytes).
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Mapping, Optional

from procset import ProcSet

from iosched.availability import INF, AvailabilityProfile
from iosched.bb.model import bb_held

__all__ = ["Topology", "pool_name", "window", "bb_slots", "choose_nodes", "assign_bb",
           "place", "earliest_placement", "earliest_nodes", "fit_at", "PlanTimeline"]

_NODE_RE = re.compile(r"^(?:.*?)(\d+)$")


def pool_name(storage_id: int) -> str:
    """Profile pool of a storage node: ``"bb:<id>"``."""
    return f"bb:{int(storage_id)}"


def _index(name: str) -> Optional[int]:
    m = _NODE_RE.match(name)
    return int(m.group(1)) if m else None


class Topology:
    """Node order and burst-buffer proximity of a platform.

    :param compute: compute resource id -> host name.
    :param storage: burst-buffer storage resource id -> host name (the PFS
        excluded).
    :param chassis_size: hosts per chassis (dragonfly96: 9 = 3 routers x 3).
    :param group_size: hosts per group (dragonfly96: 36 = 4 chassis x 9).

    When every host name ends with a number and every burst-buffer node's
    number is a multiple of ``chassis_size`` (dragonfly96: ``node_0``,
    ``node_9``...), nodes are ordered by that number and the proximity tiers
    are (own chassis, own group, others); otherwise by resource id, with a
    single tier holding every burst-buffer node.
    """

    def __init__(self, compute: Mapping[int, str], storage: Mapping[int, str],
                 chassis_size: int = 9, group_size: int = 36):
        self.compute = ProcSet(*compute) if compute else ProcSet()
        self.bbs = sorted(int(s) for s in storage)
        cnum = {c: _index(n) for c, n in compute.items()}
        snum = {s: _index(n) for s, n in storage.items()}
        structured = (all(v is not None for v in cnum.values()) and
                      all(v is not None and v % chassis_size == 0 for v in snum.values()))
        if structured:
            self.order = sorted(compute, key=lambda c: (cnum[c], c))
            by_num = {snum[s]: s for s in storage}
            self.tiers = {}
            for c in compute:
                k = cnum[c]
                own = (k // chassis_size) * chassis_size
                g0 = (k // group_size) * group_size
                t0 = [by_num[own]] if own in by_num else []
                t1 = [by_num[x] for x in range(g0, g0 + group_size, chassis_size)
                      if x in by_num and x != own]
                rest = [s for s in self.bbs if s not in t0 and s not in t1]
                self.tiers[c] = [t for t in (t0, sorted(t1), rest) if t]
        else:
            self.order = sorted(compute)
            self.tiers = {c: [list(self.bbs)] for c in compute}
        self.position = {c: i for i, c in enumerate(self.order)}
        #: memo of the node and burst-buffer choices (pure functions of the
        #: free masks and slots): ``(mask, n) -> nodes`` and
        #: ``(mask, n, bb, slots) -> (nodes, bb_of, held)``; values are shared,
        #: never mutate them.
        self.cache: dict = {}
        self.assign_cache: dict = {}
        #: burst-buffer node id -> its position in ``bbs``
        self.bb_position = {s: k for k, s in enumerate(self.bbs)}


def window(profile: AvailabilityProfile, t: float, duration: float) -> tuple:
    """Capacity free during the whole of ``[t, t + duration)``.

    :param t: start (s, >= profile.now); ``duration`` in s (>= 0, may be inf;
        0 means the instant ``t``).
    :returns: ``(ProcSet free all along, {pool: minimum free amount})``.
    """
    end = t + duration
    res = None
    pools: dict = {}
    for a, b, free, fp in profile.segments():
        overlap = (a < end and b > t) if duration > 0 else (a <= t < b)
        if not overlap:
            if a > t and a >= end:
                break
            continue
        res = free if res is None else res & free
        for k, v in fp.items():
            pools[k] = min(pools.get(k, v), v)
    return (res if res is not None else ProcSet()), pools


def bb_slots(free_pools: Mapping[str, float], storage: list, bb: float,
             totals: Optional[Mapping[str, float]] = None) -> dict:
    """Number of ``bb``-byte burst buffers each storage node can still hold.

    :returns: storage id -> int (a relative tolerance of 1e-9 of the pool
        total absorbs floating-point sums).
    """
    out = {}
    for s in storage:
        name = pool_name(s)
        free = free_pools.get(name, 0.0)
        tol = 1e-9 * max(1.0, (totals or {}).get(name, free))
        out[s] = int(math.floor((free + tol) / bb)) if bb > 0 else 10 ** 9
    return out


def choose_nodes(topo: Topology, free: ProcSet, n: int) -> Optional[list]:
    """``n`` compute nodes among ``free``: the first cyclic run of consecutive
    free nodes in topology order, else the first ``n`` free ones in that order.

    :returns: a list of resource ids (topology order) or None if ``len(free) < n``.
    """
    order = topo.order
    flags = [c in free for c in order]
    total = sum(flags)
    if total < n or n <= 0:
        return None if n > 0 else []
    return _first_run(order, flags, n)


def _first_run(order: list, flags: list, n: int) -> list:
    """The first ``n`` consecutive free nodes of the cyclic topology order
    (``flags[i]``: ``order[i]`` is free), else the first ``n`` free ones."""
    N = len(order)
    if sum(flags) == N:
        return order[:n]
    run = 0
    # scan twice around the ring to catch runs crossing the end
    for i in range(2 * N):
        if flags[i % N]:
            run += 1
            if run >= n:
                start = i - n + 1
                return [order[(start + k) % N] for k in range(n)]
        else:
            run = 0
    return [c for c, f in zip(order, flags) if f][:n]


def assign_bb(topo: Topology, nodes: list, slots: Mapping[int, int]) -> Optional[dict]:
    """Give each node a storage node by proximity tier (most free slots first).

    :param slots: storage id -> burst buffers it can still hold (not modified).
    :returns: node -> storage id, or None if the slots do not suffice.
    """
    left = dict(slots)
    if sum(left.values()) < len(nodes):
        return None
    out = {}
    for c in nodes:
        chosen = None
        for tier in topo.tiers[c]:
            best = None
            for s in tier:
                if left.get(s, 0) > 0 and (best is None or left[s] > left[best]):
                    best = s
            if best is not None:
                chosen = best
                break
        if chosen is None:
            return None
        left[chosen] -= 1
        out[c] = chosen
    return out


def place(topo: Topology, free: ProcSet, free_pools: Mapping[str, float], n: int, bb: float,
          totals: Optional[Mapping[str, float]] = None, use_bb: bool = True) -> Optional[tuple]:
    """Compute nodes and burst buffers for ``n`` nodes x ``bb`` bytes.

    :returns: ``(nodes ProcSet, {node: storage id})`` or None. With
        ``use_bb=False`` burst buffers are ignored (the mapping is empty).
    """
    if len(free) < n:
        return None
    if use_bb:
        slots = bb_slots(free_pools, topo.bbs, bb, totals)
        if sum(slots.values()) < n:
            return None
    nodes = choose_nodes(topo, free, n)
    if nodes is None:
        return None
    if not use_bb:
        return ProcSet(*nodes), {}
    bb_of = assign_bb(topo, nodes, slots)
    if bb_of is None:
        return None
    return ProcSet(*nodes), bb_of


_MASKS: dict = {}


def _mask(ps: ProcSet) -> int:
    """ProcSet -> int bit mask (bit ``i`` set iff ``i`` in ``ps``), cached by
    object: the profile replaces its ProcSets and never mutates them, and the
    cache holds a reference, so an ``id`` cannot be reused while cached."""
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


def _choose_mask(topo: Topology, mask: int, n: int) -> list:
    """:func:`choose_nodes` on a bit mask of free nodes (same answer)."""
    if n <= 0:
        return []
    cache = topo.cache
    key = (mask, n)
    hit = cache.get(key)
    if hit is None:
        order = topo.order
        hit = _first_run(order, [(mask >> c) & 1 for c in order], n)
        if len(cache) > 200000:
            cache.clear()
        cache[key] = hit
    return hit


def _scan(topo: Topology, S: int, start_of, mask_of, free_of, tols: list, n: int, bb: float,
          duration: float, only_at: bool = False) -> tuple:
    """The candidate scan shared by :func:`earliest_placement` (on a profile)
    and :class:`PlanTimeline` (on its snapshot): segment ``k`` of ``S`` starts
    at ``start_of(k)`` (s; the first at the query time), has the free nodes
    ``mask_of(k)`` (int bit mask) and the free bytes ``free_of(k)`` of each
    burst-buffer node in ``topo.bbs`` order. A segment that alone lacks nodes
    or burst-buffer slots rules out every window covering it.

    :returns: ``(t, nodes list, {node: storage id}, held)`` with ``held`` the
        ``[(position in topo.bbs, bytes)]`` the placement takes, or ``(inf,
        None, None, None)``; nodes, mapping and ``held`` are shared with
        ``topo.assign_cache`` (do not modify).
    """
    acache, pos = topo.assign_cache, topo.bb_position
    bad = [None] * S
    seg_mask = [None] * S  # mask_of(k), computed once per segment
    i = 0
    while i < S:
        t = start_of(i)
        end = t + duration
        j = i
        mask = -1
        mins = None
        ok = True
        while j < S and (j == i or start_of(j) < end):
            b = bad[j]
            fj = None
            mj = seg_mask[j]
            if mj is None:
                mj = seg_mask[j] = mask_of(j)
            if b is None:
                b = mj.bit_count() < n
                if not b:
                    fj = free_of(j)
                    b = sum(int(math.floor((f + tl) / bb)) for f, tl in zip(fj, tols)) < n
                bad[j] = b
            if b:
                ok = False
                break
            mask &= mj
            if mask.bit_count() < n:
                ok = False
                break
            if fj is None:
                fj = free_of(j)
            mins = list(fj) if mins is None else [m if m <= f else f for m, f in zip(mins, fj)]
            j += 1
        if ok:
            slots = tuple(int(math.floor((m + tl) / bb)) for m, tl in zip(mins, tols))
            if sum(slots) >= n:
                key = (mask, n, bb, slots)
                hit = acache.get(key)
                if hit is None:
                    nodes = _choose_mask(topo, mask, n)
                    bb_of = assign_bb(topo, nodes, dict(zip(topo.bbs, slots)))
                    held = None
                    if bb_of is not None:
                        held = [(pos[x], b) for x, b in bb_held(bb_of, bb).items()]
                    hit = (nodes, bb_of, held)
                    if len(acache) > 200000:
                        acache.clear()
                    acache[key] = hit
                if hit[1] is not None:
                    return (t,) + hit
            nxt = i + 1
        elif bad[j]:
            nxt = j + 1
        else:
            nxt = i + 1
        if only_at:
            break
        i = nxt
    return INF, None, None, None


def earliest_placement(profile: AvailabilityProfile, topo: Topology, n: int, bb: float,
                       duration: float, after: Optional[float] = None,
                       only_at: bool = False) -> tuple:
    """Earliest start at which ``n`` nodes and their burst buffers are free
    during ``[t, t + duration)``.

    Candidate times are ``after`` and the profile's breakpoints after it
    (capacity only increases there). The request fits at ``t`` iff at least
    ``n`` nodes are free on every segment of the window (their intersection)
    and ``sum_s floor(min free_s / bb) >= n`` over the window (tolerance
    ``1e-9`` of the pool total, as :func:`bb_slots`). Equivalent to calling
    :func:`window` + :func:`place` at every candidate, in ``O(C * W)`` integer
    operations (bit masks, no ProcSet copies) for ``C`` candidates and ``W``
    segments per window; a segment that alone lacks nodes or burst-buffer
    slots rules out every candidate whose window covers it, and those are
    skipped.

    :param only_at: test ``after`` only (the "fits now" query).
    :returns: ``(t, nodes ProcSet, {node: storage id})``, or ``(inf, None,
        None)`` if the request never fits (or not at ``after`` with ``only_at``).
    """
    after = profile.now if after is None else max(after, profile.now)
    starts, res, _counts, pools, names, tols = profile.raw_view(after)
    pidx = [names.index(pool_name(s)) for s in topo.bbs]
    t, nodes, bb_of, _held = _scan(
        topo, len(starts), lambda k: after if k == 0 else starts[k], lambda k: _mask(res[k]),
        lambda k: [pools[k][x] for x in pidx], [tols[x] for x in pidx], n, bb, duration, only_at)
    return (t, None, None) if nodes is None else (t, ProcSet(*nodes), bb_of)


def fit_at(profile: AvailabilityProfile, topo: Topology, n: int, bb: float, duration: float,
           t: float) -> Optional[tuple]:
    """Nodes and burst buffers for a request starting exactly at ``t``
    (same answer as :func:`window` + :func:`place`).

    :returns: ``(nodes ProcSet, {node: storage id})`` or None.
    """
    st, nodes, bb_of = earliest_placement(profile, topo, n, bb, duration, after=t, only_at=True)
    return None if nodes is None else (nodes, bb_of)


def _candidate_times(profile: AvailabilityProfile, after: float) -> list:
    return [a for a, _b, _f, _p in profile.segments() if a >= after] or [after]


def earliest_nodes(profile: AvailabilityProfile, topo: Topology, n: int, duration: float,
                   after: Optional[float] = None) -> tuple:
    """Like :func:`earliest_placement` for compute nodes only (burst buffers
    ignored: the reservation of ``fcfs-easy``).

    :returns: ``(t, nodes ProcSet)`` or ``(inf, None)``.
    """
    after = profile.now if after is None else max(after, profile.now)
    times = _candidate_times(profile, after)
    if times[0] > after:
        times.insert(0, after)
    for t in times:
        free, _ = window(profile, t, duration)
        nodes = choose_nodes(topo, free, n)
        if nodes is not None:
            return t, ProcSet(*nodes)
    return INF, None


def _breakpoint(st: list, masks: list, free: list, t: float) -> int:
    """Index of the step starting at time ``t`` (s) in a timeline of sorted
    step starts ``st`` (``st[0] <= t``) with parallel lists ``masks`` and
    ``free``; when no step starts at ``t``, the step containing it is split
    there (its mask and free capacities copied) in place."""
    i = bisect.bisect_right(st, t) - 1
    if st[i] < t:
        i += 1
        st.insert(i, t)
        masks.insert(i, masks[i - 1])
        free.insert(i, free[i - 1])
    return i


class PlanTimeline:
    """The free capacity of a profile from ``now`` on, for list-scheduling
    many orders of a queue (plan-based policies) without touching the profile.

    State: segment starts (s; the first is ``now``, the last segment extends
    to infinity), per segment the free compute nodes as an int bit mask and
    the free bytes of each burst-buffer node (tuple in ``topo.bbs`` order).
    :meth:`place` reserves the earliest placement of a request and pushes the
    new state; :meth:`pop` restores the previous state in O(1) (states are
    immutable lists shared between stack levels, a reservation copies the
    ``O(S)`` segment lists once).

    Placements are those of :func:`earliest_placement` followed by
    ``AvailabilityProfile.reserve`` on the profile (same candidate times,
    nodes, burst buffers and floating-point pool arithmetic); checked by
    ``tests/test_bb_placement.py``.

    Source: the list scheduling of a queue order in Kopanski & Rzadca,
    Euro-Par 2021, Section 4 (plan-based scheduling, Algorithm 2 of arXiv
    2109.00082v2), evaluated for many orders per scheduling pass.

    :param profile: the scheduler's profile (pools ``bb:<id>`` for every
        storage node of ``topo``); not modified.
    :param now: current time (s), ``>= profile.now``.
    :raises ProfileError: if ``now`` is before the profile's ``now``.
    """

    __slots__ = ("topo", "now", "tols", "_states")

    def __init__(self, profile: AvailabilityProfile, topo: Topology, now: float):
        starts, res, _counts, pools, names, tols = profile.raw_view(now)
        pidx = [names.index(pool_name(s)) for s in topo.bbs]
        self.topo, self.now = topo, float(now)
        self.tols = [tols[i] for i in pidx]
        st = list(starts)
        st[0] = self.now
        self._states = [(st, [_mask(r) for r in res], [tuple(pk[i] for i in pidx) for pk in pools])]

    def __len__(self) -> int:
        """Number of reservations pushed."""
        return len(self._states) - 1

    def pop(self) -> None:
        """Undo the last :meth:`place` that reserved (IndexError if none)."""
        if len(self._states) == 1:
            raise IndexError("PlanTimeline.pop: nothing placed")
        self._states.pop()

    def earliest(self, n: int, bb: float, duration: float) -> tuple:
        """Earliest ``(t, nodes list, {node: storage id})`` for ``n`` nodes x
        ``bb`` bytes during ``duration`` s, on the current state, or
        ``(inf, None, None)``. Nothing is reserved. The returned list and
        dict are shared with a memo: do not modify them."""
        return self._earliest(n, bb, duration)[:3]

    def _earliest(self, n, bb, duration):
        st, masks, free = self._states[-1]
        return _scan(self.topo, len(st), st.__getitem__, masks.__getitem__, free.__getitem__,
                     self.tols, n, bb, duration)

    def place(self, n: int, bb: float, duration: float) -> tuple:
        """:meth:`earliest`, then reserve it for ``duration`` s (a new state
        is pushed only when the request fits).

        :returns: ``(t, nodes list, {node: storage id})`` or ``(inf, None,
            None)``; the list and dict are shared with a memo (do not modify).
        """
        t, nodes, bb_of, held = self._earliest(n, bb, duration)
        if nodes is None:
            return t, nodes, bb_of
        st, masks, free = self._states[-1]
        end = t + duration
        st, masks, free = list(st), list(masks), list(free)
        i = _breakpoint(st, masks, free, t)
        j = len(st) if end == INF else _breakpoint(st, masks, free, end)
        take = 0
        for c in nodes:
            take |= 1 << c
        keep = ~take
        for k in range(i, j):
            masks[k] &= keep
            f = list(free[k])
            for x, b in held:
                f[x] = f[x] - b
            free[k] = tuple(f)
        self._states.append((st, masks, free))
        return t, nodes, bb_of
