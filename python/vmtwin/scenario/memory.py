"""The scenario's memory fields: the host's memory policy (``memory:``) and, per VM, its memory
allocation (``memory_allocation:``) and what its guest keeps in memory and touches
(``guest_memory:``). Memory is modelled only when the scenario has a ``memory:`` section;
``docs/memory.md`` documents the mechanisms and ``crates/vmtwin-core/src/mem/params.rs`` every
engine tunable with its unit, default and source.

::

    memory:
      policy: esx2013            # or esx2002 (Waldspurger 2002's states and techniques)
      idle_tax: 75%              # sched.mem.idleTax, in [0, 1)
    vms:
      - name: web
        memory: 4GB
        memory_allocation: {reservation: 1GB, limit: unlimited, shares: normal}
        guest_memory:
          content: {os: 1, os_fraction: 0.25, zero_fraction: 0.1}
          working_set: 2GB
          touch_rate: 10000      # pages touched per second of CPU work
          write_fraction: 0.1
          swap_datastore: ds1    # a datastore of the storage section
        workload: {type: cpu_bound, duty: 0.5}

Memory shares resolve as vSphere's: low, normal, high = 5, 10, 20 per MB of configured memory,
or a custom number for the whole VM. Without storage in the scenario, hypervisor swap goes to a
fixed-latency stand-in device (``memory.swap_standin``); with storage, a VM's swap file must name
one of its datastores.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, Union

from pydantic import BeforeValidator, Field, Strict, StringConstraints, WithJsonSchema

from vmtwin.exceptions import ScenarioError, scenario_error
from vmtwin.scenario.fields import Bytes, Name, Nanos, _Model

if TYPE_CHECKING:
    from vmtwin.scenario.models import Scenario

#: Memory shares per MB of configured memory for the symbolic levels (vSphere: 5/10/20).
MEM_SHARES_PER_MB = {"low": 5, "normal": 10, "high": 20}
#: Bytes per guest page.
PAGE_BYTES = 4096
#: Disk shares of a VM's swap file: normal (1000), as the VM's disks by default.
SWAP_FILE_SHARES = 1000

NonNegFloat = Annotated[float, Strict(), Field(ge=0.0)]
Unit = Annotated[float, Strict(), Field(ge=0.0, le=1.0)]


def _parse_tax(value: Any) -> float:
    """A rate in [0, 1), as a number or a percentage string ('75%')."""
    allowed = "a rate in [0, 1), e.g. 0.75 or '75%' (sched.mem.idleTax)"
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            value = float(value.strip()[:-1]) / 100.0
        except ValueError:
            raise ValueError(allowed) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(allowed)
    return float(value)


IdleTax = Annotated[
    float,
    BeforeValidator(_parse_tax),
    WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0, "exclusiveMaximum": 1},
                              {"type": "string", "pattern": r"^\s*\d+(\.\d*)?\s*%\s*$"}],
                    "description": "Idle memory tax rate in [0, 1), e.g. 0.75 or '75%'."}),
]


def _parse_mem_shares(value: Any) -> Union[str, float]:
    allowed = "low, normal, high (5/10/20 per MB of configured memory), or a custom number > 0"
    if isinstance(value, str) and value.strip().lower() in MEM_SHARES_PER_MB:
        return value.strip().lower()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf"):
        return float(value)
    raise ValueError(allowed)


MemShares = Annotated[
    Union[Literal["low", "normal", "high"], float],
    BeforeValidator(_parse_mem_shares),
    WithJsonSchema({"anyOf": [{"enum": ["low", "normal", "high"]}, {"type": "number", "exclusiveMinimum": 0}],
                    "description": "Memory shares: low, normal, high (5/10/20 per MB) or a custom number."}),
]


def _parse_mem_limit(value: Any) -> Any:
    if value is None or (value == -1 and not isinstance(value, bool)):
        return None
    if isinstance(value, str) and value.strip().lower() == "unlimited":
        return None
    return value


class SwapStandIn(_Model):
    """The fixed-latency device hypervisor swap uses when the scenario has no storage."""

    read_latency: Nanos = Field("5ms", description="Latency of a one-page swap-in, e.g. '5ms'.")
    write_latency: Nanos = Field("5ms", description="Latency of a clustered swap-out write, e.g. '5ms'.")


class HostMemory(_Model):
    """The host's memory policy; its presence turns the memory model on."""

    policy: Literal["esx2002", "esx2013"] = Field(
        "esx2013", description="Free-memory states and techniques: esx2002 (Waldspurger 2002) or esx2013 "
        "(VMware 2013: compression, memory block in the low state).")
    idle_tax: IdleTax = Field(0.75, description="sched.mem.idleTax: idle memory tax rate in [0, 1), e.g. 0.75.")
    host_overhead: Optional[Bytes] = Field(None, description="Memory of ESX itself, e.g. '512MB' (the default).")
    share_scan_rate: Optional[Annotated[int, Strict(), Field(ge=0, le=10**9)]] = Field(
        None, description="Pages of each VM examined for sharing per second (default 200).")
    share_scan_host_rate: Optional[Annotated[int, Strict(), Field(ge=0, le=10**9)]] = Field(
        None, description="Most pages examined for sharing per second over all VMs, split evenly (default: no "
        "system-wide cap).")
    swap_standin: SwapStandIn = Field(default_factory=SwapStandIn,
                                      description="Swap device used when the scenario has no storage section.")
    scale: Annotated[int, Strict(), Field(ge=1, le=4096)] = Field(
        1, description="The host models one this many times larger, every memory size in the scenario already "
        "divided by it (a scaled-down reproduction): minFree is the full-size host's fraction, and the engine's "
        "own absolute defaults (ESX and VM overhead, touch rate, the sharing, balloon and swap-out rates in "
        "pages per second) are divided by it, the CPU per page scanned or compressed multiplied by it, so times "
        "and CPU per second are the full-size host's (1: no scaling).")


