"""The inventory graph's schema and an in-memory inventory every source fills and every store loads.

The schema is the one of Soundararajan and Spracklen, "Simplifying Virtualization Management with
Graph Databases" (VMware Technical Journal, 2013), with its inconsistencies resolved once, here:

- **Node types** are labels (one node table each): ``VCenter``, ``Datacenter``, ``Cluster``,
  ``Host``, ``VM``, ``VMDK``, ``Datastore``, ``Network``, ``User`` (a human), plus
  ``StorageArray`` for the paper's "disks that span multiple storage arrays" question. The paper
  keeps the type in a ``type`` property with varying spellings ("Network"/"network",
  "Datastore"/"datastore"); a label has one spelling and the engine filters on it for free.
- **Every node** has ``uuid`` (the key; the paper's ``names`` index on ``uuid``) and ``name``.
- **Edges point from subject to object**, and there are three kinds, as in the paper:

  ============  ===========================================================================
  ``follow``    X runs or uses Y: vCenter -> host (the paper's "host followers" of a vCenter),
                host -> VM ("a host follows a VM"), VM -> VMDK ("a VM follows its VMDKs";
                a linked clone follows every disk of its chain, so a base disk is followed by
                all its clones).
  ``member``    X belongs to group Y: host -> cluster, datacenter (standalone hosts), network,
                datastore; VM -> network, datastore (each datastore holding one of its disks,
                a linked clone's base disk included), cluster (its host's); VMDK ->
                datastore; cluster -> datacenter; datacenter -> vCenter; datastore ->
                storage array. The paper has VMs and VMDKs both in datastore groups and
                clusters as groups (Sec. 1, Figure 1); the sources keep a VM's datastore and
                cluster memberships consistent with its disks and host
                (:meth:`Inventory.place_disk`, :meth:`Inventory.place_vm`).
  ``uses``      a human user's link to an entity, with ``role`` ``"user"`` (uses the VM, the
                paper's user-follows-VM) or ``"admin"`` (holds a permission on a VM or
                datastore, which the admin-access question needs and the paper's schema lacks).
                The paper calls this relationship ``user``; LadybugDB's catalog names are
                case-insensitive, so it cannot share the name of the ``User`` node table.
  ============  ===========================================================================

The paper's host-follows-VM and "host followers" of a vCenter disagree on direction; here
``follow`` always points from the container or consumer to what it runs or uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from vmtwin.exceptions import VmtwinError

NODE_TYPES: tuple[str, ...] = (
    "VCenter", "Datacenter", "Cluster", "Host", "VM", "VMDK", "Datastore", "Network", "User",
    "StorageArray",
)

#: relationship -> the (from type, to type) pairs it may join
REL_TYPES: dict[str, tuple[tuple[str, str], ...]] = {
    "follow": (("VCenter", "Host"), ("Host", "VM"), ("VM", "VMDK")),
    "member": (
        ("Host", "Cluster"), ("Host", "Datacenter"), ("Host", "Network"), ("Host", "Datastore"),
        ("VM", "Network"), ("VM", "Datastore"), ("VM", "Cluster"), ("VMDK", "Datastore"),
        ("Cluster", "Datacenter"),
        ("Datacenter", "VCenter"), ("Datastore", "StorageArray"),
    ),
    "uses": (("User", "VM"), ("User", "Datastore")),
}

#: relationship -> its properties (name, allowed values); only ``uses`` has one
REL_PROPERTIES: dict[str, tuple[str, ...]] = {"follow": (), "member": (), "uses": ("role",)}
ROLES: tuple[str, ...] = ("user", "admin")

_CANONICAL = {t.lower(): t for t in NODE_TYPES}


def canonical_type(name: str) -> str:
    """The one spelling of a node type, accepting any case (``"network"`` -> ``"Network"``)."""
    try:
        return _CANONICAL[name.lower()]
    except KeyError:
        raise VmtwinError(f"node type: got {name!r}; allowed: {', '.join(NODE_TYPES)}") from None


@dataclass
class Inventory:
    """Nodes and edges of one inventory, checked against the schema as they are added.

    ``nodes[uuid] = (type, name)``; ``edges[(rel, from_type, to_type)]`` lists
    ``(from_uuid, to_uuid, role)`` (role is ``None`` except on ``uses``). Adding the same edge
    twice keeps one.
    """

    source: str = ""
    nodes: dict[str, tuple[str, str]] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], list[tuple[str, str, str | None]]] = field(default_factory=dict)
    _seen: set[tuple[str, str, str]] = field(default_factory=set, repr=False)

    def add_node(self, type_: str, uuid: str, name: str) -> str:
        t = canonical_type(type_)
        if not uuid:
            raise VmtwinError(f"{t} {name!r}: empty uuid; allowed: a non-empty unique id")
        old = self.nodes.get(uuid)
        if old is not None and old[0] != t:
            raise VmtwinError(f"uuid {uuid!r}: already a {old[0]} ({old[1]!r}), got it again as a {t}; "
                              "allowed: one type per uuid")
        self.nodes[uuid] = (t, name)
        return uuid

    def add_edge(self, rel: str, src: str, dst: str, role: str | None = None) -> None:
        if rel not in REL_TYPES:
            raise VmtwinError(f"relationship: got {rel!r}; allowed: {', '.join(REL_TYPES)}")
        for end in (src, dst):
            if end not in self.nodes:
                raise VmtwinError(f"{rel} edge {src!r} -> {dst!r}: no node {end!r}; allowed: uuids of added nodes")
        pair = (self.nodes[src][0], self.nodes[dst][0])
        if pair not in REL_TYPES[rel]:
            allowed = ", ".join(f"{a}->{b}" for a, b in REL_TYPES[rel])
            raise VmtwinError(f"{rel} edge {pair[0]} -> {pair[1]}: got this pair; allowed: {allowed}")
        if rel == "uses":
            if role not in ROLES:
                raise VmtwinError(f"uses edge role: got {role!r}; allowed: {', '.join(ROLES)}")
        elif role is not None:
            raise VmtwinError(f"{rel} edge role: got {role!r}; allowed: none (only uses edges have a role)")
        key = (rel + ":" + (role or ""), src, dst)
        if key in self._seen:
            return
        self._seen.add(key)
        self.edges.setdefault((rel, *pair), []).append((src, dst, role))

    def place_disk(self, vm: str, disk: str, datastore: str | None) -> None:
        """The VM follows the disk; the disk, and so the VM, are on the datastore."""
        self.add_edge("follow", vm, disk)
        if datastore is not None:
            self.add_edge("member", disk, datastore)
            self.add_edge("member", vm, datastore)

    def place_vm(self, host: str, vm: str, cluster: str | None) -> None:
        """The host runs the VM; the VM is in the host's cluster (None: a standalone host)."""
        self.add_edge("follow", host, vm)
        if cluster is not None:
            self.add_edge("member", vm, cluster)

    def of_type(self, type_: str) -> list[str]:
        """The uuids of one node type, in insertion order."""
        t = canonical_type(type_)
        return [u for u, (k, _) in self.nodes.items() if k == t]

    def iter_edges(self) -> Iterable[tuple[str, str, str, str | None]]:
        """Every edge as ``(rel, from_uuid, to_uuid, role)``."""
        for (rel, _, _), rows in self.edges.items():
            for src, dst, role in rows:
                yield rel, src, dst, role

    def counts(self) -> dict[str, int]:
        """Nodes per type and edges per relationship, in schema order (zeros included)."""
        c = {t: 0 for t in NODE_TYPES}
        for t, _ in self.nodes.values():
            c[t] += 1
        for rel in REL_TYPES:
            c[rel] = sum(len(v) for k, v in self.edges.items() if k[0] == rel)
        return c

    @property
    def entity_count(self) -> int:
        return len(self.nodes)
