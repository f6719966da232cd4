"""Sweep files: a base scenario, a grid over YAML paths, replications; and the points they make.

A grid path names a field of the base scenario as it is written in YAML (``host.cores_per_llc``,
``vms[2].cpu.shares``, ``vms[0].workload.duty``); indices count the ``vms`` entries as written
(an entry with ``count: 3`` is one entry). Paths are resolved against the scenario with every
default filled in, so a field left out of the file (``host.threads_per_core``) can be swept too.
Each grid point is the base scenario with those fields replaced, validated by the scenario
loader itself, so a bad value gets the scenario's own message (the field, the value, what is
allowed), prefixed with the point.

Seeds: every run's seed is derived from the sweep seed, the point's coordinates and the
replication number (BLAKE2b of their canonical JSON, 63 bits), so it depends on nothing else:
not on the number of workers, nor on the order runs finish, nor on the other points of the grid.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from vmtwin.exceptions import ScenarioError, VmtwinError, scenario_error
from vmtwin.scenario import Scenario, load_scenario, parse_scenario

__all__ = ["Sweep", "Task", "load_sweep", "build_sweep", "derive_seed", "parse_path", "get_path", "set_path"]

#: Keys a sweep file may hold.
SWEEP_KEYS = ("scenario", "grid", "replications", "seed", "duration", "metrics")

#: Most runs one sweep may hold (points x replications): a typo in a grid should not start a
#: week of work.
MAX_RUNS = 100_000

_PATH_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\[\d+\]")


@dataclass(frozen=True)
class Task:
    """One run: a point of the grid and a replication of it."""

    index: int  # position in the sweep's fixed order (point-major, then replication)
    point: int
    replication: int
    seed: int
    coords: tuple[tuple[str, Any], ...]
    scenario: dict  # the scenario mapping with the point's values in place
    base_dir: Optional[str]
    duration: Optional[str]


@dataclass
class Sweep:
    """A validated sweep: the grid's points in a fixed order and the runs they make."""

    name: str
    base: Scenario
    base_dir: Optional[Path]
    grid: dict[str, list[Any]]
    replications: int
    seed: int
    duration: Optional[str] = None
    metrics: list[str] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return list(self.grid)

    def tasks(self) -> list[Task]:
        """Every run, point-major then replication: the order of the dataset's rows."""
        base = self.base.model_dump(mode="json")
        out = []
        for p, coords in enumerate(self.points):
            data = copy.deepcopy(base)
            for path, value in coords.items():
                set_path(data, path, value)
            for r in range(self.replications):
                out.append(Task(len(out), p, r, derive_seed(self.seed, coords, r), tuple(coords.items()), data,
                                None if self.base_dir is None else str(self.base_dir), self.duration))
        return out


def derive_seed(sweep_seed: int, coords: dict[str, Any], replication: int) -> int:
    """The run's seed: a hash of the sweep seed, the coordinates and the replication (63 bits)."""
    key = json.dumps({"seed": sweep_seed, "coords": coords, "replication": replication}, sort_keys=True)
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


def parse_path(path: str) -> list[Union[str, int]]:
    """``vms[2].cpu.shares`` -> ``['vms', 2, 'cpu', 'shares']``; a malformed path is refused."""
    if not isinstance(path, str):
        raise scenario_error("grid", path, "a YAML path such as host.cores_per_llc or vms[2].cpu.shares")
    parts: list[Union[str, int]] = []
    pos = 0
    for m in _PATH_RE.finditer(path):
        gap = path[pos:m.start()]
        if gap not in ("", ".") or (gap == "." and (not parts or m.group().startswith("["))) or \
                (gap == "" and parts and not m.group().startswith("[")):
            break
        tok = m.group()
        parts.append(int(tok[1:-1]) if tok.startswith("[") else tok)
        pos = m.end()
    if pos != len(path) or not parts or isinstance(parts[0], int):
        raise scenario_error("grid", path, "a YAML path such as host.cores_per_llc or vms[2].cpu.shares")
    return parts


def _walk(data: Any, path: str) -> tuple[Any, Union[str, int]]:
    """The container holding ``path``'s last part, and that part; a missing step is named."""
    parts = parse_path(path)
    node, done = data, ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = done or "the scenario"
        if isinstance(part, int):
            if not isinstance(node, list):
                raise ScenarioError(f"grid: {path}: no such path in the scenario ({where} is not a list)")
            if part >= len(node):
                raise ScenarioError(f"grid: {path}: no such path in the scenario ({where} has {len(node)} "
                                    f"entries, indices 0 to {len(node) - 1})")
        else:
            if not isinstance(node, dict):
                raise ScenarioError(f"grid: {path}: no such path in the scenario ({where} is not a mapping)")
            if part not in node:
                keys = ", ".join(sorted(node))
                raise ScenarioError(f"grid: {path}: no such path in the scenario ({where} has no key "
                                    f"{part!r}; it has: {keys})")
        if last:
            return node, part
        node = node[part]
        done += f"[{part}]" if isinstance(part, int) else (f".{part}" if done else part)
    raise AssertionError("unreachable")


def get_path(data: Any, path: str) -> Any:
    """The value at ``path`` in a scenario mapping (ScenarioError naming it if there is none)."""
    node, part = _walk(data, path)
    return node[part]


