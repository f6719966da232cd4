"""Run the engine benchmarks and record their figures.

    .venv/bin/python benchmarks/run.py --repeat 5              # every benchmark
    .venv/bin/python benchmarks/run.py --repeat 3 bench-mixed  # some of them, by name
    .venv/bin/python benchmarks/run.py --list                  # names and targets

Three kinds of benchmark (see benchmarks/README.md):

- run: builds its scenario, then times only the engine's run loop (``Simulation.run``), best of
  ``--repeat`` runs. Figures: wall seconds, engine events, events per second, ns per event.
- scale: a run benchmark whose figure is the cost per event (ns/event) and its ratio to a
  reference run benchmark's (measured in the same invocation, so on the same machine state).
- build: validates a generated scenario file of N VMs and builds the ``Simulation`` (YAML in,
  engine ready to run), best of ``--repeat``; the phases (read and validate, engine spec,
  engine construction) are timed too, to show where the time goes.

Before each timed benchmark the machine's speed is timed too (``examples/heap_yardstick``: one pop
+ push on an 80-entry binary heap), and the cost per event is also given in those units: the
machine drifts by several percent between hours, so a recording made in a slow state can be told
from a slower engine (``--no-yardstick`` skips it; without cargo it is skipped with a note).
Each record also names the processor (``cpu``: vendor, family and model as /proc/cpuinfo gives
them): the project's virtual machine has run on an AMD EPYC (family 26) and on an Intel Xeon
(family 6), which run the engine at different speeds relative to the yardstick (README, per41).

Each benchmark prints MEETS or MISS against its targets (REPORTED when it has none) and appends
one line to ``results.jsonl`` (unless ``--no-record``). Benchmarks are never run by the test
suite: timing on a shared CI machine is not a test.

``--instructions`` counts instead of timing: the engine alone (``examples/run_spec``) under
valgrind's callgrind, on the run benchmarks cut to a few simulated minutes, a figure that does not
move with the machine's load (wall time does, on a shared machine). Instructions per event, and
bench-1024vm's per event against bench-64vm's, each from the difference of a 5- and a 1-minute run
(so power-on and start-up cancel out, as they nearly do in the timed runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from vmtwin import Simulation, __version__

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Run:
    """Time ``Simulation.run`` of a scenario file."""

    path: Path
    wall_target_s: Optional[float]  # MEETS needs wall < this
    eps_target: Optional[float]  # ... and events/s > this

    def targets(self) -> str:
        return f"wall < {self.wall_target_s} s, > {self.eps_target / 1e6:g} M events/s"


@dataclass(frozen=True)
class Scale:
    """A run benchmark judged by its ns/event relative to the reference benchmark's."""

    path: Path
    reference: str
    max_ratio: Optional[float]  # None: reported, no target

    def targets(self) -> str:
        if self.max_ratio is None:
            return f"ns/event vs {self.reference}: reported, no target"
        return f"ns/event at most {self.max_ratio}x {self.reference}'s"


@dataclass(frozen=True)
class Build:
    """Validate a generated scenario file of ``vms`` VMs and build its Simulation."""

    vms: int
    wall_target_s: Optional[float]  # None: reported, no target

    def targets(self) -> str:
        return f"wall < {self.wall_target_s} s" if self.wall_target_s is not None else "reported, no target"


# The targets come from the issues; a miss is printed as MISS, not hidden.
BENCHMARKS: dict[str, object] = {
    "bench-64vm": Run(HERE / "bench-64vm.yaml", 1.5, 15e6),
    "bench-mixed": Run(HERE / "bench-mixed.yaml", 1.5, 15e6),
    "bench-1024vm": Scale(HERE / "bench-1024vm.yaml", "bench-64vm", 1.3),
    "bench-4096vm": Scale(HERE / "bench-4096vm.yaml", "bench-64vm", None),
    "build-10k": Build(10_000, 2.0),
    "build-30k": Build(30_000, None),
}


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


