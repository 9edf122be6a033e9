"""List scheduling of queue orders on a timeline, compiled (numba), for the
burst-buffer placer's default choices.

Plan-alpha's search (:mod:`iosched.bb.plan`) list-schedules hundreds of
orders of the waiting queue per scheduling pass; on the whole KTH-SP2 log
that is about 30 million placements, nearly all the scheduler's time in
Python (:class:`~iosched.sched.listschedule.ListPlan` on a
:class:`~iosched.sched.timeline.Timeline` with
:meth:`~iosched.bb.placement.BurstBufferPlacer.earliest`). A
:class:`CompiledListPlan` does the same evaluations in machine code:

* the timeline's state after each placed position is a level of three
  arrays (segment starts in s; free compute nodes as bit masks of ``W``
  64-bit words; free bytes of every burst-buffer pool), and the order
  placed so far is kept: an order re-places only the positions after its
  longest common prefix with the last evaluated order (a swap of positions
  ``i < j`` re-places from ``i`` on, as :class:`ListPlan` does);
* each placement is the candidate scan of :func:`iosched.bb.placement._scan`
  (earliest segment start at which ``n`` nodes are free all along the
  window and ``sum_s floor((min free_s + tol_s) / bb) >= n``, skipping
  candidates whose window covers a segment that alone lacks them, and
  walking back after a failed window), then the choice ``nodes="first"``
  (the first ``n`` free nodes in topology order) and ``storage="first"``
  (each node, in that order, takes the first burst-buffer node of its
  preference order with a free slot; the held bytes of a pool are summed
  ``bb`` by ``bb`` as :func:`iosched.sched.bbrun.bb_held` does), then the
  reservation (``free - held``, breakpoints at the start and at
  ``start + duration``);
* the cost is ``cum + max(0, t - submit) ** alpha`` in order from the cost
  the timeline's own placements already have (``base``), as
  :func:`iosched.sched.listschedule.waiting_cost`; a job that never fits
  makes it ``inf``.

Every float operation is the one the Python path performs, in the same
order, so the costs are bit-identical and the search's decisions (and its
random draws) are the same: checked against :class:`ListPlan` in
``tests/test_bb_compiled.py``.

Two more steps of a pass run in machine code: the test of whether some
waiting job can start now (:meth:`CompiledListPlan.fits_now`), and the
whole annealing of :func:`iosched.bb.plan.artifact_order`
(:meth:`CompiledListPlan.anneal`, about 180 evaluations in one call). The
annealing draws from the simulation's ``random.Random`` through an
emulation of CPython's generator (MT19937: ``random()`` and ``randint``
as ``_randbelow_with_getrandbits``), whose state is read before and
written back after the call; :func:`anneals` checks once per process that
the emulation draws what this Python draws, and the search keeps the
Python loop when it does not. The Python path remains the reference and
the fallback (option ``evaluator`` of the burst-buffer scheduler; other
node or storage choices, or a timeline with other pools, use it).

numba compiles the kernels at the first use in a process (a few seconds)
and caches them next to this file (``__pycache__``) when it can write there.
numba is an optional extra (``pip install 'iosched[fast]'``): without it
this module still imports, :data:`AVAILABLE` is False, :func:`supports`
is False, and the search uses the Python path
(:class:`iosched.bb.search.PlanOrder` logs it once).
"""

from __future__ import annotations

import functools
import math
import random

import numpy as np

from iosched.bb.placement import _layout
from iosched.sched.timeline import Timeline

try:
    from numba import njit
    #: Whether numba is installed (the optional extra ``fast``); without it
    #: :func:`supports` is False and :class:`CompiledListPlan` cannot be built.
    AVAILABLE = True
except ImportError:
    AVAILABLE = False

    def njit(*args, **kwargs):
        """Stand-in for ``numba.njit`` when numba is missing: leaves the
        kernel a Python function (never called: :func:`supports` is False)."""
        return lambda f: f

