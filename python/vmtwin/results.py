"""A run's results: engine columns to Arrow tables, the results folder, and reading it back.

A results folder holds ``manifest.json`` and one Parquet file per table (``host.parquet``,
``vm.parquet``, ``vcpu.parquet``, later ``mem``, ``disk``, ``path``, ``events``). The column
names and meanings are those of ``docs/reference/engine-contract.md`` (esxtop's vocabulary), plus
a string column ``vm`` (the VM's name) right after ``time_s`` in the ``vm`` and ``vcpu`` tables.

Three rules hold for every folder written here:

- **Atomic.** Everything is written into a hidden sibling folder ``.<name>.tmp-<pid>`` and then
  renamed into place, so an interrupted run never leaves a folder named ``out_dir`` that looks
  complete (or half-written).
- **Deterministic.** The Parquet files are byte-identical for identical tables (fixed writer
  options, no timestamps). Anything that varies from run to run (wall time) lives only in
  ``manifest.json``.
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
``sample_interval_s``
    Counter sampling interval, seconds.
``wall_time_s``
    Wall-clock time the run took, seconds (the one non-deterministic value).
``event_count``
    Number of events the engine processed.
``tables``
    ``{table name: row count}``, always the counts of the tables actually written.

There is deliberately no ``created_at``: two runs of the same scenario and seed differ only in
``wall_time_s``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = [
    "MANIFEST_NAME",
    "TABLE_COLUMNS",
    "Results",
    "check_output_folder",
    "columns_from_engine",
    "open_results",
    "write_results",
]

#: File name of the manifest inside a results folder.
MANIFEST_NAME = "manifest.json"

_PCT = ["%USED", "%RUN", "%RDY", "%MLMTD", "%WAIT", "%VMWAIT", "%IDLE"]

#: Column order of the tables the engine contract defines (``vm`` is added by Python).
#: Columns the engine returns beyond these follow in sorted name order.
TABLE_COLUMNS: dict[str, list[str]] = {
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
        "used_ns",
    ],
}

_ENGINE_DTYPES: dict[str, tuple[str, pa.DataType]] = {
    "f64": ("<f8", pa.float64()),
    "u64": ("<u8", pa.uint64()),
    "u32": ("<u4", pa.uint32()),
}

_TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

# Fixed Parquet writer options: same table -> same bytes. pyarrow writes its own version into
# the file's ``created_by``; that is constant on a machine.
_PARQUET_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
    "row_group_size": 1 << 20,
    "store_schema": True,
    "write_page_index": False,
    "write_page_checksum": False,
    "use_byte_stream_split": False,
}


def _ordered_table_names(names: Any) -> list[str]:
    """Return table names with the contract's tables first, then the rest sorted.

    Parameters
    ----------
    names : iterable of str
        Table names.

    Returns
    -------
    list of str
        ``host``, ``vm``, ``vcpu`` (those present) followed by the other names, sorted.
    """
    names = set(names)
    known = [n for n in TABLE_COLUMNS if n in names]
    return known + sorted(names - set(known))


def columns_from_engine(
    raw: Mapping[str, Mapping[str, tuple[str, bytes]]], vm_names: list[str]
) -> dict[str, pa.Table]:
    """Turn the engine's raw columns into Arrow tables.

    Parameters
    ----------
    raw : mapping
        ``Simulation.tables()``: per table, per column, ``(dtype, bytes)`` with dtype ``"f64"``,
        ``"u64"`` or ``"u32"`` and the values as little-endian bytes.
    vm_names : list of str
        ``Simulation.vm_names()``; ``vm_id`` indexes into it.

    Returns
    -------
    dict of str to pyarrow.Table
        One table per engine table, in the order ``host``, ``vm``, ``vcpu``, then others by
        name. Columns follow :data:`TABLE_COLUMNS`; extra columns follow in sorted order. Tables
        with a ``vm_id`` column get a string column ``vm`` right after ``time_s``.

    Raises
    ------
    ValueError
        Unknown dtype, a byte length that is not a whole number of values, columns of one table
        with different lengths, or a ``vm_id`` outside ``vm_names``.
    """
    names = np.asarray(list(vm_names), dtype=object)
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
            values = np.frombuffer(data, dtype=np_dtype).astype(np_dtype[1:], copy=True)
            if nrows is None:
                nrows = len(values)
            elif len(values) != nrows:
                raise ValueError(
                    f"engine table {table_name!r}: column {col!r} has {len(values)} rows, "
                    f"others have {nrows}"
                )
            arrays[col] = pa.array(values, type=pa_type)
        if "vm_id" in arrays and "vm" not in arrays:
            ids = arrays["vm_id"].to_numpy()
            if len(ids) and int(ids.max()) >= len(names):
                raise ValueError(
                    f"engine table {table_name!r}: vm_id {int(ids.max())} but only "
                    f"{len(names)} VM names"
                )
            arrays["vm"] = pa.array(names[ids.astype(np.int64)].tolist(), type=pa.string())
        # Contract tables in contract order; any other table leads with time_s and vm.
        lead = TABLE_COLUMNS.get(table_name, ["time_s", "vm"])
        order = [c for c in lead if c in arrays]
        order += sorted(c for c in arrays if c not in order)
        out[table_name] = pa.table({c: arrays[c] for c in order})
    return out


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


def _write_parquet(table: pa.Table, path: Path) -> None:
    """Write one table with the fixed, deterministic Parquet options."""
    pq.write_table(table, path, **_PARQUET_OPTIONS)


def _is_results_folder(path: Path) -> bool:
    return (path / MANIFEST_NAME).is_file()


def check_output_folder(out_dir: str | os.PathLike[str]) -> None:
    """Refuse a destination :func:`write_results` would not replace, before any work is done.

    Raises
    ------
    FileExistsError
        ``out_dir`` exists and is a file, or a non-empty folder that is not a results folder.
    """
    out = Path(out_dir).absolute()
    if out.exists():
        if not out.is_dir():
            raise FileExistsError(f"{out} exists and is not a folder; refusing to replace it")
        if not _is_results_folder(out) and any(out.iterdir()):
            raise FileExistsError(
                f"{out} exists, is not empty and is not a vmtwin results folder "
                f"(no {MANIFEST_NAME}); refusing to replace it"
            )


def write_results(
    out_dir: str | os.PathLike[str],
    tables: Mapping[str, pa.Table],
    manifest: Mapping[str, Any],
) -> Path:
    """Write a results folder atomically.

    Everything goes into a sibling temp folder ``.<name>.tmp-<pid>`` which is then renamed to
    ``out_dir``. A previous results folder at ``out_dir`` (one with a ``manifest.json``) or an
    empty folder is replaced; anything else there is refused before a byte is written.

    Parameters
    ----------
    out_dir : path-like
        The results folder to create or replace.
    tables : mapping of str to pyarrow.Table
        Tables by name; each becomes ``<name>.parquet``. Names must match ``[a-z_][a-z0-9_]*``
        (they are also DuckDB view names).
    manifest : mapping
        Run metadata (see the module docstring for the keys). ``tables`` is set to the row
        counts of ``tables``; a caller-supplied ``tables`` entry must agree with them.

    Returns
    -------
    pathlib.Path
        ``out_dir`` as an absolute path.

    Raises
    ------
    FileExistsError
        ``out_dir`` exists and is a file, or a non-empty folder that is not a results folder.
    ValueError
        A bad table name, a manifest ``tables`` entry that disagrees with the tables, or a
        manifest value that is not strict JSON (NaN, infinity, unknown types).
    """
    out = Path(out_dir).absolute()
    for name in tables:
        if not _TABLE_NAME.match(name) or name == "manifest":
            raise ValueError(
                f"table name {name!r} is not allowed (expected [a-z_][a-z0-9_]*, not 'manifest')"
            )
    check_output_folder(out)

    rows = {name: int(tables[name].num_rows) for name in _ordered_table_names(tables)}
    full = dict(manifest)
    given = full.get("tables")
    if given is not None and dict(given) != rows:
        raise ValueError(f"manifest 'tables' {dict(given)} disagrees with the tables {rows}")
    full["tables"] = rows
    try:
        manifest_text = _manifest_text(full)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"manifest is not valid JSON: {exc}") from exc

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    for stale in (tmp, old):
        if stale.exists():
            shutil.rmtree(stale)
    moved_old = False
    try:
        tmp.mkdir()
        for name in rows:
            _write_parquet(tables[name], tmp / f"{name}.parquet")
        # The manifest last: inside the temp folder it marks the write as complete.
        (tmp / MANIFEST_NAME).write_text(manifest_text, encoding="utf-8")
        if out.exists():
            os.rename(out, old)
            moved_old = True
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if moved_old and not out.exists():
            os.rename(old, out)
        raise
    if moved_old:
        shutil.rmtree(old, ignore_errors=True)
    return out


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
