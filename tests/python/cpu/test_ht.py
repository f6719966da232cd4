"""Hyperthreading through the scenario layer (docs/hyperthreading.md).

A 4-core x 2-thread host with 8 busy one-vCPU VMs: with hyperthreading the host does
4 x (1 + g) cores of work, each VM (1 + g) / 2 of a core, %RUN 100 and %USED 50 (esxtop's
charge beside a busy sibling); switched off it runs one vCPU per core. Work is what the
guests complete, read from the vcpu table's own counters: the closed form is the oracle.
"""

from __future__ import annotations

import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.models import VM, CpuBound, CpuScheduler, Host, Scenario, VmCpu
from vmtwin.simulation import run_scenario

GAIN = 0.25  # the engine's default ht_core_gain


def _scenario(n: int, **sched) -> Scenario:
    return Scenario(
        name="ht", seed=1, duration="20s", sample_interval="2s",
        host=Host(sockets=1, cores_per_llc=4, threads_per_core=2, core_mhz="2000MHz"),
        cpu_scheduler=CpuScheduler(**sched),
        vms=[VM(name="v", count=n, workload=CpuBound(duty=1.0, burst="10ms"))],
    )


def _tables(s: Scenario):
    t = run_scenario(s).tables()
    return t["host"].to_pandas(), t["vm"].to_pandas(), t["pcpu"].to_pandas()


def test_eight_busy_vms_on_four_two_thread_cores():
    host, vm, pcpu = _tables(_scenario(8))
    assert set(host["pcpus"]) == {8}
    assert set(host["capacity_mhz"]) == {8000.0}  # cores x MHz, as vCenter shows it
    steady = vm[vm["time_s"] > 2]
    assert steady["%RUN"].min() > 99.0
    assert steady["%USED"].between(49.0, 51.0).all()
    # used MHz = the capacity; the work done is 4 x (1 + g) cores (each thread (1 + g) / 2)
    assert host[host["time_s"] > 2]["used_mhz"].between(7900, 8100).all()
    p = pcpu[pcpu["time_s"] > 2]
    assert p["%PCPU_UTIL"].min() > 99.0 and p["%PCPU_USED"].between(49.0, 51.0).all()
    assert p["%CORE_UTIL"].min() > 99.0


def test_hyperthreading_off_runs_one_vcpu_per_core():
    host, vm, _ = _tables(_scenario(8, hyperthreading=False))
    assert set(host["pcpus"]) == {4}
    steady = vm[vm["time_s"] > 2]
    # 8 VMs share 4 cores: half a core each, charged in full
    assert steady["%RUN"].between(45.0, 55.0).all()
    assert (steady["%USED"] - steady["%RUN"]).abs().max() < 1e-6


def test_ht_sharing_none_reaches_the_engine_and_keeps_cores_whole():
    s = _scenario(4)
    s.vms[0].cpu = VmCpu(ht_sharing="none")
    spec = s.to_engine_spec()
    assert spec["cpu_sched"]["ht_sharing"] == {f"v-{k}": "none" for k in range(1, 5)}
    _, vm, pcpu = _tables(s)
    # 4 VMs that never share a core on 4 cores: each a whole core, charged in full
    steady = vm[vm["time_s"] > 2]
    assert steady["%USED"].min() > 99.0


def test_bad_ht_fields_name_the_field():
    with pytest.raises(ScenarioError, match=r"ht_core_gain"):
        CpuScheduler(ht_core_gain=1.5)
    with pytest.raises(ScenarioError, match=r"ht_sharing"):
        VmCpu(ht_sharing="sometimes")


def _esxtop(s: Scenario, tmp_path) -> "pd.DataFrame":
    import pandas as pd

    from vmtwin.export.esxtop import to_esxtop_csv

    res = run_scenario(s, tmp_path / "run")
    return pd.read_csv(to_esxtop_csv(res, tmp_path / "esxtop.csv"))


def test_esxtop_export_has_core_util_on_a_hyperthreaded_host_only(tmp_path):
    """Four busy VMs on four two-thread cores: whole cores first, so each core runs one thread
    busy and one idle. esxtop's per-pCPU % Util Time is then 100 on one thread of each core and 0
    on the other, and % Core Util Time 100 on both (the core is busy while either thread is);
    _Total's % Core Util Time is 100, its % Util Time 50. Without hyperthreading in the hardware
    esxtop has no core column, nor does the export."""
    df = _esxtop(_scenario(4), tmp_path / "ht")
    steady = df.iloc[2:]
    core = [c for c in df.columns if c.endswith("% Core Util Time")]
    assert len(core) == 9  # 8 pCPUs and _Total
    per = [c for c in core if "_Total" not in c]
    assert (steady[per] > 99.0).all().all()
    util = steady[[c.replace("% Core Util Time", "% Util Time") for c in per]].to_numpy()
    assert sorted(util.mean(axis=0).round()) == [0.0] * 4 + [100.0] * 4
    total = next(c for c in core if "_Total" in c)
    assert steady[total].min() > 99.0
    assert steady[total.replace("% Core Util Time", "% Util Time")].between(49.0, 51.0).all()
    s = _scenario(4)
    s.host = Host(sockets=1, cores_per_llc=4, threads_per_core=1, core_mhz="2000MHz")
    assert not any("Core Util" in c for c in _esxtop(s, tmp_path / "noht").columns)
