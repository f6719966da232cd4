"""Benchmark: the fluid engine calls alone for the PlanetLab day on 800 two-core hosts.

The cluster scenario (``scenarios/cluster-planetlab.yaml``, ``fidelity: fluid``) is placed and
its host specs built once (not timed); then the hosts go to ``vmtwin._core.run_fluid_hosts``
256 per call, as ``vmtwin cluster`` sends them, ``--repeat`` times. Printed per repetition: the
calls' CPU time (user + system of the process, every engine thread included) and wall time;
then the medians. This is the part of a cluster run that compares with CloudSim Plus's
``wall_s`` (see ``bench_fluid.py``), without the process start, trace reading and Parquet
writing around it, so it can be repeated in one process and read in CPU time on a shared machine.

Repetitions in one process are *warm*: memory the first call faulted in is reused. With
``--cold`` every repetition runs in a fresh process instead (as ``vmtwin cluster`` makes its
calls, and as CloudSim Plus's cold JVM runs), and the calls' minor page faults (``getrusage``)
and system CPU time are printed beside their CPU and wall time: on this machine a page fault
costs microseconds, so a cold call's faults weigh as much as its simulation.

Run: ``.venv/bin/python benchmarks/bench_fluid_engine.py [--threads N] [--repeat N] [--cold]``;
appends one JSON line to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
    ap.add_argument("--cold", action="store_true", help="each repetition in a fresh process")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold and not args.child:
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, __file__, "--child", "--repeat", "1", "--threads", str(args.threads)],
                                 cwd=ROOT, capture_output=True, text=True, check=True).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
            print(f"cold engine calls: cpu {runs[-1]['cpu_s']:.3f} s (system {runs[-1]['sys_s']:.3f}), "
                  f"wall {runs[-1]['wall_s']:.3f} s, {runs[-1]['minflt']} minor faults")
    else:
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
            cpu = wall = sys_s = 0.0
            minflt = 0
            for specs, traces in calls:
                r0 = resource.getrusage(resource.RUSAGE_SELF)
                c0, w0 = time.process_time(), time.perf_counter()
                raw, _, _ = _core.run_fluid_hosts(list(specs), args.threads, list(traces))
                cpu += time.process_time() - c0
                wall += time.perf_counter() - w0
                r1 = resource.getrusage(resource.RUSAGE_SELF)
                minflt += r1.ru_minflt - r0.ru_minflt
                sys_s += r1.ru_stime - r0.ru_stime
                del raw
            runs.append({"cpu_s": cpu, "wall_s": wall, "sys_s": sys_s, "minflt": minflt, "hosts": len(plan.hosts)})
            if args.child:
                print(json.dumps(runs[-1]))
                return 0
            print(f"engine calls: cpu {cpu:.3f} s (system {sys_s:.3f}), wall {wall:.3f} s, {minflt} minor faults")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
    row = {"benchmark": "planetlab-day-fluid-engine-calls", "commit": commit, "hosts": runs[0]["hosts"],
           "threads": args.threads, "repeat": args.repeat, "cold": args.cold,
           "cpu_s_median": round(med("cpu_s"), 4), "cpu_s_runs": [round(r["cpu_s"], 4) for r in runs],
           "sys_s_runs": [round(r["sys_s"], 4) for r in runs], "minflt_runs": [r["minflt"] for r in runs],
           "wall_s_median": round(med("wall_s"), 4), "wall_s_runs": [round(r["wall_s"], 4) for r in runs],
           "csp_quiet_wall_s": CSP_QUIET_WALL_S, "load_average": round(os.getloadavg()[0], 2)}
    row["csp_quiet_wall_over_wall_median"] = round(CSP_QUIET_WALL_S / row["wall_s_median"], 1)
    print(json.dumps(row, indent=2))
    with open(ROOT / "benchmarks" / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
