"""The report's plotly figures, each built from results tables (pandas frames).

A report must stay readable from 3 VMs to thousands, so a figure never draws every VM: the
per-VM figures draw the :data:`TOP_N` VMs with the most ready time (the rest are in the page's
sortable table), and say so in their titles. Within a figure, traces take colours in legend
order from :data:`PALETTE`, which has more distinct colours than any figure has traces, so no two
traces of a figure (neighbours in the legend included) share a colour; the per-VM figures draw
the same VMs in the same order, so a VM has the same colour in each of them. Figures use SVG
traces only (no WebGL), so they render in a headless browser without a GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

__all__ = [
    "PALETTE",
    "RDY_GUIDES",
    "TOP_N",
    "host_cpu_figure",
    "pcpu_figure",
    "core_figure",
    "pool_figure",
    "top_vms",
    "vcpu_ready_figure",
    "vm_counter_figure",
    "vm_entitlement_figure",
    "vm_limit_figure",
    "compare_figure",
]

#: VMs (or vCPUs, or pools) drawn per figure; the sortable tables hold the rest.
TOP_N = 10

#: Distinct colours, in the order traces take them (20 > TOP_N: no repeats within a figure).
PALETTE: list[str] = list(dict.fromkeys(c.upper() for c in qualitative.D3 + qualitative.Plotly))

#: Per-vCPU %RDY guide lines: the vSphere admins' rule of thumb that a vCPU ready 5% of the
#: time is worth watching and 10% is a performance problem (a convention, not a VMware limit).
RDY_GUIDES: list[tuple[float, str, str]] = [
    (5.0, "5%: watch", "#8a6d00"),
    (10.0, "10%: problem", "#a00000"),
]

_TIME = "simulated time (s)"


def _layout(fig: go.Figure, title: str, height: int = 440) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 16}},
        template="plotly_white",
        height=height,
        margin={"l": 70, "r": 20, "t": 70, "b": 50},
        hovermode="x unified",
        legend={"orientation": "v", "font": {"size": 12}},
    )
    # Invisible tick marks keep the axes' first labels apart: without them the y axis's "0" and
    # the x axis's first label meet in the corner.
    fig.update_xaxes(ticks="outside", ticklen=6, tickcolor="rgba(0,0,0,0)")
    fig.update_yaxes(ticks="outside", ticklen=6, tickcolor="rgba(0,0,0,0)")
    return fig


def _note(fig: go.Figure, text: str) -> None:
    fig.add_annotation(text=text, xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                       font={"size": 14, "color": "#666"})


def top_vms(vm: pd.DataFrame, counter: str = "%RDY", n: int = TOP_N) -> list[int]:
    """The ``vm_id`` of the ``n`` VMs with the highest mean ``counter``, highest first.

    Ties go to the lower ``vm_id``, so the choice is deterministic.
    """
    if not len(vm):
        return []
    means = vm.groupby("vm_id", sort=True)[counter].mean()
    order = sorted(means.index, key=lambda i: (-float(means[i]), int(i)))
    return [int(i) for i in order[:n]]


def _of(df: pd.DataFrame, key: str, value) -> pd.DataFrame:
    return df[df[key] == value].sort_values("time_s", kind="stable")


def _shown(n_shown: int, n_all: int, what: str, by: str) -> str:
    return f"all {n_all} {what}" if n_shown >= n_all else f"top {n_shown} of {n_all} {what} by {by}"


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
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
        subplot_titles=("Used vs capacity (MHz)", "Physical CPU (%)"),
    )
    h = host.sort_values("time_s", kind="stable")
    t = h["time_s"].to_numpy()
    fig.add_trace(go.Scatter(x=t, y=h["used_mhz"].to_numpy(), name="used MHz",
                             mode="lines", fill="tozeroy", line={"color": PALETTE[0]}),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=t, y=h["capacity_mhz"].to_numpy(), name="capacity MHz",
                             mode="lines", line={"color": "#444444", "dash": "dash"}),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=t, y=h["%PCPU_UTIL"].to_numpy(), name="%PCPU_UTIL",
                             mode="lines", line={"color": PALETTE[3]}), row=2, col=1)
    if "%PCPU_USED" in h:
        fig.add_trace(go.Scatter(x=t, y=h["%PCPU_USED"].to_numpy(), name="%PCPU_USED",
                                 mode="lines", line={"color": PALETTE[1], "dash": "dot"}),
                      row=2, col=1)
    fig.update_yaxes(title_text="MHz", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="%", range=[0, 105], row=2, col=1)
    fig.update_xaxes(title_text=_TIME, row=2, col=1)
    return _layout(fig, "Host CPU", height=580)


#: pCPUs drawn in the per-pCPU figure (the busiest by mean %PCPU_UTIL; a cluster has thousands).
PCPU_ROWS = 64


def pcpu_figure(pcpu: pd.DataFrame, n: int = PCPU_ROWS) -> go.Figure:
    """Per-pCPU utilisation: a heat map of ``%PCPU_UTIL`` by pCPU and time, and each pCPU's mean.

    An even map says the scheduler spreads work over the host; stripes say some pCPUs idle while
    others are busy (placement or balancing), which the host-wide figure averages away.

    Parameters
    ----------
    pcpu : pandas.DataFrame
        The ``pcpu`` table (with a ``host`` column in a cluster run: rows are then ``host/pCPU``).
    n : int
        pCPUs drawn, busiest (highest mean ``%PCPU_UTIL``) first.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return _util_map(pcpu, "%PCPU_UTIL", "pcpu", "pCPU", "Physical CPUs", n)


