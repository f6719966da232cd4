"""Benchmark: the fluid engine calls alone for the PlanetLab day on 800 two-core hosts.

The cluster scenario (``scenarios/cluster-planetlab.yaml``, ``fidelity: fluid``) is placed and
its host specs built once (not timed); then the hosts go to ``vmtwin._core.run_fluid_hosts``
256 per call, as ``vmtwin cluster`` sends them, ``--repeat`` times. Printed per repetition: the
calls' CPU time (user + system of the process, every engine thread included) and wall time;
then the medians. This is the part of a cluster run that compares with CloudSim Plus's
``wall_s`` (see ``bench_fluid.py``), without the process start, trace reading and Parquet
writing around it, so it can be repeated in one process and read in CPU time on a shared machine.

Run: ``.venv/bin/python benchmarks/bench_fluid_engine.py [--threads N] [--repeat N]``; appends one
JSON line to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_SCENARIO = ROOT / "scenarios" / "cluster-planetlab.yaml"
#: CloudSim Plus 8.5.7's simulation wall on this day, quiet machine, cold JVM (RESULTS.md median)
CSP_QUIET_WALL_S = 1.13


def main() -> int:
    import yaml

    from vmtwin import _core
    from vmtwin.cluster import runner

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    text = yaml.safe_load(CLUSTER_SCENARIO.read_text())
    text["fidelity"] = "fluid"
    folder = CLUSTER_SCENARIO.parent
    for ts in text["clusters"][0]["trace_vms"]:
        ts["path"] = str((folder / ts["path"]).resolve())
    plan = runner.plan_cluster(text)
    n = runner.FLUID_BATCH_HOSTS
    calls = [list(zip(*(runner._apart(h.spec) for h in plan.hosts[at:at + n]))) for at in range(0, len(plan.hosts), n)]
    runs = []
    for _ in range(args.repeat):
        cpu = wall = 0.0
        for specs, traces in calls:
            c0, w0 = time.process_time(), time.perf_counter()
            raw, _, _ = _core.run_fluid_hosts(list(specs), args.threads, list(traces))
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            del raw
        runs.append((cpu, wall))
        print(f"engine calls: cpu {cpu:.3f} s, wall {wall:.3f} s")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    row = {"benchmark": "planetlab-day-fluid-engine-calls", "commit": commit, "hosts": len(plan.hosts),
           "threads": args.threads, "repeat": args.repeat,
           "cpu_s_median": round(statistics.median(r[0] for r in runs), 4), "cpu_s_runs": [round(r[0], 4) for r in runs],
           "wall_s_median": round(statistics.median(r[1] for r in runs), 4), "wall_s_runs": [round(r[1], 4) for r in runs],
           "csp_quiet_wall_s": CSP_QUIET_WALL_S, "load_average": round(os.getloadavg()[0], 2)}
    row["csp_quiet_wall_over_wall_median"] = round(CSP_QUIET_WALL_S / row["wall_s_median"], 1)
    print(json.dumps(row, indent=2))
    with open(ROOT / "benchmarks" / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