def measure_run(path: Path, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        sim = Simulation(path)
        start = time.perf_counter()
        sim.run()
        wall = time.perf_counter() - start
        if best is None or wall < best["wall_s"]:
            best = {"wall_s": wall, "events": sim.event_count, "simulated_s": sim.now}
    best["events_per_s"] = best["events"] / best["wall_s"]
    best["ns_per_event"] = best["wall_s"] / best["events"] * 1e9
    return best


# bench-64vm's mix: duty cycles x exponential burst lengths, cycled over the VMs.
_DUTIES = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
_BURSTS = ("2ms", "10ms", "50ms", "5ms")


def build_scenario_text(n: int) -> str:
    """A scenario file of ``n`` VMs, one entry each (no ``count:``, the slow case to read):
    bench-64vm's host and duty mix, spread over four pools two levels deep and the root pool."""
    out = [
        f"# generated by benchmarks/run.py: {n} VMs, one entry each",
        f"name: build-{n}",
        "seed: 1",
        "duration: 10min",
        "sample_interval: 2s",
        "host: {name: bench16, sockets: 2, cores_per_llc: 8, core_mhz: 2600MHz, memory: 256GB}",
        "resource_pools:",
        "  - {name: prod, cpu: {shares: high, reservation: 8000MHz, expandable_reservation: true}}",
        "  - {name: prod-web, parent: prod, cpu: {shares: normal, limit: 20000MHz}}",
        "  - {name: dev, cpu: {shares: low, limit: 16000MHz}}",
        "  - {name: dev-ci, parent: dev, cpu: {shares: 3000, reservation: 1000MHz, expandable_reservation: false}}",
        "vms:",
    ]
    pools = ("null", "prod", "prod-web", "dev", "dev-ci")
    for i in range(n):
        j = i % 64
        out.append(
            f"  - {{name: vm{i:05d}, pool: {pools[i % len(pools)]}, vcpus: 1, memory: 2GB, "
            f"workload: {{type: cpu_bound, duty: {_DUTIES[j % 6]}, burst: {_BURSTS[(j // 6) % 4]}, "
            f"burst_distribution: exponential}}}}"
        )
    return "\n".join(out) + "\n"


def measure_build(n: int, repeat: int) -> dict:
    from vmtwin import _core
    from vmtwin.scenario import load_scenario

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"build-{n}.yaml"
        path.write_text(build_scenario_text(n))
        best: Optional[dict] = None
        for _ in range(repeat):
            start = time.perf_counter()
            sim = Simulation(path)  # read, validate, normalize, build the engine
            wall = time.perf_counter() - start
            assert len(sim.vm_names) == n
            del sim
            # The same work in phases, for where the time goes.
            t0 = time.perf_counter()
            sc = load_scenario(path)
            t1 = time.perf_counter()
            spec_json = json.dumps(sc.to_engine_spec())
            t2 = time.perf_counter()
            _core.Simulation(spec_json)
            t3 = time.perf_counter()
            r = {"wall_s": wall, "vms": n, "load_validate_s": t1 - t0, "engine_spec_s": t2 - t1, "engine_build_s": t3 - t2}
            if best is None or wall < best["wall_s"]:
                best = r
    assert best is not None
    return best


# --------------------------------------------------------------------------------------------
# Instruction counts (callgrind)
# --------------------------------------------------------------------------------------------

REPO = HERE.parent
RUN_SPEC = REPO / "target" / "release" / "examples" / "run_spec"
YARDSTICK = REPO / "target" / "release" / "examples" / "heap_yardstick"
NS_PER_MIN = 60 * 10**9
# (benchmark, simulated minutes); the 1- and 5-minute runs of one benchmark give its cost per
# event with start-up cancelled out
INSTRUCTION_RUNS = (("bench-64vm", 1), ("bench-64vm", 5), ("bench-1024vm", 1), ("bench-1024vm", 5),
                    ("bench-mixed", 5))


def engine_spec_file(scenario: Path, minutes: float, workdir: Path) -> Path:
    """The engine spec of a scenario file with its duration cut to ``minutes``, written to
    ``workdir`` as ``<scenario stem>-<minutes>m.json`` (what ``examples/run_spec`` reads)."""
    import warnings

    from vmtwin.scenario import load_scenario

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bench-1024vm is beyond vSphere's maximums, knowingly
        spec = load_scenario(scenario).to_engine_spec()
    spec["duration_ns"] = int(minutes * NS_PER_MIN)
    path = workdir / f"{scenario.stem}-{minutes:g}m.json"
    path.write_text(json.dumps(spec))
    return path


def measure_yardstick() -> Optional[float]:
    """This machine's speed now: ns per pop + push on an 80-entry binary heap
    (``examples/heap_yardstick``), or None, said why, when it cannot be built here."""
    try:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "vmtwin-core", "--example", "heap_yardstick"],
                       cwd=REPO, check=True, capture_output=True, env=dict(os.environ, CARGO_TARGET_DIR=str(REPO / "target")))
        out = subprocess.run([str(YARDSTICK)], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"(no yardstick: {e})", flush=True)
        return None
    return float(json.loads(out.stdout)["heap_ns"])


