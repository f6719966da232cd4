"""``vmtwin analyze`` end to end: outputs, determinism, bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from vmtwin.analytics.events import events_to_frame
from vmtwin.analytics.synthetic import SyntheticSpec, generate, render_metrics

SCRIPT = Path(sys.executable).with_name("vmtwin")


def vmtwin(*args, cwd=None):
    cmd = [str(SCRIPT)] if SCRIPT.is_file() else [sys.executable, "-m", "vmtwin.cli"]
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("analyze")
    syn = generate(SyntheticSpec(seed=11, train_weeks=1.0, test_weeks=0.3, web=2, app=2))
    frame = render_metrics(syn)
    frame = frame.assign(timestamp=pd.to_datetime(frame.time_s, unit="s", utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
    frame[["timestamp", "resource", "metric", "value"]].to_csv(d / "metrics.csv", index=False)
    events_to_frame(syn.events).to_csv(d / "events.csv", index=False)
    outage = next(o for o in syn.outages if o.time >= syn.t_split)
    return d, syn, outage


def test_analyze_events_ranks_the_root_and_writes_json_and_html(data):
    d, syn, outage = data
    at = pd.Timestamp(outage.time, unit="s", tz="UTC").isoformat()
    split = pd.Timestamp(syn.t_split, unit="s", tz="UTC").isoformat()
    args = ["analyze", d / "events.csv", "--events", "--train-end", split, "--at", at]
    r = vmtwin(*args, "--json", d / "a.json", "--html", d / "a.html")
    assert r.returncode == 0, r.stderr
    summary = json.loads((d / "a.json").read_text())
    assert outage.root_resource in [c["resource"] for c in summary["root_causes"][:3]]
    assert "root causes" in r.stdout and outage.root_resource in r.stdout
    page = (d / "a.html").read_text()
    assert "aece-graph" in page and "plotly" in page.lower()
    vmtwin(*args, "--json", d / "b.json", "-q")
    assert (d / "a.json").read_bytes() == (d / "b.json").read_bytes()


def in_process(capsys, *args):
    """``vmtwin`` through :func:`vmtwin.cli.main` in this process (no interpreter start-up)."""
    from vmtwin.cli import main

    code = main([str(a) for a in args])
    cap = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, cap.out, cap.err)


def test_analyze_metrics(data, capsys):
    d, syn, _ = data
    split = pd.Timestamp(syn.t_split, unit="s", tz="UTC").isoformat()
    r = in_process(capsys, "analyze", d / "metrics.csv", "--train-end", split, "--bands", "robust", "--json", d / "m.json",
                   "--impact-order", "2", "--rank-by", "entropy", "--risk-rule", "weighted")
    assert r.returncode == 0, r.stderr
    s = json.loads((d / "m.json").read_text())
    assert s["train"]["events"] > 0 and s["historic_lists"]
    assert (s["params"]["impact_order"], s["params"]["rank_by"], s["params"]["risk_rule"]) == (2, "entropy", "weighted")


def test_topology_file(data, capsys, tmp_path):
    d, syn, outage = data
    split = pd.Timestamp(syn.t_split, unit="s", tz="UTC").isoformat()
    at = pd.Timestamp(outage.time, unit="s", tz="UTC").isoformat()
    topo = tmp_path / "deps.csv"
    topo.write_text("upstream,downstream\n" + "".join(f"{a},{b}\n" for a, b in syn.topology))
    args = ["analyze", d / "events.csv", "--events", "--train-end", split, "--at", at]
    r = in_process(capsys, *args, "--topology", topo, "--json", tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "t.json").read_text())
    assert outage.root_resource in [c["resource"] for c in s["root_causes"][:3]]
    topo.write_text("from,to\na,b\n")
    r = in_process(capsys, *args, "--topology", topo, "--json", tmp_path / "u.json")
    assert r.returncode == 2 and "upstream,downstream" in r.stderr and not (tmp_path / "u.json").exists()


@pytest.mark.parametrize("name, text, extra, message", [
    ("malformed.csv", "timestamp,resource,metric,value\n2024-01-01,a,cpu,1\n2024-01-01,a,cpu,1,9\n", [], "malformed CSV"),
    ("unknown.csv", "timestamp,resource,metric,value,site\n2024-01-01,a,cpu,1,x\n", [], "column 'site'"),
    ("empty_train.csv", "timestamp,resource,metric,value\n2024-01-01,a,cpu,1\n2024-01-02,a,cpu,2\n",
     ["--train-start", "2023-01-01", "--train-end", "2023-02-01"], "training period"),
    ("inverted.csv", "timestamp,resource,metric,value\n2024-01-01,a,cpu,1\n2024-01-02,a,cpu,2\n",
     ["--train-end", "2023-01-01"], "training period is empty"),
    ("order.csv", "timestamp,resource,metric,value\n2024-01-01,a,cpu,1\n", ["--impact-order", "0"], "--impact-order: got 0"),
])
def test_bad_input_exit_2_nothing_written(tmp_path, capsys, name, text, extra, message):
    src = tmp_path / name
    src.write_text(text)
    out = tmp_path / "out"
    r = in_process(capsys, "analyze", src, *extra, "--json", out / "a.json", "--html", out / "a.html")
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and message in r.stderr.replace("\n", " ")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_bad_input_through_the_command(tmp_path):
    """One bad input through the installed command too: exit status 2 and no traceback."""
    src = tmp_path / "bad.csv"
    src.write_text("timestamp,resource,metric,value\n2024-01-01,a,cpu,1,9\n")
    r = vmtwin("analyze", src, "--json", tmp_path / "a.json")
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    assert not (tmp_path / "a.json").exists()
