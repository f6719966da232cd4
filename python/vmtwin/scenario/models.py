"""The scenario schema's models, from the host to the whole scenario, and their normalization
into the engine spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    Strict,
    StringConstraints,
    field_validator,
    model_validator,
)

from vmtwin import traces as _trace_io
from vmtwin import units as _units
from vmtwin.exceptions import ScenarioError, scenario_error
from vmtwin.scenario._gc import gc_paused
from vmtwin.scenario.checks import _semantic_errors
from vmtwin.scenario.errors import _prefixed
from vmtwin.scenario.limits import MAX_TIME_NS
from vmtwin.scenario.perf import PerfMachine, VmPerf, engine_section
from vmtwin.scenario import memory as _memory
from vmtwin.scenario import storage as _storage
from vmtwin.scenario.fields import (
    POOL_SHARES,
    VM_SHARES_PER_VCPU,
    _U64_MAX,
    Bytes,
    Fraction,
    LimitMhz,
    Mhz,
    Name,
    Nanos,
    PosInt,
    Shares,
    ThreadsPerCore,
    _Model,
)


# --------------------------------------------------------------------------------------------
# Host and scheduler
# --------------------------------------------------------------------------------------------


class Host(_Model):
    """One ESX host: topology (sockets > NUMA nodes > LLCs > cores > threads), clock, memory."""

    name: Name = Field("esx01", description="Host name.")
    sockets: PosInt = Field(1, description="CPU sockets (integer >= 1).")
    numa_nodes_per_socket: PosInt = Field(1, description="NUMA nodes per socket (integer >= 1).")
    llcs_per_node: PosInt = Field(1, description="Last-level caches per NUMA node (integer >= 1).")
    cores_per_llc: PosInt = Field(description="Cores sharing one last-level cache (integer >= 1).")
    threads_per_core: ThreadsPerCore = Field(1, description="Hardware threads per core: 1, or 2 (hyperthreading).")
    core_mhz: Mhz = Field("2600MHz", description="Core clock, e.g. '2600MHz'.")
    memory: Bytes = Field("64GB", description="Host physical memory, e.g. '64GB'.")

    @property
    def cores(self) -> int:
        """Physical cores on the host."""
        return self.sockets * self.numa_nodes_per_socket * self.llcs_per_node * self.cores_per_llc

    @property
    def logical_cpus(self) -> int:
        """Logical CPUs (pCPUs as esxtop counts them): cores x threads."""
        return self.cores * self.threads_per_core


#: CPU scheduler keys passed to the engine as they are (the others are durations, in ns).
_UNITLESS_SCHED_KEYS = (
    "demand_ewma_weight",
    "demand_wait_power",
    "demand_probe_margin",
    "short_margin",
    "limit_share_split_below",
    "limit_dormant_max",
    "cosched_mode",
    "llc_aware",
    "llc_balance",
    "extended_fairness",
    "numa_home_nodes",
    "numa_wide_vms",
    "numa_confine",
    "numa_vcpu_max_per_machine_node",
    "numa_rebalance_imbalance",
    "migrate_wait_factor",
    "migration_throttle",
    "migration_throttle_share",
    "hyperthreading",
    "ht_core_gain",
    "ht_used_charge",
    "ht_whole_core_first",
    "ht_compensation",
    "cell_size",
    "cell_rebalance_imbalance",
    "inter_vm_cache_affinity",
)


class CpuScheduler(_Model):
    """CPU scheduler parameters; every one is optional and defaults to the engine's value."""

    quantum: Optional[Nanos] = Field(None, description="Time slice, e.g. '50ms'.")
    entitlement_interval: Optional[Nanos] = Field(None, description="How often entitlements are recomputed, e.g. '1s'.")
    limit_burst: Optional[Nanos] = Field(None, description="Burst a limited VM may run ahead of its limit, e.g. '100ms'.")
    limit_min_slice: Optional[Nanos] = Field(
        None, description="Turn of a CPU limit: a throttled VM runs again once it has earned this much CPU per vCPU "
        "that wants to run, e.g. '5ms' (default)."
    )
    limit_borrow: Optional[Nanos] = Field(
        None, description="Most debt a vCPU held by a limit may run into on a pCPU that would otherwise idle (repaid "
        "before it runs again), e.g. '1ms' (default)."
    )
    limit_share_split_below: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1.0)]] = Field(
        None, description="Fraction of a pool limit's bucket depth below which its children's shares of the limit bind; "
        "a throttled bucket resumes at most at half of it. In (0, 1]; default 0.5."
    )
    limit_dormant_max: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1.0)]] = Field(
        None, description="Longest a pool limit far from binding stays dormant, as a fraction of limit_burst, in (0, 1] "
        "and at least limit_min_slice / limit_burst; default 0.25."
    )
    wake_preempt_margin: Optional[Nanos] = Field(None, description="Priority margin for a waking vCPU to preempt, e.g. '1ms'.")
    max_lag: Optional[Nanos] = Field(None, description="Most CPU time a vCPU may be owed by the fair clock, e.g. '100ms'.")
    max_debt: Optional[Nanos] = Field(
        None, description="Most CPU time a vCPU may owe the fair clock, e.g. '300ms'."
    )
    max_backlog_debt: Optional[Nanos] = Field(
        None, description="Most CPU time a backlogged vCPU of a held-back VM may owe the fair clock at an entitlement "
        "update (less than max_debt reads as max_debt), e.g. '3s'."
    )
    demand_ewma_weight: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1.0)]] = Field(
        None, description="Weight of the newest sample in the demand EWMA, in (0, 1]."
    )
    demand_wait_power: Optional[Annotated[int, Strict(), Field(ge=0, le=32)]] = Field(
        None, description="Power p of the waiting share in the demand estimate: held time counts as demand in proportion "
        "to (held / (held + idle))^p. An integer from 0 (every held ns counts) to 32; default 3."
    )
    demand_probe_margin: Optional[Annotated[float, Strict(), Field(ge=0.0, le=1.0)]] = Field(
        None, description="How far above its run time (pCPUs per vCPU) a satisfied vCPU that never halted may read its "
        "READY time as demand, where that is more than its entitlement allows, in [0, 1]; default 0.01."
    )
    demand_drain_horizon: Optional[Nanos] = Field(
        None, description="Horizon of a vCPU's drain rate (what it ran between intervals in which it halted), which bounds "
        "the demand read for a satisfied vCPU that never halted in an interval, e.g. '60s'; default 60s."
    )
    short_margin: Optional[Annotated[float, Strict(), Field(ge=0.0, le=1.0)]] = Field(
        None, description="How far short of its entitlement (a fraction of one interval's) a VM that waited must have run "
        "for wakers entitled to less to be barred from preempting it, in [0, 1]; default 0.05."
    )
    cosched_mode: Optional[Literal["off", "strict", "relaxed-3x", "relaxed-4x"]] = Field(
        None, description="Co-scheduling of multi-vCPU VMs: 'off', 'strict' (ESX 2.x: VM-wide co-stop, gang co-start "
        "of all vCPUs), 'relaxed-3x' (ESX 3.x: gang co-start of the laggards) or 'relaxed-4x' (ESX 4: leaders "
        "co-stopped by skew); docs/cosched.md."
    )
    cosched_skew_threshold: Optional[Nanos] = Field(
        None, description="Skew past which co-scheduling co-stops (%CSTP), e.g. '3ms'."
    )
    cosched_costart_skew: Optional[Nanos] = Field(
        None, description="Where a co-stop ends: relaxed-4x, a co-stopped vCPU starts again once no sibling is more than "
        "this behind it (its laggards caught up); relaxed-3x, the VM's other vCPUs stay co-stopped until its co-started "
        "laggards' skew is down to this. At most cosched_skew_threshold, e.g. '0ms' (default); docs/cosched.md."
    )
    llc_aware: Optional[Annotated[bool, Strict()]] = Field(
        None, description="LLC-aware placement and pulls (ESX 4): true (default) or false."
    )
    llc_balance: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Place a waking vCPU on the least busy LLC (ESX 4 per-LLC balancing; needs llc_aware): false (default) or true."
    )
    extended_fairness: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Extended fairness (ESX 4): periodically swap the most and least LLC-crowded VMs' vCPUs, false (default) or true."
    )
    extended_fairness_period: Optional[Nanos] = Field(None, description="How often extended fairness may swap, e.g. '3s'.")
    numa_home_nodes: Optional[Annotated[bool, Strict()]] = Field(
        None, description="NUMA home nodes and the NUMA balancer: true (default) or false."
    )
    numa_confine: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Confine NUMA-managed vCPUs to their home node: false (default) or true."
    )
    numa_wide_vms: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Wide-VM NUMA (ESX 4.1): split a VM wider than a node into NUMA clients, true (default) or false."
    )
    numa_vcpu_max_per_machine_node: Optional[Annotated[int, Strict(), Field(ge=0)]] = Field(
        None, description="numa.vcpu.maxPerMachineNode: most vCPUs per NUMA client; 0 (default) = a node's cores."
    )
    numa_rebalance_period: Optional[Nanos] = Field(None, description="How often the NUMA balancer runs, e.g. '2s'.")
    numa_rebalance_imbalance: Optional[Annotated[float, Strict(), Field(ge=0.0)]] = Field(
        None, description="Node load gap (demand per core) above which a VM's home moves, >= 0."
    )
    migrate_cost_core: Optional[Nanos] = Field(None, description="Cost of a move to another core of the LLC, e.g. '40us'.")
    migrate_cost_llc: Optional[Nanos] = Field(None, description="Cost of a move to another LLC of the node, e.g. '800us'.")
    migrate_cost_node: Optional[Nanos] = Field(None, description="Cost of a move to another NUMA node, e.g. '1200us'.")
    migrate_wait_factor: Optional[Annotated[float, Strict(), Field(ge=0.0, le=1000.0)]] = Field(
        None, description="A free pCPU with an empty queue pulls a READY vCPU queued elsewhere only once it has waited "
        "this many times the move's cost (migrate_cost_*), in [0, 1000]; 0 (default) = pull at once, "
        "1 = ski-rental break-even (docs/cpu-scheduler.md)."
    )
    migration_throttle: Optional[Annotated[bool, Strict()]] = Field(
        None, description="CPU-load-based migration throttling (ESX 4): false (default) or true."
    )
    migration_throttle_share: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1.0)]] = Field(
        None, description="Load share of its pCPU at which throttling keeps a vCPU in place, in (0, 1]."
    )
    hyperthreading: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Run vCPUs on both threads of a threads_per_core: 2 host: true (default) or false (docs/hyperthreading.md)."
    )
    ht_core_gain: Optional[Annotated[float, Strict(), Field(ge=0.0, le=1.0)]] = Field(
        None, description="Extra throughput of a core with both threads busy, in [0, 1]; each thread then does (1 + gain) / 2. Default 0.25."
    )
    ht_used_charge: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1.0)]] = Field(
        None, description="Share of run time beside a busy sibling thread charged in %USED, in (0, 1]. Default 0.5 (esxtop)."
    )
    ht_whole_core_first: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Prefer a whole idle core to a thread beside a busy one: true (default) or false."
    )
    ht_compensation: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Give whole cores in turn to vCPUs stuck beside busy siblings: true (default) or false."
    )
    cell_size: Optional[Annotated[int, Strict(), Field(ge=0)]] = Field(
        None, description="ESX 3.x scheduler cells of this many cores (whole LLCs; a VM runs within one cell); "
        "0 (default) = no cells, ESX 4's per-pCPU scheduling (docs/cells.md)."
    )
    cell_rebalance_period: Optional[Nanos] = Field(None, description="How often the cell balancer may move a whole VM, e.g. '2s'.")
    cell_rebalance_imbalance: Optional[Annotated[float, Strict(), Field(ge=0.0)]] = Field(
        None, description="Cell load gap (demand per pCPU) above which the cell balancer moves a VM, >= 0. Default 0.1."
    )
    inter_vm_cache_affinity: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Place communicating VMs (vms[].cpu.communicates_with) in one LLC when a pCPU is free there: "
        "true (default) or false."
    )


