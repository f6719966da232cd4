"""The bounds of vmtwin.scenario.limits at their edges, against independent recounts."""

from __future__ import annotations

import os
import warnings

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin import units
from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import limits, parse_scenario
from vmtwin.scenario.limits import ScenarioWarning, check_duration_override, limit_warnings, pool_depths

HOST = "host: {cores_per_llc: 4}\n"
VM = "vms:\n  - {name: a, workload: {type: cpu_bound, duty: 0.5}}\n"


def load(text: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScenarioWarning)
        return parse_scenario(text)


@pytest.mark.parametrize("field, floor", [("sample_interval", limits.MIN_SAMPLE_INTERVAL_NS)] + [
    (f"cpu_scheduler.{key}", floor) for key, (floor, _) in limits.SCHEDULER_FLOORS.items()])
def test_floors_are_exact(field, floor):
    def text(ns):
        if field.startswith("cpu_scheduler."):
            return HOST + VM + f"cpu_scheduler: {{{field.split('.')[1]}: {ns}ns}}\n"
        return HOST + VM + f"{field}: {ns}ns\n"

    load(text(floor))
    with pytest.raises(ScenarioError, match=f"^{field}: got '{units.format_duration(floor - 1)}'; allowed: at least"):
        load(text(floor - 1))


def test_the_scheduler_durations_are_read_from_the_model():
    keys = limits.scheduler_durations()
    # the first and the last duration of the section, and none of its numbers or switches
    assert {"quantum", "limit_min_slice", "numa_rebalance_period", "cell_rebalance_period"} <= set(keys)
    assert not {"demand_ewma_weight", "cell_size", "extended_fairness"} & set(keys)
    assert limits.SCHEDULER_DURATIONS_MAY_BE_ZERO <= set(keys)
    assert set(limits.SCHEDULER_FLOORS) <= set(keys)


@pytest.mark.parametrize("key", limits.scheduler_durations())
def test_every_scheduler_duration_is_positive_or_may_be_zero_and_is_capped(key):
    def text(value):
        return HOST + VM + f"cpu_scheduler: {{{key}: {value}}}\n"

    if key in limits.SCHEDULER_DURATIONS_MAY_BE_ZERO:
        load(text("0s"))
    else:
        with pytest.raises(ScenarioError, match=f"^cpu_scheduler.{key}: got '0ns'; allowed: a positive duration"):
            load(text("0s"))
    with pytest.raises(ScenarioError, match=f"^cpu_scheduler.{key}: got .*; allowed: at most 876600h \\(100 years"):
        load(text(f"{limits.MAX_TIME_NS + 1}ns"))


@pytest.mark.parametrize("key", limits.scheduler_durations())
def test_the_engine_refuses_exactly_the_zero_durations_the_loader_refuses(key):
    """The engine checks its own spec (``CpuSchedParams::validate``, a list written in Rust): a
    spec written by hand or by another tool reaches it without the loader. Both must agree on
    which durations may be 0."""
    import json

    from vmtwin import _core

    spec = json.loads(load(HOST + VM).to_engine_json())
    spec["cpu_sched"] = {f"{key}_ns": 0}
    if key in limits.SCHEDULER_DURATIONS_MAY_BE_ZERO:
        _core.Simulation(json.dumps(spec))
    else:
        with pytest.raises(ScenarioError, match=f"^cpu_scheduler.{key}: got 0; allowed: a duration > 0"):
            _core.Simulation(json.dumps(spec))


def test_burst_floor_is_exact():
    ok = HOST + f"vms:\n  - {{name: a, workload: {{type: cpu_bound, duty: 0.5, burst: {limits.MIN_BURST_NS}ns}}}}\n"
    load(ok)
    with pytest.raises(ScenarioError, match=r"^vms\[0\].workload.burst: got '99999ns'; allowed: at least 100us"):
        load(ok.replace(f"{limits.MIN_BURST_NS}ns", f"{limits.MIN_BURST_NS - 1}ns"))


