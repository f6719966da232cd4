"""Cluster runs: byte-identical whatever the worker count, each host exactly its own one-host
run, the PlanetLab trace arithmetic on an uncontended cluster, OpenDC's format replayed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.cluster.runner import host_seed, plan_cluster, run_cluster, window_mean
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data"
PLANETLAB = DATA / "planetlab" / "20110303"
BITBRAINS = DATA / "bitbrains-small" / "tasks-fragments"

MIXED = """
name: mixed
seed: 5
duration: 12s
sample_interval: 1s
clusters:
  - name: prod
    placement: drs
    hosts:
      - {name: big, cores_per_llc: 8, core_mhz: 2600MHz}
      - {name: small, cores_per_llc: 2, core_mhz: 2000MHz, count: 2}
  - name: test
    placement: first_fit
    max_vcpus_per_pcpu: 2.0
    hosts:
      - {name: t, cores_per_llc: 2, count: 3}
vms:
  - {name: db, vcpus: 4, host: big, cpu: {reservation: 4000MHz}, workload: {type: cpu_bound, duty: 0.8}}
  - {name: web, vcpus: 2, count: 6, workload: {type: cpu_bound, duty: 0.6}}
  - {name: ci, vcpus: 2, count: 5, cluster: test, workload: {type: cpu_bound, duty: 0.9, arrivals: open}}
"""


def _digests(path: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.glob("*.parquet"))}


def test_one_and_two_workers_give_byte_identical_tables(tmp_path):
    sc = parse_scenario(MIXED)
    one = run_cluster(sc, tmp_path / "w1", workers=1)
    two = run_cluster(sc, tmp_path / "w2", workers=2)
    assert one.manifest["workers"] == 1 and two.manifest["workers"] == 2
    d1, d2 = _digests(one.path), _digests(two.path)
    assert set(d1) == {"host.parquet", "vm.parquet", "vcpu.parquet", "pcpu.parquet", "placement.parquet"}
    assert d1 == d2
    # the cluster is contended somewhere: the comparison covers real scheduling, not idle hosts
    assert one.sql('SELECT max("%RDY") AS r FROM vm')["r"].iloc[0] > 1.0


def test_every_table_has_the_host_column_and_every_host(tmp_path):
    res = run_cluster(parse_scenario(MIXED), tmp_path / "r", workers=1)
    hosts = ["big", "small-1", "small-2", "t-1", "t-2", "t-3"]
    for name in ("host", "vm", "vcpu", "pcpu"):
        t = res.arrow(name)
        assert t.column_names[:2] == ["time_s", "host"]
    assert sorted(res.sql("SELECT DISTINCT host FROM host")["host"]) == hosts
    assert res.sql("SELECT host FROM placement WHERE vm = 'db'")["host"].tolist() == ["big"]
    # every VM has rows only on the host placement chose
    where = res.sql("SELECT DISTINCT vm, host FROM vm ORDER BY vm").values.tolist()
    placed = res.sql("SELECT vm, host FROM placement ORDER BY vm").values.tolist()
    assert where == placed
    # test cluster: 2 vCPUs per pCPU on 2-pCPU hosts -> two 2-vCPU VMs a host, first fit
    ci = res.sql("SELECT vm, host FROM placement WHERE cluster = 'test' ORDER BY vm").values.tolist()
    assert ci == [["ci-1", "t-1"], ["ci-2", "t-1"], ["ci-3", "t-2"], ["ci-4", "t-2"], ["ci-5", "t-3"]]


def test_each_host_is_its_own_one_host_run(tmp_path):
    """A host's rows equal those of a one-host scenario written by hand with that host, its VMs
    and the host's seed."""
    res = run_cluster(parse_scenario(MIXED), tmp_path / "r", workers=1)
    on_small_1 = res.sql("SELECT vm FROM placement WHERE host = 'small-1'")["vm"].tolist()
    assert on_small_1, "the DRS-like policy left small-1 empty; pick another host"
    vms = "\n".join(f"  - {{name: {v}, vcpus: 2, workload: {{type: cpu_bound, duty: 0.6}}}}" for v in on_small_1)
    alone = parse_scenario(f"""
name: alone
seed: {host_seed(5, 'small-1')}
duration: 12s
sample_interval: 1s
host: {{name: small-1, cores_per_llc: 2, core_mhz: 2000MHz}}
vms:
{vms}
""")
    sim = Simulation(alone)
    sim.run()
    want = sim.tables()
    # vm_id numbers the cluster's VMs host after host: small-1's start after big's
    first = len(res.sql("SELECT vm FROM placement WHERE host = 'big'"))
    for name in ("host", "vm", "vcpu", "pcpu"):
        got = res.arrow(name).filter(pq.read_table(res.table_path(name)).column("host").to_numpy(
            zero_copy_only=False) == "small-1")
        alone_t = want[name].combine_chunks()  # a one-host run has the same host column, its host's name
        if "vm_id" in alone_t.column_names:
            assert (got.column("vm_id").to_numpy() == alone_t.column("vm_id").to_numpy() + first).all()
            got, alone_t = got.drop_columns(["vm_id"]), alone_t.drop_columns(["vm_id"])
        assert got.num_rows > 0 and got.schema == alone_t.schema, name
        assert got.to_pandas().equals(alone_t.to_pandas()), name  # NaN equals NaN here (pyarrow's would not)


