"""The shared scheduler core (iosched.sched): machine, timeline snapshots,
placers, list scheduling and the core's bookkeeping, without an engine."""

import math

import pytest
from batsim.batsim import Job as BatsimJob
from hypothesis import given, settings
from hypothesis import strategies as st
from procset import ProcSet

from iosched.errors import InputError
from iosched.sched.core import Scheduler
from iosched.sched.job import Job
from iosched.sched.listschedule import ListPlan, ListSchedule
from iosched.sched.machine import Machine
from iosched.sched.orders import fcfs, sjf
from iosched.sched.placer import Allocation, FirstFit, Placer, Window
from iosched.sched.policies import Easy
from iosched.sched.profile import INF, AvailabilityProfile
from iosched.sched.timeline import Timeline, mask_of, procset_of_mask


class Launcher:
    """Records the core's decisions."""

    def __init__(self):
        self.started, self.rejected, self.calls = [], [], []

    def start(self, running):
        self.started.append((running.job.id, running.start, running.resources))

    def reject(self, job, reason):
        self.rejected.append((job.id, reason))

    def call_me_later(self, t):
        self.calls.append(t)


def bjob(i, res, walltime, subtime=0.0, **extra):
    return BatsimJob(f"w0!{i}", subtime, walltime, res, "p", dict(extra))


def core_on(nb, policy, **kw):
    s = Scheduler(policy, launcher=Launcher(), **kw)
    s.begin(Machine([{"id": i, "name": f"h{i}"} for i in range(nb)]), 0.0)
    return s


# ------------------------------------------------------------------ machine
def test_machine_one_node_per_resource_by_default():
    m = Machine([{"id": 1, "name": "b"}, {"id": 0, "name": "a"}], [{"id": 2, "name": "pfs"}])
    assert m.compute == ProcSet((0, 1))
    assert [n.name for n in m.nodes] == ["a", "b"] and all(n.cores == 1 for n in m.nodes)
    assert m.storage == {2: "pfs"} and m.names == {0: "a", 1: "b"}


def test_machine_groups_cores_of_multicore_nodes_with_memory():
    res = [{"id": i, "name": f"n{i // 4}_c{i % 4}",
            "properties": {"node": f"n{i // 4}", "memory": str(128e9)}} for i in range(8)]
    m = Machine(res)
    assert [(n.name, n.resources, n.memory) for n in m.nodes] == [
        ("n0", ProcSet((0, 3)), 128e9), ("n1", ProcSet((4, 7)), 128e9)]
    assert m.node_of[5].name == "n1" and m.nodes[0].cores == 4


def test_machine_rejects_bad_memory_in_one_line():
    with pytest.raises(InputError, match="resource 0: property memory='lots'"):
        Machine([{"id": 0, "properties": {"node": "n", "memory": "lots"}}])


def test_machine_from_batsim_without_resource_list():
    m = Machine.from_batsim({}, 3)
    assert m.compute == ProcSet((0, 2))


# ----------------------------------------------------------------- timeline
busy_jobs = st.lists(st.tuples(st.integers(1, 8), st.sampled_from([5.0, 10.0, 30.0, INF])), max_size=8)


def _profile(busy, nb=8):
    prof = AvailabilityProfile(ProcSet((0, nb - 1)), {"bw": 10.0}, now=0.0)
    for n, d in busy:
        t, res = prof.earliest_start(n, d, {"bw": 2.0})
        if t < INF:
            prof.reserve(t, t + d, res, {"bw": 2.0})
    return prof


def test_mask_round_trip():
    ps = ProcSet((0, 3), 7, (10, 12))
    assert procset_of_mask(mask_of(ps)) == ps


@settings(max_examples=40, deadline=None)
@given(busy_jobs, busy_jobs)
def test_timeline_push_equals_profile_reserve_and_pop_undoes(busy, plan):
    prof = _profile(busy)
    tl = prof.snapshot()
    before = tl.state()
    placer = FirstFit()
    held = []
    for k, (n, d) in enumerate(plan):
        job = Job(bjob(k, n, d), k, n, d, {"bw": 2.0})
        t_tl, a_tl = tl.place(job, placer)
        t_pr, a_pr = placer.earliest(prof, job, 0.0)
        assert t_tl == t_pr
        if a_pr is None:
            assert a_tl is None
            continue
        assert a_tl.resources == a_pr.resources
        held.append(prof.reserve(t_pr, t_pr + d, a_pr.resources, a_pr.pools))
        for t in (0.0, 5.0, 12.0, 40.0):
            free, pools = prof.free_at(t)
            mask, tpools = tl.window(t, 0.0)
            assert procset_of_mask(mask) == free and tpools["bw"] == pytest.approx(pools["bw"])
    for _ in held:
        tl.pop()
    assert tl.state() == before and len(tl) == 0
    with pytest.raises(IndexError):
        tl.pop()


@settings(max_examples=40, deadline=None)
@given(busy_jobs, st.integers(1, 8), st.sampled_from([1.0, 5.0, 30.0, INF]), st.sampled_from([0.0, 3.0, 12.0]))
def test_first_fit_fast_search_equals_generic_fit(busy, n, d, after):
    """FirstFit's profile search gives the answer of the generic scan of its
    ``fit`` over every candidate time."""
    prof = _profile(busy)
    job = Job(bjob(0, n, d), 0, n, d, {"bw": 2.0})
    t1, a1 = FirstFit().earliest(prof, job, after)
    t2, a2 = Placer.earliest(FirstFit(), prof, job, after)
    assert t1 == t2
    assert (a1 is None) == (a2 is None)
    if a1 is not None:
        assert a1.resources == a2.resources
    got = FirstFit().fit_at(prof, job, after)
    gen = Placer.fit_at(FirstFit(), prof, job, after)
    assert (got is None) == (gen is None)
    if got is not None:
        assert got.resources == gen.resources


