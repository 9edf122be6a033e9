"""A job's I/O does not depend on the scheduler that runs it (issue 26).

Each family's small workload, written by its generator
(:mod:`iosched.experiments`), runs on the embedded engine (in process) on
its family's platform under the baseline ``easy``, its own scheduler and
every other family's scheduler (one policy each; the burst-buffer one on
the dragonfly, the only platform with burst-buffer nodes). Every run ends with status
0 and every submitted job in exactly one terminal state. A job of a part
the scheduler's family has no model of runs as an I/O-unaware scheduler
would (option ``io_fallback``, default true); what the family's own code
cannot take (a multi-node job under the one-node families, a job without
walltime under locality's planner, a node-local copy on a platform without
disks) is rejected with a logged one-line reason; with ``io_fallback:
false`` every job outside the family's model is rejected with the reason
naming the job and the part. A job served by two schedulers does the same
I/O under both (the bytes its dynamic jobs' profiles read and write, or
its static profile).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from procset import ProcSet

import pandas as pd
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

#: One policy per family (registered names) and the parts its family models.
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


def _run(platform, workload, name, out, options=None):
    """The merged jobs table of one in-process run, and the rejection lines
    the scheduler logged (``rejecting job ID: REASON``, in the engine's log)."""
    df = simulate(platform, workload, name, options, output_dir=out,
                  engine_args=["--enable-dynamic-jobs"], in_process=True)
    log = (out / "engine.log").read_text()
    reasons = [line.split("] ", 1)[1] for line in log.splitlines() if "] rejecting job " in line]
    return df, reasons


#: What a family's own code cannot take, whatever the fallback (the end of
#: the logged reason): a job on more cores than a node has (locality, dad),
#: a job without walltime (locality's planner), a copy on a node's disk on
#: a platform without disks.
IMPOSSIBLE = ("(a locality job runs on one node)", "but the largest node has 1",
              "a walltime is needed (the locality planner holds a job's cores until start + walltime)",
              "_disk'")


def _expected_parts(workload: Path) -> dict:
    wl = json.loads(workload.read_text())
    return {str(j["id"]): part_of(read_io(j, f"job {j['id']}")) for j in wl["jobs"]}


def _check_run(family, tmp_path, name, options, parts):
    tmp_path.mkdir(parents=True, exist_ok=True)
    platform, workload = FAMILIES[family](tmp_path)
    where = platform
    if name == "sjf-bb" and family != "bb":
        # the burst-buffer placer needs a platform with burst-buffer
        # nodes (it says so in one line at SIMULATION_BEGINS otherwise)
        where = tmp_path / "dragonfly96.xml"
        where.write_text(platforms.dragonfly96_xml())
    df, reasons = _run(where, workload, name, tmp_path / f"{name}-{bool(options)}", options)
    rows = df[df["job_id"].astype(str).isin(parts)]
    # every submitted job ends in exactly one terminal state
    assert sorted(rows["job_id"].astype(str)) == sorted(parts), name
    assert set(rows["final_state"]) <= TERMINAL, (name, set(rows["final_state"]))
    states = dict(zip(rows["job_id"].astype(str), rows["final_state"]))
    why = {}
    for jid, state in states.items():
        if state == "REJECTED":
            line = [r for r in reasons if r.startswith(f"rejecting job w0!{jid}: ")]
            assert len(line) == 1, (name, jid, line)
            why[jid] = line[0].split(": ", 1)[1]
    return states, why


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_workload_under_every_family_scheduler(family, tmp_path):
    """Fallback on (the default): every job runs unless the family's own
    code cannot take it (:data:`IMPOSSIBLE`); under its own family's
    scheduler and under ``easy`` every job completes."""
    platform, workload = FAMILIES[family](tmp_path)
    parts = _expected_parts(workload)
    assert parts and (set(parts.values()) == {BURST_BUFFER}) == (family == "bb")
    own = {"bb": "sjf-bb", "listpack": "io-list", "locality": "loc-lea", "dad": "dad",
           "pfsbw": "slurm-backfill"}[family]
    for name in SCHEDULERS:
        states, why = _check_run(family, tmp_path / name, name, None, parts)
        for jid, reason in why.items():
            assert reason.endswith(IMPOSSIBLE), (name, jid, reason)
            assert not reason.endswith("_disk'") or reason.startswith("static: the platform has no storage host")
        if name in (own, "easy"):
            assert set(states.values()) == {"COMPLETED_SUCCESSFULLY"}, (name, states)


@pytest.mark.parametrize("family", ["bb", "listpack", "pfsbw"])
def test_strict_mode_rejects_what_the_family_has_no_model_of(family, tmp_path):
    """``io_fallback: false``: a job of a part not modelled is rejected with
    the reason :func:`unserved` gives (the behaviour before the fallback)."""
    platform, workload = FAMILIES[family](tmp_path)
    parts = _expected_parts(workload)
    ios = {str(j["id"]): read_io(j, f"job {j['id']}") for j in json.loads(workload.read_text())["jobs"]}
    for name in ("easy", "io-list", "slurm-backfill"):
        serves = SCHEDULERS[name]
        states, why = _check_run(family, tmp_path / name, name, {"io_fallback": False}, parts)
        for jid, state in states.items():
            assert (state == "REJECTED") == (parts[jid] not in serves), (name, jid, state)
            if state == "REJECTED":
                assert why[jid] == unserved(ios[jid], serves, name, dynamic=True, storage={0: "pfs"})
                assert why[jid].startswith(f"{parts[jid]}: scheduler {name} ") or \
                    why[jid].startswith("io: a static job (no io.burst_buffer"), why[jid]


def test_a_burst_buffer_job_without_placer_does_its_io_on_the_pfs(tmp_path):
    """A burst-buffer job under ``easy`` (no burst-buffer placer) completes;
    its phases read its bytes from the PFS, write each checkpoint and its
    output to the PFS, with no burst-buffer node among its hosts."""
    platform, workload = FAMILIES["bb"](tmp_path)
    wl = json.loads(workload.read_text())
    j = max(wl["jobs"], key=lambda j: j["io"]["compute"].get("flops", 0))
    io = read_io(j, "job")
    n = int(j["res"])
    plan = plan_for(io, Allocation(ProcSet((0, n - 1))), _running(f"w0!{j['id']}", j, n), storage={n: "pfs"})
    assert not plan.is_static
    m = n + 1          # the compute nodes and the PFS (id n, the last host)
    bb, ckpt = io.burst_buffer.bytes, int(io.burst_buffer.checkpoint_factor * io.burst_buffer.bytes)
    to_pfs = [sum(ph.profile["com"][c * m + n] for c in range(n)) for ph in plan.phases]
    from_pfs = [sum(ph.profile["com"][n * m + c] for c in range(n)) for ph in plan.phases]
    phases = len(plan.phases)
    assert phases >= 5        # stage-in, compute, checkpoint, compute, stage-out at least
    assert from_pfs[0] == pytest.approx(n * bb) and to_pfs[-1] == pytest.approx(n * bb)
    assert to_pfs[1:-1] == [pytest.approx(n * ckpt) if k % 2 == 0 else 0 for k in range(1, phases - 1)]
    assert sum(from_pfs[1:]) == 0
    df, reasons = _run(platform, workload, "easy", tmp_path / "easy")
    rows = df[df["job_id"].astype(str) == str(j["id"])]
    assert list(rows["final_state"]) == ["COMPLETED_SUCCESSFULLY"] and not reasons


def test_a_periodic_job_under_locality_finishes(tmp_path):
    """A periodic job on one node's cores, with a walltime, runs under
    ``loc-lea`` (its periods and writes to the PFS); a multi-node one stays
    rejected with locality's reason; strict mode rejects both by part."""
    (tmp_path / "p.xml").write_text(platforms.locality_xml(2, 4, 1e9, 128e9, "paper"))
    per = {"periods": 3, "compute": 10.0, "bytes": 1e8, "to": "pfs"}
    jobs = [{"id": "1", "subtime": 0, "res": 2, "walltime": 1000, "profile": "d", "io": {"periodic": per}},
            {"id": "2", "subtime": 0, "res": 6, "walltime": 1000, "profile": "d", "io": {"periodic": per}}]
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 8, "jobs": jobs,
                                                 "profiles": {"d": {"type": "delay", "delay": 1}}}))
    df, reasons = _run(tmp_path / "p.xml", tmp_path / "w.json", "loc-lea", tmp_path / "on")
    state = dict(zip(df["job_id"].astype(str), df["final_state"]))
    assert state["1"] == "COMPLETED_SUCCESSFULLY" and state["2"] == "REJECTED"
    assert reasons == ["rejecting job w0!2: requests 6 cores but a node has 4 (a locality job runs on one node)"]
    out = pd.read_csv(tmp_path / "on" / "out_jobs.csv", dtype={"job_id": str})
    phases = out[out["job_id"].str.startswith("1:")].sort_values("starting_time")
    # 3 x (a delay of the period's compute, then a write to the PFS), in order
    assert list(phases["job_id"]) == [f"1:{k}" for k in range(6)]
    assert set(phases["final_state"]) == {"COMPLETED_SUCCESSFULLY"}
    assert list(phases["execution_time"].iloc[0::2]) == pytest.approx([10.0] * 3)
    assert all(0 < t < 10 for t in phases["execution_time"].iloc[1::2])
    df, reasons = _run(tmp_path / "p.xml", tmp_path / "w.json", "loc-lea", tmp_path / "off",
                       {"io_fallback": False})
    assert sorted(reasons) == [f"rejecting job w0!{k}: io.periodic: scheduler lea does not run periodic jobs"
                               for k in ("1", "2")]


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


def test_io_fallback_is_a_declared_boolean_option():
    """Every scheduler that declares its options declares ``io_fallback``;
    a value other than true or false is one line naming the option."""
    from iosched.errors import InputError
    from iosched.schedulers.listpack import Listpack
    from iosched.schedulers.registry import declared_options
    for name in SCHEDULERS:
        declared = declared_options(name)
        assert declared is None or "io_fallback" in declared, name
    assert Listpack({"io_fallback": False}).io_fallback is False
    assert Listpack({}).io_fallback is True
    with pytest.raises(InputError, match=r"^scheduler Listpack: option 'io_fallback': expected true or false, got 'no'$"):
        Listpack({"io_fallback": "no"})
