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

Two paths make the same decisions (option ``evaluator``): ``"compiled"``
(default) plans whole passes in :mod:`iosched.locality.compiled` (numba)
on the arrays the cluster keeps, then brings the Python objects up to
date; ``"python"`` (:meth:`Planner._place`, :meth:`Planner._place_bf`,
:meth:`Planner._backfill_only`, :meth:`Planner._best`) is the reference,
and the fallback when numba is not installed.
"""

from __future__ import annotations

import logging

import numpy as np

from iosched.errors import InputError
from iosched.locality import compiled
from iosched.locality.cluster import Cluster, Data, doubled, eviction_time, f32, load_time

__all__ = ["POLICIES", "Planner", "LJob"]

logger = logging.getLogger("iosched.locality.planner")

_warned = []   # the missing-numba warning is logged once a process

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
    (s), ``end``; ``expected_end`` (s, the second the model ends it: engine runs);
    ``elapsed`` (s a history job had run before day 0: its ``delay`` and
    ``walltime`` are what is left, at least 1 s).
    """

    __slots__ = ("id", "subtime", "delay", "walltime", "cores", "file", "size", "role",
                 "hist_start", "hist_node", "start", "node", "cores_used", "planned_load",
                 "transfer", "waiting", "end", "seq", "batsim", "expected_end", "elapsed")

    def __init__(self, id, subtime, delay, walltime, cores, file, size, role=1,
                 hist_start=-1, hist_node=-1, seq=0):
        self.id, self.subtime, self.delay, self.walltime = id, int(subtime), int(delay), int(walltime)
        self.cores, self.file, self.size, self.role = int(cores), int(file), f32(size), int(role)
        self.hist_start, self.hist_node, self.seq = int(hist_start), int(hist_node), seq
        self.start, self.node, self.cores_used, self.planned_load = -1, None, [], 0
        self.transfer = self.waiting = 0
        self.elapsed = 0
        self.end = None
        self.batsim = None
        self.expected_end = None


def _then(k1: int, below) -> object:
    """``k1`` then the indexes after it where ``below`` (bool array) is
    True, listed only when asked for."""
    yield k1
    yield from (below[k1 + 1:].nonzero()[0] + (k1 + 1)).tolist()


