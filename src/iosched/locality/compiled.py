"""The locality planner's passes, compiled (numba).

Gonthier et al. (Inria RR-9497, 2023), Algorithms 1-5 and their
conservative-backfilling variants (Section 4.3), with the semantics of
their artifact (``src/scheduler.c``, ``basic_functions.c``,
``backfill_functions.c``): a job goes on the node of smallest score
``(int)(t_k + W*load + E*evict)`` in C float (binary32), the first in node
order on ties. On the Uppmax day each policy makes 3.7-4.9 million such
decisions, each over 450 nodes; in Python
(:class:`iosched.locality.planner.Planner`) that was most of a run's time.
:func:`plan_pass` (policies without backfilling) and :func:`plan_pass_bf`
(the -bf policies) make a pass's decisions in machine code, on arrays the
:class:`~iosched.locality.cluster.Cluster` keeps up to date between passes
(never rebuilt): its matrices ``A`` (each node's core available times,
sorted, s) and ``O`` (the core ids in that order), its
:class:`~iosched.locality.cluster.LiveArrays` (the records of the files
with planning intervals, their intervals, every record's ``seq`` and
size), and the planner's holes (start, core id). The planner then brings
its Python objects up to date (the jobs' plans, the touched nodes' cores
and holes, the records' intervals), which the rest of the model reads.

A decision (:func:`best`, the body of both passes):

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
  rule); LEM's EFT weights below its busy threshold; FCFS: the first node
  of smallest ``t_k``;
* then the placement, the planning interval, and for -bf the holes and the
  backfills exactly as the planner's Python methods do them (each kernel's
  docstring names them).

Every binary32 operation is the Python path's, in the same order, and every
tie is broken the same way, so the decisions are the same (checked in
``tests/test_locality_compiled.py`` against the Python path, the whole
state after each pass included, and on the whole Uppmax day: every
policy's ``jobs_<policy>.csv`` is byte-identical). The Python path remains
the reference and the fallback: the planner's option ``evaluator``
(:data:`EVALUATORS`; default ``"compiled"``, which uses the Python path
when numba is missing).

numba compiles the kernels at their first use in a process (several
seconds) and caches them next to this file (``__pycache__``) when it can
write there; loading them from that cache takes about 0.5 s at the first
pass of a process. numba is an optional extra (``pip install
'iosched[fast]'``): without it this module still imports and
:data:`AVAILABLE` is False.
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

__all__ = ["best", "plan_pass", "plan_pass_bf", "AVAILABLE", "EVALUATORS", "LEO_NONE", "LEO_ARTIFACT", "LEO_PAPER"]

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


@njit(cache=True, inline="always")
def _first_eat(A, c, t):
    """FCFS's node: the first of smallest ``t_k = max(t, A[k, c - 1])``;
    returns ``(node, t_k)``."""
    k0 = 0
    e0 = A[0, c - 1] if A[0, c - 1] > t else t
    for k in range(1, A.shape[0]):
        e = A[k, c - 1] if A[k, c - 1] > t else t
        if e < e0:
            k0, e0 = k, e
    return k0, e0


#: :func:`plan_pass`'s stops: every job of the chunk planned, every core taken
#: at ``t``, a node needs more live-record slots, a record more intervals.
DONE, FULL, GROW_SLOTS, GROW_INTERVALS = 0, 1, 2, 3


@njit(cache=True)
def plan_pass(A, O, t, nb_cores, nna, running, free, jc, jf, jr, js, jw, i0, W, E, lem, thr, leo,
              meta, sizes, iv, n, fs, dseq, dsize, next_seq, bw, out, fcfs):
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
    :param fcfs: FCFS: the node of smallest ``t_k`` (the first on ties), no
        file scored, no planning interval.
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
        if fcfs:
            k, pt = _first_eat(A, c, t)
            fid = 0
            load = 0
        else:
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
            new, next_seq = _interval(k, fid, r, pt, load, end, js[i], meta, sizes, iv, n, fs, dseq,
                                      dsize, next_seq)
        out[i, 0] = k
        out[i, 1] = pt
        out[i, 2] = load
        out[i, 3] = new
    return jc.shape[0], DONE, nna, running, next_seq


@njit(cache=True, inline="always")
def _load_at_t(fid, size, L0, meta, iv, fs, r, h, t):
    """The load (binary32 s) of a job starting at ``t`` on node ``h``: 0
    without a file; else ``le - t`` or 0 from the first planning interval
    of its file (record ``r``) on ``h`` containing ``t`` (:func:`_load`),
    else ``size / L0``."""
    lh = np.float32(0.0)
    if fid != 0:
        lh = np.float32(np.float32(size) / L0)
        s = fs[r, h] - 1 if r >= 0 else -1
        if s >= 0:
            x = _load(meta, iv, h, s, t, t)
            if x >= np.float32(0.0):
                lh = x
    return lh


#: :func:`plan_pass_bf`'s stop when a node needs more hole entries.
GROW_HOLES = 4


@njit(cache=True, inline="always")
def _interval(k, fid, r, pt, load, end, size, meta, sizes, iv, n, fs, dseq, dsize, next_seq):
    """:meth:`~iosched.locality.cluster.Cluster.plan_interval` on the
    arrays (capacity checked by the caller): returns ``(1 if the record
    became live else 0, next_seq)``."""
    new = 0
    s = fs[r, k] - 1
    if s < 0:
        s = n[k]
        n[k] = s + 1
        fs[r, k] = s + 1
        if dseq[r, k] == 0:
            dseq[r, k] = next_seq
            dsize[r, k] = size
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
    return new, next_seq


@njit(cache=True, inline="always")
def _room(k, fid, r, meta, iv, n, fs):
    """0 if the arrays can take an interval of file ``fid`` on node ``k``,
    else :data:`GROW_SLOTS` or :data:`GROW_INTERVALS`."""
    if fid == 0:
        return 0
    s = fs[r, k] - 1
    if s < 0 and n[k] == meta.shape[1]:
        return GROW_SLOTS
    if s >= 0 and meta[k, s, 2] == iv.shape[2]:
        return GROW_INTERVALS
    return 0


@njit(cache=True, inline="always")
def _resort(AV, A, O, k, m):
    """:meth:`~iosched.locality.cluster.Node.resort` of node ``k``: ``O``
    row by (available time ``AV[k]``, id), ``A`` row the sorted times."""
    for q in range(m):
        O[k, q] = q
    for q in range(1, m):
        x = O[k, q]
        a = AV[k, x]
        y = q
        while y > 0 and AV[k, O[k, y - 1]] > a:
            O[k, y] = O[k, y - 1]
            y -= 1
        O[k, y] = x
    for q in range(m):
        A[k, q] = AV[k, O[k, q]]


@njit(cache=True, inline="always")
def _from_hole(HS, HC, hn, k, end, cores, buf):
    """The first ``cores`` hole cores of node ``k`` whose hole starts at or
    after ``end`` (into ``buf``); returns how many."""
    c = 0
    for h in range(hn[k]):
        if end <= HS[k, h]:
            buf[c] = HC[k, h]
            c += 1
            if c == cores:
                break
    return c


@njit(cache=True, inline="always")
def _drop_holes(HS, HC, hn, k, buf, c):
    """Remove the hole entries of the ``c`` cores ``buf[:c]`` from node ``k``
    (the others keep their order)."""
    w = 0
    for h in range(hn[k]):
        x = HC[k, h]
        used = False
        for y in range(c):
            if buf[y] == x:
                used = True
                break
        if not used:
            HS[k, w] = HS[k, h]
            HC[k, w] = x
            w += 1
    hn[k] = w


@njit(cache=True)
def plan_pass_bf(A, O, t, nb_cores, nna, busy, running, biggest, big_id, free, jc, jf, jr, js, jw, i0,
                 W, E, lem, thr, leo, meta, sizes, iv, n, fs, dseq, dsize, next_seq, bw, HS, HC, hn, out, fcfs):
    """A planning pass of a backfilling policy (fcfs-bf, eft-bf, lea-bf,
    leo-bf, lem-bf) over jobs ``i0..``, as :meth:`iosched.locality.planner.Planner.plan`
    with ``_place_bf`` and ``_backfill_only`` (see the planner's module doc):
    while a core is available at ``t``, each job takes the better of its
    node choice (:func:`best`) and the backfills at ``t`` in a hole
    (``_hole_fit``, scored as ``_best``, ties to the node's own
    placement, then to the lower node), placed as the Python path places it
    (the lowest-id cores available by its start; cores free at ``t``
    reserved for later become holes, ``_insert_hole``'s order), with its
    planning interval; once every core is taken at ``t``, jobs of at most
    ``biggest`` cores are only tried in holes while ``busy < nb_cores``.
    FCFS (``fcfs``): the first node that starts the job at ``t``, in a hole
    or not, else the node of smallest ``t_k``; in holes only, the first
    node where it fits; no file scored, no planning interval.

    Arguments as :func:`plan_pass`, plus: ``busy`` (cores taken at ``t``
    in the plan), ``biggest`` and ``big_id`` (the artifact's biggest hole
    and its node), ``HS``, ``HC``, ``hn`` (each node's holes in order: hole
    start (s), core id; their number), updated.

    :param out: int64 ``(jobs, 4 + m)``: per job its node (-1: not
        planned), start (s), planned load (s), 1 if its record became live
        (2: placed in a hole after every core was taken, without planning
        interval), then its cores.
    :returns: ``(next job, stop, nna, busy, running, biggest, big_id,
        next_seq, decisions)``; ``stop`` as :func:`plan_pass`, or
        :data:`GROW_HOLES`.
    """
    P, m = A.shape
    one = np.float32(1.0)
    zero = np.float32(0.0)
    Hcap = HS.shape[1]
    AV = np.empty((P, m), dtype=np.int64)       # available time by core id
    for k in range(P):
        for q in range(m):
            AV[k, O[k, q]] = A[k, q]
    ext = np.empty(P, dtype=np.int64)
    buf = np.empty(m, dtype=np.int64)
    bfit = np.empty(m, dtype=np.int64)
    L0 = np.float32(bw)
    decisions = 0
    for i in range(i0, jc.shape[0]):
        c = jc[i]
        fid = jf[i]
        r = jr[i]
        wall = jw[i]
        Wi, Ei = W, E
        if lem and (running * 100) // P < thr:
            Wi, Ei = one, zero
        Wf = np.float32(Wi)
        Ef = np.float32(Ei)
        out[i, 3] = 0
        if nna < nb_cores:
            # backfills at t in a hole (_hole_fit), in node order
            ne = 0
            end_t = t + wall
            for h in range(P):
                nh = hn[h]
                if nh == 0:
                    continue
                if fid != 0 and HS[h, nh - 1] < end_t:
                    continue
                if not (c <= nh or A[h, c - 1 - nh] <= t):
                    continue
                nf = _from_hole(HS, HC, hn, h, end_t, c, buf)
                outside = c - nf
                ok = True
                for q in range(outside):
                    if A[h, q] > t:
                        ok = False
                        break
                    x = O[h, q]
                    for y in range(nf):
                        if buf[y] == x:
                            ok = False
                            break
                    if not ok:
                        break
                if ok:
                    ext[ne] = h
                    ne += 1
            hole = 0
            if fcfs:
                ld = zero
                sc = 0
                if ne > 0:
                    # the artifact stops at the first node that starts the job now
                    now = P
                    for h in range(P):
                        if A[h, c - 1] <= t:
                            now = h
                            break
                    if now <= ext[0]:
                        k, pt = now, t
                    else:
                        k, pt, hole = ext[0], t, 1
                else:
                    k, pt = _first_eat(A, c, t)
                fid = 0
            else:
                k, pt, sc, ld = _choose(A, c, t, fid, r, js[i], bw, Wi, Ei, leo, meta, sizes, iv, n, fs, m)
            if ne > 0 and not fcfs:
                cut = P
                if leo == 1:
                    for h in range(P):
                        if A[h, c - 1] <= t:
                            cut = h
                            break
                for e in range(ne):
                    h = ext[e]
                    eft = h >= cut or (leo == 2 and A[h, c - 1] <= t)
                    Wk = one if eft else Wf
                    Ek = zero if eft else Ef
                    lh = _load_at_t(fid, js[i], L0, meta, iv, fs, r, h, t)
                    b = np.float32(np.float32(t) + np.float32(Wk * lh))
                    if np.int64(b) > sc:
                        continue
                    if Ek > zero:
                        pct = np.float32(np.float32(c) / np.float32(m))
                        ev = _eviction(meta, sizes, n, h, fid, t, pct, L0)
                        sch = np.int64(np.float32(b + np.float32(Ek * ev)))
                    else:
                        sch = np.int64(b)
                    if sch < sc or (sch == sc and (h < k or (h == k and 1 < hole))):
                        k, pt, sc, ld, hole = h, t, sch, lh, 1
            # room in the arrays
            g = _room(k, fid, r, meta, iv, n, fs)
            if g != 0:
                return i, g, nna, busy, running, biggest, big_id, next_seq, decisions
            if hole == 0 and pt > t and hn[k] + c > Hcap:
                return i, GROW_HOLES, nna, busy, running, biggest, big_id, next_seq, decisions
            decisions += 1
            load = np.int64(ld)
            if lem and free[k] == m and pt == t and A[k, m - 1] <= t:
                running += 1
            if hole == 1:
                end_t = t + wall
                nf = _from_hole(HS, HC, hn, k, end_t, c, buf)
                outside = c - nf
                for q in range(nf):
                    out[i, 4 + q] = buf[q]
                for q in range(outside):
                    x = O[k, q]
                    out[i, 4 + nf + q] = x
                    bfit[q] = x
                _drop_holes(HS, HC, hn, k, buf, nf)
                if outside > 0:
                    for q in range(outside):
                        AV[k, bfit[q]] = end_t
                    _resort(AV, A, O, k, m)
                nna += outside
                busy += c
            else:
                if pt == t:
                    busy += c
                got = 0
                for cid in range(m):
                    if AV[k, cid] <= pt:
                        out[i, 4 + got] = cid
                        got += 1
                        if AV[k, cid] <= t:
                            nna += 1
                            if pt > t:
                                # _insert_hole: by start; after equal starts, except
                                # before a head of equal start and larger id
                                nh = hn[k]
                                if nh == 0 or HS[k, 0] > pt or (HS[k, 0] == pt and HC[k, 0] > cid):
                                    pos = 0
                                else:
                                    y = 0
                                    while y + 1 < nh and HS[k, y + 1] <= pt:
                                        y += 1
                                    pos = y + 1
                                for y in range(nh, pos, -1):
                                    HS[k, y] = HS[k, y - 1]
                                    HC[k, y] = HC[k, y - 1]
                                HS[k, pos] = pt
                                HC[k, pos] = cid
                                hn[k] = nh + 1
                        AV[k, cid] = pt + wall
                        if got == c:
                            break
                _resort(AV, A, O, k, m)
            if k == big_id:            # _refresh_biggest
                biggest = -1
                for h in range(P):
                    if hn[h] > biggest:
                        biggest = hn[h]
                        big_id = h
            if fid != 0:
                new, next_seq = _interval(k, fid, r, pt, load, pt + wall, js[i], meta, sizes, iv, n, fs,
                                          dseq, dsize, next_seq)
                out[i, 3] = new
            out[i, 0] = k
            out[i, 1] = pt
            out[i, 2] = load
        elif busy < nb_cores:
            out[i, 0] = -1
            if c > biggest:
                continue
            decisions += 1
            if leo != 0:
                Wf, Ef = one, zero
            end_t = t + wall
            bk = -1
            bsc = 0
            bld = 0
            for h in range(P):
                if hn[h] == 0 or hn[h] < c:
                    continue
                if _from_hole(HS, HC, hn, h, end_t, c, buf) < c:
                    continue
                if fcfs:
                    bk, bsc, bld = h, 0, 0
                    break
                lh = _load_at_t(fid, js[i], L0, meta, iv, fs, r, h, t)
                ev = zero
                if Ef != zero:
                    pct = np.float32(np.float32(c) / np.float32(m))
                    ev = _eviction(meta, sizes, n, h, fid, t, pct, L0)
                sch = np.int64(np.float32(np.float32(Wf * lh) + np.float32(Ef * ev)))
                if bk < 0 or sch < bsc:
                    bk, bsc, bld = h, sch, np.int64(lh)
                    if sch == 0:
                        break
            if bk < 0:
                continue
            nf = _from_hole(HS, HC, hn, bk, end_t, c, buf)
            for q in range(nf):
                out[i, 4 + q] = buf[q]
            _drop_holes(HS, HC, hn, bk, buf, nf)
            if bk == big_id:
                biggest = -1
                for h in range(P):
                    if hn[h] > biggest:
                        biggest = hn[h]
                        big_id = h
            out[i, 0] = bk
            out[i, 1] = t
            out[i, 2] = bld
            out[i, 3] = 2         # no planning interval
            busy += c
        else:
            return i, FULL, nna, busy, running, biggest, big_id, next_seq, decisions
    return jc.shape[0], DONE, nna, busy, running, biggest, big_id, next_seq, decisions
