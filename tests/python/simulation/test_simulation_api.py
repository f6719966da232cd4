"""The Python API: stepping a simulation, reconfiguring VMs between steps, progress callbacks."""

from __future__ import annotations

import math

import pytest

import vmtwin
from vmtwin import VM, CpuBound, Host, Idle, Scenario, Simulation

CORE_MHZ = 2000


def _busy(name: str, vcpus: int = 1, **cpu) -> VM:
    extra = {"cpu": cpu} if cpu else {}
    return VM(name=name, vcpus=vcpus, workload=CpuBound(duty=1.0, burst="10ms"), **extra)


def _two_on_one_pcpu(duration: str = "40s", **a_cpu) -> Simulation:
    """Two CPU-bound 1-vCPU VMs, a and b, sharing one 2000 MHz pCPU."""
    host = Host(cores_per_llc=1, core_mhz=f"{CORE_MHZ}MHz")
    return Simulation(Scenario(duration=duration, host=host, vms=[_busy("a", **a_cpu), _busy("b")]))


class Phases:
    """Used CPU seconds of each VM between successive ``step`` calls."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.last = self._used()

    def _used(self) -> dict[str, float]:
        return {name: self.sim.counters(name)["used_ns"] / 1e9 for name in self.sim.vm_names}

    def step(self, t: str) -> dict[str, float]:
        self.sim.run_until(t)
        now = self._used()
        delta = {k: now[k] - self.last[k] for k in now}
        self.last = now
        return delta


def _column_at(sim: Simulation, vm: str, column: str, time_s: float) -> float:
    t = sim.tables()["vm"].to_pandas()
    row = t[(t["vm"] == vm) & (t["time_s"] == time_s)]
    assert len(row) == 1, (vm, time_s)
    return float(row[column].iloc[0])


def test_shares_limit_and_reservation_between_steps():
    sim = _two_on_one_pcpu()
    phases = Phases(sim)

    # 1. equal shares: half each
    p = phases.step("10s")
    assert p["a"] == pytest.approx(5.0, abs=0.2) and p["b"] == pytest.approx(5.0, abs=0.2)

    # 2. shares 3:1 -> 75/25
    sim.set_vm_cpu("a", shares=3000)
    sim.set_vm_cpu("b", shares=1000)
    p = phases.step("20s")
    assert p["a"] == pytest.approx(7.5, abs=0.2) and p["b"] == pytest.approx(2.5, abs=0.2)

    # 3. a limited to 500 MHz (a quarter of the pCPU) despite its shares: a's used time = the limit
    sim.set_vm_cpu("a", limit="500MHz")
    p = phases.step("30s")
    assert p["a"] == pytest.approx(10.0 * 500 / CORE_MHZ, abs=0.1)
    assert p["b"] == pytest.approx(7.5, abs=0.15)  # b takes what a may not use

    # 4. limit removed, b reserves 1500 MHz: the reservation beats a's 3:1 shares
    sim.set_vm_cpu("a", limit="unlimited")
    sim.set_vm_cpu("b", reservation="1500MHz")
    p = phases.step("40s")
    assert p["b"] == pytest.approx(7.5, abs=0.2) and p["a"] == pytest.approx(2.5, abs=0.2)

    # the sampled tables record the settings in force in each phase
    assert _column_at(sim, "a", "shares", 10.0) == 1000 and _column_at(sim, "a", "shares", 20.0) == 3000
    assert math.isnan(_column_at(sim, "a", "limit_mhz", 20.0))
    assert _column_at(sim, "a", "limit_mhz", 30.0) == 500
    assert math.isnan(_column_at(sim, "a", "limit_mhz", 40.0))
    assert _column_at(sim, "b", "reservation_mhz", 30.0) == 0
    assert _column_at(sim, "b", "reservation_mhz", 40.0) == 1500
    assert _column_at(sim, "a", "%USED", 30.0) == pytest.approx(25.0, abs=3.0)
    assert _column_at(sim, "a", "entitlement_mhz", 30.0) == 500  # the limit caps the entitlement


def test_symbolic_shares_scale_with_vcpus():
    sim = Simulation(Scenario(duration="4s", host=Host(cores_per_llc=4), vms=[_busy("a", vcpus=2)]))
    sim.set_vm_cpu("a", shares="high")
    sim.run()
    assert _column_at(sim, "a", "shares", 2.0) == 2 * 2000


def test_reservation_that_does_not_fit_leaves_the_vm_unchanged():
    # a reserves 1500 of the 2000 MHz: a gets 75 %, b 25 %
    sim = _two_on_one_pcpu(reservation="1500MHz")
    phases = Phases(sim)
    before = phases.step("10s")
    assert before["a"] == pytest.approx(7.5, abs=0.2) and before["b"] == pytest.approx(2.5, abs=0.2)

    # b asks for 1000 MHz (only 500 are unreserved), together with new shares and a limit
    with pytest.raises(vmtwin.AdmissionControlError, match="shortfall 500 MHz") as info:
        sim.set_vm_cpu("b", shares=9000, reservation="1000MHz", limit="1200MHz")
    assert isinstance(info.value, vmtwin.VmtwinError)

    # nothing of the refused call took effect: b runs on exactly as before
    after = phases.step("20s")
    assert after["a"] == pytest.approx(7.5, abs=0.2) and after["b"] == pytest.approx(2.5, abs=0.2)
    assert _column_at(sim, "b", "shares", 20.0) == 1000
    assert _column_at(sim, "b", "reservation_mhz", 20.0) == 0
    assert math.isnan(_column_at(sim, "b", "limit_mhz", 20.0))

    # a reservation that fits is accepted
    sim.set_vm_cpu("b", reservation="500MHz")
    phases.step("22s")
    assert _column_at(sim, "b", "reservation_mhz", 22.0) == 500


def test_bad_reconfiguration_is_a_scenario_error():
    sim = _two_on_one_pcpu()
    with pytest.raises(vmtwin.ScenarioError, match="one of a, b"):
        sim.set_vm_cpu("nobody", shares=1000)
    with pytest.raises(vmtwin.ScenarioError, match=r"a\.cpu\.shares"):
        sim.set_vm_cpu("a", shares=0)
    with pytest.raises(vmtwin.ScenarioError, match=r"a\.cpu\.limit"):
        sim.set_vm_cpu("a", limit="fast")
    with pytest.raises(vmtwin.ScenarioError, match="at most vcpus x core clock"):
        sim.set_vm_cpu("a", reservation="2500MHz")  # more than one 2000 MHz vCPU can use
    # shares: the same range as in scenario files (vSphere's custom maximum is 1,000,000)
    with pytest.raises(vmtwin.ScenarioError, match="an integer from 1 to 1000000"):
        sim.set_vm_cpu("a", shares=10**7)
    with pytest.raises(vmtwin.ScenarioError, match=r"a\.cpu\.shares"):
        sim.set_vm_cpu("a", shares=2**70)  # not an OverflowError from the bindings
    with pytest.raises(vmtwin.ScenarioError, match=r"a\.cpu\.shares"):
        sim.set_vm_cpu("a", shares=True)
    sim.set_vm_cpu("a", shares="HIGH")  # spelled as a scenario file may spell it
    sim.set_vm_cpu("b", shares=1_000_000)
    sim.run_until("2s")
    assert _column_at(sim, "a", "shares", 2.0) == 2000 and _column_at(sim, "b", "shares", 2.0) == 1_000_000


def test_run_until_the_past_raises_and_keeps_the_clock():
    sim = _two_on_one_pcpu()
    sim.run_until("6s")
    events = sim.event_count
    with pytest.raises(vmtwin.SimulationError):
        sim.run_until("4s")
    assert sim.now == 6.0 and sim.event_count == events
    sim.run_until(8.0)  # still usable; seconds as a float work too
    assert sim.now == 8.0 and sim.event_count > events
    with pytest.raises(vmtwin.ScenarioError):
        sim.run_until(-1)


def test_progress_is_called_once_per_sample():
    sim = _two_on_one_pcpu(duration="20s")
    seen: list[float] = []
    sim.run_until("9s", seen.append)
    assert seen == [2.0, 4.0, 6.0, 8.0]
    sim.run_until("13s", seen.append)
    assert seen == [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    sim.run(seen.append)
    assert seen == [2.0 * k for k in range(1, 11)]
    assert all(a < b for a, b in zip(seen, seen[1:]))
    assert len(seen) == len(sim.tables()["host"])


class Boom(Exception):
    pass


def test_exception_in_progress_propagates():
    sim = _two_on_one_pcpu(duration="20s")
    raised = Boom("stop here")
    calls: list[float] = []

    def progress(now: float) -> None:
        calls.append(now)
        if now >= 4.0:
            raise raised

    with pytest.raises(Boom) as info:
        sim.run_until("10s", progress)
    assert info.value is raised
    assert calls == [2.0, 4.0]  # not called again after it raised
    assert 4.0 <= sim.now < 10.0  # the run stopped
    sim.run()  # and can go on
    assert sim.now == 20.0
    times = sim.tables()["host"].to_pandas()["time_s"].tolist()
    assert times == [2.0 * k for k in range(1, 11)]


def test_idle_vm_uses_nothing():
    host = Host(cores_per_llc=2)
    sim = Simulation(Scenario(duration="10s", host=host, vms=[VM(name="idle", workload=Idle()), _busy("busy")]))
    sim.run()
    idle, busy = sim.counters("idle"), sim.counters("busy")
    assert idle["used_ns"] == 0 and idle["idle_ns"] == 10 * 10**9
    assert busy["used_ns"] == pytest.approx(10e9, rel=1e-3)  # a pCPU of its own
