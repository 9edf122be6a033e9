"""SimGrid platform XML generators (SimGrid 3.32, platform DTD version 4.1):
the one module of iosched's platform recipes, each ``<kind>_xml(...) -> str``,
and their commands, ``iosched platform cluster|dragonfly96|dad|locality|listpack|pfsbw``
(the kinds are listed in :data:`iosched.cli.KINDS`):

* :func:`cluster_xml` -- a flat homogeneous cluster in the style of the golden
  input ``cluster100.xml``: ``nb_nodes`` compute hosts in one SimGrid
  ``<cluster>`` (private split-duplex link per host plus a backbone), a master
  host (``role=master``) behind a shared 1.25 GB/s, 500 us backbone link, and
  optionally a PFS host (``role=storage``) reached through exactly one link.
* :func:`dragonfly96_xml` -- the machine of the burst-buffer paper (Kopanski &
  Rzadca, "Plan-based job scheduling for supercomputers with shared burst
  buffers", Euro-Par 2021; artifact repository
  ``jankopanski/Burst-Buffer-Scheduling``, ``platforms/dragonfly96-thesis.xml``
  and ``platforms/dragonfly96.yaml``), rewritten so that SimGrid 3.32 loads it.
  The shipped ``platforms/dragonfly96.xml`` is its output
  (``iosched platform dragonfly96 platforms/dragonfly96.xml``).
* :func:`nusa_xml` -- the non-uniform storage-access platform of the
  data-aware dispatch family (Li & Tatebe 2017): nodes whose cores read
  their node's own disk or another node's through the network
  (:func:`node_name`, :func:`core_name`, :func:`disk_name` name its hosts);
* :func:`locality_xml` -- the data-locality family's nodes x cores with a
  file-system host, I/O models :data:`LOCALITY_IO_MODELS` (Gonthier et al.);
* :func:`pfsbw_xml` -- the PFS-bandwidth-aware family's 15 nodes of 8 cores
  and a shared file-system link (Goponenko et al. 2024);
* :func:`listpack_xml` -- the list-vs-pack family's campaign cluster
  (Jeannot, Pallez & Vidal 2023), a :func:`cluster_xml`.

Layout of ``dragonfly96.xml`` and its equivalence to the artifact
-----------------------------------------------------------------

The artifact declares ``<cluster topology="DRAGONFLY"
topo_parameters="3,1;4,1;3,1;3">`` (3 groups x 4 chassis x 3 routers ("blades")
x 3 nodes = 108 hosts ``node_0..node_107``, 1 Gflop/s, links 1250 MB/s 50 us
split-duplex, loopbacks 1000 MB/s 0 s), a ``master`` host (link 1250 MB/s
100 us FATPIPE) and a ``pfs`` host (one shared link 5000 MB/s 100 us), the
last two in ``routing="None"`` zones joined by ``zoneRoute``\\ s whose
``gw_dst`` is the netpoint ``node_cluster_router``.  It does not load in
SimGrid 3.32: the DRAGONFLY cluster no longer creates that netpoint, zones
with ``routing="None"`` abort on host-to-self routes (Batsim's master sends to
itself), and a ``<cluster>`` cannot give one of its hosts its own ``role``
property, whereas the paper needs one burst-buffer (storage) node per chassis.

This module therefore writes the dragonfly out explicitly, in a flat
hierarchy that SimGrid 3.32 resolves with its ordinary Full routing:

* the root zone ``dragonfly96`` (Full) holds one zone per dragonfly router
  (``router_zone_<r>``, r = 0..35, Full) plus ``pfs_zone`` and ``master_zone``
  (Full, so that host-to-self routes exist);
* a router zone holds its 3 hosts, a ``<router id="router_<r>">`` netpoint,
  one split-duplex local link per host and one FATPIPE loopback per host, and
  the routes host->router (local link UP), router->host (DOWN), host->host
  through the router (UP then DOWN) and host->self (loopback);
* the root zone holds the green (intra-chassis, all-to-all), black
  (intra-group, same blade, all-to-all) and blue (inter-group) links and one
  ``zoneRoute`` for every ordered pair of router zones (1260), whose link list
  follows SimGrid's ``DragonflyZone::get_local_route`` (minimal routing):
  different group: green hop to the blade whose index is the target group,
  black hop to chassis 0, the one blue hop, then inside the target group a
  green hop to the target blade and a black hop to the target chassis; same
  group: green hop to the target blade, then black hop to the target chassis.

A SimGrid route between two hosts of different router zones is the source
host's local link UP + the zoneRoute's links + the destination's local link
DOWN, i.e. the DRAGONFLY cluster's route.  All links carry the names SimGrid
3.32 gives the links of ``<cluster id="cluster" topology="DRAGONFLY" ...>``
(``local_link_from_router_<r>_to_node_<j>_<uid>``,
``green_link_in_chassis_...``, ``black_link_in_group_...``,
``blue_link_between_group_...``, ``cluster_link_<i>_loopback``; SimGrid adds
``_UP``/``_DOWN`` to split-duplex links).

SimGrid's own dragonfly has a quirk (3.32, and already in the 3.25 the
artifact ran on): after a green hop it sets the current router's chassis to
0, so a route inside a group that leaves chassis 1, 2 or 3 towards another
blade gets the black link of chassis 0 instead of its own (a spurious black
link when both ends share a chassis, a missing hop when the target is in
chassis 0); 1944 of the 11664 host pairs are affected.  Hence two variants:

* ``routing="minimal"`` (the default, the shipped file): true minimal routes;
  every route is a connected walk of the dragonfly graph with the fewest
  router hops;
* ``routing="simgrid"``: the quirk reproduced; ``tests/test_platforms.py``
  checks that for all 108 x 108 host pairs the route (link names in order)
  and its latency equal those SimGrid 3.32 computes for the artifact's
  cluster element, and that ``"minimal"`` differs from it exactly on the
  quirk's pairs.

Differences from the artifact, all deliberate:

* Roles: ``node_0, node_9, ..., node_99`` (node 0 of router 0 of each
  chassis, 12 hosts) carry ``<prop id="role" value="storage"/>`` (the
  burst-buffer nodes); the other 96 are compute nodes (no role property).
  The artifact's XML carries no role for them (its cluster element cannot).
* PFS and master: traffic between a node and ``pfs`` crosses the node's local
  link to its router (the dragonfly's first hop) and then the one shared
  ``link_pfs``; likewise ``link_master`` for the master.  (In the artifact,
  run with SimGrid 3.25, ``DragonflyZone::get_local_route`` returns no link
  when one end is a router, so the effective node <-> PFS route there was
  ``link_pfs`` alone: a single node could then read at 5000 MB/s, here at
  most 1250 MB/s, its local link.)  PFS <-> master crosses ``link_pfs`` then
  ``link_master``.
* ``master`` and ``pfs`` have speed 1 Gflop/s instead of 0 (they never compute;
  a zero speed only invites divisions by zero in ptask models) and an explicit
  1000 MB/s FATPIPE loopback.

Why flat (one zoneRoute per router pair, about 0.7 MB of XML) rather than
nested group zones: SimGrid 3.32 forbids empty routes, so a group zone could
only reach the PFS through one gateway router (funnelling all of a group's
PFS traffic through one router's links) or through an invented link, and a
``bypassZoneRoute`` from a router zone to the PFS zone crashes it.  Full zones
get an explicit route for every pair they hold: a missing pair in a Full zone
silently yields an empty route, and a Full zone without any route crashes on
a host-to-self route.

Everything is generated from constants; the same call always returns the
same string (byte-identical files).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import click

from iosched.checks import MAX_AMOUNT, check_output_file
from iosched.clicommon import OneLineErrorCommand, input_errors_one_line
from iosched.dad.model import DISK_SUFFIX
from iosched.errors import InputError
from iosched.listpack.model import MIRA_BLOCK, MIRA_NODES, UNIFORM_BLOCK, UNIFORM_NODES, listpack_machine

__all__ = [
    "cluster_xml",
    "pfs_zone_lines",
    "dragonfly96_xml",
    "DRAGONFLY96_STORAGE_NODES",
    "DRAGONFLY_ROUTINGS",
    "nusa_xml",
    "node_name",
    "core_name",
    "disk_name",
    "locality_xml",
    "LOCALITY_IO_MODELS",
    "pfsbw_xml",
    "GIB",
    "PFSBW_THREAD_BW",
    "PFSBW_NODE_BW",
    "PFSBW_CORES",
    "PFSBW_PFS_BW",
    "listpack_xml",
    "cluster_command",
    "dragonfly96_command",
    "dad_command",
    "locality_command",
    "listpack_command",
    "pfsbw_command",
]

_HEADER = (
    "<?xml version='1.0'?>\n"
    '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
    '<platform version="4.1">\n'
)
_FOOTER = "</platform>\n"

# Unit suffixes SimGrid 3.32 accepts (checked by tests/test_platforms.py;
# "KBps"/"Kbps" are rejected by SimGrid); plain numbers are given the base
# unit (flops, bytes/s, seconds) when written.
_SPEED_UNITS = ("f", "kf", "Mf", "Gf", "Tf", "Pf", "Ef", "Zf", "Yf", "flops")
_BW_UNITS = (
    "Bps", "kBps", "MBps", "GBps", "TBps", "PBps", "EBps", "ZBps", "YBps",
    "KiBps", "MiBps", "GiBps", "TiBps", "PiBps", "EiBps", "ZiBps", "YiBps",
    "bps", "kbps", "Mbps", "Gbps", "Tbps", "Pbps", "Ebps", "Zbps", "Ybps",
    "Kibps", "Mibps", "Gibps", "Tibps", "Pibps", "Eibps", "Zibps", "Yibps",
)
_TIME_UNITS = ("s", "ms", "us", "ns", "ps", "m", "h", "d", "w")
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def _quantity(value, units, base_unit, field, allow_zero=False):
    """Return ``value`` as a SimGrid quantity string, or raise InputError.

    ``value`` is a string with one of ``units`` (e.g. ``"125MBps"``) or a
    number, or a string holding just a number, in the base unit
    (``base_unit`` is appended).  Zero is accepted
    only if ``allow_zero``.
    """
    if isinstance(value, bool):
        raise InputError(f"platform: {field} must be a number or a quantity with a unit, got {value!r}")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:   # an int beyond the largest double
            raise InputError(f"platform: {field} must be finite, got {_show(value)}") from None
        text = f"{number!r}{base_unit}"
    elif isinstance(value, str) and re.fullmatch(_NUMBER, value.strip()):
        number = float(value)
        text = f"{number!r}{base_unit}"
    elif isinstance(value, str):
        text = value.strip()
        match = re.fullmatch(f"({_NUMBER})({'|'.join(map(re.escape, units))})", text)
        if match is None:
            raise InputError(
                f"platform: {field} {value!r} is not a number followed by one of "
                f"{', '.join(units[:6])}, ..."
            )
        number = float(match.group(1))
    else:
        raise InputError(f"platform: {field} must be a number or a quantity with a unit, got {value!r}")
    if not math.isfinite(number):
        raise InputError(f"platform: {field} must be finite, got {value!r}")
    if number < 0 or (number == 0 and not allow_zero):
        raise InputError(f"platform: {field} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return text


def _show(x) -> str:
    """``repr`` of a value, cut to 40 characters (a huge int stays one short line)."""
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _speed(value, field):
    return _quantity(value, _SPEED_UNITS, "f", field)


def _bw(value, field):
    return _quantity(value, _BW_UNITS, "Bps", field)


def _lat(value, field):
    return _quantity(value, _TIME_UNITS, "s", field, allow_zero=True)


# Netpoint names of cluster_xml other than the compute hosts.
_CLUSTER_RESERVED_NAMES = ("AS0", "cluster", "master", "master_host0", "pfs_zone", "pfs")


def pfs_zone_lines(speed: str = "1Gf", loopback_bw: str = "1PBps", indent: str = "    ") -> list[str]:
    """Lines of the zone ``pfs_zone`` (Full routing) holding the storage host
    ``pfs`` (``role=storage``, speed ``speed``: a SimGrid string such as
    ``"1Gf"``) and its explicit ``pfs`` -> ``pfs`` loopback link
    ``pfs_loopback`` (``loopback_bw``, a SimGrid bandwidth string such as
    ``"10GBps"``; 0 s; FATPIPE). SimGrid 3.32 crashes on a host-to-self route
    in a Full zone that declares no route at all, and Batsim's PFS profiles
    need that route. The lines are indented by ``indent`` (the caller's zone
    level); the caller routes to the zone (gateway ``pfs``). Returns a list
    of ``str`` without newlines; raises nothing (the strings are not
    checked: the callers build them)."""
    i2, i3 = indent * 2, indent * 3
    return [
        f'{indent}<zone id="pfs_zone" routing="Full">',
        f'{i2}<host id="pfs" speed="{speed}">',
        f'{i3}<prop id="role" value="storage" />',
        f"{i2}</host>",
        f'{i2}<link id="pfs_loopback" bandwidth="{loopback_bw}" latency="0s" sharing_policy="FATPIPE" />',
        f'{i2}<route src="pfs" dst="pfs">',
        f'{i3}<link_ctn id="pfs_loopback" />',
        f"{i2}</route>",
        f"{indent}</zone>",
    ]


def cluster_xml(
    nb_nodes,
    speed="1Gf",
    bw="125MBps",
    lat="50us",
    bb_bw="2.25GBps",
    bb_lat="500us",
    pfs=None,
    prefix="node_",
):
    """Return the XML text of a flat homogeneous cluster platform.

    Modelled on the golden input ``cluster100.xml`` (Batsim 4.2.1 / SimGrid
    3.32 format, DTD 4.1): a root zone ``AS0`` (Full routing) holding

    * cluster ``cluster``: hosts ``<prefix>0 .. <prefix><nb_nodes-1>``, each
      with a private split-duplex link (``bw``, ``lat``) to the cluster router
      ``<prefix>cluster_router``, and a cluster backbone (``bb_bw``,
      ``bb_lat``);
    * cluster ``master`` with one host ``master_host0`` carrying
      ``<prop id="role" value="master"/>``;
    * a shared link ``backbone`` (1.25 GB/s, 500 us) joining the two, exactly
      as in ``cluster100.xml``;
    * if ``pfs`` is given, a zone ``pfs_zone`` (Full routing, so that
      host-to-self routes exist) with host ``pfs`` (speed ``speed``,
      ``role=storage``) reached from the compute cluster and from the master
      through one shared link ``pfs_link`` (``pfs["bw"]``, ``pfs["lat"]``),
      plus an explicit ``pfs`` -> ``pfs`` loopback (``pfs["bw"]``, 0 s,
      FATPIPE): SimGrid 3.32 crashes on a host-to-self route in a Full zone
      that declares no route at all.

    Parameters: ``nb_nodes`` (int >= 1, hosts); ``speed`` (flops/s: a number
    or a SimGrid string such as ``"1Gf"``); ``bw``/``bb_bw`` (bytes/s: number
    or ``"125MBps"``); ``lat``/``bb_lat`` (s: number or ``"50us"``); ``pfs``
    (``None`` or a mapping with keys ``bw`` and ``lat``, same units);
    ``prefix`` (host name prefix, an XML-safe identifier).

    Returns a ``str`` (the same arguments always give the same text).
    Raises :class:`iosched.errors.InputError` on a non-positive or non-integer
    ``nb_nodes``, a malformed quantity, a prefix that is not an XML-safe
    identifier or makes a host name clash with another netpoint (e.g.
    ``"master_host"``), or a bad ``pfs`` mapping.
    """
    if isinstance(nb_nodes, bool) or not isinstance(nb_nodes, int) or nb_nodes < 1:
        raise InputError(f"platform: nb_nodes must be an integer >= 1, got {nb_nodes!r}")
    if not isinstance(prefix, str) or not _ID_RE.match(prefix):
        raise InputError(f"platform: prefix {prefix!r} must match {_ID_RE.pattern}")
    for reserved in _CLUSTER_RESERVED_NAMES:
        rest = reserved[len(prefix):]
        if reserved.startswith(prefix) and rest.isdigit() and str(int(rest)) == rest and int(rest) < nb_nodes:
            raise InputError(f"platform: prefix {prefix!r} makes host {reserved!r}, a name the platform already uses")
    speed_s = _speed(speed, "speed")
    bw_s, lat_s = _bw(bw, "bw"), _lat(lat, "lat")
    bb_bw_s, bb_lat_s = _bw(bb_bw, "bb_bw"), _lat(bb_lat, "bb_lat")
    if pfs is not None:
        if not hasattr(pfs, "keys") or set(pfs.keys()) != {"bw", "lat"}:
            raise InputError(f"platform: pfs must be None or a mapping with exactly the keys bw and lat, got {pfs!r}")
        pfs_bw_s, pfs_lat_s = _bw(pfs["bw"], "pfs.bw"), _lat(pfs["lat"], "pfs.lat")

    cluster_attrs = (
        f'speed="{speed_s}" bw="{bw_s}" lat="{lat_s}" '
        f'bb_bw="{bb_bw_s}" bb_lat="{bb_lat_s}"'
    )
    lines = [
        _HEADER.rstrip("\n"),
        f"<!-- iosched cluster_xml: {nb_nodes} nodes, "
        f"{'with' if pfs is not None else 'without'} PFS -->",
        '<zone id="AS0" routing="Full">',
        f'    <cluster id="cluster" prefix="{prefix}" suffix="" radical="0-{nb_nodes - 1}"',
        f"        {cluster_attrs} />",
        '    <cluster id="master" prefix="master_host" suffix="" radical="0-0"',
        f"        {cluster_attrs}>",
        '        <prop id="role" value="master" />',
        "    </cluster>",
    ]
    if pfs is not None:
        lines += pfs_zone_lines(speed_s, pfs_bw_s)
    lines.append('    <link id="backbone" bandwidth="1.25GBps" latency="500us" />')
    if pfs is not None:
        lines.append(f'    <link id="pfs_link" bandwidth="{pfs_bw_s}" latency="{pfs_lat_s}" />')
    gw_cluster = f"{prefix}cluster_router"
    gw_master = "master_hostmaster_router"
    lines += [
        f'    <zoneRoute src="cluster" dst="master" gw_src="{gw_cluster}" gw_dst="{gw_master}">',
        '        <link_ctn id="backbone" />',
        "    </zoneRoute>",
    ]
    if pfs is not None:
        lines += [
            f'    <zoneRoute src="cluster" dst="pfs_zone" gw_src="{gw_cluster}" gw_dst="pfs">',
            '        <link_ctn id="pfs_link" />',
            "    </zoneRoute>",
            f'    <zoneRoute src="master" dst="pfs_zone" gw_src="{gw_master}" gw_dst="pfs">',
            '        <link_ctn id="pfs_link" />',
            "    </zoneRoute>",
        ]
    lines += ["</zone>", _FOOTER.rstrip("\n")]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# dragonfly96

_DF_GROUPS, _DF_CHASSIS, _DF_BLADES, _DF_NODES = 3, 4, 3, 3
_DF_SPEED = "1Gf"
_DF_BW, _DF_LAT = "1250MBps", "50us"
_DF_LOOPBACK_BW, _DF_LOOPBACK_LAT = "1000MBps", "0s"
_DF_PFS_BW, _DF_PFS_LAT = "5000MBps", "100us"
_DF_MASTER_BW, _DF_MASTER_LAT = "1250MBps", "100us"

#: Host names of the 12 burst-buffer (``role=storage``) nodes of
#: ``dragonfly96.xml``: node 0 of router 0 of each chassis.
DRAGONFLY96_STORAGE_NODES = tuple(
    f"node_{c * _DF_BLADES * _DF_NODES}" for c in range(_DF_GROUPS * _DF_CHASSIS)
)


class _Dragonfly:
    """Links and minimal routes of SimGrid 3.32's DRAGONFLY cluster.

    Mirrors ``DragonflyZone::generate_links`` and ``get_local_route``
    (simgrid/src/kernel/routing/DragonflyZone.cpp) for the given shape, with
    one link per connection (topo_parameters ``"g,1;c,1;b,1;n"``).  Router
    ``r`` has coordinates (group, chassis, blade) with
    ``r = (group * chassis_per_group + chassis) * blades + blade``.
    """

    def __init__(self, groups, chassis, blades, nodes, routing="minimal"):
        self.routing = routing
        if blades < groups:
            raise ValueError("SimGrid's dragonfly needs blades >= groups (blue links)")
        self.groups, self.chassis, self.blades, self.nodes = groups, chassis, blades, nodes
        self.nb_routers = groups * chassis * blades
        uid = 0
        # local[r][j] = link name between router r and its node j
        self.local = []
        for r in range(self.nb_routers):
            row = []
            for j in range(nodes):
                row.append(f"local_link_from_router_{r}_to_node_{j}_{uid}")
                uid += 1
            self.local.append(row)
        # green[(r, blade)] / black[(r, chassis)] / blue[r] = (link, direction)
        self.green, self.black, self.blue = {}, {}, {}
        self.green_links, self.black_links, self.blue_links = [], [], []
        for i in range(groups * chassis):
            for j in range(blades):
                for k in range(j + 1, blades):
                    name = f"green_link_in_chassis_{i % chassis}_between_routers_{j}_and_{k}_{uid}"
                    self.green_links.append(name)
                    self.green[(i * blades + j, k)] = (name, "UP")
                    self.green[(i * blades + k, j)] = (name, "DOWN")
                    uid += 1
        for i in range(groups):
            for j in range(chassis):
                for k in range(j + 1, chassis):
                    for blade in range(blades):
                        name = (
                            f"black_link_in_group_{i}_between_chassis_{j}_and_{k}"
                            f"_blade_{blade}_{uid}"
                        )
                        self.black_links.append(name)
                        self.black[(self.router(i, j, blade), k)] = (name, "UP")
                        self.black[(self.router(i, k, blade), j)] = (name, "DOWN")
                        uid += 1
        for i in range(groups):
            for j in range(i + 1, groups):
                ri, rj = self.router(i, 0, j), self.router(j, 0, i)
                name = f"blue_link_between_group_{i}_and_{j}_routers_{ri}_and_{rj}_{uid}"
                self.blue_links.append(name)
                self.blue[ri] = (name, "UP")
                self.blue[rj] = (name, "DOWN")
                uid += 1

    def router(self, group, chassis, blade):
        return (group * self.chassis + chassis) * self.blades + blade

    def coords(self, r):
        return r // (self.chassis * self.blades), (r // self.blades) % self.chassis, r % self.blades

    def router_of_node(self, n):
        return n // self.nodes, n % self.nodes

    def path(self, src, dst):
        """Links (name, direction) between routers ``src`` and ``dst``."""
        links = []
        if src == dst:
            return links
        sg, sc, sb = self.coords(src)
        tg, tc, tb = self.coords(dst)
        cur = src
        if tg != sg:
            if sb != tg:
                links.append(self.green[(cur, tg)])
                cur = self.router(sg, sc, tg)
            if sc != 0:
                links.append(self.black[(cur, 0)])
                cur = self.router(sg, 0, tg)
            links.append(self.blue[cur])
            cur = self.router(tg, 0, sg)
        _, cc, cb = self.coords(cur)
        if tb != cb:
            links.append(self.green[(cur, tb)])
            # SimGrid 3.32 (and 3.25) resets the chassis to 0 here
            # ("currentRouter = &routers_[targetCoords[0] * (...) +
            # targetCoords[2]]"), which only matters inside a group when the
            # source chassis is not 0; "simgrid" reproduces it.
            cur = self.router(tg, 0 if self.routing == "simgrid" else cc, tb)
        if tc != self.coords(cur)[1]:
            links.append(self.black[(cur, tc)])
        return links


def _ctn(link, direction=None, indent="        "):
    if direction is None:
        return f'{indent}<link_ctn id="{link}"/>'
    return f'{indent}<link_ctn id="{link}" direction="{direction}"/>'


def _route(tag, src, dst, links, indent, gw=None):
    gw_attrs = f' gw_src="{gw[0]}" gw_dst="{gw[1]}"' if gw else ""
    out = [f'{indent}<{tag} src="{src}" dst="{dst}"{gw_attrs} symmetrical="NO">']
    out += [_ctn(name, direction, indent + "    ") for name, direction in links]
    out.append(f"{indent}</{tag}>")
    return out


DRAGONFLY_ROUTINGS = ("minimal", "simgrid")


def dragonfly96_xml(routing="minimal"):
    """Return the XML text of the burst-buffer paper's 108-node dragonfly.

    Source: Kopanski & Rzadca, Euro-Par 2021, artifact
    ``jankopanski/Burst-Buffer-Scheduling`` (``platforms/dragonfly96*.xml``,
    ``platforms/dragonfly96.yaml``).  Shape: 3 groups x 4 chassis x 3 routers
    x 3 nodes; hosts ``node_0 .. node_107`` at 1 Gflop/s; dragonfly links
    1250 MB/s, 50 us, split-duplex; per-host loopbacks 1000 MB/s, 0 s,
    FATPIPE; ``node_0, node_9, ..., node_99`` have ``role=storage`` (12
    burst-buffer nodes, see :data:`DRAGONFLY96_STORAGE_NODES`), the other 96
    are compute nodes; host ``pfs`` (``role=storage``) behind ``link_pfs``
    (5000 MB/s, 100 us, shared); host ``master`` (``role=master``) behind
    ``link_master`` (1250 MB/s, 100 us, FATPIPE).

    The layout (explicit routers and routes in Full zones, because SimGrid
    3.32 cannot load the artifact's ``<cluster topology="DRAGONFLY">``
    version) and its route-for-route equivalence to SimGrid's DRAGONFLY
    cluster are described in the module docstring.

    ``routing`` selects the router-to-router routes: ``"minimal"`` (default,
    the shipped file) gives true minimal dragonfly routes; ``"simgrid"``
    reproduces, route for route, what SimGrid 3.32 (and the 3.25 the artifact
    ran on) computes for the DRAGONFLY cluster, including its quirk for
    routes inside a group leaving from chassis 1..3 towards another blade
    (see the module docstring).  Raises :class:`iosched.errors.InputError`
    for any other value.  Returns the same ``str`` for the same argument.
    """
    if routing not in DRAGONFLY_ROUTINGS:
        raise InputError(
            f"platform: dragonfly routing {routing!r} is not one of {', '.join(DRAGONFLY_ROUTINGS)}"
        )
    df = _Dragonfly(_DF_GROUPS, _DF_CHASSIS, _DF_BLADES, _DF_NODES, routing=routing)
    storage = set(DRAGONFLY96_STORAGE_NODES)
    split = f'bandwidth="{_DF_BW}" latency="{_DF_LAT}" sharing_policy="SPLITDUPLEX"'
    loop = f'bandwidth="{_DF_LOOPBACK_BW}" latency="{_DF_LOOPBACK_LAT}" sharing_policy="FATPIPE"'
    out = [
        _HEADER.rstrip("\n"),
        # the text names the generator's module before issue 26: the output bytes stay the same
        "<!-- Generated by iosched.platforms.dragonfly96_xml (iosched platform dragonfly96).",
        "     The 108-node dragonfly of Kopanski & Rzadca (Euro-Par 2021), artifact",
        "     jankopanski/Burst-Buffer-Scheduling platforms/dragonfly96.xml, written out as",
        "     explicit routers, links and minimal routes that SimGrid 3.32 loads: link names",
        "     and routes are those of SimGrid 3.32's <cluster id=\"cluster\" topology=\"DRAGONFLY\"",
        "     topo_parameters=\"3,1;4,1;3,1;3\">. One burst-buffer node (role=storage) per",
        "     chassis: node_0, node_9, ..., node_99. See the iosched.platforms docstring.",
        f"     Router-to-router routes: {routing}. -->",
        '<zone id="dragonfly96" routing="Full">',
    ]
    for r in range(df.nb_routers):
        g, c, b = df.coords(r)
        out.append(f'    <zone id="router_zone_{r}" routing="Full">')
        out.append(f"        <!-- group {g}, chassis {c}, router {b} -->")
        hosts = [f"node_{r * df.nodes + j}" for j in range(df.nodes)]
        for h in hosts:
            if h in storage:
                out += [
                    f'        <host id="{h}" speed="{_DF_SPEED}">',
                    '            <prop id="role" value="storage"/>',
                    "        </host>",
                ]
            else:
                out.append(f'        <host id="{h}" speed="{_DF_SPEED}"/>')
        out.append(f'        <router id="router_{r}"/>')
        for j in range(df.nodes):
            out.append(f'        <link id="{df.local[r][j]}" {split}/>')
        for h in hosts:
            idx = h.split("_")[1]
            out.append(f'        <link id="cluster_link_{idx}_loopback" {loop}/>')
        for j, h in enumerate(hosts):
            up, down = (df.local[r][j], "UP"), (df.local[r][j], "DOWN")
            out += _route("route", h, f"router_{r}", [up], "        ")
            out += _route("route", f"router_{r}", h, [down], "        ")
            out += _route("route", h, h, [(f"cluster_link_{h.split('_')[1]}_loopback", None)], "        ")
            for k, other in enumerate(hosts):
                if k != j:
                    out += _route("route", h, other, [up, (df.local[r][k], "DOWN")], "        ")
        out.append("    </zone>")
    out += [
        '    <zone id="pfs_zone" routing="Full">',
        f'        <host id="pfs" speed="{_DF_SPEED}">',
        '            <prop id="role" value="storage"/>',
        "        </host>",
        f'        <link id="pfs_loopback" {loop}/>',
        *_route("route", "pfs", "pfs", [("pfs_loopback", None)], "        "),
        "    </zone>",
        '    <zone id="master_zone" routing="Full">',
        f'        <host id="master" speed="{_DF_SPEED}">',
        '            <prop id="role" value="master"/>',
        "        </host>",
        f'        <link id="master_loopback" {loop}/>',
        *_route("route", "master", "master", [("master_loopback", None)], "        "),
        "    </zone>",
    ]
    for name in df.green_links + df.black_links + df.blue_links:
        out.append(f'    <link id="{name}" {split}/>')
    out.append(f'    <link id="link_pfs" bandwidth="{_DF_PFS_BW}" latency="{_DF_PFS_LAT}"/>')
    out.append(
        f'    <link id="link_master" bandwidth="{_DF_MASTER_BW}" latency="{_DF_MASTER_LAT}"'
        ' sharing_policy="FATPIPE"/>'
    )
    for s in range(df.nb_routers):
        for d in range(df.nb_routers):
            if s != d:
                out += _route(
                    "zoneRoute", f"router_zone_{s}", f"router_zone_{d}", df.path(s, d), "    ",
                    gw=(f"router_{s}", f"router_{d}"),
                )
    for s in range(df.nb_routers):
        for zone, host, link in (("pfs_zone", "pfs", "link_pfs"), ("master_zone", "master", "link_master")):
            out += _route("zoneRoute", f"router_zone_{s}", zone, [(link, None)], "    ", gw=(f"router_{s}", host))
            out += _route("zoneRoute", zone, f"router_zone_{s}", [(link, None)], "    ", gw=(host, f"router_{s}"))
    out += _route(
        "zoneRoute", "pfs_zone", "master_zone", [("link_pfs", None), ("link_master", None)], "    ",
        gw=("pfs", "master"),
    )
    out += _route(
        "zoneRoute", "master_zone", "pfs_zone", [("link_master", None), ("link_pfs", None)], "    ",
        gw=("master", "pfs"),
    )
    out += ["</zone>", _FOOTER.rstrip("\n")]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# The families' platforms

#: GiB (bytes).
GIB = 2 ** 30
#: pfsbw: rate of one writing thread (a core's link, bytes/s).
PFSBW_THREAD_BW = 0.5 * GIB
#: pfsbw: injection limit of a node (bytes/s).
PFSBW_NODE_BW = 3.75 * GIB
#: pfsbw: cores per node.
PFSBW_CORES = 8
#: pfsbw: shared link of the file system (bytes/s).
PFSBW_PFS_BW = 20 * GIB

#: The locality platforms' I/O models (:func:`locality_xml`).
LOCALITY_IO_MODELS = ("paper", "shared-pfs")



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
    """The XML text of a NUSA platform (non-uniform storage access) of Li &
    Tatebe (data-aware dispatch family, :mod:`iosched.dad`).

    The non-uniform storage-access (NUSA) platform of Li & Tatebe: compute
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


