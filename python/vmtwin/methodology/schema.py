"""The canonical counter schema: run metadata, canonical event names, and a run's counters.

Every input the methodology reads (Linux ``perf stat -x`` output, the project's own CSV/JSON,
the paper's tables, and later the simulator's execution-speed model) becomes one :class:`Run`:
run metadata plus a set of :class:`Counter` values keyed by canonical event name and mode. The
analysis never sees vendor names or file formats, so a simulated run and a real one go through
the same code (research/perf-methodology.md C.5-1).

Canonical events (:data:`EVENTS`) are of two kinds:

- ``count``: extensive counts over the run (cycles, instructions, walks, ...). The analysis
  divides them by the run's ``work_count`` to get per-unit values (Tables 2-5 are per unit).
- ``ratio``: intensive figures a summary tool reports directly when raw counts are not at hand
  (EMon's Thread Util, the instruction-fetch hit shares of Tables 3 and 5). They are never
  divided by the work count.

Modes are ``user``, ``kernel`` and ``all``. On a host-system source (esx-emon-like) ``kernel``
holds the guest kernel plus the VMM and VMkernel; on a guest-mode vPMC source it holds only the
guest kernel (research A.6.1, A.7). A mode-split count without an ``all`` value gets its total
as user + kernel; an ``all``-only count (Table 7) has no split.

A counter with ``value=None`` is explicitly not available (perf's ``<not counted>`` and
``<not supported>``, the paper's "N/A"); ``status`` says which. ``scaling`` is perf's
time_enabled/time_running for a multiplexed count (the value is already scaled); 1 when the
counter ran all the time.

The simulator's execution-speed model (not built yet) is expected to emit exactly this schema:
one Run per counter source, counts per mode for the ``count`` events below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from vmtwin.exceptions import scenario_error

PLATFORMS = ("native", "virtual")
#: Who collected the counters: the native OS, the hypervisor for the whole system (esx-emon,
#: vmkperf) or the guest through virtual PMCs.
COUNTER_SOURCES = ("native_os", "host_system", "guest_vpmc")
#: vPMC modes (research A.4): what a guest counter counts while the VMM/VMkernel run for the vCPU.
VPMC_MODES = ("guest", "vcpu", "hybrid")
MODES = ("user", "kernel", "all")
SPLIT_MODES = ("user", "kernel")
STATUSES = ("counted", "not counted", "not supported", "not available")

#: Canonical events: name -> (kind, meaning). Names follow the paper's rows (Tables 2-7).
EVENTS: dict[str, tuple[str, str]] = {
    "cycles": ("count", "unhalted core cycles (CPU_CLK_UNHALTED.THREAD)"),
    "instructions": ("count", "instructions retired (INST_RETIRED.ANY); per unit: path length"),
    "ref_cycles": ("count", "unhalted reference cycles (CPU_CLK_UNHALTED.REF)"),
    "branches": ("count", "branch instructions retired"),
    "dtlb_walks": ("count", "DTLB miss page walks completed"),
    "dtlb_walk_cycles": ("count", "DTLB miss page-walk (PMH busy) cycles, EPT part included"),
    "itlb_walks": ("count", "ITLB miss page walks completed"),
    "itlb_walk_cycles": ("count", "ITLB miss page-walk cycles"),
    "ept_walk_cycles": ("count", "cycles in the EPT part of page walks (a subset of the walk cycles)"),
    "l1i_hits": ("count", "instruction fetches that hit the L1I"),
    "l1i_misses": ("count", "instruction fetches that miss the L1I"),
    "l2_ifetch_hits": ("count", "instruction fetches that hit the L2"),
    "l2_ifetch_misses": ("count", "instruction fetches that miss the L2"),
    "llc_ifetch_hits": ("count", "instruction fetches served by the LLC"),
    "l1d_misses": ("count", "L1 data cache misses"),
    "llc_misses": ("count", "last-level cache misses (demand loads that go to memory)"),
    "task_clock_ms": ("count", "perf task-clock, milliseconds of CPU time"),
    "context_switches": ("count", "context switches"),
    "cpu_migrations": ("count", "CPU migrations"),
    "page_faults": ("count", "page faults"),
    "thread_util": ("ratio", "busy fraction of the measured hardware threads (EMon's Thread Util)"),
    "ifetch_l1_hit_share": ("ratio", "share of instructions fetched from the L1I"),
    "ifetch_l2_hit_share": ("ratio", "share of instructions fetched from the L2"),
    "ifetch_llc_hit_share": ("ratio", "share of instructions fetched from the LLC"),
}


def event_kind(name: str) -> Optional[str]:
    """``count`` or ``ratio`` for a canonical event, None for an event outside the schema."""
    entry = EVENTS.get(name)
    return entry[0] if entry else None


@dataclass(frozen=True)
class RunMetadata:
    """What the method needs to know about a run besides its counts (research C.1-1).

    ``work_count`` units of ``work_unit`` (transaction, row, iteration) were done while the
    counters ran; per-unit values divide by it. ``vpmc_mode`` is required for a guest-vPMC
    source and refused otherwise. Frequencies are in MHz, ``duration_s`` in seconds,
    ``throughput`` (optional) in work units per second as the application measured it.
    """

    platform: str
    source: str
    work_unit: str
    work_count: float
    vpmc_mode: Optional[str] = None
    duration_s: Optional[float] = None
    cpus: Optional[int] = None
    nominal_mhz: Optional[float] = None
    tsc_mhz: Optional[float] = None
    turbo: Optional[bool] = None
    smt: Optional[bool] = None
    pinned: Optional[bool] = None
    cpu_model: Optional[str] = None
    throughput: Optional[float] = None
    label: str = ""

    def __post_init__(self) -> None:
        where = "metadata"
        if self.platform not in PLATFORMS:
            raise scenario_error(f"{where}.platform", self.platform, " or ".join(PLATFORMS))
        if self.source not in COUNTER_SOURCES:
            raise scenario_error(f"{where}.source", self.source, ", ".join(COUNTER_SOURCES))
        if self.platform == "native" and self.source != "native_os":
            raise scenario_error(f"{where}.source", self.source, "native_os for a native run")
        if self.platform == "virtual" and self.source == "native_os":
            raise scenario_error(f"{where}.source", self.source, "host_system or guest_vpmc for a virtual run")
        if self.source == "guest_vpmc":
            if self.vpmc_mode not in VPMC_MODES:
                raise scenario_error(f"{where}.vpmc_mode", self.vpmc_mode,
                                     "one of " + ", ".join(VPMC_MODES) + " (required for a guest_vpmc source)")
        elif self.vpmc_mode is not None:
            raise scenario_error(f"{where}.vpmc_mode", self.vpmc_mode, "null unless source is guest_vpmc")
        if not isinstance(self.work_unit, str) or not self.work_unit.strip():
            raise scenario_error(f"{where}.work_unit", self.work_unit, "a non-empty name (transaction, row, ...)")
        _positive(f"{where}.work_count", self.work_count)
        for name in ("duration_s", "nominal_mhz", "tsc_mhz", "throughput"):
            value = getattr(self, name)
            if value is not None:
                _positive(f"{where}.{name}", value)
        if self.cpus is not None and (isinstance(self.cpus, bool) or not isinstance(self.cpus, int) or self.cpus < 1):
            raise scenario_error(f"{where}.cpus", self.cpus, "a whole number of logical CPUs >= 1")
        for name in ("turbo", "smt", "pinned"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise scenario_error(f"{where}.{name}", value, "true, false or null")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "metadata") -> "RunMetadata":
        if not isinstance(data, Mapping):
            raise scenario_error(where, data, "a mapping of run metadata fields")
        known = set(cls.__dataclass_fields__)
        for key in data:
            if key not in known:
                raise scenario_error(f"{where}.{key}", data[key], "one of the fields " + ", ".join(sorted(known)))
        for key in ("platform", "source", "work_unit", "work_count"):
            if key not in data:
                raise scenario_error(f"{where}.{key}", None, "a value (required)")
        return cls(**dict(data))

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def column(self) -> str:
        """The paper's column name for this source."""
        return {"native_os": "Native", "host_system": "ESX-EMON", "guest_vpmc": "Guest EMON"}[self.source]


