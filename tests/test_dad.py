"""Data-aware dispatch (Li & Tatebe 2017): fileLocality / Score (equations 1
and 2), Algorithm 1's decisions on the shared core, and end-to-end runs on
the embedded engine (iosched/schedulers/dad.py)."""

import csv
import random
from pathlib import Path

import pytest
from schedules import facts, schedule_differences

from iosched.dad.dispatch import DataAwareDispatch, NodePlacer, TorqueFifo
from iosched.dad.model import FileRef, file_locality, read_task, replica_for, score
from iosched.errors import InputError
from iosched.experiments.dad.workload import (GB, MB, blast_like, blast_shares, check_workload, file_benchmark, trace_driven,
                                              write_workload)
from iosched.experiments.platforms import nusa_xml
from iosched.run.simulation import run_simulation
from iosched.sched.core import Scheduler
from iosched.sched.iojob import read_io
from iosched.sched.machine import Machine
from iosched.sched.orders import fcfs
from iosched.schedulers.dad import read_dad_job

# ---------------------------------------------------------------- equations


def test_file_locality_hand_computed():
    files = [FileRef("a", 3 * GB, ("n0", "n1")), FileRef("b", 1 * GB, ("n1",))]
    # n0: match 3, mismatch 1 -> (1 - 3) / (2 * 4) + 1/2
    assert file_locality(files, "n0") == pytest.approx(0.25)
    assert file_locality(files, "n1") == pytest.approx(0.0)
    assert file_locality(files, "n2") == pytest.approx(1.0)
    assert file_locality([], "n0") == 0.5
    assert file_locality([FileRef("z", 0.0, ("n0",))], "n1") == 0.5


def test_score_hand_computed():
    assert score(0.25, 0.5, 0.8) == pytest.approx(0.25 * 0.8 + 0.5 * 0.2)   # 0.3
    assert score(1.0, 0.0, 0.0) == 0.0          # beta 0: load only
    assert score(0.25, 0.9, 1.0) == 0.25        # beta 1: locality only


def test_replica_choice():
    f = FileRef("a", 1.0, ("n2", "n1"))
    assert replica_for(f, "n1") == "n1"
    assert replica_for(f, "n0") == "n2"
    assert replica_for(f, "n0", {"n2": 1}) == "n1"              # the less busy replica
    assert replica_for(f, "n0", {"n2": 1, "n1": 1}) == "n2"     # ties: list order
    assert replica_for(f, "n1", {"n1": 5}) == "n1"              # local always


# ------------------------------------------------------ core-level decisions

class FakeJob:
    def __init__(self, jid, files, res=1, queue="batch", t=0.0):
        self.id, self.requested_resources, self.requested_time = jid, res, -1
        self.submit_time = t
        self.json_dict = {"id": jid, "res": res, "files": files, "queue": queue}


class Launcher:
    def __init__(self):
        self.started, self.rejected, self.calls = [], [], []

    def start(self, rec):
        self.started.append(rec)

    def reject(self, job, reason):
        self.rejected.append((job.id, reason))

    def call_me_later(self, t):
        self.calls.append(t)


def make_core(policy, nodes=4, slots=2):
    compute = [{"id": k * slots + i, "name": f"n{k}_c{i}", "properties": {"node": f"n{k}"}}
               for k in range(nodes) for i in range(slots)]
    storage = [{"id": nodes * slots + k, "name": f"n{k}_disk"} for k in range(nodes)]
    launcher = Launcher()
    core = Scheduler(policy, NodePlacer(), fcfs, launcher=launcher, read_job=read_dad_job)
    core.begin(Machine(compute, storage), 0.0)
    return core, launcher


def f(name, node, size=GB):
    return {"name": name, "size": size, "replicas": [node] if isinstance(node, str) else node}


def node_of(rec):
    return rec.allocation.data


