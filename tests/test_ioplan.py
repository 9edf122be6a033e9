"""How a job's I/O executes (iosched.sched.ioplan.plan_for) and what a
scheduler serves (unserved): each part of the I/O model gives its plan from
the model and the allocation alone; a part a scheduler does not serve, a
part run by dynamic jobs on an engine without them, or a missing storage
host is a one-line reason; the executor notifies registration_finished for
any scheduler when the engine registers dynamic jobs."""

from types import SimpleNamespace

import pytest
from procset import ProcSet

from iosched.batsim.jobs import NO_WALLTIME
from iosched.errors import InputError
from iosched.sched.executor import COMPUTE_TIER, DEADLINE, LEFT, PFS_TIER, UNBOUNDED, At, Executor, Flow
from iosched.sched.ioplan import (BURST_BUFFER, CACHED, INPUTS, PERIODIC, STATIC, Rules, part_of,
                                  pfs_of, plan_for, unserved)
from iosched.sched.iojob import BurstBuffer, Compute, InputFile, IOJob, Periodic, Writes
from iosched.sched.placer import Allocation

STORAGE = {10: "pfs", 11: "n0_disk", 12: "n1_disk"}


def running(jid="w0!5", nb_res=2, walltime=100.0, start=0.0, profile="p"):
    batsim = SimpleNamespace(id=jid, requested_time=walltime, profile=profile)
    return SimpleNamespace(job=SimpleNamespace(id=jid, nb_res=nb_res, batsim=batsim), start=start)


def test_part_of_each_family_model():
    assert part_of(IOJob(burst_buffer=BurstBuffer(1e9), compute=Compute(flops=1e12))) == BURST_BUFFER
    assert part_of(IOJob(nodes=2, periodic=Periodic(3, 10.0, 1e9))) == PERIODIC
    assert part_of(IOJob(inputs=(InputFile("5", 1e9),), compute=Compute(delay=30))) == INPUTS
    assert part_of(IOJob(inputs=(InputFile("a", 1e9, ("n0",)),))) == STATIC      # dad
    assert part_of(IOJob(application="x", writes=Writes(1e9))) == STATIC         # pfsbw
    assert part_of(IOJob()) == STATIC


def test_periodic_plan_gated_or_not():
    io = IOJob(nodes=2, periodic=Periodic(2, 10.0, 5e8))
    gate = object()
    for g in (None, gate):
        plan = plan_for(io, Allocation(ProcSet((3, 4)), gate=g), running(), storage=STORAGE)
        assert plan.rule == UNBOUNDED and plan.walltime == NO_WALLTIME and len(plan.phases) == 4
        compute, write = plan.phases[0], plan.phases[1]
        assert compute.profile == {"type": "delay", "delay": 10.0} and compute.resources == ProcSet((3, 4))
        assert write.profile == {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0,
                                 "bytes_to_write": 5e8, "storage": "pfs"}
        assert write.resources == ProcSet(3) and write.storage_mapping == {"pfs": 10}
        assert write.gate is g and compute.gate is None


def test_inputs_plan_by_source_and_rules():
    io = IOJob(inputs=(InputFile("5", 1.3e9), InputFile("6", 2e9, ("n1", "pfs"))),
               compute=Compute(delay=30.7))
    # default: each input's first copy, the disk read mapped to the node's disk
    plan = plan_for(io, Allocation(ProcSet((0, 1))), running(walltime=100.5), storage=STORAGE)
    read0, read1, compute = plan.phases
    assert plan.rule == LEFT and plan.walltime == 100.5
    assert (read0.index, read1.index, compute.index) == (0, 1, 2)
    assert read0.profile["bytes_to_read"] == 1.3e9 and read0.storage_mapping == {"pfs": 10}
    assert read0.whole_walltime and not read1.whole_walltime
    assert read1.profile["storage"] == "n1" and read1.storage_mapping == {"n1": 12}
    assert compute.profile == {"type": "delay", "delay": 30.7} and compute.gate is None
    # cached and being loaded: no read, the compute waits for the latest load
    plan = plan_for(io, Allocation(ProcSet((0, 1)), inputs={"5": CACHED, "6": At(40.0)}), running(),
                    storage=STORAGE)
    (compute,) = plan.phases
    assert compute.index == 2 and isinstance(compute.gate, At) and compute.gate.time == 40.0
    # the locality artifact: whole seconds, float32 GB sizes, the part already run
    plan = plan_for(io, Allocation(ProcSet((0, 1)), inputs={"6": CACHED}, elapsed=10), running(walltime=100.5),
                    storage={10: "pfs"}, rules=Rules(whole_seconds=True, float32_gb=True))
    read0, compute = plan.phases
    assert plan.walltime == 90 and compute.profile["delay"] == 20.0
    assert read0.storage_mapping is None          # the only storage host: none sent
    assert read0.profile["bytes_to_read"] == pytest.approx(1.3e9, rel=1e-7)
    assert read0.profile["bytes_to_read"] != 1.3e9


