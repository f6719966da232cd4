"""A memory limit below the configured size is enforced in every host state (docs/memory.md):
the VM's balloon driver takes what its consumed memory exceeds the limit by, and ESX swaps it
where there is no driver. Checked on a host with memory to spare (always in the high state),
against numbers worked out by hand."""

from __future__ import annotations

import pytest

from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation


def _run(driver: bool, limit: str = "24MB", guest: bool = False) -> tuple:
    gm = {"overhead": "1MB", "balloon_driver": driver}
    if guest:
        # kernel 4 MB (no per-page term), 30 MB of boot page cache, a 16 MB working set: 50 MB
        # consumed at boot, 14 MB of free pages never touched
        gm.update(working_set="16MB", touch_rate=2000.0,
                  guest_os={"kernel_base": "4MB", "kernel_bytes_per_page": 0.0, "boot_cache": "30MB"})
    else:
        gm.update(touch_rate=20000.0, write_fraction=0.5)
    sc = {
        "name": "limit", "duration": "60s", "seed": 3, "sample_interval": "5s",
        "host": {"cores_per_llc": 2, "memory": "1GB"},
        "memory": {"policy": "esx2002", "host_overhead": "8MB", "share_scan_rate": 0},
        "vms": [{"name": "vm", "memory": "64MB", "memory_allocation": {"limit": limit}, "guest_memory": gm,
                 "workload": {"type": "cpu_bound", "duty": 1.0}}],
    }
    sim = Simulation(parse_scenario(sc))
    sim.run()
    t = sim.tables()
    return t["mem"].to_pandas(), t["mem_host"].to_pandas(), t["mem_guest"].to_pandas() if guest else None


def test_the_balloon_enforces_a_limit_on_a_host_with_memory_to_spare():
    """By hand: to get from 50 MB consumed to 24 the balloon takes the free pages (which free
    nothing: never touched) and then page cache until 4 + 16 + cache = 24: a 40 MB = 64 - 24
    balloon, all of the reclaim, no ESX swapping, 4 MB of cache left. (How much of the 40 MB came
    from the free list depends on how much of the working set was touched by then.)"""
    mem, host, guest = _run(driver=True, guest=True)
    assert (host["state"] == 0).all()  # the host never needs memory back
    last, g = mem.iloc[-1], guest.iloc[-1]
    assert last["MCTLSZ"] == pytest.approx(40.0, abs=1 / 256)
    assert last["SWCUR"] == 0 and last["CNSM"] == pytest.approx(24.0, abs=1 / 256)
    assert g["BLN_FREE"] + g["BLN_CACHE"] == pytest.approx(40.0, abs=1 / 256)  # never deflated
    assert g["FREE"] == 0 and g["CACHED"] == pytest.approx(4.0, abs=1 / 256)


def test_without_a_balloon_driver_esx_swaps_down_to_the_limit():
    """A workload touching all 64 MB at 20,000 pages/s: ESX swaps at every tick what it consumes
    over 24 MB, and the swap-ins in between bring it back over by less than a tick's worth."""
    mem, host, _ = _run(driver=False)
    assert (host["state"] == 0).all()
    assert mem["MCTLSZ"].max() == 0 and mem["SWCUR"].iloc[-1] > 20
    assert (mem["CNSM"] - 24.0).abs().max() < 1.5


def test_a_limit_at_the_configured_size_reclaims_nothing():
    mem, _, _ = _run(driver=True, limit="64MB", guest=True)
    assert mem["MCTLSZ"].max() == 0 and mem["SWCUR"].max() == 0
