"""Tests of the baseline schedulers (iosched/schedulers/baseline.py) without an engine.

The schedulers run inside the real pybatsim ``Batsim`` object (so events are
dispatched by pybatsim's own ``_read_bat_msg``), whose network handler is
replaced by :class:`MiniBatsim`, a tiny discrete-event model of Batsim: a
machine of identical compute hosts (plus storage hosts the scheduler must
not use) on which each job runs exactly its given runtime, or is killed at
its walltime. Every message goes through a JSON round trip as on the wire.
"""

import heapq
import json
import math
import random
from pathlib import Path
from unittest import mock

import batsim.batsim
import pytest
from batsim.batsim import Batsim, Job
from batsim.tools.launcher import instanciate_scheduler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from procset import ProcSet

from iosched.errors import InputError
from iosched.sched.adapter import PybatsimScheduler
from iosched.sched.core import Scheduler
from iosched.sched.orders import ORDERS
from iosched.sched.policies import start_in_order
from iosched.paths import REPO_ROOT
from iosched.schedulers.registry import SCHEDULERS, SCHEDULERS_DIR, resolve
from iosched.schedulers.baseline import POLICIES as BASELINE_POLICIES

BASELINE = SCHEDULERS_DIR / "baseline.py"
#: the thin launcher file of the source tree (``pybatsim schedulers/baseline.py``)
THIN_BASELINE = Path(__file__).resolve().parents[1] / "schedulers" / "baseline.py"
POLICIES = ["fcfs", "easy", "easy-sjf", "conservative", "filler"]
EPS = 1e-9


