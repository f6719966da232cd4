"""Cost of the execution-speed model: the issue-9 benchmark host with and without it.

    .venv/bin/python benchmarks/bench_perf.py              # one simulated hour, both ways
    .venv/bin/python benchmarks/bench_perf.py --minutes 10

The host of the full-scheduler issue's benchmark: 2 sockets x 8 cores x 2 threads (32 logical
CPUs, a NUMA node and an LLC per socket), relaxed-4x co-scheduling, 60 VMs of 1, 2, 4 and 8
vCPUs (20 + 22 + 12 + 6 VMs = 160 vCPUs) running closed-loop CPU work at 15% duty, one simulated
hour at 2 s sampling, tables kept in memory. Run twice in fresh child processes: without any
``perf`` profile (the model off) and with every VM profiled (SPECjbb-like and
kernel-compile-like, alternating). Reported: wall and CPU time of ``run()``, events, rows of
``vcpu_perf``, the model's share of the run, and the share of dispatches that migrate (from the
scheduler's counters). Wall times are upper bounds on a shared machine; the CPU time is the
figure to compare. Prints its figures and appends one JSON line to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = [(1, 20), (2, 22), (4, 12), (8, 6)]


def scenario(minutes: float, with_perf: bool):
    from vmtwin.scenario import VM, CpuBound, CpuScheduler, Host, Scenario
    from vmtwin.scenario.perf import VmPerf

    vms, k = [], 0
    for vcpus, count in SIZES:
        for _ in range(count):
            perf = VmPerf(preset="specjbb" if k % 2 == 0 else "kernel-compile") if with_perf else None
            vms.append(VM(name=f"vm{k}", vcpus=vcpus, workload=CpuBound(duty=0.15, burst="10ms"), perf=perf))
            k += 1
    assert sum(v.vcpus for v in vms) == 160 and len(vms) == 60
    return Scenario(name="bench-perf", seed=3, duration=f"{minutes * 60:g}s",
                    host=Host(sockets=2, numa_nodes_per_socket=1, llcs_per_node=1, cores_per_llc=8, threads_per_core=2,
                              core_mhz="2600MHz"),
                    cpu_scheduler=CpuScheduler(cosched_mode="relaxed-4x"), vms=vms)


def child(minutes: float, with_perf: bool) -> dict:
    from vmtwin import Simulation

    sim = Simulation(scenario(minutes, with_perf))
    w0, c0 = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    tables = sim.tables()
    stats = dict(sim._sim.sched_stats())
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "events": sim.event_count,
            "vcpu_perf_rows": tables["vcpu_perf"].num_rows if "vcpu_perf" in tables else 0,
            "migrate_share": round(stats["migrations"] / max(stats["dispatches"], 1), 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--child", choices=("off", "on"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.minutes, args.child == "on")))
        return
    figures = {}
    for mode in ("off", "on"):
        proc = subprocess.run([sys.executable, __file__, "--minutes", str(args.minutes), "--child", mode],
                              capture_output=True, text=True, check=True)
        figures[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(mode, figures[mode])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    overhead = figures["on"]["cpu_s"] / figures["off"]["cpu_s"] - 1
    print(f"model on: +{100 * overhead:.1f}% CPU time; dispatches that migrate: {figures['off']['migrate_share']:.1%}")
    line = {"benchmark": "perf-model-160vcpu", "commit": commit, "simulated_min": args.minutes,
            "off": figures["off"], "on": figures["on"], "model_cpu_overhead": round(overhead, 4)}
    with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
