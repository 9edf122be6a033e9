"""The I/O record (iosched.sched.iorecord) and its analysis
(iosched.analysis.io, iosched.analysis.ioplots), issue 29.

Each family's small workload (tests/test_cross_family.py's generators) runs
in process under its family's scheduler with and without the record: the
``out_jobs.csv`` is the same byte for byte (recording decides nothing), and
the record says what the jobs' I/O models say: the bytes of each phase per
tier, burst-buffer holds, the bandwidth shares, where inputs came from.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from procset import ProcSet

from iosched.analysis.io import (hold_steps, hold_summary, input_sources, load_io, step_series,
                                 throughput_steps, tier_bytes)
from iosched.analysis.ioplots import EMPTY_NOTE, io_blocks
from iosched.analysis.metrics_file import write_metrics
from iosched.api import simulate
from iosched.errors import InputError
from iosched.sched.iojob import read_io
from iosched.sched.iorecord import HOLDS_FILE, INPUTS_FILE, PHASES_FILE, IORecorder, fmt
from iosched.schedulers.baseline import Baseline
from test_cross_family import FAMILIES

#: family -> its scheduler (registered name)
CASES = {"bb": "sjf-bb", "listpack": "io-list", "locality": "loc-lea", "dad": "dad",
         "pfsbw": "adaptive"}
OK = "COMPLETED_SUCCESSFULLY"


@pytest.fixture(scope="module", params=sorted(CASES))
def run(request, tmp_path_factory):
    """One family's workload under its scheduler, with the record (``on``)
    and with ``io_record: null`` (``off``)."""
    family = request.param
    tmp = tmp_path_factory.mktemp(family)
    platform, workload = FAMILIES[family](tmp)
    dirs = {}
    for mode, options in (("on", None), ("off", {"io_record": None})):
        dirs[mode] = tmp / mode
        simulate(platform, workload, CASES[family], options, output_dir=dirs[mode],
                 engine_args=["--enable-dynamic-jobs"], in_process=True)
        write_metrics(dirs[mode])
    jobs = json.loads(workload.read_text())["jobs"]
    ios = {f"w0!{j['id']}": read_io(j, f"job {j['id']}") for j in jobs}
    return SimpleNamespace(family=family, dirs=dirs, ios=ios, record=load_io(dirs["on"]))


def test_recording_changes_no_decision(run):
    on, off = run.dirs["on"], run.dirs["off"]
    assert (on / "out_jobs.csv").read_bytes() == (off / "out_jobs.csv").read_bytes()
    assert all((on / f).is_file() for f in (PHASES_FILE, HOLDS_FILE, INPUTS_FILE))
    assert not (off / PHASES_FILE).exists() and load_io(off) is None
    options = json.loads((on / "command.json").read_text())["scheduler"]["options"]
    assert options["io_record"] == str(on)


def test_the_record_says_what_the_io_models_say(run):
    ph, holds, inputs = run.record
    assert len(ph) and set(ph["state"]) == {OK}
    assert (ph["end"] >= ph["start"]).all() and (ph["start"] >= ph["ready"]).all()
    per_job = ph.groupby(["job_id", "kind"])["bytes"].sum()
    if run.family == "bb":
        held = holds[holds["kind"] == "burst_buffer"].groupby("job_id")["amount"].sum()
        assert set(holds["capacity"]) == {12 * 40e9}     # dragonfly96: 12 burst-buffer nodes
        for jid, amount in held.items():
            io = run.ios[jid]
            want = io.nodes * io.burst_buffer.bytes if io.nodes else None
            assert per_job[jid, "stage_in"] == pytest.approx(amount)
            assert per_job[jid, "stage_out"] == pytest.approx(amount)
            assert want is None or amount == pytest.approx(want)
        assert set(ph["timing"]) == {"phase"} and set(ph["src"]) >= {"pfs", "burst_buffer"}
        t, v = hold_steps(holds, "burst_buffer")
        assert v.max() <= hold_summary(holds).set_index("kind").at["burst_buffer", "capacity"]
        assert v[-1] == 0
    elif run.family == "listpack":
        for jid, io in run.ios.items():
            p = io.periodic
            assert per_job[jid, "write"] == pytest.approx(p.periods * p.bytes)
        # the FIFO arbiter: one write at a time, so the PFS never carries two
        w = ph[ph["kind"] == "write"].sort_values("start")
        assert (w["start"].to_numpy()[1:] >= w["end"].to_numpy()[:-1] - 1e-9).all()
        assert set(holds["kind"]) == {"io_bandwidth"} and len(holds) == len(run.ios)
    elif run.family == "locality":
        src = input_sources(inputs).set_index("source")
        assert src["inputs"].sum() == len(run.ios)
        reads = ph[ph["kind"] == "read"]
        assert len(reads) == src.at["pfs", "inputs"]
        for r in reads.itertuples():
            assert r.bytes == pytest.approx(run.ios[r.job_id].inputs[0].bytes, rel=1e-7)
    elif run.family == "dad":
        assert set(inputs["source"]) <= {"local", "remote"}
        assert set(ph["timing"]) == {"job"} and set(ph["src"]) == {"local_disk"}
        for jid, g in inputs.groupby("job_id"):
            assert sorted(g["bytes"]) == sorted(float(f.bytes) for f in run.ios[jid].inputs)
        assert throughput_steps(ph, "local_disk")[0].size == 0   # no time is invented
    else:   # pfsbw
        for jid, io in run.ios.items():
            if io.writes is not None and io.writes.bytes:
                assert per_job[jid, "write"] == io.writes.bytes
        assert set(holds["capacity"]) == {20 * 2 ** 30}
    tb = tier_bytes(ph)
    assert (tb[["read", "written"]].to_numpy() >= 0).all() and tb["unfinished"].sum() == 0


def test_metrics_json_has_the_leaderboards_io_hook(run):
    """metrics.json's ``io`` (docs/leaderboard.md), from the record."""
    m = json.loads((run.dirs["on"] / "metrics.json").read_text())
    io, tb = m["io"], tier_bytes(run.record.phases).set_index("tier")
    assert "io" not in json.loads((run.dirs["off"] / "metrics.json").read_text())
    moved = {"bb": ("burst_buffer", "bb"), "listpack": ("pfs", "pfs"), "locality": ("pfs", "pfs"),
             "dad": ("local_disk", "local"), "pfsbw": ("pfs", "pfs")}[run.family]
    tier, key = moved
    assert io["bytes"][key] == pytest.approx(tb.at[tier, "read"] + tb.at[tier, "written"])
    assert io["pfs_throughput"] == pytest.approx(io["bytes"]["pfs"] / m["makespan"], rel=1e-6)
    assert (io["bb_utilization"] is not None) == (run.family == "bb")
    assert (io["pfs_utilization"] is not None) == (run.family in ("listpack", "pfsbw"))
    for v in (io["bb_utilization"], io["pfs_utilization"]):
        assert v is None or 0 < v <= 1


