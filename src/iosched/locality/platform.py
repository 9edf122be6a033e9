"""SimGrid platforms of the locality model: n nodes x m cores and a file-system host.

Each core is a Batsim compute host ``n<i>_c<k>`` with the properties
``node`` (``n<i>``, read by :class:`iosched.sched.machine.Machine` to group
cores into nodes) and ``memory`` (bytes). Node ``i`` is a SimGrid
``<cluster>`` whose cores each have a private link of ``bandwidth`` bytes/s
and 0 latency to the node's router; a storage host ``pfs``
(``role=storage``) holds the input files. Two I/O models:

* ``paper``: the node routers reach ``pfs`` through a FATPIPE link of
  unlimited bandwidth (1 PB/s), so a load (one core reading ``size`` bytes
  from ``pfs``) takes exactly ``size / bandwidth`` whatever else loads, as
  in the paper (Section 3) and its artifact;
* ``shared-pfs``: the same, but every load also crosses one shared link of
  ``pfs_bandwidth`` bytes/s, so concurrent loads contend (SimGrid's max-min
  sharing).

The master host (Batsim's) and the backbone have no latency: Batsim's
messages travel through the platform (``iosched.engine.server``), so with
the usual 0.6 ms master-to-master route the 9,000 decisions of the Uppmax
day's first pass would take 1.8 s of simulated time and shift the loads
against the artifact's integer clock, where a decision takes effect in the
second it is made.

:func:`locality_xml` returns the XML text; ``iosched platform locality
OUT.xml [--nodes N --cores M ...]`` writes it.
"""

from __future__ import annotations

import click

from iosched.errors import InputError
from iosched.platforms import pfs_zone_lines

__all__ = ["locality_xml", "IO_MODELS"]

IO_MODELS = ("paper", "shared-pfs")

_HEADER = ('<?xml version=\'1.0\'?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
           '<platform version="4.1">\n')


def locality_xml(nodes: int = 486, cores: int = 20, bandwidth: float = 0.1e9, memory: float = 128e9,
                 io_model: str = "paper", pfs_bandwidth: float = 10e9) -> str:
    """XML text of a locality platform (module doc).

    :param nodes: number of nodes (int >= 1); :param cores: cores per node;
    :param bandwidth: bytes/s of each core's link (the paper's node
        bandwidth, 0.1 GB/s on Uppmax); :param memory: bytes per node;
    :param io_model: ``"paper"`` or ``"shared-pfs"``;
    :param pfs_bandwidth: bytes/s of the shared file-system link
        (``shared-pfs`` only).
    :raises InputError: non-positive sizes or an unknown I/O model.
    """
    if io_model not in IO_MODELS:
        raise InputError(f"io_model={io_model!r} is unknown; expected one of {', '.join(IO_MODELS)}")
    for name, v in (("nodes", nodes), ("cores", cores)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"locality platform: {name}={v!r} must be an integer >= 1")
    for name, v in (("bandwidth", bandwidth), ("memory", memory), ("pfs_bandwidth", pfs_bandwidth)):
        if not (isinstance(v, (int, float)) and 0 < v < float("inf")):
            raise InputError(f"locality platform: {name}={v!r} must be a positive number")
    big = "1PBps"
    pfs_bw = big if io_model == "paper" else f"{float(pfs_bandwidth):.6g}Bps"
    pfs_policy = "FATPIPE" if io_model == "paper" else "SHARED"
    out = [_HEADER.rstrip("\n"),
           f"<!-- iosched locality platform: {nodes} nodes x {cores} cores, {bandwidth:.6g} B/s per core link, "
           f"io_model={io_model}{'' if io_model == 'paper' else f', shared PFS link {pfs_bandwidth:.6g} B/s'} -->",
           '<zone id="AS0" routing="Full">']
    for i in range(nodes):
        out += [f'    <cluster id="n{i}" prefix="n{i}_c" suffix="" radical="0-{cores - 1}" speed="1Gf" '
                f'bw="{float(bandwidth):.6g}Bps" lat="0s" bb_bw="{big}" bb_lat="0s" bb_sharing_policy="FATPIPE">',
                f'        <prop id="node" value="n{i}" />',
                f'        <prop id="memory" value="{float(memory):.6g}" />',
                "    </cluster>"]
    out += ['    <cluster id="master" prefix="master_host" suffix="" radical="0-0" speed="1Gf" '
            'bw="125MBps" lat="0s" bb_bw="2.25GBps" bb_lat="0s">',
            '        <prop id="role" value="master" />',
            "    </cluster>",
            *pfs_zone_lines("1Gf", big),
            f'    <link id="pfs_link" bandwidth="{pfs_bw}" latency="0s" sharing_policy="{pfs_policy}" />',
            '    <link id="backbone" bandwidth="1.25GBps" latency="0s" />',
            '    <zoneRoute src="master" dst="pfs_zone" gw_src="master_hostmaster_router" gw_dst="pfs">'
            '<link_ctn id="pfs_link" /></zoneRoute>']
    for i in range(nodes):
        out += [f'    <zoneRoute src="n{i}" dst="pfs_zone" gw_src="n{i}_cn{i}_router" gw_dst="pfs">'
                '<link_ctn id="pfs_link" /></zoneRoute>',
                f'    <zoneRoute src="n{i}" dst="master" gw_src="n{i}_cn{i}_router" '
                'gw_dst="master_hostmaster_router"><link_ctn id="backbone" /></zoneRoute>']
    out += ["</zone>", "</platform>"]
    return "\n".join(out) + "\n"


@click.command(name="locality")
@click.argument("out")
@click.option("--nodes", type=int, default=486)
@click.option("--cores", type=int, default=20)
@click.option("--bandwidth", type=float, default=0.1e9, help="bytes/s per core link")
@click.option("--memory", type=float, default=128e9, help="bytes per node")
@click.option("--io-model", default="paper", type=click.Choice(IO_MODELS))
@click.option("--pfs-bandwidth", type=float, default=10e9, help="bytes/s (shared-pfs)")
def platform_command(out, nodes, cores, bandwidth, memory, io_model, pfs_bandwidth):
    """Write the locality platform (NODES x CORES and a PFS host) to OUT."""
    try:
        text = locality_xml(nodes, cores, bandwidth, memory, io_model, pfs_bandwidth)
        with open(out, "w") as f:
            f.write(text)
    except (InputError, OSError) as e:
        raise click.ClickException(str(e)) from None