# --------------------------------------------------------------------- engine
class MiniBatsim:
    """Discrete-event stand-in for Batsim 4.2.1, speaking its JSON protocol.

    :param nb: number of compute hosts (ids 0..nb-1).
    :param jobs: list of dicts ``id`` (int), ``subtime``, ``res``, ``walltime``
        (-1: none), ``runtime`` (s), optional ``extra`` (fields added to the
        job object sent to the scheduler).
    :param nb_storage: storage hosts, ids after the compute ones.
    :param start_delay: the job really starts this long after the decision
        (the real Batsim's internal message delays), so it may overrun.
    :param rng: shuffles the events of a message when given.
    :param on_reply: ``on_reply(engine, now)`` called after each reply.
    """

    def __init__(self, nb, jobs, nb_storage=0, start_delay=0.0, rng=None, on_reply=None):
        self.nb = nb
        self.compute = ProcSet((0, nb - 1))
        self.nb_storage = nb_storage
        self.start_delay = start_delay
        self.rng = rng
        self.on_reply = on_reply
        self.specs = {f"w0!{j['id']}": j for j in jobs}
        self.heap = []
        self.count = 0
        for jid, j in sorted(self.specs.items(), key=lambda kv: (kv[1]["subtime"], kv[1]["id"])):
            self.push(j["subtime"], "submit", jid)
        self.last_submit = max((j["subtime"] for j in jobs), default=0.0)
        self.now = 0.0
        self.began = self.ended = False
        self.submitted = []          # job ids in the order they were sent
        self.started = {}            # job id -> (decision time, ProcSet)
        self.start_order = []
        self.rejected = {}           # job id -> time
        self.completed = {}          # job id -> (time, state)
        self.busy = {}               # host -> job id
        self.messages = 0

    def push(self, t, kind, payload):
        heapq.heappush(self.heap, (t, self.count, kind, payload))
        self.count += 1

    # --- engine -> scheduler
    def next_message(self):
        self.messages += 1
        assert self.messages < 100000, "too many messages"
        if not self.began:
            self.began = True
            return {"now": 0.0, "events": [{"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": self.begins()}]}
        assert not self.ended
        if not self.heap:
            waiting = [j for j in self.submitted if j not in self.started and j not in self.rejected]
            assert not waiting, f"jobs left waiting with nothing running: {waiting}"
            assert not self.busy
            self.ended = True
            return {"now": self.now, "events": [{"timestamp": self.now, "type": "SIMULATION_ENDS", "data": {}}]}
        t = self.heap[0][0]
        self.now = t
        events, notify = [], False
        while self.heap and self.heap[0][0] == t:
            _, _, kind, jid = heapq.heappop(self.heap)
            if kind == "submit":
                j = self.specs[jid]
                self.submitted.append(jid)
                job = {"id": jid, "subtime": j["subtime"], "res": j["res"], "profile": "p",
                       **j.get("extra", {})}
                if j["walltime"] != -1:
                    job["walltime"] = j["walltime"]
                events.append({"timestamp": t, "type": "JOB_SUBMITTED", "data": {"job_id": jid, "job": job}})
                notify |= t == self.last_submit and len(self.submitted) == len(self.specs)
            elif kind == "end":
                state = self.completed[jid][1]
                alloc = self.started[jid][1]
                for h in alloc:
                    assert self.busy.pop(h) == jid
                events.append({"timestamp": t, "type": "JOB_COMPLETED", "data": {
                    "job_id": jid, "job_state": state, "return_code": 0 if state == "COMPLETED_SUCCESSFULLY" else -1,
                    "alloc": str(alloc)}})
            else:
                events.append({"timestamp": t, "type": "REQUESTED_CALL", "data": {}})
        if self.rng is not None:
            # interleave completions and submissions at random, but keep the
            # simultaneous submissions in workload order (as Batsim does)
            subs = iter([e for e in events if e["type"] == "JOB_SUBMITTED"])
            self.rng.shuffle(events)
            events = [next(subs) if e["type"] == "JOB_SUBMITTED" else e for e in events]
        if notify:
            events.append({"timestamp": t, "type": "NOTIFY", "data": {"type": "no_more_static_job_to_submit"}})
        return {"now": t, "events": events}

    def begins(self):
        hosts = [{"id": i, "name": f"node_{i}", "state": "idle", "properties": {"role": ""}, "zone_properties": {}}
                 for i in range(self.nb)]
        storage = [{"id": self.nb + i, "name": f"storage_{i}", "state": "idle",
                    "properties": {"role": "storage"}, "zone_properties": {}} for i in range(self.nb_storage)]
        return {
            "nb_resources": self.nb + self.nb_storage, "nb_compute_resources": self.nb,
            "nb_storage_resources": self.nb_storage, "allow_compute_sharing": False,
            "allow_storage_sharing": True,
            "config": {"redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379,
                       "redis-prefix": "default", "profiles-forwarded-on-submission": False,
                       "dynamic-jobs-enabled": False, "dynamic-jobs-acknowledged": False,
                       "profile-reuse-enabled": False, "sched-config": "", "forward-unknown-events": False},
            "compute_resources": hosts, "storage_resources": storage,
            "workloads": {"w0": "inputs/test.json"},
            "profiles": {"w0": {"p": {"type": "delay", "delay": 1}}},
        }

    # --- scheduler -> engine
    def reply(self, msg):
        assert msg["now"] >= self.now
        now = self.now
        for e in msg["events"]:
            assert e["timestamp"] <= msg["now"]
            d = e["data"]
            if e["type"] == "EXECUTE_JOB":
                jid = d["job_id"]
                assert jid in self.submitted, f"{jid} executed before its submission"
                assert jid not in self.started, f"{jid} executed twice"
                assert jid not in self.rejected, f"{jid} executed after its rejection"
                alloc = ProcSet.from_str(d["alloc"])
                spec = self.specs[jid]
                assert len(alloc) == spec["res"], f"{jid}: alloc {alloc} for {spec['res']} resources"
                assert alloc.issubset(self.compute), f"{jid}: alloc {alloc} outside the compute hosts"
                clash = [h for h in alloc if h in self.busy]
                assert not clash, f"{jid} at {now}: hosts {clash} already run {[self.busy[h] for h in clash]}"
                for h in alloc:
                    self.busy[h] = jid
                self.started[jid] = (now, alloc)
                self.start_order.append(jid)
                wt, rt = spec["walltime"], spec["runtime"]
                if wt != -1 and rt >= wt:
                    dur, state = wt, "COMPLETED_WALLTIME_REACHED"
                else:
                    dur, state = rt, "COMPLETED_SUCCESSFULLY"
                self.completed[jid] = (now + self.start_delay + dur, state)
                self.push(now + self.start_delay + dur, "end", jid)
            elif e["type"] == "REJECT_JOB":
                jid = d["job_id"]
                assert jid in self.submitted and jid not in self.started and jid not in self.rejected
                self.rejected[jid] = now
            elif e["type"] == "CALL_ME_LATER":
                self.push(max(d["timestamp"], now), "call", None)
            else:
                raise AssertionError(f"unexpected event {e['type']}")
        if self.on_reply is not None:
            self.on_reply(self, now)