def test_local_replica_never_remote_when_a_local_node_is_free():
    rng = random.Random(7)
    nodes = ["n0", "n1", "n2", "n3"]
    seen_local = seen_remote = 0
    for trial in range(300):
        core, launcher = make_core(DataAwareDispatch(rng.choice([0.6, 0.8, 1.0]), 2, 0.5))
        for k in range(rng.randrange(0, 8)):            # random occupancy
            core.submit(FakeJob(f"b{k}", [f(f"o{k}", rng.choice(nodes))]))
        core.schedule(0.0)
        free = core.profile.free_at(1.0)[0]
        holders = sorted(rng.sample(nodes, rng.randrange(1, 3)))
        local_free = any(len(n.resources & free) for n in core.placer.nodes if n.name in holders)
        core.submit(FakeJob("t", [f("x", holders)], queue="probe"))   # not behind a delayed head
        core.schedule(1.0)
        recs = [r for r in launcher.started if r.job.id == "t"]
        if local_free:
            assert recs and node_of(recs[0]) in holders, (trial, holders)
            seen_local += 1
        elif recs:
            seen_remote += 1
    assert seen_local > 50


def _busy_node0(core, launcher, slots=1):
    for i in range(slots):
        core.submit(FakeJob(f"long{i}", []))
    core.schedule(0.0)


def test_delay_waits_at_most_wlimit_then_goes_remote():
    for w_limit in (0, 1, 2, 4):
        core, launcher = make_core(DataAwareDispatch(0.8, w_limit, 0.5, cycle=5.0), nodes=2, slots=1)
        _busy_node0(core, launcher)                        # n0's only slot is busy
        assert node_of(launcher.started[0]) == "n0"
        core.submit(FakeJob("t", [f("x", "n0")]))
        t = 1.0
        passes = 0
        while not any(r.job.id == "t" for r in launcher.started):
            core.schedule(t)
            passes += 1
            t += 1.0
            assert passes <= w_limit + 1
        assert passes == w_limit + 1                     # delayed exactly wLimit passes
        rec = [r for r in launcher.started if r.job.id == "t"][0]
        assert node_of(rec) == "n1"                      # then remote
        assert core.policy.wtime.get("t", 0) == w_limit
        if w_limit:
            assert launcher.calls and launcher.calls[0] == 1.0 + 5.0   # retried after one cycle


def test_delay_counts_one_attempt_per_time():
    core, launcher = make_core(DataAwareDispatch(0.8, 2, 0.5), nodes=2, slots=1)
    _busy_node0(core, launcher)
    core.submit(FakeJob("t", [f("x", "n0")]))
    for _ in range(5):
        core.schedule(1.0)                               # five passes at one instant
    assert core.policy.wtime["t"] == 1
    assert not any(r.job.id == "t" for r in launcher.started)


def test_local_node_freed_during_the_delay_is_used():
    core, launcher = make_core(DataAwareDispatch(0.8, 2, 0.5), nodes=2, slots=1)
    _busy_node0(core, launcher)
    core.submit(FakeJob("t", [f("x", "n0")]))
    core.schedule(1.0)
    core.end("long0", "COMPLETED_SUCCESSFULLY", 2.0)
    core.schedule(2.0)
    rec = [r for r in launcher.started if r.job.id == "t"][0]
    assert node_of(rec) == "n0" and rec.start == 2.0


def test_no_wait_when_no_node_is_local_but_ds_waits():
    # two 1 GB files on n0 and n1 (fileLocality 1/2 there), both busy; n2 free
    files = [f("a", "n0"), f("b", "n1")]
    for variant, waits in (("dad", False), ("ds", True)):
        core, launcher = make_core(DataAwareDispatch(0.8, 2, 0.5, variant=variant), nodes=3, slots=1)
        for i in range(2):
            core.submit(FakeJob(f"long{i}", [f(f"own{i}", f"n{i}")]))
        core.schedule(0.0)
        assert sorted(node_of(r) for r in launcher.started) == ["n0", "n1"]
        core.submit(FakeJob("t", files))
        core.schedule(1.0)
        started = [r for r in launcher.started if r.job.id == "t"]
        assert (not started) == waits
        if started:
            assert node_of(started[0]) == "n2"


