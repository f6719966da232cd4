"""Relaxed co-scheduling, [WP §4.3] Figures 6-7 (research/cpu.md B4): strict vs ESX 3.x vs ESX 4.

Setup (B4, C15-C16): a 2-vCPU VM and a 1-vCPU VM on the same two pCPUs (a 2-pCPU host stands in
for the affinity), Normal shares (2000 : 1000). The paper gives no workload; per C16 the 2-vCPU
VM runs a synchronising program (the barrier workload: threads that spin at a barrier, so a
thread whose sibling is descheduled does no useful work) and the 1-vCPU VM is CPU-bound.
Performance is the program's barriers per second; utilisation is the host's %USED.

The figures print no numbers, only orderings (B4's targets), so every row is derived: an
indicator, 1 when the ordering holds in the simulation, judged against 1, with the simulated
ratios in the note. Figure 8 (numbers of co-stops) needs co-stop counts, which the tables do not
carry (docs/cosched.md gives the engine's counts: ESX 4 far fewer).
"""

from __future__ import annotations

from vmtwin.reproduce.base import Experiment, Row
from vmtwin.scenario import VM, Barrier, CpuBound, CpuScheduler, Host, Scenario

RUN = "30s"
MODES = {"strict": "strict", "ESX 3.5": "relaxed-3x", "ESX 4": "relaxed-4x"}
#: "about the same" utilisation (Figure 6): within 5%, research/cpu.md C29's tolerance for "equal"
SAME = 0.05


def run_mode(mode: str, seed: int = 1) -> dict[str, float]:
    """Host utilisation (fraction of 2 pCPUs) and the program's barriers/s under ``mode``."""
    from vmtwin.simulation import Simulation

    vms = [VM(name="pair", vcpus=2, cpu={"shares": 2000}, workload=Barrier(phase="5ms", phase_distribution="fixed")),
           VM(name="one", cpu={"shares": 1000}, workload=CpuBound(duty=1.0, burst="10ms"))]
    sim = Simulation(Scenario(name="wp-cosched", seed=seed, duration=RUN, host=Host(name="b4", cores_per_llc=2),
                              cpu_scheduler=CpuScheduler(cosched_mode=mode), vms=vms))
    sim.run()
    tables = sim.tables()
    vm = tables["vm"].to_pandas()
    used = vm.groupby("vm")["%USED"].mean().sum() / 200.0
    rate = tables["barrier"].to_pandas()["barriers_per_s"].mean()
    cstp = vm[vm["vm"] == "pair"]["%CSTP"].mean()
    return {"util": float(used), "perf": float(rate), "cstp": float(cstp)}


def _row(metric: str, holds: bool, values: str, note: str) -> Row:
    return Row("cpu-cosched", metric, 1.0, 1.0 if holds else 0.0, 0.0, source="derived",
               note=f"{note}; simulated: {values}")


def relaxed_cosched() -> list[Row]:
    r = {name: run_mode(mode) for name, mode in MODES.items()}
    u = {k: v["util"] / r["strict"]["util"] for k, v in r.items()}
    p = {k: v["perf"] / r["strict"]["perf"] for k, v in r.items()}
    fig6 = 'Figure 6 trend: "the relaxed algorithm achieves higher utilization" [WP §4.3]'
    fig7 = 'Figure 7 trend: "ESX 4 achieves the same utilization with less co-scheduling overhead" [WP §4.3]'
    uv = f"utilisation / strict: ESX 3.5 {u['ESX 3.5']:.3f}, ESX 4 {u['ESX 4']:.3f}"
    pv = (f"barriers/s: strict {r['strict']['perf']:.1f}, ESX 3.5 {r['ESX 3.5']['perf']:.1f}, "
          f"ESX 4 {r['ESX 4']['perf']:.1f}")
    return [
        _row("utilisation ESX 3.5 / strict > 1", u["ESX 3.5"] > 1, uv, fig6),
        _row("utilisation ESX 4 / strict > 1", u["ESX 4"] > 1, uv, fig6),
        _row("utilisation ESX 4 ≈ ESX 3.5 (within 5%)", abs(u["ESX 4"] / u["ESX 3.5"] - 1) <= SAME, uv,
             'Figure 6: ESX 3.5 and ESX 4 "about the same" [WP §4.3]; 5% as research/cpu.md C29'),
        _row("performance ESX 3.5 / strict > 1", p["ESX 3.5"] > 1, pv, fig7),
        _row("performance ESX 4 / strict > 1", p["ESX 4"] > 1, pv, fig7),
        _row("performance ESX 4 > ESX 3.5", r["ESX 4"]["perf"] > r["ESX 3.5"]["perf"], pv,
             'Figure 7: ESX 4 higher than ESX 3.5 [WP §4.3]'),
        _row("co-stopped time (%CSTP) ESX 4 < ESX 3.5", r["ESX 4"]["cstp"] < r["ESX 3.5"]["cstp"],
             f"2-vCPU VM's %CSTP: ESX 3.5 {r['ESX 3.5']['cstp']:.2f}, ESX 4 {r['ESX 4']['cstp']:.2f}",
             'Figure 8: "ESX 4 has far fewer co-stops than ESX 3.5" [WP §4.3]; the paper counts co-stops, '
             "the tables carry the time co-stopped (esxtop %CSTP), whose ordering is judged here"),
    ]


CPU_COSCHED_EXPERIMENTS = [
    Experiment("cpu-cosched", "Relaxed co-scheduling: utilisation and performance vs strict",
               "WP §4.3 Figures 6-7 (research/cpu.md B4)", relaxed_cosched, "mode", "indicator"),
]
