"""The CPU white paper's ESX 4 against ESX 3.5 experiments, run on the engine with throughput from
the execution-speed model ([WP §4.4-§4.6], research/cpu.md B5-B8; the paper is
/work/shared/seeds/003_*.txt).

Each experiment builds the paper's host and VMs, runs them once under an ESX 4 scheduler and once
under an ESX 3.5 one, and reads each VM's throughput (SPECjbb-like business operations per second,
or kernel-compile-like compiles per second: the reciprocal of the completion time) from the
``vcpu_perf`` table. What the two schedulers are, in the engine's switches:

- **ESX 4** on Host1 (2 sockets x 2 LLCs x 2 cores, 4 MB L2 per LLC, no NUMA): one scheduling
  domain, LLC-aware pulls and per-LLC load balancing of placement (``llc_aware``,
  ``llc_balance``, research/cpu.md A6.3), relaxed co-scheduling (``relaxed-4x``), no NUMA home
  nodes (the Xeon 5355 host is uniform memory [X]). On NUMA Host2 the VMs have home nodes and are
  scheduled within them (``numa_confine``, A6.1).
- **ESX 3.5** on Host1: scheduler cells of one socket (``cell_size: 4``, C17's default: "a cell
  corresponds to a socket"; ``docs/cells.md``): a VM runs wholly in one cell and only the cell
  balancer, every 2 s, moves it whole; no cache awareness (``llc_aware`` off: "only a fixed
  migration cost"); ESX 3.x's relaxed co-scheduling (``relaxed-3x``: cumulative skew, VM-wide
  co-stop, co-start of the laggards). With 8-vCPU VMs (Figure 14) the cell is enlarged to the
  whole host (``cell_size: 8``, [WP §4.6]). The cell lock (every scheduler invocation in a cell
  serialised; the paper puts part of the heavily loaded gains on it, "co-scheduling and lower
  locking overhead", B8) is charged by the execution-speed model: each slice start waits M/D/1
  behind the other pCPUs of its cell, holding the lock ``perf.sched_lock_hold`` (3.8 us, an upper
  bound; ``docs/cells.md``). ESX 4's per-pCPU locks wait for nothing there. On Host2 (Figure 11) ESX 3.5 is
  still NUMA homes as a preference with ``relaxed-3x``, not cells: with socket cells the three
  4-vCPU VMs split 2 + 1 over the cells for good (no whole-VM move narrows the gap), which gives
  one VM twice the CPU of the others, against the paper's "equal expectations".

Every throughput difference comes from the execution-speed model (``docs/execution-speed.md``):
the LLC split among its busy threads, cold caches after a move, remote memory. Its SPECjbb-like
preset is **calibrated on B6** (a warehouse alone on a 4 MB LLC does 1.4x one sharing it); that is
the only calibration point, and its rows are marked ``calibration`` and not judged. Every other
row is a prediction. The model has no memory-bandwidth sharing and the kernel-compile-like preset
has a 1 MB working set, so kernel-compile ratios near 1 are what the model predicts, and the
paper's 7-11% for it is a miss the rows report.

Rows judged on ratios use ±0.03 (research/cpu.md C29: "±3 percentage points around the stated
values"); "equal throughput" is max/min within 0.05 of 1 (C29). A claim that is one-sided ("up to",
"higher than", "all ratios > 1") is judged as an indicator (1 = the simulated values satisfy it),
with the values in the note. The VM mixes of Figures 9 and 12-14 are not printed; Table 3's label
families are, and the counts follow C30 (light to heavy: 4, 8, 16 and 32 vCPUs on 8 pCPUs).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional

from vmtwin.reproduce.base import Experiment, Row
from vmtwin.scenario import VM, CpuBound, CpuScheduler, Host, Scenario
from vmtwin.scenario.perf import PerfMachine, VmPerf

#: Simulated length of a throughput run: 30 s, past the first NUMA (cell) balancer moves, whose 2 s
#: transient still shows in a 10 s run (the paper ran each benchmark 10 minutes, steady state)
RUN = "30s"
#: Samples of the execution-speed model: work is read per 2 s interval
INTERVAL_S = 2.0
RATIO_TOL = 0.03
EQUAL_TOL = 0.05
#: Host1's clock: Xeon 5355, 2.66 GHz ([X], research/cpu.md B0)
HOST1_MHZ = 2660
#: Host2's clock: Opteron 8384, 2.7 GHz ([X])
HOST2_MHZ = 2700
#: Host1's memory bandwidth per engine NUMA node, GB/s: the PE 2950's Intel 5000P memory controller
#: hub peaks at 21.3 GB/s (four FB-DIMM channels of DDR2-667, 4 x 5.33 GB/s; [X] Intel's 5000P
#: datasheet figure, as recalled), and the engine's two nodes of Host1 interleave its memory
#: (no homes), so each carries half
HOST1_MEM_GB_PER_S = 10.66
#: Host2's memory bandwidth per node, GB/s: an Opteron 8384's integrated controller, two channels of
#: DDR2-800, 2 x 6.4 GB/s peak ([X] AMD's figure for Socket F "Shanghai", as recalled)
HOST2_MEM_GB_PER_S = 12.8

_CELL_NOTE = ("ESX 3.5: socket scheduler cells (cell_size 4), relaxed-3x co-scheduling, no LLC awareness; the cell "
              "lock's wait charged by the execution-speed model (perf.sched_lock_hold 3.8 us)")


@dataclass(frozen=True)
class Version:
    """One ESX version's scheduler on one host, in engine switches."""

    name: str
    sched: CpuScheduler


