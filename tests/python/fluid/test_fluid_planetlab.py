"""Fluid mode on the real PlanetLab day (../shared/data/planetlab, 1,052 VMs, 300 s samples).

At 300 s steps each step is one trace sample, so fluid mode's answer can be checked sample by
sample against the trace arithmetic done here with numpy (the files read directly, not through
vmtwin.traces):

- uncontended (one core per VM): every VM uses its trace, so the mean use per VM is the trace
  mean, 0.12314 of a vCPU (CloudSim Plus 8.5.7 reports the same on this day);
- contended (the day on 60 cores, equal shares): each step is the equal-share max-min of that
  sample's demands, ``min(d_i, level)`` with the level filling the cores, solved here by bisection.

And a run written twice gives byte-identical Parquet tables.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from vmtwin import VM, Host, Scenario, Simulation
from vmtwin.scenario.models import TraceWorkload

DAY = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "planetlab" / "20110303"
pytestmark = pytest.mark.skipif(not DAY.is_dir(), reason=f"the PlanetLab day is not at {DAY}")


def files(n=None):
    return sorted(DAY.iterdir(), key=lambda p: p.name.encode())[:n]


def scenario(paths, cores):
    vms = [VM(name=f"vm{i}", memory="1GB", workload=TraceWorkload(format="planetlab", path=str(p)))
           for i, p in enumerate(paths)]
    return Scenario(name="planetlab-fluid", duration="24h", sample_interval="300s", fidelity="fluid",
                    host=Host(cores_per_llc=cores, core_mhz="1000MHz", memory="4096GB"), vms=vms)


def demands(paths) -> np.ndarray:
    """Trace samples as fractions of a vCPU: one row per VM, one column per 300 s step."""
    return np.array([np.loadtxt(p, dtype=float) for p in paths]) / 100.0


def used_by_step(sc) -> np.ndarray:
    sim = Simulation(sc)
    sim.run()
    vm = sim.tables()["vm"].to_pandas()
    return vm.pivot(index="vm_id", columns="time_s", values="%USED").to_numpy() / 100.0


def test_uncontended_day_uses_the_trace():
    paths = files()
    assert len(paths) == 1052
    used = used_by_step(scenario(paths, len(paths)))
    d = demands(paths)
    assert np.abs(used - d).max() < 1e-6
    assert round(used.mean(), 5) == 0.12314


def test_contended_day_is_the_equal_share_max_min_of_each_sample():
    paths = files()
    cores = 60
    used = used_by_step(scenario(paths, cores))
    d = demands(paths)
    want = np.empty_like(d)
    for k in range(d.shape[1]):
        lo, hi = 0.0, 1.0
        if d[:, k].sum() <= cores:
            want[:, k] = d[:, k]
            continue
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if np.minimum(d[:, k], mid).sum() < cores else (lo, mid)
        want[:, k] = np.minimum(d[:, k], hi)
    assert (d.sum(axis=0) > cores).any(), "the day must overcommit 60 cores at some step"
    assert np.abs(used - want).max() < 1e-6


def test_written_tables_are_byte_identical(tmp_path):
    sc = scenario(files(200), 20)
    digests = []
    for run in ("a", "b"):
        sim = Simulation(sc)
        sim.run()
        sim.write(tmp_path / run)
        digests.append({t: hashlib.sha256((tmp_path / run / f"{t}.parquet").read_bytes()).hexdigest()
                        for t in ("host", "vm", "vcpu", "pcpu")})
    assert digests[0] == digests[1]