class MemoryAllocation(_Model):
    """A VM's memory reservation, limit and shares, as in vSphere."""

    reservation: Bytes = Field("0B", description="Guaranteed memory, e.g. '1GB'.")
    limit: Annotated[Optional[Bytes], BeforeValidator(_parse_mem_limit)] = Field(
        None, description="Most memory the VM may be given, or 'unlimited'.")
    shares: MemShares = Field("normal", description="low|normal|high (5/10/20 per MB) or a custom number.")


class Content(_Model):
    """What the guest's pages hold: fractions of OS-image, application and zero pages."""

    os: Annotated[int, Strict(), Field(ge=0, le=2**32 - 1)] = Field(0, description="Guest OS and version id; VMs "
                                                                    "with the same id share OS pages.")
    os_fraction: Unit = Field(0.0, description="Fraction of pages holding the OS image.")
    app: Annotated[int, Strict(), Field(ge=0, le=2**32 - 1)] = Field(0, description="Application id; VMs with "
                                                                     "the same id share application pages.")
    app_fraction: Unit = Field(0.0, description="Fraction of pages holding application pages.")
    zero_fraction: Unit = Field(0.0, description="Fraction of the other pages that are zero.")
    os_copy_fraction: Unit = Field(0.0, description="Fraction of pages holding a second copy of an OS-image page "
                                   "(duplicate non-zero pages within one VM), at most os_fraction.")


class GuestOs(_Model):
    """The guest OS model: kernel sized from configured memory, page cache, free list and the
    workload's anonymous memory; the balloon takes free, then cache, then cold anonymous pages,
    and the guest swaps to its own virtual disk (``crates/vmtwin-core/src/mem/guest.rs``)."""

    kernel_base: Bytes = Field("64MB", description="Kernel text, data and boot allocations (a chosen stand-in).")
    kernel_bytes_per_page: Annotated[float, Strict(), Field(ge=0.0, lt=4096.0)] = Field(
        64.0, description="Kernel bytes per 4 KiB page of configured memory (Linux's struct page: 64).")
    boot_cache: Bytes = Field("0B", description="Page cache the guest filled at boot, e.g. '512MB'.")
    zero_at_boot: Annotated[bool, Strict()] = Field(
        False, description="The guest writes zeroes over all its memory at boot, so all of it is mapped (Windows "
        "does, Linux does not [S2 §3.2]); default false.")

    def kernel_pages(self, pages: int) -> int:
        """Kernel pages of a guest of ``pages`` pages (the engine's formula)."""
        return min(pages, math.ceil((self.kernel_base + self.kernel_bytes_per_page * pages) / PAGE_BYTES))


