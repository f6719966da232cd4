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


# --- streaming, determinism across steps, replay (issue 6) ----------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import pyarrow.parquet as pq  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vmtwin import results as results_mod  # noqa: E402
from vmtwin import simulation as simulation_mod  # noqa: E402
from vmtwin.exceptions import OutputError  # noqa: E402

STEPPED = """
name: stepped
seed: 11
duration: 60s
sample_interval: 1s
host: {cores_per_llc: 2, core_mhz: 2000MHz}
vms:
  - {name: a, vcpus: 2, workload: {type: cpu_bound, duty: 0.9, burst: 10ms, burst_distribution: exponential}}
  - {name: b, workload: {type: cpu_bound, duty: 1.0}, cpu: {limit: 700MHz}}
  - {name: c, workload: {type: cpu_bound, duty: 0.6, burst: 5ms, burst_distribution: exponential}}
  - {name: late, workload: {type: cpu_bound, duty: 1.0}, power_on: 50s}
"""


@pytest.fixture
def small_groups(monkeypatch):
    """Row groups of 50 rows and drains every ~40 rows, so a short run crosses many of both."""
    monkeypatch.setattr(results_mod, "ROW_GROUP_ROWS", 50)
    monkeypatch.setattr(simulation_mod, "DRAIN_ROWS", 40)


def _parquet(path):
    return {p.name: p.read_bytes() for p in sorted(path.glob("*.parquet"))}


def _steps(sim: Simulation, rng_seed: int) -> None:
    """Run to the end in random steps (some of them zero-length)."""
    import random

    rng = random.Random(rng_seed)
    while sim.now < sim.duration:
        sim.run_until(min(sim.duration, round(sim.now + rng.choice([0, 0.3, 1, 2.5, 7, 13]), 3)))


@pytest.mark.parametrize("seed", [1, 2])
def test_tables_do_not_depend_on_step_sizes_or_streaming(tmp_path, small_groups, seed):
    whole = Simulation(STEPPED)
    whole.run()
    a = whole.write(tmp_path / "whole")

    stepped = Simulation(STEPPED)
    stepped.stream_to(tmp_path / "stepped")
    _steps(stepped, seed)
    b = stepped.write()
    assert _parquet(a.path) == _parquet(b.path)
    assert pq.ParquetFile(b.path / "vcpu.parquet").metadata.num_row_groups == 5  # 250 rows in 50s
    assert a.manifest["tables"] == b.manifest["tables"] == {"host": 60, "vm": 190, "vcpu": 250, "pcpu": 120}


def test_streaming_folder_appears_only_when_written(tmp_path):
    sim = Simulation(STEPPED)
    sim.stream_to(tmp_path / "out")
    sim.run_until("30s")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".out.tmp-{os.getpid()}"]
    with pytest.raises(vmtwin.SimulationError, match="call write()"):
        sim.tables()
    sim.run()
    res = sim.write(tmp_path / "out")  # the same folder may be named again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert res.manifest["tables"]["host"] == 60 and len(sim.tables()["host"]) == 60
    with pytest.raises(vmtwin.SimulationError, match="finished"):
        sim.run_until("60s")


def test_drained_columns_are_read_only_buffers_that_outlive_the_drain():
    """``drain_tables`` hands each column's memory to Python without a copy: a read-only buffer of
    the column's little-endian values, kept alive by the arrays made from it."""
    import gc

    import numpy as np

    sim = Simulation(STEPPED)
    sim._sim.run_until(10 * 10**9, lambda ns: True)
    raw = sim._sim.drain_tables()
    dtype, data = raw["vcpu"]["run_ns"]
    view = memoryview(data)
    assert dtype == "u64" and view.readonly and view.nbytes == len(data) == 8 * 40  # 4 vCPUs on x 10 samples
    with pytest.raises(TypeError):
        view[0] = 1
    run = np.frombuffer(data, dtype="<u8")
    times = np.frombuffer(raw["vcpu"]["time_s"][1], dtype="<f8")
    del raw, data, view
    gc.collect()
    sim._sim.run_until(20 * 10**9, lambda ns: True)  # the engine's next rows go elsewhere
    assert sorted(set(times.tolist())) == [float(s) for s in range(1, 11)]
    assert run.max() <= 10**9 and run.sum() > 0
    assert len(sim._sim.drain_tables()["vcpu"]["run_ns"][1]) == 8 * 40  # only the new rows


