"""A job's I/O does not depend on the scheduler that runs it (issue 26).

Each family's small workload, written by its generator
(:mod:`iosched.experiments`), runs on the embedded engine (in process) on
its family's platform under the baseline ``easy``, its own scheduler and
every other family's scheduler (one policy each; the burst-buffer one on
the dragonfly, the only platform with burst-buffer nodes). Every run ends with status
0 and every submitted job in exactly one terminal state; a scheduler that
cannot serve a job's I/O model rejects it with a logged one-line reason
naming the job and the part; the others complete. A job served by two
schedulers does the same I/O under both (the bytes its dynamic jobs'
profiles read and write, or its static profile).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from procset import ProcSet

import pytest

from iosched.api import simulate
from iosched.experiments import platforms
from iosched.experiments.bb import workload as bb_workload
from iosched.experiments.dad import workload as dad_workload
from iosched.experiments.listpack import workload as lp_workload
from iosched.experiments.locality import workload as loc_workload
from iosched.experiments.pfsbw import workload as pfs_workload
from iosched.paths import shared_data
from iosched.sched.ioplan import BURST_BUFFER, INPUTS, PERIODIC, Rules, part_of, plan_for, unserved
from iosched.sched.iojob import PFS, read_io
from iosched.sched.placer import Allocation
from iosched.workloads.writer import write_workload

#: One policy per family (registered names) and the parts each serves.
SCHEDULERS = {
    "easy": {PERIODIC, INPUTS, "static"},
    "sjf-bb": {BURST_BUFFER},
    "io-list": {PERIODIC},
    "loc-lea": {INPUTS},
    "dad": {"static"},
    "slurm-backfill": {"static"},
}
#: The scheduler's name in its rejection reasons (its policy option).
LOGGED_NAME = {"loc-lea": "lea"}
#: The terminal states of a workload job in the merged jobs table.
TERMINAL = {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED",
            "COMPLETED_FAILED", "REJECTED"}


def _bb(tmp: Path):
    kth = shared_data("KTH-SP2-1996-2.1-cln.swf")
    if not kth.is_file():
        pytest.skip("the bb generator reads the KTH trace of the shared inputs")
    write_workload(bb_workload.generate(kth, seed=1, first=20), tmp / "w.json")
    (tmp / "p.xml").write_text(platforms.dragonfly96_xml())
    return tmp / "p.xml", tmp / "w.json"


def _listpack(tmp: Path):
    wl = lp_workload.generate("M-BN", 0.6, seed=1, n_jobs=12)
    lp_workload.write_workload(tmp / "w.json", wl)
    (tmp / "p.xml").write_text(platforms.listpack_xml(wl.machine.resources))
    return tmp / "p.xml", tmp / "w.json"


def _locality(tmp: Path):
    recs = [{"id": i, "subtime": 10 * i, "runtime": 30 + i, "walltime": 100, "cores": 2 + i % 3,
             "user": i % 2} for i in range(1, 13)]
    loc_workload.to_batsim(loc_workload.from_swf(recs, cores_per_node=4, memory_gb=1.0), tmp / "w.json",
                           nb_res=8)
    (tmp / "p.xml").write_text(platforms.locality_xml(2, 4, 1e9, 128e9, "paper"))
    return tmp / "p.xml", tmp / "w.json"


def _dad(tmp: Path):
    write_workload(dad_workload.blast_like(nb_tasks=4, slots=8, nb_nodes=4, set_bytes=0.2e9),
                   tmp / "w.json")
    (tmp / "p.xml").write_text(platforms.nusa_xml(4, 16))
    return tmp / "p.xml", tmp / "w.json"


def _pfsbw(tmp: Path):
    write_workload(pfs_workload.workload1(waves=1, sleep=5.0), tmp / "w.json")
    (tmp / "p.xml").write_text(platforms.pfsbw_xml())
    return tmp / "p.xml", tmp / "w.json"


FAMILIES = {"bb": _bb, "listpack": _listpack, "locality": _locality, "dad": _dad, "pfsbw": _pfsbw}


def _io_of(plan, profile_name) -> tuple:
    """The I/O a plan does: ``(bytes read, bytes written, compute s, flops,
    bytes over the network)`` summed over its dynamic jobs' profiles, or
    ``("static", profile name)``."""
    if plan.is_static:
        return ("static", profile_name)
    read = written = delay = flops = com = 0.0
    for ph in plan.phases:
        profs = list((ph.parts or {}).values()) + [ph.profile]
        for p in profs:
            if p["type"] == "parallel_homogeneous_pfs":
                read += p["bytes_to_read"]
                written += p["bytes_to_write"]
            elif p["type"] == "delay":
                delay += p["delay"]
            elif p["type"] == "parallel":
                flops += sum(p["cpu"])
                com += sum(p["com"])
    return (read, written, delay, flops, com)


def _running(jid: str, job_json: dict, nb_res: int, start: float = 0.0):
    """A started job as :func:`plan_for` reads it (id, resources, walltime, profile)."""
    batsim = SimpleNamespace(id=jid, requested_time=job_json.get("walltime", -1),
                             profile=job_json.get("profile"))
    return SimpleNamespace(job=SimpleNamespace(id=jid, nb_res=nb_res, batsim=batsim), start=start)


def _run(platform, workload, name, out):
    """The merged jobs table of one in-process run, and the rejection lines
    the scheduler logged (``rejecting job ID: REASON``, in the engine's log)."""
    df = simulate(platform, workload, name, output_dir=out, engine_args=["--enable-dynamic-jobs"],
                  in_process=True)
    log = (out / "engine.log").read_text()
    reasons = [line.split("] ", 1)[1] for line in log.splitlines() if "] rejecting job " in line]
    return df, reasons


def _expected_parts(workload: Path) -> dict:
    wl = json.loads(workload.read_text())
    return {str(j["id"]): part_of(read_io(j, f"job {j['id']}")) for j in wl["jobs"]}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_workload_under_every_family_scheduler(family, tmp_path):
    platform, workload = FAMILIES[family](tmp_path)
    parts = _expected_parts(workload)
    ios = {str(j["id"]): read_io(j, f"job {j['id']}") for j in json.loads(workload.read_text())["jobs"]}
    assert parts and (set(parts.values()) == {BURST_BUFFER}) == (family == "bb")
    for name, serves in SCHEDULERS.items():
        where = platform
        if name == "sjf-bb" and family != "bb":
            # the burst-buffer placer needs a platform with burst-buffer
            # nodes (it says so in one line at SIMULATION_BEGINS otherwise)
            where = tmp_path / "dragonfly96.xml"
            where.write_text(platforms.dragonfly96_xml())
        df, reasons = _run(where, workload, name, tmp_path / name)
        rows = df[df["job_id"].astype(str).isin(parts)]
        # every submitted job ends in exactly one terminal state
        assert sorted(rows["job_id"].astype(str)) == sorted(parts), name
        assert set(rows["final_state"]) <= TERMINAL, (name, set(rows["final_state"]))
        for jid, state in zip(rows["job_id"].astype(str), rows["final_state"]):
            if state == "REJECTED":
                # one logged line naming the job and the part (or, for dad,
                # its own reader's reason: no replica on a node)
                line = [r for r in reasons if r.startswith(f"rejecting job w0!{jid}: ")]
                assert len(line) == 1, (name, jid, line)
                why = line[0].split(": ", 1)[1]
                if parts[jid] in serves:
                    assert name == "dad" and "no copy on a node-local disk" in why, why
                else:
                    logged = LOGGED_NAME.get(name, name)
                    assert why == unserved(ios[jid], serves, logged, dynamic=True, storage={0: "pfs"}), why
                    assert why.startswith(f"{parts[jid]}: scheduler {logged} ") or \
                        why.startswith("io: a static job (no io.burst_buffer"), why
            no_replica = any(set(f.copies) <= {"pfs"} for f in ios[jid].inputs)
            assert (state == "REJECTED") == (parts[jid] not in serves or
                                             (name == "dad" and no_replica)), (name, jid, state)


#: How each family fills the allocation of a job it serves (its
#: scheduler-side decisions) and its encoding rules; the baseline's is the
#: placer's allocation and the default rules.
FAMILY_ALLOCATIONS = {
    "listpack": (lambda io, a: a.with_io(gate=object()), Rules()),
    "locality": (lambda io, a: a.with_io(inputs={io.inputs[0].file: PFS}),
                 Rules(whole_seconds=True, float32_gb=True)),
    "dad": (lambda io, a: a.with_io(inputs={f.file: f.copies[-1] for f in io.inputs}), Rules()),
    "pfsbw": (lambda io, a: a, Rules()),
}


@pytest.mark.parametrize("family", sorted(FAMILY_ALLOCATIONS))
def test_a_job_does_the_same_io_under_the_baseline_and_its_family(family, tmp_path):
    """The plan the core derives for each job of the family's workload does
    the same I/O (bytes read and written, compute, static profile) with the
    baseline's allocation and with the family's (its gate, its input
    sources, its rules)."""
    platform, workload = FAMILIES[family](tmp_path)
    wl = json.loads(workload.read_text())
    storage = {100: "pfs", **{101 + i: f"n{i:03d}_disk" for i in range(8)}}
    fill, rules = FAMILY_ALLOCATIONS[family]
    compared = 0
    for j in wl["jobs"]:
        io = read_io(j, f"job {j['id']}")
        n = int(j["res"])
        running = _running(f"w0!{j['id']}", j, n)
        base = Allocation(ProcSet((0, n - 1)))
        mine = plan_for(io, base, running, storage=storage)
        theirs = plan_for(io, fill(io, base), running, storage=storage, rules=rules)
        a, b = _io_of(mine, j.get("profile")), _io_of(theirs, j.get("profile"))
        assert a == b if a[0] == "static" else a == pytest.approx(b, rel=1e-6)
        assert mine.is_static == (part_of(io) == "static")
        compared += 1
    assert compared == len(wl["jobs"]) > 0