# --------------------------------------------------------------------------------------------
# Resource allocation
# --------------------------------------------------------------------------------------------


class VmCpu(_Model):
    """A VM's CPU allocation: shares, reservation and limit, as in vSphere."""

    shares: Shares = Field("normal", description="low|normal|high (500/1000/2000 per vCPU) or a custom integer for the whole VM.")
    reservation: Mhz = Field("0MHz", description="Guaranteed MHz, e.g. '1000MHz'.")
    limit: LimitMhz = Field(None, description="Upper bound in MHz, or 'unlimited'.")
    ht_sharing: Literal["any", "internal", "none"] = Field(
        "any", description="sched.cpu.htsharing: who may run on the other thread of its vCPUs' cores (any, internal, none)."
    )
    vsmp_consolidate: Annotated[bool, Strict()] = Field(
        False, description="sched.cpu.vsmpConsolidate: place its vCPUs in one LLC when pCPUs are free there (docs/cells.md)."
    )
    communicates_with: list[Name] = Field(
        default_factory=list, description="Names of VMs it talks to: inter-VM cache affinity places them in one LLC."
    )


class PoolCpu(_Model):
    """A resource pool's CPU allocation."""

    shares: Shares = Field("normal", description="low|normal|high (2000/4000/8000) or a custom integer.")
    reservation: Mhz = Field("0MHz", description="Guaranteed MHz for the pool, e.g. '2000MHz'.")
    limit: LimitMhz = Field(None, description="Upper bound in MHz, or 'unlimited'.")
    expandable_reservation: Annotated[bool, Strict()] = Field(
        True, description="May the pool borrow unreserved capacity from its parent (true/false)."
    )


