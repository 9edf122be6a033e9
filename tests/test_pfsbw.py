"""The pfsbw family (Goponenko et al., PMBS 2024): estimator, equations
(1)-(5), the I/O-aware and workload-adaptive trackers on the shared core,
options, and one short end-to-end run on the embedded engine."""

import json
import math
import random
from pathlib import Path

import pytest
from schedules import facts, schedule_differences
from batsim.batsim import Batsim
from batsim.batsim import Job as BatsimJob
from procset import ProcSet

from iosched.errors import InputError
from iosched.experiments.pfsbw import workload as pw
from iosched.experiments.platforms import pfsbw_xml
from iosched.pfsbw.estimator import RecentThroughput, VarietyEstimator
from iosched.pfsbw.policy import SlurmBackfill
from iosched.pfsbw.trackers import POOL, AdaptiveTracker, IoAwareTracker, NodeTracker, StepUsage
from iosched.pfsbw.twogroup import Demand, target_throughput, threshold, two_group
from iosched.sched.core import Scheduler
from iosched.sched.machine import Machine
from iosched.sched.profile import INF
from iosched.schedulers.pfsbw import Pfsbw, read_pfs_job


class Launcher:
    def __init__(self):
        self.started = []

    def start(self, running):
        self.started.append(running.job.id)

    def reject(self, job, reason):
        raise AssertionError(f"rejected {job.id}: {reason}")

    def call_me_later(self, t):
        pass


def bjob(i, variety, nbytes=0.0, walltime=900.0, res=1):
    return BatsimJob(f"w0!{i}", 0.0, walltime, res, variety,
                     {"variety": variety, "bytes_written": nbytes})


# ---------------------------------------------------------------- estimator
def test_estimator_update_rule_and_untrained_zero():
    e = VarietyEstimator()
    assert e.throughput("a") == 0.0 and e.runtime("a") is None and not e.trained("a")
    e.observe("a", 100.0, 10.0)          # x = 10 B/s
    assert e.throughput("a") == pytest.approx(10.0)
    e.observe("a", 100.0, 4.0)           # x = 25 B/s
    # count = 1 + 0.8 * 1 = 1.8, sum = 25 + 0.8 * 10 = 33
    assert e.throughput("a") == pytest.approx(33 / 1.8)
    assert e.runtime("a") == pytest.approx((4 + 0.8 * 10) / 1.8)
    e.observe("a", 100.0, 0.0)           # no measurable rate: ignored
    assert e.throughput("a") == pytest.approx(33 / 1.8)
    assert e.throughput("b") == 0.0


def test_estimator_pretrain_and_bad_decay():
    e = VarietyEstimator()
    e.pretrain({"w": {"bytes": 80.0, "runtime": 20.0}})
    assert e.throughput("w") == pytest.approx(4.0)
    with pytest.raises(InputError):
        e.pretrain({"w": {"bytes": "x"}})
    with pytest.raises(InputError):
        VarietyEstimator(decay=0)


def test_recent_throughput_spreads_finished_jobs_over_the_window():
    m = RecentThroughput(window=10.0)
    m.add(0.0, 20.0, 200.0)                # 10 B/s, half of it in (10, 20]
    assert m.rate(20.0) == pytest.approx(10.0)
    assert m.rate(25.0) == pytest.approx(50.0 / 10.0)
    assert m.rate(31.0) == 0.0


# -------------------------------------------------------- equations (1)-(5)
def test_two_group_threshold_r_zero_and_adjusted_target_by_hand():
    # waiting jobs (nodes, rate B/s, duration s); rate per node 0, 1, 2, 5
    waiting = [Demand(1, 0.0, 100.0), Demand(2, 2.0, 50.0), Demand(1, 2.0, 100.0),
               Demand(1, 5.0, 200.0)]
    # areas sorted by rate/node: 100, 100, 100, 200 (total 500, half 250):
    # cumulative 100, 200, 300 >= 250 at the third job -> r* = 2
    r_star, r_zero = threshold(waiting)
    assert r_star == 2.0
    # zero jobs: rate/node <= 2: volume 0 + 100 + 200 = 300 over area 300
    assert r_zero == pytest.approx(1.0)
    running = [Demand(1, 4.0, 25.0)]
    # V = 4*25 + 0 + 2*50 + 2*100 + 5*200 = 1400; T = 25 + 100 + 100 + 100 + 200 = 525
    assert target_throughput(running, waiting, 4, default=99.0) == pytest.approx(1400 * 4 / 525)
    g = two_group(running, waiting, 4, default=99.0)
    assert g.adjusted == pytest.approx(1400 * 4 / 525 - 4 * 1.0)
    assert not g.is_regular(2, 2.0) and not g.is_regular(1, 2.0) and g.is_regular(1, 5.0)
    assert g.adjusted_rate(1, 5.0) == pytest.approx(4.0) and g.adjusted_rate(1, 2.0) == 0.0
    naive = two_group(running, waiting, 4, default=99.0, naive=True)
    assert (naive.r_star, naive.r_zero, naive.adjusted) == (0.0, 0.0, naive.target)
    assert naive.is_regular(1, 2.0) and not naive.is_regular(1, 0.0)