def test_io_blocks_of_the_runs(run, tmp_path):
    blocks = io_blocks({run.family: run.record}, tmp_path / "figures")
    imgs = [b[1] for b in blocks if b[0] == "img"]
    assert f"figures/io_timeline_{run.family}.png" in imgs and "figures/io_tiers.png" in imgs
    assert ("figures/io_inputs.png" in imgs) == (run.family in ("locality", "dad"))
    for rel in imgs:
        assert (tmp_path / rel).read_bytes().startswith(b"\x89PNG")
    tables = [b for b in blocks if b[0] == "table"]
    assert tables[0][1][:2] == ["run", "tier"] and all(r[0] == run.family for r in tables[0][2])


# ------------------------------------------------------------------ units
def test_numbers_and_step_series():
    assert [fmt(x) for x in (None, 3.0, 0.5, 1e20, 2.0 ** 53)] == \
        ["", "3", "0.5", "1e+20", "9007199254740992.0"]
    t, v = step_series([0, 1, 1], [2, 3, 2], [1.0, 2.0, 4.0])
    assert list(t) == [0, 1, 2, 3] and list(v) == [1, 7, 2, 0]
    assert step_series([], [], [])[0].size == 0


def test_tier_bytes_counts_finished_phases_and_untimed_bytes():
    ph = pd.DataFrame({
        "job_id": ["a", "a", "b", "c"], "phase": [0, 1, np.nan, 0],
        "kind": ["stage_in", "network", "write", "stage_out"],
        "src": ["pfs", "compute", "compute", "burst_buffer"],
        "dst": ["burst_buffer", "compute", "pfs", "pfs"], "node": ["s", "", "pfs", "s"],
        "bytes": [10.0, 5.0, 7.0, 3.0], "ready": [0.0, 1, 0, 0], "start": [0.0, 1, 0, 2],
        "end": [1.0, 2, 4, 3], "state": [OK, OK, OK, "COMPLETED_KILLED"],
        "timing": ["phase", "phase", "job", "phase"]})
    tb = tier_bytes(ph).set_index("tier")
    assert tb.at["pfs", "read"] == 10 and tb.at["pfs", "written"] == 7
    assert tb.at["pfs", "untimed"] == 7 and tb.at["pfs", "unfinished"] == 3
    assert tb.at["burst_buffer", "written"] == 10 and tb.at["network", "written"] == 5
    t, v = throughput_steps(ph, "pfs")     # the static write is not drawn
    assert list(t) == [0, 1, 2, 3] and list(v) == [10, 0, 3, 0]


