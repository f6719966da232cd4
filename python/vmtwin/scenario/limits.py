"""Bounds on scenario inputs: what the engine can represent, and what a run can afford.

Three kinds of bound, each a named constant with its reason (the reason is part of the message
a user sees when the bound is crossed):

- **Representable**: the engine counts time in 64-bit nanoseconds and frequencies in integer
  MHz (``crates/vmtwin-core/src/spec.rs``). A time is bounded well below the clock's wrap
  (2^64 ns = 584 years) so that adding any interval to any time stays in range.
- **Affordable** (floors and ceilings): inputs that are representable but would exhaust time or
  memory. A 1 ns quantum makes a scheduling event per nanosecond; a 1 ms sample over a day makes
  86 million samples per VM; ``count: 1000000000`` asks for a terabyte of VM state. Each bound
  is far beyond any realistic scenario and names what it protects.
- **vSphere maximums** (warnings, not errors): a scenario beyond a per-host configuration
  maximum of vSphere 8.0 still runs (a simulator may model hardware ESX does not support), but
  the user is told, because results there describe no real host. Source: VMware vSphere 8.0
  Configuration Maximums, "ESXi Host Maximums" (configmax.broadcom.com); the 768 vCPUs per VM
  is also stated in the vSphere 8.0 Virtual Machine Administration guide, "Virtual CPU
  Limitations".

:func:`limit_errors` yields a :class:`~vmtwin.exceptions.ScenarioError` per crossed bound (YAML
path, value, the bound and its reason); it runs before any per-VM work, so a scenario asking for
a billion VMs is refused before one is built. :func:`limit_warnings` lists the vSphere maximums a
valid scenario exceeds; loading a scenario reports them as :class:`ScenarioWarning`.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Optional

from vmtwin import units as _units
from vmtwin.exceptions import ScenarioError, scenario_error

if TYPE_CHECKING:
    from vmtwin.scenario.models import Scenario

_MS = 10**6
_S = 10**9
_YEAR_NS = 36525 * 24 * 3600 * _S // 100  # a Julian year, 365.25 days

# -- representable --------------------------------------------------------------------------

#: Latest time (and longest interval) a scenario may name: 100 years. The engine's clock is an
#: unsigned 64-bit count of ns (wraps after 584 years); at most two such values are ever added.
MAX_TIME_NS = 100 * _YEAR_NS
#: Highest core clock: 100 GHz, 15x any shipping x86 core; keeps host capacity (cores x MHz)
#: and every MHz product in the engine exact in 64-bit floats.
MAX_CORE_MHZ = 100_000
#: Highest reservation or limit: 2^53 MHz, the largest integer a 64-bit float (the engine's MHz
#: arithmetic) holds exactly.
MAX_MHZ = 2**53

# -- affordable: floors ---------------------------------------------------------------------

#: Shortest sample interval: 100 ms (esxtop's own minimum is 2 s). Rows grow as 1/interval and
#: a sample shorter than two 50 ms quanta sees one scheduling decision.
MIN_SAMPLE_INTERVAL_NS = 100 * _MS
#: Shortest scheduler quantum: 1 ms (ESX's is 50 ms). Events grow as 1/quantum per pCPU.
MIN_QUANTUM_NS = 1 * _MS
#: Shortest entitlement interval: 10 ms (ESX recomputes about once a second); each pass walks
#: every pool and VM.
MIN_ENTITLEMENT_INTERVAL_NS = 10 * _MS
#: Shortest CPU limit burst (token-bucket depth): 1 ms; a shallower bucket refills per event.
MIN_LIMIT_BURST_NS = 1 * _MS
#: Shortest CPU limit turn: 100 us, as a workload burst. A throttled VM makes two events per
#: turn per vCPU; at 100 us a VM held at a 25% limit makes 5,000 per simulated second.
MIN_LIMIT_MIN_SLICE_NS = 100_000
#: Shortest CPU limit borrow: 100 us, as the turn. A held vCPU that borrows on an idle pCPU makes
#: two events per loan; at 100 us one limited vCPU beside an idle pCPU makes 20,000 a second.
MIN_LIMIT_BORROW_NS = 100_000
#: Shortest workload burst: 100 us. Each burst is two events per vCPU; at 100 us a vCPU makes
#: at most 20,000 events per simulated second.
MIN_BURST_NS = 100_000

# -- the cpu_scheduler durations ------------------------------------------------------------
# One table for every duration of the cpu_scheduler section. Which keys are durations is read
# from the model (:func:`scheduler_durations`); every one is capped at MAX_TIME_NS, must be
# positive unless it is a margin or cost that 0 switches off, and some have a floor.

#: cpu_scheduler durations for which 0 means "none": a preemption margin, the co-start skew, the
#: migration costs. Every other duration must be positive.
SCHEDULER_DURATIONS_MAY_BE_ZERO = frozenset({
    "wake_preempt_margin", "cosched_costart_skew", "migrate_cost_core", "migrate_cost_llc", "migrate_cost_node",
})
#: Floors of cpu_scheduler durations: key -> (floor in ns, what it protects; shown to the user).
SCHEDULER_FLOORS = {
    "quantum": (MIN_QUANTUM_NS, "scheduling events grow as 1/quantum per pCPU; ESX's quantum is 50ms"),
    "entitlement_interval": (MIN_ENTITLEMENT_INTERVAL_NS,
                             "each recomputation walks every pool and VM; ESX recomputes about once a second"),
    "limit_burst": (MIN_LIMIT_BURST_NS, "a shallower token bucket makes an event per refill"),
    "limit_min_slice": (MIN_LIMIT_MIN_SLICE_NS, "a throttled VM makes two events per turn per vCPU"),
    "limit_borrow": (MIN_LIMIT_BORROW_NS, "a held vCPU borrowing on an idle pCPU makes two events per loan"),
}

# -- affordable: ceilings -------------------------------------------------------------------

#: Most VMs after ``count`` expansion: 100,000 (about 1.2 KB each to build, 0.4 GB in all, and a
#: row per sample each); vSphere's per-host maximum is 1,024.
MAX_VMS = 100_000
#: Most vCPUs over all VMs: 262,144 (64 x vSphere's 4,096 per host); each has scheduler state,
#: a random stream and a row per sample.
MAX_TOTAL_VCPUS = 262_144
#: Most logical CPUs: 4,096 (4.5 x vSphere 8.0's 896); each is a run queue scanned on wake-ups.
MAX_LOGICAL_CPUS = 4_096
#: Most resource pools: 10,000 (6 x vSphere's 1,600 per host); each is visited per entitlement pass.
MAX_POOLS = 10_000
#: Deepest pool nesting: 256 levels (32 x vSphere's 8). Tools that walk the tree (reports,
#: exports) recurse once per level, and Python's recursion limit is 1,000.
MAX_POOL_DEPTH = 256
#: Most rows the results may hold: 2^32 (one per VM, vCPU, pool, logical CPU and the host per
#: sample). Beyond it the run writes hundreds of GB for hours: almost surely a typo in duration
#: or sample_interval.
MAX_SAMPLED_ROWS = 2**32
#: Most segments in one trace: 1,000,000 (9.5 years of 5-minute PlanetLab samples); the segment
#: lists are copied into the engine spec.
MAX_TRACE_SEGMENTS = 1_000_000
#: Largest trace file read: 16 MB of text, or 1 GB of Parquet (the Bitbrains folder).
MAX_TRACE_TEXT_BYTES = 16 * 2**20
MAX_TRACE_PARQUET_BYTES = 2**30
#: Largest scenario file: 16 MB (about 150,000 VMs written one per line); PyYAML holds some 30
#: bytes of objects per byte of text.
MAX_SCENARIO_BYTES = 16 * 2**20

# -- vSphere 8.0 per-host maximums (warnings) -----------------------------------------------

VSPHERE_VERSION = "vSphere 8.0"
VSPHERE_VMS_PER_HOST = 1_024
VSPHERE_VCPUS_PER_HOST = 4_096
VSPHERE_LOGICAL_CPUS_PER_HOST = 896
VSPHERE_VCPUS_PER_CORE = 32
VSPHERE_VCPUS_PER_VM = 768  # an error, not a warning: the engine's own maximum (checks.MAX_VCPUS_PER_VM)
VSPHERE_MEMORY_PER_HOST = 24 * 2**40
VSPHERE_MEMORY_PER_VM = 24 * 2**40
VSPHERE_NUMA_NODES_PER_HOST = 16
VSPHERE_POOLS_PER_HOST = 1_600
VSPHERE_POOL_TREE_DEPTH = 8


class ScenarioWarning(UserWarning):
    """A valid scenario beyond a vSphere per-host maximum: it runs, but models no supported host."""


@dataclass(frozen=True)
class LimitWarning:
    """One vSphere maximum a scenario exceeds: where, the value, and the maximum."""

    path: str
    value: object
    maximum: str

    def __str__(self) -> str:
        return f"{self.path}: {self.value} exceeds the {VSPHERE_VERSION} maximum of {self.maximum} (it runs, but no supported ESX host looks like this)"


def _dur(ns: int) -> str:
    return _units.format_duration(ns)


def _too_long(path: str, ns: int) -> ScenarioError:
    return scenario_error(path, _dur(ns), f"at most {_dur(MAX_TIME_NS)} (100 years: the engine's 64-bit ns clock "
                                          "wraps after 584 years, and intervals are added to times)")


@functools.cache
def scheduler_durations() -> tuple[str, ...]:
    """The keys of the cpu_scheduler section that are durations, in the model's order."""
    from vmtwin.scenario.fields import Nanos
    from vmtwin.scenario.models import CpuScheduler

    return tuple(k for k, f in CpuScheduler.model_fields.items() if f.annotation == Optional[Nanos])


