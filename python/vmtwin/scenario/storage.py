"""The scenario's ``storage:`` section: HBA adapters, flash arrays, datastores (LUNs) with
their device, queue depth, paths and path selection policy, VM disks with disk shares, the I/O
each disk sees (an Iometer-like worker, a Poisson source, a bursty Postmark/FFSB-like source, a
FileBench-like mix, a block-trace replay) or the
synchronous I/O a VM's vCPUs wait for, and path failures as timed events. Normalized into the
engine's ``storage`` object (``crates/vmtwin-core/src/storage/scenario.rs``; every tunable's
unit, default and source is in ``storage/params.rs``).

::

    storage:
      adapters:
        - {name: vmhba1}
        - {name: vmhba2}
      arrays:
        - {name: array1}
      datastores:
        - name: ds1
          device: {type: array, array: array1, owner: 0}
          dqlen: 32
          psp: {policy: adaptive, ta: 1ms, tb: 500us, tc: 10ms}
          paths:
            - {adapter: vmhba1, controller: 0}
            - {adapter: vmhba2, controller: 1}
      disks:
        - vm: web                     # a counted VM gets one disk per instance
          datastore: ds1
          shares: high
          workload: {type: iometer, block_size: 16KB, read_pct: 50, random_pct: 100, outstanding: 32}
        - vm: batch
          datastore: ds1
          workload: {type: trace, path: ../shared/data/io-traces/cloudPhysicsIO.csv, speed: 1}
        - vm: db
          datastore: ds1
          vcpu_io: {block_size: 8KB, read_pct: 100}   # each vCPU waits for one I/O after each burst
      events:
        - {at: 30s, datastore: ds1, path: 0, action: down}
        - {at: 60s, datastore: ds1, path: 0, action: up}
        - {at: 90s, datastore: ds1, action: adaptive_off}          # the esxcli knob
        - {at: 120s, datastore: ds1, action: set_psp, psp: {policy: round_robin, iops: 1}}
        - {at: 150s, datastore: ds1, action: set_iops, iops: 1000}

A disk's engine name is ``<vm>:<name>`` (``name`` defaults to ``scsi0:0``), e.g. ``web-1:scsi0:0``.
Datastore names are what a VM's swap file names (the memory section).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, Optional, Union

from pydantic import Field, Strict, field_validator

from vmtwin.exceptions import scenario_error
from vmtwin.scenario.fields import Bytes, Name, Nanos, PosInt, Shares, VM_SHARES_PER_VCPU, _Model

if TYPE_CHECKING:  # pragma: no cover
    from vmtwin.scenario.models import Scenario

Pct = Annotated[float, Strict(), Field(ge=0.0, le=100.0)]
Controller = Annotated[int, Strict(), Field(ge=0, le=1)]
Count = Annotated[int, Strict(), Field(ge=1, le=1 << 20)]

#: Disk shares by level (vSphere: low 500, normal 1000, high 2000 per disk).
DISK_SHARES = VM_SHARES_PER_VCPU
#: Default disk name under its VM (the first disk of the first SCSI controller).
DEFAULT_DISK_NAME = "scsi0:0"
#: A virtual disk's queue depth at its virtual adapter, requests: PVSCSI's default per device
#: ([ext] VMware KB 2053145; LSI Logic SAS has 32).
VIRTUAL_DISK_QUEUE_DEPTH = 64
#: FileBench presets Kraft et al. measured (engine: BatchWorkload::filebench).
FILEBENCH_PRESETS = {"file": (59.0, 5.07, 151), "web": (92.0, 5.79, 141), "mail": (39.0, 5.49, 149)}


#: Kraft et al.'s Postmark and FFSB workloads as bursty sources (``type: bursty, preset: ...``):
#: (inter-arrival mean in ms, inter-arrival CV) from their Table 4 (averaged over VMs and runs),
#: then (block size in bytes, random %, read %), which the paper does not give per workload and
#: are chosen: PM-1 32 kB, the mode of its Fig. 6 request sizes (4-8 blocks); PM-2 64 kB (Fig. 6:
#: larger, more requests over 8 blocks); FFSB-1 64 kB and FFSB-2 256 kB (Fig. 6: a large share of
#: requests over 128 blocks, FFSB-2 fewer and larger); S variants sequential, R and PM random; 50 %
#: reads (Postmark's default read/append bias of 5 in 10 [ext: Katcher, "PostMark", NetApp TR3022,
#: 1997]; FFSB: chosen).
KRAFT_PRESETS: dict[str, tuple[float, float, int, float, float]] = {
    "pm-1": (0.72, 21.0, 32 * 1024, 100.0, 50.0),
    "pm-2": (0.81, 16.4, 64 * 1024, 100.0, 50.0),
    "ffsb-1s": (3.07, 9.2, 64 * 1024, 0.0, 50.0),
    "ffsb-1r": (3.24, 9.1, 64 * 1024, 100.0, 50.0),
    "ffsb-2s": (4.36, 9.9, 256 * 1024, 0.0, 50.0),
    "ffsb-2r": (3.54, 10.8, 256 * 1024, 100.0, 50.0),
}


class Adapter(_Model):
    """An HBA port."""

    name: Name = Field(description="Adapter name, e.g. vmhba1.")
    queue_depth: Count = Field(2048, description="Commands the port may have outstanding (esxtop AQLEN).")
    link_gbps: Annotated[float, Strict(), Field(gt=0.0, le=1e4)] = Field(8.0, description="Link rate in Gb/s.")


class Array(_Model):
    """A dual-controller ALUA flash array; every tunable defaults to the engine's value."""

    name: Name = Field(description="Array name, referred to by datastores.")
    engines_per_controller: Optional[Count] = Field(None, description="Commands one controller serves at once.")
    controller_time: Optional[Nanos] = Field(None, description="Owner's processing time per command, e.g. '60us'.")
    controller_bandwidth: Optional[Bytes] = Field(None, description="One controller's front-end data rate per second, e.g. '1.6GB'.")
    backend_read_time: Optional[Nanos] = Field(None, description="Extra time of a cache-miss read, e.g. '150us'.")
    mirror_time: Optional[Nanos] = Field(None, description="Extra time to mirror a write to the partner, e.g. '40us'.")
    hop_time: Optional[Nanos] = Field(None, description="Extra time on an un-optimized (AUO) path, e.g. '100us'.")


