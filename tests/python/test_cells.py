"""Scheduler cells, vSMP consolidation and inter-VM cache affinity from the scenario file
(docs/cells.md): the fields reach the engine, a VM wider than a cell is refused by the CLI with
exit status 2 naming the field and writing nothing, and cells cost what the hand count says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "cli"))
from cli_helpers import assert_user_error, run_vmtwin  # noqa: E402

from vmtwin.scenario import parse_scenario  # noqa: E402
from vmtwin.simulation import Simulation  # noqa: E402

HOST1 = "host: {name: host1, sockets: 2, llcs_per_node: 2, cores_per_llc: 2, memory: 32GB}\n"

THREE_3 = HOST1 + """
duration: 10s
cpu_scheduler: {cell_size: CELL}
vms:
  - {name: vm, count: 3, vcpus: 3, workload: {type: cpu_bound, duty: 1.0, burst_distribution: fixed}}
"""


def test_fields_reach_the_engine_spec():
    sc = parse_scenario(HOST1 + """
cpu_scheduler: {cell_size: 4, cell_rebalance_period: 3s, cell_rebalance_imbalance: 0.2, inter_vm_cache_affinity: false}
vms:
  - {name: web, vcpus: 2, cpu: {vsmp_consolidate: true, communicates_with: [db]}, workload: {type: idle}}
  - {name: db, vcpus: 1, workload: {type: idle}}
