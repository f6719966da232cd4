"""Benchmark: the PlanetLab day (1,052 VMs, 300 s traces) in fluid mode, beside CloudSim Plus 8.5.7.

Two runs, each in a fresh process (peak resident memory of the process tree sampled from /proc
every 0.1 s):

- **one host**: the 1,052 VMs on one 1,052-core host (1,000 MHz cores, one vCPU each), 24 h at
  300 s steps, through the Python API (``Simulation``); timed are building the engine, the
  simulation (``run()``) and writing the results folder, apart from reading the traces.
- **800 hosts**: ``scenarios/cluster-planetlab.yaml`` (800 two-core hosts, first fit, VM i on host
  i // 2, as in the CloudSim Plus anchor) with ``fidelity: fluid``, through ``vmtwin cluster``;
  timed are the whole command and the engine part: the wall time of the engine calls that run
  the hosts in batches (the manifest's ``engine_wall_s``; CloudSim Plus's ``wall_s`` likewise
  times its simulation only, not reading the traces or building the hosts), and the CPU time
  of those calls, every thread included (``engine_cpu_s``). With ``--event`` the day also runs in
  event mode, one host per pool worker: there ``engine_cpu_s`` is null (the workers' CPU time
  inside the engine is not recorded) and ``hosts_wall_sum_s`` is the hosts' wall times summed,
  which is no CPU time (workers overlap and, on a busy machine, wait).

Both report the mean host utilisation, ``sum(used_mhz) / sum(capacity_mhz)`` over the ``host``
table (over all 800 hosts, empty ones included, for the cluster: CloudSim Plus's
``mean_host_util``, 0.0809674) and the mean use per VM (0.12314 of a vCPU on both simulators). The
CloudSim Plus figures are run now when Java and its jar are available (``--csp``: ``java -jar
target/csp-planetlab-bench.jar 1052 800 300`` in ``../shared/anchors/cloudsimplus``, cold JVM,
three runs, median of its own ``wall_s``, which times the simulation only), otherwise taken
from its RESULTS.md (median 1.13 s), and the line says which.

What each side's "simulation" covers. CloudSim Plus's ``wall_s`` times ``CloudSimPlus.start()``:
its VM placement, cloudlet submission, the 288 steps over every host and VM, and its
host-utilisation sampler; not reading the traces or building hosts, VMs and cloudlets. Ours,
``engine_wall_s``: the engine calls, i.e. building every host's engine from its spec, the 288
steps, and handing esxtop's full per-VM, per-vCPU, per-pCPU and per-host tables to Python (about
125 MB of columns; CloudSim Plus keeps one utilisation figure per host and step). Placement and
building the specs are outside it (Python, in the whole command). The whole-command figures
compare ``vmtwin cluster`` (Python start, reading the 1,052 files, placement, specs, engine,
Parquet writing) with the JVM's whole process. Wall time is only meaningful on a quiet machine;
every figure is given in CPU time as well (user + system of the process tree; ``engine_cpu_s``
is the process's CPU time inside the engine calls, every thread included), which a shared
machine disturbs much less.

``--event`` also runs the day in event mode (every 10 ms burst, 2.3 G events; minutes of CPU).

Run: ``.venv/bin/python benchmarks/bench_fluid.py [--csp] [--event] [--repeat N]``; appends one
JSON line to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLANETLAB = ROOT.parent / "shared" / "data" / "planetlab" / "20110303"
CLUSTER_SCENARIO = ROOT / "scenarios" / "cluster-planetlab.yaml"
CSP_DIR = ROOT.parent / "shared" / "anchors" / "cloudsimplus"
#: CloudSim Plus 8.5.7 on this day, 800 hosts (RESULTS.md runs 1-3): median cold wall of the
#: simulation, mean host utilisation, peak RSS of the JVM.
CSP_RECORDED = {"wall_s": 1.13, "mean_host_util": 0.0809674, "peak_rss_mb": "390-460"}
#: mean use per VM on this day, a fraction of one vCPU (trace arithmetic; both simulators)
MEAN_USE_PER_VM = 0.12314
TARGET_SPEEDUP = 10.0


def _tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, KB (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/statm") as f:
                rss[int(d)] = int(f.read().split()[1]) * page_kb
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


#: CPU seconds (user + system) of the process trees :func:`_watch` ran, the last one
_LAST_CPU_S = [0.0]


def _children_cpu_s() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _watch(cmd: list[str], cwd: Path = ROOT) -> tuple[str, float, int]:
    """Run ``cmd`` in ``cwd``; its stdout, wall seconds and peak tree RSS (KB); its tree's CPU
    seconds (waited-for descendants included) in ``_LAST_CPU_S[0]``."""
    cpu0 = _children_cpu_s()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.1)
    wall = time.perf_counter() - start
    out, err = proc.communicate()
    _LAST_CPU_S[0] = _children_cpu_s() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out}\n{err}")
    return out, wall, peak


def one_host_child(out_dir: str) -> None:
    """In the child process: build, run and write the one-host day; print its figures as JSON."""
    from vmtwin import VM, Host, Scenario, Simulation
    from vmtwin.results import Results
    from vmtwin.scenario.models import TraceWorkload

    t0 = time.perf_counter()
    files = sorted(PLANETLAB.iterdir(), key=lambda p: p.name.encode())
    vms = [VM(name=f"vm{i}", vcpus=1, memory="1GB", workload=TraceWorkload(format="planetlab", path=str(p)))
           for i, p in enumerate(files)]
    sc = Scenario(name="planetlab-one-host-fluid", duration="24h", sample_interval="300s", fidelity="fluid",
                  host=Host(cores_per_llc=len(vms), core_mhz="1000MHz", memory="2048GB"), vms=vms)
    sc.load_traces()
    t1 = time.perf_counter()
    sim = Simulation(sc)
    t2 = time.perf_counter()
    sim.run()
    t3 = time.perf_counter()
    sim.write(out_dir)
    t4 = time.perf_counter()
    res = Results(out_dir)
    util = float(res.sql("SELECT sum(used_mhz) / sum(capacity_mhz) AS u FROM host")["u"].iloc[0])
    per_vm = float(res.sql('SELECT avg("%USED") / 100 AS u FROM vm')["u"].iloc[0])
    print(json.dumps({"vms": len(vms), "load_s": t1 - t0, "build_s": t2 - t1, "run_s": t3 - t2, "write_s": t4 - t3,
                      "mean_host_util": util, "mean_use_per_vm": per_vm}))


def one_host(repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        tmp = Path(tempfile.mkdtemp(prefix="bench-fluid-"))
        try:
            out, wall, peak = _watch([sys.executable, __file__, "--one-host-child", str(tmp / "run")])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        r = json.loads(out.strip().splitlines()[-1])
        r.update(process_wall_s=wall, peak_rss_mb=peak / 1024)
        runs.append(r)
    med = lambda k: round(statistics.median(r[k] for r in runs), 4)  # noqa: E731
    return {"vms": runs[0]["vms"], "load_s": med("load_s"), "build_s": med("build_s"), "run_s": med("run_s"),
            "write_s": med("write_s"), "process_wall_s": med("process_wall_s"), "peak_rss_mb": med("peak_rss_mb"),
            "mean_host_util": round(runs[0]["mean_host_util"], 7), "mean_use_per_vm": round(runs[0]["mean_use_per_vm"], 6)}


def cluster(repeat: int, workers: int, fidelity: str = "fluid") -> dict:
    import yaml

    from vmtwin.results import Results

    text = yaml.safe_load(CLUSTER_SCENARIO.read_text())
    text["name"] = f"cluster-planetlab-{fidelity}"
    text["fidelity"] = fidelity
    runs = []
    for _ in range(repeat):
        tmp = Path(tempfile.mkdtemp(prefix="bench-fluid-cluster-"))
        try:
            # the scenario's trace path is relative to its folder: write the copy beside it
            scenario = CLUSTER_SCENARIO.with_name(f".bench-fluid-{os.getpid()}.yaml")
            scenario.write_text(yaml.safe_dump(text, sort_keys=False))
            try:
                _, wall, peak = _watch([sys.executable, "-m", "vmtwin.cli", "cluster", str(scenario), "-o",
                                        str(tmp / "run"), "--workers", str(workers)])
                cpu = _LAST_CPU_S[0]
            finally:
                scenario.unlink()
            res = Results(tmp / "run")
            util = float(res.sql("SELECT sum(used_mhz) / sum(capacity_mhz) AS u FROM host")["u"].iloc[0])
            per_vm = float(res.sql('SELECT avg("%USED") / 100 AS u FROM vm')["u"].iloc[0])
            engine_s = res.manifest.get("engine_wall_s", res.manifest["wall_time_s"])
            # CPU time of the engine calls (all threads), fluid mode only: event mode runs each host
            # in a pool worker and records its wall time, whose sum is no CPU time (the workers
            # overlap, and on a busy machine they wait); that sum is kept under its own name
            engine_cpu_s = res.manifest.get("engine_cpu_s")
            hosts_wall_sum_s = sum(h["wall_time_s"] for h in res.manifest["hosts"])
            hosts = len(res.manifest["hosts"])
            events = res.manifest["event_count"]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        runs.append({"wall_s": wall, "cpu_s": cpu, "engine_s": engine_s, "engine_cpu_s": engine_cpu_s,
                     "hosts_wall_sum_s": hosts_wall_sum_s,
                     "peak_rss_mb": peak / 1024, "util": util, "per_vm": per_vm})
    med = lambda k: None if runs[0][k] is None else round(statistics.median(r[k] for r in runs), 4)  # noqa: E731
    return {"fidelity": fidelity, "hosts": hosts, "workers": workers, "events": events,
            "command_wall_s": med("wall_s"), "command_cpu_s": med("cpu_s"), "engine_s": med("engine_s"),
            "engine_cpu_s": med("engine_cpu_s"), "hosts_wall_sum_s": med("hosts_wall_sum_s"),
            "engine_runs_s": [round(r["engine_s"], 4) for r in runs],
            "peak_rss_mb": med("peak_rss_mb"), "mean_host_util": round(runs[0]["util"], 7),
            "mean_use_per_vm": round(runs[0]["per_vm"], 6)}


def csp(repeat: int) -> dict:
    jar = CSP_DIR / "target" / "csp-planetlab-bench.jar"
    if not jar.exists() or shutil.which("java") is None:
        return {**CSP_RECORDED, "source": "recorded (RESULTS.md): the jar or java is missing here"}
    runs = []
    for _ in range(repeat):
        out, wall, peak = _watch(["java", "-jar", str(jar), "1052", "800", "300"], cwd=CSP_DIR)
        r = json.loads(out.strip().splitlines()[-1])
        runs.append((r["wall_s"], wall, peak / 1024, r["mean_host_util"], _LAST_CPU_S[0]))
    return {"wall_s": round(statistics.median(r[0] for r in runs), 4), "wall_runs_s": [round(r[0], 3) for r in runs],
            "process_wall_s": round(statistics.median(r[1] for r in runs), 3),
            "process_cpu_s": round(statistics.median(r[4] for r in runs), 3),
            "peak_rss_mb": round(statistics.median(r[2] for r in runs), 1), "mean_host_util": runs[0][3],
            "source": "run now (cold JVM per run)"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one-host-child", help=argparse.SUPPRESS)
    ap.add_argument("--csp", action="store_true", help="run the CloudSim Plus harness now (else its recorded figures)")
    ap.add_argument("--event", action="store_true", help="also run the day in event mode (minutes of CPU), once")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    if args.one_host_child:
        one_host_child(args.one_host_child)
        return 0
    load_before = os.getloadavg()[0]
    one = one_host(args.repeat)
    many = cluster(args.repeat, args.workers)
    event = cluster(1, args.workers, "event") if args.event else None
    ref = csp(args.repeat) if args.csp else {**CSP_RECORDED, "source": "recorded (RESULTS.md)"}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    row = {
        "benchmark": "planetlab-day-fluid",
        "commit": commit,
        "repeat": args.repeat,
        "one_host": one,
        "cluster_800": many,
        "cloudsimplus": ref,
        "speedup_one_host_run_vs_csp": round(ref["wall_s"] / one["run_s"], 1),
        "speedup_cluster_engine_vs_csp": round(ref["wall_s"] / many["engine_s"], 1),
        **({"speedup_cluster_command_cpu_vs_csp_process_cpu": round(ref["process_cpu_s"] / many["command_cpu_s"], 2)}
           if "process_cpu_s" in ref else {}),
        **({"cluster_800_event": event, "event_vs_csp_wall": round(event["command_wall_s"] / ref["wall_s"], 1)}
           if event else {}),
        "speedup_cluster_command_vs_csp": round(ref["wall_s"] / many["command_wall_s"], 2),
        **({"speedup_cluster_command_vs_csp_process": round(ref["process_wall_s"] / many["command_wall_s"], 2)}
           if "process_wall_s" in ref else {}),
        "target_speedup": TARGET_SPEEDUP,
        "mean_use_per_vm_expected": MEAN_USE_PER_VM,
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(row, indent=2))
    with open(ROOT / "benchmarks" / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
