"""A live vCenter through pyvmomi: govmomi's simulator vcsim on 127.0.0.1, installed by `make vcsim`.

Skipped when vcsim is not installed, unless VMTWIN_REQUIRE_VCSIM=1 (then it fails).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from vmtwin.inventory.queries import QUERIES
from vmtwin.inventory.store import open_graph, write_graph
from vmtwin.inventory.vcenter import vcenter_inventory

REPO = Path(__file__).resolve().parents[3]
# the simulated inventory: vcsim's flags, and what they imply
CLUSTERS, HOSTS_PER_CLUSTER, STANDALONE, VMS_PER_POOL, LOCAL_DS, PORT_GROUPS = 2, 2, 1, 2, 2, 2
FLAGS = ["-dc", "1", "-cluster", str(CLUSTERS), "-host", str(HOSTS_PER_CLUSTER), "-standalone-host",
         str(STANDALONE), "-vm", str(VMS_PER_POOL), "-ds", str(LOCAL_DS), "-pg", str(PORT_GROUPS)]


def find_vcsim() -> str | None:
    local = REPO / ".venv" / "bin" / "vcsim"
    return str(local) if local.is_file() else shutil.which("vcsim")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vcsim():
    exe = find_vcsim()
    if exe is None:
        if os.environ.get("VMTWIN_REQUIRE_VCSIM") == "1":
            pytest.fail("vcsim not found (in .venv/bin or on PATH) and VMTWIN_REQUIRE_VCSIM=1: run `make vcsim`")
        pytest.skip("vcsim not installed (`make vcsim` installs it with Go); set VMTWIN_REQUIRE_VCSIM=1 to fail instead")
    port = free_port()
    proc = subprocess.Popen([exe, "-l", f"127.0.0.1:{port}", *FLAGS], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"vcsim did not start on 127.0.0.1:{port}")
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def connect(port):
    from pyVim.connect import SmartConnect

    return SmartConnect(host="127.0.0.1", user="user", pwd="pass", port=port, disableSslCertValidation=True)


def wait(task):
    while task.info.state in ("queued", "running"):
        time.sleep(0.05)
    assert task.info.state == "success", task.info.error


def test_walk_matches_the_simulators_configuration(vcsim):
    c = vcenter_inventory("127.0.0.1", "user", "pass", port=vcsim, verify_tls=False).counts()
    assert c["Datacenter"] == 1 and c["Cluster"] == CLUSTERS
    assert c["Host"] == CLUSTERS * HOSTS_PER_CLUSTER + STANDALONE
    assert c["VM"] == (CLUSTERS + STANDALONE) * VMS_PER_POOL  # one resource pool per compute resource
    assert c["VMDK"] == c["VM"]  # one disk each
    assert c["Datastore"] == LOCAL_DS


def test_shared_disk_across_clusters_and_admin_access(vcsim, tmp_path):
    """Attach one cluster's VM disk to a VM of the other cluster and grant a user admin rights,
    through the VIM API; the graph must find both, and agree with the API's own runtime.host."""
    from pyVim.connect import Disconnect
    from pyVmomi import vim

    si = connect(vcsim)
    try:
        content = si.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
        vms = sorted(view.view, key=lambda v: v.name)
        cluster_of = {v.name: v.runtime.host.parent.name for v in vms
                      if isinstance(v.runtime.host.parent, vim.ClusterComputeResource)}
        a = next(v for v in vms if v.name in cluster_of)
        b = next(v for v in vms if v.name in cluster_of and cluster_of[v.name] != cluster_of[a.name])
        disk = next(d for d in a.config.hardware.device if isinstance(d, vim.vm.device.VirtualDisk))
        shared = vim.vm.device.VirtualDisk(
            key=-1, controllerKey=disk.controllerKey, unitNumber=5, capacityInKB=disk.capacityInKB,
            backing=vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
                fileName=disk.backing.fileName, diskMode="persistent", datastore=disk.backing.datastore))
        wait(b.ReconfigVM_Task(vim.vm.ConfigSpec(deviceChange=[
            vim.vm.device.VirtualDeviceSpec(operation="add", device=shared)])))
        # vcsim checks a session's rights on the entity's own permissions once it has any: keep ours
        grant = [vim.AuthorizationManager.Permission(principal=who, group=False, roleId=-1, propagate=False)
                 for who in ("LAB\\alice", "user")]
        content.authorizationManager.SetEntityPermissions(entity=a, permission=grant)
        content.authorizationManager.SetEntityPermissions(entity=disk.backing.datastore, permission=grant)
        a_name, b_name, path, ds_name = a.name, b.name, disk.backing.fileName, disk.backing.datastore.name
    finally:
        Disconnect(si)

    folder = tmp_path / "graph"
    write_graph(vcenter_inventory("127.0.0.1", "user", "pass", port=vcsim, verify_tls=False), folder)
    with open_graph(folder) as g:
        placed = g.query("MATCH (c:Cluster)<-[:member]-(:Host)-[:follow]->(v:VM) RETURN v.name, c.name").rows
        assert dict(placed) == cluster_of
        q = QUERIES["cross-cluster-vmdk"]
        rows = g.query(q.cypher, q.bind({})).records()
        assert {r["vm"] for r in rows} == {a_name, b_name}
        assert {r["vmdk"] for r in rows} == {path}
        q = QUERIES["admin-access"]
        users = g.query(q.cypher, q.bind({"datastore": ds_name, "vm": a_name})).records()
        assert "LAB\\alice" in {u["user"] for u in users}
        users = g.query(q.cypher, q.bind({"datastore": ds_name, "vm": b_name})).records()
        assert "LAB\\alice" not in {u["user"] for u in users}


def test_unreachable_vcenter_is_a_clear_error():
    from vmtwin.exceptions import VmtwinError

    with pytest.raises(VmtwinError, match=r"vcenter 127.0.0.1:\d+: cannot log in"):
        vcenter_inventory("127.0.0.1", "user", "pass", port=free_port(), verify_tls=False)
