"""Platform description for the embedded engine: resources, roles, latencies.

SimGrid loads the platform and computes every transfer and computation; this
module adds what Batsim 4.2.1 derives from the same XML and that SimGrid's
Python bindings (3.32) do not expose (host properties):

* the ``role`` of each host (``master``, ``storage`` or compute) from the
  ``<prop id="role">`` of the ``<host>``, or of its enclosing ``<cluster>`` /
  ``<zone>``, overridden by ``-r/--add-role-to-hosts`` (Batsim's CLI);
* the resource numbering of Batsim: compute hosts first, then storage hosts,
  each group in SimGrid's host order (sorted by name); the master host is not a
  resource;
* the ``properties`` and ``zone_properties`` forwarded in SIMULATION_BEGINS.

Source: Batsim 4.2.1 documentation (``docs/input-platform.rst``,
``docs/protocol.rst``) and its observed behaviour in ``shared/golden``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import defusedxml.ElementTree as SafeET
from xml.etree.ElementTree import ParseError

from iosched.errors import InputError

ROLE_MASTER = "master"
ROLE_STORAGE = "storage"
ROLE_COMPUTE = "compute_node"
SUPPORTED_ROLES = (ROLE_MASTER, ROLE_STORAGE, ROLE_COMPUTE, "")


@dataclass
class HostInfo:
    """Static information on one host of the platform XML.

    ``properties`` are the host's own ``<prop>`` (for a cluster host: the
    cluster's), ``zone_properties`` those of the enclosing zone or cluster.
    """

    name: str
    properties: dict = field(default_factory=dict)
    zone_properties: dict = field(default_factory=dict)


@dataclass
class Resource:
    """A Batsim resource (a compute or storage host).

    ``id`` is Batsim's resource number (int >= 0), ``role`` is ``""`` for a
    compute node or ``"storage"``.
    """

    id: int
    name: str
    role: str
    properties: dict
    zone_properties: dict

    def to_json(self) -> dict:
        """The resource as sent in SIMULATION_BEGINS (Batsim 4.2.1 layout)."""
        props = dict(self.properties)
        props["role"] = self.role
        return {
            "id": self.id,
            "name": self.name,
            "state": "idle",
            "properties": props,
            "zone_properties": dict(self.zone_properties),
        }


def _expand_radical(radical: str, path: str, cluster_id: str) -> list[int]:
    """Expand a SimGrid cluster radical such as ``"0-3,7,9-10"``."""
    out: list[int] = []
    for part in radical.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise InputError(
                f"{path}: cluster '{cluster_id}': invalid radical '{radical}'"
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        out.extend(range(lo, hi + 1))
    return out


def _props_of(elem) -> dict:
    return {
        p.get("id"): p.get("value", "")
        for p in elem
        if p.tag == "prop" and p.get("id") is not None
    }


#: ``routing`` values of a ``<zone>`` (or ``<AS>``) that SimGrid 3.32 knows;
#: any other value makes SimGrid abort the process (SIGABRT).
ZONE_ROUTINGS = ("Full", "Floyd", "Dijkstra", "DijkstraCache", "None", "Vivaldi", "Cluster", "Wifi")
#: Attributes holding numbers with a SimGrid unit (``1Gf``, ``125MBps``, ``50us``;
#: ``speed`` may list several, comma-separated).
UNIT_ATTRIBUTES = ("speed", "bw", "lat", "bandwidth", "latency", "bb_bw", "bb_lat",
                   "loopback_bw", "loopback_lat")
_UNIT_NUMBER = re.compile(r"\s*(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*[A-Za-z/]*\s*")


def _check_elem(elem, path: str) -> None:
    """Check one element's ``routing`` (zones) and unit numbers."""
    tag = elem.tag
    what = f"<{tag} id='{elem.get('id', '?')}'>"
    if tag in ("zone", "AS"):
        routing = elem.get("routing")
        if routing is not None and routing not in ZONE_ROUTINGS:
            raise InputError(f"{path}: {what}: unknown routing '{routing}' "
                             f"(SimGrid knows: {', '.join(ZONE_ROUTINGS)})")
    for attr in UNIT_ATTRIBUTES:
        value = elem.get(attr)
        if value is None:
            continue
        for part in value.split(","):
            m = _UNIT_NUMBER.fullmatch(part)
            if m is None or not math.isfinite(float(m.group(1) + (m.group(2) or ""))):
                raise InputError(f"{path}: {what}: attribute '{attr}': {value!r} is not a finite "
                                 "non-negative number with a unit (such as 1Gf, 125MBps, 50us)")