def test_clock_bound_is_exact():
    # sample_interval long enough that the row ceiling does not bind first
    base = HOST + VM + "sample_interval: 1week\n"
    load(base + f"duration: {limits.MAX_TIME_NS}ns\n")
    with pytest.raises(ScenarioError, match="^duration: got .*100 years"):
        load(base + f"duration: {limits.MAX_TIME_NS + 1}ns\n")


def test_the_clock_bound_leaves_room_for_intervals():
    # any two bounded values add up without wrapping the engine's u64 nanosecond clock
    assert 2 * limits.MAX_TIME_NS < 2**64


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(0, 3), st.integers(1, 4),
       st.sampled_from(["1min", "10min", "1h"]), st.sampled_from(["100ms", "2s", "20s"]))
def test_row_count_matches_a_recount_of_the_engine_spec(vm_entries, vcpus, pools, count, duration, sample):
    pool_text = "".join(f"  - {{name: p{i}}}\n" for i in range(pools))
    vms = "".join(f"  - {{name: v{i}, vcpus: {vcpus}, count: {count}, workload: {{type: idle}}}}\n" for i in range(vm_entries))
    text = (f"host: {{cores_per_llc: 4}}\nduration: {duration}\nsample_interval: {sample}\n"
            + (f"resource_pools:\n{pool_text}" if pools else "") + f"vms:\n{vms}")
    spec = load(text).to_engine_spec()
    samples = spec["duration_ns"] // spec["sample_interval_ns"]
    per_sample = len(spec["vms"]) + sum(v["vcpus"] for v in spec["vms"]) + len(spec["pools"]) + 4 + 1
    rows = samples * per_sample
    # move the ceiling to just below / at this count: refused / accepted
    old = limits.MAX_SAMPLED_ROWS
    try:
        limits.MAX_SAMPLED_ROWS = rows
        load(text)
        limits.MAX_SAMPLED_ROWS = rows - 1
        with pytest.raises(ScenarioError, match=f"= {rows:,} rows"):
            load(text)
    finally:
        limits.MAX_SAMPLED_ROWS = old


def test_vm_and_vcpu_totals_count_expanded_entries(monkeypatch):
    monkeypatch.setattr(limits, "MAX_VMS", 10)
    two = HOST + "vms:\n  - {name: a, count: 6, workload: {type: idle}}\n  - {name: b, count: COUNT, workload: {type: idle}}\n"
    load(two.replace("COUNT", "4"))
    with pytest.raises(ScenarioError, match=r"^vms\[1\].count: got 5; allowed: at most 10 VMs .* brings it to 11"):
        load(two.replace("COUNT", "5"))
    monkeypatch.setattr(limits, "MAX_TOTAL_VCPUS", 20)
    with pytest.raises(ScenarioError, match=r"^vms\[1\].vcpus: got 4; allowed: at most 20 vCPUs"):
        load(two.replace("COUNT", "4").replace("name: b,", "name: b, vcpus: 4,"))


@st.composite
def pool_forests(draw):
    n = draw(st.integers(1, 40))
    return [draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None for i in range(n)]


@settings(max_examples=80, deadline=None)
@given(pool_forests(), st.randoms())
def test_pool_depths_match_networkx(parents, rnd):
    # file order shuffled: a child may come before its parent
    order = list(range(len(parents)))
    rnd.shuffle(order)
    text = HOST + "resource_pools:\n" + "".join(
        f"  - {{name: p{i}" + (f", parent: p{parents[i]}" if parents[i] is not None else "") + "}\n" for i in order) + VM
    g = nx.DiGraph()
    g.add_node("root")
    for i, p in enumerate(parents):
        g.add_edge("root" if p is None else f"p{p}", f"p{i}")
    expected = nx.single_source_shortest_path_length(g, "root")
    got = pool_depths(load(text))
    assert got == {f"p{i}": expected[f"p{i}"] for i in range(len(parents))}


