"""The arena's machine options (issue 30, item 4): the file system under
overload (``--overload``, embedded engine only) reaches every run's engine
arguments scaled to the machine's PFS link, the per-node I/O cap
(``--node-io-cap``) is links on each compute node's route to the PFS and
the jobs' ``io.throughput_cap``, the machine without options is the
earlier one byte for byte, and a tiny arena runs with both options."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import defusedxml.ElementTree as SafeET
import pytest
import yaml
from click.testing import CliRunner

from iosched.cli import cli
from iosched.engine.overload import parse_overload
from iosched.errors import InputError
from iosched.experiments.arena.campaign import campaign_spec, run_arena
from iosched.experiments.arena.machine import (LINK_BW, PFS_BW_PER_NODE, ArenaMachine, arena_overload_args,
                                               arena_xml)
from iosched.experiments.arena.regimes import Shape, generate
from iosched.experiments.pfsbw.workload import OVERLOADS, PFS_BW as PFSBW_PFS_BW
from iosched.paths import shared_data
from iosched.sched.iojob import validate

KTH = shared_data("KTH-SP2-1996-2.1-cln.swf")
needs_kth = pytest.mark.skipif(not KTH.is_file(), reason="the regimes read the shared KTH-SP2 trace")

#: sha256 of the machine's text before the options existed (100 nodes).
EARLIER = {"dragonfly": "b3b175e281d1f19d9012db10e6a5d29708b16b608763ffd306a8cd98ea701d28",
           "fat-tree": "ec46c1b7c4f0ae64625c7abb45e006e11246366217920f6b0c98c02a2cad85c5"}
CAP = 31.25e6


# ---------------------------------------------------------------- overload

def test_named_readings_are_the_pfsbw_readings_scaled_to_the_pfs_link():
    m = ArenaMachine(100)
    for name in ("issue", "long-term", "fig4"):
        args = arena_overload_args(name, m)
        assert args[0] == "--embedded-extensions" and args[1].startswith("--link-overload=pfs_link:")
        curve = parse_overload(args[1].split("=", 1)[1])
        reading = parse_overload(OVERLOADS[name])
        assert [n for n, _ in curve.points] == [n for n, _ in reading.points]
        for (_, got), (_, bw) in zip(curve.points, reading.points):
            assert got == pytest.approx(bw / PFSBW_PFS_BW * m.pfs_bw, rel=1e-11)
    # fig4: the full link up to 4 concurrent jobs, 0.75 of it from 5 on
    fig4 = parse_overload(arena_overload_args("fig4", ArenaMachine(1000))[1].split("=", 1)[1])
    assert [n for n, _ in fig4.points] == [4, 5]
    assert [bw for _, bw in fig4.points] == pytest.approx([1000 * PFS_BW_PER_NODE, 750 * PFS_BW_PER_NODE])
    assert arena_overload_args(None, m) == arena_overload_args("linear", m) == []
    assert arena_overload_args("10GB@3,5GB@6:flows", m) == ["--embedded-extensions",
                                                            "--link-overload=pfs_link:10GB@3,5GB@6:flows"]


@pytest.mark.parametrize("spec, words", [("fig5", "fig5"), ("pfs_link:1GB@2", "no link name"),
                                         ("1GB@0", "N must be")])
def test_bad_overload_is_one_line(spec, words):
    with pytest.raises(InputError, match=words) as e:
        arena_overload_args(spec, ArenaMachine(100))
    assert str(e.value).startswith(f"--overload {spec!r}") and "\n" not in str(e.value)


def test_the_overload_reaches_every_runs_engine_args(tmp_path):
    m = ArenaMachine(100)
    plain = campaign_spec("a", tmp_path / "p.xml", m, ["easy", "io-list"], ["mixed"], [1, 2], 10, None, True)
    assert plain["engine_args"] == ["--enable-dynamic-jobs"]
    spec = campaign_spec("a", tmp_path / "p.xml", m, ["easy", "io-list"], ["mixed"], [1, 2], 10, None, True,
                         "fig4")
    # the campaign's engine_args are every run's (docs/campaigns.md), and its engine the embedded one
    assert spec["engine_args"] == ["--enable-dynamic-jobs", *arena_overload_args("fig4", m)]
    assert "engine" not in spec


def test_bad_overload_of_the_command_is_one_line(tmp_path):
    r = CliRunner().invoke(cli, ["arena", "--schedulers", "easy", "--regimes", "mixed", "--seeds", "1",
                                 "--jobs", "5", "--overload", "fig9", "--output", str(tmp_path / "o")])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "--overload 'fig9'" in r.output


# ---------------------------------------------------------------- the cap

@pytest.mark.parametrize("topology", sorted(EARLIER))
def test_without_the_cap_the_machine_is_the_earlier_one(topology):
    text = arena_xml(100, topology)
    assert text == arena_xml(100, topology, None)
    assert hashlib.sha256(text.encode()).hexdigest() == EARLIER[topology]
    assert "_pfs\"" not in text and "pfs_gate" not in text


@pytest.mark.parametrize("topology", sorted(EARLIER))
def test_the_cap_is_a_link_on_each_compute_nodes_route_to_the_pfs(topology):
    m = ArenaMachine(100, topology, CAP)
    root = SafeET.fromstring(arena_xml(100, topology, CAP).encode())
    links = {ln.get("id"): ln.get("bandwidth") for ln in root.iter("link")}
    for h in m.compute:
        assert links[f"{h}_pfs"] == f"{CAP:.10g}Bps"
    for h in m.burst_buffers:
        assert links[f"{h}_pfs"] == f"{LINK_BW:.10g}Bps"
    assert links["pfs_gate"] == links["pfs_link"] == f"{m.pfs_bw:.10g}Bps"
    routes = {(r.get("src"), r.get("dst")): [c.get("id") for c in r.iter("link_ctn")] for r in root.iter("route")}
    for h in m.compute:
        assert routes[(h, "pfs")] == [f"{h}_nic", f"{h}_pfs", "pfs_gate", "pfs_link"]
        assert routes[("pfs", h)] == ["pfs_link", "pfs_gate", f"{h}_pfs", f"{h}_nic"]
    assert ("pfs", "io_router") not in routes and ("io_router", "pfs") not in routes


_ROUTES = """
import sys, simgrid
e = simgrid.Engine(["routes"]); e.load_platform(sys.argv[1]); e.netzone_root.seal()
h = {x.name: x for x in e.all_hosts}
pairs = [("node_1", "pfs"), ("pfs", "node_1"), ("node_1", "node_110"), ("node_0", "node_108"),
         ("node_1", "node_9"), ("node_1_disk", "node_1"), ("master", "node_1")]
