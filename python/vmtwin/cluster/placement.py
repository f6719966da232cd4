"""Initial placement of VMs on a cluster's hosts: pinned, first fit, or DRS-like.

Placement happens once, before the run (there is no migration): each cluster places its own
VMs on its own hosts, in two passes. VMs pinned to a host (``host:``) go first, in file order;
then every other VM, in file order, goes where the cluster's policy says.

**Admissible host.** A host can take a VM when
(1) the VM's vCPUs are at most the host's logical CPUs (the engine's rule: a vCPU needs a pCPU
to run on); (2) the CPU reservations placed there plus the VM's fit the host's capacity
(logical CPUs x core MHz), as vSphere's admission control requires at power-on; (3) the vCPUs
placed there plus the VM's are at most ``max_vcpus_per_pcpu`` x logical CPUs, when the cluster
sets that bound (a planner's consolidation ratio; vSphere itself has none, so the default is
none); (4) the configured memory placed there plus the VM's is at most ``max_memory_ratio`` x
the host's memory (default 1.0: no memory overcommit, a planner's conservative rule; vSphere
allows overcommit and leaves it to ballooning and swapping). A pinned VM must meet (1) and
(2) on its host and ignores (3) and (4): the user chose the host.

**first_fit.** The first admissible host in the cluster's order (the order of ``hosts``,
``count`` expanded). With 1-vCPU VMs, 2-pCPU hosts and ``max_vcpus_per_pcpu: 1`` it fills
host k with VMs 2k and 2k+1, as CloudSim Plus's ``VmAllocationPolicyFirstFit`` does.

**drs** (DRS-like initial placement by entitlement headroom). DRS places a VM where the
cluster stays best balanced, balance being measured on each host's normalized entitlement
(the sum of its VMs' entitlements over its capacity). Here a VM's entitlement is estimated
before the run from its expected demand: ``util x vCPUs x core MHz`` of the host, where
``util`` is the workload's mean demand over the run (the duty of a ``cpu_bound`` workload, the
time-weighted mean of a trace over the replayed window, 0 when idle), raised to its
reservation and capped by its limit. A host's headroom is its capacity minus the entitlements
already placed there. Among admissible hosts whose headroom covers the VM's entitlement, the
one whose normalized entitlement after placing the VM is lowest wins (ties: the earlier host),
which is the greedy step that keeps the largest normalized entitlement lowest. When no
admissible host has the headroom, the admissible host with the most headroom left takes the VM
and the placement records ``overcommitted``. The real DRS also weighs memory entitlement,
affinity rules and migration cost; none of these are modelled here.

A VM no host can admit is an error naming the field that decides it (``vcpus``,
``cpu.reservation``, ``memory``, ``host``), the value and what would fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from vmtwin import units as _units
from vmtwin.exceptions import scenario_error

__all__ = ["HostSlot", "VmNeed", "Decision", "place"]


@dataclass(frozen=True)
class HostSlot:
    """A host as placement sees it."""

    name: str
    logical_cpus: int
    core_mhz: int
    memory: int  # bytes

    @property
    def capacity_mhz(self) -> int:
        return self.logical_cpus * self.core_mhz


@dataclass(frozen=True)
class VmNeed:
    """What placement needs to know of a VM; ``where`` is its YAML path, for errors."""

    name: str
    vcpus: int
    memory: int  # bytes
    reservation_mhz: int
    limit_mhz: Optional[int]
    util: float  # expected mean demand as a fraction of the VM's vCPUs, 0..1
    pin: Optional[str] = None
    where: str = ""

    def entitlement_mhz(self, core_mhz: int) -> float:
        """Expected entitlement on a host with this core clock: demand, reservation, limit."""
        e = max(self.util * self.vcpus * core_mhz, float(self.reservation_mhz))
        return e if self.limit_mhz is None else min(e, float(self.limit_mhz))


@dataclass(frozen=True)
class Decision:
    """Where a VM went. ``headroom_mhz``: the host's headroom after placing it."""

    vm: str
    host: str
    pinned: bool
    entitlement_mhz: float
    headroom_mhz: float
    overcommitted: bool


