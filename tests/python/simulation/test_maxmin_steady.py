"""Property test: drawn scenarios settle on their max-min allocation (judged from 30 s to 120 s).

The same random scenarios as the two drawn tests of ``test_maxmin_property`` (its `scenarios`
strategy: 1-8 cores, 1-8 VMs of 1-8 vCPUs, open-loop duty-cycled or idle work, shares,
reservations, limits, up to two levels of pools), judged the same way (max-min on the window's
demands, the fluid range where bursts are exposed, 2% or 0.5% of a pCPU), but each run for 120
simulated seconds and measured from 30 s. Those two tests measure from 5 s, so they also judge
how fast a scenario leaves the power-on guesses (a whole pCPU per vCPU until the first demand
estimate): a VM held back at start-up enters the window with a backlog, and its neighbours give
way while it drains. They stay quarantined for those transients and for the steady-state misses
kept in ``data/maxmin_open``.

This test asks only where the scheduler settles, and it is not quarantined: a draw that misses
here is a steady-state error (or a transient longer than 30 s), and it fails. The window's
start is measured, not chosen to pass: judged from 30 s to 120 s, every open case whose miss was
a transient was on its allocation (session 41: of 26 open cases, exactly the 9 that also missed
over 300 s still missed). With fresh draws, 100 runs of each drawn test (10,000 flat and 15,000
pooled scenarios, session 42, before and after that session's start-up debt rule) had one run
off, pooled `drawn-pools-0r` (vm3 -1.03, a steady-state miss that predates the session), where
70 runs judged from 5 s had one too (docs/cpu-scheduler.md, "The max-min property test: census
and open misses"). Session 43, after its drain rate: 3,000 flat and 4,500 pooled fresh draws
(6,932 distinct scenarios, about 30 runs of each test) had one off, `drawn-pools-1320990` (vm4
-1.25; -0.67 before the drain rate). So a fresh local run fails about one time in a hundred, on a real miss; CI
runs a fixed sample (conftest.py), which passes. The steady-state open cases (flat 15976149,
pooled 0r, 27002438 and 1320990; pooled 0m until session 42 closed it, 4871 until session 43's drain rate
did) miss here too: a draw like them fails this test, and that is what it is for.
"""

from __future__ import annotations

import test_maxmin_property as prop
from hypothesis import given, settings

from vmtwin import Scenario

STEADY_FROM_S = 30
STEADY_TO_S = 120


def assert_settles_on_allocation(sc: Scenario) -> None:
    sc = sc.model_copy(update={"duration": STEADY_TO_S * 10**9})
    bad, report = prop.violations(sc, window=(STEADY_FROM_S, STEADY_TO_S))
    assert not bad, (f"VMs off their max-min allocation from {STEADY_FROM_S} s to {STEADY_TO_S} s: {bad}\n"
                     f"{report}\n--- scenario ---\n{sc.to_yaml()}")


@settings(max_examples=100, **prop.SETTINGS)
@given(prop.scenarios(with_pools=False))
def test_flat_vms_settle_on_their_maxmin_allocation(sc: Scenario):
    assert_settles_on_allocation(sc)


@settings(max_examples=150, **prop.SETTINGS)
@given(prop.scenarios(with_pools=True))
def test_pooled_vms_settle_on_their_hierarchical_maxmin_allocation(sc: Scenario):
    assert_settles_on_allocation(sc)