def test_two_group_empty_queue_and_no_area():
    assert threshold([]) == (0.0, 0.0)
    assert target_throughput([], [], 15, default=7.0) == 7.0


def test_step_usage_earliest_at_most():
    at = StepUsage()
    at.add(0.0, 10.0, 5.0)
    at.add(5.0, 20.0, 3.0)
    at.add(0.0, 30.0, -1.0)
    assert at.level(6.0) == pytest.approx(7.0)
    assert at.earliest_at_most(0.0, 5.0, 7.0) == 0.0     # [0, 5): 4
    assert at.earliest_at_most(0.0, 6.0, 4.0) == 10.0    # level 2 from 10
    assert at.earliest_at_most(0.0, 5.0, -0.5) == 20.0   # level -1 from 20 to 30
    assert at.earliest_at_most(0.0, 50.0, -0.5) == INF


# --------------------------------------------------- trackers on the core
def core(nb, tracker, limit=None, backfill_max=math.inf):
    s = Scheduler(SlurmBackfill(tracker, backfill_max), read_job=read_pfs_job,
                  pools={POOL: limit} if limit else {}, launcher=Launcher())
    s.begin(Machine([{"id": i, "name": f"n{i}"} for i in range(nb)]), 0.0)
    return s


def simulate_core(s, runtimes, until=1e9):
    """Discrete events on the bare core: jobs end at start + runtime."""
    now, checks = 0.0, []
    s.schedule(now)
    checks.append((now, s))
    while s.running:
        now = min(r.start + runtimes[j] for j, r in s.running.items())
        for j in [j for j, r in s.running.items() if r.start + runtimes[j] <= now]:
            s.end(j, "COMPLETED_SUCCESSFULLY", now)
        s.schedule(now)
        yield now
        if now > until:
            break


@pytest.mark.parametrize("seed", range(4))
def test_io_aware_never_reserves_more_than_the_limit(seed):
    rng = random.Random(seed)
    rates = {"a": 3.0, "b": 7.0, "c": 0.0, "d": 9.5}
    limit = 10.0
    jobs = [bjob(i, rng.choice(sorted(rates))) for i in range(60)]
    runtimes = {j.id: rng.uniform(1, 50) for j in jobs}
    s = core(6, lambda s, now: IoAwareTracker(s, now, lambda job: rates[job.request.variety], 0.0),
             limit=limit)
    for j in jobs:
        s.submit(j)
    for _ in simulate_core(s, runtimes):
        total = sum(rates[r.job.request.variety] for r in s.running.values())
        assert total <= limit + 1e-9
        s.profile.check_consistency()
    assert not len(s) and len(s.launcher.started) == 60


def test_io_aware_holds_the_measured_excess():
    rates = {"w": 4.0}
    s = core(4, lambda s, now: IoAwareTracker(s, now, lambda job: rates[job.request.variety],
                                             measured=9.0), limit=10.0)
    for i in range(3):
        s.submit(bjob(i, "w"))
    s.schedule(0.0)
    # nothing running: the measured 9 B/s is held (until now: no running job -> no block)
    assert len(s.launcher.started) == 2   # 4 + 4 <= 10, not 12
    s.schedule(0.0)
    # now 8 B/s of estimates are running, measured 9 > 8: 1 B/s more held -> 9 + 4 > 10
    assert len(s.launcher.started) == 2


@pytest.mark.parametrize("naive", [False, True])
def test_adaptive_never_idles_a_node_while_a_zero_job_fits(naive):
    rng = random.Random(7)
    rates = {"x8": 8.0, "x4": 4.0, "x1": 1.0, "sleep": 0.0}
    jobs = [bjob(i, rng.choice(["x8", "x4", "x1", "x1", "sleep"])) for i in range(120)]
    runtimes = {j.id: rng.uniform(1, 30) for j in jobs}
    trackers = []

    def make(s, now):
        rt = AdaptiveTracker(s, now, lambda job: rates[job.request.variety], 0.0,
                             lambda job: runtimes[job.id], naive=naive)
        trackers.append(rt)
        return rt

    s = core(5, make, limit=1e6, backfill_max=0)
    for j in jobs:
        s.submit(j)
    idle_with_regular_waiting = 0
    for now in simulate_core(s, runtimes):
        g = trackers[-1].groups
        if s.profile.free_count(now) > 0:
            zero = [j for j in s.queue if not g.is_regular(j.nb_res, rates[j.request.variety])]
            assert not zero, f"idle node at {now} while zero jobs wait"
            idle_with_regular_waiting += bool(len(s))
    assert not len(s)
    # the naive variant idles nodes once the sleep jobs are gone (Section VII-A);
    # the two-group approximation treats x1 jobs as zero jobs and idles less
    if naive:
        assert idle_with_regular_waiting > 0


