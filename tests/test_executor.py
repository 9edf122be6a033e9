"""The core's executor (iosched.sched.executor) with a fake pybatsim ``bs``
that records every call: static execution, phases in order, walltime left
by each rule, gates (an arbiter, a time), failure and walltime ends, the
composed encoding, and NOTIFY registration_finished sent once."""

from types import SimpleNamespace

import pytest
from procset import ProcSet

from iosched.batsim.jobs import (COMPLETED_FAILED, COMPLETED_SUCCESSFULLY,
                                 COMPLETED_WALLTIME_REACHED, NO_WALLTIME)
from iosched.listpack.arbiter import IOArbiter
from iosched.sched.executor import (DEADLINE, LEFT, MIN_LEFT, UNBOUNDED, At, Executor, Phase, Plan)
from iosched.sched.placer import Allocation


class FakeBs:
    """Records the pybatsim calls, in order, as tuples."""

    def __init__(self):
        self.now = 0.0
        self.calls = []
        self.no_more_static_jobs = False

    def time(self):
        return self.now

    def reject_jobs(self, jobs):
        self.calls.append(("reject", [j.id for j in jobs]))

    def register_profiles(self, workload, profiles):
        self.calls.append(("profiles", workload, dict(profiles)))

    def register_job(self, jid, res, walltime, profile):
        self.calls.append(("job", jid, res, walltime, profile))
        return SimpleNamespace(id=jid)

    def execute_job(self, job):
        self.calls.append(("execute", job.id, job.allocation, getattr(job, "storage_mapping", None)))

    def execute_jobs(self, jobs):
        self.calls.append(("execute_jobs", [(j.id, j.allocation, getattr(j, "mapping", None),
                                             getattr(j, "storage_mapping", None)) for j in jobs]))

    def notify_registration_finished(self):
        self.calls.append(("registration_finished",))

    def of(self, kind):
        return [c for c in self.calls if c[0] == kind]


class FakeCore:
    def __init__(self):
        self.running, self.waiting, self.wakes = {}, 0, []

    def __len__(self):
        return self.waiting

    def wake_up_at(self, t, now):
        self.wakes.append((t, now))


def make(dynamic=True):
    sched = SimpleNamespace(bs=FakeBs(), core=FakeCore())
    return sched, Executor(sched, dynamic=dynamic)


def running(sched, sid, start, resources=ProcSet(0, 3), allocation=None):
    batsim = SimpleNamespace(id=sid, workload="w0")
    rec = SimpleNamespace(job=SimpleNamespace(id=sid, batsim=batsim), start=start,
                          allocation=allocation or Allocation(resources))
    sched.core.running[sid] = rec
    return rec


def done(jid, state=COMPLETED_SUCCESSFULLY, workload="bb"):
    return SimpleNamespace(id=jid, workload=workload, job_state=SimpleNamespace(name=state))


def delay(s):
    return {"type": "delay", "delay": s}


def test_static_jobs_run_themselves_in_one_batch_with_their_mappings():
    sched, ex = make(dynamic=False)
    a = running(sched, "w0!1", 0.0, ProcSet(0))
    b = running(sched, "w0!2", 0.0, allocation=Allocation(ProcSet(1, 2), storage_mapping={"pfs": 9}))
    ex.start(a)
    ex.start(b, Plan.static(b.allocation.with_io(mapping={"0": 1})))
    assert sched.bs.calls == []                      # sent at the end of the pass
    ex.flush()
    assert sched.bs.calls == [("execute_jobs", [("w0!1", ProcSet(0), None, None),
                                                ("w0!2", ProcSet(1, 2), {"0": 1}, None)])]
    assert not hasattr(a.job.batsim, "mapping") and not hasattr(a.job.batsim, "storage_mapping")
    ex.flush()
    assert len(sched.bs.calls) == 1                  # nothing new to send
    assert ex.completed(done("w0!1", COMPLETED_FAILED, "w0")) == "w0!1"
    assert ex.final_state(done("w0!1", COMPLETED_FAILED, "w0"), "w0!1") == COMPLETED_FAILED
    sched.bs.no_more_static_jobs = True
    sched.core.running.clear()
    ex.after_pass(5.0)
    assert sched.bs.of("registration_finished") == []   # a static family registers nothing


