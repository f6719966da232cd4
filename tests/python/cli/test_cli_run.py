"""``vmtwin run``, ``validate`` and ``schema`` on good input; determinism across processes."""

from __future__ import annotations

import json
import os
import subprocess

import pyarrow.parquet as pq
import pytest
from cli_helpers import PLANETLAB_OK, SCENARIOS, needs_shared_data, vmtwin_command

TABLES = ("host.parquet", "vm.parquet", "vcpu.parquet", "pcpu.parquet")

# Exponential bursts everywhere, so the seed matters; a pool with a limit, a reservation, a VM
# limit, a late power-on, an idle VM and a trace replay, so every mechanism draws on the RNG.
DETERMINISM = f"""\
name: determinism
seed: 11
duration: 40s
sample_interval: 2s
host: {{cores_per_llc: 2, core_mhz: 2600MHz, memory: 16GB}}
resource_pools:
  - {{name: batch, cpu: {{shares: low, limit: 3GHz}}}}
vms:
  - {{name: web, count: 2, vcpus: 2, workload: {{type: cpu_bound, duty: 0.6, burst: 15ms,
      burst_distribution: exponential}}}}
  - {{name: db, cpu: {{reservation: 1000MHz}}, workload: {{type: cpu_bound, duty: 0.8, burst: 40ms,
      burst_distribution: exponential}}}}
  - {{name: job, pool: batch, vcpus: 2, power_on: 7s, cpu: {{limit: 2000MHz}},
      workload: {{type: cpu_bound, duty: 0.9, burst: 5ms, burst_distribution: exponential}}}}
  - {{name: replay, workload: {{type: trace, format: planetlab, path: {PLANETLAB_OK}, speedup: 60}}}}
  - {{name: spare, workload: {{type: idle}}}}
"""


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """The scenario run as three separate processes: seed 5 twice (different hash seeds), seed 6."""
    base = tmp_path_factory.mktemp("determinism")
    scenario = base / "determinism.yaml"
    scenario.write_text(DETERMINISM)
    runs = {"a": ("5", "1"), "b": ("5", "2"), "c": ("6", "1")}
    procs = {}
    for name, (seed, hash_seed) in runs.items():
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        procs[name] = subprocess.Popen(
            [*vmtwin_command(), "run", str(scenario), "-o", str(base / name), "--seed", seed, "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for name, p in procs.items():
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"run {name}: {err}"
        assert "Traceback" not in err
    return {name: base / name for name in runs}


def test_same_seed_gives_identical_tables(three_runs):
    a, b = three_runs["a"], three_runs["b"]
    assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir()) == sorted(
        ["manifest.json", *TABLES])
    for table in TABLES:
        assert (a / table).read_bytes() == (b / table).read_bytes(), table
    # and the tables hold a real run: 20 samples of 6 VMs (job powers on at 7 s: 17 samples)
    vm = pq.read_table(a / "vm.parquet").to_pandas()
    assert len(pq.read_table(a / "host.parquet")) == 20
    assert vm.groupby("vm").size().to_dict() == {"web-1": 20, "web-2": 20, "db": 20, "job": 17, "replay": 20,
                                                 "spare": 20}
    assert vm[vm["vm"] == "web-1"]["%USED"].mean() > 20 and (vm[vm["vm"] == "spare"]["%USED"] == 0).all()


def test_other_seed_gives_other_results(three_runs):
    a, c = three_runs["a"], three_runs["c"]
    assert (a / "vm.parquet").read_bytes() != (c / "vm.parquet").read_bytes()
    used_a = pq.read_table(a / "vm.parquet").to_pandas()["%USED"]
    used_c = pq.read_table(c / "vm.parquet").to_pandas()["%USED"]
    assert (used_a != used_c).any()  # the numbers differ, not only the file's metadata


def test_manifests_differ_only_in_wall_time(three_runs):
    a = json.loads((three_runs["a"] / "manifest.json").read_text())
    b = json.loads((three_runs["b"] / "manifest.json").read_text())
    c = json.loads((three_runs["c"] / "manifest.json").read_text())
    for m in (a, b):
        assert isinstance(m.pop("wall_time_s"), float)
    assert a == b
    assert a["seed"] == 5 and a["scenario"]["seed"] == 5 and a["params"]["seed"] == 5
    assert c["seed"] == 6
    assert a["tables"] == {"host": 20, "vm": 6 * 20 - 3, "vcpu": (2 + 2 + 1 + 1 + 1) * 20 + 2 * 17, "pcpu": 2 * 20}


def test_duration_override(cli, tmp_path):
    scenario = tmp_path / "d.yaml"
    scenario.write_text(DETERMINISM)
    out = tmp_path / "out"
    res = cli("run", scenario, "-o", out, "--duration", "12s", "--seed", "3")
    assert res.returncode == 0, res.stderr
    assert "wrote" in res.stdout and "%USED" in res.stdout  # the summary table
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["duration_s"] == 12.0 and manifest["simulated_s"] == 12.0 and manifest["seed"] == 3
    host = pq.read_table(out / "host.parquet").to_pandas()
    assert host["time_s"].tolist() == [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]


def test_quiet_run_prints_nothing(cli, tmp_path):
    scenario = tmp_path / "d.yaml"
    scenario.write_text(DETERMINISM)
    res = cli("run", scenario, "-o", tmp_path / "out", "--duration", "4s", "-q")
    assert res.returncode == 0 and res.stdout == "" and res.stderr == ""


def test_schema_is_json_with_vms(cli):
    res = cli("schema")
    assert res.returncode == 0, res.stderr
    schema = json.loads(res.stdout)
    assert "vms" in schema["properties"] and "host" in schema["properties"]
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert {"required": ["host", "vms"]} in schema["anyOf"]  # or clusters (docs/cluster.md)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_example_scenarios_validate(cli, path):
    needs_shared_data(path.read_text(encoding="utf-8"))
    if path.name.startswith("cluster-"):  # clusters validate by placing (docs/cluster.md)
        res = cli("cluster", path, "--place-only")
        assert res.returncode == 0 and "VMs placed" in res.stdout and res.stderr == "", res.stderr
        return
    res = cli("validate", path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("ok: ") and res.stderr == ""


def test_quickstart_validates_as_installed_command(vmtwin_proc):
    path = next(p for p in SCENARIOS if p.name == "quickstart.yaml")
    needs_shared_data(path.read_text(encoding="utf-8"))
    res = vmtwin_proc("validate", path)
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())  # rich may wrap a long path
    assert text.startswith("ok:") and "10 VMs, 3 pools, 600 s" in text
