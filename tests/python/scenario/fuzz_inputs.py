"""Fuzzing the scenario layer: hypothesis strategies for hostile input, and the one oracle.

The promise under test: whatever bytes a user gives, loading a scenario either succeeds or raises
a :class:`~vmtwin.exceptions.ScenarioError` with a short message (under 20 lines, each naming a
path or a file and line); an accepted scenario is then accepted or refused by the engine with a
:class:`~vmtwin.exceptions.VmtwinError`, and a few simulated milliseconds of it run. Any other
exception (a traceback for the user), a Rust panic or a long message is a crash.

Three sources of input:

- ``raw_bytes``: random bytes, as a file on disk (so decoding is tested) or decoded text;
- ``mutated_yaml``: a valid scenario (random host, pools and VMs) with values swapped for hostile
  ones (overflowing quantities, 1 ns intervals, NaN, huge integers, NUL bytes, dates, tags), dumped
  to YAML and then edited as text (hostile snippets inserted, spans cut, lines doubled);
- ``mutated_dict``: the same mutated mapping handed to ``parse_scenario`` as a dict (the API path).

Used by ``test_fuzz.py`` (a few seconds in CI) and ``benchmarks/bench_fuzz.py`` (10 minutes).
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from vmtwin.exceptions import ScenarioError, VmtwinError
from vmtwin.scenario import load_scenario, parse_scenario

MAX_MESSAGE_LINES = 20
MAX_LINE_CHARS = 2000

EVIL_VALUES = [
    "1e999999GHz", "1e999999h", "1e999999TB", "1e-999999s", "5000000h", "1ns", "0ns", "0MHz", "0", "-1", "-1MHz",
    "1e400", ".inf", ".nan", "unlimited", "1e-300", "2024-13-45", "2024-03-01", "a\x00b", "\x00", "18446744073709551616MHz",
    "99999999999999999999999", "1week", "2day", "100001MHz", "9007199254740993MHz", "/dev/zero", "/tmp", "nul\x00path",
    "x" * 3000, "1" * 5000, "normal", "high", "idle", "trace", "planetlab", "bitbrains", "open", "closed", "true",
]
EVIL_SNIPPETS = [
    "!!int ", "!!float ", "!!bool ", "!!timestamp ", "!!binary ", "!!python/object:os.system ", "!foo ", "&a ", "*a ",
    "*nowhere ", "<<: *a\n", "? [a]\n: 1\n", "1: x\n", "null: x\n", "[" * 80, "{a: " * 70, "- " * 70, "\t", "---\n",
    "%YAML 1.1\n", "'\n", '"\\q"', "\x00", "\ufeff", "&a [*a]\n", ": :", "count: 1000000000\n", "vcpus: 100000\n",
    "sample_interval: 1ns\n", "quantum: 1ns\n", "duration: 1e999999h\n", "l: &l [x, x, x, x, x, x, x, x, x]\n",
]


def _quantity(unit: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda n: f"{n}{unit}")


@st.composite
def valid_scenarios(draw) -> dict:
    """A small valid scenario mapping (file form): the seed that mutations start from."""
    cores = draw(st.integers(1, 8))
    host = {"cores_per_llc": cores, "core_mhz": draw(_quantity("MHz", 1000, 4000)),
            "threads_per_core": draw(st.sampled_from([1, 2])), "memory": "64GB"}
    pools = []
    for i in range(draw(st.integers(0, 3))):
        pool: dict[str, Any] = {"name": f"p{i}", "cpu": {"shares": draw(st.sampled_from(["low", "normal", "high", 500]))}}
        if i and draw(st.booleans()):
            pool["parent"] = f"p{draw(st.integers(0, i - 1))}"
        if draw(st.booleans()):
            pool["cpu"]["limit"] = draw(_quantity("MHz", 100, 10_000))
        pools.append(pool)
    vms = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["idle", "cpu_bound", "trace"]))
        if kind == "idle":
            workload: dict[str, Any] = {"type": "idle"}
        elif kind == "cpu_bound":
            workload = {"type": "cpu_bound", "duty": draw(st.floats(0.05, 1.0)), "burst": draw(_quantity("ms", 1, 50))}
        else:
            workload = {"type": "trace", "format": "planetlab", "path": "PLANETLAB", "speedup": draw(st.sampled_from([1, 144]))}
        vm: dict[str, Any] = {"name": f"vm{i}", "vcpus": draw(st.integers(1, cores)), "workload": workload,
                              "cpu": {"shares": draw(st.sampled_from(["low", "normal", "high"]))}}
        if pools and draw(st.booleans()):
            vm["pool"] = f"p{draw(st.integers(0, len(pools) - 1))}"
        if draw(st.booleans()):
            vm["count"] = draw(st.integers(1, 3))
        vms.append(vm)
    sc: dict[str, Any] = {"name": "fuzz", "duration": draw(_quantity("s", 2, 20)), "host": host, "vms": vms}
    if pools:
        sc["resource_pools"] = pools
    return sc


_leaf = st.one_of(
    st.sampled_from(EVIL_VALUES),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.booleans(),
    st.none(),
)
evil_values = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def _replace(node: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    node = dict(node) if isinstance(node, dict) else list(node)
    node[head] = _replace(node[head], rest, value)
    return node


@st.composite
def mutated_dicts(draw) -> dict:
    """A valid scenario with one to three values (or whole subtrees) replaced by hostile ones."""
    sc = draw(valid_scenarios())
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(sc)[1:]))
        sc = _replace(sc, path, draw(evil_values))
    if draw(st.booleans()):  # a hostile key too
        sc[draw(st.sampled_from(["host", "vms", "cpu_scheduler", "sample_interval", "junk", "resource_pools"]))] = draw(evil_values)
    return sc


@st.composite
def mutated_yaml(draw) -> str:
    """A mutated scenario dumped to YAML, then edited as text."""
    sc = draw(st.one_of(valid_scenarios(), mutated_dicts()))
    text = yaml.safe_dump(sc, sort_keys=False, allow_unicode=True, width=10_000)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["insert", "cut", "double"]))
        at = draw(st.integers(0, len(text)))
        if op == "insert":
            text = text[:at] + draw(st.one_of(st.sampled_from(EVIL_SNIPPETS), st.text(max_size=12))) + text[at:]
        elif op == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 30)):]
        else:
            lines = text.splitlines(keepends=True)
            if lines:
                k = draw(st.integers(0, len(lines) - 1))
                text = "".join(lines[:k + 1] + lines[k:])
    return text


raw_bytes = st.binary(max_size=3000)


def _check_message(exc: BaseException, *, scenario_format: bool = True) -> None:
    msg = str(exc)
    lines = msg.splitlines()
    assert lines, "an empty error message"
    assert len(lines) < MAX_MESSAGE_LINES, f"{len(lines)} lines"
    for line in lines:
        assert len(line) < MAX_LINE_CHARS, f"a line of {len(line)} characters"
        if scenario_format:  # the engine's admission-control messages have their own form
            assert "; allowed: " in line or "malformed YAML" in line, line


def check(source: str | bytes | dict, planetlab: Path, scratch: Path | None = None) -> str:
    """Load ``source`` as a user would; return the outcome, or raise if the promise is broken.

    Outcomes: ``refused`` (ScenarioError), ``engine-refused`` (VmtwinError from the engine),
    ``ran`` (accepted, built and run for a few simulated milliseconds).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vSphere-maximum warnings are expected for odd inputs
        try:
            if isinstance(source, bytes):
                with tempfile.TemporaryDirectory(dir=scratch) as d:
                    f = Path(d) / "fuzz.yaml"
                    f.write_bytes(source)
                    sc = load_scenario(f)
            elif isinstance(source, dict):
                sc = parse_scenario(json.loads(json.dumps(source, default=str).replace("PLANETLAB", str(planetlab))))
            else:
                sc = parse_scenario(source.replace("PLANETLAB", str(planetlab)))
        except ScenarioError as exc:
            _check_message(exc)
            return "refused"
        from vmtwin import _core

        try:
            spec = sc.to_engine_json()
            sim = _core.Simulation(spec)
        except VmtwinError as exc:
            _check_message(exc, scenario_format=False)
            return "engine-refused"
        vcpus = sum(vm.count * vm.vcpus for vm in sc.vms)
        if vcpus <= 64:
            sim.run_until(min(sc.duration, 20_000_000), None)  # 20 simulated ms
        return "ran"
