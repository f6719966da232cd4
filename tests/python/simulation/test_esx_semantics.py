"""What an ESX administrator expects to see, each worked out by hand in the test's docstring.

Workloads are open-loop (``arrivals="open"``), so a VM's demand is exactly duty x vCPUs x core
MHz whatever the contention. Hosts have no hyperthreads; 1 pCPU = 2000 MHz = 100 %USED.
Averages skip the first SKIP_S seconds (the entitlements' and buckets' start).
"""

from __future__ import annotations

import pandas as pd
import pytest
from maxmin_oracle import expected_used_pct

from vmtwin import VM, AdmissionControlError, CpuBound, Host, Idle, ResourcePool, Scenario, Simulation

CORE_MHZ = 2000
SKIP_S = 4.0


def host(cores: int) -> Host:
    return Host(cores_per_llc=cores, threads_per_core=1, core_mhz=f"{CORE_MHZ}MHz")


def work(duty: float = 1.0, dist: str = "fixed") -> CpuBound:
    return CpuBound(duty=duty, burst="5ms", burst_distribution=dist, arrivals="open")


def run(cores: int, vms: list[VM], pools: list[ResourcePool] = (), duration: str = "60s", seed: int = 5,
        sample_interval: str = "2s") -> pd.DataFrame:
    """The vm table of a finished run."""
    sc = Scenario(name="esx", seed=seed, duration=duration, sample_interval=sample_interval, host=host(cores),
                  resource_pools=list(pools), vms=vms)
    sim = Simulation(sc)
    sim.run()
    return sim.tables()["vm"].to_pandas()


def steady(vm: pd.DataFrame) -> pd.DataFrame:
    """Mean of every column per VM over the samples after SKIP_S."""
    return vm[vm["time_s"] > SKIP_S].groupby("vm").mean(numeric_only=True)


# --------------------------------------------------------------------------------------------
# Limits show as %MLMTD
# --------------------------------------------------------------------------------------------


def test_limit_under_contention_shows_as_mlmtd():
    """1 pCPU. `lim` is busy and limited to 500 of 2000 MHz; `free` is busy and unlimited.
    By shares each would get 1000 MHz, but lim's limit caps it at 500 = 25 %USED, and free takes
    the rest, 75. lim's vCPU always has work, so the other 75% of its time it is held back by
    its limit: %MLMTD ~75, and since esxtop counts MLMTD inside RDY, %RDY >= %MLMTD in every
    sample (and %RDY ~75 too: it is not also waiting for free's pCPU)."""
    vm = run(1, [VM(name="lim", cpu={"limit": "500MHz"}, workload=work()), VM(name="free", workload=work())])
    m = steady(vm)
    assert m.loc["lim", "%USED"] == pytest.approx(25, abs=1)
    assert m.loc["free", "%USED"] == pytest.approx(75, abs=1.5)
    assert m.loc["lim", "%MLMTD"] == pytest.approx(75, abs=3)
    assert m.loc["lim", "%RDY"] == pytest.approx(75, abs=3)
    lim = vm[vm["vm"] == "lim"]
    assert (lim["%RDY"] >= lim["%MLMTD"] - 1e-9).all()


def test_limit_on_an_idle_host_shows_as_mlmtd():
    """2 pCPUs and one busy 1-vCPU VM limited to 500 MHz: nothing competes, so it uses its
    limit, 25 %USED, and spends the other 75% held back by the limit: %MLMTD ~75 = %RDY (there
    is no other VM to wait for)."""
    vm = run(2, [VM(name="lim", cpu={"limit": "500MHz"}, workload=work())])
    m = steady(vm)
    assert m.loc["lim", "%USED"] == pytest.approx(25, abs=1)
    assert m.loc["lim", "%MLMTD"] == pytest.approx(75, abs=2)
    assert m.loc["lim", "%RDY"] - m.loc["lim", "%MLMTD"] < 2
    assert (vm["%RDY"] >= vm["%MLMTD"] - 1e-9).all()