def test_adaptive_holds_regular_jobs_at_the_target():
    rates = {"w": 10.0, "sleep": 0.0}
    durations = {"w": 10.0, "sleep": 10.0}
    trackers = []

    def make(s, now):
        rt = AdaptiveTracker(s, now, lambda job: rates[job.request.variety], 0.0,
                             lambda job: durations[job.request.variety], naive=True, overshoot=1.0)
        trackers.append(rt)
        return rt

    s = core(4, make, limit=1e6, backfill_max=0)
    # 2 writers and 6 sleepers: R~ = N * sum r d / sum n d = 4 * 200 / 80 = 10
    for i, v in enumerate(["w", "w", "sleep", "sleep", "sleep", "sleep", "sleep", "sleep"]):
        s.submit(bjob(i, v))
    s.schedule(0.0)
    assert trackers[-1].groups.target == pytest.approx(10.0)
    # overshoot 1 = the paper's Algorithm 7 (AT at most R~ before the job): the first writer
    # starts at AT 0, the second at AT 10 <= 10; then sleepers fill the nodes
    assert s.launcher.started == ["w0!0", "w0!1", "w0!2", "w0!3"]
    s2 = core(4, lambda s, now: AdaptiveTracker(s, now, lambda job: rates[job.request.variety], 0.0,
                                               lambda job: durations[job.request.variety],
                                               naive=True, overshoot=0.0), limit=1e6, backfill_max=0)
    for i, v in enumerate(["w", "w", "sleep", "sleep", "sleep", "sleep", "sleep", "sleep"]):
        s2.submit(bjob(i, v))
    s2.schedule(0.0)
    # overshoot 0: a writer needs AT + r' <= R~: the first fits (10 <= 10), the second not
    assert s2.launcher.started == ["w0!0", "w0!2", "w0!3", "w0!4"]


def test_slurm_backfill_max_one_is_easy_like():
    s = core(2, lambda s, now: NodeTracker(s, now), backfill_max=1)
    s.submit(BatsimJob("w0!0", 0.0, 100.0, 1, "p", {}))
    s.submit(BatsimJob("w0!1", 0.0, 100.0, 2, "p", {}))   # delayed: reserved at 100
    s.submit(BatsimJob("w0!2", 0.0, 50.0, 1, "p", {}))    # fits before the reservation
    s.submit(BatsimJob("w0!3", 0.0, 200.0, 1, "p", {}))   # would delay it
    s.schedule(0.0)
    assert s.launcher.started == ["w0!0", "w0!2"]


# ----------------------------------------------------------------- options
@pytest.mark.parametrize("opts, word", [
    ({"policy": "io-aware", "limit": -1}, "limit"),
    ({"policy": "adaptive", "variant": "greedy"}, "variant"),
    ({"policy": "nope"}, "policy"),
    ({"policy": "io-aware", "backfill_max": -2}, "backfill_max"),
    ({"policy": "adaptive", "overshoot": 2}, "overshoot"),
    ({"policy": "adaptive", "colour": 1}, "colour"),
    ({"policy": "adaptive", "estimates": "rounded"}, "estimates"),
])
def test_bad_options_one_line_error(opts, word):
    with pytest.raises(InputError) as exc:
        Pfsbw(opts)
    msg = str(exc.value)
    assert word in msg and "\n" not in msg


def test_bad_job_fields_are_rejected_in_one_line():
    with pytest.raises(InputError) as exc:
        read_pfs_job(BatsimJob("w0!1", 0.0, 10.0, 1, "p", {"bytes_written": -3}))
    assert "bytes_written" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(InputError):
        read_pfs_job(BatsimJob("w0!2", 0.0, 10.0, 9, "p", {"nodes": 1}), cores_per_node=8)
    assert read_pfs_job(BatsimJob("w0!3", 0.0, 10.0, 3, "p", {"nodes": 2}), cores_per_node=8)[0] == 16


# -------------------------------------------------------------- workloads
def test_workload_sizes_and_fields():
    w1, w2 = pw.workload1(), pw.workload2()
    assert len(w1["jobs"]) == 720 and len(w2["jobs"]) == 1550
    assert [j["io"]["application"] for j in w1["jobs"][:91:30]] == ["write_x8", "sleep", "sleep", "write_x8"]
    assert w2["profiles"]["write_x6"]["bytes_to_write"] == 10 * pw.GIB   # per thread
    x6 = next(j for j in w2["jobs"] if j["io"]["application"] == "write_x6")
    assert x6["res"] == 6 and x6["io"] == {"application": "write_x6", "nodes": 1,
                                          "writes": {"bytes": 60 * pw.GIB, "to": "pfs"}}
    assert w1["profiles"]["sleep"] == {"type": "delay", "delay": 600.0}
    assert all(j["io"]["nodes"] == 1 and j["walltime"] == pw.WALLTIME for j in w2["jobs"])