class TouchPhase(_Model):
    """From ``at`` on, the workload touches ``working_set`` (from the same offset)."""

    at: Nanos = Field(description="Start of the phase, from the start of the run, e.g. '5min'.")
    working_set: Bytes = Field(description="Memory the workload touches from then on, e.g. '250MB'.")


class App(_Model):
    """An application whose operations turn memory behaviour into its own metric
    (``crates/vmtwin-core/src/mem/app.rs``, ``docs/memory-apps.md``): each operation is one burst of
    the VM's workload (which must be ``cpu_bound`` with ``arrivals: closed`` and
    ``burst_distribution: fixed``; ``burst`` is the CPU per operation, ``duty`` sets the think
    time), preceded by ``file_reads_per_op`` reads of 4 KiB pages of a ``file_set`` through the
    guest's page cache and ``touches_per_op`` touches of the working set. Needs ``guest_os``."""

    kind: Literal["oltp", "vdi", "file_server"] = Field(
        description="What the metric is read as: oltp (operations per minute), vdi (95th-percentile latency) or "
        "file_server (MB/s); the mechanism is the same.")
    touches_per_op: Annotated[int, Strict(), Field(ge=0, le=2**32 - 1)] = Field(
        description="Touches of the working set per operation (replaces touch_rate).")
    file_set: Bytes = Field("0B", description="Files the operations read, e.g. '1GB' (0: none).")
    file_reads_per_op: Annotated[int, Strict(), Field(ge=0, le=2**32 - 1)] = Field(
        0, description="4 KiB file pages read per operation, through the guest's page cache.")


class GuestMemory(_Model):
    """What a VM's guest keeps in memory and how its workload touches it."""

    content: Content = Field(default_factory=Content, description="Content model of the guest's pages.")
    image: Optional[Annotated[str, Strict(), StringConstraints(min_length=1)]] = Field(
        None, description="Raw guest memory image (.vmem-like flat file, 4 KiB pages, the VM's size), relative to "
        "the scenario file; replaces the content model.")
    working_set: Optional[Bytes] = Field(None, description="Memory the workload touches, e.g. '1GB' (default: all).")
    working_set_offset: Bytes = Field("0B", description="Where the working set starts in guest memory.")
    touch_rate: NonNegFloat = Field(10000.0, description="Pages touched per second of CPU work.")
    write_fraction: Unit = Field(0.0, description="Fraction of touches that write new contents.")
    pattern: Literal["random", "sequential"] = Field("random", description="random, or sequential round-robin.")
    hot_block: Optional[Bytes] = Field(None, description="Sequential only: after hot_block_after_passes passes over "
                                       "the working set, read only its first hot_block bytes round-robin.")
    hot_block_after_passes: Annotated[int, Strict(), Field(ge=0, le=2**32 - 1)] = Field(
        1, description="Passes over the whole working set before the hot block (default 1).")
    phases: list[TouchPhase] = Field(default_factory=list, description="Working-set changes over time, e.g. "
                                     "[{at: '5min', working_set: '250MB'}] (not with guest_os or hot_block).")
    balloon_driver: Annotated[bool, Strict()] = Field(True, description="Whether the guest runs the balloon driver.")
    overhead: Bytes = Field("32MB", description="The VM's overhead memory (frame buffer, page tables).")
    swap_datastore: Optional[Name] = Field(None, description="Datastore of the VM's swap file (needs a storage "
                                           "section; without one swap goes to the stand-in device).")
    guest_os: Optional[GuestOs] = Field(None, description="Model the guest OS: the workload's working set is "
                                        "anonymous memory the guest maps, ballooning takes its free, cached, then "
                                        "cold pages, and it swaps to its own virtual disk.")
    app: Optional[App] = Field(None, description="An application (oltp, vdi, file_server) whose operations touch "
                               "memory and read files, with its own metric in the mem_app table; needs guest_os.")


def resolve_shares(shares: Union[str, float], memory_bytes: int) -> float:
    """Absolute memory shares: a level times the configured MB, or the custom number."""
    if isinstance(shares, str):
        return MEM_SHARES_PER_MB[shares] * memory_bytes / (1 << 20)
    return float(shares)


def _image_path(sc: "Scenario", image: str) -> Path:
    p = Path(image)
    return p if p.is_absolute() else sc.base_dir / p