def _time_fields(sc: Scenario) -> Iterator[tuple[str, int]]:
    """Every time and interval of the scenario, with its YAML path (VM entries, not expansions)."""
    from vmtwin.scenario.models import CpuBound, TraceWorkload

    yield "duration", sc.duration
    yield "sample_interval", sc.sample_interval
    for key in scheduler_durations():
        value = getattr(sc.cpu_scheduler, key)
        if value is not None:
            yield f"cpu_scheduler.{key}", value
    for i, vm in enumerate(sc.vms):
        yield f"vms[{i}].power_on", vm.power_on
        w = vm.workload
        if isinstance(w, (CpuBound, TraceWorkload)):
            yield f"vms[{i}].workload.burst", w.burst
        if isinstance(w, TraceWorkload):
            yield f"vms[{i}].workload.offset", w.offset


def pool_depths(sc: Scenario) -> dict[str, int]:
    """Depth of each pool (1 = under the root pool); names on a cycle or under an unknown parent
    get the depth of the chain that could be followed. Each pool is visited once."""
    parent = {p.name: p.parent for p in sc.resource_pools}
    depth: dict[str, int] = {}
    for start in parent:
        chain = []
        cur = start
        seen = set()
        while cur is not None and cur in parent and cur not in depth and cur not in seen:
            seen.add(cur)
            chain.append(cur)
            cur = parent[cur]
        base = depth.get(cur, 0) if cur is not None else 0
        for k, name in enumerate(reversed(chain), start=1):
            depth[name] = base + k
    return depth