# ------------------------------------------------------ end to end (engine)
def test_end_to_end_adaptive_on_the_engine(tmp_path):
    from iosched.api import simulate
    plat = tmp_path / "p.xml"
    plat.write_text(pfsbw_xml())
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps(pw.workload(1, ((8, 6), (1, 4), ("sleep", 10)), sleep=60.0)))
    trace = tmp_path / "trace.csv"
    jobs = simulate(plat, wl, "adaptive", {"limit": 10 * pw.GIB, "trace": str(trace),
                                           "pretrain": {"write_x8": {"bytes": 80 * pw.GIB,
                                                                     "runtime": 80 / 3.75}}},
                    output_dir=tmp_path / "out")
    assert (jobs["final_state"] == "COMPLETED_SUCCESSFULLY").all() and len(jobs) == 20
    # write x1: one thread writes 10 GiB at 0.5 GiB/s (its core's link), not contended
    x1 = jobs[jobs["profile"] == "write_x1"]
    assert x1["execution_time"].min() == pytest.approx(20.0, rel=1e-3)
    # every job ran on a whole node: 8 cores, aligned
    allocs = set(jobs["allocated_resources"])
    assert all(len(ProcSet.from_str(a)) == 8 and min(ProcSet.from_str(a)) % 8 == 0 for a in allocs)
    assert trace.read_text().startswith("time,measured,target")


def test_workload_noise_is_seeded_and_keeps_the_known_bytes():
    a, b = pw.workload2(waves=1, noise=0.2, seed=3), pw.workload2(waves=1, noise=0.2, seed=3)
    assert a == b and a != pw.workload2(waves=1, noise=0.2, seed=4)
    for j in a["jobs"]:
        written = j["io"]["writes"]["bytes"]
        moved = a["profiles"][j["profile"]].get("bytes_to_write", 0.0) * (written > 0) * j["res"]
        assert written <= moved <= written / 0.8 + 1
    with pytest.raises(InputError):
        pw.workload1(noise=1.0)


# ------------------------------------------- EXECUTE_JOB as Batsim 4.2.1 reads it
#
# Batsim 4.2.1 (src/protocol.cpp, handle_execute_job) aborts unless EXECUTE_JOB's
# data has 2 or 3 members: job_id, alloc and at most one of mapping /
# storage_mapping / additional_io_job. A storage_mapping, when given, must hold
# the label of every storage step (task_execution.cpp); without one, a
# parallel_homogeneous_pfs step uses the only storage host (exactly one needed).


PROFILES = {"write_x8": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0,
                         "bytes_to_write": 1e9, "storage": "pfs"},
            "write_x2": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0,
                         "bytes_to_write": 1e9, "storage": "pfs"},
            "sleep": {"type": "delay", "delay": 10.0},
            "stage": {"type": "data_staging", "nb_bytes": 1e6, "from": "pfs", "to": "bb"},
            "staged_x8": {"type": "composed", "repeat": 1, "seq": ["stage", "write_x8"]}}


class FakeBatsim:
    """Just enough of pybatsim's ``Batsim`` for the adapter; EXECUTE_JOB and
    REJECT_JOB are built by pybatsim's own methods."""

    execute_job = Batsim.execute_job
    reject_jobs = Batsim.reject_jobs
    reject_jobs_by_id = Batsim.reject_jobs_by_id

    def __init__(self, nodes, storage_names, cores=8):
        compute = [{"id": k * cores + c, "name": f"node_{k}_c{c}", "properties": {"node": f"node_{k}"}}
                   for k in range(nodes) for c in range(cores)]
        storage = [{"id": nodes * cores + i, "name": n, "properties": {"role": "storage"}}
                   for i, n in enumerate(storage_names)]
        self.machines = {"compute": compute, "storage": storage}
        self.nb_compute_resources = len(compute)
        self.profiles = {"w0": PROFILES}
        self.now, self.jobs, self._events_to_send = 0.0, {}, []
        self.nb_jobs_scheduled = self.nb_jobs_rejected = 0

    def time(self):
        return self.now

    def execute_jobs(self, jobs):
        for j in jobs:
            self.execute_job(j)

    def wake_me_up_at(self, t):
        pass


def drive(options, storage_names, jobs, nodes=3):
    """Submit ``jobs`` ((id, res, profile), all with nodes=1) at t = 0 to a
    Pfsbw scheduler on a fake Batsim; each started job ends 10 s later.
    Returns (every event the scheduler sent, the scheduler)."""
    sched = Pfsbw(options)
    bs = sched.bs = FakeBatsim(nodes, storage_names)
    sched.onSimulationBegins()
    for jid, res, prof in jobs:
        j = BatsimJob(f"w0!{jid}", 0.0, 900.0, res, prof,
                      {"id": f"w0!{jid}", "res": res, "profile": prof, "nodes": 1, "variety": prof,
                       "bytes_written": 1e9 * res if prof.startswith("write") else 0.0})
        bs.jobs[j.id] = j
        sched.onJobSubmission(j)
    sched.onNoMoreEvents()
    sent, ends = [], {}
    for _ in range(100):
        for e in bs._events_to_send:
            if e["type"] == "EXECUTE_JOB":
                ends[e["data"]["job_id"]] = bs.now + 10.0
        sent += bs._events_to_send
        bs._events_to_send = []
        if not ends:
            break
        bs.now = min(ends.values())
        for jid in [j for j, t in ends.items() if t <= bs.now]:
            del ends[jid]
            job = bs.jobs[jid]
            job.job_state = BatsimJob.State.COMPLETED_SUCCESSFULLY
            sched.onJobCompletion(job)
        sched.onNoMoreEvents()
    return sent, sched