def test_queues_interleave_and_torque_ignores_them():
    # queue qa: 3 tasks whose file is on n0; queue qb: 3 tasks, file on n1
    def submit_all(core):
        for i in range(3):
            core.submit(FakeJob(f"a{i}", [f("fa", "n0")], queue="qa"))
        for i in range(3):
            core.submit(FakeJob(f"b{i}", [f("fb", "n1")], queue="qb"))
    core, launcher = make_core(DataAwareDispatch(0.8, 2, 0.5), nodes=2, slots=2)
    submit_all(core)
    core.schedule(0.0)
    assert [r.job.id for r in launcher.started] == ["a0", "b0", "a1", "b1"]
    assert [node_of(r) for r in launcher.started] == ["n0", "n1", "n0", "n1"]
    core, launcher = make_core(TorqueFifo(), nodes=2, slots=2)
    submit_all(core)
    core.schedule(0.0)
    # FIFO, lowest load first: a0 n0, a1 n1, a2 n0, b0 n1
    assert [(r.job.id, node_of(r)) for r in launcher.started] == [
        ("a0", "n0"), ("a1", "n1"), ("a2", "n0"), ("b0", "n1")]


def test_multi_slot_tasks_stay_on_one_node_and_bad_jobs_are_rejected():
    core, launcher = make_core(TorqueFifo(), nodes=2, slots=4)
    core.submit(FakeJob("big", [], res=3))
    core.submit(FakeJob("too-big", [], res=5))
    core.submit(FakeJob("ghost", [f("x", "n9")]))
    core.submit(FakeJob("bad", [{"name": "x", "size": -1, "replicas": ["n0"]}]))
    core.schedule(0.0)
    assert [r.job.id for r in launcher.started] == ["big"]
    assert len(launcher.started[0].resources) == 3
    assert {core.machine.node_of[r].name for r in launcher.started[0].resources} == {"n0"}
    reasons = dict(launcher.rejected)
    assert set(reasons) == {"too-big", "ghost", "bad"}
    assert "unknown node 'n9'" in reasons["ghost"]


# --------------------------------------------------------- workload checks

def test_workload_checker_one_line_errors():
    w = file_benchmark(4, GB, 2)
    check_workload(w, ["n000", "n001"])
    w["jobs"][1]["io"]["inputs"][0]["copies"] = ["nX"]
    with pytest.raises(InputError, match=r"job 'readgf1'.*unknown node 'nX'") as e:
        check_workload(w, ["n000", "n001"], "w.json")
    assert "\n" not in str(e.value) and str(e.value).startswith("w.json")
    w = file_benchmark(4, GB, 2)
    w["profiles"]["read_f2__r1"]["storage"] = "nofile"
    with pytest.raises(InputError, match=r"reads unknown file 'nofile'"):
        check_workload(w, ["n000", "n001"])
    with pytest.raises(InputError, match="listed twice"):
        read_task({"files": [f("a", "n0"), f("a", "n1")]})


def test_blast_shares_reproduce_the_remote_slowdown():
    sh = blast_shares(0.1728, 2 * GB, 8, 2803.61 * MB, 125 * MB, 1e9)
    assert sh["t_remote"] / sh["t_local"] == pytest.approx(1.1728)
    with pytest.raises(InputError):
        blast_shares(1000.0, 1 * MB, 1, 1 * MB, 125 * MB, 1e9)


def test_generators_are_deterministic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_workload(blast_like(), a)
    write_workload(blast_like(), b)
    assert a.read_bytes() == b.read_bytes()
    assert nusa_xml(3, 2) == nusa_xml(3, 2)
    with pytest.raises(InputError):
        nusa_xml(0, 2)


# ------------------------------------------------------ engine end to end

def run(tmp: Path, scheduler, workload, nodes=4, slots=16, **opts):
    plat, wl = tmp / "p.xml", tmp / "w.json"
    plat.write_text(nusa_xml(nodes, slots))
    write_workload(workload, wl)
    out = tmp / scheduler
    run_simulation(plat, wl, scheduler, out, options=opts or None, timeout=120)
    with open(out / "out_jobs.csv") as fh:
        return list(csv.DictReader(fh))


