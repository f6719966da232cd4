"""The full CPU scheduler's benchmark (issue 9): bench-cpu160.yaml, locality on and off, and with the execution-speed model.

    .venv/bin/python benchmarks/bench_cpu160.py              # one simulated hour, three ways
    .venv/bin/python benchmarks/bench_cpu160.py --minutes 10

The host: 2 sockets x 8 cores x 2 threads (32 logical CPUs, one NUMA node and one LLC per
socket), 60 VMs of 1, 2, 4 and 8 vCPUs (160 vCPUs), relaxed-4x co-scheduling, one simulated hour
at 2 s sampling (tables kept in memory). Run three times, each in a fresh child process: with the
scheduler's defaults (NUMA home nodes, LLC-aware pulls and placement, migration costs), with
locality off (`numa_home_nodes: false`, migration costs 0: a pCPU pulls the lowest key on the
host, as the scheduler did before issue 9), and with the defaults plus the execution-speed model
(every VM profiled, SPECjbb-like and kernel-compile-like alternating, as bench_perf.py does; the
model runs once per sample and changes no scheduling decision, so its events and dispatches are
the defaults' own). Reported: wall and CPU time of ``run()`` (wall is an
upper bound on a shared machine; CPU time is the figure to compare), events, dispatches, and the
share of dispatches that migrate (any move, to another LLC, to another node), from the sums of
the ``vcpu`` table's migration columns over the scheduler's dispatch count; the dispatches by
distance moved (``sched_stats``: same pCPU, sibling hyperthread, another core of the LLC, another
LLC of the node, another node) and the local share, the first three (research/cpu.md: a pCPU's
"local" processors are those sharing its LLC); mean %CSTP of the
multi-vCPU VMs; rows of ``vcpu_perf`` with the model.

Prints its figures and appends one JSON line to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "bench-cpu160.yaml"
TARGET_WALL_S = 5.0
LOCALITY_OFF = {
    "numa_home_nodes": False,
    "migration_throttle": False,
    "migrate_cost_core": 0,
    "migrate_cost_llc": 0,
    "migrate_cost_node": 0,
}


#: the ``sched_stats`` dispatch counters by distance moved (``dispatches_<level>``), nearest first
LEVELS = ("same_pcpu", "same_core", "same_llc", "same_node", "other_node")

MODES = {"on": "locality on (defaults)", "off": "locality off", "perf": "defaults + execution-speed model"}


def child(minutes: float, mode: str) -> dict:
    import pyarrow.compute as pc

    from vmtwin import Simulation
    from vmtwin.scenario import load_scenario
    from vmtwin.scenario.perf import VmPerf

    sc = load_scenario(SCENARIO)
    if mode == "off":
        sc = sc.model_copy(update={"cpu_scheduler": sc.cpu_scheduler.model_copy(update=LOCALITY_OFF)})
    if mode == "perf":
        presets = ("specjbb", "kernel-compile")
        vms = [vm.model_copy(update={"perf": VmPerf(preset=presets[k % 2])}) for k, vm in enumerate(sc.vms)]
        sc = sc.model_copy(update={"vms": vms})
    sim = Simulation(sc, duration=f"{minutes * 60:g}s")
    w0, c0 = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    vcpu = sim.tables()["vcpu"]
    vm = sim.tables()["vm"]
    stats = dict(sim._sim.sched_stats())
    d = max(stats["dispatches"], 1)
    # dispatches by how far they moved the vCPU (ESX's "local" is the LLC: the first three)
    levels = {k: round(stats[f"dispatches_{k}"] / d, 4) for k in LEVELS}
    share = {c: round(pc.sum(vcpu[c]).as_py() / d, 4) for c in ("migrations", "llc_migrations", "node_migrations")}
    smp = pc.greater(vm["vcpus"], 1)
    cstp = pc.mean(pc.divide(pc.filter(vm["%CSTP"], smp), pc.cast(pc.filter(vm["vcpus"], smp), "double"))).as_py()
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "events": sim.event_count, "dispatches": d,
            "migrate_share": share["migrations"], "llc_migrate_share": share["llc_migrations"],
            "node_migrate_share": share["node_migrations"], "smp_cstp_pct_per_vcpu": round(cstp, 3),
            "vcpu_perf_rows": sim.tables()["vcpu_perf"].num_rows if "vcpu_perf" in sim.tables() else 0,
            "dispatch_share_by_level": levels,
            "local_share": round(sum(levels[k] for k in ("same_pcpu", "same_core", "same_llc")), 4)}


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0, help="simulated minutes (default 60)")
    ap.add_argument("--child", choices=list(MODES), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.minutes, args.child)))
        return 0
    runs = {}
    for mode in MODES:
        out = subprocess.run([sys.executable, __file__, "--minutes", str(args.minutes), "--child", mode],
                             capture_output=True, text=True, check=True)
        runs[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    for mode, r in runs.items():
        print(f"{MODES[mode]}: wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s, {r['events']:,} events, "
              f"{r['dispatches']:,} dispatches; migrate {100 * r['migrate_share']:.1f}% "
              f"(another LLC {100 * r['llc_migrate_share']:.1f}%, another node {100 * r['node_migrate_share']:.1f}%); "
              f"%CSTP per vCPU of SMP VMs {r['smp_cstp_pct_per_vcpu']:.2f}")
        lv = r["dispatch_share_by_level"]
        print(f"  dispatches by distance moved: " + ", ".join(f"{k.replace('_', ' ')} {100 * lv[k]:.1f}%" for k in LEVELS)
              + f"; local (same LLC, ESX's sense) {100 * r['local_share']:.1f}%")
    on, perf = runs["on"], runs["perf"]
    verdict = "PASS" if on["wall_s"] < TARGET_WALL_S else "MISS"
    verdict_perf = "PASS" if perf["wall_s"] < TARGET_WALL_S else "MISS"
    print(f"target: under {TARGET_WALL_S:g} s wall for one simulated hour: {verdict} without the execution-speed "
          f"model ({on['wall_s']:.2f} s wall, {on['cpu_s']:.2f} s CPU), {verdict_perf} with it "
          f"({perf['wall_s']:.2f} s wall, {perf['cpu_s']:.2f} s CPU); simulated {args.minutes:g} min")
    line = {"benchmark": "bench-cpu160", "commit": commit(), "simulated_minutes": args.minutes,
            "verdict": verdict, "verdict_perf_model": verdict_perf, "locality_on": on, "locality_off": runs["off"],
            "perf_model_on": perf}
    with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