class ResourcePool(_Model):
    """A resource pool; ``parent: null`` (the default) hangs it under the host's root pool."""

    name: Name = Field(description="Pool name, unique among pools.")
    parent: Optional[Name] = Field(None, description="Name of the parent pool, or null for the root pool.")
    cpu: PoolCpu = Field(default_factory=PoolCpu, description="CPU shares, reservation, limit.")


# --------------------------------------------------------------------------------------------
# Workloads (tagged by `type`)
# --------------------------------------------------------------------------------------------


class Idle(_Model):
    """A powered-on VM whose guest does nothing."""

    type: Literal["idle"] = "idle"


class CpuBound(_Model):
    """CPU work at ``duty`` of each vCPU.

    ``arrivals: closed`` (the default): each vCPU runs ``burst`` then thinks
    ``burst * (1 - duty) / duty``, so a contended vCPU falls behind. ``arrivals: open``: a burst
    of work arrives every ``burst / duty`` whether or not the last is done, and unfinished work
    queues in the guest, so demand is exactly ``duty`` whatever the contention.
    """

    type: Literal["cpu_bound"] = "cpu_bound"
    duty: Fraction = Field(description="Fraction of time each vCPU wants to run, in (0, 1].")
    burst: Nanos = Field("20ms", description="CPU work per burst, e.g. '20ms'.")
    burst_distribution: Literal["fixed", "exponential"] = Field(
        "exponential", description="Burst and think lengths: fixed, or exponential around their means."
    )
    arrivals: Literal["closed", "open"] = Field(
        "closed", description="closed: think after each burst; open: work arrives every burst/duty and queues."
    )