def test_empty_records_and_bad_files(tmp_path):
    rec = IORecorder(tmp_path / "r")
    rec.write()
    r = load_io(tmp_path / "r")
    assert r is not None and not len(r.phases) and not len(r.holds) and not len(r.inputs)
    assert io_blocks({"x": r}, tmp_path / "f") == [("h2", "I/O"), ("p", EMPTY_NOTE)]
    (tmp_path / "r" / PHASES_FILE).write_text("job_id,bytes\nw0!1,x\n")
    with pytest.raises(InputError, match=r"io_phases.csv: not an I/O record: column 'phase'"):
        load_io(tmp_path / "r")
    with pytest.raises(InputError, match="option io_record: expected a folder path or null"):
        Baseline({"io_record": 3})


def test_recorder_follows_phases_and_holds(tmp_path):
    """The recorder's own bookkeeping: a phase's due, start and end times;
    holds and static flows ended with their job."""
    from iosched.sched.executor import Flow, Phase, Plan
    from iosched.sched.iojob import parse_io
    from iosched.sched.machine import Machine
    from iosched.sched.placer import Allocation

    rec = IORecorder(tmp_path)
    rec.begin(Machine([{"id": 0, "name": "n0"}, {"id": 1, "name": "n1"}],
                      [{"id": 2, "name": "pfs"}, {"id": 3, "name": "n1_disk"}]))
    io = parse_io({"inputs": [{"file": "f", "bytes": 8, "copies": ["n1"]}], "writes": {"bytes": 4}},
                  "job j")
    running = SimpleNamespace(job=SimpleNamespace(id="w0!1"), start=5.0)
    alloc = Allocation(ProcSet(0))
    rec.job_started(running, io, alloc, Plan.static(alloc), (("io_bandwidth", "", 2.0, "bytes/s"),),
                    lambda kind: 10.0)
    rec.phase_ready("w0!2", 0, 6.0)
    rec.phase_started("w0!2", 0, 0, Phase({}, ProcSet(0), flows=(Flow("write", "compute", "pfs", 2,
                                                                        1.5),)), 7.0)
    rec.phase_ended("w0!2", 0, 9.0, OK)
    rec.job_ended("w0!1", 11.0, OK)
    rec.write()
    r = load_io(tmp_path)
    assert list(r.inputs["source"]) == ["remote"] and list(r.inputs["node"]) == ["n1"]
    static = r.phases[r.phases["job_id"] == "w0!1"]
    assert list(static["src"]) == ["local_disk", "compute"] and list(static["node"]) == ["n1_disk", "pfs"]
    assert set(static["end"]) == {11.0} and set(static["timing"]) == {"job"}
    phase = r.phases[r.phases["job_id"] == "w0!2"].iloc[0]
    assert (phase["ready"], phase["start"], phase["end"], phase["bytes"]) == (6.0, 7.0, 9.0, 1.5)
    assert r.holds.iloc[0][["amount", "capacity", "start", "end"]].tolist() == [2.0, 10.0, 5.0, 11.0]
