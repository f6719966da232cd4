"""Placement policies against independent checks: first fit against a reference written here
with plain loops, DRS-like against its defining properties, CloudSim Plus's placement in closed
form."""

from __future__ import annotations

from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.cluster.placement import HostSlot, VmNeed, place
from vmtwin.exceptions import ScenarioError

GB = 2**30

hosts_st = st.lists(
    st.builds(lambda n, lcpu, mhz, mem: HostSlot(f"h{n}", lcpu, mhz, mem * GB),
              st.integers(0, 0), st.integers(1, 16), st.sampled_from([1000, 2200, 2600, 3000]), st.integers(1, 64)),
    min_size=1, max_size=8,
).map(lambda hs: [HostSlot(f"h{k}", h.logical_cpus, h.core_mhz, h.memory) for k, h in enumerate(hs)])

vm_st = st.builds(
    lambda vcpus, mem, res, lim, util: VmNeed("", vcpus, mem * GB, res, lim, util),
    st.integers(1, 8), st.integers(1, 32), st.sampled_from([0, 0, 0, 500, 2000, 6000]),
    st.sampled_from([None, None, 1000, 4000]), st.floats(0.0, 1.0),
)
vms_st = st.lists(vm_st, min_size=1, max_size=30).map(
    lambda vs: [VmNeed(f"v{i}", v.vcpus, v.memory, min(v.reservation_mhz, v.limit_mhz or 10**9), v.limit_mhz, v.util,
                       where=f"vms[{i}]") for i, v in enumerate(vs)])
ratio_st = st.sampled_from([None, 1.0, 1.5, 4.0])
mem_ratio_st = st.sampled_from([1.0, 0.5, 2.0])


def reference_first_fit(hosts, vms, ratio: Optional[float], mem_ratio: float) -> list[Optional[str]]:
    """First fit as the docs state it, one host at a time; None from the first VM no host takes."""
    vcpus = [0] * len(hosts)
    mem = [0] * len(hosts)
    res = [0] * len(hosts)
    out: list[Optional[str]] = []
    for vm in vms:
        chosen = None
        for k, h in enumerate(hosts):
            if vm.vcpus > h.logical_cpus:
                continue
            if res[k] + vm.reservation_mhz > h.logical_cpus * h.core_mhz:
                continue
            if mem[k] + vm.memory > h.memory * mem_ratio:
                continue
            if ratio is not None and vcpus[k] + vm.vcpus > ratio * h.logical_cpus:
                continue
            chosen = k
            break
        if chosen is None:
            out.append(None)
            return out
        vcpus[chosen] += vm.vcpus
        mem[chosen] += vm.memory
        res[chosen] += vm.reservation_mhz
        out.append(hosts[chosen].name)
    return out


@settings(max_examples=200, deadline=None)
@given(hosts=hosts_st, vms=vms_st, ratio=ratio_st, mem_ratio=mem_ratio_st)
def test_first_fit_matches_the_reference(hosts, vms, ratio, mem_ratio):
    want = reference_first_fit(hosts, vms, ratio, mem_ratio)
    if want and want[-1] is None:
        with pytest.raises(ScenarioError) as exc:
            place(hosts, vms, "first_fit", cluster="c", max_vcpus_per_pcpu=ratio, max_memory_ratio=mem_ratio)
        assert exc.value.path.startswith(f"vms[{len(want) - 1}]")  # names the VM that fits nowhere
        return
    got = place(hosts, vms, "first_fit", cluster="c", max_vcpus_per_pcpu=ratio, max_memory_ratio=mem_ratio)
    assert [d.host for d in got] == want
    assert not any(d.overcommitted for d in got)


def _admissible(h: HostSlot, st_: dict, vm: VmNeed, ratio, mem_ratio) -> bool:
    return (vm.vcpus <= h.logical_cpus and st_["res"] + vm.reservation_mhz <= h.logical_cpus * h.core_mhz
            and st_["mem"] + vm.memory <= h.memory * mem_ratio
            and (ratio is None or st_["vcpus"] + vm.vcpus <= ratio * h.logical_cpus))


def _replay(hosts, vms, decisions) -> list[dict]:
    by_name = {h.name: k for k, h in enumerate(hosts)}
    state = [{"vcpus": 0, "mem": 0, "res": 0} for _ in hosts]
    for vm, d in zip(vms, decisions):
        s = state[by_name[d.host]]
        s["vcpus"] += vm.vcpus
        s["mem"] += vm.memory
        s["res"] += vm.reservation_mhz
    return state


def _entitlement(vm: VmNeed, h: HostSlot) -> float:
    e = max(vm.util * vm.vcpus * h.core_mhz, vm.reservation_mhz)
    return e if vm.limit_mhz is None else min(e, vm.limit_mhz)


