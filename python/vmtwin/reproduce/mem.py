"""Memory reproductions run through the engine (research/memory.md §B).

``mem-idle-tax`` (B.6, [S1] via the extended version's Fig. 7): two VMs of 256 MB with equal
shares on a host with about 360 MB for VMs; VM1 (Windows) idle after booting, VM2 (Linux) running
a memory-intensive dbench. With a tax rate of 0 the two converge on 179 MB each (printed); at 75%
idle memory moves from VM1 to VM2.

How it is set up here (every choice named):

- **Host.** The 2002 policy keeps 6% of host memory free (its high threshold [S1 §6.3]), and ESX
  and the VMs' own overhead are set to 0, so the memory the targets divide is 94% of the host: a
  381 MB host leaves 358.1 MB, the paper's "approximately 360 MB" (179 x 2 = 358). This is the
  one input fitted to the paper; nothing in the policy was tuned on these numbers.
- **VM1** touched all its memory at boot (Windows zeroes memory at boot; modelled as pages mapped
  at power-on, holding contents no other VM has, so nothing is shared) and then halts: its active
  estimate decays with the slow moving average (gain 0.1 per 30 s period).
- **VM2**'s dbench is a CPU-bound workload touching all its 256 MB (20,000 pages per CPU-second,
  10% writes): fully active.
- Both run for 30 simulated minutes; the row reads each VM's SZTGT (the policy's target, MB),
  averaged over the last 5 minutes.

Rows: the tau = 0 allocations are published (179 MB each, tolerance 5%); the tau = 0.75 ones are
derived (VM2 at its 256 MB maximum, VM1 the rest, 358 - 256 = 102 MB: research/memory.md B.6's
prediction from the shares-per-page formula). The paper's "boosting its performance by over 30%"
is not judged: there is no dbench throughput model yet.
"""

from __future__ import annotations

from vmtwin.reproduce.base import Experiment, Row
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation

#: Host memory giving 0.94 x 381 MB = 358.1 MB for VMs (the 2002 policy's 6% free target).
IDLE_TAX_HOST = "381MB"
IDLE_TAX_RUN = "30min"
#: Relative tolerance of the allocations (research/memory.md B.6 gives them to the MB).
IDLE_TAX_TOLERANCE = 0.05


def _idle_tax_scenario(tau: float) -> dict:
    return {
        "name": f"idle-tax-{tau:g}", "seed": 7, "duration": IDLE_TAX_RUN,
        "host": {"cores_per_llc": 2, "core_mhz": "800MHz", "memory": IDLE_TAX_HOST},
        "memory": {"policy": "esx2002", "idle_tax": tau, "host_overhead": "0B"},
        "vms": [
            {"name": "vm1-windows-idle", "memory": "256MB", "workload": {"type": "idle"},
             "guest_memory": {"overhead": "0B", "content": {"os": 2000, "os_fraction": 1.0}}},
            {"name": "vm2-linux-dbench", "memory": "256MB", "workload": {"type": "cpu_bound", "duty": 1.0},
             "guest_memory": {"overhead": "0B", "content": {"os": 72}, "touch_rate": 20000, "write_fraction": 0.1}},
        ],
    }


def idle_tax_targets(tau: float) -> dict[str, float]:
    """Each VM's mean SZTGT (MB) over the last 5 minutes of the run with tax rate ``tau``."""
    sim = Simulation(parse_scenario(_idle_tax_scenario(tau)))
    sim.run()
    mem = sim.tables()["mem"].to_pandas()
    last = mem[mem["time_s"] > mem["time_s"].max() - 300]
    return last.groupby("vm")["SZTGT"].mean().to_dict()


def idle_tax() -> list[Row]:
    rows = []
    t0, t75 = idle_tax_targets(0.0), idle_tax_targets(0.75)
    for vm in ("vm1-windows-idle", "vm2-linux-dbench"):
        rows.append(Row("mem-idle-tax", f"{vm} MB at tau=0", 179.0, t0[vm], 179.0 * IDLE_TAX_TOLERANCE, x=0.0, series=vm,
                        source="published", note='"With an initial tax rate of 0%, the VMs each converge on the same '
                        '179 MB allocation" (research/memory.md B.6)'))
    derived = {"vm2-linux-dbench": (256.0, "fully active, so at 75% tax its weight is 4x VM1's: 4/5 of 358 MB = 286 MB, "
                                    "capped at its 256 MB size (research/memory.md B.6)"),
               "vm1-windows-idle": (102.0, "the rest of the 358 MB once VM2 is at 256 MB (research/memory.md B.6)")}
    for vm, (target, note) in derived.items():
        rows.append(Row("mem-idle-tax", f"{vm} MB at tau=0.75", target, t75[vm], target * IDLE_TAX_TOLERANCE, x=0.75,
                        series=vm, source="derived", note=note))
    rows.append(Row("mem-idle-tax", "vm2 performance gain at tau=0.75 (%)", 30.0, float("nan"), 0.0, judged=False,
                    source="published", note='"boosting its performance by over 30%": not judged, no dbench throughput '
                    "model yet"))
    return rows


MEM_EXPERIMENTS = [
    Experiment("mem-idle-tax", "Idle memory tax: an idle and a busy 256 MB VM, equal shares, tau 0 and 0.75",
               "[S1] extended version Fig. 7 (research/memory.md B.6)", idle_tax, "tax rate", "SZTGT (MB)"),
]
