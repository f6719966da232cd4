"""vATM's control law on noiseless unimodal throughput curves with a known optimum.

A hill is the Universal Scalability Law, X(B) = lam*B / (1 + s(B-1) + k*B(B-1)), whose optimum
B* = sqrt((1-s)/k) is known in closed form. Rounds are back to back: a round of B tasks takes
B / X(B) seconds, and the controller sees the overall throughput (tasks finished over time since
the start, tasks/min) and the round's own. Hills are drawn in the paper's regime: peak throughputs
of 100-300 tasks/min (Table 1's implied 67-256) and optima of 20-150 tasks; arctan is not scale-free,
so the regime matters (docs/manage.md, "Convergence").
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.manage.control import VatmConfig, VatmController, normalised_gradient

LAST = 20  # rounds averaged to judge where the controller settled


class Hill:
    def __init__(self, b_star: float, peak_tpm: float, serial: float) -> None:
        self.kappa = (1.0 - serial) / b_star**2
        self.serial = serial
        self.b_star = b_star
        self.lam = 1.0
        self.lam = peak_tpm / 60.0 / self.rate(b_star)

    def rate(self, b: float) -> float:
        """Tasks per second at batch b."""
        return self.lam * b / (1.0 + self.serial * (b - 1) + self.kappa * b * (b - 1))


def climb(hills, config: VatmConfig, rounds: int) -> list[int]:
    """Batch sizes over ``rounds`` rounds; ``hills`` is a list of (first round, hill)."""
    ctrl = VatmController(config)
    done, elapsed, trace = 0, 0.0, []
    hill = hills[0][1]
    for k in range(rounds):
        for start, h in hills:
            if k == start:
                hill = h
        b = ctrl.t_tar
        trace.append(b)
        x = hill.rate(b)
        done, elapsed = done + b, elapsed + b / x
        ctrl.finish_round(b, 60.0 * done / elapsed, 60.0 * x)
    return trace


hills = st.builds(Hill, b_star=st.floats(20, 150), peak_tpm=st.floats(100, 300), serial=st.floats(0, 0.1))
t_mins = st.integers(1, 10)


def test_rounds_one_and_two_are_t_min_then_twice_it():
    trace = climb([(0, Hill(60, 200, 0.02))], VatmConfig(t_min=10), 3)
    assert trace[:2] == [10, 20]  # Fig. 4(b): "10 tasks in the first round, and 20 tasks in the second"


def test_paper_law_throughput_within_10pct_of_the_best_on_almost_every_hill():
    """On the overall throughput (the paper's signal) the batch orbits the optimum slowly (next
    tests) but the throughput of its rounds stays near the top: within 10% of the maximum over the
    last 20 of 150 rounds on at least 97% of 300 random hills (measured: 1198 of 1200), never
    below 85% over the last 100 rounds (measured worst: 88%)."""
    rng = np.random.default_rng(2013)
    within, n = 0, 0
    for _ in range(150):
        hill = Hill(rng.uniform(20, 150), rng.uniform(100, 300), rng.uniform(0, 0.1))
        best = hill.rate(hill.b_star)
        for rule in ("paper", "patent"):
            trace = climb([(0, hill)], VatmConfig(t_min=int(rng.integers(1, 11)), rule=rule), 150)
            within += np.mean([hill.rate(b) for b in trace[-LAST:]]) >= 0.9 * best
            n += 1
            assert np.mean([hill.rate(b) for b in trace[-100:]]) >= 0.85 * best, (hill.b_star, trace[-LAST:])
    assert within >= 0.97 * n, (within, n)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(hill=hills, t_min=t_mins, rule=st.sampled_from(["paper", "patent"]))
def test_ewma_signal_converges_to_within_10pct_of_the_optimal_batch(hill, t_min, rule):
    trace = climb([(0, hill)], VatmConfig(t_min=t_min, rule=rule, signal="ewma"), 150)
    assert abs(np.mean(trace[-LAST:]) - hill.b_star) <= 0.1 * hill.b_star, trace[-LAST:]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(hill=hills, t_min=t_mins)
def test_round_signal_converges_to_within_10pct_of_the_optimal_batch(hill, t_min):
    trace = climb([(0, hill)], VatmConfig(t_min=t_min, signal="round"), 150)
    assert abs(np.mean(trace[-LAST:]) - hill.b_star) <= 0.1 * hill.b_star, trace[-LAST:]


def test_overall_signal_orbits_the_optimum_instead_of_settling():
    """Documented behaviour, not a goal: the overall throughput's sign says whether the last round
    beat the average so far, not whether the last step went uphill, so the batch walks one task per
    round across the top and back (here between about 42 and 180 around B* = 75)."""
    hill = Hill(75, 100, 0.0)
    trace = climb([(0, hill)], VatmConfig(t_min=1), 400)
    late = trace[100:]
    assert min(late) < 0.7 * hill.b_star and max(late) > 1.5 * hill.b_star
    steps = np.abs(np.diff(late))
    assert np.mean(steps <= 7) > 0.9  # a slow walk, not a collapse to the floor


@settings(max_examples=30, deadline=None, derandomize=True)
@given(high=st.floats(60, 150), ratio=st.floats(0.2, 0.5), peak=st.floats(100, 300), t_min=t_mins,
       signal=st.sampled_from(["overall", "round", "ewma"]))
def test_shrinks_its_batch_when_the_optimum_moves_down(high, ratio, peak, t_min, signal):
    """Background load grows at round 100: the optimum falls from ``high`` to ``high * ratio`` and the
    peak throughput drops by a quarter."""
    before, after = Hill(high, peak, 0.02), Hill(high * ratio, 0.75 * peak, 0.02)
    trace = climb([(0, before), (100, after)], VatmConfig(t_min=t_min, signal=signal), 250)
    assert np.mean(trace[-LAST:]) < np.mean(trace[100 - LAST:100])
    if signal != "overall":
        assert abs(np.mean(trace[-LAST:]) - after.b_star) <= 0.1 * after.b_star


@settings(max_examples=200, deadline=None)
@given(thp=st.lists(st.floats(0, 1e6), min_size=1, max_size=60), t_min=st.integers(1, 50),
       floor=st.integers(1, 5), rule=st.sampled_from(["paper", "patent"]),
       signal=st.sampled_from(["overall", "round", "ewma"]))
def test_never_launches_fewer_than_the_floor(thp, t_min, floor, rule, signal):
    """Whatever the throughputs (collapses to zero, jumps by millions), a round has at least one task."""
    ctrl = VatmController(VatmConfig(t_min=t_min, floor_tasks=floor, rule=rule, signal=signal))
    for x in thp:
        assert ctrl.t_tar >= floor >= 1
        ctrl.finish_round(ctrl.t_tar, x, x)
    assert ctrl.t_tar >= floor


def test_cap_t_p_bounds_the_batch():
    ctrl = VatmController(VatmConfig(t_min=8, t_p=12))
    for x in (10.0, 100.0, 1000.0, 10000.0):
        assert ctrl.t_tar <= 12
        ctrl.finish_round(ctrl.t_tar, x)


@pytest.mark.parametrize("d_thp,d_t,expected", [
    (1.0, 1.0, 0.5),                      # 45 degrees
    (-1.0, 1.0, -0.5),
    (1e12, 1.0, 1.0 - 1e-9),              # 1 exclusive
    (-1e12, 1.0, -1.0 + 1e-9 * 0 - (1.0 - 1.0)),  # atan tends to -90: -1 inclusive in the limit
    (5.0, 0, 1.0 - 1e-9),                 # equal sizes, throughput rose: sign, clamped
    (-5.0, 0, -1.0),                      # equal sizes, throughput fell
    (0.0, 0, 0.0),                        # equal sizes, no change
])
def test_normalised_gradient(d_thp, d_t, expected):
    assert normalised_gradient(d_thp, d_t) == pytest.approx(expected, abs=1e-9)
    assert -1.0 <= normalised_gradient(d_thp, d_t) < 1.0


def test_update_multiplies_by_one_plus_the_normalised_gradient():
    ctrl = VatmController(VatmConfig(t_min=10))
    ctrl.finish_round(10, 100.0)
    ctrl.finish_round(20, 110.0)                    # slope 1 task/min per token: 45 degrees, g = 0.5
    assert ctrl.t_tar == 30
    ctrl.finish_round(30, 110.0 - 10 * math.tan(math.radians(18)))   # g = -0.2
    assert ctrl.t_tar == 24


def test_rounding_that_would_repeat_the_size_moves_one_step():
    ctrl = VatmController(VatmConfig(t_min=1))
    ctrl.finish_round(1, 50.0)
    ctrl.finish_round(2, 50.001)                    # tiny rise: 2 * (1 + ~0) rounds to 2
    assert ctrl.t_tar == 3


def test_patent_rule_goes_back_between_the_last_two_sizes_when_throughput_falls():
    ctrl = VatmController(VatmConfig(t_min=10, rule="patent"))
    ctrl.finish_round(10, 100.0)
    ctrl.finish_round(20, 90.0)
    assert ctrl.t_tar == 15
    paper = VatmController(VatmConfig(t_min=10))
    paper.finish_round(10, 100.0)
    paper.finish_round(20, 90.0)                   # slope -1: g = -0.5
    assert paper.t_tar == 10


@pytest.mark.parametrize("field,value", [("t_min", 0), ("t_min", -3), ("rule", "pid"), ("floor_tasks", 0),
                                         ("signal", "median"), ("ewma_alpha", 0.0), ("throughput_per_s", 0)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ScenarioError, match=f"vatm.{field}: got"):
        VatmConfig(**{field: value})
