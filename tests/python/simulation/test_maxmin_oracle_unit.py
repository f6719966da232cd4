"""The max-min oracle of ``maxmin_oracle.py`` on hand-worked cases, and its split against a
bisection written separately (pure Python, no engine)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from maxmin_oracle import OPool, OVm, allocate, ceiling, expected_used_pct, floor, split

from vmtwin import VM, CpuBound, Host, Idle, ResourcePool, Scenario

CORE = 2000.0


def busy(name, vcpus=1, shares=1000, **kw):
    return OVm(name, vcpus, shares, demand=vcpus * CORE, **kw)


def test_reservation_duty_and_shares_on_two_pcpus():
    """2 pCPUs x 2000 MHz = 4000 MHz. R reserves 2000 but demands 0.1 x 2000 = 200, so its
    ceiling and floor are both 200. X (2 vCPUs busy, 4000 demand, 2000 reserved, shares 2000)
    and B (1 busy vCPU, shares 1000) split the remaining 3800 by 2:1: X = 2533.3 (above its
    2000 floor), B = 1266.7. In pCPUs: R 0.1, X 1.267, B 0.633."""
    r = OVm("R", 1, 1000, demand=200, reservation=2000)
    x = busy("X", 2, shares=2000, reservation=2000)
    b = busy("B", 1, shares=1000)
    a = allocate(2 * CORE, [r, x, b], CORE)
    assert a["R"] / CORE == pytest.approx(0.1, abs=1e-12)
    assert a["X"] / CORE == pytest.approx(3800 * 2 / 3 / CORE, abs=1e-12)
    assert a["B"] / CORE == pytest.approx(3800 / 3 / CORE, abs=1e-12)
    assert round(a["X"] / CORE, 3) == 1.267 and round(a["B"] / CORE, 3) == 0.633


def test_equal_pools_and_a_sleepy_child():
    """1 pCPU = 2000 MHz; pools A and B equal shares, so 1000 each (both demand more). Inside A
    the duty-0.05 VM wants 100 and gets it, the busy one gets 900 = 0.45 pCPU; B's VM 0.5."""
    pa = OPool("A", 4000, children=[busy("a-busy"), OVm("a-sleepy", 1, 1000, demand=0.05 * CORE)])
    pb = OPool("B", 4000, children=[busy("b-busy")])
    a = allocate(CORE, [pa, pb], CORE)
    assert a["b-busy"] / CORE == pytest.approx(0.5)
    assert a["a-busy"] / CORE == pytest.approx(0.45)
    assert a["a-sleepy"] / CORE == pytest.approx(0.05)
    assert a["A"] == pytest.approx(1000) and a["B"] == pytest.approx(1000)


def test_vcpu_cap_spills_over():
    """Guide example: shares 500:1000:2000 on 2 pCPUs; by shares 0.29 : 0.57 : 1.14 pCPU, but
    one vCPU holds at most one pCPU, so high gets 1.0 and the rest splits 1:2: 1/3, 2/3."""
    a = allocate(2 * CORE, [busy("low", shares=500), busy("normal"), busy("high", shares=2000)], CORE)
    assert a["high"] == pytest.approx(CORE)
    assert a["low"] == pytest.approx(CORE / 3)
    assert a["normal"] == pytest.approx(2 * CORE / 3)


def test_limit_caps_and_surplus_goes_to_others():
    """1 pCPU; a busy VM limited to 500 MHz beside a busy unlimited one: 500 and 1500."""
    a = allocate(CORE, [busy("lim", limit=500), busy("free")], CORE)
    assert a == pytest.approx({"lim": 500, "free": 1500})


def test_pool_limit_splits_by_shares_then_reservation():
    """4 pCPUs = 8000 MHz. Pool P limited to 2000 MHz holds two busy 1-vCPU VMs of shares 1:3:
    500 and 1500. With p1 reserving 1800 instead: p1 = max(1000 l, 1800), p3 = 3000 l, summing
    to 2000 gives l = 1/15, so p1 = 1800 and p3 = 200. A busy 2-vCPU VM outside gets its 4000
    either way (P's 2000 + 4000 fit in 8000)."""
    p = OPool("P", 4000, limit=2000, children=[busy("p1", shares=1000), busy("p3", shares=3000)])
    out = busy("out", 2)
    a = allocate(4 * CORE, [p, out], CORE)
    assert a["p1"] == pytest.approx(500) and a["p3"] == pytest.approx(1500)
    assert a["out"] == pytest.approx(2 * CORE)
    p = OPool("P", 4000, limit=2000, children=[busy("p1", shares=1000, reservation=1800), busy("p3", shares=3000)])
    a = allocate(4 * CORE, [p, out], CORE)
    assert a["p1"] == pytest.approx(1800) and a["p3"] == pytest.approx(200)


def test_reservation_wins_over_shares():
    """1 pCPU; a VM with 1 share reserving 1500 MHz beside one with 10000 shares: 1500 / 500."""
    a = allocate(CORE, [busy("r", shares=1, reservation=1500), busy("big", shares=10_000)], CORE)
    assert a["r"] == pytest.approx(1500) and a["big"] == pytest.approx(500)