MIX = [("0", 8, "write_x8"), ("1", 2, "write_x2"), ("2", 1, "sleep"), ("3", 8, "write_x8"),
       ("4", 2, "write_x2"), ("5", 1, "sleep"), ("6", 8, "write_x8")]
POLICY_OPTIONS = [{"policy": "slurm-backfill"}, {"policy": "io-aware", "limit": 4e9},
                  {"policy": "adaptive", "limit": 4e9}, {"policy": "adaptive", "variant": "naive", "limit": 4e9}]


@pytest.mark.parametrize("opts", POLICY_OPTIONS, ids=lambda o: o["policy"] + o.get("variant", ""))
def test_execute_job_has_at_most_three_fields_one_storage_host(opts):
    sent, sched = drive(opts, ["pfs"], MIX)
    ex = [e["data"] for e in sent if e["type"] == "EXECUTE_JOB"]
    assert sorted(d["job_id"] for d in ex) == sorted(f"w0!{j}" for j, _, _ in MIX)
    for d in ex:
        assert len(d) <= 3 and {"job_id", "alloc"} <= set(d), d
        assert "storage_mapping" not in d            # one storage host: Batsim uses it
        res = next(r for j, r, _ in MIX if f"w0!{j}" == d["job_id"])
        assert len(ProcSet.from_str(d["alloc"])) == 8
        assert d.get("mapping") == ({str(i): i for i in range(res)} if res < 8 else None)
    assert not sched.core.rejections


@pytest.mark.parametrize("opts", POLICY_OPTIONS, ids=lambda o: o["policy"] + o.get("variant", ""))
def test_several_storage_hosts_storage_mapping_or_rejection(opts):
    """Two storage hosts: whole-node writers get a storage_mapping (label pfs
    -> the host named pfs); a writer with fewer executors than cores would
    need a mapping too: rejected at submission, one line naming it; sleep
    jobs (no storage) get their mapping only."""
    sent, sched = drive(opts, ["bb", "pfs"], MIX)
    ex = {e["data"]["job_id"]: e["data"] for e in sent if e["type"] == "EXECUTE_JOB"}
    rejected = [e["data"]["job_id"] for e in sent if e["type"] == "REJECT_JOB"]
    assert sorted(rejected) == ["w0!1", "w0!4"]
    for jid in rejected:
        reason = sched.core.rejections[jid]
        assert jid in reason and "\n" not in reason and "mapping" in reason and "storage_mapping" in reason
    assert set(ex) == {"w0!0", "w0!2", "w0!3", "w0!5", "w0!6"}
    pfs_id = 3 * 8 + 1
    for jid, d in ex.items():
        assert len(d) == 3, d
        if jid in ("w0!2", "w0!5"):
            assert d["mapping"] == {"0": 0}
        else:
            assert d["storage_mapping"] == {"pfs": pfs_id}


def test_data_staging_needs_a_storage_mapping_even_with_one_storage_host():
    sent, sched = drive({"policy": "slurm-backfill"}, ["pfs"], [("0", 8, "staged_x8"), ("1", 2, "stage")])
    ex = {e["data"]["job_id"]: e["data"] for e in sent if e["type"] == "EXECUTE_JOB"}
    # both labels mapped; 'bb' is no storage host's name: the lowest storage id
    assert ex == {"w0!0": {"job_id": "w0!0", "alloc": "0-7", "storage_mapping": {"bb": 24, "pfs": 24}}}
    assert "w0!1" in sched.core.rejections


def test_no_storage_host_rejects_the_storage_jobs():
    sent, sched = drive({"policy": "slurm-backfill"}, [], [("0", 8, "write_x8"), ("1", 1, "sleep")])
    assert [e["data"]["job_id"] for e in sent if e["type"] == "REJECT_JOB"] == ["w0!0"]
    assert "no storage host" in sched.core.rejections["w0!0"]


def test_storage_needs_reads_composed_profiles():
    from iosched.schedulers.pfsbw import storage_needs
    assert storage_needs(PROFILES, "write_x8") == (("pfs",), False)
    assert storage_needs(PROFILES, "sleep") == ((), False)
    assert storage_needs(PROFILES, "staged_x8") == (("bb", "pfs"), True)
    assert storage_needs(PROFILES, "missing") == (("pfs",), False)
    assert storage_needs({"a": {}}, "a") == (("pfs",), False)     # pybatsim's placeholder
    host = {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1.0, "host": "disk"}   # Batsim's other key
    assert storage_needs({"h": host}, "h") == (("disk",), False)
    loop = {"c": {"type": "composed", "seq": ["c", "w"]}, "w": PROFILES["write_x2"]}
    assert storage_needs(loop, "c") == (("pfs",), False)


