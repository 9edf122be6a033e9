"""Dispatchers of Li & Tatebe (IEEE Systems Journal 2017) on the shared
scheduler core (:mod:`iosched.sched`).

A task asks ``nb_res`` task slots (core resources) on *one* node (Torque's
``nodes=1:ppn=nb_res``).  A node is *free* when it has ``nb_res`` free slots
now; its normalized *load* is its busy slots over its slots, at the time of
the decision (the simulation's stand-in for the CPU load average of
``pbs_mom``, which lags by its 1-minute damping in a real Torque).

* :class:`TorqueFifo` -- the stock ``pbs_sched`` FIFO: one queue in
  submission order (queues are ignored); each task goes to the free node
  with the lowest load (ties: lowest node); the queue stops at the first
  task that no node can take (Section III-A, V).
* :class:`DataAwareDispatch` -- Algorithm 1 (DATAAWAREDISPATCH) with
  Section IV-B/C: Score of equation 2, local threshold ``lShold``, delay
  scheduling with wait limit ``wLimit`` (the task's ``wTime`` counts the
  scheduling passes, at distinct times, that delayed it), no wait when no
  busy node would be local for the task (``ifWait``), and scheduling by
  queue: one task of each queue in turn (interleaving), and only the head of
  a queue is judged -- a queue whose head is delayed or finds no free node
  waits for the next pass.
  ``variant="ds"`` is delay scheduling alone (Zaharia et al., EuroSys 2010,
  as the paper's Section IV-B applies it): the Score is the file locality
  alone (beta = 1) and a task that reads data and is not local to any free
  node always waits up to ``wLimit`` passes, even when no node could ever be
  local (the "redundant wait time" DAD removes).

While a task is delayed the dispatcher asks to be called again ``cycle``
seconds later (``pbs_sched``'s ``scheduler_iteration``), so that a delayed
task is retried even when no other event happens.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from iosched.dad.model import DISK_SUFFIX, file_locality, score
from iosched.sched.placer import Allocation, Placer
from iosched.sched.profile import lowest_ids
from iosched.sched.timeline import mask_of, procset_of_mask

__all__ = ["NodePlacer", "TorqueFifo", "DataAwareDispatch", "Decision"]


class Decision:
    """One dispatch decision, for statistics: ``time`` (s), ``job`` (id),
    ``node`` (name or None), ``kind`` (``"local"``, ``"remote"``,
    ``"delayed"``, ``"no-free-node"``), ``locality`` (fileLocality on the
    chosen node, or None), ``seconds`` (wall-clock time of the decision)."""

    __slots__ = ("time", "job", "node", "kind", "locality", "seconds")

    def __init__(self, time, job, node, kind, locality, seconds):
        self.time, self.job, self.node, self.kind = time, job, node, kind
        self.locality, self.seconds = locality, seconds

    def as_dict(self) -> dict:
        """The decision as a JSON-ready dict."""
        return {k: getattr(self, k) for k in self.__slots__}


class NodePlacer(Placer):
    """``nb_res`` slots on one node: the lowest free slot ids of the first
    node (lowest resource ids first) with enough free slots in the window.

    The dispatchers choose the node themselves (:meth:`on_node`); :meth:`fit`
    is the generic single-node fit the core's helpers use.  Also checks at
    submission that the task can ever run (:meth:`rejection_reason`): at most
    the slots of the largest node, replicas on known nodes, and sets the
    node -> disk mapping at SIMULATION_BEGINS (:meth:`begin`).
    """

    def __init__(self):
        self.nodes = []           # Machine nodes
        self.masks = []           # bit mask of each node's slots
        self.index = {}           # node name -> position
        self.disks = {}           # node name -> storage resource id of its disk

    def begin(self, machine) -> dict:
        """Index the machine's nodes and their disks (storage resources named
        ``<node>_disk``); no pool."""
        self.nodes = list(machine.nodes)
        self.masks = [mask_of(n.resources) for n in self.nodes]
        self.index = {n.name: i for i, n in enumerate(self.nodes)}
        self.disks = {name[:-len(DISK_SUFFIX)]: rid for rid, name in machine.storage.items()
                      if name.endswith(DISK_SUFFIX)}
        return {}

    def rejection_reason(self, job, profile):
        """Why the task can never run: bad slot count, more slots than any
        node has, or a file replica on an unknown node or a node without a
        disk."""
        reason = super().rejection_reason(job, profile)
        if reason is not None:
            return reason
        biggest = max((n.cores for n in self.nodes), default=0)
        if job.nb_res > biggest:
            return f"requests {job.nb_res} slots but the largest node has {biggest}"
        for f in job.request.files:
            for r in f.replicas:
                if r not in self.index:
                    return f"file {f.name!r}: replica on unknown node {r!r}"
                if r not in self.disks:
                    return f"file {f.name!r}: node {r!r} has no disk (storage host {r}_disk)"
        return None

    def free_slots(self, free_mask: int) -> list:
        """Free slots of every node (ints), given the free slots ``free_mask``
        (int bit mask)."""
        return [(free_mask & m).bit_count() for m in self.masks]

    def on_node(self, job, i: int, free_mask: int):
        """The allocation of ``job`` on node ``i`` (its lowest free slots;
        ``data`` = the node's name) given the free slots ``free_mask`` (int bit
        mask), or None if the node lacks free slots."""
        m = free_mask & self.masks[i]
        if m.bit_count() < job.nb_res:
            return None
        return Allocation(lowest_ids(procset_of_mask(m), job.nb_res), job.pools,
                          data=self.nodes[i].name)

    def fit(self, job, window):
        """The first node (lowest resource ids) with ``job.nb_res`` free slots
        in ``window``: its lowest free slots, or None."""
        for i in range(len(self.nodes)):
            alloc = self.on_node(job, i, window.mask)
            if alloc is not None:
                return alloc
        return None

    def loads(self, free_slots: list) -> list:
        """Normalized load of every node: busy slots / slots (floats in [0,
        1]), given :meth:`free_slots`."""
        return [1.0 - f / n.cores for f, n in zip(free_slots, self.nodes)]


def _free_mask(s, now) -> int:
    return s.profile.free_mask(now)


class TorqueFifo:
    """The stock Torque FIFO dispatcher (see the module documentation).

    Attribute ``decisions``: list of :class:`Decision` (when ``record``).
    """

    def __init__(self, record: bool = True):
        self.record = record
        self.decisions: list = []

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``: FIFO, lowest load."""
        placer = s.placer
        free = _free_mask(s, now)
        slots = placer.free_slots(free)
        for job in s.queue:
            t0 = time.perf_counter()
            loads = placer.loads(slots)
            best = min((i for i, n in enumerate(slots) if n >= job.nb_res),
                       key=lambda i: (loads[i], i), default=None)
            if best is None:
                if self.record:
                    self.decisions.append(Decision(now, job.id, None, "no-free-node", None,
                                                   time.perf_counter() - t0))
                return
            alloc = placer.on_node(job, best, free)
            name = placer.nodes[best].name
            loc = file_locality(job.request.files, name)
            if self.record:
                self.decisions.append(Decision(now, job.id, name, "local" if loc < 0.5 else "remote",
                                               loc, time.perf_counter() - t0))
            free &= ~alloc.mask
            slots[best] -= job.nb_res
            s.start(job, now, alloc)