def _first_planetlab(n: int) -> list[list[int]]:
    files = sorted((f for f in PLANETLAB.iterdir() if f.is_file()), key=lambda f: f.name.encode())[:n]
    return [[int(x) for x in f.read_text().split()] for f in files]


def test_planetlab_cluster_mean_host_utilisation_is_the_trace_arithmetic(tmp_path):
    """40 VMs on 30 two-core hosts (first fit: VM i on host i // 2, never contended): mean host
    utilisation = sum of the trace percents x 10 MHz / (hosts x 2000 MHz x samples), the
    formula CloudSim Plus's RESULTS.md checks its 0.0809674 against."""
    n_vms, n_hosts, samples = 40, 30, 12  # one hour at 300 s
    sc = parse_scenario(f"""
duration: {samples * 5}min
sample_interval: 300s
clusters:
  - name: pl
    placement: first_fit
    max_vcpus_per_pcpu: 1.0
    hosts: [{{name: pl, cores_per_llc: 2, core_mhz: 1000MHz, memory: 4GB, count: {n_hosts}}}]
    trace_vms: [{{name: vm, format: planetlab, path: {PLANETLAB}, count: {n_vms}, memory: 1GB}}]
""")
    res = run_cluster(sc, tmp_path / "pl", workers=2)
    pct = np.array([t[:samples] for t in _first_planetlab(n_vms)], dtype=float)
    want = pct.sum() * 10 / (n_hosts * 2000 * samples)
    got = res.sql("SELECT sum(used_mhz) / sum(capacity_mhz) AS u FROM host")["u"].iloc[0]
    assert got == pytest.approx(want, abs=2e-4)
    assert res.sql("SELECT max(\"%RDY\") AS r FROM vm")["r"].iloc[0] < 1.0  # uncontended, as CloudSim
    assert res.sql("SELECT count(DISTINCT host) AS n FROM host")["n"].iloc[0] == n_hosts


