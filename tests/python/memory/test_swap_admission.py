"""Admission control checks swap space (research/memory.md C.22): at power-on a VM needs
(configured memory - memory reservation) of space for its swap file on the swap file's
datastore, beside its virtual disks and the swap files of the VMs already on. A datastore's
``capacity`` defaults to unlimited. The expected outcomes are worked out by hand below from the
sizes, not from the engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vmtwin.exceptions import AdmissionControlError, ScenarioError
from vmtwin.scenario import load_scenario, parse_scenario
from vmtwin.simulation import Simulation

REPO = Path(__file__).resolve().parents[3]
MB = 1 << 20


def vmtwin(*argv, cwd=None):
    script = Path(sys.executable).with_name("vmtwin")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "vmtwin.cli"]
    return subprocess.run([*cmd, *map(str, argv)], capture_output=True, text=True, cwd=cwd, timeout=300)


def scenario(capacity=None, count=3, reservation=None, disks=(), swap_ds="ds1") -> dict:
    ds1 = {"name": "ds1", "device": {"type": "ssd"}, "paths": [{"adapter": "vmhba1"}]}
    if capacity is not None:
        ds1["capacity"] = capacity
    vm = {"name": "a", "count": count, "memory": "64MB", "workload": {"type": "cpu_bound", "duty": 0.5},
          "guest_memory": {"overhead": "1MB", "touch_rate": 1000, "swap_datastore": swap_ds}}
    if reservation is not None:
        vm["memory_allocation"] = {"reservation": reservation}
    return {
        "name": "swap-space", "seed": 1, "duration": "2s",
        "host": {"cores_per_llc": 2, "memory": "256MB"},
        "memory": {"policy": "esx2013", "host_overhead": "4MB"},
        "storage": {
            "adapters": [{"name": "vmhba1"}],
            "datastores": [ds1, {"name": "ds2", "device": {"type": "ssd"}, "paths": [{"adapter": "vmhba1"}]}],
            "disks": [{"vm": "a", "datastore": "ds1", "size": s} for s in disks],
        },
        "vms": [vm],
    }


def build(sc: dict) -> Simulation:
    return Simulation(parse_scenario(sc))


def test_swap_files_that_fit_exactly_are_admitted():
    # three VMs of 64 MB without reservation: 3 x 64 MB of swap files, exactly the capacity
    build(scenario(capacity="192MB"))


def test_the_sum_over_the_vms_on_one_datastore_is_checked():
    # 2 x 64 MB fit in 150 MB; the third VM would need 64 MB with 22 MB left
    with pytest.raises(AdmissionControlError) as exc:
        build(scenario(capacity="150MB"))
    msg = str(exc.value)
    assert "'a-3'" in msg and "'ds1'" in msg, msg
    assert f"needs {64 * MB} bytes" in msg and f"has {150 * MB - 128 * MB} bytes free" in msg, msg


def test_the_swap_file_is_configured_memory_minus_reservation():
    # with 40 MB reserved each VM's swap file is 24 MB: 3 x 24 = 72 MB fit in 72 MB, not in 71
    build(scenario(capacity="72MB", reservation="40MB"))
    with pytest.raises(AdmissionControlError, match=f"needs {24 * MB} bytes .* has {71 * MB - 48 * MB} bytes free"):
        build(scenario(capacity="71MB", reservation="40MB"))


def test_a_vm_with_full_reservation_needs_no_swap_space():
    # 64 MB reserved of 64 MB: the swap files are empty, and even a datastore with no room admits
    build(scenario(capacity="0B", count=2, reservation="64MB"))


def test_virtual_disks_take_their_space_first():
    # a 100 MB disk per VM instance (3 x 100 MB) on a 400 MB datastore leaves 100 MB: one swap file
    with pytest.raises(AdmissionControlError) as exc:
        build(scenario(capacity="400MB", disks=["100MB"]))
    assert "'a-2'" in str(exc.value) and f"has {100 * MB - 64 * MB} bytes free" in str(exc.value)


def test_other_datastores_and_no_capacity_are_unlimited():
    build(scenario())  # no capacity anywhere
    build(scenario(capacity="1MB", swap_ds="ds2"))  # the swap files are on ds2, which has none


def test_a_capacity_below_the_virtual_disks_is_refused():
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(scenario(capacity="250MB", disks=["100MB"])).to_engine_spec()
    assert str(exc.value).startswith("storage.datastores[0].capacity: got "), exc.value
    assert f"at least the {300 * MB} bytes of the virtual disks" in str(exc.value)


def test_vmtwin_run_exits_2_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(scenario(capacity="150MB")))
    out = tmp_path / "out"
    res = vmtwin("run", path, "-o", out, "-q")
    assert res.returncode == 2, res.stderr
    assert "a-3" in res.stderr and "ds1" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not out.exists()
    res = vmtwin("validate", path)
    assert res.returncode == 2 and "a-3" in res.stderr, res.stderr


def test_no_shipped_scenario_is_refused():
    # the default is unlimited: the shipped scenarios with memory and storage still build
    for p in sorted((REPO / "scenarios").glob("*.yaml")):
        sc = load_scenario(p)
        if sc.memory is not None and sc.storage is not None:
            build(parse_scenario(yaml.safe_load(p.read_text()), base_dir=p.parent))
