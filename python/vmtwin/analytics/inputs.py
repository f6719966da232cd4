"""Metric series from the files users have, as one long frame: ``time_s, resource, metric, value``.

Accepted inputs (:func:`read_metrics`):

- **Long form** CSV or Parquet: a time column (``timestamp``, ``time`` or ``time_s``) and the
  columns ``resource``, ``metric``, ``value`` (names case-insensitive). Any other column is an
  error naming it.
- **Wide form** CSV or Parquet: a time column first, then one column per resource and metric.
  With one header row a column is named ``resource:metric`` (or ``resource/metric``); with
  ``header_rows=2`` monitoring-tool exports put the resource on the first header row and the
  metric on the second (further header rows, e.g. units, are joined onto the metric name with a
  space). A column whose name does not split into resource and metric is an error naming it.
- **vmtwin results folder** (a folder with ``manifest.json``): the ``host`` table as resource
  ``host`` and the ``vm`` table per VM name, every numeric counter a metric; time is the
  simulated seconds.

Resource names may not contain ``:`` (event names are ``resource:metric:symptom``).

Times: ISO 8601 strings (an explicit offset such as ``+02:00`` or ``Z`` is honoured; naive times
are in ``tz``, default UTC) or epoch seconds (numbers). An unreadable time is an error naming the
file, row and value. Values: empty cells are missing (NaN) and are skipped downstream; a cell that
is not a number is an error naming file, row and column. Rows need not be in order or evenly
spaced (they are sorted; the threshold stage is built for irregular steps). Duplicate rows of
one (time, resource, metric) are averaged.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from vmtwin.exceptions import scenario_error

TIME_COLUMNS = ("timestamp", "time", "time_s")
LONG_COLUMNS = ("resource", "metric", "value")
SEPARATORS = (":", "/")
FORMS = ("auto", "long", "wide")


def read_table(path: Path, header_rows: int = 1) -> pd.DataFrame:
    """A CSV (``.csv``, ``.csv.gz``) or Parquet (``.parquet``, ``.pq``) file as a frame of strings/numbers."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        try:
            return pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise scenario_error(str(path), type(exc).__name__, f"a readable Parquet file ({exc})") from None
    if not name.endswith((".csv", ".csv.gz", ".txt")):
        raise scenario_error(str(path), path.suffix, "a .csv, .csv.gz, .parquet or .pq file")
    _check_field_counts(path)
    try:
        header = list(range(header_rows)) if header_rows > 1 else 0
        df = pd.read_csv(path, header=header, dtype=str, keep_default_na=False, skipinitialspace=True,
                         index_col=False if header_rows == 1 else None)
    except pd.errors.ParserError as exc:
        raise scenario_error(str(path), "malformed CSV", f"a CSV with the same number of fields on every line ({exc})") from None
    except (pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise scenario_error(str(path), "unreadable CSV", f"a UTF-8 CSV with a header row ({exc})") from None
    return df


def _check_field_counts(path: Path) -> None:
    """Every line has as many fields as the first (pandas would silently turn extra fields into an index)."""
    import csv
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as f:
            width = None
            for line_no, row in enumerate(csv.reader(f), 1):
                if not row:
                    continue
                if width is None:
                    width = len(row)
                elif len(row) != width:
                    raise scenario_error(f"{path}: line {line_no}", f"{len(row)} fields",
                                         f"{width} fields like the header (malformed CSV)")
    except (UnicodeDecodeError, csv.Error) as exc:
        raise scenario_error(str(path), "unreadable CSV", f"a UTF-8 CSV ({exc})") from None


def parse_times(values, path: str, column: str, tz: str = "UTC", first_row: int = 2) -> np.ndarray:
    """Epoch seconds of a column of ISO strings or numbers (error names file, row and value)."""
    s = pd.Series(values)
    num = pd.to_numeric(s, errors="coerce")
    if num.notna().all():
        return num.to_numpy(float)
    out = np.empty(len(s))
    for i, v in enumerate(s):
        if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
            out[i] = float(v)
            continue
        try:
            ts = pd.Timestamp(str(v).strip())
            if ts is pd.NaT:
                raise ValueError
        except (TypeError, ValueError):
            raise scenario_error(f"{path}: row {i + first_row}, column {column}", v,
                                 "an ISO 8601 time (e.g. 2024-01-31 12:00:00, optionally with +02:00 or Z) "
                                 "or epoch seconds") from None
        if ts.tzinfo is None:
            try:
                ts = ts.tz_localize(tz)
            except Exception:
                raise scenario_error("--tz", tz, "an IANA time zone name such as UTC or Europe/Paris") from None
        out[i] = ts.timestamp()
    return out


def _values(col: pd.Series, path: str, column: str, first_row: int) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(float)
    text = col.astype(str).str.strip()
    v = pd.to_numeric(text.where(text != "", None), errors="coerce")
    bad = v.isna() & (text != "") & (text.str.lower() != "nan")
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise scenario_error(f"{path}: row {i + first_row}, column {column}", text.iloc[i], "a number or an empty cell")
    return v.to_numpy(float)


def _time_column(columns, path: str) -> str:
    for c in columns:
        if str(c).strip().lower() in TIME_COLUMNS:
            return c
    raise scenario_error(f"{path}: columns", [str(c) for c in columns],
                         f"a time column named one of {', '.join(TIME_COLUMNS)}")


def _long(df: pd.DataFrame, path: str, tz: str) -> pd.DataFrame:
    lower = {str(c).strip().lower(): c for c in df.columns}
    tcol = _time_column(df.columns, path)
    unknown = [str(c) for c in df.columns if c != tcol and str(c).strip().lower() not in LONG_COLUMNS]
    if unknown:
        raise scenario_error(f"{path}: column {unknown[0]!r}", unknown[0],
                             f"the long-form columns {tcol}, {', '.join(LONG_COLUMNS)}")
    missing = [c for c in LONG_COLUMNS if c not in lower]
    if missing:
        raise scenario_error(f"{path}: columns", [str(c) for c in df.columns],
                             f"long form needs {', '.join(LONG_COLUMNS)} (missing: {', '.join(missing)})")
    out = pd.DataFrame({
        "time_s": parse_times(df[tcol], path, str(tcol), tz),
        "resource": df[lower["resource"]].astype(str).str.strip(),
        "metric": df[lower["metric"]].astype(str).str.strip(),
        "value": _values(df[lower["value"]], path, "value", 2),
    })
    for c in ("resource", "metric"):
        empty = out[c] == ""
        if empty.any():
            raise scenario_error(f"{path}: row {int(np.flatnonzero(empty.to_numpy())[0]) + 2}, column {c}", "",
                                 "a non-empty name")
    return out


def _split(name, header_rows: int, path: str) -> tuple[str, str]:
    if isinstance(name, tuple):
        parts = [str(p).strip() for p in name]
        parts = [p for p in parts if p and not p.startswith("Unnamed:")]
        if len(parts) >= 2:
            return parts[0], " ".join(parts[1:])
    else:
        for sep in SEPARATORS:
            if sep in str(name):
                r, m = str(name).split(sep, 1)
                if r.strip() and m.strip():
                    return r.strip(), m.strip()
    shown = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
    allowed = ("a resource on header row 1 and a metric on header row 2" if header_rows > 1 else
               "a column named resource:metric or resource/metric (or --header-rows 2 for a two-row header)")
    raise scenario_error(f"{path}: column {shown!r}", shown, allowed)


def _wide(df: pd.DataFrame, path: str, tz: str, header_rows: int) -> pd.DataFrame:
    cols = list(df.columns)
    tcol = cols[0]
    tname = tcol if not isinstance(tcol, tuple) else next((p for p in tcol if str(p).strip().lower() in TIME_COLUMNS), None)
    if tname is None or str(tname).strip().lower() not in TIME_COLUMNS:
        raise scenario_error(f"{path}: first column", tcol, f"the time column, named one of {', '.join(TIME_COLUMNS)}")
    first_row = header_rows + 1
    times = parse_times(df[tcol], path, str(tname), tz, first_row)
    frames = []
    for c in cols[1:]:
        r, m = _split(c, header_rows, path)
        frames.append(pd.DataFrame({"time_s": times, "resource": r, "metric": m,
                                    "value": _values(df[c], path, str(c), first_row)}))
    if not frames:
        raise scenario_error(f"{path}: columns", [str(c) for c in cols], "a time column and at least one metric column")
    return pd.concat(frames, ignore_index=True)


def read_results_folder(path: Path) -> pd.DataFrame:
    """The host and vm tables of a vmtwin results folder as long metrics."""
    from vmtwin.results import open_results

    res = open_results(path)
    frames = []
    skip = {"time_s", "vm", "vm_id", "vcpu"}
    for table in ("host", "vm"):
        if table not in res.tables:
            continue
        df = res.table(table)
        who = df["vm"].astype(str) if "vm" in df.columns else pd.Series("host", index=df.index)
        for c in df.columns:
            if c in skip or not pd.api.types.is_numeric_dtype(df[c]):
                continue
            frames.append(pd.DataFrame({"time_s": df["time_s"].astype(float), "resource": who, "metric": c,
                                        "value": df[c].astype(float)}))
    if not frames:
        raise scenario_error(str(path), res.tables, "a results folder with a host or vm table")
    return pd.concat(frames, ignore_index=True)


def read_metrics(path: str | Path, form: str = "auto", header_rows: Optional[int] = None,
                 tz: str = "UTC") -> pd.DataFrame:
    """Metric series from a file or results folder, as a long frame sorted by (resource, metric, time)."""
    if form not in FORMS:
        raise scenario_error("--form", form, ", ".join(FORMS))
    path = Path(path)
    if path.is_dir():
        out = read_results_folder(path)
    else:
        rows = header_rows or 1
        df = read_table(path, rows)
        if df.empty:
            raise scenario_error(str(path), "no rows", "a file with at least one data row")
        names = {str(c).strip().lower() for c in df.columns} if rows == 1 else set()
        is_long = form == "long" or (form == "auto" and rows == 1 and set(LONG_COLUMNS) <= names)
        out = _long(df, str(path), tz) if is_long else _wide(df, str(path), tz, rows)
    colon = out["resource"].astype(str).str.contains(":", regex=False)
    if colon.any():
        bad = str(out["resource"][colon].iloc[0])
        raise scenario_error(f"{path}: resource", bad, "a resource name without ':' (it separates resource, "
                             "metric and symptom in event names)")
    out = out.groupby(["resource", "metric", "time_s"], sort=True, as_index=False)["value"].mean()
    return out[["time_s", "resource", "metric", "value"]]