class TraceWorkload(_Model):
    """Replay of a real CPU-utilisation trace (PlanetLab or Bitbrains) on every vCPU.

    ``path`` is relative to the scenario file's folder (or to the working directory for a
    scenario built in Python). ``offset`` skips the start of the trace; ``speedup`` divides
    every segment's length (``speedup: 144`` plays a PlanetLab day in 10 minutes).
    """

    type: Literal["trace"] = "trace"
    format: Literal["planetlab", "bitbrains"] = Field(description="Trace format: planetlab or bitbrains.")
    path: Annotated[str, Strict(), StringConstraints(min_length=1)] = Field(
        description="Trace file (planetlab) or tasks-fragments folder (bitbrains), relative to the scenario file."
    )
    vm_id: Optional[Annotated[int, Strict(), Field(ge=0)]] = Field(
        None, description="Bitbrains VM id (required for bitbrains, not allowed for planetlab)."
    )
    burst: Nanos = Field("10ms", description="Length of one CPU burst while replaying, e.g. '10ms'.")
    loop: Annotated[bool, Strict()] = Field(True, description="Start over when the trace ends.")
    offset: Nanos = Field("0s", description="Skip this much of the trace's start, e.g. '6h'.")
    speedup: Annotated[float, Strict(), Field(gt=0.0, le=1e6)] = Field(
        1.0, description="Play the trace this many times faster (segment lengths are divided by it)."
    )