def limit_errors(sc: Scenario) -> Iterator[ScenarioError]:
    """Yield a ScenarioError per input beyond what the engine represents or a run can afford.

    Only per-entry work: VM entries are not expanded by ``count``, so this is safe to run
    before anything else on a scenario asking for a billion VMs.
    """
    from vmtwin.scenario.models import CpuBound, TraceWorkload

    for path, ns in _time_fields(sc):
        if ns > MAX_TIME_NS:
            yield _too_long(path, ns)
    floors = [
        ("sample_interval", sc.sample_interval, MIN_SAMPLE_INTERVAL_NS,
         "rows grow as 1/interval, and a shorter sample sees a single 50 ms quantum; esxtop's minimum is 2s"),
    ]
    floors += [(f"cpu_scheduler.{key}", getattr(sc.cpu_scheduler, key), floor, why)
               for key, (floor, why) in SCHEDULER_FLOORS.items()]
    for i, vm in enumerate(sc.vms):
        w = vm.workload
        if isinstance(w, (CpuBound, TraceWorkload)):
            floors.append((f"vms[{i}].workload.burst", w.burst, MIN_BURST_NS,
                           "each burst is two events per vCPU"))
    for path, ns, floor, why in floors:
        if ns is not None and 0 < ns < floor:  # 0 has its own message: "a positive duration"
            yield scenario_error(path, _dur(ns), f"at least {_dur(floor)} ({why})")

    h = sc.host
    if h.core_mhz > MAX_CORE_MHZ:
        yield scenario_error("host.core_mhz", _units.format_frequency(h.core_mhz),
                             f"at most {MAX_CORE_MHZ}MHz (100 GHz, 15x any shipping core; keeps MHz arithmetic exact)")
    logical = h.logical_cpus
    if logical > MAX_LOGICAL_CPUS:
        yield scenario_error("host", f"{logical} logical CPUs (sockets x numa_nodes_per_socket x llcs_per_node x "
                             "cores_per_llc x threads_per_core)",
                             f"at most {MAX_LOGICAL_CPUS} logical CPUs (each is a run queue the scheduler scans; "
                             f"{VSPHERE_VERSION} supports {VSPHERE_LOGICAL_CPUS_PER_HOST})")
    for where, cpu in [(f"resource_pools[{i}].cpu", p.cpu) for i, p in enumerate(sc.resource_pools)] + \
                      [(f"vms[{i}].cpu", vm.cpu) for i, vm in enumerate(sc.vms)]:
        for key in ("reservation", "limit"):
            mhz = getattr(cpu, key)
            if mhz is not None and mhz > MAX_MHZ:
                yield scenario_error(f"{where}.{key}", _units.format_frequency(mhz),
                                     f"at most {MAX_MHZ}MHz (2^53, exact in the engine's 64-bit float arithmetic)")

    if len(sc.resource_pools) > MAX_POOLS:
        yield scenario_error("resource_pools", f"{len(sc.resource_pools)} pools",
                             f"at most {MAX_POOLS} pools (each is visited per entitlement pass; "
                             f"{VSPHERE_VERSION} supports {VSPHERE_POOLS_PER_HOST} per host)")
    else:
        depths = pool_depths(sc)
        for i, p in enumerate(sc.resource_pools):
            if depths.get(p.name, 0) > MAX_POOL_DEPTH:
                yield scenario_error(f"resource_pools[{i}].parent", p.parent,
                                     f"a pool at most {MAX_POOL_DEPTH} levels deep (this one is {depths[p.name]}; "
                                     f"tools walking the tree recurse per level; {VSPHERE_VERSION} allows "
                                     f"{VSPHERE_POOL_TREE_DEPTH})")
                break  # the first one: every deeper pool would repeat it

    vms = vcpus = 0
    for i, vm in enumerate(sc.vms):
        vms += vm.count
        vcpus += vm.count * vm.vcpus
        if vms > MAX_VMS:
            yield scenario_error(f"vms[{i}].count", vm.count,
                                 f"at most {MAX_VMS} VMs in all after count expansion (this entry brings it to {vms}; "
                                 f"each VM costs about 1.2 KB to build and a row per sample; "
                                 f"{VSPHERE_VERSION} supports {VSPHERE_VMS_PER_HOST} per host)")
            return  # the totals below would only repeat it
        if vcpus > MAX_TOTAL_VCPUS:
            yield scenario_error(f"vms[{i}].vcpus", vm.vcpus,
                                 f"at most {MAX_TOTAL_VCPUS} vCPUs in all (this entry brings it to {vcpus}; each has "
                                 f"scheduler state and a row per sample; {VSPHERE_VERSION} supports "
                                 f"{VSPHERE_VCPUS_PER_HOST} per host)")
            return
    if sc.sample_interval > 0:
        samples = sc.duration // sc.sample_interval
        rows = samples * (vms + vcpus + len(sc.resource_pools) + logical + 1)
        if rows > MAX_SAMPLED_ROWS:
            yield scenario_error(
                "sample_interval", _dur(sc.sample_interval),
                f"an interval giving at most {MAX_SAMPLED_ROWS:,} result rows: {samples:,} samples x "
                f"{rows // max(samples, 1):,} rows each (VMs, vCPUs, pools, logical CPUs, host) = {rows:,} rows, "
                f"hundreds of GB written over hours; lengthen sample_interval or shorten duration "
                f"({_dur(sc.duration)})")


