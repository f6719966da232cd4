"""Fuzzing scenario loading for a few seconds: hostile bytes and mutated scenarios never crash.

The strategies and the oracle are in ``fuzz_inputs.py``; ``benchmarks/bench_fuzz.py`` runs the
same for 10 minutes and records the result. A failure here is a crash hypothesis found (it
prints the input); the fix belongs in the scenario layer, and the input in ``bad/``.
"""

from __future__ import annotations

from pathlib import Path

from fuzz_inputs import check, mutated_dicts, mutated_yaml, raw_bytes, valid_scenarios
from hypothesis import HealthCheck, given, settings

PLANETLAB = Path(__file__).resolve().parent / "data" / "planetlab_ok"
# A few seconds in all on CI's 2 cores; the long run is benchmarks/bench_fuzz.py.
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(raw_bytes)
def test_random_bytes_never_crash(data):
    assert check(data, PLANETLAB) in ("refused", "engine-refused", "ran")


@FUZZ
@given(mutated_yaml())
def test_mutated_yaml_never_crashes(text):
    assert check(text, PLANETLAB) in ("refused", "engine-refused", "ran")


@FUZZ
@given(mutated_dicts())
def test_mutated_mappings_never_crash(sc):
    assert check(sc, PLANETLAB) in ("refused", "engine-refused", "ran")


@settings(max_examples=20, deadline=None)
@given(valid_scenarios())
def test_the_seed_scenarios_are_valid(sc):
    # the control: unmutated seeds load and run, so the mutations above start from valid input
    assert check(sc, PLANETLAB) == "ran"