__all__ = ["CompiledListPlan", "supports", "anneals", "AVAILABLE"]

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(cache=True, inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@njit(cache=True, inline="always")
def _floordiv(v, w):
    """``v // w`` for floats (Python's floor division: the floor of the
    exact quotient), cheaper: the correctly rounded quotient ``q`` of two
    finite floats is an integer whenever the exact one is, and when ``q`` is
    not an integer the exact quotient lies strictly between ``floor(q)`` and
    ``floor(q) + 1`` (rounding is monotonic), so ``floor(q)`` is the
    answer; an integer ``q`` (the exact quotient may be a hair below it)
    is left to ``//``."""
    q = v / w
    f = np.floor(q)
    if f != q:
        return f
    return v // w


@njit(cache=True, inline="always")
def _lacks(MK, FR, lv, k, tols, W, P, bb, n):
    """1 if segment ``k`` of level ``lv`` alone lacks ``n`` free nodes
    (``MK[lv, k]``) or ``n`` burst-buffer slots (``sum_x floor((FR[lv, k,
    x] + tols[x]) / bb)``, counted up to ``n``), else 0
    (:func:`iosched.bb.placement._lacks`)."""
    c = 0
    for w in range(W):
        c += _popcount(MK[lv, k, w])
    if c < n:
        return 1
    if bb <= 0.0:       # no burst buffer asked: the nodes suffice
        return 0
    tot = 0.0
    for x in range(P):
        tot += _floordiv(FR[lv, k, x] + tols[x], bb)
        if tot >= n:
            return 0
    return 1


@njit(cache=True)
def _scan(ST, MK, FR, lv, ns, tols, n, bb, dur, W, P, bad, mask, mins, mins2, m2):
    """Earliest candidate start on level ``lv`` (:func:`iosched.bb.placement._scan`).

    ``bad`` (int8, length >= ns) is scratch: -1 unknown, 0 good, 1 bad.
    On success, ``mask`` holds the window's free nodes and ``mins`` the
    window's minimum free bytes per pool. Returns the segment index of the
    start, or -1. (Arrays are indexed, never sliced: each view of an array
    costs two atomic reference-count updates.)
    """
    for k in range(ns):
        bad[k] = -1
    i = 0
    while i < ns:
        b = bad[i]
        if b < 0:
            b = bad[i] = _lacks(MK, FR, lv, i, tols, W, P, bb, n)
        if b == 1:
            i += 1
            continue
        end = ST[lv, i] + dur
        j = i
        for w in range(W):
            mask[w] = ~np.uint64(0)
        fail = -1
        while j < ns and (j == i or ST[lv, j] < end):
            b = bad[j]
            if b < 0:
                b = bad[j] = _lacks(MK, FR, lv, j, tols, W, P, bb, n)
            if b == 1:
                fail = j
                break
            c = 0
            for w in range(W):
                mask[w] &= MK[lv, j, w]
                c += _popcount(mask[w])
            if c < n:
                fail = j
                break
            if j == i:
                for x in range(P):
                    mins[x] = FR[lv, j, x]
            else:
                for x in range(P):
                    f = FR[lv, j, x]
                    if f < mins[x]:
                        mins[x] = f
            j += 1
        if fail < 0:
            if bb <= 0.0:
                return i
            tot = 0
            for x in range(P):
                tot += int(_floordiv(mins[x] + tols[x], bb))
            if tot >= n:
                return i
            fail = j - 1
        if bad[fail] == 1:
            i = fail + 1
            continue
        for w in range(W):
            m2[w] = MK[lv, fail, w]
        for x in range(P):
            mins2[x] = FR[lv, fail, x]
        k = fail
        while k > i:
            k -= 1
            c = 0
            for w in range(W):
                m2[w] &= MK[lv, k, w]
                c += _popcount(m2[w])
            if c < n:
                break
            if bb <= 0.0:
                continue
            for x in range(P):
                f = FR[lv, k, x]
                if f < mins2[x]:
                    mins2[x] = f
            tot = 0.0
            for x in range(P):
                tot += _floordiv(mins2[x] + tols[x], bb)
            if tot < n:
                break
        i = k + 1
    return -1


@njit(cache=True, inline="always")
def _copy_row(ST, MK, FR, lv, q, lv2, q2, W, P):
    """Row ``q`` of level ``lv`` into row ``q2`` of level ``lv2``."""
    ST[lv2, q2] = ST[lv, q]
    for w in range(W):
        MK[lv2, q2, w] = MK[lv, q, w]
    for x in range(P):
        FR[lv2, q2, x] = FR[lv, q, x]


@njit(cache=True)
def _evaluate(ST, MK, FR, NS, ORD, CUM, TS, state, order, limit, JN, JBB, JD, JSUB, alpha,
              tols, topo_order, pref, base, W, P, bad, mask, mins, mins2, m2, left, held, amt,
              chosen):
    """List-schedule ``order`` (job indices) from its longest common prefix
    with the order placed so far (``ORD[:state[0]]``).

    Level ``k`` of ``ST/MK/FR/NS`` is the timeline after the first ``k``
    positions; ``CUM[k]`` the cost after position ``k``, ``TS[k]`` the
    start (s) given to position ``k`` (inf if its job never fits). Stops after a
    placement that is not the last when the partial cost ``p - base`` is
    finite and ``rint(p - base) >= limit``. Returns ``(cost, complete)``
    with ``cost`` the (partial) cost minus ``base``.
    """
    n_order = order.shape[0]
    placed = state[0]
    npref = pref.shape[1]
    p = 0
    L = min(n_order, placed)
    while p < L and order[p] == ORD[p]:
        p += 1
    cost = base if p == 0 else CUM[p - 1]
    for k in range(p, n_order):
        job = order[k]
        n = JN[job]
        bb = JBB[job]
        dur = JD[job]
        ns = NS[k]
        s = _scan(ST, MK, FR, k, ns, tols, n, bb, dur, W, P, bad, mask, mins, mins2, m2)
        k1 = k + 1
        if s < 0:
            for q in range(ns):          # level k + 1 is a copy of level k
                _copy_row(ST, MK, FR, k, q, k1, q, W, P)
            NS[k1] = ns
            cost = math.inf
            TS[k] = math.inf
        else:
            t = ST[k, s]
            TS[k] = t
            # nodes="first": the first n free nodes of the window in topology order
            for x in range(P):
                left[x] = int(_floordiv(mins[x] + tols[x], bb)) if bb > 0.0 else 0
                amt[x] = 0.0
                held[x] = 0
            for w in range(W):
                chosen[w] = np.uint64(0)
            taken = 0
            for c in topo_order:
                if (mask[c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
                    # storage="first": the first burst-buffer pool of c's preference order with a slot
                    for y in range(npref):
                        x = pref[c, y]
                        if x < 0:
                            break
                        if left[x] > 0:
                            left[x] -= 1
                            amt[x] += bb
                            held[x] = 1
                            break
                    chosen[c >> 6] |= np.uint64(1) << np.uint64(c & 63)
                    taken += 1
                    if taken == n:
                        break
            # level k + 1 in one pass over level k: the rows before the start
            # (a segment start: no split there) as they are, the rows starting
            # before the end with the reservation (free - held), a split at the
            # end (the row holding it, as it was), then the later rows
            end = t + dur
            for q in range(s):
                _copy_row(ST, MK, FR, k, q, k1, q, W, P)
            q = s
            while q < ns and ST[k, q] < end:
                ST[k1, q] = ST[k, q]
                for w in range(W):
                    MK[k1, q, w] = MK[k, q, w] & ~chosen[w]
                for x in range(P):
                    if held[x]:
                        FR[k1, q, x] = FR[k, q, x] - amt[x]
                    else:
                        FR[k1, q, x] = FR[k, q, x]
                q += 1
            d = q
            if end != math.inf and (q == ns or ST[k, q] != end):
                _copy_row(ST, MK, FR, k, q - 1, k1, d, W, P)
                ST[k1, d] = end
                d += 1
            while q < ns:
                _copy_row(ST, MK, FR, k, q, k1, d, W, P)
                q += 1
                d += 1
            NS[k1] = d
            if cost != math.inf:
                d = t - JSUB[job]
                cost += (d if d > 0.0 else 0.0) ** alpha
        ORD[k] = job
        CUM[k] = cost
        state[0] = k1
        if k1 < n_order:
            part = cost - base
            if part != math.inf and np.rint(part) >= limit:
                return part, False
    return cost - base, True


# Python's random generator (CPython's ``_randommodule.c``, MT19937), so
# that the annealing's draws in machine code are those of the simulation's
# ``random.Random``: its state is read with ``getstate`` before a search and
# written back with ``setstate`` after it. The words are kept in int64
# (values < 2 ** 32); :func:`anneals` checks the emulation against
# the running Python once per process.
_MT_N, _MT_M = 624, 397
_MT_MASK = 0xFFFFFFFF


@njit(cache=True)
def _mt_uint32(mt, pos):
    """``genrand_uint32``: the next 32-bit word; regenerates the 624 words
    when they are used up (``pos[0] >= 624``)."""
    i = pos[0]
    if i >= _MT_N:
        for kk in range(_MT_N):
            y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % _MT_N] & 0x7FFFFFFF)
            v = mt[(kk + _MT_M) % _MT_N] ^ (y >> 1)
            if y & 1:
                v ^= 0x9908B0DF
            mt[kk] = v
        i = 0
    y = mt[i]
    pos[0] = i + 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y & _MT_MASK


@njit(cache=True)
def _mt_random(mt, pos):
    """``random.random()``: 53 random bits as a float in [0, 1)."""
    a = _mt_uint32(mt, pos) >> 5
    b = _mt_uint32(mt, pos) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _mt_randbelow(mt, pos, n):
    """``random.randrange(n)`` for ``0 < n < 2 ** 32``
    (``_randbelow_with_getrandbits``: ``k = n.bit_length()`` bits, drawn again
    while ``>= n``)."""
    k = 0
    m = n
    while m > 0:
        k += 1
        m >>= 1
    r = _mt_uint32(mt, pos) >> (32 - k)
    while r >= n:
        r = _mt_uint32(mt, pos) >> (32 - k)
    return r


@njit(cache=True)
def _mt_draws(mt, pos, spec):
    """Test hook: ``randbelow(n)`` for each ``n > 0`` of ``spec`` and
    ``random()`` for each 0, as floats."""
    out = np.empty(spec.shape[0])
    for q in range(spec.shape[0]):
        out[q] = _mt_randbelow(mt, pos, spec[q]) if spec[q] > 0 else _mt_random(mt, pos)
    return out


def mt_state(rng) -> tuple:
    """``(words, pos)`` of a ``random.Random``'s state for the kernels
    (int64 arrays of shapes ``(624,)`` and ``(1,)``)."""
    st = rng.getstate()[1]
    return np.array(st[:_MT_N], dtype=np.int64), np.array([st[_MT_N]], dtype=np.int64)


def set_mt_state(rng, words, pos) -> None:
    """Write the kernels' ``(words, pos)`` back into ``rng`` (its Gaussian
    cache is kept)."""
    version, _, gauss = rng.getstate()
    rng.setstate((version, tuple(words.tolist()) + (int(pos[0]),), gauss))


@functools.lru_cache(maxsize=1)
def anneals() -> bool:
    """Whether :meth:`CompiledListPlan.anneal` can run here: numba is
    installed and the kernels' generator draws what this Python's
    ``random.Random`` draws (``randint`` over several widths and
    ``random``, through regenerations of the words); checked once per
    process."""
    return AVAILABLE and _mt_check(random.Random(20211))


def _mt_check(rng) -> bool:
    """Whether :func:`_mt_draws` from ``rng``'s state gives ``rng``'s own
    draws and leaves the same state (``rng`` is advanced)."""
    spec = np.array([7, 1, 0, 6, 13, 2, 0, 255, 256, 100, 0, 3] * 120, dtype=np.int64)
    words, pos = mt_state(rng)
    got = _mt_draws(words, pos, spec).tolist()
    want = [float(rng.randint(0, int(n) - 1)) if n > 0 else rng.random() for n in spec]
    after, after_pos = mt_state(rng)
    return got == want and after_pos[0] == pos[0] and bool((after == words).all())


@njit(cache=True)
def _anneal(ST, MK, FR, NS, ORD, CUM, TS, state, perm, best_s, T, cooling_steps, moves_per_step,
            cooling, floor, mt, pos, JN, JBB, JD, JSUB, alpha, tols, topo_order, pref, base, W, P,
            bad, mask, mins, mins2, m2, left, held, amt, chosen, best):
    """The annealing of :func:`iosched.bb.plan.artifact_order` (with the
    early rejection of :func:`iosched.bb.plan._bounded_move`) on orders of
    job indices, from ``perm`` (the best candidate, score ``best_s``) at
    temperature ``T``; draws from ``(mt, pos)`` as the simulation's
    generator would. Leaves the best order in ``best`` and returns
    ``(best score, moves)``. Scores are ``rint`` of the costs (``round``
    of a float: the same integer, held exactly as a float)."""
    L = perm.shape[0]
    for q in range(L):
        best[q] = perm[q]
    current = best_s
    n = 0
    for _ in range(cooling_steps):
        for _ in range(moves_per_step):
            i = _mt_randbelow(mt, pos, L)
            j = _mt_randbelow(mt, pos, L)
            a = perm[i]
            perm[i] = perm[j]
            perm[j] = a
            n += 1
            c, complete = _evaluate(ST, MK, FR, NS, ORD, CUM, TS, state, perm, current, JN, JBB, JD,
                                    JSUB, alpha, tols, topo_order, pref, base, W, P, bad, mask, mins,
                                    mins2, m2, left, held, amt, chosen)
            s = c if c == math.inf else np.rint(c)
            if complete and s < current:
                accept = True
            else:
                r = _mt_random(mt, pos)
                decided = False
                accept = False
                if not complete:
                    if r == 0.0:
                        limit = math.inf
                    else:
                        bound = current - T * math.log(r) + 1.0
                        if s > bound:
                            decided = True
                        limit = np.floor(bound) + 1.0
                    if not decided:
                        c, complete = _evaluate(ST, MK, FR, NS, ORD, CUM, TS, state, perm, limit, JN,
                                                JBB, JD, JSUB, alpha, tols, topo_order, pref, base,
                                                W, P, bad, mask, mins, mins2, m2, left, held, amt,
                                                chosen)
                        s = c if c == math.inf else np.rint(c)
                        if not complete:
                            decided = True
                if not decided:
                    accept = r < math.exp((current - s) / T)
            if accept and s < best_s:
                current = best_s = s
                for q in range(L):
                    best[q] = perm[q]
            elif accept:
                current = s
            else:
                a = perm[i]
                perm[i] = perm[j]
                perm[j] = a
        T = cooling * T
        if floor > T:
            T = floor
    return best_s, n


@njit(cache=True)
def _fits_now(ST, MK, FR, NS, JN, JBB, JD, tols, W, P, bad, mask, mins, mins2, m2, now):
    """Whether some job (index order) alone, placed after the plan's own
    placements (level 0), starts at or before ``now`` (s)."""
    for job in range(JN.shape[0]):
        s = _scan(ST, MK, FR, 0, NS[0], tols, JN[job], JBB[job], JD[job], W, P, bad, mask, mins,
                  mins2, m2)
        if s >= 0 and ST[0, s] <= now:
            return True
    return False


@functools.lru_cache(maxsize=8)
def _topology_arrays(topo, bbs: tuple) -> tuple:
    """``(order, pref)`` of a :class:`~iosched.bb.placement.Topology` for the
    kernels, made once per topology and pool order: the compute nodes in
    topology order (int64, shape ``(nodes,)``) and, for compute node ``c``,
    ``pref[c]`` its burst-buffer nodes in preference order as positions in
    ``bbs`` (int64, shape ``(max id + 1, len(bbs))``, padded with -1)."""
    pos = {s: k for k, s in enumerate(bbs)}
    pref = np.full((max(topo.pref) + 1, max(len(v) for v in topo.pref.values())), -1,
                   dtype=np.int64)
    for c, pr in topo.pref.items():
        pref[c, :len(pr)] = [pos[s] for s in pr]
    return np.array(topo.order, dtype=np.int64), pref


def supports(placer, timeline: Timeline, jobs) -> bool:
    """Whether :class:`CompiledListPlan` evaluates ``jobs`` on ``timeline``
    as ``placer`` would: a :class:`~iosched.bb.placement.BurstBufferPlacer`
    with the choices ``nodes="first"`` and ``storage="first"``, a timeline
    whose pools are exactly the burst-buffer pools (in the topology's
    order) and burst-buffer requests >= 0 (0: compute nodes only, as the
    placer's generic search places them); always False when numba is
    not installed (:data:`AVAILABLE`)."""
    if not AVAILABLE:
        return False
    topo = getattr(placer, "topology", None)
    if topo is None or topo.nodes != "first" or topo.storage_choice != "first":
        return False
    if not _layout(topo, timeline.pool_names)[2]:
        return False
    return all(j.request.bb >= 0 for j in jobs)


class CompiledListPlan:
    """Evaluations of orders of ``jobs`` list-scheduled after the
    placements a :class:`~iosched.sched.listschedule.ListPlan` holds now,
    in machine code (module documentation); the ``ListPlan`` is not
    modified and later changes to it are not seen.

    :param lplan: the ListPlan (its timeline after its current placements,
        e.g. a reserved prefix, is the plan's start; its cost is ``base``).
    :param jobs: the jobs the orders are made of (each order is a
        permutation of a sub-list of them), with ``request.nodes``,
        ``request.bb`` (bytes per node), ``estimate`` (s), ``subtime`` (s).
    :param alpha: cost exponent (:func:`~iosched.sched.listschedule.waiting_cost`).
    :raises ValueError: if :func:`supports` is False for them (numba
        missing, or other placer choices).

    Costs are returned minus ``base``: those of the jobs of the order only,
    summed from ``base`` as the ListPlan sums them (s ** alpha).

    State, for ``L = len(jobs)`` and ``S`` segments at most (the
    snapshot's plus two per placement): ``ST`` (float64, ``(L + 1, S)``,
    segment starts in s), ``MK`` (uint64, ``(L + 1, S, W)``, free compute
    nodes, bit ``i`` of word ``i // 64`` for resource id ``i``), ``FR``
    (float64, ``(L + 1, S, P)``, free bytes of the ``P`` burst-buffer pools),
    ``NS`` (segments per level): level ``k`` is the timeline after the first
    ``k`` placed positions; ``ORD`` / ``CUM`` the placed order (job indices)
    and its cumulative costs. Memory: ``O(L * S * (W + P))``.

    Source: the plan of Kopanski & Rzadca (Euro-Par 2021, Section 3.3,
    Algorithm 2: each job at its earliest start given the jobs before it;
    score ``sum (start - submit) ** alpha``), as the artifact's
    ``alloc_only.py`` (``create_execution_plan``) builds it.
    """

    def __init__(self, lplan, jobs, alpha: float):
        tl = lplan.tl
        placer = lplan.placer
        jobs = list(jobs)
        if not AVAILABLE:
            raise ValueError("CompiledListPlan: numba is not installed (pip install 'iosched[fast]')")
        if not supports(placer, tl, jobs):
            raise ValueError("CompiledListPlan: only nodes='first', storage='first' on burst-buffer pools")
        topo = placer.topology
        bbs, _pidx, _whole = _layout(topo, tl.pool_names)
        st, masks, free = tl.state()
        self.base = lplan.cum[-1] if lplan.cum else 0.0
        S0, L, P = len(st), len(jobs), len(bbs)
        W = max([m.bit_length() for m in masks] + [max(topo.order) + 1]) // 64 + 1
        smax = S0 + 2 * L + 2
        self.ST = np.empty((L + 1, smax))
        self.MK = np.zeros((L + 1, smax, W), dtype=np.uint64)
        self.FR = np.empty((L + 1, smax, P))
        self.NS = np.zeros(L + 1, dtype=np.int64)
        self.ST[0, :S0] = st
        full = (1 << 64) - 1
        self.MK[0, :S0] = [[(m >> (64 * w)) & full for w in range(W)] for m in masks]
        self.FR[0, :S0] = free
        self.NS[0] = S0
        self.ORD = np.full(L, -1, dtype=np.int64)
        self.CUM = np.zeros(L)
        self.TS = np.zeros(L)
        self.state = np.zeros(1, dtype=np.int64)
        self.jobs = jobs
        self.index = {id(j): k for k, j in enumerate(jobs)}
        self._index_of = self.index.__getitem__
        self.JN = np.array([j.request.nodes for j in jobs], dtype=np.int64)
        self.JBB = np.array([float(j.request.bb) for j in jobs])
        self.JD = np.array([float(j.estimate) for j in jobs])
        self.JSUB = np.array([float(j.subtime) for j in jobs])
        self.alpha = float(alpha)
        self.tols = np.array(tl.tols, dtype=np.float64)
        self.topo_order, self.pref = _topology_arrays(topo, tuple(bbs))
        self.W, self.P = W, P
        self.scratch = (np.empty(smax, dtype=np.int8), np.empty(W, dtype=np.uint64),
                        np.empty(P), np.empty(P), np.empty(W, dtype=np.uint64),
                        np.empty(P, dtype=np.int64), np.empty(P, dtype=np.int8), np.empty(P),
                        np.empty(W, dtype=np.uint64))

    def _indices(self, order) -> np.ndarray:
        return np.fromiter(map(self._index_of, map(id, order)), dtype=np.int64, count=len(order))

    def evaluate_until(self, order, limit: float = math.inf) -> tuple:
        """List-schedule ``order``; stop after a placement that is not the
        last once the partial cost ``p`` is finite and ``round(p) >=
        limit`` (the protocol of :func:`iosched.bb.plan.artifact_order`'s
        ``cost_until``).

        :returns: ``(cost, complete)`` (the partial cost when stopped).
        """
        bad, mask, mins, mins2, m2, left, held, amt, chosen = self.scratch
        c, complete = _evaluate(self.ST, self.MK, self.FR, self.NS, self.ORD, self.CUM, self.TS, self.state,
                                self._indices(order), float(limit), self.JN, self.JBB, self.JD,
                                self.JSUB, self.alpha, self.tols, self.topo_order, self.pref,
                                self.base, self.W, self.P, bad, mask, mins, mins2, m2, left, held,
                                amt, chosen)
        return float(c), bool(complete)

    def fits_now(self, now: float) -> bool:
        """Whether some job, list-scheduled alone after the plan's own
        placements, starts at or before ``now`` (s): the test with which
        :meth:`iosched.bb.search.PlanOrder._artifact` decides to search
        (the same starts as :meth:`starts` of a one-job order). The
        evaluations' state is not changed. Source: artifact
        ``alloc_only.py`` (``plan_schedule``), as
        :func:`iosched.bb.search.fits_now`."""
        bad, mask, mins, mins2, m2 = self.scratch[:5]
        return bool(_fits_now(self.ST, self.MK, self.FR, self.NS, self.JN, self.JBB, self.JD,
                              self.tols, self.W, self.P, bad, mask, mins, mins2, m2, float(now)))

    def anneal(self, order, best_s, T: float, rng: random.Random, cooling_steps: int,
               moves_per_step: int, cooling: float, floor: float) -> tuple:
        """The annealing of :func:`iosched.bb.plan.artifact_order` in
        machine code (its ``anneal``): from ``order`` (a permutation of
        :attr:`jobs`, the best candidate, rounded score ``best_s``) at
        initial temperature ``T``, with the early rejection of
        :func:`iosched.bb.plan._bounded_move`, drawing from ``rng`` (its
        state is read, advanced as the Python loop would and written back).
        Source: Kopanski & Rzadca, Euro-Par 2021, Section 3.3, Algorithm 2;
        artifact ``alloc_only.py`` (``plan_schedule``).

        :param best_s: rounded plan score of ``order`` (s ** alpha, finite).
        :param T: initial temperature (s ** alpha, > 0); ``cooling``,
            ``floor``, ``cooling_steps``, ``moves_per_step``: as in
            :func:`~iosched.bb.plan.artifact_order`.
        :returns: ``(best order, its rounded score, moves)``: a list of the
            jobs, an int (s ** alpha), the number of moves (int).
        :raises ValueError: :func:`anneals` is False (this Python's
            ``random`` is not the one emulated), or more than ``2 ** 31``
            jobs.
        """
        if not anneals() or len(order) >= 2 ** 31:
            raise ValueError("CompiledListPlan.anneal: this Python's random generator is not emulated")
        perm = self._indices(order)
        words, pos = mt_state(rng)
        bad, mask, mins, mins2, m2, left, held, amt, chosen = self.scratch
        best = np.empty_like(perm)
        b, n = _anneal(self.ST, self.MK, self.FR, self.NS, self.ORD, self.CUM, self.TS, self.state,
                       perm, float(best_s), float(T), int(cooling_steps), int(moves_per_step),
                       float(cooling), float(floor), words, pos, self.JN, self.JBB, self.JD,
                       self.JSUB, self.alpha, self.tols, self.topo_order, self.pref, self.base,
                       self.W, self.P, bad, mask, mins, mins2, m2, left, held, amt, chosen, best)
        set_mt_state(rng, words, pos)
        jobs = self.jobs
        return [jobs[k] for k in best.tolist()], (b if math.isinf(b) else int(b)), int(n)

    def evaluate(self, order) -> float:
        """Cost of list-scheduling ``order`` (inf if a job never fits)."""
        return self.evaluate_until(order)[0]

    def starts(self, order) -> list:
        """The start (s) each job of ``order`` is given when ``order`` is
        list-scheduled, in order (inf for a job that never fits): the
        ``t`` of :meth:`iosched.sched.listschedule.ListPlan.evaluate`'s
        ``out`` after the plan's own placements, bit for bit."""
        self.evaluate_until(order)
        return self.TS[:len(order)].tolist()