def test_window_has_pools_with_tolerance():
    w = Window(0.0, 1.0, 0b11, {"bw": 1.0}, {"bw": 1e-9})
    assert w.count == 2 and w.free == ProcSet((0, 1))
    assert w.has({"bw": 1.0 + 1e-10}) and not w.has({"bw": 1.1}) and not w.has({"other": 1.0})


def test_allocation_from_ids_keeps_order_and_builds_sets():
    a = Allocation([5, 2, 3], {"bw": 1.0}, data="x")
    assert a.ids == [5, 2, 3] and a.resources == ProcSet((2, 3), 5) and a.mask == 0b101100


# ----------------------------------------------------------- list scheduling
def test_list_plan_reuses_prefix_and_matches_from_scratch():
    prof = AvailabilityProfile(ProcSet((0, 3)), now=0.0)
    prof.reserve(0.0, 10.0, ProcSet((0, 1)))
    jobs = [Job(bjob(i, n, d), i, n, d) for i, (n, d) in enumerate([(4, 5.0), (2, 20.0), (2, 5.0)])]
    plan = ListPlan(prof, FirstFit(), 0.0)
    c1 = plan.evaluate(jobs)
    # job 0 waits for the whole machine (t=10); job 1 cannot overlap it and
    # goes after it; job 2 fills the hole before it
    assert [(j.id, t) for j, t, _ in plan.out] == [("w0!0", 10.0), ("w0!1", 15.0), ("w0!2", 0.0)]
    assert c1 == 10.0 + 15.0 + 0.0
    swapped = [jobs[0], jobs[2], jobs[1]]
    c2 = plan.evaluate(swapped)
    fresh = ListPlan(prof, FirstFit(), 0.0)
    assert c2 == fresh.evaluate(swapped)
    assert [(j.id, t) for j, t, _ in plan.out] == [(j.id, t) for j, t, _ in fresh.out]
    assert plan.placements == 5   # the second order re-placed only its last two jobs


def test_list_schedule_policy_starts_what_the_plan_puts_now():
    s = core_on(4, ListSchedule())
    for i, (n, w) in enumerate([(3, 100.0), (2, 50.0), (1, 10.0)]):
        s.submit(bjob(i, n, w))
    s.schedule(0.0)
    assert [x[0] for x in s.launcher.started] == ["w0!0", "w0!2"]
    assert [j.id for j in s.queue] == ["w0!1"]


# ------------------------------------------------------------------- core
def test_core_rejects_queues_ends_and_extends_overruns():
    s = core_on(4, Easy(), order=sjf)
    assert s.submit(bjob(0, 5, 10.0)) is None and s.launcher.rejected[0][0] == "w0!0"
    assert "only 4 compute resources" in s.rejections["w0!0"]
    for i, (n, w) in enumerate([(4, 10.0), (2, 30.0), (2, 5.0)], start=1):
        s.submit(bjob(i, n, w))
    assert [j.id for j in s.queue] == ["w0!3", "w0!1", "w0!2"]   # shortest first
    s.schedule(0.0)
    # w0!3 starts; the head w0!1 is reserved at 5; w0!2 (30 s) would delay it
    assert [x[0] for x in s.launcher.started] == ["w0!3"]
    assert s.head_reservation[:2] == ("w0!1", 5.0)
    s.end("w0!3", "COMPLETED_SUCCESSFULLY", 4.0)
    assert s.profile.free_count(4.0) == 4
    s.schedule(4.0)
    assert [x[0] for x in s.launcher.started] == ["w0!3", "w0!1"]
    assert s.head_reservation[:2] == ("w0!2", 14.0)
    s.schedule(15.0)                     # w0!1's walltime (10 s) has passed: overrun
    assert s.stats["overruns"] == 1
    assert s.running["w0!1"].reservation.end == math.nextafter(15.0, INF)
    assert s.head_reservation[:2] == ("w0!2", math.nextafter(15.0, INF))
    with pytest.raises(ValueError):
        s.wake_up_at(15.0, 15.0)
    s.wake_up_at(18.0, 15.0)
    s.wake_up_at(18.0, 15.0)
    assert s.launcher.calls == [18.0]


def test_core_fixed_pools_and_unreadable_jobs():
    def read(job):
        if "bad" in job.json_dict:
            raise InputError("job field bad")
        return job.requested_resources, 10.0, {"bw": float(job.json_dict.get("bw", 0))}, None

    s = Scheduler(Easy(), launcher=Launcher(), read_job=read, pools={"bw": 4.0}, order=fcfs)
    s.begin(Machine([{"id": 0}, {"id": 1}]), 0.0)
    assert s.submit(bjob(0, 1, 10.0, bad=1)) is None
    assert s.rejections["w0!0"] == "job field bad"
    assert s.submit(bjob(1, 1, 10.0, bw=5)) is None and "'bw'" in s.rejections["w0!1"]
    s.submit(bjob(2, 1, 10.0, bw=3))
    s.submit(bjob(3, 1, 10.0, bw=3))
    s.schedule(0.0)
    assert [x[0] for x in s.launcher.started] == ["w0!2"]   # the pool holds 4
