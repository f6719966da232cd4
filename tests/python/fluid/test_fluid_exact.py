"""Fluid mode gives every VM its exact hierarchical max-min allocation.

For open-loop work and idle VMs (demand exactly ``duty x vcpus x core MHz``, or 0) inside
resource pools with shares, reservations and limits, each VM's %USED over the run must equal the
allocation of ``maxmin_oracle`` (tests/python/simulation, written apart from the engine) to
within 0.01% of a pCPU (the engine rounds state times to whole nanoseconds). The event mode
meets the same allocation only within its tolerance (issue 5); this is what fluid mode is exact
against.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simulation"))
from maxmin_oracle import expected_used_pct  # noqa: E402

from vmtwin import VM, CpuBound, Host, Idle, ResourcePool, Scenario, Simulation  # noqa: E402

TOL = 0.01  # % of one pCPU


@st.composite
def scenarios(draw):
    cores = draw(st.integers(1, 16))
    core_mhz = draw(st.sampled_from([1000, 2000, 2600]))
    capacity = cores * core_mhz
    pools = []
    for p in range(draw(st.integers(0, 3))):
        parent = draw(st.sampled_from([None] + [q.name for q in pools]))
        limit = draw(st.one_of(st.none(), st.integers(core_mhz // 2, capacity)))
        pools.append(ResourcePool(name=f"p{p}", parent=parent,
                                  cpu={"shares": draw(st.integers(1, 10_000)),
                                       "limit": f"{limit}MHz" if limit else "unlimited"}))
    free = capacity
    vms = []
    for i in range(draw(st.integers(1, 12))):
        vcpus = draw(st.integers(1, min(8, cores)))
        max_mhz = vcpus * core_mhz
        limit = draw(st.one_of(st.none(), st.integers(max(1, core_mhz // 10), max_mhz)))
        pool = draw(st.sampled_from([None] + [p.name for p in pools]))
        reservation = 0 if pool else draw(st.integers(0, min(free, limit or max_mhz) // 2))
        free -= reservation
        duty = draw(st.one_of(st.just(0.0), st.floats(0.01, 1.0)))
        workload = Idle() if duty == 0.0 else CpuBound(duty=duty, arrivals="open", burst_distribution="fixed")
        vms.append(VM(name=f"vm{i}", vcpus=vcpus, pool=pool, workload=workload,
                      cpu={"shares": draw(st.integers(1, 100_000)), "reservation": f"{reservation}MHz",
                           "limit": f"{limit}MHz" if limit else "unlimited"}))
    return Scenario(name="fluid-exact", duration="60s", sample_interval="20s", fidelity="fluid",
                    host=Host(cores_per_llc=cores, core_mhz=f"{core_mhz}MHz"), resource_pools=pools, vms=vms)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_fluid_use_is_the_exact_max_min_allocation(sc):
    sim = Simulation(sc)
    sim.run()
    vm = sim.tables()["vm"].to_pandas()
    got = vm.groupby("vm")["%USED"].mean()
    want = expected_used_pct(sc)
    bad = {k: (round(got[k], 4), round(w, 4)) for k, w in want.items() if abs(got[k] - w) > TOL}
    assert not bad, bad