class DataAwareDispatch:
    """DAD (Algorithm 1) or delay scheduling alone (see the module documentation).

    :param beta: weight of fileLocality in the Score, 0 <= beta <= 1 (paper's
        best case 0.8; forced to 1 for ``variant="ds"``).
    :param w_limit: ``wLimit``, the most scheduling passes a task is delayed
        (int >= 0; paper's best case 2).
    :param l_shold: ``lShold``, a free node whose Score is below it is local
        (default 0.5: our choice, the paper gives no value).
    :param variant: ``"dad"`` or ``"ds"``.
    :param interleave: scheduling by queue with interleaving (Section IV-C,
        V-C); False: one FIFO queue, as Torque.
    :param cycle: seconds after which a pass is requested while a task is
        delayed (> 0).

    Attributes: ``decisions`` (list of :class:`Decision`), ``wtime`` (job id
    -> passes it was delayed).
    """

    def __init__(self, beta: float = 0.8, w_limit: int = 2, l_shold: float = 0.5,
                 variant: str = "dad", interleave: bool = True, cycle: float = 600.0,
                 record: bool = True):
        if variant not in ("dad", "ds"):
            raise ValueError(f"variant {variant!r}: expected dad or ds")
        self.beta = 1.0 if variant == "ds" else float(beta)
        self.w_limit, self.l_shold, self.variant = int(w_limit), float(l_shold), variant
        self.interleave, self.cycle, self.record = interleave, float(cycle), record
        self.decisions: list = []
        self.wtime: dict = {}
        self._last_try: dict = {}

    def dispatch(self, s, job, free: int, slots: list, now: float):
        """DATAAWAREDISPATCH(job) (Algorithm 1, lines 19-50).

        :param free: bit mask of the free slots now.
        :param slots: free slots of each node (:meth:`NodePlacer.free_slots`).
        :returns: ``(allocation or None, kind, fileLocality of the chosen
            node or None)``; kind is ``"local"``, ``"remote"``, ``"delayed"``
            or ``"no-free-node"``.
        """
        placer = s.placer
        files = job.request.files
        # plain delay scheduling waits for any task that reads data
        if_wait = self.variant == "ds" and any(f.size > 0 for f in files)
        min_score, p_node, g_node, p_loc = float("inf"), None, None, None
        loads = placer.loads(slots)
        need = job.nb_res
        for i, node in enumerate(placer.nodes):
            loc = file_locality(files, node.name)
            sc = score(loc, loads[i], self.beta)
            if slots[i] < need:                      # h is not free
                if sc < self.l_shold:
                    if_wait = True
            elif sc < min_score:
                p_node, min_score, p_loc = i, sc, loc
                if sc < self.l_shold:
                    g_node = i
        if p_node is None:
            return None, "no-free-node", None
        if g_node is not None:
            return placer.on_node(job, g_node, free), "local", p_loc
        w = self.wtime.get(job.id, 0)
        if w < self.w_limit and if_wait:
            if self._last_try.get(job.id) != now:   # one attempt per distinct time
                self._last_try[job.id] = now
                self.wtime[job.id] = w + 1
            return None, "delayed", None
        return placer.on_node(job, p_node, free), "remote", p_loc

    def _queues(self, s) -> list:
        """The waiting tasks by queue, each list in queue order, none empty:
        one list (the whole queue) without interleaving."""
        if not self.interleave:
            return [s.queue] if len(s) else []
        by_q: OrderedDict = OrderedDict()
        for job in s.queue:          # queues in order of their oldest waiting task
            by_q.setdefault(job.request.queue, []).append(job)
        return list(by_q.values())

    def schedule(self, s, now: float) -> None:
        """One pass at ``now`` (s) on the core ``s``: interleave the queues,
        one head task per queue per round, until every queue's head waits."""
        free = _free_mask(s, now)
        slots = s.placer.free_slots(free)
        queues = [list(reversed(q)) for q in self._queues(s)]   # pop() gives the head
        delayed = False
        while queues:
            nxt = []
            for q in queues:
                job = q[-1]
                t0 = time.perf_counter()
                alloc, kind, loc = self.dispatch(s, job, free, slots, now)
                if self.record:
                    self.decisions.append(Decision(now, job.id, alloc.data if alloc else None, kind, loc,
                                                   time.perf_counter() - t0))
                if alloc is None:
                    delayed |= kind == "delayed"
                    continue                   # this queue waits for the next pass
                q.pop()
                free &= ~alloc.mask
                slots[s.placer.index[alloc.data]] -= job.nb_res
                self._last_try.pop(job.id, None)
                s.start(job, now, alloc)
                if q:
                    nxt.append(q)
            queues = nxt
        if delayed:
            s.wake_up_at(now + self.cycle, now)