class FakeNetwork:
    """Replaces pybatsim's ZeroMQ NetworkHandler: the 'endpoint' is the engine."""

    def __init__(self, engine, timeout=None, type=None):
        self.engine = engine

    def bind(self):
        pass

    def recv(self, blocking=False):
        return json.loads(json.dumps(self.engine.next_message()))

    def send(self, msg):
        self.engine.reply(json.loads(json.dumps(msg)))

    def close(self):
        pass


def make_scheduler(policy):
    """Instantiate Baseline the way the pybatsim launcher does (from the file)."""
    return instanciate_scheduler(str(BASELINE), {"policy": policy})


def run(policy, nb, jobs, **kw):
    """Simulate ``jobs`` on ``nb`` hosts with ``policy``; returns (engine, scheduler, bs)."""
    sched = kw.pop("scheduler", None) or make_scheduler(policy)
    checks = kw.pop("checks", None)
    engine = MiniBatsim(nb, jobs, **kw)
    if checks is not None:
        engine.on_reply = lambda eng, now: checks(eng, sched, now)
    # (pybatsim also raises the recursion limit; leave the test process alone)
    with mock.patch.object(batsim.batsim, "NetworkHandler", FakeNetwork), \
            mock.patch.object(batsim.batsim.sys, "setrecursionlimit"):
        bs = Batsim(sched, engine, 2000)
        bs.start()
    assert engine.ended
    # every submitted job ends in exactly one of started / rejected
    assert set(engine.started).isdisjoint(engine.rejected)
    assert set(engine.started) | set(engine.rejected) == set(engine.specs)
    assert set(engine.completed) == set(engine.started)
    assert bs.nb_jobs_submitted == bs.nb_jobs_scheduled + bs.nb_jobs_rejected
    assert not sched.queue and not sched.running
    return engine, sched, bs


def free_hosts(engine):
    """Number of idle compute hosts in the engine."""
    return engine.nb - len(engine.busy)


# ----------------------------------------------------------------- workloads
@st.composite
def workloads(draw, max_nb=6, max_jobs=12, float_times=False):
    """(nb hosts, jobs): random small workloads, some jobs invalid (res <= 0 or > nb)."""
    nb = draw(st.integers(1, max_nb))
    n = draw(st.integers(1, max_jobs))
    time = st.floats(0, 30, allow_nan=False).map(lambda x: round(x, 3)) if float_times \
        else st.integers(0, 30).map(float)
    jobs = []
    for i in range(n):
        res = draw(st.one_of(st.integers(1, nb), st.integers(1, nb), st.integers(-1, nb + 3)))
        wall = draw(st.one_of(st.integers(1, 20).map(float), st.just(-1)))
        hi = wall if wall != -1 else 20.0
        if float_times:
            runtime = draw(st.floats(0, hi).map(lambda x: min(hi, round(x, 3))))
        else:
            runtime = float(draw(st.integers(0, int(hi))))
        jobs.append({"id": i, "subtime": draw(time), "res": res, "walltime": wall, "runtime": runtime})
    return nb, jobs


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid(engine, jid):
    """Whether a job can run on the engine's machine."""
    return 1 <= engine.specs[jid]["res"] <= engine.nb


# --------------------------------------------------------- property tests
@pytest.mark.parametrize("policy", POLICIES)
@SETTINGS
@given(w=workloads(), storage=st.integers(0, 2), rnd=st.randoms(use_true_random=False))
def test_no_double_allocation_and_every_job_accounted(policy, w, storage, rnd):
    nb, jobs = w
    engine, sched, _ = run(policy, nb, jobs, nb_storage=storage, rng=rnd)
    for jid in engine.specs:
        if valid(engine, jid):
            assert jid in engine.started
        else:
            # rejected in the reply to its own submission, with a reason
            assert engine.rejected[jid] == engine.specs[jid]["subtime"]
            reason = sched.rejections[jid]
            assert str(engine.specs[jid]["res"]) in reason
    assert set(sched.rejections) == set(engine.rejected)