def host1() -> Host:
    """Host1: Dell PE 2950, 2 sockets x quad-core Xeon 5355, a 4 MB L2 per two cores (B0)."""
    return Host(name="host1", sockets=2, llcs_per_node=2, cores_per_llc=2, core_mhz=HOST1_MHZ, memory="32GB")


def host1_perf() -> PerfMachine:
    """Host1's caches for the execution-speed model: 4 MB LLC, uniform memory (front-side bus), the
    memory controller hub's bandwidth."""
    return PerfMachine(llc="4MB", remote_latency_ratio=1.0, mem_node_gb_per_s=HOST1_MEM_GB_PER_S)


ESX4_HOST1 = Version("ESX 4", CpuScheduler(numa_home_nodes=False, llc_aware=True, llc_balance=True,
                                           extended_fairness=True, cosched_mode="relaxed-4x"))
ESX35_HOST1 = Version("ESX 3.5", CpuScheduler(numa_home_nodes=False, cell_size=4, llc_aware=False,
                                              cosched_mode="relaxed-3x"))
#: ESX 3.5 with the cell enlarged to 8 pCPUs for 8-vCPU VMs (unsupported, [WP §4.6]): one cell, the host
ESX35_HOST1_CELL8 = Version("ESX 3.5 (cell 8)", CpuScheduler(numa_home_nodes=False, cell_size=8, llc_aware=False,
                                                             cosched_mode="relaxed-3x"))


def vm(name: str, vcpus: int, preset: str) -> VM:
    """A VM running a workload preset on every vCPU: SPECjbb with warehouses = vCPUs, or
    make -j 2xvCPUs (both keep every vCPU busy: "mostly CPU-intensive", [WP Table 2])."""
    return VM(name=name, vcpus=vcpus, memory=f"{max(1, vcpus)}GB", workload=CpuBound(duty=1.0),
              perf=VmPerf(preset=preset))


def run(vms: list[VM], version: Version, host: Host, perf: PerfMachine, duration: str = RUN,
        seed: int = 1) -> dict[str, tuple[float, float]]:
    """Each VM's (throughput in units per second, mean %USED) under ``version``."""
    from vmtwin.methodology.throughput import work_rate
    from vmtwin.simulation import Simulation

    sim = Simulation(Scenario(name="wp-esx", seed=seed, duration=duration, host=host, perf=perf,
                              cpu_scheduler=version.sched, vms=vms))
    sim.run()
    tables = sim.tables()
    used = tables["vm"].to_pandas().groupby("vm")["%USED"].mean().to_dict()
    return {v.name: (work_rate(tables["vcpu_perf"], v.name, interval_s=INTERVAL_S), used[v.name]) for v in vms}


def aggregate_ratio(vms: list[VM], new: Version, old: Version, host: Host, perf: PerfMachine,
                    duration: str = RUN) -> float:
    """Aggregate throughput under ``new`` over that under ``old`` (both sum every VM's work rate,
    units alike since each mix runs one preset)."""
    a = sum(r for r, _ in run(vms, new, host, perf, duration).values())
    b = sum(r for r, _ in run(vms, old, host, perf, duration).values())
    return a / b


# --------------------------------------------------------------------------------------------
# Table 3's mixes
# --------------------------------------------------------------------------------------------

