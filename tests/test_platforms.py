"""Tests of iosched.experiments.platforms (SimGrid 3.32 platform generators and CLI).

SimGrid's Engine can be created only once per process, so every SimGrid check
loads the platform in a subprocess that dumps hosts, links and routes
(``simgrid.Host.route_to``) as JSON.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest
from defusedxml import ElementTree as ET

from iosched.errors import InputError
from iosched.experiments.platforms import (
    DRAGONFLY96_STORAGE_NODES,
    cluster_xml,
    dragonfly96_xml,
)

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "platforms" / "dragonfly96.xml"
GOLDEN_CLUSTER100 = REPO.parent / "shared" / "golden" / "inputs" / "cluster100.xml"

HAVE_SIMGRID = importlib.util.find_spec("simgrid") is not None
needs_simgrid = pytest.mark.skipif(not HAVE_SIMGRID, reason="python3-simgrid (SimGrid 3.32) is not importable")

# The dragonfly shape of the burst-buffer artifact (topo_parameters "3,1;4,1;3,1;3").
GROUPS, CHASSIS, ROUTERS, NODES = 3, 4, 3, 3
NB_NODES = GROUPS * CHASSIS * ROUTERS * NODES  # 108

# The artifact's cluster element, with the thesis parameters, alone in a
# Full zone: SimGrid 3.32 loads this part and computes its routes itself.
ARTIFACT_DRAGONFLY = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
    <zone id="root" routing="Full">
        <cluster id="cluster" topology="DRAGONFLY" topo_parameters="3,1;4,1;3,1;3"
                 prefix="node_" radical="0-107" suffix=""
                 speed="1Gf" bw="1250MBps" lat="50us"
                 loopback_bw="1000MBps" loopback_lat="0"/>
    </zone>
</platform>
"""

DUMP = r"""
import json, sys
import simgrid
engine = simgrid.Engine(["iosched-test"])
engine.load_platform(sys.argv[1])
hosts = {h.name: h for h in engine.all_hosts}
names = sorted(hosts)
routes = {}
for a in names:
    for b in names:
        links, latency = hosts[a].route_to(hosts[b])
        routes[a + ">" + b] = {
            "links": [l.name for l in links],
            "bw": [l.bandwidth for l in links],
            "lat": [l.latency for l in links],
            "latency": latency,
        }
out = {
    "hosts": {n: hosts[n].speed for n in names},
    "links": {l.name: [l.bandwidth, l.latency] for l in engine.all_links},
    "routes": routes,
}
with open(sys.argv[2], "w") as fh:
    json.dump(out, fh)
"""


def simgrid_dump(xml_text, tmp_path, name):
    """Load ``xml_text`` in SimGrid 3.32 (subprocess); return its hosts, links, all routes."""
    platform = tmp_path / f"{name}.xml"
    platform.write_text(xml_text)
    out = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, "-c", DUMP, str(platform), str(out)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"SimGrid failed on {name} (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def shipped_dump(tmp_path_factory):
    if not HAVE_SIMGRID:
        pytest.skip("python3-simgrid (SimGrid 3.32) is not importable")
    return simgrid_dump(SHIPPED.read_text(), tmp_path_factory.mktemp("shipped"), "dragonfly96")


@pytest.fixture(scope="module")
def artifact_dump(tmp_path_factory):
    if not HAVE_SIMGRID:
        pytest.skip("python3-simgrid (SimGrid 3.32) is not importable")
    return simgrid_dump(ARTIFACT_DRAGONFLY, tmp_path_factory.mktemp("artifact"), "artifact")


def coords(n):
    """(group, chassis, router, node) of host node_<n>, from the dragonfly definition."""
    return n // (CHASSIS * ROUTERS * NODES), (n // (ROUTERS * NODES)) % CHASSIS, (n // NODES) % ROUTERS, n % NODES


def hosts_and_props(xml_text):
    root = ET.fromstring(xml_text.encode())
    hosts = {}
    for host in root.iter("host"):
        props = {p.get("id"): p.get("value") for p in host.findall("prop")}
        hosts[host.get("id")] = (host.get("speed"), props)
    return root, hosts


def check_route_latencies(dump):
    for key, route in dump["routes"].items():
        assert route["links"], f"empty route {key}"
        assert route["latency"] == pytest.approx(sum(route["lat"]), abs=1e-12), key


# ================================================================ cluster


