"""The burst-buffer family's fast paths give the answers of the straightforward
computations (issue 13, "Speed"): plan evaluations that reuse a kept
reference order (:meth:`iosched.sched.listschedule.ListPlan.keep`) against
fresh list scheduling, the artifact's search with and without that reuse,
on random queues of a dragonfly96-shaped machine."""

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet

from iosched.bb import plan
from iosched.bb.model import JobRequest, bb_held
from iosched.bb.placement import BurstBufferPlacer, Topology, earliest_placement, pool_name
from iosched.sched.listschedule import ListPlan, waiting_cost
from iosched.sched.profile import AvailabilityProfile

COMPUTE = {i: f"node_{i}" for i in range(108) if i % 9}
STORAGE = {i: f"node_{i}" for i in range(0, 108, 9)}
TOPO = Topology(COMPUTE, STORAGE)
CAP = 40e9
PLACER = BurstBufferPlacer(CAP)
PLACER.topology, PLACER.totals = TOPO, {pool_name(s): CAP for s in STORAGE}
NOW = 100.0

#: few distinct requests, so that queues hold equal jobs (swapping two of
#: them leaves the timeline equal: the reuse after an equal state is taken)
REQUESTS = [(8, 2.5e9, 600.0), (40, 13e9, 3600.0), (1, 39e9, 60.0), (20, 7e9, 7200.0),
            (90, 1e8, 300.0), (30, 39e9, 3600.0)]


class _Job:
    """A queued job as the plan reads it (``seq``, ``subtime``, ``estimate``,
    ``nb_res``, ``request``)."""

    def __init__(self, seq, n, bb, d, subtime):
        self.seq, self.subtime, self.nb_res, self.estimate, self.pools = seq, subtime, n, d, {}
        self.request = JobRequest(n, bb, 0.0, 0.0, d)

    def __repr__(self):
        return f"J{self.seq}"


def _profile(busy):
    """Profile at NOW with running jobs ``busy`` ((n, bb, d) at their earliest start)."""
    prof = AvailabilityProfile(ProcSet(*COMPUTE), {pool_name(s): CAP for s in STORAGE}, now=NOW)
    for n, bb, d in busy:
        t, nodes, bb_of = earliest_placement(prof, TOPO, n, bb, d, after=NOW)
        if nodes is not None:
            prof.reserve(t, t + d, nodes, {pool_name(s): b for s, b in bb_held(bb_of, bb).items()})
    return prof


def _queue(picks, waits):
    return [_Job(i, *REQUESTS[k], NOW - w) for i, (k, w) in enumerate(zip(picks, waits))]


def _out(lplan):
    return [(j.seq, t, None if a is None else (a.ids, a.data)) for j, t, a in lplan.out]


def _stop_at(bound):
    """A stop rule like the annealing's: stop once the partial cost exceeds ``bound``."""
    return None if bound is None else (lambda c: c > bound)


busy_st = st.lists(st.sampled_from(range(len(REQUESTS))), max_size=6)
queue_st = st.lists(st.tuples(st.sampled_from(range(len(REQUESTS))), st.sampled_from([0.0, 50.0, 900.0])),
                    min_size=2, max_size=9)
ops_st = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.booleans(),
                            st.one_of(st.none(), st.sampled_from([0.0, 5e3, 5e4, 5e5]))),
                  min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(busy_st, queue_st, ops_st, st.sampled_from([1.0, 2.0]))
def test_reference_reuse_equals_fresh_list_scheduling(busy, queue, ops, alpha):
    """Random swaps, stops and keeps: an evaluation that completes gives the
    cost and every job's start, nodes and burst buffers of list-scheduling
    the order on a fresh plan; one that stops gives the fresh cumulative
    cost at that position (for which the stop rule holds) and the fresh
    placements before it; the timeline left equals the fresh one's."""
    prof = _profile([REQUESTS[k] for k in busy])
    jobs = _queue([k for k, _ in queue], [w for _, w in queue])
    cost = waiting_cost(alpha)
    lplan = ListPlan(prof, PLACER, NOW, cost)
    order = list(jobs)
    lplan.evaluate(order)
    lplan.keep()
    for i, j, keep, bound in ops:
        i, j = i % len(order), j % len(order)
        order[i], order[j] = order[j], order[i]
        c, complete = lplan.evaluate_until(order, _stop_at(bound))
        fresh = ListPlan(prof, PLACER, NOW, cost)
        want = fresh.evaluate(order)
        m = len(lplan.out)
        if complete:
            assert m == len(order) and c == want
        else:
            assert m < len(order) and c == fresh.cum[m - 1] and c > bound
        assert _out(lplan) == _out(fresh)[:m] and lplan.cum == fresh.cum[:m]
        part = ListPlan(prof, PLACER, NOW, cost)
        part.evaluate(order[:m])
        assert lplan.tl.state() == part.tl.state() and len(lplan.tl) == len(part.tl)
        if keep:
            lplan.keep()