def test_inputs_without_walltime_run_unbounded():
    io = IOJob(inputs=(InputFile("5", 1e9),), compute=Compute(delay=3))
    plan = plan_for(io, Allocation(ProcSet(0)), running(walltime=-1), storage=STORAGE)
    assert plan.rule == UNBOUNDED and plan.walltime == NO_WALLTIME


def test_burst_buffer_plan_and_missing_storage():
    io = IOJob(burst_buffer=BurstBuffer(1e9), compute=Compute(flops=7200e9))
    plan = plan_for(io, Allocation(ProcSet((0, 1)), data={0: 5, 1: 6}), running(walltime=50.0),
                    storage={7: "pfs", 5: "bb0", 6: "bb1"})
    assert plan.rule == DEADLINE and plan.counted and plan.walltime == 50.0
    assert len(plan.phases) == 5                       # si, c, k, cd, so
    assert plan.phases[0].resources == ProcSet((0, 1), (5, 7))
    composed = plan_for(io, Allocation(ProcSet((0, 1)), data={0: 5, 1: 6}), running(),
                        storage={7: "pfs", 5: "bb0", 6: "bb1"}, rules=Rules(composed=True))
    assert composed.composed and composed.phases[0].profile["type"] == "composed"
    with pytest.raises(InputError, match=r"^job w0!5: io.burst_buffer: the platform has no storage host 'pfs'"):
        plan_for(io, Allocation(ProcSet((0, 1))), running(), storage={5: "bb0", 6: "bb1"})


def test_burst_buffer_plan_without_burst_buffer_uses_the_pfs():
    """No burst-buffer storage in the allocation (a scheduler without a
    burst-buffer placer): the same steps on the compute nodes and the PFS
    only -- read from the PFS, checkpoints and output to the PFS."""
    io = IOJob(burst_buffer=BurstBuffer(1e9), compute=Compute(flops=7200e9, com=5.0))
    plan = plan_for(io, Allocation(ProcSet((0, 1))), running(walltime=50.0), storage={7: "pfs", 5: "bb0"})
    assert plan.rule == DEADLINE and plan.walltime == 50.0
    assert len(plan.phases) == 5                       # si, c, k, c, so
    assert all(ph.resources == ProcSet((0, 1), 7) for ph in plan.phases)
    m, p = 3, 2                                        # hosts 0, 1, 7: the PFS is index 2
    si, c, k, c2, so = (ph.profile for ph in plan.phases)
    assert [si["com"][p * m + i] for i in (0, 1)] == [1e9, 1e9] and sum(si["com"]) == 2e9
    assert [k["com"][i * m + p] for i in (0, 1)] == [5e8, 5e8] and sum(k["com"]) == 1e9
    assert [so["com"][i * m + p] for i in (0, 1)] == [1e9, 1e9] and sum(so["com"]) == 2e9
    assert c == c2 and c["cpu"] == [3600e9, 3600e9, 0] and c["com"][1] == 5 and c["com"][m] == 5
    assert sum(c["com"]) == 10
    # the I/O record's flows: PFS -> compute, checkpoint and output to the PFS, no burst-buffer tier
    assert [tuple(ph.flows) for ph in plan.phases] == [
        (Flow("read", PFS_TIER, COMPUTE_TIER, 7, 2e9),), (Flow("network", COMPUTE_TIER, COMPUTE_TIER, None, 10.0),),
        (Flow("checkpoint", COMPUTE_TIER, PFS_TIER, 7, 1e9),), (Flow("network", COMPUTE_TIER, COMPUTE_TIER, None, 10.0),),
        (Flow("write", COMPUTE_TIER, PFS_TIER, 7, 2e9),)]