def locality_xml(nodes: int = 486, cores: int = 20, bandwidth: float = 0.1e9, memory: float = 128e9,
                 io_model: str = "paper", pfs_bandwidth: float = 10e9) -> str:
    """XML text of a platform of the data-locality family (Gonthier et al.,
    RR-9497; :mod:`iosched.locality`): ``nodes`` x ``cores``.

    SimGrid platforms of the locality model: n nodes x m cores and a file-system host.

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


    :param nodes: number of nodes (int >= 1); :param cores: cores per node;
    :param bandwidth: bytes/s of each core's link (the paper's node
        bandwidth, 0.1 GB/s on Uppmax); :param memory: bytes per node;
    :param io_model: ``"paper"`` or ``"shared-pfs"``;
    :param pfs_bandwidth: bytes/s of the shared file-system link
        (``shared-pfs`` only).
    :raises InputError: non-positive sizes, numbers above
        :data:`iosched.checks.MAX_AMOUNT` or an unknown I/O model.
    """
    if io_model not in LOCALITY_IO_MODELS:
        raise InputError(f"io_model={io_model!r} is unknown; expected one of {', '.join(LOCALITY_IO_MODELS)}")
    for name, v in (("nodes", nodes), ("cores", cores)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"locality platform: {name}={v!r} must be an integer >= 1")
    for name, v in (("bandwidth", bandwidth), ("memory", memory), ("pfs_bandwidth", pfs_bandwidth)):
        if not (isinstance(v, (int, float)) and 0 < v <= MAX_AMOUNT):
            raise InputError(f"locality platform: {name}={_show(v)} must be a positive number "
                             f"(at most {MAX_AMOUNT:g})")
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


