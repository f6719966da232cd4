"""``vmtwin storage-predict``: the user's isolation CSV in, the linear predictions out (the same
numbers as the Python API), and bad files refused with exit 2."""

from __future__ import annotations

import json

import pytest

from vmtwin.models.kraft_linear import IsolationStats, predict

# the paper's web and file servers measured alone (Kraft Tables 10 and 11)
CSV = """vm,read_iops,write_iops,read_resp_ms,write_resp_ms,read_aqueue,write_aqueue
web,470,44,11.8,,8.39,
file,330,237,19.9,,9.57,
"""


@pytest.fixture
def summary(tmp_path):
    path = tmp_path / "iso.csv"
    path.write_text(CSV)
    return path


def test_json_equals_the_api(cli, summary):
    rc, out, err = cli("storage-predict", summary, "--json")
    assert rc == 0, err
    got = json.loads(out)
    web = IsolationStats("web", 470, 44, 11.8, float("nan"), 8.39, float("nan"))
    file = IsolationStats("file", 330, 237, 19.9, float("nan"), 9.57, float("nan"))
    p = predict([web, file])
    assert [r["vm"] for r in got["vms"]] == ["web", "file"]
    assert got["consolidated"]["read_mix"] == pytest.approx(p.read_mix)
    assert [r["read_resp_ms"] for r in got["vms"]] == pytest.approx(list(p.read_resp_ms))
    assert [r["write_resp_ms"] for r in got["vms"]] == [None, None]  # not in the file: null, not NaN
    # the documented example's figures (docs/storage.md)
    assert round(p.read_mix, 3) == 0.740 and round(p.read_resp_ms[0], 1) == 29.8


def test_table_and_bad_input(cli, summary, tmp_path):
    rc, out, _ = cli("storage-predict", summary)
    assert rc == 0 and "web" in out and "read mix 0.740" in out
    bad = tmp_path / "bad.csv"
    bad.write_text(CSV.replace("470", "lots"))
    rc, out, err = cli("storage-predict", bad)
    assert rc == 2 and "bad.csv:2" in err and "Traceback" not in err
    rc, _, err = cli("storage-predict", summary, "--vms", "web,nope")
    assert rc == 2 and "nope" in err
