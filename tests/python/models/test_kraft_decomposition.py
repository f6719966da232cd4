"""The decomposition simulation against exact MVA, and its parameter estimation."""

import numpy as np
import pytest

from vmtwin.models.kraft_decomposition import ClassParams, detect_batches, fit_populations, service_by_queue, simulate, think_times


def mva(n, d, z):
    """Exact MVA of a closed single-class model: one FCFS queue (demand d) and a delay z."""
    q = 0.0
    x = 0.0
    for k in range(1, n + 1):
        r = d * (1 + q)
        x = k / (r + z)
        q = x * r
    return x, r


@pytest.mark.parametrize("n", [1, 3, 8])
def test_single_requests_with_exponential_think_match_mva(n):
    rng = np.random.default_rng(n)
    d, z = 0.004, 0.02
    # batch size 1, think times replayed from an exponential trace, constant D: exactly MVA's model
    c = ClassParams(batch_sizes=(1,), think_s=tuple(rng.exponential(z, 50_000)), service_by_queue=(d,))
    res = simulate([c], [n], horizon_s=150.0, rng=np.random.default_rng(10 + n))
    x, r = mva(n, d, z)
    assert res.throughput[0] == pytest.approx(x, rel=0.03)
    assert res.mean_resp(0) == pytest.approx(r, rel=0.04)


def test_batches_and_merging():
    # zero think time, batches of 4, merge fraction 0.5: each batch is 4 - 2 = 2 service entities
    c = ClassParams(batch_sizes=(4,), think_s=(0.0,), service_by_queue=(0.001,), merge_fraction=0.5)
    res = simulate([c], [1], horizon_s=30.0, rng=np.random.default_rng(0))
    # a batch takes two exponential services of mean 1 ms: 4 requests per 2 ms
    assert res.throughput[0] == pytest.approx(2000.0, rel=0.03)


def test_population_search_reaches_the_target_throughput():
    rng = np.random.default_rng(1)
    classes = [ClassParams(batch_sizes=(1, 2, 5), think_s=tuple(rng.exponential(0.05, 5000)), service_by_queue=(0.003, 0.002)) for _ in range(2)]
    target = [120.0, 60.0]
    fit = fit_populations(classes, target, horizon_s=60.0, seed=3)
    for k in range(2):
        assert fit.lower.throughput[k] <= target[k] <= fit.upper.throughput[k] or fit.populations[k] == 1
        assert 0.0 <= fit.weights[k] <= 1.0
        lo, hi = sorted((fit.lower.mean_resp(k), fit.upper.mean_resp(k)))
        assert lo - 1e-12 <= fit.mean_resp_s[k] <= hi + 1e-12
    assert fit.populations[0] > fit.populations[1]


def test_batch_detection_think_times_and_load_dependent_service():
    arr = np.array([0.0, 0.001, 0.003, 0.0101, 0.0115, 0.05])
    batches = detect_batches(arr)
    assert [list(b) for b in batches] == [[0, 1, 2], [3, 4], [5]]  # gaps <= 2 ms chain (inclusive)
    comp = np.array([0.004, 0.005, 0.012, 0.02, 0.021, 0.06])
    z, neg = think_times(arr, comp, batches)
    assert z == pytest.approx([0.0, 0.05 - 0.021])  # 0.0101 - 0.012 < 0: clamped, counted
    assert neg == 1
    resp = np.array([1.0] * 40 + [4.0] * 40 + [9.0] * 5)
    aq = np.array([0] * 40 + [1] * 40 + [2] * 5)
    d = service_by_queue(resp, aq)
    # a=1: 1/1; a=2: 4/2; a=3 has 5 samples (< 30): pooled into a=2's bin
    assert d[0] == pytest.approx(1.0)
    assert d[1] == pytest.approx((40 * 2.0 + 5 * 3.0) / 45)
    assert d[2] == d[1]


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="batch_sizes"):
        ClassParams(batch_sizes=(0,), think_s=(1.0,), service_by_queue=(1.0,))
    with pytest.raises(ValueError, match="merge_fraction"):
        ClassParams(batch_sizes=(1,), think_s=(1.0,), service_by_queue=(1.0,), merge_fraction=1.0)