def pfsbw_xml(nb_nodes: int = 15, node_bw: float = PFSBW_NODE_BW, pfs_bw: float = PFSBW_PFS_BW,
              thread_bw: float = PFSBW_THREAD_BW, cores: int = PFSBW_CORES) -> str:
    """SimGrid 3.32 XML (str) of the platform of the PFS-bandwidth-aware
    family (Goponenko et al., PMBS 2024, Section VII-A; described in
    :mod:`iosched.experiments.pfsbw.workload`): ``nb_nodes`` compute nodes
    of ``cores`` cores (one host a core, property ``node=node_<i>``), a
    core's link of ``thread_bw``, a node's backbone of ``node_bw`` and one
    shared link of ``pfs_bw`` to the file-system host ``pfs``
    (``role=storage``); bandwidths in bytes/s.

    :raises InputError: non-positive numbers, bandwidths not finite or above
        :data:`iosched.checks.MAX_AMOUNT` (one line naming the argument).
    """
    for name, v in (("node_bw", node_bw), ("pfs_bw", pfs_bw), ("thread_bw", thread_bw)):
        if not (isinstance(v, (int, float)) and 0 < v <= MAX_AMOUNT):
            raise InputError(f"platform: {name} must be > 0 bytes/s (at most {MAX_AMOUNT:g}), got {_show(v)}")
    for name, v in (("nb_nodes", nb_nodes), ("cores", cores)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"platform: {name} must be an integer >= 1, got {v!r}")
    # the text names the generator's module before issue 26: the output bytes stay the same
    lines = [_HEADER.rstrip("\n"),
             f"<!-- iosched.pfsbw.workload.platform_xml: {nb_nodes} nodes x {cores} cores, "
             f"thread {thread_bw:.0f} B/s, node {node_bw:.0f} B/s, pfs {pfs_bw:.0f} B/s -->",
             '<zone id="AS0" routing="Full">']
    for i in range(nb_nodes):
        lines += [f'    <cluster id="n{i}" prefix="node_{i}_c" suffix="" radical="0-{cores - 1}" speed="1Gf"',
                  f'        bw="{thread_bw:.1f}Bps" lat="10us" bb_bw="{node_bw:.1f}Bps" bb_lat="10us">',
                  f'        <prop id="node" value="node_{i}" />',
                  "    </cluster>"]
    lines += ['    <cluster id="master" prefix="master_host" suffix="" radical="0-0" speed="1Gf"',
              '        bw="1.25GBps" lat="50us" bb_bw="1.25GBps" bb_lat="50us">',
              '        <prop id="role" value="master" />',
              "    </cluster>",
              *pfs_zone_lines("1Gf", f"{pfs_bw:.1f}Bps"),
              '    <link id="backbone" bandwidth="1.25GBps" latency="500us" />',
              f'    <link id="pfs_link" bandwidth="{pfs_bw:.1f}Bps" latency="100us" />']
    gw_master = "master_hostmaster_router"
    for i in range(nb_nodes):
        gw = f"node_{i}_cn{i}_router"
        lines += [f'    <zoneRoute src="n{i}" dst="master" gw_src="{gw}" gw_dst="{gw_master}">',
                  '        <link_ctn id="backbone" />', "    </zoneRoute>",
                  f'    <zoneRoute src="n{i}" dst="pfs_zone" gw_src="{gw}" gw_dst="pfs">',
                  '        <link_ctn id="pfs_link" />', "    </zoneRoute>"]
    lines += [f'    <zoneRoute src="master" dst="pfs_zone" gw_src="{gw_master}" gw_dst="pfs">',
              '        <link_ctn id="pfs_link" />', "    </zoneRoute>",
              "</zone>", _FOOTER.rstrip("\n")]
    return "\n".join(lines) + "\n"


