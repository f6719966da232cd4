"""The bursty (hyperexponential) open source: Kraft et al.'s Postmark/FFSB arrivals in scenarios.

The generator's inter-arrival mean and CV are checked against the closed form in the engine
(``storage::workload`` proptest); here: the presets carry Table 4's numbers, the rate a LUN sees
matches the asked one within the counting error of a renewal process, and bad input is named.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.loading import parse_scenario
from vmtwin.scenario.storage import KRAFT_PRESETS
from vmtwin.simulation import Simulation

#: Kraft et al. Table 4: inter-arrival mean (ms) and CV, by workload.
TABLE4 = {"pm-1": (0.72, 21.0), "pm-2": (0.81, 16.4), "ffsb-1s": (3.07, 9.2), "ffsb-1r": (3.24, 9.1),
          "ffsb-2s": (4.36, 9.9), "ffsb-2r": (3.54, 10.8)}


def scenario(workload: dict, duration_s: int = 20, seed: int = 3) -> dict:
    return {"name": "bursty", "seed": seed, "duration": f"{duration_s}s", "sample_interval": "1s",
            "host": {"cores_per_llc": 2, "core_mhz": "2600MHz", "memory": "8GB"},
            "vms": [{"name": "vm", "workload": {"type": "idle"}}],
            "storage": {"adapters": [{"name": "vmhba1"}],
                        "datastores": [{"name": "lun0", "dqlen": 64, "paths": [{"adapter": "vmhba1"}],
                                        "device": {"type": "exponential", "servers": 64, "mean_service": "100us"}}],
                        "disks": [{"vm": "vm", "datastore": "lun0", "size": "1GB", "queue_depth": 4096,
                                   "workload": workload}]}}


def test_the_presets_carry_table_4():
    assert {k: v[:2] for k, v in KRAFT_PRESETS.items()} == TABLE4
    spec = parse_scenario(scenario({"type": "bursty", "preset": "ffsb-2s", "read_pct": 70})).to_engine_spec()
    w = spec["storage"]["workloads"][0]
    assert w["kind"] == "bursty"
    assert w["rate_per_s"] == pytest.approx(1000 / 4.36) and w["cv"] == 9.9
    assert (w["block_bytes"], w["random_pct"], w["read_pct"]) == (256 * 1024, 0.0, 70.0), "a given field wins over the preset"


@settings(max_examples=4, deadline=None)
@given(rate=st.floats(200.0, 3000.0), cv=st.floats(1.0, 20.0), seed=st.integers(0, 1000))
def test_the_lun_sees_the_asked_rate(rate, cv, seed):
    """Over t seconds a renewal process with rate λ and inter-arrival CV c counts λt arrivals
    with variance about c²λt (the renewal central limit theorem); the device is fast enough
    that every arrival completes within the run."""
    t = 30
    sim = Simulation(scenario({"type": "bursty", "rate": rate, "cv": cv}, duration_s=t, seed=seed))
    sim.run()
    disk = sim.tables()["disk"].to_pandas()
    done = disk["CMDS/s"].sum()  # 1 s intervals
    sd = math.sqrt(cv * cv * rate * t)
    assert abs(done - rate * t) < 5 * sd + 2, (done, rate * t, sd)


def test_a_preset_run_is_bursty_per_second_and_poisson_is_not():
    """The per-second counts of a CV-21 source spread far wider than Poisson's at the same rate
    (index of dispersion ≈ c² against 1 for windows long beside the mean gap)."""
    def dispersion(w):
        sim = Simulation(scenario(w, duration_s=60))
        sim.run()
        c = sim.tables()["disk"].to_pandas()["CMDS/s"]
        return c.var() / c.mean()
    rate = 1000 / 0.72
    assert dispersion({"type": "poisson", "rate": rate}) < 3
    assert dispersion({"type": "bursty", "preset": "pm-1"}) > 30


@pytest.mark.parametrize("workload,field,hint", [
    ({"type": "bursty", "cv": 3.0}, "storage.disks[0].workload.rate", "preset"),
    ({"type": "bursty", "rate": 100.0}, "storage.disks[0].workload.cv", "preset"),
    ({"type": "bursty", "rate": 100.0, "cv": 0.5}, "storage.disks[0].workload.cv", "1"),
    ({"type": "bursty", "preset": "pm-9"}, "storage.disks[0].workload.preset", "pm-1"),
])
def test_bad_bursty_input_names_the_field(workload, field, hint):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(scenario(workload))
    msg = str(info.value)
    assert field in msg and hint in msg, msg
