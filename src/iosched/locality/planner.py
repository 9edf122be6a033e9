"""The ten locality policies: one planning pass over a list of waiting jobs.

Gonthier et al. (Inria RR-9497, 2023), Section 4: FCFS (Algorithm 1), EFT
(Algorithm 2), LEA (Algorithm 3), LEO (Algorithm 4), LEM (Algorithm 5) and
their conservative-backfilling variants (Section 4.3, line 3'), with the
semantics of the artifact (``src/scheduler.c``, ``basic_functions.c``,
``backfill_functions.c``):

* a pass plans the jobs in list order while some core is still available at
  ``t`` (``nb_non_available_cores < nb_cores``); the others stay unplanned
  (start -1) until the next pass;
* a job goes on the node of smallest score, the first in node order on
  ties; ``t_k`` is when ``Cores(J)`` cores are available (the c-th smallest
  core available time, at least ``t``); scores (``cluster.score``):
  EFT ``t_k + load`` (W=1, E=0), LEA ``t_k + W*load + E*evict``;
  LEO switches to EFT's weights from the first node (in node order) where
  ``t_k == t`` on (the artifact keeps the switched weights for the following
  nodes of that job; ``leo_rule="paper"`` applies EFT's score to exactly
  the nodes with ``t_k == t``); LEM uses EFT's weights while
  ``100*running_nodes // P`` is below the threshold (nodes running a job,
  counting the nodes this pass starts now), LEA's above;
* FCFS takes the node of smallest ``t_k`` (first on ties) and ignores files;
* -bf variants (``backfill_functions.c``): a job is placed either at its
  node's tail time ``t_k`` (on the lowest-id cores available by then; the
  cores free at ``t`` that it reserves for later become a *hole* that starts
  at its start) or, at ``t``, in a hole long enough (``t + walltime <=``
  the hole's start) plus cores free at ``t``; both placements are scored
  and the smallest score wins. After every core is taken at ``t``, later
  jobs are only tried in holes.

The planner mutates the :class:`~iosched.locality.cluster.Cluster` (core
available times, planning intervals) and the jobs (``start``, ``node``,
``cores_used``, ``planned_load``).
"""

from __future__ import annotations

import numpy as np

from iosched.errors import InputError
from iosched.locality.cluster import Cluster, eviction_time, f32, load_time

__all__ = ["POLICIES", "Planner", "LJob"]

#: The paper's policy names.
POLICIES = ("fcfs", "eft", "lea", "leo", "lem", "fcfs-bf", "eft-bf", "lea-bf", "leo-bf", "lem-bf")


class LJob:
    """A job of the locality model (times in s, ints as in the artifact).

    ``id`` (str), ``subtime``, ``delay`` (actual duration), ``walltime``,
    ``cores``, ``file`` (int > 0, 0 = none), ``size`` (GB), ``role``
    (-2 history, -1 queued before day 0, 0 warm-up, 1 evaluated, 2 next
    day), ``hist_start``/``hist_node`` (history jobs). Planning state:
    ``start`` (-1 unplanned), ``node`` (a :class:`~iosched.locality.cluster.Node`),
    ``cores_used``, ``planned_load``. Run results: ``transfer``, ``waiting``
    (s), ``end``.
    """

    __slots__ = ("id", "subtime", "delay", "walltime", "cores", "file", "size", "role",
                 "hist_start", "hist_node", "start", "node", "cores_used", "planned_load",
                 "transfer", "waiting", "end", "seq", "batsim")

    def __init__(self, id, subtime, delay, walltime, cores, file, size, role=1,
                 hist_start=-1, hist_node=-1, seq=0):
        self.id, self.subtime, self.delay, self.walltime = id, int(subtime), int(delay), int(walltime)
        self.cores, self.file, self.size, self.role = int(cores), int(file), f32(size), int(role)
        self.hist_start, self.hist_node, self.seq = int(hist_start), int(hist_node), seq
        self.start, self.node, self.cores_used, self.planned_load = -1, None, [], 0
        self.transfer = self.waiting = 0
        self.end = None
        self.batsim = None


