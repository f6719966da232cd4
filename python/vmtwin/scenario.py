"""The scenario schema: one pydantic model, the single source of truth for scenario files.

A scenario describes one ESX host, its resource-pool tree, its VMs and their workloads, and how
long to simulate. It is written in YAML (see ``scenarios/quickstart.yaml``) or built in Python::

    from vmtwin.scenario import Scenario, Host, VM, CpuBound
    sc = Scenario(host=Host(cores_per_llc=4), vms=[VM(name="a", workload=CpuBound(duty=1.0))])
    spec = sc.to_engine_spec()      # the normalized dict of docs/reference/engine-contract.md

Units (see :mod:`vmtwin.units`): sizes in bytes (GB = GiB = 2**30, as in vSphere), frequencies in
MHz, durations in ns. In YAML files a unit is mandatory (``memory: 4096`` is refused as ambiguous;
only ``0`` may omit it); Python builders also accept plain ints in those base units.

Errors: whatever is wrong, the user gets one :class:`~vmtwin.exceptions.ScenarioError` whose
message names the YAML path (``vms[1].cpu.limit``), the bad value and what is allowed, one line
per problem. Pydantic's ``ValidationError`` never escapes this module.

Checks that need the running engine (admission control of reservations against host and pool
capacity) are left to the engine, so they are written once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal, Optional, Union, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    Strict,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)

from vmtwin import traces as _trace_io
from vmtwin import units as _units
from vmtwin.exceptions import ScenarioError, scenario_error

__all__ = [
    "Scenario",
    "Host",
    "CpuScheduler",
    "ResourcePool",
    "PoolCpu",
    "VM",
    "VmCpu",
    "Idle",
    "CpuBound",
    "TraceWorkload",
    "Workload",
    "VM_SHARES_PER_VCPU",
    "POOL_SHARES",
    "load_scenario",
    "parse_scenario",
    "scenario_json_schema",
]

#: VM CPU shares per vCPU for the symbolic levels (vSphere: low/normal/high = 500/1000/2000).
VM_SHARES_PER_VCPU = {"low": 500, "normal": 1000, "high": 2000}
#: Resource-pool CPU shares for the symbolic levels (vSphere: 2000/4000/8000, i.e. a 4-vCPU VM).
POOL_SHARES = {"low": 2000, "normal": 4000, "high": 8000}
#: Largest custom shares value vSphere accepts.
MAX_CUSTOM_SHARES = 1_000_000
_U64_MAX = 2**64 - 1

# --------------------------------------------------------------------------------------------
# Field types. Each parses user input in a BeforeValidator, serializes back to the file form
# (so model_dump() re-parses to the same scenario), and declares what a YAML author may write
# in the JSON Schema (pydantic would otherwise say "integer" for a field that wants "4GB").
# --------------------------------------------------------------------------------------------


def _from_file(info: ValidationInfo) -> bool:
    """True while validating a scenario file: bare numbers need a unit there."""
    return bool(info.context and info.context.get("from_file"))


def _unit_type(parse, fmt, pattern: str, description: str):
    def validate(value: Any, info: ValidationInfo) -> int:
        return parse(value, allow_bare=not _from_file(info))

    return Annotated[
        int,
        BeforeValidator(validate),
        PlainSerializer(fmt, return_type=str),
        WithJsonSchema(
            {
                "anyOf": [{"type": "string", "pattern": pattern}, {"type": "integer", "const": 0}],
                "description": description,
            }
        ),
    ]


_NUM = r"^\s*[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*"
Bytes = _unit_type(
    _units.parse_size,
    _units.format_size,
    _NUM + r"([KkMmGgTt]?[Ii]?[Bb])\s*$",
    "A size: B, KB, MB, GB, TB (binary: GB = GiB = 2^30 bytes) or KiB..TiB, e.g. '4GB'.",
)
Mhz = _unit_type(
    _units.parse_frequency,
    _units.format_frequency,
    _NUM + r"([MmGg][Hh][Zz])\s*$",
    "A frequency: MHz or GHz, e.g. '2600MHz', '2.6GHz'.",
)
Nanos = _unit_type(
    _units.parse_duration,
    _units.format_duration,
    _NUM + r"(ns|us|µs|ms|s|min|h)\s*$",
    "A duration: ns, us, ms, s, min or h, e.g. '50ms', '10min'.",
)


def _parse_limit(value: Any, info: ValidationInfo) -> Optional[int]:
    # vSphere's API spells unlimited -1; the UI says "Unlimited". Accept both, and null.
    if value is None or value == -1 and not isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lower() == "unlimited":
        return None
    try:
        return _units.parse_frequency(value, allow_bare=not _from_file(info))
    except ValueError as exc:
        raise ValueError(f"'unlimited' or {exc}") from None


LimitMhz = Annotated[
    Optional[int],
    BeforeValidator(_parse_limit),
    PlainSerializer(lambda v: "unlimited" if v is None else _units.format_frequency(v), return_type=str),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^(unlimited|" + _NUM[1:] + r"([MmGg][Hh][Zz])\s*)$"},
                {"type": "integer", "const": -1},
                {"type": "null"},
            ],
            "description": "A CPU limit: 'unlimited' (or -1, or null) or a frequency such as '1500MHz'.",
        }
    ),
]


def _parse_shares(value: Any) -> Union[str, int]:
    allowed = f"low, normal, high, or a custom integer from 1 to {MAX_CUSTOM_SHARES}"
    if isinstance(value, str) and value.strip().lower() in VM_SHARES_PER_VCPU:
        return value.strip().lower()
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_CUSTOM_SHARES:
        return value
    raise ValueError(allowed)


Shares = Annotated[
    Union[Literal["low", "normal", "high"], int],
    BeforeValidator(_parse_shares),
    WithJsonSchema(
        {
            "anyOf": [
                {"enum": ["low", "normal", "high"]},
                {"type": "integer", "minimum": 1, "maximum": MAX_CUSTOM_SHARES},
            ],
            "description": "Shares: low, normal, high (resolved as vSphere does) or a custom integer.",
        }
    ),
]

Name = Annotated[
    str,
    Strict(),
    # No leading/trailing blanks or control characters: names end up in tables and file names.
    StringConstraints(min_length=1, max_length=80, pattern=r"^[^\s\x00-\x1f](?:[^\x00-\x1f]*[^\s\x00-\x1f])?$"),
]
PosInt = Annotated[int, Strict(), Field(ge=1)]


def _threads(value: Any) -> int:
    # Literal[1, 2] alone would take True and 2.0; a thread count is an integer.
    if isinstance(value, int) and not isinstance(value, bool) and value in (1, 2):
        return value
    raise ValueError("1 or 2 (2 = hyperthreading)")


ThreadsPerCore = Annotated[Literal[1, 2], BeforeValidator(_threads)]
Fraction = Annotated[float, Strict(), Field(gt=0.0, le=1.0)]


class _ModelMeta(type(BaseModel)):
    """Metaclass whose ``__call__`` turns a builder's ValidationError into ScenarioError.

    Overriding ``__init__`` would not do: pydantic then calls that ``__init__`` for every nested
    model while validating a file, losing the validation context and the YAML path.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise _convert_validation_error(exc, cls, prefix=cls.__name__) from None