@pytest.mark.parametrize("policy", POLICIES)
@SETTINGS
@given(w=workloads(), delay=st.sampled_from([0.005, 0.5, 1.0, 3.0]), rnd=st.randoms(use_true_random=False))
def test_overruns_never_double_allocate(policy, w, delay, rnd):
    """Like the real Batsim, jobs start ``delay`` after the decision, so jobs
    that reach their walltime end after the scheduler's estimate and a pass
    may happen in between: their hosts must not be given away."""
    nb, jobs = w
    engine, sched, _ = run(policy, nb, jobs, start_delay=delay, rng=rnd)
    assert all(valid(engine, j) for j in engine.started)


@SETTINGS
@given(w=workloads(float_times=True))
def test_fcfs_starts_in_submission_order_and_never_idles_the_head(w):
    nb, jobs = w

    def checks(engine, sched, now):
        q = sched.queue
        if q:
            assert q[0].requested_resources > free_hosts(engine), "FCFS head fits but waits"

    engine, _, _ = run("fcfs", nb, jobs, checks=checks)
    order = [j for j in engine.submitted if j in engine.started]
    assert engine.start_order == order
    starts = [engine.started[j][0] for j in order]
    assert starts == sorted(starts)


def sjf_key(engine, jid):
    """EASY-SJF queue key of a job: (walltime or inf, submission rank)."""
    wt = engine.specs[jid]["walltime"]
    return (wt if wt != -1 else math.inf, engine.submitted.index(jid))


def head_tracker(sjf=False):
    """Checks EASY's head reservation after each pass; records, for each job,
    the reservation it got when it became head (``first``)."""
    state = {"head": None, "first": {}, "last": {}, "n_started": 0}

    def checks(engine, sched, now):
        hr = sched.head_reservation
        q = sched.queue
        new = engine.start_order[state["n_started"]:]     # started by this reply
        state["n_started"] = len(engine.start_order)
        if q:
            # the head does not fit now (else EASY would have started it)
            assert q[0].requested_resources > free_hosts(engine)
            assert hr is not None and hr.job_id == q[0].id
            assert hr.start > now
            if hr.job_id == state["head"]:
                if hr.start > state["last"][hr.job_id] + EPS:
                    # FCFS: never. SJF: only if a job ahead of it in the
                    # queue (a shorter one that just arrived) started
                    assert sjf, f"head {hr.job_id} postponed from {state['last'][hr.job_id]} to {hr.start}"
                    assert any(sjf_key(engine, j) < sjf_key(engine, hr.job_id) for j in new)
            else:
                state["first"].setdefault(hr.job_id, hr.start)
            state["last"][hr.job_id] = hr.start
            state["head"] = hr.job_id
        else:
            assert hr is None
            state["head"] = None
        # jobs backfilled now never use the head's reserved hosts past its start
        if hr is not None and hr.start < math.inf:
            for jid in new:
                spec = engine.specs[jid]
                est_end = now + (spec["walltime"] if spec["walltime"] != -1 else math.inf)
                if est_end > hr.start + EPS:
                    assert engine.started[jid][1].isdisjoint(hr.resources), (
                        f"{jid} backfilled on the head's hosts {hr.resources}")

    return state, checks


@SETTINGS
@given(w=workloads(max_nb=8, max_jobs=14), rnd=st.randoms(use_true_random=False))
def test_easy_never_delays_the_head(w, rnd):
    nb, jobs = w
    state, checks = head_tracker()
    engine, _, _ = run("easy", nb, jobs, checks=checks, rng=rnd)
    for jid, t in state["first"].items():
        assert engine.started[jid][0] <= t + EPS, (
            f"{jid} started at {engine.started[jid][0]}, after its head reservation {t}")
    # FCFS order among the jobs that never were backfilled: a job only starts
    # before an earlier one by backfilling, i.e. never while it is the head
    for jid in state["first"]:
        assert jid in engine.started