def test_idle_vm_reservation_is_not_held():
    """An idle VM's reservation is not allocated: its ceiling is its demand, 0."""
    a = allocate(CORE, [OVm("idle", 1, 1000, demand=0.0, reservation=2000), busy("b")], CORE)
    assert a == pytest.approx({"idle": 0.0, "b": CORE})


def test_pool_floor_and_ceiling():
    """A fixed pool reserving 3000 over children demanding 1000 in all: floor = ceiling = 1000.
    An expandable pool reserving 500 whose children reserve 1200: floor 1200."""
    p = OPool("p", 4000, reservation=3000, expandable=False,
              children=[OVm("a", 1, 1000, demand=600), OVm("b", 1, 1000, demand=400)])
    assert ceiling(p, CORE) == 1000 and floor(p, CORE) == 1000
    q = OPool("q", 4000, reservation=500, children=[busy("a", reservation=700), busy("b", reservation=500)])
    assert ceiling(q, CORE) == 2 * CORE and floor(q, CORE) == 1200
    q.limit = 1100
    assert ceiling(q, CORE) == 1100 and floor(q, CORE) == 1100


def test_nested_pools_top_down():
    """2 pCPUs = 4000 MHz. Root: pool outer (shares 8000) and a busy 2-vCPU VM v (shares 2000).
    outer's ceiling is 1000 + 4000 = 5000, its floor w's 2500; by 8000:2000 outer gets 3200 and
    v 800. Inside outer: inner (4000 shares, limited to 1000) and w (busy 2 vCPUs, shares 2000,
    reserving 2500): inner = min(4000 l, 1000), w = max(2000 l, 2500), summing to 3200 gives
    l = 0.175: inner 700, w 2500. Inside inner two equal busy VMs: 350 each."""
    inner = OPool("inner", 4000, limit=1000, children=[busy("i1"), busy("i2")])
    outer = OPool("outer", 8000, children=[inner, busy("w", 2, shares=2000, reservation=2500)])
    a = allocate(2 * CORE, [outer, busy("v", 2, shares=2000)], CORE)
    assert a["outer"] == pytest.approx(3200) and a["v"] == pytest.approx(800)
    assert a["w"] == pytest.approx(2500) and a["inner"] == pytest.approx(700)
    assert a["i1"] == pytest.approx(350) and a["i2"] == pytest.approx(350)


def test_from_scenario_resolves_levels_and_demand():
    """Share levels (VM normal 1000/vCPU, pool high 8000) and open-loop demand from a Scenario:
    1 pCPU; pool p (high) holds one busy 1-vCPU VM, pool q (normal) a duty-0.3 VM: p's VM gets
    2000 x 8/12 = 1333 unless q's VM wants less than its 667: it wants 600, so 1400 / 600."""
    def w(d):
        return CpuBound(duty=d, burst="5ms", burst_distribution="fixed", arrivals="open")

    sc = Scenario(host=Host(cores_per_llc=1, core_mhz="2000MHz"),
                  resource_pools=[ResourcePool(name="p", cpu={"shares": "high"}), ResourcePool(name="q")],
                  vms=[VM(name="a", pool="p", workload=w(1.0)), VM(name="b", pool="q", workload=w(0.3)),
                       VM(name="c", workload=Idle())])
    assert expected_used_pct(sc) == pytest.approx({"a": 70.0, "b": 30.0, "c": 0.0})


def test_infeasible_floors_scale():
    assert split(100, [1, 1], [100, 100], [200, 200]) == pytest.approx([50, 50])


def _bisect(amount, shares, lo, hi):
    """A second, slow solver: bisection on the level to 1e-13 relative."""
    if sum(hi) <= amount:
        return list(hi)

    def total(x):
        return sum(min(max(x * s, a), b) for s, a, b in zip(shares, lo, hi))

    a, b = 0.0, 1.0
    while total(b) < amount:
        b *= 2
    for _ in range(200):
        m = (a + b) / 2
        if total(m) < amount:
            a = m
        else:
            b = m
    return [min(max(b * s, x), y) for s, x, y in zip(shares, lo, hi)]


@st.composite
def split_cases(draw):
    n = draw(st.integers(1, 10))
    shares = [draw(st.integers(1, 10_000)) for _ in range(n)]
    hi = [draw(st.floats(0, 16_000)) for _ in range(n)]
    lo = [draw(st.floats(0, 1)) * h for h in hi]
    amount = draw(st.floats(sum(lo), sum(lo) + 20_000)) if sum(lo) > 0 else draw(st.floats(0, 20_000))
    return amount, shares, lo, hi


@settings(max_examples=300, deadline=None)
@given(split_cases())
def test_split_matches_bisection(case):
    amount, shares, lo, hi = case
    got = split(amount, shares, lo, hi)
    ref = _bisect(amount, shares, lo, hi)
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-6)
    assert sum(got) == pytest.approx(min(amount, sum(hi)), rel=1e-9, abs=1e-6)
    assert all(a - 1e-9 <= g <= b + 1e-9 for g, a, b in zip(got, lo, hi))
