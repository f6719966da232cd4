"""Assemble the report page: header, run facts, per-VM table, resource pools and the figures.

The page is one file: CSS and plotly.js are inlined (plotly.js once, with the first figure), so
it opens offline. Output is deterministic: no clock is read, plotly div ids are fixed, numbers
are formatted with fixed precision, and the only run-specific values come from the results.

At hundreds or thousands of VMs the figures draw the top VMs by ready time (see
:mod:`vmtwin.report.figures`); every VM is in the per-VM table, which sorts on a click on any
column header (a few lines of inline script, no library) and scrolls inside its box.
"""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from vmtwin.export.atomic import atomic_output
from vmtwin.report import figures
from vmtwin.report.compare import COMPARED, compare_hosts, compare_runs
from vmtwin.report.cpu import VCPU_ROWS, host_placement_facts, rdy_band, vcpu_sched_summary
from vmtwin.report.cluster import cluster_html, cluster_totals, is_cluster
from vmtwin.report.pools import ROOT, pool_tree, pool_usage
from vmtwin.report.storage import storage_html
from vmtwin.report.memory import memory_html
from vmtwin.report.summary import vm_summary
from vmtwin.results import Results

__all__ = ["COMPARE_FIGURE_ID", "FIGURE_IDS", "render_report"]

#: Ids of the ``<div class="figure">`` blocks every report has, in page order.
FIGURE_IDS = ["fig-host-cpu", "fig-pcpu", "fig-core", "fig-vm-used", "fig-vm-ready", "fig-vm-costop",
              "fig-vcpu-ready", "fig-vm-limits", "fig-vm-entitlement", "fig-pools"]

#: Id of the comparison figure, after :data:`FIGURE_IDS` when the report compares two runs.
COMPARE_FIGURE_ID = "fig-compare"

_SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var down = th.getAttribute("aria-sort") !== "descending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v, nx = parseFloat(x), ny = parseFloat(y);
        var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