class Planner:
    """One policy's planning passes on a cluster.

    :param cluster: the :class:`~iosched.locality.cluster.Cluster`.
    :param policy: one of :data:`POLICIES`.
    :param W: load weight of LEA/LEO/LEM (paper: 500).
    :param E: eviction weight (paper: 1).
    :param threshold: LEM's busy threshold, percent of nodes (paper: 80).
    :param leo_rule: ``"artifact"`` (default) or ``"paper"`` (module doc).
    :raises InputError: unknown policy or rule, negative weights.
    """

    def __init__(self, cluster: Cluster, policy: str, W: float = 500, E: float = 1,
                 threshold: float = 80, leo_rule: str = "artifact"):
        if policy not in POLICIES:
            raise InputError(f"policy={policy!r} is unknown; expected one of {', '.join(POLICIES)}")
        if leo_rule not in ("artifact", "paper"):
            raise InputError(f"leo_rule={leo_rule!r} is unknown; expected artifact or paper")
        if not (W >= 0 and E >= 0 and 0 <= threshold <= 100):
            raise InputError(f"W={W}, E={E}, threshold={threshold}: need W, E >= 0 and 0 <= threshold <= 100")
        self.c = cluster
        self.policy = policy
        self.base = policy[:-3] if policy.endswith("-bf") else policy
        self.bf = policy.endswith("-bf")
        self.W, self.E, self.threshold = W, E, threshold
        self.leo_rule = leo_rule
        P = len(cluster.nodes)
        self.P = P
        self.holes = [[] for _ in range(P)]   # per node: [(hole start, core id)], artifact order
        self.now_busy = 0                      # cores taken at t in the plan (bf)
        self.biggest, self.biggest_id = 0, 0   # artifact's biggest_hole / biggest_hole_unique_id
        self._holed: set = set()               # nodes with holes
        self.decisions = 0
        self._wcache: dict = {}

    # ------------------------------------------------------------ public
    def reset(self, t: int) -> None:
        """Full re-plan: cores back to their running state (``reset_cores``)."""
        self.c.reset_cores(t)
        for i in self._holed:
            self.holes[i] = []
        self._holed = set()
        self.now_busy = 0
        self.biggest = 0

    def plan(self, jobs: list, t: int) -> list:
        """Plan ``jobs`` (in order) at ``t``; returns the planned ones."""
        c = self.c
        nna = c.non_available(t)
        if self.base != "fcfs":
            c.reset_intervals(t)
        running = c.running_nodes
        done = []
        if self.bf:
            busy_t = self.now_busy
        it = iter(jobs)
        for j in it:
            if nna < c.nb_cores:
                self.decisions += 1
                W, E = self._weights(running)
                if self.bf:
                    nna, busy_t, running = self._place_bf(j, t, W, E, nna, busy_t, running)
                else:
                    nna, running = self._place(j, t, W, E, nna, running)
                done.append(j)
            elif self.bf and busy_t < c.nb_cores:
                if j.cores > self.biggest:
                    j.start = -1
                    continue
                self.decisions += 1
                W, E = self._weights(running)
                ok, busy_t = self._backfill_only(j, t, W, E, busy_t)
                if ok:
                    done.append(j)
                else:
                    j.start = -1
            else:
                j.start = -1
                for rest in it:
                    rest.start = -1
                break
        if self.bf:
            self.now_busy = busy_t
        return done

    # ------------------------------------------------------------ scoring
    def _weights(self, running: int) -> tuple:
        b = self.base
        if b == "fcfs":
            return 0, 0
        if b == "eft":
            return 1, 0
        if b == "lem" and (running * 100) // self.P < self.threshold:
            return 1, 0
        return self.W, self.E

    def _eats(self, j, t):
        return np.maximum(self.c.A[:, j.cores - 1], t)

    def _best(self, j, t, eat, W, E, extra=None):
        """First node of smallest score; ``extra`` (bf): node index -> a
        backfill at ``t`` in a hole. Returns ``(index, start, load, in_hole)``."""
        nodes = self.c.nodes
        if self.base == "fcfs":
            if extra:
                # the artifact stops at the first node that starts the job now, in a hole or not
                for k in range(self.P):
                    if eat[k] == t:
                        return k, t, 0, False
                    if k in extra:
                        return k, t, 0, True
            i = int(np.argmin(eat))
            return i, int(eat[i]), 0, False
        P = self.P
        key = (W, E)
        if key not in self._wcache:
            self._wcache[key] = (np.full(P, float(W), dtype=f32), np.full(P, float(E), dtype=f32))
        Wv, Ev = self._wcache[key]
        if self.base == "leo":
            Wv, Ev = Wv.copy(), Ev.copy()
            now = np.flatnonzero(eat == t)
            if now.size:
                if self.leo_rule == "artifact":
                    Wv[now[0]:] = 1
                    Ev[now[0]:] = 0
                else:
                    Wv[now] = 1
                    Ev[now] = 0
        load = np.full(P, f32(j.size) / nodes[0].bandwidth, dtype=f32)
        if j.file:
            # load_time() inlined: a value stored in the binary32 array is
            # rounded as the artifact's float division / int difference
            for k, d in self.c.holders(j.file).items():
                pt = eat[k]
                for s_, le, e in d.iv:
                    if s_ <= pt <= e:
                        load[k] = 0.0 if le <= pt else le - t
                        break
        base = (eat.astype(f32) + Wv * load).astype(f32)
        s0 = base.astype(np.int64)
        # exact argmin (first index on ties) without scoring every node: the
        # score is >= s0, so only nodes with s0 <= the best score can win
        best = None   # (score, node index, in hole, start, load)
        m0 = int(s0.min())

        def consider(ks):
            nonlocal best
            for k in ks:
                k = int(k)
                if Ev[k] > 0:
                    ev = eviction_time(nodes[k], j.file, int(eat[k]), j.cores, self.c.m)
                    sc = int(f32(base[k] + f32(Ev[k] * ev)))
                else:
                    sc = int(s0[k])
                cand = (sc, k, 0, int(eat[k]), load[k])
                if best is None or cand[:3] < best[:3]:
                    best = cand

        consider(np.flatnonzero(s0 == m0))
        if best[0] > m0:
            consider(np.flatnonzero((s0 > m0) & (s0 <= best[0])))
        for k in sorted(extra or ()):
            ld = load_time(nodes[k], j.file, j.size, t, t) if j.file else f32(0.0)
            b = f32(f32(t) + f32(Wv[k] * ld))
            if int(b) > best[0]:
                continue
            if Ev[k] > 0:
                ev = eviction_time(nodes[k], j.file, t, j.cores, self.c.m)
                sc = int(f32(b + f32(Ev[k] * ev)))
            else:
                sc = int(b)
            cand = (sc, k, 1, t, ld)
            if cand[:3] < best[:3]:
                best = cand
        _, k, hole, start, ld = best
        return k, start, int(ld), bool(hole)

    # ------------------------------------------------------------ no backfilling
    def _place(self, j, t, W, E, nna, running):
        c = self.c
        eat = self._eats(j, t)
        k, start, load, _ = self._best(j, t, eat, W, E)
        node = c.nodes[k]
        if self.base == "lem" and node.free == node.cores and start == t and \
                all(a <= t for a in node.avail):
            running += 1
        ids, newly = c.place(node, start, j.walltime, j.cores, t)
        j.start, j.node, j.cores_used, j.planned_load = start, node, ids, load
        if self.base != "fcfs":
            c.plan_interval(node, j.file, j.size, start, load, start + j.walltime)
        return nna + newly, running

    # ------------------------------------------------------------ backfilling
    def _hole_fit(self, j, node, t):
        """Cores of a backfill at ``t`` on ``node``: ``(hole cores, outside
        cores)`` or None (``can_it_get_backfilled``)."""
        holes = self.holes[node.index]
        if not holes:
            return None
        nh = len(holes)
        if not (j.cores <= nh or node.avail[node.order[j.cores - 1 - nh]] <= t):
            return None
        end = t + j.walltime
        from_hole = [cid for hs, cid in holes if end <= hs][: j.cores]
        outside = j.cores - len(from_hole)
        out_ids = node.order[:outside]
        if any(node.avail[k] > t for k in out_ids):
            return None
        if any(k in from_hole for k in out_ids):
            return None
        return from_hole, list(out_ids)

    def _refresh_biggest(self, node) -> None:
        """``get_new_biggest_hole``, called (as in the artifact) only when
        the job went to the node that last had the biggest hole."""
        if node.index != self.biggest_id:
            return
        self.biggest = -1
        for k, h in enumerate(self.holes):
            if len(h) > self.biggest:
                self.biggest, self.biggest_id = len(h), k

    @staticmethod
    def _insert_hole(holes: list, start: int, cid: int) -> None:
        """``insert_cores_in_a_hole_list_sorted_increasing_order``: by hole
        start; a new core goes after the cores of equal start, except before
        a head of equal start and larger id."""
        if not holes or holes[0][0] > start or (holes[0][0] == start and holes[0][1] > cid):
            holes.insert(0, (start, cid))
            return
        i = 0
        while i + 1 < len(holes) and holes[i + 1][0] <= start:
            i += 1
        holes.insert(i + 1, (start, cid))

    def _commit_hole(self, j, node, t, from_hole, out_ids):
        holes = self.holes[node.index]
        used = set(from_hole)
        self.holes[node.index] = [h for h in holes if h[1] not in used]
        for k in out_ids:
            node.avail[k] = t + j.walltime
        self.c.dirty.add(node.index)
        node.resort()

    def _place_bf(self, j, t, W, E, nna, busy_t, running):
        c = self.c
        eat = self._eats(j, t)
        extra = {}
        for i in sorted(self._holed):
            node = c.nodes[i]
            if self.holes[i]:
                fit = self._hole_fit(j, node, t)
                if fit is not None:
                    extra[i] = fit
        k, start, load, hole = self._best(j, t, eat, W, E, extra)
        node = c.nodes[k]
        if self.base == "lem" and node.free == node.cores and start == t and \
                all(a <= t for a in node.avail):
            running += 1
        if hole:
            from_hole, out_ids = extra[k]
            self._commit_hole(j, node, t, from_hole, out_ids)
            ids = from_hole + out_ids
            nna += len(out_ids)
            busy_t += j.cores
        else:
            if start == t:
                busy_t += j.cores
            c.dirty.add(node.index)
            ids = []
            for cid in range(node.cores):
                if node.avail[cid] <= start:
                    ids.append(cid)
                    if node.avail[cid] <= t:
                        nna += 1
                        if start > t:
                            self._insert_hole(self.holes[node.index], start, cid)
                            self._holed.add(node.index)
                    node.avail[cid] = start + j.walltime
                    if len(ids) == j.cores:
                        break
            node.resort()
        self._refresh_biggest(node)
        j.start, j.node, j.cores_used, j.planned_load = start, node, ids, load
        if self.base != "fcfs":
            c.plan_interval(node, j.file, j.size, start, load, start + j.walltime)
        return nna, busy_t, running

    def _backfill_only(self, j, t, W, E, busy_t):
        c = self.c
        if self.base == "leo":
            W, E = 1, 0
        best = None
        for i in sorted(self._holed):
            node = c.nodes[i]
            holes = self.holes[i]
            if not holes or len(holes) < j.cores:
                continue
            end = t + j.walltime
            from_hole = [cid for hs, cid in holes if end <= hs][: j.cores]
            if len(from_hole) < j.cores:
                continue
            if self.base == "fcfs":
                best = (0, node, from_hole, 0)
                break
            ld = load_time(node, j.file, j.size, t, t) if j.file else f32(0.0)
            ev = eviction_time(node, j.file, t, j.cores, c.m) if E else f32(0.0)
            sc = int(f32(f32(f32(W) * ld) + f32(f32(E) * ev)))
            if best is None or sc < best[0]:
                best = (sc, node, from_hole, int(ld))
                if sc == 0:
                    break
        if best is None:
            return False, busy_t
        _, node, from_hole, load = best
        self._commit_hole(j, node, t, from_hole, [])
        self._refresh_biggest(node)
        # (the artifact records no planning interval for a job placed here)
        j.start, j.node, j.cores_used, j.planned_load = t, node, from_hole, load
        return True, busy_t + j.cores
