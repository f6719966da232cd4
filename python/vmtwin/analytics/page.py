"""The HTML page of ``vmtwin analyze``: the reduced correlation graph drawn with plotly, and the tables.

Node layout is networkx's spring layout with a fixed seed (deterministic). Node size grows with
the prior, colour marks the on-line rank (red = ranked root causes, orange = black-swan nodes,
grey = the rest); edge hover text gives P(child | parent).
"""

from __future__ import annotations

import html
import json

import networkx as nx

LAYOUT_SEED = 7


def graph_figure(model, ranked: list[str], swans: list[str]):
    import plotly.graph_objects as go

    g = model.graph
    nodes = sorted(n for n in g.directed if g.directed.degree(n) > 0)
    pos = nx.spring_layout(g.directed.subgraph(nodes).to_undirected(), seed=LAYOUT_SEED) if nodes else {}
    ex, ey, mx, my, mt = [], [], [], [], []
    for a, b, d in sorted(g.directed.edges(data=True)):
        (x0, y0), (x1, y1) = pos[a], pos[b]
        ex += [x0, x1, None]
        ey += [y0, y1, None]
        mx.append(x0 + 0.6 * (x1 - x0))
        my.append(y0 + 0.6 * (y1 - y0))
        mt.append(f"{a} → {b}: P = {d['p']:.2f}")
    top = set(ranked)
    colour = ["#d62728" if n in top else "#ff7f0e" if n in swans else "#7f7f7f" for n in nodes]
    fig = go.Figure([
        go.Scatter(x=ex, y=ey, mode="lines", line=dict(width=0.6, color="#bbbbbb"), hoverinfo="skip"),
        go.Scatter(x=mx, y=my, mode="markers", marker=dict(size=4, color="#999999", symbol="triangle-up"),
                   text=mt, hoverinfo="text"),
        go.Scatter(x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes], mode="markers+text",
                   text=nodes, textposition="top center", textfont=dict(size=9),
                   marker=dict(size=[8 + 30 * g.prior[n] for n in nodes], color=colour, line=dict(width=0.5)),
                   hovertext=[f"{n}<br>prior {g.prior[n]:.3f}" for n in nodes], hoverinfo="text"),
    ])
    fig.update_layout(showlegend=False, title="Reduced correlation graph (arrow = impacts; red = ranked causes, "
                      "orange = black-swan nodes)", xaxis=dict(visible=False), yaxis=dict(visible=False),
                      height=800, template="plotly_white")
    return fig


def render(model, summary: dict) -> str:
    """The whole page as a string (plotly.js inlined, so the page works offline)."""
    ranked = [r["event"] for r in summary["root_causes"]]
    fig = graph_figure(model, ranked, summary["black_swans"]["nodes"])
    body = fig.to_html(full_html=False, include_plotlyjs=True, div_id="aece-graph")

    def table(rows, cols):
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        trs = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in cols) + "</tr>"
                      for r in rows)
        return f"<table><tr>{head}</tr>{trs}</table>"

    lists = [{"list": i + 1, "LRR": f"{x['lrr']:.1f}", "bottlenecks": ", ".join(x["bottlenecks"]) or "-",
              "resources (RRI)": ", ".join(f"{r}:{v:.0f}" for r, v in x["resources"][:10])}
             for i, x in enumerate(summary["historic_lists"])]
    causes = [{"rank": i + 1, **{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()
                                 if k != "impacted"}} for i, r in enumerate(summary["root_causes"])]
    bs = summary["black_swans"]
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>vmtwin analyze</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:13px}}</style></head><body>
<h1>vmtwin analyze: {html.escape(summary['input'])}</h1>
<p>Trained on {summary['train']['events']} events of [{summary['train']['start']}, {summary['train']['end']}); active mode at {summary['at']}.</p>
<h2>Ranked root causes (active mode)</h2>{table(causes, ['rank', 'resource', 'event', 'flow', 'rri'])}
<h2>Historic recommendation lists and bottlenecks</h2>{table(lists, ['list', 'LRR', 'bottlenecks', 'resources (RRI)'])}
<h2>Black swans</h2><p>nodes: {html.escape(', '.join(bs['nodes']) or 'none')}; coverage {bs['coverage_pct']:.1f}%;
risk now {bs['risk_pct']:.1f}%</p>
{body}
<h2>Parameters</h2><pre>{html.escape(json.dumps(summary['params'], indent=1))}</pre></body></html>
"""