class ArrayDevice(_Model):
    """A LUN on a flash array, owned by one controller (paths to it are active-optimized)."""

    type: Literal["array"] = "array"
    array: Name = Field(description="The array's name.")
    owner: Controller = Field(0, description="Owning controller: 0 or 1.")


class SsdDevice(_Model):
    """A directly attached SSD with the engine's default figures."""

    type: Literal["ssd"] = "ssd"


class HddDevice(_Model):
    """A spinning disk (7200 rpm 1 TB by default)."""

    type: Literal["hdd"] = "hdd"
    rpm: Optional[Count] = Field(None, description="Spindle speed.")
    order: Optional[Literal["fcfs", "sstf", "sptf"]] = Field(None, description="On-board queue order.")


class ExponentialDevice(_Model):
    """An analytic device: ``servers`` parallel FCFS servers with exponential service."""

    type: Literal["exponential"] = "exponential"
    servers: Count = Field(1, description="Parallel servers.")
    mean_service: Nanos = Field(description="Mean service time, e.g. '1ms'.")


Device = Annotated[Union[ArrayDevice, SsdDevice, HddDevice, ExponentialDevice], Field(discriminator="type")]


class Path(_Model):
    """A path: an adapter to one controller."""

    adapter: Name = Field(description="The adapter's name.")
    controller: Controller = Field(0, description="Array controller reached: 0 or 1 (0 for other devices).")
    fabric_latency: Nanos = Field("10us", description="Fabric round trip, e.g. '10us'.")


class Psp(_Model):
    """Path selection policy: fixed, mru, round_robin or adaptive (with its thresholds)."""

    policy: Literal["fixed", "mru", "round_robin", "adaptive"] = Field("fixed", description="VMW_PSP_FIXED, _MRU, _RR, or PSP Adaptive.")
    preferred: Optional[Annotated[int, Strict(), Field(ge=0)]] = Field(None, description="fixed: the preferred path's index.")
    iops: Optional[Count] = Field(None, description="round_robin/adaptive: commands before switching path (default 1000).")
    ta: Optional[Nanos] = Field(None, description="adaptive: AO latency above which writes spread, e.g. '1ms'.")
    tb: Optional[Nanos] = Field(None, description="adaptive: AO latency below which spreading stops (< ta).")
    tc: Optional[Nanos] = Field(None, description="adaptive: AUO latency above which spreading is harmful (> ta).")
    window: Optional[Nanos] = Field(None, description="adaptive: monitoring window (default 1s).")
    check_windows: Optional[Count] = Field(None, description="adaptive: windows between improvement checks (default 5).")
    improvement: Optional[Annotated[float, Strict(), Field(ge=0.0, le=10.0)]] = Field(None, description="adaptive: required gain (default 0.10).")
    enabled: Optional[Annotated[bool, Strict()]] = Field(None, description="adaptive: the on/off knob (default on).")