""".strip()

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
th { background: #eef2f6; font-weight: 600; position: sticky; top: 0; white-space: normal;
     vertical-align: bottom; min-width: 4.5em; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="descending"]::after { content: " \\25BC"; }
table.sortable th[aria-sort="ascending"]::after { content: " \\25B2"; }
.scroll { max-height: 520px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.scroll table { border: none; }
td.pool { padding-left: calc(10px + var(--depth) * 18px); }
.note { color: var(--muted); margin: 6px 0 0; }
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


def _cell(text: str, sort_value: Any = None, cls: str = "", style: str = "") -> str:
    """A ``<td>`` with its sort key in ``data-v`` (the number, or the text)."""
    if sort_value is None:
        key = text
    else:
        x = float(sort_value)
        key = "" if math.isnan(x) else repr(x)
    attrs = f' data-v="{escape(key)}"'
    attrs += f' class="{cls}"' if cls else ""
    attrs += f' style="{style}"' if style else ""
    return f"<td{attrs}>{text}</td>"


def _table(table_id: str, heads: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return (f'<div class="scroll"><table id="{table_id}" class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _summary_table(summary: pd.DataFrame, vcpu: pd.DataFrame, vm_pool: dict[str, Any]) -> str:
    worst: dict[str, float] = {}
    if len(vcpu):
        per = vcpu.groupby(["vm", "vcpu"], sort=False)["%RDY"].mean()
        worst = per.groupby(level=0, sort=False).max().to_dict()
    heads = ["VM", "vCPUs", "shares", "reservation (MHz)", "limit (MHz)", "mean %USED", "mean %RDY",
             "mean %MLMTD", "p95 %RDY", "mean entitlement (MHz)", "mean %RDY per vCPU",
             "worst vCPU mean %RDY", "pool"]
    rows = []
    for values in summary.to_dict("records"):
        name, limit = str(values["vm"]), values["limit_mhz"]
        per_vcpu = values["mean %RDY"] / values["vcpus"] if values["vcpus"] else math.nan
        pool = vm_pool.get(name) or ROOT
        rows.append([
            _cell(escape(name)),
            _cell(_num(values["vcpus"], 0), values["vcpus"]),
            _cell(_num(values["shares"], 0), values["shares"]),
            _cell(_num(values["reservation_mhz"], 0), values["reservation_mhz"]),
            _cell("unlimited" if math.isnan(limit) else _num(limit, 0), math.inf if math.isnan(limit) else limit),
            _cell(_num(values["mean %USED"]), values["mean %USED"]),
            _cell(_num(values["mean %RDY"]), values["mean %RDY"]),
            _cell(_num(values["mean %MLMTD"]), values["mean %MLMTD"]),
            _cell(_num(values["p95 %RDY"]), values["p95 %RDY"]),
            _cell(_num(values["mean entitlement_mhz"], 0), values["mean entitlement_mhz"]),
            _cell(_num(per_vcpu), per_vcpu),
            _cell(_num(worst.get(name, math.nan)), worst.get(name, math.nan)),
            _cell(escape(str(pool))),
        ])
    return _table("vm-summary", heads, rows)


def _threads_in_table(manifest: dict[str, Any], pcpu: pd.DataFrame) -> int:
    """pCPUs per core in the ``pcpu`` table: 2 when it has a row per thread of a two-thread host
    (hyperthreading scheduled), else 1 (a one-thread host, HT off, or a cluster run)."""
    scenario = manifest.get("scenario")
    host = scenario.get("host") if isinstance(scenario, dict) else None
    if not isinstance(host, dict) or host.get("threads_per_core") != 2 or not len(pcpu):
        return 1
    cores = 1
    for k in ("sockets", "numa_nodes_per_socket", "llcs_per_node", "cores_per_llc"):
        cores *= int(host.get(k) or 1)
    return 2 if int(pcpu["pcpu"].nunique()) == 2 * cores else 1


def _vcpu_sched_html(vcpu: pd.DataFrame, duration_s: float) -> list[str]:
    """The CPU scheduling section: the worst vCPUs by ready + co-stop time, with their guide-line
    band, NUMA home node and migrations, and a note on the host's migrations."""
    s = vcpu_sched_summary(vcpu)
    if not len(s):
        return []
    shown = s.head(VCPU_ROWS)
    heads = ["VM", "vCPU", "mean %RUN", "mean %RDY", "%RDY guide", "mean %CSTP", "NUMA home node",
             "home moves", "migrations", "to another LLC", "to another node"]
    rows = []
    for r in shown.to_dict("records"):
        band = rdy_band(float(r["mean %RDY"]))
        rows.append([
            _cell(escape(str(r["vm"]))),
            _cell(_num(r["vcpu"], 0), r["vcpu"]),
            _cell(_num(r["mean %RUN"]), r["mean %RUN"]),
            _cell(_num(r["mean %RDY"]), r["mean %RDY"]),
            _cell(escape(band), {"": 0, "watch": 1, "problem": 2}[band]),
            _cell(_num(r["mean %CSTP"]), r["mean %CSTP"]),
            _cell(_num(r["home node"], 0), r["home node"]),
            _cell(_num(r["home moves"], 0), r["home moves"]),
            _cell(_num(r["migrations"], 0), r["migrations"]),
            _cell(_num(r["to another LLC"], 0), r["to another LLC"]),
            _cell(_num(r["to another node"], 0), r["to another node"]),
        ])
    which = (f"all {len(s)} vCPUs" if len(s) <= VCPU_ROWS else
             f"the {VCPU_ROWS} of {len(s)} vCPUs with the most ready + co-stop time")
    note = (f"{which.capitalize()}, means over the run. %RDY guide: a vCPU ready 5% of the time is worth watching, "
            "10% a problem (the admins' rule of thumb). %CSTP: time co-stopped by co-scheduling, not part of "
            "%RDY. NUMA home node: at the end of the run (– when not NUMA-managed); home moves: changes "
            "between samples. Migrations: slices started on another pCPU than the last.")
    facts = host_placement_facts(vcpu, duration_s)
    return ["<h2>CPU scheduling per vCPU</h2>", _table("vcpu-sched", heads, rows),
            f'<p class="note">{escape(note)}{" " + escape(facts) if facts else ""}</p>']


def _pool_table(tree: pd.DataFrame) -> str:
    heads = ["pool", "shares", "reservation (MHz)", "limit (MHz)", "expandable", "VMs",
             "mean usage (MHz)", "peak usage (MHz)", "mean entitlement (MHz)"]
    rows = []
    for r in tree.to_dict("records"):
        limit = r["limit_mhz"]
        root = r["pool"] == ROOT
        expandable = "" if r["expandable"] is None else ("yes" if r["expandable"] else "no")
        rows.append([
            _cell(escape(str(r["pool"])), cls="pool", style=f"--depth: {int(r['depth'])}"),
            _cell(_num(r["shares"], 0), r["shares"]),
            _cell(_num(r["reservation_mhz"], 0), r["reservation_mhz"]),
            _cell("" if root else ("unlimited" if math.isnan(limit) else _num(limit, 0)),
                  math.inf if math.isnan(limit) else limit),
            _cell(expandable),
            _cell(str(int(r["vms"])), r["vms"]),
            _cell(_num(r["mean used_mhz"], 0), r["mean used_mhz"]),
            _cell(_num(r["peak used_mhz"], 0), r["peak used_mhz"]),
            _cell(_num(r["mean entitlement_mhz"], 0), r["mean entitlement_mhz"]),
        ])
    return _table("pool-tree", heads, rows)