""")
    sched = sc.to_engine_spec()["cpu_sched"]
    assert sched["cell_size"] == 4
    assert sched["cell_rebalance_period_ns"] == 3_000_000_000
    assert sched["cell_rebalance_imbalance"] == 0.2
    assert sched["inter_vm_cache_affinity"] is False
    assert sched["vsmp_consolidate"] == ["web"]
    assert sched["communicating_vms"] == [["web", "db"]]
    # off by default: nothing is sent, the engine's defaults hold
    plain = parse_scenario(HOST1 + "vms: [{name: a, workload: {type: idle}}]\n").to_engine_spec()["cpu_sched"]
    assert not {"cell_size", "vsmp_consolidate", "communicating_vms"} & set(plain)


def _used_pcpus(cell: int) -> dict[str, float]:
    sim = Simulation(parse_scenario(THREE_3.replace("CELL", str(cell))))
    sim.run()
    vm = sim.tables()["vm"].to_pandas()
    return (vm.groupby("vm")["%USED"].mean() / 100).to_dict()


def test_cells_fragment_as_counted_by_hand():
    """Three busy 3-vCPU VMs on two 4-pCPU cells: vm-1 and vm-3 share cell 0 (2 pCPUs each),
    vm-2 has cell 1 and can use 3 of its 4; no whole-VM move narrows the gap. 7 of 8 pCPUs, against
    8/3 each (all 8) without cells."""
    with_cells = _used_pcpus(4)
    assert with_cells == pytest.approx({"vm-1": 2.0, "vm-2": 3.0, "vm-3": 2.0}, abs=0.03)
    without = _used_pcpus(0)
    assert without == pytest.approx({k: 8 / 3 for k in without}, abs=0.05)


def test_cells_with_hyperthreading_as_counted_by_hand():
    """The same three busy 3-vCPU VMs with two threads per core: a cell of 4 cores holds 8
    threads (pCPUs 0-7 and 8-15). Every vCPU runs all the time (%RUN 300 per VM, 9 of 16
    threads). vm-2, alone in cell 1, starts on pCPUs 9, 10 and 11 (spread by VM number): 11's
    sibling 10 is busy, and research/cpu.md C21's order puts a partial core of the vCPU's own
    LLC (8-11) before a whole core of another LLC (12-15), so it stays beside 10: charged
    1 + 0.5 + 0.5 = 2 cores (%USED 200, esxtop's half charge beside a busy sibling). vm-1 and
    vm-3 share cell 0: 6 vCPUs on 4 cores, 2 cores with both threads busy and 2 with one, so
    2 x 2 x 0.5 + 2 x 1 = 4 cores between them (%USED 400). Cell 1's other LLC stays idle: the
    cell keeps cell 0's VMs out of it."""
    hyper = THREE_3.replace("CELL", "4").replace("cores_per_llc: 2,", "cores_per_llc: 2, threads_per_core: 2,")
    sim = Simulation(parse_scenario(hyper))
    sim.run()
    vm = sim.tables()["vm"].to_pandas()
    steady = vm[vm["time_s"] > 2].groupby("vm")[["%USED", "%RUN"]].mean()
    assert steady.loc["vm-2", "%USED"] == pytest.approx(200.0, abs=3.0)
    assert steady.loc["vm-1", "%USED"] + steady.loc["vm-3", "%USED"] == pytest.approx(400.0, abs=3.0)
    assert (steady["%RUN"] > 297.0).all()
    pcpu = sim.tables()["pcpu"].to_pandas()
    assert pcpu[pcpu["pcpu"] >= 12]["%PCPU_UTIL"].max() == 0.0


@pytest.mark.parametrize("cell, expected", [
    (2, "vms[0].vcpus"),           # a 3-vCPU VM in 2-core cells
    (3, "cpu_scheduler.cell_size"),  # 3 cores is not whole 2-core LLCs
])
def test_cli_refuses_what_cells_cannot_hold(tmp_path, cell, expected):
    scenario = tmp_path / "cells.yaml"
    scenario.write_text(THREE_3.replace("CELL", str(cell)))
    out = tmp_path / "out"
    res = run_vmtwin("run", scenario, "-o", out, "-q")
    assert_user_error(res, expected)
    assert not out.exists() or not any(out.iterdir())


def test_bad_cell_fields_name_their_path():
    from vmtwin.exceptions import ScenarioError

    with pytest.raises(ScenarioError) as e:
        parse_scenario(THREE_3.replace("CELL", "-1"))
    assert "cpu_scheduler.cell_size" in str(e.value)


LOCKED = """
name: lock
duration: 10s
host: {name: h, cores_per_llc: 2, core_mhz: 2000MHz}
perf: {sched_lock_hold: HOLD, resume_refill: false}
cpu_scheduler: {cell_size: CELL}
vms:
  - {name: a, vcpus: 1, workload: {type: cpu_bound, duty: 0.5, burst: 1ms, burst_distribution: fixed}, perf: {preset: kernel-compile}}
  - {name: b, vcpus: 1, workload: {type: cpu_bound, duty: 0.5, burst: 1ms, burst_distribution: fixed}, perf: {preset: kernel-compile}}
"""


def _locked(cell: int, hold: str):
    sim = Simulation(parse_scenario(LOCKED.replace("CELL", str(cell)).replace("HOLD", hold)))
    sim.run()
    return sim.tables()["vcpu_perf"].to_pandas()


def test_the_cell_lock_waits_as_md1_by_hand():
    """Two 1-vCPU VMs, each running 1 ms then thinking 1 ms (fixed), on a 2-pCPU cell: each keeps
    its own pCPU, so each pCPU starts 500 slices a second. An invocation waits behind the other
    pCPU's: rho = 500/s x 100 us = 0.05, W = rho h / (2 (1 - rho)) = 2.6316 us (M/D/1), and a vCPU
    waits 1000 x W = 2.6316 ms per 2 s sample, 5.263e6 cycles at 2 GHz, which its work loses.
    Without cells (ESX 4's per-pCPU lock) or with no hold, nothing waits. Returns to a cache
    others used are not charged here (`resume_refill: false`): the other VM's bursts evict part of
    each vCPU's LLC footprint between its own, a cost tested apart (cpu/cache.rs) that would make
    the work lost differ from the lock's share alone (by 4e-5 relative)."""
    cell = _locked(2, "100us")
    wait = 1000 * 0.05 * 100e-6 / (2 * 0.95)
    assert cell["lock_wait_cycles"].to_list() == pytest.approx([wait * 2e9] * len(cell), rel=1e-9)
    free = _locked(0, "100us")
    assert (free["lock_wait_cycles"] == 0).all()
    assert (_locked(2, "0ns")["lock_wait_cycles"] == 0).all()
    # the cycles waited retire nothing: work falls by the waited share of the run time
    lost = 1 - cell["work_units"].sum() / free["work_units"].sum()
    assert lost == pytest.approx(wait / 1.0, rel=1e-6)


def test_a_negative_lock_hold_is_refused():
    with pytest.raises(Exception, match="sched_lock_hold"):
        parse_scenario(LOCKED.replace("CELL", "2").replace("HOLD", "-1us"))
