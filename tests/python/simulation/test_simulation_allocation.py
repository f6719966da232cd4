"""Proportional share with multi-vCPU VMs and resource pools, read from the sampled tables."""

from __future__ import annotations

import pytest

from vmtwin import VM, CpuBound, Host, ResourcePool, Scenario, Simulation

HOST = Host(name="four", cores_per_llc=4, core_mhz="2600MHz")
TOLERANCE = 2.0  # %USED points (of 400 for a 4-vCPU VM)


def _busy(name: str, vcpus: int = 4, pool: str | None = None, **cpu) -> VM:
    extra = {"cpu": cpu} if cpu else {}
    return VM(name=name, vcpus=vcpus, pool=pool, workload=CpuBound(duty=1.0, burst="10ms"), **extra)


def _mean(vms: list[VM], pools: list[ResourcePool] = (), duration: str = "30s") -> dict[str, float]:
    """Mean %USED of each VM over the run, from the vm table."""
    sim = Simulation(Scenario(name="alloc", seed=3, duration=duration, host=HOST, resource_pools=list(pools),
                              vms=vms))
    sim.run()
    vm = sim.tables()["vm"].to_pandas()
    return vm.groupby("vm")["%USED"].mean().to_dict()


def test_multi_vcpu_shares_one_to_three():
    used = _mean([_busy("small", shares=1000), _busy("big", shares=3000)])
    assert used["small"] == pytest.approx(100, abs=TOLERANCE)
    assert used["big"] == pytest.approx(300, abs=TOLERANCE)


def test_multi_vcpu_equal_shares_split_evenly():
    # control for the 1:3 case: the split follows the shares, not the VMs' order or names
    used = _mean([_busy("small", shares=2000), _busy("big", shares=2000)])
    assert used["small"] == pytest.approx(200, abs=TOLERANCE)
    assert used["big"] == pytest.approx(200, abs=TOLERANCE)


POOLS_1_3 = [ResourcePool(name="p1", cpu={"shares": 1000}), ResourcePool(name="p3", cpu={"shares": 3000})]


def test_pools_with_shares_one_to_three():
    used = _mean([_busy("in-p1", pool="p1"), _busy("in-p3", pool="p3")], POOLS_1_3)
    assert used["in-p1"] == pytest.approx(100, abs=TOLERANCE)
    assert used["in-p3"] == pytest.approx(300, abs=TOLERANCE)


def test_pool_shares_outrank_vm_shares():
    # VM shares only compete inside a pool: huge VM shares in the small pool change nothing
    used = _mean([_busy("in-p1", pool="p1", shares=1_000_000), _busy("in-p3", pool="p3", shares=1)], POOLS_1_3)
    assert used["in-p1"] == pytest.approx(100, abs=TOLERANCE)
    assert used["in-p3"] == pytest.approx(300, abs=TOLERANCE)


def test_shares_inside_a_pool():
    pools = [ResourcePool(name="p", cpu={"shares": "normal"})]
    used = _mean([_busy("x", 2, pool="p", shares=1000), _busy("y", 2, pool="p", shares=3000), _busy("out", 4)],
                 pools)
    # root: pool p (4000) vs out (4 vCPUs normal = 4000) -> 200/200; inside p, x:y = 1:3 -> 50/150
    assert used["out"] == pytest.approx(200, abs=TOLERANCE)
    assert used["x"] == pytest.approx(50, abs=TOLERANCE)
    assert used["y"] == pytest.approx(150, abs=TOLERANCE)


NESTED_LIMIT = [
    ResourcePool(name="outer", cpu={"limit": "2600MHz"}),  # one pCPU's worth
    ResourcePool(name="inner", parent="outer", cpu={"shares": "high"}),
]
NESTED_NO_LIMIT = [ResourcePool(name="outer"), ResourcePool(name="inner", parent="outer", cpu={"shares": "high"})]


def test_nested_pool_limit_caps_vms_below_it_under_contention():
    vms = [_busy("x", 2, pool="inner"), _busy("y", 2, pool="inner"), _busy("z", 4)]
    # control: without the limit, outer (4000 shares) and z (4000) split the host 200/200
    free = _mean(vms, NESTED_NO_LIMIT)
    assert free["x"] + free["y"] == pytest.approx(200, abs=TOLERANCE)
    # with outer limited to 2600 MHz = 100 %USED, x and y share that one pCPU and z takes the rest
    used = _mean(vms, NESTED_LIMIT)
    assert used["x"] + used["y"] <= 100 + TOLERANCE
    assert used["x"] == pytest.approx(50, abs=TOLERANCE) and used["y"] == pytest.approx(50, abs=TOLERANCE)
    assert used["z"] == pytest.approx(300, abs=TOLERANCE)


def test_nested_pool_limit_caps_vms_below_it_with_idle_pcpus():
    # A limit is a hard cap, busy host or not: x and y together may not exceed one pCPU,
    # even though z leaves two pCPUs idle.
    used = _mean([_busy("x", 2, pool="inner"), _busy("y", 2, pool="inner"), _busy("z", 1)], NESTED_LIMIT)
    assert used["z"] == pytest.approx(100, abs=TOLERANCE)
    assert used["x"] + used["y"] <= 100 + TOLERANCE


def test_vm_limit_holds_with_idle_pcpus():
    # the VM-level counterpart of the test above, which does hold
    used = _mean([_busy("capped", 4, limit="2600MHz")])
    assert used["capped"] == pytest.approx(100, abs=TOLERANCE)
