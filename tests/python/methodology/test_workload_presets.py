"""The throughput workloads of the execution-speed model (SPECjbb-like, kernel-compile-like) run through
the engine, against closed forms computed here from the preset's numbers; and the scenario's perf
fields refuse bad input naming the field."""

from __future__ import annotations

import pytest

from vmtwin import Simulation
from vmtwin.exceptions import ScenarioError
from vmtwin.methodology.throughput import from_results
from vmtwin.scenario import VM, CpuBound, Host, Scenario, parse_scenario
from vmtwin.scenario.perf import SPECJBB_SHARING_RATIO, PerfMachine, VmPerf, preset_profile

MHZ = 2600


def _results(tmp_path, name, cores, vms, llc=None, seconds=20):
    sc = Scenario(name=name, duration=f"{seconds}s", host=Host(cores_per_llc=cores, core_mhz=f"{MHZ}MHz"), vms=vms,
                  perf=PerfMachine(llc=llc) if llc else None)
    sim = Simulation(sc)
    sim.run()
    return sim.write(tmp_path / name)


def _vm(name, vcpus, preset, duty=1.0, **perf):
    return VM(name=name, vcpus=vcpus, workload=CpuBound(duty=duty, burst="10ms"), perf=VmPerf(preset=preset, **perf))


def _cycles_per_unit(p: dict, share_bytes: float) -> float:
    """Cycles per unit of work from the profile's numbers, for an LLC share (default machine costs)."""
    stall, total = 100.0, 0.0
    ws = p["working_set_bytes"]
    for name in ("user", "kernel", "hyp"):
        layer = p[name]
        if name == "hyp" and not p["virtualized"]:
            continue
        walk = 4 * 12.5 + (20 * 3.0 if p["virtualized"] and name != "hyp" else 0.0)  # default 4/4 levels
        miss = layer["llc_base_miss_ratio"] + (1 - layer["llc_base_miss_ratio"]) * max(0.0, 1 - share_bytes / ws)
        cpi = layer["cpi_core"] + layer["walks_per_kinstr"] / 1000 * walk + layer["llc_refs_per_kinstr"] / 1000 * miss * stall
        total += layer["instructions_per_unit"] * cpi
    return total


def test_specjbb_alone_vs_sharing_an_llc_is_the_calibration_point(tmp_path):
    """B6 (Figure 10): a warehouse alone on Host1's 4 MB LLC does 1.4x the work of one sharing it."""
    alone = _results(tmp_path, "alone", 1, [_vm("jbb", 1, "specjbb")], llc="4MB")
    shared = _results(tmp_path, "shared", 2, [_vm("jbb", 1, "specjbb"), _vm("other", 1, "specjbb")], llc="4MB")
    a, s = from_results(alone, "jbb"), from_results(shared, "jbb")
    assert a["rate_per_s"] / s["rate_per_s"] == pytest.approx(SPECJBB_SHARING_RATIO, rel=0.005)
    # the rate in bops per second is the clock over the cycles per bop
    p = preset_profile("specjbb")
    assert a["rate_per_s"] == pytest.approx(MHZ * 1e6 / _cycles_per_unit(p, 4 << 20), rel=1e-6)


def test_kernel_compile_finishes_when_its_instructions_are_retired(tmp_path):
    """make -j 8 on 4 vCPUs, all busy: done after cycles-per-compile / (4 x f) seconds."""
    res = _results(tmp_path, "build", 4, [_vm("build", 4, "kernel-compile")], seconds=240)
    p = preset_profile("kernel-compile")
    expect = _cycles_per_unit(p, (8 << 20) / 4) / (4 * MHZ * 1e6)
    done = from_results(res, "build")["completion_s"]
    assert done == pytest.approx(expect, rel=0.002)  # the scheduler's first slices start a little late
    # insensitive to LLC sharing: its working set fits a quarter of the LLC
    assert _cycles_per_unit(p, (8 << 20) / 4) == _cycles_per_unit(p, 8 << 20)


def test_native_and_virtual_differ_by_the_walks_and_the_hypervisor(tmp_path):
    virt = from_results(_results(tmp_path, "v", 1, [_vm("jbb", 1, "specjbb")]), "jbb")
    native = from_results(_results(tmp_path, "n", 1, [_vm("jbb", 1, "specjbb", virtualized=False)]), "jbb")
    pv, pn = preset_profile("specjbb"), preset_profile("specjbb", virtualized=False)
    assert native["rate_per_s"] / virt["rate_per_s"] == pytest.approx(
        _cycles_per_unit(pv, 8 << 20) / _cycles_per_unit(pn, 8 << 20), rel=1e-6)


def test_overrides_lay_over_the_preset():
    perf = VmPerf(preset="specjbb", working_set="8MB", user={"cpi_core": 1.5, "walk": {"guest_levels": 3}})
    p = perf.to_engine()
    assert p["working_set_bytes"] == 8 << 20 and p["user"]["cpi_core"] == 1.5
    assert p["user"]["walk"] == {"guest_levels": 3}
    assert p["user"]["instructions_per_unit"] == preset_profile("specjbb")["user"]["instructions_per_unit"]


@pytest.mark.parametrize("perf, where", [
    ({"preset": "tpcc"}, "vms[0].perf.preset"),
    ({"preset": "specjbb", "user": {"cpi_core": 0}}, "vms[0].perf.user.cpi_core"),
    ({"preset": "specjbb", "kernel": {"walk": {"host_levels": 6}}}, "vms[0].perf.kernel.walk.host_levels"),
    ({"user": {"walks_per_kinstr": -1}}, "vms[0].perf.user.walks_per_kinstr"),
])
def test_bad_perf_fields_name_the_field(perf, where):
    text = ("host: {cores_per_llc: 2}\nvms:\n  - name: a\n    workload: {type: cpu_bound, duty: 1.0}\n"
            f"    perf: {perf}\n")
    with pytest.raises(ScenarioError, match=where.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(text)


def test_a_profile_without_work_is_refused_by_the_engine_naming_the_field():
    sc = Scenario(host=Host(cores_per_llc=1), vms=[VM(name="a", workload=CpuBound(duty=1.0),
                                                      perf=VmPerf(user={"instructions_per_unit": 0.0}))])
    with pytest.raises(ScenarioError, match=r"vms\[0\]\.perf\.user\.instructions_per_unit"):
        Simulation(sc)