#: Table 3's mixed families: one instance's VM sizes
FAMILIES = {"x4vCpuT": (1, 1, 2), "x8vCpuT": (1, 1, 2, 4), "x16vCpuT": (1, 1, 2, 4, 8)}


def mix(label: str) -> tuple[int, ...]:
    """VM sizes of a Table 3 label: '{m} x {n} vCPU' as 'm x n', or '{m} x8vCpuT'."""
    m, _, family = label.partition(" ")
    if family in FAMILIES:
        return FAMILIES[family] * int(m)
    n = int(family.removeprefix("x ").removesuffix(" vCPU"))
    return (n,) * int(m)


def mix_vms(label: str, preset: str) -> list[VM]:
    return [vm(f"vm{i}", n, preset) for i, n in enumerate(mix(label))]


def _indicator(experiment: str, metric: str, holds: bool, values: str, *, source: str, note: str,
               x: Optional[float] = None, series: str = "") -> Row:
    return Row(experiment, metric, 1.0, 1.0 if holds else 0.0, 0.0, x=x, series=series, source=source,
               note=f"{note}; simulated: {values}")


# --------------------------------------------------------------------------------------------
# B5, Figure 9: multicore-aware load balancing
# --------------------------------------------------------------------------------------------

#: Figure 9's mixes of 1-, 2- and 4-vCPU VMs (not printed; ours, light to heavy on 8 pCPUs)
FIG9_MIXES = ("1 x 2 vCPU", "1 x 4 vCPU", "1 x4vCpuT", "2 x 4 vCPU", "1 x8vCpuT", "2 x8vCpuT")
_FIG9_PRINTED = {
    "specjbb": (1.50, 'SPECjbb2005 "significantly improved, up to 50 percent" [WP §4.4]'),
    "kernel-compile": (1.08, 'kernel-compile "modest, up to 8 percent" [WP §4.4]'),
}


def multicore_lb() -> list[Row]:
    rows = []
    for preset, (top, printed) in _FIG9_PRINTED.items():
        ratios = {}
        for label in FIG9_MIXES:
            ratios[label] = aggregate_ratio(mix_vms(label, preset), ESX4_HOST1, ESX35_HOST1, host1(), host1_perf())
            rows.append(Row("cpu-multicore-lb", f"{preset}: ESX 4 / ESX 3.5 throughput, {label} ({sum(mix(label))} vCPUs)",
                            1.0, ratios[label], RATIO_TOL, judged=False, x=sum(mix(label)), series=preset,
                            source="derived", note="per-mix value, not judged: the paper prints only the maximum and "
                            '"all ratios >= 1"; the mix is ours (Figure 9\'s are not printed). ' + _CELL_NOTE))
        best = max(ratios, key=ratios.get)
        rows.append(Row("cpu-multicore-lb", f"{preset}: largest ESX 4 / ESX 3.5 throughput ratio", top, ratios[best],
                        RATIO_TOL, x=0, series=f"{preset} max", source="published",
                        note=f"{printed}; simulated maximum at {best}. " + (
                            "A prediction: the SPECjbb-like preset is calibrated on B6's 1.4x (alone vs sharing "
                            "an LLC), which bounds the spreading gain; the model has no memory-bandwidth sharing"
                            if preset == "specjbb" else
                            "A prediction: the preset's 1 MB working set makes LLC placement nearly irrelevant")))
        values = ", ".join(f"{k}: {v:.3f}" for k, v in ratios.items())
        rows.append(_indicator("cpu-multicore-lb", f"{preset}: every ratio >= 1 (1 = yes)",
                               all(r >= 1.0 - 0.005 for r in ratios.values()), values, source="derived",
                               x=0, series=f"{preset} all",
                               note='"the benefit is largest when ... lightly utilized" and never a loss (research/cpu.md '
                                    "B5: all ratios >= 1); 0.005 allowed for sampling"))
    return rows


# --------------------------------------------------------------------------------------------
# B6-B7, Figures 10-11: extended fairness
# --------------------------------------------------------------------------------------------


def host2() -> Host:
    """Host2: Dell PE R905, 2 sockets x quad-core Opteron 8384, one NUMA node each (B0)."""
    return Host(name="host2", sockets=2, cores_per_llc=4, core_mhz=HOST2_MHZ, memory="64GB")


