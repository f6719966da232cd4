"""Anomaly events: the (resource, attribute, symptom) triple with a start and an end.

This is the input of the correlation engine (AECE, Marvasti et al., VMware Technical Journal
2013, Sec. 1): an abnormality is identified by its *event type*, the triple {Resource ID,
Attribute ID, Symptom ID}, and each occurrence of it has a start and an end, hence a lifetime.
Symptoms are ``above`` and ``below`` (a dynamic threshold crossed upward or downward); an event
list may use other symptom names, they are kept as given.

Times are seconds since the Unix epoch, UTC (floats). ``end`` is ``None`` for an event still
open at the end of the data (an *active* alarm).

An event list on disk is a CSV or Parquet table with the columns ``resource``, ``attribute``,
``symptom``, ``start``, ``end`` (and optionally ``magnitude``); times are ISO 8601 strings (a
time zone suffix is honoured, naive times are UTC) or epoch seconds. An empty ``end`` is an open
event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from vmtwin.exceptions import scenario_error

#: The two symptoms the dynamic-threshold stage produces.
SYMPTOMS = ("above", "below")

#: Columns of an event list file.
EVENT_COLUMNS = ("resource", "attribute", "symptom", "start", "end")


@dataclass(frozen=True, order=True)
class EventType:
    """The identity of an anomaly: which resource, which metric, which way."""

    resource: str
    attribute: str
    symptom: str

    @property
    def label(self) -> str:
        """``resource:attribute:symptom``, the name used in tables and JSON."""
        return f"{self.resource}:{self.attribute}:{self.symptom}"


@dataclass(frozen=True)
class Event:
    """One occurrence of an anomaly.

    ``magnitude`` is how far outside its normal band the metric went, in band widths (the
    threshold stage fills it; directly fed events may leave it NaN).
    """

    resource: str
    attribute: str
    symptom: str
    start: float
    end: Optional[float] = None
    magnitude: float = math.nan

    @property
    def type(self) -> EventType:
        return EventType(self.resource, self.attribute, self.symptom)

    @property
    def lifetime(self) -> Optional[float]:
        """Seconds from start to end, ``None`` while open."""
        return None if self.end is None else self.end - self.start


def validate_events(events: Iterable[Event], source: str = "events") -> list[Event]:
    """Check every event (non-empty names, finite start, end not before start); return them sorted.

    Sorting is by (start, type), so the same events in any order give the same list.
    """
    out = []
    for i, e in enumerate(events):
        for name in ("resource", "attribute", "symptom"):
            v = getattr(e, name)
            if not isinstance(v, str) or not v:
                raise scenario_error(f"{source}[{i}].{name}", v, "a non-empty string")
        if ":" in e.resource:
            raise scenario_error(f"{source}[{i}].resource", e.resource, "a name without ':' (event names are "
                                 "resource:attribute:symptom)")
        if not math.isfinite(e.start):
            raise scenario_error(f"{source}[{i}].start", e.start, "a finite time")
        if e.end is not None and not (math.isfinite(e.end) and e.end >= e.start):
            raise scenario_error(f"{source}[{i}].end", e.end, f"empty (open) or a time >= start ({e.start})")
        out.append(e)
    out.sort(key=lambda e: (e.start, e.resource, e.attribute, e.symptom, -1.0 if e.end is None else e.end))
    return out


def _times(values, path: str, column: str, allow_empty: bool) -> np.ndarray:
    """Column of ISO strings or epoch numbers to float epoch seconds (NaN for empty)."""
    import pandas as pd

    s = pd.Series(values)
    if pd.api.types.is_numeric_dtype(s):
        return s.astype(float).to_numpy()
    out = np.full(len(s), np.nan)
    for i, v in enumerate(s):
        if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip()):
            if not allow_empty:
                raise scenario_error(f"{path}: row {i + 2}, column {column}", v, "a time")
            continue
        try:
            out[i] = float(v)
            continue
        except (TypeError, ValueError):
            pass
        try:
            ts = pd.Timestamp(v)
        except (TypeError, ValueError):
            raise scenario_error(f"{path}: row {i + 2}, column {column}", v,
                                 "an ISO 8601 time (e.g. 2024-01-31T12:00:00Z) or epoch seconds") from None
        if ts is pd.NaT:
            raise scenario_error(f"{path}: row {i + 2}, column {column}", v, "a time")
        if ts.tzinfo is None:
            ts = ts.tz_localize("UTC")
        out[i] = ts.timestamp()
    return out


def read_events(path: str | Path) -> list[Event]:
    """Read an event list (CSV or Parquet) with the columns of :data:`EVENT_COLUMNS`.

    Raises a :class:`~vmtwin.exceptions.ScenarioError` naming the file, row and column for a
    missing column or an unreadable time.
    """
    from vmtwin.analytics.inputs import read_table

    path = Path(path)
    df = read_table(path, header_rows=1)
    missing = [c for c in EVENT_COLUMNS if c not in df.columns]
    if missing:
        raise scenario_error(f"{path}: columns", list(df.columns), f"an event list with columns {', '.join(EVENT_COLUMNS)} "
                             f"(missing: {', '.join(missing)})")
    starts = _times(df["start"], str(path), "start", allow_empty=False)
    ends = _times(df["end"], str(path), "end", allow_empty=True)
    mags = df["magnitude"].astype(float).to_numpy() if "magnitude" in df.columns else np.full(len(df), np.nan)
    events = []
    for i, (r, a, s) in enumerate(zip(df["resource"], df["attribute"], df["symptom"])):
        for col, v in (("resource", r), ("attribute", a), ("symptom", s)):
            if not isinstance(v, str) or not v.strip():
                raise scenario_error(f"{path}: row {i + 2}, column {col}", v, "a non-empty name")
        end = None if math.isnan(ends[i]) else float(ends[i])
        events.append(Event(r.strip(), a.strip(), s.strip(), float(starts[i]), end, float(mags[i])))
    return validate_events(events, source=str(path))


def events_to_frame(events: Iterable[Event]):
    """The events as a pandas frame with the columns of an event list file (times in epoch s)."""
    import pandas as pd

    rows = [(e.resource, e.attribute, e.symptom, e.start, e.end, e.magnitude) for e in events]
    return pd.DataFrame(rows, columns=[*EVENT_COLUMNS, "magnitude"])