def test_phases_run_in_order_with_the_walltime_left_until_the_last():
    sched, ex = make()
    rec = running(sched, "w0!7", 10.0)
    phases = [Phase(delay(k), ProcSet(0, 3)) for k in (1, 2, 3)]
    ex.start(rec, Plan(phases, 100.0, DEADLINE, counted=True))
    bs = sched.bs
    assert bs.calls[0] == ("reject", ["w0!7"])
    assert bs.calls[1:] == [("profiles", "bb", {"7:0/3": delay(1)}), ("job", "bb!7:0", 2, 100.0, "7:0/3"),
                            ("execute", "bb!7:0", ProcSet(0, 3), None)]
    bs.now = 40.0
    assert ex.completed(done("bb!7:0")) is None
    assert bs.of("job")[-1] == ("job", "bb!7:1", 2, 70.0, "7:1/3")    # (10 + 100) - 40
    bs.now = 65.5
    assert ex.completed(done("bb!7:1")) is None
    assert bs.of("job")[-1] == ("job", "bb!7:2", 2, 44.5, "7:2/3")
    assert ex.completed(done("bb!7:2")) == "w0!7"
    assert ex.final_state(done("bb!7:2"), "w0!7") == COMPLETED_SUCCESSFULLY
    assert ex.phases_started == 3 and "w0!7" not in ex.runs
    assert ex.completed(done("bb!7:2")) is None       # not ours any more


def test_a_phase_that_fails_ends_the_job_with_its_state():
    sched, ex = make()
    rec = running(sched, "w0!3", 0.0)
    ex.start(rec, Plan([Phase(delay(1), ProcSet(0)), Phase(delay(2), ProcSet(0))], rule=UNBOUNDED))
    assert sched.bs.of("job") == [("job", "bb!3:0", 1, NO_WALLTIME, "3:0")]
    assert ex.completed(done("bb!3:0", COMPLETED_FAILED)) == "w0!3"
    assert ex.ended["w0!3"] == COMPLETED_FAILED
    assert len(sched.bs.of("job")) == 1                 # phase 1 never registered


def test_deadline_rule_ends_the_job_at_the_walltime_with_phases_left():
    sched, ex = make()
    rec = running(sched, "w0!4", 0.0)
    ex.start(rec, Plan([Phase(delay(1), ProcSet(0)), Phase(delay(2), ProcSet(0))], 50.0, DEADLINE))
    sched.bs.now = 50.0
    assert ex.completed(done("bb!4:0")) == "w0!4"
    assert ex.final_state(done("bb!4:0"), "w0!4") == COMPLETED_WALLTIME_REACHED
    assert len(sched.bs.of("job")) == 1
    # without walltime, phases go on whatever the time
    sched, ex = make()
    rec = running(sched, "w0!5", 0.0)
    ex.start(rec, Plan([Phase(delay(1), ProcSet(0)), Phase(delay(2), ProcSet(0))], NO_WALLTIME,
                       DEADLINE))
    sched.bs.now = 1e9
    assert ex.completed(done("bb!5:0")) is None
    assert sched.bs.of("job")[-1] == ("job", "bb!5:1", 1, NO_WALLTIME, "5:1")


def test_an_arbiter_gate_holds_a_phase_until_another_releases_it():
    sched, ex = make()
    arb = IOArbiter("exclusive")

    def plan():
        return Plan([Phase(delay(5), ProcSet(0)),
                     Phase({"type": "io"}, ProcSet(0), storage_mapping={"pfs": 9}, gate=arb),
                     Phase(delay(6), ProcSet(0))])
    ex.start(running(sched, "w0!1", 0.0), plan())
    ex.start(running(sched, "w0!2", 0.0), plan())
    assert ex.completed(done("bb!1:0")) is None        # 1's I/O is granted at once
    assert ex.completed(done("bb!2:0")) is None        # 2's waits for it
    jobs = [c[1] for c in sched.bs.of("job")]
    assert jobs == ["bb!1:0", "bb!2:0", "bb!1:1"]
    assert sched.bs.of("execute")[-1] == ("execute", "bb!1:1", ProcSet(0), {"pfs": 9})
    assert ex.completed(done("bb!1:1")) is None        # releases: 2's I/O, then 1's compute
    assert [c[1] for c in sched.bs.of("job")][3:] == ["bb!2:1", "bb!1:2"]
    assert ex.completed(done("bb!2:1", COMPLETED_FAILED)) == "w0!2"   # a failed I/O ends job 2
    assert arb.active == set() and not arb.waiting