class _Model(BaseModel, metaclass=_ModelMeta):
    """Base of every schema model: unknown keys are errors, errors become ScenarioError."""

    # validate_default: defaults are written in file form ("4GB") so the JSON Schema shows them so.
    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=True)


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


class CpuScheduler(_Model):
    """CPU scheduler parameters; every one is optional and defaults to the engine's value."""

    quantum: Optional[Nanos] = Field(None, description="Time slice, e.g. '50ms'.")
    entitlement_interval: Optional[Nanos] = Field(None, description="How often entitlements are recomputed, e.g. '1s'.")
    limit_burst: Optional[Nanos] = Field(None, description="Burst a limited VM may run ahead of its limit, e.g. '100ms'.")
    wake_preempt_margin: Optional[Nanos] = Field(None, description="Priority margin for a waking vCPU to preempt, e.g. '1ms'.")
    wake_credit: Optional[Nanos] = Field(None, description="Credit granted to a vCPU waking from a long wait, e.g. '50ms'.")
    demand_ewma_weight: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1.0)]] = Field(
        None, description="Weight of the newest sample in the demand EWMA, in (0, 1]."
    )


# --------------------------------------------------------------------------------------------
# Resource allocation
# --------------------------------------------------------------------------------------------


class VmCpu(_Model):
    """A VM's CPU allocation: shares, reservation and limit, as in vSphere."""

    shares: Shares = Field("normal", description="low|normal|high (500/1000/2000 per vCPU) or a custom integer for the whole VM.")
    reservation: Mhz = Field("0MHz", description="Guaranteed MHz, e.g. '1000MHz'.")
    limit: LimitMhz = Field(None, description="Upper bound in MHz, or 'unlimited'.")


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
    """Closed-loop CPU work: each vCPU runs ``burst`` then thinks ``burst * (1 - duty) / duty``."""

    type: Literal["cpu_bound"] = "cpu_bound"
    duty: Fraction = Field(description="Fraction of time each vCPU wants to run, in (0, 1].")
    burst: Nanos = Field("20ms", description="CPU work per burst, e.g. '20ms'.")
    burst_distribution: Literal["fixed", "exponential"] = Field(
        "exponential", description="Burst and think lengths: fixed, or exponential around their means."
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


Workload = Annotated[Union[Idle, CpuBound, TraceWorkload], Field(discriminator="type")]
_WORKLOADS: dict[str, type[_Model]] = {"idle": Idle, "cpu_bound": CpuBound, "trace": TraceWorkload}


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

    name: Name = Field("scenario", description="Scenario name (used for results folders).")
    description: Annotated[str, Strict()] = Field("", description="Free text.")
    seed: Annotated[int, Strict(), Field(ge=0, le=_U64_MAX)] = Field(0, description="RNG seed (unsigned 64-bit).")
    duration: Nanos = Field("10min", description="Simulated time, e.g. '10min'.")
    sample_interval: Nanos = Field("2s", description="Counter sampling interval; default '2s', esxtop's minimum.")
    host: Host = Field(description="The ESX host.")
    cpu_scheduler: CpuScheduler = Field(default_factory=CpuScheduler, description="Optional CPU scheduler parameters.")
    resource_pools: list[ResourcePool] = Field(default_factory=list, description="Resource pools, nested via parent.")
    vms: list[VM] = Field(min_length=1, description="The VMs (at least one).")

    # Folder that relative trace paths are resolved against (the scenario file's folder).
    _base_dir: Optional[Path] = PrivateAttr(default=None)
    # Traces read from disk, keyed by index in `vms`, so validation and to_engine_spec read once.
    _trace_cache: dict[int, _trace_io.Trace] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _semantics(self) -> "Scenario":
        for err in _semantic_errors(self):
            raise err  # the first one; raised as ScenarioError, see _convert_validation_error
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
                    tr = _trace_io.read_planetlab(p)
                else:
                    tr = _trace_io.read_bitbrains(p, w.vm_id)
            except ScenarioError as exc:
                raise _prefixed(where, exc) from None
            if w.offset >= tr.total_ns:
                raise scenario_error(
                    f"vms[{i}].workload.offset",
                    _units.format_duration(w.offset),
                    f"less than the trace's length, {_units.format_duration(tr.total_ns)}",
                )
            self._trace_cache[i] = tr
        return self._trace_cache

    # -- outputs ---------------------------------------------------------------------------

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
        for err in _semantic_errors(self):
            raise err
        traces = self.load_traces()
        h = self.host
        # Only the parameters the user set: the engine owns the defaults (contract: partial is fine).
        sched = {}
        for key in CpuScheduler.model_fields:
            value = getattr(self.cpu_scheduler, key)
            if value is not None:
                sched[key if key == "demand_ewma_weight" else f"{key}_ns"] = value
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
        vms = []
        for i, vm in enumerate(self.vms):
            workload = _workload_spec(vm.workload, traces.get(i))
            for name in vm.expanded_names():
                vms.append(
                    {
                        "name": name,
                        "pool": vm.pool,
                        "vcpus": vm.vcpus,
                        "memory_bytes": vm.memory,
                        "shares": _resolve_shares(vm.cpu.shares, VM_SHARES_PER_VCPU, vm.vcpus),
                        "reservation_mhz": vm.cpu.reservation,
                        "limit_mhz": vm.cpu.limit,
                        "power_on_ns": vm.power_on,
                        "workload": workload,
                    }
                )
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
    """Order pools so each parent precedes its children, keeping file order otherwise."""
    done: set[str] = set()
    out: list[ResourcePool] = []
    pending = list(pools)
    while pending:
        rest = []
        for p in pending:
            if p.parent is None or p.parent in done:
                out.append(p)
                done.add(p.name)
            else:
                rest.append(p)
        if len(rest) == len(pending):  # pragma: no cover - cycles are rejected by validation
            raise RuntimeError("resource pool cycle")
        pending = rest
    return out


def _workload_spec(w: Any, trace: Optional[_trace_io.Trace]) -> dict:
    if isinstance(w, Idle):
        return {"kind": "idle"}
    if isinstance(w, CpuBound):
        return {"kind": "cpu_bound", "duty": w.duty, "burst_ns": w.burst, "burst_dist": w.burst_distribution}
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


# --------------------------------------------------------------------------------------------
# Cross-field checks (the parts a per-field validator cannot see)
# --------------------------------------------------------------------------------------------


def _semantic_errors(sc: Scenario) -> Iterator[ScenarioError]:
    """Yield every cross-field problem, in file order, as a ScenarioError with its YAML path."""
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
    for field in ("quantum", "entitlement_interval", "limit_burst"):
        if getattr(sc.cpu_scheduler, field) == 0:
            yield scenario_error(f"cpu_scheduler.{field}", "0ns", "a positive duration")

    pools = {p.name: i for i, p in enumerate(sc.resource_pools)}
    seen: set[str] = set()
    for i, p in enumerate(sc.resource_pools):
        at = f"resource_pools[{i}]"
        if p.name in seen:
            yield scenario_error(f"{at}.name", p.name, "a pool name not used by an earlier pool")
        seen.add(p.name)
        if p.parent is not None and p.parent not in pools:
            yield scenario_error(f"{at}.parent", p.parent, f"null or the name of a pool: {_names(pools)}")
        yield from _limit_errors(f"{at}.cpu", p.cpu.reservation, p.cpu.limit)
    yield from _cycle_errors(sc.resource_pools, pools)

    vm_names: dict[str, str] = {}
    for i, vm in enumerate(sc.vms):
        at = f"vms[{i}]"
        for name in vm.expanded_names():
            if name in vm_names:
                yield scenario_error(
                    f"{at}.name", name, f"a VM name not already used (it is also {vm_names[name]})"
                )
            vm_names.setdefault(name, f"{at}.name" + (f" with count {vm.count}" if vm.count > 1 else ""))
        if vm.pool is not None and vm.pool not in pools:
            yield scenario_error(f"{at}.pool", vm.pool, f"null or the name of a pool: {_names(pools)}")
        if vm.vcpus > h.logical_cpus:
            yield scenario_error(
                f"{at}.vcpus", vm.vcpus, f"an integer from 1 to {h.logical_cpus} (the host's logical CPUs)"
            )
        if vm.memory == 0:
            yield scenario_error(f"{at}.memory", "0B", "a positive size, e.g. '4GB'")
        if vm.power_on > sc.duration:
            yield scenario_error(
                f"{at}.power_on",
                _units.format_duration(vm.power_on),
                f"a time within the run, at most {_units.format_duration(sc.duration)}",
            )
        yield from _limit_errors(f"{at}.cpu", vm.cpu.reservation, vm.cpu.limit)
        w = vm.workload
        if isinstance(w, CpuBound) and w.burst == 0:
            yield scenario_error(f"{at}.workload.burst", "0ns", "a positive duration, e.g. '20ms'")
        if isinstance(w, TraceWorkload):
            if w.burst == 0:
                yield scenario_error(f"{at}.workload.burst", "0ns", "a positive duration, e.g. '10ms'")
            if w.format == "bitbrains" and w.vm_id is None:
                yield scenario_error(f"{at}.workload.vm_id", None, "a Bitbrains VM id (required for format bitbrains)")
            if w.format == "planetlab" and w.vm_id is not None:
                yield scenario_error(f"{at}.workload.vm_id", w.vm_id, "no vm_id for format planetlab (one VM per file)")


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
    for i, p in enumerate(pools):
        chain = [p.name]
        cur = p.parent
        while cur is not None and cur in parent:
            if cur == p.name:
                loop = " -> ".join(chain + [cur])
                yield scenario_error(f"resource_pools[{i}].parent", p.parent, f"a pool that is not its own ancestor (cycle {loop})")
                return  # one report per cycle is enough
            if cur in chain:  # a cycle further up; it is reported at its own pools
                break
            chain.append(cur)
            cur = parent[cur]


# --------------------------------------------------------------------------------------------
# Turning pydantic errors into ScenarioError
# --------------------------------------------------------------------------------------------


class _Missing:
    def __repr__(self) -> str:
        return "nothing (the key is missing)"


def _unwrap(annotation: Any) -> Any:
    """The model class a field holds (through Optional, list and Annotated), or the workload union."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is list:
            annotation = get_args(annotation)[0]
        elif origin is Union:
            args = [a for a in get_args(annotation) if a is not type(None)]
            if all(isinstance(a, type) and issubclass(a, _Model) for a in args) and len(args) > 1:
                return "workload"
            annotation = args[0]
        else:
            return annotation


def _model_at(root: type[_Model], loc: tuple) -> Optional[type[_Model]]:
    """Walk a pydantic error location from ``root``; return the model owning the last element."""
    cls: Any = root
    for el in loc[:-1]:
        if isinstance(el, int):
            continue  # list index: cls already is the item type
        if cls == "workload":
            cls = _WORKLOADS.get(el)
            continue
        if not (isinstance(cls, type) and issubclass(cls, _Model)) or el not in cls.model_fields:
            return None
        cls = _unwrap(cls.model_fields[el].annotation)
    return cls if isinstance(cls, type) and issubclass(cls, _Model) else None


def _yaml_path(loc: tuple) -> str:
    """``('vms', 1, 'workload', 'cpu_bound', 'duty')`` -> ``vms[1].workload.duty``."""
    out = ""
    prev = None
    for el in loc:
        if isinstance(el, int):
            out += f"[{el}]"
        elif prev == "workload" and el in _WORKLOADS:
            pass  # pydantic's discriminator tag, not a YAML key
        else:
            out += f".{el}" if out else str(el)
        prev = el
    return out or "(top level)"


def _describe_keys(cls: type[_Model]) -> str:
    return ", ".join(k for k in cls.model_fields)


def _one_error(err: dict, root: type[_Model], prefix: str) -> ScenarioError:
    loc = tuple(err["loc"])
    path = _yaml_path(loc)
    if prefix:
        path = prefix if path == "(top level)" else f"{prefix}.{path}"
    kind = err["type"]
    value = err.get("input")
    owner = _model_at(root, loc)
    field = owner.model_fields.get(loc[-1]) if owner is not None and loc else None
    if kind == "value_error":
        inner = err.get("ctx", {}).get("error")
        if isinstance(inner, ScenarioError):  # a native ScenarioError may subclass ValueError
            return inner
        allowed = str(inner) if inner is not None else err["msg"]
    elif kind == "extra_forbidden":
        keys = _describe_keys(owner) if owner is not None else "(see the schema)"
        return scenario_error(path, value, f"one of the keys {keys} (unknown key {loc[-1]!r})")
    elif kind == "missing":
        value = _Missing()
        allowed = field.description if field is not None and field.description else "a value (required)"
        allowed = f"a required key: {allowed}"
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        path = f"{path}.type"
        value = value.get("type", _Missing()) if isinstance(value, dict) else value
        allowed = "one of the workload types " + ", ".join(_WORKLOADS)
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        if loc and isinstance(loc[-1], int):
            target = owner  # a list item: _model_at already stepped into the item type
        else:
            target = _unwrap(field.annotation) if field is not None else None
        if target == "workload":
            allowed = "a mapping with a type key: " + ", ".join(_WORKLOADS)
        elif isinstance(target, type) and issubclass(target, _Model):
            allowed = f"a mapping with the keys {_describe_keys(target)}"
        else:
            allowed = "a mapping"
    else:
        msg = err["msg"]
        allowed = msg[len("Input should be ") :] if msg.startswith("Input should be ") else msg
        if field is not None and field.description:
            allowed = f"{allowed} ({field.description})"
    return scenario_error(path, value, allowed)


def _convert_validation_error(exc: ValidationError, root: type[_Model], prefix: str = "") -> ScenarioError:
    """One ScenarioError for a pydantic ValidationError: one line per problem, first one first."""
    errors = [_one_error(e, root, prefix) for e in exc.errors(include_url=False)]
    if len(errors) == 1:
        return errors[0]
    first = errors[0]
    combined = ScenarioError("\n".join(str(e) for e in errors))
    for attr in ("path", "value", "allowed"):
        setattr(combined, attr, getattr(first, attr, None))
    return combined


def _prefixed(where: str, exc: ScenarioError) -> ScenarioError:
    """Put the YAML path in front of an error about a file the scenario points at."""
    value, allowed = getattr(exc, "value", None), getattr(exc, "allowed", None)
    if getattr(exc, "path", None) == value and allowed is not None:
        # The error is about the file itself (missing, unreadable): the file is the value.
        return scenario_error(where, value, allowed)
    err = ScenarioError(f"{where}: {exc}")
    err.path, err.value, err.allowed = where, value, allowed
    return err


# --------------------------------------------------------------------------------------------
# YAML loading
# --------------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key; let PyYAML report it
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}, line {mark.line + 1}, column {mark.column + 1}" if mark else source
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        err = ScenarioError(f"{where}: malformed YAML: {problem}")
    except yaml.YAMLError as exc:
        err = ScenarioError(f"{source}: malformed YAML: {exc}")
    err.path = source
    err.value = None
    err.allowed = "well-formed YAML"
    raise err


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def parse_scenario(source: Union[str, dict], base_dir: Union[str, Path, None] = None, *, name: str = "<scenario>") -> Scenario:
    """Validate a scenario given as YAML text or as an already-parsed dict.

    Parameters
    ----------
    source : str or dict
        YAML text, or the mapping it parses to. Unit fields must carry units (``"4GB"``), as in
        a file; only ``0`` may omit one.
    base_dir : str or Path, optional
        Folder relative trace paths are resolved against; defaults to the working directory.
    name : str
        How to name the source in YAML syntax errors (``load_scenario`` passes the file path).

    Returns
    -------
    Scenario
        Validated, with every trace file already read (so a bad trace fails here, not mid-run).

    Raises
    ------
    ScenarioError
        Anything wrong; the message names the YAML path, the value and what is allowed.
    """
    data = _load_yaml(source, name) if isinstance(source, str) else source
    if data is None:
        raise scenario_error(name, "an empty document", "a mapping with the keys " + _describe_keys(Scenario))
    if not isinstance(data, dict):
        raise scenario_error("(top level)", data, "a mapping with the keys " + _describe_keys(Scenario))
    try:
        sc = Scenario.model_validate(data, context={"from_file": True})
    except ValidationError as exc:
        raise _convert_validation_error(exc, Scenario) from None
    sc._base_dir = Path(base_dir) if base_dir is not None else None
    sc.load_traces()
    return sc


def load_scenario(path: Union[str, Path]) -> Scenario:
    """Read and validate a scenario YAML file; trace paths are relative to its folder.

    Parameters
    ----------
    path : str or Path
        The ``.yaml`` file.

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        The file cannot be read, or anything in it is wrong (see :func:`parse_scenario`).
    """
    p = Path(path)
    text = _trace_io.read_text_file(p, "scenario file")
    return parse_scenario(text, base_dir=p.resolve().parent, name=str(p))


def scenario_json_schema() -> dict:
    """JSON Schema of scenario files (for ``vmtwin schema`` and editors' YAML completion).

    Returns
    -------
    dict
        Draft 2020-12 schema generated from the pydantic models.
    """
    schema = Scenario.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "vmtwin scenario", **schema}
