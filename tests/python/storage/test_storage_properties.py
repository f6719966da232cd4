"""Properties of the storage section over random inputs (hypothesis)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.loading import parse_scenario

REPO = Path(__file__).resolve().parents[3]
BASE = yaml.safe_load((REPO / "scenarios" / "storage-flash-array.yaml").read_text())

# (field path inside storage, setter, the path an error must name)
FIELDS = [
    (lambda s, v: s["datastores"][0].update(dqlen=v), "storage.datastores[0].dqlen"),
    (lambda s, v: s["adapters"][1].update(queue_depth=v), "storage.adapters[1].queue_depth"),
    (lambda s, v: s["datastores"][0]["psp"].update(iops=v), "storage.datastores[0].psp.iops"),
    (lambda s, v: s["disks"][0]["workload"].update(outstanding=v), "storage.disks[0].workload.outstanding"),
]


@settings(max_examples=40, deadline=None)
@given(k=st.integers(0, len(FIELDS) - 1), bad=st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.text(max_size=5)))
def test_a_bad_count_is_refused_naming_its_field(k, bad):
    setter, field = FIELDS[k]
    doc = copy.deepcopy(BASE)
    setter(doc["storage"], bad)
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc)
    assert str(info.value).startswith(field), str(info.value)


@settings(max_examples=30, deadline=None)
@given(tb=st.integers(1, 5000), gap=st.integers(-5000, 5000), tc_gap=st.integers(1, 5000))
def test_adaptive_thresholds_are_accepted_exactly_when_ta_exceeds_tb(tb, gap, tc_gap):
    ta = tb + gap
    doc = copy.deepcopy(BASE)
    doc["storage"]["datastores"][0]["psp"] = {"policy": "adaptive", "ta": f"{max(ta, 0)}us", "tb": f"{tb}us",
                                              "tc": f"{max(ta, 0) + tc_gap}us"}
    if max(ta, 0) > tb:
        spec = parse_scenario(doc).to_engine_spec()["storage"]["luns"][0]["psp"]
        assert spec["params"]["ta_ns"] == max(ta, 0) * 1000 and spec["params"]["tb_ns"] == tb * 1000
    else:
        with pytest.raises(ScenarioError) as info:
            parse_scenario(doc)
        assert str(info.value).startswith("storage.datastores[0].psp.ta")