print({f"{a}>{b}": sorted(l.name for l in h[a].route_to(h[b])[0]) for a, b in pairs})
"""


@pytest.mark.parametrize("topology", sorted(EARLIER))
def test_simgrid_routes_pfs_traffic_through_the_cap_and_nothing_else(topology, tmp_path):
    pytest.importorskip("simgrid")
    got = {}
    for label, cap in (("plain", None), ("cap", CAP)):
        path = tmp_path / f"{label}.xml"
        path.write_text(arena_xml(110, topology, cap))
        out = subprocess.run([sys.executable, "-c", _ROUTES, str(path)], capture_output=True, text=True,
                             check=True).stdout
        got[label] = eval(out.strip().splitlines()[-1], {})  # a dict literal printed by the script above
    assert got["cap"]["node_1>pfs"] == ["node_1_nic_UP", "node_1_pfs_UP", "pfs_gate", "pfs_link"]
    assert got["cap"]["pfs>node_1"] == ["node_1_nic_DOWN", "node_1_pfs_DOWN", "pfs_gate", "pfs_link"]
    for pair in ("node_1>node_110", "node_0>node_108", "node_1>node_9", "node_1_disk>node_1", "master>node_1"):
        assert got["cap"][pair] == got["plain"][pair], pair


def test_platform_command_with_the_cap(tmp_path):
    out = tmp_path / "a.xml"
    r = CliRunner().invoke(cli, ["platform", "arena", "--nodes", "16", "--node-io-cap", "31.25MB", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text() == arena_xml(16, "dragonfly", CAP)
    r = CliRunner().invoke(cli, ["platform", "arena", "--node-io-cap", "fast", "-o", str(out)])
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1 and "--node-io-cap" in r.output
    with pytest.raises(InputError, match="node_io_cap=0"):
        arena_xml(16, "dragonfly", 0)


@needs_kth
def test_jobs_get_the_throughput_cap_q_b_with_the_cap_and_none_without():
    shape = Shape.of_machine(ArenaMachine(100))
    plain = generate(KTH, "mixed", seed=2, jobs=60, shape=shape)
    capped = generate(KTH, "mixed", seed=2, jobs=60, shape=shape, node_io_cap=CAP)
    assert all("throughput_cap" not in j["io"] for j in plain["jobs"])
    for a, b in zip(plain["jobs"], capped["jobs"]):
        assert b["io"]["throughput_cap"] == b["res"] * CAP
        assert {k: v for k, v in b["io"].items() if k != "throughput_cap"} == a["io"]
        validate(b["io"], f"job {b['id']}")
    with pytest.raises(InputError, match="node_io_cap=-1"):
        generate(KTH, "mixed", seed=2, jobs=5, shape=shape, node_io_cap=-1)


@needs_kth
def test_workload_command_with_the_cap(tmp_path):
    out = tmp_path / "w.json"
    r = CliRunner().invoke(cli, ["workload", "arena", str(KTH), "--regime", "bandwidth-bound", "--jobs", "10",
                                 "--node-io-cap", "31.25MBps", "-o", str(out)])
    assert r.exit_code == 0, r.output
    jobs = json.loads(out.read_text())["jobs"]
    assert [j["io"]["throughput_cap"] for j in jobs] == [j["res"] * CAP for j in jobs]


# ---------------------------------------------------------------- a tiny arena

@needs_kth
def test_tiny_arena_runs_with_both_options(tmp_path):
    res = run_arena(["easy", "io-list"], ["mixed"], [1], [100], tmp_path, jobs=20, workers=1, in_process=True,
                    overload="fig4", node_io_cap=CAP, echo=lambda s: None)
    assert res["failed"] == {}
    run = res["sizes"][0]["result"]
    assert len(run.executed) == 2
    spec = yaml.safe_load((tmp_path / "n100" / "arena.yaml").read_text())
    assert spec["engine_args"] == ["--enable-dynamic-jobs", *arena_overload_args("fig4", ArenaMachine(100))]
    assert spec["workloads"][0]["args"]["node_io_cap"] == CAP
    assert (tmp_path / "n100" / "inputs" / "arena100-dragonfly.xml").read_text() == arena_xml(100, "dragonfly", CAP)
    board = res["sizes"][0]["leaderboard"]["board"]
    assert sorted(board["scheduler"]) == ["easy", "io-list"] and list(board["failed"]) == [0, 0]

