"""The paper's questions as named Cypher queries (today's openCypher, run by LadybugDB).

Each :class:`NamedQuery` keeps the paper's original legacy Cypher (Neo4j 1.x: ``start``,
``node(*)``, index lookups) beside its translation, the section it comes from and what changed.
Translation rules: ``start a=node(*)`` plus a ``type`` filter becomes a labelled MATCH;
``node:names(uuid="X")`` becomes a match on ``uuid`` (or ``name``: either identifies an entity
here); ``where b-[:member]-c`` becomes a second pattern; the paper's undirected matches become
directed ones along the schema's subject -> object edges. Two paper bugs are fixed: the
hot-spot query orders ascending and so returns the five *least* connected entities (DESC here),
and it counts only outgoing relationships although its text says "any sort of relationship"
(both directions here). Results are ordered fully (ties broken by uuid), so they are
deterministic.

Entity parameters (``network``, ``datastore``, ``vm``, ``vcenter``) accept a uuid or a name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vmtwin.exceptions import VmtwinError

REQUIRED = object()


@dataclass(frozen=True)
class Param:
    kind: type
    default: Any
    help: str


@dataclass(frozen=True)
class NamedQuery:
    name: str
    question: str
    source: str
    cypher: str
    params: dict[str, Param] = field(default_factory=dict)
    paper: str = ""  # the paper's own query, verbatim; empty when it gives none
    note: str = ""

    def bind(self, given: dict[str, str]) -> dict[str, Any]:
        """Parameters from ``key=value`` strings, typed, with defaults filled in."""
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            raise VmtwinError(f"query {self.name} parameter: got {unknown[0]!r}; allowed: "
                              f"{', '.join(self.params) or 'none'}")
        bound: dict[str, Any] = {}
        for key, p in self.params.items():
            if key in given:
                try:
                    bound[key] = p.kind(given[key])
                except ValueError:
                    raise VmtwinError(f"query {self.name} parameter {key}: got {given[key]!r}; "
                                      f"allowed: {p.help}") from None
                if p.kind is int and bound[key] < 0:
                    raise VmtwinError(f"query {self.name} parameter {key}: got {bound[key]}; "
                                      f"allowed: {p.help}")
            elif p.default is REQUIRED:
                raise VmtwinError(f"query {self.name} parameter {key}: missing; allowed: {p.help}")
            else:
                bound[key] = p.default
        return bound


def _entity(what: str) -> Param:
    return Param(str, REQUIRED, f"the uuid or name of a {what}")


#: "A base disk may be shared by no more than 8 linked clones" (paper, 4.2.3)
MAX_LINKED_CLONES = 8
#: "datastores with a disproportionately large number of VMDKs" (> 500; paper, 4.1)
OVERLOADED_VMDKS = 500
#: "return the top 5 hosts or VMs" (paper, 4.1)
HOT_SPOT_LIMIT = 5

_QUERIES = [
    NamedQuery(
        "single-network-hosts",
        "Which hosts are connected to exactly one network (a single point of failure)?",
        "4.1 risk analysis",
        "MATCH (h:Host)-[:member]->(n:Network) WITH h, count(n) AS networks WHERE networks = 1 "
        "RETURN h.name AS host, h.uuid AS uuid, networks ORDER BY uuid",
        paper='start a=node(*) match a-[:member]-c where a.type = "host" and c.type = "Network" '
              'with a, count(c) as fcount where fcount = 1 return a',
    ),
    NamedQuery(
        "single-datastore-hosts",
        "Which hosts are connected to exactly one datastore?",
        "4.1 risk analysis (the paper's generalization)",
        "MATCH (h:Host)-[:member]->(d:Datastore) WITH h, count(d) AS datastores WHERE datastores = 1 "
        "RETURN h.name AS host, h.uuid AS uuid, datastores ORDER BY uuid",
        note='the paper: replace c.type = "Network" with c.type = "datastore"',
    ),
    NamedQuery(
        "dependency-hot-spots",
        "Which hosts or VMs have the most dependencies (relationships of any kind)?",
        "4.1 risk analysis",
        "MATCH (a:Host:VM) WITH a, COUNT { MATCH (a)-[]-() } AS dependencies "
        "ORDER BY dependencies DESC, a.uuid LIMIT $limit "
        "RETURN a.name AS entity, label(a) AS type, a.uuid AS uuid, dependencies",
        {"limit": Param(int, HOT_SPOT_LIMIT, "a count of entities, 0 or more")},
        paper='start a=node(*) match a-->(x) where a.type = "host" or a.type = "VM" '
              'with a, count(*) as fcount return a, fcount order by fcount limit 5',
        note="DESC added (the paper's ascending order returns the least connected); both directions "
             "counted; an entity with no relationship counts 0 (the paper's pattern would skip it)",
    ),
    NamedQuery(
        "overloaded-datastores",
        "Which datastores hold a disproportionately large number of VMDKs?",
        "4.1 risk analysis",
        "MATCH (d:VMDK)-[:member]->(s:Datastore) WITH s, count(d) AS vmdks WHERE vmdks > $min_vmdks "
        "RETURN s.name AS datastore, s.uuid AS uuid, vmdks ORDER BY vmdks DESC, uuid",
        {"min_vmdks": Param(int, OVERLOADED_VMDKS, "a VMDK count, 0 or more (datastores above it)")},
        paper='start a=node(*) match a-[:member]-b where b.type = "VMDK" and a.type = "Datastore" '
              'with a, count(b) as fcount where fcount > 500 return a, fcount order by fcount',
        note="largest first",
    ),
    NamedQuery(
        "crowded-datastores",
        "Are any of my datastores overloaded with too many VMs?",
        "4.1 (\"the query is similar\") and 5 (the natural-language example)",
        "MATCH (v:VM)-[:member]->(s:Datastore) WITH s, count(v) AS vms "
        "WHERE vms > $min_vms RETURN s.name AS datastore, s.uuid AS uuid, vms ORDER BY vms DESC, uuid",
        {"min_vms": Param(int, 100, "a VM count, 0 or more (datastores above it)")},
        note="no paper query; VMs are datastore members (one of their disks is on it); "
             "the default threshold 100 is vmtwin's (the paper gives none)",
    ),
    NamedQuery(
        "downtime-impact",
        "Which users are affected if the VMs on network X go down?",
        "4.2.1 impact of downtime",
        "MATCH (n:Network)<-[:member]-(:VM)<-[:uses]-(u:User) WHERE n.uuid = $network OR n.name = $network "
        "RETURN DISTINCT u.name AS user, u.uuid AS uuid ORDER BY uuid",
        {"network": _entity("network")},
        paper='start a=node:names(uuid="X") match a-[:member]-c-[:following]-d '
              'where c.type = "VM" and d.type = "User" return d.name',
        note="DISTINCT added: a user of two VMs on X is one affected user",
    ),
    NamedQuery(
        "disaster-recovery",
        "Which VMs are affected if datastore X and network Y fail together (a converged fabric)?",
        "4.2.2 disaster recovery",
        "MATCH (s:Datastore)<-[:member]-(v:VM)-[:member]->(n:Network) "
        "WHERE (s.uuid = $datastore OR s.name = $datastore) AND (n.uuid = $network OR n.name = $network) "
        "RETURN DISTINCT v.name AS vm, v.uuid AS uuid ORDER BY uuid",
        {"datastore": _entity("datastore"), "network": _entity("network")},
        paper='start a=node:names(uuid="X"),b=node:names(uuid="Y") match a-[:member]-c '
              'where b-[:member]-c and c.type = "VM" return c',
        note="the paper's first form (VMs are members of both groups); its second form, through the "
             "VMDKs, gives the same VMs here because sources add a VM to its disks' datastores",
    ),
    NamedQuery(
        "linked-clone-policy",
        "Which base disks are shared by more than 8 linked clones?",
        "4.2.3 policy enforcement",
        "MATCH (d:VMDK) WITH d, COUNT { MATCH (d)<-[:follow]-(:VM) } AS clones WHERE clones > $max_clones "
        "RETURN d.name AS vmdk, d.uuid AS uuid, clones ORDER BY clones DESC, uuid",
        {"max_clones": Param(int, MAX_LINKED_CLONES, "a clone count, 0 or more (disks above it)")},
        paper='start a=node(*) match a-[:following]-c where a.type = "VM" and c.type = "VMDK" '
              'with c, count(a) as fcount where fcount > 8 return c, fcount order by fcount',
        note="largest first",
    ),
    NamedQuery(
        "cross-cluster-vmdk",
        "Are there VMs that reside in different clusters but share a VMDK?",
        "2 (Figure 1), posed without a query",
        "MATCH (d:VMDK) WHERE COUNT { MATCH (d)<-[:follow]-(:VM) } > 1 "
        "WITH d MATCH (d)<-[:follow]-(:VM)-[:member]->(c:Cluster) WITH d, count(DISTINCT c) AS clusters "
        "WHERE clusters > 1 MATCH (d)<-[:follow]-(v:VM)-[:member]->(c:Cluster) "
        "RETURN DISTINCT v.name AS vm, v.uuid AS uuid, d.name AS vmdk, d.uuid AS vmdk_uuid, c.name AS cluster "
        "ORDER BY uuid, vmdk_uuid, cluster",
        note="every VM on a disk that two or more VMs share from two or more clusters, one row per VM, "
             "disk and cluster; clusters are groups VMs are members of (Sec. 1). Counting clusters per disk "
             "instead of pairing the VMs (Figure 1's VIM-API flow) halves the work at 100k entities",
    ),
    NamedQuery(
        "admin-access",
        "Is there an administrator with access to both datastore X and VM Y?",
        "1, posed without a query",
        "MATCH (u:User)-[a:uses]->(s:Datastore) WHERE a.role = 'admin' AND (s.uuid = $datastore OR s.name = $datastore) "
        "WITH DISTINCT u "
        "MATCH (u)-[b:uses]->(v:VM) WHERE b.role = 'admin' AND (v.uuid = $vm OR v.name = $vm) "
        "RETURN DISTINCT u.name AS user, u.uuid AS uuid ORDER BY uuid",
        {"datastore": _entity("datastore"), "vm": _entity("VM")},
        note="needs permission edges the paper's schema lacks: uses edges with role admin. Two MATCH "
             "clauses: LadybugDB 0.22 answers the one-pattern form (datastore<-uses-user-uses->VM, "
             "each with a role) with users whose admin edge is to another datastore (found by the "
             "networkx comparison)",
    ),
    NamedQuery(
        "multi-array-vms",
        "Which VMs have disks that span multiple storage arrays?",
        "1, posed without a query",
        "MATCH (v:VM)-[:member]->(:Datastore)-[:member]->(a:StorageArray) "
        "WITH DISTINCT v, a WITH v, count(*) AS arrays WHERE arrays > 1 "
        "RETURN v.name AS vm, v.uuid AS uuid, arrays ORDER BY arrays DESC, uuid",
        note="the paper asks how many: the row count",
    ),
    NamedQuery(
        "critical-datastores",
        "Which datastores are most critical (the most VMs and hosts on them)?",
        "1, posed without a query",
        "MATCH (s:Datastore) "
        "WITH s, COUNT { MATCH (s)<-[:member]-(:VM) } AS vms, COUNT { MATCH (s)<-[:member]-(:Host) } AS hosts "
        "RETURN s.name AS datastore, s.uuid AS uuid, vms, hosts, vms + hosts AS dependents "
        "ORDER BY dependents DESC, uuid LIMIT $limit",
        {"limit": Param(int, HOT_SPOT_LIMIT, "a count of datastores, 0 or more")},
        note="critical = VMs plus hosts on it, as the paper's parenthesis says",
    ),
    NamedQuery(
        "vms-on-datastore",
        "Find all VMs in a datastore.",
        "4.2.2 (\"all VMs that share a certain network or datastore\")",
        "MATCH (s:Datastore)<-[:member]-(v:VM) WHERE s.uuid = $datastore OR s.name = $datastore "
        "RETURN DISTINCT v.name AS vm, v.uuid AS uuid ORDER BY uuid",
        {"datastore": _entity("datastore")},
    ),
    NamedQuery(
        "vms-on-network",
        "Find all VMs in a network.",
        "4.2.2 (\"trivially retargeted to a network\")",
        "MATCH (n:Network)<-[:member]-(v:VM) WHERE n.uuid = $network OR n.name = $network "
        "RETURN DISTINCT v.name AS vm, v.uuid AS uuid ORDER BY uuid",
        {"network": _entity("network")},
    ),
    NamedQuery(
        "vms-in-vcenter",
        "Find VMs in vCenter A.",
        "3 (the shorthand command)",
        "MATCH (c:VCenter)-[:follow]->(:Host)-[:follow]->(v:VM) WHERE c.uuid = $vcenter OR c.name = $vcenter "
        "RETURN DISTINCT v.name AS vm, v.uuid AS uuid ORDER BY uuid",
        {"vcenter": _entity("vCenter")},
        note="browse to the vCenter, then its hosts, then their VMs",
    ),
]

QUERIES: dict[str, NamedQuery] = {q.name: q for q in _QUERIES}


def get(name: str) -> NamedQuery:
    try:
        return QUERIES[name]
    except KeyError:
        raise VmtwinError(f"named query: got {name!r}; allowed: {', '.join(QUERIES)}") from None
