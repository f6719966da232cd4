"""Run the engine benchmarks and record their figures.

    .venv/bin/python benchmarks/run.py            # prints a table, appends benchmarks/results.jsonl

Each benchmark builds its scenario, then times only the engine's run loop (``Simulation.run``),
best of ``--repeat`` runs. Figures: wall seconds, engine events, events per second. The targets
come from the issues; a miss is printed as MISS, not hidden. Benchmarks are never run by the test
suite: timing on a shared CI machine is not a test.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from vmtwin import Simulation, __version__

HERE = Path(__file__).resolve().parent

# (scenario, wall-time target in s, events/s target): issue 2's benchmark.
BENCHMARKS = {
    "bench-64vm": (HERE / "bench-64vm.yaml", 2.0, 10e6),
}


def measure(path: Path, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        sim = Simulation(path)
        start = time.perf_counter()
        sim.run()
        wall = time.perf_counter() - start
        if best is None or wall < best["wall_s"]:
            best = {"wall_s": wall, "events": sim.event_count, "simulated_s": sim.now}
    best["events_per_s"] = best["events"] / best["wall_s"]
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-record", action="store_true", help="do not append to benchmarks/results.jsonl")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    for name, (path, wall_target, eps_target) in BENCHMARKS.items():
        r = measure(path, args.repeat)
        ok = r["wall_s"] < wall_target and r["events_per_s"] > eps_target
        print(f"{name}: {r['wall_s']:.3f} s wall (target < {wall_target} s), {r['events']:,} events, "
              f"{r['events_per_s'] / 1e6:.2f} M events/s (target > {eps_target / 1e6:.0f} M) -> {'MEETS' if ok else 'MISS'}")
        if not args.no_record:
            record = {"benchmark": name, "commit": commit, "vmtwin": __version__, "machine": platform.machine(),
                      "python": platform.python_version(), **{k: round(v, 4) for k, v in r.items()}, "meets_target": ok}
            with open(HERE / "results.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
