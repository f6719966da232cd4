"""Scenario fields of the execution-speed model: the machine's caches (``perf``) and each VM's
workload profile per unit of work (``vms[i].perf``), normalized into the engine's ``perf``
objects (``crates/vmtwin-core/src/perf/params.rs`` documents every field, its unit, default and
source).

A VM's profile starts from a ``preset`` and any field given overrides it::

    vms:
      - name: jbb
        vcpus: 2
        workload: {type: cpu_bound, duty: 1.0}
        perf: {preset: specjbb}                 # business operations (bops), warehouses = vCPUs
      - name: build
        vcpus: 4
        workload: {type: cpu_bound, duty: 0.95}
        perf: {preset: kernel-compile, virtualized: false}

Presets:

- ``specjbb``: unit ``bop``. Path length 50K instructions per business operation, 95% user
  (chosen: SPECjbb2005 did ~40K bops/s per 2.66 GHz core [X]); 4 MiB working set per warehouse
  (chosen: one Host1 LLC). Its LLC references per 1000 instructions are *calibrated* so that a
  warehouse alone on a 4 MiB LLC does 1.4x the work of one sharing it with one co-runner:
  research/cpu.md B6 (Figure 10, "40 percent higher throughput"); everything else it is used
  for is a prediction.
- ``kernel-compile``: unit ``compile`` (one ``make bzImage``). 1.45e12 instructions, 15% in the
  kernel (chosen: about 10 minutes on one 2.66 GHz core, [X]); a 1 MiB working set, so LLC
  sharing barely matters (research/cpu.md C29: "insensitive").
- ``tier1-oltp``, ``tier1-hadoop``, ``tier1-rr``: the Tier-1 paper's workloads calibrated per unit
  of work (:mod:`vmtwin.methodology.sim_presets`); ``virtualized`` picks the native or the virtual
  profile.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal, Optional

from pydantic import Field, Strict, StringConstraints

from vmtwin.scenario.fields import Bytes, Nanos, _Model

Prob = Annotated[float, Strict(), Field(ge=0.0, le=1.0)]
NonNeg = Annotated[float, Strict(), Field(ge=0.0)]
Positive = Annotated[float, Strict(), Field(gt=0.0)]
Levels = Annotated[int, Strict(), Field(ge=1, le=5)]

PRESET_NAMES = ("specjbb", "kernel-compile", "tier1-oltp", "tier1-hadoop", "tier1-rr")

#: B6's alone-vs-shared throughput ratio the SPECjbb-like preset is calibrated on.
SPECJBB_SHARING_RATIO = 1.4
#: The LLC (bytes) of B6's host (Host1: 4 MB L2 shared by two cores, research/cpu.md B0).
SPECJBB_CALIBRATION_LLC = 4 << 20


class PerfWalk(_Model):
    """Page sizes, page-walk caches and per-reference costs of one layer's TLB misses."""

    guest_levels: Optional[Levels] = Field(None, description="Guest page-table levels walked: 4 (4 KB pages) or 3 (2 MB).")
    host_levels: Optional[Levels] = Field(None, description="EPT levels walked per guest-physical translation.")
    guest_pwc_hit: Optional[Prob] = Field(None, description="Probability the guest paging-structure cache supplies the upper levels.")
    nested_tlb_hit: Optional[Prob] = Field(None, description="Probability the nested TLB supplies an EPT translation.")
    ept_pwc_hit: Optional[Prob] = Field(None, description="Probability the EPT paging-structure cache supplies the upper EPT levels.")
    guest_ref_cycles: Optional[NonNeg] = Field(None, description="Cycles per guest page-table reference.")
    ept_ref_cycles: Optional[NonNeg] = Field(None, description="Cycles per EPT reference.")
    walk_base_cycles: Optional[NonNeg] = Field(None, description="Fixed cycles per walk.")


class PerfLayer(_Model):
    """What one layer (guest user, guest kernel, hypervisor) does per unit of work."""

    instructions_per_unit: Optional[NonNeg] = Field(None, description="Instructions per unit of work (path length).")
    cpi_core: Optional[Positive] = Field(None, description="Cycles per instruction outside page walks and LLC misses.")
    walks_per_kinstr: Optional[NonNeg] = Field(None, description="DTLB misses that walk, per 1000 instructions.")
    llc_refs_per_kinstr: Optional[NonNeg] = Field(None, description="References reaching the LLC, per 1000 instructions.")
    llc_base_miss_ratio: Optional[Prob] = Field(None, description="Share of LLC references missing when the working set fits.")
    walk: Optional[PerfWalk] = Field(None, description="Page-walk model of this layer.")


