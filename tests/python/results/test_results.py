"""Tests for vmtwin.results: engine columns, atomic deterministic writes, reading back, SQL."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vmtwin
from vmtwin import results as results_mod
from vmtwin.exceptions import OutputError
from vmtwin.export.esxtop import to_esxtop_csv
from vmtwin.results import (
    TABLE_COLUMNS,
    RepeatedColumns,
    Results,
    ResultsWriter,
    check_output_folder,
    columns_from_engine,
    open_results,
    write_results,
)


def _decode(dtype: str, data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype={"f64": "<f8", "u64": "<u8", "u32": "<u4"}[dtype])


# --- columns_from_engine -------------------------------------------------------------------


def test_columns_follow_the_contract_order(tables):
    assert list(tables) == ["host", "vm", "vcpu"]
    for name, table in tables.items():
        assert table.column_names == TABLE_COLUMNS[name]
    assert tables["vm"].schema.field("vm").type == pa.string()
    assert tables["vm"].schema.field("vm_id").type == pa.uint32()
    assert tables["vcpu"].schema.field("run_ns").type == pa.uint64()
    assert tables["host"].schema.field("%PCPU_UTIL").type == pa.float64()


def test_vm_names_are_mapped_from_vm_id(tables, raw_engine):
    _, names = raw_engine
    for name in ("vm", "vcpu"):
        df = tables[name].to_pandas()
        assert (df["vm"] == df["vm_id"].map(lambda i: names[i])).all()


def test_column_order_does_not_depend_on_engine_dict_order(raw_engine):
    raw, names = raw_engine
    shuffled = {t: dict(reversed(list(cols.items()))) for t, cols in reversed(list(raw.items()))}
    a = columns_from_engine(raw, names)
    b = columns_from_engine(shuffled, names)
    assert list(a) == list(b)
    for name in a:
        assert a[name].schema == b[name].schema
        assert a[name].to_pandas().equals(b[name].to_pandas())  # NaN == NaN here


def test_repeated_drains_share_their_string_columns_and_only_when_alike():
    def raw(ids):
        ids = np.array(ids, "<u4")
        return {"vm": {"time_s": ("f64", np.zeros(len(ids)).tobytes()), "vm_id": ("u32", ids.tobytes())}}

    names = pa.array(["a", "b", "c"])
    repeats = RepeatedColumns()
    first = columns_from_engine(raw([0, 1, 2, 0, 1, 2]), names, "esx01", repeats)["vm"]
    again = columns_from_engine(raw([0, 1, 2, 0, 1, 2]), names, "esx01", repeats)["vm"]
    def data(t, col):  # where the column's characters are
        return t.column(col).chunk(0).buffers()[2].address

    assert data(again, "vm") == data(first, "vm")  # shared, not rebuilt
    assert data(again, "host") == data(first, "host")
    # other ids, other names, another row count or host: built anew, with the right values
    for ids, nm, host in (([0, 2, 1, 0, 1, 2], names, "esx01"), ([0, 2, 1, 0, 1, 2], pa.array(["x", "y", "z"]), "esx01"),
                          ([1, 2], names, "esx01"), ([1, 2], names, "esx02")):
        t = columns_from_engine(raw(ids), nm, host, repeats)["vm"]
        assert t.equals(columns_from_engine(raw(ids), nm, host)["vm"])
        assert t.column("vm").to_pylist() == [nm[i].as_py() for i in ids]
        assert t.column("host").to_pylist() == [host] * len(ids)


def test_extra_columns_and_tables_are_kept_in_sorted_order():
    f = np.array([1.0, 2.0])
    raw = {
        "later": {  # a table results.py does not know yet
            "zeta": ("f64", f.tobytes()),
            "vm_id": ("u32", np.array([1, 0], "<u4").tobytes()),
            "time_s": ("f64", f.tobytes()),
            "alpha": ("u64", np.array([5, 6], "<u8").tobytes()),
        },
        "host": {"time_s": ("f64", f.tobytes()), "%CUSTOM": ("f64", f.tobytes()),
                 "pcpus": ("u32", np.array([4, 4], "<u4").tobytes())},
    }
    out = columns_from_engine(raw, ["a", "b"])
    assert list(out) == ["host", "later"]
    assert out["host"].column_names == ["time_s", "pcpus", "%CUSTOM"]
    assert out["later"].column_names == ["time_s", "vm", "alpha", "vm_id", "zeta"]
    assert out["later"].column("vm").to_pylist() == ["b", "a"]
    named = columns_from_engine(raw, ["a", "b"], "esx07")  # the host column after time_s, everywhere
    assert named["host"].column_names == ["time_s", "host", "pcpus", "%CUSTOM"]
    assert named["later"].column_names == ["time_s", "host", "vm", "alpha", "vm_id", "zeta"]
    assert named["later"].column("host").to_pylist() == ["esx07", "esx07"]


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"host": {"time_s": ("f32", b"\0" * 4)}}, "unknown dtype"),
        ({"host": {"time_s": ("f64", b"\0" * 12)}}, "not a multiple of 8"),
        ({"host": {"time_s": ("f64", b"\0" * 16), "pcpus": ("u32", b"\0" * 4)}}, "rows"),
        ({"vm": {"vm_id": ("u32", np.array([3], "<u4").tobytes())}}, "vm_id 3"),
    ],
)
def test_malformed_engine_columns_are_rejected(raw, message):
    with pytest.raises(ValueError, match=message):
        columns_from_engine(raw, ["vm0"])


@settings(max_examples=30, deadline=None)
@given(
    f64=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=20),
    seed=st.integers(0, 2**32 - 1),
)
def test_raw_bytes_decode_exactly(f64, seed):
    n = len(f64)
    rng = np.random.default_rng(seed)
    u64 = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    u32 = rng.integers(0, 2**32 - 1, size=n, dtype=np.uint32, endpoint=True)
    raw = {
        "other": {
            "x": ("f64", np.array(f64, "<f8").tobytes()),
            "y": ("u64", u64.astype("<u8").tobytes()),
            "z": ("u32", u32.astype("<u4").tobytes()),
        }
    }
    t = columns_from_engine(raw, [])["other"]
    np.testing.assert_array_equal(t.column("x").to_numpy(), np.array(f64, dtype=np.float64))
    np.testing.assert_array_equal(t.column("y").to_numpy(), u64)
    np.testing.assert_array_equal(t.column("z").to_numpy(), u32)


# --- write_results / Results round trip ----------------------------------------------------


def test_round_trip_raw_bytes_to_results(results_dir, raw_engine):
    raw, names = raw_engine
    res = open_results(results_dir)
    assert res.tables == ["host", "vm", "vcpu"]
    for table_name, cols in raw.items():
        df = res.table(table_name)
        assert list(df.columns) == TABLE_COLUMNS[table_name]
        for col, (dtype, data) in cols.items():
            np.testing.assert_array_equal(df[col].to_numpy(), _decode(dtype, data), err_msg=col)
    assert res.vm["vm"].tolist() == [names[i] for i in _decode(*raw["vm"]["vm_id"])]
    assert len(res.host) == 30 and len(res.vcpu) == 30 * 7
    assert np.isnan(res.vm.loc[res.vm["vm"] == "vm0", "limit_mhz"]).all()


def test_manifest_is_sorted_indented_and_counts_rows(results_dir):
    text = (results_dir / "manifest.json").read_text()
    manifest = json.loads(text)
    assert text == json.dumps(manifest, sort_keys=True, indent=2) + "\n"
    assert manifest["tables"] == {"host": 30, "vm": 90, "vcpu": 210}
    assert "created_at" not in manifest
    assert Results(results_dir).manifest == manifest
    assert sorted(p.name for p in results_dir.iterdir()) == [
        "host.parquet", "manifest.json", "vcpu.parquet", "vm.parquet"]


def test_manifest_tables_must_agree(tmp_path, tables, make_manifest):
    with pytest.raises(ValueError, match="disagrees"):
        write_results(tmp_path / "run", tables, make_manifest(tables={"host": 1}))
    assert not (tmp_path / "run").exists()


def test_manifest_must_be_strict_json(tmp_path, tables, make_manifest):
    with pytest.raises(ValueError, match="not valid JSON"):
        write_results(tmp_path / "run", tables, make_manifest(wall_time_s=float("nan")))
    assert list(tmp_path.iterdir()) == []


def test_numpy_values_in_manifest_are_accepted(tmp_path, tables, make_manifest):
    manifest = make_manifest(seed=np.uint64(7), duration_s=np.float64(60))
    out = write_results(tmp_path / "run", tables, manifest)
    assert Results(out).manifest["seed"] == 7


@pytest.mark.parametrize("name", ["Host", "a b", "../x", "manifest", ""])
def test_bad_table_names_are_refused(tmp_path, tables, name, make_manifest):
    with pytest.raises(ValueError, match="table name"):
        write_results(tmp_path / "run", {name: tables["host"]}, make_manifest())


# --- determinism ----------------------------------------------------------------------------


def _files(path):
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_parquet_is_byte_deterministic(tmp_path, raw_engine, make_manifest):
    raw, names = raw_engine
    a = write_results(tmp_path / "a", columns_from_engine(raw, names), make_manifest(wall_time_s=1))
    b = write_results(tmp_path / "b", columns_from_engine(raw, names), make_manifest(wall_time_s=2))
    fa, fb = _files(a), _files(b)
    for name in ("host.parquet", "vm.parquet", "vcpu.parquet"):
        assert fa[name] == fb[name], name
    assert fa["manifest.json"] != fb["manifest.json"]  # only the wall time differs
    assert json.loads(fa["manifest.json"]) | {"wall_time_s": 2.0} == json.loads(fb["manifest.json"])


def test_parquet_bytes_do_not_depend_on_the_time_of_writing(
    tmp_path, tables, monkeypatch, make_manifest
):
    import time

    a = write_results(tmp_path / "a", tables, make_manifest())
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 10 * 365 * 86400)
    b = write_results(tmp_path / "b", tables, make_manifest())
    assert _files(a) == _files(b)


def test_different_data_gives_different_bytes(tmp_path, make_manifest, synthetic):
    raw1, names = synthetic.engine_raw(seed=1)
    raw2, _ = synthetic.engine_raw(seed=2)
    a = write_results(tmp_path / "a", columns_from_engine(raw1, names), make_manifest())
    b = write_results(tmp_path / "b", columns_from_engine(raw2, names), make_manifest())
    fa, fb = _files(a), _files(b)
    assert fa["vm.parquet"] != fb["vm.parquet"]
    assert fa["vcpu.parquet"] != fb["vcpu.parquet"]


def test_parquet_writer_options(results_dir):
    meta = pq.ParquetFile(results_dir / "vm.parquet").metadata
    assert meta.created_by.startswith("parquet-cpp-arrow")
    col = meta.row_group(0).column(0)
    assert col.compression == "ZSTD"
    assert col.statistics is not None and col.statistics.has_min_max


# --- atomicity and refusal -----------------------------------------------------------------


def _leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


class _FlakyWriter(pq.ParquetWriter):
    """A ParquetWriter whose second row group fails (a full disk, or Ctrl-C)."""

    writes = 0
    error: BaseException = OSError(errno.ENOSPC, "No space left on device")

    def write_table(self, table, *args, **kwargs):
        type(self).writes += 1
        if type(self).writes >= 2:
            raise type(self).error
        super().write_table(table, *args, **kwargs)


@pytest.fixture
def flaky(monkeypatch):
    _FlakyWriter.writes = 0
    monkeypatch.setattr(results_mod.pq, "ParquetWriter", _FlakyWriter)
    return _FlakyWriter


def test_failed_write_leaves_nothing_and_names_the_users_path(tmp_path, tables, flaky, make_manifest):
    with pytest.raises(OutputError) as info:
        write_results(tmp_path / "run", tables, make_manifest())
    assert flaky.writes == 2, "the first table was written before the failure"
    assert str(info.value) == f"cannot write results folder {tmp_path / 'run'}: No space left on device (the disk is full)"
    assert list(tmp_path.iterdir()) == []


def test_interrupt_during_write_leaves_nothing(tmp_path, tables, flaky, make_manifest):
    flaky.error = KeyboardInterrupt()
    try:
        with pytest.raises(KeyboardInterrupt):
            write_results(tmp_path / "run", tables, make_manifest())
    finally:
        flaky.error = OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_failed_replace_keeps_the_previous_results(tmp_path, tables, flaky, make_manifest):
    flaky.writes = -100  # the first folder is written whole
    out = write_results(tmp_path / "run", tables, make_manifest(seed=1))
    before = _files(out)
    flaky.writes = 0
    with pytest.raises(OutputError):
        write_results(out, tables, make_manifest(seed=2), force=True)
    assert _files(out) == before
    assert _leftovers(tmp_path) == []


def test_failed_final_rename_restores_the_previous_results(tmp_path, tables, monkeypatch, make_manifest):
    out = write_results(tmp_path / "run", tables, make_manifest(seed=1))
    before = _files(out)
    real_rename = os.rename

    def rename(src, dst):
        if str(src).endswith(f".tmp-{os.getpid()}"):
            raise OSError(errno.EIO, "Input/output error")
        real_rename(src, dst)

    monkeypatch.setattr(results_mod.os, "rename", rename)
    with pytest.raises(OutputError, match=f"cannot write results folder {out}: Input/output error$"):
        write_results(out, tables, make_manifest(seed=2), force=True)
    assert _files(out) == before
    assert _leftovers(tmp_path) == []


def test_existing_results_folder_needs_force(tmp_path, tables, make_manifest):
    out = write_results(tmp_path / "run", tables, make_manifest(seed=1))
    before = _files(out)
    with pytest.raises(OutputError, match=r"exists already; allowed: a new folder, or force=True \(vmtwin run --force\)"):
        write_results(out, tables, make_manifest(seed=2))
    with pytest.raises(OutputError, match="exists already"):
        check_output_folder(out)
    assert _files(out) == before
    check_output_folder(out, force=True)  # allowed with force


def test_previous_results_folder_is_replaced_with_force(tmp_path, tables, make_manifest):
    out = write_results(tmp_path / "run", tables, make_manifest(seed=1))
    (out / "disk.parquet").write_bytes(b"stale")
    write_results(out, {"host": tables["host"]}, make_manifest(seed=2), force=True)
    res = Results(out)
    assert res.manifest["seed"] == 2
    assert res.tables == ["host"]
    assert _leftovers(tmp_path) == []


def test_empty_folder_is_used(tmp_path, tables, make_manifest):
    (tmp_path / "run").mkdir()
    write_results(tmp_path / "run", tables, make_manifest())
    assert Results(tmp_path / "run").tables == ["host", "vm", "vcpu"]


def test_missing_parents_are_created(tmp_path, tables, make_manifest):
    out = write_results(tmp_path / "a" / "b" / "run", tables, make_manifest())
    assert out.is_absolute() and (out / "manifest.json").is_file()


@pytest.mark.parametrize("force", [False, True])
def test_non_results_folder_is_refused(tmp_path, tables, make_manifest, force):
    target = tmp_path / "important"
    target.mkdir()
    (target / "thesis.tex").write_text("do not delete")
    with pytest.raises(OutputError, match="not a vmtwin results folder"):
        write_results(target, tables, make_manifest(), force=force)
    assert sorted(p.name for p in target.iterdir()) == ["thesis.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["important"]


def test_file_in_the_way_is_refused(tmp_path, tables, make_manifest):
    (tmp_path / "run").write_text("x")
    with pytest.raises(OutputError, match="a file of that name exists"):
        write_results(tmp_path / "run", tables, make_manifest(), force=True)
    assert (tmp_path / "run").read_text() == "x"


def test_file_where_a_parent_folder_should_be(tmp_path, tables, make_manifest):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match=f"cannot write results folder {tmp_path / 'file' / 'run'}: {tmp_path / 'file'} is a file"):
        write_results(tmp_path / "file" / "run", tables, make_manifest())


def test_name_too_long_names_the_users_path(tmp_path, tables, make_manifest):
    out = tmp_path / ("r" * 300)
    with pytest.raises(OutputError) as info:
        write_results(out, tables, make_manifest())
    assert str(info.value).startswith(f"cannot write results folder {out}: File name too long (300 characters")
    assert ".tmp-" not in str(info.value)


def test_longest_allowed_name_is_written(tmp_path, tables, make_manifest):
    # the temp name must not be what fails: it cuts the name, the real folder keeps it whole
    out = write_results(tmp_path / ("r" * 255), tables, make_manifest())
    assert Results(out).tables == ["host", "vm", "vcpu"]


def test_read_only_folder_names_the_users_path(tmp_path, tables, make_manifest, monkeypatch):
    # (tests run as root, where permission bits do not bind: the OS error is injected)
    real_mkdir = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if ".tmp-" in self.name:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    with pytest.raises(OutputError) as info:
        write_results(tmp_path / "run", tables, make_manifest())
    assert str(info.value) == f"cannot write results folder {tmp_path / 'run'}: Permission denied (is the folder read-only?)"
    assert isinstance(info.value, vmtwin.VmtwinError)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_dead_writers_are_cleared(tmp_path, tables, make_manifest):
    dead = _dead_pid()
    for stale in (tmp_path / f".run.tmp-{dead}", tmp_path / f".run.tmp-{os.getpid()}"):
        stale.mkdir()
        (stale / "host.parquet").write_bytes(b"half")
    alive = tmp_path / f".run.tmp-{os.getppid()}"  # a live process's write in progress
    alive.mkdir()
    other = tmp_path / f".runs.tmp-{dead}"  # another target's leftover
    other.mkdir()
    out = write_results(tmp_path / "run", tables, make_manifest())
    assert "half" not in str(_files(out))
    assert _leftovers(tmp_path) == sorted([alive.name, other.name])


def test_previous_results_moved_aside_by_a_killed_replace_come_back(tmp_path, tables, make_manifest):
    first = write_results(tmp_path / "first", tables, make_manifest(seed=1))
    dead = _dead_pid()
    os.rename(first, tmp_path / f".run.old-{dead}")  # killed between the two renames of a replace
    check_output_folder(tmp_path / "run")  # nothing named run: leftovers are a writer's business
    ResultsWriter(tmp_path / "other").abort()  # a writer to another target leaves them alone
    assert (tmp_path / f".run.old-{dead}").exists()
    with pytest.raises(OutputError, match="exists already"):
        write_results(tmp_path / "run", tables, make_manifest(seed=2))
    assert Results(tmp_path / "run").manifest["seed"] == 1
    assert _leftovers(tmp_path) == []


def test_unclosed_writer_removes_its_temp_folder(tmp_path, tables):
    import gc

    w = ResultsWriter(tmp_path / "run")
    w.append("host", tables["host"])
    assert _leftovers(tmp_path) == [f".run.tmp-{os.getpid()}"]
    del w
    gc.collect()
    assert list(tmp_path.iterdir()) == []


# --- streaming ------------------------------------------------------------------------------


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, 210), max_size=12), group=st.sampled_from([7, 64, 1000]))
def test_row_groups_do_not_depend_on_how_rows_arrive(tmp_path_factory, tables, make_manifest, cuts, group):
    """Appending a table in arbitrary pieces gives the bytes of appending it whole."""
    tmp = tmp_path_factory.mktemp("w")
    real = results_mod.ROW_GROUP_ROWS
    results_mod.ROW_GROUP_ROWS = group
    try:
        whole = write_results(tmp / "whole", tables, make_manifest())
        w = ResultsWriter(tmp / "pieces")
        for name, t in tables.items():
            edges = sorted({0, t.num_rows, *(c for c in cuts if c < t.num_rows)})
            for lo, hi in zip(edges, edges[1:]):
                w.append(name, t.slice(lo, hi - lo))
            w.append(name, t.slice(0, 0))  # an empty piece changes nothing
        pieces = w.close(make_manifest())
    finally:
        results_mod.ROW_GROUP_ROWS = real
    assert _files(whole) == _files(pieces)
    meta = pq.ParquetFile(pieces / "vcpu.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == \
        [group] * (210 // group) + ([210 % group] if 210 % group else [])


def test_writer_refuses_a_changed_schema(tmp_path, tables):
    w = ResultsWriter(tmp_path / "run")
    w.append("host", tables["host"])
    with pytest.raises(ValueError, match="schema"):
        w.append("host", tables["host"].drop_columns(["pcpus"]))
    w.abort()
    assert list(tmp_path.iterdir()) == []


def test_unlimited_is_null(results_dir, tables):
    limits = tables["vm"].column("limit_mhz")
    assert limits.null_count == 30 * 2  # vm0 and db2 have no limit, web1 has one
    res = Results(results_dir)
    assert res.sql("SELECT count(*) AS n FROM vm WHERE limit_mhz > 0")["n"].iloc[0] == 30
    assert res.sql("SELECT max(limit_mhz) AS m FROM vm")["m"].iloc[0] == 1000.0
    assert res.sql("SELECT count(*) AS n FROM vm WHERE limit_mhz IS NULL")["n"].iloc[0] == 60


# --- Results ---------------------------------------------------------------------------------


def test_not_a_results_folder_names_the_path(tmp_path):
    with pytest.raises(ValueError, match=str(tmp_path).replace("\\", "\\\\")):
        Results(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="manifest"):
        open_results(tmp_path)
    with pytest.raises(ValueError, match="not a vmtwin results folder"):
        Results(tmp_path / "missing")


def test_unknown_table_is_a_key_error(results_dir):
    with pytest.raises(KeyError, match="tables: host, vm, vcpu"):
        Results(results_dir).table("disk")


def test_frames_are_fresh(results_dir):
    res = Results(results_dir)
    df = res.vm
    df.loc[:, "%RDY"] = 0.0
    assert res.vm["%RDY"].sum() > 0


def test_sql_over_the_folder(results_dir):
    res = Results(results_dir)
    got = res.sql('SELECT vm, avg("%RDY") AS rdy FROM vm GROUP BY vm ORDER BY vm')
    want = res.vm.groupby("vm")["%RDY"].mean().sort_index()
    assert got["vm"].tolist() == want.index.tolist()
    np.testing.assert_allclose(got["rdy"].to_numpy(), want.to_numpy())

    joined = res.sql(
        'SELECT h.time_s, h.used_mhz, sum(v.used_mhz) AS vm_sum '
        "FROM host h JOIN vm v USING (time_s) GROUP BY ALL ORDER BY h.time_s"
    )
    np.testing.assert_allclose(joined["used_mhz"], joined["vm_sum"])

    per_vcpu = res.sql('SELECT count(*) AS n FROM vcpu WHERE vm = ?', ["db2"])
    assert per_vcpu["n"].iloc[0] == 30 * 4
    assert isinstance(per_vcpu, pd.DataFrame)


def test_sql_with_quote_in_path(tmp_path, tables, make_manifest):
    out = write_results(tmp_path / "it's a run", tables, make_manifest())
    assert Results(out).sql("SELECT count(*) AS n FROM host")["n"].iloc[0] == 30


# --- esxtop CSV ------------------------------------------------------------------------------


def test_esxtop_csv(results_dir, tmp_path):
    import csv

    path = to_esxtop_csv(results_dir, tmp_path / "esxtop.csv")
    rows = list(csv.reader(path.open(newline="")))
    header, body = rows[0], rows[1:]
    assert header[0] == "(PDH-CSV 4.0) (UTC)(0)"
    assert "\\\\esx01\\Physical Cpu(_Total)\\% Util Time" in header
    assert "\\\\esx01\\Group Cpu(1:vm0)\\% Ready" in header
    assert "\\\\esx01\\Group Cpu(2:web1)\\% Max Limited" in header
    assert len(body) == 30
    assert body[0][0] == "01/01/2000 00:00:02"
    vm = Results(results_dir).vm
    col = header.index("\\\\esx01\\Group Cpu(3:db2)\\% Used")
    expected = vm[vm["vm"] == "db2"]["%USED"].tolist()
    assert [float(r[col]) for r in body] == expected
    assert path.read_bytes().count(b"\r\n") == 31
    # deterministic
    again = to_esxtop_csv(Results(results_dir), tmp_path / "again.csv")
    assert again.read_bytes() == path.read_bytes()