def no_overcommit(rows):
    """At no instant does a slot run two jobs (from the engine's output)."""
    by_res = {}
    for r in rows:
        if r["final_state"] == "REJECTED" or not r["allocated_resources"]:
            continue
        s, e = float(r["starting_time"]), float(r["finish_time"])
        for part in r["allocated_resources"].split():
            lo, _, hi = part.partition("-")
            for rid in range(int(lo), int(hi or lo) + 1):
                by_res.setdefault(rid, []).append((s, e))
    for ivs in by_res.values():
        ivs.sort()
        for (s1, e1), (s2, e2) in zip(ivs, ivs[1:]):
            assert s2 >= e1 - 1e-9


def test_readgf_end_to_end(tmp_path):
    w = file_benchmark()
    torque = run(tmp_path, "torque-fifo", w)
    dad = run(tmp_path, "dad", w)
    for rows in (torque, dad):
        assert len(rows) == 20 and {r["final_state"] for r in rows} == {"COMPLETED_SUCCESSFULLY"}
        no_overcommit(rows)
    local = GB / (2803.61 * MB)
    assert all(float(r["execution_time"]) == pytest.approx(local, rel=1e-3) for r in dad)
    slow = [r for r in torque if float(r["execution_time"]) > 2 * local]
    assert 0 < len(slow) < 20          # Torque reads some files remotely, through the network
    assert max(float(r["finish_time"]) for r in torque) > 10 * max(float(r["finish_time"]) for r in dad)


def test_blast_like_delay_and_overcommit(tmp_path):
    w = blast_like(nb_tasks=4, slots=8, set_bytes=1 * GB)
    for sched, opts in (("torque-fifo", {}), ("dad", {}), ("dad", {"delay": 0}), ("dad-ds", {})):
        d = tmp_path / f"{sched}{len(opts)}"
        d.mkdir()
        rows = run(d, sched, w, **opts)
        assert len(rows) == 8 and {r["final_state"] for r in rows} == {"COMPLETED_SUCCESSFULLY"}
        no_overcommit(rows)


def test_unknown_replica_node_is_rejected_by_the_scheduler(tmp_path):
    w = file_benchmark(2, GB, 2)
    w["jobs"][0]["io"]["inputs"][0]["copies"] = ["nowhere"]
    rows = run(tmp_path, "dad", w, nodes=2, slots=1)
    states = {r["job_id"]: r["final_state"] for r in rows}
    assert sorted(states.values()) == ["COMPLETED_SUCCESSFULLY", "REJECTED"]


def test_same_inputs_same_outputs(tmp_path):
    w = blast_like(nb_tasks=3, slots=8, set_bytes=1 * GB)
    outs = []
    for k in range(2):
        d = tmp_path / str(k)
        d.mkdir()
        run(d, "dad", w)
        outs.append((d / "dad" / "out_jobs.csv").read_bytes())
    assert outs[0] == outs[1]


def test_cli_check_one_line_error(tmp_path):
    from click.testing import CliRunner
    from iosched.cli import cli
    plat, wl = tmp_path / "p.xml", tmp_path / "w.json"
    plat.write_text(nusa_xml(2, 1))
    w = file_benchmark(2, GB, 2)
    write_workload(w, wl)
    ok = CliRunner().invoke(cli, ["workload", "dad", "check", str(wl), str(plat)])
    assert ok.exit_code == 0, ok.output
    w["jobs"][0]["io"]["inputs"][0]["copies"] = ["n777"]
    write_workload(w, wl)
    bad = CliRunner().invoke(cli, ["workload", "dad", "check", str(wl), str(plat)])
    assert bad.exit_code != 0
    lines = [x for x in bad.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "unknown node 'n777'" in lines[0] and "Traceback" not in bad.output



@pytest.mark.parametrize("args", [["workload", "dad", "readgf"], ["platform", "dad"]])
def test_cli_missing_output_folder_one_line(tmp_path, args):
    """A missing output folder is one line (a FileNotFoundError traceback before)."""
    from click.testing import CliRunner
    from iosched.cli import cli
    res = CliRunner().invoke(cli, [*args, str(tmp_path / "missing" / "w.json")])
    assert res.exit_code != 0
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "missing" in lines[0] and "does not exist" in lines[0]


def test_cli_reproduce_missing_swf_before_any_work(tmp_path):
    """A missing --swf is one line before any experiment runs (it ran the
    first experiments for 20 s and wrote 11 files before)."""
    from click.testing import CliRunner
    from iosched.cli import cli
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["repro", "dad", "--out", str(out), "--swf", str(tmp_path / "no.swf")])
    assert res.exit_code != 0
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "no.swf" in lines[0] and "does not exist" in lines[0]
    assert not out.exists()