def _compare_table(diff: pd.DataFrame) -> str:
    heads = ["VM"] + [f"{label} {side}" for label in COMPARED.values() for side in ("A", "B", "B − A")]
    rows = []
    for r in diff.to_dict("records"):
        cells = [_cell(escape(str(r["vm"])))]
        for col in COMPARED:
            digits = 0 if col.endswith("mhz") else 1
            for side in ("a", "b", "diff"):
                v = r[f"{col} {side}"]
                text = _num(v, digits)
                if side == "diff" and not math.isnan(v):
                    text = f"{round(v, digits) + 0.0:+.{digits}f}"
                cells.append(_cell(text, v))
        rows.append(cells)
    return _table("compare", heads, rows)


def _actions_html(manifest: dict[str, Any]) -> list[str]:
    """The settings changed during a stepped run (the manifest's ``actions``), as a table."""
    actions = [a for a in manifest.get("actions") or []
               if isinstance(a, dict) and a.get("action") not in (None, "run_until")]
    if not actions:
        return []
    rows = []
    for a in actions:
        args = dict(a.get("args") or {})
        target = str(args.pop("vm", ""))
        what = ", ".join(f"{k} = {'unlimited' if v is None else v}" for k, v in sorted(args.items()))
        rows.append([_cell(_num(a.get("time_s"), 1), a.get("time_s")), _cell(escape(str(a["action"]))),
                     _cell(escape(target)), _cell(escape(what))])
    return ["<h2>Changes during the run</h2>",
            _table("actions", ["time (s)", "action", "VM", "settings"], rows)]


def _figure_html(fig: go.Figure, fig_id: str, include_plotlyjs: bool) -> str:
    div = fig.to_html(
        full_html=False,
        include_plotlyjs=include_plotlyjs,
        div_id=f"plot-{fig_id.removeprefix('fig-')}",
        config={"displaylogo": False, "responsive": True},
        validate=True,
    )
    return f'<div class="figure" id="{fig_id}">\n{div}\n</div>'


def _vm_pools(manifest: dict[str, Any]) -> dict[str, Any]:
    scenario = manifest.get("scenario")
    vms = scenario.get("vms") if isinstance(scenario, dict) else None
    return {v["name"]: v.get("pool") for v in vms or [] if isinstance(v, dict) and isinstance(v.get("name"), str)}


def _frame(res: Results, name: str, columns: list[str]) -> pd.DataFrame:
    return res.table(name) if name in res.tables else pd.DataFrame(columns=columns)


