"""The report's memory section: per VM its memory over the run, and the host's memory state.

For a run whose scenario has a ``memory:`` section, a sortable table follows the resource pools
(and storage): each VM's configured size and, as means over the run and at the end, granted,
consumed, active, ballooned, swapped, compressed and shared memory (MB, esxtop's names), its
mean %SWPWT and its swap traffic; then the share of the run the host spent in each memory state
and a table of state changes (when the host entered each state). A run without memory gets
nothing.
"""

from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd

from vmtwin.results import Results

__all__ = ["memory_summary", "memory_html", "MEMORY_TABLE_IDS", "STATE_NAMES"]

#: ids of the tables in the page.
MEMORY_TABLE_IDS = ("memory-vms", "memory-states")
#: ``mem_host.state`` values.
STATE_NAMES = ("high", "soft", "hard", "low")

_SIZES = ["GRANT", "CNSM", "TCHD", "MCTLSZ", "SWCUR", "ZIP", "SHRD", "SHRDSVD"]


def memory_summary(mem: pd.DataFrame) -> pd.DataFrame:
    """Per VM: MEMSZ, each size's mean and last value, mean %SWPWT, mean SWR/s and SWW/s."""
    rows = []
    for vm, g in mem.sort_values("time_s").groupby("vm", sort=False):
        row = {"vm": vm, "MEMSZ": float(g["MEMSZ"].iloc[-1])}
        for c in _SIZES:
            row[f"{c} mean"] = float(g[c].mean())
            row[f"{c} end"] = float(g[c].iloc[-1])
        for c in ("%SWPWT", "SWR/s", "SWW/s"):
            row[f"{c} mean"] = float(g[c].mean())
        rows.append(row)
    cols = ["vm", "MEMSZ", *[f"{c} {k}" for c in _SIZES for k in ("mean", "end")], "%SWPWT mean", "SWR/s mean", "SWW/s mean"]
    return pd.DataFrame(rows, columns=cols)


def state_changes(host: pd.DataFrame) -> pd.DataFrame:
    """Samples where the state differs from the previous one (the first sample included)."""
    h = host.sort_values("time_s")
    changed = h["state"].ne(h["state"].shift())
    out = h.loc[changed, ["time_s", "state", "FREE"]].copy()
    out["state"] = [STATE_NAMES[int(s)] for s in out["state"]]
    return out.reset_index(drop=True)


def _html_table(table_id: str, df: pd.DataFrame) -> str:
    heads = "".join(f"<th>{escape(str(c))}</th>" for c in df.columns)
    body = []
    for r in df.itertuples(index=False):
        cells = []
        for v in r:
            num = isinstance(v, (float, np.floating))
            text = f"{v:.1f}" if num else escape(str(v))
            key = repr(float(v)) if num else str(v)
            cells.append(f'<td data-v="{escape(key)}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table id="{table_id}" class="sortable"><thead><tr>{heads}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def memory_html(res: Results) -> list[str]:
    """The section's HTML blocks, or ``[]`` when the run has no memory tables."""
    if "mem" not in res.tables or "mem_host" not in res.tables:
        return []
    mem, host = res.table("mem"), res.table("mem_host")
    counts = host["state"].value_counts(normalize=True)
    share = ", ".join(f"{STATE_NAMES[s]} {100 * counts.get(s, 0.0):.0f}%" for s in range(4))
    return [
        "<h2>Memory</h2>",
        f'<p class="note">Host memory state over the run: {escape(share)} of the samples. Sizes in MB '
        "(esxtop's names): GRANT granted, CNSM consumed (a page shared n ways counts 1/n), TCHD active "
        "(sampled), MCTLSZ ballooned, SWCUR swapped, ZIP compressed, SHRD shared, SHRDSVD saved by "
        "sharing; means over the run and the last sample.</p>",
        "<h3>VMs</h3>",
        _html_table(MEMORY_TABLE_IDS[0], memory_summary(mem)),
        "<h3>Host memory state changes</h3>",
        _html_table(MEMORY_TABLE_IDS[1], state_changes(host)),
    ]
