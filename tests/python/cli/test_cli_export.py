"""`vmtwin export DIR --esxtop CSV`: a run as esxtop batch-mode output."""

from __future__ import annotations

import csv

import pyarrow.parquet as pq
from cli_helpers import assert_user_error

SCENARIO = """
name: export
seed: 3
duration: 20s
host: {cores_per_llc: 2, core_mhz: 2000MHz}
vms:
  - {name: a, vcpus: 2, workload: {type: cpu_bound, duty: 0.9, burst: 10ms}}
  - {name: b, workload: {type: cpu_bound, duty: 1.0}, cpu: {limit: 500MHz}}
"""


def test_export_matches_the_vm_table(cli, tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "run"
    assert cli("run", scenario, "-o", out, "-q").returncode == 0
    csv_path = tmp_path / "esxtop.csv"
    assert cli("export", out, "--esxtop", csv_path).returncode == 0
    rows = list(csv.reader(csv_path.open()))
    header, data = rows[0], rows[1:]
    assert header[0].startswith("(PDH-CSV 4.0)")
    assert len(header) == 1 + 2 + 2 * 7  # time, two host counters, seven counters per VM
    vm = pq.read_table(out / "vm.parquet").to_pandas()
    assert len(data) == vm["time_s"].nunique() == 10
    ready_b = [float(r[header.index("\\\\esx01\\Group Cpu(2:b)\\% Ready")]) for r in data]
    limited_b = [float(r[header.index("\\\\esx01\\Group Cpu(2:b)\\% Max Limited")]) for r in data]
    expected = vm[vm.vm == "b"].sort_values("time_s")
    assert max(abs(x - y) for x, y in zip(ready_b, expected["%RDY"])) < 1e-3
    assert max(abs(x - y) for x, y in zip(limited_b, expected["%MLMTD"])) < 1e-3
    used_b = [float(r[header.index("\\\\esx01\\Group Cpu(2:b)\\% Used")]) for r in data]
    assert abs(sum(used_b) / len(used_b) - 25.0) < 1.0  # b's 500 MHz limit on 2000 MHz cores


def test_export_of_a_non_results_folder_is_a_user_error(cli, tmp_path):
    assert_user_error(cli("export", tmp_path, "--esxtop", tmp_path / "x.csv"), "not a vmtwin results folder")
    assert not (tmp_path / "x.csv").exists()
