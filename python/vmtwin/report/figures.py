"""The report's plotly figures, each built from results tables (pandas frames).

Every VM keeps one colour across all figures (by ``vm_id``). Figures use SVG traces only
(no WebGL), so they render in a headless browser without a GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

__all__ = [
    "host_cpu_figure",
    "vm_counter_figure",
    "vm_limit_figure",
    "vm_entitlement_figure",
    "vm_colors",
]

_PALETTE = qualitative.Plotly + qualitative.Dark24 + qualitative.Light24
_TIME = "simulated time (s)"


def vm_colors(vm: pd.DataFrame) -> dict[str, str]:
    """Map each VM name to a colour, stable by ``vm_id``.

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.

    Returns
    -------
    dict of str to str
    """
    if not len(vm):
        return {}
    ids = vm[["vm_id", "vm"]].drop_duplicates().sort_values("vm_id")
    return {
        name: _PALETTE[int(i) % len(_PALETTE)] for i, name in zip(ids["vm_id"], ids["vm"])
    }


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left"},
        template="plotly_white",
        height=height,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        hovermode="x unified",
        legend={"orientation": "v"},
    )
    return fig


def _per_vm(vm: pd.DataFrame):
    """Yield ``(name, frame sorted by time)`` per VM in ``vm_id`` order."""
    if not len(vm):
        return
    for _, g in vm.sort_values(["vm_id", "time_s"], kind="stable").groupby("vm_id", sort=True):
        yield str(g["vm"].iloc[0]), g


def host_cpu_figure(host: pd.DataFrame) -> go.Figure:
    """Host CPU over time: used MHz against capacity, and %PCPU_UTIL / %PCPU_USED.

    Parameters
    ----------
    host : pandas.DataFrame
        The ``host`` table.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
        subplot_titles=("Used vs capacity (MHz)", "Physical CPU (%)"),
    )
    h = host.sort_values("time_s", kind="stable")
    t = h["time_s"].to_numpy()
    fig.add_trace(go.Scatter(x=t, y=h["used_mhz"].to_numpy(), name="used MHz",
                             mode="lines", fill="tozeroy", line={"color": "#1f77b4"}),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=t, y=h["capacity_mhz"].to_numpy(), name="capacity MHz",
                             mode="lines", line={"color": "#444", "dash": "dash"}),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=t, y=h["%PCPU_UTIL"].to_numpy(), name="%PCPU_UTIL",
                             mode="lines", line={"color": "#d62728"}), row=2, col=1)
    if "%PCPU_USED" in h:
        fig.add_trace(go.Scatter(x=t, y=h["%PCPU_USED"].to_numpy(), name="%PCPU_USED",
                                 mode="lines", line={"color": "#ff7f0e", "dash": "dot"}),
                      row=2, col=1)
    fig.update_yaxes(title_text="MHz", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="%", range=[0, 105], row=2, col=1)
    fig.update_xaxes(title_text=_TIME, row=2, col=1)
    return _layout(fig, "Host CPU", height=560)


def vm_counter_figure(vm: pd.DataFrame, counter: str, title: str) -> go.Figure:
    """One line per VM of an esxtop counter over time.

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.
    counter : str
        Column name, e.g. ``"%USED"`` or ``"%RDY"``.
    title : str
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    colors = vm_colors(vm)
    fig = go.Figure()
    for name, g in _per_vm(vm):
        fig.add_trace(go.Scatter(x=g["time_s"].to_numpy(), y=g[counter].to_numpy(), name=name,
                                 mode="lines", line={"color": colors[name]}))
    fig.update_yaxes(title_text=f"{counter} (sum over vCPUs)", rangemode="tozero")
    fig.update_xaxes(title_text=_TIME)
    return _layout(fig, title)


def _limited(g: pd.DataFrame) -> bool:
    return bool(g["limit_mhz"].notna().any() or (g["%MLMTD"] > 0).any())


def vm_limit_figure(vm: pd.DataFrame) -> go.Figure:
    """%MLMTD of limited VMs, and their used MHz against their limit (dashed).

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.

    Returns
    -------
    plotly.graph_objects.Figure
        Two rows sharing the time axis. A VM appears when it has a limit at some sample or a
        non-zero %MLMTD. With no such VM the figure carries a note saying so.
    """
    colors = vm_colors(vm)
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
        subplot_titles=("%MLMTD (ready time held back by the limit)", "Used MHz vs limit"),
    )
    any_limited = False
    for name, g in _per_vm(vm):
        if not _limited(g):
            continue
        any_limited = True
        t = g["time_s"].to_numpy()
        color = colors[name]
        fig.add_trace(go.Scatter(x=t, y=g["%MLMTD"].to_numpy(), name=f"{name} %MLMTD",
                                 legendgroup=name, mode="lines", line={"color": color}),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=t, y=g["used_mhz"].to_numpy(), name=f"{name} used MHz",
                                 legendgroup=name, mode="lines", line={"color": color}),
                      row=2, col=1)
        fig.add_trace(go.Scatter(x=t, y=g["limit_mhz"].to_numpy(), name=f"{name} limit MHz",
                                 legendgroup=name, mode="lines", line_shape="hv",
                                 line={"color": color, "dash": "dash", "width": 2}),
                      row=2, col=1)
    if not any_limited:
        fig.add_annotation(text="No VM has a CPU limit: %MLMTD is zero throughout.",
                           xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                           font={"size": 14, "color": "#666"})
    fig.update_yaxes(title_text="%", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="MHz", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text=_TIME, row=2, col=1)
    return _layout(fig, "CPU limits", height=560)


def vm_entitlement_figure(vm: pd.DataFrame, host: pd.DataFrame) -> go.Figure:
    """Bars per VM: mean %USED against mean entitlement and mean demand.

    Entitlement and demand (MHz) are converted to esxtop's scale, percent of one physical
    core: ``100 * MHz / core_mhz`` with ``core_mhz = capacity_mhz / pcpus``.

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.
    host : pandas.DataFrame
        The ``host`` table (for the core speed).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    core_mhz = math.nan
    if len(host):
        caps = host["capacity_mhz"].to_numpy(dtype=float)
        pcpus = host["pcpus"].to_numpy(dtype=float)
        ok = pcpus > 0
        if ok.any():
            core_mhz = float(np.median(caps[ok] / pcpus[ok]))
    names, used, ent, dem = [], [], [], []
    for name, g in _per_vm(vm):
        names.append(name)
        used.append(float(g["%USED"].mean()))
        ent.append(float(g["entitlement_mhz"].mean()) / core_mhz * 100.0)
        dem.append(float(g["demand_mhz"].mean()) / core_mhz * 100.0)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=used, name="mean %USED", marker_color="#1f77b4"))
    fig.add_trace(go.Bar(x=names, y=ent, name="mean entitlement", marker_color="#2ca02c"))
    fig.add_trace(go.Bar(x=names, y=dem, name="mean demand", marker_color="#bbbbbb"))
    fig.update_layout(barmode="group")
    core = f"{core_mhz:.0f} MHz" if math.isfinite(core_mhz) else "?"
    fig.update_yaxes(title_text=f"% of one core ({core})", rangemode="tozero")
    fig = _layout(fig, "Mean %USED vs entitlement per VM")
    fig.update_layout(hovermode="closest")
    return fig