class Datastore(_Model):
    """A datastore on one LUN."""

    name: Name = Field(description="Datastore name; VM disks and swap files name it.")
    device: Device = Field(description="What serves it: type array, ssd, hdd or exponential.")
    dqlen: Count = Field(32, description="Device queue depth (esxtop DQLEN).")
    psp: Psp = Field(default_factory=Psp, description="Path selection policy.")
    paths: list[Path] = Field(description="Paths to the LUN, at least one.")
    capacity: Optional[Bytes] = Field(None, description="The datastore's capacity. Its VMs' virtual disks (their "
                                      "sizes) must fit, and admission control refuses to power on a VM whose swap "
                                      "file (configured memory minus memory reservation) does not fit in what is "
                                      "left. Default: unlimited.")


class Iometer(_Model):
    """An Iometer-like closed-loop worker keeping ``outstanding`` requests in flight."""

    type: Literal["iometer"] = "iometer"
    block_size: Bytes = Field("4KB", description="Request size (a multiple of 512 bytes).")
    read_pct: Pct = Field(100.0, description="Reads, percent.")
    random_pct: Pct = Field(100.0, description="Random (vs sequential) requests, percent.")
    outstanding: Count = Field(1, description="Requests kept in flight.")
    think: Nanos = Field("0s", description="Delay between a completion and the next issue.")
    start: Nanos = Field("0s", description="Start after the VM's power-on.")


class Poisson(_Model):
    """An open Poisson source."""

    type: Literal["poisson"] = "poisson"
    rate: Annotated[float, Strict(), Field(gt=0.0, le=1e8)] = Field(description="Mean requests per second.")
    block_size: Bytes = Field("4KB", description="Request size (a multiple of 512 bytes).")
    read_pct: Pct = Field(100.0, description="Reads, percent.")
    random_pct: Pct = Field(100.0, description="Random requests, percent.")
    cap: Optional[Count] = Field(None, description="Drop arrivals finding this many in flight.")
    start: Nanos = Field("0s", description="Start after the VM's power-on.")


class Bursty(_Model):
    """An open source with bursty arrivals: inter-arrival times are a two-phase hyperexponential
    with mean ``1 / rate`` and coefficient of variation ``cv`` (balanced means; cv 1 is Poisson).
    A ``preset`` (Kraft et al.'s Postmark/FFSB: pm-1, pm-2, ffsb-1s, ffsb-1r, ffsb-2s, ffsb-2r)
    supplies every field from :data:`KRAFT_PRESETS`; a field given beside it wins."""

    type: Literal["bursty"] = "bursty"
    preset: Optional[Literal["pm-1", "pm-2", "ffsb-1s", "ffsb-1r", "ffsb-2s", "ffsb-2r"]] = Field(
        None, description="Kraft et al.'s Postmark or FFSB workload (Table 4's inter-arrival mean and CV).")
    rate: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1e8)]] = Field(None, description="Mean requests per second (required without a preset).")
    cv: Optional[Annotated[float, Strict(), Field(ge=1.0, le=1000.0)]] = Field(None, description="Inter-arrival coefficient of variation, >= 1 (required without a preset).")
    block_size: Optional[Bytes] = Field(None, description="Request size (a multiple of 512 bytes); default 4KB or the preset's.")
    read_pct: Optional[Pct] = Field(None, description="Reads, percent; default 100 or the preset's.")
    random_pct: Optional[Pct] = Field(None, description="Random requests, percent; default 100 or the preset's.")
    cap: Optional[Count] = Field(None, description="Drop arrivals finding this many in flight.")
    start: Nanos = Field("0s", description="Start after the VM's power-on.")

    def resolved(self) -> tuple[float, float, int, float, float]:
        """(rate per s, cv, block bytes, random %, read %), the preset's where not given."""
        if self.preset is None:
            base = (None, None, 4096, 100.0, 100.0)
        else:
            ia_ms, cv, block, rnd, rd = KRAFT_PRESETS[self.preset]
            base = (1000.0 / ia_ms, cv, block, rnd, rd)
        pick = lambda mine, dflt: dflt if mine is None else mine  # noqa: E731
        return (pick(self.rate, base[0]), pick(self.cv, base[1]), pick(self.block_size, base[2]),
                pick(self.random_pct, base[3]), pick(self.read_pct, base[4]))