def memory_errors(sc: "Scenario") -> Optional[ScenarioError]:
    """The first cross-field problem of the memory fields, or None."""
    vms = sc.vms
    if sc.memory is None:
        for i, vm in enumerate(vms):
            for field in ("memory_allocation", "guest_memory"):
                if getattr(vm, field) is not None:
                    return scenario_error(f"vms[{i}].{field}", "set", "only with a top-level memory: section "
                                          "(memory: {policy: esx2013} turns the memory model on)")
        return None
    if sc.host is None:
        return scenario_error("memory", "set", "a scenario with one host (not clusters)")
    if sc.host.memory < PAGE_BYTES:
        return scenario_error("host.memory", sc.host.memory, "at least one 4 KiB page")
    storage = getattr(sc, "storage", None)
    datastores = [d.name for d in storage.datastores] if storage is not None else []
    for i, vm in enumerate(vms):
        a = vm.memory_allocation or MemoryAllocation()
        g = vm.guest_memory or GuestMemory()
        size = vm.memory
        if size < PAGE_BYTES:
            return scenario_error(f"vms[{i}].memory", size, "at least one 4 KiB page")
        if a.reservation > size:
            return scenario_error(f"vms[{i}].memory_allocation.reservation", _fmt(a.reservation),
                                  f"at most the configured memory, {_fmt(size)}")
        if a.limit is not None and a.limit < a.reservation:
            return scenario_error(f"vms[{i}].memory_allocation.limit", _fmt(a.limit),
                                  f"at least the reservation, {_fmt(a.reservation)}")
        ws = size if g.working_set is None else g.working_set
        if ws < PAGE_BYTES or g.working_set_offset + ws > size:
            return scenario_error(f"vms[{i}].guest_memory.working_set", _fmt(ws),
                                  f"at least 4 KiB, and with working_set_offset ({_fmt(g.working_set_offset)}) "
                                  f"inside the configured memory, {_fmt(size)}")
        if g.hot_block is not None and (g.pattern != "sequential" or not PAGE_BYTES <= g.hot_block <= ws):
            return scenario_error(f"vms[{i}].guest_memory.hot_block", _fmt(g.hot_block),
                                  f"with pattern: sequential, at least 4 KiB and at most the working set, {_fmt(ws)}")
        for k, ph in enumerate(g.phases):
            if k and ph.at <= g.phases[k - 1].at:
                return scenario_error(f"vms[{i}].guest_memory.phases[{k}].at", ph.at,
                                      "a start later than the previous phase's (ns)")
            if ph.working_set < PAGE_BYTES or g.working_set_offset + ph.working_set > size:
                return scenario_error(f"vms[{i}].guest_memory.phases[{k}].working_set", _fmt(ph.working_set),
                                      f"at least 4 KiB, and with working_set_offset ({_fmt(g.working_set_offset)}) "
                                      f"inside the configured memory, {_fmt(size)}")
        if g.phases and (g.guest_os is not None or g.hot_block is not None):
            return scenario_error(f"vms[{i}].guest_memory.phases", f"{len(g.phases)} phases",
                                  "phases without guest_os and without hot_block")
        if g.content.os_fraction + g.content.app_fraction > 1.0:
            return scenario_error(f"vms[{i}].guest_memory.content.app_fraction", g.content.app_fraction,
                                  f"at most 1 - os_fraction = {1.0 - g.content.os_fraction:g}")
        c = g.content
        if c.os_copy_fraction > c.os_fraction:
            return scenario_error(f"vms[{i}].guest_memory.content.os_copy_fraction", c.os_copy_fraction,
                                  f"at most os_fraction = {c.os_fraction:g} (copies of OS-image pages)")
        if c.os_fraction + c.app_fraction + c.os_copy_fraction > 1.0:
            return scenario_error(f"vms[{i}].guest_memory.content.os_copy_fraction", c.os_copy_fraction,
                                  f"at most 1 - os_fraction - app_fraction = {1.0 - c.os_fraction - c.app_fraction:g}")
        if g.guest_os is not None:
            pages = size // PAGE_BYTES
            kernel = g.guest_os.kernel_pages(pages)
            cache = -(-g.guest_os.boot_cache // PAGE_BYTES)
            if kernel + cache >= pages:
                return scenario_error(f"vms[{i}].guest_memory.guest_os.boot_cache", _fmt(g.guest_os.boot_cache),
                                      f"less than the {_fmt((pages - kernel) * PAGE_BYTES)} the kernel leaves")
            if g.working_set is not None and kernel + -(-g.working_set // PAGE_BYTES) > pages:
                return scenario_error(f"vms[{i}].guest_memory.working_set", _fmt(g.working_set),
                                      f"at most the {_fmt((pages - kernel) * PAGE_BYTES)} the guest kernel leaves")
            if storage is not None and not any(d.vm == vm.name for d in storage.disks):
                return scenario_error(f"vms[{i}].guest_memory.guest_os", "set", "a VM with a disk in the storage "
                                      "section (with storage, the guest swaps to its own virtual disk)")
        if g.app is not None and (err := _app_error(i, vm, g)) is not None:
            return err
        if g.swap_datastore is not None and g.swap_datastore not in datastores:
            have = ", ".join(datastores) if datastores else "none: the scenario has no storage section"
            return scenario_error(f"vms[{i}].guest_memory.swap_datastore", g.swap_datastore,
                                  f"a datastore of the storage section ({have})")
    return None


def _app_error(i: int, vm: Any, g: GuestMemory) -> Optional[ScenarioError]:
    """An application without what its operations need, or None."""
    app = g.app
    assert app is not None
    if g.guest_os is None:
        return scenario_error(f"vms[{i}].guest_memory.app", app.kind, "an application with guest_memory.guest_os set "
                              "(its touches and file reads go through the guest OS model)")
    if "touch_rate" in g.model_fields_set:
        return scenario_error(f"vms[{i}].guest_memory.touch_rate", g.touch_rate, "unset with an application "
                              "(its touches_per_op replaces it)")
    w = vm.workload
    if getattr(w, "type", None) != "cpu_bound":
        return scenario_error(f"vms[{i}].workload.type", getattr(w, "type", "?"), "cpu_bound with an application "
                              "(one burst is one operation)")
    if w.arrivals != "closed" or w.burst_distribution != "fixed":
        field = "arrivals" if w.arrivals != "closed" else "burst_distribution"
        return scenario_error(f"vms[{i}].workload.{field}", getattr(w, field), "arrivals: closed and "
                              "burst_distribution: fixed with an application (one burst of its CPU is one operation)")
    if app.file_reads_per_op > 0 and app.file_set < PAGE_BYTES:
        return scenario_error(f"vms[{i}].guest_memory.app.file_set", _fmt(app.file_set),
                              "at least 4 KiB when file_reads_per_op > 0")
    return None


def _image_error(sc: "Scenario", i: int, image: str, size: int) -> Optional[ScenarioError]:
    """A missing, unreadable or wrongly sized memory image (checked once the scenario's folder is
    known: relative paths are the scenario file's)."""
    p = _image_path(sc, image)
    try:
        n = os.stat(p).st_size
    except OSError as exc:
        return scenario_error(f"vms[{i}].guest_memory.image", str(p), f"a readable memory image file ({exc.strerror})")
    if n != size:
        return scenario_error(f"vms[{i}].guest_memory.image", f"{p} ({n} bytes)",
                              f"an image of the VM's configured memory, {size} bytes "
                              f"({'truncated' if n < size else 'too long'})")
    return None


def _fmt(n: int) -> str:
    from vmtwin import units

    return units.format_size(n)


def _swap_datastores(sc: "Scenario") -> list[Optional[str]]:
    """Per VM entry, the datastore of its swap file: the one it names, else (as vSphere keeps the
    swap file with the VM) the datastore of its first disk, else the first datastore; None
    without storage (swap goes to the stand-in)."""
    st = getattr(sc, "storage", None)
    if st is None:
        return [None] * len(sc.vms)
    first_disk = {}
    for d in st.disks:
        first_disk.setdefault(d.vm, d.datastore)
    out = []
    for vm in sc.vms:
        g = vm.guest_memory or GuestMemory()
        out.append(g.swap_datastore or first_disk.get(vm.name) or st.datastores[0].name)
    return out


def engine_section(sc: "Scenario") -> dict:
    """``{"memory": ...}`` for the engine spec (one entry per VM after count expansion), or {}.

    With storage, every VM's swap file (``<vm>.vswp``, its configured memory's size) is added to
    the storage section's disks on its datastore, so hypervisor swap goes through the storage
    queues and shows in the ``disk`` table; the returned dict then carries ``storage`` too.
    """
    m = sc.memory
    if m is None:
        return {}
    out: dict[str, Any] = {
        "preset": m.policy,
        "idle_tax": m.idle_tax,
        "standin_read_ns": m.swap_standin.read_latency,
        "standin_write_ns": m.swap_standin.write_latency,
    }
    if m.host_overhead is not None:
        out["host_overhead_bytes"] = m.host_overhead
    if m.scale != 1:
        out["scale"] = m.scale
    if m.share_scan_rate is not None:
        out["share_scan_pages_per_s"] = m.share_scan_rate
    if m.share_scan_host_rate is not None:
        out["share_scan_host_pages_per_s"] = m.share_scan_host_rate
    vms = []
    datastores = _swap_datastores(sc)
    swap_disks = []
    for i, vm in enumerate(sc.vms):
        a = vm.memory_allocation or MemoryAllocation()
        g = vm.guest_memory or GuestMemory()
        if g.image is not None and (err := _image_error(sc, i, g.image, vm.memory)) is not None:
            raise err
        # on a scaled host (memory.scale), the defaults of absolute sizes and rates are the
        # full-size host's divided by the scale; values the scenario sets are taken as given
        overhead = g.overhead if "overhead" in g.model_fields_set else g.overhead // m.scale
        touch_rate = g.touch_rate if "touch_rate" in g.model_fields_set else g.touch_rate / m.scale
        entry = {
            "reservation_bytes": a.reservation,
            "limit_bytes": a.limit,
            "shares": resolve_shares(a.shares, vm.memory),
            "overhead_bytes": overhead,
            "balloon_driver": g.balloon_driver,
            "content": g.content.model_dump(),
            "image": None if g.image is None else str(_image_path(sc, g.image)),
            "touch": {
                "working_set_bytes": g.working_set,
                "working_set_offset_bytes": g.working_set_offset,
                "pages_per_cpu_s": touch_rate,
                "write_fraction": g.write_fraction,
                "pattern": g.pattern,
                "hot_block_bytes": g.hot_block,
                "hot_block_after_passes": g.hot_block_after_passes,
                "phases": [{"at_ns": ph.at, "working_set_bytes": ph.working_set} for ph in g.phases],
            },
            "swap_datastore": datastores[i],
            "guest_os": None if g.guest_os is None else {
                "kernel_base_bytes": g.guest_os.kernel_base,
                "kernel_bytes_per_page": g.guest_os.kernel_bytes_per_page,
                "boot_cache_bytes": g.guest_os.boot_cache,
                **({"zero_at_boot": True} if g.guest_os.zero_at_boot else {}),
            },
            "app": None if g.app is None else {
                "kind": g.app.kind, "touches_per_op": g.app.touches_per_op, "file_set_bytes": g.app.file_set,
                "file_reads_per_op": g.app.file_reads_per_op,
            },
        }
        vms.extend({**entry, "guest_swap_disk": None} for _ in range(vm.count))
        if datastores[i] is not None:
            swap_disks += [{"name": f"{inst}.vswp", "vm": inst, "lun": datastores[i], "shares": SWAP_FILE_SHARES,
                            "span_bytes": vm.memory, "offset_bytes": 0} for inst in vm.expanded_names()]
    out["vms"] = vms
    if getattr(sc, "storage", None) is None:
        return {"memory": out}
    from vmtwin.scenario import storage as _storage

    # admission control's swap space: per datastore with a capacity, what its virtual disks
    # leave for swap files (the key only when some datastore has one, so specs without stay as
    # they were)
    space = {ds.name: ds.capacity - _storage.disk_bytes(sc, sc.storage, ds.name)
             for ds in sc.storage.datastores if ds.capacity is not None}
    if space:
        out["swap_space_bytes"] = space

    st = _storage.to_engine(sc)
    # a guest OS model swaps to the VM's own first disk
    names = [n for vm in sc.vms for n in vm.expanded_names()]
    for name, entry in zip(names, vms):
        if entry["guest_os"] is not None:
            entry["guest_swap_disk"] = next(d["name"] for d in st["disks"] if d["vm"] == name)
    st["disks"] = st["disks"] + swap_disks
    return {"memory": out, "storage": st}