def listpack_xml(nb_nodes: int, link_bw: float | None = None) -> str:
    """The platform of the list-vs-pack family's campaigns (Jeannot, Pallez &
    Vidal, IJHPCA 2023; :mod:`iosched.listpack`): :func:`cluster_xml` with
    ``nb_nodes`` resources, PFS link 240 GB/s (B, the I/O node to the file
    system), 1 us latencies (SimGrid's TCP window would cap a flow at
    ``gamma / (2 latency)`` otherwise) and node links of 2.4 TB/s (10 B: a
    job alone gets B), or, with the per-node cap (issue 30), ``link_bw``
    bytes/s (a resource's block of nodes times b:
    :attr:`iosched.listpack.model.Machine.link_bandwidth`; Mira 16 GB/s,
    Uniform 750 MB/s), so that a job writing from its ``r`` resources gets
    ``min(r link_bw, B)``. Standard SimGrid XML (links only): the real Batsim
    4.2.1 loads it.

    :raises InputError: a bad ``nb_nodes`` or ``link_bw``."""
    bw = "2.4TBps"
    if link_bw is not None:
        bw = f"{int(link_bw)}Bps" if isinstance(link_bw, (int, float)) and float(link_bw).is_integer() \
            else link_bw
    return cluster_xml(nb_nodes, bw=bw, lat="1us", bb_bw="2.4TBps", bb_lat="1us",
                       pfs={"bw": "240GBps", "lat": "1us"})


