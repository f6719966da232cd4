"""The sweep's output folder: its Parquet tables, the summary with intervals, and the plot.

``OUT/`` holds

``runs.parquet``
    one row per run: the sweep coordinates (one column per grid path, named by it), ``point``,
    ``replication``, ``seed``, then one column per metric (see :mod:`vmtwin.sweep.metrics`);
``vm.parquet``, ``vcpu.parquet``, ``host.parquet``
    the same leading columns, then each entity's mean of every counter over the run;
``summary.parquet``
    one row per point and metric: coordinates, ``point``, ``metric``, ``n``, ``mean``, ``sd``,
    ``ci_low``, ``ci_high``, ``confidence``;
``sweep.json``
    the sweep itself (base scenario with defaults filled, grid, replications, seed, metrics);
``report.html``
    a metric against a swept path, one line per combination of the other paths, with the
    confidence band.

Rows are in the sweep's order (points in grid order, the last path varying fastest; then
replications; then VMs and vCPUs by engine id), and the Parquet files are written with fixed
options, so the same sweep gives byte-identical ``.parquet`` files and ``sweep.json`` whatever
the backend or the number of workers (``report.html`` too: plotly is embedded, ids are fixed).

The folder is written as a hidden sibling ``.NAME.tmp-PID`` and renamed into place when
complete; an existing folder is refused unless it is a sweep folder and ``force`` is given.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vmtwin.exceptions import OutputError
from vmtwin.sweep.metrics import CONFIDENCE, Metric, metric_values, t_interval
from vmtwin.sweep.spec import Sweep, Task

__all__ = ["build_tables", "write_dataset", "check_destination", "plot_metric", "MARKER"]

#: The file that makes a folder a sweep folder (and so replaceable with ``force``).
MARKER = "sweep.json"

_LEAD = ("point", "replication", "seed")


def _coord_array(values: Sequence[Any], domain: Sequence[Any]) -> pa.Array:
    """One coordinate column, typed from every value the grid gives that path (not only those
    in these rows), so the type is the same for any subset of runs."""
    if all(isinstance(v, bool) for v in domain):
        return pa.array(values, pa.bool_())
    if all(isinstance(v, int) and not isinstance(v, bool) for v in domain):
        return pa.array(values, pa.int64())
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in domain):
        return pa.array([float(v) for v in values], pa.float64())
    if all(isinstance(v, str) for v in domain):
        return pa.array(values, pa.string())
    return pa.array([json.dumps(v, sort_keys=True) for v in values], pa.string())


def _lead_columns(sweep: Sweep, tasks: Sequence[Task], repeat: Sequence[int]) -> dict[str, pa.Array]:
    """Coordinates, point, replication and seed of each task, each repeated ``repeat[i]`` times."""
    cols: dict[str, pa.Array] = {}
    for path, domain in sweep.grid.items():
        vals = [dict(t.coords)[path] for t, k in zip(tasks, repeat) for _ in range(k)]
        cols[path] = _coord_array(vals, domain)
    for name in _LEAD:
        vals = [getattr(t, name) for t, k in zip(tasks, repeat) for _ in range(k)]
        cols[name] = pa.array(vals, pa.int64())
    return cols


def build_tables(sweep: Sweep, tasks: Sequence[Task], results: Sequence[dict[str, pa.Table]],
                 metrics: Sequence[Metric]) -> dict[str, pa.Table]:
    """The dataset's tables from the runs' reduced tables (in the tasks' order)."""
    tables: dict[str, pa.Table] = {}
    for name in ("vm", "vcpu", "host"):
        parts = [r[name] for r in results]
        body = pa.concat_tables(parts, promote_options="none") if parts else pa.table({})
        lead = _lead_columns(sweep, tasks, [p.num_rows for p in parts])
        tables[name] = pa.table({**lead, **{c: body.column(c) for c in body.column_names}})
    values = {m.text: [metric_values(m, r) for r in results] for m in metrics}
    lead = _lead_columns(sweep, tasks, [1] * len(tasks))
    tables["runs"] = pa.table({**lead, **{k: pa.array(v, pa.float64()) for k, v in values.items()}})
    tables["summary"] = _summary(sweep, tasks, values)
    return tables


def _summary(sweep: Sweep, tasks: Sequence[Task], values: dict[str, list[float]]) -> pa.Table:
    by_point: dict[int, list[int]] = {}
    for i, t in enumerate(tasks):
        by_point.setdefault(t.point, []).append(i)
    firsts, rows = [], []
    for p, idx in by_point.items():
        for metric, vals in values.items():
            n, mean, sd, low, high = t_interval(np.array([vals[i] for i in idx]))
            firsts.append(tasks[idx[0]])
            rows.append((metric, n, mean, sd, low, high))
    lead = _lead_columns(sweep, firsts, [1] * len(firsts))
    del lead["replication"], lead["seed"]
    names = ("metric", "n", "mean", "sd", "ci_low", "ci_high")
    types = (pa.string(), pa.int64(), pa.float64(), pa.float64(), pa.float64(), pa.float64())
    body = {n: pa.array([r[i] for r in rows], ty) for i, (n, ty) in enumerate(zip(names, types))}
    body["confidence"] = pa.array([CONFIDENCE] * len(rows), pa.float64())
    return pa.table({**lead, **body})


def check_destination(out: Path, force: bool) -> None:
    """Refuse ``out`` before any run: an existing folder that is not a sweep folder, or one
    without ``force``; a parent that cannot be written."""
    out = Path(out)
    if out.exists():
        if not out.is_dir() or not (out / MARKER).is_file():
            raise OutputError(f"cannot write the sweep to {out}: it exists and is not a sweep folder; "
                              "give a new folder")
        if not force:
            raise OutputError(f"cannot write the sweep to {out}: it exists (use --force to replace it)")
    parent = out.absolute().parent
    if parent.exists() and not os.access(parent, os.W_OK):
        raise OutputError(f"cannot write the sweep to {out}: {parent} is not writable")


def write_dataset(out: Path, tables: dict[str, pa.Table], info: dict[str, Any], *, force: bool = False,
                  html: Optional[str] = None) -> Path:
    """Write the folder atomically (temp sibling, then rename); return its path."""
    out = Path(out).absolute()
    check_destination(out, force)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        for name, table in tables.items():
            pq.write_table(table, tmp / f"{name}.parquet", compression="zstd", row_group_size=1 << 16)
        (tmp / MARKER).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if html is not None:
            (tmp / "report.html").write_text(html, encoding="utf-8")
        if out.exists():
            out.rename(old)
        tmp.rename(out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not out.exists():
            old.rename(out)
        raise OutputError(f"cannot write the sweep to {out}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not out.exists():
            old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return out


def plot_metric(summary: pa.Table, x: str, metric: str, paths: Sequence[str], title: str) -> str:
    """Plotly HTML: ``metric`` (mean and CI band over replications) against the path ``x``, one
    line per combination of the other swept paths."""
    import plotly.graph_objects as go

    df = summary.to_pandas()
    df = df[df["metric"] == metric]
    others = [p for p in paths if p != x]
    fig = go.Figure()
    groups = df.groupby(others, sort=False) if others else [((), df)]
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]
    for i, (key, g) in enumerate(groups):
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{p}={v}" for p, v in zip(others, key)) or metric
        color = palette[i % len(palette)]
        g = g.sort_values(x) if g[x].dtype.kind in "iuf" else g
        if g["ci_low"].notna().any():
            fig.add_trace(go.Scatter(x=list(g[x]) + list(g[x])[::-1],
                                     y=list(g["ci_high"]) + list(g["ci_low"])[::-1], fill="toself",
                                     line={"width": 0}, fillcolor=color, opacity=0.2, hoverinfo="skip",
                                     showlegend=False, name=f"{label} CI"))
        fig.add_trace(go.Scatter(x=g[x], y=g["mean"], mode="lines+markers", name=label, line={"color": color}))
    conf = f"{CONFIDENCE:.0%} t interval over replications"
    fig.update_layout(title=f"{title}: {metric} against {x} (mean, {conf})", xaxis_title=x, yaxis_title=metric,
                      template="plotly_white")
    return fig.to_html(include_plotlyjs=True, full_html=True, div_id="sweep-plot")