# --------------------------------- golden g17b: the real Batsim 4.2.1's expected run
#
# g17 (../shared/golden) is the shipped scheduler of commit 0972bfd: EXECUTE_JOB
# with mapping and storage_mapping, Batsim aborts. g17b is the same decisions
# without storage_mapping (golden/schedulers/pfsbw_nosm.py), run to the end on
# the real Batsim: the replies and the schedule the shipped scheduler must give.

REPO = Path(__file__).resolve().parent.parent
LAUNCHER = REPO / "src" / "iosched" / "schedulers" / "launchers" / "pfsbw.py"
G17B = "g17b_pfsbw_w1_adaptive_nosm"


def g17b_options(shared):
    case = json.loads((shared / "golden" / G17B / "case.json").read_text())
    opts = dict(case["options"])
    opts["pretrain"] = str(shared / "golden" / opts["pretrain"])
    return opts


def test_g17b_replies_as_golden(shared, tmp_path):
    """The shipped scheduler answers every request of g17b's transcript with
    the reply recorded from pfsbw_nosm.py on the real Batsim 4.2.1."""
    from protocol_replay import compare_replies, load_exchanges, play_engine_side
    ex = load_exchanges(shared / "golden" / G17B / "transcript.jsonl")
    res = play_engine_side(ex, LAUNCHER, tmp_path, shared / "golden" / "inputs", options=g17b_options(shared))
    assert len(res.replies) == len(ex)
    diffs = compare_replies(res)
    assert not diffs, f"{len(diffs)} differences, first: " + "; ".join(diffs[:5])
    ex_jobs = [e["data"] for r in res.replies for e in r["events"] if e["type"] == "EXECUTE_JOB"]
    assert len(ex_jobs) == 180 and all(len(d) <= 3 and "storage_mapping" not in d for d in ex_jobs)


def read_out_jobs(path) -> dict:
    import csv
    with open(path, newline="") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


def test_g17b_schedule_on_the_embedded_engine(shared, tmp_path):
    """The shipped adaptive scheduler on g17b's inputs (embedded engine) gives
    the real Batsim's g17b schedule job by job."""
    from iosched.run.simulation import run_simulation
    inputs = shared / "golden" / "inputs"
    run_simulation(inputs / "pfsbw15.xml", inputs / "pfsbw_w1_waves2.json", "adaptive", tmp_path / "out",
                   options=g17b_options(shared), timeout=600)
    ours = facts(read_out_jobs(tmp_path / "out" / "out_jobs.csv"))
    gold = facts(read_out_jobs(shared / "golden" / G17B / "out_jobs.csv"))
    assert len(gold) == 180
    diffs = schedule_differences(ours, gold)
    assert not diffs, f"{len(diffs)} differences: {diffs[:5]}"


# ------------------------- the same schedules as with the old encoding (4 fields)

BEFORE = json.loads((Path(__file__).resolve().parent / "data" / "reencode_before.json").read_text())["cases"]


@pytest.mark.parametrize("name", ["slurm-backfill", "io-aware", "adaptive", "adaptive-naive"])
def test_same_schedule_as_with_the_old_encoding(name, tmp_path):
    """On the embedded engine, every policy gives the schedule it gave with
    mapping + storage_mapping (recorded at commit 12191c9 in
    tests/data/reencode_before.json): one storage host resolves the same.
    (At the re-encoding commit the out_jobs.csv were byte-identical; the
    project's tolerance keeps the test meaningful across engine timing
    changes such as rounding message times to 6 decimals.)"""
    from iosched.run.simulation import run_simulation
    plat, wl = tmp_path / "p.xml", tmp_path / "w.json"
    plat.write_text(pfsbw_xml())
    wl.write_text(json.dumps(pw.workload(1, ((8, 6), (1, 4), (4, 3), ("sleep", 10)), sleep=60.0)))
    pre = {"write_x8": {"bytes": 80 * pw.GIB, "runtime": 80 / 3.75}}
    run_simulation(plat, wl, name, tmp_path / "out", options={"limit": 10 * pw.GIB, "pretrain": pre},
                   timeout=300)
    ours = facts(read_out_jobs(tmp_path / "out" / "out_jobs.csv"))
    ref = BEFORE[f"pfsbw_{name}"]
    assert len(ref) == 23
    diffs = schedule_differences(ours, ref)
    assert not diffs, f"{len(diffs)} differences: {diffs[:5]}"


# ------------------------------------------------------------- real Batsim 4.2.1

def two_storage_platform(nb_nodes=2) -> str:
    """pfsbw's platform plus a second storage host ``bb`` (no route: never used)."""
    return pfsbw_xml(nb_nodes=nb_nodes).replace(
        '        <link id="pfs_loopback"',
        '        <host id="bb" speed="1Gf">\n            <prop id="role" value="storage" />\n'
        '        </host>\n        <link id="pfs_loopback"')


