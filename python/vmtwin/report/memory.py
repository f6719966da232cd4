"""The report's memory section: per VM its memory over the run, and the host's memory state.

For a run whose scenario has a ``memory:`` section, a sortable table follows the resource pools
(and storage): each VM's configured size and, as means over the run and at the end, granted,
consumed, active, ballooned, swapped, compressed and shared memory (MB, esxtop's names), its
mean %SWPWT and its swap traffic; then the share of the run the host spent in each memory state,
a plot of the state over simulated time (a step plot, the levels high, soft, hard, low) with the
host's free memory beside it, and a table of state changes (when the host entered each state).
A run without memory gets nothing.
"""

from __future__ import annotations

from html import escape
from typing import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vmtwin.results import Results

__all__ = ["memory_summary", "memory_html", "memory_state_figure", "MEMORY_TABLE_IDS", "MEMORY_FIGURE_ID",
           "STATE_NAMES"]

#: ids of the tables in the page.
MEMORY_TABLE_IDS = ("memory-vms", "memory-states")
#: id of the host memory state figure.
MEMORY_FIGURE_ID = "fig-memory-state"
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


def memory_state_figure(host: pd.DataFrame) -> go.Figure:
    """The host memory state over simulated time as a step plot (each sample's state holds until
    the next sample), with free and total machine memory (MB) below it on the same time axis.

    Parameters
    ----------
    host : pandas.DataFrame
        The ``mem_host`` table (one host).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    from vmtwin.report.figures import PALETTE, _layout

    h = host.sort_values("time_s", kind="stable")
    t = h["time_s"].to_numpy()
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("Memory state", "Machine memory (MB)"))
    fig.add_trace(go.Scatter(x=t, y=h["state"].to_numpy(), name="state", mode="lines", line_shape="hv",
                             line={"color": PALETTE[3], "width": 2},
                             text=[STATE_NAMES[int(v)] for v in h["state"]], hovertemplate="%{text}"),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=t, y=h["FREE"].to_numpy(), name="FREE MB", mode="lines", fill="tozeroy",
                             line={"color": PALETTE[0]}), row=2, col=1)
    fig.add_trace(go.Scatter(x=t, y=h["PMEM"].to_numpy(), name="PMEM MB (total)", mode="lines",
                             line={"color": "#444444", "dash": "dash"}), row=2, col=1)
    fig.update_yaxes(tickvals=list(range(len(STATE_NAMES))), ticktext=list(STATE_NAMES),
                     range=[-0.3, len(STATE_NAMES) - 0.7], row=1, col=1)
    fig.update_yaxes(title_text="MB", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="simulated time (s)", row=2, col=1)
    return _layout(fig, "Host memory state", height=520)


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


def memory_html(res: Results, figure_html: Callable[[go.Figure, str], str] | None = None) -> list[str]:
    """The section's HTML blocks, or ``[]`` when the run has no memory tables.

    ``figure_html(fig, fig_id)`` renders the state figure into the section (the page's own
    figure renderer); without it the section has the tables only.
    """
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
        *([] if figure_html is None else
          ["<h3>Host memory state over time</h3>", figure_html(memory_state_figure(host), MEMORY_FIGURE_ID)]),
        "<h3>Host memory state changes</h3>",
        _html_table(MEMORY_TABLE_IDS[1], state_changes(host)),
    ]
