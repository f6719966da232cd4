"""Priors, joints, precedence and lifetimes against brute-force references written separately."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.analytics.cooccurrence import cooccurrence
from vmtwin.analytics.events import Event
from vmtwin.analytics.lifetimes import LogNormal, fit_lognormal

T1 = 10_000.0

event_st = st.builds(
    lambda r, s, d, openend: Event(r, "cpu", "above", s, None if openend else s + d),
    st.sampled_from("abcd"), st.floats(0, T1 - 1).map(lambda x: round(x, 1)), st.floats(0, 3000), st.booleans())


def brute(events, dt, alpha, t1):
    """Per slot, per type: active if an effective span touches the slot (a loop over slots)."""
    types = sorted({e.type for e in events})
    caps = {}
    for t in types:
        life = [e.end - e.start for e in events if e.type == t and e.end is not None and e.end > e.start]
        if len(life) >= 2:
            logs = [math.log(x) for x in life]
            mu = sum(logs) / len(logs)
            sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / len(logs))
            from statistics import NormalDist
            caps[t] = math.exp(mu + sd * NormalDist().inv_cdf(alpha))
        else:
            caps[t] = dt
    n = int(math.ceil(t1 / dt))
    act = {t: [0] * n for t in types}
    for e in events:
        dur = caps[e.type] if e.end is None else min(e.end - e.start, caps[e.type])
        end = min(e.start + dur, t1)
        for s in range(n):
            lo, hi = s * dt, (s + 1) * dt
            if e.start < hi and end >= lo:  # the span [start, end] touches the slot [lo, hi)
                act[e.type][s] = 1
    prior = {t: sum(act[t]) / n for t in types}
    joint = {(a, b): sum(x * y for x, y in zip(act[a], act[b])) / n for a in types for b in types}
    return types, prior, joint


@settings(max_examples=40, deadline=None)
@given(st.lists(event_st, min_size=1, max_size=12), st.sampled_from([250.0, 900.0]), st.sampled_from([0.5, 0.9]))
def test_priors_and_joints_match_a_slot_loop(events, dt, alpha):
    co = cooccurrence(events, 0.0, T1, dt, alpha)
    types, prior, joint = brute(events, dt, alpha, T1)
    assert co.types == types
    for i, a in enumerate(types):
        assert co.prior[i] == pytest.approx(prior[a])
        for j, b in enumerate(types):
            assert co.joint[i, j] == pytest.approx(joint[(a, b)])
    c = co.conditional()
    for i in range(len(types)):
        for j in range(len(types)):
            if i != j and co.prior[i] > 0:
                assert c[i, j] == pytest.approx(co.joint[i, j] / co.prior[i])
                assert 0.0 <= c[i, j] <= 1.0 + 1e-12


def test_precedence_counts_by_hand():
    dt = 100.0
    ev = [Event("a", "m", "above", 0, 50), Event("b", "m", "above", 120, 200),   # b within dt after a's end
          Event("a", "m", "above", 1000, 1010), Event("b", "m", "above", 1500, 1600),  # too late
          Event("c", "m", "above", 2000, 2100), Event("a", "m", "above", 2000, 2100)]  # tie: both ways
    co = cooccurrence(ev, 0, 5000, dt, 0.9, alpha_mode="observed")
    idx = {t.resource: i for i, t in enumerate(co.types)}
    assert co.precedes[idx["a"], idx["b"]] == 1
    assert co.precedes[idx["b"], idx["a"]] == 0
    assert co.precedes[idx["a"], idx["c"]] == 1 and co.precedes[idx["c"], idx["a"]] == 1


def test_alpha_caps_long_occurrences():
    """A stuck alarm is cut at its type's t_alpha under "cap", not under "observed"."""
    ev = [Event("a", "m", "above", s, s + 100) for s in range(0, 9000, 1000)] + [Event("a", "m", "above", 9500, 99_000)]
    cap = cooccurrence(ev, 0, 100_000, 100.0, 0.9, "cap")
    obs = cooccurrence(ev, 0, 100_000, 100.0, 0.9, "observed")
    assert cap.prior[0] < 0.05 < obs.prior[0]


@settings(max_examples=30, deadline=None)
@given(st.floats(-2, 8), st.floats(0.05, 2), st.floats(0.05, 0.95))
def test_t_alpha_is_the_lognormal_quantile(mu, sigma, alpha):
    law = LogNormal(mu, sigma, 10)
    assert law.cdf(law.quantile(alpha)) == pytest.approx(alpha, abs=1e-9)
    # against the closed form alpha = 1/2 (1 + erf((ln t - mu) / (sigma sqrt 2)))
    t = law.quantile(alpha)
    assert 0.5 * (1 + math.erf((math.log(t) - mu) / (sigma * math.sqrt(2)))) == pytest.approx(alpha, abs=1e-9)


def test_fit_recovers_a_sample():
    rng = np.random.default_rng(3)
    x = rng.lognormal(6.0, 0.7, 20_000)
    law = fit_lognormal(x)
    assert law.mu == pytest.approx(6.0, abs=0.02) and law.sigma == pytest.approx(0.7, abs=0.02)
    assert law.quantile(0.9) == pytest.approx(np.quantile(x, 0.9), rel=0.03)
    assert fit_lognormal([5.0]) is None
