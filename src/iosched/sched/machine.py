"""The machine as a scheduler sees it, built from Batsim's SIMULATION_BEGINS.

Batsim 4.2.1 sends every resource with its ``id``, ``name`` and the host's
``properties`` (including ``role``: ``compute`` or ``storage``); pybatsim
keeps them in ``bs.machines = {"compute": [...], "storage": [...]}``.

A :class:`Machine` groups them into :class:`Node` objects. By default every
compute resource is a node of its own (one host = one resource, Batsim's
usual model). Platforms of multi-core nodes declare each core as a host with
the properties ``node`` (the node's name, shared by its cores) and
optionally ``memory`` (bytes, on any of its cores): those resources form one
node. Storage resources (burst-buffer nodes, the PFS) are kept by name.
"""

from __future__ import annotations

from typing import Mapping, Optional

from procset import ProcSet

from iosched.errors import InputError

__all__ = ["Node", "Machine"]


class Node:
    """A compute node: ``name``, ``resources`` (ProcSet of its Batsim
    resource ids: one per core for multi-core nodes), ``memory`` (bytes, or
    None when unknown) and ``properties`` (the first resource's properties)."""

    __slots__ = ("name", "resources", "memory", "properties")

    def __init__(self, name: str, resources: ProcSet, memory: Optional[float], properties: dict):
        self.name, self.resources, self.memory, self.properties = name, resources, memory, properties

    @property
    def cores(self) -> int:
        """Number of resources (cores) of the node."""
        return len(self.resources)

    def __repr__(self):
        return f"<Node {self.name} {self.resources} memory={self.memory}>"


class Machine:
    """Compute nodes and storage resources of a platform.

    :param compute: list of resource dicts (``id``, optional ``name`` and
        ``properties``), as in ``bs.machines["compute"]``.
    :param storage: the same for storage resources.
    :raises InputError: a resource id is not an int, or a ``memory``
        property is not a non-negative number.

    Attributes: ``compute`` (ProcSet of compute resource ids), ``nodes``
    (list of :class:`Node` in order of their lowest resource id),
    ``node_of`` (resource id -> :class:`Node`), ``names`` (resource id ->
    name), ``storage`` (storage resource id -> name).
    """

    def __init__(self, compute, storage=()):
        groups: dict = {}
        self.names: dict = {}
        props_of: dict = {}
        for r in compute:
            rid = r["id"]
            if isinstance(rid, bool) or not isinstance(rid, int):
                try:
                    rid = int(rid)
                except (TypeError, ValueError):
                    raise InputError(f"SIMULATION_BEGINS: compute resource id {r['id']!r} is not an integer") from None
            name = str(r.get("name", rid))
            props = dict(r.get("properties") or {})
            self.names[rid] = name
            props_of[rid] = props
            groups.setdefault(str(props.get("node", name)), []).append(rid)
        self.compute = ProcSet(*self.names)
        self.nodes = []
        self.node_of: dict = {}
        for name, ids in sorted(groups.items(), key=lambda kv: min(kv[1])):
            memory = None
            for rid in ids:
                if "memory" in props_of[rid]:
                    try:
                        memory = float(props_of[rid]["memory"])
                    except (TypeError, ValueError):
                        memory = -1.0
                    if not memory >= 0:
                        raise InputError(f"SIMULATION_BEGINS: resource {rid}: property memory="
                                         f"{props_of[rid]['memory']!r} is not a size in bytes")
            node = Node(name, ProcSet(*ids), memory, props_of[min(ids)])
            self.nodes.append(node)
            for rid in ids:
                self.node_of[rid] = node
        self.storage = {int(r["id"]): str(r.get("name", r["id"])) for r in storage}

    @classmethod
    def from_batsim(cls, machines: Mapping, nb_compute: int) -> "Machine":
        """The machine of pybatsim's ``bs.machines``; when it lists no compute
        resource, ``nb_compute`` resources ``0..nb_compute-1``."""
        compute = list(machines.get("compute", []) or [])
        if not compute:
            compute = [{"id": i} for i in range(int(nb_compute))]
        return cls(compute, machines.get("storage", []) or [])

    def __repr__(self):
        return f"<Machine compute={self.compute} nodes={len(self.nodes)} storage={len(self.storage)}>"
