"""The homogeneous SFQ(D) simulation against queueing theory, splitting, rejoin and Algorithm 2."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from vmtwin.models.kraft_sfqd import Trace, calibrate_merge, simulate, split_sizes, stochastic_round


@given(st.integers(1, 5000), st.integers(1, 300))
def test_split_sizes_follow_eqs_3_and_5(blocks, l_max):
    s = split_sizes(blocks, l_max)
    assert sum(s) == blocks
    assert len(s) == math.ceil(blocks / l_max)
    assert all(1 <= x <= l_max for x in s) and all(x == l_max for x in s[:-1])


def test_stochastic_rounding_of_2_5_is_2_or_3_evenly():
    rng = np.random.default_rng(1)
    xs = [stochastic_round(2.5, rng) for _ in range(20000)]
    assert set(xs) == {2, 3}
    assert abs(np.mean(xs) - 2.5) < 0.02


def exp_sampler(mean):
    return lambda rng, n: rng.exponential(mean, n)


def poisson_trace(rate, n, seed, blocks=8):
    rng = np.random.default_rng(seed)
    return Trace(np.cumsum(rng.exponential(1 / rate, n)), np.full(n, blocks))


def test_one_server_is_mm1():
    lam, s = 700.0, 1e-3
    res = simulate([poisson_trace(lam, 150_000, 1)], [exp_sampler(s)], np.random.default_rng(2), servers=1)
    expect = s / (1 - lam * s)
    assert res.mean_resp[0] == pytest.approx(expect, rel=0.03)
    assert res.n_sim == pytest.approx(lam * expect, rel=0.03)  # Little


def test_d_servers_is_mmc():
    lam, s, c = 3000.0, 1e-3, 4
    a = lam * s
    terms = [a**k / math.factorial(k) for k in range(c)]
    last = a**c / math.factorial(c) / (1 - a / c)
    wait = last / (sum(terms) + last) / (c / s - lam)
    res = simulate([poisson_trace(lam, 60_000, 3)], [exp_sampler(s)], np.random.default_rng(4), servers=c)
    assert res.mean_resp[0] == pytest.approx(s + wait, rel=0.03)


def test_rejoin_is_the_mean_of_the_pieces():
    # one request of 256 blocks -> two pieces served in parallel for 1 s and 3 s: eq. 6 gives 2 s
    services = iter([1.0, 3.0])
    res = simulate([Trace(np.array([0.0]), np.array([256]))], [lambda rng, n: np.array([next(services) for _ in range(n)])], np.random.default_rng(0))
    assert res.mean_resp == [pytest.approx(2.0)]
    assert res.splitting_ratio == 2.0


def test_sfq_shares_split_a_saturated_server():
    # two classes each offering 2x the server's capacity; shares 1:2 -> served 1:2 while both are backlogged
    horizon = 200.0
    traces = [Trace(np.linspace(0, horizon, 400_0), np.full(4000, 1)) for _ in range(2)]
    res = simulate(traces, [lambda rng, n: np.full(n, 0.1)] * 2, np.random.default_rng(0), servers=1, shares=[1, 2])
    done_by_half = [np.sum(np.asarray(r) + np.linspace(0, horizon, 4000) <= horizon / 2) for r in res.responses]
    assert done_by_half[1] / done_by_half[0] == pytest.approx(2.0, rel=0.03)


def bursty_repo(seed, n_traces=3):
    rng = np.random.default_rng(seed)
    repo = []
    for _ in range(n_traces):
        # bursts of 10 requests every ~40 ms: a PM-like bursty arrival stream
        starts = np.cumsum(rng.exponential(0.04, 150))
        t = np.sort(np.concatenate([s + rng.exponential(0.0005, 10).cumsum() for s in starts]))
        repo.append(Trace(t, rng.integers(1, 200, t.size)))
    return repo


def test_merging_lowers_the_queue_and_algorithm_2_converges():
    repo = bursty_repo(5)
    sampler = exp_sampler(0.008)
    servers = 8  # few enough that two or three bursty VMs queue
    n1 = simulate([repo[0], repo[1]], [sampler] * 2, np.random.default_rng(1), servers=servers, omega=1.0).n_sim
    n3 = simulate([repo[0], repo[1]], [sampler] * 2, np.random.default_rng(1), servers=servers, omega=3.0).n_sim
    assert n3 < n1
    # eq. 7: N_exp = K N_iso, with N_iso the mean over the repository in isolation
    iso = np.mean([simulate([r], [sampler], np.random.default_rng(1), servers=servers).n_sim for r in repo])
    omegas = []
    for k in (2, 3):
        cal = calibrate_merge([repo] * k, [sampler] * k, n_expected=k * iso, runs=4, seed=9, servers=servers)
        assert cal.converged, cal
        assert cal.error <= 0.05
        assert cal.history[-1] == (cal.omega, cal.n_corrected)
        omegas.append(cal.omega)
    # more VMs, more queueing, more merging (Table 7's trend)
    assert omegas[1] > omegas[0] > 1.0


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="omega"):
        simulate([poisson_trace(10, 10, 1)], [exp_sampler(1e-3)], np.random.default_rng(0), omega=0.5)
    with pytest.raises(ValueError, match="non-decreasing"):
        Trace(np.array([1.0, 0.5]), np.array([1, 1]))
