"""Benchmark: the PlanetLab day (1,052 VMs) on 800 two-core hosts, event mode, as a cluster run.

The comparison is CloudSim Plus 8.5.7 on the same day, VMs, hosts and placement
(``../shared/anchors/cloudsimplus/RESULTS.md``): VM i on host i // 2, no contention, so the mean
host utilisation over all 800 hosts (empty ones included) is the trace arithmetic, 0.0809674.
Here it is ``sum(used_mhz) / sum(capacity_mhz)`` over the ``host`` table (every host has the same
capacity and sample times, so this is the mean over samples of the cluster's utilisation).

Timed: the whole ``vmtwin cluster`` command in a fresh process (reading 1,052 traces,
placement, 800 host runs on the pool, writing the folder), and the simulation part alone (the
manifest's per-host engine wall times, summed: CPU-seconds of engine work). Peak memory: the
resident set of the command's process tree (parent, fork server, workers), sampled every
0.2 s from /proc. CloudSim Plus's figures are those recorded in RESULTS.md (1.13 s median cold
wall of the simulation, 390-460 MB peak RSS); it is not re-run here unless ``--csp`` is given
(then ``java -jar target/csp-planetlab-bench.jar 1052 800 300`` runs in the same session).

The machine's load average is recorded beside the figures: two cores shared with other jobs.

``--burst 100ms`` replays the traces in 100 ms CPU bursts instead of the scenario's 10 ms: the
event engine's cost is per burst, the day's utilisation is not (a sensitivity run, not the
headline figure).

Run: ``.venv/bin/python benchmarks/bench_cluster.py [--workers N] [--burst D] [--csp]`` (appends
one line to results.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "cluster-planetlab.yaml"
CSP_DIR = ROOT.parent / "shared" / "anchors" / "cloudsimplus"
#: CloudSim Plus 8.5.7 on this day (RESULTS.md, runs 1-3): mean host utilisation, median cold wall.
CSP_MEAN_HOST_UTIL = 0.0809674
CSP_WALL_S = 1.13


def _tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, KB (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/statm") as f:
                pages = int(f.read().split()[1])
        except OSError:
            continue
        pid, ppid = int(d), int(parts[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * os.sysconf("SC_PAGE_SIZE") // 1024
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def _run_csp() -> dict:
    jar = CSP_DIR / "target" / "csp-planetlab-bench.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-q", "package"], cwd=CSP_DIR, check=True)
    out = subprocess.run(["java", "-jar", str(jar), "1052", "800", "300"], cwd=CSP_DIR, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--csp", action="store_true", help="also run the CloudSim Plus harness now")
    ap.add_argument("--keep", help="keep the results folder here")
    ap.add_argument("--burst", help="trace burst length, e.g. 100ms (default: the scenario's, 10ms)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    scenario = SCENARIO
    if args.burst:
        text = SCENARIO.read_text().replace("../../shared/data", str(ROOT.parent / "shared" / "data"))
        text = text.replace("vcpus: 1, memory: 1GB}", f"vcpus: 1, memory: 1GB, burst: {args.burst}}}")
        scenario = tmp / "scenario.yaml"
        scenario.write_text(text)
    out = Path(args.keep) if args.keep else tmp / "run"
    load_before = os.getloadavg()[0]
    cmd = [sys.executable, "-m", "vmtwin.cli", "cluster", str(scenario), "-o", str(out), "--force",
           "--workers", str(args.workers)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - start
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        print(stdout, stderr, file=sys.stderr)
        return 1
    load_after = os.getloadavg()[0]

    from vmtwin.results import Results

    res = Results(out)
    m = res.manifest
    util = float(res.sql("SELECT sum(used_mhz) / sum(capacity_mhz) AS u FROM host")["u"].iloc[0])
    nonempty = float(res.sql("SELECT sum(used_mhz) / sum(capacity_mhz) AS u FROM host "
                             "WHERE host IN (SELECT DISTINCT host FROM placement)")["u"].iloc[0])
    engine_s = sum(h["wall_time_s"] for h in m["hosts"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    row = {
        "benchmark": "cluster-planetlab-day-event",
        "commit": commit,
        "vms": int(res.sql("SELECT count(*) AS n FROM placement")["n"].iloc[0]),
        "hosts": len(m["hosts"]),
        "workers": args.workers,
        "burst": args.burst or "10ms",
        "simulated_s": m["simulated_s"],
        "wall_s": round(wall, 2),
        "engine_cpu_s": round(engine_s, 2),
        "events": m["event_count"],
        "peak_rss_mb": round(peak / 1024, 1),
        "mean_host_util": round(util, 7),
        "mean_nonempty_host_util": round(nonempty, 6),
        "csp_mean_host_util": CSP_MEAN_HOST_UTIL,
        "csp_wall_s": CSP_WALL_S,
        "wall_ratio_to_csp": round(wall / CSP_WALL_S, 1),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(load_after, 2),
    }
    if args.csp:
        csp = _run_csp()
        row["csp_wall_s"] = csp["wall_s"]
        row["csp_mean_host_util"] = csp["mean_host_util"]
        row["wall_ratio_to_csp"] = round(wall / csp["wall_s"], 1)
    for k, v in row.items():
        print(f"{k:>24}: {v}")
    with open(ROOT / "benchmarks" / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