class Barrier(_Model):
    """A PARSEC-like multi-threaded program: one thread per vCPU computes a phase, then waits at
    a barrier for all the others (docs/cosched.md).

    ``wait: spin`` (the default) busy-waits, using CPU for no useful work while a sibling is
    descheduled; ``wait: halt`` blocks and halts the vCPU until the last thread arrives.
    """

    type: Literal["barrier"] = "barrier"
    phase: Nanos = Field("5ms", description="Mean CPU work per thread per phase, e.g. '5ms'.")
    phase_distribution: Literal["fixed", "exponential"] = Field(
        "fixed", description="Phase work per thread: fixed, or exponential (threads arrive at different times)."
    )
    wait: Literal["spin", "halt"] = Field("spin", description="How an early thread waits: spin (busy) or halt (block).")
    spin_limit: Optional[Nanos] = Field(None, description="Spin at most this long at one barrier, then halt; "
                                        "none: spin until released.")
    spin_poll: Nanos = Field("50us", description="CPU a spinning thread spins between looks at the barrier "
                             "(the model's granularity), e.g. '50us'.")

    @field_validator("phase", "spin_poll")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("a positive duration, e.g. '5ms'")
        return v


Workload = Annotated[Union[Idle, CpuBound, TraceWorkload, Barrier], Field(discriminator="type")]
_WORKLOADS: dict[str, type[_Model]] = {"idle": Idle, "cpu_bound": CpuBound, "trace": TraceWorkload, "barrier": Barrier}


class VM(_Model):
    """A virtual machine; ``count > 1`` expands it to ``<name>-1 .. <name>-<count>``."""

    name: Name = Field(description="VM name, unique after count expansion.")
    pool: Optional[Name] = Field(None, description="Resource pool name, or null for the root pool.")
    vcpus: PosInt = Field(1, description="Virtual CPUs, 1 .. the host's logical CPUs.")
    memory: Bytes = Field("4GB", description="Configured memory, e.g. '4GB'.")
    count: PosInt = Field(1, description="Number of identical VMs (names get -1..-N when > 1).")
    power_on: Nanos = Field("0s", description="Power-on time from the start of the run, e.g. '30s'.")
    cpu: VmCpu = Field(default_factory=VmCpu, description="CPU shares, reservation, limit.")
    workload: Workload = Field(description="What the guest runs: type idle, cpu_bound or trace.")
    perf: Optional[VmPerf] = Field(None, description="Execution-speed profile: counters and throughput (docs/execution-speed.md).")
    memory_allocation: Optional[_memory.MemoryAllocation] = Field(None, description="Memory reservation, limit, shares (needs memory:).")
    guest_memory: Optional[_memory.GuestMemory] = Field(None, description="Guest memory contents and touches (needs memory:; docs/memory.md).")
    host: Optional[Name] = Field(None, description="Clusters only: pin the VM to this host (else placed by policy).")
    cluster: Optional[Name] = Field(None, description="Clusters only: the cluster to place the VM in (default: the first).")

    def expanded_names(self) -> list[str]:
        """Names of the VMs this entry stands for, after ``count`` expansion."""
        if self.count == 1:
            return [self.name]
        return [f"{self.name}-{k}" for k in range(1, self.count + 1)]


# --------------------------------------------------------------------------------------------
# Scenario
# --------------------------------------------------------------------------------------------