def _positive(path: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise scenario_error(path, value, "a finite number > 0")


@dataclass(frozen=True)
class Counter:
    """One canonical count: event, mode, value (None = N/A), perf's scaling and where it came from."""

    event: str
    mode: str
    value: Optional[float]
    scaling: float = 1.0
    status: str = "counted"
    origin: str = ""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise scenario_error(f"counter {self.event}.mode", self.mode, ", ".join(MODES))
        if self.status not in STATUSES:
            raise scenario_error(f"counter {self.event}.status", self.status, ", ".join(STATUSES))
        if self.value is None:
            if self.status == "counted":
                raise scenario_error(f"counter {self.event}:{self.mode}.value", None,
                                     "a number, or a status other than 'counted'")
        elif isinstance(self.value, bool) or not isinstance(self.value, (int, float)) or not math.isfinite(self.value):
            raise scenario_error(f"counter {self.event}:{self.mode}.value", self.value, "a finite number or null (N/A)")
        if not (isinstance(self.scaling, (int, float)) and math.isfinite(self.scaling) and self.scaling >= 1.0):
            raise scenario_error(f"counter {self.event}:{self.mode}.scaling", self.scaling,
                                 "a number >= 1 (time enabled / time running)")


@dataclass(frozen=True)
class Run:
    """A run's metadata and its canonical counters, keyed by (event, mode)."""

    metadata: RunMetadata
    counters: Mapping[tuple[str, str], Counter] = field(default_factory=dict)

    @classmethod
    def build(cls, metadata: RunMetadata, counters: list[Counter]) -> "Run":
        """Key the counters; the same (event, mode) twice is summed (per-CPU or per-interval rows)."""
        merged: dict[tuple[str, str], Counter] = {}
        for c in counters:
            key = (c.event, c.mode)
            prev = merged.get(key)
            if prev is None:
                merged[key] = c
            elif prev.value is None or c.value is None:
                merged[key] = prev if prev.value is None else c  # one N/A part makes the sum N/A
            else:
                if event_kind(c.event) == "ratio":
                    raise scenario_error(f"counter {c.event}:{c.mode}", c.value,
                                         "a ratio event given once per run (it cannot be summed)")
                merged[key] = replace(prev, value=prev.value + c.value, scaling=max(prev.scaling, c.scaling))
        return cls(metadata, merged)

    def counter(self, event: str, mode: str = "all") -> Optional[Counter]:
        c = self.counters.get((event, mode))
        if c is None and mode == "all" and event_kind(event) == "count":
            parts = [self.counters.get((event, m)) for m in SPLIT_MODES]
            if all(p is not None for p in parts):
                values = [p.value for p in parts]
                value = None if any(v is None for v in values) else sum(values)
                status = "counted" if value is not None else "not available"
                return Counter(event, "all", value, max(p.scaling for p in parts), status, "user + kernel")
        return c

    def total(self, event: str, mode: str = "all") -> Optional[float]:
        """The run total of a count, or the ratio as given; None when absent or N/A."""
        c = self.counter(event, mode)
        return None if c is None else c.value

    def per_unit(self, event: str, mode: str = "all") -> Optional[float]:
        """A count divided by the work count; a ratio event as given."""
        v = self.total(event, mode)
        if v is None:
            return None
        return v / self.metadata.work_count if event_kind(event) == "count" else v

    def has_split(self, event: str) -> bool:
        return all(self.total(event, m) is not None for m in SPLIT_MODES)

    def with_work(self, work_unit: str, work_count: float) -> "Run":
        """The same counts expressed in another unit of work (e.g. per row instead of per transaction)."""
        return Run(replace(self.metadata, work_unit=work_unit, work_count=work_count), self.counters)
