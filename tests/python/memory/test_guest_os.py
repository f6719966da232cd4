"""The guest OS model through scenarios: the ``mem_guest`` table's pages add up to the VM's
configured memory at every sample, the kernel is sized from configured memory, a balloon that
takes the guest's free pages and page cache makes a growing workload swap inside the guest (to its
own virtual disk: through storage, the VM disk's reads are the guest's swap-ins), and bad input
names its field."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation

MB = 1 << 20


def scenario(*, vms: int = 3, size_mb: int = 192, host_mb: int = 400, ws_mb: int = 120, cache_mb: int = 48,
             kernel_mb: int = 8, rate: float = 3000, duration: str = "40s", seed: int = 3) -> dict:
    return {
        "name": "g", "duration": duration, "seed": seed,
        "host": {"cores_per_llc": 2, "memory": f"{host_mb}MB"},
        "memory": {"policy": "esx2013", "host_overhead": "8MB"},
        "vms": [{"name": "vm", "count": vms, "memory": f"{size_mb}MB",
                 "guest_memory": {"overhead": "2MB", "working_set": f"{ws_mb}MB", "touch_rate": rate,
                                  "write_fraction": 0.5,
                                  "guest_os": {"kernel_base": f"{kernel_mb}MB", "boot_cache": f"{cache_mb}MB"}},
                 "workload": {"type": "cpu_bound", "duty": 0.5}}],
    }


def run(sc: dict):
    sim = Simulation(parse_scenario(sc))
    sim.run()
    t = sim.tables()
    return t["mem"].to_pandas(), t["mem_guest"].to_pandas()


def kernel_mb(base_mb: float, size_mb: int, per_page: float = 64.0) -> float:
    """The kernel as the docs define it, computed here on its own: base + 64 B per 4 KiB page."""
    pages = size_mb * 256
    return math.ceil((base_mb * MB + per_page * pages) / 4096) / 256


@settings(max_examples=6, deadline=None)
@given(st.integers(2, 4), st.integers(160, 256), st.integers(40, 150), st.integers(0, 48), st.integers(0, 1000))
def test_guest_pages_add_up_to_configured_memory_at_every_sample(vms, size_mb, ws_mb, cache_mb, seed):
    host_mb = int(vms * size_mb / 1.4)
    mem, g = run(scenario(vms=vms, size_mb=size_mb, host_mb=host_mb, ws_mb=ws_mb, cache_mb=cache_mb,
                          duration="20s", seed=seed))
    assert len(g) == len(mem)
    j = mem.merge(g, on=["time_s", "vm_id"], suffixes=("", "_g"))
    total = j["KERNEL"] + j["CACHED"] + j["FREE"] + j["ANON"] + j["BALLOON"]
    assert (abs(total - j["MEMSZ"]) < 1e-9).all()
    assert (abs(j["BALLOON"] - j["MCTLSZ"]) < 1e-9).all()
    assert (j["ANON"] + j["SWAPPED"] <= ws_mb + 1e-9).all()
    assert (abs(j["KERNEL"] - kernel_mb(8, size_mb)) < 1e-9).all()
    # what the balloon took, cumulatively, covers what it holds
    assert (j["BLN_FREE"] + j["BLN_CACHE"] + j["BLN_ANON"] >= j["BALLOON"] - 1e-9).all()
    # the page cache only shrinks (nothing reads files yet)
    for _, v in g.groupby("vm_id"):
        assert (v["CACHED"].diff().dropna() <= 1e-9).all()


@pytest.fixture(scope="module")
def squeezed():
    """Three 2 GB guests on a 4 GB host, each writing round-robin through a 1.9 GB working set,
    with their own disks on an SSD datastore: the balloon takes free pages from one guest,
    which then has too little memory for its working set and pages to its own disk."""
    sc = scenario(vms=3, size_mb=2048, host_mb=4096, ws_mb=1900, cache_mb=256, kernel_mb=64, rate=16000,
                  duration="150s")
    sc["vms"][0]["guest_memory"]["pattern"] = "sequential"
    sc["storage"] = {"adapters": [{"name": "vmhba1"}],
                     "datastores": [{"name": "ds1", "device": {"type": "ssd"}, "paths": [{"adapter": "vmhba1"}]}],
                     "disks": [{"vm": "vm", "datastore": "ds1", "size": "4GB"}]}
    sim = Simulation(parse_scenario(sc))
    sim.run()
    t = sim.tables()
    return t["mem"].to_pandas(), t["mem_guest"].to_pandas(), t["disk"].to_pandas()


def test_the_balloon_takes_free_pages_before_cache_and_cache_before_anonymous(squeezed):
    _, g, _ = squeezed
    assert g["BLN_FREE"].max() > 0
    for _, v in g.groupby("vm_id"):
        v = v.sort_values("time_s")
        took_cache = v["BLN_CACHE"].diff() > 0
        took_anon = v["BLN_ANON"].diff() > 0
        # within a sample the balloon moves on only when the earlier source ran dry
        assert (v.loc[took_cache, "FREE"] < 1).all()
        assert (v.loc[took_anon, "FREE"] + v.loc[took_anon, "CACHED"] < 1).all()


def test_the_squeezed_guest_pages_to_its_own_disk_and_waits(squeezed):
    mem, g, disk = squeezed
    assert g["SWPOUT/s"].sum() > 0 and g["SWPIN/s"].sum() > 0 and g["%SWPWT"].max() > 0
    vdisks = disk[~disk["disk"].str.endswith(".vswp")]
    for vm_id, v in g.groupby("vm_id"):
        d = vdisks[vdisks["vm_id"] == vm_id]
        # every guest swap-in is one 4 KiB read of the VM's own disk (whole run: the guest counts
        # a read when issued, the disk when done; one may be in flight at the end)
        assert abs(v["SWPIN/s"].sum() - d["READS/s"].sum()) <= 0.5 + 1e-6, (vm_id, v["SWPIN/s"].sum(), d["READS/s"].sum())
        # and every page it swapped out was written there (the disk has no other workload)
        written_pages = d["MBWRTN/s"].sum() * 256
        assert written_pages <= v["SWPOUT/s"].sum() + 1e-6
        assert written_pages >= v["SWPOUT/s"].sum() - 64, (vm_id, written_pages, v["SWPOUT/s"].sum())
    # the guest that swapped is the one whose balloon left it short of its working set
    swapped = g.groupby("vm_id")["SWPOUT/s"].sum()
    ballooned = g.groupby("vm_id")["BALLOON"].max()
    assert set(swapped[swapped > 0].index) <= set(ballooned[ballooned > 0].index)


@pytest.mark.parametrize("edit, field, words", [
    (lambda s: s["vms"][0]["guest_memory"]["guest_os"].update(boot_cache="200MB"),
     "vms[0].guest_memory.guest_os.boot_cache", "the kernel leaves"),
    (lambda s: s["vms"][0]["guest_memory"].update(working_set="190MB"),
     "vms[0].guest_memory.working_set", "the guest kernel leaves"),
    (lambda s: s["vms"][0]["guest_memory"]["guest_os"].update(kernel_bytes_per_page=5000.0),
     "vms[0].guest_memory.guest_os.kernel_bytes_per_page", "less than 4096"),
    (lambda s: s["vms"][0]["guest_memory"].update(hot_block="10MB"),
     "vms[0].guest_memory.hot_block", "with pattern: sequential"),
    (lambda s: s["vms"][0]["guest_memory"].update(hot_block="130MB", pattern="sequential"),
     "vms[0].guest_memory.hot_block", "at most the working set"),
    (lambda s: s.update(storage={"adapters": [{"name": "h"}], "disks": [],
                                 "datastores": [{"name": "ds1", "device": {"type": "ssd"}, "paths": [{"adapter": "h"}]}]}),
     "vms[0].guest_memory.guest_os", "a disk in the storage section"),
])
def test_bad_guest_os_input_names_the_field(edit, field, words):
    s = scenario()
    edit(s)
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(s).to_engine_spec()
    assert str(exc.value).startswith(field) and words in str(exc.value), exc.value


def test_same_seed_gives_identical_guest_tables():
    sc = scenario(ws_mb=170, rate=6000, duration="20s")
    a, b = run(sc), run(sc)
    assert a[1].equals(b[1]) and a[0].equals(b[0])