def validate_platform(path: str) -> None:
    """Check what makes SimGrid abort instead of raising, before SimGrid loads
    the file: unreadable or invalid XML, a zone's unknown ``routing``
    (:data:`ZONE_ROUTINGS`), and the numbers of :data:`UNIT_ATTRIBUTES` (a
    finite non-negative number and a unit; ``nan``, ``inf``, ``1e400``
    refused).

    :raises InputError: one line naming the file, the element and the attribute.
    """
    root = _parse(path).getroot()
    stack = [root]
    while stack:
        elem = stack.pop()
        _check_elem(elem, path)
        stack.extend(elem)


def _parse(path: str):
    try:
        return SafeET.parse(path)
    except FileNotFoundError:
        raise InputError(f"{path}: platform file not found") from None
    except ParseError as exc:
        raise InputError(f"{path}: invalid platform XML: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read platform file: {exc.strerror}") from None
    except Exception as exc:  # defusedxml's forbidden constructs
        raise InputError(f"{path}: rejected platform XML: {exc}") from None


def read_hosts(path: str) -> dict[str, HostInfo]:
    """Read the hosts of a SimGrid platform XML and their properties.

    :param path: platform file.
    :returns: host name -> :class:`HostInfo`, for ``<host>`` elements and the
        hosts generated by ``<cluster>`` elements (``prefix + i + suffix`` for
        each ``i`` of the radical).
    :raises InputError: unreadable file, invalid XML, invalid cluster radical,
        zones nested too deeply.
    """
    tree = _parse(path)

    hosts: dict[str, HostInfo] = {}

    def walk(elem, zone_props: dict) -> None:
        for child in elem:
            tag = child.tag
            if tag == "zone" or tag == "AS":
                walk(child, _props_of(child))
            elif tag == "host":
                name = child.get("id")
                if name is None:
                    raise InputError(f"{path}: a <host> has no 'id'")
                hosts[name] = HostInfo(name, _props_of(child), dict(zone_props))
            elif tag == "cluster":
                cid = child.get("id", "?")
                props = _props_of(child)
                prefix = child.get("prefix", "")
                suffix = child.get("suffix", "")
                radical = child.get("radical")
                if radical is None:
                    raise InputError(f"{path}: cluster '{cid}' has no 'radical'")
                for i in _expand_radical(radical, path, cid):
                    name = f"{prefix}{i}{suffix}"
                    hosts[name] = HostInfo(name, dict(props), dict(props))

    root = tree.getroot()
    if root.tag != "platform":
        raise InputError(f"{path}: root element is <{root.tag}>, expected <platform>")
    try:
        walk(root, {})
    except RecursionError:
        raise InputError(f"{path}: platform zones nested too deeply") from None
    return hosts


def parse_role_maps(role_maps: list[str]) -> dict[str, str]:
    """Parse Batsim's ``-r/--add-role-to-hosts`` values (``h1,h2:role``).

    :raises InputError: malformed value or unsupported role.
    """
    out: dict[str, str] = {}
    for spec in role_maps or []:
        parts = spec.split(":")
        if len(parts) != 2 or not parts[0]:
            raise InputError(
                f"-r/--add-role-to-hosts '{spec}': expected HOST1,HOST2:ROLE"
            )
        hosts, role = parts
        if role not in (ROLE_MASTER, ROLE_STORAGE, ROLE_COMPUTE):
            raise InputError(
                f"-r/--add-role-to-hosts '{spec}': unsupported role '{role}' "
                "(master, storage, compute_node)"
            )
        for h in hosts.split(","):
            out[h] = role
    return out


