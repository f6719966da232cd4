"""Dynamic thresholds and the anomaly events they open.

A transparent stand-in for vC Ops' normalcy ranges (AECE ref. [6] is proprietary; extraction
2C-1). For each metric a band [low, high] is learnt over a training period, per *season slot*
(``season``: ``"hour_of_day"``, 24 slots, default; ``"hour_of_week"``, 168; ``"none"``, 1), from
the training values that fall in the slot:

- :class:`QuantileBands` (default): the ``low_q`` and ``high_q`` empirical quantiles (2.5 % and
  97.5 %, the extraction's suggestion).
- :class:`RobustBands`: median +- ``k`` * 1.4826 * MAD (1.4826 makes the MAD a standard deviation
  for normal data; k = 4 by default), less moved by the outliers a training period holds.

Hour of day is the default because a few training weeks give hour-of-week slots only a dozen
values per week: their 97.5 % quantile is then nearly their maximum, and any anomaly in the
training weeks widens the band to swallow itself (seen on the synthetic data). A slot with fewer than ``min_samples`` training values uses the band of all training values. Each
band is widened by ``margin`` times the metric's overall training inter-quartile range on both
sides (0 by default), so a flat metric does not alarm on rounding noise.

**Events.** A point above ``high`` is *above*, below ``low`` is *below*. An event opens at the
first point of a run of at least ``k`` consecutive points on the same side (default 2) and
closes at the first point back in band (its time is the event's end); a run still out of band
at the end of the data is an open event. Missing values (NaN) are skipped: they neither count
toward ``k`` nor close an event. Steps may be irregular: ``k`` counts samples, not time. The
event's magnitude is its largest excursion beyond the band, in band widths.

Season slots are taken in UTC unless ``utc_offset_h`` is given (the local time of the data's
daily cycle, e.g. -5 for New York winter time).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from vmtwin.analytics.events import Event

SEASONS = {"hour_of_week": 168, "hour_of_day": 24, "none": 1}

#: Default run length that opens an event (samples).
DEFAULT_K = 2


def season_slot(times_s: np.ndarray, season: str, utc_offset_h: float = 0.0) -> np.ndarray:
    """Slot index of each time: hour of week (Monday 00:00 = 0), hour of day, or 0."""
    if season not in SEASONS:
        raise ValueError(f"season: got {season!r}; allowed: {', '.join(SEASONS)}")
    local = np.asarray(times_s, dtype=float) + utc_offset_h * 3600.0
    hours = np.floor(local / 3600.0).astype(np.int64)
    if season == "hour_of_day":
        return hours % 24
    if season == "hour_of_week":
        return (hours + 72) % 168  # 1970-01-01 was a Thursday: +3 days makes Monday slot 0
    return np.zeros_like(hours)


@dataclass(frozen=True)
class QuantileBands:
    low_q: float = 0.025
    high_q: float = 0.975
    season: str = "hour_of_day"
    min_samples: int = 8
    margin: float = 0.0
    utc_offset_h: float = 0.0

    def _band(self, x: np.ndarray) -> tuple[float, float]:
        lo, hi = np.quantile(x, [self.low_q, self.high_q])
        return float(lo), float(hi)


@dataclass(frozen=True)
class RobustBands:
    k: float = 4.0
    season: str = "hour_of_day"
    min_samples: int = 8
    margin: float = 0.0
    utc_offset_h: float = 0.0

    def _band(self, x: np.ndarray) -> tuple[float, float]:
        med = float(np.median(x))
        mad = 1.4826 * float(np.median(np.abs(x - med)))
        return med - self.k * mad, med + self.k * mad


@dataclass
class Band:
    """A learnt band: per-slot low and high, and the season it is indexed by."""

    low: np.ndarray
    high: np.ndarray
    season: str
    utc_offset_h: float

    def at(self, times_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = season_slot(times_s, self.season, self.utc_offset_h)
        return self.low[s], self.high[s]


def learn_band(times_s: np.ndarray, values: np.ndarray, t0: float, t1: float, method=None,
               name: str = "metric") -> Band:
    """Learn a band from the finite values whose time is in [t0, t1)."""
    method = QuantileBands() if method is None else method
    times_s = np.asarray(times_s, dtype=float)
    values = np.asarray(values, dtype=float)
    m = (times_s >= t0) & (times_s < t1) & np.isfinite(values)
    if not m.any():
        raise ValueError(f"{name}: the training period [{_iso(t0)}, {_iso(t1)}) holds no values; "
                         "allowed: a training period that overlaps the data")
    tv, vv = times_s[m], values[m]
    n = SEASONS[method.season] if method.season in SEASONS else None
    if n is None:
        raise ValueError(f"season: got {method.season!r}; allowed: {', '.join(SEASONS)}")
    slots = season_slot(tv, method.season, method.utc_offset_h)
    g_lo, g_hi = method._band(vv)
    low, high = np.full(n, g_lo), np.full(n, g_hi)
    order = np.argsort(slots, kind="stable")
    bounds = np.searchsorted(slots[order], np.arange(n + 1))
    for s in range(n):
        x = vv[order[bounds[s]:bounds[s + 1]]]
        if x.size >= method.min_samples:
            low[s], high[s] = method._band(x)
    q25, q75 = np.quantile(vv, [0.25, 0.75])
    pad = method.margin * float(q75 - q25)
    return Band(low - pad, high + pad, method.season, method.utc_offset_h)


def detect(times_s: np.ndarray, values: np.ndarray, band: Band, resource: str, attribute: str,
           k: int = DEFAULT_K, since: Optional[float] = None) -> list[Event]:
    """Events of one metric: runs of >= k consecutive out-of-band points (from ``since`` on)."""
    if k < 1:
        raise ValueError(f"k: got {k!r}; allowed: an integer >= 1")
    t = np.asarray(times_s, dtype=float)
    v = np.asarray(values, dtype=float)
    keep = np.isfinite(v) & np.isfinite(t)
    if since is not None:
        keep &= t >= since
    t, v = t[keep], v[keep]
    if t.size == 0:
        return []
    lo, hi = band.at(t)
    width = np.maximum(hi - lo, 1e-12)
    side = np.where(v > hi, 1, np.where(v < lo, -1, 0))
    excess = np.where(side > 0, (v - hi) / width, np.where(side < 0, (lo - v) / width, 0.0))
    events = []
    change = np.flatnonzero(np.diff(side)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [side.size]])
    for a, b in zip(starts, ends):
        if side[a] == 0 or b - a < k:
            continue
        end = float(t[b]) if b < t.size else None
        events.append(Event(resource, attribute, "above" if side[a] > 0 else "below", float(t[a]), end,
                            float(excess[a:b].max())))
    return events


def _iso(t: float) -> str:
    if not math.isfinite(t):
        return str(t)
    from datetime import datetime, timezone

    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def events_from_metrics(frame, t0: float, t1: float, method=None, k: int = DEFAULT_K) -> list[Event]:
    """Events of every (resource, metric) series of a long frame (``time_s, resource, metric, value``).

    Bands are learnt over [t0, t1); events are detected over the whole series (training period
    included: the engine learns from those). Series are visited in (resource, metric) order.
    """
    events: list[Event] = []
    for (r, m), g in frame.groupby(["resource", "metric"], sort=True):
        g = g.sort_values("time_s", kind="stable")
        t, v = g["time_s"].to_numpy(float), g["value"].to_numpy(float)
        band = learn_band(t, v, t0, t1, method, name=f"{r}:{m}")
        events += detect(t, v, band, str(r), str(m), k)
    events.sort(key=lambda e: (e.start, e.resource, e.attribute, e.symptom))
    return events
