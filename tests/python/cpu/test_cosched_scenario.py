"""Scenario fields of co-scheduling and the barrier workload: what reaches the engine spec, and
bad values refused naming their YAML path (docs/cosched.md)."""

import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import parse_scenario

BASE = """
host: {cores_per_llc: 2}
cpu_scheduler: {cosched_mode: "MODE"}  # quoted: YAML reads a bare off as false
vms:
  - name: pair
    vcpus: 2
    workload: {type: barrier, phase: 5ms, phase_distribution: exponential, wait: halt, spin_limit: 200us}
"""


@pytest.mark.parametrize("mode", ["off", "strict", "relaxed-3x", "relaxed-4x"])
def test_every_cosched_mode_reaches_the_engine_spec(mode):
    spec = parse_scenario(BASE.replace("MODE", mode)).to_engine_spec()
    assert spec["cpu_sched"]["cosched_mode"] == mode
    assert spec["vms"][0]["workload"] == {"kind": "barrier", "phase_ns": 5_000_000, "phase_dist": "exponential",
                                          "wait": "halt", "spin_limit_ns": 200_000, "spin_poll_ns": 50_000}


@pytest.mark.parametrize("text, path", [
    (BASE.replace("MODE", "relaxed-5x"), "cpu_scheduler.cosched_mode"),
    (BASE.replace("MODE", "strict").replace("phase: 5ms", "phase: 0ms"), "vms[0].workload.phase"),
    (BASE.replace("MODE", "strict").replace("wait: halt", "wait: sleep"), "vms[0].workload.wait"),
])
def test_bad_values_name_their_path(text, path):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text)
    assert path in str(e.value)
