"""The scenario schema: normalization to the engine spec, builders, and error messages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bad_corpus import CLASSES, CORPUS
from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import (
    VM,
    CpuBound,
    CpuScheduler,
    Host,
    Idle,
    PoolCpu,
    ResourcePool,
    Scenario,
    TraceWorkload,
    VmCpu,
    load_scenario,
    parse_scenario,
    scenario_json_schema,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

BAD = sorted((HERE / "bad").glob("*.yaml"))
SHARED_DATA = REPO.parent / "shared" / "data"
SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))

MINIMAL = """
host: {cores_per_llc: 4}
vms:
  - {name: a, workload: {type: idle}}
"""


def _spec(text: str, **kw) -> dict:
    return parse_scenario(text, **kw).to_engine_spec()


# ---------------------------------------------------------------------------- engine spec


def test_minimal_defaults():
    spec = _spec(MINIMAL)
    assert spec["duration_ns"] == 600 * 10**9
    assert spec["sample_interval_ns"] == 2 * 10**9
    assert spec["host"] == {
        "name": "esx01",
        "sockets": 1,
        "numa_nodes_per_socket": 1,
        "llcs_per_node": 1,
        "cores_per_llc": 4,
        "threads_per_core": 1,
        "core_mhz": 2600,
        "memory_bytes": 64 * 2**30,
    }
    assert spec["cpu_sched"] == {}
    assert spec["pools"] == []
    vm = spec["vms"][0]
    assert vm == {
        "name": "a",
        "pool": None,
        "vcpus": 1,
        "memory_bytes": 4 * 2**30,
        "shares": 1000,
        "reservation_mhz": 0,
        "limit_mhz": None,
        "power_on_ns": 0,
        "workload": {"kind": "idle"},
    }


@pytest.mark.parametrize(
    ("shares", "vcpus", "expected"),
    [("low", 1, 500), ("normal", 2, 2000), ("high", 4, 8000), ("High", 2, 4000), (1234, 8, 1234)],
)
def test_vm_shares_resolution(shares, vcpus, expected):
    sc = Scenario(host=Host(cores_per_llc=8), vms=[VM(name="a", vcpus=vcpus, cpu=VmCpu(shares=shares), workload=Idle())])
    assert sc.to_engine_spec()["vms"][0]["shares"] == expected


@pytest.mark.parametrize(("shares", "expected"), [("low", 2000), ("normal", 4000), ("high", 8000), (300, 300)])
def test_pool_shares_resolution(shares, expected):
    sc = Scenario(
        host=Host(cores_per_llc=4),
        resource_pools=[ResourcePool(name="p", cpu=PoolCpu(shares=shares))],
        vms=[VM(name="a", pool="p", workload=Idle())],
    )
    assert sc.to_engine_spec()["pools"][0]["shares"] == expected


def test_count_expansion_and_order():
    spec = _spec(
        """
host: {cores_per_llc: 4}
vms:
  - {name: first, workload: {type: idle}}
  - {name: web, count: 3, vcpus: 2, workload: {type: cpu_bound, duty: 0.5}}
  - {name: last, workload: {type: idle}}
"""
    )
    names = [v["name"] for v in spec["vms"]]
    assert names == ["first", "web-1", "web-2", "web-3", "last"]
    assert all(v["vcpus"] == 2 for v in spec["vms"][1:4])


def test_count_one_keeps_the_name():
    assert VM(name="db", count=1, workload=Idle()).expanded_names() == ["db"]


def test_pools_parents_first_and_limits():
    spec = _spec(
        """
host: {cores_per_llc: 4}
resource_pools:
  - {name: leaf, parent: mid, cpu: {limit: 3GHz}}
  - {name: mid, parent: top}
  - {name: top, cpu: {reservation: 1000MHz, expandable_reservation: false, limit: -1}}
vms:
  - {name: a, pool: leaf, workload: {type: idle}}
