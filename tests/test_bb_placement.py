"""Placement on the availability profile: the fast paths give the answers of
the plain definitions (window + place at every candidate time; profile
reservations), on random profiles of a dragonfly96-shaped machine."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet

from iosched.bb.model import JobRequest, bb_held
from iosched.bb.placement import BurstBufferPlacer, Topology, earliest_placement, place, pool_name, window
from iosched.sched.placer import Placer
from iosched.sched.profile import INF, AvailabilityProfile
from iosched.sched.timeline import Timeline

COMPUTE = {i: f"node_{i}" for i in range(108) if i % 9}
STORAGE = {i: f"node_{i}" for i in range(0, 108, 9)}
TOPO = Topology(COMPUTE, STORAGE)
CAP = 40e9
PLACER = BurstBufferPlacer(CAP)
PLACER.topology, PLACER.totals = TOPO, {pool_name(s): CAP for s in STORAGE}


class _Job:
    """The core's view of a request of ``n`` nodes x ``bb`` bytes for ``d`` s."""

    def __init__(self, n, bb, d):
        self.nb_res, self.estimate, self.pools = n, d, {}
        self.request = JobRequest(n, bb, 0.0, 0.0, d)


class PlanTimeline:
    """The old burst-buffer plan timeline's calls on a :class:`Timeline` and
    the burst-buffer placer: ``place``/``earliest`` return ``(t, nodes list,
    {node: storage id})``."""

    def __init__(self, prof, topo, now):
        self.tl = Timeline(prof, now)

    def __len__(self):
        return len(self.tl)

    def pop(self):
        self.tl.pop()

    @staticmethod
    def _out(t, alloc):
        return (t, None, None) if alloc is None else (t, alloc.ids, alloc.data)

    def place(self, n, bb, d):
        return self._out(*self.tl.place(_Job(n, bb, d), PLACER))

    def earliest(self, n, bb, d):
        return self._out(*PLACER.earliest(self.tl, _Job(n, bb, d), self.tl.now))

request = st.tuples(st.integers(1, 40), st.sampled_from([1e8, 2.5e9, 7e9, 13e9, 39e9]),
                    st.sampled_from([10.0, 60.0, 300.0, 3600.0, 7200.0]))


def _profile(busy):
    """A profile at now=100 with running jobs ``busy`` placed at their
    earliest start (list of (n, bb, duration))."""
    prof = AvailabilityProfile(ProcSet(*COMPUTE), {pool_name(s): CAP for s in STORAGE}, now=100.0)
    for n, bb, d in busy:
        t, nodes, bb_of = earliest_placement(prof, TOPO, n, bb, d, after=100.0)
        if nodes is not None:
            prof.reserve(t, t + d, nodes, {pool_name(s): b for s, b in bb_held(bb_of, bb).items()})
    return prof


def _brute_earliest(prof, n, bb, d):
    times = sorted({100.0} | {a for a, _b, _f, _p in prof.segments() if a >= 100.0})
    for t in times:
        free, pools = window(prof, t, d)
        got = place(TOPO, free, pools, n, bb, totals={pool_name(s): CAP for s in STORAGE})
        if got is not None:
            return t, got[0], got[1]
    return INF, None, None


@settings(max_examples=40)
@given(st.lists(request, max_size=12), request)
def test_earliest_placement_equals_window_and_place(busy, req):
    prof = _profile(busy)
    got = earliest_placement(prof, TOPO, *req, after=100.0)
    want = _brute_earliest(prof, *req)
    assert got[0] == want[0]
    if want[1] is not None:
        assert list(got[1]) == list(want[1]) and got[2] == want[2]


@settings(max_examples=40)
@given(st.lists(request, max_size=10), st.lists(request, min_size=1, max_size=8),
       st.integers(0, 7))
def test_plan_timeline_equals_profile_reservations(busy, plan, undo):
    prof = _profile(busy)
    tl = PlanTimeline(prof, TOPO, 100.0)
    placed = []
    for n, bb, d in plan:
        t, nodes, bb_of = earliest_placement(prof, TOPO, n, bb, d, after=100.0)
        got = tl.place(n, bb, d)
        assert got[0] == t
        if nodes is None:
            assert got[1] is None
            continue
        assert sorted(got[1]) == list(nodes) and got[2] == bb_of
        placed.append(prof.reserve(t, t + d, nodes,
                                   {pool_name(s): b for s, b in bb_held(bb_of, bb).items()}))
    assert len(tl) == len(placed)
    # undo the last reservations on both sides: the next answers agree again
    k = min(undo, len(placed))
    for _ in range(k):
        tl.pop()
        prof.remove(placed.pop())
    n, bb, d = plan[0]
    t, nodes, bb_of = earliest_placement(prof, TOPO, n, bb, d, after=100.0)
    e = tl.earliest(n, bb, d)
    assert (e[0], None if e[1] is None else sorted(e[1]), e[2]) == (t, None if nodes is None else list(nodes), bb_of)


