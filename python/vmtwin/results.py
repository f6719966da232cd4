"""A run's results: engine columns to Arrow tables, the results folder, and reading it back.

A results folder holds ``manifest.json`` and one Parquet file per table (``host.parquet``,
``vm.parquet``, ``vcpu.parquet``, later ``mem``, ``disk``, ``path``, ``events``). The column
names and meanings are those of ``docs/reference/engine-contract.md`` (esxtop's vocabulary), plus
two string columns added by Python: ``host`` (the host's name) right after ``time_s`` in every
table, and ``vm`` (the VM's name) after it in the tables with a ``vm_id``. One-host and cluster
runs (:mod:`vmtwin.cluster`) write the same schema.

Four rules hold for every folder written here (all writes go through :class:`ResultsWriter`):

- **Streamed.** Rows are appended while a run goes and written as Parquet row groups of
  :data:`ROW_GROUP_ROWS` rows, so memory does not grow with simulated time.
- **Atomic.** Everything is written into a hidden sibling folder ``.<name>.tmp-<pid>`` and then
  renamed into place, so an interrupted run never leaves a folder named ``out_dir`` that looks
  complete (or half-written). Leftovers of killed writers are removed by the next writer to the
  same ``out_dir``; an existing results folder is replaced only with ``force=True``; OS errors
  become :class:`~vmtwin.exceptions.OutputError` naming ``out_dir``, never the temp folder.
- **Deterministic.** The Parquet files are byte-identical for identical tables, however the rows
  arrived (fixed writer options, row groups cut at fixed row counts, no timestamps). Anything
  that varies from run to run (wall time) lives only in ``manifest.json``.
- **SQL-friendly.** "No limit" is NULL in ``limit_mhz`` (the engine's NaN is converted), so
  ``WHERE limit_mhz > 0`` and ``max(limit_mhz)`` see real limits only.
- **Queryable in place.** :meth:`Results.sql` runs DuckDB over the Parquet files, one view per
  table name.

Manifest keys
-------------
The caller (the run driver) builds the manifest; :func:`write_results` fills in ``tables``.

``vmtwin_version``
    Version string of the package that produced the run.
``scenario``
    The normalized scenario, as a JSON-compatible dict.
``scenario_name``
    The scenario's name (report titles, listings).
``seed``
    The RNG seed of the run.
``params``
    The engine parameters in force (``Simulation.params_json()`` decoded), every default filled.
``duration_s``
    Simulated duration, seconds.
``simulated_s``
    Simulated time the run reached, seconds (less than ``duration_s`` for a partial run).
``sample_interval_s``
    Counter sampling interval, seconds.
``wall_time_s``
    Wall-clock time the run took, seconds (the one non-deterministic value).
``event_count``
    Number of events the engine processed.
``sched_stats``, ``log``
    Scheduler decision counters (``dispatches``, ``preemptions``, ``migrations`` and of those
    ``core_migrations``, to the sibling hyperthread, ``llc_migrations``, ``node_migrations``; the
    dispatches by how far they moved the vCPU, ``dispatches_same_pcpu``, ``_same_core``,
    ``_same_llc``, ``_same_node``, ``_other_node``, summing to ``dispatches``: the first three
    are local in ESX's sense, the same LLC); notable happenings (refused power-ons) with their
    times.
``actions``
    Every control action of the run in order, ``{"time_ns", "time_s", "action", "args"}`` with
    ``action`` one of ``run_until`` (``args``: ``until_ns``; ``stopped_early`` when a progress
    callback or Ctrl-C stopped it), ``set_vm_cpu`` (``vm`` and the engine values changed:
    ``shares``, ``reservation_mhz``, ``limit_mhz``, null meaning unlimited) and ``power_on``
    (``vm``). ``Simulation.replay`` repeats them to byte-identical tables.
``tables``
    ``{table name: row count}``, always the counts of the tables actually written.

There is deliberately no ``created_at``: two runs of the same scenario and seed differ only in
``wall_time_s``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vmtwin._interrupt import check_interrupt
from vmtwin.exceptions import OutputError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = [
    "MANIFEST_NAME",
    "TABLE_COLUMNS",
    "ROW_GROUP_ROWS",
    "Results",
    "ResultsWriter",
    "check_output_folder",
    "RepeatedColumns",
    "columns_from_engine",
    "with_host_column",
    "open_results",
    "write_results",
]

#: File name of the manifest inside a results folder.
MANIFEST_NAME = "manifest.json"

_PCT = ["%USED", "%RUN", "%RDY", "%MLMTD", "%WAIT", "%VMWAIT", "%IDLE", "%CSTP"]

#: esxtop's disk-view columns (the storage tables), then the interval means of ACTV and QUED.
_ESXTOP_DISK = ["CMDS/s", "READS/s", "WRITES/s", "MBREAD/s", "MBWRTN/s", "DAVG/cmd", "KAVG/cmd", "GAVG/cmd",
                "QAVG/cmd", "ACTV", "QUED", "%USD", "DQLEN", "ABRTS/s", "actv_mean", "qued_mean"]

#: Name of the column every table has right after ``time_s``: the host's name (the scenario's
#: ``host.name``, esx01 by default; a cluster run's hosts by their own names). It is added by
#: Python (:func:`columns_from_engine`, :func:`with_host_column`), not by the engine.
HOST_COLUMN = "host"

#: Column order of the tables the engine contract defines, without :data:`HOST_COLUMN` (which
#: :data:`TABLE_COLUMNS` inserts after ``time_s``); ``vm`` is added by Python.
_ENGINE_TABLE_COLUMNS: dict[str, list[str]] = {
    "host": [
        "time_s",
        "pcpus",
        "capacity_mhz",
        "used_mhz",
        "%PCPU_UTIL",
        "%PCPU_USED",
        "ready_vcpus",
        "powered_on_vms",
    ],
    "vm": [
        "time_s",
        "vm",
        "vm_id",
        "vcpus",
        *_PCT,
        "used_mhz",
        "entitlement_mhz",
        "demand_mhz",
        "demand_est_mhz",
        "shares",
        "reservation_mhz",
        "limit_mhz",
    ],
    "vcpu": [
        "time_s",
        "vm",
        "vm_id",
        "vcpu",
        *_PCT,
        "run_ns",
        "ready_ns",
        "wait_ns",
        "idle_ns",
        "mlmtd_ns",
        "costop_ns",
        "used_ns",
    ],
    "pcpu": ["time_s", "pcpu", "%PCPU_UTIL", "%PCPU_USED"],
    # memory (docs/reference/counters.md): sizes in MB, rates in MB/s, as esxtop shows them
    "mem": [
        "time_s", "vm", "vm_id", "MEMSZ", "GRANT", "MAPPED", "CNSM", "SZTGT", "TCHD", "TCHD_W", "%ACTVS", "%ACTVF",
        "MCTLSZ", "MCTLTGT",
        "SWCUR", "SWTGT", "SWR/s", "SWW/s", "ZIP/s", "UNZIP/s", "ZIP", "CACHEUSD", "SHRD", "ZERO", "SHRDSVD",
        "%SWPWT", "COWH/s", "MEMCPU_ms",
    ],
    "mem_host": ["time_s", "PMEM", "FREE", "state"],
    # the guest OS model's view (VMs with guest_memory.guest_os; docs/memory.md)
    "mem_guest": [
        "time_s", "vm", "vm_id", "KERNEL", "CACHED", "FREE", "ANON", "BALLOON", "SWAPPED", "SWPIN/s", "SWPOUT/s",
        "%SWPWT", "BLN_FREE", "BLN_CACHE", "BLN_ANON", "DBLPG",
    ],
    # application operations (VMs with guest_memory.app; docs/memory-apps.md)
    "mem_app": ["time_s", "vm", "vm_id", "OPS", "OPM", "MB/s", "LAT_MS", "P95_MS", "HIT%"],
    # storage (docs/storage.md): esxtop's disk views per VM disk, LUN, path and adapter; the name
    # columns are added from the spec beside their index columns (vmtwin.scenario.storage)
    "disk": ["time_s", "vm", "vm_id", "disk", "disk_id", "lun", "lun_id", *_ESXTOP_DISK],
    "lun": ["time_s", "lun", "lun_id", *_ESXTOP_DISK],
    "path": ["time_s", "path_name", "path_id", "lun", "lun_id", "path", "adapter", "adapter_id", "up", *_ESXTOP_DISK],
    "adapter": ["time_s", "adapter", "adapter_id", *_ESXTOP_DISK],
    # one row per completed request of the disks with log_requests (time_s: its completion)
    "io_log": ["time_s", "vm", "vm_id", "disk", "disk_id", "lun", "lun_id", "read", "bytes", "issue_ns", "accept_ns",
               "done_ns"],
}

#: Column order of the results tables: ``time_s``, :data:`HOST_COLUMN`, then the contract's
#: columns (``vm`` is added by Python). Columns the engine returns beyond these follow in sorted
#: name order; a table the contract does not name leads with ``time_s``, ``host``, ``vm``.
TABLE_COLUMNS: dict[str, list[str]] = {
    name: [cols[0], HOST_COLUMN, *cols[1:]] for name, cols in _ENGINE_TABLE_COLUMNS.items()
}

_ENGINE_DTYPES: dict[str, tuple[str, pa.DataType]] = {
    "f64": ("<f8", pa.float64()),
    "u64": ("<u8", pa.uint64()),
    "u32": ("<u4", pa.uint32()),
}

_TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

# Columns whose values repeat from row to row (names, ids, settings, sample times): dictionary
# encoded. The counters are nearly all distinct, where a dictionary is built only to be dropped:
# encoding every column so cost 2.0 us per row on bench-1024vm's tables, these only 0.5 us, and
# the files came out 22% smaller.
_DICTIONARY_COLUMNS = frozenset({
    "time_s", "vm", "vm_id", "vcpu", "vcpus", "shares", "reservation_mhz", "limit_mhz", "pcpus",
    "capacity_mhz", "powered_on_vms", HOST_COLUMN,
})

# Fixed Parquet writer options: same table -> same bytes. pyarrow writes its own version into
# the file's ``created_by``; that is constant on a machine. zstd level 1: a quarter less CPU
# than level 3 for 1% larger files on bench-1024vm's tables.
_PARQUET_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 1,
    "write_statistics": True,
    "data_page_version": "1.0",
    "store_schema": True,
    "write_page_index": False,
    "write_page_checksum": False,
    "use_byte_stream_split": False,
}


#: Rows per Parquet row group. Groups are cut at fixed row counts, never where a run was stepped
#: or drained, so the bytes depend only on the rows. The size trades the writer's buffers (which
#: grow with it) against the footer's metadata, which the writer holds until the file closes
#: and which grows by about 20 KB per row group: with 1,024 VMs at 2 s sampling, 65,536-row
#: groups let peak memory grow by 1.2 MB per simulated hour, 131,072-row groups by 0.8 MB on a
#: base 30 MB higher (benchmarks/bench_memory.py).
ROW_GROUP_ROWS = 1 << 17

#: Engine columns where NaN means "none" (no limit): stored as NULL, so SQL's ``WHERE
#: limit_mhz > 0`` and ``max(limit_mhz)`` see only real limits.
_NAN_IS_NULL = frozenset({"limit_mhz"})

_TMP_MARK, _OLD_MARK = ".tmp-", ".old-"
_NAME_IN_TEMP = 200  # characters of a folder's name kept in its temp names
_ACTIVE: set[Path] = set()  # temp folders of the writers open in this process


def _ordered_table_names(names: Any) -> list[str]:
    """Return table names with the contract's tables first, then the rest sorted.

    Parameters
    ----------
    names : iterable of str
        Table names.

    Returns
    -------
    list of str
        ``host``, ``vm``, ``vcpu``, ``pcpu`` (those present) followed by the other names, sorted.
    """
    names = set(names)
    known = [n for n in TABLE_COLUMNS if n in names]
    return known + sorted(names - set(known))


class RepeatedColumns:
    """The string columns of one run's drains, kept to be reused by the next drain.

    A run is drained every few thousand rows (``simulation.DRAIN_ROWS``), and drain after drain
    its ``vm`` column (VM names looked up by ``vm_id``) and its ``host`` column hold the same
    strings in the same order: the same VMs sampled in the same order, the same number of samples.
    Building them again cost a fresh allocation and a copy per row (with 1,024 VMs, 10-15 ms of
    a 20-minute run's drains, benchmarks/README.md); Arrow arrays are immutable, so the tables of
    every drain can share one. Keyed by the ``vm_id`` values (compared in full) and by the row
    count: a different drain builds its own, which becomes the one kept.
    """

    def __init__(self) -> None:
        self._vm: dict[str, tuple[pa.Array, np.ndarray, pa.Array]] = {}  # per table: names, vm_id values, vm column
        self._host: dict[str, pa.Array] = {}  # per table: its host column

    def vm(self, table: str, names: pa.Array, ids: pa.Array) -> pa.Array:
        """Table ``table``'s ``names.take(ids)``, or the column made for the same ids last time."""
        values = ids.to_numpy()
        kept = self._vm.get(table)
        if kept is not None and kept[0] is names and np.array_equal(kept[1], values):
            return kept[2]
        made = names.take(ids)
        self._vm[table] = (names, values, made)
        return made

    def host(self, table: str, host: str, rows: int) -> pa.Array:
        """Table ``table``'s ``rows`` copies of ``host``, or the column made last time if alike."""
        kept = self._host.get(table)
        if kept is None or len(kept) != rows or (rows > 0 and kept[0].as_py() != host):
            kept = self._host[table] = pa.repeat(pa.scalar(host, pa.string()), rows)
        return kept


def columns_from_engine(
    raw: Mapping[str, Mapping[str, tuple[str, bytes]]], vm_names: list[str] | pa.Array, host: str | None = None,
    repeats: RepeatedColumns | None = None,
) -> dict[str, pa.Table]:
    """Turn the engine's raw columns into Arrow tables.

    Parameters
    ----------
    raw : mapping
        The engine's ``drain_tables()``: per table, per column, ``(dtype, bytes)`` with dtype ``"f64"``,
        ``"u64"`` or ``"u32"`` and the values as little-endian bytes (any bytes-like object: the
        engine hands over each column's own memory, which the arrays made here keep alive).
    vm_names : list of str or pyarrow string array
        ``Simulation.vm_names()``; ``vm_id`` indexes into it.
    host : str, optional
        The host's name: every table gets a string column :data:`HOST_COLUMN` with it, right
        after ``time_s``. Without it (a caller that adds the column itself) there is none.
    repeats : RepeatedColumns, optional
        The string columns made by earlier calls with the same ``vm_names`` and ``host`` (one
        run's drains), reused when a table's ``vm_id`` column or row count is the same again.

    Returns
    -------
    dict of str to pyarrow.Table
        One table per engine table, in the order ``host``, ``vm``, ``vcpu``, then others by
        name. Columns follow :data:`TABLE_COLUMNS`; extra columns follow in sorted order. Tables
        with a ``vm_id`` column get a string column ``vm`` after ``time_s`` (and ``host``).

    Raises
    ------
    ValueError
        Unknown dtype, a byte length that is not a whole number of values, columns of one table
        with different lengths, a ``vm_id`` outside ``vm_names``, or an engine column named
        :data:`HOST_COLUMN` when ``host`` is given.
    """
    names = vm_names if isinstance(vm_names, pa.Array) else pa.array(list(vm_names), type=pa.string())
    if repeats is None:
        repeats = RepeatedColumns()  # nothing kept: every column is made here
    out: dict[str, pa.Table] = {}
    for table_name in _ordered_table_names(raw):
        columns = raw[table_name]
        arrays: dict[str, pa.Array] = {}
        nrows: int | None = None
        for col in sorted(columns):
            dtype, data = columns[col]
            if dtype not in _ENGINE_DTYPES:
                raise ValueError(
                    f"engine table {table_name!r} column {col!r}: unknown dtype {dtype!r} "
                    f"(expected one of {sorted(_ENGINE_DTYPES)})"
                )
            np_dtype, pa_type = _ENGINE_DTYPES[dtype]
            itemsize = np.dtype(np_dtype).itemsize
            if len(data) % itemsize:
                raise ValueError(
                    f"engine table {table_name!r} column {col!r}: {len(data)} bytes is not a "
                    f"multiple of {itemsize} ({dtype})"
                )
            values = np.frombuffer(data, dtype=np_dtype)
            if nrows is None:
                nrows = len(values)
            elif len(values) != nrows:
                raise ValueError(
                    f"engine table {table_name!r}: column {col!r} has {len(values)} rows, "
                    f"others have {nrows}"
                )
            mask = np.isnan(values) if col in _NAN_IS_NULL and dtype == "f64" else None
            arrays[col] = pa.array(values, type=pa_type, mask=mask)
        if "vm_id" in arrays and "vm" not in arrays:
            ids = arrays["vm_id"].to_numpy()
            if len(ids) and int(ids.max()) >= len(names):
                raise ValueError(
                    f"engine table {table_name!r}: vm_id {int(ids.max())} but only "
                    f"{len(names)} VM names"
                )
            arrays["vm"] = repeats.vm(table_name, names, arrays["vm_id"])
        if host is not None:
            if HOST_COLUMN in arrays:
                raise ValueError(f"engine table {table_name!r} has a column {HOST_COLUMN!r} of its own")
            arrays[HOST_COLUMN] = repeats.host(table_name, host, nrows or 0)
        # Contract tables in contract order; any other table leads with time_s, host and vm.
        lead = TABLE_COLUMNS.get(table_name, ["time_s", HOST_COLUMN, "vm"])
        order = [c for c in lead if c in arrays]
        order += sorted(c for c in arrays if c not in order)
        out[table_name] = pa.table({c: arrays[c] for c in order})
    return out


def with_host_column(table: pa.Table, host: str) -> pa.Table:
    """``table`` with a string column :data:`HOST_COLUMN` (every row ``host``) after ``time_s``;
    a column already there (a one-host run's own host name) is replaced in place."""
    column = pa.repeat(pa.scalar(host, pa.string()), table.num_rows)
    if HOST_COLUMN in table.column_names:
        return table.set_column(table.column_names.index(HOST_COLUMN), HOST_COLUMN, column)
    at = 1 if table.num_columns and table.column_names[0] == "time_s" else 0
    return table.add_column(at, HOST_COLUMN, column)


def _json_default(obj: Any) -> Any:
    """Convert numpy scalars/arrays and paths for ``json.dumps``."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"manifest value of type {type(obj).__name__} is not JSON-serializable")


def _manifest_text(manifest: Mapping[str, Any]) -> str:
    """Serialize a manifest: sorted keys, indent 2, strict JSON, trailing newline."""
    return (
        json.dumps(manifest, sort_keys=True, indent=2, allow_nan=False, default=_json_default)
        + "\n"
    )


@contextmanager
def _os_errors(out: Path) -> Iterator[None]:
    """Turn an OS error while writing ``out`` into an :class:`OutputError` naming ``out``.

    The message never names the temp folder: the user asked for ``out``.
    """
    try:
        yield
    except OutputError:
        raise
    except OSError as exc:
        raise _output_error(out, exc) from None


def _output_error(out: Path, exc: OSError) -> OutputError:
    reason = exc.strerror or str(exc)
    hint = {
        errno.ENAMETOOLONG: f" ({len(out.name)} characters; most file systems allow 255)",
        errno.EACCES: " (is the folder read-only?)",
        errno.EROFS: "",
        errno.ENOTDIR: " (a part of the path is a file, not a folder)",
        errno.ENOSPC: " (the disk is full)",
    }.get(exc.errno or 0, "")
    return OutputError(f"cannot write results folder {out}: {reason}{hint}")


def _sibling(out: Path, mark: str, pid: int) -> Path:
    """``.<name>.tmp-<pid>`` (or ``.old-``) beside ``out``; long names are cut so that the temp
    name never fails for length where ``out`` itself would not."""
    return out.parent / f".{out.name[:_NAME_IN_TEMP]}{mark}{pid}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _clear_leftovers(out: Path) -> None:
    """Deal with the hidden folders of writers to ``out`` whose process is gone (killed runs).

    ``.<name>.tmp-<pid>`` is an unfinished write: removed. ``.<name>.old-<pid>`` is a previous
    results folder moved aside by a replace that did not finish: put back as ``out`` when
    ``out`` is missing (the replace never happened), removed otherwise. Folders of live
    processes, and of writers open in this process, are left alone.
    """
    prefix = f".{out.name[:_NAME_IN_TEMP]}"
    try:
        entries = [p for p in out.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for p in sorted(entries):
        rest = p.name[len(prefix):]
        mark = next((m for m in (_TMP_MARK, _OLD_MARK) if rest.startswith(m)), None)
        if mark is None or not rest[len(mark):].isdigit() or p in _ACTIVE:
            continue
        pid = int(rest[len(mark):])
        if pid != os.getpid() and _pid_alive(pid):
            continue
        if mark == _OLD_MARK and not out.exists() and _is_results_folder(p):
            os.rename(p, out)
        else:
            shutil.rmtree(p, ignore_errors=True)


def _is_results_folder(path: Path) -> bool:
    return (path / MANIFEST_NAME).is_file()


def check_output_folder(out_dir: str | os.PathLike[str], *, force: bool = False) -> None:
    """Refuse a destination a results writer would not replace, before any work is done.

    Parameters
    ----------
    out_dir : path-like
        The results folder to be written.
    force : bool
        Allow replacing an existing results folder (one with a ``manifest.json``). A file, or a
        non-empty folder that is not a results folder, is refused even so. An empty folder is
        used without ``force``.

    Raises
    ------
    OutputError
        ``out_dir`` is a file, a non-empty non-results folder, an existing results folder and
        ``force`` is false, the nearest existing folder above it is a file or not writable, or
        its path cannot be examined (name too long). The message names ``out_dir``.
    """
    out = Path(out_dir).absolute()
    with _os_errors(out):
        if not out.exists():
            parent = next(p for p in out.parents if p.exists())  # the root always exists
            if not parent.is_dir():
                raise OutputError(f"cannot write results folder {out}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(f"cannot write results folder {out}: {parent} is not writable (read-only?)")
            return
        if not out.is_dir():
            raise OutputError(f"cannot write results folder {out}: a file of that name exists; "
                              "give a folder name (nothing was replaced)")
        if _is_results_folder(out):
            if not force:
                raise OutputError(f"results folder {out} exists already; allowed: a new folder, or "
                                  "force=True (vmtwin run --force) to replace it")
        elif any(out.iterdir()):
            raise OutputError(f"cannot write results folder {out}: it exists, is not empty and is not "
                              f"a vmtwin results folder (no {MANIFEST_NAME}); refusing to replace it")


class ResultsWriter:
    """Streams tables into a results folder that appears under its name only when complete.

    Rows are appended as a run goes (:meth:`append`) and written to Parquet as soon as a row
    group is full, so memory does not grow with the run's length; :meth:`close` writes the last
    row groups and ``manifest.json``, then renames the hidden folder ``.<name>.tmp-<pid>`` to
    ``out_dir``. Row groups are cut every :data:`ROW_GROUP_ROWS` rows of each table, whatever
    the sizes of the appended pieces, so the files depend only on the rows.

    Parameters
    ----------
    out_dir : path-like
        The results folder to create (see :func:`check_output_folder` for what is refused).
    force : bool
        Replace an existing results folder at ``out_dir`` (when :meth:`close` renames).

    Raises
    ------
    OutputError
        ``out_dir`` is refused, or its temp folder cannot be created (read-only folder, ...).

    Notes
    -----
    Leftovers of killed writers to the same ``out_dir`` are cleaned up here (see
    :func:`_clear_leftovers`). An unclosed writer removes its temp folder when it is garbage
    collected or the interpreter exits; a SIGKILL leaves it, for the next writer to remove.
    """

    def __init__(self, out_dir: str | os.PathLike[str], *, force: bool = False) -> None:
        self.path = Path(out_dir).absolute()
        self._force = force
        tmp = _sibling(self.path, _TMP_MARK, os.getpid())
        if tmp in _ACTIVE:
            raise OutputError(f"cannot write results folder {self.path}: another writer in this "
                              "process is writing it")
        with _os_errors(self.path):
            _clear_leftovers(self.path)  # first: it may put back a folder a killed replace moved
        check_output_folder(self.path, force=force)
        with _os_errors(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir()
        self._tmp = tmp
        _ACTIVE.add(tmp)
        self._finalizer = weakref.finalize(self, _discard, tmp)
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, list[pa.Table]] = {}
        self._buffered: dict[str, int] = {}
        self.rows: dict[str, int] = {}
        self.closed = False

    def append(self, name: str, table: pa.Table) -> None:
        """Append rows to table ``name`` (its first piece fixes the schema; may have 0 rows).

        Raises
        ------
        ValueError
            A bad table name, or a schema different from the table's first piece.
        OutputError
            A write failed; the temp folder is removed and the writer is closed.
        """
        if self.closed:
            raise OutputError(f"results folder {self.path} is already closed")
        if name not in self._writers:
            if not _TABLE_NAME.match(name) or name == "manifest":
                raise ValueError(f"table name {name!r} is not allowed (expected [a-z_][a-z0-9_]*, "
                                 "not 'manifest')")
            with self._failing():
                dictionary = [c for c in table.schema.names if c in _DICTIONARY_COLUMNS]
                self._writers[name] = pq.ParquetWriter(self._tmp / f"{name}.parquet", table.schema,
                                                       use_dictionary=dictionary, **_PARQUET_OPTIONS)
            self._pending[name], self._buffered[name], self.rows[name] = [], 0, 0
        elif table.schema != self._writers[name].schema:
            raise ValueError(f"table {name!r}: schema {table.schema} differs from the first piece's "
                             f"{self._writers[name].schema}")
        if table.num_rows == 0:
            return
        self.rows[name] += table.num_rows
        self._pending[name].append(table)
        self._buffered[name] += table.num_rows
        while self._buffered[name] >= ROW_GROUP_ROWS:
            self._flush(name, ROW_GROUP_ROWS)

    def _flush(self, name: str, rows: int) -> None:
        """Write the first ``rows`` buffered rows of ``name`` as one row group."""
        pending = pa.concat_tables(self._pending[name])
        group, rest = pending.slice(0, rows).combine_chunks(), pending.slice(rows)
        self._pending[name] = [rest] if rest.num_rows else []
        self._buffered[name] = rest.num_rows
        with self._failing():
            self._writers[name].write_table(group, row_group_size=rows)

    @contextmanager
    def _failing(self) -> Iterator[None]:
        """On any failure or interrupt: remove the temp folder, close, re-raise (OS errors as
        :class:`OutputError` naming the user's path)."""
        try:
            with _os_errors(self.path):
                yield
        except BaseException:
            self.abort()
            raise

    def close(self, manifest: Mapping[str, Any]) -> Path:
        """Finish: last row groups, ``manifest.json`` (with ``tables`` filled in), rename.

        Parameters
        ----------
        manifest : mapping
            Run metadata (module docstring). A ``tables`` entry must agree with the rows
            appended.

        Returns
        -------
        pathlib.Path
            ``out_dir``, absolute.

        Raises
        ------
        ValueError
            ``manifest`` is not strict JSON, or its ``tables`` disagrees; nothing is renamed and
            the writer stays open.
        OutputError
            A write or the rename failed, or ``out_dir`` became a results folder during the run
            and ``force`` is false; a previous results folder at ``out_dir`` is kept.
        """
        if self.closed:
            raise OutputError(f"results folder {self.path} is already closed")
        rows = {name: self.rows[name] for name in _ordered_table_names(self.rows)}
        full = dict(manifest)
        given = full.get("tables")
        if given is not None and dict(given) != rows:
            raise ValueError(f"manifest 'tables' {dict(given)} disagrees with the tables {rows}")
        full["tables"] = rows
        try:
            text = _manifest_text(full)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"manifest is not valid JSON: {exc}") from exc
        old = _sibling(self.path, _OLD_MARK, os.getpid())
        moved_old = False
        with self._failing():
            for name, writer in self._writers.items():
                if self._buffered[name]:
                    self._flush(name, self._buffered[name])
                writer.close()
            check_interrupt()  # never complete after Ctrl-C, even one library code swallowed
            # The manifest last: inside the temp folder it marks the write as complete.
            (self._tmp / MANIFEST_NAME).write_text(text, encoding="utf-8")
            check_output_folder(self.path, force=self._force)  # it may have appeared meanwhile
            if old.exists():
                shutil.rmtree(old)
            try:
                if self.path.exists():
                    os.rename(self.path, old)
                    moved_old = True
                os.rename(self._tmp, self.path)
            except BaseException:
                if moved_old and not self.path.exists():
                    os.rename(old, self.path)
                raise
        self._done()
        if moved_old:
            shutil.rmtree(old, ignore_errors=True)
        return self.path

    def abort(self) -> None:
        """Give up: close the files and remove the temp folder (``out_dir`` is untouched)."""
        if self.closed:
            return
        for writer in self._writers.values():
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the folder goes anyway
                pass
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._done()

    def _done(self) -> None:
        self.closed = True
        self._writers.clear()
        self._pending.clear()
        _ACTIVE.discard(self._tmp)
        self._finalizer.detach()


def _discard(tmp: Path) -> None:
    """Finalizer of an unclosed writer: its temp folder goes (garbage collection or exit)."""
    _ACTIVE.discard(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def write_results(
    out_dir: str | os.PathLike[str],
    tables: Mapping[str, pa.Table],
    manifest: Mapping[str, Any],
    *,
    force: bool = False,
) -> Path:
    """Write whole tables as a results folder, atomically (through a :class:`ResultsWriter`).

    Parameters
    ----------
    out_dir : path-like
        The results folder to create.
    tables : mapping of str to pyarrow.Table
        Tables by name; each becomes ``<name>.parquet``. Names must match ``[a-z_][a-z0-9_]*``
        (they are also DuckDB view names).
    manifest : mapping
        Run metadata (see the module docstring for the keys). ``tables`` is set to the row
        counts of ``tables``; a caller-supplied ``tables`` entry must agree with them.
    force : bool
        Replace an existing results folder at ``out_dir``.

    Returns
    -------
    pathlib.Path
        ``out_dir`` as an absolute path.

    Raises
    ------
    OutputError
        ``out_dir`` is refused (see :func:`check_output_folder`) or cannot be written.
    ValueError
        A bad table name, a manifest ``tables`` entry that disagrees with the tables, or a
        manifest value that is not strict JSON (NaN, infinity, unknown types); nothing is
        written.
    """
    for name in tables:
        if not _TABLE_NAME.match(name) or name == "manifest":
            raise ValueError(
                f"table name {name!r} is not allowed (expected [a-z_][a-z0-9_]*, not 'manifest')"
            )
    rows = {name: int(tables[name].num_rows) for name in _ordered_table_names(tables)}
    given = manifest.get("tables")
    if given is not None and dict(given) != rows:
        raise ValueError(f"manifest 'tables' {dict(given)} disagrees with the tables {rows}")
    try:
        _manifest_text({**manifest, "tables": rows})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"manifest is not valid JSON: {exc}") from exc
    writer = ResultsWriter(out_dir, force=force)
    for name in rows:
        writer.append(name, tables[name])
    return writer.close(manifest)


class Results:
    """A results folder, read back as data frames or queried with DuckDB.

    Parameters
    ----------
    path : path-like
        A folder written by :func:`write_results`.

    Raises
    ------
    ValueError
        ``path`` is not a vmtwin results folder (no readable ``manifest.json``).

    Examples
    --------
    >>> res = Results("out/run1")                                 # doctest: +SKIP
    >>> res.sql('SELECT vm, avg("%RDY") AS rdy FROM vm GROUP BY vm')  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        manifest_path = self.path / MANIFEST_NAME
        if not manifest_path.is_file():
            raise ValueError(
                f"{self.path} is not a vmtwin results folder (no {MANIFEST_NAME} found)"
            )
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{manifest_path} is not a readable vmtwin manifest: {exc}") from exc
        if not isinstance(manifest, dict):
            raise ValueError(f"{manifest_path} is not a vmtwin manifest (not a JSON object)")
        self.manifest: dict[str, Any] = manifest

    def __repr__(self) -> str:
        return f"Results({str(self.path)!r}, tables={self.tables})"

    @property
    def tables(self) -> list[str]:
        """Names of the tables present (``host``, ``vm``, ``vcpu`` first, then by name)."""
        return _ordered_table_names(p.stem for p in self.path.glob("*.parquet") if p.is_file())

    def table_path(self, name: str) -> Path:
        """Return the Parquet file of table ``name``.

        Parameters
        ----------
        name : str
            A table name from :attr:`tables`.

        Returns
        -------
        pathlib.Path

        Raises
        ------
        KeyError
            No such table in this folder.
        """
        path = self.path / f"{name}.parquet"
        if not path.is_file():
            raise KeyError(f"no table {name!r} in {self.path} (tables: {', '.join(self.tables)})")
        return path

    def arrow(self, name: str) -> pa.Table:
        """Return table ``name`` as a :class:`pyarrow.Table`."""
        return pq.read_table(self.table_path(name))

    def table(self, name: str) -> pd.DataFrame:
        """Return table ``name`` as a :class:`pandas.DataFrame`.

        Parameters
        ----------
        name : str
            A table name from :attr:`tables`.

        Returns
        -------
        pandas.DataFrame
            A fresh frame (changing it does not affect later reads).
        """
        return self.arrow(name).to_pandas()

    @property
    def host(self) -> pd.DataFrame:
        """The ``host`` table."""
        return self.table("host")

    @property
    def vm(self) -> pd.DataFrame:
        """The ``vm`` table."""
        return self.table("vm")

    @property
    def vcpu(self) -> pd.DataFrame:
        """The ``vcpu`` table."""
        return self.table("vcpu")

    def connect(self) -> duckdb.DuckDBPyConnection:
        """Return an in-memory DuckDB connection with one view per table.

        Returns
        -------
        duckdb.DuckDBPyConnection
            Views are named after the tables and read the Parquet files in place. The caller
            closes the connection.
        """
        import duckdb

        con = duckdb.connect(":memory:")
        for name in self.tables:
            file = str(self.table_path(name).absolute()).replace("'", "''")
            con.execute(f"CREATE VIEW \"{name}\" AS SELECT * FROM read_parquet('{file}')")
        return con

    def sql(self, query: str, params: Any = None) -> pd.DataFrame:
        """Run a DuckDB query over the folder's tables.

        Parameters
        ----------
        query : str
            SQL; each table is a view of its name, e.g.
            ``SELECT vm, avg("%RDY") FROM vm GROUP BY vm``. Quote esxtop names with ``"``.
        params : sequence or mapping, optional
            Prepared-statement parameters.

        Returns
        -------
        pandas.DataFrame
        """
        con = self.connect()
        try:
            rel = con.execute(query, params) if params is not None else con.execute(query)
            return rel.df()
        finally:
            con.close()


def open_results(path: str | os.PathLike[str]) -> Results:
    """Open a results folder; same as ``Results(path)``.

    Parameters
    ----------
    path : path-like
        A folder written by :func:`write_results`.

    Returns
    -------
    Results
    """
    return Results(path)