class FileBench(_Model):
    """A FileBench-like mix (Kraft et al.): batch customers that think, then issue a batch."""

    type: Literal["filebench"] = "filebench"
    preset: Literal["file", "web", "mail"] = Field(description="Kraft et al.'s file, web or mail server.")
    users: Count = Field(1, description="Batch customers.")
    block_size: Bytes = Field("8KB", description="Request size.")
    start: Nanos = Field("0s", description="Start after the VM's power-on.")


class TraceIo(_Model):
    """Replay of a block trace (the CloudPhysics VSCSI CSV format of ``shared/data/io-traces``:
    ``version,time,op,size,lbn``, whole seconds, op 28 read / 2a write, lbn in 512-byte sectors)."""

    type: Literal["trace"] = "trace"
    path: Annotated[str, Strict(), Field(min_length=1)] = Field(description="The CSV file, relative to the scenario file.")
    speed: Annotated[float, Strict(), Field(gt=0.0, le=1e6)] = Field(1.0, description="Replay this many times faster.")
    start: Nanos = Field("0s", description="Start after the VM's power-on.")


IoWorkload = Annotated[Union[Iometer, Poisson, Bursty, FileBench, TraceIo], Field(discriminator="type")]


class VcpuIo(_Model):
    """Synchronous guest I/O: each vCPU issues one request after each CPU burst and waits."""

    block_size: Bytes = Field("8KB", description="Request size (a multiple of 512 bytes).")
    read_pct: Pct = Field(100.0, description="Reads, percent.")
    random_pct: Pct = Field(100.0, description="Random requests, percent.")


class Disk(_Model):
    """A VM's virtual disk on a datastore."""

    vm: Name = Field(description="The VM (a counted VM gets one disk per instance).")
    name: Name = Field(DEFAULT_DISK_NAME, description="Disk name under the VM, e.g. scsi0:0.")
    datastore: Name = Field(description="The datastore holding the disk.")
    shares: Shares = Field("normal", description="Disk shares: low|normal|high (500/1000/2000) or an integer.")
    size: Bytes = Field("10GB", description="The disk's span on the LUN.")
    offset: Bytes = Field("0B", description="Where the span starts on the LUN.")
    queue_depth: Count = Field(VIRTUAL_DISK_QUEUE_DEPTH, description="The virtual adapter's queue depth for the disk; "
                               "requests beyond it wait in the guest (default 64, PVSCSI's).")
    workload: Optional[IoWorkload] = Field(None, description="I/O generated on this disk: iometer, poisson, bursty, filebench or trace.")
    vcpu_io: Optional[VcpuIo] = Field(None, description="The VM's vCPUs wait for synchronous I/O on this disk.")
    log_requests: Annotated[bool, Strict()] = Field(False, description="Log every request of this disk when it completes "
                                                    "(the io_log table: issue, accept and completion times, direction, "
                                                    "bytes), as blktrace does in a guest.")


class PathEvent(_Model):
    """A path failure or recovery."""

    at: Nanos = Field(description="When, from the start of the run.")
    datastore: Name = Field(description="The datastore.")
    path: Annotated[int, Strict(), Field(ge=0)] = Field(description="Index of the path among the datastore's paths.")
    action: Literal["down", "up"] = Field(description="down (fails) or up (comes back).")


class PolicyEvent(_Model):
    """A new path selection policy (``esxcli storage nmp device set --psp``)."""

    at: Nanos = Field(description="When, from the start of the run.")
    datastore: Name = Field(description="The datastore.")
    action: Literal["set_psp"] = Field(description="set_psp.")
    psp: Psp = Field(description="The new policy with its settings, as a datastore's psp.")


class IopsEvent(_Model):
    """RR's switch count (``esxcli storage nmp psp roundrobin deviceconfig set --type=iops --iops=N``)."""

    at: Nanos = Field(description="When, from the start of the run.")
    datastore: Name = Field(description="The datastore (on round_robin or adaptive then).")
    action: Literal["set_iops"] = Field(description="set_iops.")
    iops: Count = Field(description="Commands before switching path.")


class KnobEvent(_Model):
    """PSP Adaptive's on/off knob."""

    at: Nanos = Field(description="When, from the start of the run.")
    datastore: Name = Field(description="The datastore (on adaptive then).")
    action: Literal["adaptive_on", "adaptive_off"] = Field(description="adaptive_on or adaptive_off.")