def test_plan_timeline_leaves_profile_untouched_and_pop_checks():
    prof = _profile([(30, 7e9, 600.0)])
    before = list(prof.segments())
    tl = PlanTimeline(prof, TOPO, 100.0)
    t, nodes, _ = tl.place(96 - 30, 1e8, 60.0)
    assert t == 100.0 and len(nodes) == 66
    t2, _, _ = tl.place(10, 1e8, 60.0)
    assert t2 == 160.0          # the machine is full until the 60 s job ends
    assert list(prof.segments()) == before
    tl.pop()
    tl.pop()
    try:
        tl.pop()
    except IndexError:
        pass
    else:
        raise AssertionError("pop on an empty timeline must raise")
    assert math.isinf(tl.place(97, 1e8, 1.0)[0])


def _placer(nodes, storage):
    p = BurstBufferPlacer(CAP, nodes=nodes, storage=storage)
    p.topology = Topology(COMPUTE, STORAGE, nodes=nodes, storage_choice=storage)
    p.totals = {pool_name(s): CAP for s in STORAGE}
    return p


CHOICES = [("first", "first"), ("consecutive", "most-free"), ("first", "most-free"),
           ("consecutive", "first")]


@pytest.mark.parametrize("nodes,storage", CHOICES)
@settings(max_examples=30, deadline=None)
@given(busy=st.lists(request, max_size=14), req=request)
def test_placer_fast_scan_equals_its_fit_at_every_candidate(nodes, storage, busy, req):
    """The burst-buffer placer's bit-mask scan (with its skips of candidates
    whose windows hold a failing run of segments) gives the answer of the
    generic search (its ``fit`` on the window of every candidate time), for
    every node and burst-buffer choice."""
    placer = _placer(nodes, storage)
    prof = _profile(busy)
    job = _Job(*req)
    t, alloc = placer.earliest(prof, job, 100.0)
    t2, alloc2 = Placer.earliest(placer, prof, job, 100.0)
    assert t == t2
    if alloc2 is not None:
        assert list(alloc.resources) == list(alloc2.resources) and alloc.data == alloc2.data
        assert alloc.pools == alloc2.pools


@pytest.mark.parametrize("nodes,storage", CHOICES[:2])
@settings(max_examples=30, deadline=None)
@given(busy=st.lists(request, max_size=14), req=request)
def test_placer_fit_at_on_a_profile_equals_the_generic_fit_at(nodes, storage, busy, req):
    """The placer's ``fit_at`` on a profile (which refuses a job that needs
    more nodes than are free before its scan) gives the generic answer
    (``fit`` on the window at ``t``) at every breakpoint of the profile."""
    placer = _placer(nodes, storage)
    prof = _profile(busy)
    job = _Job(*req)
    for t in sorted({100.0} | {a for a, *_ in prof.segments()}):
        if t < 100.0:
            continue
        got, ref = placer.fit_at(prof, job, t), Placer.fit_at(placer, prof, job, t)
        assert (got is None) == (ref is None)
        if ref is not None:
            assert list(got.resources) == list(ref.resources) and got.data == ref.data
            assert got.pools == ref.pools


def test_node_and_storage_choices():
    """"first" takes the first free nodes in dragonfly order and the first
    burst-buffer node of a tier with room; "consecutive" the first run of
    consecutive free nodes; "most-free" the node of the tier with most room
    (artifact alloc_only.py: _simple_resource_filter,
    _find_sufficient_burst_buffers; and the earlier consecutive filter)."""
    from iosched.bb.placement import assign_bb, choose_nodes

    free = ProcSet(1, 2, 4, 5, 6)
    assert choose_nodes(Topology(COMPUTE, STORAGE), free, 3) == [1, 2, 4]
    assert choose_nodes(Topology(COMPUTE, STORAGE, nodes="consecutive"), free, 3) == [4, 5, 6]
    # node 1's own chassis has burst-buffer node 0, its group nodes 9, 18, 27
    slots = {0: 0, 9: 1, 18: 5, 27: 1}
    slots.update({s: 0 for s in STORAGE if s not in slots})
    assert assign_bb(Topology(COMPUTE, STORAGE), [1], slots) == {1: 9}
    assert assign_bb(Topology(COMPUTE, STORAGE, storage_choice="most-free"), [1], slots) == {1: 18}
    with pytest.raises(Exception, match="nodes="):
        Topology(COMPUTE, STORAGE, nodes="random")
