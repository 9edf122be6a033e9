"""The non-uniform storage-access (NUSA) platform of Li & Tatebe: compute
nodes that are also storage nodes (a Gfarm-like file system federating the
nodes' local disks).

Source: Li & Tatebe, "Data-aware task dispatching for batch queuing system",
IEEE Systems Journal 11(2), 2017, Section III-B/C and Table II (4 compute
nodes of 2 x 8-core Xeon E5-2665, 1 Gbit/s Ethernet, one metadata node).

Layout written by :func:`nusa_xml` (SimGrid 3.32, DTD 4.1):

* one zone ``zone_<node>`` (Full routing) per compute node ``<node>``
  (``n000``, ``n001``...), holding

  - ``slots`` core hosts ``<node>_c00 ...`` (the Batsim compute resources,
    one task slot each), each with the property ``node=<node>``, so that
    :class:`iosched.sched.machine.Machine` groups them into one node;
  - the node's disk, a host ``<node>_disk`` with ``role=storage`` (a Batsim
    storage resource, so that a Batsim-standard ``parallel_homogeneous_pfs``
    profile can read from it through ``storage_mapping``);
  - the router ``<node>_gw``;
  - the link ``<node>_local`` (``local_bw``, 0 s): the local read path.  It
    is FATPIPE by default: every reader gets the full per-stream rate, as
    the paper's measurements show for reads served from the page cache /
    NVRAM (under DAD, 5 concurrent local readers per node each reached about
    2.8 GB/s, Section V-A); ``local_sharing="SHARED"`` makes it a shared
    device instead;
  - the node's network interface ``<node>_nic`` (split-duplex, ``nic_bw``,
    ``nic_lat``: 1 Gbit/s Ethernet in the paper);
  - routes: disk -> core ``[local]`` (a local read), core -> router ``[nic
    UP]``, router -> core ``[nic DOWN]``, disk -> router ``[nic UP]`` and
    router -> disk ``[nic DOWN]`` (with ``local_sharing="SHARED"``: ``[local,
    nic UP]`` and ``[nic DOWN, local]``, so that remote reads share the
    device with local ones), and host -> itself ``[loopback]``.  A FATPIPE
    local link is kept off remote routes because of a SimGrid 3.32
    ``ptask_L07`` quirk: when a FATPIPE link carries a flow bottlenecked
    elsewhere (a remote read held by the network), the other flows crossing
    it run faster than the link's bandwidth (measured: a 1 GB local read in
    0.0305 s on a 2803.61 MB/s link, i.e. 32.8 GB/s, instead of 0.3567 s);

* a zone ``master_zone`` with the ``master`` host (``role=master``; Batsim's
  master, standing for the metadata server, runs no job);
* the root zone ``nusa`` (Full routing) with one ``zoneRoute`` per ordered
  pair of node zones through the link ``switch`` (a non-blocking
  Ethernet switch: shared, 1 TB/s, never the bottleneck), and one per node zone to the master zone
  (``master_link``).  A remote read from node j's disk to a core of node k
  crosses ``[j_nic UP, switch, k_nic DOWN]``: remote reads contend on the
  network interfaces (SimGrid max-min sharing).  The file grows as the
  square of ``nb_nodes`` (512 nodes: 261,632 zone routes).

Batsim numbers resources in host-name order, compute first: node ``k``'s
cores get ids ``k*slots .. k*slots+slots-1`` and its disk ``nb_nodes*slots+k``.
The same arguments always give the same text.
"""

from __future__ import annotations

from pathlib import Path

import click

from iosched.checks import check_output_file
from iosched.clicommon import OneLineErrorCommand, input_errors_one_line
from iosched.errors import InputError
from iosched.platforms import _bw, _lat, _speed

__all__ = ["nusa_xml", "node_name", "core_name", "disk_name", "DISK_SUFFIX", "platform_command"]

#: Suffix of a node's disk host: the disk of node ``n003`` is ``n003_disk``.
DISK_SUFFIX = "_disk"


def node_name(k: int, nb_nodes: int) -> str:
    """Name of node ``k`` (``n000``...; zero-padded to at least 3 digits so that
    Batsim's name order is the node order)."""
    return f"n{k:0{max(3, len(str(nb_nodes - 1)))}d}"


def core_name(node: str, i: int, slots: int) -> str:
    """Name of core (task slot) ``i`` of ``node``."""
    return f"{node}_c{i:0{max(2, len(str(slots - 1)))}d}"


def disk_name(node: str) -> str:
    """Name of the disk (storage host) of ``node``."""
    return node + DISK_SUFFIX