def test_first_sample_of_a_limited_vm_respects_the_limit():
    """1 pCPU, a busy VM limited to 25% (500 MHz): the first 2 s sample reads <= 25.5 %USED.
    A limit bucket that started full would add its depth (100 ms over 2 s = +5 points)."""
    vm = run(1, [VM(name="lim", cpu={"limit": "500MHz"}, workload=work())], duration="10s")
    first = vm[vm["time_s"] == vm["time_s"].min()].set_index("vm")
    assert first.loc["lim", "%USED"] <= 25.5


def test_first_sample_of_a_limited_two_vcpu_vm_respects_the_limit():
    """2 pCPUs, a busy 2-vCPU VM limited to 1000 MHz = 50 %USED (25% of its 4000 MHz): the
    first sample reads <= 50.5."""
    vm = run(2, [VM(name="lim", vcpus=2, cpu={"limit": "1000MHz"}, workload=work())], duration="10s")
    first = vm[vm["time_s"] == vm["time_s"].min()].set_index("vm")
    assert first.loc["lim", "%USED"] <= 50.5


# --------------------------------------------------------------------------------------------
# Reservations and demand below the fair share
# --------------------------------------------------------------------------------------------


def test_reservation_is_delivered_when_demanded():
    """2 pCPUs = 4000 MHz. `res` (1 vCPU, low shares = 500) reserves 2000 MHz = one pCPU and is
    busy; three busy 2-vCPU VMs of normal shares (2000 each) compete. By shares res would get
    4000 x 500/6500 = 308 MHz, but its reservation lifts it to 2000: ~100 %USED. The others
    split the other pCPU: 33.3 each."""
    vms = [VM(name="res", cpu={"shares": "low", "reservation": "2000MHz"}, workload=work())]
    vms += [VM(name=f"busy{i}", vcpus=2, workload=work()) for i in range(3)]
    m = steady(run(2, vms))
    assert m.loc["res", "%USED"] >= 98
    for i in range(3):
        assert m.loc[f"busy{i}", "%USED"] == pytest.approx(100 / 3, abs=1.5)


def test_vm_below_its_share_gets_its_demand_without_waiting():
    """1 pCPU; `light` wants duty 0.2 = 400 MHz beside three busy VMs, all normal shares.
    Its fair share is 500 MHz, more than it wants, so it gets all of it: 20 %USED, and it should
    hardly wait: %RDY < 2 (a scheduler that gives an under-entitled waking vCPU the pCPU).
    The three busy VMs split the other 80: 26.7 each."""
    vms = [VM(name="light", workload=work(0.2))] + [VM(name=f"busy{i}", workload=work()) for i in range(3)]
    m = steady(run(1, vms))
    assert m.loc["light", "%USED"] == pytest.approx(20, abs=0.4)
    assert m.loc["light", "%RDY"] < 2
    for i in range(3):
        assert m.loc[f"busy{i}", "%USED"] == pytest.approx(80 / 3, abs=1)


# --------------------------------------------------------------------------------------------
# Pools
# --------------------------------------------------------------------------------------------


POOL_VARIANTS = {
    # A: three busy VMs of shares 500/1000/4000 and one at duty 0.05; B: one busy 2-vCPU VM
    "many-children-vs-one": (
        [VM(name="a1", pool="A", cpu={"shares": 500}, workload=work()),
         VM(name="a2", pool="A", cpu={"shares": 1000}, workload=work()),
         VM(name="a3", pool="A", cpu={"shares": 4000}, workload=work()),
         VM(name="a-sleepy", pool="A", workload=work(0.05))],
        [VM(name="b1", pool="B", vcpus=2, workload=work())],
    ),
    # A: one 2-vCPU VM with huge shares; B: two 1-vCPU VMs with 1 share each
    "huge-shares-vs-tiny": (
        [VM(name="a1", pool="A", vcpus=2, cpu={"shares": 100_000}, workload=work())],
        [VM(name="b1", pool="B", cpu={"shares": 1}, workload=work()),
         VM(name="b2", pool="B", cpu={"shares": 1}, workload=work())],
    ),
    # A: four 1-vCPU busy VMs; B: two 2-vCPU VMs at duty 0.6 (2400 MHz each: B wants 4800)
    "four-vs-two-partly-busy": (
        [VM(name=f"a{i}", pool="A", workload=work()) for i in range(4)],
        [VM(name=f"b{i}", pool="B", vcpus=2, workload=work(0.6)) for i in range(2)],
    ),
    # A: a busy VM and an idle one; B: a busy VM and one at duty 0.3
    "idle-and-sleepy-children": (
        [VM(name="a1", pool="A", vcpus=2, workload=work()), VM(name="a-idle", pool="A", workload=Idle())],
        [VM(name="b1", pool="B", vcpus=2, workload=work()), VM(name="b-sleepy", pool="B", workload=work(0.3))],
    ),
}


