"""esxtop export of a cluster folder: every host's objects under its own machine prefix, each VM
under the host it ran on, values straight from that host's rows (checked with DuckDB)."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from vmtwin.cluster.runner import run_cluster
from vmtwin.exceptions import ScenarioError
from vmtwin.export.esxtop import to_esxtop_csv
from vmtwin.scenario import parse_scenario

MIXED = """
name: export-fluid
seed: 5
duration: 20s
sample_interval: 2s
fidelity: fluid
resource_pools:
  - {name: capped, cpu: {limit: 1500MHz, expandable_reservation: false}}
clusters:
  - name: prod
    placement: drs
    hosts:
      - {name: big, cores_per_llc: 8, core_mhz: 2600MHz}
      - {name: small, cores_per_llc: 2, core_mhz: 2000MHz, count: 3}
vms:
  - {name: db, vcpus: 4, host: big, cpu: {reservation: 4000MHz}, workload: {type: cpu_bound, duty: 0.8}}
  - {name: web, vcpus: 2, count: 7, workload: {type: cpu_bound, duty: 0.6}}
  - {name: lim, vcpus: 2, pool: capped, cpu: {limit: 900MHz}, workload: {type: cpu_bound, duty: 0.9}}
"""

PATH = re.compile(r"^\\\\([^\\]+)\\(.+)\\([^\\]+)$")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_cluster(parse_scenario(MIXED), tmp_path_factory.mktemp("c") / "r", workers=1)


def _read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    cols = {h: np.array([float(r[i]) if r[i] else np.nan for r in body]) for i, h in enumerate(header[1:], start=1)}
    return header, cols


def test_each_host_has_its_own_objects_and_values(run, tmp_path):
    header, cols = _read(to_esxtop_csv(run, tmp_path / "c.csv"))
    hosts = run.sql("SELECT DISTINCT host FROM host")["host"].tolist()
    parsed = [PATH.match(h).groups() for h in header[1:]]
    assert {m for m, _, _ in parsed} == set(hosts)
    # hosts come one after the other, never interleaved
    order = [m for m, _, _ in parsed]
    assert order == sorted(order, key=order.index) and len(list(dict.fromkeys(order))) == len(hosts)
    placed = dict(run.sql("SELECT vm, host FROM placement").values.tolist())
    for machine, obj, counter in parsed:
        g = re.match(r"^Group Cpu\((\d+):(.+)\)$", obj)
        if g and g.group(2) in placed:
            assert placed[g.group(2)] == machine, obj  # a VM only under its own host
    for host in hosts:
        want = run.sql(f"SELECT time_s, \"%PCPU_UTIL\" AS u FROM host WHERE host = '{host}' ORDER BY time_s")
        got = cols[f"\\\\{host}\\Physical Cpu(_Total)\\% Util Time"]
        assert np.allclose(got, want["u"].to_numpy(), rtol=0, atol=1e-9)
        pcpus = int(run.sql(f"SELECT max(pcpus) AS p FROM host WHERE host = '{host}'")["p"].iloc[0])
        assert sum(1 for m, o, c in parsed if m == host and o.startswith("Physical Cpu(") and o != "Physical Cpu(_Total)"
                   and c == "% Util Time") == pcpus
        vcpus = run.sql(f"SELECT count(DISTINCT (vm_id, vcpu)) AS n FROM vcpu WHERE host = '{host}'")["n"].iloc[0]
        assert sum(1 for m, o, c in parsed if m == host and o.startswith("Vcpu(") and c == "% Ready") == vcpus
    # a VM's group: its own %RDY by time
    vm, host = run.sql("SELECT vm, host FROM vm ORDER BY \"%RDY\" DESC LIMIT 1").values[0]
    vm_id = int(run.sql(f"SELECT min(vm_id) AS i FROM vm WHERE vm = '{vm}'")["i"].iloc[0])
    want = run.sql(f"SELECT \"%RDY\" AS r FROM vm WHERE vm = '{vm}' ORDER BY time_s")["r"].to_numpy()
    got = cols[f"\\\\{host}\\Group Cpu({vm_id + 1}:{vm})\\% Ready"]
    assert np.allclose(got[~np.isnan(got)], want) and want.max() > 1.0


def test_a_pool_group_sums_only_its_members_on_that_host(run, tmp_path):
    header, cols = _read(to_esxtop_csv(run, tmp_path / "c.csv"))
    members = run.sql("SELECT host, vm FROM placement WHERE vm LIKE 'lim%'").values.tolist()
    assert members, "the capped pool's VM was placed"
    host, vm = members[0]
    pool = [h for h in header if h.startswith(f"\\\\{host}\\Group Cpu(") and ":capped)" in h and h.endswith("% Used")]
    assert len(pool) == 1
    want = run.sql(f"SELECT time_s, sum(\"%USED\") AS u FROM vm WHERE host = '{host}' AND vm = '{vm}' "
                   "GROUP BY time_s ORDER BY time_s")["u"].to_numpy()
    assert np.allclose(cols[pool[0]], want)


def test_one_host_of_the_cluster_and_an_unknown_one(run, tmp_path):
    header, _ = _read(to_esxtop_csv(run, tmp_path / "one.csv", host_name="big"))
    assert {PATH.match(h).group(1) for h in header[1:]} == {"big"}
    with pytest.raises(ScenarioError, match="host_name.*nohost.*one of the folder's hosts: big"):
        to_esxtop_csv(run, tmp_path / "x.csv", host_name="nohost")
    assert not (tmp_path / "x.csv").exists()


def test_compare_goes_host_by_host(run, tmp_path, cli):
    from vmtwin.report.compare import compare_hosts

    other = run_cluster(parse_scenario(MIXED.replace("duty: 0.6", "duty: 0.3")), tmp_path / "b", workers=1)
    got = compare_hosts(run, other)
    hosts = [h["host"] for h in run.manifest["hosts"]]  # the clusters' order
    assert list(got) == [f"{h} {c}" for h in hosts for c in ("%PCPU_UTIL", "used_mhz")]
    for h in hosts:
        for res, side in ((run, 0), (other, 1)):
            want = res.sql(f"SELECT avg(\"%PCPU_UTIL\") AS u, avg(used_mhz) AS m FROM host WHERE host = '{h}'")
            assert got[f"{h} %PCPU_UTIL"][side] == pytest.approx(want["u"].iloc[0], abs=1e-9)
            assert got[f"{h} used_mhz"][side] == pytest.approx(want["m"].iloc[0], abs=1e-6)
    # less web demand: some host uses less in B
    assert any(got[f"{h} used_mhz"][1] < got[f"{h} used_mhz"][0] - 1 for h in hosts)
    rc, out, _ = cli("compare", run.path, other.path)
    assert rc == 0 and "host mean big %PCPU_UTIL" in out