def test_static_plan_maps_each_input_to_its_source_disk():
    io = IOJob(inputs=(InputFile("a", 1e9, ("n0", "n1")), InputFile("b", 1e9, ("n1",))))
    plan = plan_for(io, Allocation(ProcSet(0)), running(), storage=STORAGE)
    assert plan.is_static and plan.allocation.storage_mapping == {"a": 11, "b": 12}
    chosen = plan_for(io, Allocation(ProcSet(0), inputs={"a": "n1"}), running(), storage=STORAGE)
    assert chosen.allocation.storage_mapping == {"a": 12, "b": 12}
    given = Allocation(ProcSet(0), storage_mapping={"a": 12, "b": 11})
    assert plan_for(io, given, running(), storage=STORAGE).allocation is given
    plain = Allocation(ProcSet(0), mapping={"0": 0})
    assert plan_for(IOJob(writes=Writes(1.0)), plain, running(), storage=STORAGE).allocation is plain


def test_unserved_reasons_are_one_line_naming_the_part():
    bb = IOJob(burst_buffer=BurstBuffer(1e9))
    base = {PERIODIC, INPUTS, STATIC}
    assert unserved(bb, base, "easy", dynamic=True, storage=STORAGE) == \
        "io.burst_buffer: scheduler easy has no burst-buffer placer"
    periodic = IOJob(nodes=1, periodic=Periodic(1, 1.0, 1.0))
    assert unserved(periodic, base, "easy", dynamic=True, storage=STORAGE) is None
    assert unserved(periodic, base, "easy", dynamic=False, storage=STORAGE) == \
        "io.periodic: runs as dynamic jobs, but the engine runs without --enable-dynamic-jobs"
    assert unserved(periodic, {INPUTS}, "lea", dynamic=True, storage=STORAGE) == \
        "io.periodic: scheduler lea does not run periodic jobs"
    assert unserved(periodic, base, "easy", dynamic=True, storage={1: "a", 2: "b"}) == \
        "io.periodic: the platform has no storage host 'pfs'"
    assert unserved(periodic, base, "easy", dynamic=True, storage={1: "fs"}) is None   # the only one
    static = IOJob(inputs=(InputFile("a", 1.0, ("n7",)),))
    assert unserved(static, base, "easy", dynamic=False, storage=STORAGE) == \
        "static: the platform has no storage host 'n7_disk'"
    why = unserved(IOJob(), {BURST_BUFFER}, "sjf-bb", dynamic=True, storage=STORAGE)
    assert why.startswith("io: a static job") and why.endswith("scheduler sjf-bb runs only jobs of io.burst_buffer")
    for reason in (why,):
        assert "\n" not in reason


def test_pfs_of():
    assert pfs_of({3: "x", 2: "pfs", 1: "pfs"}) == 1
    assert pfs_of({4: "fs"}) == 4
    assert pfs_of({4: "a", 5: "b"}) is None and pfs_of({}) is None


class _Bs:
    def __init__(self, enabled):
        self.dynamic_job_registration_enabled = enabled
        self.no_more_static_jobs = True
        self.notified = 0

    def time(self):
        return 0.0

    def notify_registration_finished(self):
        self.notified += 1


class _Core:
    running: dict = {}

    def __len__(self):
        return 0


@pytest.mark.parametrize("enabled", [True, False])
def test_any_scheduler_notifies_registration_finished_when_the_engine_registers(enabled):
    """A baseline (not a family that runs phases) sends NOTIFY
    registration_finished once when the engine registers dynamic jobs, and
    never otherwise (the golden baseline runs are unchanged)."""
    sched = SimpleNamespace(bs=_Bs(enabled), core=_Core())
    ex = Executor(sched, dynamic=False)
    ex.after_pass(0.0)
    ex.after_pass(1.0)
    assert sched.bs.notified == (1 if enabled else 0)