def set_path(data: Any, path: str, value: Any) -> None:
    """Replace the value at ``path`` (which must exist) in a scenario mapping."""
    node, part = _walk(data, path)
    node[part] = value


def _read_yaml(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise VmtwinError(f"{path}: no such sweep file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise VmtwinError(f"{path}: cannot read the sweep file: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise VmtwinError(f"{path}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise scenario_error(str(path), data, "a mapping with the keys " + ", ".join(SWEEP_KEYS))
    return data


def load_sweep(path: Union[str, Path]) -> Sweep:
    """Read and validate a sweep file; the scenario path in it is relative to the file's folder.

    Raises
    ------
    ScenarioError
        An unknown key, an empty grid, a path not in the scenario, a value the scenario refuses
        (checked for every point before anything runs), bad replications or seed.
    """
    p = Path(path)
    data = _read_yaml(p)
    unknown = sorted(set(data) - set(SWEEP_KEYS))
    if unknown:
        raise scenario_error(f"{p}: {unknown[0]}", data[unknown[0]], "the keys " + ", ".join(SWEEP_KEYS))
    if "scenario" not in data or not isinstance(data["scenario"], str):
        raise scenario_error(f"{p}: scenario", data.get("scenario"), "the path of a scenario YAML file, "
                             "relative to the sweep file")
    scenario_path = (p.parent / data["scenario"])
    base = load_scenario(scenario_path)
    try:
        return build_sweep(base, data.get("grid"), replications=data.get("replications", 1),
                           seed=data.get("seed"), duration=data.get("duration"), metrics=data.get("metrics"),
                           base_dir=scenario_path.resolve().parent, name=p.stem)
    except ScenarioError as exc:
        raise ScenarioError(f"{p}: {exc}") from None


def build_sweep(base: Scenario, grid: Any, *, replications: Any = 1, seed: Any = None, duration: Any = None,
                metrics: Any = None, base_dir: Union[str, Path, None] = None, name: str = "sweep") -> Sweep:
    """A sweep from a scenario and a grid ``{yaml path: [values]}``; every point is validated.

    Raises
    ------
    ScenarioError
        As :func:`load_sweep`.
    """
    if not isinstance(grid, dict) or not grid:
        raise scenario_error("grid", grid, "a mapping of at least one YAML path to a non-empty list of values, "
                             "e.g. {host.cores_per_llc: [4, 8]}")
    data = base.model_dump(mode="json")
    for path, values in grid.items():
        get_path(data, path)
        if parse_path(path) == ["seed"]:
            raise scenario_error("grid.seed", values, "no seed in the grid: each run's seed is derived from the "
                                 "sweep's seed; use replications for more seeds per point")
        if parse_path(path) == ["duration"] and duration is not None:
            raise scenario_error("grid.duration", values, "a grid over duration only without the sweep's own "
                                 "duration (which would override it)")
        if not isinstance(values, list) or not values:
            raise scenario_error(f"grid.{path}", values, "a non-empty list of values")
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            raise scenario_error(f"grid.{path}", values, "a list of distinct values")
    if isinstance(replications, bool) or not isinstance(replications, int) or not 1 <= replications <= 1000:
        raise scenario_error("replications", replications, "an integer from 1 to 1000")
    if seed is None:
        seed = base.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise scenario_error("seed", seed, "an integer from 0 to 2^63-1")
    if duration is not None and not isinstance(duration, str):
        raise scenario_error("duration", duration, "a duration such as '30s' (overrides the scenario's)")
    if metrics is None:
        metrics = []
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise scenario_error("metrics", metrics, "a list of metric names such as 'max(vcpu.%RDY)'")
    from vmtwin.sweep.metrics import parse_metric  # a bad metric fails here, before any run

    for m in metrics:
        parse_metric(m)
    points = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    if len(points) * replications > MAX_RUNS:
        raise scenario_error("grid", f"{len(points)} points x {replications} replications",
                             f"at most {MAX_RUNS:,} runs")
    sweep = Sweep(name=name, base=base, base_dir=Path(base_dir) if base_dir is not None else None,
                  grid={k: list(v) for k, v in grid.items()}, replications=replications, seed=seed,
                  duration=duration, metrics=list(metrics), points=points)
    _validate_points(sweep)
    return sweep


def _validate_points(sweep: Sweep) -> None:
    """Load every point's scenario once, so a value the scenario refuses stops the sweep before
    anything runs (and a duration override is checked too)."""
    from vmtwin import units

    if sweep.duration is not None:
        try:
            units.parse_duration(sweep.duration, allow_bare=False)
        except ValueError as exc:
            raise scenario_error("duration", sweep.duration, str(exc)) from None
    seen: set[str] = set()
    for task in sweep.tasks()[:: sweep.replications]:
        key = json.dumps(task.scenario, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        try:
            parse_scenario(task.scenario, base_dir=task.base_dir, name="grid point")
        except ScenarioError as exc:
            shown = ", ".join(f"{k}={v!r}" for k, v in task.coords)
            raise ScenarioError(f"grid point {task.point} ({shown}): {exc}") from None
