"""Fluid mode refuses what acts on bursts it does not simulate, naming the field, exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vmtwin import Simulation
from vmtwin.exceptions import VmtwinError
from vmtwin.scenario import load_scenario

HOST = "host: {cores_per_llc: 4, core_mhz: 2600MHz}\n"
VM = "vms:\n  - {name: a, workload: {type: cpu_bound, duty: 0.5}}\n"
CASES = {
    "cells": ("cpu_scheduler: {cell_size: 4}\n" + VM, "cpu_scheduler.cell_size: got 4"),
    "cosched": ("cpu_scheduler: {cosched_mode: strict}\n" + VM, "cpu_scheduler.cosched_mode: got strict"),
    "barrier": ("vms:\n  - {name: a, vcpus: 2, workload: {type: barrier}}\n", "vms[0].workload"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_naming_the_field(name, tmp_path):
    body, expect = CASES[name]
    scenario = tmp_path / "s.yaml"
    scenario.write_text("fidelity: fluid\nduration: 10s\n" + HOST + body)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "vmtwin.cli", "run", str(scenario), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert expect in done.stderr and "fluid mode" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_the_python_api_raises_a_vmtwin_error(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("fidelity: fluid\nduration: 10s\n" + HOST + CASES["cells"][0])
    with pytest.raises(VmtwinError, match=r"cpu_scheduler\.cell_size"):
        Simulation(load_scenario(p)).run()