@SETTINGS
@given(w=workloads(max_nb=8, max_jobs=14, float_times=True))
def test_easy_sjf_keeps_head_reservation_and_shortest_first(w):
    nb, jobs = w
    state, checks = head_tracker(sjf=True)

    def all_checks(engine, sched, now):
        checks(engine, sched, now)
        est = [j.requested_time if j.requested_time > 0 else math.inf for j in sched.queue]
        assert est == sorted(est), "SJF queue is not sorted by requested time"

    run("easy-sjf", nb, jobs, checks=all_checks)


@SETTINGS
@given(w=workloads(max_nb=8, max_jobs=14), rnd=st.randoms(use_true_random=False))
def test_conservative_never_delays_a_reservation(w, rnd):
    nb, jobs = w
    first, last = {}, {}

    def checks(engine, sched, now):
        for jid, plan in sched.plans.items():
            assert jid not in engine.started
            assert plan.start > now, "a due reservation was not started"
            if jid in last:
                assert plan.start <= last[jid] + EPS, (
                    f"reservation of {jid} delayed from {last[jid]} to {plan.start}")
            first.setdefault(jid, plan.start)
            last[jid] = plan.start
        assert set(sched.plans) == {j.id for j in sched.queue}
        # reservations never overlap each other nor running jobs
        sched.profile.check_consistency()

    engine, sched, _ = run("conservative", nb, jobs, checks=checks, rng=rnd)
    for jid, t in first.items():
        assert engine.started[jid][0] <= t + EPS
    assert sched.stats["replans"] == 0


@SETTINGS
@given(w=workloads(max_nb=8, max_jobs=14, float_times=True), rnd=st.randoms(use_true_random=False))
def test_filler_never_idles_a_host_a_waiting_job_fits(w, rnd):
    nb, jobs = w

    def checks(engine, sched, now):
        for job in sched.queue:
            assert job.requested_resources > free_hosts(engine), (
                f"{job.id} needs {job.requested_resources} hosts, {free_hosts(engine)} idle")

    run("filler", nb, jobs, checks=checks, rng=rnd)


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=40, deadline=None)
@given(w=workloads(max_nb=5, max_jobs=10, float_times=True))
def test_deterministic(policy, w):
    nb, jobs = w
    a, _, _ = run(policy, nb, jobs)
    b, _, _ = run(policy, nb, jobs)
    assert a.started == b.started and a.start_order == b.start_order


#: the old ``backfilling`` names -> baseline policy classes
BACKFILLING = {"none": "fcfs", "easy": "easy", "conservative": "conservative", "filler": "filler"}


class PoolScheduler(PybatsimScheduler):
    """A scheduler aware of a scalar pool (a shared burst buffer of 10 units);
    each job holds the amount given in its ``units`` field while it runs (not
    ``bb``: that is the burst-buffer family's earlier field, which every
    scheduler reads as a burst-buffer request, issue 26)."""

    def make_core(self, options):
        policy = BASELINE_POLICIES[BACKFILLING[options["backfilling"]]][0]()
        return Scheduler(policy, order=ORDERS[options.get("order", "fcfs")], pools={"bb": 10.0},
                         pools_needed=self.pools_needed)

    @staticmethod
    def pools_needed(job):
        return {"bb": float(job.json_dict["units"])} if job.json_dict.get("units") else {}


@pytest.mark.parametrize("backfilling,order", [("none", "fcfs"), ("easy", "fcfs"), ("easy", "sjf"),
                                               ("conservative", "fcfs"), ("filler", "fcfs")])
@SETTINGS
@given(w=workloads(), data=st.data())
def test_pool_aware_passes_never_over_commit_the_pool(backfilling, order, w, data):
    nb, jobs = w
    for j in jobs:
        j["extra"] = {"units": data.draw(st.sampled_from([0, 1, 2.5, 4, 6, 10, 12]))}
    sched = PoolScheduler({"backfilling": backfilling, "order": order})

    def checks(engine, sched, now):
        used = sum(engine.specs[j]["extra"]["units"] for j in set(engine.busy.values()))
        assert used <= 10.0, f"burst buffer over-committed at {now}: {used}"
        if backfilling == "filler":
            for job in sched.queue:
                assert (job.requested_resources > free_hosts(engine)
                        or job.json_dict["units"] > 10.0 - used + EPS), f"{job.id} fits but waits"

    engine, sched, _ = run(None, nb, jobs, scheduler=sched, checks=checks)
    for jid, spec in engine.specs.items():
        if not valid(engine, jid):
            assert jid in engine.rejected
        elif spec["extra"]["units"] > 10:
            assert jid in engine.rejected and "'bb'" in sched.rejections[jid]
        else:
            assert jid in engine.started