@pytest.mark.parametrize("variant", sorted(POOL_VARIANTS))
def test_equal_share_pools_split_the_host_equally(variant):
    """2 pCPUs = 4000 MHz; pools A and B have equal shares (normal) and each demands more than
    2000 MHz, so each gets 2000 = 100 %USED summed over its VMs, whatever its children's
    counts, shares and duty. Inside each pool the children get the max-min split of 2000 (the
    oracle's; e.g. many-children-vs-one: a-sleepy 5, then 1900 MHz by 500:1000:4000 = 8.6,
    17.3, 69.1 %USED)."""
    a_vms, b_vms = POOL_VARIANTS[variant]
    pools = [ResourcePool(name="A"), ResourcePool(name="B")]
    sc = Scenario(name="esx", seed=5, duration="60s", host=host(2), resource_pools=pools, vms=a_vms + b_vms)
    expected = expected_used_pct(sc)
    sim = Simulation(sc)
    sim.run()
    m = steady(sim.tables()["vm"].to_pandas())
    a = sum(m.loc[v.name, "%USED"] for v in a_vms)
    b = sum(m.loc[v.name, "%USED"] for v in b_vms)
    got = {v: round(m.loc[v, "%USED"], 2) for v in expected}
    assert a == pytest.approx(100, abs=2), got
    assert b == pytest.approx(100, abs=2), got
    for v, e in expected.items():
        assert m.loc[v, "%USED"] == pytest.approx(e, rel=0.02, abs=0.5), (v, expected, got)


def test_pool_limit_splits_by_childrens_shares():
    """4 pCPUs; pool P limited to 2000 MHz holds two busy 1-vCPU VMs of shares 1000 and 3000;
    a busy 2-vCPU VM outside takes its 2 pCPUs. P's 2000 MHz splits 1:3: 500 and 1500 MHz =
    25 and 75 %USED (three pCPUs' worth wanted, so the limit, not the host, binds)."""
    vms = [VM(name="p1", pool="P", cpu={"shares": 1000}, workload=work()),
           VM(name="p3", pool="P", cpu={"shares": 3000}, workload=work()),
           VM(name="out", vcpus=2, workload=work())]
    m = steady(run(4, vms, [ResourcePool(name="P", cpu={"limit": "2000MHz"})]))
    assert m.loc["p1", "%USED"] == pytest.approx(25, abs=1)
    assert m.loc["p3", "%USED"] == pytest.approx(75, abs=1.5)
    assert m.loc["out", "%USED"] == pytest.approx(200, abs=2)


def test_pool_limit_honours_a_childs_reservation():
    """As above, but p1 (shares 1000) reserves 1800 MHz: p1 = max(1000 l, 1800), p3 = 3000 l,
    summing to the 2000 MHz limit: l = 1/15, so p1 gets its 1800 = 90 %USED and p3 200 = 10."""
    vms = [VM(name="p1", pool="P", cpu={"shares": 1000, "reservation": "1800MHz"}, workload=work()),
           VM(name="p3", pool="P", cpu={"shares": 3000}, workload=work()),
           VM(name="out", vcpus=2, workload=work())]
    m = steady(run(4, vms, [ResourcePool(name="P", cpu={"limit": "2000MHz"})]))
    assert m.loc["p1", "%USED"] == pytest.approx(90, abs=1.5)
    assert m.loc["p3", "%USED"] == pytest.approx(10, abs=1)
    assert m.loc["out", "%USED"] == pytest.approx(200, abs=2)


