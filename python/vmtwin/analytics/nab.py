"""The threshold stage scored against NAB's labelled anomaly windows (../shared/data/nab).

For each NAB series, the band is learnt over NAB's *probationary period* (its first 15 %, the
share NAB itself leaves unscored) and events are detected on the rest. Against the labelled
windows that start after the probationary period:

- a window is **detected** when an event opens inside it (start within [window start, window end]);
- every event that opens outside all windows is a **false alarm**.

Reported per series and in total: windows, detected windows, detection rate, false alarms and
false alarms per labelled window.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vmtwin.analytics.inputs import parse_times, read_table
from vmtwin.analytics.thresholds import DEFAULT_K, detect, learn_band

#: NAB's probationary share (NAB scoring leaves the first 15 % of each file unscored).
PROBATIONARY_SHARE = 0.15


@dataclass
class NabScore:
    series: str
    windows: int
    detected: int
    false_alarms: int
    events: int

    @property
    def detection_rate(self) -> float:
        return self.detected / self.windows if self.windows else float("nan")


def load_windows(folder: Path) -> dict[str, list[tuple[float, float]]]:
    raw = json.loads((Path(folder) / "labels_windows.json").read_text(encoding="utf-8"))
    return {k: [tuple(parse_times(w, "labels_windows.json", k)) for w in v] for k, v in sorted(raw.items())}


def load_series(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    df = read_table(Path(folder) / name)
    t = parse_times(df["timestamp"], name, "timestamp")
    v = df["value"].astype(float).to_numpy()
    order = np.argsort(t, kind="stable")
    return t[order], v[order]


def score_events(starts: np.ndarray, windows: list[tuple[float, float]], since: float) -> tuple[int, int, int]:
    """(windows after ``since``, detected windows, false alarms) for event start times."""
    wins = [w for w in windows if w[0] >= since]
    inside = np.zeros(len(starts), dtype=bool)
    detected = 0
    for a, b in wins:
        hit = (starts >= a) & (starts <= b)
        detected += bool(hit.any())
        inside |= hit
    for a, b in windows:  # events in a probationary-period window are not false alarms either
        inside |= (starts >= a) & (starts <= b)
    return len(wins), detected, int((~inside).sum())


def evaluate(folder: Path, method=None, k: int = DEFAULT_K) -> list[NabScore]:
    scores = []
    for name, windows in load_windows(folder).items():
        t, v = load_series(folder, name)
        split = t[0] + PROBATIONARY_SHARE * (t[-1] - t[0])
        band = learn_band(t, v, t[0], split, method, name=name)
        events = detect(t, v, band, name, "value", k, since=split)
        starts = np.array([e.start for e in events])
        n, d, fa = score_events(starts, windows, split)
        scores.append(NabScore(name, n, d, fa, len(events)))
    return scores