Event = Annotated[Union[PathEvent, PolicyEvent, IopsEvent, KnobEvent], Field(discriminator="action")]
#: The events' actions, by the model that carries them.
EVENT_ACTIONS = ("down", "up", "set_psp", "set_iops", "adaptive_on", "adaptive_off")


class StackParams(_Model):
    """VMM and kernel tunables."""

    split_size: Optional[Bytes] = Field(None, description="Requests above this are split (default 512KB).")
    sched_num_req_outstanding: Optional[Count] = Field(None, description="Per-VM active limit while VMs share a LUN (default 32).")
    merge_omega: Optional[Annotated[float, Strict(), Field(ge=1.0, le=64.0)]] = Field(None, description="Kraft's merge value (default 1).")
    merge_contiguous_only: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Merge only requests contiguous on disk (default true); false merges any same-VM neighbours in "
                          "tag order, as Kraft's model does (a calibration, not a mechanism).")


class Storage(_Model):
    """The storage section."""

    params: StackParams = Field(default_factory=StackParams, description="VMM and kernel tunables.")
    adapters: list[Adapter] = Field(default_factory=list, description="HBA ports.")
    arrays: list[Array] = Field(default_factory=list, description="Flash arrays.")
    datastores: list[Datastore] = Field(description="Datastores (LUNs).")
    disks: list[Disk] = Field(default_factory=list, description="VM disks.")
    events: list[Event] = Field(default_factory=list, description="Path failures and recoveries; PSP, "
                                       "--iops and Adaptive knob changes.")

    @field_validator("events", mode="before")
    @classmethod
    def _known_actions(cls, events):
        # the action picks the event's model; name it here (a tag error would not say which key)
        if isinstance(events, list):
            for i, e in enumerate(events):
                if isinstance(e, dict) and e.get("action") not in EVENT_ACTIONS:
                    raise scenario_error(f"storage.events[{i}].action", e.get("action"), "one of " + ", ".join(EVENT_ACTIONS))
        return events


# --------------------------------------------------------------------------------------------
# Checks across the section and the VMs
# --------------------------------------------------------------------------------------------


def _one_of(names: list[str]) -> str:
    return "one of " + ", ".join(repr(n) for n in names) if names else "none defined"


def _unique(items, what: str) -> None:
    seen: set[str] = set()
    for i, x in enumerate(items):
        if x.name in seen:
            raise scenario_error(f"storage.{what}[{i}].name", x.name, "a name not used before")
        seen.add(x.name)


def storage_errors(scenario: "Scenario"):
    """The first bad reference or value of the section, as a ScenarioError (or None)."""
    st = scenario.storage
    if st is None:
        return None
    try:
        _check(scenario, st)
    except Exception as exc:  # noqa: BLE001 - ScenarioError only, re-raised by the caller
        return exc
    return None


def disk_bytes(scenario: "Scenario", st: Storage, datastore: str) -> int:
    """Bytes of the virtual disks on ``datastore`` (a counted VM's disk once per instance)."""
    counts = {vm.name: vm.count for vm in scenario.vms}
    return sum(d.size * counts.get(d.vm, 1) for d in st.disks if d.datastore == datastore)


