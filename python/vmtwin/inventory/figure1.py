"""The paper's Figure 1 inventory: two clusters, one host and two VMs each, and a base disk
("VMDK") shared by the linked clones V2 (cluster 1) and V3 (cluster 2).

The figure shows only clusters, hosts, VMs and the shared VMDK; the vCenter, the datacenter,
each VM's own disk, one datastore and one network are added so that every relationship of the
schema is present. "Are there VMs in different clusters sharing a VMDK?" answers {V2, V3}.
"""

from __future__ import annotations

from vmtwin.inventory.model import Inventory


def figure1_inventory() -> Inventory:
    inv = Inventory(source="figure1")
    inv.add_node("VCenter", "vc", "vCenter")
    inv.add_node("Datacenter", "dc", "DC")
    inv.add_edge("member", "dc", "vc")
    inv.add_node("Datastore", "ds", "DS")
    inv.add_node("Network", "net", "VM Network")
    inv.add_node("VMDK", "vmdk", "VMDK")  # the shared base disk
    for c in (1, 2):
        inv.add_node("Cluster", f"c{c}", f"Cluster {c}")
        inv.add_edge("member", f"c{c}", "dc")
        inv.add_node("Host", f"h{c}", f"H{c}")
        inv.add_edge("follow", "vc", f"h{c}")
        for rel, group in (("member", f"c{c}"), ("member", "ds"), ("member", "net")):
            inv.add_edge(rel, f"h{c}", group)
        for v in (2 * c - 1, 2 * c):
            inv.add_node("VM", f"v{v}", f"V{v}")
            inv.place_vm(f"h{c}", f"v{v}", f"c{c}")
            inv.add_edge("member", f"v{v}", "net")
            inv.add_node("VMDK", f"v{v}-disk", f"V{v}.vmdk")  # each VM's own (delta) disk
            inv.place_disk(f"v{v}", f"v{v}-disk", "ds")
    for v in ("v2", "v3"):
        inv.place_disk(v, "vmdk", "ds")
    return inv