def host2_perf() -> PerfMachine:
    """Host2's caches: a 6 MB L3 per socket ([X] Opteron 8384), remote memory at the model's default ratio,
    each node's memory bandwidth."""
    return PerfMachine(llc="6MB", mem_node_gb_per_s=HOST2_MEM_GB_PER_S)


#: Host2's VMs fit a node, so both versions give them NUMA home nodes; homes are a preference here
#: (confined, the node holding two 4-vCPU VMs gives each half the CPU of the VM alone, which the
#: paper's "equal expectations" rule out)
ESX4_HOST2 = Version("ESX 4", CpuScheduler(numa_home_nodes=True, llc_aware=True, llc_balance=True,
                                           extended_fairness=True, cosched_mode="relaxed-4x"))
ESX35_HOST2 = Version("ESX 3.5", CpuScheduler(numa_home_nodes=True, llc_aware=False, cosched_mode="relaxed-3x"))

_EXTFAIR = ("ESX 4 with extended fairness (llc_balance + extended_fairness: every 3 s a running vCPU of the most "
            "LLC-crowded VM swaps with one of the least crowded, research/cpu.md C23)")


def _spread(result: dict[str, tuple[float, float]]) -> tuple[list[float], float, float]:
    """Throughputs normalised to vm0, max/min throughput, max/min CPU used."""
    rates = [result[k][0] for k in sorted(result)]
    used = [result[k][1] for k in sorted(result)]
    return [r / rates[0] for r in rates], max(rates) / min(rates), max(used) / min(used)


def extended_fairness() -> list[Row]:
    rows = []
    exp = "cpu-extended-fairness"
    # B6 (Figure 10): Host1, three 2-vCPU SPECjbb VMs, equal shares
    vms = [vm(f"vm{i}", 2, "specjbb") for i in range(3)]
    for version in (ESX35_HOST1, ESX4_HOST1):
        norm, spread, cpu = _spread(run(vms, version, host1(), host1_perf(), duration="60s"))
        shown = ", ".join(f"{x:.2f}" for x in norm)
        if version is ESX35_HOST1:
            rows.append(Row(exp, "Fig 10, ESX 3.5: best / worst VM throughput", 1.4, spread, RATIO_TOL, judged=False,
                            x=10, series="calibration", source="published",
                            note='"vm2 ... generated 40 percent higher throughput" [WP §4.5]; the SPECjbb-like preset is '
                                 f"calibrated on this 1.4x (alone vs sharing a 4 MB LLC), so not judged; normalised to vm0: {shown}. "
                                 + _CELL_NOTE))
            mid = sorted(norm)[1] / min(norm)
            rows.append(Row(exp, "Fig 10, ESX 3.5: middle / worst VM throughput", 1.0, mid, RATIO_TOL, x=10,
                            series="ESX 3.5", source="derived",
                            note="not printed: only vm2 is said to do better, so vm0 and vm1 ~ equal (research/cpu.md B6). "
                                 "A prediction of the placement"))
        else:
            rows.append(Row(exp, "Fig 10, ESX 4: best / worst VM throughput", 1.0, spread, EQUAL_TOL, x=10,
                            series="ESX 4", source="published",
                            note=f'"all three virtual machines generate the same throughput" [WP §4.5]; equal = max/min '
                                 f"within 0.05 (C29); normalised to vm0: {shown}; {_EXTFAIR}. A prediction"))
        rows.append(Row(exp, f"Fig 10, {version.name}: most / least CPU used", 1.0, cpu, 0.02, x=10,
                        series=version.name, source="derived",
                        note='"CPU time is still fairly allocated among all three virtual machines" [WP §4.5], in both '
                             "versions: max/min %USED = 1 (within 0.02)"))
    # B7 (Figure 11): Host2, three 4-vCPU SPECjbb VMs, 12 vCPUs on 8 pCPUs in 2 nodes
    vms = [vm(f"vm{i}", 4, "specjbb") for i in range(3)]
    for version in (ESX35_HOST2, ESX4_HOST2):
        norm, spread, cpu = _spread(run(vms, version, host2(), host2_perf(), duration="60s"))
        shown = ", ".join(f"{x:.3f}" for x in norm)
        if version is ESX35_HOST2:
            rows.append(_indicator(exp, "Fig 11, ESX 3.5: vm1 and vm2 above vm0 (1 = yes)", norm[1] > 1.01 and norm[2] > 1.01,
                                   f"normalised to vm0: {shown}", source="published", x=11, series="ESX 3.5",
                                   note='"vm1 and vm2 generate higher throughput compared to vm0" [WP §4.5] (no magnitude), read as '
                                        "more than 1% above; a prediction. ESX 3.5 here: the engine's NUMA homes without extended fairness"))
        else:
            rows.append(Row(exp, "Fig 11, ESX 4: best / worst VM throughput", 1.0, spread, EQUAL_TOL, x=11,
                            series="ESX 4", source="derived",
                            note=f'"almost equal throughput" [WP §4.5], read as max/min within 0.05 (C29); normalised to '
                                 f"vm0: {shown}; {_EXTFAIR}"))
        rows.append(Row(exp, f"Fig 11, {version.name}: most / least CPU used", 1.0, cpu, 0.02, x=11,
                        series=version.name, source="derived",
                        note='"equal expectations" [WP §4.5]: equal shares of an overcommitted host, max/min %USED = 1'))
    return rows