def test_pool_depth_bound_is_exact(monkeypatch):
    monkeypatch.setattr(limits, "MAX_POOL_DEPTH", 5)
    chain = lambda n: HOST + "resource_pools:\n" + "".join(  # noqa: E731
        f"  - {{name: p{i}" + (f", parent: p{i - 1}" if i else "") + "}\n" for i in range(n)) + VM
    load(chain(5))
    with pytest.raises(ScenarioError, match=r"^resource_pools\[5\].parent: got 'p4'; allowed: a pool at most 5 levels deep"):
        load(chain(6))


@pytest.mark.parametrize("text, maximum", [
    ("host: {cores_per_llc: 64, sockets: 2}\nvms:\n  - {name: a, count: 1025, workload: {type: idle}}\n", "1024 VMs per host"),
    ("host: {cores_per_llc: 64, sockets: 4}\nvms:\n  - {name: a, vcpus: 8, count: 513, workload: {type: idle}}\n",
     "4096 vCPUs per host"),
    ("host: {cores_per_llc: 1}\nvms:\n  - {name: a, count: 33, workload: {type: idle}}\n", "32 vCPUs per core"),
    ("host: {cores_per_llc: 450, threads_per_core: 2}\nvms:\n  - {name: a, workload: {type: idle}}\n", "896 logical CPUs"),
    ("host: {cores_per_llc: 1, sockets: 17}\nvms:\n  - {name: a, workload: {type: idle}}\n", "16 NUMA nodes"),
    ("host: {cores_per_llc: 1, memory: 25TB}\nvms:\n  - {name: a, workload: {type: idle}}\n", "24TB of memory per host"),
    ("host: {cores_per_llc: 1}\nresource_pools: [" + ", ".join(f"{{name: p{i}" + (f", parent: p{i-1}" if i else "") + "}"
                                                               for i in range(9)) + "]\nvms:\n  - {name: a, workload: {type: idle}}\n",
     "tree depth of 8"),
])
def test_vsphere_maximums_warn_and_still_load(text, maximum):
    with pytest.warns(ScenarioWarning, match=maximum):
        sc = parse_scenario(text)
    assert sc.vms  # a warning, not an error


def test_at_the_vsphere_maximums_nothing_warns():
    text = "host: {cores_per_llc: 64, sockets: 2}\nvms:\n  - {name: a, vcpus: 4, count: 1024, workload: {type: idle}}\n"
    assert limit_warnings(load(text)) == []


def test_duration_override_is_bounded_like_the_file():
    sc = load(HOST + VM)
    check_duration_override(sc, 3600 * 10**9)
    with pytest.raises(ScenarioError, match="^--duration: got '5000000h'; allowed: at most 876600h"):
        check_duration_override(sc, 5_000_000 * 3600 * 10**9)


@pytest.mark.parametrize("text, ns", [("2day", 2 * 86400 * 10**9), ("1 week", 7 * 86400 * 10**9), ("1.5d", 129600 * 10**9),
                                      ("3w", 21 * 86400 * 10**9), ("2days", 2 * 86400 * 10**9)])
def test_day_and_week(text, ns):
    assert units.parse_duration(text, allow_bare=False) == ns


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"\A[+-]?[0-9]{0,30}(\.[0-9]{0,30})?([eE][+-]?[0-9]{1,12})?\s?(GHz|MHz|TB|B|h|ns|week)\Z"))
def test_any_number_parses_or_is_a_value_error(text):
    # never decimal.Overflow, OverflowError or InvalidOperation
    for parse in (units.parse_size, units.parse_frequency, units.parse_duration):
        try:
            n = parse(text, allow_bare=False)
        except ValueError:
            continue
        assert 0 <= n <= 2**64 - 1


def test_trace_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "trace"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match=r"^vms\[0\].workload.path: got .*FIFO"):
        parse_scenario(HOST + f"vms:\n  - {{name: a, workload: {{type: trace, format: planetlab, path: {fifo}}}}}\n")


def test_the_docs_example_says_what_the_docs_show():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "reference" / "input-limits.md").read_text()
    yaml_text = page.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0]
    shown = page.split("error: ", 1)[1].split("\n", 1)[0]
    with pytest.raises(ScenarioError) as info:
        parse_scenario(yaml_text)
    assert str(info.value) == shown