class Scenario(_Model):
    """A whole scenario: one host, its pools and VMs, the run length and the sampling interval."""

    # One host and its VMs, or clusters of hosts (docs/cluster.md).
    model_config = {**_Model.model_config, "json_schema_extra": {"anyOf": [{"required": ["host", "vms"]},
                                                                           {"required": ["clusters"]}]}}

    name: Name = Field("scenario", description="Scenario name (used for results folders).")
    description: Annotated[str, Strict()] = Field("", description="Free text.")
    seed: Annotated[int, Strict(), Field(ge=0, le=_U64_MAX)] = Field(0, description="RNG seed (unsigned 64-bit).")
    duration: Nanos = Field("10min", description="Simulated time, e.g. '10min'.")
    sample_interval: Nanos = Field("2s", description="Counter sampling interval; default '2s', esxtop's minimum.")
    fidelity: Optional[Literal["event", "fluid"]] = Field(
        None, description="How hosts are simulated: 'event' (every CPU burst; the default) or 'fluid' (one water-fill "
        "of entitlements per sample interval, for days and months of traces; docs/fluid.md).")
    host: Optional[Host] = Field(None, description="The ESX host (required unless the scenario has clusters).")
    cpu_scheduler: CpuScheduler = Field(default_factory=CpuScheduler, description="Optional CPU scheduler parameters.")
    resource_pools: list[ResourcePool] = Field(default_factory=list, description="Resource pools, nested via parent.")
    vms: list[VM] = Field(default_factory=list, description="The VMs (at least one, unless clusters replay trace sets).")
    perf: Optional[PerfMachine] = Field(None, description="Execution-speed model's machine tunables (docs/execution-speed.md).")
    memory: Optional[_memory.HostMemory] = Field(None, description="Memory policy; turns the memory model on (docs/memory.md).")
    storage: Optional[_storage.Storage] = Field(None, description="Adapters, arrays, datastores, VM disks and their "
                                               "I/O, path events (docs/storage.md).")
    clusters: list[Cluster] = Field(default_factory=list, description="Clusters of hosts the VMs are placed on "
                                    "(instead of host; see docs/cluster.md).")

    # Folder that relative trace paths are resolved against (the scenario file's folder).
    _base_dir: Optional[Path] = PrivateAttr(default=None)
    # Traces read from disk, keyed by index in `vms`, so validation and to_engine_spec read once.
    _trace_cache: dict[int, _trace_io.Trace] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _semantics(self) -> "Scenario":
        for err in _cluster_checks.scenario_errors(self, _semantic_errors):
            raise err  # the first one; raised as ScenarioError, see _convert_validation_error
        if (err := _memory.memory_errors(self)) is not None:
            raise err
        if (err := _storage.storage_errors(self)) is not None:
            raise err
        return self

    # -- traces ----------------------------------------------------------------------------

    @property
    def base_dir(self) -> Path:
        """Folder relative trace paths are resolved against (the file's folder, else the cwd)."""
        return self._base_dir if self._base_dir is not None else Path.cwd()

    def load_traces(self) -> dict[int, _trace_io.Trace]:
        """Read every trace workload's file (once); errors name ``vms[i].workload.*`` and the file.

        Returns
        -------
        dict[int, Trace]
            The raw traces (before offset/speedup) keyed by index in :attr:`vms`.
        """
        reader = _trace_io.TraceReader()  # VMs replaying the same trace share one read
        total_ns: dict[int, int] = {}  # id(trace) -> its length
        for i, vm in enumerate(self.vms):
            w = vm.workload
            if not isinstance(w, TraceWorkload) or i in self._trace_cache:
                continue
            where = f"vms[{i}].workload.path"
            p = Path(w.path)
            if not p.is_absolute():
                p = self.base_dir / p
            try:
                if w.format == "planetlab":
                    tr = reader.planetlab(p)
                else:
                    tr = reader.bitbrains(p, w.vm_id)
            except ScenarioError as exc:
                raise _prefixed(where, exc) from None
            length = total_ns.get(id(tr))
            if length is None:
                length = total_ns[id(tr)] = tr.total_ns
            longest = max(tr.segment_ns)
            if longest / w.speedup > MAX_TIME_NS:
                raise scenario_error(
                    f"vms[{i}].workload.speedup",
                    w.speedup,
                    f"at least {longest / MAX_TIME_NS:.3g} for this trace (slowed by less, its longest segment, "
                    f"{_units.format_duration(longest)}, would outlast the engine clock's 100-year bound)",
                )
            if w.offset >= length:
                raise scenario_error(
                    f"vms[{i}].workload.offset",
                    _units.format_duration(w.offset),
                    f"less than the trace's length, {_units.format_duration(length)}",
                )
            self._trace_cache[i] = tr
        return self._trace_cache

    # -- outputs ---------------------------------------------------------------------------

    @gc_paused()  # thousands of VMs: see vmtwin.scenario._gc
    def to_engine_spec(self) -> dict:
        """The normalized engine spec of ``docs/reference/engine-contract.md``.

        Integers in ns, MHz and bytes; shares resolved to absolute numbers; pools parents first;
        VMs expanded by ``count``; trace workloads read into ``segment_ns``/``utilization``.

        Returns
        -------
        dict
            JSON-serializable; ``json.dumps`` it for ``vmtwin._core.Simulation``.

        Raises
        ------
        ScenarioError
            If the scenario was changed in place into an invalid one, or a trace cannot be read.
        """
        # Lists may have been edited in place since construction: check again.
        for err in _cluster_checks.scenario_errors(self, _semantic_errors, one_host=True):
            raise err
        traces = self.load_traces()
        h = self.host
        # Only the parameters the user set: the engine owns the defaults (contract: partial is fine).
        sched = {}
        for key in CpuScheduler.model_fields:
            value = getattr(self.cpu_scheduler, key)
            if value is not None:
                sched[key if key in _UNITLESS_SCHED_KEYS else f"{key}_ns"] = value
        pools = [
            {
                "name": p.name,
                "parent": p.parent,
                "shares": _resolve_shares(p.cpu.shares, POOL_SHARES, 1),
                "reservation_mhz": p.cpu.reservation,
                "limit_mhz": p.cpu.limit,
                "expandable": p.cpu.expandable_reservation,
            }
            for p in _parents_first(self.resource_pools)
        ]
        ht_sharing = {
            name: vm.cpu.ht_sharing for vm in self.vms if vm.cpu.ht_sharing != "any" for name in vm.expanded_names()
        }
        if ht_sharing:
            sched["ht_sharing"] = ht_sharing
        consolidate = sorted(name for vm in self.vms if vm.cpu.vsmp_consolidate for name in vm.expanded_names())
        if consolidate:
            sched["vsmp_consolidate"] = consolidate
        talks = [[name, other] for vm in self.vms for name in vm.expanded_names() for other in vm.cpu.communicates_with]
        if talks:
            sched["communicating_vms"] = talks
        vms = []
        shaped: dict[tuple, dict] = {}  # VMs replaying the same trace the same way share one spec
        for i, vm in enumerate(self.vms):
            w = vm.workload
            if isinstance(w, TraceWorkload):
                tr = traces.get(i)
                key = (id(tr), w.offset, w.speedup, w.burst, w.loop)
                workload = shaped.get(key)
                if workload is None:
                    workload = shaped[key] = _workload_spec(w, tr)
            else:
                workload = _workload_spec(w, None)
            entry = {
                "pool": vm.pool,
                "vcpus": vm.vcpus,
                "memory_bytes": vm.memory,
                "shares": _resolve_shares(vm.cpu.shares, VM_SHARES_PER_VCPU, vm.vcpus),
                "reservation_mhz": vm.cpu.reservation,
                "limit_mhz": vm.cpu.limit,
                "power_on_ns": vm.power_on,
                "workload": workload,
            }
            if vm.count == 1:
                vms.append({"name": vm.name, **entry})
            else:
                vms.extend({"name": name, **entry} for name in vm.expanded_names())
        return {
            "seed": self.seed,
            "duration_ns": self.duration,
            "sample_interval_ns": self.sample_interval,
            "host": {
                "name": h.name,
                "sockets": h.sockets,
                "numa_nodes_per_socket": h.numa_nodes_per_socket,
                "llcs_per_node": h.llcs_per_node,
                "cores_per_llc": h.cores_per_llc,
                "threads_per_core": h.threads_per_core,
                "core_mhz": h.core_mhz,
                "memory_bytes": h.memory,
            },
            "cpu_sched": sched,
            "pools": pools,
            "vms": vms,
            **({"fidelity": self.fidelity} if self.fidelity else {}),
            **engine_section(self),
            **_storage.engine_section(self),
            **_memory.engine_section(self),
        }

    def to_engine_json(self) -> str:
        """:meth:`to_engine_spec` as compact JSON text, what ``Simulation(spec_json)`` takes."""
        return json.dumps(self.to_engine_spec(), separators=(",", ":"))

    def to_yaml(self) -> str:
        """The scenario as YAML in file form (units as strings); ``parse_scenario`` reads it back."""
        return yaml.safe_dump(self.model_dump(mode="json", exclude_none=True), sort_keys=False, allow_unicode=True)


