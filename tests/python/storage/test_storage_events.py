"""PSP changes as scenario events (policy, --iops, the Adaptive knob) and a VM disk's virtual
queue depth, from YAML to the run's tables."""

from __future__ import annotations

import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.loading import parse_scenario

S = 1_000_000_000


def doc(events: list, psp: dict | None = None, queue_depth: int | None = None, outstanding: int = 32) -> dict:
    disk = {"vm": "vm", "datastore": "lun0", "size": "100MB",
            "workload": {"type": "iometer", "block_size": "16KB", "read_pct": 50, "random_pct": 100,
                         "outstanding": outstanding}}
    if queue_depth is not None:
        disk["queue_depth"] = queue_depth
    return {
        "name": "psp-events", "seed": 5, "duration": "8s", "sample_interval": "1s",
        "host": {"name": "esx01", "cores_per_llc": 8, "core_mhz": "2600MHz", "memory": "64GB"},
        "vms": [{"name": "vm", "count": 8, "workload": {"type": "idle"}}],
        "storage": {
            "adapters": [{"name": "vmhba1"}, {"name": "vmhba2"}],
            "arrays": [{"name": "fa1"}],
            "datastores": [{
                "name": "lun0", "device": {"type": "array", "array": "fa1", "owner": 0}, "dqlen": 64,
                "psp": psp or {"policy": "fixed", "preferred": 0},
                "paths": [{"adapter": "vmhba1", "controller": 0}, {"adapter": "vmhba2", "controller": 0},
                          {"adapter": "vmhba1", "controller": 1}, {"adapter": "vmhba2", "controller": 1}],
            }],
            "disks": [disk],
            "events": events,
        },
    }


ADAPTIVE = {"policy": "adaptive", "iops": 1, "ta": "300us", "tb": "150us", "tc": "5ms"}


def test_events_normalize_to_path_and_psp_events():
    spec = parse_scenario(doc([
        {"at": "1s", "datastore": "lun0", "action": "set_psp", "psp": {"policy": "round_robin", "iops": 1}},
        {"at": "2s", "datastore": "lun0", "action": "set_iops", "iops": 10},
        {"at": "3s", "datastore": "lun0", "path": 1, "action": "down"},
        {"at": "4s", "datastore": "lun0", "action": "set_psp", "psp": ADAPTIVE},
        {"at": "5s", "datastore": "lun0", "action": "adaptive_off"},
    ])).to_engine_spec()["storage"]
    assert spec["events"] == [{"at_ns": 3 * S, "lun": "lun0", "path": 1, "action": "down"}]
    assert [e["change"] for e in spec["psp_events"]] == [
        {"policy": {"policy": "round_robin", "iops": 1}}, {"iops": 10},
        {"policy": {"policy": "adaptive", "iops": 1, "params": {"ta_ns": 300_000, "tb_ns": 150_000, "tc_ns": 5_000_000}}},
        {"adaptive_enabled": False}]
    assert spec["disks"][0]["queue_depth"] == 64  # PVSCSI's default


def _path_cmds(sim) -> dict[float, list[float]]:
    path = sim.tables()["path"].to_pandas()
    return {t: list(g.sort_values("path_id")["CMDS/s"]) for t, g in path.groupby("time_s")}


def test_a_run_follows_the_policy_changes():
    from vmtwin.simulation import Simulation

    sim = Simulation(doc([
        {"at": "2s", "datastore": "lun0", "action": "set_psp", "psp": {"policy": "round_robin", "iops": 1}},
        {"at": "4s", "datastore": "lun0", "action": "set_psp", "psp": ADAPTIVE},
        {"at": "6s", "datastore": "lun0", "action": "adaptive_off"},
    ]))
    sim.run()
    rows = _path_cmds(sim)
    # FIXED: path 0 alone; RR: the two AO paths alike; Adaptive: writes on the AUO paths too;
    # knob off: back to the AO paths (the window at 6 s ends spreading; what was in flight on
    # the AUO paths then, at most DQLEN commands, completes in the next second)
    for t in (1.0, 2.0):
        assert rows[t][0] > 0 and rows[t][1:] == [0, 0, 0], rows[t]
    for t in (3.0, 4.0):
        assert rows[t][1] > 0 and abs(rows[t][0] - rows[t][1]) / rows[t][0] < 0.02 and rows[t][2:] == [0, 0], rows[t]
    assert rows[6.0][2] > 0 and rows[6.0][3] > 0, rows[6.0]
    assert sum(rows[7.0][2:]) <= 64 and rows[8.0][2:] == [0, 0], (rows[7.0], rows[8.0])


BAD = [
    ("iops on a fixed datastore", [{"at": "1s", "datastore": "lun0", "action": "set_iops", "iops": 5}],
     "storage.events[0].action", "round_robin or adaptive"),
    ("knob before the datastore is on adaptive",
     [{"at": "3s", "datastore": "lun0", "action": "set_psp", "psp": ADAPTIVE},
      {"at": "2s", "datastore": "lun0", "action": "adaptive_off"}],
     "storage.events[1].action", "on fixed"),
    ("a new policy with a bad setting",
     [{"at": "1s", "datastore": "lun0", "action": "set_psp", "psp": {"policy": "fixed", "preferred": 9}}],
     "storage.events[0].psp.preferred", "below 4"),
    ("a new adaptive policy with ta <= tb",
     [{"at": "1s", "datastore": "lun0", "action": "set_psp", "psp": {**ADAPTIVE, "tb": "1ms"}}],
     "storage.events[0].psp.ta", "ta > tb"),
    ("an unknown action", [{"at": "1s", "datastore": "lun0", "action": "reboot"}], "storage.events[0].action",
     "set_psp, set_iops, adaptive_on"),
    ("an event on an undefined datastore", [{"at": "1s", "datastore": "lun9", "action": "adaptive_on"}],
     "storage.events[0].datastore", "lun9"),
]


@pytest.mark.parametrize("what,events,field,hint", BAD, ids=[b[0] for b in BAD])
def test_bad_events_name_the_field(what, events, field, hint):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc(events))
    msg = str(info.value)
    assert field in msg and hint in msg, msg


def test_a_zero_queue_depth_is_refused():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc([], queue_depth=0))
    assert "storage.disks[0].queue_depth" in str(info.value)


def test_the_virtual_queue_caps_what_reaches_the_host():
    # 32 outstanding per VM, virtual queue depth 4: the host sees 4 per disk (ACTV + QUED <= 4)
    from vmtwin.simulation import Simulation

    sim = Simulation(doc([], queue_depth=4))
    sim.run()
    disk = sim.tables()["disk"].to_pandas()
    assert (disk["ACTV"] + disk["QUED"]).max() <= 4
    lun = sim.tables()["lun"].to_pandas()
    assert (lun["ACTV"] + lun["QUED"]).max() <= 32
