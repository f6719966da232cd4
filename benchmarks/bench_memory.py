"""Memory of a long run: peak RSS does not grow with simulated time; the writer's cost per row.

    .venv/bin/python benchmarks/bench_memory.py                 # 1 h and 24 h, streamed
    .venv/bin/python benchmarks/bench_memory.py --hours 1 6     # other lengths
    .venv/bin/python benchmarks/bench_memory.py --in-memory 1   # also 1 h kept in memory (reference)

Each run is ``bench-1024vm.yaml`` (1,024 single-vCPU VMs on 16 pCPUs, 2 s sampling) with its
duration overridden, run in a fresh child process: ``Simulation(...)``, ``stream_to(folder)``,
``run()``, ``write()``. The child reports its peak resident set (``ru_maxrss``), the wall time,
the CPU time, the rows written and the CPU time spent moving rows from the engine into Parquet (draining the
engine, building Arrow tables, encoding and writing row groups, closing the files), timed around
``Simulation._drain`` and the last row groups' flush (the manifest, a per-run cost, is not
counted).

Target: peak RSS of the longest run within 20% of the shortest's (memory does not grow with
simulated time). Reported: the writer's cost in ns per sampled row (all three tables' rows).
Prints its figures and appends one JSON line to ``benchmarks/results.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "bench-1024vm.yaml"
MAX_GROWTH = 0.20  # longest run's peak RSS at most 20% above the shortest's


def child(hours: float, out: Path, stream: bool) -> dict:
    """One run in this process; returns its figures."""
    from vmtwin import results, simulation

    spent = {"s": 0.0}

    def timed(fn):
        # CPU time, not wall: the machine is shared, and waiting for a core is not the writer's cost
        def wrapper(*args, **kwargs):
            t = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent["s"] += time.process_time() - t
        return wrapper

    # every row passes through _drain (engine -> Arrow -> row groups); the last row groups are
    # flushed by close, outside _drain. The manifest (a per-run cost) is not counted.
    depth = {"n": 0}
    drain, flush = simulation.Simulation._drain, results.ResultsWriter._flush

    def in_drain(self):
        depth["n"] += 1
        try:
            return drain(self)
        finally:
            depth["n"] -= 1

    def last_flush(self, *args):
        return flush(self, *args) if depth["n"] else timed(flush)(self, *args)

    simulation.Simulation._drain = timed(in_drain)
    results.ResultsWriter._flush = last_flush

    start, cpu = time.perf_counter(), time.process_time()
    sim = simulation.Simulation(SCENARIO, duration=hours * 3600)
    built_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if stream:
        sim.stream_to(out)
    sim.run()
    res = sim.write() if stream else sim.write(out)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    rows = sum(res.manifest["tables"].values())
    return {
        "hours": hours,
        "stream": stream,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_after_build_mb": built_rss / 1024,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "events": res.manifest["event_count"],
        "rows": rows,
        "writer_s": round(spent["s"], 3),
        "writer_ns_per_row": round(spent["s"] / rows * 1e9, 1),
        "parquet_mb": round(sum(p.stat().st_size for p in res.path.glob("*.parquet")) / 2**20, 1),
    }


def measure(hours: float, stream: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, __file__, "--child", str(hours), str(Path(tmp) / "out")]
                              + ([] if stream else ["--keep"]), capture_output=True, text=True, check=False)
        if proc.returncode:
            raise SystemExit(f"child run of {hours} h failed:\n{proc.stderr}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--", "python/vmtwin", "crates")
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, nargs="+", default=[1.0, 24.0], help="simulated hours per run")
    ap.add_argument("--in-memory", type=float, nargs="*", default=[], metavar="H",
                    help="also run these lengths without streaming (memory grows: a reference)")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("HOURS", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(float(args.child[0]), Path(args.child[1]), stream=not args.keep)))
        return 0

    runs = []
    for hours in args.hours:
        r = measure(hours, stream=True)
        runs.append(r)
        print(f"streamed  {hours:5g} h: peak RSS {r['peak_rss_mb']:7.1f} MB (after build {r['rss_after_build_mb']:.1f}), "
              f"wall {r['wall_s']:7.1f} s (CPU {r['cpu_s']:.1f} s), {r['rows']:,} rows, writer {r['writer_ns_per_row']:.0f} ns/row, "
              f"{r['parquet_mb']} MB of Parquet", flush=True)
    reference = []
    for hours in args.in_memory:
        r = measure(hours, stream=False)
        reference.append(r)
        print(f"in memory {hours:5g} h: peak RSS {r['peak_rss_mb']:7.1f} MB, wall {r['wall_s']:.1f} s", flush=True)
    short, long = min(runs, key=lambda r: r["hours"]), max(runs, key=lambda r: r["hours"])
    growth = long["peak_rss_mb"] / short["peak_rss_mb"] - 1
    ok = growth < MAX_GROWTH
    ns_per_row = sum(r["writer_s"] for r in runs) / sum(r["rows"] for r in runs) * 1e9
    print(f"peak RSS {long['hours']:g} h vs {short['hours']:g} h: {growth:+.1%} (target < {MAX_GROWTH:.0%}): "
          f"{'MEETS' if ok else 'MISS'}; writer {ns_per_row:.0f} ns per sampled row")
    if not args.no_record:
        record = {"benchmark": "bench-memory", "commit": _commit(), "machine": platform.machine(),
                  "python": platform.python_version(), "scenario": SCENARIO.name, "runs": runs,
                  "in_memory_runs": reference, "rss_growth": round(growth, 4),
                  "writer_ns_per_row": round(ns_per_row, 1), "meets_target": ok}
        with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
