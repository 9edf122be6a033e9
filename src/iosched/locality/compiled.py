"""The locality planner's node choice, compiled (numba).

Gonthier et al. (Inria RR-9497, 2023), Algorithms 2-5, with the semantics
of their artifact (``src/scheduler.c``): a job goes on the node of smallest
score ``(int)(t_k + W*load + E*evict)`` in C float (binary32), the first in
node order on ties. On the Uppmax day the scoring policies (eft, lea, leo,
lem and their -bf variants) make 3.7-4.9 million such choices, each over
450 nodes; in Python (:meth:`iosched.locality.planner.Planner._best` with
:meth:`~iosched.locality.planner.Planner._base` and
:func:`~iosched.locality.cluster.eviction_time`) that is most of a run's
time. :func:`best` makes the same choice in machine code, from arrays the
:class:`~iosched.locality.cluster.Cluster` keeps up to date (its matrix
``A`` of sorted core available times, and its
:class:`~iosched.locality.cluster.LiveArrays` of the files with planning
intervals):

* per node ``k``: ``t_k = max(t, A[k, cores - 1])``; the load is that of
  :func:`~iosched.locality.cluster.load_time` (0 or ``le - t`` if a
  planning interval ``(s, le, e)`` of the job's file on ``k`` has ``s <=
  t_k <= e``, the first such interval; else ``size / bandwidth``); the base
  score ``f32(f32(t_k) + f32(W*load))``;
* the eviction term is computed only for nodes whose base score can still
  win (it is >= 0), as :func:`~iosched.locality.cluster.eviction_time`:
  the sizes of the node's other live files whose last interval ends at or
  before ``t_k``, summed in binary32 in the node's data-list order
  (``Data.seq``), times ``cores / m``, over the bandwidth;
* LEO's switch to EFT's weights (``W = 1, E = 0``): from the first node
  with ``t_k == t`` on (artifact rule) or on exactly those nodes (paper
  rule).

Every binary32 operation is the Python path's, in the same order, so the
choices are the same (checked in ``tests/test_locality_compiled.py`` against
the Python path, and on the whole Uppmax day: every policy's
``jobs_<policy>.csv`` is byte-identical). The Python path remains the
reference and the fallback: the planner's option ``evaluator``
(:data:`EVALUATORS`; default ``"compiled"``, which uses the Python path
when numba is missing). The backfilling candidates in holes, FCFS's choice
(one argmin) and the placement stay in Python.

numba compiles the kernel at its first use in a process (a few seconds)
and caches it next to this file (``__pycache__``) when it can write there.
numba is an optional extra (``pip install 'iosched[fast]'``): without it
this module still imports and :data:`AVAILABLE` is False.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit
    #: Whether numba is installed (the optional extra ``fast``); without it
    #: the planner uses the Python path.
    AVAILABLE = True
except ImportError:
    AVAILABLE = False

    def njit(*args, **kwargs):
        """Stand-in for ``numba.njit`` when numba is missing: leaves the
        kernel a Python function (the planner does not call it)."""
        return lambda f: f

__all__ = ["best", "plan_pass", "AVAILABLE", "EVALUATORS", "LEO_NONE", "LEO_ARTIFACT", "LEO_PAPER"]

#: The planner's node-choice paths (option ``evaluator``): the first is the
#: default; both make the same decisions.
EVALUATORS = ("compiled", "python")

#: ``leo`` argument of :func:`best`: no switch, the artifact's LEO rule, the paper's.
LEO_NONE, LEO_ARTIFACT, LEO_PAPER = 0, 1, 2


@njit(cache=True)
def _eviction(meta, size, n, k, fid, pt, pct, bw):
    """:func:`iosched.locality.cluster.eviction_time` of node ``k`` at
    ``pt`` (binary32 s; ``pct = f32(cores) / f32(m)``)."""
    cnt = n[k]
    if cnt == 0:
        return np.float32(0.0)
    # the slots counted, in data-list order (insertion sort on seq: a few slots)
    sel = np.empty(cnt, dtype=np.int64)
    q = 0
    for s in range(cnt):
        if meta[k, s, 3] <= pt and meta[k, s, 0] != fid:
            sq = meta[k, s, 1]
            r = q
            while r > 0 and meta[k, sel[r - 1], 1] > sq:
                sel[r] = sel[r - 1]
                r -= 1
            sel[r] = s
            q += 1
    if q == 0:
        return np.float32(0.0)
    total = np.float32(0.0)
    for r in range(q):
        total = np.float32(total + size[k, sel[r]])
    return np.float32(np.float32(total * pct) / bw)


@njit(cache=True, inline="always")
def _load(meta, iv, k, s, pt, t):
    """The load (binary32 s) of slot ``s`` of node ``k`` at ``pt``: 0 or
    ``le - t`` from its first interval ``(s, le, e)`` containing ``pt``; -1
    if no interval contains it (:func:`iosched.locality.cluster.load_time`)."""
    for q in range(meta[k, s, 2]):
        if iv[k, s, q, 0] <= pt and pt <= iv[k, s, q, 2]:
            le = iv[k, s, q, 1]
            return np.float32(0.0) if le <= pt else np.float32(le - t)
    return np.float32(-1.0)


@njit(cache=True)
def best(A, cores, t, fid, frow, size, bw, W, E, leo, meta, sizes, iv, n, fs, m):
    """The first node of smallest score for a job (module doc).

    :param A: int64 ``(P, m)``: per node its cores' available times, sorted (s).
    :param cores: the job's cores (1..m); :param t: now (s, int).
    :param fid: the job's file (0: none); :param frow: its row in ``fs``
        (-1: none, or no live record of it); :param size: its size (GB, a
        binary32 value); :param bw: the nodes' bandwidth (GB/s, binary32).
    :param W: the load weight; :param E: the eviction weight (binary32 values).
    :param leo: :data:`LEO_NONE`, :data:`LEO_ARTIFACT` or :data:`LEO_PAPER`.
    :param meta: :param sizes: :param iv: :param n: :param fs: the arrays of a
        :class:`~iosched.locality.cluster.LiveArrays`; :param m: cores per node.
    :returns: ``(node index, t_k (s), score, load (binary32 s))``.
    """
    return _choose(A, cores, t, fid, frow, size, bw, W, E, leo, meta, sizes, iv, n, fs, m)


@njit(cache=True, inline="always")
def _choose(A, cores, t, fid, frow, size, bw, W, E, leo, meta, sizes, iv, n, fs, m):
    """:func:`best`'s body."""
    P = A.shape[0]
    c1 = cores - 1
    Wf = np.float32(W)
    Ef = np.float32(E)
    one = np.float32(1.0)
    zero = np.float32(0.0)
    L = np.float32(np.float32(size) / np.float32(bw))
    WL = np.float32(Wf * L)
    cut = P
    if leo == 1:
        for k in range(P):
            if A[k, c1] <= t:
                cut = k
                break
    base = np.empty(P, dtype=np.float32)
    ib = np.empty(P, dtype=np.int64)
    # every node as if it had no interval of the file, then the holders
    for k in range(P):
        a = A[k, c1]
        base[k] = np.float32(np.float32(a if a > t else t) + WL)
    if leo != 0:
        for k in range(P):
            a = A[k, c1]
            if k >= cut or (leo == 2 and a <= t):
                base[k] = np.float32(np.float32(a if a > t else t) + L)
    if frow >= 0:
        for k in range(P):
            s = fs[frow, k] - 1
            if s >= 0:
                a = A[k, c1]
                pt = a if a > t else t
                ld = _load(meta, iv, k, s, pt, t)
                if ld >= zero:
                    eft = k >= cut or (leo == 2 and a <= t)
                    base[k] = np.float32(np.float32(pt) + np.float32((one if eft else Wf) * ld))
    m0 = np.int64(base[0])
    k0 = 0              # the first node of base score m0
    for k in range(P):
        bi = np.int64(base[k])
        ib[k] = bi
        if bi < m0:
            m0 = bi
            k0 = k
    pct = np.float32(np.float32(cores) / np.float32(m))
    bwf = np.float32(bw)
    best_k = -1
    best_sc = 0
    # nodes of base score m0 first, in node order: the first of score m0 wins;
    # then the nodes of base score in (m0, best score]
    for phase in range(2):
        for k in range(k0 if phase == 0 else 0, P):
            bi = ib[k]
            if phase == 0:
                if bi != m0:
                    continue
            elif bi <= m0 or bi > best_sc:
                continue
            sc = bi
            if Ef > zero and n[k] > 0:
                a = A[k, c1]
                if not (k >= cut or (leo == 2 and a <= t)):
                    ev = _eviction(meta, sizes, n, k, fid, a if a > t else t, pct, bwf)
                    if ev != zero:
                        sc = np.int64(np.float32(base[k] + np.float32(Ef * ev)))
            if best_k < 0 or sc < best_sc or (sc == best_sc and k < best_k):
                best_k, best_sc = k, sc
                if phase == 0 and sc == m0:
                    break
        if best_sc == m0:
            break
    pt = A[best_k, c1]
    if pt < t:
        pt = t
    ld = L
    if frow >= 0:
        s = fs[frow, best_k] - 1
        if s >= 0:
            h = _load(meta, iv, best_k, s, pt, t)
            if h >= zero:
                ld = h
    return best_k, pt, best_sc, ld


