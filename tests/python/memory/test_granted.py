"""GRANT (esxtop) / granted (vCenter) is guest memory backed by machine memory now; MAPPED is
[S2 §3.2]'s mapped memory, every page touched at least once (docs/reference/counters.md).

The oracle: vSphere Resource Management, "Measuring and Differentiating Types of Memory Usage":
granted counts the guest pages that have a machine page behind them, and guest memory is not
mapped to machine memory "when the VMkernel swaps out or balloons guest physical memory". A
compressed page's content is in the compression cache, and any access to it faults [S2 §3.4], so
it is not granted either; the cache it takes is consumed memory [S2 §3.3].

The scenarios are worked out by hand: a 64 MB Windows guest (it zeroes all its memory at boot, so
all 64 MB are mapped and private: no sharing scan) that touches nothing afterwards, with a 40 MB
limit on a host with memory to spare. Limit enforcement takes 64 - 40 = 24 MB from it: with a
balloon driver the balloon takes 24 MB of the guest's free (zeroed) pages, without one ESX
swaps 24 MB (2002 policy). GRANT must fall by exactly what was reclaimed; MAPPED stays 64 MB.
With the 2013 policy ESX compresses first (last test).
"""

from __future__ import annotations

import pytest

from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation

SIZE_MB, LIMIT_MB = 64.0, 40.0
RECLAIMED_MB = SIZE_MB - LIMIT_MB  # 24 MB
PAGE_MB = 1 / 256


def _last(driver: bool, policy: str = "esx2002", limit: str = "40MB"):
    sc = {
        "name": "granted", "duration": "60s", "seed": 3, "sample_interval": "5s",
        "host": {"cores_per_llc": 2, "memory": "1GB"},
        "memory": {"policy": policy, "host_overhead": "8MB", "share_scan_rate": 0},
        "vms": [{"name": "win", "memory": "64MB", "memory_allocation": {"limit": limit},
                 "guest_memory": {"overhead": "1MB", "balloon_driver": driver, "working_set": "8MB",
                                  "touch_rate": 0.0,
                                  "guest_os": {"kernel_base": "4MB", "kernel_bytes_per_page": 0.0,
                                               "zero_at_boot": True}},
                 "workload": {"type": "cpu_bound", "duty": 0.1}}],
    }
    sim = Simulation(parse_scenario(sc))
    sim.run()
    t = sim.tables()
    mem, host = t["mem"].to_pandas(), t["mem_host"].to_pandas()
    assert (host["state"] == 0).all()  # reclaimed for the limit only, never for the host
    return mem.iloc[-1]


def test_without_a_limit_every_mapped_page_is_granted():
    last = _last(driver=True, limit="64MB")
    assert last["MAPPED"] == pytest.approx(SIZE_MB) and last["GRANT"] == pytest.approx(SIZE_MB)
    assert last["CNSM"] == pytest.approx(SIZE_MB)


def test_ballooned_pages_are_not_granted():
    last = _last(driver=True)
    assert last["MCTLSZ"] == pytest.approx(RECLAIMED_MB, abs=PAGE_MB)
    assert last["SWCUR"] == 0 and last["ZIP"] == 0
    assert last["GRANT"] == pytest.approx(SIZE_MB - RECLAIMED_MB, abs=PAGE_MB)  # 40 MB, not 64
    assert last["MAPPED"] == pytest.approx(SIZE_MB)  # still mapped in [S2 §3.2]'s sense
    assert last["CNSM"] == pytest.approx(LIMIT_MB, abs=PAGE_MB)


def test_swapped_pages_are_not_granted():
    last = _last(driver=False)
    assert last["MCTLSZ"] == 0 and last["ZIP"] == 0  # the 2002 policy has no compression
    assert last["SWCUR"] == pytest.approx(RECLAIMED_MB, abs=PAGE_MB)
    assert last["GRANT"] == pytest.approx(SIZE_MB - RECLAIMED_MB, abs=PAGE_MB)
    assert last["MAPPED"] == pytest.approx(SIZE_MB)


def test_compressed_pages_are_not_granted_but_their_cache_is_consumed():
    """By hand (2013 policy, no driver): ESX compresses before it swaps, and the compression cache
    is the VM's consumed memory, so to bring consumed down to the 40 MB limit it must take the
    cache's size more than 24 MB. The cache fills to its cap, compress_cache_fraction 0.1 x 64 MB =
    6.4 MB (in whole pages of quarters: within a page); what is left granted is 40 - 6.4 = 33.6 MB,
    and the 64 - 33.6 = 30.4 MB not granted are exactly the compressed and swapped pages."""
    last = _last(driver=False, policy="esx2013")
    assert last["MCTLSZ"] == 0 and last["ZIP"] > 0 and last["SWCUR"] > 0
    assert last["CNSM"] == pytest.approx(LIMIT_MB, abs=PAGE_MB)
    assert last["CACHEUSD"] == pytest.approx(0.1 * SIZE_MB, abs=PAGE_MB)
    assert last["GRANT"] == pytest.approx(LIMIT_MB - 0.1 * SIZE_MB, abs=2 * PAGE_MB)  # 33.6 MB, not 64
    assert last["ZIP"] + last["SWCUR"] == pytest.approx(SIZE_MB - last["GRANT"], abs=1e-9)
    assert last["MAPPED"] == pytest.approx(SIZE_MB)
