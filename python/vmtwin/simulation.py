"""Run a scenario: build the engine, step it, reconfigure VMs between steps, write results.

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

Results and memory
------------------
The engine's sampled rows are drained every few thousand rows while the run goes. By default
they are kept (as Arrow tables) for :meth:`Simulation.tables` and :meth:`Simulation.write`, which
suits short experiments. For long runs call :meth:`Simulation.stream_to` before running: rows
then go to Parquet row groups in a hidden temp folder as they come, so memory stays flat however
long the run, and :meth:`Simulation.write` finishes the folder and renames it into place.

Every control action (``run_until``, ``set_vm_cpu``, ``power_on``) is recorded with its
simulated time in the manifest's ``actions``; :meth:`Simulation.replay` repeats them and gives
byte-identical tables.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union

import pyarrow as pa
import pyarrow.parquet as pq

from vmtwin import _core
from vmtwin import units as _units
from vmtwin._interrupt import check_interrupt
from vmtwin.exceptions import SimulationError, scenario_error
from vmtwin.results import MANIFEST_NAME, RepeatedColumns, Results, ResultsWriter, columns_from_engine, write_results
from vmtwin.scenario.storage import with_storage_names
from vmtwin.scenario import MAX_CUSTOM_SHARES, VM_SHARES_PER_VCPU, Scenario, load_scenario, parse_scenario
from vmtwin.scenario.limits import check_duration_override

__all__ = ["Simulation", "run_scenario"]

ScenarioLike = Union[Scenario, str, Path, dict]

#: Rows (all tables) the engine gathers before they are drained to Python: bounds the engine's
#: buffers (about 200 bytes a row) whatever the run's length.
DRAIN_ROWS = 1 << 16

_U64_MAX = 2**64 - 1
_LIMIT_MAX_MHZ = 2**63 - 1  # the engine's signed limit argument
_UNLIMITED = ("unlimited", "none")


def _as_scenario(scenario: ScenarioLike) -> Scenario:
    """A scenario from a Scenario, a dict, a path, or YAML text.

    A ``str`` naming an existing file is a path; a ``str`` with a line break, a ``key: value``
    or a ``{`` is YAML text; anything else is taken as a path (and refused if there is no such
    file).
    """
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return parse_scenario(scenario)
    if isinstance(scenario, str) and ("\n" in scenario or ": " in scenario or scenario.lstrip().startswith("{")):
        try:
            is_file = Path(scenario).is_file()
        except (OSError, ValueError):  # too long for a path, a NUL byte: not a file
            is_file = False
        if not is_file:
            return parse_scenario(scenario, name="<YAML text>")
    return load_scenario(scenario)


def _ns(value: Union[str, int, float], field: str) -> int:
    """A time given as a duration string ('10min') or as seconds (int or float), in ns."""
    if isinstance(value, str):
        try:
            return _units.parse_duration(value, allow_bare=False)
        except ValueError as exc:
            raise scenario_error(field, value, str(exc)) from None
    allowed = f"a duration such as '10min', or seconds from 0 to {_U64_MAX / 1e9:.4g} (the engine's 64-bit ns clock)"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= _U64_MAX / 1e9:
        ns = round(value * 1e9)  # finite here: NaN and infinities fail the range check
        if ns <= _U64_MAX:
            return ns
    raise scenario_error(field, value, allowed)


def _seconds(ns: int) -> str:
    return f"{ns / 1e9:g} s"


class Simulation:
    """One host simulated from a scenario.

    Parameters
    ----------
    scenario : Scenario, path, YAML text or dict
        What to simulate. A ``str`` naming an existing file, or with no line break, no
        ``key: value`` and no leading ``{``, is a path; otherwise it is YAML text.
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
    KeyboardInterrupt
        Ctrl-C while the engine is built (checked between VM admissions).
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
            # the clock's range and the result-row ceiling, as for the scenario's own duration
            check_duration_override(self.scenario, spec["duration_ns"])
            if spec["duration_ns"] < spec["sample_interval_ns"]:  # the scenario's own check, for the override
                raise scenario_error("--duration", duration, "a duration of at least the sample interval, "
                                     + _units.format_duration(spec["sample_interval_ns"]))
        self._start(spec, self.scenario.name)

    def _start(self, spec: dict, name: str) -> None:
        self._spec = spec
        self._name = name
        self._sim = _core.Simulation(json.dumps(spec))
        self._vcpus = {vm["name"]: vm["vcpus"] for vm in spec["vms"]}
        self._names = pa.array(self._sim.vm_names(), type=pa.string())
        self._repeats = RepeatedColumns()  # the vm and host columns, shared by the drains
        rows_per_sample = 1 + len(spec["vms"]) + sum(self._vcpus.values())
        self._chunk_ns = max(1, DRAIN_ROWS // rows_per_sample) * spec["sample_interval_ns"]
        self._kept: dict[str, list[pa.Table]] = {}  # drained rows, when not streaming
        self._writer: Optional[ResultsWriter] = None
        self._written: Optional[Path] = None
        self._actions: list[dict[str, Any]] = []
        self._running: Optional[int] = None  # simulated ns of the last progress call while running
        self._sampled = False
        self._lost: Optional[str] = None  # why sampled rows were lost (an interrupt mid-drain)
        self._wall = 0.0

    @classmethod
    def replay(cls, source: Union[Results, str, Path, Mapping[str, Any]]) -> "Simulation":
        """Rebuild a run from its manifest and repeat its recorded actions.

        Parameters
        ----------
        source : Results, results folder, or manifest dict
            A run written by :meth:`write`.

        Returns
        -------
        Simulation
            At the time the recorded run stopped; ``write`` gives byte-identical tables.

        Raises
        ------
        ValueError
            The manifest has no engine spec or no ``actions`` (written before they were
            recorded), or an action this version does not know.
        """
        if isinstance(source, Mapping):
            manifest = source
        else:
            manifest = (source if isinstance(source, Results) else Results(source)).manifest
        spec, actions = manifest.get("scenario"), manifest.get("actions")
        if not isinstance(spec, dict) or not isinstance(actions, list):
            raise ValueError("the manifest has no engine spec ('scenario') or no 'actions': it cannot be replayed")
        sim = cls.__new__(cls)
        sim.scenario = None
        sim._start(spec, str(manifest.get("scenario_name", "replay")))
        for i, a in enumerate(actions):
            kind, args = a.get("action"), a.get("args", {})
            if kind == "run_until":
                sim._run_ns(int(args["until_ns"]), None)
            elif kind == "set_vm_cpu":
                engine = {k: (-1 if k == "limit_mhz" and v is None else v) for k, v in args.items() if k != "vm"}
                sim._act("set_vm_cpu", args, lambda: sim._sim.set_vm_cpu(args["vm"], **engine))
            elif kind == "power_on":
                sim._act("power_on", args, lambda: sim._sim.power_on(args["vm"]))
            else:
                raise ValueError(f"actions[{i}].action: got {kind!r}; allowed: run_until, set_vm_cpu, power_on")
        return sim

    @property
    def now(self) -> float:
        """Simulated time, seconds (while running, that of the latest sample)."""
        if self._running is not None:
            return self._running / 1e9
        return self._sim.now_ns / 1e9

    @property
    def duration(self) -> float:
        """The run length, seconds."""
        return self._spec["duration_ns"] / 1e9

    @property
    def event_count(self) -> int:
        """Events the engine has processed."""
        self._idle("read event_count", finished_ok=True)
        return self._sim.event_count

    @property
    def vm_names(self) -> list[str]:
        """VM names (``count`` expanded), in engine order."""
        return self._names.to_pylist()

    def _idle(self, what: str, *, finished_ok: bool = False) -> None:
        """Refuse re-entry from a progress callback (the engine is mid-run), and changes after
        the results were written or rows were lost."""
        if self._running is not None:
            raise SimulationError(f"cannot {what} from a progress callback while the simulation runs "
                                  f"(at {_seconds(self._running)}); do it after run_until returns")
        if finished_ok:
            return
        if self._written is not None:
            raise SimulationError(f"cannot {what}: the results were written to {self._written} and this "
                                  "simulation is finished; build a new one to run again")
        if self._lost is not None:
            raise SimulationError(f"cannot {what}: {self._lost}; build a new simulation")

    def run_until(self, t: Union[str, float], progress: Optional[Callable[[float], Any]] = None) -> None:
        """Advance to time ``t`` ('90s', or seconds); ``progress(now_s)`` after every sample.

        Raises
        ------
        ScenarioError
            ``t`` is not a time.
        SimulationError
            ``t`` is before the clock or beyond the scenario's duration; called from a progress
            callback, or after :meth:`write`.
        KeyboardInterrupt
            Ctrl-C (honoured within about 0.1 s of engine time); the run stops at a sample.
        """
        self._idle("run_until")
        t_ns = _ns(t, "t")
        now, end = self._sim.now_ns, self._spec["duration_ns"]
        if t_ns > end:
            raise SimulationError(f"cannot run to {_seconds(t_ns)}: beyond the scenario's duration, {_seconds(end)} "
                                  "(give a longer duration to run further: Simulation(..., duration=...))")
        if t_ns < now:
            raise SimulationError(f"cannot run back to {_seconds(t_ns)}: the clock is at {_seconds(now)}")
        self._run_ns(t_ns, progress)

    def _run_ns(self, t_ns: int, progress: Optional[Callable[[float], Any]]) -> None:
        """Run to ``t_ns`` in slices of about :data:`DRAIN_ROWS` sampled rows, draining each."""
        start_ns, start = self._sim.now_ns, time.perf_counter()

        def report(ns: int) -> None:
            self._running = ns
            check_interrupt()  # a Ctrl-C the command saw and library code swallowed stops the run here
            if progress is not None:
                progress(ns / 1e9)

        try:
            while True:
                step = min(t_ns, self._sim.now_ns + self._chunk_ns)
                self._running = self._sim.now_ns
                self._sim.run_until(step, report)
                self._running = None
                self._drain()
                if step >= t_ns:
                    break
        finally:
            self._running = None
            self._wall += time.perf_counter() - start
            reached = self._sim.now_ns
            action = {"until_ns": t_ns} if reached == t_ns else {"until_ns": reached, "stopped_early": True}
            if reached > start_ns or reached == t_ns:
                self._record("run_until", action, at_ns=start_ns)

    def run(self, progress: Optional[Callable[[float], Any]] = None) -> None:
        """Advance to the end of the scenario's duration."""
        self.run_until(self.duration, progress)

    def set_vm_cpu(self, vm: str, *, shares: Union[str, int, None] = None, reservation: Union[str, int, None] = None,
                   limit: Union[str, int, None] = None) -> None:
        """Change a VM's CPU shares, reservation or limit from now on.

        ``shares``: low/normal/high or an integer; ``reservation``/``limit``: '2000MHz' or MHz as
        an int; ``limit='unlimited'`` (any case) or ``-1`` removes the limit. A larger reservation
        passes admission control or raises :class:`AdmissionControlError`, leaving the VM as it
        was.
        """
        self._idle("set_vm_cpu")
        if vm not in self._vcpus:
            raise scenario_error("vm", vm, "one of " + ", ".join(list(self._vcpus)[:20])
                                 + (", ..." if len(self._vcpus) > 20 else ""))
        kwargs: dict[str, Any] = {}
        if shares is not None:
            if isinstance(shares, str) and shares.strip().lower() in VM_SHARES_PER_VCPU:
                shares = VM_SHARES_PER_VCPU[shares.strip().lower()] * self._vcpus[vm]
            elif isinstance(shares, bool) or not isinstance(shares, int) or not 1 <= shares <= MAX_CUSTOM_SHARES:
                raise scenario_error(f"{vm}.cpu.shares", shares,
                                     f"low, normal, high or an integer from 1 to {MAX_CUSTOM_SHARES}")
            kwargs["shares"] = shares
        if reservation is not None:
            kwargs["reservation_mhz"] = self._mhz(reservation, f"{vm}.cpu.reservation", _U64_MAX)
        if limit is not None:
            unlimited = limit == -1 or (isinstance(limit, str) and limit.strip().lower() in _UNLIMITED)
            kwargs["limit_mhz"] = -1 if unlimited else self._mhz(limit, f"{vm}.cpu.limit", _LIMIT_MAX_MHZ)
        recorded = {"vm": vm, **{k: (None if k == "limit_mhz" and v == -1 else v) for k, v in kwargs.items()}}
        self._act("set_vm_cpu", recorded, lambda: self._sim.set_vm_cpu(vm, **kwargs))

    @staticmethod
    def _mhz(value: Union[str, int], field: str, most: int) -> int:
        try:
            mhz = _units.parse_frequency(value, allow_bare=True)
        except ValueError as exc:
            raise scenario_error(field, value, str(exc)) from None
        if mhz > most:
            raise scenario_error(field, value, f"at most {most} MHz")
        return mhz

    def power_on(self, vm: str) -> None:
        """Power a VM on now (admission control applies)."""
        self._idle("power_on")
        self._act("power_on", {"vm": vm}, lambda: self._sim.power_on(vm))

    def _act(self, action: str, args: dict[str, Any], apply: Callable[[], None]) -> None:
        """Apply a control action; record it when the engine accepted it (a refused action
        changes nothing, so a replay need not repeat it)."""
        at = self._sim.now_ns
        apply()
        self._record(action, args, at_ns=at)

    def _record(self, action: str, args: dict[str, Any], *, at_ns: int) -> None:
        self._actions.append({"time_ns": at_ns, "time_s": at_ns / 1e9, "action": action, "args": args})

    def counters(self, vm: str) -> dict[str, int]:
        """Cumulative nanoseconds of a VM (summed over vCPUs): run, ready, mlmtd, wait, idle, used."""
        self._idle("read counters")
        return dict(self._sim.vm_counters(vm))

    def _drain(self) -> None:
        """Move the engine's sampled rows to the writer (streaming) or to the kept tables."""
        try:
            tables = columns_from_engine(self._sim.drain_tables(), self._names, self._spec["host"]["name"], self._repeats)
            tables = with_storage_names(tables, self._spec)
            for name, table in tables.items():
                self._sampled = self._sampled or table.num_rows > 0
                if self._writer is not None:
                    self._writer.append(name, table)
                else:
                    self._kept.setdefault(name, []).append(table)
        except BaseException as exc:
            self._lost = f"sampled rows were lost when {type(exc).__name__} stopped their transfer"
            raise

    def stream_to(self, out_dir: Union[str, Path], *, force: bool = False) -> None:
        """Stream results to ``out_dir`` from now on (rows sampled so far go first).

        The folder is refused now, before the run, if it exists (unless ``force``) or cannot be
        written; rows go to ``.<name>.tmp-<pid>`` beside it and :meth:`write` renames that into
        place when the run is done. Memory then stays flat however long the run.

        Raises
        ------
        OutputError
            ``out_dir`` exists and ``force`` is false, is not a results folder, or cannot be
            written (the message names ``out_dir``).
        SimulationError
            Already streaming, or called from a progress callback.
        """
        self._idle("stream_to")
        if self._writer is not None:
            raise SimulationError(f"already streaming to {self._writer.path}")
        writer = ResultsWriter(out_dir, force=force)
        for name, pieces in self._kept.items():
            for piece in pieces:
                writer.append(name, piece)
        self._kept = {}
        self._writer = writer

    def tables(self) -> dict[str, pa.Table]:
        """The sampled tables so far, as ``{name: pyarrow.Table}``.

        Raises
        ------
        SimulationError
            Streaming to a folder that is not written yet (the rows are on disk, in row groups
            of an unfinished file: read them after :meth:`write`).
        """
        self._idle("read tables", finished_ok=True)
        if self._written is not None:
            res = Results(self._written)
            return {name: pq.read_table(res.table_path(name)) for name in res.tables}
        if self._writer is not None:
            raise SimulationError(f"results stream to {self._writer.path}: call write(), then read them "
                                  "with vmtwin.Results or tables()")
        self._drain()
        return {name: pa.concat_tables(pieces).combine_chunks() for name, pieces in self._kept.items()}

    def manifest(self) -> dict[str, Any]:
        """What ``manifest.json`` records about this run (``tables`` is added by the writer)."""
        from vmtwin import __version__

        self._idle("build the manifest", finished_ok=True)
        return {
            "vmtwin_version": __version__,
            "scenario_name": self._name,
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
            "actions": list(self._actions),
        }

    def write(self, out_dir: Union[str, Path, None] = None, *, force: bool = False) -> Results:
        """Write the results folder (atomically) and open it.

        Parameters
        ----------
        out_dir : path, optional
            The folder; when streaming (:meth:`stream_to`), omit it or give the same folder.
        force : bool
            Replace an existing results folder at ``out_dir`` (when not streaming; a stream's
            ``force`` was given to :meth:`stream_to`).

        Raises
        ------
        SimulationError
            Nothing has run yet (no sample taken), already written, or ``out_dir`` differs from
            the folder being streamed to.
        OutputError
            ``out_dir`` exists (without ``force``) or cannot be written; it names ``out_dir``.
        """
        self._idle("write")
        self._drain()
        if not self._sampled:
            first = _seconds(self._spec["sample_interval_ns"])
            raise SimulationError(f"nothing to write: no sample taken yet (the first is at {first}); "
                                  "call run() or run_until() first")
        if self._writer is not None:
            if out_dir is not None and Path(out_dir).absolute() != self._writer.path:
                raise SimulationError(f"this simulation streams to {self._writer.path}; write() finishes that "
                                      f"folder, not {Path(out_dir).absolute()}")
            path = self._writer.close(self.manifest())
        else:
            if out_dir is None:
                raise SimulationError("write() needs a folder (or call stream_to(folder) before running)")
            tables = {name: pa.concat_tables(pieces) for name, pieces in self._kept.items()}
            path = write_results(out_dir, tables, self.manifest(), force=force)
            self._kept = {}
        self._written = path
        return Results(path)


def run_scenario(scenario: ScenarioLike, out_dir: Union[str, Path, None] = None, *, seed: Optional[int] = None,
                 duration: Union[str, float, None] = None, progress: Optional[Callable[[float], Any]] = None,
                 force: bool = False) -> Union[Results, Simulation]:
    """Run a scenario to its end; with ``out_dir``, stream its results there and return them.

    ``force`` replaces an existing results folder at ``out_dir``.
    """
    sim = Simulation(scenario, seed=seed, duration=duration)
    if out_dir is None:
        sim.run(progress)
        return sim
    sim.stream_to(out_dir, force=force)
    sim.run(progress)
    return sim.write()