@settings(max_examples=200, deadline=None)
@given(hosts=hosts_st, vms=vms_st, ratio=ratio_st, mem_ratio=mem_ratio_st)
def test_drs_never_places_short_of_headroom_when_another_host_has_it(hosts, vms, ratio, mem_ratio):
    try:
        got = place(hosts, vms, "drs", cluster="c", max_vcpus_per_pcpu=ratio, max_memory_ratio=mem_ratio)
    except ScenarioError as exc:
        # an error only for a VM no host admits once the VMs before it are placed
        bad = int(exc.path[len("vms["):].split("]")[0])
        got = place(hosts, vms[:bad], "drs", cluster="c", max_vcpus_per_pcpu=ratio, max_memory_ratio=mem_ratio)
        state = _replay(hosts, vms, got)
        assert not any(_admissible(h, state[k], vms[bad], ratio, mem_ratio) for k, h in enumerate(hosts))
        return
    by_name = {h.name: k for k, h in enumerate(hosts)}
    state = [{"vcpus": 0, "mem": 0, "res": 0, "ent": 0.0} for _ in hosts]
    for vm, d in zip(vms, got):
        ok = [k for k, h in enumerate(hosts) if _admissible(h, state[k], vm, ratio, mem_ratio)]
        room = {k: hosts[k].logical_cpus * hosts[k].core_mhz - state[k]["ent"] - _entitlement(vm, hosts[k])
                for k in ok}
        c = by_name[d.host]
        assert c in ok, "placed on a host that does not admit the VM"
        tol = 1e-6
        if any(r >= -tol for r in room.values()):
            assert room[c] >= -tol and not d.overcommitted
            load = {k: (state[k]["ent"] + _entitlement(vm, hosts[k])) / (hosts[k].logical_cpus * hosts[k].core_mhz)
                    for k in ok if room[k] >= 0}
            assert load[c] <= min(load.values()) + 1e-12  # the least loaded host after placing
        else:
            assert d.overcommitted and room[c] >= max(room.values()) - tol
        assert d.entitlement_mhz == pytest.approx(_entitlement(vm, hosts[c]))
        s = state[c]
        s["vcpus"] += vm.vcpus
        s["mem"] += vm.memory
        s["res"] += vm.reservation_mhz
        s["ent"] += _entitlement(vm, hosts[c])
        assert d.headroom_mhz == pytest.approx(hosts[c].logical_cpus * hosts[c].core_mhz - s["ent"])


def test_drs_spreads_where_first_fit_packs():
    hosts = [HostSlot(f"h{k}", 4, 2000, 64 * GB) for k in range(4)]
    vms = [VmNeed(f"v{i}", 1, GB, 0, None, 0.5) for i in range(8)]
    ff = place(hosts, vms, "first_fit")
    drs = place(hosts, vms, "drs")
    assert [d.host for d in ff] == ["h0"] * 8  # no bound: admission control alone never refuses
    assert [d.host for d in drs] == ["h0", "h1", "h2", "h3"] * 2


@pytest.mark.parametrize("n_vms, n_hosts", [(1052, 800), (200, 150), (7, 4)])
def test_first_fit_is_cloudsim_plus_placement(n_vms, n_hosts):
    """1-vCPU VMs on 2-pCPU hosts at one vCPU per pCPU: VM i on host i // 2 (RESULTS.md)."""
    hosts = [HostSlot(f"h{k}", 2, 1000, 4 * GB) for k in range(n_hosts)]
    vms = [VmNeed(f"v{i}", 1, GB, 0, None, 0.1) for i in range(n_vms)]
    got = place(hosts, vms, "first_fit", max_vcpus_per_pcpu=1.0)
    assert [d.host for d in got] == [f"h{i // 2}" for i in range(n_vms)]


def test_pinned_vms_go_first_and_stay():
    hosts = [HostSlot("a", 2, 1000, 4 * GB), HostSlot("b", 2, 1000, 4 * GB)]
    vms = [VmNeed("free", 1, GB, 0, None, 1.0), VmNeed("pinned", 2, GB, 0, None, 1.0, pin="a", where="vms[1]")]
    got = place(hosts, vms, "drs")
    assert [(d.vm, d.host, d.pinned) for d in got] == [("free", "b", False), ("pinned", "a", True)]
    with pytest.raises(ScenarioError, match=r"vms\[1\]\.host: got 'zz'"):
        place(hosts, [VmNeed("pinned", 2, GB, 0, None, 1.0, pin="zz", where="vms[1]")], "drs")
    with pytest.raises(ScenarioError, match=r"vms\[1\]\.host: got 'a'.*at least 4 logical CPUs"):
        place(hosts, [VmNeed("wide", 4, GB, 0, None, 1.0, pin="a", where="vms[1]")], "drs")
