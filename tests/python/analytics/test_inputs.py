"""Metric and event inputs: long, wide, two-row headers, time zones, missing values, bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vmtwin.analytics.events import read_events
from vmtwin.analytics.inputs import read_metrics
from vmtwin.exceptions import ScenarioError

T0 = 1_704_067_200.0  # 2024-01-01T00:00:00Z


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_long_form_with_offsets_missing_and_unsorted(tmp_path):
    p = write(tmp_path, "m.csv", "timestamp,resource,metric,value\n"
              "2024-01-01T01:05:00+01:00,db1,cpu,3\n"      # = 00:05Z, out of order
              "2024-01-01 00:00:00,db1,cpu,1.5\n"          # naive: UTC
              "2024-01-01T00:12:00Z,db1,cpu,\n"            # missing value, irregular step
              "2024-01-01T00:00:00Z,web1,mem,7\n")
    df = read_metrics(p)
    assert list(df.columns) == ["time_s", "resource", "metric", "value"]
    db = df[df.resource == "db1"]
    assert db.time_s.tolist() == [T0, T0 + 300, T0 + 720]
    assert db.value.tolist()[:2] == [1.5, 3.0] and np.isnan(db.value.iloc[2])


def test_naive_times_in_a_named_zone(tmp_path):
    p = write(tmp_path, "m.csv", "time,resource,metric,value\n2024-01-01 01:00:00,a,cpu,1\n")
    assert read_metrics(p, tz="Europe/Paris").time_s.tolist() == [T0]


def test_wide_form_one_and_two_header_rows_agree(tmp_path):
    one = write(tmp_path, "w1.csv", "timestamp,db1:cpu,db1:mem,web1/cpu\n"
                "2024-01-01T00:00:00Z,1,2,3\n2024-01-01T00:05:00Z,4,,6\n")
    two = write(tmp_path, "w2.csv", "timestamp,db1,db1,web1\n,cpu,mem,cpu\n"
                "2024-01-01T00:00:00Z,1,2,3\n2024-01-01T00:05:00Z,4,,6\n")
    a, b = read_metrics(one), read_metrics(two, header_rows=2)
    pd.testing.assert_frame_equal(a, b)
    assert sorted(set(zip(a.resource, a.metric))) == [("db1", "cpu"), ("db1", "mem"), ("web1", "cpu")]


def test_parquet_long_form(tmp_path):
    df = pd.DataFrame({"time_s": [T0, T0 + 60], "resource": ["a", "a"], "metric": ["cpu", "cpu"], "value": [1.0, 2.0]})
    df.to_parquet(tmp_path / "m.parquet")
    assert read_metrics(tmp_path / "m.parquet").value.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("text, message", [
    ("timestamp,resource,metric,value,colour\n2024-01-01,a,cpu,1,red\n", "column 'colour'"),
    ("timestamp,resource,metric,value\n2024-01-01,a,cpu,fast\n", "row 2, column value: got 'fast'"),
    ("timestamp,resource,metric,value\nyesterday,a,cpu,1\n", "row 2, column timestamp: got 'yesterday'"),
    ("timestamp,cpu\n2024-01-01,1\n", "column 'cpu'"),
    ("timestamp,resource,metric,value\n2024-01-01,a,cpu,1,extra,fields\n", "malformed CSV"),
    ("timestamp,resource,metric,value\n2024-01-01,esx:01,cpu,1\n", "resource: got 'esx:01'"),
])
def test_bad_files_name_the_problem(tmp_path, text, message):
    with pytest.raises(ScenarioError, match=message):
        read_metrics(write(tmp_path, "bad.csv", text))


def test_event_list(tmp_path):
    p = write(tmp_path, "e.csv", "resource,attribute,symptom,start,end\n"
              "db1,cpu,above,2024-01-01T00:10:00Z,2024-01-01T00:40:00Z\n"
              "web1,latency,above,2024-01-01T00:00:00Z,\n")
    ev = read_events(p)
    assert [(e.resource, e.start, e.end) for e in ev] == [("web1", T0, None), ("db1", T0 + 600, T0 + 2400)]
    bad = write(tmp_path, "bad.csv", "resource,attribute,symptom,start,end\ndb1,cpu,above,2024-01-01T01:00:00Z,2024-01-01T00:00:00Z\n")
    with pytest.raises(ScenarioError, match="end"):
        read_events(bad)


def test_results_folder(tmp_path):
    """A vmtwin results folder: the host table as resource "host", the vm table per VM name."""
    import pyarrow as pa

    from vmtwin.results import write_results

    t = [2.0, 4.0, 6.0]
    tables = {
        "host": pa.table({"time_s": t, "pcpus": [4, 4, 4], "%PCPU_UTIL": [10.0, 20.0, 30.0]}),
        "vm": pa.table({"time_s": t + t, "vm": ["web1"] * 3 + ["db1"] * 3, "vm_id": [0] * 3 + [1] * 3,
                        "%RDY": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}),
    }
    folder = write_results(tmp_path / "run", tables, {"scenario_name": "t"})
    df = read_metrics(folder)
    got = {(r, m): v.tolist() for (r, m), v in df.groupby(["resource", "metric"])["value"]}
    assert got[("host", "%PCPU_UTIL")] == [10.0, 20.0, 30.0]
    assert got[("db1", "%RDY")] == [4.0, 5.0, 6.0] and got[("web1", "%RDY")] == [1.0, 2.0, 3.0]
    assert ("web1", "vm_id") not in got and df.time_s.min() == 2.0