# --------------------------------------------------------------------------------------------
# B8, Figures 12-14 and Table 3: ESX 4 vs ESX 3.5 across load
# --------------------------------------------------------------------------------------------

#: Figures 12-13: Table 3's families at 4, 8, 16 and 32 vCPUs on Host1's 8 pCPUs (C30)
FIG12_LABELS = ("4 x 1 vCPU", "2 x 2 vCPU", "1 x 4 vCPU", "1 x4vCpuT",
                "8 x 1 vCPU", "4 x 2 vCPU", "2 x 4 vCPU", "2 x4vCpuT", "1 x8vCpuT",
                "16 x 1 vCPU", "4 x 4 vCPU", "2 x8vCpuT", "8 x 4 vCPU", "4 x8vCpuT")
#: Figure 14: configurations holding 8-vCPU VMs (ESX 3.5 with an 8-pCPU cell)
FIG14_LABELS = ("1 x 8 vCPU", "2 x 8 vCPU", "1 x16vCpuT", "2 x16vCpuT")
B8_RUN = RUN


#: The heaviest configurations, with socket cells and with the 8-pCPU cell, whose cell-lock wait is shown
LOCK_LABELS = ("8 x 4 vCPU", "2 x16vCpuT")


def lock_share(vms: list[VM], version: Version) -> tuple[float, float]:
    """Share of the VMs' cycles spent waiting for the scheduler's lock under ``version``
    (``vcpu_perf.lock_wait_cycles`` over ``cycles``), and the slice starts per pCPU per second."""
    from vmtwin.simulation import Simulation

    host = host1()
    sim = Simulation(Scenario(name="wp-esx-lock", seed=1, duration=B8_RUN, host=host, perf=host1_perf(),
                              cpu_scheduler=version.sched, vms=vms))
    sim.run()
    perf = sim.tables()["vcpu_perf"]
    rate = sim.manifest()["sched_stats"]["dispatches"] / host.cores / sim.duration
    return sum(perf.column("lock_wait_cycles").to_pylist()) / sum(perf.column("cycles").to_pylist()), rate


def _versions_for(label: str) -> tuple[Version, Version]:
    return ESX4_HOST1, (ESX35_HOST1_CELL8 if 8 in mix(label) else ESX35_HOST1)


