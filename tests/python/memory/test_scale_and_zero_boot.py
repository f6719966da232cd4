"""Two memory mechanisms against numbers worked out by hand (docs/memory.md, docs/memory-apps.md):

- ``guest_os.zero_at_boot``: a guest that zeroes its memory at boot (Windows [S2 §3.2]) has all
  its pages mapped after boot; one that does not (Linux) only its kernel; the zeroed pages hold
  the zero page, so a sharing scan collapses them;
- ``memory.scale``: a host scaled down by k behaves as the full-size host, its free-memory state
  thresholds being the full host's fraction of memory (minFree's sliding scale) and its rates in
  pages per second divided by k.
"""

from __future__ import annotations

import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation


def _tables(sc: dict) -> dict:
    sim = Simulation(parse_scenario(sc))
    sim.run()
    return {k: v.to_pandas() for k, v in sim.tables().items()}


def _zero_boot_scenario(zero: bool, scan_rate: int = 0) -> dict:
    return {
        "name": "zb", "duration": "60s", "seed": 5, "sample_interval": "10s",
        "host": {"cores_per_llc": 2, "memory": "1GB"},
        "memory": {"policy": "esx2013", "host_overhead": "8MB", "share_scan_rate": scan_rate},
        "vms": [{"name": "win", "memory": "64MB",
                 "guest_memory": {"overhead": "1MB", "working_set": "8MB", "touch_rate": 0.0,
                                  "guest_os": {"kernel_base": "4MB", "zero_at_boot": zero}},
                 "workload": {"type": "cpu_bound", "duty": 0.1}}],
    }


# By hand: a 64 MB guest has 16,384 pages; its kernel is 4 MB + 64 B x 16,384 = 5,242,880 bytes,
# 1,280 pages = 5 MB. Nothing else is mapped at boot (the workload touches nothing: rate 0).
KERNEL_MB = 5.0
FREE_MB = 64.0 - KERNEL_MB


def test_a_linux_guest_maps_only_its_kernel_and_a_windows_guest_all_its_memory():
    linux = _tables(_zero_boot_scenario(False))["mem"].iloc[-1]
    windows = _tables(_zero_boot_scenario(True))["mem"].iloc[-1]
    assert linux["GRANT"] == pytest.approx(KERNEL_MB)
    assert windows["GRANT"] == pytest.approx(64.0)
    assert windows["CNSM"] == pytest.approx(64.0)  # no sharing scan: every zeroed page is private
    assert windows["ZERO"] == 0


def test_the_pages_a_guest_zeroed_at_boot_share_as_the_zero_page():
    """A scan rate that covers the VM many times (16,384 pages at 5,000 pages/s over 60 s):
    every free page holds the zero page, so all 59 MB of them share one frame; the kernel's
    private pages do not."""
    mem = _tables(_zero_boot_scenario(True, scan_rate=5000))["mem"].iloc[-1]
    assert mem["ZERO"] == pytest.approx(FREE_MB)
    assert mem["SHRD"] == pytest.approx(FREE_MB)
    # consumed: the kernel plus this VM's 1/n of the one zero frame (n = 15,104 sharers)
    assert mem["CNSM"] == pytest.approx(KERNEL_MB + 1 / 256, abs=1e-6)


def _pressure(scale: int) -> dict:
    """A host under pressure, full size (scale 1) or scaled down by ``scale`` (every size divided
    by it, the hog's mapping rate too): two 5 GB guests that zeroed their memory at boot and then
    touch nothing, and a 10 GB hog with full reservation that maps its memory at 40,000 pages/s
    (faster than the two balloon drivers' 25,600), on a 16 GB host: minFree is 655 MB, 4.0% of it,
    where a 2 GB host's is 6%. The VMs balloon, and ESX swaps where the balloon is not enough; no
    page is touched twice, so no swap-in stalls a vCPU (a stall is a time, which scaling keeps,
    standing for k touches: see docs/memory-apps.md)."""
    mb = lambda x: f"{x * 1024 // scale}KB"  # noqa: E731 (sizes given in MB at full size)
    return {
        "name": f"scale-{scale}", "duration": "120s", "seed": 7, "sample_interval": "5s",
        "host": {"cores_per_llc": 2, "memory": mb(16384)},
        "memory": {"policy": "esx2013", "scale": scale, "host_overhead": mb(512), "share_scan_rate": 0},
        "vms": [
            {"name": "vm", "count": 2, "memory": mb(VM_MB),
             "guest_memory": {"overhead": mb(32), "touch_rate": 0.0,
                              "guest_os": {"kernel_base": mb(256), "kernel_bytes_per_page": 0.0, "zero_at_boot": True}},
             "workload": {"type": "cpu_bound", "duty": 0.1}},
            {"name": "hog", "memory": mb(10240), "memory_allocation": {"reservation": mb(10240)},
             "guest_memory": {"overhead": mb(32), "pattern": "sequential", "hot_block": "4KB",
                              "touch_rate": HOG_PAGES_PER_S / scale},
             "workload": {"type": "cpu_bound", "duty": 1.0}},
        ],
    }