def test_pool_limit_split_holds_while_a_sibling_waits_ready():
    """7 pCPUs, committed: pool Q (76 shares) holds a near-busy 5-vCPU VM, a 1-vCPU VM at duty
    0.38 and a 1-share 5-vCPU VM; outside the pools a 2-vCPU VM at duty 0.5 and a 5-vCPU VM at
    0.15 take their 100 and 75 %USED. Pool P (low shares) is limited to 800 MHz = 40 %USED and
    holds three VMs that want more than that: light (6 vCPUs, 1,473 shares), mid (4 vCPUs, low
    = 2,000) and heavy (6 vCPUs, 6,770), so P's 40 splits 1473 : 2000 : 6770 (5.75, 7.81 and
    26.44 %USED; `expected_used_pct`). Each child's share is enforced in its own bucket while
    P's bucket is scarce and yields once it is not. heavy's vCPUs, entitled to 0.044 pCPU each
    and released owed half a sleeper's credit, wait READY behind the other VMs' vCPUs while P's
    bucket fills past its share split; light, released owed the same credit at a fifth of the
    weight, is further back in virtual time and first in the queues, so before a share stopped
    yielding while a sibling waits READY with its own share to spend (`cpu/sched.rs`,
    `sibling_waits`) light's share yielded and it took 10.39 for its 5.75, heavy 21.32; now
    5.76 and 25.40. heavy still queues behind the others' vCPUs after its releases, and its
    buckets drop part of its share meanwhile (docs/cpu-scheduler.md), hence its wider bound."""
    vms = [VM(name="hog", vcpus=5, pool="Q", cpu={"shares": 2974}, workload=work(0.98)),
           VM(name="one", pool="Q", cpu={"shares": 1024}, workload=work(0.38)),
           VM(name="tiny", vcpus=5, pool="Q", cpu={"shares": 1, "limit": "3000MHz"}, workload=work(0.16)),
           VM(name="w2", vcpus=2, cpu={"shares": 10000}, workload=work(0.5)),
           VM(name="w5", vcpus=5, cpu={"shares": "low"}, workload=CpuBound(duty=0.15, burst="10ms", arrivals="open")),
           VM(name="light", vcpus=6, pool="P", cpu={"shares": 1473}, workload=work(0.88)),
           VM(name="mid", vcpus=4, pool="P", cpu={"shares": "low"}, workload=work(0.16, "exponential")),
           VM(name="heavy", vcpus=6, pool="P", cpu={"shares": 6770}, workload=work(0.26, "exponential"))]
    m = steady(run(7, vms, [ResourcePool(name="P", cpu={"shares": "low", "limit": "800MHz"}),
                            ResourcePool(name="Q", cpu={"shares": 76})]))
    assert m.loc["light", "%USED"] == pytest.approx(5.75, abs=0.5)
    assert m.loc["mid", "%USED"] == pytest.approx(7.81, abs=0.5)
    assert m.loc["heavy", "%USED"] == pytest.approx(26.44, abs=1.5)


def test_limited_pool_under_contention_gets_its_share_not_its_limit():
    """8 pCPUs = 16,000 MHz, saturated. At the root, pool P (202 shares, expandable, limited to
    500 MHz) is beside capped (6 vCPUs, normal shares, limited to 4,614 MHz, wanting 6,720) and
    busy (6 vCPUs at duty 0.98, 6,048 shares). capped gets its limit, 4,614; the other 11,386
    MHz split 202 : 6,048, so P gets 368 MHz, under its limit, and busy 11,018 (550.9 %USED).
    Inside P, one (1 vCPU at duty 0.41, 4,655 shares) and five (5 vCPUs at 0.99, low = 2,500)
    split the 368: 239.4 and 128.6 MHz = 11.97 and 6.43 %USED. P's limit does not bind: it
    gets its share at the root, not its 500 MHz. capped runs its turns in bursts and leaves gaps
    between them that busy, all six of its vCPUs running, cannot use; before a vCPU that has had
    its entitlement counted as not owed such a gap whatever else queued READY had had too
    (`cpu/sched.rs`, `gap_unowed`), one and five, each queued while the other ran, took them
    in turn, P ran its whole limit (one 18.51 %USED) and busy got 544.33."""
    vms = [VM(name="one", pool="P", cpu={"shares": 4655},
              workload=CpuBound(duty=0.41, burst="2ms", burst_distribution="fixed", arrivals="open")),
           VM(name="five", vcpus=5, pool="P", cpu={"shares": "low"},
              workload=CpuBound(duty=0.99, burst="10ms", burst_distribution="exponential", arrivals="open")),
           VM(name="capped", vcpus=6, cpu={"limit": "4614MHz"}, workload=work(0.56, "exponential")),
           VM(name="busy", vcpus=6, cpu={"shares": 6048}, workload=work(0.98))]
    m = steady(run(8, vms, [ResourcePool(name="P", cpu={"shares": 202, "limit": "500MHz",
                                                        "expandable_reservation": True})]))
    assert m.loc["one", "%USED"] == pytest.approx(11.97, abs=0.6)
    assert m.loc["five", "%USED"] == pytest.approx(6.43, abs=0.5)
    assert m.loc["one", "%USED"] + m.loc["five", "%USED"] < 20
    assert m.loc["busy", "%USED"] == pytest.approx(550.9, abs=3)