def count_instructions(name: str, minutes: int, workdir: Path) -> dict:
    """Instructions (callgrind's ``I refs``) and events of the engine running benchmark ``name``
    for ``minutes`` simulated minutes."""
    path = engine_spec_file(BENCHMARKS[name].path, minutes, workdir)
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(RUN_SPEC), str(path)],
                         capture_output=True, text=True, check=True)
    refs = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    events = re.match(r"(\d+) events", out.stdout)
    if refs is None or events is None:
        raise RuntimeError(f"unexpected callgrind output for {path.name}: {out.stderr[-500:]}")
    instructions, n = int(refs.group(1).replace(",", "")), int(events.group(1))
    return {"instructions": instructions, "events": n, "instructions_per_event": instructions / n}


def measure_instructions() -> list[tuple[str, dict, str]]:
    """Every run of INSTRUCTION_RUNS and the per-event costs from them: (name, record, line)."""
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "vmtwin-core", "--example", "run_spec"],
                   cwd=REPO, check=True)
    counted: dict[tuple[str, int], dict] = {}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, minutes in INSTRUCTION_RUNS:
            r = counted[name, minutes] = count_instructions(name, minutes, Path(tmp))
            out.append((f"instructions-{name}-{minutes}m", r,
                        f"{r['instructions'] / 1e6:,.1f} M instructions, {r['events']:,} events, "
                        f"{r['instructions_per_event']:.0f} per event"))
    marginal = {}
    for name in ("bench-64vm", "bench-1024vm"):
        a, b = counted[name, 1], counted[name, 5]
        marginal[name] = (b["instructions"] - a["instructions"]) / (b["events"] - a["events"])
    ratio = marginal["bench-1024vm"] / marginal["bench-64vm"]
    r = {"instructions_per_event_64": marginal["bench-64vm"], "instructions_per_event_1024": marginal["bench-1024vm"],
         "ratio": ratio}
    out.append(("instructions-1024-vs-64", r,
                f"minutes 1 to 5: bench-1024vm {marginal['bench-1024vm']:.0f} instructions per event, "
                f"bench-64vm {marginal['bench-64vm']:.0f}: {ratio:.3f}x (the timed target: ns/event <= 1.3x; "
                f"cache misses, which instructions do not count, add to the timed ratio)"))
    return out


# --------------------------------------------------------------------------------------------
# Judging and printing
# --------------------------------------------------------------------------------------------


def _verdict(ok: Optional[bool]) -> str:
    return "REPORTED" if ok is None else ("MEETS" if ok else "MISS")


def judge_run(b: Run, r: dict) -> tuple[Optional[bool], str]:
    ok = r["wall_s"] < b.wall_target_s and r["events_per_s"] > b.eps_target
    line = (f"{r['wall_s']:.3f} s wall (target < {b.wall_target_s} s), {r['events']:,} events, "
            f"{r['events_per_s'] / 1e6:.2f} M events/s (target > {b.eps_target / 1e6:g} M), "
            f"{r['ns_per_event']:.1f} ns/event")
    return ok, line


def judge_scale(b: Scale, r: dict, ref: dict) -> tuple[Optional[bool], str]:
    r["reference"] = b.reference
    r["reference_ns_per_event"] = ref["ns_per_event"]
    r["ratio"] = r["ns_per_event"] / ref["ns_per_event"]
    ok = None if b.max_ratio is None else r["ratio"] <= b.max_ratio
    target = "no target" if b.max_ratio is None else f"target <= {b.max_ratio}x"
    line = (f"{r['ns_per_event']:.1f} ns/event = {r['ratio']:.2f}x {b.reference}'s {ref['ns_per_event']:.1f} ({target}); "
            f"{r['wall_s']:.3f} s wall, {r['events']:,} events, {r['simulated_s']:g} s simulated")
    return ok, line