def render_report(
    results_dir: str | os.PathLike[str] | Results,
    out_path: str | os.PathLike[str] | None = None,
    *,
    compare: str | os.PathLike[str] | Results | None = None,
) -> Path:
    """Write the HTML report of a run.

    Parameters
    ----------
    results_dir : path-like or Results
        A results folder (see :func:`vmtwin.results.write_results`).
    out_path : path-like, optional
        Where to write; default ``<results_dir>/report.html``. The file is written to a
        temporary name next to it and renamed into place.
    compare : path-like or Results, optional
        A second results folder: the page gets a section comparing the two runs VM by VM
        (:func:`vmtwin.report.compare.compare_runs`) and the figure :data:`COMPARE_FIGURE_ID`.

    Returns
    -------
    pathlib.Path
        The report file.

    Raises
    ------
    ValueError
        ``results_dir`` (or ``compare``) is not a results folder.
    OutputError
        ``out_path`` is a folder or cannot be written (the message names it).

    Notes
    -----
    The page holds a title with the scenario name, the run's facts, a sortable per-VM table
    (settings of the last sample; mean %USED, %RDY, %MLMTD; p95 %RDY; %RDY per vCPU and of the
    worst vCPU; the VM's pool), a per-vCPU CPU scheduling table (%RUN, %RDY against the guide lines,
    %CSTP, NUMA home node and its moves, migrations by distance; the worst 200), the resource-pool tree (settings, usage and entitlement) and
    the figures, each in a ``<div class="figure" id=...>`` with the ids of :data:`FIGURE_IDS`:
    host CPU, per-pCPU and per-core utilisation, per-VM %USED, per-VM %RDY, per-VM %CSTP, per-vCPU %RDY with the 5%
    and 10% guide lines, limits,
    mean %USED against entitlement, and pools over time. A ``<div id="report-ok">`` closes the
    page.
    """
    res = results_dir if isinstance(results_dir, Results) else Results(results_dir)
    other = None if compare is None else (compare if isinstance(compare, Results) else Results(compare))
    manifest = res.manifest
    host = _frame(res, "host", ["time_s", "pcpus", "capacity_mhz", "used_mhz", "%PCPU_UTIL", "%PCPU_USED"])
    vm = _frame(res, "vm", ["time_s", "vm", "vm_id", "vcpus", "%USED", "%RDY", "%MLMTD", "used_mhz",
                            "entitlement_mhz", "demand_mhz", "shares", "reservation_mhz", "limit_mhz"])
    vcpu = _frame(res, "vcpu", ["time_s", "vm", "vm_id", "vcpu", "%RDY"])
    pcpu = _frame(res, "pcpu", ["time_s", "pcpu", "%PCPU_UTIL"])
    cluster_blocks: list[str] = []
    if is_cluster(manifest):  # a cluster run: its view, then the cluster as one host
        cluster_blocks, host = cluster_html(host, vm, manifest), cluster_totals(host)
    summary = vm_summary(vm)
    name = str(manifest.get("scenario_name") or res.path.name)
    usage = pool_usage(vm, manifest)
    tree = pool_tree(usage, manifest)
    pools = tree[tree["pool"] != ROOT]
    pool_order = [str(p) for p in sorted(pools["pool"], key=lambda p: (
        -float(pools.loc[pools["pool"] == p, "mean used_mhz"].iloc[0]), list(pools["pool"]).index(p)))]

    shown = figures.top_vms(vm)
    figs = [
        figures.host_cpu_figure(host),
        figures.pcpu_figure(pcpu),
        figures.core_figure(pcpu, _threads_in_table(manifest, pcpu)),
        figures.vm_counter_figure(vm, "%USED", "%USED per VM", shown),
        figures.vm_counter_figure(vm, "%RDY", "%RDY per VM", shown),
        figures.vm_counter_figure(vm if "%CSTP" in vm.columns else vm.assign(**{"%CSTP": math.nan}),
                                  "%CSTP", "%CSTP (co-stop) per VM", by="%CSTP"),
        figures.vcpu_ready_figure(vcpu),
        figures.vm_limit_figure(vm),
        figures.vm_entitlement_figure(vm, host, shown, manifest.get("scenario")),
        figures.pool_figure(usage, pool_order, {str(r["pool"]): float(r["limit_mhz"])
                                                for r in pools.to_dict("records") if not math.isnan(r["limit_mhz"])}),
    ]
    ids = list(FIGURE_IDS)
    compare_html: list[str] = []
    if other is not None:
        diff = compare_runs(res, other)
        figs.append(figures.compare_figure(diff, str(res.path.name), str(other.path.name)))
        ids.append(COMPARE_FIGURE_ID)
        compare_html = [
            "<h2>Compared with another run</h2>",
            f'<p class="note">A = this run ({escape(str(res.path))}), B = {escape(str(other.path))}; '
            "means over each run, VMs matched by name. Host: "
            + "; ".join(f"mean {escape(col)} A {_num(x, 0 if col.endswith('mhz') else 1)}, "
                        f"B {_num(y, 0 if col.endswith('mhz') else 1)}"
                        for col, (x, y) in compare_hosts(res, other).items()) + ".</p>",
            _compare_table(diff),
        ]
    # the memory section comes before the figures: when it has its state figure, that one
    # carries plotly.js
    mem_blocks = memory_html(res, figure_html=lambda fig, fig_id: _figure_html(fig, fig_id, include_plotlyjs=True))
    js_done = bool(mem_blocks)
    blocks = [_figure_html(fig, fig_id, include_plotlyjs=(i == 0 and not js_done))
              for i, (fig, fig_id) in enumerate(zip(figs, ids))]
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
            *cluster_blocks,
            "<h2>Virtual machines</h2>",
            _summary_table(summary, vcpu, _vm_pools(manifest)),
            '<p class="note">Click a column header to sort. A vCPU ready 5% of the time is worth '
            "watching, 10% a problem (the admins' rule of thumb; see the per-vCPU figure).</p>",
            *_actions_html(manifest),
            *_vcpu_sched_html(vcpu, float(manifest.get("duration_s") or math.nan)),
            "<h2>Resource pools</h2>",
            _pool_table(tree),
            '<p class="note">Pool settings as the scenario sets them. Usage and entitlement are sums '
            "over the VMs in the pool and below it.</p>",
            *storage_html(res),
            *mem_blocks,
            *compare_html,
            "<h2>Figures</h2>",
            *blocks,
            f'<div id="report-ok" class="footer">{footer}</div>',
            "</main>",
            f"<script>\n{_SORT_JS}\n</script>",
            "</body>",
            "</html>",
            "",
        ]
    )

    out = Path(out_path) if out_path is not None else res.path / "report.html"
    with atomic_output(out, "report") as tmp:
        tmp.write_text(page, encoding="utf-8")
    return out