"""
    )
    assert [p["name"] for p in spec["pools"]] == ["top", "mid", "leaf"]
    top, _, leaf = spec["pools"]
    assert top == {"name": "top", "parent": None, "shares": 4000, "reservation_mhz": 1000, "limit_mhz": None, "expandable": False}
    assert leaf["limit_mhz"] == 3000
    assert spec["vms"][0]["pool"] == "leaf"


def test_cpu_scheduler_partial_and_renamed():
    spec = _spec(MINIMAL + "cpu_scheduler: {quantum: 20ms, demand_ewma_weight: 0.25}\n")
    assert spec["cpu_sched"] == {"quantum_ns": 20_000_000, "demand_ewma_weight": 0.25}
    full = CpuScheduler(
        quantum="50ms",
        entitlement_interval="1s",
        limit_burst="100ms",
        wake_preempt_margin="1ms",
        max_lag="100ms",
        demand_ewma_weight=0.5,
    )
    sc = Scenario(host=Host(cores_per_llc=1), cpu_scheduler=full, vms=[VM(name="a", workload=Idle())])
    assert sc.to_engine_spec()["cpu_sched"] == {
        "quantum_ns": 50000000,
        "entitlement_interval_ns": 1000000000,
        "limit_burst_ns": 100000000,
        "wake_preempt_margin_ns": 1000000,
        "max_lag_ns": 100000000,
        "demand_ewma_weight": 0.5,
    }


def test_scheduler_constants_made_parameters_reach_the_engine():
    # the five that were constants in cpu/sched.rs and cpu/limit.rs: renamed as the others, and
    # the engine runs with them
    import vmtwin
    from vmtwin import _core

    text = MINIMAL + ("cpu_scheduler: {limit_borrow: 2ms, limit_share_split_below: 0.6, limit_dormant_max: 0.5, "
                      "demand_wait_power: 2, short_margin: 0.1}\nduration: 2s\n")
    spec = _spec(text)
    want = {"limit_borrow_ns": 2_000_000, "limit_share_split_below": 0.6, "limit_dormant_max": 0.5,
            "demand_wait_power": 2, "short_margin": 0.1}
    assert spec["cpu_sched"] == want
    params = json.loads(_core.Simulation(json.dumps(spec)).params_json())["cpu_sched"]
    assert {k: params[k] for k in want} == want
    vmtwin.Simulation(parse_scenario(text)).run()


def test_a_dormancy_shorter_than_a_turn_is_refused_by_the_engine():
    # 0.01 of the 100 ms burst is 1 ms, under the 5 ms turn: never taken, and a look per ms
    import vmtwin

    sc = parse_scenario(MINIMAL + "cpu_scheduler: {limit_dormant_max: 0.01}\n")
    with pytest.raises(ScenarioError, match=r"^cpu_scheduler.limit_dormant_max: got 0.01; allowed: .*at least limit_min_slice"):
        vmtwin.Simulation(sc)
    # at a 1 ms turn it is long enough
    vmtwin.Simulation(parse_scenario(MINIMAL + "cpu_scheduler: {limit_dormant_max: 0.01, limit_min_slice: 1ms}\n"))


def test_cpu_bound_workload():
    spec = _spec(MINIMAL.replace("{type: idle}", "{type: cpu_bound, duty: 0.6, burst: 20ms, burst_distribution: fixed}"))
    assert spec["vms"][0]["workload"] == {"kind": "cpu_bound", "duty": 0.6, "burst_ns": 20_000_000, "burst_dist": "fixed",
                                          "arrivals": "closed"}


def test_trace_path_relative_to_scenario_file(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "vm").write_text("10\n20\n30\n")
    f = tmp_path / "s.yaml"
    f.write_text(MINIMAL.replace("{type: idle}", "{type: trace, format: planetlab, path: traces/vm, loop: false}"))
    w = load_scenario(f).to_engine_spec()["vms"][0]["workload"]
    assert w == {
        "kind": "trace",
        "segment_ns": [300 * 10**9] * 3,
        "utilization": [0.1, 0.2, 0.3],
        "burst_ns": 10_000_000,
        "loop": False,
    }


def test_trace_offset_and_speedup(tmp_path):
    (tmp_path / "vm").write_text("10\n20\n30\n")
    text = MINIMAL.replace("{type: idle}", "{type: trace, format: planetlab, path: vm, offset: 7min, speedup: 2}")
    w = _spec(text, base_dir=tmp_path)["vms"][0]["workload"]
    # 7 min skips the first 5-min sample and 2 min of the second, then time runs twice as fast.
    assert w["segment_ns"] == [90 * 10**9, 150 * 10**9]
    assert w["utilization"] == [0.2, 0.3]


def test_bitbrains_trace(shared_data, tmp_path):
    folder = shared_data / "bitbrains-small/tasks-fragments"
    text = MINIMAL.replace("{type: idle}", f"{{type: trace, format: bitbrains, path: '{folder}', vm_id: 116, burst: 5ms}}")
    w = _spec(text)["vms"][0]["workload"]
    assert w["kind"] == "trace" and w["burst_ns"] == 5_000_000 and w["loop"] is True
    assert len(w["segment_ns"]) == len(w["utilization"]) > 100


# ---------------------------------------------------------------------------- quickstart


def test_quickstart_matches_the_contract_keys(shared_data):
    spec = load_scenario(REPO / "scenarios" / "quickstart.yaml").to_engine_spec()
    assert set(spec) == {"seed", "duration_ns", "sample_interval_ns", "host", "cpu_sched", "pools", "vms"}
    assert set(spec["host"]) == {
        "name", "sockets", "numa_nodes_per_socket", "llcs_per_node", "cores_per_llc", "threads_per_core",
        "core_mhz", "memory_bytes",
    }  # fmt: skip
    assert set(spec["cpu_sched"]) <= {
        "quantum_ns", "entitlement_interval_ns", "limit_burst_ns", "wake_preempt_margin_ns", "max_lag_ns",
        "demand_ewma_weight",
    }  # fmt: skip
    for p in spec["pools"]:
        assert set(p) == {"name", "parent", "shares", "reservation_mhz", "limit_mhz", "expandable"}
    kinds = set()
    for v in spec["vms"]:
        assert set(v) == {
            "name", "pool", "vcpus", "memory_bytes", "shares", "reservation_mhz", "limit_mhz", "power_on_ns", "workload",
        }  # fmt: skip
        w = v["workload"]
        kinds.add(w["kind"])
        assert set(w) == {
            "idle": {"kind"},
            "cpu_bound": {"kind", "duty", "burst_ns", "burst_dist", "arrivals"},
            "trace": {"kind", "segment_ns", "utilization", "burst_ns", "loop"},
        }[w["kind"]]
    assert kinds == {"idle", "cpu_bound", "trace"}
    # The contract's types: plain ints for ns/MHz/bytes, JSON-serializable throughout.
    json.dumps(spec)
    assert spec["host"]["cores_per_llc"] * spec["host"]["sockets"] == 8
    assert len(spec["vms"]) == 10


def test_quickstart_is_overcommitted(shared_data):
    """Mean demand clearly above capacity, so ready time shows, but not absurdly so."""
    spec = load_scenario(REPO / "scenarios" / "quickstart.yaml").to_engine_spec()
    host_mhz = spec["host"]["cores_per_llc"] * spec["host"]["core_mhz"]
    demand = 0.0
    for v in spec["vms"]:
        w, cap = v["workload"], v["vcpus"] * spec["host"]["core_mhz"]
        if w["kind"] == "cpu_bound":
            want = w["duty"] * cap
        elif w["kind"] == "trace":
            want = sum(s * u for s, u in zip(w["segment_ns"], w["utilization"])) / sum(w["segment_ns"]) * cap
        else:
            want = 0.0
        demand += min(want, v["limit_mhz"] or want)
    assert 1.2 < demand / host_mhz < 2.0


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_example_scenarios_load(path, shared_data):
    sc = load_scenario(path)
    if sc.clusters:  # one engine spec per host (docs/cluster.md)
        from vmtwin.cluster.runner import plan_cluster

        json.dumps([h.spec for h in plan_cluster(sc).hosts])
        return
    json.dumps(sc.to_engine_spec())


# ---------------------------------------------------------------------------- builders


def test_builder_from_the_docs():
    sc = Scenario(host=Host(cores_per_llc=4), vms=[VM(name="a", workload=CpuBound(duty=1.0))])
    spec = sc.to_engine_spec()
    assert spec["vms"][0]["workload"]["duty"] == 1.0
    assert spec["host"]["cores_per_llc"] == 4


def test_builder_accepts_strings_and_base_unit_ints():
    vm = VM(name="a", memory="2GB", power_on=5 * 10**9, cpu=VmCpu(reservation="1.2GHz", limit=1500), workload=Idle())
    assert vm.memory == 2 * 2**30
    assert vm.power_on == 5 * 10**9
    assert vm.cpu.reservation == 1200 and vm.cpu.limit == 1500


def test_builder_errors_are_scenario_errors():
    with pytest.raises(ScenarioError, match=r"VM\.vcpus: got 0"):
        VM(name="a", vcpus=0, workload=Idle())
    with pytest.raises(ScenarioError, match=r"CpuBound\.duty: got 2"):
        CpuBound(duty=2)
    with pytest.raises(ScenarioError, match=r"vms\[0\]\.vcpus: got 9; allowed: an integer from 1 to 8"):
        Scenario(host=Host(cores_per_llc=4, threads_per_core=2), vms=[VM(name="a", vcpus=9, workload=Idle())])


def test_in_place_edits_are_checked_again():
    sc = Scenario(host=Host(cores_per_llc=4), vms=[VM(name="a", workload=Idle())])
    sc.vms.append(VM(name="a", workload=Idle()))
    with pytest.raises(ScenarioError, match=r"vms\[1\]\.name: got 'a'"):
        sc.to_engine_spec()


def test_to_yaml_round_trip(shared_data):
    sc = load_scenario(REPO / "scenarios" / "quickstart.yaml")
    again = parse_scenario(sc.to_yaml(), base_dir=REPO / "scenarios")
    assert again == sc
    assert again.to_engine_spec() == sc.to_engine_spec()


def test_trace_workload_builder(tmp_path):
    (tmp_path / "t").write_text("50\n")
    sc = Scenario(
        host=Host(cores_per_llc=2),
        vms=[VM(name="t", workload=TraceWorkload(format="planetlab", path=str(tmp_path / "t")))],
    )
    assert sc.to_engine_spec()["vms"][0]["workload"]["utilization"] == [0.5]


# ---------------------------------------------------------------------------- errors


def test_no_pydantic_leak_and_error_attributes():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(MINIMAL.replace("name: a", "name: a, vcpus: -3"))
    err = info.value
    assert err.path == "vms[0].vcpus" and err.value == -3
    assert "pydantic" not in str(err).lower()
    assert err.__cause__ is None and err.__suppress_context__


def test_several_errors_one_per_line():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(MINIMAL.replace("name: a", "name: a, vcpus: 0, memory: 4 apples"))
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert any(line.startswith("vms[0].vcpus: got 0") for line in lines)
    assert any(line.startswith("vms[0].memory: got '4 apples'") for line in lines)


def test_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="an existing scenario file"):
        load_scenario(tmp_path / "nope.yaml")


def test_yaml_error_names_the_file(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("host: {cores_per_llc: 4\n")
    with pytest.raises(ScenarioError, match=r"broken\.yaml, line \d+, column \d+: malformed YAML"):
        load_scenario(f)


@pytest.mark.parametrize("bad", [f for f in CORPUS if not f.heavy], ids=lambda f: f.path.name)
def test_bad_corpus(bad, tmp_path):
    # the heavy files (seconds each) go through the real command in tests/python/cli/test_cli_errors.py
    if bad.needs_shared_data and not SHARED_DATA.is_dir():
        pytest.skip("needs the shared data sets")
    with pytest.raises(ScenarioError) as info:
        load_scenario(bad.prepare(tmp_path))
    message = str(info.value)
    assert bad.expect in message
    lines = message.splitlines()
    assert len(lines) < 20, f"{len(lines)} lines"
    for line in lines:  # each line a whole message: a YAML path (or file and line), the value, what is allowed
        assert "; allowed: " in line or re.search(r"line \d+, column \d+: malformed YAML", line), line
        assert len(line) < 2000, f"a line of {len(line)} characters"


def test_bad_corpus_is_not_empty():
    assert len(BAD) >= 30
    new = [f for f in CORPUS if f.cls != "legacy"]
    assert len(new) >= 120, "the hardening corpus went missing"
    for cls in ("overflow", "clock", "floor", "ceiling", "depth", "alias", "tag", "timestamp", "key", "nul",
                "trace_file", "pool_limit", "shorten", "structure"):
        assert CLASSES.get(cls), f"no corpus file of class {cls}"


# ---------------------------------------------------------------------------- JSON Schema


def test_json_schema_export():
    schema = scenario_json_schema()
    text = json.dumps(schema)
    assert json.loads(text) == schema
    assert "vms" in schema["properties"]
    assert schema["additionalProperties"] is False
    assert "4GB" in json.dumps(schema["$defs"]["VM"])  # defaults in file form
    assert schema["anyOf"] == [{"required": ["host", "vms"]}, {"required": ["clusters"]}]  # or a cluster scenario