def limit_warnings(sc: Scenario) -> list[LimitWarning]:
    """The vSphere 8.0 per-host maximums a (valid) scenario exceeds, one entry per maximum."""
    out: list[LimitWarning] = []
    h = sc.host
    if h is None:  # clusters: each host is checked as a scenario of its own when placed
        return out
    vms = sum(vm.count for vm in sc.vms)
    vcpus = sum(vm.count * vm.vcpus for vm in sc.vms)
    if vms > VSPHERE_VMS_PER_HOST:
        out.append(LimitWarning("vms", f"{vms} VMs", f"{VSPHERE_VMS_PER_HOST} VMs per host"))
    if vcpus > VSPHERE_VCPUS_PER_HOST:
        out.append(LimitWarning("vms", f"{vcpus} vCPUs", f"{VSPHERE_VCPUS_PER_HOST} vCPUs per host"))
    if vcpus > VSPHERE_VCPUS_PER_CORE * h.cores:
        out.append(LimitWarning("vms", f"{vcpus} vCPUs on {h.cores} cores",
                                f"{VSPHERE_VCPUS_PER_CORE} vCPUs per core"))
    if h.logical_cpus > VSPHERE_LOGICAL_CPUS_PER_HOST:
        out.append(LimitWarning("host", f"{h.logical_cpus} logical CPUs",
                                f"{VSPHERE_LOGICAL_CPUS_PER_HOST} logical CPUs per host"))
    numa = h.sockets * h.numa_nodes_per_socket
    if numa > VSPHERE_NUMA_NODES_PER_HOST:
        out.append(LimitWarning("host", f"{numa} NUMA nodes", f"{VSPHERE_NUMA_NODES_PER_HOST} NUMA nodes per host"))
    if h.memory > VSPHERE_MEMORY_PER_HOST:
        out.append(LimitWarning("host.memory", _units.format_size(h.memory), "24TB of memory per host"))
    for i, vm in enumerate(sc.vms):
        if vm.memory > VSPHERE_MEMORY_PER_VM:
            out.append(LimitWarning(f"vms[{i}].memory", _units.format_size(vm.memory), "24TB of memory per VM"))
            break
    if len(sc.resource_pools) > VSPHERE_POOLS_PER_HOST:
        out.append(LimitWarning("resource_pools", f"{len(sc.resource_pools)} pools",
                                f"{VSPHERE_POOLS_PER_HOST} resource pools per host"))
    depths = pool_depths(sc)
    deepest = max(depths.values(), default=0)
    if deepest > VSPHERE_POOL_TREE_DEPTH:
        out.append(LimitWarning("resource_pools", f"a tree {deepest} levels deep",
                                f"a resource pool tree depth of {VSPHERE_POOL_TREE_DEPTH}"))
    return out


def warn_limits(sc: Scenario, stacklevel: int = 2) -> None:
    """Issue a :class:`ScenarioWarning` per vSphere maximum ``sc`` exceeds (``stacklevel`` as in
    :func:`warnings.warn`, counted from the caller of this function)."""
    for w in limit_warnings(sc):
        warnings.warn(str(w), ScenarioWarning, stacklevel=stacklevel + 1)


def check_duration_override(sc: Scenario, duration_ns: int, path: str = "--duration") -> None:
    """Raise a ScenarioError if running ``sc`` for ``duration_ns`` instead of its own duration
    crosses a bound (the clock's range, the result-row ceiling); the message names ``path``.

    For callers that override the duration after loading (``vmtwin run --duration``,
    ``Simulation(duration=...)``): the scenario's own duration was checked when it was loaded.
    """
    from vmtwin.scenario.shown import bounded_error

    probe = sc.model_copy(update={"duration": duration_ns})
    for err in limit_errors(probe):
        if err.path in ("duration", "sample_interval"):
            raise bounded_error(path, _dur(duration_ns), err.allowed)