@pytest.mark.real_batsim
@pytest.mark.skipif(__import__("shutil").which("batsim") is None, reason="no 'batsim' on PATH")
@pytest.mark.parametrize("kind", ["blast", "trace"])
def test_same_decisions_on_real_batsim(tmp_path, kind):
    """The encoding is Batsim-standard: the real Batsim 4.2.1 runs it with the
    same allocations and final states, and start and finish times within
    0.05 s + 0.1 % (BLAST on 8 slots; the synthetic trace on 1, 6, 11 and
    16 slots, whose per-executor bytes are not round)."""
    plat, wl = tmp_path / "p.xml", tmp_path / "w.json"
    plat.write_text(nusa_xml(4, 16))
    w = blast_like(nb_tasks=4, slots=8, set_bytes=1 * GB) if kind == "blast" else \
        trace_driven(tiny_swf(tmp_path / "t.swf"), 4, 16, first=40, seed=1)
    write_workload(w, wl)
    for sched, opts in (("torque-fifo", None), ("dad", None), ("dad-ds", None), ("dad", {"interleave": False})):
        rows = {}
        for eng in ("embedded", "batsim"):
            out = tmp_path / f"{sched}-{bool(opts)}-{eng}"
            run_simulation(plat, wl, sched, out, options=opts, engine_cmd=None if eng == "embedded" else "batsim",
                           timeout=300)
            with open(out / "out_jobs.csv") as fh:
                rows[eng] = facts(csv.DictReader(fh))
        assert len(rows["batsim"]) == len(w["jobs"])
        diffs = schedule_differences(rows["embedded"], rows["batsim"])
        assert not diffs, f"{sched} {opts}: {len(diffs)} differences: {diffs[:5]}"


def test_delay_outcomes_summary():
    from iosched.experiments.dad.reproduction import delay_outcomes
    dec = [{"job": "a", "kind": "delayed", "time": 1.0}, {"job": "a", "kind": "delayed", "time": 2.0},
           {"job": "a", "kind": "local", "time": 4.0}, {"job": "b", "kind": "delayed", "time": 2.0},
           {"job": "b", "kind": "remote", "time": 3.0}, {"job": "c", "kind": "local", "time": 0.0}]
    assert delay_outcomes(dec) == {"delayed_tasks": 2, "delayed_then_local": 1,
                                   "mean_delay_s": 2.0, "max_delay_s": 3.0}


def test_options_are_declared_and_checked():
    from iosched.schedulers.registry import check_options, declared_options
    assert set(declared_options("dad")) == {"policy", "beta", "delay", "lshold", "interleave", "cycle", "stats",
                                          "io_record", "io_fallback"}
    check_options("torque-fifo", {"beta": 0.5})
    with pytest.raises(InputError, match="unknown option 'betta'.*did you mean 'beta'"):
        check_options("dad", {"betta": 0.5})


# ------------------------------------- the encoding Batsim 4.2.1 runs as we do
#
# parallel_homogeneous_pfs moves bytes_to_read to EVERY executor and Batsim
# 4.2.1 has no generation_strategy (it ignores the key): the read profiles
# carry the bytes per executor (size / res), one profile per file and slot
# count (read_<file>__r<res>, the task's <profile>__r<res>).

NODES4 = ["n000", "n001", "n002", "n003"]


