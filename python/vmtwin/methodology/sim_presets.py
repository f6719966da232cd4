"""Tier-1 workload presets for the simulator's execution-speed model, per unit of work.

Each preset is a pair of engine profiles (``crates/vmtwin-core/src/perf/``): one for a native
run and one for a virtual run of the same work, plus the busy share each run's vCPUs keep. Run
both through the engine and feed their counters to ``vmtwin overhead`` (:mod:`.simulated`) and the
paper's tables come out as *predictions* wherever the preset did not take the cell as input.

What calibrates (inputs taken from the paper) and what is predicted:

- **Native column, per mode** (Table 2 / 4): path length and cycles per unit set each guest
  layer's ``instructions_per_unit`` and ``cpi_core`` (native cycles minus native walk cycles, per
  instruction). Native walks per 1000 instructions come from Table 3's walk counts (OLTP) or from
  Table 5's PMH cycles over OLTP's native cycles per walk (Hadoop has no walk counts).
- **Walk cost** (:mod:`.nested_paging`): cycles per guest reference from OLTP's native walk latency,
  cycles per EPT reference from OLTP's Guest EMON EPT cycles per walk (Table 3), per mode. Hadoop
  and RR reuse OLTP's costs.
- **Virtual path lengths**: the guest's user and kernel instructions per unit (Guest EMON column)
  are inputs (paravirtual drivers change the kernel path; research C.3-2), and so is the
  hypervisor layer, from host minus guest kernel (instructions, cycles, walks: A.6.3-3).
- **Busy shares**: each run's Thread Util (total) sets its vCPUs' duty.

Predicted: the guest's cycles and CPI per mode under nested paging (the native ``cpi_core`` plus
2D walks, walks per instruction as natively), its walks, walk and EPT cycles, the host view's
totals, the overhead decomposition, and the throughput or elapsed-time ratio. Nothing else of
virtualization (caches, I/O done twice, interrupt paths) is in the presets, so what a prediction
misses is what those carry; the reproduction ``tier1-sim`` reports every miss.

Request-response (Table 7): totals for one run, all modes together (the table has no split). The
walk count is calibrated on the virtual run's EPT cycles (16B over the EPT cycles per walk),
because the native "TLB-misses-walk-cycles" row is anomalous (227B of 376B cycles, GAP-10) and is
not used; no hypervisor layer (the paper has no data on it), so the cycle inflation the model gives
is nested paging's alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vmtwin.methodology import paper
from vmtwin.methodology.nested_paging import OLTP_KERNEL, OLTP_USER, WalkParams
from vmtwin.methodology.schema import Run


def walk_dict(w: WalkParams) -> dict[str, Any]:
    """A walk model as the engine's ``walk`` object."""
    return {"guest_levels": w.guest_levels, "host_levels": w.host_levels, "guest_pwc_hit": w.guest_pwc_hit,
            "nested_tlb_hit": w.nested_tlb_hit, "ept_pwc_hit": w.ept_pwc_hit, "guest_ref_cycles": w.guest_ref_cycles,
            "ept_ref_cycles": w.ept_ref_cycles, "walk_base_cycles": w.walk_base_cycles}


def layer(instructions: float, cpi_core: float, walks_per_kinstr: float, walk: WalkParams) -> dict[str, Any]:
    """One engine layer profile (no LLC terms: the paper gives no LLC data for these workloads)."""
    return {"instructions_per_unit": instructions, "cpi_core": cpi_core, "walks_per_kinstr": walks_per_kinstr,
            "llc_refs_per_kinstr": 0.0, "llc_base_miss_ratio": 0.0, "walk": walk_dict(walk)}


@dataclass(frozen=True)
class Tier1Preset:
    """A native and a virtual engine profile of one workload, the duty of each run, and provenance."""

    name: str
    unit: str
    native: dict[str, Any]
    virtual: dict[str, Any]
    duty_native: float
    duty_virtual: float
    #: cell -> how it enters the preset (calibration inputs only; every other cell is predicted)
    calibrated: dict[str, str] = field(default_factory=dict)


def _profile(unit: str, virtualized: bool, user: dict, kernel: dict, hyp: dict | None) -> dict[str, Any]:
    return {"unit": unit, "virtualized": virtualized, "user": user, "kernel": kernel,
            "hyp": hyp or layer(0.0, 1.0, 0.0, OLTP_KERNEL), "working_set_bytes": 4 << 20}


def _guest_layers(native: Run, guest: Run, walks_native: dict[str, float], walk: dict[str, WalkParams]):
    """Native and virtual guest layers: cpi_core from native cycles minus native walk cycles."""
    out_n, out_v = {}, {}
    for mode in ("user", "kernel"):
        i_n, c_n = native.per_unit("instructions", mode), native.per_unit("cycles", mode)
        w = walks_native[mode]
        cpi_core = (c_n - w * walk[mode].native_walk_cycles()) / i_n
        wpk = 1000 * w / i_n
        out_n[mode] = layer(i_n, cpi_core, wpk, walk[mode])
        out_v[mode] = layer(guest.per_unit("instructions", mode), cpi_core, wpk, walk[mode])
    return out_n, out_v


