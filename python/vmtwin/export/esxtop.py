"""esxtop batch-mode (PDH-CSV) export of a results folder."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from vmtwin.results import Results

__all__ = ["to_esxtop_csv"]


# esxtop batch-mode counter names for the vm table (Group Cpu) and the host table.
_ESXTOP_VM = [
    ("%USED", "% Used"),
    ("%RUN", "% Run"),
    ("%RDY", "% Ready"),
    ("%MLMTD", "% Max Limited"),
    ("%WAIT", "% Wait"),
    ("%VMWAIT", "% VmWait"),
    ("%IDLE", "% Idle"),
]
_ESXTOP_HOST = [("%PCPU_UTIL", "% Util Time"), ("%PCPU_USED", "% Processor Time")]


def _host_name(manifest: Mapping[str, Any]) -> str:
    for source in ("scenario", "params"):
        host = manifest.get(source)
        if isinstance(host, dict):
            host = host.get("host")
        if isinstance(host, dict) and isinstance(host.get("name"), str):
            return host["name"]
    return "esx01"


def _fmt(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value))


def to_esxtop_csv(
    results: Results | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    start: datetime = datetime(2000, 1, 1),
    host_name: str | None = None,
) -> Path:
    """Export host and VM CPU counters as an esxtop batch-mode (PDH-CSV) file.

    One row per sample. Columns are ``"\\\\<host>\\Physical Cpu(_Total)\\% Util Time"``,
    ``"...\\% Processor Time"`` and per VM ``"\\\\<host>\\Group Cpu(<vm_id+1>:<vm>)\\% Used"``,
    ``% Run``, ``% Ready``, ``% Max Limited``, ``% Wait``, ``% VmWait``, ``% Idle``, so tools that
    read ``esxtop -b`` output can read a simulated run.

    Parameters
    ----------
    results : Results or path-like
        The run to export.
    path : path-like
        CSV file to write.
    start : datetime, optional
        Wall-clock time of simulated time 0 (timestamps are ``start + time_s``).
    host_name : str, optional
        Host name in the counter paths; default the scenario's host name, else ``esx01``.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    res = results if isinstance(results, Results) else Results(results)
    host = host_name or _host_name(res.manifest)
    host_df = res.host
    vm_df = res.vm
    times = sorted(set(host_df["time_s"].tolist()) | set(vm_df["time_s"].tolist()))

    header = ["(PDH-CSV 4.0) (UTC)(0)"]
    series: list[dict[float, float]] = []
    h = host_df.set_index("time_s")
    for col, label in _ESXTOP_HOST:
        if col in h.columns:
            header.append(f"\\\\{host}\\Physical Cpu(_Total)\\{label}")
            series.append(h[col].to_dict())
    vms = (
        vm_df[["vm_id", "vm"]].drop_duplicates().sort_values("vm_id").itertuples(index=False)
        if len(vm_df)
        else []
    )
    for vm_id, vm in vms:
        rows = vm_df[vm_df["vm_id"] == vm_id].set_index("time_s")
        for col, label in _ESXTOP_VM:
            if col in rows.columns:
                header.append(f"\\\\{host}\\Group Cpu({int(vm_id) + 1}:{vm})\\{label}")
                series.append(rows[col].to_dict())

    out = Path(path)
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        writer.writerow(header)
        for t in times:
            stamp = (start + timedelta(seconds=float(t))).strftime("%m/%d/%Y %H:%M:%S")
            writer.writerow([stamp, *(_fmt(s.get(t, float("nan"))) for s in series)])
    return out