#: :func:`plan_pass`'s stops: every job of the chunk planned, every core taken
#: at ``t``, a node needs more live-record slots, a record more intervals.
DONE, FULL, GROW_SLOTS, GROW_INTERVALS = 0, 1, 2, 3


@njit(cache=True)
def plan_pass(A, O, t, nb_cores, nna, running, free, jc, jf, jr, js, jw, i0, W, E, lem, thr, leo,
              meta, sizes, iv, n, fs, dseq, dsize, next_seq, bw, out):
    """A planning pass of a policy without backfilling over jobs ``i0..``
    (:meth:`iosched.locality.planner.Planner.plan` with ``_place``): for
    each job while some core is available at ``t`` (``nna < nb_cores``),
    the node choice of :func:`best` with the pass's weights, then the
    placement (:meth:`~iosched.locality.cluster.Cluster.place`: the
    ``cores`` first cores of the node's order, all available at ``start +
    walltime`` after it, merged into the others by (time, id); rows of
    ``A`` and ``O``) and the planning interval ``(start, start + load,
    start + walltime)`` of its file
    (:meth:`~iosched.locality.cluster.Cluster.plan_interval`: in the
    record's slot, a new slot for a record not live yet, a new ``seq`` for
    a record not created yet, as the Python objects will get them).

    :param A: :param O: the cluster's matrices (sorted available times, s;
        core ids in that order), updated.
    :param nna: cores not available at ``t``; :param running: LEM's running
        nodes (nodes running a job or started now by this pass);
        :param free: int64 ``(P,)``: each node's cores not running a job
        (read for LEM only).
    :param jc: :param jf: :param jr: :param js: :param jw: the jobs' cores,
        file ids, file rows (``fs``; -1 without file), sizes (GB, binary32)
        and walltimes (s).
    :param W: :param E: the weights; :param lem: LEM (EFT's weights ``1, 0``
        while ``running * 100 // P < thr``); :param leo: as :func:`best`.
    :param meta: :param sizes: :param iv: :param n: :param fs: :param dseq:
        :param dsize: a :class:`~iosched.locality.cluster.LiveArrays`,
        updated; :param next_seq: the ``seq`` of the next record created.
    :param out: int64 ``(jobs, 4 + m)``: per planned job its node, start
        (s), planned load (s), 1 if its record became live, then its cores.
    :returns: ``(next job, stop, nna, running, next_seq)``; ``stop`` is one
        of :data:`DONE`, :data:`FULL` (the next job and the following ones
        stay unplanned), :data:`GROW_SLOTS`, :data:`GROW_INTERVALS` (the next
        job is not planned: grow the arrays and call again from it).
    """
    P, m = A.shape
    K = meta.shape[1]
    J = iv.shape[2]
    one = np.float32(1.0)
    zero = np.float32(0.0)
    taken = np.empty(m, dtype=np.int64)
    rest = np.empty(m, dtype=np.int64)
    for i in range(i0, jc.shape[0]):
        if nna >= nb_cores:
            return i, FULL, nna, running, next_seq
        Wi, Ei = W, E
        if lem and (running * 100) // P < thr:
            Wi, Ei = one, zero
        c = jc[i]
        fid = jf[i]
        r = jr[i]
        k, pt, sc, ld = _choose(A, c, t, fid, r, js[i], bw, Wi, Ei, leo, meta, sizes, iv, n, fs, m)
        load = np.int64(ld)
        s = -1
        if fid != 0:
            s = fs[r, k] - 1
            if s < 0 and n[k] == K:
                return i, GROW_SLOTS, nna, running, next_seq
            if s >= 0 and meta[k, s, 2] == J:
                return i, GROW_INTERVALS, nna, running, next_seq
        if lem and free[k] == m and pt == t and A[k, m - 1] <= t:
            running += 1
        # the placement (Cluster.place)
        end = pt + jw[i]
        for q in range(c):
            out[i, 4 + q] = O[k, q]
            if A[k, q] <= t:
                nna += 1
            # taken ids sorted by id (insertion)
            x = O[k, q]
            y = q
            while y > 0 and taken[y - 1] > x:
                taken[y] = taken[y - 1]
                y -= 1
            taken[y] = x
        nr = m - c
        for q in range(nr):
            rest[q] = O[k, c + q]
        pp = 0          # rest cores available at or before end
        while pp < nr and A[k, c + pp] <= end:
            pp += 1
        qq = 0          # rest cores available before end
        while qq < pp and A[k, c + qq] < end:
            qq += 1
        w = 0
        for q in range(qq):
            O[k, w] = rest[q]
            w += 1
        a = qq
        b = 0
        while a < pp or b < c:     # cores available at end: by id
            if b >= c or (a < pp and rest[a] < taken[b]):
                O[k, w] = rest[a]
                a += 1
            else:
                O[k, w] = taken[b]
                b += 1
            w += 1
        for q in range(pp, nr):
            O[k, w] = rest[q]
            w += 1
        for q in range(pp):
            A[k, q] = A[k, c + q]
        for q in range(pp, pp + c):
            A[k, q] = end
        # the planning interval (Cluster.plan_interval)
        new = 0
        if fid != 0:
            if s < 0:
                s = n[k]
                n[k] = s + 1
                fs[r, k] = s + 1
                if dseq[r, k] == 0:
                    dseq[r, k] = next_seq
                    dsize[r, k] = js[i]
                    next_seq += 1
                meta[k, s, 0] = fid
                meta[k, s, 1] = dseq[r, k]
                meta[k, s, 2] = 0
                sizes[k, s] = dsize[r, k]
                new = 1
            q = meta[k, s, 2]
            iv[k, s, q, 0] = pt
            iv[k, s, q, 1] = pt + load
            iv[k, s, q, 2] = end
            meta[k, s, 2] = q + 1
            meta[k, s, 3] = end
        out[i, 0] = k
        out[i, 1] = pt
        out[i, 2] = load
        out[i, 3] = new
    return jc.shape[0], DONE, nna, running, next_seq