VM_MB = 5120
HOG_PAGES_PER_S = 40000.0


#: When the hog has mapped its 10 GB (66 s at 40,000 pages/s) and swap-outs in flight have
#: landed. Before that the runs differ by up to 3% of a VM for a sample: a clustered swap-out
#: writes 64 pages at either scale, so the scaled run's writes stand for 8 times more memory each
#: and land at other times.
SETTLED_S = 75.0


def test_a_scaled_host_moves_the_same_fractions_of_memory_at_the_same_times():
    """The full-size run and the one scaled by 8 against each other: the host's state at 90% of
    the samples, and once the hog has mapped its memory each VM's ballooned and swapped memory as
    a fraction of its size, agree to 2% of the VM (random victims differ between the runs).
    Without the scaling of minFree and of the rates they do not (checked below)."""
    full, small = _tables(_pressure(1)), _tables(_pressure(8))
    assert (full["mem_host"]["state"].to_numpy() == small["mem_host"]["state"].to_numpy()).mean() >= 0.9
    f, s = full["mem"], small["mem"]
    f, s = (d[(d["vm"] != "hog") & (d["time_s"] >= SETTLED_S)] for d in (f, s))
    for col in ("MCTLSZ", "SWCUR"):
        assert (f[col] / VM_MB - s[col] / (VM_MB / 8)).abs().max() < 0.02, col
    # the run presses the VMs by both techniques: full size, 9.6% ballooned and 13.4% swapped
    assert f["MCTLSZ"].min() > 0.05 * VM_MB and f["SWCUR"].min() > 0.05 * VM_MB


def test_without_scaling_the_small_host_behaves_differently():
    """The control for the test above: the same small host without ``scale`` keeps a 2 GB host's
    minFree (6% instead of 4%) and the full-size balloon rate, 8 times what the small VMs' memory
    calls for. Its balloon then outruns the hog and takes 55% of each VM with no swapping at all,
    where the full-size host balloons 9.6% and swaps 13.4%: the error of the B.11 reproduction
    before ``memory.scale`` (docs/memory-apps.md)."""
    full = _tables(_pressure(1))
    sc = _pressure(8)
    del sc["memory"]["scale"]
    small = _tables(sc)
    f, s = full["mem"], small["mem"]
    f, s = (d[(d["vm"] != "hog") & (d["time_s"] >= SETTLED_S)] for d in (f, s))
    assert (s["MCTLSZ"] / (VM_MB / 8) - f["MCTLSZ"] / VM_MB).min() > 0.3
    assert s["SWCUR"].max() == 0 and f["SWCUR"].min() > 0


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda s: s["memory"].update(scale=0), "memory.scale", "greater than or equal to 1"),
        (lambda s: s["memory"].update(scale=1.5), "memory.scale", "integer"),
        (lambda s: s["memory"].update(scale=5000), "memory.scale", "less than or equal to 4096"),
        (lambda s: s["vms"][0]["guest_memory"]["guest_os"].update(zero_at_boot="yes"),
         "vms[0].guest_memory.guest_os.zero_at_boot", "boolean"),
    ],
)
def test_bad_scale_and_zero_at_boot_name_the_field(edit, field, words):
    sc = _zero_boot_scenario(True)
    edit(sc)
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(sc).to_engine_spec()
    msg = str(exc.value)
    assert msg.startswith(field + ": got ") and words in msg, msg
