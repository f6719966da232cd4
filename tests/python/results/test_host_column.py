"""Every table of a one-host run has the ``host`` column a cluster run has, in the same place.

A one-host folder and a cluster folder of the same one host must have the same schema, so that
report, export, compare and sweep read both the same way.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vmtwin.cluster import run_cluster
from vmtwin.results import HOST_COLUMN, TABLE_COLUMNS, Results, columns_from_engine, with_host_column
from vmtwin.simulation import Simulation

VMS = """
vms:
  - {name: web, vcpus: 2, count: 2, cpu: {limit: 1500MHz}, workload: {type: cpu_bound, duty: 0.8}}
  - {name: db, vcpus: 4, cpu: {shares: high}, workload: {type: cpu_bound, duty: 1.0}}
"""
HOST = "{name: %s, cores_per_llc: 4, core_mhz: 2000MHz, memory: 64GB}"


def one_host(name: str | None) -> str:
    host = HOST % name if name else "{cores_per_llc: 4, core_mhz: 2000MHz, memory: 64GB}"
    return f"name: hostcol\nduration: 20s\nseed: 7\nhost: {host}\n{VMS}"


def one_host_cluster(name: str) -> str:
    return (f"name: hostcol\nduration: 20s\nseed: 7\nclusters:\n  - name: c\n    placement: first_fit\n"
            f"    hosts: [{HOST % name}]\n{VMS}")


def _check_host_column(tables: dict[str, pa.Table], name: str) -> None:
    assert tables, "the run wrote no tables"
    for table_name, table in tables.items():
        assert table.column_names[:2] == ["time_s", HOST_COLUMN], table_name
        assert table.schema.field(HOST_COLUMN).type == pa.string(), table_name
        assert table.num_rows > 0, table_name
        assert set(table.column(HOST_COLUMN).to_pylist()) == {name}, table_name
        if table_name in TABLE_COLUMNS:  # the contract's columns first (newer ones follow, sorted)
            lead = TABLE_COLUMNS[table_name]
            assert table.column_names[:len(lead)] == lead, table_name


@pytest.mark.parametrize("name, expected", [(None, "esx01"), ("lab-7", "lab-7")])
def test_one_host_run_has_the_host_column_in_every_table(tmp_path, name, expected):
    sim = Simulation(one_host(name))
    sim.run()
    kept = sim.tables()
    assert {"host", "vm", "vcpu", "pcpu"} <= set(kept)
    _check_host_column(kept, expected)
    res = sim.write(tmp_path / "out")
    _check_host_column({t: res.arrow(t) for t in res.tables}, expected)
    # the folder's own host column agrees with DuckDB over it
    assert res.sql("SELECT DISTINCT host FROM vcpu")["host"].tolist() == [expected]


def test_streamed_one_host_run_has_the_host_column(tmp_path):
    sim = Simulation(one_host("lab-7"))
    sim.stream_to(tmp_path / "out")
    sim.run()
    res = sim.write()
    _check_host_column({t: res.arrow(t) for t in res.tables}, "lab-7")


def test_one_host_and_one_host_cluster_folders_have_the_same_schema(tmp_path):
    sim = Simulation(one_host("lab-7"))
    sim.run()
    solo = sim.write(tmp_path / "solo")
    cluster = run_cluster(one_host_cluster("lab-7"), tmp_path / "cluster", workers=1)
    assert set(cluster.tables) - set(solo.tables) == {"placement"}
    assert set(solo.tables) <= set(cluster.tables)
    for t in solo.tables:
        a, b = pq.read_schema(solo.table_path(t)), pq.read_schema(cluster.table_path(t))
        assert a.equals(b, check_metadata=True), t
        assert a.names[1] == HOST_COLUMN
    # the cluster's rows are its host's one-host run with the host's derived seed: same counts
    for t in solo.tables:
        assert solo.arrow(t).num_rows == cluster.arrow(t).num_rows, t


def test_with_host_column_replaces_a_host_column_already_there():
    t = pa.table({"time_s": [0.0, 2.0], "x": [1, 2]})
    once = with_host_column(t, "a")
    twice = with_host_column(once, "b")
    assert twice.column_names == ["time_s", HOST_COLUMN, "x"]
    assert twice.column(HOST_COLUMN).to_pylist() == ["b", "b"]


def test_an_engine_host_column_is_not_overwritten_silently():
    raw = {"host": {"time_s": ("f64", b"\0" * 8), "host": ("u32", b"\0" * 4)}}
    with pytest.raises(ValueError, match="column 'host' of its own"):
        columns_from_engine(raw, [], "esx01")


def test_report_and_export_of_a_one_host_folder_stay_one_host(tmp_path):
    from vmtwin.export.esxtop import to_esxtop_csv
    from vmtwin.report import render_report

    sim = Simulation(one_host("lab-7"))
    sim.run()
    res: Results = sim.write(tmp_path / "solo")
    page = render_report(res, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<h2>Cluster</h2>" not in page
    header = to_esxtop_csv(res, tmp_path / "x.csv").read_text(encoding="utf-8").splitlines()[0]
    machines = {c.split("\\")[2] for c in header.split('","')[1:]}
    assert machines == {"lab-7"}
