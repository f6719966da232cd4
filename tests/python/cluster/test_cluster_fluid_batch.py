"""Fluid clusters run many hosts per engine call (``vmtwin._core.run_fluid_hosts``): the rows,
tables and per-host facts are those of running every host on its own, byte-identical whatever
the number of workers and however the hosts are cut into calls; an engine refusal names its
host."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmtwin.cluster import runner
from vmtwin.cluster.runner import plan_cluster, run_cluster
from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import parse_scenario

MIXED = """
name: mixed-fluid
seed: 5
duration: 30s
sample_interval: 2s
fidelity: fluid
resource_pools:
  - {name: gold, cpu: {shares: high}}
  - {name: capped, cpu: {limit: 1500MHz, expandable_reservation: false}}
clusters:
  - name: prod
    placement: drs
    hosts:
      - {name: big, cores_per_llc: 8, core_mhz: 2600MHz}
      - {name: small, cores_per_llc: 2, core_mhz: 2000MHz, count: 3}
  - name: test
    placement: first_fit
    max_vcpus_per_pcpu: 3.0
    hosts:
      - {name: t, cores_per_llc: 2, count: 4}
vms:
  - {name: db, vcpus: 4, host: big, pool: gold, cpu: {reservation: 4000MHz}, workload: {type: cpu_bound, duty: 0.8}}
  - {name: web, vcpus: 2, count: 7, workload: {type: cpu_bound, duty: 0.6}}
  - {name: late, vcpus: 1, count: 2, power_on: 7s, workload: {type: cpu_bound, duty: 1.0, arrivals: open}}
  - {name: lim, vcpus: 2, pool: capped, cpu: {limit: 900MHz}, workload: {type: cpu_bound, duty: 0.9}}
  - {name: ci, vcpus: 2, count: 9, cluster: test, workload: {type: cpu_bound, duty: 0.9, arrivals: open}}
"""


def _digests(path: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.glob("*.parquet"))}


def _joined(results) -> tuple[dict[str, pa.Table], list[dict]]:
    tables: dict[str, list[pa.Table]] = {}
    facts: list[dict] = []
    for t, f in results:
        for name, table in t.items():
            tables.setdefault(name, []).append(table)
        facts.extend(f)
    return {n: pa.concat_tables(ts).combine_chunks() for n, ts in tables.items()}, facts


def _same_as_one_by_one(plan) -> None:
    """The batch's tables and facts equal those of one ``Simulation`` per host (event-mode path
    of the runner, which builds each host as a one-host run), bit for bit."""
    batch, bfacts = _joined(runner._fluid_results(plan.hosts, 2, None))
    jobs = [(h.name, h.spec) for h in plan.hosts]
    alone, afacts = _joined(runner._one_by_one(plan.hosts, runner._results(jobs, 1, None)))
    assert set(batch) == set(alone) == {"host", "vm", "vcpu", "pcpu"}
    for name in batch:
        assert batch[name].schema == alone[name].schema, name
        assert batch[name].num_rows == alone[name].num_rows > 0, name
        assert batch[name].to_pandas().equals(alone[name].to_pandas()), name  # NaN equals NaN here
    assert len(bfacts) == len(afacts) == len(plan.hosts)
    for b, a in zip(bfacts, afacts):
        for key in runner._HOST_FACTS:
            if key != "wall_time_s":
                assert b[key] == a[key], (b["host"], key)
    assert bfacts[0]["params"] == afacts[0]["params"]


def test_batch_rows_are_each_host_run_on_its_own(monkeypatch):
    monkeypatch.setattr(runner, "FLUID_BATCH_HOSTS", 3)  # calls that cut the clusters' hosts
    plan = plan_cluster(parse_scenario(MIXED))
    _same_as_one_by_one(plan)


@pytest.mark.parametrize("batch_hosts", [1, 3, 256])
def test_one_and_two_workers_give_byte_identical_tables(tmp_path, monkeypatch, batch_hosts):
    monkeypatch.setattr(runner, "FLUID_BATCH_HOSTS", batch_hosts)
    sc = parse_scenario(MIXED)
    one = run_cluster(sc, tmp_path / "w1", workers=1)
    two = run_cluster(sc, tmp_path / "w2", workers=2)
    d1, d2 = _digests(one.path), _digests(two.path)
    assert set(d1) == {"host.parquet", "vm.parquet", "vcpu.parquet", "pcpu.parquet", "placement.parquet"}
    assert d1 == d2
    # contended somewhere, limited somewhere, powered on late: the comparison is not of idle hosts
    assert one.sql('SELECT max("%RDY") AS r FROM vm')["r"].iloc[0] > 1.0
    assert one.sql('SELECT max("%MLMTD") AS r FROM vm')["r"].iloc[0] > 1.0
    assert one.sql("SELECT min(time_s) AS t FROM vm WHERE vm LIKE 'late%'")["t"].iloc[0] == 8.0
    # the cut into calls does not show in the folder either
    if batch_hosts == 1:
        monkeypatch.setattr(runner, "FLUID_BATCH_HOSTS", 256)
        assert _digests(run_cluster(sc, tmp_path / "all", workers=2).path) == d1
    assert one.manifest["event_count"] == sum(h["event_count"] for h in one.manifest["hosts"]) > 0


_vm = st.fixed_dictionaries({
    "vcpus": st.integers(1, 4),
    "duty": st.sampled_from([0.05, 0.3, 0.5, 0.8, 1.0]),
    "open": st.booleans(),
    "shares": st.sampled_from(["low", "normal", "high", 1500]),
    "reservation": st.sampled_from([0, 0, 500, 1200]),
    "limit": st.sampled_from([None, None, 700, 2500]),
    "power_on": st.sampled_from([0, 0, 3, 9]),
})


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(hosts=st.lists(st.integers(1, 6), min_size=1, max_size=5), vms=st.lists(_vm, min_size=1, max_size=12),
       ratio=st.sampled_from([1.0, 2.0, 4.0]))
def test_random_clusters_batch_equals_one_by_one(hosts, vms, ratio):
    lines = []
    for i, v in enumerate(vms):
        cpu = {"shares": v["shares"], "reservation": f"{v['reservation']}MHz"}
        if v["limit"]:
            cpu["limit"] = f"{v['limit']}MHz"
        w = {"type": "cpu_bound", "duty": v["duty"], "arrivals": "open" if v["open"] else "closed"}
        lines.append({"name": f"v{i}", "vcpus": v["vcpus"], "power_on": f"{v['power_on']}s", "cpu": cpu, "workload": w})
    import yaml

    text = yaml.safe_dump({
        "name": "random-fluid", "seed": 3, "duration": "12s", "sample_interval": "2s", "fidelity": "fluid",
        "clusters": [{"name": "c", "placement": "drs", "max_vcpus_per_pcpu": ratio,
                      "hosts": [{"name": f"h{k}", "cores_per_llc": n, "core_mhz": "2000MHz"} for k, n in enumerate(hosts)]}],
        "vms": lines,
    })
    try:
        plan = plan_cluster(parse_scenario(text))
    except ScenarioError:  # a draw no host can take (placement names the VM): nothing to compare
        return
    _same_as_one_by_one(plan)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_host_refused_by_the_engine_names_the_host_and_writes_nothing(cli, tmp_path, workers):
    path = tmp_path / "adm.yaml"
    path.write_text("""
