"""Hypervisor swap through the storage queues: with a storage section, each VM's swap file
(``<vm>.vswp``) is a disk on a datastore, swap-ins are its reads and swap-outs its writes, and a
VM waits (%SWPWT) as long as the device takes. Checked against the disk table, an independent
account (the storage stack counts what reached it)."""

from __future__ import annotations

import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation


def scenario(device: dict, swap_ds: str = "ds1") -> dict:
    return {
        "name": "swap", "seed": 3, "duration": "40s",
        "host": {"cores_per_llc": 2, "memory": "160MB"},
        "memory": {"policy": "esx2002", "host_overhead": "4MB"},
        "storage": {
            "adapters": [{"name": "vmhba1"}],
            "datastores": [{"name": "ds1", "device": device, "paths": [{"adapter": "vmhba1"}]},
                           {"name": "ds2", "device": {"type": "ssd"}, "paths": [{"adapter": "vmhba1"}]}],
            "disks": [],
        },
        "vms": [
            {"name": "a", "count": 3, "memory": "64MB", "workload": {"type": "cpu_bound", "duty": 0.5},
             "guest_memory": {"overhead": "1MB", "touch_rate": 8000, "write_fraction": 0.1,
                              "balloon_driver": False, "swap_datastore": swap_ds}},
        ],
    }


def run(sc: dict):
    sim = Simulation(parse_scenario(sc))
    sim.run()
    return sim.tables()


@pytest.fixture(scope="module")
def hdd():
    return run(scenario({"type": "hdd"}))


def test_swap_files_are_disks_on_the_named_datastore(hdd):
    disk = hdd["disk"].to_pandas()
    swap = disk[disk["disk"].str.endswith(".vswp")]
    assert set(swap["disk"]) == {"a-1.vswp", "a-2.vswp", "a-3.vswp"}
    assert set(swap["lun"]) == {"ds1"}


def test_swap_ins_and_outs_are_the_swap_files_reads_and_writes(hdd):
    mem = hdd["mem"].to_pandas()
    disk = hdd["disk"].to_pandas()
    assert mem["SWR/s"].sum() > 0 and mem["SWW/s"].sum() > 0
    for vm in ("a-1", "a-2", "a-3"):
        m = mem[mem["vm"] == vm].set_index("time_s")
        d = disk[disk["disk"] == f"{vm}.vswp"].set_index("time_s")
        # one 4 KiB read per swapped-in page (SWR/s is MB/s: 256 pages per MB); a read is
        # counted by memory when issued and by the disk when done, so compare whole-run totals
        # allowing the reads in flight at the end (at most one per vCPU)
        reads_mem = (m["SWR/s"] * 256).sum()
        reads_disk = d["READS/s"].sum()
        assert abs(reads_mem - reads_disk) <= 1 / 2 + 1e-6, (vm, reads_mem, reads_disk)
        written_mem = m["SWW/s"].sum()
        written_disk = d["MBWRTN/s"].sum()
        assert written_disk <= written_mem + 1e-9
        assert written_disk >= written_mem - 64 * 4096 / 2**20 * 8 / 2  # the batches still in flight


def test_swap_waits_follow_the_device(hdd):
    ssd = run(scenario({"type": "ssd"}, swap_ds="ds2"))
    wait = {name: t["mem"].to_pandas() for name, t in (("hdd", hdd), ("ssd", ssd))}
    per_read = {}
    for name, m in wait.items():
        reads = (m["SWR/s"] * 256 * 2).sum()  # pages read back (2 s samples)
        per_read[name] = (m["%SWPWT"] / 100 * 2).sum() / reads  # seconds waited per swap-in
    # a spinning disk's random read takes milliseconds; an SSD's well under one (with the
    # swap-out writes queued beside it)
    assert per_read["hdd"] > 2e-3 and per_read["ssd"] < 1e-3 and per_read["hdd"] > 10 * per_read["ssd"], per_read


def test_a_swap_file_on_an_undefined_datastore_is_refused():
    with pytest.raises(ScenarioError, match=r"vms\[0\]\.guest_memory\.swap_datastore: got 'nope'.*ds1, ds2"):
        parse_scenario(scenario({"type": "hdd"}, swap_ds="nope"))
