"""Application workloads (guest_memory.app): operations per minute, latency and MB/s against closed
forms, determinism, and bad input naming its field (docs/memory-apps.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.results import TABLE_COLUMNS
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation


def _scenario(vcpus=2, cpu_ms=20, duty=1.0, touches=100, ws="16MB", vm="256MB", reads=0, files="0B",
              read_ms=5, seconds=40, kind="oltp", seed=3) -> dict:
    app = {"kind": kind, "touches_per_op": touches}
    if reads:
        app |= {"file_reads_per_op": reads, "file_set": files}
    return {
        "name": "app", "seed": seed, "duration": f"{seconds}s", "sample_interval": "5s",
        "host": {"cores_per_llc": 4, "memory": "2GB"},
        "memory": {"policy": "esx2013", "share_scan_rate": 0,
                   "swap_standin": {"read_latency": f"{read_ms}ms", "write_latency": f"{read_ms}ms"}},
        "vms": [{
            "name": "db", "vcpus": vcpus, "memory": vm,
            "guest_memory": {"working_set": ws, "guest_os": {"kernel_base": "16MB"}, "app": app},
            "workload": {"type": "cpu_bound", "duty": duty, "burst": f"{cpu_ms}ms", "burst_distribution": "fixed"},
        }],
    }


def _app(sc: dict):
    sim = Simulation(parse_scenario(sc))
    sim.run()
    return sim.tables()["mem_app"].to_pandas()


def test_table_has_the_declared_columns():
    sim = Simulation(parse_scenario(_scenario(seconds=10)))
    sim.run()
    assert sim.tables()["mem_app"].column_names == TABLE_COLUMNS["mem_app"]


@settings(max_examples=6, deadline=None)
@given(vcpus=st.integers(1, 4), cpu_ms=st.integers(5, 60), duty=st.sampled_from([1.0, 0.5, 0.25]),
       touches=st.integers(0, 300))
def test_no_pressure_is_cpu_over_cpu_per_op(vcpus, cpu_ms, duty, touches):
    """Nothing reclaimed, a vCPU per core: each vCPU completes one operation per cpu / duty
    (burst plus think), whatever it touches; each operation's latency is its CPU. (A 1 MB working
    set: its first touches, which zero pages and stall, are done in the first sample.)"""
    app = _app(_scenario(vcpus=vcpus, cpu_ms=cpu_ms, duty=duty, touches=touches, ws="1MB"))
    steady = app[app["time_s"] > 5]
    want = vcpus * 60_000 * duty / cpu_ms
    # one operation per vCPU may straddle a sample boundary
    assert (steady["OPM"] - want).abs().max() <= vcpus * 60 / 5 + 1e-9, (steady["OPM"].tolist(), want)
    assert (steady["P95_MS"] - cpu_ms).abs().max() < 0.01
    assert (steady["LAT_MS"] - cpu_ms).abs().max() < 0.01


@settings(max_examples=5, deadline=None)
@given(cpu_ms=st.integers(5, 30), reads=st.integers(1, 6), read_ms=st.integers(1, 10))
def test_each_page_cache_miss_adds_its_read(cpu_ms, reads, read_ms):
    """A 4 GB file set read by a 64 MB guest: nearly every read misses and waits the stand-in's
    read latency, so an operation takes cpu + reads x (1 - hit) x read, and MB/s counts every
    4 KiB read of the completed operations."""
    app = _app(_scenario(vcpus=2, cpu_ms=cpu_ms, touches=20, ws="4MB", vm="64MB", reads=reads, files="4GB",
                         read_ms=read_ms, seconds=40, kind="file_server"))
    steady = app[app["time_s"] > 10]
    hit = steady["HIT%"].mean() / 100
    assert hit < 0.03
    per_op = cpu_ms + reads * (1 - hit) * read_ms
    opm = steady["OPM"].mean()
    assert opm == pytest.approx(2 * 60_000 / per_op, rel=0.02)
    assert steady["LAT_MS"].mean() == pytest.approx(per_op, rel=0.02)
    assert steady["MB/s"].mean() == pytest.approx(opm / 60 * reads * 4096 / 2**20, rel=1e-9)


def test_same_seed_same_table():
    sc = _scenario(vcpus=2, cpu_ms=10, touches=50, ws="40MB", vm="64MB", reads=3, files="200MB", seconds=30)
    a, b = _app(sc), _app(sc)
    assert a.equals(b)


@pytest.mark.parametrize("edit, field", [
    (lambda s: s["vms"][0]["guest_memory"].pop("guest_os"), "vms[0].guest_memory.app"),
    (lambda s: s["vms"][0]["workload"].update(burst_distribution="exponential"), "vms[0].workload.burst_distribution"),
    (lambda s: s["vms"][0]["workload"].update(arrivals="open"), "vms[0].workload.arrivals"),
    (lambda s: s["vms"][0]["guest_memory"].update(touch_rate=5.0), "vms[0].guest_memory.touch_rate"),
    (lambda s: s["vms"][0]["guest_memory"]["app"].update(file_reads_per_op=2), "vms[0].guest_memory.app.file_set"),
    (lambda s: s["vms"][0]["guest_memory"]["app"].update(kind="web"), "vms[0].guest_memory.app.kind"),
])
def test_bad_application_names_its_field(edit, field):
    sc = _scenario()
    edit(sc)
    with pytest.raises((ScenarioError, ValueError)) as e:
        parse_scenario(sc)
    assert field in str(e.value)


ROOT = Path(__file__).resolve().parents[2]


def test_doc_example_runs_and_matches_its_closed_form():
    """docs/memory-apps.md's example: db completes 2 x 60,000 / 20 operations a minute."""
    text = (ROOT / "docs" / "memory-apps.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    sim = Simulation(parse_scenario(yaml.safe_load(block)))
    sim.run()
    app = sim.tables()["mem_app"].to_pandas()
    db = app[(app["vm"] == "db") & (app["time_s"] > 10)]
    assert (db["OPM"] - 6000).abs().max() <= 2 * 60 / 2 + 1e-9
    files = app[app["vm"] == "files"]
    assert files["MB/s"].iloc[-1] > 0 and files["HIT%"].iloc[-1] > 0


def test_counters_page_defines_the_table():
    text = (ROOT / "docs" / "reference" / "counters.md").read_text(encoding="utf-8")
    section = text.split("`mem_app`, one row per VM", 1)[1].split("\n\n", 2)[1]
    documented = re.findall(r"^\| `([^`]+)` \|", section, re.M)
    assert documented == [c for c in TABLE_COLUMNS["mem_app"] if c not in ("time_s", "host", "vm", "vm_id")]


def test_dbench_reproduction_balloons_the_vm_to_the_size():
    """mem-dbench-balloon's ballooned run: the 256 MB VM limited to 160 MB, on a host with memory
    to spare: its page cache grows to the limit and the balloon then holds exactly 256 - 160 = 96
    MB ("ballooned down to the specified size" [S1 §3.2]), with no ESX swapping."""
    from vmtwin.reproduce import mem_apps as m

    sc = m.dbench_scenario(160, ballooned=True)
    sc["duration"] = "900s"
    t = run_tables_of(sc)
    assert (t["mem_host"]["state"] == 0).all()
    last = t["mem"].iloc[-1]
    assert last["SWCUR"] == 0
    assert abs(last["MCTLSZ"] - 96) < 0.01, last["MCTLSZ"]
    g = t["mem_guest"].iloc[-1]
    assert g["CACHED"] > 0 and g["FREE"] == 0


def test_dvdstore_12gb_loses_by_guest_swapping_not_esx_swapping():
    """[S2 §4.2]: from 42 to 12 GB "ballooned memory increases gradually without significant
    hypervisor-level swapping", and the OPM loss is the guests' own swapping."""
    from vmtwin.reproduce import mem_apps as m

    t = run_tables_of(m.dvdstore_scenario(12))
    mem, guest = m._window(t["mem"]), m._window(t["mem_guest"])
    assert mem["SWCUR"].max() == 0 and mem["MCTLSZ"].sum() > 0
    assert guest["SWPIN/s"].sum() > 0
    assert m.total_opm(t, "dvd") < 0.95 * 16 * 60_000 / m.DVD_CPU_MS


def run_tables_of(sc: dict) -> dict:
    sim = Simulation(parse_scenario(sc))
    sim.run()
    return {k: v.to_pandas() for k, v in sim.tables().items()}


def test_page_cache_misses_are_reads_of_the_vms_disk_with_storage():
    """With storage, a page-cache miss is a 4 KiB read of the VM's own disk through the storage
    queues: the disk's reads equal the file reads that missed, and each operation's latency holds
    the disk's response time."""
    sc = _scenario(vcpus=1, cpu_ms=5, touches=10, ws="4MB", vm="64MB", reads=4, files="2GB", seconds=30,
                   kind="file_server")
    sc["storage"] = {"adapters": [{"name": "vmhba0"}],
                     "datastores": [{"name": "ds", "device": {"type": "hdd"}, "paths": [{"adapter": "vmhba0"}]}],
                     "disks": [{"vm": "db", "datastore": "ds", "size": "10GB"}]}
    sim = Simulation(parse_scenario(sc))
    sim.run()
    t = {k: v.to_pandas() for k, v in sim.tables().items()}
    app, disk = t["mem_app"], t["disk"]
    disk = disk[disk["disk"].str.endswith("scsi0:0")]
    interval = 5.0
    misses = (app["OPS"] * 4 * (1 - app["HIT%"] / 100)).sum()
    reads = (disk["READS/s"] * interval).sum()
    # reads issued by an operation still waiting at the end are counted by the disk, not the app
    assert abs(reads - misses) <= 4, (reads, misses)
    assert disk["MBWRTN/s"].sum() == 0
    steady = app[app["time_s"] > 5]
    assert (steady["LAT_MS"] > 5 + 4 * 0.9 * 2).all()  # four misses of at least 2 ms each on a 7,200 rpm disk


def test_vdi_working_set_is_the_printed_balloon_worked_by_hand():
    """B.12's working set from "about 3GB ballooned" at 32 GB (docs/memory-apps.md), by hand, full
    size in MB: minFree of the 72 GB host = 4,096 x 6% + 8,192 x 4% + 16,384 x 2% + 45,056 x 1% =
    1,351.68; the VMs' share of 32 GB = 32,768 - 512 (ESX) - 16 x 32 (15 desktops and the hog) -
    1,351.68 = 30,392.32; used memory per desktop = (30,392.32 + 3,072) / 15 = 2,230.95; less the
    kernel, 256 + 48 B x 1,048,576 pages = 304: 1,926.95 MB."""
    from vmtwin.reproduce import mem_apps as m

    assert m.min_free_gb(72) * 1024 == pytest.approx(1351.68)
    assert m.vms_capacity_gb(32, 15) * 1024 == pytest.approx(30392.32)
    assert m.VDI_WORKING_SET_GB * 1024 == pytest.approx(1926.95, abs=0.01)


def test_vdi_32gb_consumes_what_the_derivation_leaves_and_balloons_past_the_free_pages():
    """The derivation's premise against the engine: at 32 GB the desktops consume the 29.68 GB
    worked out above (within the scaled overheads' rounding, 0.1 GB), and the balloon takes all the
    guests' free (zeroed) pages before it reaches used memory."""
    from vmtwin.reproduce import mem_apps as m

    t = run_tables_of(m.vdi_scenario(32))
    mem, guest = m._window(t["mem"]), m._window(t["mem_guest"])
    vdi = mem[mem["vm"].str.startswith("vdi")]
    cnsm_gb = vdi.groupby("time_s")["CNSM"].sum() * m.SCALE / 1024
    assert (cnsm_gb - m.vms_capacity_gb(32, m.VDI_VMS)).abs().max() < 0.1
    g = guest[guest["vm"].str.startswith("vdi")]
    assert (g["FREE"] == 0).all() and (g["BLN_ANON"] > 0).all()
    # a desktop's free pages at boot: 4 GB less its kernel, all ballooned
    free_gb = (g.groupby("time_s")["BLN_FREE"].sum() * m.SCALE / 1024).iloc[-1]
    assert free_gb == pytest.approx(m.VDI_VMS * (m.VDI_VM_GB - m.win_kernel_gb(m.VDI_VM_GB) - m.VDI_WORKING_SET_GB), abs=0.05)