class VmPerf(_Model):
    """A VM's execution-speed profile: a preset, and any field overriding it."""

    preset: Optional[Literal[PRESET_NAMES]] = Field(None, description="specjbb, kernel-compile, tier1-oltp, tier1-hadoop or tier1-rr.")
    unit: Optional[Annotated[str, Strict(), StringConstraints(min_length=1)]] = Field(None, description="Name of the unit of work.")
    virtualized: Optional[Annotated[bool, Strict()]] = Field(None, description="Nested paging and a hypervisor layer (true, default) or bare metal.")
    working_set: Optional[Bytes] = Field(None, description="Cache working set per vCPU, e.g. '4MB'.")
    user: Optional[PerfLayer] = Field(None, description="Guest user mode.")
    kernel: Optional[PerfLayer] = Field(None, description="Guest kernel mode.")
    hyp: Optional[PerfLayer] = Field(None, description="VMM + VMkernel work per unit (virtualized only).")

    def to_engine(self) -> dict[str, Any]:
        """The engine profile: the preset's, with the fields given here laid over it."""
        out = preset_profile(self.preset, self.virtualized is not False) if self.preset else {}
        if self.unit is not None:
            out["unit"] = self.unit
        if self.virtualized is not None:
            out["virtualized"] = self.virtualized
        if self.working_set is not None:
            out["working_set_bytes"] = self.working_set
        for name in ("user", "kernel", "hyp"):
            given: Optional[PerfLayer] = getattr(self, name)
            if given is None:
                continue
            target = out.setdefault(name, {})
            for key, value in given.model_dump(exclude_none=True).items():
                if key == "walk":
                    target.setdefault("walk", {}).update(value)
                else:
                    target[key] = value
        return out


class PerfMachine(_Model):
    """The machine as the execution-speed model sees it; unset fields take the engine's defaults."""

    llc: Optional[Bytes] = Field(None, description="Capacity of one last-level cache, e.g. '8MB'.")
    l2: Optional[Bytes] = Field(None, description="Private cache refilled after any move, e.g. '256KB'.")
    line: Optional[Bytes] = Field(None, description="Cache line, e.g. '64B'.")
    llc_refill_line: Optional[Nanos] = Field(None, description="Time to refill one private-cache line from the LLC, e.g. '10ns'.")
    mem_refill_gb_per_s: Optional[Positive] = Field(None, description="Bandwidth of a working-set refetch from memory, GB/s.")
    llc_miss_stall_cycles: Optional[NonNeg] = Field(None, description="Stall cycles per LLC miss to local memory.")
    remote_latency_ratio: Optional[Annotated[float, Strict(), Field(ge=1.0)]] = Field(None, description="Remote over local memory latency.")
    ht_core_gain: Optional[Prob] = Field(None, description="Extra core throughput with both hyperthreads busy.")
    sched_lock_hold: Optional[Nanos] = Field(None, description="Time a scheduler invocation holds its lock (the "
                                             "ESX 3.x cell lock), e.g. '3800ns'; '0ns' turns the cost off.")
    resume_refill: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Charge a vCPU returning to its core or LLC for the footprint other work evicted meanwhile "
                          "(docs/execution-speed.md); false: only a move costs a refill.")
    mem_bandwidth: Optional[Annotated[bool, Strict()]] = Field(
        None, description="Share each NUMA node's memory bandwidth among the vCPUs missing to it (an M/D/1 queue per "
                          "memory controller, docs/execution-speed.md); acts where mem_node_gb_per_s is given.")
    mem_node_gb_per_s: Optional[NonNeg] = Field(
        None, description="Peak bandwidth of one NUMA node's memory controller, GB/s (channels x rate x 8 B); "
                          "unset or 0: no contention.")
    mem_latency: Optional[Nanos] = Field(None, description="Unloaded local memory latency, e.g. '80ns' (the scale of "
                                         "a queueing wait).")

    def to_engine(self) -> dict[str, Any]:
        names = {"llc": "llc_bytes", "l2": "l2_bytes", "line": "line_bytes", "llc_refill_line": "llc_refill_line_ns",
                 "mem_refill_gb_per_s": "mem_refill_bytes_per_ns", "sched_lock_hold": "sched_lock_hold_ns",
                 "mem_node_gb_per_s": "mem_node_bytes_per_ns", "mem_latency": "mem_latency_ns"}
        # attributes, not model_dump: the unit fields serialize back to their file form ("4MB")
        return {names.get(k, k): getattr(self, k) for k in type(self).model_fields if getattr(self, k) is not None}


