"""The report's cluster view against DuckDB over the same results folder."""

from __future__ import annotations

import pytest
from html_table import table_rows

from vmtwin.cluster.runner import run_cluster
from vmtwin.report import render_report
from vmtwin.scenario import parse_scenario

SCENARIO = """
name: report
duration: 10s
sample_interval: 1s
clusters:
  - name: c
    placement: first_fit
    max_vcpus_per_pcpu: 2.0
    hosts:
      - {name: a, cores_per_llc: 2}
      - {name: b, cores_per_llc: 4, count: 2}
vms:
  - {name: hot, vcpus: 2, count: 2, workload: {type: cpu_bound, duty: 1.0}}
  - {name: cool, vcpus: 1, count: 3, workload: {type: cpu_bound, duty: 0.2}}
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    res = run_cluster(parse_scenario(SCENARIO), tmp_path_factory.mktemp("r") / "run", workers=1)
    return res, render_report(res).read_text()


def test_hosts_table_is_every_host_by_utilisation(page):
    res, html = page
    rows = table_rows(html, "cluster-hosts")
    want = res.sql("""
        WITH r AS (SELECT host, time_s, sum("%RDY") / sum(vcpus) AS per_vcpu FROM vm GROUP BY host, time_s)
        SELECT h.host, avg(used_mhz / capacity_mhz) * 100 AS util, (SELECT avg(per_vcpu) FROM r WHERE r.host = h.host) AS rdy
        FROM host h GROUP BY h.host ORDER BY util DESC, h.host""")
    assert [r[0] for r in rows] == want["host"].tolist()
    for r, w in zip(rows, want.to_dict("records")):
        assert float(r[6]) == pytest.approx(w["util"], abs=0.06)
        if r[8] != "–":
            assert float(r[8]) == pytest.approx(w["rdy"], abs=0.06)
    assert "a" in [r[0] for r in rows] and len(rows) == 3
    assert "report-ok" in html


def test_worst_vms_are_those_with_the_most_ready_time(page):
    res, html = page
    rows = table_rows(html, "cluster-worst-vms")
    want = res.sql('SELECT vm, host, avg("%RDY") AS r FROM vm GROUP BY vm, host ORDER BY r DESC, vm')
    assert [(r[0], r[1]) for r in rows] == list(zip(want["vm"], want["host"]))
    assert float(rows[0][4]) == pytest.approx(want["r"].iloc[0], abs=0.06)
    assert float(rows[0][4]) > 10  # the two 2-vCPU busy VMs share host a's 2 pCPUs


def test_the_rest_of_the_page_sees_one_vm_per_name(page):
    res, html = page
    names = [r[0] for r in table_rows(html, "vm-summary")]
    assert sorted(names) == sorted(res.sql("SELECT vm FROM placement")["vm"])
