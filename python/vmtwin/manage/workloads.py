"""Task streams: the paper's three workloads and user streams read from CSV.

A stream is a list of (arrival time in seconds, operation name), sorted by time. The paper's
workloads (vATM Sec. 4.1) arrive all at once at time 0:

- ``reconfigure_memory``: 400 VM RAM reconfigurations (naive static batch 10);
- ``power_on``: 200 VM power-ons (batch 5);
- ``mixed``: 800 tasks, "equal distribution among four operations" (batch 4). The order is not
  given; the four kinds are interleaved (reconfigure, power on, create, snapshot, reconfigure, ...),
  so a naive round of 4 holds one of each.

A user stream is a CSV with a header row naming the columns ``time`` (seconds from the start,
>= 0) and ``operation`` (a built-in operation, an alias, or one the scenario defines); other
columns are ignored. Rows need not be sorted; equal times keep file order.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from vmtwin.exceptions import ScenarioError, scenario_error
from vmtwin.manage.vcenter import ALIASES, OPERATIONS, Operation


@dataclass(frozen=True)
class TaskStream:
    """Tasks in arrival order: ``times[i]`` seconds, ``ops[i]`` an operation name."""

    name: str
    times: tuple[float, ...]
    ops: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.ops)


#: The paper's workloads: (operation kinds in interleaving order, task count, naive static batch).
PAPER_WORKLOADS: dict[str, tuple[tuple[str, ...], int, int]] = {
    "reconfigure_memory": (("reconfigure_memory",), 400, 10),
    "power_on": (("power_on",), 200, 5),
    "mixed": (("reconfigure_memory", "power_on", "create", "snapshot"), 800, 4),
}


def paper_workload(name: str) -> TaskStream:
    """One of :data:`PAPER_WORKLOADS`, all tasks arriving at 0."""
    if name not in PAPER_WORKLOADS:
        raise scenario_error("workload", name, "one of " + ", ".join(PAPER_WORKLOADS))
    kinds, n, _ = PAPER_WORKLOADS[name]
    return TaskStream(name, (0.0,) * n, tuple(kinds[i % len(kinds)] for i in range(n)))


def resolve_operation(name: str, ops: Mapping[str, Operation]) -> str:
    """The canonical operation name for ``name`` (aliases, case-insensitive), or KeyError."""
    key = name.strip()
    if key in ops:
        return key
    low = key.lower()
    if low in ops:
        return low
    if low in ALIASES and ALIASES[low] in ops:
        return ALIASES[low]
    raise KeyError(name)


def read_task_csv(path: str | Path, ops: Mapping[str, Operation] | None = None) -> TaskStream:
    """Read a user task stream; every problem is reported with the file, line and value."""
    ops = OPERATIONS if ops is None else ops
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    try:
        return _read_task_csv(path, ops)
    except UnicodeDecodeError as e:
        raise scenario_error(str(path), f"byte 0x{e.object[e.start]:02x} at offset {e.start}",
                             "a UTF-8 text file") from None


def _read_task_csv(path: Path, ops: Mapping[str, Operation]) -> TaskStream:
    allowed_ops = ", ".join(sorted(ops)) + " (or an alias: " + ", ".join(sorted(ALIASES)) + ")"
    with path.open(newline="", encoding="utf-8-sig") as fh:  # Excel writes a BOM
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            raise scenario_error(str(path), "an empty file", "a header row 'time,operation' and at least one task")
        cols = [h.strip().lower() for h in header]
        missing = [c for c in ("time", "operation") if c not in cols]
        if missing:
            raise scenario_error(f"{path}:1", ",".join(header), "a header naming the columns time and operation")
        it, io = cols.index("time"), cols.index("operation")
        rows: list[tuple[float, int, str]] = []
        problems: list[str] = []
        for line, rec in enumerate(reader, start=2):
            if not rec or not any(f.strip() for f in rec):
                continue
            if len(rec) <= max(it, io):
                problems.append(str(scenario_error(f"{path}:{line}", ",".join(rec), "a time and an operation")))
                continue
            raw_t, raw_op = rec[it].strip(), rec[io].strip()
            try:
                t = float(raw_t)
            except ValueError:
                t = math.nan
            if not (math.isfinite(t) and t >= 0):
                problems.append(str(scenario_error(f"{path}:{line}: time", raw_t, "seconds from the start, >= 0")))
                continue
            try:
                op = resolve_operation(raw_op, ops)
            except KeyError:
                problems.append(str(scenario_error(f"{path}:{line}: operation", raw_op, allowed_ops)))
                continue
            rows.append((t, len(rows), op))
        if problems:
            raise ScenarioError("\n".join(problems[:20] + ([f"... and {len(problems) - 20} more"]
                                                          if len(problems) > 20 else [])))
        if not rows:
            raise scenario_error(str(path), "no tasks", "at least one row of time,operation after the header")
    rows.sort()
    return TaskStream(path.stem, tuple(r[0] for r in rows), tuple(r[2] for r in rows))


__all__ = ["PAPER_WORKLOADS", "TaskStream", "paper_workload", "read_task_csv", "resolve_operation"]
