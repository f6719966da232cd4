"""Compare the engine's speed at two commits, alternating runs so both see the same machine.

    .venv/bin/python benchmarks/compare.py 6f5c96f                       # HEAD's tree against 6f5c96f
    .venv/bin/python benchmarks/compare.py 6f5c96f --bench bench-mixed --minutes 60 --pairs 5

The machine's speed drifts by several percent within an hour (benchmarks/README.md, the end of
session 28), more than most speed changes, so figures taken an hour apart cannot judge a change.
This builds ``examples/run_spec`` at the base commit (in a temporary worktree) and from this
checkout's tree, writes each benchmark's engine spec once (the scenario file, cut to
``--minutes``), and runs base and candidate alternately, ``--pairs`` times. The figure is each
child's CPU time (user + system, from ``wait4``), which does not count time spent waiting for a
core. Reported: per pair, the mean per side, the candidate's change, the ns per event, and for
more than one benchmark their per-event ratio to the first. A run's CPU time includes its start-up
(reading the spec, building the VMs: a large share at 1,024 VMs over a few minutes), so these
ratios are not run.py's scale figure, which times the run loop alone. The two sides must run the same
number of events, or the comparison is refused: a model change is not a speed change.
Nothing is recorded unless ``--record``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from run import engine_spec_file  # benchmarks/run.py: this script's folder is on sys.path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EVENTS = re.compile(r"^(\d+) events in ")


def build(tree: Path, target: Path) -> Path:
    """``run_spec`` built from ``tree`` into ``target``; its path."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(target))
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "vmtwin-core", "--example", "run_spec"],
                   cwd=tree, env=env, check=True)
    return target / "release" / "examples" / "run_spec"


def run(binary: Path, spec_path: Path) -> tuple[float, int]:
    """One run: (CPU seconds of the child, events)."""
    proc = subprocess.Popen([str(binary), str(spec_path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"error: {binary} {spec_path} failed")
    m = next((EVENTS.match(line) for line in out.splitlines() if EVENTS.match(line)), None)
    if m is None:
        raise SystemExit(f"error: no event count in the output of {binary}")
    return usage.ru_utime + usage.ru_stime, int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="the commit to compare against (anything git rev-parse reads)")
    ap.add_argument("--bench", action="append", help="benchmark scenario under benchmarks/ (repeatable; "
                    "default bench-64vm, bench-mixed, bench-1024vm)")
    ap.add_argument("--minutes", type=float, default=5.0, help="simulated minutes per run (default 5)")
    ap.add_argument("--pairs", type=int, default=4, help="alternating base/candidate pairs (default 4)")
    ap.add_argument("--record", action="store_true", help="append the result to benchmarks/results.jsonl")
    args = ap.parse_args()
    names = args.bench or ["bench-64vm", "bench-mixed", "bench-1024vm"]
    for name in names:
        if not (HERE / f"{name}.yaml").is_file():
            print(f"error: --bench: got {name!r}; allowed: a scenario under benchmarks/, e.g. bench-mixed", file=sys.stderr)
            return 2
    if args.pairs < 1 or args.minutes <= 0:
        print("error: --pairs must be at least 1 and --minutes positive", file=sys.stderr)
        return 2
    rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=ROOT, capture_output=True, text=True)
    if rev.returncode != 0:
        print(f"error: base: got {args.base!r}; allowed: a commit of this repository", file=sys.stderr)
        return 2
    base_rev = rev.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="vmtwin-compare-") as tmp:
        tmp = Path(tmp)
        subprocess.run(["git", "worktree", "add", "--quiet", "--detach", str(tmp / "base"), base_rev], cwd=ROOT, check=True)
        try:
            print(f"building run_spec at {base_rev} and from this tree ...", flush=True)
            base = build(tmp / "base", tmp / "base-target")
            cand = build(ROOT, ROOT / "target")
            specs = [engine_spec_file(HERE / f"{name}.yaml", args.minutes, tmp) for name in names]
            results = {}
            for name, path in zip(names, specs):
                b, c = [], []
                for k in range(args.pairs):
                    # alternate which side goes first, so a drift within a pair favours neither
                    order = [(base, b), (cand, c)] if k % 2 == 0 else [(cand, c), (base, b)]
                    for binary, into in order:
                        into.append(run(binary, path))
                events = {e for _, e in b} | {e for _, e in c}
                if len(events) != 1:
                    print(f"{name}: base and candidate ran different events ({sorted(events)}): a model change, "
                          "not compared", file=sys.stderr)
                    return 1
                n = events.pop()
                mb = sum(t for t, _ in b) / len(b)
                mc = sum(t for t, _ in c) / len(c)
                results[name] = {"events": n, "base_s": [round(t, 4) for t, _ in b],
                                 "candidate_s": [round(t, 4) for t, _ in c],
                                 "base_ns_per_event": round(mb / n * 1e9, 2), "candidate_ns_per_event": round(mc / n * 1e9, 2),
                                 "change_pct": round(100 * (mc / mb - 1), 2)}
                r = results[name]
                print(f"{name} ({args.minutes:g} min, {n:,} events): base {', '.join(f'{t:.3f}' for t, _ in b)} s; "
                      f"candidate {', '.join(f'{t:.3f}' for t, _ in c)} s; means {r['base_ns_per_event']} -> "
                      f"{r['candidate_ns_per_event']} ns/event ({r['change_pct']:+.2f}%)")
            first = names[0]
            for name in names[1:]:
                rb = results[name]["base_ns_per_event"] / results[first]["base_ns_per_event"]
                rc = results[name]["candidate_ns_per_event"] / results[first]["candidate_ns_per_event"]
                results[name]["ratio_to_first"] = {"base": round(rb, 3), "candidate": round(rc, 3)}
                print(f"{name} per event / {first}'s: base {rb:.3f}x, candidate {rc:.3f}x")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "base")], cwd=ROOT, check=False)
    if args.record:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        line = {"benchmark": "compare", "base": base_rev, "candidate": head, "minutes": args.minutes,
                "pairs": args.pairs, "results": results}
        with open(HERE / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