def esx4_vs_esx35() -> list[Row]:
    rows = []
    exp = "cpu-esx4-vs-esx35"
    found: dict[tuple[str, str], float] = {}
    for fig, labels, presets in (("12", FIG12_LABELS, ("specjbb",)), ("13", FIG12_LABELS, ("kernel-compile",)),
                                 ("14", FIG14_LABELS, ("specjbb", "kernel-compile"))):
        for preset in presets:
            for label in labels:
                new, old = _versions_for(label)
                r = aggregate_ratio(mix_vms(label, preset), new, old, host1(), host1_perf(), B8_RUN)
                found[(fig, preset, label)] = r
                load = sum(mix(label))
                rows.append(Row(exp, f"Fig {fig} {preset}: ESX 4 / {old.name}, {label} ({load} vCPUs)", 1.0, r, RATIO_TOL,
                                judged=False, x=load, series=f"Fig {fig} {preset}", source="derived",
                                note="per-configuration value, not judged (no per-configuration number is printed; m "
                                     "and n are ours, C30). " + (
                                         "ESX 3.5 with its cell enlarged to 8 pCPUs (cell_size 8): one cell, the "
                                         "host; relaxed-3x; the cell lock's wait charged" if old is ESX35_HOST1_CELL8 else _CELL_NOTE)))

    def values(fig: str, preset: str) -> dict[str, float]:
        return {lab: r for (f, p, lab), r in found.items() if f == fig and p == preset}

    def shown(v: dict[str, float]) -> str:
        return ", ".join(f"{k}: {x:.3f}" for k, x in v.items())

    v12 = values("12", "specjbb")
    light = {k: x for k, x in v12.items() if sum(mix(k)) <= 8}
    heavy = {k: x for k, x in v12.items() if sum(mix(k)) > 8}
    for regime, v in (("lightly", light), ("heavily", heavy)):
        rows.append(_indicator(exp, f"Fig 12 SPECjbb: ESX 4 better in every {regime} loaded configuration (1 = yes)",
                               all(x > 1.0 for x in v.values()), shown(v), source="derived", x=12, series="Fig 12",
                               note=f'"significant performance improvement" in "both lightly and heavily loaded" '
                                    f"configurations [WP §4.6] (research/cpu.md B8: all ratios > 1); {regime} = "
                                    + ("<= 8 vCPUs on 8 pCPUs" if regime == "lightly" else
                                       "> 8 vCPUs; the paper puts these gains on co-scheduling (relaxed-3x against "
                                       "relaxed-4x here) and locking (the cell lock, whose wait the next rows show)")))
    for label in LOCK_LABELS:
        share, rate = lock_share(mix_vms(label, "specjbb"), _versions_for(label)[1])
        rows.append(Row(exp, f"cell lock: share of ESX 3.5's cycles spent waiting for it, {label} ({sum(mix(label))} vCPUs)",
                        0.0, share, 0.0, judged=False, x=sum(mix(label)), series="cell lock", source="derived",
                        note="not printed: the paper gives the cell lock no cost. Each slice start waits M/D/1 behind "
                             f"the other pCPUs of its cell (docs/cells.md), here {rate:.0f} slice starts per pCPU per "
                             "second, holding the lock 3.8 us (perf.sched_lock_hold, an upper bound: a whole "
                             "context switch's direct cost). Shown to say how much of the heavily loaded gap the "
                             "lock can explain at these invocation rates"))
    v13 = values("13", "kernel-compile")
    in_band = sum(1.07 <= x <= 1.11 for x in v13.values())
    rows.append(Row(exp, "Fig 13 kernel-compile: median ESX 4 / ESX 3.5 ratio", 1.09, statistics.median(v13.values()),
                    0.02, x=13, series="Fig 13", source="derived",
                    note='"Approximately 7-11 percent improvement is observed in many cases" [WP §4.6]: the band\'s '
                         f"middle, 1.09 +- 0.02; configurations in [1.07, 1.11]: {in_band} of {len(v13)}; {shown(v13)}"))
    v14 = {**values("14", "specjbb"), **{f"{k} (kc)": x for k, x in values("14", "kernel-compile").items()}}
    rows.append(_indicator(exp, "Fig 14: some configuration with 8-vCPU VMs gains more than 30% (1 = yes)",
                           max(v14.values()) > 1.30, shown(v14), source="published", x=14, series="Fig 14",
                           note='"the improvement can be higher than 30 percent" [WP §4.6]'))
    rows.append(_indicator(exp, "Fig 14: ESX 4 better in every configuration with 8-vCPU VMs (1 = yes)",
                           all(x > 1.0 for x in v14.values()), shown(v14), source="derived", x=14, series="Fig 14",
                           note="research/cpu.md B8: Figure 14's ratios all > 1"))
    return rows


CPU_ESX_EXPERIMENTS = [
    Experiment("cpu-multicore-lb", "Multicore-aware load balancing: ESX 4 / ESX 3.5 aggregate throughput on Host1",
               "WP §4.4 Figure 9 (research/cpu.md B5)", multicore_lb, "vCPUs", "throughput ratio"),
    Experiment("cpu-extended-fairness", "Extended fairness: three SPECjbb VMs' throughput (Host1 2-vCPU, Host2 4-vCPU)",
               "WP §4.5 Figures 10-11 (research/cpu.md B6-B7)", extended_fairness, "figure", "ratio"),
    Experiment("cpu-esx4-vs-esx35", "ESX 4 vs ESX 3.5 across load: Table 3 mixes, SPECjbb and kernel-compile",
               "WP §4.6 Figures 12-14, Table 3 (research/cpu.md B8)", esx4_vs_esx35, "active vCPUs", "throughput ratio"),
]
