"""The entitlement figure's scale: MHz as percent of one core, on a hyperthreaded host too."""

from __future__ import annotations

import pytest

from vmtwin import VM, CpuBound, Host, Scenario, Simulation
from vmtwin.report.figures import core_mhz, vm_entitlement_figure


def _run(threads: int):
    sc = Scenario(name="ht-scale", seed=1, duration="4s",
                  host=Host(cores_per_llc=2, threads_per_core=threads, core_mhz="2600MHz"),
                  vms=[VM(name="busy", vcpus=1, workload=CpuBound(duty=1.0))])
    sim = Simulation(sc)
    sim.run()
    t = sim.tables()
    return sc, t["vm"].to_pandas(), t["host"].to_pandas()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_busy_vcpus_entitlement_is_one_core_whatever_the_threads(threads):
    sc, vm, host = _run(threads)
    scenario = sc.model_dump(mode="json")
    assert core_mhz(host, scenario) == 2600.0
    fig = vm_entitlement_figure(vm, host, scenario=scenario)
    entitlement = next(tr for tr in fig.data if "entitle" in tr.name.lower())
    # alone on the host, a one-vCPU busy VM is entitled to one whole pCPU's worth: 100% of a core
    assert float(entitlement.x[0]) == pytest.approx(100.0, rel=1e-6)


def test_without_the_scenario_a_hyperthreaded_host_reads_half_the_clock():
    """The documented fallback: capacity counts cores, pCPUs count threads."""
    _, _, host = _run(2)
    assert core_mhz(host) == pytest.approx(1300.0)
