"""Dynamic thresholds and event detection against loop oracles; NAB scoring."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.analytics.thresholds import (Band, QuantileBands, RobustBands, detect, events_from_metrics, learn_band,
                                         season_slot)

REPO = Path(__file__).resolve().parents[3]
NAB = REPO.parent / "shared" / "data" / "nab"
MONDAY = 1_704_067_200.0  # 2024-01-01 00:00 UTC


def test_season_slots():
    assert season_slot(np.array([MONDAY]), "hour_of_week")[0] == 0
    assert season_slot(np.array([MONDAY + 3600 * 25]), "hour_of_week")[0] == 25
    assert season_slot(np.array([MONDAY + 3600 * 25]), "hour_of_day")[0] == 1
    assert season_slot(np.array([MONDAY]), "hour_of_day", utc_offset_h=-5)[0] == 19


def test_bands_match_pandas_groupby_quantiles():
    rng = np.random.default_rng(0)
    t = MONDAY + np.arange(0, 14 * 86400, 300.0)
    v = 10 + 5 * np.sin(t / 86400 * 2 * np.pi) + rng.normal(0, 1, t.size)
    v[::17] = np.nan
    band = learn_band(t, v, MONDAY, MONDAY + 7 * 86400, QuantileBands())
    df = pd.DataFrame({"h": ((t - MONDAY) // 3600 % 24).astype(int), "v": v})[t < MONDAY + 7 * 86400].dropna()
    ref = df.groupby("h")["v"].quantile([0.025, 0.975]).unstack()
    assert np.allclose(band.low, ref[0.025].to_numpy()) and np.allclose(band.high, ref[0.975].to_numpy())
    rb = learn_band(t, v, MONDAY, MONDAY + 7 * 86400, RobustBands(k=4))
    med = df.groupby("h")["v"].median()
    mad = df.groupby("h")["v"].apply(lambda x: np.median(np.abs(x - x.median())))
    assert np.allclose(rb.high, (med + 4 * 1.4826 * mad).to_numpy())


def test_empty_training_period_is_a_clear_error():
    t = MONDAY + np.arange(10) * 300.0
    with pytest.raises(ValueError, match="host1:cpu: the training period .* holds no values"):
        learn_band(t, np.ones(10), MONDAY - 1000, MONDAY - 10, name="host1:cpu")


def detect_oracle(t, v, lo, hi, k):
    """A point-by-point state machine (separate from the run-length code)."""
    out, run, side = [], [], 0
    pts = [(a, b) for a, b in zip(t, v) if not math.isnan(b)]
    for a, b in pts + [(None, None)]:
        s = 0 if b is None else (1 if b > hi else -1 if b < lo else 0)
        if a is not None and s != 0 and s == side:
            run.append(a)
            continue
        if side != 0 and len(run) >= k:
            out.append((run[0], a, "above" if side > 0 else "below"))
        side, run = s, ([a] if s != 0 else [])
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.floats(-3, 3), st.just(math.nan)), min_size=1, max_size=60), st.integers(1, 4))
def test_detection_matches_a_state_machine(values, k):
    t = MONDAY + np.arange(len(values)) * 300.0
    band = Band(np.full(1, -1.0), np.full(1, 1.0), "none", 0.0)
    got = [(e.start, e.end, e.symptom) for e in detect(t, np.array(values), band, "r", "m", k)]
    assert got == detect_oracle(t, values, -1.0, 1.0, k)


def test_events_from_metrics_finds_an_injected_shift():
    rng = np.random.default_rng(1)
    t = MONDAY + np.arange(0, 14 * 86400, 300.0)
    frames = []
    for r in ("a", "b"):
        v = 50 + rng.normal(0, 1, t.size)
        if r == "a":
            v[(t >= MONDAY + 10 * 86400) & (t < MONDAY + 10 * 86400 + 3600)] += 20
        frames.append(pd.DataFrame({"time_s": t, "resource": r, "metric": "cpu", "value": v}))
    ev = events_from_metrics(pd.concat(frames), MONDAY, MONDAY + 7 * 86400, QuantileBands(low_q=0.001, high_q=0.999), k=3)
    big = [e for e in ev if e.magnitude > 1]
    assert [(e.resource, e.start, e.end) for e in big] == [("a", MONDAY + 10 * 86400, MONDAY + 10 * 86400 + 3600)]


@pytest.mark.skipif(not NAB.is_dir(), reason="NAB data not present")
def test_nab_scoring_matches_a_direct_count():
    from vmtwin.analytics.nab import PROBATIONARY_SHARE, evaluate, load_series, load_windows

    name = "realKnownCause/machine_temperature_system_failure.csv"
    windows = load_windows(NAB)
    assert sum(len(w) for w in windows.values()) == 33 and len(windows) == 14
    score = next(s for s in evaluate(NAB, k=3) if s.series == name)
    t, v = load_series(NAB, name)
    split = t[0] + PROBATIONARY_SHARE * (t[-1] - t[0])
    band = learn_band(t, v, t[0], split)
    starts = [e.start for e in detect(t, v, band, "m", "v", 3, since=split)]
    wins = [w for w in windows[name] if w[0] >= split]
    assert score.windows == len(wins) == 3  # of its 4 windows, one lies in the probationary period
    assert score.detected == sum(any(a <= s <= b for s in starts) for a, b in wins)
    assert score.false_alarms == sum(not any(a <= s <= b for a, b in windows[name]) for s in starts)
