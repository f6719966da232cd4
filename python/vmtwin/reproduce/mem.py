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

``mem-sharing-homogeneous`` (B.2, [S1 Fig. 4]): 1 to 10 identical 40 MB Linux VMs running SPEC95
for 30 minutes; the sharing scanner's totals at the end. Two content fractions are calibrated
(``SHARING_ZERO_FRACTION`` on the 1-VM zero pages, 55% of ~5 MB; ``SHARING_OS_FRACTION`` on the
large-N 67% shared); the 60% reclaimed at 10 VMs and the two trends (shared - reclaimed nearly
constant, shared growing linearly) are predictions. The 1-VM total (5 MB) and its zero share
(55%) miss: the content model has no duplicate non-zero pages within one VM.
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


# --------------------------------------------------------------------------------------------
# B.2: page sharing with homogeneous VMs
# --------------------------------------------------------------------------------------------

#: [S1 Fig. 4]: identical 40 MB Red Hat Linux 7.2 VMs, 1 to 10 of them, SPEC95 for 30 minutes.
SHARING_VM_MB = 40
SHARING_COUNTS = (1, 2, 4, 6, 8, 10)
SHARING_RUN = "30min"
#: Calibrated: zero pages of one VM = 55% of its ~5 MB reclaimed = 2.75 MB = 704 pages, spread
#: over the 40% of its pages outside the OS image: 704 / (0.4 x 10,240).
SHARING_ZERO_FRACTION = 704 / (0.4 * 10240)
#: Calibrated: sharing "approaches 67%" at large N = OS-image pages + zero pages:
#: 0.67 - 704 / 10,240 = 0.60 of each VM is common OS image (code, read-only data).
SHARING_OS_FRACTION = 0.60


def _sharing_scenario(n: int) -> dict:
    return {
        "name": f"sharing-{n}", "seed": 11, "duration": SHARING_RUN,
        "host": {"cores_per_llc": 2, "core_mhz": "933MHz", "memory": "1GB"},
        "memory": {"policy": "esx2002", "host_overhead": "0B"},
        "vms": [{
            "name": "rh72", "count": n, "memory": f"{SHARING_VM_MB}MB",
            # SPEC95-like: busy, reading all of its memory outside the OS image (mapped at boot),
            # so the zero pages there are mapped too; no writes (a write would leave new private
            # contents where the workload's data already is private)
            "guest_memory": {"overhead": "0B",
                             "content": {"os": 72, "os_fraction": SHARING_OS_FRACTION, "zero_fraction": SHARING_ZERO_FRACTION},
                             "working_set": "16MB", "working_set_offset": "24MB", "touch_rate": 2000},
            "workload": {"type": "cpu_bound", "duty": 1.0 if n <= 2 else 2 / n},
        }],
    }


def sharing_at(n: int) -> dict[str, float]:
    """Totals over the VMs at the end of the run: MB shared (SHRD), reclaimed (SHRDSVD), zero."""
    sim = Simulation(parse_scenario(_sharing_scenario(n)))
    sim.run()
    mem = sim.tables()["mem"].to_pandas()
    last = mem[mem["time_s"] == mem["time_s"].max()]
    return {k: float(last[k].sum()) for k in ("SHRD", "SHRDSVD", "ZERO")}


def sharing() -> list[Row]:
    got = {n: sharing_at(n) for n in SHARING_COUNTS}
    rows = []
    one = got[1]
    rows.append(Row("mem-sharing-homogeneous", "1 VM: MB reclaimed", 5.0, one["SHRDSVD"], 0.5, x=1, series="reclaimed",
                    source="published", note='"Nearly 5 MB of memory was reclaimed from a single VM" [S1 §4.3]; '
                    "prediction: the content model has no duplicate non-zero pages within one VM, so only its zero "
                    "pages count (calibrated to 2.75 MB)"))
    rows.append(Row("mem-sharing-homogeneous", "1 VM: zero pages, % of reclaimed", 55.0,
                    100.0 * min(one["ZERO"], one["SHRDSVD"]) / max(one["SHRDSVD"], 1e-9), 5.0,
                    x=1, series="zero", source="published",
                    note='"about 55% was due to shared copies of the zero page" [S1 §4.3]; SHARING_ZERO_FRACTION is '
                    "calibrated on the 2.75 MB this implies, but with no other duplicates in one VM the model's "
                    "share is ~100%: a miss of the content model"))
    ten = got[10]
    total = 10 * SHARING_VM_MB
    rows.append(Row("mem-sharing-homogeneous", "10 VMs: shared, % of VM memory", 67.0, 100 * ten["SHRD"] / total, 3.0,
                    x=10, series="shared", source="published",
                    note='sharing "approaches 67%" [S1 §4.3]; calibration point of SHARING_OS_FRACTION'))
    rows.append(Row("mem-sharing-homogeneous", "10 VMs: reclaimed, % of VM memory", 60.0, 100 * ten["SHRDSVD"] / total,
                    3.0, x=10, series="reclaimed", source="published",
                    note='"nearly 60% of all VM memory is reclaimed" [S1 §4.3]; a prediction'))
    # Shared - Reclaimed (the single copies) "remains nearly constant" from 2 VMs on
    copies = {n: got[n]["SHRD"] - got[n]["SHRDSVD"] for n in SHARING_COUNTS if n >= 2}
    spread = (max(copies.values()) - min(copies.values())) / max(copies.values())
    rows.append(Row("mem-sharing-homogeneous", "shared - reclaimed, relative spread over 2..10 VMs", 0.0, spread, 0.10,
                    series="copies", source="derived",
                    note='"remains nearly constant" [S1 §4.3, Fig. 4]: read as within 10% of its largest value'))
    # linear growth of shared MB after the first two VMs (trend)
    xs = [n for n in SHARING_COUNTS if n >= 2]
    slope = [(got[b]["SHRD"] - got[a]["SHRD"]) / (b - a) for a, b in zip(xs, xs[1:])]
    rows.append(Row("mem-sharing-homogeneous", "shared MB per added VM, relative spread over 2..10 VMs", 0.0,
                    (max(slope) - min(slope)) / max(slope), 0.10, series="shared", source="derived",
                    note='"increases linearly with the number of VMs" after the second [S1 §4.3]: each added '
                    "VM's increment within 10% of the largest"))
    return rows


MEM_EXPERIMENTS = [
    Experiment("mem-idle-tax", "Idle memory tax: an idle and a busy 256 MB VM, equal shares, tau 0 and 0.75",
               "[S1] extended version Fig. 7 (research/memory.md B.6)", idle_tax, "tax rate", "SZTGT (MB)"),
    Experiment("mem-sharing-homogeneous", "Page sharing: 1-10 identical 40 MB Linux VMs for 30 minutes",
               "[S1 Fig. 4] (research/memory.md B.2)", sharing, "VMs", "MB / % of VM memory"),
]