class Planner:
    """One policy's planning passes on a cluster.

    :param cluster: the :class:`~iosched.locality.cluster.Cluster`.
    :param policy: one of :data:`POLICIES`.
    :param W: load weight of LEA/LEO/LEM (paper: 500).
    :param E: eviction weight (paper: 1).
    :param threshold: LEM's busy threshold, percent of nodes (paper: 80).
    :param leo_rule: ``"artifact"`` (default) or ``"paper"`` (module doc).
    :param evaluator: the planning passes' path,
        :data:`~iosched.locality.compiled.EVALUATORS`: ``"compiled"``
        (default: whole passes in :func:`iosched.locality.compiled.plan_pass`
        or :func:`~iosched.locality.compiled.plan_pass_bf`, numba machine
        code; without numba the Python path) or ``"python"`` (:meth:`_place`,
        :meth:`_place_bf`, :meth:`_best`: the reference); both make the same
        decisions; the fallback without numba is logged once (a warning).
    :raises InputError: unknown policy, rule or evaluator, negative weights.

    ``compiled`` (bool): whether the compiled passes are used.
    """

    def __init__(self, cluster: Cluster, policy: str, W: float = 500, E: float = 1,
                 threshold: float = 80, leo_rule: str = "artifact", evaluator: str = "compiled"):
        if policy not in POLICIES:
            raise InputError(f"policy={policy!r} is unknown; expected one of {', '.join(POLICIES)}")
        if evaluator not in compiled.EVALUATORS:
            raise InputError(f"evaluator={evaluator!r} is unknown; expected one of "
                             f"{', '.join(compiled.EVALUATORS)}")
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
        self._cache: dict = {}                 # (file, size, cores, W) -> see _base
        self._log: list = []                   # nodes changed by the decisions of this pass
        self._evc: dict = {}                   # node -> {(file, t_k, cores): eviction penalty}, see _best
        self.evaluator = evaluator
        self.compiled = evaluator == "compiled" and compiled.AVAILABLE
        if self.compiled and self.bf:   # the holes (the truth in this mode; self.holes follows)
            self.HS = np.zeros((self.P, 2 * cluster.m), dtype=np.int64)
            self.HC = np.zeros((self.P, 2 * cluster.m), dtype=np.int64)
            self.hn = np.zeros(self.P, dtype=np.int64)
        if evaluator == "compiled" and not compiled.AVAILABLE and not _warned:
            _warned.append(True)
            logger.warning("evaluator compiled: numba is not installed (pip install 'iosched[fast]'); "
                           "the Python passes are used (same decisions, slower)")
        if self.compiled:
            cluster.keep_arrays(order=True)
        self._bw = float(cluster.nodes[0].bandwidth)
        self._leo = (compiled.LEO_NONE if self.base != "leo" else
                     compiled.LEO_ARTIFACT if leo_rule == "artifact" else compiled.LEO_PAPER)

    # ------------------------------------------------------------ public
    def reset(self, t: int) -> None:
        """Full re-plan: cores back to their running state (``reset_cores``)."""
        self.c.reset_cores(t)
        for i in self._holed:
            self.holes[i] = []
        self._holed = set()
        if self.compiled and self.bf:
            self.hn[:] = 0
        self.now_busy = 0
        self.biggest = 0

    def plan(self, jobs: list, t: int) -> list:
        """Plan ``jobs`` (in order) at ``t``; returns the planned ones.

        :raises InputError: (compiled passes) a job asks fewer than 1 or
            more cores than a node has (the Python path fails on it too)."""
        c = self.c
        nna = c.non_available(t)
        self._cache, self._log = {}, []
        self._evc = {}
        if self.base != "fcfs":
            c.reset_intervals(t)
        running = c.running_nodes
        if self.compiled:
            return self._plan_compiled(jobs, t, nna, running)
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

    #: jobs handed to :func:`compiled.plan_pass` at a time
    CHUNK = 256

    def _plan_compiled(self, jobs: list, t: int, nna: int, running: int) -> list:
        """:meth:`plan` in :func:`compiled.plan_pass` (no backfilling) or
        :func:`compiled.plan_pass_bf` (chunks of :attr:`CHUNK` jobs), then
        the Python objects brought up to date: the jobs' plans, the touched
        nodes' cores (``avail``, ``order`` from the matrices ``A``, ``O``)
        and holes, and the records' planning intervals (as ``Cluster.place``,
        ``Cluster.plan_interval`` and the backfilling placements leave them).

        :raises InputError: a job asks fewer than 1 or more cores than a node has."""
        c = self.c
        arr = c.arrays
        nodes = c.nodes
        m = c.m
        bf = self.bf
        lem = self.base == "lem"
        fcfs = self.base == "fcfs"
        W, E = (1, 0) if self.base == "eft" else (self.W, self.E)   # LEM: above its threshold
        free = np.array([n.free for n in nodes], dtype=np.int64) if lem else np.zeros(0, dtype=np.int64)
        thr = float(self.threshold)
        busy = self.now_busy
        touched = set()
        done = []
        lo = 0
        stop = compiled.DONE
        while lo < len(jobs) and stop != compiled.FULL:
            chunk = jobs[lo:lo + self.CHUNK]
            row = arr.row
            jr = np.array([row(j.file) if j.file and not fcfs else -1 for j in chunk], dtype=np.int64)
            jc = np.array([j.cores for j in chunk], dtype=np.int64)
            if jc.min() < 1 or jc.max() > m:     # (the kernels index the matrices by it)
                bad = next(j for j in chunk if not 1 <= j.cores <= m)
                raise InputError(f"locality: job {bad.id} asks {bad.cores} cores; a node has {m}")
            jf = np.array([j.file for j in chunk], dtype=np.int64)
            js = np.array([j.size for j in chunk], dtype=f32)
            jw = np.array([j.walltime for j in chunk], dtype=np.int64)
            out = np.empty((len(chunk), 4 + m), dtype=np.int64)
            i = 0
            while True:
                if bf:
                    i1, stop, nna, busy, running, self.biggest, self.biggest_id, _, dec = compiled.plan_pass_bf(
                        c.A, c.O, t, c.nb_cores, nna, busy, running, self.biggest, self.biggest_id, free,
                        jc, jf, jr, js, jw, i, float(W), float(E), lem, thr, self._leo, arr.meta, arr.size,
                        arr.iv, arr.n, arr.fs, arr.dseq, arr.dsize, Data._count + 1, self._bw,
                        self.HS, self.HC, self.hn, out, fcfs)
                else:
                    i1, stop, nna, running, _ = compiled.plan_pass(
                        c.A, c.O, t, c.nb_cores, nna, running, free, jc, jf, jr, js, jw, i, float(W), float(E),
                        lem, thr, self._leo, arr.meta, arr.size, arr.iv, arr.n, arr.fs, arr.dseq, arr.dsize,
                        Data._count + 1, self._bw, out, fcfs)
                    dec = i1 - i
                self.decisions += dec
                self._sync(chunk, i, i1, out, touched, done)
                if stop == compiled.GROW_SLOTS:
                    arr.grow_slots()
                elif stop == compiled.GROW_INTERVALS:
                    arr.grow_intervals()
                elif stop == compiled.GROW_HOLES:
                    self._grow_holes()
                else:
                    break
                i = i1
            lo += i1
        for j in jobs[lo:]:
            j.start = -1
        self.now_busy = busy
        for k in touched:
            node = nodes[k]
            order = node.orow.tolist()
            node.order = order
            av = node.avail
            for q, a in zip(order, node.row.tolist()):
                av[q] = a
            if bf:
                h = int(self.hn[k])
                self.holes[k] = list(zip(self.HS[k, :h].tolist(), self.HC[k, :h].tolist()))
                if h:
                    self._holed.add(k)
        c.dirty |= touched
        return done

    def _grow_holes(self) -> None:
        self.HS, self.HC = doubled(self.HS, 1), doubled(self.HC, 1)

    def _sync(self, chunk, i0, i1, out, touched, done) -> None:
        """The plans of ``chunk[i0:i1]`` (rows of ``out``, see
        :func:`compiled.plan_pass_bf`) into the jobs (the planned ones
        appended to ``done``) and the records."""
        if i1 <= i0:
            return
        c = self.c
        nodes = c.nodes
        arr = c.arrays
        live, by_file, tset, recs = c.live, c.by_file, c._touched, arr.recs
        files = self.base != "fcfs"      # FCFS plans no interval
        for j, (k, start, load, new, *ids) in zip(chunk[i0:i1], out[i0:i1].tolist()):
            if k < 0:
                j.start = -1
                continue
            done.append(j)
            node = nodes[k]
            j.start, j.node, j.cores_used, j.planned_load = start, node, ids[:j.cores], load
            touched.add(k)
            fid = j.file
            if fid and files and new != 2:
                d = node.data.get(fid)
                if d is None:
                    d = c._record(node, fid, j.size)
                d.iv.append((start, start + load, start + j.walltime))
                tset.add(d)
                if new:
                    live.add(d)
                    by_file.setdefault(fid, {})[k] = d
                    node.live[fid] = d
                    d.slot = len(recs[k])
                    recs[k].append(d)

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

    def _base(self, j, t: int, W) -> tuple:
        """Base scores ``t_k + W*load`` of every node for job ``j`` at ``t``
        (binary32 array, one entry a node, as the artifact's float) and the
        loads (s, binary32) of the nodes holding a planning interval of its
        file that covers ``t_k``: ``(base, loads)``.

        ``t_k`` is ``max(t, c-th smallest core available time)``; the load
        is ``size / bandwidth`` on a node without such an interval, else 0
        (loaded by ``t_k``) or the rest of the load from ``t``
        (:func:`~iosched.locality.cluster.load_time`, inlined). The array is
        kept for the pass per (file, size, cores, W) and only the entries of
        the nodes changed by the decisions since its last use are
        recomputed (a decision changes one node's cores and intervals)."""
        key = (j.file, j.size, j.cores, W)
        ent = self._cache.get(key)
        log = self._log
        c = self.c
        col = c.A[:, j.cores - 1]
        holders = c.holders(j.file) if j.file else {}
        if ent is not None:
            base, pos, loads, Wf, WL = ent
            n = len(log)
            if pos < n:
                for k in (log[pos:] if pos + 1 == n else set(log[pos:])):
                    pt = col.item(k)
                    if pt < t:
                        pt = t
                    d = holders.get(k)
                    ld = None
                    if d is not None:
                        for s_, le, e in d.iv:
                            if s_ <= pt <= e:
                                ld = f32(0 if le <= pt else le - t)
                                break
                    # (a sum or product of two binary32 numbers is one in numpy)
                    if ld is None:
                        base[k] = f32(pt) + WL
                        loads.pop(k, None)
                    else:
                        base[k] = f32(pt) + Wf * ld
                        loads[k] = ld
                ent[1] = n
            return base, loads
        eat = np.maximum(col, t)
        L = f32(j.size) / c.nodes[0].bandwidth    # load where the file is not planned (binary32)
        Wf = f32(W)
        WL = f32(Wf * L)
        base = np.add(eat, WL, dtype=f32)           # f32(f32(t_k) + f32(W*L)), as the artifact
        loads = {}
        if holders:
            hk = list(holders)
            for k, pt, d in zip(hk, eat[hk].tolist(), holders.values()):
                for s_, le, e in d.iv:
                    if s_ <= pt <= e:
                        loads[k] = 0 if le <= pt else le - t
                        break
            if loads:
                ks = list(loads)
                lv = np.array(list(loads.values()), dtype=f32)
                base[ks] = np.add(eat[ks], Wf * lv, dtype=f32)
                loads = dict(zip(ks, lv))
        self._cache[key] = [base, len(log), loads, Wf, WL]
        return base, loads

    def _best(self, j, t, W, E, extra=None):
        """First node of smallest score; ``extra`` (bf): node index -> a
        backfill at ``t`` in a hole. Returns ``(index, start, load, in_hole)``.

        Equal to scoring every node with :func:`~iosched.locality.cluster.score`
        and taking the first minimum (``tests/test_locality.py`` checks it
        against that reference), but vectorised: the base scores ``t_k +
        W*load`` come from :meth:`_base`; as the eviction term ``E*evict``
        is >= 0, it is only computed for the nodes whose base score can
        still win, in node order. A node's eviction penalty (binary32 s) is
        kept for the pass per (file, ``t_k``, cores) until a decision
        changes that node (its planning intervals change only then)."""
        c = self.c
        nodes = c.nodes
        P = self.P
        col = c.A[:, j.cores - 1]
        if self.base == "fcfs":
            eat = np.maximum(col, t)
            if extra:
                # the artifact stops at the first node that starts the job now, in a hole or not
                now = int((col <= t).argmax())
                if col[now] > t:
                    now = P
                k = min(extra)
                if now <= k:
                    return now, t, 0, False
                return k, t, 0, True
            i = int(eat.argmin())
            return i, int(eat[i]), 0, False
        base, loads = self._base(j, t, W)
        cut = P                     # LEO (artifact rule): EFT weights from node `cut` on
        now = None                  # LEO (paper rule): mask of the nodes with EFT weights
        if self.base == "leo":
            free = col <= t         # t_k == t
            first = int(free.argmax())
            if free[first]:
                base1, _ = self._base(j, t, 1)
                if self.leo_rule == "artifact":
                    cut = first
                    base = np.concatenate((base[:cut], base1[cut:]))
                else:
                    now = free
                    base = np.where(free, base1, base)
                # (the loads do not depend on W: loads1 == loads)
        Ef = f32(E)
        zero = f32(0)
        L = f32(j.size) / nodes[0].bandwidth
        m0 = int(base[base.argmin()])
        best = None   # (score, node index, in hole, start, load)
        m = c.m
        evc = self._evc
        fid, cores = j.file, j.cores
        lim = m0 + 1
        first = True
        while True:
            # int(base) < lim, compared exactly: integers below 2**24 are binary32 numbers
            b = base if lim < 2 ** 24 else base.astype(np.float64)
            below = b < lim
            if first:
                # the first candidate often wins alone (score == m0): the others
                # are only listed if it does not
                k1 = int(below.argmax())
                ks = _then(k1, below)
            else:
                below &= b >= m0 + 1
                ks = below.nonzero()[0].tolist()
            for k in ks:
                bk = base[k]
                sc = int(bk)
                pt = col.item(k)
                if pt < t:
                    pt = t
                Ek = zero if k >= cut or (now is not None and now[k]) else Ef
                if Ek > 0 and nodes[k].live:
                    memo = evc.get(k)
                    if memo is None:
                        memo = evc[k] = {}
                    key = (fid, pt, cores)
                    ev = memo.get(key)
                    if ev is None:
                        ev = memo[key] = eviction_time(nodes[k], fid, pt, cores, m)
                    if ev:
                        sc = int(bk + Ek * ev)   # binary32 operands: binary32 results
                if best is None or sc < best[0] or (sc == best[0] and k < best[1]):
                    best = (sc, k, 0, pt, loads.get(k, L))
                    if first and sc == m0:
                        break
            if not first or best[0] == m0:
                break
            # nodes whose base score is above m0 but not above the best score
            first = False
            lim = best[0] + 1
        return self._best_extra(j, t, W, E, extra, best, cut, now)

    def _best_extra(self, j, t, W, E, extra, best, cut, now=None):
        """:meth:`_best`'s backfills in holes at ``t`` (``extra``, may be
        empty) against ``best`` = ``(score, index, 0, start, load)`` of the
        nodes' own placements; ``cut``/``now``: LEO's nodes with EFT's
        weights (:meth:`_best`; ``now`` None: from ``cut`` on)."""
        nodes = self.c.nodes
        m = self.c.m
        Wf, Ef = f32(W), f32(E)
        one, zero = f32(1), f32(0)

        def weights(k):
            if k >= cut or (now is not None and now[k]):
                return one, zero
            return Wf, Ef

        for k in sorted(extra or ()):
            ld = load_time(nodes[k], j.file, j.size, t, t) if j.file else f32(0.0)
            Wk, Ek = weights(k)
            b = f32(f32(t) + f32(Wk * ld))
            if int(b) > best[0]:
                continue
            if Ek > 0:
                ev = eviction_time(nodes[k], j.file, t, j.cores, m)
                sc = int(f32(b + f32(Ek * ev)))
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
        k, start, load, _ = self._best(j, t, W, E)
        node = c.nodes[k]
        if self.base == "lem" and node.free == node.cores and start == t and \
                max(node.avail) <= t:
            running += 1
        ids, newly = c.place(node, start, j.walltime, j.cores, t)
        j.start, j.node, j.cores_used, j.planned_load = start, node, ids, load
        if self.base != "fcfs":
            c.plan_interval(node, j.file, j.size, start, load, start + j.walltime)
        self._log.append(k)
        self._evc.pop(k, None)
        return nna + newly, running

    # ------------------------------------------------------------ backfilling
    def _hole_fit(self, j, node, t):
        """Cores of a backfill at ``t`` on ``node``: ``(hole cores, outside
        cores)`` or None (``can_it_get_backfilled``)."""
        holes = self.holes[node.index]
        if not holes:
            return None
        if j.file and holes[-1][0] < t + j.walltime:
            # no hole core long enough (holes are sorted by start): a fit
            # would only use cores free at t, where the node's own placement
            # at t_k = t scores the same and wins the tie (so it never wins)
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
        extra = {}
        for i in sorted(self._holed):
            node = c.nodes[i]
            if self.holes[i]:
                fit = self._hole_fit(j, node, t)
                if fit is not None:
                    extra[i] = fit
        k, start, load, hole = self._best(j, t, W, E, extra)
        node = c.nodes[k]
        if self.base == "lem" and node.free == node.cores and start == t and \
                max(node.avail) <= t:
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
        self._log.append(k)
        self._evc.pop(k, None)
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
        self._log.append(node.index)
        self._evc.pop(node.index, None)
        self._refresh_biggest(node)
        # (the artifact records no planning interval for a job placed here)
        j.start, j.node, j.cores_used, j.planned_load = t, node, from_hole, load
        return True, busy_t + j.cores