@pytest.mark.real_batsim
@pytest.mark.skipif(__import__("shutil").which("batsim") is None, reason="no 'batsim' on PATH")
@pytest.mark.parametrize("name", ["slurm-backfill", "io-aware", "adaptive", "adaptive-naive", "two-storage"])
def test_same_schedule_on_real_batsim(name, tmp_path):
    """The real Batsim 4.2.1 runs every policy's EXECUTE_JOBs (it aborts on
    more than 3 fields) and gives the embedded engine's schedule within
    0.05 s + 0.1 %; with two storage hosts, the storage_mapping encoding
    runs and the write x2 job is rejected on both engines."""
    from iosched.run.simulation import run_simulation
    plat, wl = tmp_path / "p.xml", tmp_path / "w.json"
    opts = {"limit": 10 * pw.GIB, "pretrain": {"write_x8": {"bytes": 80 * pw.GIB, "runtime": 80 / 3.75}}}
    if name == "two-storage":
        plat.write_text(two_storage_platform())
        wl.write_text(json.dumps(pw.workload(1, ((8, 2), (2, 1), ("sleep", 2)), sleep=30.0)))
        sched, opts = "slurm-backfill", None
    else:
        plat.write_text(pfsbw_xml())
        wl.write_text(json.dumps(pw.workload(1, ((8, 6), (1, 4), (4, 3), ("sleep", 10)), sleep=60.0)))
        sched = name
    rows = {}
    for eng in ("embedded", "batsim"):
        run_simulation(plat, wl, sched, tmp_path / eng, options=opts,
                       engine_cmd=None if eng == "embedded" else "batsim", timeout=300)
        rows[eng] = facts(read_out_jobs(tmp_path / eng / "out_jobs.csv"))
    diffs = schedule_differences(rows["embedded"], rows["batsim"])
    assert not diffs, f"{len(diffs)} differences: {diffs[:5]}"
    states = sorted(r[0] for r in rows["batsim"].values())
    if name == "two-storage":
        assert states == ["COMPLETED_SUCCESSFULLY"] * 4 + ["REJECTED"] and rows["batsim"]["2"][0] == "REJECTED"
    else:
        assert states == ["COMPLETED_SUCCESSFULLY"] * 23


@pytest.mark.parametrize("args, words", [
    (["w1", "{tmp}/w.json", "--sleep", "inf"], ["sleep", "inf"]),     # wrote an infinite delay before
    (["w1", "{tmp}/w.json", "--sleep", "nan"], ["sleep", "nan"]),
    (["w2", "{tmp}/missing/w.json"], ["missing", "does not exist"]),  # FileNotFoundError traceback before
])
def test_workload_cli_bad_arguments_one_line(tmp_path, args, words):
    """A bad generator argument or output path: one line, non-zero exit, no file."""
    from click.testing import CliRunner
    from iosched.experiments.pfsbw.workload import workload_command as pfsbw_workload

    res = CliRunner().invoke(pfsbw_workload, [a.format(tmp=tmp_path) for a in args])
    assert res.exit_code != 0
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words) and "Traceback" not in res.output
    assert not (tmp_path / "w.json").exists()


@pytest.mark.parametrize("runtime", [-5.0, 0.0, float("nan"), float("inf")])
def test_pretrain_sample_with_a_useless_runtime_is_refused(runtime):
    """A pretraining sample with a runtime that teaches nothing is an error
    naming the variety (it was dropped silently: the run stayed untrained)."""
    with pytest.raises(InputError, match="variety 'w'.*runtime"):
        VarietyEstimator().pretrain({"w": {"bytes": 80.0, "runtime": runtime}})


@pytest.mark.parametrize("drop, word", [("application", "io.application"), ("writes", "io.writes"),
                                        ("profile", "profile")])
def test_pretrain_command_on_jobs_without_a_field_one_line(tmp_path, drop, word):
    """`iosched workload pfsbw pretrain` on a job without a field it needs: one line
    naming the job and the field (a KeyError traceback before), no output."""
    from click.testing import CliRunner
    from iosched.experiments.pfsbw.workload import workload_command as pfsbw_workload
    from iosched.experiments.platforms import pfsbw_command as platform_command

    runner = CliRunner()
    assert runner.invoke(platform_command, [str(tmp_path / "p.xml")]).exit_code == 0
    assert runner.invoke(pfsbw_workload, ["w1", str(tmp_path / "w.json"), "--waves", "1"]).exit_code == 0
    wl = json.loads((tmp_path / "w.json").read_text())
    job = wl["jobs"][0]
    del (job if drop == "profile" else job["io"])[drop]
    (tmp_path / "w.json").write_text(json.dumps(wl))
    res = runner.invoke(pfsbw_workload, ["pretrain", str(tmp_path / "s.json"), "-p", str(tmp_path / "p.xml"),
                                         "-w", str(tmp_path / "w.json"), "--tmp", str(tmp_path / "t")])
    assert res.exit_code != 0
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "job '0'" in lines[0] and word in lines[0] and "Traceback" not in res.output
    assert not (tmp_path / "s.json").exists()