# ------------------------------------------------------------ scenarios
def test_easy_backfills_short_job_but_not_long_one():
    # 4 hosts; job 0 holds 3 hosts for 10 s; job 1 (head) needs 4 -> reserved at 10;
    # job 2 (1 host, 5 s) backfills now; job 3 (1 host, 50 s) would delay job 1
    jobs = [
        {"id": 0, "subtime": 0.0, "res": 3, "walltime": 10.0, "runtime": 10.0},
        {"id": 1, "subtime": 1.0, "res": 4, "walltime": 10.0, "runtime": 10.0},
        {"id": 2, "subtime": 2.0, "res": 1, "walltime": 5.0, "runtime": 5.0},
        {"id": 3, "subtime": 2.0, "res": 1, "walltime": 50.0, "runtime": 50.0},
    ]
    for policy, expected in [
        ("easy", {"w0!0": 0.0, "w0!1": 10.0, "w0!2": 2.0, "w0!3": 20.0}),
        ("conservative", {"w0!0": 0.0, "w0!1": 10.0, "w0!2": 2.0, "w0!3": 20.0}),
        ("fcfs", {"w0!0": 0.0, "w0!1": 10.0, "w0!2": 20.0, "w0!3": 20.0}),
        ("filler", {"w0!0": 0.0, "w0!1": 57.0, "w0!2": 2.0, "w0!3": 7.0}),
    ]:
        engine, _, _ = run(policy, 4, jobs)
        assert {j: s[0] for j, s in engine.started.items()} == expected, policy


def test_easy_sjf_orders_by_walltime():
    jobs = [
        {"id": 0, "subtime": 0.0, "res": 2, "walltime": 10.0, "runtime": 10.0},
        {"id": 1, "subtime": 1.0, "res": 2, "walltime": 30.0, "runtime": 30.0},
        {"id": 2, "subtime": 1.0, "res": 2, "walltime": 20.0, "runtime": 20.0},
    ]
    engine, _, _ = run("easy-sjf", 2, jobs)
    assert engine.start_order == ["w0!0", "w0!2", "w0!1"]
    engine, _, _ = run("easy", 2, jobs)
    assert engine.start_order == ["w0!0", "w0!1", "w0!2"]


def test_conservative_compresses_when_a_job_ends_early():
    # job 0 asks 100 s but ends at 10; job 1 (all hosts) was reserved at 100
    jobs = [
        {"id": 0, "subtime": 0.0, "res": 2, "walltime": 100.0, "runtime": 10.0},
        {"id": 1, "subtime": 1.0, "res": 4, "walltime": 10.0, "runtime": 10.0},
        {"id": 2, "subtime": 2.0, "res": 2, "walltime": 200.0, "runtime": 5.0},
    ]
    engine, sched, _ = run("conservative", 4, jobs)
    assert engine.started["w0!1"][0] == 10.0
    # job 2 would delay job 1's reservation (at 100, then 10): it goes after it
    assert engine.started["w0!2"][0] == 20.0
    assert sched.stats["compressions"] >= 1


def test_conservative_backfills_without_delaying_any_reservation():
    # job 1 reserved at 10 on 3 hosts, job 2 reserved at 20 on 4; job 3 (1 host,
    # 8 s) fits before job 1's start on host 3 -> starts now
    jobs = [
        {"id": 0, "subtime": 0.0, "res": 3, "walltime": 10.0, "runtime": 10.0},
        {"id": 1, "subtime": 0.0, "res": 3, "walltime": 10.0, "runtime": 10.0},
        {"id": 2, "subtime": 0.0, "res": 4, "walltime": 10.0, "runtime": 10.0},
        {"id": 3, "subtime": 1.0, "res": 1, "walltime": 8.0, "runtime": 8.0},
        {"id": 4, "subtime": 1.0, "res": 2, "walltime": 30.0, "runtime": 30.0},
    ]
    engine, _, _ = run("conservative", 4, jobs)
    started = {j: s[0] for j, s in engine.started.items()}
    assert started == {"w0!0": 0.0, "w0!1": 10.0, "w0!2": 20.0, "w0!3": 1.0, "w0!4": 30.0}


