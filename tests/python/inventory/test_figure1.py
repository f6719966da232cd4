"""The paper's Figure 1 inventory and hand-worked answers on it."""

from __future__ import annotations

import pytest

from vmtwin.inventory.figure1 import figure1_inventory
from vmtwin.inventory.queries import QUERIES
from vmtwin.inventory.store import open_graph, write_graph


@pytest.fixture(scope="module")
def fig1(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fig1") / "graph"
    write_graph(figure1_inventory(), folder)
    with open_graph(folder) as g:
        yield g


def run(g, name, **params):
    q = QUERIES[name]
    return g.query(q.cypher, q.bind({k: str(v) for k, v in params.items()})).records()


def test_vms_in_different_clusters_sharing_a_vmdk_are_v2_and_v3(fig1):
    rows = run(fig1, "cross-cluster-vmdk")
    assert {r["vm"] for r in rows} == {"V2", "V3"}
    assert {r["vmdk"] for r in rows} == {"VMDK"}
    assert {(r["vm"], r["cluster"]) for r in rows} == {("V2", "Cluster 1"), ("V3", "Cluster 2")}


def test_the_shared_disk_is_not_in_breach_of_the_clone_policy_until_the_limit_is_one(fig1):
    assert run(fig1, "linked-clone-policy") == []  # 2 clones <= 8
    assert run(fig1, "linked-clone-policy", max_clones=1) == [{"vmdk": "VMDK", "uuid": "vmdk", "clones": 2}]


def test_hand_worked_answers(fig1):
    # a host: vCenter follows it, it follows 2 VMs, joins its cluster, the datastore, the network = 6;
    # V2: its host, its own disk and the base disk, the network, the datastore, its cluster = 6; V1: 5
    hot = run(fig1, "dependency-hot-spots", limit=4)
    assert [(r["entity"], r["dependencies"]) for r in hot] == [("H1", 6), ("H2", 6), ("V2", 6), ("V3", 6)]
    assert [r["host"] for r in run(fig1, "single-network-hosts")] == ["H1", "H2"]
    assert run(fig1, "overloaded-datastores", min_vmdks=4) == [{"datastore": "DS", "uuid": "ds", "vmdks": 5}]
    assert run(fig1, "overloaded-datastores", min_vmdks=5) == []
    crit = run(fig1, "critical-datastores")
    assert [(r["vms"], r["hosts"], r["dependents"]) for r in crit] == [(4, 2, 6)]
    assert [r["vm"] for r in run(fig1, "vms-in-vcenter", vcenter="vCenter")] == ["V1", "V2", "V3", "V4"]
    assert run(fig1, "vms-in-vcenter", vcenter="another vCenter") == []
    assert [r["vm"] for r in run(fig1, "disaster-recovery", datastore="DS", network="net")] == ["V1", "V2", "V3", "V4"]
    assert run(fig1, "downtime-impact", network="VM Network") == []  # the figure has no users