# --------------------------------------------------------------------------------------------
# Normalization helpers
# --------------------------------------------------------------------------------------------


def _resolve_shares(shares: Union[str, int], levels: dict[str, int], vcpus: int) -> int:
    """Symbolic level x per-vCPU value (pools pass vcpus=1); a custom integer is taken as is."""
    if isinstance(shares, str):
        return levels[shares] * vcpus
    return shares


def _parents_first(pools: list[ResourcePool]) -> list[ResourcePool]:
    """Order pools so each parent precedes its children, keeping file order otherwise.

    The order of repeated passes over the file that each take every pool whose parent is
    already taken: a pool is taken in its parent's pass when it comes after its parent in the
    file, else in the next one. Computed in one walk (passes would be quadratic in the depth).
    """
    index = {p.name: i for i, p in enumerate(pools)}
    if len(index) != len(pools):  # pragma: no cover - duplicate names are rejected by validation
        raise RuntimeError("duplicate resource pool name")
    rank = [0] * len(pools)  # pass (from 1) in which each pool is taken; 0 = not known yet
    for i in range(len(pools)):
        path = []  # pools above i whose pass is not known yet, nearest first
        j = i
        while rank[j] == 0:
            parent = pools[j].parent
            if parent is None:
                rank[j] = 1
                break
            if parent not in index or len(path) > len(pools):  # pragma: no cover - rejected by validation
                raise RuntimeError("resource pool cycle")
            path.append(j)
            j = index[parent]
        for j in reversed(path):
            k = index[pools[j].parent]  # type: ignore[index]
            rank[j] = rank[k] if k < j else rank[k] + 1
    return [pools[i] for i in sorted(range(len(pools)), key=lambda i: (rank[i], i))]


