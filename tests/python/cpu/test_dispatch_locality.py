"""Dispatches by how far they moved the vCPU (``sched_stats``: ``dispatches_same_pcpu``,
``_same_core``, ``_same_llc``, ``_same_node``, ``_other_node``; docs/cpu-scheduler.md, Counters).

The oracle is the topology: on a host whose only pCPUs are the two threads of one core, every
move is to the sibling thread; on one whose LLCs hold one core each, no move stays in an LLC
without staying in the core; on one node, none crosses a node. On two sockets the cross-node
count equals the vcpu table's summed ``node_migrations`` (per-vCPU counters, sampled), and the
levels add up to the dispatches.
"""

from __future__ import annotations

from vmtwin.scenario.models import VM, CpuBound, Host, Scenario
from vmtwin.simulation import run_scenario

LEVELS = ("same_pcpu", "same_core", "same_llc", "same_node", "other_node")


def _run(host: Host, vms: int) -> tuple[dict, object]:
    s = Scenario(name="locality", seed=3, duration="10s", sample_interval="2s", host=host,
                 vms=[VM(name="v", count=vms, workload=CpuBound(duty=0.6, burst="3ms"))])
    sim = run_scenario(s)
    stats = dict(sim._sim.sched_stats())
    assert sum(stats[f"dispatches_{k}"] for k in LEVELS) == stats["dispatches"]
    return stats, sim.tables()["vcpu"].to_pandas()


def test_one_two_thread_core_moves_only_to_the_sibling():
    stats, _ = _run(Host(cores_per_llc=1, threads_per_core=2), vms=3)
    assert stats["migrations"] > 100
    assert stats["dispatches_same_core"] == stats["migrations"] == stats["core_migrations"]
    assert stats["dispatches_same_llc"] == stats["dispatches_same_node"] == stats["dispatches_other_node"] == 0


def test_one_core_per_llc_moves_to_the_sibling_or_another_llc():
    stats, _ = _run(Host(llcs_per_node=2, cores_per_llc=1, threads_per_core=2), vms=6)
    assert stats["dispatches_same_core"] > 0 and stats["dispatches_same_node"] > 0
    assert stats["dispatches_same_llc"] == 0 and stats["dispatches_other_node"] == 0
    assert stats["dispatches_same_node"] == stats["llc_migrations"]


def test_without_hyperthreading_no_move_stays_in_the_core():
    stats, _ = _run(Host(cores_per_llc=4), vms=6)
    assert stats["migrations"] > 0
    assert stats["dispatches_same_core"] == stats["core_migrations"] == 0
    assert stats["dispatches_same_llc"] == stats["migrations"]


def test_cross_node_dispatches_match_the_vcpu_table():
    stats, vcpu = _run(Host(sockets=2, cores_per_llc=2, threads_per_core=2), vms=12)
    assert stats["dispatches_other_node"] > 0
    assert stats["dispatches_other_node"] == int(vcpu["node_migrations"].sum())
    assert stats["migrations"] == int(vcpu["migrations"].sum())
    local = stats["dispatches_same_pcpu"] + stats["dispatches_same_core"] + stats["dispatches_same_llc"]
    assert local == stats["dispatches"] - int(vcpu["llc_migrations"].sum())