def test_a_time_gate_starts_the_phase_in_the_first_pass_at_its_time():
    sched, ex = make()
    rec = running(sched, "w0!8", 100.0)
    compute = Phase(delay(30), ProcSet(0, 3), gate=At(120.0), index=1)
    ex.start(rec, Plan((compute,), 3600, LEFT))
    assert sched.bs.of("reject") == [("reject", ["w0!8"])] and sched.bs.of("job") == []
    assert sched.core.wakes == [(120.0, 0.0)]
    sched.bs.no_more_static_jobs = True
    ex.after_pass(110.0)
    assert sched.bs.of("job") == [] and sched.bs.of("registration_finished") == []  # still waiting
    ex.after_pass(120.0)
    assert sched.bs.of("job") == [("job", "bb!8:1", 2, 3580.0, "8:1")]     # 3600 - (120 - 100)
    # a gated job killed meanwhile starts nothing
    rec = running(sched, "w0!9", 0.0)
    ex.start(rec, Plan((Phase(delay(1), ProcSet(0), gate=At(10.0)),), 3600, LEFT))
    del sched.core.running["w0!9"]
    ex.after_pass(10.0)
    assert [c[1] for c in sched.bs.of("job")] == ["bb!8:1"] and "w0!9" not in ex.runs


def test_left_rule_whole_walltime_phase_and_floor():
    sched, ex = make()
    rec = running(sched, "w0!6", 0.0)
    load = Phase({"type": "load"}, ProcSet(0), index=0, whole_walltime=True)
    compute = Phase(delay(9), ProcSet(0, 1), index=1)
    ex.start(rec, Plan((load, compute), 60, LEFT))
    first = sched.bs.of("job")[0]
    assert first == ("job", "bb!6:0", 1, 60, "6:0") and type(first[3]) is int   # as given
    sched.bs.now = 75.0                                  # the load overran the walltime
    assert ex.completed(done("bb!6:0")) is None
    assert sched.bs.of("job")[-1] == ("job", "bb!6:1", 2, MIN_LEFT, "6:1")


def test_composed_plan_is_one_dynamic_job():
    sched, ex = make()
    rec = running(sched, "w0!12", 0.0)
    parts = {"12:si": delay(1), "12:c": delay(2)}
    composed = {"type": "composed", "repeat": 1, "seq": ["12:si", "12:c"]}
    ex.start(rec, Plan.composed_of(composed, parts, ProcSet(0, 5), 500.0))
    assert sched.bs.calls[1] == ("profiles", "bb", {"12:si": delay(1), "12:c": delay(2), "12": composed})
    assert list(sched.bs.calls[1][2]) == ["12:si", "12:c", "12"]    # steps first
    assert sched.bs.calls[2] == ("job", "bb!12", 2, 500.0, "12")
    assert ex.completed(done("bb!12", COMPLETED_WALLTIME_REACHED)) == "w0!12"
    assert ex.ended["w0!12"] == COMPLETED_WALLTIME_REACHED
    with pytest.raises(ValueError, match="exactly one phase"):
        Plan([Phase(delay(1), ProcSet(0))] * 2, composed=True)
    with pytest.raises(ValueError, match="walltime rule"):
        Plan(rule="sometimes")


def test_registration_finished_once_when_nothing_is_left():
    sched, ex = make()
    rec = running(sched, "w0!1", 0.0)
    ex.start(rec, Plan([Phase(delay(1), ProcSet(0))]))
    sched.bs.no_more_static_jobs = True
    ex.after_pass(0.0)
    assert sched.bs.of("registration_finished") == []   # a job runs
    assert ex.completed(done("bb!1:0")) == "w0!1"
    del sched.core.running["w0!1"]
    sched.core.waiting = 1
    ex.after_pass(1.0)
    assert sched.bs.of("registration_finished") == []   # a job waits
    sched.core.waiting = 0
    ex.after_pass(2.0)
    ex.after_pass(3.0)
    assert sched.bs.of("registration_finished") == [("registration_finished",)]


def test_dynamic_executor_does_not_give_its_own_jobs_to_the_core():
    _, ex = make()
    assert not ex.accepts(SimpleNamespace(id="bb!1:0", workload="bb"))
    assert ex.accepts(SimpleNamespace(id="w0!1", workload="w0"))
    _, static = make(dynamic=False)
    assert static.accepts(SimpleNamespace(id="bb!1", workload="bb"))


def test_with_io_copies_the_allocation_with_its_mappings():
    a = Allocation([5, 2], {"bw": 3.0}, data={"node": 1})
    b = a.with_io(storage_mapping={"f": 7})
    assert b is not a and b.resources == ProcSet(2, 5) and b.mask == a.mask
    assert b.pools == {"bw": 3.0} and b.data == {"node": 1}
    assert (b.mapping, b.storage_mapping) == (None, {"f": 7})
    assert (a.mapping, a.storage_mapping) == (None, None)       # the original is unchanged