def test_jobs_without_walltime_hold_their_hosts_until_completion():
    jobs = [
        {"id": 0, "subtime": 0.0, "res": 2, "walltime": -1, "runtime": 30.0},
        {"id": 1, "subtime": 1.0, "res": 3, "walltime": 5.0, "runtime": 5.0},
        {"id": 2, "subtime": 2.0, "res": 1, "walltime": -1, "runtime": 3.0},
    ]
    for policy in POLICIES:
        engine, _, _ = run(policy, 3, jobs)
        assert engine.started["w0!1"][0] == 30.0, policy
    engine, _, _ = run("easy", 3, jobs)
    # the head (job 1) has no finite reservation bound: job 2 backfills freely
    assert engine.started["w0!2"][0] == 2.0


def test_rejections_have_reasons():
    jobs = [
        {"id": 0, "subtime": 0.0, "res": 5, "walltime": 10.0, "runtime": 1.0},
        {"id": 1, "subtime": 0.0, "res": 0, "walltime": 10.0, "runtime": 1.0},
        {"id": 2, "subtime": 3.0, "res": 4, "walltime": 10.0, "runtime": 1.0},
    ]
    for policy in POLICIES:
        engine, sched, bs = run(policy, 4, jobs, nb_storage=2)
        assert engine.rejected == {"w0!0": 0.0, "w0!1": 0.0}
        assert "5" in sched.rejections["w0!0"] and "4 compute resources" in sched.rejections["w0!0"]
        assert "0" in sched.rejections["w0!1"]
        assert engine.started["w0!2"] == (3.0, ProcSet((0, 3)))  # storage hosts 4, 5 unused
        assert bs.nb_jobs_rejected == 2


def test_walltime_overrun_keeps_hosts_busy():
    # with a 5 ms start delay, job 0 is killed at 10.005 although the scheduler
    # expected its end at 10; job 1 arrives at 10.001 and must not get its hosts
    jobs = [
        {"id": 0, "subtime": 0.0, "res": 2, "walltime": 10.0, "runtime": 20.0},
        {"id": 1, "subtime": 10.001, "res": 2, "walltime": 10.0, "runtime": 1.0},
    ]
    for policy in POLICIES:
        engine, sched, _ = run(policy, 2, jobs, start_delay=0.005)
        assert engine.completed["w0!0"] == (pytest.approx(10.005), "COMPLETED_WALLTIME_REACHED")
        assert engine.started["w0!1"][0] == pytest.approx(10.005), policy
        assert sched.stats["overruns"] >= 1
        assert sched.stats["walltime_reached"] == 1


# --------------------------------------------------- handlers via a fake bs
class FakeBs:
    """Minimal pybatsim Batsim surface used by the baseline scheduler."""

    def __init__(self, nb):
        self.nb_compute_resources = nb
        self.machines = {"compute": [{"id": i} for i in range(nb)], "storage": []}
        self.now = 0.0
        self.executed, self.rejected, self.calls = [], [], []

    def time(self):
        return self.now

    def execute_jobs(self, jobs):
        self.executed.extend((self.now, j.id, j.allocation) for j in jobs)

    def reject_jobs(self, jobs):
        self.rejected.extend(j.id for j in jobs)

    def wake_me_up_at(self, t):
        self.calls.append(t)


def make_job(i, res, walltime, subtime=0.0):
    """A pybatsim Job ``w0!i``."""
    return Job(f"w0!{i}", subtime, walltime, res, "p", {})


