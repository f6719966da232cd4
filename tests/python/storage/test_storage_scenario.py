"""The scenario's storage section: normalization, bad input, and `vmtwin run` end to end."""

from __future__ import annotations

import copy
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from vmtwin.cli import main
from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.loading import parse_scenario

REPO = Path(__file__).resolve().parents[3]
SCENARIO = REPO / "scenarios" / "storage-flash-array.yaml"


def base() -> dict:
    return yaml.safe_load(SCENARIO.read_text())


def test_the_section_normalizes_to_the_engine_spec():
    spec = parse_scenario(base()).to_engine_spec()["storage"]
    assert [d["name"] for d in spec["disks"]] == ["web-1:scsi0:0", "web-2:scsi0:0", "batch-1:scsi0:0",
                                                 "batch-2:scsi0:0", "db:scsi0:0"]
    assert [d["shares"] for d in spec["disks"]] == [2000, 2000, 500, 500, 1000]
    assert spec["workloads"][0] == {"disk": "web-1:scsi0:0", "kind": "iometer", "block_bytes": 16384, "read_pct": 70.0,
                                    "random_pct": 100.0, "outstanding": 32, "think_ns": 0, "start_ns": 0}
    assert spec["vcpu_io"] == [{"vm": "db", "disk": "db:scsi0:0", "block_bytes": 8192, "read_pct": 100.0,
                                "random_pct": 100.0}]
    assert spec["luns"][0]["psp"] == {"policy": "round_robin", "iops": 1000}
    assert spec["luns"][1]["psp"] == {"policy": "fixed", "preferred": 0}
    assert spec["adapters"][0] == {"name": "vmhba1", "queue_depth": 2048, "link_bits_per_s": 8_000_000_000}
    assert spec["events"][0] == {"at_ns": 20_000_000_000, "lun": "ds1", "path": 0, "action": "down"}


def _with(edit) -> dict:
    doc = base()
    edit(doc["storage"])
    return doc


BAD = [
    ("unknown PSP", lambda s: s["datastores"][0]["psp"].update(policy="weighted"), "storage.datastores[0].psp.policy", "weighted"),
    ("ta <= tb", lambda s: s["datastores"][0].update(psp={"policy": "adaptive", "ta": "1ms", "tb": "2ms", "tc": "10ms"}),
     "storage.datastores[0].psp.ta", "ta > tb"),
    ("adaptive without thresholds", lambda s: s["datastores"][0].update(psp={"policy": "adaptive"}),
     "storage.datastores[0].psp.ta", "threshold"),
    ("negative depth", lambda s: s["datastores"][0].update(dqlen=-4), "storage.datastores[0].dqlen", "-4"),
    ("negative outstanding", lambda s: s["disks"][0]["workload"].update(outstanding=-1), "storage.disks[0].workload.outstanding", "-1"),
    ("disk on an undefined datastore", lambda s: s["disks"][1].update(datastore="ds9"), "storage.disks[1].datastore", "'ds1', 'ds2'"),
    ("disk of an undefined VM", lambda s: s["disks"][1].update(vm="nobody"), "storage.disks[1].vm", "nobody"),
    ("path on an undefined adapter", lambda s: s["datastores"][1]["paths"][0].update(adapter="vmhba7"),
     "storage.datastores[1].paths[0].adapter", "vmhba7"),
    ("preferred path out of range", lambda s: s["datastores"][1]["psp"].update(preferred=5), "storage.datastores[1].psp.preferred", "below 2"),
    ("a setting of another policy", lambda s: s["datastores"][0]["psp"].update(ta="1ms"), "storage.datastores[0].psp.ta", "round_robin"),
    ("block size not of sectors", lambda s: s["disks"][2]["vcpu_io"].update(block_size=1000) if False else
     s["disks"][0]["workload"].update(block_size="1000B"), "storage.disks[0].workload.block_size", "512"),
    ("event on a missing path", lambda s: s["events"][0].update(path=3), "storage.events[0].path", "below 3"),
]


@pytest.mark.parametrize("what,edit,field,hint", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_the_field_and_what_is_allowed(what, edit, field, hint):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_with(edit))
    msg = str(info.value)
    assert msg.startswith(field) or field in msg, msg
    assert hint in msg, msg


