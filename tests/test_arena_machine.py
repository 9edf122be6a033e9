"""The arena's reference machine (issue 27, item 1): every tier at both
sizes and with both interconnects, read as the embedded engine and each
family's scheduler read it."""

from __future__ import annotations

import math

import defusedxml.ElementTree as SafeET
import pytest
from click.testing import CliRunner

from iosched.bb.placement import BurstBufferPlacer
from iosched.cli import cli
from iosched.dad.dispatch import NodePlacer
from iosched.engine.platform import build_resources, read_hosts
from iosched.errors import InputError
from iosched.experiments.arena.machine import (CHASSIS_HOSTS, LINK_BW, NODE_CORES, NODE_MEMORY, PFS_BW_PER_NODE,
                                               SIZES, TOPOLOGIES, ArenaMachine, arena_xml, scheduler_options)
from iosched.locality.policy import OneNodePlacer
from iosched.sched.machine import Machine

CASES = [(n, t) for n in SIZES for t in TOPOLOGIES]


@pytest.fixture(scope="module", params=CASES, ids=[f"{n}-{t}" for n, t in CASES])
def platform(request, tmp_path_factory):
    nodes, topology = request.param
    path = tmp_path_factory.mktemp("arena") / "arena.xml"
    path.write_text(arena_xml(nodes, topology))
    return nodes, topology, path


def _machine(path) -> Machine:
    """The scheduler's machine, from the resources the engine announces."""
    hosts = read_hosts(str(path))
    res = build_resources(str(path), sorted(hosts), "master", {}, 0)
    return Machine([r.to_json() for r in res.compute], [r.to_json() for r in res.storage])


def test_every_tier_is_in_the_xml(platform):
    nodes, topology, path = platform
    root = SafeET.parse(str(path)).getroot()
    hosts = {h.get("id"): {p.get("id"): p.get("value") for p in h.findall("prop")} for h in root.iter("host")}
    compute = [h for h, p in hosts.items() if "role" not in p]
    disks = [h for h, p in hosts.items() if p.get("role") == "storage" and h.endswith("_disk")]
    bbs = [h for h, p in hosts.items() if p.get("role") == "storage" and h.startswith("node_")
           and not h.endswith("_disk")]
    assert len(compute) == nodes
    assert sorted(disks) == sorted(f"{h}_disk" for h in compute)
    assert len(bbs) == math.ceil(nodes / (CHASSIS_HOSTS - 1))
    assert all(int(b.split("_")[1]) % CHASSIS_HOSTS == 0 for b in bbs)
    assert hosts["pfs"] == {"role": "storage"} and hosts["master"] == {"role": "master"}
    for h in compute:
        assert hosts[h]["cores"] == str(NODE_CORES) and float(hosts[h]["memory"]) == NODE_MEMORY
    links = {ln.get("id"): ln for ln in root.iter("link")}
    pfs = links["pfs_link"]
    assert pfs.get("sharing_policy") == "SHARED"
    assert float(pfs.get("bandwidth")[:-3]) == pytest.approx(PFS_BW_PER_NODE * nodes)
    if topology == "dragonfly":
        groups = ArenaMachine(nodes, topology).groups
        assert sum(name.startswith("global_") for name in links) == groups * (groups - 1) // 2
    else:
        assert "io_link" in links and sum(name.startswith("up_pod_") for name in links) >= 1
    # a route only between neighbours: the file grows linearly with the machine
    assert len(list(root.iter("route"))) < 40 * nodes + 2000


def test_engine_resources_and_each_family_reads_them(platform):
    nodes, _, path = platform
    m = _machine(path)
    assert len(m.nodes) == nodes and all(n.cores == 1 and n.memory == NODE_MEMORY for n in m.nodes)
    names = set(m.storage.values())
    assert "pfs" in names and sum(n.endswith("_disk") for n in names) == nodes
    # burst buffers: one per chassis, the disks excluded, proximity tiers (own chassis first)
    bb = BurstBufferPlacer(40e9, "pfs")
    pools = bb.begin(m)
    assert len(pools) == math.ceil(nodes / (CHASSIS_HOSTS - 1))
    topo = bb.topology
    first = min(m.compute)
    own = topo.tiers[first][0]
    assert len(own) == 1 and m.storage[own[0]] == "node_0"
    assert len(topo.tiers[first]) == (3 if nodes > 36 else 2)
    # data-aware dispatch: every node has its disk
    dad = NodePlacer()
    dad.begin(m)
    assert set(dad.disks) == {n.name for n in m.nodes}
    # locality: one-node jobs on nodes of one resource
    loc = OneNodePlacer()
    loc.begin(m)
    assert loc.cores_per_node == 1


def test_same_arguments_same_bytes_and_bad_arguments():
    assert arena_xml(100, "fat-tree") == arena_xml(100, "fat-tree")
    assert arena_xml(100, "fat-tree") != arena_xml(100, "dragonfly")
    with pytest.raises(InputError, match="topology='torus'"):
        arena_xml(100, "torus")
    with pytest.raises(InputError, match="nodes=0"):
        arena_xml(0)
    opts = scheduler_options(ArenaMachine(1000))
    assert opts["listpack.py"]["bandwidth"] == opts["pfsbw.py"]["limit"] == PFS_BW_PER_NODE * 1000
    assert opts["locality.py"]["bandwidth"] == LINK_BW


def test_platform_command(tmp_path):
    out = tmp_path / "a.xml"
    r = CliRunner().invoke(cli, ["platform", "arena", "--nodes", "16", "--topology", "fat-tree", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text() == arena_xml(16, "fat-tree")
    r = CliRunner().invoke(cli, ["platform", "arena", "--nodes", "-3", "-o", str(out)])
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1 and "nodes=-3" in r.output
    r = CliRunner().invoke(cli, ["platform", "arena", "--topology", "torus"])
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and "torus" in r.output