def _hypervisor(host: Run, guest: Run, walks: float) -> dict[str, Any]:
    """The VMM + VMkernel layer from host minus guest kernel counts (A.6.3-3), native walks."""
    i_h = host.per_unit("instructions", "kernel") - guest.per_unit("instructions", "kernel")
    c_h = host.per_unit("cycles", "kernel") - guest.per_unit("cycles", "kernel")
    cpi_core = (c_h - walks * OLTP_KERNEL.native_walk_cycles()) / i_h
    return layer(i_h, cpi_core, 1000 * walks / i_h, OLTP_KERNEL)


def oltp() -> Tier1Preset:
    """OLTP per transaction (Tables 2-3)."""
    r = paper.runs("oltp")
    native, host, guest = r["Native"], r["ESX-EMON"], r["Guest EMON"]
    walk = {"user": OLTP_USER, "kernel": OLTP_KERNEL}
    walks = {m: native.per_unit("dtlb_walks", m) for m in ("user", "kernel")}
    n, v = _guest_layers(native, guest, walks, walk)
    hyp_walks = host.per_unit("dtlb_walks", "kernel") - guest.per_unit("dtlb_walks", "kernel")
    return Tier1Preset(
        "oltp", "transaction",
        native=_profile("transaction", False, n["user"], n["kernel"], None),
        virtual=_profile("transaction", True, v["user"], v["kernel"], _hypervisor(host, guest, hyp_walks)),
        duty_native=native.total("thread_util", "user") + native.total("thread_util", "kernel"),
        duty_virtual=host.total("thread_util", "user") + host.total("thread_util", "kernel"),
        calibrated={
            "Table 2 Native path length and cycles, user and kernel": "guest layers' instructions and cpi_core",
            "Table 3 Native DTLB walks and PMH cycles": "walks per 1000 instructions; guest reference cost",
            "Table 3 Guest EMON EPT cycles / walks": "EPT reference cost",
            "Table 2 Guest EMON path length, user and kernel": "virtual guest instructions",
            "Table 2-3 ESX-EMON minus Guest EMON kernel (instructions, cycles, walks)": "hypervisor layer",
            "Table 2 Thread Util, Native and ESX-EMON totals": "duty of each run",
        })


def hadoop() -> Tier1Preset:
    """Hadoop per row (Tables 4-5); walk costs from OLTP, walks from native PMH cycles."""
    r = paper.runs("hadoop")
    native, host, guest = r["Native"], r["ESX-EMON"], r["Guest EMON"]
    walk = {"user": OLTP_USER, "kernel": OLTP_KERNEL}
    walks = {m: native.per_unit("dtlb_walk_cycles", m) / walk[m].native_walk_cycles() for m in ("user", "kernel")}
    n, v = _guest_layers(native, guest, walks, walk)
    return Tier1Preset(
        "hadoop", "row",
        native=_profile("row", False, n["user"], n["kernel"], None),
        virtual=_profile("row", True, v["user"], v["kernel"], _hypervisor(host, guest, 0.0)),
        duty_native=native.total("thread_util", "user") + native.total("thread_util", "kernel"),
        duty_virtual=host.total("thread_util", "user") + host.total("thread_util", "kernel"),
        calibrated={
            "Table 4 Native path length and cycles, user and kernel": "guest layers' instructions and cpi_core",
            "Table 5 Native PMH cycles": "walks per 1000 instructions (over OLTP's native cycles per walk)",
            "Table 4 Guest EMON path length, user and kernel": "virtual guest instructions",
            "Table 4 ESX-EMON minus Guest EMON kernel (instructions, cycles)": "hypervisor layer (no walks: "
                                                                               "Table 5 has no guest column)",
            "Table 4 Thread Util, Native and ESX-EMON totals": "duty of each run",
        })


def rr() -> Tier1Preset:
    """Request-response loopback, one run's totals (Table 7), all modes in the user layer."""
    r = paper.runs("rr-loopback")
    native, hybrid = r["Native"], r["vPMC-Hybrid (VM)"]
    walk = OLTP_KERNEL  # loopback netperf runs mostly in the kernel: 4 KB guest pages (GAP-8)
    walks_virtual = hybrid.per_unit("ept_walk_cycles", "all") / walk.ept_walk_cycles()
    i_n, i_v = native.per_unit("instructions", "all"), hybrid.per_unit("instructions", "all")
    wpk = 1000 * walks_virtual / i_v
    cpi_core = (native.per_unit("cycles", "all") - wpk / 1000 * i_n * walk.native_walk_cycles()) / i_n
    none = layer(0.0, 1.0, 0.0, walk)
    return Tier1Preset(
        "rr", "run",
        native=_profile("run", False, layer(i_n, cpi_core, wpk, walk), none, None),
        virtual=_profile("run", True, layer(i_v, cpi_core, wpk, walk), none, None),
        duty_native=1.0, duty_virtual=1.0,
        calibrated={
            "Table 7 Native cycles and instructions": "cpi_core (after the walks below)",
            "Table 7 VM EPT-walk-cycles": "walks per 1000 instructions (over OLTP kernel's EPT cycles per walk)",
            "Table 7 VM instructions": "virtual instructions",
            "Table 6 Ping, Native and VM": "the fixed latency part (reproduction tier1-sim)",
        })


PRESETS = {"oltp": oltp, "hadoop": hadoop, "rr": rr}


def preset(name: str) -> Tier1Preset:
    """A Tier-1 preset by name (``oltp``, ``hadoop``, ``rr``)."""
    try:
        return PRESETS[name]()
    except KeyError:
        from vmtwin.exceptions import scenario_error
        raise scenario_error("tier-1 preset", name, ", ".join(PRESETS)) from None
