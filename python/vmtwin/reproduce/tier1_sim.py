"""The Tier-1 paper's tables from *simulated* runs: the execution-speed model's counters, written as
``perf stat`` text and analysed by ``vmtwin.methodology`` exactly as real runs are (issue 12, item 3).

Each experiment runs a native and a virtual scenario of one workload preset
(:mod:`vmtwin.methodology.sim_presets`) on the engine, turns the VM's ``vcpu_perf`` rows into the
counter sources the paper used (native OS, ESX-EMON host view, Guest EMON guest-mode vPMC, or a
hybrid vPMC), and compares what the methodology computes with the paper's cells.

Rows of the ``calibration`` series are the preset's inputs coming back out of the simulator: shown,
not judged (they hold by construction; a difference would mean the engine lost work). Every other
row is a **prediction** and is judged: ±3% for a table cell, ±1 percentage point for a headline
ratio, ±1.5 us for a request-response latency (research/perf-methodology.md C.4). A prediction
that misses is reported as FAIL: the presets model nested paging and the hypervisor's own work,
nothing of caches, I/O or interrupt paths, and the misses show how much of the paper's overhead
those carry.

Hosts: one VM pinned by construction (as many cores as vCPUs, nothing else running), 2.4 GHz (the
clock does not change per-unit figures), 60 s at 2 s sampling.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

from vmtwin.methodology import paper
from vmtwin.methodology.method import Analysis
from vmtwin.methodology.schema import Run
from vmtwin.methodology.sim_presets import Tier1Preset, preset
from vmtwin.methodology.simulated import simulated_run
from vmtwin.reproduce.base import Experiment, Row

CORE_MHZ = 2400
RUN = "60s"
CELL_REL = 0.03
POINTS = 1.0
LATENCY_US = 1.5


class _Rows:
    def __init__(self, experiment: str) -> None:
        self.experiment, self.rows = experiment, []

    def add(self, series: str, metric: str, target: float, computed: float, tolerance: float, *, source: str,
            note: str, judged: bool = True) -> None:
        self.rows.append(Row(self.experiment, metric, target, computed, tolerance, judged=judged,
                             x=len(self.rows) + 1, series=series, note=note, source=source))

    def cell(self, metric: str, target: float, computed: float, note: str, *, source: str = "published",
             series: str = "prediction") -> None:
        self.add(series, metric, target, computed, CELL_REL * abs(target), source=source, note=note)

    def calibration(self, metric: str, target: float, computed: float, note: str, source: str = "published") -> None:
        self.add("calibration", metric, target, computed, CELL_REL * abs(target), source=source, judged=False,
                 note=f"input of the preset ({note}); holds by construction, not judged")


def simulate(p: Tier1Preset, vcpus: int, seed: int = 1) -> tuple[Run, Run, Run, Run]:
    """Native, host-system, guest-mode vPMC and hybrid vPMC runs of preset ``p`` on the engine."""
    from vmtwin.scenario import VM, CpuBound, Host, Scenario
    from vmtwin.scenario.perf import VmPerf
    from vmtwin.simulation import Simulation

    runs = {}
    with tempfile.TemporaryDirectory(prefix="vmtwin-tier1-sim-") as tmp:
        for virtual in (False, True):
            duty = p.duty_virtual if virtual else p.duty_native
            sc = Scenario(name=f"tier1-{p.name}", seed=seed, duration=RUN,
                          host=Host(name="tier1", cores_per_llc=vcpus, core_mhz=CORE_MHZ),
                          vms=[VM(name=p.name, vcpus=vcpus, workload=CpuBound(duty=duty, burst="20ms"),
                                  perf=VmPerf(preset=f"tier1-{p.name}", virtualized=virtual))])
            sim = Simulation(sc)
            sim.run()
            runs[virtual] = sim.write(Path(tmp) / ("virtual" if virtual else "native"))
        native = simulated_run(runs[False], p.name, "native_os")
        host = simulated_run(runs[True], p.name, "host_system")
        guest = simulated_run(runs[True], p.name, "guest_vpmc", "guest")
        hybrid = simulated_run(runs[True], p.name, "guest_vpmc", "hybrid")
    return native, host, guest, hybrid


def _k(x: float) -> float:
    return x / 1e3


def _tables(rows: _Rows, paper_runs: dict[str, Run], a: Analysis, columns: tuple[str, ...], unit: str,
            scale=lambda x: x, scale_name: str = "") -> None:
    """Calibration and prediction rows for the high-level table's cycles, CPI and path length."""
    hl = a.high_level()
    for col in columns:
        printed = paper_runs[col]
        for mode in ("user", "kernel"):
            c, i = printed.per_unit("cycles", mode), printed.per_unit("instructions", mode)
            sim_c, sim_i = hl[col][mode]["cycles"], hl[col][mode]["path_length"]
            if col == "Native":
                rows.calibration(f"{col} cycles/{unit} {mode}{scale_name}", scale(c), scale(sim_c), "native cycles set cpi_core")
                rows.calibration(f"{col} path length {mode}{scale_name}", scale(i), scale(sim_i), "native path length")
                continue
            if col == "Guest EMON":
                rows.calibration(f"{col} path length {mode}{scale_name}", scale(i), scale(sim_i),
                                 "the guest's virtual path length")
            elif mode == "kernel":
                rows.calibration(f"{col} path length kernel{scale_name}", scale(i), scale(sim_i),
                                 "guest kernel + hypervisor path lengths, both inputs")
            else:
                rows.calibration(f"{col} path length user{scale_name}", scale(i), scale(sim_i),
                                 "the host view's user mode is the guest's user path length, an input; the "
                                 "paper's host and guest user differ (GAP-5)")
            rows.cell(f"{col} cycles/{unit} {mode}{scale_name}", scale(c), scale(sim_c),
                      "predicted: native cpi_core + 2D walks at native walks per instruction"
                      + (" + the hypervisor layer (input)" if col == "ESX-EMON" and mode == "kernel" else ""))
            rows.cell(f"{col} CPI {mode}", c / i, sim_c / sim_i, "predicted: cycles / path length")


