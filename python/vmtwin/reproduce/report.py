"""`vmtwin reproduce --all`: every experiment, one HTML validation report.

The page has one section per experiment: a plotly figure with the simulated values as lines and
the targets as crosses (open crosses for targets derived from the paper's text rather than
printed in it), and the table of rows with their source, verdict and note. It is written
atomically (temp file, then rename) beside a ``validation.json`` of all rows.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import plotly.graph_objects as go

from vmtwin.reproduce.base import Experiment, Row


def _figure(exp: Experiment, rows: list[Row], first: bool) -> str:
    fig = go.Figure()
    for series in dict.fromkeys(r.series for r in rows):
        pts = sorted((r for r in rows if r.series == series and r.x is not None), key=lambda r: r.x)
        xs = [r.x for r in pts]
        fig.add_trace(go.Scatter(x=xs, y=[r.simulated for r in pts], mode="lines+markers", name=f"{series} simulated"))
        # targets printed in the paper as crosses, targets derived from its text as open crosses
        for source, symbol in (("published", "x"), ("derived", "x-open")):
            mine = [r for r in pts if r.source == source]
            if mine:
                fig.add_trace(go.Scatter(x=[r.x for r in mine], y=[r.published for r in mine], mode="markers",
                                         name=f"{series} {source}", marker={"symbol": symbol, "size": 11},
                                         hovertext=[r.note for r in mine]))
    fig.update_layout(title=exp.title, xaxis_title=exp.x_label, yaxis_title=exp.y_label, height=420,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50}, template="plotly_white")
    return fig.to_html(full_html=False, include_plotlyjs=first, div_id=f"plot-{exp.id}")


def _table(rows: list[Row]) -> str:
    head = ("<tr><th>metric</th><th>published</th><th>source</th><th>simulated</th><th>tolerance</th>"
            "<th>verdict</th><th>note</th></tr>")
    body = "".join(
        f"<tr class='{r.verdict.lower().replace(' ', '-')}'><td>{html.escape(r.metric)}</td><td>{r.published:g}</td>"
        f"<td class='source {r.source}'>{r.source}</td><td>{r.simulated:.3f}</td><td>{r.tolerance_text}</td>"
        f"<td class='verdict'>{r.verdict}</td><td>{html.escape(r.note)}</td></tr>"
        for r in rows
    )
    return f"<table>{head}{body}</table>"


CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
tr.pass td.verdict{color:#107010}tr.fail td.verdict{color:#b00000;font-weight:bold}
tr.not-judged td.verdict{color:#a07000}td.source.derived{font-style:italic}"""

SOURCE_LEGEND = ("<p class='legend'>The <em>published</em> column is the target each row is judged against; "
                 "<em>source</em> says where it comes from: <b>published</b> when the number is printed in the "
                 "paper, <i>derived</i> when it is worked out from the paper's text (the derivation is in the "
                 "note). In the plots, crosses are published targets and open crosses derived ones.</p>")


def run_all(out_dir: str | os.PathLike[str]) -> tuple[list[Row], Path]:
    """Run every registered experiment; write ``validation.html`` and ``validation.json``."""
    from vmtwin.reproduce import EXPERIMENTS

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    all_rows: list[Row] = []
    sections = []
    for i, exp in enumerate(EXPERIMENTS.values()):
        rows = exp.run()
        all_rows += rows
        passed = sum(r.verdict == "PASS" for r in rows)
        judged = sum(r.judged for r in rows)
        sections.append(
            f"<section id='{exp.id}'><h2>{html.escape(exp.id)}: {html.escape(exp.title)}</h2>"
            f"<p>Source: {html.escape(exp.source)}. {passed}/{judged} judged rows pass; "
            f"{sum(r.source == 'published' for r in rows)} of {len(rows)} targets are printed in the paper, "
            f"the rest derived from its text.</p>"
            f"{_figure(exp, rows, i == 0)}{_table(rows)}</section>"
        )
    passed = sum(r.verdict == "PASS" for r in all_rows)
    judged = sum(r.judged for r in all_rows)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>vmtwin validation</title><style>{CSS}</style>"
            f"</head><body><h1>vmtwin validation report</h1><p>{passed}/{judged} judged rows pass.</p>{SOURCE_LEGEND}"
            + "".join(sections) + "<div id='report-ok'></div></body></html>")
    path = out / "validation.html"
    for name, text in ((path, page), (out / "validation.json", json.dumps([r.as_dict() for r in all_rows], indent=2))):
        tmp = name.with_name(f".{name.name}.tmp-{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, name)
    return all_rows, path
