"""The locality model's cluster state: nodes of cores that keep input files in memory.

Gonthier et al., "Locality-aware batch scheduling of I/O intensive
workloads" (Inria RR-9497, 2023), Section 3, with the exact semantics of
their artifact (userccgrid/Locality-aware-batch-scheduling, ``src/``):

* a node has ``m`` cores; each core has an *available time* (s, int): the
  end of the last reservation on it (``struct Core.available_time``); the
  cores of a node are kept sorted by (available time, core id), and a job
  of ``c`` cores planned on a node takes its ``c`` first cores
  (``sort_cores_by_available_time_in_specific_node``);
* a node keeps one :class:`Data` record per file it ever held, in insertion
  order (``struct Data``): ``load_end`` (the artifact's ``start_time``: when
  the current copy is fully loaded), ``end`` (the end of the last user, or
  the latest planned end of a running user), ``users`` (running jobs using
  it) and, during a planning pass, the *intervals* ``(start, start +
  load, end)`` at which planned jobs use it;
* **validity** (``add_data_in_node``): when a job starts at ``t``, the copy
  on its node is valid iff some running job uses it or its last user ended
  at this very second (``users > 0 or end == t``); else it is (re)loaded.
  The paper's reading (Section 3, case 2: reuse by consecutive jobs when no
  job started on the node in between) is available as ``cache_rule="paper"``:
  a copy also stays valid while no job of another file started on the node
  since its last user ended;
* memory capacity is never a limit (the artifact never evicts; the
  eviction penalty is only a score term).

This is the planner's scheduler-side model (the artifact's core-time
matrix and node memories), kept by :class:`iosched.locality.policy.LocalityPolicy`
beside the shared core's :class:`~iosched.sched.profile.AvailabilityProfile`:
the planner's decisions read its integer per-core available times and file
copies, which the profile does not model; the profile holds the cores of
the started jobs, as for every family.

Scores are computed with the artifact's C float (IEEE binary32) arithmetic
and truncated to int, because its tie-breaks depend on it (times are about
6e6 s on the Uppmax day, where binary32 steps are 0.5 s): see
:func:`load_time`, :func:`eviction_time`, :func:`score`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import attrgetter

import numpy as np

from iosched.errors import InputError, ProfileError

__all__ = ["Data", "Node", "Cluster", "LiveArrays", "doubled", "f32", "transfer_seconds", "load_time",
           "eviction_time", "score", "CACHE_RULES"]

f32 = np.float32

_ZERO = f32(0.0)

_seq = attrgetter("seq")

#: "Until displaced" end of a kept copy under the paper rule (s).
FOREVER = 2 ** 62

#: Cache validity rules: the artifact's (default) and the paper's reading.
CACHE_RULES = ("artifact", "paper")


def transfer_seconds(size_gb: float, bandwidth: float) -> int:
    """Seconds to load a file, as the artifact's ``add_data_in_node``:
    ``(int)(size / bandwidth)`` in binary32 (``size`` in GB, ``bandwidth``
    in GB/s; e.g. 128 GB at 0.1 GB/s -> 1280)."""
    return int(f32(size_gb) / f32(bandwidth))


class Data:
    """A file's record on one node (artifact ``struct Data``).

    ``id`` (file id, int > 0), ``size`` (GB, binary32), ``load_end`` (s:
    end of the current copy's load, -1 never loaded), ``end`` (s, see the
    module doc; -1 never used), ``users`` (running jobs using it), ``iv``
    (planning intervals, list of ``(start, load_end, end)``),
    ``foreign_since`` (paper rule: True once a job of another file started
    on the node after the last user ended).
    """

    __slots__ = ("id", "size", "load_end", "end", "users", "iv", "foreign_since", "node", "seq", "base",
                 "slot")

    _count = 0

    def __init__(self, fid: int, size, node: int = -1):
        self.id, self.size, self.node = fid, f32(size), node
        Data._count += 1
        self.seq = Data._count   # creation order = the node's data list order
        self.load_end, self.end, self.users = -1, -1, 0
        self.iv: list = []
        self.base = None     # the interval of the running state (reset_intervals), or None
        self.foreign_since = False
        self.slot = -1       # its slot in the node's row of LiveArrays while live (if kept)


class Node:
    """A node: ``index`` (position in the node list), ``cores`` (m),
    ``bandwidth`` (GB/s, binary32), ``memory`` (GB), ``free`` (cores not
    running a job: the artifact's ``n_available_cores``), ``order`` (core
    ids sorted by (available time, id)), ``avail`` (core id -> available
    time, s), ``running_end`` (core id -> ``start + walltime`` of the job
    running on it, or None), ``data`` (file id -> :class:`Data`, insertion
    order); ``row`` and ``orow``: its rows of the cluster's matrices
    ``A`` (the sorted available times) and ``O`` (:attr:`order`; None
    unless the cluster keeps it, :meth:`Cluster.keep_arrays`)."""

    __slots__ = ("index", "cores", "bandwidth", "memory", "free", "order", "avail",
                 "running_end", "data", "row", "live", "orow")

    def __init__(self, index: int, cores: int, bandwidth: float, memory: float):
        self.index, self.cores = index, cores
        self.bandwidth, self.memory = f32(bandwidth), memory
        self.free = cores
        self.avail = [0] * cores
        self.order = list(range(cores))
        self.running_end: list = [None] * cores
        self.data: dict = {}
        self.row = None
        self.orow = None
        self.live: dict = {}    # file id -> record with planning intervals

    def resort(self) -> None:
        """Sort the cores by (available time, id) (and refresh the
        cluster's matrix row of sorted available times)."""
        av = self.avail
        self.order = sorted(range(self.cores), key=av.__getitem__)   # stable: ties by id
        if self.row is not None:
            self.row[:] = sorted(av)
        if self.orow is not None:
            self.orow[:] = self.order

    def eat(self, c: int) -> int:
        """Time (s) at which ``c`` cores are available (the c-th smallest)."""
        return self.avail[self.order[c - 1]]


def load_time(node: Node, file_id: int, size, pt: int, t: int):
    """Load overhead of a file on ``node`` for a job starting at ``pt``
    (artifact ``is_my_file_on_node_at_certain_time_and_transfer_time``):
    0 if a planning interval ``(s, le, e)`` of the file has ``s <= pt``,
    ``le <= pt <= e``; ``le - t`` (note: from the current time ``t``) if
    ``s <= pt <= e`` but the load is not over; else ``size / bandwidth``
    (binary32, not truncated). Only the first interval containing ``pt``
    counts. Returns a binary32 number of seconds."""
    d = node.data.get(file_id)
    if d is not None and d.iv:
        for s, le, e in d.iv:
            if s <= pt and le <= pt <= e:
                return f32(0.0)
            if s <= pt <= e:
                return f32(le - t)
    return f32(size) / node.bandwidth


def eviction_time(node: Node, file_id: int, pt: int, cores: int, m: int = 20):
    """Eviction penalty (s, binary32) of placing a job of ``cores`` cores
    on ``node`` at ``pt`` (artifact
    ``time_to_reload_percentage_of_files_ended_at_certain_time``; paper
    Algorithm 3 line 7): the sizes of the other files whose last planning
    interval ends at or before ``pt``, times ``cores / m``, divided by the
    bandwidth."""
    recs = [d for d in node.live.values() if pt >= d.iv[-1][2] and d.id != file_id]
    if not recs:
        return _ZERO
    if len(recs) == 1:
        total = recs[0].size     # 0 + size, exactly
    else:
        recs.sort(key=_seq)      # the node's data list order (binary32 sums depend on it)
        total = _ZERO
        for d in recs:
            total = total + d.size   # binary32 + binary32: a binary32 sum in numpy
    pct = f32(cores) / f32(m)
    return f32(total * pct) / node.bandwidth


def score(eat: int, W: int, load, E: int, evict) -> int:
    """``(int)(eat + W*load + E*evict)`` in binary32, as the artifact's C
    expression (paper Algorithm 3 line 8, ``t_k + W*LoadOverhead +
    EvictionPenalty``)."""
    base = f32(f32(eat) + f32(f32(W) * f32(load)))
    return int(f32(base + f32(f32(E) * f32(evict))))


def doubled(a: np.ndarray, axis: int) -> np.ndarray:
    """A zero array like ``a`` with twice its length along ``axis``, ``a``
    copied in its first half (the growth of :class:`LiveArrays` and of the
    planner's hole arrays)."""
    shape = list(a.shape)
    n = shape[axis]
    shape[axis] = 2 * n
    b = np.zeros(shape, dtype=a.dtype)
    b[(slice(None),) * axis + (slice(0, n),)] = a
    return b


class LiveArrays:
    """The live records of every node (those with planning intervals,
    :attr:`Node.live`) in arrays, for the compiled passes
    (:mod:`iosched.locality.compiled`); kept by :class:`Cluster` once
    :meth:`Cluster.keep_arrays` is called, updated at each change (a record
    created, becoming live or not, an interval added, the intervals reset),
    never rebuilt; the compiled passes update them the same way.

    Row ``i`` is node ``i`` (``P`` nodes), with ``n[i]`` slots in use
    (in no particular order; a removed slot takes the last one):

    * ``meta``: int64 ``(P, K, 4)``: file id, the record's ``seq`` (the
      node's data-list order), number of intervals, end (s) of its last
      interval;
    * ``size``: binary32 ``(P, K)``: the file's size (GB);
    * ``iv``: int64 ``(P, K, J, 3)``: the intervals ``(start, load end,
      end)`` (s) in :attr:`Data.iv` order;
    * ``n``: int64 ``(P,)``;
    * ``fs``: int64 ``(F, P)``: ``fs[frow[f], i]`` is 1 + the slot of file
      ``f`` on node ``i``, 0 where it is not live (``frow``: file id -> row,
      given at the file's first record, live or not, or by :meth:`row`);
    * ``dseq``: int64 ``(F, P)`` and ``dsize``: binary32 ``(F, P)``: the
      ``seq`` and size (GB) of every record of file ``f`` on node ``i``,
      live or not (``dseq`` 0: no record).

    ``K``, ``J`` and ``F`` double when a node has more live records, a
    record more intervals or the rows more files than they hold (the arrays
    are then replaced: read them from this object at each use).
    """

    def __init__(self, P: int, K: int = 8, J: int = 8, F: int = 64):
        self.meta = np.zeros((P, K, 4), dtype=np.int64)
        self.size = np.zeros((P, K), dtype=f32)
        self.iv = np.zeros((P, K, J, 3), dtype=np.int64)
        self.n = np.zeros(P, dtype=np.int64)
        self.fs = np.zeros((F, P), dtype=np.int64)
        self.dseq = np.zeros((F, P), dtype=np.int64)
        self.dsize = np.zeros((F, P), dtype=f32)
        self.frow: dict = {}
        self.recs: list = [[] for _ in range(P)]   # node -> records in slot order

    def row(self, fid: int) -> int:
        """The row of file ``fid`` in ``fs``, ``dseq``, ``dsize`` (given now
        if it has none: the arrays may be replaced)."""
        r = self.frow.get(fid)
        if r is None:
            r = self.frow[fid] = len(self.frow)
            if r == self.fs.shape[0]:
                self.fs, self.dseq, self.dsize = (doubled(a, 0) for a in (self.fs, self.dseq, self.dsize))
        return r

    def record(self, d: Data) -> None:
        """Record ``d`` was created: its ``seq`` and size."""
        r = self.row(d.id)
        self.dseq[r, d.node] = d.seq
        self.dsize[r, d.node] = d.size

    def grow_slots(self) -> None:
        """Double ``K`` (the live records a node can hold)."""
        self.meta, self.size, self.iv = (doubled(a, 1) for a in (self.meta, self.size, self.iv))

    def add(self, d: Data) -> None:
        """Record ``d`` (not yet in its node's row) becomes live, with the
        intervals ``d.iv``."""
        i = d.node
        s = int(self.n[i])
        if s == self.meta.shape[1]:
            self.grow_slots()
        self.n[i] = s + 1
        self.recs[i].append(d)
        d.slot = s
        r = self.row(d.id)
        self.fs[r, i] = s + 1
        self.size[i, s] = d.size
        self.meta[i, s, :2] = (d.id, d.seq)
        self.set_iv(d)

    def set_iv(self, d: Data) -> None:
        """Write every interval of live record ``d``."""
        ivs = d.iv
        i, s = d.node, d.slot
        if len(ivs) == 1:
            self.iv[i, s, 0] = ivs[0]
            self.meta[i, s, 2:] = (1, ivs[0][2])
            return
        while len(ivs) > self.iv.shape[2]:
            self.grow_intervals()
        if ivs:
            self.iv[i, s, :len(ivs)] = ivs
        self.meta[i, s, 2:] = (len(ivs), ivs[-1][2] if ivs else 0)

    def append_iv(self, d: Data) -> None:
        """Write the last interval of live record ``d`` (just appended)."""
        i, s = d.node, d.slot
        q = len(d.iv) - 1
        if q == self.iv.shape[2]:
            self.grow_intervals()
        v = d.iv[q]
        self.iv[i, s, q] = v
        meta = self.meta[i, s]
        meta[2] = q + 1
        meta[3] = v[2]

    def remove(self, d: Data) -> None:
        """Record ``d`` is no longer live (the last slot of its row takes its slot)."""
        i, s = d.node, d.slot
        last = int(self.n[i]) - 1
        recs = self.recs[i]
        if s != last:
            o = recs[last]
            self.meta[i, s] = self.meta[i, last]
            self.size[i, s] = self.size[i, last]
            self.iv[i, s] = self.iv[i, last]
            recs[s] = o
            o.slot = s
            self.fs[self.frow[o.id], i] = s + 1
        self.fs[self.frow[d.id], i] = 0
        recs.pop()
        self.n[i] = last
        d.slot = -1

    def grow_intervals(self) -> None:
        """Double ``J`` (the intervals a record can hold)."""
        self.iv = doubled(self.iv, 2)


class Cluster:
    """Nodes, running-node count and the data rules of the locality model.

    :param nodes: number of nodes; :param cores: cores per node;
    :param bandwidth: GB/s per node; :param memory: GB per node;
    :param cache_rule: ``"artifact"`` or ``"paper"`` (module doc).
    :raises InputError: bad sizes or unknown cache rule.

    Attributes: ``nodes`` (list of :class:`Node`), ``m`` (cores per node),
    ``nb_cores``, ``running_nodes`` (nodes running at least one job),
    ``live`` (records with planning intervals, for the reset).
    """

    def __init__(self, nodes: int = 486, cores: int = 20, bandwidth: float = 0.1,
                 memory: float = 128.0, cache_rule: str = "artifact"):
        if int(nodes) < 1 or int(cores) < 1 or not bandwidth > 0:
            raise InputError(f"locality cluster: nodes={nodes}, cores={cores}, bandwidth={bandwidth} must be positive")
        if cache_rule not in CACHE_RULES:
            raise InputError(f"cache_rule={cache_rule!r} is unknown; expected one of {', '.join(CACHE_RULES)}")
        self.m = int(cores)
        self.nodes = [Node(i, self.m, bandwidth, memory) for i in range(int(nodes))]
        #: sorted core available times, one row per node (s)
        self.A = np.zeros((len(self.nodes), self.m), dtype=np.int64)
        for n in self.nodes:
            n.row = self.A[n.index]
        self.nb_cores = self.m * len(self.nodes)
        self.running_nodes = 0
        self.busy_cores = 0         # cores running a job
        self.dirty: set = set()     # nodes whose cores changed since the last reset
        self.cache_rule = cache_rule
        self.live: set = set()      # records with planning intervals
        self._used: set = set()     # records with users > 0
        self._ended: list = []      # (time, record) whose last user ended
        self.by_file: dict = {}     # file id -> {node index: record} with planning intervals
        self._based: set = set()    # records with a running-state interval (Data.base)
        self._touched: set = set()  # records given planned intervals since the last reset
        self._changed: set = set()  # records started or ended since the last reset
        self.arrays = None          # LiveArrays, once keep_arrays is called
        self.O = None               # the cores' order, one row per node (keep_arrays)

    def keep_arrays(self, order: bool = False) -> LiveArrays:
        """Keep the records in a :class:`LiveArrays` (:attr:`arrays`) from
        now on, for :mod:`iosched.locality.compiled`, and with ``order``
        the cores' order in the matrix ``O`` (int64 ``(P, m)``, row ``i``
        is node ``i``'s :attr:`Node.order`); returns the arrays. Built once
        from the current state, then updated incrementally."""
        if self.arrays is None:
            self.arrays = LiveArrays(len(self.nodes))
            for n in self.nodes:
                for d in n.data.values():
                    self.arrays.record(d)
                for d in n.live.values():
                    self.arrays.add(d)
        if order and self.O is None:
            self.O = np.array([n.order for n in self.nodes], dtype=np.int64).reshape(len(self.nodes), self.m)
            for n in self.nodes:
                n.orow = self.O[n.index]
        return self.arrays

    # ------------------------------------------------------------- planning
    def holders(self, file_id: int):
        """Indexes of the nodes where ``file_id`` has planning intervals
        (elsewhere its load time is the full ``size / bandwidth``)."""
        return self.by_file.get(file_id, {})

    def _record(self, node: Node, file_id: int, size) -> Data:
        d = node.data[file_id] = Data(file_id, size, node.index)
        if self.arrays is not None:
            self.arrays.record(d)
        return d

    def _live(self, d: Data, node_index: int) -> bool:
        """``d`` has planning intervals (``d.iv``); returns whether it was
        not live before (then its intervals are in :attr:`arrays`)."""
        self.live.add(d)
        self.by_file.setdefault(d.id, {})[node_index] = d
        live = self.nodes[node_index].live
        if d.id in live:
            return False
        live[d.id] = d
        if self.arrays is not None:
            self.arrays.add(d)
        return True

    def _unlive(self, d: Data) -> None:
        self.live.discard(d)
        self.by_file[d.id].pop(d.node, None)
        if self.nodes[d.node].live.pop(d.id, None) is not None and self.arrays is not None:
            self.arrays.remove(d)

    def non_available(self, t: int) -> int:
        """Cores whose available time is after ``t`` (``get_nb_non_available_cores``)."""
        return int(np.count_nonzero(self.A > t))

    def reset_cores(self, t: int) -> None:
        """Every core available at ``t``, or at the planned end of the job
        running on it (``reset_cores``).

        Only the nodes touched since the last reset are rebuilt: on the
        others, the free cores keep the (earlier) time of that reset, which
        orders, compares and counts exactly as ``t`` would (every test is
        ``<= t`` or clipped to ``t``) and running cores are unchanged."""
        dirty, self.dirty = self.dirty, set()
        for i in dirty:
            n = self.nodes[i]
            if n.free == n.cores:
                n.avail = [t] * n.cores
                n.order = list(range(n.cores))
                n.row[:] = t
                if n.orow is not None:
                    n.orow[:] = n.order
                continue
            re = n.running_end
            n.avail = [t if re[k] is None else re[k] for k in range(n.cores)]
            n.resort()

    def reset_intervals(self, t: int) -> None:
        """Planning intervals from the running state (``get_current_intervals``):
        ``(t, max(t, load_end), end)`` for a file in use, ``(t, t, t)`` for a
        file whose last user ended at ``t`` (and, with the paper rule, for a
        file not displaced since), none otherwise.

        Incremental: the planned intervals of the last pass are dropped, and
        only the records that started, ended or entered/left the running
        state since the last reset get a new interval. A file in use that
        did not change keeps ``(t0, max(t0, load_end), end)`` of an earlier
        reset ``t0 <= t``, which answers every question asked at ``pt >= t``
        (:func:`load_time`, :func:`eviction_time`, :meth:`Planner._base`)
        exactly as the interval built at ``t``."""
        keep = []
        ended = set()
        for te, d in self._ended:
            if d.users:
                continue
            if self.cache_rule == "paper":
                if d.foreign_since:
                    continue
            elif te < t:
                continue
            keep.append((te, d))
            ended.add(d)
        self._ended = keep
        now = self._used | ended
        for d in self._touched:
            if d.base is None:
                d.iv = []
                self._unlive(d)
            else:
                d.iv = [d.base]
                if self.arrays is not None:
                    self.arrays.set_iv(d)
        self._touched = set()
        for d in self._based - now:
            d.base = None
            d.iv = []
            self._unlive(d)
        for d in (now - self._based) | (self._changed & now) | ended:
            if d.users:
                d.base = (t, t if d.load_end < t else d.load_end, d.end)
            else:
                d.base = (t, t, t if self.cache_rule == "artifact" else FOREVER)
            d.iv = [d.base]
            if not self._live(d, d.node) and self.arrays is not None:
                self.arrays.set_iv(d)
        self._based = now
        self._changed = set()

    def place(self, node: Node, start: int, walltime: int, cores: int, t: int) -> tuple:
        """Reserve ``cores`` first cores of ``node`` on ``[start, start +
        walltime)``; returns ``(core ids, cores that were available at t)``.

        The cores keep their (available time, id) order without a full
        sort: the taken cores all become available at ``start + walltime``
        and are merged into the others, which stay sorted (as
        :meth:`Node.resort` would order them)."""
        order, av = node.order, node.avail
        ids = order[:cores]
        self.dirty.add(node.index)
        newly = 0
        end = start + walltime
        for k in ids:
            if av[k] <= t:
                newly += 1
            av[k] = end
        rest = order[cores:]
        g = av.__getitem__
        p = bisect_right(rest, end, key=g)
        q = bisect_left(rest, end, 0, p, key=g)
        taken = sorted(ids)
        if q == p:
            node.order = rest[:p] + taken + rest[p:]
        else:   # cores already available at `end`: ties by id
            node.order = rest[:q] + sorted(rest[q:p] + taken) + rest[p:]
        row = node.row
        if row is not None:
            row[:p] = row[cores:cores + p]
            row[p:p + cores] = end
        if node.orow is not None:
            node.orow[:] = node.order
        return ids, newly

    def plan_interval(self, node: Node, file_id: int, size, start: int, load: int, end: int) -> None:
        """Record that a planned job uses ``file_id`` on ``node`` on
        ``(start, start + load, end)`` (creating the record if needed)."""
        if not file_id:
            return
        d = node.data.get(file_id)
        if d is None:
            d = self._record(node, file_id, size)
        d.iv.append((start, start + load, end))
        self._touched.add(d)
        if not self._live(d, node.index) and self.arrays is not None:
            self.arrays.append_iv(d)

    # -------------------------------------------------------------- running
    def start(self, node: Node, cores: list, file_id: int, size, t: int, planned_end: int) -> tuple:
        """A job starts at ``t`` on ``cores`` of ``node`` (``start_jobs`` and
        ``add_data_in_node``); returns ``(transfer, waiting)`` in s: the load
        it makes, or the time it waits for another job's load to end (one of
        them is 0)."""
        for k in cores:
            if node.running_end[k] is not None:
                raise ProfileError(f"locality: core {k} of node {node.index} already runs a job at t={t}")
        transfer = waiting = 0
        if file_id:
            d = node.data.get(file_id)
            if d is None:
                d = self._record(node, file_id, size)
                valid = False
            elif d.users > 0 or d.end == t:
                valid = True
            elif self.cache_rule == "paper" and d.end >= 0 and d.load_end >= 0 and not d.foreign_since:
                valid = True
            else:
                valid = False
            if valid and d.load_end > t:
                waiting = d.load_end - t
            elif not valid:
                transfer = transfer_seconds(d.size, node.bandwidth)
                d.load_end = t + transfer
            d.users += 1
            self._used.add(d)
            self._changed.add(d)
            if d.end < planned_end:
                d.end = planned_end
            d.foreign_since = False
            if self.cache_rule == "paper":
                for o in node.data.values():
                    if o is not d and o.users == 0:
                        o.foreign_since = True
        self.dirty.add(node.index)
        if node.free == node.cores:
            self.running_nodes += 1
        node.free -= len(cores)
        self.busy_cores += len(cores)
        for k in cores:
            node.running_end[k] = planned_end
        return transfer, waiting

    def end(self, node: Node, cores: list, file_id: int, t: int) -> None:
        """A job ends at ``t`` (``end_jobs`` and ``remove_data_from_node``)."""
        self.dirty.add(node.index)
        node.free += len(cores)
        self.busy_cores -= len(cores)
        if node.free == node.cores:
            self.running_nodes -= 1
        for k in cores:
            node.running_end[k] = None
        if file_id:
            d = node.data[file_id]
            self._changed.add(d)
            d.users -= 1
            if d.users == 0:
                d.end = t
                self._used.discard(d)
                self._ended.append((t, d))