def test_stream_to_refuses_an_existing_results_folder_before_the_run(tmp_path):
    first = Simulation(STEPPED)
    first.run()
    first.write(tmp_path / "out")
    again = Simulation(STEPPED, seed=5)
    with pytest.raises(OutputError, match="exists already; allowed: a new folder, or force=True"):
        again.stream_to(tmp_path / "out")
    with pytest.raises(OutputError, match="exists already"):
        again.run() or again.write(tmp_path / "out")
    again.stream_to(tmp_path / "out", force=True)
    again.run()
    assert again.write().manifest["seed"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_stepped_run_replays_from_its_manifest(tmp_path, small_groups):
    sim = Simulation(STEPPED)
    sim.stream_to(tmp_path / "run")
    sim.run_until("5s")
    sim.set_vm_cpu("a", shares="high", limit="Unlimited")
    sim.set_vm_cpu("b", limit="unlimited", reservation="300MHz")
    sim.run_until(12.5)
    sim.power_on("late")
    with pytest.raises(vmtwin.AdmissionControlError):
        sim.set_vm_cpu("a", reservation="3800MHz")  # refused: not recorded, changes nothing
    sim.set_vm_cpu("c", limit=900)
    sim.run_until("12.5s")  # a zero-length step is an action too
    sim.run_until("41s")
    sim.set_vm_cpu("b", limit="600MHz", shares=500)
    sim.run()
    original = sim.write()
    actions = original.manifest["actions"]
    assert [a["action"] for a in actions] == ["run_until", "set_vm_cpu", "set_vm_cpu", "run_until", "power_on",
                                              "set_vm_cpu", "run_until", "run_until", "set_vm_cpu", "run_until"]
    assert actions[2] == {"time_ns": 5 * 10**9, "time_s": 5.0, "action": "set_vm_cpu",
                          "args": {"vm": "b", "reservation_mhz": 300, "limit_mhz": None}}
    assert actions[4]["time_s"] == 12.5 and actions[-1]["args"] == {"until_ns": 60 * 10**9}

    replayed = Simulation.replay(original).write(tmp_path / "replayed")
    assert _parquet(replayed.path) == _parquet(original.path)
    assert replayed.manifest["actions"] == actions
    # the recorded changes matter: without them the tables differ
    plain = Simulation(STEPPED)
    plain.run()
    assert _parquet(plain.write(tmp_path / "plain").path)["vm.parquet"] != _parquet(original.path)["vm.parquet"]


def test_replay_refuses_a_manifest_without_actions(tmp_path):
    with pytest.raises(ValueError, match="cannot be replayed"):
        Simulation.replay({"scenario": {}, "seed": 1})


# --- misuse of the Python API gets a clear VmtwinError (issue 6) ---------------------------


def test_write_before_run_is_refused(tmp_path):
    sim = _two_on_one_pcpu()
    with pytest.raises(vmtwin.SimulationError, match=r"nothing to write: no sample taken yet \(the first is at 2 s\)"):
        sim.write(tmp_path / "out")
    sim.run_until("1s")
    with pytest.raises(vmtwin.SimulationError, match="nothing to write"):
        sim.write(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_run_until_beyond_the_duration_is_refused_in_seconds():
    sim = _two_on_one_pcpu()
    with pytest.raises(vmtwin.SimulationError) as info:
        sim.run_until("1min")
    assert str(info.value).startswith("cannot run to 60 s: beyond the scenario's duration, 40 s")
    assert sim.now == 0 and sim.event_count == 0
    sim.run()
    assert sim.now == 40.0


@pytest.mark.parametrize("t", [float("inf"), float("nan"), 1e30, 2**70, -1, "1e999999h", True])
def test_huge_or_infinite_times_are_scenario_errors(t):
    sim = _two_on_one_pcpu()
    with pytest.raises(vmtwin.ScenarioError, match="^t: got"):
        sim.run_until(t)


@pytest.mark.parametrize("limit", [float("inf"), 1e30, 2**70, 2**63, "1e40MHz", -5])
def test_huge_or_infinite_limits_are_scenario_errors(limit):
    sim = _two_on_one_pcpu()
    with pytest.raises(vmtwin.ScenarioError, match=r"^a\.cpu\.limit: got"):
        sim.set_vm_cpu("a", limit=limit)


def test_the_raw_bindings_refuse_out_of_range_integers_clearly():
    sim = _two_on_one_pcpu()
    raw = sim._sim
    with pytest.raises(vmtwin.ScenarioError, match="t_ns: got 1180591620717411303424"):
        raw.run_until(2**70)
    with pytest.raises(vmtwin.ScenarioError, match=r"t_ns: got -1"):
        raw.run_until(-1)
    with pytest.raises(vmtwin.ScenarioError, match=r"a\.cpu\.limit: got 18446744073709551615"):
        raw.set_vm_cpu("a", limit_mhz=2**64 - 1)
    with pytest.raises(vmtwin.ScenarioError, match=r"a\.cpu\.reservation: got inf"):
        raw.set_vm_cpu("a", reservation_mhz=float("inf"))


def test_unlimited_in_any_case():
    sim = _two_on_one_pcpu(limit="500MHz")
    sim.run_until("10s")
    sim.set_vm_cpu("a", limit="Unlimited")
    sim.run_until("20s")
    sim.set_vm_cpu("a", limit="500MHz")
    sim.set_vm_cpu("a", limit="UNLIMITED")
    sim.run()
    assert _column_at(sim, "a", "limit_mhz", 10.0) == 500
    assert math.isnan(_column_at(sim, "a", "limit_mhz", 20.0))  # NULL in Parquet, NaN in pandas
    assert math.isnan(_column_at(sim, "a", "limit_mhz", 40.0))


def test_simulation_accepts_yaml_text_and_paths(tmp_path):
    from_text = Simulation(STEPPED)
    assert from_text.scenario.name == "stepped"
    path = tmp_path / "s.yaml"
    path.write_text(STEPPED)
    assert Simulation(path).scenario.name == "stepped" == Simulation(str(path)).scenario.name
    with pytest.raises(vmtwin.ScenarioError, match="no-such.yaml"):
        Simulation(str(tmp_path / "no-such.yaml"))
    with pytest.raises(vmtwin.ScenarioError, match="odd:name.yaml"):  # a path, though it has a colon
        Simulation(str(tmp_path / "odd:name.yaml"))
    one_line = "{name: flow, duration: 4s, host: {cores_per_llc: 1}, vms: [{name: a, workload: {type: idle}}]}"
    assert Simulation(one_line).scenario.name == "flow"
    with pytest.raises(vmtwin.ScenarioError, match="duration"):
        Simulation(STEPPED.replace("duration: 60s", "duration: soon"))


def test_progress_callback_cannot_step_or_reconfigure():
    sim = _two_on_one_pcpu(duration="20s")
    seen: list[BaseException] = []
    nows: list[float] = []

    def meddle(now: float) -> None:
        nows.append(sim.now)  # reading the clock is fine
        for attempt in (lambda: sim.run_until("20s"), lambda: sim.set_vm_cpu("a", shares=5000),
                        lambda: sim.power_on("a"), lambda: sim.counters("a"), lambda: sim._sim.run_until(10**10),
                        lambda: sim._sim.set_vm_cpu("a", shares=2)):
            try:
                attempt()
            except BaseException as exc:  # noqa: BLE001 - what is raised is the point
                seen.append(exc)

    sim.run_until("6s", meddle)
    assert nows == [2.0, 4.0, 6.0]
    assert len(seen) == 18
    assert all(type(e) is vmtwin.SimulationError for e in seen), {type(e) for e in seen}
    assert "progress callback" in str(seen[0]) and "running" in str(seen[4])
    assert sim.now == 6.0
    sim.run()  # nothing was changed by the refused calls
    assert _column_at(sim, "a", "shares", 20.0) == 1000


def test_a_simulation_can_be_used_from_another_thread():
    main = _two_on_one_pcpu(duration="10s")
    main.run()
    other = _two_on_one_pcpu(duration="10s")
    errors: list[BaseException] = []

    def work():
        try:
            other.run()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert errors == []
    assert other.tables()["vcpu"].equals(main.tables()["vcpu"])


def test_an_engine_panic_is_a_simulation_error_not_a_panic_exception():
    sim = _two_on_one_pcpu()
    with pytest.raises(vmtwin.SimulationError, match="internal engine error .* on purpose"):
        sim._sim._panic_for_test()
    with pytest.raises(vmtwin.SimulationError, match="cannot be used any more"):
        sim.run()


def test_ctrl_c_stops_a_run_within_a_second():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    host = Host(cores_per_llc=8, sockets=2)
    vms = [VM(name=f"v{i}", workload=CpuBound(duty=0.5, burst="1ms", burst_distribution="exponential"))
           for i in range(64)]
    sim = Simulation(Scenario(duration="24h", host=host, vms=vms))
    # from another process, as a terminal's Ctrl-C is (the engine holds the GIL while it runs)
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.5; kill -INT {os.getpid()}"])
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    late = time.perf_counter() - start - 0.5
    killer.wait()
    assert late < 1.0, f"Ctrl-C took {late:.2f} s"
    assert 0 < sim.now < 3600  # stopped early, at a sample


SHORT = STEPPED.replace("duration: 60s", "duration: 20s").replace("power_on: 50s", "power_on: 15s")

_ACTION = st.one_of(
    st.tuples(st.just("run"), st.sampled_from([0, 0.5, 1, 2.25, 4])),
    st.tuples(st.just("shares"), st.sampled_from("abc"), st.sampled_from(["low", "high", 1, 5000, 10**6])),
    st.tuples(st.just("limit"), st.sampled_from("abc"), st.sampled_from(["unlimited", "300MHz", 900, 4000, 0])),
    st.tuples(st.just("reservation"), st.sampled_from("abc"), st.sampled_from([0, "500MHz", 1500, 3900])),
    st.tuples(st.just("power_on"), st.sampled_from(["late", "a"])),
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=st.lists(_ACTION, max_size=10))
def test_random_stepped_runs_replay_byte_identically(tmp_path_factory, actions):
    """Any sequence of steps and reconfigurations, refused ones included, replays to the same bytes."""
    tmp = tmp_path_factory.mktemp("replay")
    sim = Simulation(SHORT)
    for kind, *args in actions:
        try:
            if kind == "run":
                sim.run_until(min(sim.duration, sim.now + args[0]))
            elif kind == "power_on":
                sim.power_on(args[0])
            else:
                sim.set_vm_cpu(args[0], **{kind: args[1]})
        except vmtwin.VmtwinError:
            pass  # refused (admission control, a limit below the reservation, already on): changes nothing
    sim.run()
    original = sim.write(tmp / "original")
    replayed = Simulation.replay(original.manifest).write(tmp / "replayed")
    assert _parquet(replayed.path) == _parquet(original.path)
    assert replayed.manifest["actions"] == original.manifest["actions"]