duration: 5s
fidelity: fluid
resource_pools: [{name: rp, cpu: {reservation: 1000MHz, expandable_reservation: false}}]
clusters:
  - name: c
    hosts: [{name: h, cores_per_llc: 2, count: 3}]
vms:
  - {name: b, workload: {type: idle}}
  - {name: c, workload: {type: idle}}
  - {name: d, workload: {type: idle}}
  - {name: a, pool: rp, cpu: {reservation: 1500MHz}, workload: {type: idle}}
""")
    out = tmp_path / "out"
    rc, _, err = cli("cluster", path, "-o", out, "--workers", workers)
    assert rc == 2 and "error: host h-" in err and "admission control refused 'a'" in err, err
    assert not out.exists() and not list(tmp_path.glob(".out*"))



DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


def _trace_cluster(cluster: dict) -> str:
    import yaml

    return yaml.safe_dump({"name": "traces-fluid", "duration": "3h", "sample_interval": "300s", "fidelity": "fluid",
                           "clusters": [cluster]})


def test_trace_clusters_batch_equals_one_by_one():
    """Traces reach the batch as arrays beside the JSON (``runner._apart``), not in it. PlanetLab
    VMs on overcommitted hosts (READY from the traces' own peaks) give byte for byte the rows of
    one-host runs that read them as JSON. So do Bitbrains' utilisations, 17-digit ratios, with
    power-ons at the tasks' submission times: the engine parses JSON floats exactly
    (serde_json's float_roundtrip), as Python reads them."""
    pl = _trace_cluster({"name": "pl", "placement": "first_fit", "max_vcpus_per_pcpu": 4.0,
                         "hosts": [{"name": "p", "cores_per_llc": 1, "core_mhz": "1000MHz", "count": 3}],
                         "trace_vms": [{"name": "vm", "format": "planetlab", "path": str(DATA / "planetlab" / "20110303"),
                                        "count": 12, "vcpus": 1, "memory": "1GB"}]})
    plan = plan_cluster(parse_scenario(pl))
    assert sum(len(runner._apart(h.spec)[1]) for h in plan.hosts) == 12
    _same_as_one_by_one(plan)
    tables, _ = _joined(runner._fluid_results(plan.hosts, 1, None))
    assert max(tables["vm"].column("%RDY").to_pylist()) > 1.0  # contended: the traces' demand is used
    bb = _trace_cluster({"name": "bb", "placement": "drs", "max_vcpus_per_pcpu": 4.0,
                         "hosts": [{"name": "b", "cores_per_llc": 8, "memory": "512GB", "count": 3}],
                         "trace_vms": [{"name": "bb", "format": "opendc", "count": 5, "power_on": "submission",
                                        "path": str(DATA / "bitbrains-small" / "tasks-fragments")}]})
    plan = plan_cluster(parse_scenario(bb))
    assert sum(len(runner._apart(h.spec)[1]) for h in plan.hosts) == 5
    _same_as_one_by_one(plan)


def test_traces_apart_are_checked():
    """The bindings refuse traces that do not match the specs: a count per host, whole 8-byte
    values, and a VM that has a trace workload."""
    from vmtwin import _core
    from vmtwin.exceptions import VmtwinError

    plan = plan_cluster(parse_scenario(MIXED))
    spec, _ = runner._apart(plan.hosts[0].spec)
    with pytest.raises(ValueError, match="1 hosts for 2 specs"):
        _core.run_fluid_hosts([spec, spec], 1, [[]])
    with pytest.raises(ValueError, match="whole number of 8-byte values"):
        _core.run_fluid_hosts([spec], 1, [[(0, b"\0" * 12, b"\0" * 8)]])
    with pytest.raises(VmtwinError, match=r"vms\[0\], which has no trace workload") as info:
        _core.run_fluid_hosts([spec], 1, [[(0, b"\0" * 8, b"\0" * 8)]])
    assert info.value.host_index == 0
