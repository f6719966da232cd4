"""Read an RVTools export saved as CSV files (one per sheet) into an inventory.

RVTools (Dell's free vSphere inventory tool) writes one sheet per object kind; exported to CSV
(``RVTools.exe -c ExportAll2csv``) each lands in ``RVTools_tab<sheet>.csv``; a file named
``<sheet>.csv`` is accepted too. Five sheets are read, ``vInfo`` required, the rest optional:

==============  ============================================================================
sheet           columns read (required in bold)
==============  ============================================================================
``vInfo``       **VM**, **Host**, Cluster, Datacenter, VI SDK Server, VM UUID, Network #1 ...
``vDisk``       **VM**, **Path** (``[datastore] folder/file.vmdk``), Disk, VM UUID
``vHost``       **Host**, Cluster, Datacenter, VI SDK Server
``vDatastore``  **Name**, Hosts (the host names that mount it, comma-separated), VI SDK Server
``vNetwork``    **VM**, **Network**, Host, VM UUID, VI SDK Server
==============  ============================================================================

What the sheets do not hold is not invented: a host joins the networks its VMs' NICs use
(vNetwork and vInfo's Network columns; RVTools' vSwitch/vPort sheets are not read), a VMDK is
identified by its path (two VMs listing the same path share the disk; RVTools lists only the top
of a linked clone's disk chain, so base disks shared by linked clones are not visible in an
export), and there are no users or storage arrays.

A column not in the table is an error unless ``ignore_extra_columns`` is set (a full RVTools
export has dozens more than vmtwin reads), so that a misspelt column is never silently
dropped. Errors name the file and line.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from vmtwin.exceptions import VmtwinError
from vmtwin.inventory.model import Inventory

SHEETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # sheet: (required columns, optional columns)
    "vInfo": (("VM", "Host"), ("Cluster", "Datacenter", "VI SDK Server", "VM UUID")),
    "vDisk": (("VM", "Path"), ("Disk", "VM UUID", "VI SDK Server")),
    "vHost": (("Host",), ("Cluster", "Datacenter", "VI SDK Server")),
    "vDatastore": (("Name",), ("Hosts", "VI SDK Server")),
    "vNetwork": (("VM", "Network"), ("Host", "VM UUID", "VI SDK Server")),
}
_NETWORK_COLUMN = re.compile(r"Network #\d+$")
_DISK_PATH = re.compile(r"^\[(?P<ds>[^\]]+)\]\s*\S")
DEFAULT_VCENTER = "vcenter"


def find_sheet(folder: Path, sheet: str) -> Path | None:
    wanted = {f"{sheet}.csv".lower(), f"rvtools_tab{sheet}.csv".lower()}
    hits = sorted(p for p in folder.iterdir() if p.name.lower() in wanted)
    if len(hits) > 1:
        raise VmtwinError(f"{folder}: both {hits[0].name} and {hits[1].name} hold sheet {sheet}; allowed: one")
    return hits[0] if hits else None


def read_sheet(path: Path, sheet: str, ignore_extra_columns: bool = False) -> list[tuple[int, dict[str, str]]]:
    """Rows of one sheet as ``(line number, {column: value})``, the columns checked."""
    required, optional = SHEETS[sheet]
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise VmtwinError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); allowed: a CSV file") from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise VmtwinError(f"{path}:1: empty file; allowed: a CSV header line with columns {', '.join(required)}")
    delimiter = ";" if lines[0].count(";") > lines[0].count(",") else ","
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = [h.strip() for h in next(reader)]
        known = set(required) | set(optional)
        for i, col in enumerate(header):
            if col in header[:i]:
                raise VmtwinError(f"{path}:1: column {col!r} appears twice; allowed: each column once")
            if col not in known and not (sheet == "vInfo" and _NETWORK_COLUMN.match(col)) and not ignore_extra_columns:
                allowed = ", ".join([*required, *optional] + (["Network #N"] if sheet == "vInfo" else []))
                raise VmtwinError(f"{path}:1: unknown column {col!r} in sheet {sheet}; allowed: {allowed} "
                                  "(or --ignore-extra-columns for a full RVTools export)")
        missing = [c for c in required if c not in header]
        if missing:
            raise VmtwinError(f"{path}:1: missing column {missing[0]!r} in sheet {sheet}; "
                              f"allowed: a header with {', '.join(required)}")
        rows = []
        for fields in reader:
            line = reader.line_num
            if not fields or all(not f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                raise VmtwinError(f"{path}:{line}: got {len(fields)} fields; allowed: {len(header)} (the header's)")
            row = {h: f.strip() for h, f in zip(header, fields)}
            for col in required:
                if not row[col]:
                    raise VmtwinError(f"{path}:{line}: column {col!r} is empty; allowed: a non-empty value")
            rows.append((line, row))
    except csv.Error as e:
        raise VmtwinError(f"{path}:{reader.line_num}: malformed CSV ({e}); allowed: RFC 4180 CSV") from None
    return rows


def rvtools_inventory(folder: str | Path, *, ignore_extra_columns: bool = False) -> Inventory:
    """Read the sheets of an RVTools CSV export folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder; allowed: a folder of RVTools CSV sheets")
    paths = {s: find_sheet(folder, s) for s in SHEETS}
    if paths["vInfo"] is None:
        raise FileNotFoundError(f"{folder}: no vInfo sheet; allowed: a folder with vInfo.csv or RVTools_tabvInfo.csv")
    sheets = {s: read_sheet(p, s, ignore_extra_columns) if p else [] for s, p in paths.items()}
    inv = Inventory(source=f"rvtools {folder} ({', '.join(s for s, p in paths.items() if p)})")
    b = _Builder(inv)
    for _, r in sheets["vHost"]:
        b.host(r)
    vm_of: dict[tuple[str, str], str] = {}
    for line, r in sheets["vInfo"]:
        vc = b.vcenter(r)
        vm = b.vm(r, vc, paths["vInfo"], line)
        vm_of[(vc, r["VM"])] = vm
        host = b.host(r)
        b.host_of[vm] = host
        inv.place_vm(host, vm, b.cluster_of.get(host))
        for col, value in r.items():
            if _NETWORK_COLUMN.match(col) and value:
                b.network(vc, value, vm, host)
    for line, r in sheets["vNetwork"]:
        vc = b.vcenter(r)
        vm = b.lookup(vm_of, vc, r, paths["vNetwork"], line)
        host = b.host_of.get(vm)
        b.network(vc, r["Network"], vm, host)
    for line, r in sheets["vDisk"]:
        vc = b.vcenter(r)
        vm = b.lookup(vm_of, vc, r, paths["vDisk"], line)
        m = _DISK_PATH.match(r["Path"])
        if not m:
            raise VmtwinError(f"{paths['vDisk']}:{line}: column 'Path' is {r['Path']!r}; "
                              "allowed: a datastore path such as '[datastore1] vm/vm.vmdk'")
        disk = inv.add_node("VMDK", f"vmdk:{vc}/{r['Path']}", r["Path"])
        inv.place_disk(vm, disk, b.datastore(vc, m["ds"]))
    for line, r in sheets["vDatastore"]:
        vc = b.vcenter(r)
        ds = b.datastore(vc, r["Name"])
        for name in filter(None, (h.strip() for h in r.get("Hosts", "").split(","))):
            host = b.hosts.get((vc, name))
            if host is None:
                raise VmtwinError(f"{paths['vDatastore']}:{line}: column 'Hosts' names host {name!r}; "
                                  "allowed: hosts listed in vHost or vInfo")
            inv.add_edge("member", host, ds)
    return inv


