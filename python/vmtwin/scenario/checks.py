"""Cross-field checks of a scenario: what no single field's validator can see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from vmtwin import units as _units
from vmtwin.exceptions import ScenarioError, scenario_error
from vmtwin.scenario.limits import SCHEDULER_DURATIONS_MAY_BE_ZERO, limit_errors, scheduler_durations

#: vCPUs per VM the engine accepts, vSphere 8.0's maximum (``MAX_VCPUS_PER_VM`` in the engine).
MAX_VCPUS_PER_VM = 768

if TYPE_CHECKING:
    from vmtwin.scenario.models import ResourcePool, Scenario


# --------------------------------------------------------------------------------------------
# Cross-field checks (the parts a per-field validator cannot see)
# --------------------------------------------------------------------------------------------


def _semantic_errors(sc: Scenario) -> Iterator[ScenarioError]:
    """Yield every cross-field problem, in file order, as a ScenarioError with its YAML path."""
    from vmtwin.scenario.models import CpuBound, TraceWorkload  # the models call these checks

    if sc.sample_interval == 0:
        yield scenario_error("sample_interval", "0ns", "a positive duration, e.g. '2s'")
    if sc.duration == 0:
        yield scenario_error("duration", "0ns", "a positive duration, e.g. '10min'")
    if sc.sample_interval > sc.duration:
        yield scenario_error(
            "sample_interval",
            _units.format_duration(sc.sample_interval),
            f"at most the duration, {_units.format_duration(sc.duration)}",
        )
    h = sc.host
    if h.core_mhz == 0:
        yield scenario_error("host.core_mhz", "0MHz", "a positive frequency, e.g. '2600MHz'")
    if h.memory == 0:
        yield scenario_error("host.memory", "0B", "a positive size, e.g. '64GB'")
    for field in scheduler_durations():
        if field not in SCHEDULER_DURATIONS_MAY_BE_ZERO and getattr(sc.cpu_scheduler, field) == 0:
            yield scenario_error(f"cpu_scheduler.{field}", "0ns", "a positive duration")
    # Before anything per VM: a billion VMs or a 1 ns sample is refused before it costs anything.
    yield from limit_errors(sc)

    pools = {p.name: i for i, p in enumerate(sc.resource_pools)}
    seen: set[str] = set()
    for i, p in enumerate(sc.resource_pools):
        at = f"resource_pools[{i}]"
        if p.name in seen:
            yield scenario_error(f"{at}.name", p.name, "a pool name not used by an earlier pool")
        seen.add(p.name)
        if p.parent is not None and p.parent not in pools:
            yield scenario_error(f"{at}.parent", p.parent, f"null or the name of a pool: {_names(pools)}")
        if p.cpu.limit == 0:
            yield scenario_error(f"{at}.cpu.limit", "0MHz", "a limit > 0MHz, or unlimited (a pool limited to 0MHz "
                                 "would never run its VMs; a VM's limit of 0MHz is refused too)")
        yield from _limit_errors(f"{at}.cpu", p.cpu.reservation, p.cpu.limit)
    yield from _cycle_errors(sc.resource_pools, pools)

    # Per VM only comparisons, unless something is wrong: scenarios have tens of thousands of VMs.
    vm_names: dict[str, tuple[int, int]] = {}  # name -> (index, count) of the entry that has it first
    logical_cpus = h.logical_cpus
    max_vcpus = min(logical_cpus, MAX_VCPUS_PER_VM)
    why_max = "the host's logical CPUs" if max_vcpus == logical_cpus else "vSphere 8.0's vCPUs per VM"
    for i, vm in enumerate(sc.vms):
        for name in (vm.name,) if vm.count == 1 else vm.expanded_names():
            first = vm_names.get(name)
            if first is None:
                vm_names[name] = (i, vm.count)
            else:
                yield scenario_error(
                    f"vms[{i}].name", name, f"a VM name not already used (it is also {_entry_name(*first)})"
                )
        if vm.pool is not None and vm.pool not in pools:
            yield scenario_error(f"vms[{i}].pool", vm.pool, f"null or the name of a pool: {_names(pools)}")
        if vm.vcpus > max_vcpus:
            yield scenario_error(f"vms[{i}].vcpus", vm.vcpus, f"an integer from 1 to {max_vcpus} ({why_max})")
        if vm.memory == 0:
            yield scenario_error(f"vms[{i}].memory", "0B", "a positive size, e.g. '4GB'")
        if vm.power_on > sc.duration:
            yield scenario_error(
                f"vms[{i}].power_on",
                _units.format_duration(vm.power_on),
                f"a time within the run, at most {_units.format_duration(sc.duration)}",
            )
        cpu = vm.cpu
        if cpu.limit == 0:
            yield scenario_error(f"vms[{i}].cpu.limit", "0MHz", "a limit > 0MHz, or unlimited")
        if cpu.limit is not None and cpu.reservation > cpu.limit:
            yield from _limit_errors(f"vms[{i}].cpu", cpu.reservation, cpu.limit)
        w = vm.workload
        if isinstance(w, CpuBound) and w.burst == 0:
            yield scenario_error(f"vms[{i}].workload.burst", "0ns", "a positive duration, e.g. '20ms'")
        if isinstance(w, TraceWorkload):
            at = f"vms[{i}]"
            if w.burst == 0:
                yield scenario_error(f"{at}.workload.burst", "0ns", "a positive duration, e.g. '10ms'")
            if w.format == "bitbrains" and w.vm_id is None:
                yield scenario_error(f"{at}.workload.vm_id", None, "a Bitbrains VM id (required for format bitbrains)")
            if w.format == "planetlab" and w.vm_id is not None:
                yield scenario_error(f"{at}.workload.vm_id", w.vm_id, "no vm_id for format planetlab (one VM per file)")


def _entry_name(i: int, count: int) -> str:
    """How an error names the VM entry that already has a name: ``vms[3].name with count 10``."""
    return f"vms[{i}].name" + (f" with count {count}" if count > 1 else "")


def _names(names: dict[str, int]) -> str:
    return ", ".join(names) if names else "(no pools are defined)"


def _limit_errors(at: str, reservation: int, limit: Optional[int]) -> Iterator[ScenarioError]:
    if limit is not None and reservation > limit:
        yield scenario_error(
            f"{at}.reservation",
            _units.format_frequency(reservation),
            f"at most the limit, {_units.format_frequency(limit)}",
        )


def _cycle_errors(pools: list[ResourcePool], index: dict[str, int]) -> Iterator[ScenarioError]:
    parent = {p.name: p.parent for p in pools}
    if len(parent) == len(pools) and not _has_cycle(parent):
        return  # the usual case, in one pass over the pools; the walk below is per pool
    for i, p in enumerate(pools):
        chain = [p.name]
        on_chain = {p.name}
        cur = p.parent
        while cur is not None and cur in parent:
            if cur == p.name:
                loop = " -> ".join(chain + [cur])
                yield scenario_error(f"resource_pools[{i}].parent", p.parent, f"a pool that is not its own ancestor (cycle {loop})")
                return  # one report per cycle is enough
            if cur in on_chain:  # a cycle further up; it is reported at its own pools
                break
            chain.append(cur)
            on_chain.add(cur)
            cur = parent[cur]


def _has_cycle(parent: dict[str, Optional[str]]) -> bool:
    """Does following ``parent`` from some name come back to it? Each name is visited once."""
    done: set[str] = set()  # names whose walk up ends (at null, an unknown name or a done name)
    for start in parent:
        path: set[str] = set()
        cur: Optional[str] = start
        while cur is not None and cur in parent and cur not in done:
            if cur in path:
                return True
            path.add(cur)
            cur = parent[cur]
        done |= path
    return False