def _workload_spec(w: Any, trace: Optional[_trace_io.Trace]) -> dict:
    if isinstance(w, Idle):
        return {"kind": "idle"}
    if isinstance(w, CpuBound):
        return {"kind": "cpu_bound", "duty": w.duty, "burst_ns": w.burst, "burst_dist": w.burst_distribution,
                "arrivals": w.arrivals}
    if isinstance(w, Barrier):
        return {"kind": "barrier", "phase_ns": w.phase, "phase_dist": w.phase_distribution, "wait": w.wait,
                "spin_limit_ns": w.spin_limit, "spin_poll_ns": w.spin_poll}
    assert trace is not None
    seg, util = _shape_trace(trace.segment_ns, trace.utilization, w.offset, w.speedup)
    return {"kind": "trace", "segment_ns": seg, "utilization": util, "burst_ns": w.burst, "loop": w.loop}


def _shape_trace(seg: list[int], util: list[float], offset: int, speedup: float) -> tuple[list[int], list[float]]:
    """Skip ``offset`` ns of the trace (splitting a segment if needed), then compress time."""
    out_seg: list[int] = []
    out_util: list[float] = []
    skip = offset
    for s, u in zip(seg, util):
        if skip >= s:
            skip -= s
            continue
        out_seg.append(s - skip)
        out_util.append(u)
        skip = 0
    if speedup != 1.0:
        # Round each segment but never to 0 ns: the engine requires positive segments.
        out_seg = [max(1, int(round(s / speedup))) for s in out_seg]
    return out_seg, out_util


from vmtwin.cluster import checks as _cluster_checks  # noqa: E402 - the cluster section extends these models
from vmtwin.cluster.schema import Cluster  # noqa: E402

Scenario.model_rebuild()