def core_figure(pcpu: pd.DataFrame, threads_per_core: int = 1, n: int = PCPU_ROWS) -> go.Figure:
    """Per-core utilisation: a heat map of ``%CORE_UTIL`` (esxtop's CORE UTIL: a core is busy
    while either of its threads is) by core and time, and each core's mean.

    Parameters
    ----------
    pcpu : pandas.DataFrame
        The ``pcpu`` table; sibling threads' rows carry their core's ``%CORE_UTIL``.
    threads_per_core : int
        pCPUs per core in the table (2 on a hyperthreaded host scheduled on both threads:
        pCPUs ``2c`` and ``2c + 1`` are core ``c``; 1 otherwise, when a core is its pCPU).
    n : int
        Cores drawn, busiest first.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    df = pcpu.copy()
    if len(df):
        if "%CORE_UTIL" not in df:
            df["%CORE_UTIL"] = df["%PCPU_UTIL"]
        df["core"] = df["pcpu"].astype(int) // max(1, threads_per_core)
        df = df.drop_duplicates([c for c in ("host", "time_s", "core") if c in df.columns])
    else:
        df = pd.DataFrame(columns=["time_s", "core", "%CORE_UTIL"])
    return _util_map(df, "%CORE_UTIL", "core", "core", "Cores", n)


def _util_map(df: pd.DataFrame, column: str, key: str, noun: str, title: str, n: int) -> go.Figure:
    """A heat map of ``column`` by ``key`` (pCPU or core) and time, and each one's mean."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.8, 0.2], shared_yaxes=True, horizontal_spacing=0.02,
                        subplot_titles=(f"{column} over time", "mean"))
    n_all = 0
    if len(df):
        df = df.copy()
        df["label"] = (df["host"].astype(str) + "/" if "host" in df else "") + df[key].astype(int).astype(str)
        means = df.groupby("label", sort=False)[column].mean()
        n_all = len(means)
        order = sorted(means.index, key=lambda k: (-float(means[k]), list(means.index).index(k)))[:n]
        grid = df[df["label"].isin(order)].pivot_table(index="label", columns="time_s", values=column,
                                                        aggfunc="mean", sort=True).reindex(order)
        fig.add_trace(go.Heatmap(z=grid.to_numpy(), x=grid.columns.to_numpy(), y=[f"{noun} {k}" for k in order],
                                 zmin=0, zmax=100, colorscale="Blues", colorbar={"title": "%", "x": 1.02},
                                 hovertemplate="%{y} at %{x} s: %{z:.1f}%<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Bar(x=[float(means[k]) for k in order], y=[f"{noun} {k}" for k in order], orientation="h",
                             marker_color=PALETTE[0], showlegend=False,
                             hovertemplate="%{y}: mean %{x:.1f}%<extra></extra>"), row=1, col=2)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_xaxes(title_text=_TIME, row=1, col=1)
    fig.update_xaxes(title_text="%", range=[0, 105], row=1, col=2)
    fig = _layout(fig, f"{title}: {_shown(min(n, n_all), n_all, noun + 's', 'mean ' + column)}",
                  height=max(360, 120 + 14 * min(n, max(n_all, 1))))
    fig.update_layout(hovermode="closest")
    return fig


