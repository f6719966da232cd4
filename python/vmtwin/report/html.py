"""Assemble the report page: header, run facts, per-VM summary table and the figures.

The page is one file: CSS and plotly.js are inlined (plotly.js once, with the first figure), so
it opens offline. Output is deterministic: no clock is read, plotly div ids are fixed, numbers
are formatted with fixed precision, and the only run-specific values come from the results.
"""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from vmtwin.report import figures
from vmtwin.report.summary import vm_summary
from vmtwin.results import Results

__all__ = ["FIGURE_IDS", "render_report"]

#: Ids of the ``<div class="figure">`` blocks, in page order.
FIGURE_IDS = ["fig-host-cpu", "fig-vm-used", "fig-vm-ready", "fig-vm-limits", "fig-vm-entitlement"]

_CSS = """
:root { --fg: #1d2733; --muted: #5b6b7c; --line: #dde3ea; --accent: #1f77b4; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: #f6f8fa; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; }
.subtitle { color: var(--muted); margin: 0 0 16px; }
.facts { display: flex; flex-wrap: wrap; gap: 8px 28px; margin: 0; padding: 12px 16px;
         background: #fff; border: 1px solid var(--line); border-radius: 6px; }
.facts div { display: flex; gap: 6px; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; font-weight: 600; }
table { border-collapse: collapse; width: 100%; background: #fff;
        border: 1px solid var(--line); border-radius: 6px; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: right;
         white-space: nowrap; font-variant-numeric: tabular-nums; }
th { background: #eef2f6; font-weight: 600; }
th:first-child, td:first-child { text-align: left; }
tr:last-child td { border-bottom: none; }
.figure { background: #fff; border: 1px solid var(--line); border-radius: 6px;
          margin: 16px 0; padding: 6px; }
.footer { color: var(--muted); font-size: 12px; margin-top: 24px; }
""".strip()


def _num(value: Any, digits: int = 1) -> str:
    """Format a number with fixed precision; NaN/None as an en dash."""
    if value is None:
        return "–"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return escape(str(value))
    if math.isnan(x):
        return "–"
    if x == int(x) and digits == 0:
        return f"{int(x):d}"
    return f"{x:.{digits}f}"


def _facts(manifest: dict[str, Any], host: pd.DataFrame, nvms: int) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    if len(host):
        pcpus = int(host["pcpus"].iloc[-1])
        cap = float(host["capacity_mhz"].iloc[-1])
        core = f" × {cap / pcpus:.0f} MHz" if pcpus else ""
        facts.append(("host", f"{pcpus} pCPUs{core}"))
    facts.append(("VMs", str(nvms)))
    for key, label, fmt in [
        ("seed", "seed", lambda v: str(v)),
        ("duration_s", "duration", lambda v: f"{float(v):g} s"),
        ("sample_interval_s", "sample interval", lambda v: f"{float(v):g} s"),
        ("event_count", "events", lambda v: f"{int(v):,}"),
        ("wall_time_s", "wall time", lambda v: f"{float(v):.2f} s"),
        ("vmtwin_version", "vmtwin", lambda v: str(v)),
    ]:
        if manifest.get(key) is not None:
            try:
                facts.append((label, fmt(manifest[key])))
            except (TypeError, ValueError):
                facts.append((label, str(manifest[key])))
    return facts