def test_job_killed_and_completed_are_idempotent():
    s = make_scheduler("easy")
    s.bs = bs = FakeBs(2)
    s.onSimulationBegins()
    j = make_job(0, 2, 100.0)
    s.onJobSubmission(j)
    s.onNoMoreEvents()
    assert bs.executed == [(0.0, "w0!0", ProcSet((0, 1)))]
    bs.now = 5.0
    j.job_state = Job.State.COMPLETED_KILLED
    s.onJobCompletion(j)
    s.onJobsKilled([j])        # JOB_KILLED after JOB_COMPLETED: nothing more to free
    s.onNoMoreEvents()
    assert s.profile.free_count(5.0) == 2 and not s.running
    k = make_job(1, 2, 10.0, 5.0)
    s.onJobSubmission(k)
    s.onNoMoreEvents()
    assert bs.executed[-1] == (5.0, "w0!1", ProcSet((0, 1)))
    s.onJobsKilled([k])        # JOB_KILLED alone also frees the hosts
    assert s.profile.free_count(5.0) == 2


def test_pass_runs_once_per_message_not_per_event():
    s = make_scheduler("fcfs")
    s.bs = bs = FakeBs(4)
    s.onSimulationBegins()
    for i in range(3):
        s.onJobSubmission(make_job(i, 1, 10.0))
    assert bs.executed == []   # nothing decided before onNoMoreEvents
    s.onNoMoreEvents()
    assert [e[1] for e in bs.executed] == ["w0!0", "w0!1", "w0!2"]


def test_unknown_policy_and_registry():
    with pytest.raises(InputError, match="policy='nope'"):
        make_scheduler("nope")
    with pytest.raises(InputError):
        make_scheduler("greedy")
    for name in POLICIES:
        path, options = resolve(name)
        assert path == BASELINE and options == {"policy": name}
        assert make_scheduler(options["policy"]).policy == name
        options["policy"] = "changed"
        assert SCHEDULERS[name][1] == {"policy": name}   # resolve returns a copy
    assert resolve(str(BASELINE)) == (BASELINE, {})
    assert resolve(str(THIN_BASELINE)) == (THIN_BASELINE, {})
    with pytest.raises(InputError, match="not-a-scheduler"):
        resolve("not-a-scheduler")
    assert REPO_ROOT == THIN_BASELINE.parents[1]
    assert not (REPO_ROOT / "schedulers" / "__init__.py").exists()


# ------------------------------------------- the shortcuts change no decision
class TextbookEasy:
    """EASY exactly as stated (Mu'alem & Feitelson 2001): the head's
    reservation made in every pass, the backfill asks the placer about
    every waiting job, the reservation removed afterwards."""

    def schedule(self, s, now):
        head = start_in_order(s, now)
        if head is None:
            return
        t, alloc = s.earliest(head, now)
        hold = s.reserve(head, t, alloc) if t < math.inf else None
        for job in s.queue:
            if s.profile.free_count(now) == 0:
                break
            if job is not head:
                got = s.fit_now(job, now)
                if got is not None:
                    s.start(job, now, got)
        if hold is not None:
            s.profile.remove(hold)


class TextbookConservative(BASELINE_POLICIES["conservative"][0]):
    """Conservative backfilling whose compression removes and re-makes
    every reservation (no what-if)."""

    def _compress(self, s, now):
        for job in s.queue:
            old = self.plans.get(job.id)
            if old is None or old.start <= now:
                continue
            if old.reservation is not None:
                s.profile.remove(old.reservation)
            new = self._plan(s, job, now)
            assert new.start <= old.start
            self._set(job, new)


class Textbook(PybatsimScheduler):
    def make_core(self, options):
        policy = TextbookEasy() if options["policy"] == "easy" else TextbookConservative()
        return Scheduler(policy, name="Textbook")


@pytest.mark.parametrize("policy", ["easy", "conservative"])
@SETTINGS
@given(w=workloads(max_nb=8, max_jobs=14, float_times=True),
       delay=st.sampled_from([0.0, 0.0, 0.5, 3.0]), rnd=st.randoms(use_true_random=False))
def test_same_decisions_as_the_textbook_algorithm(policy, w, delay, rnd):
    """EASY's lazy or reused head reservation, the backfill's skip of jobs
    larger than the free count, and conservative compression by what-if
    give exactly the decisions of the algorithms as stated."""
    nb, jobs = w
    seed = rnd.random()
    ours, _, _ = run(policy, nb, jobs, start_delay=delay, rng=random.Random(seed))
    ref, _, _ = run(policy, nb, jobs, start_delay=delay, rng=random.Random(seed),
                    scheduler=Textbook({"policy": policy}))
    assert ours.started == ref.started and ours.start_order == ref.start_order
