"""Property test: esxtop's accounting identities hold for random small hosts and VMs.

Per vCPU and sample interval, the engine's states (RUN, READY, MLMTD, WAIT, IDLE) partition the
powered-on part of the interval exactly; the percentages are those nanoseconds over that span
(%RDY includes %MLMTD, %WAIT includes %IDLE); a VM's percentages are the sums over its vCPUs; the
host never runs more than pcpus x interval; and a VM limit holds over the run.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmtwin import VM, CpuBound, Host, Idle, ResourcePool, Scenario, Simulation

NS = 10**9
SAMPLE_NS = NS  # 1 s samples
NS_COLUMNS = ["run_ns", "ready_ns", "wait_ns", "idle_ns", "mlmtd_ns", "used_ns"]
PCT_COLUMNS = ["%USED", "%RUN", "%RDY", "%MLMTD", "%WAIT", "%VMWAIT", "%IDLE"]
QUANTUM_NS = 50 * 10**6
LIMIT_BURST_NS = 100 * 10**6


@st.composite
def scenarios(draw):
    cores = draw(st.integers(1, 4))
    threads = draw(st.sampled_from([1, 2]))
    core_mhz = draw(st.sampled_from([1000, 2000, 2600]))
    logical = cores * threads
    capacity = cores * core_mhz  # a hyperthread adds no capacity until hyperthreading is modelled
    duration_ms = draw(st.integers(2000, 5000))  # may end between two samples
    with_pool = draw(st.booleans())
    pools = []
    if with_pool:
        pool_limit = draw(st.one_of(st.none(), st.integers(core_mhz // 4, capacity)))
        pools.append(ResourcePool(name="pool", cpu={"shares": draw(st.integers(1, 10_000)),
                                                     "limit": f"{pool_limit}MHz" if pool_limit else "unlimited"}))
    n = draw(st.integers(1, 4))
    vms = []
    for i in range(n):
        vcpus = draw(st.integers(1, logical))
        max_mhz = vcpus * core_mhz
        limit = draw(st.one_of(st.none(), st.integers(50, max_mhz)))
        in_pool = with_pool and draw(st.booleans())
        # reservations stay within a fair slice of the host (so admission passes) and the limit;
        # VMs in the (possibly limited) pool reserve nothing
        reservation = 0 if in_pool else draw(st.integers(0, min(capacity // n, max_mhz, limit or max_mhz)))
        if draw(st.integers(0, 4)) == 0:
            workload = Idle()
        else:
            workload = CpuBound(duty=draw(st.floats(0.05, 1.0)), burst=f"{draw(st.integers(1, 60))}ms",
                                burst_distribution=draw(st.sampled_from(["fixed", "exponential"])))
        power_on_ms = draw(st.one_of(st.just(0), st.integers(0, duration_ms)))
        vms.append(VM(name=f"vm{i}", vcpus=vcpus, pool="pool" if in_pool else None, power_on=f"{power_on_ms}ms",
                      cpu={"shares": draw(st.integers(1, 10_000)), "reservation": f"{reservation}MHz",
                           "limit": f"{limit}MHz" if limit else "unlimited"},
                      workload=workload))
    seed = draw(st.integers(0, 2**32))
    return Scenario(name="prop", seed=seed, duration=f"{duration_ms}ms", sample_interval="1s",
                    host=Host(cores_per_llc=cores, threads_per_core=threads, core_mhz=f"{core_mhz}MHz"),
                    resource_pools=pools, vms=vms)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_accounting_identities(sc: Scenario):
    spec = sc.to_engine_spec()
    sim = Simulation(sc)
    sim.run()
    tables = sim.tables()
    vcpu = tables["vcpu"].to_pandas()
    vm = tables["vm"].to_pandas()
    host = tables["host"].to_pandas()
    power_on = {v["name"]: v["power_on_ns"] for v in spec["vms"]}
    vcpus = {v["name"]: v["vcpus"] for v in spec["vms"]}
    pcpus = sc.host.logical_cpus  # with hyperthreading (the default) every thread is a pCPU
    n_samples = spec["duration_ns"] // SAMPLE_NS
    assert host["time_s"].tolist() == [float(k) for k in range(1, n_samples + 1)]
    assert (host["pcpus"] == pcpus).all()

    # every powered-on vCPU has one row per sample it was on for
    end_ns = np.rint(vcpu["time_s"].to_numpy() * NS).astype(np.int64)
    start_ns = np.maximum(end_ns - SAMPLE_NS, vcpu["vm"].map(power_on).to_numpy(dtype=np.int64))
    span = end_ns - start_ns
    assert (span > 0).all()
    for name, on in power_on.items():
        expected = sum(1 for k in range(1, n_samples + 1) if k * SAMPLE_NS > on) * vcpus[name]
        assert (vcpu["vm"] == name).sum() == expected, name

    # the states partition the powered-on span exactly; no counter is negative or beyond it
    ns = {c: vcpu[c].to_numpy(dtype=np.int64) for c in NS_COLUMNS}
    for c in NS_COLUMNS:
        assert vcpu[c].to_numpy(dtype=np.float64).max(initial=0) < 2**62, c  # no wrapped-around negative
        assert ((ns[c] >= 0) & (ns[c] <= span)).all(), c
    states = ns["run_ns"] + ns["ready_ns"] + ns["wait_ns"] + ns["idle_ns"] + ns["mlmtd_ns"]
    assert (states == span).all()

    # percentages are those nanoseconds over the span
    pct = {c: vcpu[c].to_numpy() for c in PCT_COLUMNS}
    for c in PCT_COLUMNS:
        assert (pct[c] >= 0).all() and (pct[c] <= 100 + 1e-9).all(), c
    assert np.allclose(pct["%RUN"], 100 * ns["run_ns"] / span, atol=1e-6)
    assert np.allclose(pct["%RDY"], 100 * (ns["ready_ns"] + ns["mlmtd_ns"]) / span, atol=1e-6)
    assert np.allclose(pct["%MLMTD"], 100 * ns["mlmtd_ns"] / span, atol=1e-6)
    assert np.allclose(pct["%WAIT"], 100 * (ns["wait_ns"] + ns["idle_ns"]) / span, atol=1e-6)
    assert np.allclose(pct["%IDLE"], 100 * ns["idle_ns"] / span, atol=1e-6)
    assert np.allclose(pct["%VMWAIT"], pct["%WAIT"] - pct["%IDLE"], atol=1e-6)
    full = span == SAMPLE_NS
    total = pct["%RUN"] + pct["%RDY"] + pct["%WAIT"]
    assert np.all(np.abs(total[full] - 100.0) <= 1e-9)

    # a VM's percentages are the sums over its vCPUs
    summed = vcpu.groupby(["time_s", "vm"])[PCT_COLUMNS].sum()
    by_vm = vm.set_index(["time_s", "vm"])[PCT_COLUMNS].loc[summed.index]
    assert len(by_vm) == len(vm)
    assert np.allclose(by_vm.to_numpy(), summed.to_numpy(), atol=1e-6)

    # the host never runs more than it has
    run_per_interval = vcpu.assign(run=ns["run_ns"]).groupby("time_s")["run"].sum()
    assert (run_per_interval <= pcpus * SAMPLE_NS).all()
    util = host.set_index("time_s")["%PCPU_UTIL"]
    for t, run in run_per_interval.items():
        assert util[t] == np.float64(util[t]) and util[t] <= 100 + 1e-9
        assert abs(util[t] - 100 * run / (pcpus * SAMPLE_NS)) < 1e-6

    # the host's capacity is its cores' MHz (hyperthreads add none), and its used_mhz and
    # %PCPU_USED are the vCPUs' charged time over the interval
    core_mhz = spec["host"]["core_mhz"]
    assert (host["capacity_mhz"] == sc.host.cores * core_mhz).all()
    used_per_interval = vcpu.assign(used=ns["used_ns"]).groupby("time_s")["used"].sum()
    by_t = host.set_index("time_s")
    for t, used in used_per_interval.items():
        assert abs(by_t.loc[t, "used_mhz"] - used / SAMPLE_NS * core_mhz) < 1e-6
        assert abs(by_t.loc[t, "%PCPU_USED"] - 100 * used / (pcpus * SAMPLE_NS)) < 1e-6

    # charged time is work the guest had: none for an idle guest; with fixed bursts, at most
    # duty of the powered-on time plus a burst per vCPU (each burst is followed by its think
    # time), with a burst more of slack for rounding
    for v, vm_model in zip(spec["vms"], sc.vms):
        used = sim.counters(v["name"])["used_ns"]
        w = vm_model.workload
        if isinstance(w, Idle):
            assert used == 0, v["name"]
        elif w.burst_distribution == "fixed":
            on_for = max(0, spec["duration_ns"] - v["power_on_ns"])
            assert used <= v["vcpus"] * (w.duty * on_for + 2 * w.burst), (v["name"], used)

    # a VM limit holds over the run (bucket depth and one overdrawn slice per vCPU of slack)
    for v in spec["vms"]:
        if v["limit_mhz"] is None:
            continue
        rate = v["limit_mhz"] / spec["host"]["core_mhz"]
        on_for = max(0, spec["duration_ns"] - v["power_on_ns"])
        used = sim.counters(v["name"])["used_ns"]
        assert used <= rate * (on_for + LIMIT_BURST_NS) + v["vcpus"] * QUANTUM_NS + 1, v["name"]
