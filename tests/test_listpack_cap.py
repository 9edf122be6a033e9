"""The per-node I/O bandwidth cap of the list-vs-pack machine (issue 30):
platform links and routes, ``min(Q b, B)`` in the model and on the engine,
the generator's ``volume="node"`` and the constraints binding under the cap."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner

from iosched.api import simulate
from iosched.errors import InputError
from iosched.experiments.listpack.reproduction import peak_demand
from iosched.experiments.listpack.workload import generate, to_batsim, write_workload
from iosched.experiments.platforms import cluster_xml, listpack_command, listpack_xml
from iosched.listpack.metrics import job_table, read_phases, read_workload
from iosched.listpack.model import (CAP_RATIO, DEFAULT_BANDWIDTH, MIRA_NODE_BANDWIDTH, Machine,
                                    PeriodicJob, io_load, listpack_machine)
from iosched.listpack.packs import build_packs, order_key

B = DEFAULT_BANDWIDTH


# ------------------------------------------------------------ platform
def _parse(text):
    root = ET.fromstring(text.split("\n", 2)[2])   # past the XML declaration and DOCTYPE
    zone = root.find("zone")
    clusters = {c.get("id"): c for c in zone.findall("cluster")}
    links = {link.get("id"): link for link in zone.iter("link")}
    routes = {(r.get("src"), r.get("dst")): [c.get("id") for c in r.findall("link_ctn")]
              for r in zone.findall("zoneRoute")}
    return clusters, links, routes


@pytest.mark.parametrize("kind,res,link", [("mira", 96, "16000000000Bps"), ("uniform", 2048, "750000000Bps")])
def test_capped_platform_links_and_routes(kind, res, link, tmp_path):
    m = listpack_machine(kind, cap=True)
    assert m.resources == res and m.nodes * m.node_bandwidth == pytest.approx(CAP_RATIO * B)
    clusters, links, routes = _parse(listpack_xml(m.resources, m.link_bandwidth))
    c = clusters["cluster"]
    assert c.get("radical") == f"0-{res - 1}"
    assert c.get("bw") == link                   # each resource's link: block x b
    assert c.get("bb_bw") == "2.4TBps"           # the backbone never limits (> P b)
    assert links["pfs_link"].get("bandwidth") == "240GBps"   # B: I/O node -> file system
    assert routes[("cluster", "pfs_zone")] == ["pfs_link"]   # node link, then B, to the PFS
    out = tmp_path / "p.xml"
    r = CliRunner().invoke(listpack_command, [str(out), "--machine", kind, "--cap"])
    assert r.exit_code == 0, r.output
    assert out.read_text() == listpack_xml(m.resources, m.link_bandwidth)


def test_uncapped_platform_is_the_earlier_one():
    m = listpack_machine("mira")
    assert m.node_bandwidth is None and m.link_bandwidth is None
    assert listpack_xml(m.resources) == cluster_xml(96, bw="2.4TBps", lat="1us", bb_bw="2.4TBps",
                                                    bb_lat="1us", pfs={"bw": "240GBps", "lat": "1us"})


def test_mira_cap_figures():
    # 4 GB/s per I/O node, one I/O node per 128 compute nodes
    assert MIRA_NODE_BANDWIDTH == 31.25e6
    assert CAP_RATIO == pytest.approx(6.4)       # P b > B
    assert Machine(49152, 512, B, MIRA_NODE_BANDWIDTH).link_bandwidth == 16e9
    with pytest.raises(InputError, match="node_bandwidth"):
        Machine(96, 1, B, 0.0)


# ------------------------------------------------------------ model
def test_model_uses_min_of_cap_and_B():
    small = PeriodicJob(nodes=1024, periods=10, w=100.0, v=64e9, cap=1024 * MIRA_NODE_BANDWIDTH)
    big = PeriodicJob(nodes=16384, periods=10, w=100.0, v=64e9, cap=16384 * MIRA_NODE_BANDWIDTH)
    free = PeriodicJob(nodes=1024, periods=10, w=100.0, v=64e9)
    assert small.rate(B) == 32e9 and big.rate(B) == B and free.rate(B) == B
    assert small.time(B) == pytest.approx(10 * (100 + 64e9 / 32e9))
    assert big.time(B) == pytest.approx(10 * (100 + 64e9 / B))
    assert small.characteristic_time(B) == pytest.approx(102.0)
    assert small.bandwidth(B) == pytest.approx(640e9 / small.time(B))
    assert small.io_time(1e9) == 64.0            # less than the cap available: that is the rate
    with pytest.raises(InputError, match="cap"):
        PeriodicJob(1, 1, 1.0, 1.0, cap=-1.0)


def test_generator_node_volumes_and_caps(tmp_path):
    wl = generate("M-No", 0.6, seed=3, n_jobs=20, volume="node", cap=True)
    assert abs(wl.alpha - 0.6) <= 0.01
    b = wl.machine.node_bandwidth
    for j in wl.jobs:
        assert j.cap == j.nodes * b
        assert j.v == pytest.approx(j.x * j.w * j.nodes * b)   # v = X w Q b
    assert io_load(wl.jobs, wl.machine.nodes, B) == pytest.approx(wl.alpha)
    data = to_batsim(wl)
    assert data["listpack"]["node_bandwidth"] == b and data["listpack"]["volume"] == "node"
    assert all(j["io"]["throughput_cap"] == j["io"]["nodes"] * b for j in data["jobs"])
    p = tmp_path / "w.json"
    write_workload(p, wl)
    jobs, rec = read_workload(p)
    assert all(jobs[str(i)].cap == j.cap for i, j in enumerate(wl.jobs))
    # the earlier model: no cap field, as before
    plain = to_batsim(generate("M-No", 0.6, seed=3, n_jobs=20))
    assert all("throughput_cap" not in j["io"] for j in plain["jobs"])
    assert "node_bandwidth" not in plain["listpack"]
    with pytest.raises(InputError, match="volume='node'"):
        generate("M-No", 0.6, seed=3, n_jobs=20, volume="node")
    with pytest.raises(InputError, match="cap="):
        generate("M-No", 0.6, seed=3, n_jobs=20, cap="yes")


# ------------------------------------------------------------ engine
def _one_job_workload(path, res, v, cap):
    job = {"id": "0", "subtime": 0, "res": res, "profile": "j0",
           "io": {"nodes": res, "periodic": {"periods": 2, "compute": 10.0, "bytes": v},
                  **({} if cap is None else {"throughput_cap": cap})}}
    path.write_text(json.dumps({"nb_res": 16, "jobs": [job],
                                "profiles": {"j0": {"type": "delay", "delay": 100.0}}}))


@pytest.mark.parametrize("res,io_model", [(2, "exclusive"), (8, "exclusive"), (3, "shared"), (16, "shared")])
def test_job_alone_transfers_at_min_of_Qb_and_B(tmp_path, res, io_model):
    """A job alone on ``Q`` one-node resources (b = 40 GB/s per node, B =
    240 GB/s) writes at ``min(Q b, B)``: measured I/O phase times."""
    b, v = 40e9, 480e9
    plat = tmp_path / "p.xml"
    plat.write_text(listpack_xml(16, b))
    wl = tmp_path / "w.json"
    _one_job_workload(wl, res, v, res * b)
    out = tmp_path / "out"
    simulate(str(plat), str(wl), "io-list", {"io_model": io_model}, output_dir=out,
             engine_args=["--enable-dynamic-jobs"], cpu="none")
    ph = read_phases(out / "out_jobs.csv")
    io = ph[ph["kind"] == "o"]
    assert len(io) == 2
    expected = v / min(res * b, B)
    for d in io["end"] - io["start"]:
        assert d == pytest.approx(expected, abs=1e-4)    # + 3 route latencies of 1 us
    # without the cap field the same job gets B (the earlier model)
    _one_job_workload(wl, res, v, None)
    out2 = tmp_path / "out2"
    simulate(str(plat), str(wl), "io-list", {"io_model": io_model}, output_dir=out2,
             engine_args=["--enable-dynamic-jobs"], cpu="none")
    ph2 = read_phases(out2 / "out_jobs.csv")
    d2 = (ph2["end"] - ph2["start"])[ph2["kind"] == "o"]
    # written from the first resource only: its 40 GB/s link, not B, is then the limit
    assert all(x == pytest.approx(v / b, abs=1e-4) for x in d2)


# ------------------------------------------------------------ binding
def _core_jobs(jobs, block):
    return [SimpleNamespace(id=str(i), request=j, nb_res=j.nodes // block, seq=i) for i, j in enumerate(jobs)]


def _densest_full_machine(jobs, P, B):
    """Largest sum of average bandwidths of a set of jobs that fits P nodes
    (greedy by bandwidth per node, a lower bound of the best)."""
    tot, used = 0.0, 0
    for j in sorted(jobs, key=lambda j: -j.bandwidth(B) / j.nodes):
        if used + j.nodes <= P:
            tot += j.bandwidth(B)
            used += j.nodes
    return tot


def test_constraints_bind_with_the_cap_and_not_without():
    capped = generate("M-BN", 0.8, seed=2, n_jobs=30, volume="node", cap=True)
    plain = generate("M-BN", 0.6, seed=2, n_jobs=30)
    P = capped.machine.nodes
    # strict constraint (io-list): some set that fits the nodes asks more than B
    assert _densest_full_machine(capped.jobs, P, B) > B
    assert all(j.bandwidth(B) < B * j.nodes / P for j in plain.jobs)   # docs/listpack.md's proof
    # average constraint (packs, Char order): the packs differ from packs
    # built by nodes alone (it binds more rarely: docs/listpack.md)
    for wl, binds in ((capped, True), (plain, False)):
        order = sorted(_core_jobs(wl.jobs, wl.machine.block), key=order_key("char", B))
        with_bw = build_packs(order, wl.machine.resources, B)
        nodes_only = build_packs(order, wl.machine.resources, math.inf)
        differ = [[j.id for j in p.jobs] for p in with_bw] != [[j.id for j in p.jobs] for p in nodes_only]
        assert differ == binds


def test_io_list_holds_a_job_for_bandwidth_on_the_engine(tmp_path):
    """io-list on a capped workload: some job waits while its nodes are free
    (the strict constraint holds it), and the running jobs' average
    bandwidths never sum above B."""
    wl = generate("M-BN", 0.8, seed=2, n_jobs=12, volume="node", cap=True)
    m = wl.machine
    plat, wpath, out = tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "out"
    plat.write_text(listpack_xml(m.resources, m.link_bandwidth))
    write_workload(wpath, wl)
    simulate(str(plat), str(wpath), "io-list", None, output_dir=out,
             engine_args=["--enable-dynamic-jobs"], cpu="none")
    jobs, rec = read_workload(wpath)
    jt = job_table(read_phases(out / "out_jobs.csv"), jobs, B).set_index("job")
    jt = jt.loc[sorted(jt.index, key=int)]
    beta = {j: jobs[j].bandwidth(B) for j in jt.index}
    held = 0
    for k in range(1, len(jt)):
        j, prev = jt.index[k], jt.index[k - 1]
        s, s_prev = jt.loc[j, "start"], jt.loc[prev, "start"]
        running = jt[(jt["start"] <= s + 1e-6) & (jt["end"] > s + 1e-6)]
        assert sum(beta[i] for i in running.index) <= B * (1 + 1e-9)
        for e in sorted(jt["end"][(jt["end"] > s_prev + 1e-6) & (jt["end"] < s - 1e-3)]):
            busy = jt[(jt["start"] <= e) & (jt["end"] > e + 1e-6)]["nodes"].sum()
            if m.nodes - busy >= jt.loc[j, "nodes"]:
                held += 1
                break
    assert held > 0


def test_peak_demand_sums_the_running_jobs_bandwidths():
    jobs = {"0": PeriodicJob(1, 1, 10.0, 10 * B), "1": PeriodicJob(1, 1, 30.0, 10 * B),
            "2": PeriodicJob(1, 1, 10.0, 0.0)}
    jt = pd.DataFrame({"job": ["0", "1", "2"], "start": [0.0, 5.0, 30.0], "end": [20.0, 45.0, 40.0]})
    # beta: job 0 = 10 B / 20 s = B / 2, job 1 = 10 B / 40 s = B / 4, job 2 = 0
    assert peak_demand(jt, jobs, B) == pytest.approx(0.75)