def test_cluster_xml_structure():
    text = cluster_xml(6, pfs={"bw": "10GBps", "lat": "100us"}, prefix="n")
    root, hosts = hosts_and_props(text)
    assert root.tag == "platform" and root.get("version") == "4.1"
    cluster = [c for c in root.iter("cluster") if c.get("id") == "cluster"][0]
    assert cluster.get("prefix") == "n" and cluster.get("radical") == "0-5"
    master = [c for c in root.iter("cluster") if c.get("id") == "master"][0]
    assert {p.get("id"): p.get("value") for p in master.findall("prop")} == {"role": "master"}
    assert hosts["pfs"][1] == {"role": "storage"}
    assert "pfs" not in hosts_and_props(cluster_xml(6))[1]


def test_cluster_xml_plain_numbers_get_base_units():
    text = cluster_xml(2, speed="2e9", bw=1.25e8, lat="0.00005", bb_bw=3e9, bb_lat=0)
    cluster = [c for c in ET.fromstring(text.encode()).iter("cluster") if c.get("id") == "cluster"][0]
    assert (cluster.get("speed"), cluster.get("bw"), cluster.get("lat")) == ("2000000000.0f", "125000000.0Bps", "5e-05s")
    assert (cluster.get("bb_bw"), cluster.get("bb_lat")) == ("3000000000.0Bps", "0.0s")


def test_cluster_xml_is_deterministic():
    assert cluster_xml(17, pfs={"bw": 1e9, "lat": 1e-4}) == cluster_xml(17, pfs={"bw": 1e9, "lat": 1e-4})


@needs_simgrid
def test_cluster_xml_loads_and_routes(tmp_path):
    dump = simgrid_dump(
        cluster_xml(5, speed=2e9, bw=1e8, lat=1e-5, pfs={"bw": "5GBps", "lat": "100us"}), tmp_path, "c5"
    )
    assert sorted(dump["hosts"]) == sorted([f"node_{i}" for i in range(5)] + ["master_host0", "pfs"])
    assert dump["hosts"]["node_3"] == 2e9
    check_route_latencies(dump)
    for i in range(5):
        to_pfs = dump["routes"][f"node_{i}>pfs"]
        assert to_pfs["links"].count("pfs_link") == 1 and to_pfs["links"][-1] == "pfs_link"
        assert to_pfs["bw"][-1] == 5e9 and to_pfs["lat"][-1] == pytest.approx(1e-4)
        assert to_pfs["bw"][0] == 1e8  # the node's own link first
        assert dump["routes"][f"pfs>node_{i}"]["links"][0] == "pfs_link"
    assert dump["routes"]["pfs>pfs"]["links"] == ["pfs_loopback"]
    assert dump["routes"]["master_host0>pfs"]["links"].count("pfs_link") == 1
    assert dump["routes"]["master_host0>master_host0"]["links"]


@needs_simgrid
@pytest.mark.skipif(not GOLDEN_CLUSTER100.is_file(), reason=f"shared golden data not available: {GOLDEN_CLUSTER100}")
def test_cluster_xml_100_is_equivalent_to_golden_cluster100(tmp_path):
    ours = simgrid_dump(cluster_xml(100), tmp_path, "ours")
    golden = simgrid_dump(GOLDEN_CLUSTER100.read_text(), tmp_path, "golden")
    assert ours["hosts"] == golden["hosts"]
    assert ours["routes"].keys() == golden["routes"].keys()
    for key, route in golden["routes"].items():
        mine = ours["routes"][key]
        assert (mine["bw"], mine["lat"]) == (route["bw"], route["lat"]), key
        assert mine["latency"] == pytest.approx(route["latency"]), key


@pytest.mark.parametrize(
    "args, kwargs, word",
    [
        ((0,), {}, "nb_nodes"),
        ((-3,), {}, "nb_nodes"),
        ((2.0,), {}, "nb_nodes"),
        ((True,), {}, "nb_nodes"),
        ((4,), {"bw": "fast"}, "bw"),
        ((4,), {"bw": -5}, "bw"),
        ((4,), {"bw": "0MBps"}, "bw"),
        ((4,), {"speed": "1GHz"}, "speed"),
        ((4,), {"lat": "50 parsecs"}, "lat"),
        ((4,), {"lat": float("nan")}, "lat"),
        ((4,), {"bb_lat": -1}, "bb_lat"),
        ((4,), {"pfs": {"bw": "1GBps"}}, "pfs"),
        ((4,), {"pfs": {"bw": "1GBps", "lat": "x"}}, "pfs.lat"),
        ((4,), {"pfs": "yes"}, "pfs"),
        ((4,), {"prefix": "bad prefix"}, "prefix"),
        ((4,), {"prefix": "master_host"}, "prefix"),
        ((4,), {"prefix": "AS"}, "prefix"),
        ((4,), {"prefix": 'a"b'}, "prefix"),
    ],
)
def test_cluster_xml_bad_input(args, kwargs, word):
    with pytest.raises(InputError) as exc:
        cluster_xml(*args, **kwargs)
    assert word in str(exc.value) and "\n" not in str(exc.value)