# --------------------------------------------------------------------------
# CLI


def _write(text, out):
    path = Path(out)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"{out}: cannot write: {exc.strerror or exc}") from None


@click.command(name="cluster", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--nb-nodes", type=int, default=100, show_default=True, help="number of compute hosts")
@click.option("--speed", default="1Gf", show_default=True, help="host speed (flops/s, e.g. 1Gf)")
@click.option("--bw", default="125MBps", show_default=True, help="host link bandwidth (bytes/s)")
@click.option("--lat", default="50us", show_default=True, help="host link latency (s)")
@click.option("--bb-bw", default="2.25GBps", show_default=True, help="cluster backbone bandwidth")
@click.option("--bb-lat", default="500us", show_default=True, help="cluster backbone latency")
@click.option("--pfs-bw", default=None, help="add a PFS host behind one link of this bandwidth")
@click.option("--pfs-lat", default="100us", show_default=True, help="latency of the PFS link")
@click.option("--prefix", default="node_", show_default=True, help="host name prefix")
def cluster_command(out, nb_nodes, speed, bw, lat, bb_bw, bb_lat, pfs_bw, pfs_lat, prefix):
    """Write a flat cluster platform (like cluster100.xml) to OUT."""
    pfs = None if pfs_bw is None else {"bw": pfs_bw, "lat": pfs_lat}
    try:
        text = cluster_xml(nb_nodes, speed=speed, bw=bw, lat=lat, bb_bw=bb_bw, bb_lat=bb_lat, pfs=pfs, prefix=prefix)
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    _write(text, out)
    click.echo(f"wrote {out}: {nb_nodes} nodes{' + pfs' if pfs else ''} + master")


@click.command(name="dragonfly96", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option(
    "--routing", type=click.Choice(DRAGONFLY_ROUTINGS), default="minimal", show_default=True,
    help="minimal dragonfly routes, or SimGrid 3.32's DRAGONFLY routes (quirk included)",
)
def dragonfly96_command(out, routing):
    """Write the burst-buffer paper's 108-node dragonfly to OUT."""
    _write(dragonfly96_xml(routing), out)
    click.echo(
        f"wrote {out}: 108 nodes (96 compute, {len(DRAGONFLY96_STORAGE_NODES)} burst-buffer) + pfs + master"
    )


@click.command(name="dad", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--nodes", type=int, default=4, show_default=True)
@click.option("--slots", type=int, default=16, show_default=True)
@click.option("--nic-bw", default="125MBps", show_default=True)
@click.option("--local-bw", default="2803.61MBps", show_default=True)
@click.option("--local-sharing", type=click.Choice(["FATPIPE", "SHARED"]), default="FATPIPE", show_default=True)
@input_errors_one_line
def dad_command(out, nodes, slots, nic_bw, local_bw, local_sharing):
    """Write a NUSA platform (nodes x slots, node-local disks) to OUT (:func:`nusa_xml`)."""
    check_output_file(out)
    Path(out).write_text(nusa_xml(nodes, slots, nic_bw=nic_bw, local_bw=local_bw, local_sharing=local_sharing))


@click.command(name="locality")
@click.argument("out")
@click.option("--nodes", type=int, default=486)
@click.option("--cores", type=int, default=20)
@click.option("--bandwidth", type=float, default=0.1e9, help="bytes/s per core link")
@click.option("--memory", type=float, default=128e9, help="bytes per node")
@click.option("--io-model", default="paper", type=click.Choice(LOCALITY_IO_MODELS))
@click.option("--pfs-bandwidth", type=float, default=10e9, help="bytes/s (shared-pfs)")
def locality_command(out, nodes, cores, bandwidth, memory, io_model, pfs_bandwidth):
    """Write the locality platform (NODES x CORES and a PFS host) to OUT (:func:`locality_xml`)."""
    try:
        text = locality_xml(nodes, cores, bandwidth, memory, io_model, pfs_bandwidth)
        with open(out, "w") as f:
            f.write(text)
    except (InputError, OSError) as e:
        raise click.ClickException(str(e)) from None


#: Batsim resources of the two machines of the list-vs-pack paper (nodes / block).
LISTPACK_MACHINE_RESOURCES = {"mira": MIRA_NODES // MIRA_BLOCK, "uniform": UNIFORM_NODES // UNIFORM_BLOCK}


@click.command(name="listpack", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--machine", type=click.Choice(sorted(LISTPACK_MACHINE_RESOURCES)), default="mira",
              show_default=True, help="Mira (96 resources of 512 nodes) or Uniform (2048 resources of one node)")
@click.option("--cap/--no-cap", default=False, show_default=True,
              help="per-node I/O cap b (Mira 31.25 MB/s per node; Uniform 750 MB/s): node links of block x b")
def listpack_command(out, machine, cap):
    """Write the list-vs-pack campaign platform of MACHINE to OUT (:func:`listpack_xml`;
    the platform `iosched workload listpack --platform` writes)."""
    m = listpack_machine(machine, cap=cap)
    try:
        Path(out).write_text(listpack_xml(m.resources, m.link_bandwidth))
    except OSError as exc:
        raise click.ClickException(f"{out}: cannot write: {exc.strerror or exc}") from None
    link = f", node links {m.link_bandwidth:g} B/s" if cap else ""
    click.echo(f"wrote {out}: {machine}, {m.resources} resources{link}")


@click.command(name="pfsbw", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--nb-nodes", type=int, default=15, show_default=True)
@click.option("--node-bw", type=float, default=PFSBW_NODE_BW, show_default=True, help="bytes/s")
@click.option("--pfs-bw", type=float, default=PFSBW_PFS_BW, show_default=True, help="bytes/s")
@click.option("--thread-bw", type=float, default=PFSBW_THREAD_BW, show_default=True, help="bytes/s")
def pfsbw_command(out, nb_nodes, node_bw, pfs_bw, thread_bw):
    """Write the pfsbw family's 15-node + PFS platform to OUT (:func:`pfsbw_xml`)."""
    try:
        Path(out).write_text(pfsbw_xml(nb_nodes, node_bw, pfs_bw, thread_bw))
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