def tiny_swf(path, n=40):
    """A synthetic SWF trace: job i submitted at 7 i s, run 30-119 s, 1-20 procs."""
    path.write_text("\n".join(f"{i + 1} {i * 7} 0 {30 + (i * 13) % 90} {1 + (i * 5) % 20} -1 -1 -1 -1 -1 1 1 1 1 1 1 -1 -1"
                              for i in range(n)) + "\n")
    return path


def storage_steps(w, job):
    prof = w["profiles"][job["profile"]]
    names = prof["seq"] if prof["type"] == "composed" else [job["profile"]]
    return [(n, w["profiles"][n]) for n in names if w["profiles"][n]["type"] == "parallel_homogeneous_pfs"]


def test_read_profiles_carry_the_bytes_per_executor(tmp_path):
    tr = trace_driven(tiny_swf(tmp_path / "t.swf"), 4, 16, first=40, seed=1)
    for w in (file_benchmark(), blast_like(set_bytes_n=8 * GB), tr):
        check_workload(w, NODES4)
        assert not any("generation_strategy" in p for p in w["profiles"].values())
        for job in w["jobs"]:
            res, sizes = job["res"], {f["file"]: f["bytes"] for f in job["io"]["inputs"]}
            steps = storage_steps(w, job)
            assert sorted(p["storage"] for _, p in steps) == sorted(sizes)
            for name, p in steps:
                assert name == f"read_{p['storage']}__r{res}"
                assert p["bytes_to_read"] == sizes[p["storage"]] / res and p["bytes_to_write"] == 0.0
            assert job["profile"].endswith(f"__r{res}")
    assert {j["res"] for j in tr["jobs"]} == {1, 6, 11, 16}   # slot counts that do not divide 2 GB exactly


def test_checker_refuses_generation_strategy_and_wrong_bytes():
    w = blast_like(nb_tasks=1, slots=8)
    w["profiles"]["read_blastx_db0__r8"]["generation_strategy"] = "DefinedAmountsSpreadUniformly"
    with pytest.raises(InputError, match=r"job 'blastx00': profile 'read_blastx_db0__r8' has 'generation_strategy'") as e:
        check_workload(w, NODES4, "w.json")
    assert "\n" not in str(e.value)
    w = blast_like(nb_tasks=1, slots=8)
    w["profiles"]["read_blastn_db1__r8"]["bytes_to_read"] = 1 * GB      # whole file per executor
    with pytest.raises(InputError, match=r"job 'blastn00': profile 'read_blastn_db1__r8' reads 1000000000.0 B "
                                         r"per executor x res=8 of file 'blastn_db1'"):
        check_workload(w, NODES4)


def test_blast_workload_is_the_golden_nospread_input(shared):
    """`iosched workload dad blast` writes what the real Batsim ran
    in g18b / g19b (golden/inputs/dad_blast_nospread.json)."""
    import json
    gold = json.loads((shared / "golden" / "inputs" / "dad_blast_nospread.json").read_text())
    new = blast_like(nb_nodes=4, set_bytes_n=8 * GB)
    # the golden input is in the earlier format (field files), the generator
    # writes the I/O model (field io, issue 26): the same jobs once read
    assert {k: v for k, v in new.items() if k != "jobs"} == {k: v for k, v in gold.items() if k != "jobs"}
    assert len(new["jobs"]) == len(gold["jobs"])
    for j, g in zip(new["jobs"], gold["jobs"]):
        assert {k: v for k, v in j.items() if k != "io"} == {k: v for k, v in g.items() if k != "files"}
        assert read_io(j, "new") == read_io(g, "golden") and read_task(j) == read_task(g)


def test_scheduler_estimates_from_the_file_sizes():
    """read_dad_job takes sizes from the jobs' files field (whole files), so
    fileLocality weighs files by size whatever the profiles divide."""
    from batsim.batsim import Job as BatsimJob
    w = blast_like(set_bytes_n=8 * GB)
    job = next(j for j in w["jobs"] if j["queue"] == "blastn")
    nb, _, _, req = read_dad_job(BatsimJob("w0!" + job["id"], 0.0, -1, job["res"], job["profile"], job))
    assert nb == 8 and [f.size for f in req.files] == [4 * GB, 4 * GB]
    assert file_locality(req.files, "n000") == 0.0 and file_locality(req.files, "n002") == 1.0


