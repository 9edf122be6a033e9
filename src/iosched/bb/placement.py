"""Compute-node and burst-buffer choice, and window queries on a profile.

Source: the artifact ``jankopanski/Burst-Buffer-Scheduling``,
``burstbuffer/alloc_only.py`` (``_create_ordered_compute_resource_ids``,
``_create_burst_buffer_proximity``, ``_find_sufficient_burst_buffers``,
``_create_resource_filter``).

* **Compute nodes** (option ``nodes``): ``"first"`` (default, the
  artifact's final version: its consecutive-nodes filter is commented out
  in ``alloc_only.py``, so pybatsim's resource search takes the first ``n``
  free compute nodes in the dragonfly's node order ``node_0 .. node_107``);
  ``"consecutive"`` (the artifact's earlier filter: the first cyclic run of
  ``n`` consecutive free nodes in that order, so a job sits in as few
  chassis/groups as possible; if there is none, the first ``n`` free ones).
* **Burst buffers** (option ``storage``): each compute node gets one
  storage node holding its ``bb`` bytes, chosen by proximity tier -- the
  burst-buffer node of its own chassis, then one of its group, then any
  other (artifact ``_create_burst_buffer_proximity``). Within a tier:
  ``"first"`` (default, the artifact's ``_find_sufficient_burst_buffers``)
  takes the first node in id order with enough space; ``"most-free"`` takes
  the one with the most free space (ties: lowest id), which spreads the
  load over the storage nodes' links.
* **Feasibility**: since any node may use any storage node, a request of
  ``n`` nodes x ``bb`` bytes fits iff ``sum_s floor(free_s / bb) >= n``
  whatever compute nodes are chosen; the greedy tiered choice then always
  succeeds.

Burst-buffer capacity lives in the availability profile as one pool per
storage node, named ``bb:<resource id>`` (bytes).
"""

from __future__ import annotations

import math
import re
from math import floor
from bisect import bisect_left, bisect_right
from typing import Mapping, Optional

from procset import ProcSet

from iosched.bb.model import JobRequest, bb_held
from iosched.errors import InputError
from iosched.sched.ioplan import DISK_SUFFIX
from iosched.sched.placer import Allocation, Placer, Window
from iosched.sched.profile import INF, AvailabilityProfile
from iosched.sched.timeline import Timeline

__all__ = ["NODE_CHOICES", "STORAGE_CHOICES", "check_choices", "Topology", "pool_name", "window", "bb_slots", "choose_nodes", "assign_bb",
           "place", "earliest_placement", "fit_at", "BurstBufferPlacer", "NodesOnlyPlacer"]

#: Compute-node choices (module documentation); the first is the default.
NODE_CHOICES = ("first", "consecutive")
#: Burst-buffer node choices within a proximity tier; the first is the default.
STORAGE_CHOICES = ("first", "most-free")