def oltp() -> list[Row]:
    p = preset("oltp")
    native, host, guest, _ = simulate(p, vcpus=8)
    a = Analysis(native, host, guest, basis="native_total")
    pr = paper.runs("oltp")
    rows = _Rows("tier1-sim-oltp")
    _tables(rows, pr, a, ("Native", "ESX-EMON", "Guest EMON"), "tx", _k, " (K)")
    tr = {(t["column"], t["mode"]): t for t in a.translation()}
    for col in ("ESX-EMON", "Guest EMON"):
        for mode in ("user", "kernel"):
            run = pr[col]
            for event, label in (("dtlb_walks", "DTLB walks/tx"), ("dtlb_walk_cycles", "PMH cycles/tx (K)"),
                                 ("ept_walk_cycles", "EPT cycles/tx (K)")):
                target = run.per_unit(event, mode)
                computed = {"dtlb_walks": tr[col, mode]["dtlb_walks"],
                            "dtlb_walk_cycles": tr[col, mode]["dtlb_walk_cycles"],
                            "ept_walk_cycles": tr[col, mode]["ept_cycles"]}[event]
                div = 1 if event == "dtlb_walks" else 1e3
                rows.cell(f"{col} {label} {mode}", target / div, computed / div,
                          "Table 3; predicted: walks at the native rate per instruction, x the 2D walk cost "
                          "(EPT cost per walk calibrated on Guest EMON's EPT cycles / walks)")
            rows.cell(f"{col} DTLB miss latency {mode}", run.per_unit("dtlb_walk_cycles", mode) / run.per_unit("dtlb_walks", mode),
                      tr[col, mode]["dtlb_latency"], "Table 3 walk cycles / walks; predicted: the 2D walk cost")
    d = a.decomposition()
    parts = {x["component"]: x["percent"] for x in d["parts"]}
    rows.add("headline", "cycles/tx increase (%)", 22.35, d["total"]["percent"], POINTS, source="derived",
             note="B.5: 3668K / 2998K - 1; predicted from the simulated host view (±1 point)")
    for comp, exact in (("guest user", 9.87), ("guest kernel", 2.54)):
        rows.add("headline", f"{comp} share of native cycles (%)", exact, parts[comp], POINTS, source="derived",
                 note="B.5: component growth / native total cycles (A.6.3-4); predicted (±1 point)")
    rows.add("calibration", "hypervisor (VMM + VMkernel) share of native cycles (%)", 8.04,
             parts["hypervisor (VMM + VMkernel)"], POINTS, source="derived", judged=False,
             note="B.5: 241K / 2998K; the hypervisor layer's cycles are an input (host - guest kernel), so this "
                  "holds by construction, not judged")
    ratio = paper.value("table1", "Throughput (Trans/sec)", "", "vSphere 5.0") / paper.value("table1", "Throughput (Trans/sec)", "", "Native")
    rec = a.reconciliation()
    rows.add("headline", "throughput ratio to native (%)", 100 * ratio, 100 * rec["measured_throughput_ratio"], POINTS,
             source="derived", note="Table 1: vSphere 5.0 / native throughput (8.4K / 10.6K); simulated: the "
                                    "virtual run's transactions per second over the native run's. Table 1 may not be "
                                    "Table 2's configuration (GAP-7) (±1 point)")
    return rows.rows