def judge_build(b: Build, r: dict) -> tuple[Optional[bool], str]:
    ok = None if b.wall_target_s is None else r["wall_s"] < b.wall_target_s
    target = "no target" if b.wall_target_s is None else f"target < {b.wall_target_s} s"
    line = (f"{r['vms']:,} VMs validated and built in {r['wall_s']:.3f} s ({target}): read and validate "
            f"{r['load_validate_s']:.3f} s, engine spec {r['engine_spec_s']:.3f} s, engine construction "
            f"{r['engine_build_s']:.3f} s")
    return ok, line


def _cpu() -> str:
    """The processor, as /proc/cpuinfo names it ("GenuineIntel 6/167 Intel(R) Xeon(R) Processor"), or
    ``platform.processor()`` where there is no /proc/cpuinfo. Family and model are kept because a
    hypervisor may give a generic model name."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    first = text.split("\n\n", 1)[0]
    fields = dict(line.split(":", 1) for line in first.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    return f"{fields.get('vendor_id', '?')} {fields.get('cpu family', '?')}/{fields.get('model', '?')} {fields.get('model name', '?')}"


def _commit() -> str:
    """HEAD's short hash, with '+dirty' when the engine or Python sources have uncommitted changes."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, cwd=HERE).stdout.strip()
        except OSError:
            return ""

    head = git("rev-parse", "--short", "HEAD")
    if head and git("status", "--porcelain", "--untracked-files=no", "--", "../crates", "../python"):
        head += "+dirty"
    return head


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}")
    ap.add_argument("--repeat", type=int, default=3, help="runs per benchmark; the best counts (default 3)")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and their targets")
    ap.add_argument("--no-record", action="store_true", help="do not append to benchmarks/results.jsonl")
    ap.add_argument("--results", type=Path, default=HERE / "results.jsonl", help="where to append the records")
    ap.add_argument("--commit", help="commit to record (default: this checkout's HEAD, '+dirty' if modified)")
    ap.add_argument("--no-yardstick", action="store_true",
                    help="do not time the machine's yardstick (a heap pop + push) before each timed benchmark")
    ap.add_argument("--instructions", action="store_true",
                    help="count the engine's instructions under callgrind instead of timing (needs valgrind)")
    args = ap.parse_args(argv)
    if args.list:
        for name, b in BENCHMARKS.items():
            print(f"{name}: {type(b).__name__.lower()}, {b.targets()}")
        return 0
    if args.instructions:
        commit = args.commit if args.commit is not None else _commit()
        for name, r, line in measure_instructions():
            print(f"{name}: {line}", flush=True)
            if not args.no_record:
                record = {"benchmark": name, "commit": commit, "machine": platform.machine(), "cpu": _cpu(),
                          **{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}}
                with open(args.results, "a") as f:
                    f.write(json.dumps(record) + "\n")
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    names = args.names or list(BENCHMARKS)
    commit = args.commit if args.commit is not None else _commit()
    measured: dict[str, dict] = {}

    def run_measured(name: str) -> dict:
        if name not in measured:
            measured[name] = measure_run(BENCHMARKS[name].path, args.repeat)
        return measured[name]

    for name in names:
        b = BENCHMARKS[name]
        heap_ns = None if args.no_yardstick or isinstance(b, Build) else measure_yardstick()
        if isinstance(b, Run):
            r = dict(run_measured(name))
            ok, line = judge_run(b, r)
        elif isinstance(b, Scale):
            ref = run_measured(b.reference)  # measured once per invocation, recorded only if named
            r = dict(measure_run(b.path, args.repeat))
            ok, line = judge_scale(b, r, ref)
        else:
            r = measure_build(b.vms, args.repeat)
            ok, line = judge_build(b, r)
        if heap_ns is not None:
            r["heap_ns"] = heap_ns
            r["heap_ops_per_event"] = r["ns_per_event"] / heap_ns
            line += f"; {r['heap_ops_per_event']:.2f} heap ops per event (yardstick {heap_ns:.1f} ns)"
        print(f"{name}: {line} -> {_verdict(ok)}", flush=True)
        if not args.no_record:
            record = {"benchmark": name, "commit": commit, "vmtwin": __version__, "machine": platform.machine(),
                      "cpu": _cpu(), "python": platform.python_version(), "repeat": args.repeat,
                      **{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()},
                      "meets_target": ok}
            with open(args.results, "a") as f:
                f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