def check_choices(nodes: str, storage: str) -> None:
    """Check a node and a burst-buffer choice (:data:`NODE_CHOICES`,
    :data:`STORAGE_CHOICES`).

    :raises InputError: an unknown choice (one line naming the option).
    """
    if nodes not in NODE_CHOICES:
        raise InputError(f"nodes={nodes!r} is unknown; expected one of {', '.join(NODE_CHOICES)}")
    if storage not in STORAGE_CHOICES:
        raise InputError(f"storage={storage!r} is unknown; expected one of "
                         f"{', '.join(STORAGE_CHOICES)}")


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
    :param nodes: compute-node choice, ``"first"`` or ``"consecutive"``.
    :param storage_choice: burst-buffer node within a tier, ``"first"`` or
        ``"most-free"`` (module documentation).
    :raises InputError: an unknown choice.

    When every host name ends with a number and every burst-buffer node's
    number is a multiple of ``chassis_size`` (dragonfly96: ``node_0``,
    ``node_9``...), nodes are ordered by that number and the proximity tiers
    are (own chassis, own group, others); otherwise by resource id, with a
    single tier holding every burst-buffer node.
    """

    def __init__(self, compute: Mapping[int, str], storage: Mapping[int, str],
                 chassis_size: int = 9, group_size: int = 36, nodes: str = "first",
                 storage_choice: str = "first"):
        check_choices(nodes, storage_choice)
        #: compute-node choice (:data:`NODE_CHOICES`) and burst-buffer choice
        #: within a tier (:data:`STORAGE_CHOICES`)
        self.nodes, self.storage_choice = nodes, storage_choice
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
        #: node -> its burst-buffer nodes in preference order (the tiers one
        #: after the other); nodes with the same tiers share one tuple
        interned: dict = {}
        self.pref = {c: interned.setdefault(tuple(x for tier in ts for x in tier),
                                            tuple(x for tier in ts for x in tier))
                     for c, ts in self.tiers.items()}
        #: memo of the node and burst-buffer choices (pure functions of the
        #: free masks and slots): ``(mask, n) -> nodes`` and
        #: ``(mask, n, bb, slots) -> (nodes, bb_of, held)``; values are shared,
        #: never mutate them.
        self.cache: dict = {}
        self.assign_cache: dict = {}
        #: pool names of a plan -> layout of the burst-buffer pools (:func:`_layout`)
        self.layouts: dict = {}


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
    """``n`` compute nodes among ``free`` (``topo.nodes``): the first ``n``
    free ones in topology order, or the first cyclic run of consecutive free
    nodes, else the first ``n`` free ones.

    :returns: a list of resource ids (topology order) or None if ``len(free) < n``.
    """
    order = topo.order
    flags = [c in free for c in order]
    total = sum(flags)
    if total < n or n <= 0:
        return None if n > 0 else []
    return _pick(topo, order, flags, n)


def _pick(topo: Topology, order: list, flags: list, n: int) -> list:
    """The nodes :func:`choose_nodes` takes (``flags[i]``: ``order[i]`` is free)."""
    if topo.nodes == "first":
        return [c for c, f in zip(order, flags) if f][:n]
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
    """Give each node a storage node by proximity tier; within a tier the
    first with a free slot (``topo.storage_choice`` ``"first"``) or the one
    with the most free slots (``"most-free"``).

    :param slots: storage id -> burst buffers it can still hold (not modified).
    :returns: node -> storage id, or None if the slots do not suffice.
    """
    left = dict(slots)
    if sum(left.values()) < len(nodes):
        return None
    if topo.storage_choice == "first":
        return _assign_first(topo.pref, nodes, left)
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


def _assign_first(pref: Mapping[int, tuple], nodes: list, left: dict) -> Optional[dict]:
    """:func:`assign_bb` with the choice ``"first"`` (same answer): each node
    takes the first burst-buffer node of its preference order (``pref``)
    with a free slot. A run of consecutive nodes with the same preference
    order is served at once: its nodes take the slots of its first
    burst-buffer nodes one after the other, as node-by-node would.

    :param left: storage id -> free slots (modified).
    """
    out = {}
    i, N = 0, len(nodes)
    while i < N:
        pr = pref[nodes[i]]
        j = i + 1
        while j < N and pref[nodes[j]] is pr:
            j += 1
        for x in pr:
            a = left.get(x, 0)
            if a > 0:
                take = a if a < j - i else j - i
                for c in nodes[i:i + take]:
                    out[c] = x
                left[x] = a - take
                i += take
                if i == j:
                    break
        if i < j:
            return None
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


def _choose_mask(topo: Topology, mask: int, n: int) -> list:
    """:func:`choose_nodes` on a bit mask of free nodes (same answer)."""
    if n <= 0:
        return []
    cache = topo.cache
    key = (mask, n)
    hit = cache.get(key)
    if hit is None:
        order = topo.order
        hit = _pick(topo, order, [(mask >> c) & 1 for c in order], n)
        if len(cache) > 200000:
            cache.clear()
        cache[key] = hit
    return hit


class _Lazy:
    """A read-only sequence whose item ``k`` is ``f(k)`` (the profile's
    segments for :func:`_scan`, computed when read)."""

    __slots__ = ("f",)

    def __init__(self, f):
        self.f = f

    def __getitem__(self, k):
        return self.f(k)


def _lacks(mask: int, free_of, k: int, tols: list, n: int, bb: float) -> bool:
    """Whether segment ``k`` alone lacks ``n`` free nodes (``mask``, int bit
    mask) or ``n`` burst-buffer slots (``sum floor((free_of[k][x] + tols[x])
    / bb)``, bytes, counted up to ``n``; ``free_of[k]`` is read only when the
    nodes suffice). Then no window covering it fits (:func:`_scan`)."""
    if mask.bit_count() < n:
        return True
    tot = 0
    for f, tl in zip(free_of[k], tols):
        tot += (f + tl) // bb
        if tot >= n:
            return False
    return True


def _scan(topo: Topology, bbs: list, S: int, start_of, mask_of_seg, free_of, tols: list, n: int,
          bb: float, duration: float, only_at: bool = False, first: int = 0) -> tuple:
    """The candidate scan of :func:`earliest_placement` and of
    :class:`BurstBufferPlacer` on a profile or a timeline: segment ``k`` of
    ``S`` starts at ``start_of[k]`` (s; the first at the query time), has the
    free nodes ``mask_of_seg[k]`` (int bit mask) and the free bytes
    ``free_of[k]`` of each burst-buffer node in ``bbs`` order (the storage
    ids of ``topo.bbs`` in the plan's pool order; ``tols`` likewise). A segment
    that alone lacks nodes or burst-buffer slots rules out every window
    covering it. The candidates start at segment ``first`` (the caller
    knows that none before it fits).

    :returns: ``(t, Allocation)`` -- resources the nodes (topology order),
        pools ``{"bb:<id>": bytes}``, data ``{node: storage id}`` -- or
        ``(inf, None)``; allocations are memoised in ``topo.assign_cache``
        (shared: do not modify).
    """
    acache = topo.assign_cache
    bad = [None] * S
    # mask_of_seg[k], computed once per segment (a list is read as it is)
    seg_mask = mask_of_seg if type(mask_of_seg) is list else [None] * S
    i = first
    while i < S:
        # a segment that alone lacks nodes or burst-buffer slots is no start
        # (the window would fail on it): skip it before setting up a window
        b = bad[i]
        if b is None:
            mj = seg_mask[i]
            if mj is None:
                mj = seg_mask[i] = mask_of_seg[i]
            b = bad[i] = _lacks(mj, free_of, i, tols, n, bb)
        if b:
            if only_at:
                break
            i += 1
            continue
        t = start_of[i]
        end = t + duration
        j = i
        mask = -1
        mins = None
        fail = -1       # the segment whose inclusion made the window [i..] fail
        while j < S and (j == i or start_of[j] < end):
            b = bad[j]
            mj = seg_mask[j]
            if mj is None:
                mj = seg_mask[j] = mask_of_seg[j]
            if b is None:
                b = bad[j] = _lacks(mj, free_of, j, tols, n, bb)
            if b:
                fail = j
                break
            mask &= mj
            if mask.bit_count() < n:
                fail = j
                break
            fj = free_of[j]
            mins = list(fj) if mins is None else list(map(min, mins, fj))
            j += 1
        if fail < 0:
            slots = tuple([int((m + tl) // bb) for m, tl in zip(mins, tols)])
            if sum(slots) >= n:
                key = (mask, n, bb, slots)
                hit = acache.get(key, False)
                if hit is False:
                    nodes = _choose_mask(topo, mask, n)
                    bb_of = assign_bb(topo, nodes, dict(zip(bbs, slots)))
                    hit = None
                    if bb_of is not None:
                        hit = Allocation(nodes, {pool_name(x): b for x, b in bb_held(bb_of, bb).items()},
                                         data=bb_of)
                    if len(acache) > 200000:
                        acache.clear()
                    acache[key] = hit
                if hit is not None:
                    return t, hit
            fail = j - 1    # the whole window [i..j-1] lacks burst buffers
        if only_at:
            break
        if bad[fail]:
            i = fail + 1
            continue
        # Every candidate whose window holds the segments [k..fail] fails,
        # and the windows of the candidates i' in (i, k] all hold them (they
        # start no earlier than i's and reach past segment fail, which i's
        # window reached): walk back from fail to the largest such k.
        m2 = seg_mask[fail]
        mins2 = list(free_of[fail])
        k = fail
        while k > i:
            k -= 1
            m2 &= seg_mask[k]
            if m2.bit_count() < n:
                break
            mins2 = list(map(min, mins2, free_of[k]))
            if sum([(m + tl) // bb for m, tl in zip(mins2, tols)]) < n:
                break
        i = k + 1
    return INF, None


def _layout(topo: Topology, names: tuple) -> tuple:
    """``(bbs, pidx, whole)`` for a plan whose pools are ``names``: the
    burst-buffer storage ids in pool order, their pool positions, and whether
    they are all of the plan's pools in order (then a segment's pool tuple is
    used as is). Cached on the topology."""
    hit = topo.layouts.get(names)
    if hit is None:
        index = {name: i for i, name in enumerate(names)}
        ids = sorted(topo.bbs, key=lambda s: index[pool_name(s)])
        pidx = [index[pool_name(s)] for s in ids]
        hit = topo.layouts[names] = (ids, pidx, pidx == list(range(len(names))))
    return hit


def _scan_plan(plan, topo: Topology, n: int, bb: float, duration: float, after: float,
               only_at: bool) -> tuple:
    """:func:`_scan` on a profile or a :class:`~iosched.sched.timeline.Timeline`."""
    if isinstance(plan, Timeline):
        st, masks, free = plan.state()
        lay = plan.cache.get(topo)
        if lay is None:
            bbs, pidx, whole = _layout(topo, plan.pool_names)
            lay = plan.cache[topo] = (bbs, pidx, whole, [plan.tols[x] for x in pidx])
        bbs, pidx, whole, tols = lay
        if after == st[0] and whole:    # the list-scheduling hot path
            return _scan(topo, bbs, len(st), st, masks, free, tols, n, bb, duration, only_at)
        k0 = bisect_right(st, after) - 1 if after > st[0] else 0
        mask_of_seg = (lambda k: masks[k0 + k])
    else:
        after = plan.now if after is None else max(after, plan.now)
        st, masks, _counts, free, names, ptols = plan.raw_view(after)
        k0 = 0
        mask_of_seg = masks      # a list: read as it is
        bbs, pidx, whole = _layout(topo, names)
        tols = [ptols[x] for x in pidx]
    if whole:
        free_of = (lambda k: free[k0 + k])
    else:
        free_of = (lambda k: [free[k0 + k][x] for x in pidx])
    return _scan(topo, bbs, len(st) - k0, _Lazy(lambda k: after if k == 0 else st[k0 + k]),
                 mask_of_seg if type(mask_of_seg) is list else _Lazy(mask_of_seg),
                 _Lazy(free_of), tols, n, bb, duration, only_at)


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
    t, alloc = _scan_plan(profile, topo, n, bb, duration, after, only_at)
    return (t, None, None) if alloc is None else (t, alloc.resources, alloc.data)


def fit_at(profile: AvailabilityProfile, topo: Topology, n: int, bb: float, duration: float,
           t: float) -> Optional[tuple]:
    """Nodes and burst buffers for a request starting exactly at ``t``
    (same answer as :func:`window` + :func:`place`).

    :returns: ``(nodes ProcSet, {node: storage id})`` or None.
    """
    st, nodes, bb_of = earliest_placement(profile, topo, n, bb, duration, after=t, only_at=True)
    return None if nodes is None else (nodes, bb_of)


#: ``Timeline.cache`` key prefix of a request's earliest start on the
#: timeline's snapshot (:meth:`BurstBufferPlacer.earliest`)
_LOWER = "bb-earliest-on-snapshot"


class BurstBufferPlacer(Placer):
    """Compute nodes and, for each, a burst buffer of ``bb`` bytes on a
    storage node (the burst-buffer family's placement, see the module
    documentation). Jobs carry a :class:`~iosched.bb.model.JobRequest` as
    ``job.request``.

    :param capacity: bytes per burst-buffer node.
    :param pfs: host name of the parallel file system (a storage host, not a
        burst-buffer node).
    :param nodes: compute-node choice (:data:`NODE_CHOICES`).
    :param storage: burst-buffer node choice within a tier (:data:`STORAGE_CHOICES`).
    :raises InputError: an unknown choice.

    :meth:`begin` finds the PFS and the burst-buffer nodes and returns the
    pools ``bb:<storage id>``; allocations carry ``data`` = ``{compute node:
    storage id}``. A job asking no burst buffer (``bb`` 0: a job outside
    the family's model, read by the launcher as a plain request of nodes)
    gets compute nodes only, chosen the same way, and no ``data``.
    :meth:`fit_at` and :meth:`earliest` are the bit-mask scan
    (:func:`_scan`), which gives the answers of :meth:`fit` at every
    candidate time (property-tested in ``tests/test_bb_placement.py``).
    """

    def __init__(self, capacity: float, pfs: str = "pfs", nodes: str = "first",
                 storage: str = "first"):
        self.capacity, self.pfs_name = float(capacity), str(pfs)
        check_choices(nodes, storage)
        self.nodes, self.storage = nodes, storage
        self.topology: Optional[Topology] = None
        self.pfs: Optional[int] = None
        self.totals: dict = {}

    def begin(self, machine) -> dict:
        """Topology and pools of ``machine`` (a :class:`~iosched.sched.machine.Machine`).

        The burst-buffer nodes are the storage hosts other than the PFS and
        the nodes' local disks (``<node>_disk``,
        :data:`iosched.sched.ioplan.DISK_SUFFIX`).

        :raises InputError: no single storage host named ``pfs``, or no
            burst-buffer node besides it.
        """
        pfs = [i for i, n in machine.storage.items() if n == self.pfs_name]
        if len(pfs) != 1:
            raise InputError(f"the platform needs exactly one storage host named {self.pfs_name!r}")
        self.pfs = pfs[0]
        # a node's local disk (the core's naming, DISK_SUFFIX) is no burst-buffer node
        bbs = {i: n for i, n in machine.storage.items() if i != self.pfs and not n.endswith(DISK_SUFFIX)}
        if not bbs:
            raise InputError("the platform has no burst-buffer (storage) node besides the PFS")
        self.topology = Topology(machine.names, bbs, nodes=self.nodes, storage_choice=self.storage)
        self.totals = {pool_name(s): self.capacity for s in bbs}
        return dict(self.totals)

    def rejection_reason(self, job, profile) -> Optional[str]:
        """Jobs that can never fit: more nodes than the machine, ``bb`` larger
        than one burst-buffer node, more burst buffers than the machine holds
        (artifact ``alloc_only.py::_validate_job``)."""
        req: JobRequest = job.request
        ncomp = len(self.topology.compute)
        if req.nodes > ncomp:
            return f"requests {req.nodes} nodes, the machine has {ncomp}"
        if req.bb == 0:
            return None        # no burst buffer asked: compute nodes only
        if req.bb > self.capacity:
            return f"requests {req.bb:.0f} bytes per node, a burst-buffer node holds {self.capacity:.0f}"
        if req.nodes > int(self.capacity // req.bb) * len(self.topology.bbs):
            return "requests more burst buffers than the machine holds"
        return None

    def fit(self, job, window: Window) -> Optional[Allocation]:
        req: JobRequest = job.request
        got = place(self.topology, window.free, window.pools, req.nodes, req.bb, totals=self.totals,
                    use_bb=req.bb > 0)
        if got is None:
            return None
        nodes, bb_of = got
        if req.bb == 0:
            return Allocation(nodes, {})
        return Allocation(nodes, {pool_name(s): b for s, b in bb_held(bb_of, req.bb).items()}, data=bb_of)

    def fit_at(self, plan, job, t: float) -> Optional[Allocation]:
        """Nodes and burst buffers of ``job`` starting exactly at ``t`` (s)
        on ``plan`` (a profile or a timeline), or None.

        On a profile, a job that needs more nodes than are free at ``t`` is
        refused before the scan (in O(log B), :meth:`AvailabilityProfile.free_count`):
        the scan would refuse it on its first segment, and the backfill
        passes of EASY ask this of most waiting jobs.
        """
        req = job.request
        if type(plan) is AvailabilityProfile and plan.free_count(t) < req.nodes:
            return None
        if req.bb == 0:
            return super().fit_at(plan, job, t)
        return _scan_plan(plan, self.topology, req.nodes, req.bb, job.estimate, t, True)[1]

    def earliest(self, plan, job, after: float) -> tuple:
        """Earliest placement of ``job`` from ``after`` on ``plan`` (a
        profile or a :class:`~iosched.sched.timeline.Timeline`).

        On a timeline with pushed reservations, from ``now``, the scan
        starts at the request's earliest start on the timeline's snapshot
        (:meth:`~iosched.sched.timeline.Timeline.base`, computed once per
        request and timeline, in ``plan.cache``): whether a request fits
        depends only on how many nodes are free all along the window and on
        the burst-buffer slots (:func:`_choose_mask` and :func:`assign_bb`
        always succeed then), so reservations only delay it, and every
        earlier candidate fails (a start that fits inside a segment also
        fits at the segment's start). Same answer as the scan from ``now``.
        """
        req = job.request
        if req.bb == 0:     # no burst buffer asked: compute nodes only (the generic search)
            return super().earliest(plan, job, after)
        if type(plan) is Timeline:      # the list-scheduling hot path, inlined
            st, masks, free = plan.state()
            topo = self.topology
            lay = plan.cache.get(topo)
            if lay is not None and lay[2] and after == st[0]:
                n, bb, d = req.nodes, req.bb, job.estimate
                first = 0
                if len(plan):
                    key = (_LOWER, n, bb, d)
                    lb = plan.cache.get(key)
                    if lb is None:
                        b_st, b_masks, b_free = plan.base()
                        lb = plan.cache[key] = _scan(topo, lay[0], len(b_st), b_st, b_masks, b_free,
                                                     lay[3], n, bb, d)[0]
                    if lb == INF:
                        return INF, None
                    first = bisect_left(st, lb)
                return _scan(topo, lay[0], len(st), st, masks, free, lay[3], n, bb, d, False, first)
        return _scan_plan(plan, self.topology, req.nodes, req.bb, job.estimate, after, False)


class NodesOnlyPlacer(Placer):
    """Compute nodes only, chosen as :class:`BurstBufferPlacer` chooses them
    (:func:`choose_nodes`), burst buffers ignored: the head reservation of
    ``fcfs-easy`` (Kopanski & Rzadca, Section 3). Shares the topology of
    ``nodes_of`` (a :class:`BurstBufferPlacer`, set up at ``begin``)."""

    def __init__(self, nodes_of: BurstBufferPlacer):
        self.nodes_of = nodes_of

    def fit(self, job, window: Window) -> Optional[Allocation]:
        nodes = choose_nodes(self.nodes_of.topology, window.free, job.request.nodes)
        return None if nodes is None else Allocation(ProcSet(*nodes), {})
