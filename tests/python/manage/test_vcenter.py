"""The vCenter model: throughput against concurrency is a hill whose top moves down as more VMs are
powered on; the inventory follows the operations; runs are deterministic per seed."""

from __future__ import annotations

import numpy as np
import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.manage import Operation, Policy, TaskStream, VcenterParams, paper_workload, run_stream

BATCHES = list(range(5, 400, 10))


def burst(op: str, n: int) -> TaskStream:
    return TaskStream(op, (0.0,) * n, (op,) * n)


def batch_throughput(params: VcenterParams, op: str = "reconfigure_memory") -> dict[int, float]:
    """Tasks/min of one round of each batch size, started on a fresh cluster (Fig. 1's measure)."""
    return {b: 60.0 * b / run_stream(burst(op, b), Policy.static(b), params, 1).latency_s for b in BATCHES}


def test_throughput_against_concurrency_is_a_hill():
    x = batch_throughput(VcenterParams(service_cv=0.0))
    best = max(x, key=x.get)
    assert BATCHES[0] < best < BATCHES[-1]
    assert x[best] > 1.2 * x[BATCHES[0]] and x[best] > x[BATCHES[-1]]
    rising = [x[b] for b in BATCHES if b <= best]
    assert all(a <= b + 1e-9 for a, b in zip(rising, rising[1:]))  # no dip on the way up


def test_more_powered_on_vms_lower_the_hill_and_move_its_top_down():
    tops, peaks = [], []
    for on in (0, 100, 200):
        x = batch_throughput(VcenterParams(powered_on_per_host=on, service_cv=0.0))
        tops.append(max(x, key=x.get))
        peaks.append(max(x.values()))
    assert tops[0] > tops[1] > tops[2]
    assert peaks[0] > peaks[1] > peaks[2]


def test_without_contention_the_hill_has_no_falling_side():
    x = batch_throughput(VcenterParams(service_cv=0.0, contention_per_task=0.0, bg_per_vm_cluster=0.0,
                                       bg_per_vm_host=0.0))
    values = [x[b] for b in BATCHES]
    assert all(a <= b + 1e-9 for a, b in zip(values, values[1:]))


def test_power_ons_power_vms_on_and_creates_add_vms():
    p = VcenterParams(hosts=2, vms_per_host=10, powered_on_per_host=4)
    res = run_stream(burst("power_on", 12), Policy.static(3), p, 5)
    assert res.powered_on_end == 8 + 12 and res.failed == 0
    mixed = TaskStream("m", (0.0,) * 6, ("create",) * 4 + ("power_on",) * 2)
    p2 = VcenterParams(hosts=2, vms_per_host=3, powered_on_per_host=3)  # every VM already on
    res2 = run_stream(mixed, Policy.static(4), p2, 5)  # the power-ons find the newly created VMs
    assert res2.powered_on_end == 8 and res2.failed == 0


def test_a_power_on_with_no_powered_off_vm_fails_at_validation():
    p = VcenterParams(hosts=1, vms_per_host=3, powered_on_per_host=2)
    res = run_stream(burst("power_on", 3), Policy.static(3), p, 5)
    assert res.failed == 2 and res.powered_on_end == 3


def test_power_on_background_lowers_static_round_throughput_over_the_run():
    """Fig. 4(c): static power-on throughput drops in the first rounds as VMs come on."""
    res = run_stream(paper_workload("power_on"), Policy.static(5), VcenterParams(), 3)
    first = np.mean([r.round_tpm for r in res.rounds[:10]])
    last = np.mean([r.round_tpm for r in res.rounds[-10:]])
    assert last < 0.95 * first
    ram = run_stream(paper_workload("reconfigure_memory"), Policy.static(10), VcenterParams(), 3)
    flat = [r.round_tpm for r in ram.rounds]
    assert abs(np.mean(flat[-10:]) / np.mean(flat[:10]) - 1) < 0.05  # RAM: "relatively stable"


def test_same_seed_same_run_other_seed_other_run():
    a = run_stream(paper_workload("mixed"), Policy("vatm"), VcenterParams(), 11)
    b = run_stream(paper_workload("mixed"), Policy("vatm"), VcenterParams(), 11)
    c = run_stream(paper_workload("mixed"), Policy("vatm"), VcenterParams(), 12)
    assert a.latency_s == b.latency_s and a.batch_trace == b.batch_trace
    assert np.array_equal(a.response_s, b.response_s)
    assert a.latency_s != c.latency_s


def test_service_times_have_the_operation_cost_as_mean():
    """Alone in vCenter (no contention, no background), a task's response is its costs' sum."""
    p = VcenterParams(contention_per_task=0.0, bg_per_vm_cluster=0.0, bg_per_vm_host=0.0, service_cv=0.5)
    op = Operation("x", vpxd_s=0.1, cluster_s=0.2, hostd_s=0.3, db_s=0.4)
    stream = TaskStream("x", tuple(50.0 * i for i in range(4000)), ("x",) * 4000)
    res = run_stream(stream, Policy("unthrottled"), p, 2, {"x": op})
    assert res.response_s.mean() == pytest.approx(1.0, rel=0.02)
    assert res.wait_s.max() == 0.0


@pytest.mark.parametrize("kwargs,field", [
    ({"hosts": 0}, "platform.hosts"),
    ({"powered_on_per_host": 300}, "platform.powered_on_per_host"),
    ({"service_cv": -1.0}, "platform.service_cv"),
])
def test_bad_platform_parameters_name_the_field(kwargs, field):
    with pytest.raises(ScenarioError, match=f"{field}: got"):
        VcenterParams(**kwargs)


def test_bad_operation_costs_name_the_field():
    with pytest.raises(ScenarioError, match="operations.bad.hostd_s: got -1"):
        Operation("bad", hostd_s=-1)
    with pytest.raises(ScenarioError, match="operations.none: got 'all costs 0'"):
        Operation("none")
