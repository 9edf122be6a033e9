"""The arena's reference machine: one SimGrid 3.32 platform that every
family's schedulers run on (issue 27, item 1; ``docs/arena.md``, "The
reference machine").

:func:`arena_xml` writes, for ``nodes`` compute nodes (about 100 or 1,000)
and a ``topology`` (``dragonfly`` or ``fat-tree``):

* **compute nodes** ``node_<k>``: one Batsim resource each (every family's
  scheduler allocates whole nodes: the burst-buffer, list/pack and pfsbw
  families by design, the locality and data-aware families run one-node
  jobs), speed :data:`NODE_SPEED`, properties ``cores``
  (:data:`NODE_CORES`), ``memory`` (:data:`NODE_MEMORY` bytes, read by
  :class:`iosched.sched.machine.Machine`: the locality family's cache) and
  ``node`` (its own name);
* a **node-local disk** per compute node, the storage host
  ``node_<k>_disk`` (``role=storage``; the core's naming,
  :data:`iosched.sched.ioplan.DISK_SUFFIX`, read by the data-aware family
  and by the core's plans of ``io.inputs`` copies), behind the link
  ``node_<k>_local`` (:data:`DISK_BW`, shared by the node's local and
  remote readers);
* **burst-buffer nodes**: chassis ``c`` holds the hosts numbered ``9c ..
  9c + 8``; ``node_<9c>`` is its burst-buffer node (``role=storage``) and
  the next 8 are compute nodes (the last chassis may hold fewer). The
  numbering is the one the burst-buffer family's placer reads
  (:class:`iosched.bb.placement.Topology`: chassis of 9 hosts, groups of
  36 hosts, a burst-buffer node's number a multiple of 9), as in
  ``dragonfly96.xml``: one burst-buffer node per 8 compute nodes;
* the **parallel file system**: the storage host ``pfs`` behind one shared
  link ``pfs_link`` (:data:`PFS_BW_PER_NODE` x ``nodes`` bytes/s, SimGrid's
  max-min sharing: the PFS throughput saturates at that bandwidth however
  many nodes read or write), joined to the interconnect by the router
  ``io_router`` (links as wide as the PFS link: the PFS link is the only
  bottleneck of the I/O path besides the nodes' own links);
* the **interconnect**: one router per chassis; ``dragonfly``: groups of 4
  routers (36 hosts, the burst-buffer family's group), all-to-all inside a
  group and one global link between every two groups (Kim et al., ISCA
  2008; minimal routes: local, global, local hop); ``fat-tree``: a
  three-level tree of fat links (Leiserson 1985): chassis (leaf) switches,
  one pod switch per 4 chassis, one core switch, each uplink as wide as the
  links below it (full bisection); every link :data:`LINK_BW`,
  :data:`LINK_LAT` (the burst-buffer paper's dragonfly96);
* the ``master`` host (``role=master``) behind ``master_link``;
* with the **per-node I/O cap** ``node_io_cap`` = b (bytes/s; issue 30,
  the list-vs-pack paper's b, ``docs/listpack.md``, "The per-node I/O
  cap"): every compute node reaches the PFS over its own link
  ``node_<k>_pfs`` of b bytes/s (burst-buffer nodes: of :data:`LINK_BW`),
  then the link ``pfs_gate`` (FATPIPE, as wide as the PFS link, never a
  bottleneck) and ``pfs_link``; the node's NIC stays on that route and the
  interconnect's other tiers (local disks, burst buffers, node to node)
  are unchanged. Only links: the real Batsim 4.2.1 loads it. Without the
  cap the text is the earlier machine's, byte for byte.

One zone with ``routing="DijkstraCache"``: the file lists each link once
and a route only between neighbours; SimGrid computes the shortest routes
(fewest links) and caches them, so the file grows linearly with the
machine (the 1,000-node dragonfly: about 2 MB), where Full routing needs a
route for every pair of hosts or router zones. Every host has an explicit
loopback route (SimGrid 3.32 needs a host-to-self route for Batsim's
master and for a parallel task's local traffic).

The same arguments always give the same text.
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from iosched.checks import argument, check_output_file
from iosched.clicommon import OneLineErrorCommand, input_errors_one_line
from iosched.engine.overload import parse_bandwidth, parse_overload
from iosched.errors import InputError
from iosched.experiments.pfsbw.workload import OVERLOADS, PFS_BW as PFSBW_PFS_BW, overload_args
from iosched.sched.ioplan import DISK_SUFFIX

__all__ = ["TOPOLOGIES", "SIZES", "CHASSIS_HOSTS", "GROUP_CHASSIS", "NODE_SPEED", "NODE_CORES",
           "NODE_MEMORY", "LINK_BW", "LINK_LAT", "DISK_BW", "PFS_BW_PER_NODE", "PFS_LAT",
           "ArenaMachine", "arena_machine", "arena_xml", "scheduler_options", "arena_overload_args",
           "platform_command"]

#: Interconnects of the reference machine.
TOPOLOGIES = ("dragonfly", "fat-tree")
#: The two sizes the arena uses (compute nodes).
SIZES = (100, 1000)
#: Hosts per chassis: one burst-buffer node and 8 compute nodes (the
#: burst-buffer family's chassis of 9, ``dragonfly96.xml``).
CHASSIS_HOSTS = 9
#: Chassis per group (dragonfly) or pod (fat-tree): 36 hosts, the
#: burst-buffer family's group.
GROUP_CHASSIS = 4
#: Compute-node speed (flops/s): 1 Gflop/s, the burst-buffer paper's
#: (its workloads' flops are run times at this speed).
NODE_SPEED = 1e9
#: Cores of a compute node (property ``cores``): Theta's KNL node (ALCF).
NODE_CORES = 64
#: Memory of a compute node (bytes, property ``memory``): Theta's 192 GB DDR4.
NODE_MEMORY = 192e9
#: Interconnect links (bytes/s, s): dragonfly96's 1250 MB/s, 50 us
#: (Kopanski & Rzadca, Euro-Par 2021, artifact ``platforms/dragonfly96.yaml``).
LINK_BW, LINK_LAT = 1250e6, 50e-6
#: Loopback of every host (bytes/s): dragonfly96's.
LOOPBACK_BW = 1000e6
#: Node-local disk (bytes/s): Li & Tatebe's measured local read rate
#: (IEEE Systems Journal 2017, Section V-A; :func:`iosched.experiments.platforms.nusa_xml`).
DISK_BW = 2803.61e6
#: PFS bandwidth per compute node (bytes/s): dragonfly96's 5000 MB/s PFS
#: link for 96 compute nodes (52 MB/s a node; Theta's Lustre file system:
#: about 240 GB/s for 4,392 nodes, 55 MB/s a node).
PFS_BW_PER_NODE = 5000e6 / 96
#: Latency of the PFS link (s): dragonfly96's.
PFS_LAT = 100e-6
#: The master's link (bytes/s, s): dragonfly96's.
MASTER_BW, MASTER_LAT = 1250e6, 100e-6

_HEADER = ("<?xml version='1.0'?>\n"
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
           '<platform version="4.1">')


class ArenaMachine:
    """The shape of a reference machine (no XML): ``nodes`` compute nodes
    and a ``topology``.

    Attributes: ``compute`` (list of compute host names, in node order),
    ``burst_buffers`` (burst-buffer host names), ``chassis`` (number),
    ``groups`` (dragonfly groups / fat-tree pods), ``pfs_bw`` (bytes/s of
    the PFS link), ``host_chassis`` (host name -> chassis index),
    ``node_io_cap`` (b, bytes/s of each compute node's own link to the
    PFS; None: no cap).

    :raises InputError: ``nodes`` not an integer >= 1 (at most 100,000),
        an unknown ``topology`` or a ``node_io_cap`` not > 0 and finite (one
        line naming it).
    """

    def __init__(self, nodes: int = 100, topology: str = "dragonfly", node_io_cap: float | None = None):
        argument(nodes, "nodes", integer=True, minimum=1, maximum=100_000, where="arena platform")
        if node_io_cap is not None and not (isinstance(node_io_cap, (int, float)) and 0 < node_io_cap < math.inf):
            raise InputError(f"arena platform: node_io_cap={node_io_cap!r} must be > 0 and finite (bytes/s)")
        self.node_io_cap = None if node_io_cap is None else float(node_io_cap)
        if topology not in TOPOLOGIES:
            raise InputError(f"arena platform: topology={topology!r} is unknown; expected one of "
                             f"{', '.join(TOPOLOGIES)}")
        self.nodes, self.topology = nodes, topology
        per = CHASSIS_HOSTS - 1
        self.chassis = math.ceil(nodes / per)
        self.groups = math.ceil(self.chassis / GROUP_CHASSIS)
        self.compute, self.burst_buffers, self.host_chassis = [], [], {}
        for c in range(self.chassis):
            bb = f"node_{c * CHASSIS_HOSTS}"
            self.burst_buffers.append(bb)
            self.host_chassis[bb] = c
            for i in range(1, CHASSIS_HOSTS):
                if len(self.compute) < nodes:
                    name = f"node_{c * CHASSIS_HOSTS + i}"
                    self.compute.append(name)
                    self.host_chassis[name] = c
        self.pfs_bw = PFS_BW_PER_NODE * nodes


def arena_machine(nodes: int = 100, topology: str = "dragonfly", node_io_cap: float | None = None) -> ArenaMachine:
    """The :class:`ArenaMachine` of ``nodes`` compute nodes and ``topology``
    (same errors)."""
    return ArenaMachine(nodes, topology, node_io_cap)


def arena_overload_args(spec: str | None, m: ArenaMachine) -> list:
    """Engine arguments of the file system under overload on the machine's
    ``pfs_link`` (embedded engine only; issue 30): ``[]`` for None, ``""``
    or ``"linear"``; a named reading of the pfsbw family
    (:data:`iosched.experiments.pfsbw.workload.OVERLOADS`: ``issue``,
    ``long-term``, ``fig4``; Goponenko et al., Sections V-VI, read on a
    20 GiB/s file system) scaled to this machine: every capacity of the
    reading times ``m.pfs_bw / 20 GiB/s`` (``fig4``: the full link up to 4
    concurrent jobs, 0.75 of it from 5 on); any other SPEC is a curve
    ``BW@N[,BW@N...][:tasks|flows]`` in bytes/s for ``pfs_link`` as given.

    :returns: ``["--embedded-extensions", "--link-overload=pfs_link:..."]``
        or ``[]``. :raises InputError: a bad SPEC (one line naming
        ``--overload``).
    """
    if not spec or spec == "linear":
        return []
    if spec in OVERLOADS:
        reading = parse_overload(OVERLOADS[spec])
        scale = m.pfs_bw / PFSBW_PFS_BW
        points = ",".join(f"{bw * scale:.12g}@{n}" for n, bw in reading.points)
        return overload_args(f"pfs_link:{points}:{reading.count}")
    expected = f"a reading ({', '.join(OVERLOADS)}) or a curve BW@N[,BW@N...][:tasks|flows] for pfs_link"
    if ":" in spec and "@" not in spec.split(":", 1)[0]:
        raise InputError(f"--overload {spec!r}: expected {expected} (no link name)")
    try:
        return overload_args(f"pfs_link:{spec}")
    except InputError as e:
        raise InputError(f"--overload {spec!r}: expected {expected}: {e}") from None


def scheduler_options(m: ArenaMachine) -> dict:
    """What the machine's platform says that three families take as
    scheduler options instead of reading the platform: launcher file name
    (:data:`iosched.schedulers.registry.SCHEDULERS`) -> pybatsim options.

    * ``listpack.py``: ``bandwidth`` B = the PFS link (bytes/s);
    * ``pfsbw.py``: ``limit`` R_limit = the PFS link (bytes/s);
    * ``locality.py``: ``bandwidth`` = a node's link (bytes/s), the rate at
      which a node loads a file from the PFS alone.

    :param m: the :class:`ArenaMachine`.
    :returns: a new dict of new dicts.
    """
    return {"listpack.py": {"bandwidth": m.pfs_bw}, "pfsbw.py": {"limit": m.pfs_bw},
            "locality.py": {"bandwidth": LINK_BW}}


def _q(x: float, unit: str) -> str:
    return f"{x:.10g}{unit}"


def _link(name: str, bw: float, lat: float, policy: str = "SPLITDUPLEX") -> str:
    return (f'    <link id="{name}" bandwidth="{_q(bw, "Bps")}" latency="{_q(lat, "s")}" '
            f'sharing_policy="{policy}"/>')


def _edge(a: str, b: str, links) -> list:
    """Routes a -> b and b -> a over ``links`` ((name, direction or None) in
    the a -> b order); split-duplex links change direction on the way back."""
    back = {"UP": "DOWN", "DOWN": "UP", None: None}

    def ctn(name, d):
        return f'<link_ctn id="{name}"/>' if d is None else f'<link_ctn id="{name}" direction="{d}"/>'

    fwd = "".join(ctn(n, d) for n, d in links)
    bwd = "".join(ctn(n, back[d]) for n, d in reversed(links))
    return [f'    <route src="{a}" dst="{b}" symmetrical="NO">{fwd}</route>',
            f'    <route src="{b}" dst="{a}" symmetrical="NO">{bwd}</route>']


def _host(name: str, speed: float, props: dict) -> list:
    out = [f'    <host id="{name}" speed="{_q(speed, "f")}">']
    out += [f'        <prop id="{k}" value="{v}"/>' for k, v in props.items()]
    return out + ["    </host>"]


def arena_xml(nodes: int = 100, topology: str = "dragonfly", node_io_cap: float | None = None) -> str:
    """The XML text (str) of the reference machine of ``nodes`` compute
    nodes and ``topology``, with each compute node's path to the PFS capped
    at ``node_io_cap`` bytes/s (None: no cap, the earlier text) (module
    documentation: hosts, links, routes and the sources of every number).

    :raises InputError: as :class:`ArenaMachine`.
    """
    m = ArenaMachine(nodes, topology, node_io_cap)
    cap = m.node_io_cap
    routers = [f"router_{c}" for c in range(m.chassis)]
    out = [_HEADER,
           f"<!-- iosched platform arena: {nodes} compute nodes ({NODE_CORES} cores, {NODE_MEMORY:.0f} bytes of "
           f"memory, a local disk each), {len(m.burst_buffers)} burst-buffer nodes, a PFS behind one shared "
           f"link of {m.pfs_bw:.10g} B/s, {topology} interconnect ({m.chassis} chassis, {m.groups} "
           f"{'groups' if topology == 'dragonfly' else 'pods'})"
           + ("" if cap is None else f", each compute node's path to the PFS capped at {cap:.10g} B/s")
           + ". See iosched.experiments.arena.machine. -->",
           '<zone id="arena" routing="DijkstraCache">']
    hosts = []
    for c in range(m.chassis):
        for i in range(CHASSIS_HOSTS):
            name = f"node_{c * CHASSIS_HOSTS + i}"
            if i == 0:
                out += _host(name, NODE_SPEED, {"role": "storage", "chassis": c})
                hosts.append(name)
            elif name in m.host_chassis:
                out += _host(name, NODE_SPEED, {"node": name, "cores": NODE_CORES,
                                                "memory": f"{NODE_MEMORY:.0f}", "chassis": c})
                out += _host(name + DISK_SUFFIX, NODE_SPEED, {"role": "storage", "node": name})
                hosts += [name, name + DISK_SUFFIX]
    out += _host("pfs", NODE_SPEED, {"role": "storage"})
    out += _host("master", NODE_SPEED, {"role": "master"})
    hosts += ["pfs", "master"]
    out += [f'    <router id="{r}"/>' for r in routers]
    out.append('    <router id="io_router"/>')
    # links
    for h in hosts:
        out.append(_link(f"{h}_loopback", LOOPBACK_BW, 0, "FATPIPE"))
    for h in m.host_chassis:
        out.append(_link(f"{h}_nic", LINK_BW, LINK_LAT))
        if h not in m.burst_buffers:
            out.append(_link(f"{h}{DISK_SUFFIX}_local", DISK_BW, 0, "SHARED"))
    fabric = []       # (a, b, link name, bandwidth)
    if topology == "dragonfly":
        for g in range(m.groups):
            members = list(range(g * GROUP_CHASSIS, min((g + 1) * GROUP_CHASSIS, m.chassis)))
            for i, a in enumerate(members):
                for b in members[i + 1:]:
                    fabric.append((routers[a], routers[b], f"local_g{g}_{a}_{b}", LINK_BW))
        for g in range(m.groups):
            for h in range(g + 1, m.groups):
                # the global link of groups g < h: router (h mod size) of g, (g mod size) of h
                ra = g * GROUP_CHASSIS + h % min(GROUP_CHASSIS, m.chassis - g * GROUP_CHASSIS)
                rb = h * GROUP_CHASSIS + g % min(GROUP_CHASSIS, m.chassis - h * GROUP_CHASSIS)
                fabric.append((routers[ra], routers[rb], f"global_{g}_{h}", LINK_BW))
        for g in range(m.groups):
            fabric.append(("io_router", routers[g * GROUP_CHASSIS], f"io_link_{g}", m.pfs_bw))
    else:
        pods = [f"pod_{g}" for g in range(m.groups)]
        out += [f'    <router id="{p}"/>' for p in pods] + ['    <router id="core"/>']
        for c in range(m.chassis):
            fabric.append((routers[c], pods[c // GROUP_CHASSIS], f"up_{c}", LINK_BW * CHASSIS_HOSTS))
        for g in range(m.groups):
            fabric.append((pods[g], "core", f"up_pod_{g}", LINK_BW * CHASSIS_HOSTS * GROUP_CHASSIS))
        fabric.append(("io_router", "core", "io_link", m.pfs_bw))
    for _, _, name, bw in fabric:
        out.append(_link(name, bw, LINK_LAT))
    out.append(_link("pfs_link", m.pfs_bw, PFS_LAT, "SHARED"))
    out.append(_link("master_link", MASTER_BW, MASTER_LAT, "FATPIPE"))
    if cap is not None:
        for h in m.host_chassis:
            out.append(_link(f"{h}_pfs", LINK_BW if h in m.burst_buffers else cap, 0))
        out.append(_link("pfs_gate", m.pfs_bw, 0, "FATPIPE"))
    # routes between neighbours
    for h in hosts:
        out.append(f'    <route src="{h}" dst="{h}" symmetrical="NO"><link_ctn id="{h}_loopback"/></route>')
    for h, c in m.host_chassis.items():
        out += _edge(h, routers[c], [(f"{h}_nic", "UP")])
        if h not in m.burst_buffers:
            disk, local = h + DISK_SUFFIX, (f"{h}{DISK_SUFFIX}_local", None)
            out += _edge(disk, h, [local])
            out += _edge(disk, routers[c], [local, (f"{h}_nic", "UP")])
    for a, b, name, _ in fabric:
        out += _edge(a, b, [(name, "UP")])
    if cap is None:
        out += _edge("pfs", "io_router", [("pfs_link", None)])
    else:
        # every edge to the PFS holds 4 links (the master's 3): a route
        # through the pfs host (8 links or more) is never shorter than the
        # interconnect's (at most 6), and no route to the PFS crosses it
        gate = [("pfs_gate", None), ("pfs_link", None)]
        for h in m.host_chassis:
            out += _edge(h, "pfs", [(f"{h}_nic", "UP"), (f"{h}_pfs", "UP"), *gate])
        out += _edge("master", "pfs", [("master_link", None), *gate])
    out += _edge("master", "io_router", [("master_link", None)])
    out += ["</zone>", "</platform>"]
    return "\n".join(out) + "\n"


@click.command(name="arena", cls=OneLineErrorCommand)
@click.option("--nodes", type=int, default=SIZES[0], show_default=True, help="compute nodes (about 100 or 1000)")
@click.option("--topology", type=click.Choice(TOPOLOGIES), default=TOPOLOGIES[0], show_default=True,
              help="interconnect")
@click.option("--node-io-cap", default=None, metavar="BW",
              help="each compute node's path to the PFS capped at BW bytes/s (e.g. 31.25MB) [default: no cap]")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), default="arena.xml", show_default=True,
              help="platform XML to write")
@input_errors_one_line
def platform_command(nodes, topology, node_io_cap, out):
    """Write the arena's reference machine (compute nodes with local disks,
    burst-buffer nodes, a PFS behind a shared link, a dragonfly or fat-tree
    interconnect) to OUTPUT."""
    check_output_file(out)
    cap = None if node_io_cap is None else parse_bandwidth(node_io_cap, "--node-io-cap")
    text = arena_xml(nodes, topology, cap)
    Path(out).write_text(text, encoding="utf-8")
    m = ArenaMachine(nodes, topology, cap)
    capped = "" if cap is None else f", node paths to the PFS capped at {cap:.4g} B/s"
    click.echo(f"wrote {out}: {nodes} compute nodes, {len(m.burst_buffers)} burst-buffer nodes, "
               f"{nodes} local disks, pfs ({m.pfs_bw:.4g} B/s), {topology}{capped}")
