"""`vmtwin export DIR --esxtop CSV`: a run as esxtop batch-mode output.

The CSV is checked against the run's own Parquet tables and against pool membership worked out
here from the scenario text (not from the exporter's code), and for esxtop's own identities:
a VM group's counters are the sums of its vCPU worlds' counters.
"""

from __future__ import annotations

import csv
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from cli_helpers import assert_user_error

SCENARIO = """
name: export
seed: 3
duration: 20s
host: {name: esx-sim, cores_per_llc: 2, core_mhz: 2000MHz}
resource_pools:
  - {name: gold, cpu: {shares: high}}
  - {name: gold-db, parent: gold, cpu: {limit: 1500MHz}}
  - {name: empty}
vms:
  - {name: a, vcpus: 2, pool: gold, workload: {type: cpu_bound, duty: 0.9, burst: 10ms}}
  - {name: b, workload: {type: cpu_bound, duty: 1.0}, cpu: {limit: 500MHz}}
  - {name: c, vcpus: 2, pool: gold-db, workload: {type: cpu_bound, duty: 0.7}}
"""
# pool -> VMs in it and below it, read off the scenario above
MEMBERS = {"gold": ["a", "c"], "gold-db": ["c"], "empty": []}
COUNTERS = ["% Used", "% Run", "% Ready", "% Max Limited", "% Wait", "% VmWait", "% Idle", "% CoStop"]
COLUMN_OF = dict(zip(COUNTERS, ["%USED", "%RUN", "%RDY", "%MLMTD", "%WAIT", "%VMWAIT", "%IDLE"]))
PATH = re.compile(r"\\\\esx-sim\\(Physical Cpu|Group Cpu|Vcpu)\(([^)]*)\)\\(.+)")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from vmtwin.cli import main

    tmp = tmp_path_factory.mktemp("export")
    scenario = tmp / "s.yaml"
    scenario.write_text(SCENARIO)
    out = tmp / "run"
    assert main(["run", str(scenario), "-o", str(out), "-q"]) == 0
    csv_path = tmp / "esxtop.csv"
    assert main(["export", str(out), "--esxtop", str(csv_path)]) == 0
    rows = list(csv.reader(csv_path.open(newline="")))
    vm = pq.read_table(out / "vm.parquet").to_pandas()
    vcpu = pq.read_table(out / "vcpu.parquet").to_pandas()
    return csv_path, rows[0], rows[1:], vm, vcpu


def _col(header, data, name):
    k = header.index(name)
    return np.array([float(r[k]) for r in data])


def test_header_objects_and_order(exported):
    path, header, data, vm, vcpu = exported
    assert header[0] == "(PDH-CSV 4.0) (UTC)(0)"
    parsed = [PATH.fullmatch(h) for h in header[1:]]
    assert all(parsed), [h for h, m in zip(header[1:], parsed) if not m]
    objects = [(m.group(1), m.group(2)) for m in parsed]
    groups = list(dict.fromkeys(i for o, i in objects if o == "Group Cpu"))
    # VMs by vm_id (GID = vm_id + 1), then pools parents first, numbered after the 3 VMs
    assert groups == ["1:a", "2:b", "3:c", "4:gold", "5:gold-db", "6:empty"]
    worlds = list(dict.fromkeys(i for o, i in objects if o == "Vcpu"))
    assert worlds == ["1:a:1000:vmx-vcpu-0:a", "1:a:1001:vmx-vcpu-1:a", "2:b:2000:vmx-vcpu-0:b",
                      "3:c:3000:vmx-vcpu-0:c", "3:c:3001:vmx-vcpu-1:c"]
    for instance in groups:
        assert [m.group(3) for m in parsed if m.group(2) == instance] == COUNTERS
    # per pCPU, then _Total, each with both counters
    pcpus = list(dict.fromkeys(i for o, i in objects if o == "Physical Cpu"))
    assert pcpus == [*map(str, range(len(pcpus) - 1)), "_Total"] and len(pcpus) > 2
    for instance in pcpus:
        assert [m.group(3) for m in parsed if m.group(2) == instance] == ["% Util Time", "% Processor Time"]
    assert len(header) == 1 + 2 * len(pcpus) + 6 * 8 + 5 * 8
    assert path.read_bytes().count(b"\r\n") == len(data) + 1


def test_values_are_the_tables(exported):
    _, header, data, vm, vcpu = exported
    assert len(data) == vm["time_s"].nunique() == 10
    for name in ("a", "b", "c"):
        rows = vm[vm.vm == name].sort_values("time_s")
        for counter, column in COLUMN_OF.items():
            got = _col(header, data, f"\\\\esx-sim\\Group Cpu({int(rows.vm_id.iloc[0]) + 1}:{name})\\{counter}")
            assert np.allclose(got, rows[column], atol=1e-9), (name, counter)
    rows = vcpu[(vcpu.vm == "c") & (vcpu.vcpu == 1)].sort_values("time_s")
    got = _col(header, data, "\\\\esx-sim\\Vcpu(3:c:3001:vmx-vcpu-1:c)\\% Ready")
    assert np.allclose(got, rows["%RDY"], atol=1e-9)
    used_b = _col(header, data, "\\\\esx-sim\\Group Cpu(2:b)\\% Used")
    assert used_b.max() < 25.0 + 1.0  # b's 500 MHz limit: 25% of one 2000 MHz core


def test_pool_groups_sum_their_vms(exported):
    _, header, data, vm, _ = exported
    gid = {"gold": 4, "gold-db": 5, "empty": 6}
    for pool, members in MEMBERS.items():
        for counter, column in COLUMN_OF.items():
            got = _col(header, data, f"\\\\esx-sim\\Group Cpu({gid[pool]}:{pool})\\{counter}")
            want = vm[vm.vm.isin(members)].groupby("time_s")[column].sum().reindex(
                sorted(vm.time_s.unique()), fill_value=0.0)
            assert np.allclose(got, want.to_numpy(), atol=1e-6), (pool, counter)
    # gold-db's 1500 MHz limit holds c (and so the pool) to 75% of one 2000 MHz core
    assert _col(header, data, "\\\\esx-sim\\Group Cpu(5:gold-db)\\% Used").mean() < 75.0 + 1.0


def test_a_group_is_the_sum_of_its_vcpu_worlds(exported):
    _, header, data, _, _ = exported
    for counter in COUNTERS:
        group = _col(header, data, f"\\\\esx-sim\\Group Cpu(1:a)\\{counter}")
        worlds = sum(_col(header, data, f"\\\\esx-sim\\Vcpu(1:a:{1000 + k}:vmx-vcpu-{k}:a)\\{counter}")
                     for k in range(2))
        assert np.allclose(group, worlds, atol=1e-6), counter


def test_export_is_deterministic(exported, tmp_path):
    from vmtwin.export.esxtop import to_esxtop_csv

    path = exported[0]
    again = to_esxtop_csv(path.parent / "run", tmp_path / "again.csv")
    assert again.read_bytes() == path.read_bytes()


def test_export_of_a_non_results_folder_is_a_user_error(cli, tmp_path):
    assert_user_error(cli("export", tmp_path, "--esxtop", tmp_path / "x.csv"), "not a vmtwin results folder")
    assert not (tmp_path / "x.csv").exists()


def test_export_to_a_folder_names_it(cli, exported, tmp_path):
    run = exported[0].parent / "run"
    res = cli("export", run, "--esxtop", tmp_path)
    assert_user_error(res, f"cannot write esxtop CSV {tmp_path}: it is a folder")
    assert list(tmp_path.iterdir()) == []
