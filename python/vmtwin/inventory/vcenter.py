"""Read a live vCenter (or ESX host) through the VIM API with pyvmomi into an inventory.

The walk is the paper's "VIM API records the inventory" step: from the root folder to every
datacenter; through its host folder to clusters (``ClusterComputeResource``) and standalone
hosts (``ComputeResource``); from each host to its networks, datastores and VMs; from each VM to
its networks and, for every virtual disk, the whole backing chain (``backing.parent``), so a
linked clone follows its own delta disk and the base disk it shares. Each disk file is a VMDK
node keyed by its datastore path and joins the datastore its backing names. Administrator
permissions (role -1) that apply to a VM or datastore, granted on it or inherited from a folder
above (``AuthorizationManager.RetrieveEntityPermissions``), become ``uses`` edges with role
``admin`` from a ``User`` node per principal (groups are not expanded); the VIM API has no notion of a user *using* a
VM, so there are no role ``user`` edges, nor storage arrays.

Nodes are keyed by the vCenter's instance UUID and the managed object id, so two vCenters' ids
never collide. Properties are read one attribute at a time, which is fine for an inventory of
hundreds of VMs (and vcsim); a very large vCenter would want a PropertyCollector.
"""

from __future__ import annotations

from vmtwin.exceptions import VmtwinError
from vmtwin.inventory.model import Inventory

ADMIN_ROLE_ID = -1  # vCenter's built-in Administrator role


def vcenter_inventory(host: str, user: str, password: str, *, port: int = 443,
                      verify_tls: bool = True) -> Inventory:
    """Connect, walk the inventory, disconnect."""
    from pyVim.connect import Disconnect, SmartConnect

    try:
        si = SmartConnect(host=host, user=user, pwd=password, port=port,
                          disableSslCertValidation=not verify_tls)
    except Exception as e:  # pyvmomi raises socket, SSL and vim.fault errors alike
        raise VmtwinError(f"vcenter {host}:{port}: cannot log in as {user!r} ({type(e).__name__}: "
                          f"{getattr(e, 'msg', e)}); allowed: a reachable vCenter and valid credentials") from None
    try:
        return _walk(si.RetrieveContent(), host, f"vcenter {host}:{port}")
    finally:
        Disconnect(si)


def _walk(content, name: str, source: str) -> Inventory:
    from pyVmomi import vim

    inv = Inventory(source=source)
    vc_id = content.about.instanceUuid
    vc = inv.add_node("VCenter", f"vc:{vc_id}", name)

    def key(prefix: str, mo) -> str:
        return f"{prefix}:{vc_id}/{mo._moId}"

    key.vc_id = vc_id  # disk files are keyed by path, not by a managed object

    admin_targets: dict = {}  # node key -> managed object (a datastore once, however many hosts mount it)
    for dc in _children(content.rootFolder, vim.Datacenter):
        dc_key = inv.add_node("Datacenter", key("dc", dc), dc.name)
        inv.add_edge("member", dc_key, vc)
        for cr in _children(dc.hostFolder, vim.ComputeResource):
            group = dc_key
            if isinstance(cr, vim.ClusterComputeResource):
                group = inv.add_node("Cluster", key("cluster", cr), cr.name)
                inv.add_edge("member", group, dc_key)
            for h in cr.host:
                for entity, prefix in _host(inv, key, vc, group, h):
                    admin_targets[key(prefix, entity)] = entity
    am = content.authorizationManager
    for target, entity in admin_targets.items():
        # inherited too: an Administrator granted on a folder above has access to what is below
        for perm in am.RetrieveEntityPermissions(entity=entity, inherited=True):
            if perm.roleId == ADMIN_ROLE_ID and not perm.group:
                u = inv.add_node("User", f"user:{vc_id}/{perm.principal}", perm.principal)
                inv.add_edge("uses", u, target, "admin")
    return inv


def _children(folder, kind):
    """Objects of ``kind`` under a folder, through nested folders, in the server's order."""
    from pyVmomi import vim

    for child in folder.childEntity:
        if isinstance(child, kind):
            yield child
        elif isinstance(child, vim.Folder):
            yield from _children(child, kind)


def _host(inv: Inventory, key, vc: str, group: str, h) -> list:
    """Add a host, its groups, VMs and disks; return the (entity, key prefix) pairs whose
    permissions are read (its VMs and datastores)."""
    from pyVmomi import vim

    targets = [(ds, "ds") for ds in h.datastore]
    host = inv.add_node("Host", key("host", h), h.name)
    inv.add_edge("follow", vc, host)
    inv.add_edge("member", host, group)
    for net in h.network:
        inv.add_edge("member", host, inv.add_node("Network", key("net", net), net.name))
    for ds in h.datastore:
        inv.add_edge("member", host, inv.add_node("Datastore", key("ds", ds), ds.name))
    for v in h.vm:
        vm = inv.add_node("VM", key("vm", v), v.name)
        inv.place_vm(host, vm, group if inv.nodes[group][0] == "Cluster" else None)
        targets.append((v, "vm"))
        for net in v.network:
            inv.add_edge("member", vm, inv.add_node("Network", key("net", net), net.name))
        if v.config is None:  # an inaccessible VM has no configuration to read
            continue
        for dev in v.config.hardware.device:
            if not isinstance(dev, vim.vm.device.VirtualDisk):
                continue
            backing = dev.backing
            while backing is not None and getattr(backing, "fileName", None):
                disk = inv.add_node("VMDK", f"vmdk:{key.vc_id}/{backing.fileName}", backing.fileName)
                ds = None if backing.datastore is None else inv.add_node(
                    "Datastore", key("ds", backing.datastore), backing.datastore.name)
                inv.place_disk(vm, disk, ds)
                backing = getattr(backing, "parent", None)
    return targets
