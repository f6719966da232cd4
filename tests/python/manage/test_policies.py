"""Rounds, barriers, pass-through and engagement of the throttling policies, and the task CSV."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.manage import Policy, TaskStream, VatmConfig, VcenterParams, optimal_static, read_task_csv, run_stream
from vmtwin.manage.vcenter import ALIASES, OPERATIONS


def burst(n: int, op: str = "reconfigure_memory", at: float = 0.0) -> TaskStream:
    return TaskStream("b", (at,) * n, (op,) * n)


def test_static_rounds_have_a_barrier_and_a_short_last_round():
    res = run_stream(burst(23), Policy.static(10), VcenterParams(), 1)
    assert [r.launched for r in res.rounds] == [10, 10, 3]
    assert [r.tokens for r in res.rounds] == [10, 10, 10]
    for a, b in zip(res.rounds, res.rounds[1:]):
        assert b.start_s == a.end_s  # the next round starts when the last task of this one finishes
    assert res.latency_s == res.rounds[-1].end_s


def test_vatm_last_round_is_short_and_never_above_the_tokens():
    res = run_stream(burst(400), Policy("vatm", vatm=VatmConfig(t_min=10)), VcenterParams(), 4)
    assert sum(r.launched for r in res.rounds) == 400
    assert all(r.launched == r.tokens for r in res.rounds[:-1])
    assert res.rounds[-1].launched <= res.rounds[-1].tokens


def test_light_load_passes_through_and_the_controller_does_not_engage():
    """Tasks 30 s apart never fill a round: each goes to vCenter on arrival, no update happens."""
    stream = TaskStream("sparse", tuple(30.0 * i for i in range(20)), ("snapshot",) * 20)
    res = run_stream(stream, Policy("vatm", vatm=VatmConfig(t_min=4)), VcenterParams(), 2)
    assert all(r.launched == 1 and r.tokens == 4 for r in res.rounds)
    assert res.extra["t_tar_next"] == 4 and res.extra["gradients"] == []
    unthrottled = run_stream(stream, Policy("unthrottled"), VcenterParams(), 2)
    assert np.array_equal(res.response_s, unthrottled.response_s)


def test_a_burst_after_a_quiet_spell_engages_the_controller():
    stream = TaskStream("mix", tuple([30.0 * i for i in range(5)] + [200.0] * 60),
                        ("snapshot",) * 5 + ("power_on",) * 60)
    res = run_stream(stream, Policy("vatm", vatm=VatmConfig(t_min=4)), VcenterParams(), 2)
    engaged = [r for r in res.rounds if r.start_s >= 200.0]
    assert [r.tokens for r in engaged[:2]] == [4, 8]  # t_min, then 2 t_min, once work queues
    assert sum(r.launched for r in engaged) == 60


def test_optimal_static_is_the_best_of_its_sweep_and_beats_every_size_tried():
    stream = burst(60)
    sw = optimal_static(stream, seeds=(1, 2))
    assert sw.best_latency_s == min(sw.mean_latency_s)
    assert sw.best_batch == sw.batches[sw.mean_latency_s.index(sw.best_latency_s)]
    for b in (1, 5, 60):
        mean = np.mean([run_stream(stream, Policy.static(b), seed=s).latency_s for s in (1, 2)])
        assert sw.best_latency_s <= mean


names = st.sampled_from(sorted(OPERATIONS) + sorted(ALIASES) + ["Power_On", "SNAPSHOT"])


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.floats(0, 1e6, allow_nan=False), names), min_size=1, max_size=40))
def test_csv_round_trip(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("csv") / "s.csv"
    path.write_text("time,operation\n" + "".join(f"{t!r},{op}\n" for t, op in rows))
    s = read_task_csv(path)
    assert len(s) == len(rows)
    assert list(s.times) == sorted(t for t, _ in rows)
    assert set(s.ops) <= set(OPERATIONS)


@settings(max_examples=40, deadline=None)
@given(good=st.integers(0, 10), bad_time=st.sampled_from(["-1", "-0.001", "nan", "inf", "", "12s"]))
def test_csv_bad_time_names_the_line(tmp_path_factory, good, bad_time):
    path = tmp_path_factory.mktemp("csv") / "s.csv"
    path.write_text("time,operation\n" + "1,power_on\n" * good + f"{bad_time},snapshot\n")
    with pytest.raises(ScenarioError, match=rf"s.csv:{good + 2}: time: got '{bad_time}'"):
        read_task_csv(path)
