"""The overhead report: the analysis as JSON and as one HTML page with the decomposition as stacked bars.

Both files are written atomically (temp name, then rename) after everything is computed, so a
failed run leaves nothing. The page is self-contained (plotly.js inlined once) and deterministic:
fixed div ids, no clock read, numbers formatted with fixed precision.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
td.num{text-align:right;font-variant-numeric:tabular-nums}.warn{color:#a05000}"""


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "N/A"
    if isinstance(v, float):
        return f"{v:,.{digits}f}" if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f"<td class='num'>{html.escape(fmt(c))}</td>" if isinstance(c, (int, float)) or c is None
        else f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def decomposition_figure(result: dict[str, Any], include_plotlyjs: bool = True) -> str:
    import plotly.graph_objects as go

    d = result["decomposition"]
    fig = go.Figure()
    unit = "% of " + d["basis"].replace("_", " ")
    for part in d["parts"]:
        fig.add_trace(go.Bar(name=part["component"], x=["virtual vs native"], y=[part["percent"]],
                             hovertext=f"{fmt(part['cycles'])} cycles per {d['unit']}"))
    if d["parts_add_up"]:
        fig.add_trace(go.Scatter(name="total increase", x=["virtual vs native"], y=[d["total"]["percent"]],
                                 mode="markers", marker={"symbol": "line-ew-open", "size": 40, "color": "black"}))
    for a in result["attribution"]:
        if a["mode"] == "all":
            continue
        label = f"{a['column']} {a['mode']}"
        base = result["decomposition"]["total"]["cycles"] or 1
        fig.add_trace(go.Bar(name=f"{label}: path length", x=[label], y=[100 * a["path_length_part"] / base],
                             legendgroup="attr", showlegend=False, marker_color="#9ecae1"))
        fig.add_trace(go.Bar(name=f"{label}: CPI", x=[label], y=[100 * a["cpi_part"] / base],
                             legendgroup="attr", showlegend=False, marker_color="#3182bd"))
    fig.update_layout(barmode="relative", title=f"Cycle increase per {d['unit']}: components ({unit}) and, per "
                      "mode, path-length (light) vs CPI (dark) parts (% of the total increase)",
                      yaxis_title="%", height=460, template="plotly_white",
                      margin={"l": 60, "r": 20, "t": 60, "b": 60})
    return fig.to_html(full_html=False, include_plotlyjs=include_plotlyjs, div_id="plot-decomposition")


def render_html(result: dict[str, Any], title: str) -> str:
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>Per {html.escape(result['unit'])}; percentages against {html.escape(result['basis'])}.</p>"]
    if result["warnings"]:
        parts.append("<h2>Warnings</h2><ul>" + "".join(
            f"<li class='warn'><b>{html.escape(w['code'])}</b>: {html.escape(w['message'])}</li>"
            for w in result["warnings"]) + "</ul>")
    parts.append("<h2>Overhead decomposition</h2>" + decomposition_figure(result))
    d = result["decomposition"]
    parts.append(_table(["component", "mode", "cycles per unit", "%"],
                        [[p["component"], p["mode"], p["cycles"], p["percent"]] for p in d["parts"] + [d["total"]]]))
    parts.append("<h2>High-level table</h2>")
    rows = [[col, mode, v["thread_util"], v["cycles"], v["cpi"], v["path_length"]]
            for col, modes in result["high_level"].items() for mode, v in modes.items()]
    parts.append(_table(["column", "mode", "thread util", "cycles", "CPI", "path length"], rows))
    parts.append("<h2>Path length vs CPI</h2>")
    parts.append(_table(["column", "mode", "delta cycles", "path-length part", "CPI part", "CPI growth"],
                        [[a["column"], a["mode"], a["delta_cycles"], a["path_length_part"], a["cpi_part"],
                          a["cpi_growth"]] for a in result["attribution"]]))
    if result["translation"]:
        parts.append("<h2>Address translation</h2>")
        parts.append(_table(["column", "mode", "walks", "walks/1k instr", "walk cycles", "latency", "EPT cycles",
                             "EPT share", "EPT cost %", "walk cost %"],
                            [[t["column"], t["mode"], t["dtlb_walks"], t["dtlb_walks_per_kinstr"], t["dtlb_walk_cycles"],
                              t["dtlb_latency"], t["ept_cycles"], t["ept_share_of_walk_cycles"], t.get("ept_cost_percent"),
                              t.get("walk_cost_percent")] for t in result["translation"]]))
    if result["caches"]:
        parts.append("<h2>Caches</h2>")
        parts.append(_table(["column", "mode", "L1I share", "L2 share", "LLC share", "L1D misses"],
                            [[c["column"], c["mode"], c.get("l1"), c.get("l2"), c.get("llc"), c["l1d_misses"]]
                             for c in result["caches"]]))
    if "latency" in result:
        lat = result["latency"]
        fixed = lat.get("fixed_us_given_inflation") or [None] * len(lat["workloads"])
        parts.append("<h2>Request-response latency</h2>")
        parts.append(_table(["workload", "overhead (us)", "relative", "fixed part given inflation (us)"],
                            [list(r) for r in zip(lat["workloads"], lat["overhead_us"], lat["relative_overhead"], fixed)]))
    parts.append("<h2>Raw analysis</h2><pre>" + html.escape(json.dumps(result, indent=1)) + "</pre></body></html>\n")
    return "".join(parts)


def write_outputs(out_dir: str | Path, result: dict[str, Any], title: str) -> tuple[Path, Path]:
    """Write ``overhead.json`` and ``overhead.html`` into ``out_dir``, each atomically."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder; refusing to replace it")
    payloads = {"overhead.json": json.dumps(result, indent=2) + "\n", "overhead.html": render_html(result, title)}
    out.mkdir(parents=True, exist_ok=True)
    tmps = []
    try:
        for name, text in payloads.items():
            tmp = out / f".{name}.tmp-{os.getpid()}"
            tmp.write_text(text, encoding="utf-8")
            tmps.append((tmp, out / name))
        for tmp, final in tmps:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in tmps:
            tmp.unlink(missing_ok=True)
        raise
    return out / "overhead.json", out / "overhead.html"