def _check(scenario: "Scenario", st: Storage) -> None:
    _unique(st.adapters, "adapters")
    _unique(st.arrays, "arrays")
    _unique(st.datastores, "datastores")
    adapters = [a.name for a in st.adapters]
    arrays = [a.name for a in st.arrays]
    stores = [d.name for d in st.datastores]
    for i, ds in enumerate(st.datastores):
        at = f"storage.datastores[{i}]"
        if not ds.paths:
            raise scenario_error(f"{at}.paths", [], "at least one path")
        for j, p in enumerate(ds.paths):
            if p.adapter not in adapters:
                raise scenario_error(f"{at}.paths[{j}].adapter", p.adapter, _one_of(adapters) + " (storage.adapters)")
        if isinstance(ds.device, ArrayDevice) and ds.device.array not in arrays:
            raise scenario_error(f"{at}.device.array", ds.device.array, _one_of(arrays) + " (storage.arrays)")
        _check_psp(f"{at}.psp", ds.psp, len(ds.paths))
    vm_entries = {vm.name: vm for vm in scenario.vms}
    seen_disks: set[str] = set()
    io_vms: set[str] = set()
    for i, d in enumerate(st.disks):
        at = f"storage.disks[{i}]"
        if d.vm not in vm_entries:
            raise scenario_error(f"{at}.vm", d.vm, _one_of(list(vm_entries)) + " (the VMs of the scenario)")
        if d.datastore not in stores:
            raise scenario_error(f"{at}.datastore", d.datastore, _one_of(stores) + " (storage.datastores)")
        for inst in vm_entries[d.vm].expanded_names():
            full = f"{inst}:{d.name}"
            if full in seen_disks:
                raise scenario_error(f"{at}.name", d.name, f"a disk name not used before for VM {d.vm!r}")
            seen_disks.add(full)
        if d.size < 512:
            raise scenario_error(f"{at}.size", d.size, "at least 512 bytes")
        sizes = []
        if isinstance(d.workload, TraceIo):
            p = _trace_file(scenario, d.workload.path)
            if not p.is_file():
                raise scenario_error(f"{at}.workload.path", d.workload.path,
                                     f"an existing trace file (looked for {p})")
        elif isinstance(d.workload, Bursty):
            for field in ("rate", "cv"):
                if d.workload.preset is None and getattr(d.workload, field) is None:
                    raise scenario_error(f"{at}.workload.{field}", None, "a value (or a preset: " + ", ".join(KRAFT_PRESETS) + ")")
            sizes.append(("workload.block_size", d.workload.resolved()[2]))
        elif d.workload is not None:
            sizes.append(("workload.block_size", d.workload.block_size))
        if d.vcpu_io is not None:
            sizes.append(("vcpu_io.block_size", d.vcpu_io.block_size))
            if d.vm in io_vms:
                raise scenario_error(f"{at}.vcpu_io", "a second disk with vcpu_io", f"one disk with vcpu_io per VM ({d.vm!r} has one)")
            io_vms.add(d.vm)
        for field, b in sizes:
            if b < 512 or b % 512:
                raise scenario_error(f"{at}.{field}", b, "a multiple of 512 bytes")
            if b > d.size:
                raise scenario_error(f"{at}.{field}", b, f"at most the disk's size ({d.size} bytes)")
    for i, ds in enumerate(st.datastores):
        need = disk_bytes(scenario, st, ds.name)
        if ds.capacity is not None and need > ds.capacity:
            raise scenario_error(f"storage.datastores[{i}].capacity", ds.capacity,
                                 f"at least the {need} bytes of the virtual disks on datastore {ds.name!r}")
    for i, e in enumerate(st.events):
        at = f"storage.events[{i}]"
        if e.datastore not in stores:
            raise scenario_error(f"{at}.datastore", e.datastore, _one_of(stores) + " (storage.datastores)")
        n = len(st.datastores[stores.index(e.datastore)].paths)
        if isinstance(e, PathEvent) and e.path >= n:
            raise scenario_error(f"{at}.path", e.path, f"a path index below {n} (the datastore's paths)")
        if isinstance(e, PolicyEvent):
            _check_psp(f"{at}.psp", e.psp, n)
    _check_psp_sequence(st)


def _check_psp_sequence(st: Storage) -> None:
    """Replay each datastore's policy changes in time order: --iops needs round_robin or
    adaptive at that time, the knob adaptive (esxcli refuses them otherwise)."""
    policy = {ds.name: ds.psp.policy for ds in st.datastores}
    order = sorted(range(len(st.events)), key=lambda i: st.events[i].at)  # stable: listed order at ties
    for i in order:
        e = st.events[i]
        if isinstance(e, PolicyEvent):
            policy[e.datastore] = e.psp.policy
        elif isinstance(e, IopsEvent) and policy[e.datastore] not in ("round_robin", "adaptive"):
            raise scenario_error(f"storage.events[{i}].action", e.action,
                                 f"a datastore on round_robin or adaptive at that time ({e.datastore!r} is on "
                                 f"{policy[e.datastore]})")
        elif isinstance(e, KnobEvent) and policy[e.datastore] != "adaptive":
            raise scenario_error(f"storage.events[{i}].action", e.action,
                                 f"a datastore on adaptive at that time ({e.datastore!r} is on {policy[e.datastore]})")


def _trace_file(scenario: "Scenario", path: str):
    from pathlib import Path as _P

    p = _P(path)
    return p if p.is_absolute() else scenario.base_dir / p


