"""A seeded synthetic inventory with every pattern the paper's queries look for.

The shape follows a vSphere estate: vCenters of up to ``hosts_per_vcenter`` hosts, each with
datacenters of clusters of ``hosts_per_cluster`` hosts. Per datacenter there is a pool of
datastores on a few storage arrays and a set of port-group networks; each cluster mounts a few
datastores and carries a few networks, and its hosts join them. VMs (about ``vms_per_host`` per
host) have their own disks on their host's datastores and join one or two of its networks.

So that no query returns an empty or trivial answer, the generator plants what the paper hunts:

- **linked-clone families** (``linked_clone_fraction`` of the VMs): clones that all follow one
  base disk, family sizes geometric with mean ``clone_family_mean``, so some exceed the paper's
  limit of 8; a ``cross_cluster_family_fraction`` of the families spread over clusters (the
  Figure 1 anomaly);
- **single points of failure**: ``single_network_fraction`` of the hosts join one network only
  (a single NIC), ``single_datastore_fraction`` mount one datastore only;
- **overloaded datastores**: ``overloaded_fraction`` of the datastores are ``overload_weight``
  times as likely to be chosen, both by clusters and for disks, so at 100k entities they hold
  more than the paper's 500 VMDKs while the rest stay near ``vmdks_per_datastore``;
- **users**: one human per ``vms_per_user`` VMs, each VM used by one to three of them, and
  ``admin_fraction`` of the users holding admin rights on some datastores and VMs;
- **multi-array VMs**: a VM's disks land on any of its host's datastores, which sit on
  different arrays.

``entities`` sets the size: the host count is ``entities / ENTITIES_PER_HOST`` and everything
else follows, so the total is near but not exactly ``entities`` (the manifest records it).
The same spec and seed give the same inventory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vmtwin.exceptions import scenario_error
from vmtwin.inventory.model import Inventory

#: entities per host on average at the defaults (host, its VMs, their disks, base disks, users,
#: and a share of the groups), measured on the generator's output; sets the host count
ENTITIES_PER_HOST = 40.8
MIN_ENTITIES, MAX_ENTITIES = 100, 2_000_000


@dataclass(frozen=True)
class SyntheticSpec:
    entities: int = 10_000
    seed: int = 0
    hosts_per_vcenter: int = 1000      # well below vSphere 8's 2,500 per vCenter
    clusters_per_datacenter: int = 8
    hosts_per_cluster: int = 16
    vms_per_host: float = 15.0          # mean, Poisson
    extra_disk_mean: float = 0.5        # disks beyond the first, Poisson
    linked_clone_fraction: float = 0.3
    clone_family_mean: float = 6.0      # geometric; the paper's policy limit is 8
    cross_cluster_family_fraction: float = 0.05
    single_network_fraction: float = 0.05
    single_datastore_fraction: float = 0.05
    networks_per_cluster: int = 3
    datastores_per_cluster: int = 4
    vmdks_per_datastore: float = 200.0  # sizes each datacenter's datastore pool
    overloaded_fraction: float = 0.1
    overload_weight: float = 8.0
    datastores_per_array: int = 6
    vms_per_user: int = 10
    admin_fraction: float = 0.05

    def check(self) -> None:
        if not MIN_ENTITIES <= self.entities <= MAX_ENTITIES:
            raise scenario_error("synthetic.entities", self.entities,
                                 f"an integer from {MIN_ENTITIES} to {MAX_ENTITIES}")
        if self.seed < 0:
            raise scenario_error("synthetic.seed", self.seed, "an integer, 0 or more")
        for name in ("linked_clone_fraction", "cross_cluster_family_fraction", "single_network_fraction",
                     "single_datastore_fraction", "overloaded_fraction", "admin_fraction"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise scenario_error(f"synthetic.{name}", v, "a fraction from 0 to 1")


def synthetic_inventory(spec: SyntheticSpec | None = None, **overrides) -> Inventory:
    """Generate an inventory; ``synthetic_inventory(entities=1000, seed=3)`` is the short form."""
    spec = spec or SyntheticSpec(**overrides)
    spec.check()
    rng = np.random.default_rng(spec.seed)
    inv = Inventory(source=f"synthetic entities={spec.entities} seed={spec.seed}")
    n_hosts = max(2, round(spec.entities / ENTITIES_PER_HOST))
    counter: dict[str, int] = {}

    def node(type_: str, prefix: str) -> str:
        i = counter.get(prefix, 0)
        counter[prefix] = i + 1
        return inv.add_node(type_, f"{prefix}-{i}", f"{prefix}{i:06d}")

    hosts_left = n_hosts
    all_vms: list[tuple[str, str, str, str]] = []  # (vm, host, cluster, datastore of its first disk)
    while hosts_left > 0:
        vc = node("VCenter", "vc")
        vc_hosts = min(hosts_left, spec.hosts_per_vcenter)
        hosts_left -= vc_hosts
        per_dc = spec.clusters_per_datacenter * spec.hosts_per_cluster
        while vc_hosts > 0:
            dc_hosts = min(vc_hosts, per_dc)
            vc_hosts -= dc_hosts
            all_vms += _datacenter(inv, rng, spec, node, vc, dc_hosts)
    _linked_clones(inv, rng, spec, node, all_vms)
    _users(inv, rng, spec, node, [v[0] for v in all_vms])
    return inv


def _weighted(rng: np.random.Generator, items: list[str], weights: np.ndarray, k: int) -> list[str]:
    k = min(k, len(items))
    idx = rng.choice(len(items), size=k, replace=False, p=weights / weights.sum())
    return [items[i] for i in sorted(idx)]


def _datacenter(inv, rng, spec, node, vc, n_hosts) -> list[tuple[str, str, str, str]]:
    dc = node("Datacenter", "dc")
    inv.add_edge("member", dc, vc)
    n_clusters = -(-n_hosts // spec.hosts_per_cluster)
    expected_vmdks = n_hosts * spec.vms_per_host * (1 + spec.extra_disk_mean)
    n_ds = max(2, round(expected_vmdks / spec.vmdks_per_datastore))
    datastores = [node("Datastore", "ds") for _ in range(n_ds)]
    weight = np.where(rng.random(n_ds) < spec.overloaded_fraction, spec.overload_weight, 1.0)
    arrays = [node("StorageArray", "array") for _ in range(max(1, n_ds // spec.datastores_per_array))]
    for ds in datastores:
        inv.add_edge("member", ds, arrays[rng.integers(len(arrays))])
    networks = [node("Network", "net") for _ in range(spec.networks_per_cluster + n_clusters)]
    ds_weight = dict(zip(datastores, weight))
    vms = []
    for c in range(n_clusters):
        cl = node("Cluster", "cluster")
        inv.add_edge("member", cl, dc)
        cl_ds = _weighted(rng, datastores, weight, spec.datastores_per_cluster)
        cl_nets = _weighted(rng, networks, np.ones(len(networks)), spec.networks_per_cluster)
        for _ in range(min(spec.hosts_per_cluster, n_hosts - c * spec.hosts_per_cluster)):
            h = node("Host", "host")
            inv.add_edge("follow", vc, h)
            inv.add_edge("member", h, cl)
            h_nets = cl_nets[:1] if rng.random() < spec.single_network_fraction else cl_nets
            h_ds = [cl_ds[rng.integers(len(cl_ds))]] if rng.random() < spec.single_datastore_fraction else cl_ds
            for g in h_nets + h_ds:
                inv.add_edge("member", h, g)
            w = np.array([ds_weight[d] for d in h_ds])
            for _ in range(rng.poisson(spec.vms_per_host)):
                v = node("VM", "vm")
                inv.place_vm(h, v, cl)
                for net in _weighted(rng, h_nets, np.ones(len(h_nets)), 1 + (rng.random() < 0.2)):
                    inv.add_edge("member", v, net)
                placed = []
                for _ in range(1 + rng.poisson(spec.extra_disk_mean)):
                    placed.append(h_ds[rng.choice(len(h_ds), p=w / w.sum())])
                    inv.place_disk(v, node("VMDK", "vmdk"), placed[-1])
                vms.append((v, h, cl, placed[0]))
    return vms


def _linked_clones(inv, rng, spec, node, vms) -> None:
    """Group a fraction of the VMs into families that follow one base disk each."""
    n = round(len(vms) * spec.linked_clone_fraction)
    chosen = sorted(rng.choice(len(vms), size=n, replace=False)) if n else []
    by_cluster: dict[str, list[int]] = {}
    for i in chosen:
        by_cluster.setdefault(vms[i][2], []).append(i)
    pool = [i for members in by_cluster.values() for i in members]  # cluster-contiguous
    i = 0
    while i < len(pool):
        size = 2 + rng.geometric(1 / max(spec.clone_family_mean - 1, 1))
        if rng.random() < spec.cross_cluster_family_fraction:
            family = [pool[j] for j in rng.choice(len(pool), size=min(size, len(pool)), replace=False)]
        else:
            family = pool[i:i + size]
        i += size
        if len(family) < 2:
            continue
        base = node("VMDK", "base")  # on the datastore of the first clone's own disk
        for j in family:
            inv.place_disk(vms[j][0], base, vms[family[0]][3])


def _users(inv, rng, spec, node, vms) -> None:
    users = [node("User", "user") for _ in range(max(1, len(vms) // spec.vms_per_user))]
    for v in vms:
        for u in rng.choice(len(users), size=min(len(users), 1 + rng.binomial(2, 0.3)), replace=False):
            inv.add_edge("uses", users[u], v, "user")
    datastores = inv.of_type("Datastore")
    for u in users:
        if rng.random() < spec.admin_fraction:
            for d in rng.choice(len(datastores), size=min(3, len(datastores)), replace=False):
                inv.add_edge("uses", u, datastores[d], "admin")
            for v in rng.choice(len(vms), size=min(20, len(vms)), replace=False):
                inv.add_edge("uses", u, vms[v], "admin")