def test_bad_input_through_the_cli_exits_2_and_writes_nothing(tmp_path, capsys):
    doc = _with(lambda s: s["datastores"][0]["psp"].update(policy="weighted"))
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    assert main(["run", str(path), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "storage.datastores[0].psp.policy" in err and "Traceback" not in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("storage") / "run"
    assert main(["run", str(SCENARIO), "-o", str(out), "-q"]) == 0
    return out


def test_vmtwin_run_writes_the_disk_lun_path_and_adapter_tables_with_names(run_dir):
    disk = pq.read_table(run_dir / "disk.parquet").to_pandas()
    for col in ["time_s", "vm", "disk", "lun", "CMDS/s", "READS/s", "WRITES/s", "MBREAD/s", "MBWRTN/s", "DAVG/cmd",
                "KAVG/cmd", "GAVG/cmd", "QAVG/cmd", "ACTV", "QUED", "%USD", "DQLEN"]:
        assert col in disk.columns, col
    assert len(disk) == 30 * 5
    assert set(disk["lun"]) == {"ds1", "ds2"}
    # GAVG = KAVG + DAVG, per row with commands
    busy = disk[disk["CMDS/s"] > 0]
    assert ((busy["GAVG/cmd"] - busy["KAVG/cmd"] - busy["DAVG/cmd"]).abs() < 1e-9).all()
    # reads + writes = commands
    assert ((disk["READS/s"] + disk["WRITES/s"] - disk["CMDS/s"]).abs() < 1e-6).all()
    path = pq.read_table(run_dir / "path.parquet").to_pandas()
    assert set(path["path_name"]) >= {"vmhba1:C0:T0:L0", "vmhba2:C0:T0:L0", "vmhba2:C0:T1:L0"}
    adapter = pq.read_table(run_dir / "adapter.parquet").to_pandas()
    assert set(adapter["adapter"]) == {"vmhba1", "vmhba2"}
    lun = pq.read_table(run_dir / "lun.parquet").to_pandas()
    assert set(lun["lun"]) == {"ds1", "ds2"}


def test_disk_shares_split_the_backlogged_lun_4_to_1(run_dir):
    """web (high, 2000) and batch (low, 500) are backlogged on ds1 with 128 requests for 32
    device slots: SFQ(D) serves them in proportion to their shares."""
    disk = pq.read_table(run_dir / "disk.parquet").to_pandas()
    ds1 = disk[(disk["lun"] == "ds1") & (disk["time_s"] > 2)]
    web = ds1[ds1["vm"].str.startswith("web")]["CMDS/s"].sum()
    batch = ds1[ds1["vm"].str.startswith("batch")]["CMDS/s"].sum()
    assert web / batch == pytest.approx(4.0, rel=0.05)


def test_the_failed_path_carries_nothing_and_the_lun_goes_on(run_dir):
    path = pq.read_table(run_dir / "path.parquet").to_pandas()
    lun = pq.read_table(run_dir / "lun.parquet").to_pandas()
    p0 = path[path["path_name"] == "vmhba1:C0:T0:L0"]
    # the row at 40 s covers 38-40 s with the path down; its state is read at 40 s, after the
    # recovery scheduled then (events due at one instant run in the order they were scheduled)
    down = p0[(p0["time_s"] > 20) & (p0["time_s"] <= 40)]
    assert (down["CMDS/s"] == 0).all()
    assert (down["up"] == 0).sum() == len(down) - 1 and down[down["time_s"] == 40]["up"].iloc[0] == 1
    assert (p0[p0["time_s"] > 42]["CMDS/s"] > 0).all()
    # the commands active on it when it failed were aborted (and retried elsewhere): the row at 20 s
    assert p0[p0["time_s"] == 20]["ABRTS/s"].iloc[0] > 0
    ds1 = lun[lun["lun"] == "ds1"]
    assert (ds1["CMDS/s"] > 0).all()


def test_synchronous_io_shows_as_vmwait(run_dir):
    vm = pq.read_table(run_dir / "vm.parquet").to_pandas()
    db = vm[vm["vm"] == "db"]
    web = vm[vm["vm"] == "web-1"]
    assert (db["%VMWAIT"].iloc[1:] > 1.0).all()
    assert (web["%VMWAIT"] == 0).all()


def test_runs_are_byte_identical(run_dir, tmp_path):
    again = tmp_path / "again"
    assert main(["run", str(SCENARIO), "-o", str(again), "-q"]) == 0
    for t in ["disk", "lun", "path", "adapter", "vm"]:
        assert (run_dir / f"{t}.parquet").read_bytes() == (again / f"{t}.parquet").read_bytes(), t


def test_the_esxtop_export_has_the_disk_objects(run_dir, tmp_path):
    import csv

    from vmtwin.export.esxtop import to_esxtop_csv
    from vmtwin.export.esxtop_disk import DISK_COUNTERS

    out = to_esxtop_csv(run_dir, tmp_path / "e.csv")
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    labels = [label for _, label in DISK_COUNTERS]
    for obj in ["Physical Disk Adapter(vmhba1)", "Physical Disk SCSI Device(ds1)", "Physical Disk Path(vmhba1:C0:T0:L0)",
                "Virtual Disk(web-1:scsi0:0)"]:
        got = [h.split("\\")[-1] for h in header if f"\\{obj}\\" in h]
        assert got == labels, obj
    # the values are the tables' (the LUN's commands per second at 10 s)
    lun = pq.read_table(run_dir / "lun.parquet").to_pandas()
    want = lun[(lun["lun"] == "ds1") & (lun["time_s"] == 10.0)]["CMDS/s"].iloc[0]
    col = header.index("\\\\esx01\\Physical Disk SCSI Device(ds1)\\Commands/sec")
    row = next(r for r in rows[1:] if r[0].endswith("00:00:10"))
    assert float(row[col]) == pytest.approx(want)


def test_the_report_has_latency_and_throughput_per_vm_disk_and_lun(run_dir, tmp_path):
    from html_table import table_rows

    from vmtwin.report.html import render_report
    from vmtwin.report.storage import STORAGE_TABLE_IDS, storage_summary

    page = render_report(run_dir, tmp_path / "r.html").read_text()
    disks = table_rows(page, STORAGE_TABLE_IDS[0])
    luns = table_rows(page, STORAGE_TABLE_IDS[1])
    assert len(disks) == 5 and len(luns) == 2
    # an independent recomputation of one cell: ds1's command-weighted GAVG
    lun = pq.read_table(run_dir / "lun.parquet").to_pandas()
    ds1 = lun[lun["lun"] == "ds1"]
    want = (ds1["GAVG/cmd"] * ds1["CMDS/s"]).sum() / ds1["CMDS/s"].sum()
    got = storage_summary(lun, ["lun"]).set_index("lun").loc["ds1", "GAVG/cmd"]
    assert got == pytest.approx(want)


def test_the_counters_page_defines_exactly_the_storage_columns(run_dir):
    import re

    page = (REPO / "docs" / "reference" / "counters.md").read_text()
    section = page.split("## Storage tables:")[1].split("\n## ")[0]
    documented = set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.M))
    written = set()
    for t in ["disk", "lun", "path", "adapter"]:
        written |= set(pq.read_schema(run_dir / f"{t}.parquet").names)
    assert written == documented