def nusa_xml(nb_nodes: int = 4, slots: int = 16, speed="1Gf", nic_bw="125MBps", nic_lat="50us",
             local_bw="2803.61MBps", local_sharing: str = "FATPIPE") -> str:
    """The XML text of a NUSA platform (see the module documentation).

    :param nb_nodes: compute nodes (int >= 1).
    :param slots: task slots (cores) per node (int >= 1).
    :param speed: core speed (flops/s, number or SimGrid string).
    :param nic_bw: network interface bandwidth per direction (bytes/s; the
        paper's 1 Gbit/s Ethernet is 125 MB/s).
    :param nic_lat: network interface latency (s).
    :param local_bw: local read bandwidth (bytes/s; default calibrated on
        the paper's DAD thput-gfpio mean, 2803.61 MB/s per task).
    :param local_sharing: ``"FATPIPE"`` (per-stream rate) or ``"SHARED"``.
    :returns: the XML text (str).
    :raises InputError: bad count, quantity or sharing policy.
    """
    for what, v in (("nb_nodes", nb_nodes), ("slots", slots)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"platform: {what} must be an integer >= 1, got {v!r}")
    if local_sharing not in ("FATPIPE", "SHARED"):
        raise InputError(f"platform: local_sharing must be FATPIPE or SHARED, got {local_sharing!r}")
    sp, nbw, nlat, lbw = _speed(speed, "speed"), _bw(nic_bw, "nic_bw"), _lat(nic_lat, "nic_lat"), \
        _bw(local_bw, "local_bw")
    out = ["<?xml version='1.0'?>",
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">',
           f"<!-- iosched.dad nusa_xml: {nb_nodes} nodes x {slots} slots, nic {nbw}, "
           f"local {lbw} {local_sharing} -->",
           '<zone id="nusa" routing="Full">']
    for k in range(nb_nodes):
        node = node_name(k, nb_nodes)
        gw, disk, lo = f"{node}_gw", disk_name(node), f"{node}_loopback"
        cores = [core_name(node, i, slots) for i in range(slots)]
        out.append(f'  <zone id="zone_{node}" routing="Full">')
        for c in cores:
            out.append(f'    <host id="{c}" speed="{sp}"><prop id="node" value="{node}"/></host>')
        out.append(f'    <host id="{disk}" speed="{sp}"><prop id="role" value="storage"/>'
                   f'<prop id="node" value="{node}"/></host>')
        out.append(f'    <router id="{gw}"/>')
        out.append(f'    <link id="{node}_local" bandwidth="{lbw}" latency="0s" sharing_policy="{local_sharing}"/>')
        out.append(f'    <link id="{node}_nic" bandwidth="{nbw}" latency="{nlat}" sharing_policy="SPLITDUPLEX"/>')
        out.append(f'    <link id="{lo}" bandwidth="10GBps" latency="0s" sharing_policy="FATPIPE"/>')
        for h in cores + [disk]:
            out.append(f'    <route src="{h}" dst="{h}"><link_ctn id="{lo}"/></route>')
        for c in cores:
            out.append(f'    <route src="{disk}" dst="{c}" symmetrical="NO"><link_ctn id="{node}_local"/></route>')
            out.append(f'    <route src="{c}" dst="{disk}" symmetrical="NO"><link_ctn id="{node}_local"/></route>')
            out.append(f'    <route src="{c}" dst="{gw}" symmetrical="NO">'
                       f'<link_ctn id="{node}_nic" direction="UP"/></route>')
            out.append(f'    <route src="{gw}" dst="{c}" symmetrical="NO">'
                       f'<link_ctn id="{node}_nic" direction="DOWN"/></route>')
        via = f'<link_ctn id="{node}_local"/>' if local_sharing == "SHARED" else ""
        out.append(f'    <route src="{disk}" dst="{gw}" symmetrical="NO">{via}'
                   f'<link_ctn id="{node}_nic" direction="UP"/></route>')
        out.append(f'    <route src="{gw}" dst="{disk}" symmetrical="NO">'
                   f'<link_ctn id="{node}_nic" direction="DOWN"/>{via}</route>')
        out.append("  </zone>")
    out += ['  <zone id="master_zone" routing="Full">',
            f'    <host id="master" speed="{sp}"><prop id="role" value="master"/></host>',
            '    <link id="master_loopback" bandwidth="10GBps" latency="0s" sharing_policy="FATPIPE"/>',
            '    <route src="master" dst="master"><link_ctn id="master_loopback"/></route>',
            "  </zone>",
            f'  <link id="switch" bandwidth="1TBps" latency="0s" sharing_policy="SHARED"/>',
            f'  <link id="master_link" bandwidth="{nbw}" latency="{nlat}" sharing_policy="FATPIPE"/>']
    names = [node_name(k, nb_nodes) for k in range(nb_nodes)]
    for a in names:
        for b in names:
            if a != b:
                out.append(f'  <zoneRoute src="zone_{a}" dst="zone_{b}" gw_src="{a}_gw" gw_dst="{b}_gw" '
                           f'symmetrical="NO"><link_ctn id="switch"/></zoneRoute>')
        out.append(f'  <zoneRoute src="zone_{a}" dst="master_zone" gw_src="{a}_gw" gw_dst="master">'
                   f'<link_ctn id="master_link"/></zoneRoute>')
    out += ["</zone>", "</platform>"]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# command line


@click.command(name="dad", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--nodes", type=int, default=4, show_default=True)
@click.option("--slots", type=int, default=16, show_default=True)
@click.option("--nic-bw", default="125MBps", show_default=True)
@click.option("--local-bw", default="2803.61MBps", show_default=True)
@click.option("--local-sharing", type=click.Choice(["FATPIPE", "SHARED"]), default="FATPIPE", show_default=True)
@input_errors_one_line
def platform_command(out, nodes, slots, nic_bw, local_bw, local_sharing):
    """Write a NUSA platform (nodes x slots, node-local disks) to OUT."""
    check_output_file(out)
    Path(out).write_text(nusa_xml(nodes, slots, nic_bw=nic_bw, local_bw=local_bw, local_sharing=local_sharing))
