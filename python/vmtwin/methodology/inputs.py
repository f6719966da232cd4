"""Reading runs: the canonical run file (JSON), the canonical counter CSV, and perf stat output.

A **run file** is JSON with the run metadata and its counters, inline or in a file beside it::

    {"metadata": {"platform": "native", "source": "native_os", "work_unit": "transaction",
                  "work_count": 1000, "duration_s": 60, "cpus": 8},
     "counters_file": "native.perf.csv"}

``counters`` (inline) is a list of ``{"event", "mode", "value", "scaling", "status"}`` objects;
``counters_file`` (relative to the run file) is either perf stat ``-x`` output or the
**canonical CSV**, recognised by its header ``event,mode,value[,scaling][,status]``. Events may be
canonical names or any alias of :mod:`.aliases`; in the canonical forms the mode is a column, so
a perf-style ``:u`` suffix is not needed. ``value`` empty, ``N/A`` or null is N/A.

Every error names the file (and line or field), the value and what is allowed.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Optional

from vmtwin.exceptions import scenario_error
from vmtwin.methodology import perfstat
from vmtwin.methodology.aliases import canonical_event
from vmtwin.methodology.schema import MODES, STATUSES, Counter, Run, RunMetadata

CSV_COLUMNS = ("event", "mode", "value", "scaling", "status")
_NA = {"", "n/a", "na", "null"}


def _counter(where: str, event: Any, mode: Any, value: Any, scaling: Any = None, status: Any = None) -> Counter:
    if not isinstance(event, str) or not event.strip():
        raise scenario_error(f"{where}.event", event, "an event name (canonical or a vendor alias)")
    if mode not in MODES:
        raise scenario_error(f"{where}.mode", mode, ", ".join(MODES))
    name, _ = canonical_event(event)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _NA:
            value = None
        else:
            try:
                value = float(text)
            except ValueError:
                raise scenario_error(f"{where}.value", value, "a number, or empty/N/A") from None
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
        raise scenario_error(f"{where}.value", value, "a finite number, or null/N/A")
    if isinstance(scaling, str):
        scaling = scaling.strip() or None
        try:
            scaling = None if scaling is None else float(scaling)
        except ValueError:
            raise scenario_error(f"{where}.scaling", scaling, "a number >= 1") from None
    scaling = 1.0 if scaling is None else scaling
    if not isinstance(scaling, (int, float)) or isinstance(scaling, bool) or not scaling >= 1:
        raise scenario_error(f"{where}.scaling", scaling, "a number >= 1 (time enabled / time running)")
    if isinstance(status, str) and not status.strip():
        status = None
    status = status or ("counted" if value is not None else "not available")
    if status not in STATUSES:
        raise scenario_error(f"{where}.status", status, ", ".join(STATUSES))
    if value is None and status == "counted":
        raise scenario_error(f"{where}.value", None, "a number when status is 'counted'")
    return Counter(name, mode, value if value is None else float(value), float(scaling), status, where)


def parse_canonical_csv(text: str, path: str = "<csv>") -> list[Counter]:
    """The canonical counter CSV: header ``event,mode,value[,scaling][,status]``, one counter per row."""
    reader = csv.reader(io.StringIO(text))
    header: Optional[list[str]] = None
    counters = []
    for lineno, row in enumerate(reader, start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            header = [c.strip() for c in row]
            if header[:3] != list(CSV_COLUMNS[:3]) or any(c not in CSV_COLUMNS for c in header):
                raise scenario_error(f"{path}:{lineno} (header)", ",".join(row),
                                     "event,mode,value optionally followed by scaling and/or status")
            continue
        if len(row) != len(header):
            raise scenario_error(f"{path}:{lineno}", ",".join(row), f"{len(header)} fields ({','.join(header)})")
        cells = dict(zip(header, row))
        counters.append(_counter(f"{path}:{lineno}", cells["event"].strip(), cells["mode"].strip(), cells["value"],
                                 cells.get("scaling"), cells.get("status")))
    if header is None:
        raise scenario_error(path, "an empty file", "a canonical counter CSV with a header row")
    return counters


def is_canonical_csv(text: str) -> bool:
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.replace(" ", "").startswith("event,mode,value")
    return False


def read_counters(path: str | Path, sep: Optional[str] = None) -> list[Counter]:
    """Counters from a canonical CSV or a perf stat -x file (told apart by the CSV header)."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if is_canonical_csv(text):
        return parse_canonical_csv(text, str(p))
    return perfstat.to_counters(perfstat.parse(text, path=str(p), sep=sep), origin=str(p))