# --------------------------------------------------------------------------------------------
# Admission control
# --------------------------------------------------------------------------------------------


def _limited_pool_scenario(power_on: str = "0s") -> Scenario:
    return Scenario(name="esx", duration="20s", host=host(4),
                    resource_pools=[ResourcePool(name="capped", cpu={"limit": "1000MHz",
                                                                     "expandable_reservation": True})],
                    vms=[VM(name="other", workload=work(0.5)),
                         VM(name="greedy", pool="capped", power_on=power_on,
                            cpu={"reservation": "2000MHz"}, workload=work())])


def test_admission_control_refuses_a_reservation_a_pool_limit_cannot_hold():
    """An expandable pool limited to 1000 MHz cannot hold a VM reserving 2000 MHz, however much
    the 8000 MHz host has free: powering it on at t=0 fails, naming the pool."""
    with pytest.raises(AdmissionControlError, match="capped"):
        Simulation(_limited_pool_scenario())


def test_admission_control_refuses_a_later_power_on_in_a_limited_pool():
    """The same VM, due on at 15 s, powered on by hand at 5 s: the power-on fails, naming the
    pool, and the VM stays off (uses nothing up to 10 s)."""
    sim = Simulation(_limited_pool_scenario(power_on="15s"))
    sim.run_until("5s")
    with pytest.raises(AdmissionControlError, match="capped"):
        sim.power_on("greedy")
    sim.run_until("10s")
    assert sim.counters("greedy")["used_ns"] == 0
    assert sim.counters("other")["used_ns"] > 0


# --------------------------------------------------------------------------------------------
# demand_mhz is the workload's true demand
# --------------------------------------------------------------------------------------------


def test_demand_column_is_the_true_demand_even_when_contended_or_limited():
    """2 pCPUs. `contended` (2 vCPUs, duty 0.6) wants 0.6 x 2 x 2000 = 2400 MHz; `hog` (2 vCPUs
    busy) wants 4000; `limited` (1 vCPU, duty 0.8, limit 400 MHz) wants 1600; `idle` 0. Together
    they want 8000 of 4000 MHz, so contended gets less than it wants and limited 400, but every
    sample's demand_mhz is the workload's demand (open-loop arrivals: exact), within 1%."""
    vms = [VM(name="contended", vcpus=2, workload=work(0.6)), VM(name="hog", vcpus=2, workload=work()),
           VM(name="limited", cpu={"limit": "400MHz"}, workload=work(0.8)), VM(name="idle", workload=Idle())]
    vm = run(2, vms, duration="30s")
    want = {"contended": 2400, "hog": 4000, "limited": 1600, "idle": 0}
    m = steady(vm)
    assert m.loc["contended", "used_mhz"] < 0.9 * 2400  # it is contended...
    assert m.loc["limited", "used_mhz"] == pytest.approx(400, rel=0.05)  # ...and limited is limited
    for name, mhz in want.items():
        d = vm[vm["vm"] == name]["demand_mhz"]
        assert ((d - mhz).abs() <= 0.01 * mhz + 1e-9).all(), (name, mhz, d.tolist())
