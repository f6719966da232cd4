"""A barrier program's throughput goes through the execution-speed model (issue 9 item 6): a phase
is its CPU time alone on a warm cache with local memory, and takes longer by the model's slowdown
under LLC sharing (guest/barrier.rs, perf/model.rs `slowdown`). The oracle is the model's formula
worked by hand for a profile with one term: CPI = cpi_core + refs/1000 x miss_ratio x stall."""

import pytest

from vmtwin import VM, CpuBound, Host, Scenario, Simulation
from vmtwin.scenario import Barrier
from vmtwin.scenario.perf import PerfLayer, PerfMachine, VmPerf

PHASE_S = 0.005
LLC = 8 << 20
REFS_PER_KINSTR = 10.0
STALL = 100.0  # perf.llc_miss_stall_cycles default


def _profile(refs=REFS_PER_KINSTR):
    return VmPerf(virtualized=False, working_set="8MB", unit="phase",
                  user=PerfLayer(instructions_per_unit=1e6, cpi_core=1.0, walks_per_kinstr=0,
                                 llc_refs_per_kinstr=refs, llc_base_miss_ratio=0),
                  kernel=PerfLayer(instructions_per_unit=0, cpi_core=1.0))


def _barriers_per_s(host, perf, busy_vcpus=0):
    vms = [VM(name="prog", vcpus=2, workload=Barrier(phase="5ms", phase_distribution="fixed", wait="halt"),
              **({"perf": perf} if perf else {}))]
    if busy_vcpus:
        vms.append(VM(name="busy", vcpus=busy_vcpus, workload=CpuBound(duty=1.0)))
    sim = Simulation(Scenario(name="barrier-perf", seed=1, duration="12s", sample_interval="1s", host=host,
                              perf=PerfMachine(llc="8MB"), vms=vms))
    sim.run()
    b = sim.tables()["barrier"].to_pandas()
    return b[b.time_s > 2]["barriers_per_s"].mean()  # the slowdown is read from the interval before


def _cpi(corunners):
    share = LLC / (1 + corunners)
    miss = max(0.0, 1 - share / LLC)  # the working set is one LLC
    return 1.0 + REFS_PER_KINSTR / 1000 * miss * STALL


@pytest.mark.parametrize("busy_vcpus,corunners", [(0, 1), (2, 3)])
def test_llc_sharing_stretches_the_phases(busy_vcpus, corunners):
    host = Host(cores_per_llc=4, core_mhz="2000MHz")
    plain = _barriers_per_s(host, None, busy_vcpus)
    assert plain == pytest.approx(1 / PHASE_S, rel=1e-3)  # both threads arrive together
    # the program's own sibling thread shares its LLC even alone; the busy VM adds two more
    expected = 1 / (PHASE_S * _cpi(corunners) / _cpi(0))
    assert _barriers_per_s(host, _profile(), busy_vcpus) == pytest.approx(expected, rel=5e-3)


def test_a_busy_hyperthread_is_not_counted_twice():
    # one core, two threads: the scheduler already runs each thread at (1 + 0.25) / 2
    host = Host(cores_per_llc=1, threads_per_core=2, core_mhz="2000MHz")
    plain = _barriers_per_s(host, None)
    assert plain == pytest.approx(0.625 / PHASE_S, rel=5e-3)
    assert _barriers_per_s(host, _profile(refs=0.0)) == pytest.approx(plain, rel=1e-3)