@dataclass
class PlatformResources:
    """The resources Batsim exposes for a platform.

    ``compute`` and ``storage`` are lists of :class:`Resource` with ids
    ``0..n_c-1`` and ``n_c..n_c+n_s-1``; ``by_id`` holds both.
    """

    master: str
    compute: list[Resource]
    storage: list[Resource]

    @property
    def by_id(self) -> list[Resource]:
        return self.compute + self.storage

    @property
    def nb_resources(self) -> int:
        return len(self.compute) + len(self.storage)


def build_resources(
    path: str,
    simgrid_host_names: list[str],
    master_name: str = "master_host",
    role_maps: list[str] | None = None,
    mmax: int = 0,
) -> PlatformResources:
    """Number the hosts as Batsim 4.2.1 does.

    :param path: platform XML (for properties and roles).
    :param simgrid_host_names: host names in SimGrid's order (``Engine.all_hosts``).
    :param master_name: ``-m/--master-host`` (default ``master_host``); a host
        whose role is ``master`` is used when no host has this name.
    :param role_maps: ``-r`` values.
    :param mmax: ``--mmax``: keep only the first ``mmax`` compute hosts (0: all).
    :raises InputError: unknown host in ``-r``, no master host, several
        masters, no compute resource.
    """
    infos = read_hosts(path)
    known = set(simgrid_host_names)
    roles_cli = parse_role_maps(role_maps or [])
    for h in roles_cli:
        if h not in known:
            raise InputError(f"-r/--add-role-to-hosts: unknown host '{h}' in {path}")

    def role_of(name: str) -> str:
        if name in roles_cli:
            r = roles_cli[name]
            return "" if r == ROLE_COMPUTE else r
        info = infos.get(name)
        if info is None:
            return ""
        r = info.properties.get("role", info.zone_properties.get("role", ""))
        return "" if r == ROLE_COMPUTE else r

    roles = {n: role_of(n) for n in simgrid_host_names}
    if master_name in known:
        master = master_name
    else:
        masters = [n for n in simgrid_host_names if roles[n] == ROLE_MASTER]
        if not masters:
            raise InputError(
                f"{path}: no master host (no host named '{master_name}' and no host "
                "with role 'master'; use -m or -r HOST:master)"
            )
        if len(masters) > 1:
            raise InputError(
                f"{path}: several hosts have role 'master': {', '.join(masters[:4])}"
            )
        master = masters[0]

    compute, storage = [], []
    for n in simgrid_host_names:
        if n == master or roles[n] == ROLE_MASTER:
            continue
        (storage if roles[n] == ROLE_STORAGE else compute).append(n)
    if mmax and mmax > 0:
        compute = compute[:mmax]
    if not compute:
        raise InputError(f"{path}: the platform has no compute host")

    def mk(i: int, n: str) -> Resource:
        info = infos.get(n, HostInfo(n))
        props = {k: v for k, v in info.properties.items() if k != "role"}
        return Resource(i, n, roles[n], props, info.zone_properties)

    comp = [mk(i, n) for i, n in enumerate(compute)]
    stor = [mk(len(compute) + i, n) for i, n in enumerate(storage)]
    return PlatformResources(master, comp, stor)


def count_compute_hosts(path: str, master_name: str = "master_host", role_maps: list[str] | None = None) -> int:
    """Number of compute resources Batsim will expose for a platform XML
    (hosts that are neither the master nor storage).

    :raises InputError: unreadable platform, bad role map.
    """
    infos = read_hosts(path)
    roles_cli = parse_role_maps(role_maps or [])
    n = 0
    for name, info in infos.items():
        role = roles_cli.get(name, info.properties.get("role", info.zone_properties.get("role", "")))
        if name == master_name or role in (ROLE_MASTER, ROLE_STORAGE):
            continue
        n += 1
    return n
