"""RVTools CSV sheets: a hand-written export read into the graph, answers worked out by hand,
and bad sheets refused with the file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vmtwin.exceptions import VmtwinError
from vmtwin.inventory.queries import QUERIES
from vmtwin.inventory.rvtools import rvtools_inventory
from vmtwin.inventory.store import open_graph, write_graph

EXPORT = Path(__file__).parent / "data" / "rvtools"


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rv") / "graph"
    write_graph(rvtools_inventory(EXPORT, ignore_extra_columns=True), folder)
    with open_graph(folder) as g:
        yield g


def names(g, name, col, **params):
    q = QUERIES[name]
    return [r[col] for r in g.query(q.cypher, q.bind(params)).records()]


def test_counts():
    c = rvtools_inventory(EXPORT, ignore_extra_columns=True).counts()
    assert (c["VCenter"], c["Datacenter"], c["Cluster"], c["Host"], c["VM"]) == (1, 1, 2, 3, 4)
    assert (c["VMDK"], c["Datastore"], c["Network"]) == (5, 3, 3)  # the quorum disk once


def test_hand_worked_answers(graph):
    # esx02 carries only "Storage, iSCSI" (both its VMs use it); esx03 mounts only ds-slow
    assert names(graph, "single-network-hosts", "host") == ["esx02.lab"]
    assert names(graph, "single-datastore-hosts", "host") == ["esx03.lab"]
    # the quorum disk is shared by web02 (Prod) and db01 (Test)
    assert sorted(names(graph, "cross-cluster-vmdk", "vm")) == ["db01", "web02"]
    assert names(graph, "linked-clone-policy", "vmdk", max_clones="1") == ["[ds-shared] quorum/quorum.vmdk"]
    assert names(graph, "vms-on-datastore", "vm", datastore="ds-slow") == ["db01", "db02"]
    assert names(graph, "vms-on-network", "vm", network="VM Network") == ["web01", "web02"]
    assert names(graph, "disaster-recovery", "vm", datastore="ds-shared", network="Backup") == ["web02"]
    assert names(graph, "vms-in-vcenter", "vm", vcenter="vc01.lab") == ["web01", "web02", "db01", "db02"]  # uuid order


def copy_export(tmp_path) -> Path:
    dst = tmp_path / "export"
    shutil.copytree(EXPORT, dst)
    return dst


def test_unknown_column_is_refused_by_default():
    with pytest.raises(VmtwinError, match=r"RVTools_tabvInfo.csv:1: unknown column 'Powerstate' in sheet vInfo"):
        rvtools_inventory(EXPORT)


@pytest.mark.parametrize("sheet, line, edit, message", [
    ("vDisk", 3, lambda t: t.replace("[ds-fast] web02/web02.vmdk", "ds-fast/web02.vmdk"),
     r"RVTools_tabvDisk.csv:3: column 'Path' is 'ds-fast/web02.vmdk'"),
    ("vInfo", 3, lambda t: t.replace("web02,poweredOn,2,", "web02,poweredOn,2,extra,"),
     r"RVTools_tabvInfo.csv:3: got 12 fields; allowed: 11"),
    ("vInfo", 4, lambda t: t.replace('"Storage, iSCSI",,esx02.lab,Test,DC1,4201a1b2-0003', '"Storage, iSCSI,,esx02'),
     r"RVTools_tabvInfo.csv:\d+: malformed CSV"),
    ("vHost", 1, lambda t: t.replace("Host,", "Hots,", 1),
     r"RVTools_tabvHost.csv:1: missing column 'Host' in sheet vHost"),
    ("vNetwork", 2, lambda t: t.replace("web01,poweredOn,Network adapter 1,VM Network,esx01.lab,4201a1b2-0001",
                                        "web09,poweredOn,Network adapter 1,VM Network,esx01.lab,4201a1b2-0009"),
     r"RVTools_tabvNetwork.csv:2: VM 'web09' is not in vInfo"),
    ("vDatastore", 2, lambda t: t.replace("ds-fast,1048576,1,esx01.lab", "ds-fast,1048576,1,esx09.lab"),
     r"RVTools_tabvDatastore.csv:2: column 'Hosts' names host 'esx09.lab'"),
    ("vInfo", 2, lambda t: t.replace("web01,poweredOn,2,4096,VM Network,,esx01.lab", "web01,poweredOn,2,4096,VM Network,,"),
     r"RVTools_tabvInfo.csv:2: column 'Host' is empty"),
])
def test_bad_sheets_name_file_and_line(tmp_path, sheet, line, edit, message):
    export = copy_export(tmp_path)
    path = export / f"RVTools_tab{sheet}.csv"
    path.write_text(edit(path.read_text()))
    with pytest.raises(VmtwinError, match=message):
        rvtools_inventory(export, ignore_extra_columns=True)