def engine_section(scenario: Any) -> dict[str, Any]:
    """``{"perf": ...}`` for the engine spec when the scenario uses the model, else ``{}``."""
    profiles = {name: vm.perf.to_engine() for vm in scenario.vms if vm.perf is not None for name in vm.expanded_names()}
    if not profiles and scenario.perf is None:
        return {}
    return {"perf": {"params": scenario.perf.to_engine() if scenario.perf else {}, "vms": profiles}}


def _layer(instructions: float, cpi: float, walks: float = 0.0, refs: float = 0.0, base: float = 0.0) -> dict[str, Any]:
    return {"instructions_per_unit": instructions, "cpi_core": cpi, "walks_per_kinstr": walks,
            "llc_refs_per_kinstr": refs, "llc_base_miss_ratio": base}


def specjbb_llc_refs(llc_bytes: int = SPECJBB_CALIBRATION_LLC, ratio: float = SPECJBB_SHARING_RATIO) -> float:
    """User-mode LLC references per 1000 instructions giving ``ratio`` between a warehouse alone on
    an LLC and one sharing it with one co-runner, its working set being the whole LLC.

    Alone the working set fits (miss ratio ``b``); shared it gets half, so half of the references
    that hit now miss (``b + (1 - b)/2``). Throughput is inversely proportional to cycles per unit,
    ``A + B r m``, so ``r = A (ratio - 1) / (B (m_shared - ratio m_alone))``.
    """
    p = _specjbb_base(llc_bytes)
    stall = 100.0  # the engine's default llc_miss_stall_cycles
    walk_native = 4 * 12.5  # default walk: 4 levels at 12.5 cycles
    walk_nested = walk_native + 5 * 4 * 3.0  # (n + 1) m EPT references at 3 cycles
    a = sum(l["instructions_per_unit"] * (l["cpi_core"] + l["walks_per_kinstr"] / 1000 * (walk_nested if name != "hyp" else walk_native))
            for name, l in p.items() if isinstance(l, dict))
    b = p["user"]["instructions_per_unit"] / 1000 * stall
    base = p["user"]["llc_base_miss_ratio"]
    m_alone, m_shared = base, base + (1 - base) * 0.5
    return a * (ratio - 1) / (b * (m_shared - ratio * m_alone))


def _specjbb_base(llc_bytes: int) -> dict[str, Any]:
    return {"unit": "bop", "virtualized": True, "working_set_bytes": llc_bytes,
            "user": _layer(47_500, 0.9, walks=1.0, base=0.05), "kernel": _layer(2_500, 2.0, walks=3.0),
            "hyp": _layer(500, 3.0)}


def preset_profile(name: str, virtualized: bool = True) -> dict[str, Any]:
    """The engine profile of a preset (a fresh copy)."""
    if name == "specjbb":
        p = _specjbb_base(SPECJBB_CALIBRATION_LLC)
        p["user"]["llc_refs_per_kinstr"] = specjbb_llc_refs()
    elif name == "kernel-compile":
        p = {"unit": "compile", "virtualized": True, "working_set_bytes": 1 << 20,
             "user": _layer(1.2325e12, 1.0, walks=0.5, refs=2.0, base=0.1),
             "kernel": _layer(0.2175e12, 2.2, walks=2.0, refs=4.0, base=0.1), "hyp": _layer(0.01e12, 3.0)}
    else:
        from vmtwin.methodology.sim_presets import preset

        tier1 = preset(name.removeprefix("tier1-"))
        p = copy.deepcopy(tier1.virtual if virtualized else tier1.native)
    p["virtualized"] = virtualized
    return p
