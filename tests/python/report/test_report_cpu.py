"""The report's CPU scheduling views (issue 9, "the report and export show it"): the per-vCPU
table (%RDY against the 5% / 10% guide lines, %CSTP, NUMA home node, migrations), the per-core
utilisation figure and the per-VM %CSTP figure, on runs whose values follow from the set-up:

- two busy 1-vCPU VMs on one pCPU each wait half the time (%RDY 50: 'problem');
- a busy 1-vCPU VM alone on a 2-pCPU host never waits and never moves;
- a 2-vCPU VM under strict co-scheduling beside a busy 1-vCPU VM on 2 pCPUs is co-stopped while
  the other holds a pCPU (%CSTP > 0), which relaxed-4x's per-vCPU rule never needs here;
- a VM on a two-node host has a home node, and none with NUMA homes off.
"""

from __future__ import annotations

import re

import pytest

from vmtwin.report.cpu import rdy_band, vcpu_sched_summary
from vmtwin.report.html import render_report
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation


def _run(yaml: str, tmp_path, name: str):
    sim = Simulation(parse_scenario(yaml))
    sim.run()
    return sim.write(tmp_path / name)


def _table(page: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table_id}".*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_rdy_bands_follow_the_guide_lines():
    assert [rdy_band(x) for x in (0.0, 4.99, 5.0, 9.99, 10.0, 60.0, float("nan"))] == [
        "", "", "watch", "watch", "problem", "problem", ""]


def test_two_vms_on_one_pcpu_are_a_problem_and_a_lone_vm_is_not(tmp_path):
    crowded = _run("""
name: crowded
duration: 10s
host: {name: h, cores_per_llc: 1}
vms:
  - {name: v, count: 2, vcpus: 1, workload: {type: cpu_bound, duty: 1.0, burst: 10ms}}
""", tmp_path, "crowded")
    rows = _table(render_report(crowded).read_text(), "vcpu-sched")
    assert sorted(r[0] for r in rows) == ["v-1", "v-2"]
    for r in rows:
        assert float(r[3]) == pytest.approx(50.0, abs=2.0)  # mean %RDY
        assert r[4] == "problem"
        assert r[6] == "–"  # one node: not NUMA-managed
    alone = _run("""
name: alone
duration: 10s
host: {name: h, cores_per_llc: 2}
vms:
  - {name: v, vcpus: 1, workload: {type: cpu_bound, duty: 1.0, burst: 10ms}}
""", tmp_path, "alone")
    page = render_report(alone).read_text()
    (row,) = _table(page, "vcpu-sched")
    assert float(row[3]) == 0.0 and row[4] == "" and row[8] == "0"
    assert "Migrations: 0 in all" in page


def test_strict_co_scheduling_shows_co_stop(tmp_path):
    yaml = """
name: cstp
duration: 10s
host: {name: h, cores_per_llc: 2}
cpu_scheduler: {cosched_mode: MODE}
vms:
  - {name: wide, vcpus: 2, workload: {type: cpu_bound, duty: 1.0, burst: 10ms}}
  - {name: one, vcpus: 1, workload: {type: cpu_bound, duty: 1.0, burst: 10ms}}
"""
    strict = vcpu_sched_summary(_run(yaml.replace("MODE", "strict"), tmp_path, "strict").table("vcpu"))
    wide = strict[strict["vm"] == "wide"]
    assert (wide["mean %CSTP"] > 1.0).all()
    assert (strict[strict["vm"] == "one"]["mean %CSTP"] == 0.0).all()
    # the worst by %RDY + %CSTP come first
    key = (strict["mean %RDY"] + strict["mean %CSTP"]).to_list()
    assert key == sorted(key, reverse=True)
    page = render_report(_run(yaml.replace("MODE", "strict"), tmp_path, "strict2")).read_text()
    assert 'id="fig-vm-costop"' in page and "%CSTP (co-stop) per VM" in page


@pytest.mark.parametrize("homes", [True, False])
def test_numa_home_nodes_are_shown(tmp_path, homes):
    res = _run(f"""
name: numa
duration: 6s
host: {{name: h, sockets: 2, cores_per_llc: 2}}
cpu_scheduler: {{numa_home_nodes: {'true' if homes else 'false'}}}
vms:
  - {{name: v, vcpus: 2, workload: {{type: cpu_bound, duty: 1.0, burst: 10ms}}}}
""", tmp_path, f"numa-{homes}")
    rows = _table(render_report(res).read_text(), "vcpu-sched")
    assert {r[6] for r in rows} == ({"0"} if homes else {"–"})  # the least loaded node: the first


def test_the_core_figure_has_one_row_per_core(tmp_path):
    res = _run("""
name: ht
duration: 4s
host: {name: h, cores_per_llc: 4, threads_per_core: 2}
vms:
  - {name: v, count: 4, vcpus: 1, workload: {type: cpu_bound, duty: 1.0, burst: 10ms}}
""", tmp_path, "ht")
    page = render_report(res).read_text()
    assert "Cores: all 4 cores" in page and "Physical CPUs: all 8 pCPUs" in page
    from vmtwin.report.figures import core_figure

    fig = core_figure(res.table("pcpu"), threads_per_core=2)
    heat, bar = fig.data
    assert sorted(heat.y) == [f"core h/{c}" for c in range(4)]
    # four busy VMs, whole cores first: every core busy all the time (one thread of each)
    assert min(bar.x) > 99.0
