"""An independent answer to every named query: plain Python over a networkx multigraph.

Written from each query's question and the schema's edge directions, not from the Cypher, so a
translation mistake in vmtwin.inventory.queries shows up as a difference.
"""

from __future__ import annotations

import networkx as nx


def to_graph(inv) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()
    for uuid, (t, name) in inv.nodes.items():
        g.add_node(uuid, type=t, name=name)
    for rel, src, dst, role in inv.iter_edges():
        g.add_edge(src, dst, key=(rel, role), rel=rel, role=role)
    return g


class Oracle:
    def __init__(self, inv):
        self.g = to_graph(inv)

    # helpers -------------------------------------------------------------------------------
    def typ(self, n):
        return self.g.nodes[n]["type"]

    def name(self, n):
        return self.g.nodes[n]["name"]

    def of(self, t):
        return sorted(n for n in self.g if self.typ(n) == t)

    def out(self, n, rel, t, role=None):
        """Targets of ``rel`` edges out of n with type t (one entry per edge)."""
        return [d for _, d, k in self.g.out_edges(n, keys=True)
                if k[0] == rel and self.typ(d) == t and (role is None or k[1] == role)]

    def into(self, n, rel, t, role=None):
        return [s for s, _, k in self.g.in_edges(n, keys=True)
                if k[0] == rel and self.typ(s) == t and (role is None or k[1] == role)]

    def matches(self, n, key):
        return n == key or self.name(n) == key

    def vms_on_ds(self, s):
        return set(self.into(s, "member", "VM"))

    # the named queries -------------------------------------------------------------------------
    def single_network_hosts(self):
        return [[self.name(h), h, 1] for h in self.of("Host") if len(self.out(h, "member", "Network")) == 1]

    def single_datastore_hosts(self):
        return [[self.name(h), h, 1] for h in self.of("Host") if len(self.out(h, "member", "Datastore")) == 1]

    def dependency_hot_spots(self, limit):
        rows = [(self.g.degree(n), n) for n in self.of("Host") + self.of("VM")]
        rows.sort(key=lambda r: (-r[0], r[1]))
        return [[self.name(n), self.typ(n), n, deg] for deg, n in rows[:limit]]

    def overloaded_datastores(self, min_vmdks):
        rows = [(len(self.into(s, "member", "VMDK")), s) for s in self.of("Datastore")]
        rows = sorted((r for r in rows if r[0] > min_vmdks), key=lambda r: (-r[0], r[1]))
        return [[self.name(s), s, k] for k, s in rows]

    def crowded_datastores(self, min_vms):
        rows = [(len(self.vms_on_ds(s)), s) for s in self.of("Datastore")]
        rows = sorted((r for r in rows if r[0] > min_vms), key=lambda r: (-r[0], r[1]))
        return [[self.name(s), s, k] for k, s in rows]

    def downtime_impact(self, network):
        users = {u for n in self.of("Network") if self.matches(n, network)
                 for v in self.into(n, "member", "VM") for u in self.into(v, "uses", "User")}
        return [[self.name(u), u] for u in sorted(users)]

    def disaster_recovery(self, datastore, network):
        on_ds = {v for s in self.of("Datastore") if self.matches(s, datastore) for v in self.vms_on_ds(s)}
        on_net = {v for n in self.of("Network") if self.matches(n, network) for v in self.into(n, "member", "VM")}
        return [[self.name(v), v] for v in sorted(on_ds & on_net)]

    def linked_clone_policy(self, max_clones):
        rows = [(len(self.into(d, "follow", "VM")), d) for d in self.of("VMDK")]
        rows = sorted((r for r in rows if r[0] > max_clones), key=lambda r: (-r[0], r[1]))
        return [[self.name(d), d, k] for k, d in rows]

    def clusters_of(self, vm):
        return set(self.out(vm, "member", "Cluster"))

    def cross_cluster_vmdk(self):
        """VMs on a disk followed by two or more VMs whose clusters are two or more."""
        rows = set()
        for d in self.of("VMDK"):
            followers = self.into(d, "follow", "VM")
            if len(followers) < 2 or len({c for w in followers for c in self.clusters_of(w)}) < 2:
                continue
            for v in followers:
                for c in self.clusters_of(v):
                    rows.add((self.name(v), v, self.name(d), d, self.name(c)))
        return [list(r) for r in sorted(rows, key=lambda r: (r[1], r[3], r[4]))]

    def admin_access(self, datastore, vm):
        users = {u for u in self.of("User")
                 if any(self.matches(s, datastore) for s in self.out(u, "uses", "Datastore", "admin"))
                 and any(self.matches(v, vm) for v in self.out(u, "uses", "VM", "admin"))}
        return [[self.name(u), u] for u in sorted(users)]

    def multi_array_vms(self):
        rows = []
        for v in self.of("VM"):
            arrays = {a for s in self.out(v, "member", "Datastore") for a in self.out(s, "member", "StorageArray")}
            if len(arrays) > 1:
                rows.append((len(arrays), v))
        rows.sort(key=lambda r: (-r[0], r[1]))
        return [[self.name(v), v, k] for k, v in rows]

    def critical_datastores(self, limit):
        rows = []
        for s in self.of("Datastore"):
            vms, hosts = len(self.vms_on_ds(s)), len(set(self.into(s, "member", "Host")))
            rows.append((vms + hosts, s, vms, hosts))
        rows.sort(key=lambda r: (-r[0], r[1]))
        return [[self.name(s), s, vms, hosts, total] for total, s, vms, hosts in rows[:limit]]

    def vms_on_datastore(self, datastore):
        vms = {v for s in self.of("Datastore") if self.matches(s, datastore) for v in self.vms_on_ds(s)}
        return [[self.name(v), v] for v in sorted(vms)]

    def vms_on_network(self, network):
        vms = {v for n in self.of("Network") if self.matches(n, network) for v in self.into(n, "member", "VM")}
        return [[self.name(v), v] for v in sorted(vms)]

    def vms_in_vcenter(self, vcenter):
        vms = {v for c in self.of("VCenter") if self.matches(c, vcenter)
               for h in self.out(c, "follow", "Host") for v in self.out(h, "follow", "VM")}
        return [[self.name(v), v] for v in sorted(vms)]

    def answer(self, query_name: str, params: dict):
        return getattr(self, query_name.replace("-", "_"))(**params)