class _Builder:
    """Creates each entity once, keyed by vCenter and name."""

    def __init__(self, inv: Inventory):
        self.inv = inv
        self.hosts: dict[tuple[str, str], str] = {}
        self.host_of: dict[str, str] = {}
        self.cluster_of: dict[str, str] = {}

    def vcenter(self, r: dict[str, str]) -> str:
        name = r.get("VI SDK Server") or DEFAULT_VCENTER
        return self.inv.add_node("VCenter", f"vc:{name}", name)

    def _named(self, type_: str, key: str, name: str) -> str:
        return key if key in self.inv.nodes else self.inv.add_node(type_, key, name)

    def host(self, r: dict[str, str]) -> str:
        vc = self.vcenter(r)
        name = r["Host"]
        key = (vc, name)
        if key not in self.hosts:
            self.hosts[key] = self.inv.add_node("Host", f"host:{vc}/{name}", name)
            self.inv.add_edge("follow", vc, self.hosts[key])
        host = self.hosts[key]
        dc = None
        if r.get("Datacenter"):
            dc = self._named("Datacenter", f"dc:{vc}/{r['Datacenter']}", r["Datacenter"])
            self.inv.add_edge("member", dc, vc)
        if r.get("Cluster"):
            cl = self._named("Cluster", f"cluster:{vc}/{r.get('Datacenter', '')}/{r['Cluster']}", r["Cluster"])
            self.inv.add_edge("member", host, cl)
            self.cluster_of[host] = cl
            if dc:
                self.inv.add_edge("member", cl, dc)
        elif dc:
            self.inv.add_edge("member", host, dc)
        return host

    def vm(self, r: dict[str, str], vc: str, path: Path, line: int) -> str:
        key = f"vm:{vc}/{r.get('VM UUID') or r['VM']}"
        if key in self.inv.nodes:
            raise VmtwinError(f"{path}:{line}: VM {r['VM']!r} listed twice; allowed: one row per VM "
                              "(give VM UUID to tell VMs of the same name apart)")
        return self.inv.add_node("VM", key, r["VM"])

    def lookup(self, vm_of, vc: str, r: dict[str, str], path: Path, line: int) -> str:
        if r.get("VM UUID"):
            key = f"vm:{vc}/{r['VM UUID']}"
            if key in self.inv.nodes:
                return key
        vm = vm_of.get((vc, r["VM"]))
        if vm is None:
            raise VmtwinError(f"{path}:{line}: VM {r['VM']!r} is not in vInfo; allowed: VMs listed in vInfo")
        return vm

    def network(self, vc: str, name: str, vm: str, host: str | None) -> None:
        net = self._named("Network", f"net:{vc}/{name}", name)
        self.inv.add_edge("member", vm, net)
        if host:
            self.inv.add_edge("member", host, net)

    def datastore(self, vc: str, name: str) -> str:
        return self._named("Datastore", f"ds:{vc}/{name}", name)