def vm_counter_figure(vm: pd.DataFrame, counter: str, title: str, ids: list[int] | None = None,
                      by: str = "%RDY") -> go.Figure:
    """One line per shown VM of an esxtop counter over time.

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.
    counter : str
        Column name, e.g. ``"%USED"`` or ``"%RDY"``.
    title : str
        Figure title; which VMs are shown is appended.
    ids : list of int, optional
        The ``vm_id`` to draw, in legend order; default :func:`top_vms` by ``by``.
    by : str
        The counter the shown VMs were chosen by (named in the title); default ``%RDY``.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    ids = top_vms(vm, by) if ids is None else ids
    fig = go.Figure()
    for k, i in enumerate(ids):
        g = _of(vm, "vm_id", i)
        fig.add_trace(go.Scatter(x=g["time_s"].to_numpy(), y=g[counter].to_numpy(), name=str(g["vm"].iloc[0]),
                                 mode="lines", line={"color": PALETTE[k]}))
    if not ids:
        _note(fig, "No VM was powered on.")
    fig.update_yaxes(title_text=f"{counter} (sum over vCPUs)", rangemode="tozero")
    fig.update_xaxes(title_text=_TIME)
    n_all = int(vm["vm_id"].nunique()) if len(vm) else 0
    return _layout(fig, f"{title}: {_shown(len(ids), n_all, 'VMs', 'mean ' + by)}")


def vcpu_ready_figure(vcpu: pd.DataFrame, n: int = TOP_N) -> go.Figure:
    """Per-vCPU %RDY: the worst vCPUs over time against the 5% and 10% guide lines, and how
    many of all vCPUs fall in each band.

    Parameters
    ----------
    vcpu : pandas.DataFrame
        The ``vcpu`` table.
    n : int
        vCPUs drawn (highest mean %RDY first).

    Returns
    -------
    plotly.graph_objects.Figure
        Row 1: ``%RDY`` over time of the ``n`` vCPUs with the highest mean, with a horizontal
        line at each of :data:`RDY_GUIDES`. Row 2: the number of vCPUs whose mean ``%RDY`` is
        below 5%, from 5% to 10%, and 10% or more.
    """
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.2, row_heights=[0.7, 0.3],
                        subplot_titles=("%RDY per vCPU over time", "vCPUs by mean %RDY"))
    means = pd.Series(dtype=float)
    if len(vcpu):
        means = vcpu.groupby(["vm_id", "vcpu"], sort=True)["%RDY"].mean()
        order = sorted(means.index, key=lambda k: (-float(means[k]), int(k[0]), int(k[1])))[:n]
        for c, (vm_id, v) in enumerate(order):
            g = vcpu[(vcpu["vm_id"] == vm_id) & (vcpu["vcpu"] == v)].sort_values("time_s", kind="stable")
            fig.add_trace(go.Scatter(x=g["time_s"].to_numpy(), y=g["%RDY"].to_numpy(),
                                     name=f"{g['vm'].iloc[0]} vCPU {int(v)}", mode="lines",
                                     line={"color": PALETTE[c]}), row=1, col=1)
    else:
        order = []
    for level, label, color in RDY_GUIDES:
        fig.add_hline(y=level, line={"color": color, "dash": "dash", "width": 1.5}, row=1, col=1,
                      annotation_text=label, annotation_position="top left",
                      annotation_font={"color": color, "size": 11})
    top = max([float(means.max()) if len(means) else 0.0, RDY_GUIDES[-1][0] * 1.3])
    fig.update_yaxes(title_text="%RDY (one vCPU)", range=[0, top * 1.05], row=1, col=1)
    fig.update_xaxes(title_text=_TIME, row=1, col=1)
    values = means.to_numpy(dtype=float)
    lo, hi = RDY_GUIDES[0][0], RDY_GUIDES[1][0]
    bands = [f"below {lo:g}%", f"{lo:g}% to {hi:g}%", f"{hi:g}% or more"]
    counts = [int((values < lo).sum()), int(((values >= lo) & (values < hi)).sum()), int((values >= hi).sum())]
    fig.add_trace(go.Bar(y=bands, x=counts, orientation="h", name="vCPUs", showlegend=False,
                         marker_color=["#4c9a2a", RDY_GUIDES[0][2], RDY_GUIDES[1][2]],
                         text=[str(c) for c in counts], textposition="auto"), row=2, col=1)
    fig.update_xaxes(title_text="vCPUs", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(autorange="reversed", row=2, col=1)
    n_all = len(means)
    fig = _layout(fig, f"Ready time per vCPU: {_shown(len(order), n_all, 'vCPUs', 'mean %RDY')}", height=640)
    fig.update_layout(hovermode="closest")
    return fig


def _limited_ids(vm: pd.DataFrame, n: int) -> tuple[list[int], int]:
    if not len(vm):
        return [], 0
    per = vm.groupby("vm_id", sort=True).agg(limited=("limit_mhz", lambda s: bool(s.notna().any())),
                                             mlmtd=("%MLMTD", "mean"))
    per = per[per["limited"] | (per["mlmtd"] > 0)]
    order = sorted(per.index, key=lambda i: (-float(per.loc[i, "mlmtd"]), int(i)))
    return [int(i) for i in order[:n]], len(per)


def vm_limit_figure(vm: pd.DataFrame, n: int = TOP_N) -> go.Figure:
    """%MLMTD of limited VMs, and their used MHz against their limit (dashed).

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.
    n : int
        Limited VMs drawn, highest mean %MLMTD first.

    Returns
    -------
    plotly.graph_objects.Figure
        Two rows sharing the time axis. A VM is limited when it has a limit at some sample or a
        non-zero %MLMTD. With no such VM the figure carries a note saying so.
    """
    ids, n_all = _limited_ids(vm, n)
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
        subplot_titles=("%MLMTD (ready time held back by the limit)", "Used MHz (solid) vs limit (dashed)"),
    )
    for k, i in enumerate(ids):
        g = _of(vm, "vm_id", i)
        name, color = str(g["vm"].iloc[0]), PALETTE[k]
        t = g["time_s"].to_numpy()
        fig.add_trace(go.Scatter(x=t, y=g["%MLMTD"].to_numpy(), name=name, legendgroup=name,
                                 mode="lines", line={"color": color}), row=1, col=1)
        fig.add_trace(go.Scatter(x=t, y=g["used_mhz"].to_numpy(), name=f"{name} used MHz", legendgroup=name,
                                 showlegend=False, mode="lines", line={"color": color}), row=2, col=1)
        fig.add_trace(go.Scatter(x=t, y=g["limit_mhz"].to_numpy(), name=f"{name} limit MHz", legendgroup=name,
                                 showlegend=False, mode="lines", line_shape="hv",
                                 line={"color": color, "dash": "dash", "width": 2}), row=2, col=1)
    if not ids:
        _note(fig, "No VM has a CPU limit: %MLMTD is zero throughout.")
    fig.update_yaxes(title_text="%", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="MHz", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text=_TIME, row=2, col=1)
    title = "CPU limits" + (f": {_shown(len(ids), n_all, 'limited VMs', 'mean %MLMTD')}" if ids else "")
    return _layout(fig, title, height=580)


def core_mhz(host: pd.DataFrame, scenario: dict | None = None) -> float:
    """The core speed (MHz): the scenario's ``core_mhz`` when all its hosts share one, else the
    median of ``capacity_mhz / pcpus`` (NaN without host rows). The fallback is half the clock
    on a hyperthreaded host, whose capacity counts cores and whose pCPUs are threads.
    """
    from vmtwin.units import parse_frequency

    specs = [(scenario or {}).get("host")] + [h for c in (scenario or {}).get("clusters") or [] for h in c.get("hosts") or []]
    speeds = {parse_frequency(h["core_mhz"]) for h in specs if isinstance(h, dict) and h.get("core_mhz") is not None}
    if len(speeds) == 1:
        return float(speeds.pop())
    if len(host):
        caps = host["capacity_mhz"].to_numpy(dtype=float)
        pcpus = host["pcpus"].to_numpy(dtype=float)
        ok = pcpus > 0
        if ok.any():
            return float(np.median(caps[ok] / pcpus[ok]))
    return math.nan


def vm_entitlement_figure(vm: pd.DataFrame, host: pd.DataFrame, ids: list[int] | None = None,
                          scenario: dict | None = None) -> go.Figure:
    """Horizontal bars per shown VM: mean %USED against mean entitlement and mean demand.

    Entitlement and demand (MHz) are converted to esxtop's scale, percent of one physical
    core: ``100 * MHz / core_mhz`` (:func:`core_mhz`).

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.
    host : pandas.DataFrame
        The ``host`` table (for the core speed).
    ids : list of int, optional
        The ``vm_id`` to draw, top to bottom; default :func:`top_vms` by ``%RDY``.
    scenario : dict, optional
        The run's normalized scenario (the manifest's ``scenario``), for the core speed.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    ids = top_vms(vm) if ids is None else ids
    core = core_mhz(host, scenario)
    names, used, ent, dem = [], [], [], []
    for i in ids:
        g = vm[vm["vm_id"] == i]
        names.append(str(g["vm"].iloc[0]))
        used.append(float(g["%USED"].mean()))
        ent.append(float(g["entitlement_mhz"].mean()) / core * 100.0)
        dem.append(float(g["demand_mhz"].mean()) / core * 100.0)
    fig = go.Figure()
    for k, (label, values) in enumerate([("mean %USED", used), ("mean entitlement", ent), ("mean demand", dem)]):
        fig.add_trace(go.Bar(y=names, x=values, name=label, orientation="h", marker_color=PALETTE[k]))
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed", automargin=True)
    core_text = f"{core:.0f} MHz" if math.isfinite(core) else "?"
    fig.update_xaxes(title_text=f"% of one core ({core_text})", rangemode="tozero")
    if not ids:
        _note(fig, "No VM was powered on.")
    n_all = int(vm["vm_id"].nunique()) if len(vm) else 0
    fig = _layout(fig, f"Mean %USED vs entitlement: {_shown(len(ids), n_all, 'VMs', 'mean %RDY')}",
                  height=max(440, 120 + 48 * len(ids)))
    fig.update_layout(hovermode="closest")
    return fig