@needs_simgrid
def test_every_accepted_unit_loads_in_simgrid(tmp_path):
    """The unit suffixes _quantity accepts are the ones SimGrid 3.32 parses."""
    from iosched.experiments.platforms import _BW_UNITS, _SPEED_UNITS, _TIME_UNITS

    body = [f'<host id="h_{u}" speed="2{u}"/>' for u in _SPEED_UNITS]
    body += [f'<link id="bw_{u}" bandwidth="3{u}" latency="0s"/>' for u in _BW_UNITS]
    body += [f'<link id="lat_{u}" bandwidth="1Bps" latency="4{u}"/>' for u in _TIME_UNITS]
    xml = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
           '<platform version="4.1"><zone id="units" routing="Full">' + "".join(body) + "</zone></platform>\n")
    path = tmp_path / "units.xml"
    path.write_text(xml)
    script = (
        "import json, sys, simgrid\n"
        "e = simgrid.Engine(['u']); e.load_platform(sys.argv[1])\n"
        "print(json.dumps({'h': {h.name: h.speed for h in e.all_hosts},"
        " 'l': {l.name: [l.bandwidth, l.latency] for l in e.all_links}}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(loaded["h"]) == len(_SPEED_UNITS)
    assert loaded["h"]["h_Gf"] == 2e9 and loaded["h"]["h_flops"] == 2
    assert loaded["l"]["bw_MBps"][0] == 3e6 and loaded["l"]["bw_Mbps"][0] == 3e6 / 8
    assert loaded["l"]["lat_us"][1] == pytest.approx(4e-6)
    assert all(f"bw_{u}" in loaded["l"] for u in _BW_UNITS)


# ============================================================== dragonfly


def test_dragonfly_is_deterministic_and_shipped():
    text = dragonfly96_xml()
    assert text == dragonfly96_xml()
    assert SHIPPED.read_text() == text, "platforms/dragonfly96.xml is stale: regenerate it with the CLI"


def test_dragonfly_hosts_roles_and_links_from_xml():
    root, hosts = hosts_and_props(dragonfly96_xml())
    nodes = {f"node_{i}" for i in range(NB_NODES)}
    assert set(hosts) == nodes | {"pfs", "master"}
    # One burst-buffer node per chassis: the first node of the chassis.
    storage = {h for h, (_, props) in hosts.items() if props.get("role") == "storage"}
    expected = {f"node_{n}" for n in range(NB_NODES) if coords(n)[2:] == (0, 0)}
    assert len(expected) == GROUPS * CHASSIS == 12
    assert storage == expected | {"pfs"}
    assert set(DRAGONFLY96_STORAGE_NODES) == expected
    assert {h for h, (_, p) in hosts.items() if p.get("role") == "master"} == {"master"}
    assert len(nodes - expected) == 96
    assert all(hosts[h][0] == "1Gf" for h in nodes)
    links = {l.get("id"): l for l in root.iter("link")}
    for name, link in links.items():
        if name.startswith(("local_", "green_", "black_", "blue_")):
            assert (link.get("bandwidth"), link.get("latency"), link.get("sharing_policy")) == (
                "1250MBps", "50us", "SPLITDUPLEX"), name
        elif name.endswith("loopback"):
            assert (link.get("bandwidth"), link.get("latency"), link.get("sharing_policy")) == (
                "1000MBps", "0s", "FATPIPE"), name
    assert (links["link_pfs"].get("bandwidth"), links["link_pfs"].get("latency")) == ("5000MBps", "100us")
    assert links["link_pfs"].get("sharing_policy") in (None, "SHARED")
    assert (links["link_master"].get("bandwidth"), links["link_master"].get("sharing_policy")) == ("1250MBps", "FATPIPE")
    # Link counts of the dragonfly: 1 local per node, green all-to-all per
    # chassis, black all-to-all per (group, router position), 1 blue per group pair.
    kinds = [n.split("_")[0] for n in links]
    assert kinds.count("local") == NB_NODES
    assert kinds.count("green") == GROUPS * CHASSIS * ROUTERS * (ROUTERS - 1) // 2
    assert kinds.count("black") == GROUPS * ROUTERS * CHASSIS * (CHASSIS - 1) // 2
    assert kinds.count("blue") == GROUPS * (GROUPS - 1) // 2
    for zone in root.iter("zone"):
        assert zone.get("routing") == "Full"


def test_dragonfly_minimal_routes_are_shortest_walks():
    """Independent check on the XML: router-to-router routes walk the graph, with the fewest hops."""
    root = ET.fromstring(dragonfly96_xml().encode())
    routes = {}
    for zr in root.iter("zoneRoute"):
        src, dst = zr.get("src"), zr.get("dst")
        if src.startswith("router_zone_") and dst.startswith("router_zone_"):
            s, d = int(src.rsplit("_", 1)[1]), int(dst.rsplit("_", 1)[1])
            routes[(s, d)] = [(c.get("id"), c.get("direction")) for c in zr.findall("link_ctn")]
    nb_routers = GROUPS * CHASSIS * ROUTERS
    assert len(routes) == nb_routers * (nb_routers - 1)
    # Adjacency: a one-link route is a direct link; its reverse uses the other direction.
    adjacency = {r: {} for r in range(nb_routers)}
    for (s, d), links in routes.items():
        if len(links) == 1:
            (name, direction), = links
            adjacency[s][(name, direction)] = d
            assert routes[(d, s)] == [(name, "DOWN" if direction == "UP" else "UP")]
    for r in range(nb_routers):
        g, c, b = r // (CHASSIS * ROUTERS), (r // ROUTERS) % CHASSIS, r % ROUTERS
        neighbours = {}
        for d in adjacency[r].values():
            kind = ("green" if (d // ROUTERS) == (r // ROUTERS) else
                    "black" if d // (CHASSIS * ROUTERS) == g and d % ROUTERS == b else "blue")
            neighbours.setdefault(kind, set()).add(d)
        assert len(neighbours["green"]) == ROUTERS - 1
        assert len(neighbours["black"]) == CHASSIS - 1
        # router (g, chassis 0, router j) holds the blue link to group j
        assert len(neighbours.get("blue", ())) == (1 if c == 0 and b < GROUPS and b != g else 0)

    def bfs(src):
        dist, todo = {src: 0}, deque([src])
        while todo:
            u = todo.popleft()
            for v in adjacency[u].values():
                if v not in dist:
                    dist[v] = dist[u] + 1
                    todo.append(v)
        return dist

    for s in range(nb_routers):
        dist = bfs(s)
        for d in range(nb_routers):
            if s == d:
                continue
            cur = s
            for link in routes[(s, d)]:
                assert link in adjacency[cur], (s, d, link, cur)
                cur = adjacency[cur][link]
            assert cur == d, (s, d)
            assert len(routes[(s, d)]) == dist[d], (s, d)


@needs_simgrid
def test_dragonfly_loads_and_has_all_routes(shipped_dump):
    dump = shipped_dump
    assert len(dump["hosts"]) == NB_NODES + 2
    assert set(dump["hosts"].values()) == {1e9}
    check_route_latencies(dump)  # every ordered pair, self included, has a route


@needs_simgrid
def test_dragonfly_routes_between_nodes(shipped_dump):
    routes = shipped_dump["routes"]
    links = shipped_dump["links"]
    # Same router: the two local links.
    r = routes["node_1>node_2"]["links"]
    assert r == ["local_link_from_router_0_to_node_1_1_UP", "local_link_from_router_0_to_node_2_2_DOWN"]
    # Same chassis, another router: local, one green, local.
    r = routes["node_0>node_3"]["links"]
    assert len(r) == 3 and r[1].startswith("green_") and coords(0)[:2] == coords(3)[:2]
    # Same group, another chassis, same router position: local, one black, local.
    r = routes["node_0>node_9"]["links"]
    assert len(r) == 3 and r[1].startswith("black_")
    # Same chassis, another router, chassis != 0 (where SimGrid's own dragonfly adds a black link).
    r = routes["node_10>node_12"]["links"]
    assert len(r) == 3 and r[1].startswith("green_")
    # Different groups: exactly one blue (inter-group) link, at most 5 router hops.
    for a, b in [(0, 40), (107, 5), (13, 80), (50, 100)]:
        assert coords(a)[0] != coords(b)[0]
        r = routes[f"node_{a}>node_{b}"]["links"]
        assert sum(name.startswith("blue_") for name in r) == 1, r
        assert 3 <= len(r) <= 7
        assert r[0].startswith(f"local_link_from_router_{a // NODES}_") and r[0].endswith("_UP")
        assert r[-1].startswith(f"local_link_from_router_{b // NODES}_") and r[-1].endswith("_DOWN")
        assert all(links[name] == [1.25e9, pytest.approx(5e-5)] for name in r)


@needs_simgrid
def test_dragonfly_pfs_master_and_loopbacks(shipped_dump):
    routes = shipped_dump["routes"]
    for n in range(NB_NODES):
        out = routes[f"node_{n}>pfs"]
        assert out["links"].count("link_pfs") == 1
        assert out["links"] == [f"{out['links'][0]}", "link_pfs"]
        assert out["links"][0].startswith(f"local_link_from_router_{n // NODES}_to_node_{n % NODES}_")
        assert out["links"][0].endswith("_UP")
        assert out["bw"] == [1.25e9, 5e9]
        back = routes[f"pfs>node_{n}"]["links"]
        assert back[0] == "link_pfs" and back.count("link_pfs") == 1 and back[1].endswith("_DOWN")
        assert routes[f"node_{n}>master"]["links"][-1] == "link_master"
        loop = routes[f"node_{n}>node_{n}"]
        assert loop["links"] == [f"cluster_link_{n}_loopback"] and loop["bw"] == [1e9] and loop["latency"] == 0
    assert routes["master>master"]["links"] == ["master_loopback"]
    assert routes["pfs>pfs"]["links"] == ["pfs_loopback"]
    assert routes["pfs>master"]["links"] == ["link_pfs", "link_master"]
    assert routes["master>pfs"]["links"] == ["link_master", "link_pfs"]
    # One shared PFS link for everybody.
    assert shipped_dump["links"]["link_pfs"] == [5e9, pytest.approx(1e-4)]


@needs_simgrid
def test_simgrid_variant_equals_simgrids_own_dragonfly(artifact_dump, tmp_path):
    """dragonfly96_xml("simgrid") gives, for every node pair, SimGrid 3.32's DRAGONFLY route."""
    ours = simgrid_dump(dragonfly96_xml("simgrid"), tmp_path, "simgrid_variant")
    assert len(artifact_dump["hosts"]) == NB_NODES
    for key, route in artifact_dump["routes"].items():
        mine = ours["routes"][key]
        assert mine["links"] == route["links"], key
        assert mine["bw"] == route["bw"], key
        assert mine["latency"] == pytest.approx(route["latency"], abs=1e-12), key
    for name, (bw, lat) in artifact_dump["links"].items():
        if name != "__loopback__":
            assert ours["links"][name] == [bw, pytest.approx(lat)], name


@needs_simgrid
def test_minimal_variant_differs_only_where_simgrid_resets_the_chassis(artifact_dump, shipped_dump):
    differing = set()
    for key, route in artifact_dump["routes"].items():
        if shipped_dump["routes"][key]["links"] != route["links"]:
            differing.add(key)
    expected = set()
    for a in range(NB_NODES):
        for b in range(NB_NODES):
            (ga, ca, ra, _), (gb, _, rb, _) = coords(a), coords(b)
            if ga == gb and ca != 0 and ra != rb:
                expected.add(f"node_{a}>node_{b}")
    assert differing == expected
    assert len(expected) == 1944


def test_dragonfly_bad_routing():
    with pytest.raises(InputError) as exc:
        dragonfly96_xml("adaptive")
    assert "adaptive" in str(exc.value) and "\n" not in str(exc.value)


# ==================================================================== CLI


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "iosched.cli", "platform", *map(str, args)],
        capture_output=True, text=True, timeout=300,
    )


def test_cli_dragonfly96_writes_the_shipped_file(tmp_path):
    out = tmp_path / "df.xml"
    proc = run_cli("dragonfly96", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == SHIPPED.read_bytes()
    proc = run_cli("dragonfly96", out, "--routing", "simgrid")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == dragonfly96_xml("simgrid")


def test_cli_cluster(tmp_path):
    out = tmp_path / "c.xml"
    proc = run_cli("cluster", out, "--nb-nodes", 3, "--pfs-bw", "1GBps", "--prefix", "h")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == cluster_xml(3, pfs={"bw": "1GBps", "lat": "100us"}, prefix="h")


@pytest.mark.parametrize(
    "args, word",
    [
        (["cluster", "{out}", "--nb-nodes", "0"], "nb_nodes"),
        (["cluster", "{out}", "--bw", "lots"], "bw"),
        (["cluster", "{out}", "--nb-nodes", "many"], "--nb-nodes"),
        (["cluster"], "OUT"),
        (["dragonfly96", "{out}", "--routing", "adaptive"], "--routing"),
        (["dragonfly96", "{tmp}/no/such/dir/x.xml"], "cannot write"),
    ],
)
def test_cli_bad_input_is_one_line_on_stderr(tmp_path, args, word):
    out = tmp_path / "p.xml"
    proc = run_cli(*[a.format(out=out, tmp=tmp_path) for a in args])
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], proc.stderr
    assert not out.exists()
