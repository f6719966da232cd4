"""The per-request log of a VM disk (``log_requests``, the ``io_log`` table) through a scenario:
the engine spec, the written table with its names, the counters page, bad input."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from vmtwin.cli import main
from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.loading import parse_scenario

REPO = Path(__file__).resolve().parents[3]
SCENARIO = REPO / "scenarios" / "storage-flash-array.yaml"


def doc(log: object = True) -> dict:
    d = yaml.safe_load(SCENARIO.read_text())
    d["duration"] = "6s"
    d["storage"]["disks"][0]["log_requests"] = log
    return d


def test_only_a_logging_disk_says_so_in_the_engine_spec():
    disks = parse_scenario(doc()).to_engine_spec()["storage"]["disks"]
    logged = [d["name"] for d in disks if d.get("log_requests")]
    assert logged == ["web-1:scsi0:0", "web-2:scsi0:0"]  # web has count 2: one disk per instance
    plain = parse_scenario(doc(False)).to_engine_spec()["storage"]["disks"]
    assert all("log_requests" not in d for d in plain)


def test_a_bad_log_flag_names_the_field_exits_2_and_writes_nothing(tmp_path, capsys):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc("yes"))
    assert "storage.disks[0].log_requests" in str(info.value)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc("yes")))
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "-q"]) == 2
    assert "storage.disks[0].log_requests" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("iolog")
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(doc()))
    assert main(["run", str(path), "-o", str(tmp / "run"), "-q"]) == 0
    return tmp / "run"


def test_the_log_agrees_with_the_disk_table(run_dir):
    """Every request a logged disk completed in the sampled window is a row: the disk table's
    CMDS/s x interval per disk, and its GAVG is the mean of done - accept."""
    log = pq.read_table(run_dir / "io_log.parquet").to_pandas()
    disk = pq.read_table(run_dir / "disk.parquet").to_pandas()
    assert set(log["disk"]) == {"web-1:scsi0:0", "web-2:scsi0:0"}
    assert set(log["vm"]) == {"web-1", "web-2"} and set(log["lun"]) == {"ds1"}
    for name, rows in log.groupby("disk"):
        d = disk[disk["disk"] == name]
        dt = np.diff(np.concatenate([[0.0], d["time_s"].to_numpy()]))
        assert len(rows) == pytest.approx(float(np.sum(d["CMDS/s"].to_numpy() * dt)), abs=0.5)
        gavg = float(np.sum(d["GAVG/cmd"] * d["CMDS/s"] * dt) / np.sum(d["CMDS/s"] * dt))
        assert float(((rows["done_ns"] - rows["accept_ns"]) / 1e6).mean()) == pytest.approx(gavg, rel=1e-9)
        assert (rows["bytes"] == 16384).all()


def test_the_counters_page_defines_exactly_the_io_log_columns(run_dir):
    page = (REPO / "docs" / "reference" / "counters.md").read_text()
    section = page.split("## `io_log`")[1].split("\n## ")[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.M))
    assert set(pq.read_schema(run_dir / "io_log.parquet").names) == documented