def hadoop() -> list[Row]:
    p = preset("hadoop")
    native, host, guest, _ = simulate(p, vcpus=8)
    a = Analysis(native, host, guest, basis="native_total")
    pr = paper.runs("hadoop")
    rows = _Rows("tier1-sim-hadoop")
    _tables(rows, pr, a, ("Native", "ESX-EMON", "Guest EMON"), "row")
    tr = {(t["column"], t["mode"]): t for t in a.translation()}
    for mode in ("user", "kernel"):
        rows.calibration(f"Native PMH cycles/row {mode}", pr["Native"].per_unit("dtlb_walk_cycles", mode),
                         tr["Native", mode]["dtlb_walk_cycles"], "Table 5: sets the native walks per instruction")
        for event, label in (("dtlb_walk_cycles", "PMH"), ("ept_walk_cycles", "EPT")):
            rows.cell(f"ESX-EMON {label} cycles/row {mode}", pr["ESX-EMON"].per_unit(event, mode),
                      tr["ESX-EMON", mode]["ept_cycles" if event == "ept_walk_cycles" else event], "Table 5; predicted with OLTP's walk costs and the native walk rate")
    d = a.decomposition()
    rec = a.reconciliation()
    rows.add("headline", "H2 cycles per row increase (%)", 17.6, d["total"]["percent"], POINTS, source="published",
             note='"a 17.6% increase in cycles per transaction"; predicted (±1 point)')
    rows.add("headline", "H1 elapsed time increase (%)", 16.2, 100 * (rec["elapsed_ratio"] - 1), POINTS,
             source="published", note='"16.2% greater elapsed time"; predicted (C_E/C_N)(U_N/U_E) (±1 point)')
    rows.add("headline", "H3 kernel share of the increase (%)", 60, 100 * d["kernel_share_of_increase"], POINTS,
             source="published", note='"60% of the increase in cycles is in kernel mode"; predicted (±1 point)')
    return rows.rows


def latency() -> list[Row]:
    p = preset("rr")
    native, _, _, hybrid = simulate(p, vcpus=1)
    a = Analysis(native, guest=hybrid, basis="native_total")
    hyb = a.as_dict()["hybrid"]
    pr = paper.runs("rr-loopback")
    rows = _Rows("tier1-sim-latency")
    scale = lambda x: x / 1e9  # noqa: E731 - billions, as Table 7 prints
    for col, run, key in (("Native", native, None), ("vPMC-Hybrid (VM)", hybrid, None)):
        printed = pr[col]
        for event, label in (("cycles", "cycles (B)"), ("instructions", "instructions (B)"),
                             ("ept_walk_cycles", "EPT walk cycles (B)")):
            target, sim = printed.per_unit(event, "all"), run.per_unit(event, "all")
            if col == "Native" or event != "cycles":
                if event == "ept_walk_cycles" and col == "Native":
                    continue
                rows.calibration(f"{col} {label}", scale(target), scale(sim),
                                 "Table 7; the VM's EPT cycles set the walk rate")
            else:
                rows.cell(f"{col} {label}", scale(target), scale(sim), "Table 7; predicted: nested walks only")
    rows.cell("VM CPI (hybrid)", paper.cell_value(paper.printed("table7", "CPI", "", "vPMC-Hybrid (VM)")),
              hyb["cpi_virtual"], "Table 7 prints 1.56; predicted: hybrid cycles / guest instructions")
    rows.add("headline", "cycle increase (%)", 7.98, 100 * hyb["cycle_inflation"], POINTS, source="derived",
             note="B.8: 406B / 376B - 1; predicted: nested paging alone (the paper: EPT 4%, caches 3%, TLB 1%) (±1 point)")
    names = paper.table("table6")["columns"]
    native_us = [paper.value("table6", "Native", "", n) for n in names]
    vm_us = [paper.value("table6", "VM", "", n) for n in names]
    infl = hyb["cycle_inflation"]
    ping = names.index("Ping")
    fixed = vm_us[ping] - native_us[ping] * (1 + infl)
    for i, name in enumerate(names):
        predicted = native_us[i] * (1 + infl) + fixed
        if i == ping:
            rows.calibration(f"{name} VM response time (us)", vm_us[i], predicted,
                             f"Table 6; the fixed part, {fixed:.2f} us, is fitted to Ping")
        else:
            rows.add("prediction", f"{name} VM response time (us)", vm_us[i], predicted, LATENCY_US, source="published",
                     note=f"Table 6; predicted: native x (1 + simulated inflation {100 * infl:.2f}%) + Ping's fixed "
                          f"{fixed:.2f} us (±1.5 us)")
    return rows.rows


TIER1_SIM_EXPERIMENTS = [
    Experiment("tier1-sim-oltp", "Tier-1 Tables 1-3 from simulated OLTP runs (execution-speed model, perf stat path)",
               "seed 001 §5.1; research/perf-methodology.md C.3", oltp, x_label="row", y_label="value"),
    Experiment("tier1-sim-hadoop", "Tier-1 Tables 4-5 from simulated Hadoop runs", "seed 001 §5.2; C.3",
               hadoop, x_label="row", y_label="value"),
    Experiment("tier1-sim-latency", "Tier-1 Tables 6-7 from simulated request-response runs (hybrid vPMC)",
               "seed 001 §5.3; C.3", latency, x_label="row", y_label="value"),
]


def all_rows(experiment: Optional[str] = None) -> list[Row]:
    """Every simulated-Tier-1 row (or one experiment's)."""
    return [r for e in TIER1_SIM_EXPERIMENTS if experiment in (None, e.id) for r in e.run()]