def pool_figure(usage: pd.DataFrame, order: list[str], limits: dict[str, float] | None = None,
                n: int = TOP_N) -> go.Figure:
    """Usage (against the pool's limit, dashed) and entitlement over time per resource pool.

    Parameters
    ----------
    usage : pandas.DataFrame
        :func:`vmtwin.report.pools.pool_usage`: ``time_s``, ``pool``, ``used_mhz``,
        ``entitlement_mhz``.
    order : list of str
        The scenario's pools (not the root), in legend order (the caller puts the busiest
        first); at most ``n`` drawn.
    limits : dict of str to float, optional
        CPU limit (MHz) of the pools that have one, drawn as a dashed line in the pool's colour.
    n : int
        Pools drawn.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    shown = order[:n]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("Usage (MHz, sum over the pool's VMs; dashed: the pool's limit)",
                                        "Entitlement (MHz, sum over the pool's VMs)"))
    for k, pool in enumerate(shown):
        g = usage[usage["pool"] == pool].sort_values("time_s", kind="stable")
        t = g["time_s"].to_numpy()
        fig.add_trace(go.Scatter(x=t, y=g["used_mhz"].to_numpy(), name=pool, legendgroup=pool, mode="lines",
                                 line={"color": PALETTE[k]}), row=1, col=1)
        limit = (limits or {}).get(pool)
        if limit is not None and len(t):
            fig.add_trace(go.Scatter(x=[t[0], t[-1]], y=[limit, limit], name=f"{pool} limit", legendgroup=pool,
                                     showlegend=False, mode="lines",
                                     line={"color": PALETTE[k], "dash": "dash", "width": 1.5}), row=1, col=1)
        fig.add_trace(go.Scatter(x=t, y=g["entitlement_mhz"].to_numpy(), name=f"{pool} entitlement",
                                 legendgroup=pool, showlegend=False, mode="lines",
                                 line={"color": PALETTE[k]}), row=2, col=1)
    if not order:
        _note(fig, "No resource pools: every VM is in the host's root pool.")
    fig.update_yaxes(title_text="MHz", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="MHz", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text=_TIME, row=2, col=1)
    return _layout(fig, f"Resource pools: {_shown(len(shown), len(order), 'pools', 'mean usage')}", height=580)


def compare_figure(diff: pd.DataFrame, label_a: str, label_b: str, n: int = TOP_N) -> go.Figure:
    """Mean %RDY in run A and run B of the VMs whose %RDY changed most.

    Parameters
    ----------
    diff : pandas.DataFrame
        :func:`vmtwin.report.compare.compare_runs`.
    label_a, label_b : str
        Names of the runs in the legend.
    n : int
        VMs drawn, largest ``|B - A|`` first (VMs in one run only are left out).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    both = diff[diff["mean %RDY diff"].notna()]
    order = sorted(range(len(both)), key=lambda k: (-abs(float(both["mean %RDY diff"].iloc[k])), k))[:n]
    rows = both.iloc[order]
    fig = go.Figure()
    for k, (label, col) in enumerate([(f"A: {label_a}", "mean %RDY a"), (f"B: {label_b}", "mean %RDY b")]):
        fig.add_trace(go.Bar(y=rows["vm"].tolist(), x=rows[col].to_numpy(), name=label, orientation="h",
                             marker_color=PALETTE[k]))
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.2})
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_xaxes(title_text="mean %RDY (sum over vCPUs)", rangemode="tozero")
    if not len(rows):
        _note(fig, "The runs have no VM in common.")
    fig = _layout(fig, f"%RDY, A vs B: {_shown(len(rows), len(both), 'common VMs', 'largest change')}",
                  height=max(440, 160 + 40 * len(rows)))
    fig.update_layout(hovermode="closest")
    return fig