TRACE = REPO.parent / "shared" / "data" / "io-traces" / "cloudPhysicsIO.csv"


def _trace_doc(path: str) -> dict:
    doc = base()
    doc["duration"] = "20s"
    doc["storage"]["disks"][1]["workload"] = {"type": "trace", "path": path}
    doc["storage"]["events"] = []
    return doc


def test_a_block_trace_replays_from_a_scenario(tmp_path):
    from vmtwin.simulation import Simulation

    sim = Simulation(parse_scenario(_trace_doc(str(TRACE))))
    sim.run()
    disk = sim.tables()["disk"].to_pandas()
    batch = disk[disk["vm"].str.startswith("batch")]
    # both batch VMs replay the file from their power-on; an independent count of its first 20 s
    # (the record due exactly at 20 s is issued; what completed is in the table)
    secs = [int(line.split(",")[1]) for line in TRACE.read_text().splitlines()[1:] if line.strip()]
    first = sum(1 for s in secs if s - secs[0] < 20)
    done = (batch["CMDS/s"] * 2).sum()
    assert 2 * (first - 1) <= done <= 2 * (first + 1)
    assert set(batch["disk"]) == {"batch-1:scsi0:0", "batch-2:scsi0:0"}


def test_a_missing_trace_file_names_the_field(tmp_path):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_trace_doc(str(tmp_path / "nope.csv")))
    assert str(info.value).startswith("storage.disks[1].workload.path")


def test_a_malformed_trace_file_exits_2_naming_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("version,time,op,size,lbn\n1,5,28,512,7\n1,6,99,512,8\n")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_trace_doc(str(bad))))
    out = tmp_path / "out"
    assert main(["run", str(path), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv:3" in err and "op '99'" in err and "Traceback" not in err
    assert not out.exists()
