"""The long fuzz run of the scenario layer (issue 6): 10 minutes, zero crashes expected.

The strategies and the oracle are those of ``tests/python/scenario/fuzz_inputs.py`` (CI runs
them for a few seconds): random bytes as a scenario file, valid scenarios with hostile values
dumped to YAML and edited as text, and the same mappings handed to the Python API. A crash is
anything but a ScenarioError with a short message for bad input, or an engine VmtwinError (and a
short run) for accepted input: a traceback, a Rust panic, a message of 20 lines or more.

The run rotates through the three strategies in batches of hypothesis examples with fresh
random seeds (no example database, so nothing replays) until the time is up; a crash is counted,
its shrunk input printed, and the run goes on. Prints the figures and appends one JSON line to
benchmarks/results.jsonl.

Run: .venv/bin/python benchmarks/bench_fuzz.py [--minutes 10] [--no-record]
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO_TESTS = REPO / "tests" / "python" / "scenario"
PLANETLAB = SCENARIO_TESTS / "data" / "planetlab_ok"
BATCH = 200  # hypothesis examples per batch; each batch draws a fresh random seed


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--", "python/vmtwin/scenario", "python/vmtwin/units.py", "python/vmtwin/traces.py")
    return head + ("+dirty" if dirty else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--no-record", action="store_true", help="print only (trial runs)")
    args = ap.parse_args()

    commit = _commit()  # the code fuzzed is the code imported now, whatever happens to HEAD meanwhile
    sys.path.insert(0, str(SCENARIO_TESTS))
    from fuzz_inputs import check, mutated_dicts, mutated_yaml, raw_bytes
    from hypothesis import HealthCheck, given, settings

    strategies = {"raw_bytes": raw_bytes, "mutated_yaml": mutated_yaml(), "mutated_dict": mutated_dicts()}
    outcomes = {name: collections.Counter() for name in strategies}
    crashes: list[dict] = []
    batch_settings = settings(max_examples=BATCH, deadline=None, database=None, derandomize=False,
                              suppress_health_check=list(HealthCheck), print_blob=True)

    def batch(name, strategy):
        @batch_settings
        @given(strategy)
        def one(source):
            if time.monotonic() >= deadline:
                return  # out of time: the rest of the batch is skipped, not counted
            outcomes[name][check(source, PLANETLAB)] += 1

        return one

    start = time.monotonic()
    cpu0 = time.process_time()
    deadline = start + args.minutes * 60  # read by the batches' test function
    batches = 0
    while time.monotonic() < deadline:
        for name, strategy in strategies.items():
            if time.monotonic() >= deadline:
                break

            try:
                batch(name, strategy)()
            except Exception as exc:  # noqa: BLE001 - a crash hypothesis found; record it and go on
                crashes.append({"strategy": name, "error": f"{exc.__class__.__name__}: {str(exc)[:500]}"})
                print(f"CRASH ({name}):", "".join(traceback.format_exception(exc))[-3000:], file=sys.stderr)
            except BaseException as exc:  # a Rust panic is a BaseException: a crash too, unless Ctrl-C
                if isinstance(exc, KeyboardInterrupt):
                    raise
                crashes.append({"strategy": name, "error": f"{exc.__class__.__name__}: {str(exc)[:500]}"})
            batches += 1
    wall = time.monotonic() - start
    cpu = time.process_time() - cpu0
    examples = sum(sum(c.values()) for c in outcomes.values())
    record = {
        "benchmark": "fuzz-scenario",
        "commit": commit,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "minutes": round(wall / 60, 2),
        "cpu_s": round(cpu, 1),
        "examples": examples,
        "examples_per_s": round(examples / wall, 1),
        "batches": batches,
        "crashes": len(crashes),
        "outcomes": {name: dict(c) for name, c in outcomes.items()},
        "crash_samples": crashes[:5],
    }
    print(f"fuzzed {wall / 60:.1f} min ({cpu:.0f} CPU-s): {examples:,} inputs, {examples / wall:.0f}/s, "
          f"{len(crashes)} crashes")
    for name, c in outcomes.items():
        print(f"  {name:13s} " + ", ".join(f"{k} {v:,}" for k, v in sorted(c.items())))
    if not args.no_record:
        with (REPO / "benchmarks" / "results.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