def load_run(path: str | Path) -> Run:
    """A run file (JSON): metadata plus inline ``counters`` or a ``counters_file``."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise scenario_error(f"{p}:{e.lineno}", text.splitlines()[e.lineno - 1].strip() if text.strip() else "",
                             f"JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise scenario_error(str(p), type(data).__name__, "a JSON object with metadata and counters")
    allowed = {"metadata", "counters", "counters_file", "perf_separator"}
    for key in data:
        if key not in allowed:
            raise scenario_error(f"{p}: {key}", data[key], "one of the keys " + ", ".join(sorted(allowed)))
    meta = RunMetadata.from_dict(data.get("metadata"), where=f"{p}: metadata")
    if ("counters" in data) == ("counters_file" in data):
        raise scenario_error(f"{p}: counters", "both or neither", "exactly one of counters (inline) or counters_file")
    if "counters" in data:
        items = data["counters"]
        if not isinstance(items, list) or not items:
            raise scenario_error(f"{p}: counters", items, "a non-empty list of {event, mode, value} objects")
        counters = []
        for i, item in enumerate(items):
            where = f"{p}: counters[{i}]"
            if not isinstance(item, dict):
                raise scenario_error(where, item, "an object with event, mode, value")
            extra = set(item) - set(CSV_COLUMNS)
            if extra:
                raise scenario_error(f"{where}.{sorted(extra)[0]}", item[sorted(extra)[0]], ", ".join(CSV_COLUMNS))
            if "value" not in item:
                raise scenario_error(f"{where}.value", None, "a number or null (N/A); the key is required")
            counters.append(_counter(where, item.get("event"), item.get("mode"), item["value"], item.get("scaling"),
                                     item.get("status")))
    else:
        ref = data["counters_file"]
        if not isinstance(ref, str) or not ref:
            raise scenario_error(f"{p}: counters_file", ref, "a path relative to the run file")
        sep = data.get("perf_separator")
        if sep is not None and (not isinstance(sep, str) or not sep):
            raise scenario_error(f"{p}: perf_separator", sep, "the string given to perf stat -x")
        counters = read_counters(p.parent / ref, sep=sep)
    return Run.build(meta, counters)


def run_to_dict(run: Run) -> dict[str, Any]:
    """The canonical JSON form of a run (what :func:`load_run` reads)."""
    return {"metadata": run.metadata.as_dict(),
            "counters": [{"event": c.event, "mode": c.mode, "value": c.value, "scaling": c.scaling, "status": c.status}
                         for c in run.counters.values()]}


def read_latency_csv(path: str | Path) -> tuple[list[str], list[float], list[float]]:
    """Request-response latencies (Table 6 style): header ``workload,native_us,virtual_us``, one workload per row."""
    p = Path(path)
    rows = list(csv.reader(io.StringIO(p.read_text(encoding="utf-8"))))
    names, native, virtual = [], [], []
    header = None
    for lineno, row in enumerate(rows, start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            header = [c.strip() for c in row]
            if header != ["workload", "native_us", "virtual_us"]:
                raise scenario_error(f"{p}:{lineno} (header)", ",".join(row), "workload,native_us,virtual_us")
            continue
        if len(row) != 3:
            raise scenario_error(f"{p}:{lineno}", ",".join(row), "3 fields: workload,native_us,virtual_us")
        values = []
        for col, text in zip(("native_us", "virtual_us"), row[1:]):
            try:
                v = float(text)
            except ValueError:
                raise scenario_error(f"{p}:{lineno}.{col}", text, "a latency in microseconds > 0") from None
            if not (math.isfinite(v) and v > 0):
                raise scenario_error(f"{p}:{lineno}.{col}", text, "a latency in microseconds > 0")
            values.append(v)
        names.append(row[0].strip())
        native.append(values[0])
        virtual.append(values[1])
    if not names:
        raise scenario_error(str(p), "no workloads", "a header and at least one workload row")
    return names, native, virtual
