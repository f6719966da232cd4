"""The linear predictors against their algebra, on random inputs."""

import math

import pytest
from hypothesis import given, strategies as st

from vmtwin.models.kraft_linear import IsolationStats, predict, service_time_ms
from vmtwin.models.product_form import mean_relative_error, product_form

pos = st.floats(0.5, 5000)


@st.composite
def vms(draw):
    n = draw(st.integers(2, 5))
    return [
        IsolationStats(f"vm{i}", draw(pos), draw(pos), draw(st.floats(0.1, 100)), draw(st.floats(0.1, 100)), draw(st.floats(0, 30)), draw(st.floats(0, 30)))
        for i in range(n)
    ]


@given(vms())
def test_mix_reduces_to_ratio_of_sums_and_per_vm_adds_up(v):
    p = predict(v)
    total_r = sum(x.read_iops for x in v)
    total = sum(x.total for x in v)
    assert math.isclose(p.read_mix, total_r / total, rel_tol=1e-9)
    assert math.isclose(p.read_mix + p.write_mix, 1.0, rel_tol=1e-9)
    assert math.isclose(sum(p.read_per_vm), p.read_total, rel_tol=1e-9)
    # eq. 16 literally: Σ_i T_i^R T_i / Σ T — an average, never above the largest isolation rate
    assert math.isclose(p.read_total, sum(x.read_iops * x.total for x in v) / total, rel_tol=1e-9)
    assert p.read_total <= max(x.read_iops for x in v) * (1 + 1e-12)


@given(vms())
def test_response_time_is_own_plus_others_service_times_queue(v):
    p = predict(v)
    for i, x in enumerate(v):
        others = sum(service_time_ms(y.read_resp_ms, y.read_aqueue) * y.read_aqueue for j, y in enumerate(v) if j != i)
        assert math.isclose(p.read_resp_ms[i], x.read_resp_ms + others, rel_tol=1e-9)
        assert p.read_resp_ms[i] >= x.read_resp_ms


def test_two_vm_example_by_hand():
    web = IsolationStats("web", 470, 44, 11.8, float("nan"), 8.39, float("nan"))
    file = IsolationStats("file", 330, 237, 19.9, float("nan"), 9.57, float("nan"))
    p = predict([web, file])
    assert p.read_resp_ms[0] == pytest.approx(11.8 + 19.9 / 10.57 * 9.57)
    assert p.read_mix == pytest.approx(800 / 1081)


def test_one_vm_is_refused():
    with pytest.raises(ValueError, match="at least 2 VMs"):
        predict([IsolationStats("a", 1, 1)])


@given(st.floats(1, 5000), st.floats(1e-5, 1e-3))
def test_product_form_with_one_server_and_class_is_mm1(lam, d):
    if lam * d >= 1:
        return
    assert product_form([lam], [d], servers=1)[0] == pytest.approx(d / (1 - lam * d))


def test_product_form_clamps_the_sum_at_099():
    assert product_form([1.0, 1.0], [40.0, 20.0], servers=32) == pytest.approx([4000.0, 2000.0])
    assert mean_relative_error([10, 20], [12, 15]) == pytest.approx((0.2 + 0.25) / 2)
