"""The arena's I/O regimes (issue 27, item 2): the ``io`` of every job
validates, the same arguments give the same bytes, bad arguments are one
line, and one scheduler of each family runs a regime on the reference
machine (embedded engine, in process)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from click.testing import CliRunner

from iosched.api import simulate
from iosched.cli import cli
from iosched.errors import InputError
from iosched.experiments.arena.machine import ArenaMachine, arena_xml, scheduler_options
from iosched.experiments.arena.regimes import REGIMES, Shape, generate, shape_of_platform, trace_jobs
from iosched.paths import shared_data
from iosched.schedulers.registry import SCHEDULERS
from iosched.sched.ioplan import BURST_BUFFER, INPUTS, PERIODIC, STATIC, part_of
from iosched.sched.iojob import read_io, validate
from iosched.workloads.writer import dump_workload

KTH = shared_data("KTH-SP2-1996-2.1-cln.swf")
needs_kth = pytest.mark.skipif(not KTH.is_file(), reason="the regimes read the shared KTH-SP2 trace")

#: The part of the I/O model each regime gives its jobs.
PARTS = {"checkpoint-heavy": {BURST_BUFFER}, "data-reuse": {INPUTS}, "bandwidth-bound": {PERIODIC},
         "node-local": {STATIC}, "mixed": {BURST_BUFFER, INPUTS, PERIODIC, STATIC}}


@pytest.fixture(scope="module")
def workloads():
    return {r: generate(KTH, r, seed=3, jobs=120) for r in REGIMES} if KTH.is_file() else {}


@needs_kth
@pytest.mark.parametrize("regime", REGIMES)
def test_io_validates_and_gives_the_regime_part(workloads, regime):
    wl = workloads[regime]
    assert len(wl["jobs"]) == 120 and wl["nb_res"] == 100
    parts = set()
    for j in wl["jobs"]:
        validate(j["io"], f"job {j['id']}")
        io = read_io(j, f"job {j['id']}")
        parts.add(part_of(io))
        assert j["profile"] in wl["profiles"] and 1 <= j["res"] <= 100
        for f in io.inputs:
            assert all(c == "pfs" or c.startswith("node_") for c in f.copies)
    assert parts == PARTS[regime]
    # the same jobs in every regime: only the I/O model and the profile differ
    base = [(j["id"], j["subtime"], j["res"], j["walltime"]) for j in wl["jobs"]]
    assert base == [(j["id"], j["subtime"], j["res"], j["walltime"]) for j in workloads["node-local"]["jobs"]]


@needs_kth
def test_data_reuse_shares_files_between_a_users_jobs(workloads):
    files = [j["io"]["inputs"][0]["file"] for j in workloads["data-reuse"]["jobs"]]
    assert len(set(files)) < len(files)


@needs_kth
def test_same_arguments_same_bytes(workloads):
    again = generate(KTH, "mixed", seed=3, jobs=120)      # every regime's draws
    assert dump_workload(again) == dump_workload(workloads["mixed"])
    assert dump_workload(generate(KTH, "mixed", seed=4, jobs=120)) != dump_workload(workloads["mixed"])


@needs_kth
def test_jobs_larger_than_the_machine_are_dropped_and_counted(tmp_path):
    rows, dropped = trace_jobs(KTH, 16, 200)
    assert len(rows) == 200 and dropped > 0 and max(r["res"] for r in rows) <= 16
    small = tmp_path / "a16.xml"
    small.write_text(arena_xml(16))
    shape = shape_of_platform(small)
    assert shape.compute == ArenaMachine(16).compute and shape.burst_buffers == 2
    wl = generate(KTH, "checkpoint-heavy", seed=0, jobs=50, shape=shape)
    assert wl["dropped_too_large"] > 0 and wl["nb_res"] == 16


def _one_line(r, code=None):
    lines = r.output.strip().splitlines()
    assert r.exit_code != 0 and (code is None or r.exit_code == code) and len(lines) == 1, r.output
    return lines[0]


@pytest.mark.parametrize("args, text", [
    (["--regime", "wild"], "wild"),
    (["--regime", "mixed", "--jobs", "-5"], "--jobs=-5"),
    (["--regime", "mixed", "--seed", "-1"], "--seed=-1"),
    (["/nonexistent/trace.swf", "--regime", "mixed"], "/nonexistent/trace.swf"),
    (["--regime", "mixed", "--nodes", "10", "--platform", "p.xml"], "not both"),
])
def test_bad_arguments_are_one_line(args, text, tmp_path):
    r = CliRunner().invoke(cli, ["workload", "arena", *args, "-o", str(tmp_path / "w.json")])
    assert text in _one_line(r)


def test_bad_arguments_of_the_function():
    with pytest.raises(InputError, match="regime='wild'"):
        generate("x.swf", "wild")
    with pytest.raises(InputError, match="jobs=0"):
        generate("x.swf", "mixed", jobs=0)


@needs_kth
def test_command_writes_the_generated_workload(tmp_path):
    out = tmp_path / "w.json"
    r = CliRunner().invoke(cli, ["workload", "arena", str(KTH), "--regime", "bandwidth-bound", "--seed", "2",
                                 "--jobs", "30", "--nodes", "100", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "dropped 0 jobs larger than the machine" in r.output
    assert out.read_bytes() == dump_workload(generate(KTH, "bandwidth-bound", 2, jobs=30)).encode()


#: One scheduler of each family, the regime it serves, and the jobs of the
#: regime it must complete (the others: rejected at submission).
RUNS = [("easy", "mixed"), ("sjf-bb", "checkpoint-heavy"), ("io-list", "bandwidth-bound"),
        ("loc-lea", "data-reuse"), ("dad", "node-local"), ("slurm-backfill", "node-local")]


@needs_kth
@pytest.mark.parametrize("name, regime", RUNS)
def test_one_scheduler_of_each_family_runs_on_the_machine(name, regime, tmp_path):
    m = ArenaMachine(100, "fat-tree" if name in ("dad", "io-list") else "dragonfly")
    platform = tmp_path / "arena.xml"
    platform.write_text(arena_xml(m.nodes, m.topology))
    wl = generate(KTH, regime, seed=1, jobs=25, shape=Shape.of_machine(m))
    (tmp_path / "w.json").write_text(dump_workload(wl))
    options = scheduler_options(m).get(SCHEDULERS[name][0], {})
    df = simulate(platform, tmp_path / "w.json", name, output_dir=tmp_path / "out", options=options,
                  engine_args=["--enable-dynamic-jobs"], in_process=True)
    rows = df[df["job_id"].astype(str).isin({str(j["id"]) for j in wl["jobs"]})]
    assert len(rows) == len(wl["jobs"])
    states = dict(zip(rows["job_id"].astype(str), rows["final_state"]))
    log = (tmp_path / "out" / "engine.log").read_text()
    rejected = {line.split("rejecting job w0!", 1)[1].split(":", 1)[0] for line in log.splitlines()
                if "rejecting job w0!" in line}
    assert {j for j, s in states.items() if s == "REJECTED"} == rejected
    finished = [j for j, s in states.items() if s.startswith("COMPLETED")]
    assert finished, states
    if name in ("sjf-bb", "io-list"):       # whole-machine families: every job of their part runs
        assert not rejected, rejected
    else:                                    # one-node families and the baseline's unserved parts
        by_id = {str(j["id"]): j for j in wl["jobs"]}
        for jid in rejected:
            io = read_io(by_id[jid], jid)
            assert by_id[jid]["res"] > 1 or part_of(io) == BURST_BUFFER, (jid, by_id[jid]["res"])


@needs_kth
@pytest.mark.skipif(shutil.which("batsim") is None, reason="no 'batsim' on PATH (the real Batsim 4.2.x)")
@pytest.mark.parametrize("cap", [None, 31.25e6], ids=["no-cap", "node-io-cap"])
def test_the_real_batsim_runs_the_machine_as_the_embedded_engine(tmp_path, cap):
    """The real Batsim loads the reference machine, also with the per-node
    I/O cap (issue 30: only links), and gives the same jobs, states and
    times as the embedded engine (burst-buffer phases, periodic writes,
    reads from the PFS and from node-local disks)."""
    platform = tmp_path / "arena.xml"
    platform.write_text(arena_xml(100, "fat-tree", cap))
    (tmp_path / "w.json").write_text(dump_workload(generate(KTH, "mixed", seed=1, jobs=30, node_io_cap=cap)))
    tables = []
    for engine in ("embedded", "batsim"):
        out = tmp_path / engine
        r = CliRunner().invoke(cli, ["run", "-p", str(platform), "-w", str(tmp_path / "w.json"), "-s", "easy",
                                     "-o", str(out), "--engine", engine, "--engine-arg=--enable-dynamic-jobs",
                                     "--no-metrics"])
        assert r.exit_code == 0, r.output
        df = pd.read_csv(out / "out_jobs.csv").set_index("job_id").sort_index()
        tables.append(df[["final_state", "starting_time", "finish_time"]])
    pd.testing.assert_frame_equal(tables[0], tables[1])
