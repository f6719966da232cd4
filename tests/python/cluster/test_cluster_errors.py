"""Bad cluster input: one `error:` line naming the field, exit status 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

HOSTS = """
clusters:
  - name: c1
    hosts:
      - {name: a, cores_per_llc: 4}
      - {name: b, cores_per_llc: 2, count: 2}
"""
WEB = "  - {name: web, workload: {type: idle}}\n"

CASES = {
    "unknown host": (HOSTS + "vms:\n  - {name: db, host: nowhere, workload: {type: idle}}\n",
                     "vms[0].host: got 'nowhere'; allowed: a host of the clusters: a, b-1, b-2"),
    "too big for every host": (HOSTS + "vms:\n" + WEB + "  - {name: wide, vcpus: 8, workload: {type: idle}}\n",
                               "vms[1].vcpus: got 8; allowed: at most 4 vCPUs"),
    "duplicate host names": ("clusters:\n  - name: c1\n    hosts:\n      - {name: b, cores_per_llc: 2, count: 2}\n"
                             "      - {name: b-2, cores_per_llc: 8}\nvms:\n" + WEB,
                             "clusters[0].hosts[1].name: got 'b-2'; allowed: a host name not used elsewhere"),
    "duplicate host across clusters": (HOSTS + "  - name: c2\n    hosts: [{name: a, cores_per_llc: 2}]\nvms:\n" + WEB,
                                       "clusters[1].hosts[0].name: got 'a'"),
    "unknown cluster": (HOSTS + "vms:\n  - {name: db, cluster: c9, workload: {type: idle}}\n",
                        "vms[0].cluster: got 'c9'; allowed: the name of a cluster: c1"),
    "pinned to a host too small": (HOSTS + "vms:\n  - {name: db, vcpus: 4, host: b-1, workload: {type: idle}}\n",
                                   "vms[0].vcpus: got 4; allowed: at most 2 vCPUs, the logical CPUs of host b-1"),
    "reservation above every host": (HOSTS + "vms:\n  - {name: db, cpu: {reservation: 20000MHz}, "
                                     "workload: {type: idle}}\n", "vms[0].cpu.reservation: got '20000MHz'"),
    "cluster full": (HOSTS.replace("    hosts:", "    max_vcpus_per_pcpu: 1.0\n    hosts:")
                     + "vms:\n  - {name: web, count: 9, workload: {type: idle}}\n",
                     "vms[0]: got 'web-9'; allowed: a VM the cluster 'c1' has room for"),
    "host and clusters": ("host: {cores_per_llc: 2}\n" + HOSTS + "vms:\n" + WEB,
                          "host: got 'a host'; allowed: no top-level host in a scenario with clusters"),
    "missing trace folder": (HOSTS + "    trace_vms: [{name: pl, format: planetlab, path: no/such/folder}]\n",
                             "clusters[0].trace_vms[0].path: got 'no/such/folder'"),
    "bad policy": (HOSTS.replace("    hosts:", "    placement: best_fit\n    hosts:") + "vms:\n" + WEB,
                   "clusters[0].placement"),
    "no vms": (HOSTS, "vms: got []; allowed: at least one VM (in vms, or a cluster's trace_vms)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_cluster_input_names_the_field(cli, tmp_path, case):
    text, message = CASES[case]
    path = tmp_path / "c.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    rc, _, err = cli("cluster", path, "-o", out)
    assert rc == 2, err
    assert err.startswith("error: ") and "Traceback" not in err
    assert message in err, err
    assert not out.exists() and not list(tmp_path.glob(".out*"))  # nothing half-written


def test_vmtwin_run_and_validate_take_a_cluster_scenario_as_vmtwin_cluster_does(cli, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(HOSTS + "vms:\n" + WEB)
    rc, out, err = cli("validate", path)
    assert rc == 0 and "VMs placed on" in out, err
    rc, _, err = cli("run", path, "-o", tmp_path / "run", "--duration", "4s", "-q")
    assert rc == 0, err
    rc, _, err = cli("cluster", path, "-o", tmp_path / "cluster", "--duration", "4s")
    assert rc == 0, err
    for table in ("host", "vm", "placement"):
        a = (tmp_path / "run" / f"{table}.parquet").read_bytes()
        assert a == (tmp_path / "cluster" / f"{table}.parquet").read_bytes(), table


def test_a_one_host_scenario_may_not_pin(cli, tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text("host: {cores_per_llc: 2}\nvms:\n  - {name: a, host: esx01, workload: {type: idle}}\n")
    rc, _, err = cli("validate", path)
    assert rc == 2 and "vms[0].host: got 'esx01'" in err, err


def test_the_example_scenarios_place(cli, tmp_path):
    from vmtwin.cluster.runner import plan_cluster

    root = Path(__file__).resolve().parents[3] / "scenarios"
    for name in ("cluster-mixed.yaml", "cluster-bitbrains.yaml", "cluster-planetlab.yaml"):
        plan = plan_cluster(root / name)
        assert plan.placement.num_rows > 0 and plan.hosts


@pytest.mark.parametrize("workers", [1, 2])
def test_a_host_refused_by_the_engine_names_the_host_and_writes_nothing(cli, tmp_path, workers):
    path = tmp_path / "adm.yaml"
    path.write_text("""
duration: 5s
resource_pools: [{name: rp, cpu: {reservation: 1000MHz, expandable_reservation: false}}]
clusters:
  - name: c
    hosts: [{name: h, cores_per_llc: 2, count: 2}]
vms:
  - {name: a, pool: rp, cpu: {reservation: 1500MHz}, workload: {type: idle}}
  - {name: b, workload: {type: idle}}
""")
    out = tmp_path / "out"
    rc, _, err = cli("cluster", path, "-o", out, "--workers", workers)
    assert rc == 2 and "error: host h-1: admission control refused 'a'" in err, err
    assert not out.exists() and not list(tmp_path.glob(".out*"))