def _summary_table(summary: pd.DataFrame) -> str:
    head = (
        "<tr><th>VM</th><th>vCPUs</th><th>shares</th><th>reservation (MHz)</th>"
        "<th>limit (MHz)</th><th>mean %USED</th><th>mean %RDY</th><th>mean %MLMTD</th>"
        "<th>p95 %RDY</th><th>mean entitlement (MHz)</th></tr>"
    )
    rows = []
    for r in summary.itertuples(index=False):
        values = dict(zip(summary.columns, r))
        limit = values["limit_mhz"]
        cells = [
            escape(str(values["vm"])),
            _num(values["vcpus"], 0),
            _num(values["shares"], 0),
            _num(values["reservation_mhz"], 0),
            "unlimited" if math.isnan(limit) else _num(limit, 0),
            _num(values["mean %USED"]),
            _num(values["mean %RDY"]),
            _num(values["mean %MLMTD"]),
            _num(values["p95 %RDY"]),
            _num(values["mean entitlement_mhz"], 0),
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f'<table id="vm-summary"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _figure_html(fig: go.Figure, fig_id: str, include_plotlyjs: bool) -> str:
    div = fig.to_html(
        full_html=False,
        include_plotlyjs=include_plotlyjs,
        div_id=f"plot-{fig_id.removeprefix('fig-')}",
        config={"displaylogo": False, "responsive": True},
        validate=True,
    )
    return f'<div class="figure" id="{fig_id}">\n{div}\n</div>'


def render_report(
    results_dir: str | os.PathLike[str] | Results,
    out_path: str | os.PathLike[str] | None = None,
) -> Path:
    """Write the HTML report of a run.

    Parameters
    ----------
    results_dir : path-like or Results
        A results folder (see :func:`vmtwin.results.write_results`).
    out_path : path-like, optional
        Where to write; default ``<results_dir>/report.html``. The file is written to a
        temporary name next to it and renamed into place.

    Returns
    -------
    pathlib.Path
        The report file.

    Raises
    ------
    ValueError
        ``results_dir`` is not a results folder.

    Notes
    -----
    The page holds a title with the scenario name, the run's facts, a per-VM summary table
    (settings of the last sample; mean %USED, %RDY, %MLMTD; p95 %RDY) and five figures, each in
    a ``<div class="figure" id=...>`` with the ids of :data:`FIGURE_IDS`: host CPU, per-VM
    %USED, per-VM %RDY, limits (%MLMTD and used MHz against the limit) and mean %USED against
    entitlement. A ``<div id="report-ok">`` closes the page.
    """
    res = results_dir if isinstance(results_dir, Results) else Results(results_dir)
    manifest = res.manifest
    host = res.host if "host" in res.tables else pd.DataFrame(
        columns=["time_s", "pcpus", "capacity_mhz", "used_mhz", "%PCPU_UTIL", "%PCPU_USED"])
    vm = res.vm if "vm" in res.tables else pd.DataFrame(
        columns=["time_s", "vm", "vm_id", "vcpus", "%USED", "%RDY", "%MLMTD", "used_mhz",
                 "entitlement_mhz", "demand_mhz", "shares", "reservation_mhz", "limit_mhz"])
    summary = vm_summary(vm)
    name = str(manifest.get("scenario_name") or res.path.name)

    figs = [
        figures.host_cpu_figure(host),
        figures.vm_counter_figure(vm, "%USED", "%USED per VM"),
        figures.vm_counter_figure(vm, "%RDY", "%RDY per VM"),
        figures.vm_limit_figure(vm),
        figures.vm_entitlement_figure(vm, host),
    ]
    blocks = [
        _figure_html(fig, fig_id, include_plotlyjs=(i == 0))
        for i, (fig, fig_id) in enumerate(zip(figs, FIGURE_IDS))
    ]
    facts = "".join(
        f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>"
        for k, v in _facts(manifest, host, len(summary))
    )
    footer = f"vmtwin {escape(str(manifest.get('vmtwin_version', '')))} · scenario {escape(name)}"
    page = "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>vmtwin report: {escape(name)}</title>",
            f"<style>\n{_CSS}\n</style>",
            "</head>",
            "<body>",
            "<main>",
            f"<h1>vmtwin report: {escape(name)}</h1>",
            '<p class="subtitle">CPU resource management, esxtop counters '
            "(VM percentages are sums over the VM's vCPUs).</p>",
            f'<dl class="facts">{facts}</dl>',
            "<h2>Virtual machines</h2>",
            _summary_table(summary),
            "<h2>Figures</h2>",
            *blocks,
            f'<div id="report-ok" class="footer">{footer}</div>',
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
    )

    out = Path(out_path) if out_path is not None else res.path / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