def place(hosts: Sequence[HostSlot], vms: Sequence[VmNeed], policy: str, *, cluster: str = "",
          max_vcpus_per_pcpu: Optional[float] = None, max_memory_ratio: float = 1.0) -> list[Decision]:
    """Place ``vms`` on ``hosts`` (pinned first, then by ``policy``); decisions in ``vms``' order.

    Raises
    ------
    ScenarioError
        A pin names no host of the cluster, or a VM fits no host; the message names the field.
    """
    if policy not in ("first_fit", "drs"):
        raise scenario_error(f"{cluster}.placement" if cluster else "placement", policy, "first_fit or drs")
    index = {h.name: k for k, h in enumerate(hosts)}
    logical = np.array([h.logical_cpus for h in hosts], dtype=np.int64)
    mhz = np.array([h.core_mhz for h in hosts], dtype=np.float64)
    cap = logical * mhz
    mem_cap = np.array([h.memory for h in hosts], dtype=np.float64) * max_memory_ratio
    vcpu_cap = logical * max_vcpus_per_pcpu if max_vcpus_per_pcpu is not None else None
    used_vcpus = np.zeros(len(hosts), dtype=np.int64)
    used_mem = np.zeros(len(hosts), dtype=np.float64)
    used_res = np.zeros(len(hosts), dtype=np.float64)
    ent = np.zeros(len(hosts), dtype=np.float64)

    def commit(i: int, k: int, pinned: bool, over: bool) -> Decision:
        vm = vms[i]
        e = vm.entitlement_mhz(hosts[k].core_mhz)
        used_vcpus[k] += vm.vcpus
        used_mem[k] += vm.memory
        used_res[k] += vm.reservation_mhz
        ent[k] += e
        return Decision(vm.name, hosts[k].name, pinned, e, float(cap[k] - ent[k]), over)

    out: list[Optional[Decision]] = [None] * len(vms)
    for i, vm in enumerate(vms):
        if vm.pin is None:
            continue
        k = index.get(vm.pin)
        if k is None:
            raise scenario_error(f"{vm.where}.host", vm.pin, f"a host of cluster {cluster!r}: " + _some(index))
        if vm.vcpus > logical[k]:
            raise scenario_error(f"{vm.where}.host", vm.pin, f"a host with at least {vm.vcpus} logical CPUs "
                                 f"for this {vm.vcpus}-vCPU VM ({vm.pin} has {logical[k]})")
        if used_res[k] + vm.reservation_mhz > cap[k]:
            raise scenario_error(f"{vm.where}.cpu.reservation", _units.format_frequency(vm.reservation_mhz),
                                 f"at most the {int(cap[k] - used_res[k])}MHz left unreserved on {vm.pin}")
        out[i] = commit(i, k, True, False)

    for i, vm in enumerate(vms):
        if vm.pin is not None:
            continue
        ok = (logical >= vm.vcpus) & (used_res + vm.reservation_mhz <= cap) & (used_mem + vm.memory <= mem_cap)
        if vcpu_cap is not None:
            ok &= used_vcpus + vm.vcpus <= vcpu_cap
        if not ok.any():
            raise _no_room(vm, hosts, cluster, logical, cap, mem_cap, max_vcpus_per_pcpu, max_memory_ratio)
        if policy == "first_fit":
            out[i] = commit(i, int(np.argmax(ok)), False, False)
            continue
        e = np.maximum(vm.util * vm.vcpus * mhz, float(vm.reservation_mhz))
        if vm.limit_mhz is not None:
            e = np.minimum(e, float(vm.limit_mhz))
        after = cap - ent - e
        fits = ok & (after >= 0)
        if fits.any():
            load = np.where(fits, (ent + e) / cap, np.inf)
            out[i] = commit(i, int(np.argmin(load)), False, False)
        else:
            out[i] = commit(i, int(np.argmax(np.where(ok, after, -np.inf))), False, True)
    return out  # type: ignore[return-value]


def _some(names: dict[str, int], most: int = 10) -> str:
    shown = list(names)[:most]
    return ", ".join(shown) + (f", ... ({len(names)} hosts)" if len(names) > most else "")


def _no_room(vm: VmNeed, hosts: Sequence[HostSlot], cluster: str, logical, cap, mem_cap,
             ratio: Optional[float], mem_ratio: float):
    """The error for a VM no host admits, naming the field that decides it."""
    if vm.vcpus > logical.max():
        return scenario_error(f"{vm.where}.vcpus", vm.vcpus, f"at most {int(logical.max())} vCPUs, the most logical "
                              f"CPUs of a host of cluster {cluster!r} (VM {vm.name} fits no host)")
    if vm.reservation_mhz > cap.max():
        return scenario_error(f"{vm.where}.cpu.reservation", _units.format_frequency(vm.reservation_mhz),
                              f"at most {int(cap.max())}MHz, the largest host capacity of cluster {cluster!r} "
                              f"(VM {vm.name} fits no host)")
    if vm.memory > mem_cap.max():
        return scenario_error(f"{vm.where}.memory", _units.format_size(vm.memory),
                              f"at most {_units.format_size(int(mem_cap.max()))}, the largest host memory of cluster "
                              f"{cluster!r} x max_memory_ratio {mem_ratio:g} (VM {vm.name} fits no host)")
    bounds = f"max_memory_ratio {mem_ratio:g}" + (f", max_vcpus_per_pcpu {ratio:g}" if ratio is not None else "")
    return scenario_error(vm.where, vm.name, f"a VM the cluster {cluster!r} has room for: its {len(hosts)} hosts are "
                          f"full before this one ({bounds}, CPU reservations); add hosts or raise the bounds")
