"""The 2D walk model against a Monte Carlo walk, and the presets' calibrated vs predicted cells."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin import reproduce
from vmtwin.exceptions import ScenarioError
from vmtwin.methodology.nested_paging import OLTP_USER, WalkParams, calibrate, references

PROB = st.floats(0, 1)


def _monte_carlo(p: WalkParams, walks: int, seed: int) -> tuple[float, float]:
    """Mean references of simulated walks: each cache lookup drawn, each reference counted."""
    rng = np.random.default_rng(seed)
    nested = native = 0
    for _ in range(walks):
        levels = 1 if rng.random() < p.guest_pwc_hit else p.guest_levels
        native += levels
        for _ in range(levels + 1):  # each guest table's gPA, then the data gPA
            if rng.random() < p.nested_tlb_hit:
                continue
            nested += 1 if rng.random() < p.ept_pwc_hit else p.host_levels
        nested += levels
    return nested / walks, native / walks


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), PROB, PROB, PROB, st.integers(0, 2**32 - 1))
def test_expected_references_match_simulated_walks(n, m, hg, hn, he, seed):
    p = WalkParams(guest_levels=n, host_levels=m, guest_pwc_hit=hg, nested_tlb_hit=hn, ept_pwc_hit=he)
    walks = 4000
    nested, native = _monte_carlo(p, walks, seed)
    worst = references(n, m)
    # a walk makes at most `worst` references: 5 standard errors of a bounded mean
    assert nested == pytest.approx(p.nested_references(), abs=5 * worst / 2 / walks ** 0.5 + 1e-9)
    assert native == pytest.approx(p.native_references(), abs=5 * n / 2 / walks ** 0.5 + 1e-9)


@given(st.integers(1, 5), st.integers(1, 5))
def test_without_caches_the_walk_is_the_worst_case(n, m):
    p = WalkParams(guest_levels=n, host_levels=m)
    assert p.nested_references() == references(n, m) == (n + 1) * (m + 1) - 1


@given(st.floats(1, 500), st.floats(0, 500), PROB, PROB, PROB)
def test_calibration_round_trip(native, ept, hg, hn, he):
    p = WalkParams(guest_levels=4, host_levels=4, guest_pwc_hit=hg, nested_tlb_hit=hn, ept_pwc_hit=he)
    if hn == 1 and ept > 0:
        with pytest.raises(ScenarioError, match="ept_cycles_per_walk"):
            calibrate(p, native, ept)
        return
    c = calibrate(p, native, ept)
    assert c.native_walk_cycles() == pytest.approx(native)
    assert c.ept_walk_cycles() == pytest.approx(ept)
    assert c.nested_walk_cycles() == pytest.approx(native + ept)


def test_larger_host_pages_make_the_ept_part_cheaper():
    four_k_host = WalkParams(guest_levels=3, host_levels=4, guest_ref_cycles=OLTP_USER.guest_ref_cycles,
                             ept_ref_cycles=OLTP_USER.ept_ref_cycles)
    assert four_k_host.ept_walk_cycles() == pytest.approx(OLTP_USER.ept_walk_cycles() * 4 / 3)


def test_bad_walk_parameters_name_the_field():
    with pytest.raises(ScenarioError, match="walk.host_levels: got 0"):
        WalkParams(host_levels=0)
    with pytest.raises(ScenarioError, match="walk.ept_pwc_hit"):
        WalkParams(ept_pwc_hit=1.5)


def test_presets_say_which_cells_calibrate_and_which_are_predicted():
    rows = reproduce.get("tier1-presets").run()
    calibration = [r for r in rows if r.series == "calibration"]
    assert calibration and all(not r.judged and r.simulated == pytest.approx(r.published) for r in calibration)
    predictions = [r for r in rows if "prediction" in r.series or r.series == "RR latency"]
    assert sum(r.judged for r in predictions) == 13
    # the RR latency model, calibrated on Ping and Table 7's inflation, predicts the other three within 1.5 us
    rr = {r.metric: r for r in rows if r.series == "RR latency" and r.judged}
    assert len(rr) == 3 and all(r.verdict == "PASS" for r in rr.values())
    # what the walk-only preset cannot carry is reported as a miss, not hidden: OLTP guest user cycles
    user = next(r for r in rows if r.metric == "Guest EMON cycles/tx user (K)")
    assert user.verdict == "FAIL" and user.simulated < user.published