def _check_psp(at: str, psp: Psp, npaths: int) -> None:
    allowed = {
        "fixed": {"preferred"},
        "mru": set(),
        "round_robin": {"iops"},
        "adaptive": {"iops", "ta", "tb", "tc", "window", "check_windows", "improvement", "enabled"},
    }[psp.policy]
    for key in Psp.model_fields:
        if key != "policy" and getattr(psp, key) is not None and key not in allowed:
            raise scenario_error(f"{at}.{key}", getattr(psp, key),
                                 f"no {key} for policy {psp.policy!r} (its settings: {sorted(allowed) or 'none'})")
    if psp.policy == "fixed" and (psp.preferred or 0) >= npaths:
        raise scenario_error(f"{at}.preferred", psp.preferred, f"a path index below {npaths}")
    if psp.policy == "adaptive":
        for key in ("ta", "tb", "tc"):
            if getattr(psp, key) is None:
                raise scenario_error(f"{at}.{key}", None, "a latency threshold (PSP Adaptive has no default), e.g. '1ms'")
        if psp.ta <= psp.tb:
            raise scenario_error(f"{at}.ta", f"{psp.ta} ns (tb = {psp.tb} ns)", "ta > tb (start threshold above the stop threshold)")
        if psp.tc <= psp.ta:
            raise scenario_error(f"{at}.tc", f"{psp.tc} ns (ta = {psp.ta} ns)", "tc > ta")


# --------------------------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------------------------


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _device(dev) -> dict:
    if isinstance(dev, ArrayDevice):
        return {"kind": "array", "array": dev.array, "owner": dev.owner}
    if isinstance(dev, SsdDevice):
        return {"kind": "ssd"}
    if isinstance(dev, HddDevice):
        return {"kind": "hdd", **_drop_none({"rpm": dev.rpm, "order": dev.order})}
    return {"kind": "exponential", "servers": dev.servers, "mean_service_ns": dev.mean_service}


def _psp(p: Psp) -> dict:
    if p.policy == "fixed":
        return {"policy": "fixed", "preferred": p.preferred or 0}
    if p.policy == "mru":
        return {"policy": "mru"}
    iops = p.iops if p.iops is not None else 1000
    if p.policy == "round_robin":
        return {"policy": "round_robin", "iops": iops}
    params = _drop_none({"ta_ns": p.ta, "tb_ns": p.tb, "tc_ns": p.tc, "window_ns": p.window,
                         "check_windows": p.check_windows, "improvement": p.improvement, "enabled": p.enabled})
    return {"policy": "adaptive", "iops": iops, "params": params}


def _psp_change(e) -> dict:
    if isinstance(e, PolicyEvent):
        return {"policy": _psp(e.psp)}
    if isinstance(e, IopsEvent):
        return {"iops": e.iops}
    return {"adaptive_enabled": e.action == "adaptive_on"}


def _workload(w, disk: str) -> dict:
    if isinstance(w, Iometer):
        return {"disk": disk, "kind": "iometer", "block_bytes": w.block_size, "read_pct": w.read_pct,
                "random_pct": w.random_pct, "outstanding": w.outstanding, "think_ns": w.think, "start_ns": w.start}
    if isinstance(w, Poisson):
        return {"disk": disk, "kind": "poisson", "rate_per_s": w.rate, "block_bytes": w.block_size,
                "read_pct": w.read_pct, "random_pct": w.random_pct, "cap": w.cap, "start_ns": w.start}
    if isinstance(w, Bursty):
        rate, cv, block, rnd, rd = w.resolved()
        return {"disk": disk, "kind": "bursty", "rate_per_s": rate, "cv": cv, "block_bytes": block,
                "read_pct": rd, "random_pct": rnd, "cap": w.cap, "start_ns": w.start}
    read_pct, batch_mean, think_ms = FILEBENCH_PRESETS[w.preset]
    return {"disk": disk, "kind": "batch", "users": w.users, "read_pct": read_pct, "batch_mean": batch_mean,
            "think_mean_ns": think_ms * 1_000_000, "block_bytes": w.block_size, "random_pct": 100.0,
            "start_ns": w.start}


def _shares(s: Union[str, int]) -> int:
    return DISK_SHARES[s] if isinstance(s, str) else s


def engine_section(scenario: "Scenario") -> dict:
    """``{"storage": ...}`` for the engine spec, or ``{}`` without a storage section."""
    return {} if scenario.storage is None else {"storage": to_engine(scenario)}


