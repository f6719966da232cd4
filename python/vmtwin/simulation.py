"""Run a scenario: build the engine, step it, reconfigure VMs between steps, collect results.

>>> from vmtwin import Simulation, Scenario, Host, VM, CpuBound
>>> sc = Scenario(duration="20s", host=Host(cores_per_llc=1, core_mhz="2000MHz"),
...               vms=[VM(name="a", cpu={"shares": 3000}, workload=CpuBound(duty=1.0)),
...                    VM(name="b", cpu={"shares": 1000}, workload=CpuBound(duty=1.0))])
>>> sim = Simulation(sc)
>>> sim.run_until("10s")
>>> sim.set_vm_cpu("a", limit="500MHz")      # cap vm a from now on
>>> sim.run()
>>> round(sim.counters("a")["used_ns"] / 1e9, 1)   # 7.5 s in the first half, 2.5 s after
10.0
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Optional, Union

from vmtwin import _core
from vmtwin import units as _units
from vmtwin.exceptions import scenario_error
from vmtwin.results import Results, columns_from_engine, write_results
from vmtwin.scenario import MAX_CUSTOM_SHARES, VM_SHARES_PER_VCPU, Scenario, load_scenario, parse_scenario

__all__ = ["Simulation", "run_scenario"]

ScenarioLike = Union[Scenario, str, Path, dict]


def _as_scenario(scenario: ScenarioLike) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return parse_scenario(scenario)
    return load_scenario(scenario)


def _ns(value: Union[str, int, float], field: str) -> int:
    """A time given as a duration string ('10min') or as seconds (int or float)."""
    if isinstance(value, str):
        try:
            return _units.parse_duration(value, allow_bare=False)
        except ValueError as exc:
            raise scenario_error(field, value, str(exc)) from None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return round(value * 1e9)
    raise scenario_error(field, value, "a duration such as '10min', or seconds >= 0")


class Simulation:
    """One host simulated from a scenario.

    Parameters
    ----------
    scenario : Scenario, path, YAML text or dict
        What to simulate.
    seed : int, optional
        Overrides the scenario's seed.
    duration : str or float, optional
        Overrides the scenario's duration ('10min', or seconds).

    Raises
    ------
    ScenarioError
        The scenario is malformed.
    AdmissionControlError
        A VM powered on at time zero reserves more than its pool or the host can hold.
    """

    def __init__(self, scenario: ScenarioLike, *, seed: Optional[int] = None, duration: Union[str, float, None] = None):
        self.scenario = _as_scenario(scenario)
        spec = self.scenario.to_engine_spec()
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
                raise scenario_error("--seed", seed, "an integer from 0 to 2^64-1")
            spec["seed"] = seed
        if duration is not None:
            spec["duration_ns"] = _ns(duration, "--duration")
            if spec["duration_ns"] < spec["sample_interval_ns"]:  # the scenario's own check, for the override
                raise scenario_error("--duration", duration, "a duration of at least the sample interval, "
                                     + _units.format_duration(spec["sample_interval_ns"]))
        self._spec = spec
        self._sim = _core.Simulation(json.dumps(spec))
        self._vcpus = {vm["name"]: vm["vcpus"] for vm in spec["vms"]}
        self._wall = 0.0

    @property
    def now(self) -> float:
        """Simulated time, seconds."""
        return self._sim.now_ns / 1e9

    @property
    def duration(self) -> float:
        """The run length, seconds."""
        return self._spec["duration_ns"] / 1e9

    @property
    def event_count(self) -> int:
        """Events the engine has processed."""
        return self._sim.event_count

    @property
    def vm_names(self) -> list[str]:
        """VM names (``count`` expanded), in engine order."""
        return self._sim.vm_names()

    def run_until(self, t: Union[str, float], progress: Optional[Callable[[float], Any]] = None) -> None:
        """Advance to time ``t`` ('90s', or seconds); ``progress(now_s)`` after every sample."""
        cb = None if progress is None else (lambda ns: progress(ns / 1e9))
        start = time.perf_counter()
        self._sim.run_until(_ns(t, "t"), cb)
        self._wall += time.perf_counter() - start

    def run(self, progress: Optional[Callable[[float], Any]] = None) -> None:
        """Advance to the end of the scenario's duration."""
        self.run_until(self.duration, progress)

    def set_vm_cpu(self, vm: str, *, shares: Union[str, int, None] = None, reservation: Union[str, int, None] = None,
                   limit: Union[str, int, None] = None) -> None:
        """Change a VM's CPU shares, reservation or limit from now on.

        ``shares``: low/normal/high or an integer; ``reservation``/``limit``: '2000MHz' or MHz as
        an int; ``limit='unlimited'`` removes the limit. A larger reservation passes admission
        control or raises :class:`AdmissionControlError`, leaving the VM as it was.
        """
        if vm not in self._vcpus:
            raise scenario_error("vm", vm, "one of " + ", ".join(self._vcpus))
        kwargs: dict[str, Any] = {}
        if shares is not None:
            if isinstance(shares, str) and shares.strip().lower() in VM_SHARES_PER_VCPU:
                shares = VM_SHARES_PER_VCPU[shares.strip().lower()] * self._vcpus[vm]
            elif isinstance(shares, bool) or not isinstance(shares, int) or not 1 <= shares <= MAX_CUSTOM_SHARES:
                raise scenario_error(f"{vm}.cpu.shares", shares,
                                     f"low, normal, high or an integer from 1 to {MAX_CUSTOM_SHARES}")
            kwargs["shares"] = shares
        if reservation is not None:
            kwargs["reservation_mhz"] = self._mhz(reservation, f"{vm}.cpu.reservation")
        if limit is not None:
            kwargs["limit_mhz"] = -1 if limit in ("unlimited", -1) else self._mhz(limit, f"{vm}.cpu.limit")
        self._sim.set_vm_cpu(vm, **kwargs)

    @staticmethod
    def _mhz(value: Union[str, int], field: str) -> int:
        try:
            return _units.parse_frequency(value, allow_bare=True)
        except ValueError as exc:
            raise scenario_error(field, value, str(exc)) from None

    def power_on(self, vm: str) -> None:
        """Power a VM on now (admission control applies)."""
        self._sim.power_on(vm)

    def counters(self, vm: str) -> dict[str, int]:
        """Cumulative nanoseconds of a VM (summed over vCPUs): run, ready, mlmtd, wait, idle, used."""
        return dict(self._sim.vm_counters(vm))

    def tables(self):
        """The sampled tables so far, as ``{name: pyarrow.Table}``."""
        return columns_from_engine(self._sim.tables(), self.vm_names)

    def manifest(self) -> dict[str, Any]:
        """What ``manifest.json`` records about this run."""
        from vmtwin import __version__

        return {
            "vmtwin_version": __version__,
            "scenario_name": self.scenario.name,
            "scenario": self._spec,
            "seed": self._spec["seed"],
            "params": json.loads(self._sim.params_json()),
            "duration_s": self.duration,
            "sample_interval_s": self._spec["sample_interval_ns"] / 1e9,
            "simulated_s": self.now,
            "wall_time_s": round(self._wall, 6),
            "event_count": self.event_count,
            "sched_stats": dict(self._sim.sched_stats()),
            "log": [{"time_s": t / 1e9, "message": m} for t, m in self._sim.log()],
        }

    def write(self, out_dir: Union[str, Path]) -> Results:
        """Write the results folder (atomically) and open it."""
        path = write_results(out_dir, self.tables(), self.manifest())
        return Results(path)


def run_scenario(scenario: ScenarioLike, out_dir: Union[str, Path, None] = None, *, seed: Optional[int] = None,
                 duration: Union[str, float, None] = None,
                 progress: Optional[Callable[[float], Any]] = None) -> Union[Results, Simulation]:
    """Run a scenario to its end; write and return its results when ``out_dir`` is given."""
    sim = Simulation(scenario, seed=seed, duration=duration)
    sim.run(progress)
    return sim.write(out_dir) if out_dir is not None else sim
