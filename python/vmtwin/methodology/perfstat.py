"""Linux ``perf stat -x<sep>`` output -> canonical counters.

perf's CSV mode (``perf stat -x,``; perf-stat(1), External) prints one counter per line, fields in
this order: optional interval time stamp (``-I``); optional aggregation id (``CPU3`` with
``-A``, ``S0-D0-C1`` with ``--per-core``) followed, for socket/die/core aggregation, by the number
of CPUs aggregated; the counter value; its unit (``msec`` or empty); the event name; optional
variance (``-r``, ``3.59%``); the counter's run time (ns); the percentage of the measurement time
the counter ran; optional metric value and unit. ``#`` lines (``-o``'s "started on") and blank
lines are skipped.

The layout is found per line from the fields themselves: the value is the first field that is a
number or ``<not counted>``/``<not supported>`` and is followed by a non-numeric unit and a
non-numeric event name; whatever comes before it is the prefix (a time stamp is a number, an
aggregation id is not). Every line of a file must have the same prefix shape.

Multiplexing: perf already scales a multiplexed count by time_enabled / time_running; the
percentage field keeps the running share, so the scaling factor 100 / percentage is stored with
the counter for the method's warnings. ``<not counted>`` and ``<not supported>`` become explicit
N/A. Per-CPU rows and interval rows of one event and mode are summed into the run total (counts
in interval mode are per-interval deltas).

A line that does not fit raises an error naming the file, line number and content; nothing is
returned half-parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from vmtwin.exceptions import scenario_error
from vmtwin.methodology.aliases import canonical_event
from vmtwin.methodology.schema import Counter

NOT_AVAILABLE = {"<not counted>": "not counted", "<not supported>": "not supported"}
SEPARATORS = (",", ";", "\t", "|")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
_VARIANCE = re.compile(r"^[-+]?\d+(\.\d+)?%$")
ALLOWED = ("perf stat -x<sep> fields: [time stamp<sep>][aggregation id<sep>[CPU count<sep>]]value<sep>unit"
           "<sep>event[<sep>variance%]<sep>run time<sep>percent running[<sep>metric<sep>metric unit]")


@dataclass(frozen=True)
class PerfRecord:
    """One parsed line of perf stat output."""

    line: int
    timestamp: Optional[float]
    aggregate: Optional[str]
    aggregated_cpus: Optional[int]
    event: str
    mode: str
    raw_event: str
    value: Optional[float]
    unit: str
    status: str
    run_time_ns: Optional[float]
    percent_running: Optional[float]
    variance_percent: Optional[float]

    @property
    def scaling(self) -> float:
        """time_enabled / time_running: how much perf scaled a multiplexed count (1 = ran all the time)."""
        if self.value is None or not self.percent_running:
            return 1.0
        return max(1.0, 100.0 / self.percent_running)


def _is_number(text: str) -> bool:
    return bool(_NUMBER.match(text.strip()))


def _value_at(fields: list[str], v: int) -> bool:
    if v + 2 >= len(fields):
        return False
    value, unit, event = fields[v].strip(), fields[v + 1].strip(), fields[v + 2].strip()
    return ((_is_number(value) or value in NOT_AVAILABLE) and not _is_number(unit) and bool(event)
            and not _is_number(event) and event not in NOT_AVAILABLE)


def _layout(fields: list[str]) -> Optional[int]:
    for v in range(4):
        if _value_at(fields, v):
            prefix = fields[:v]
            if v and not _is_number(prefix[0]) and v >= 3:
                continue
            return v
    return None


def detect_separator(text: str) -> str:
    """The separator of the first data line: the candidate that gives it a perf layout."""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        for sep in SEPARATORS:
            if sep in line and _layout(line.split(sep)) is not None:
                return sep
        break
    return ","


def parse(text: str, *, path: str = "<perf stat>", sep: Optional[str] = None) -> list[PerfRecord]:
    """Parse perf stat -x output into records, one per counter line.

    >>> recs = parse("1.5,msec,task-clock,1500000,100.00,1.0,CPUs utilized\\n"
    ...              "<not supported>,,cycles:u,0,100.00,,\\n")
    >>> [(r.event, r.mode, r.value, r.status) for r in recs]
    [('task_clock_ms', 'all', 1.5, 'counted'), ('cycles', 'user', None, 'not supported')]
    """
    sep = sep or detect_separator(text)
    records: list[PerfRecord] = []
    shape: Optional[tuple[bool, bool, bool]] = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{lineno}"
        fields = line.split(sep)
        v = _layout(fields)
        if v is None:
            raise scenario_error(where, line.strip(), ALLOWED)
        prefix = [f.strip() for f in fields[:v]]
        timestamp = float(prefix.pop(0)) if prefix and _is_number(prefix[0]) else None
        aggregate = prefix.pop(0) if prefix else None
        cpus = None
        if prefix:
            if not prefix[0].isdigit():
                raise scenario_error(f"{where} (CPUs aggregated)", prefix[0], "a whole number after the aggregation id")
            cpus = int(prefix.pop(0))
        this_shape = (timestamp is not None, aggregate is not None, cpus is not None)
        if shape is None:
            shape = this_shape
        elif this_shape != shape:
            raise scenario_error(where, line.strip(), "the same fields as the file's first counter line "
                                 f"(time stamp: {shape[0]}, aggregation id: {shape[1]}, CPU count: {shape[2]})")
        raw_value, unit, raw_event = (fields[v].strip(), fields[v + 1].strip(), fields[v + 2].strip())
        rest = [f.strip() for f in fields[v + 3:]]
        variance = None
        if rest and _VARIANCE.match(rest[0]):
            variance = float(rest.pop(0)[:-1])
        run_time = pct = None
        if len(rest) >= 2:
            if not (_is_number(rest[0]) and _is_number(rest[1])):
                raise scenario_error(f"{where} (run time, percent running)", f"{rest[0]}{sep}{rest[1]}",
                                     "two numbers after the event name")
            run_time, pct = float(rest[0]), float(rest[1])
            if not 0 <= pct <= 100:
                raise scenario_error(f"{where} (percent running)", rest[1], "a percentage from 0 to 100")
        elif rest and rest[0]:
            raise scenario_error(where, line.strip(), ALLOWED)
        status = NOT_AVAILABLE.get(raw_value, "counted")
        value = None if status != "counted" else float(raw_value)
        if value is not None and pct == 0:
            status, value = "not counted", None  # ran 0% of the time: perf has nothing to scale
        event, mode = canonical_event(raw_event)
        records.append(PerfRecord(lineno, timestamp, aggregate, cpus, event, mode, raw_event, value, unit, status,
                                  run_time, pct, variance))
    if not records:
        raise scenario_error(path, "no counter lines", "perf stat -x<sep> output with at least one counter")
    return records


def to_counters(records: list[PerfRecord], origin: str = "perf stat") -> list[Counter]:
    """One Counter per record (the Run sums per-CPU and per-interval rows of the same event)."""
    return [Counter(r.event, r.mode, r.value, r.scaling, r.status, f"{origin}:{r.line} {r.raw_event}")
            for r in records]
