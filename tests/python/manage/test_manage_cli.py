"""``vmtwin manage``: end to end on the example scenarios, and bad input refused with exit 2, a
message naming the file and line or key, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "scenarios" / "manage"


def test_power_on_example_side_by_side(cli, tmp_path):
    out = tmp_path / "po"
    rc, stdout, err = cli("manage", EXAMPLES / "power_on.yaml", "-o", out)
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "rounds.csv", "summary.json"]
    s = json.loads((out / "summary.json").read_text())
    labels = [p["policy"] for p in s["policies"]]
    assert labels == ["naive-static", "optimal-static", "vatm"] and s["tasks"] == 200
    by = {p["policy"]: p for p in s["policies"]}
    assert by["naive-static"]["batch"] == 5 and by["vatm"]["batch_trace_first_seed"][:2] == [5, 10]
    sweep = by["optimal-static"]["sweep"]
    assert by["optimal-static"]["batch"] == sweep["best_batch"]
    assert by["optimal-static"]["latency_s"] == pytest.approx(min(sweep["mean_latency_s"]))
    assert by["optimal-static"]["latency_s"] <= by["vatm"]["latency_s"] < by["naive-static"]["latency_s"]
    rounds = (out / "rounds.csv").read_text().splitlines()
    assert rounds[0].startswith("policy,seed,round,tokens,launched")
    assert sum(1 for r in rounds if r.startswith("vatm,1,")) == len(by["vatm"]["batch_trace_first_seed"])
    page = (out / "report.html").read_text()
    assert 'id="manage-plot"' in page and "vatm: batch size" in page
    assert "optimal-static" in stdout


def test_bare_csv_with_user_operations_and_determinism(cli, tmp_path):
    csv = tmp_path / "burst.csv"
    csv.write_text("operation,time,comment\nclone,0,a\nPowerOn,0,b\n" + "snapshot,1.5,c\n" * 30)
    outs = []
    for name in ("a", "b"):
        rc, _, err = cli("manage", csv, "-o", tmp_path / name, "--t-min", 2)
        assert rc == 0, err
        outs.append({f: (tmp_path / name / f).read_bytes() for f in ("summary.json", "rounds.csv", "report.html")})
    assert outs[0] == outs[1]
    s = json.loads(outs[0]["summary.json"])
    assert s["operations"] == ["create", "power_on", "snapshot"] and s["tasks"] == 32


BAD = {
    "unknown-op.csv": ("time,operation\n0,power_on\n3,defragment\n", "unknown-op.csv:3: operation: got 'defragment'"),
    "negative.csv": ("time,operation\n0,power_on\n-2,snapshot\n", "negative.csv:3: time: got '-2'"),
    "nan.csv": ("time,operation\nsoon,snapshot\n", "nan.csv:2: time: got 'soon'"),
    "empty.csv": ("", "empty.csv: got 'an empty file'"),
    "header-only.csv": ("time,operation\n", "header-only.csv: got 'no tasks'"),
    "no-header.csv": ("0,power_on\n", "no-header.csv:1: got '0,power_on'"),
    "latin1.csv": ("time,operation\n0,sn\xe4pshot\n".encode("latin-1"), "latin1.csv: got 'byte 0xe4 at offset 19'; allowed: a UTF-8 text file"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_task_stream(cli, tmp_path, name):
    text, message = BAD[name]
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "out"
    rc, stdout, err = cli("manage", path, "-o", out)
    assert rc == 2 and message in err and "Traceback" not in err, err
    assert err.startswith("error: ")
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [name]


def yaml_case(tmp_path, body: str) -> Path:
    (tmp_path / "ok.csv").write_text("time,operation\n0,power_on\n0,snapshot\n")
    p = tmp_path / "s.yaml"
    p.write_text(body)
    return p


@pytest.mark.parametrize("body,message", [
    ("tasks: ok.csv\npolicies:\n  v: {kind: vatm, t_min: 0}\n", "policies.v.t_min: got 0; allowed: an integer of at least 1"),
    ("tasks: ok.csv\npolicies:\n  s: {kind: static, batch: 0}\n", "policies.s.batch: got 0"),
    ("tasks: ok.csv\npolicies:\n  s: {kind: pid}\n", "policies.s.kind: got 'pid'"),
    ("workload: mixed\ntasks: ok.csv\n", "tasks: got 'ok.csv'; allowed: exactly one of tasks"),
    ("workload: bootstorm\n", "workload: got 'bootstorm'"),
    ("tasks: ok.csv\nplatform: {hosts: 0}\n", "platform.hosts: got 0"),
    ("tasks: ok.csv\nplatform: {cpus: 4}\n", "platform.cpus: got 4"),
    ("tasks: ok.csv\noperations:\n  x: {hostd_s: -1}\n", "operations.x.hostd_s: got -1"),
    ("tasks: missing.csv\n", "missing.csv"),
    ("", "s.yaml: got 'an empty file'"),
])
def test_bad_scenario(cli, tmp_path, body, message):
    path = yaml_case(tmp_path, body)
    rc, _, err = cli("manage", path, "-o", tmp_path / "out")
    assert rc == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option,value", [("--t-min", 0), ("--t-min", -4), ("--seed", -1)])
def test_bad_command_line_values(cli, tmp_path, option, value):
    path = yaml_case(tmp_path, "tasks: ok.csv\n")
    rc, _, err = cli("manage", path, "-o", tmp_path / "out", option, value)
    assert rc == 2 and f"{option}: got {value}" in err
    assert not (tmp_path / "out").exists()


def test_refuses_a_non_empty_destination_before_running(cli, tmp_path):
    path = yaml_case(tmp_path, "tasks: ok.csv\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    rc, _, err = cli("manage", path, "-o", out)
    assert rc == 2 and "--force" in err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    rc, _, err = cli("manage", path, "-o", out, "--force")
    assert rc == 0 and sorted(p.name for p in out.iterdir()) == ["report.html", "rounds.csv", "summary.json"]