def test_no_interleave_passes_with_an_empty_queue():
    """interleave false: a pass with nothing waiting (the first pass of a
    run, at SIMULATION_BEGINS) used to index an empty queue."""
    core, launcher = make_core(DataAwareDispatch(0.8, 2, 0.5, interleave=False), nodes=2, slots=1)
    core.schedule(0.0)
    core.submit(FakeJob("a", [f("x", "n0")], queue="qa"))
    core.submit(FakeJob("b", [f("y", "n1")], queue="qb"))
    core.submit(FakeJob("c", [f("z", "n1")], queue="qa"))
    core.schedule(1.0)
    assert [(r.job.id, node_of(r)) for r in launcher.started] == [("a", "n0"), ("b", "n1")]
    core.end("a", "COMPLETED_SUCCESSFULLY", 2.0)
    core.schedule(2.0)                 # c's file is on n1 (busy): delayed, FIFO keeps its turn
    assert len(launcher.started) == 2


@pytest.mark.parametrize("sched", ["dad", "dad-ds"])
def test_no_interleave_end_to_end(tmp_path, sched):
    rows = run(tmp_path, sched, blast_like(nb_tasks=3, slots=8, set_bytes=1 * GB), interleave=False)
    assert len(rows) == 6 and {r["final_state"] for r in rows} == {"COMPLETED_SUCCESSFULLY"}
    no_overcommit(rows)


BEFORE = __import__("json").loads((Path(__file__).resolve().parent / "data" / "reencode_before.json").read_text())["cases"]


@pytest.mark.parametrize("case", ["blast", "readgf", "trace"])
def test_same_schedules_as_with_generation_strategy(case, tmp_path):
    """On the embedded engine (which divided the bytes of a
    DefinedAmountsSpreadUniformly profile among the executors) the new
    encoding gives the schedules of the old one, recorded at commit 12191c9
    (tests/data/reencode_before.json; byte-identical out_jobs.csv but for
    the profile names at the re-encoding commit), for every policy."""
    w = {"blast": lambda: blast_like(nb_tasks=4, slots=8, set_bytes=1 * GB),
         "readgf": file_benchmark,
         "trace": lambda: trace_driven(tiny_swf(tmp_path / "t.swf"), 4, 16, first=40, seed=1)}[case]()
    for sched, opts, tag in (("torque-fifo", {}, "torque-fifo"), ("dad", {}, "dad"), ("dad-ds", {}, "dad-ds"),
                             ("dad", {"delay": 0}, "dad_d0")):
        d = tmp_path / tag
        d.mkdir()
        ours = facts(run(d, sched, w, **opts))
        ref = BEFORE[f"dad_{case}_{tag}"]
        diffs = schedule_differences(ours, ref)
        assert not diffs, f"{case} {tag}: {len(diffs)} differences: {diffs[:5]}"


@pytest.mark.parametrize("sched, case", [("torque-fifo", "g18b_dad_blast_nospread_torquefifo"),
                                         ("dad", "g19b_dad_blast_nospread_dad")])
def test_blast_schedule_is_the_real_batsims(shared, tmp_path, sched, case):
    """The generated BLAST workload on the embedded engine gives the real
    Batsim 4.2.1's g18b / g19b schedules job by job."""
    plat = shared / "golden" / "inputs" / "dad_nusa4x16.xml"
    wl = tmp_path / "w.json"
    write_workload(blast_like(nb_nodes=4, set_bytes_n=8 * GB), wl)
    run_simulation(plat, wl, sched, tmp_path / "out", timeout=300)
    with open(tmp_path / "out" / "out_jobs.csv") as fh:
        ours = facts(csv.DictReader(fh))
    with open(shared / "golden" / case / "out_jobs.csv") as fh:
        gold = facts(csv.DictReader(fh))
    assert len(gold) == 16
    diffs = schedule_differences(ours, gold)
    assert not diffs, f"{len(diffs)} differences: {diffs[:5]}"
