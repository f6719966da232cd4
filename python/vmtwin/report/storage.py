"""The report's storage section: latency and throughput per VM disk and per datastore.

For a run whose scenario has storage, two sortable tables follow the resource pools: each VM
disk and each datastore (LUN) with its means over the run of esxtop's throughput columns
(``CMDS/s``, ``MBREAD/s``, ``MBWRTN/s``) and latencies (``GAVG/cmd``, ``KAVG/cmd``, ``DAVG/cmd``,
``QAVG/cmd``), the latencies weighted by commands (so an idle interval does not pull a mean down),
and the 95th percentile of GAVG over the intervals with commands. A run without storage gets
nothing.
"""

from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd

from vmtwin.results import Results

__all__ = ["storage_summary", "storage_html", "STORAGE_TABLE_IDS"]

#: ids of the two tables in the page.
STORAGE_TABLE_IDS = ("storage-disks", "storage-luns")

_RATES = ["CMDS/s", "MBREAD/s", "MBWRTN/s"]
_LATENCIES = ["GAVG/cmd", "KAVG/cmd", "DAVG/cmd", "QAVG/cmd"]


def storage_summary(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ``keys`` group: mean rates, command-weighted mean latencies (ms), p95 of GAVG."""
    rows = []
    for key, g in df.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        w = g["CMDS/s"].to_numpy(dtype=float)
        row = dict(zip(keys, key))
        for c in _RATES:
            row[c] = float(g[c].mean())
        for c in _LATENCIES:
            row[c] = float(np.average(g[c], weights=w)) if w.sum() > 0 else float("nan")
        busy = g.loc[w > 0, "GAVG/cmd"]
        row["p95 GAVG/cmd"] = float(np.percentile(busy, 95)) if len(busy) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, *_RATES, *_LATENCIES, "p95 GAVG/cmd"])


def _fmt(x, digits: int) -> str:
    return "" if isinstance(x, float) and np.isnan(x) else (f"{x:.{digits}f}" if isinstance(x, float) else escape(str(x)))


def _html_table(table_id: str, df: pd.DataFrame) -> str:
    heads = "".join(f"<th>{escape(c)}</th>" for c in df.columns)
    body = []
    for r in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, r):
            digits = 1 if c in ("CMDS/s",) else 2 if c.startswith("MB") else 3
            num = isinstance(v, float)
            key = ("" if np.isnan(v) else repr(v)) if num else str(v)
            cells.append(f'<td data-v="{escape(key)}">{_fmt(v, digits)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table id="{table_id}" class="sortable"><thead><tr>{heads}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def storage_html(res: Results) -> list[str]:
    """The section's HTML blocks, or ``[]`` when the run has no storage tables."""
    if "disk" not in res.tables or "lun" not in res.tables:
        return []
    disk = storage_summary(res.table("disk"), ["vm", "disk", "lun"])
    lun = storage_summary(res.table("lun"), ["lun"])
    return [
        "<h2>Storage</h2>",
        '<p class="note">Means over the run; latencies in ms per command, weighted by commands; '
        "GAVG = KAVG + DAVG (guest = kernel + device), QAVG is the kernel-queue part of KAVG.</p>",
        "<h3>VM disks</h3>",
        _html_table(STORAGE_TABLE_IDS[0], disk),
        "<h3>Datastores (LUNs)</h3>",
        _html_table(STORAGE_TABLE_IDS[1], lun),
    ]