def test_equal_state_after_a_swap_reuses_the_rest():
    """Swapping two equal jobs leaves the timeline equal: the rest of the
    kept order is reused, not placed again, with the same plan."""
    prof = _profile([REQUESTS[1], REQUESTS[3]])
    jobs = _queue([0, 2, 2, 1, 3, 0], [0.0, 50.0, 50.0, 900.0, 0.0, 50.0])
    lplan = ListPlan(prof, PLACER, NOW, waiting_cost(2.0))
    lplan.evaluate(jobs)
    lplan.keep()
    swapped = [jobs[0], jobs[2], jobs[1]] + jobs[3:]
    before = lplan.placements
    c = lplan.evaluate(swapped)
    fresh = ListPlan(prof, PLACER, NOW, waiting_cost(2.0))
    assert c == fresh.evaluate(swapped) and _out(lplan) == _out(fresh)
    assert lplan.placements - before == 2 and lplan.reused == 3


@settings(max_examples=25, deadline=None)
@given(busy_st, st.lists(st.tuples(st.sampled_from(range(len(REQUESTS))),
                                   st.sampled_from([0.0, 50.0, 900.0])), min_size=6, max_size=11),
       st.integers(0, 2 ** 16))
def test_artifact_search_same_with_and_without_reuse(busy, queue, seed):
    """The artifact's search returns the same order, score and number of
    evaluations, and leaves the random generator in the same state, with
    full evaluations of every move, with early rejection, and with early
    rejection and the kept reference; its result is the score of
    the order list-scheduled from scratch."""
    prof = _profile([REQUESTS[k] for k in busy])
    jobs = _queue([k for k, _ in queue], [w for _, w in queue])
    results = []
    for fast, use_keep in ((False, False), (True, False), (True, True)):
        lplan = ListPlan(prof, PLACER, NOW, waiting_cost(2.0))
        rng = random.Random(seed)
        res = plan.artifact_order(jobs, lplan.evaluate, rng,
                                  cost_until=plan.limit_until(lplan.evaluate_until) if fast else None,
                                  keep=lplan.keep if use_keep else None)
        results.append(([j.seq for j in res.order], res.cost, res.evaluations, rng.random()))
    assert results[0] == results[1] == results[2]
    order = {j.seq: j for j in jobs}
    c = ListPlan(prof, PLACER, NOW, waiting_cost(2.0)).evaluate([order[s] for s in results[0][0]])
    assert (c if math.isinf(c) else round(c)) == results[0][1]


def _assign_node_by_node(topo, nodes, slots):
    """The definition of the ``"first"`` burst-buffer choice: node by node,
    the first storage node of its nearest tier with a free slot."""
    left = dict(slots)
    if sum(left.values()) < len(nodes):
        return None
    out = {}
    for c in nodes:
        chosen = None
        for tier in topo.tiers[c]:
            chosen = next((x for x in tier if left.get(x, 0) > 0), None)
            if chosen is not None:
                break
        if chosen is None:
            return None
        left[chosen] -= 1
        out[c] = chosen
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(COMPUTE)), min_size=1, max_size=96, unique=True),
       st.lists(st.integers(0, 6), min_size=len(STORAGE), max_size=len(STORAGE)), st.booleans())
def test_first_storage_choice_by_runs_equals_node_by_node(nodes, free, topo_order):
    """The run-wise ``"first"`` choice of :func:`assign_bb` gives the
    node-by-node answer (nodes in topology order, as the placer passes
    them, or in any order)."""
    from iosched.bb.placement import assign_bb
    if topo_order:
        nodes = sorted(nodes, key=TOPO.position.__getitem__)
    slots = dict(zip(sorted(STORAGE), free))
    got = assign_bb(TOPO, nodes, slots)
    want = _assign_node_by_node(TOPO, nodes, slots)
    assert got == want and (got is None or list(got) == list(want))
    assert slots == dict(zip(sorted(STORAGE), free))   # not modified