def to_engine(scenario: "Scenario") -> dict:
    """The engine's ``storage`` object for ``scenario.storage`` (already checked)."""
    st = scenario.storage
    assert st is not None
    vm_entries = {vm.name: vm for vm in scenario.vms}
    params = _drop_none({"split_bytes": st.params.split_size,
                         "sched_num_req_outstanding": st.params.sched_num_req_outstanding,
                         "merge_omega": st.params.merge_omega,
                         "merge_contiguous_only": st.params.merge_contiguous_only})
    arrays = [_drop_none({"name": a.name, "engines_per_controller": a.engines_per_controller,
                          "controller_ns": a.controller_time, "controller_bytes_per_s": a.controller_bandwidth,
                          "backend_read_ns": a.backend_read_time,
                          "mirror_ns": a.mirror_time, "hop_ns": a.hop_time}) for a in st.arrays]
    disks, workloads, vcpu_io, traces = [], [], [], []
    for d in st.disks:
        for inst in vm_entries[d.vm].expanded_names():
            name = f"{inst}:{d.name}"
            disks.append({"name": name, "vm": inst, "lun": d.datastore, "shares": _shares(d.shares),
                          "span_bytes": d.size, "offset_bytes": d.offset, "queue_depth": d.queue_depth})
            if d.log_requests:
                disks[-1]["log_requests"] = True
            if isinstance(d.workload, TraceIo):
                traces.append({"disk": name, "path": str(_trace_file(scenario, d.workload.path).resolve()),
                               "start_ns": d.workload.start, "speed": d.workload.speed})
            elif d.workload is not None:
                workloads.append(_workload(d.workload, name))
            if d.vcpu_io is not None:
                vcpu_io.append({"vm": inst, "disk": name, "block_bytes": d.vcpu_io.block_size,
                                "read_pct": d.vcpu_io.read_pct, "random_pct": d.vcpu_io.random_pct})
    return {
        "params": params,
        "adapters": [{"name": a.name, "queue_depth": a.queue_depth, "link_bits_per_s": int(round(a.link_gbps * 1e9))}
                     for a in st.adapters],
        "arrays": arrays,
        "luns": [{"name": ds.name, "device": _device(ds.device), "dqlen": ds.dqlen, "psp": _psp(ds.psp),
                  "paths": [{"adapter": p.adapter, "controller": p.controller, "fabric_ns": p.fabric_latency}
                            for p in ds.paths]} for ds in st.datastores],
        "disks": disks,
        "workloads": workloads,
        "traces": traces,
        "vcpu_io": vcpu_io,
        "events": [{"at_ns": e.at, "lun": e.datastore, "path": e.path, "action": e.action}
                   for e in st.events if isinstance(e, PathEvent)],
        "psp_events": [{"at_ns": e.at, "lun": e.datastore, "change": _psp_change(e)}
                       for e in st.events if not isinstance(e, PathEvent)],
    }


# --------------------------------------------------------------------------------------------
# Names for the engine's index columns
# --------------------------------------------------------------------------------------------


def storage_names(spec: dict) -> dict[str, list[str]]:
    """Names by index, from an engine spec: disks, LUNs (datastores), paths (esxtop runtime
    names ``vmhbaN:C0:T<controller>:L<lun>``) and adapters."""
    st = spec.get("storage")
    if not st:
        return {}
    paths = [f"{p['adapter']}:C0:T{p.get('controller', 0)}:L{li}" for li, lun in enumerate(st["luns"]) for p in lun["paths"]]
    return {
        "disk_id": [d["name"] for d in st.get("disks", [])],
        "lun_id": [lun["name"] for lun in st["luns"]],
        "path_id": paths,
        "adapter_id": [a["name"] for a in st.get("adapters", [])],
    }


_NAME_COLUMNS = {"disk_id": "disk", "lun_id": "lun", "path_id": "path_name", "adapter_id": "adapter"}


def with_storage_names(tables: dict, spec: dict) -> dict:
    """``tables`` with a string name column beside each storage index column."""
    names = storage_names(spec)
    if not names:
        return tables
    import pyarrow as pa

    out = dict(tables)
    for tname in ("disk", "lun", "path", "adapter", "io_log"):
        t = out.get(tname)
        if t is None:
            continue
        for id_col, name_col in _NAME_COLUMNS.items():
            if id_col in t.column_names and name_col not in t.column_names:
                arr = pa.array(names[id_col], type=pa.string()).take(t.column(id_col))
                t = t.add_column(t.column_names.index(id_col), name_col, arr)
        out[tname] = t
    return out