def test_opendc_trace_set_takes_each_tasks_vcpus_and_memory(tmp_path):
    tasks = pq.read_table(BITBRAINS / "tasks.parquet").to_pandas().sort_values("id").head(6)
    sc = parse_scenario(f"""
duration: 10min
sample_interval: 60s
clusters:
  - name: bb
    placement: drs
    hosts: [{{name: h, sockets: 2, cores_per_llc: 16, memory: 512GB, count: 3}}]
    trace_vms: [{{name: bb, format: opendc, path: {BITBRAINS}, count: 6}}]
""")
    plan = plan_cluster(sc)
    specs = {vm["name"]: vm for h in plan.hosts for vm in h.spec["vms"]}
    for t in tasks.itertuples():
        vm = specs[f"bb-{t.id}"]
        assert vm["vcpus"] == t.cpu_count
        assert vm["memory_bytes"] == t.mem_capacity * 1024
    res = run_cluster(sc, tmp_path / "bb", workers=1)
    assert res.sql("SELECT count(DISTINCT vm) AS n FROM vm")["n"].iloc[0] == 6
    # each VM's trace is its demand: on uncontended hosts its mean use over the 10 minutes is
    # the fragments' usage / capacity (clamped to [0, 1]) integrated over them, x vCPUs x 2600 MHz
    frags = pq.read_table(BITBRAINS / "fragments.parquet").to_pandas()
    used = res.sql("SELECT vm, avg(used_mhz) AS u FROM vm GROUP BY vm").set_index("vm")["u"]
    assert res.sql('SELECT max("%RDY") AS r FROM vm')["r"].iloc[0] < 1.0
    window_ms = 10 * 60 * 1000
    for t in tasks.itertuples():
        f = frags[frags["id"] == t.id]
        start = np.concatenate([[0], np.cumsum(f["duration"].to_numpy())[:-1]])
        overlap = np.clip(np.minimum(start + f["duration"].to_numpy(), window_ms) - start, 0, None)
        frac = np.clip(f["cpu_usage"].to_numpy() / t.cpu_capacity, 0.0, 1.0)
        want = (frac * overlap).sum() / window_ms * t.cpu_count * 2600
        assert used[f"bb-{t.id}"] == pytest.approx(want, rel=2e-3, abs=2.0), (t.id, used[f"bb-{t.id}"], want)


@settings(max_examples=150, deadline=None)
@given(seg=st.lists(st.integers(1, 6), min_size=1, max_size=6),
       util=st.lists(st.integers(0, 10), min_size=6, max_size=6),
       offset=st.integers(0, 20), speedup=st.integers(1, 3), duration=st.integers(1, 40), loop=st.booleans())
def test_window_mean_is_the_mean_over_the_replayed_ticks(seg, util, offset, speedup, duration, loop):
    u = [x / 10 for x in util[:len(seg)]]
    total = sum(seg)
    if offset >= total:
        offset = offset % total
    ticks = [k for k, s in enumerate(seg) for _ in range(s)]  # trace time unit -> segment
    span = duration * speedup
    vals = []
    for x in range(offset, offset + span):
        if x < total or loop:
            vals.append(u[ticks[x % total]])
        else:
            vals.append(0.0)
    assert window_mean(seg, u, offset, float(speedup), duration, loop) == pytest.approx(sum(vals) / span)


def test_top_level_settings_reach_every_host():
    """A host's scenario is the cluster scenario with that host: scheduler settings (and so a
    fidelity, once there is one) apply to every host; seeds differ per host."""
    sc = parse_scenario(MIXED.replace("sample_interval: 1s", "sample_interval: 1s\ncpu_scheduler: {quantum: 30ms}"))
    plan = plan_cluster(sc)
    assert len(plan.hosts) == 6
    assert all(h.spec["cpu_sched"] == {"quantum_ns": 30_000_000} for h in plan.hosts)
    assert all(h.spec["duration_ns"] == 12 * 10**9 and h.spec["sample_interval_ns"] == 10**9 for h in plan.hosts)
    assert len({h.spec["seed"] for h in plan.hosts}) == 6
    assert [h.spec["host"]["name"] for h in plan.hosts] == ["big", "small-1", "small-2", "t-1", "t-2", "t-3"]
    assert plan.hosts[1].spec["host"]["core_mhz"] == 2000 and plan.hosts[0].spec["host"]["cores_per_llc"] == 8


def test_opendc_submission_times_become_power_on_times():
    tasks = pq.read_table(BITBRAINS / "tasks.parquet").to_pandas()
    sc = parse_scenario(f"""
duration: 30d
sample_interval: 1h
clusters:
  - name: bb
    hosts: [{{name: h, sockets: 2, cores_per_llc: 16, memory: 1TB, count: 10}}]
    trace_vms: [{{name: bb, format: opendc, path: {BITBRAINS}, power_on: submission}}]
""")
    plan = plan_cluster(sc)
    on = {vm["name"]: vm["power_on_ns"] for h in plan.hosts for vm in h.spec["vms"]}
    first = int(tasks["submission_time"].min())
    assert len(on) == len(tasks) == 50
    for t in tasks.itertuples():
        assert on[f"bb-{t.id}"] == (int(t.submission_time) - first) * 10**6
    assert min(on.values()) == 0 and max(on.values()) > 20 * 86400 * 10**9  # the set spans weeks