def test_curve_on_a_platform_that_is_not_xml_one_line(tmp_path):
    """`iosched workload pfsbw curve -p NOT_XML`: one line naming the file (a RunError
    traceback before), no output."""
    from click.testing import CliRunner
    from iosched.experiments.pfsbw.workload import workload_command as pfsbw_workload

    (tmp_path / "bad.xml").write_text("not xml\n")
    res = CliRunner().invoke(pfsbw_workload, ["curve", str(tmp_path / "c.csv"), "-p", str(tmp_path / "bad.xml"),
                                              "--tmp", str(tmp_path / "t")])
    assert res.exit_code != 0
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "bad.xml" in lines[0] and "Traceback" not in res.output
    assert not (tmp_path / "c.csv").exists()


def test_overload_curve_on_the_pfsbw_platform(tmp_path):
    """The measured curve under the paper's overload reading (docs/pfsbw.md):
    write x8 jobs are node-bound (3.75 GiB/s each) up to 5, then the file
    system's capacity, 19 then 18 GiB/s for 6 and 7 concurrent jobs; the
    linear platform gives 20 GiB/s from 6 on (start offsets of a few
    hundred microseconds: 1e-4 relative)."""
    plat = tmp_path / "p.xml"
    plat.write_text(pfsbw_xml())
    rows = pw.measure_curve(plat, tmp_path / "nl", max_jobs=7, engine_args=pw.overload_args(pw.OVERLOAD))
    got = [rate / pw.GIB for _, rate, _ in rows]
    assert got == pytest.approx([3.75, 7.5, 11.25, 15.0, 18.75, 19.0, 18.0], rel=1e-4)
    lin = pw.measure_curve(plat, tmp_path / "lin", max_jobs=7)
    assert [rate / pw.GIB for _, rate, _ in lin][5:] == pytest.approx([20.0, 20.0], rel=1e-4)


@pytest.mark.parametrize("spec", ["pfs_link", "pfs_link:20GiB@0", "pfs_link:20GiB@5:threads"])
def test_overload_bad_spec_of_curve_and_repro_is_one_line(tmp_path, spec):
    from click.testing import CliRunner
    from iosched.experiments.pfsbw.reproduction import repro_command
    from iosched.experiments.pfsbw.workload import workload_command as pfsbw_workload

    (tmp_path / "p.xml").write_text(pfsbw_xml())
    for cmd, args in ((pfsbw_workload, ["curve", str(tmp_path / "c.csv"), "-p", str(tmp_path / "p.xml")]),
                      (repro_command, [str(tmp_path / "out"), "-p", str(tmp_path / "p.xml")])):
        res = CliRunner().invoke(cmd, args + ["--overload", spec, "--tmp", str(tmp_path / "t")])
        assert res.exit_code != 0
        lines = [x for x in res.output.splitlines() if x.strip()]
        assert len(lines) == 1 and "--link-overload" in lines[0] and "Traceback" not in res.output
    assert not (tmp_path / "c.csv").exists() and not (tmp_path / "out").exists()


def test_estimator_artifact_rounding_as_py_sim_serv_reports():
    """``estimates: artifact``: runtime + 1 s (alt_analyze_job), runtime in
    whole minutes rounded up, throughput in units of 1,400 bytes/s rounded
    up (format_value); ``exact`` keeps the observed values."""
    from iosched.schedulers.pfsbw import ESTIMATES

    art = VarietyEstimator(**ESTIMATES["artifact"])
    art.observe("write_x8", 80 * pw.GIB, 21.3)
    art.observe("sleep", 0.0, 600.0)
    assert art.runtime("write_x8") == 60.0 and art.runtime("sleep") == 660.0
    assert art.throughput("write_x8") == math.ceil(80 * pw.GIB / 22.3 / 1400) * 1400
    assert art.throughput("sleep") == 0.0
    exact = VarietyEstimator(**ESTIMATES["exact"])
    exact.observe("write_x8", 80 * pw.GIB, 21.3)
    assert exact.runtime("write_x8") == 21.3 and exact.throughput("write_x8") == 80 * pw.GIB / 21.3
    with pytest.raises(InputError, match="tail"):
        VarietyEstimator(tail=-1)
    with pytest.raises(InputError, match="runtime_unit"):
        VarietyEstimator(runtime_unit=0)
    assert Pfsbw({"policy": "adaptive", "estimates": "artifact"}).estimator.runtime_unit == 60.0


def test_overload_names_resolve_to_their_curves():
    assert pw.overload_args("linear") == [] == pw.overload_args(None)
    assert pw.overload_args("long-term") == ["--embedded-extensions", f"--link-overload={pw.OVERLOAD_LONGTERM}"]
    assert pw.overload_args("issue")[1].endswith(pw.OVERLOAD)
    assert pw.overload_args("fig4")[1].endswith(pw.OVERLOAD_FIG4)
