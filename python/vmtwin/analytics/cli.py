"""``vmtwin analyze``: metrics (or events) in; ranked root causes, bottlenecks and black-swan risk out.

Registered through ``COMMAND_MODULES`` in :mod:`vmtwin.cli`. Everything is computed before
anything is written, and each output file is written atomically, so a bad input writes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime, timezone

DEFAULT_TRAIN_SHARE = 0.75


def _time(value: str | None, what: str, tz: str = "UTC") -> float | None:
    if value is None:
        return None
    from vmtwin.analytics.inputs import parse_times

    return float(parse_times([value], what, what, tz, first_row=1)[0])


def _seconds(value: str, what: str) -> float:
    from vmtwin.exceptions import scenario_error
    from vmtwin.units import parse_duration

    try:
        s = parse_duration(value, allow_bare=False) / 1e9
    except Exception:
        raise scenario_error(what, value, "a duration with a unit, e.g. 15min, 900s, 1h") from None
    if s <= 0:
        raise scenario_error(what, value, "a positive duration")
    return s


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _topology(path: str):
    from vmtwin.analytics.inputs import read_table
    from vmtwin.exceptions import scenario_error
    from pathlib import Path

    df = read_table(Path(path))
    cols = [str(c).strip().lower() for c in df.columns]
    if cols[:2] != ["upstream", "downstream"] or len(cols) != 2:
        raise scenario_error(f"{path}: columns", list(df.columns), "exactly upstream,downstream (resource names)")
    return [(str(a).strip(), str(b).strip()) for a, b in zip(df.iloc[:, 0], df.iloc[:, 1])]


def analyze(args: argparse.Namespace):
    """Run the pipeline for the parsed arguments; return (model, summary dict)."""
    from pathlib import Path

    from vmtwin.analytics.critical import black_swan_coverage, black_swan_nodes
    from vmtwin.analytics.engine import AeceParams, collapse, fit
    from vmtwin.analytics.events import read_events
    from vmtwin.analytics.inputs import read_metrics
    from vmtwin.analytics.thresholds import QuantileBands, RobustBands, events_from_metrics
    from vmtwin.exceptions import scenario_error

    params = AeceParams(dt_s=_seconds(args.dt, "--dt"), alpha=args.alpha, epsilon=args.epsilon,
                        threshold_rule=args.threshold_rule, active_flow=args.active_flow,
                        precedence_share=args.precedence_share, impact_order=args.impact_order,
                        rank_by=args.rank_by, risk_rule=args.risk_rule)
    if not 0 < params.alpha < 1:
        raise scenario_error("--alpha", args.alpha, "a probability strictly between 0 and 1")
    if not 0 <= params.epsilon <= 1:
        raise scenario_error("--epsilon", args.epsilon, "a number from 0 to 1")
    if args.impact_order < 1:
        raise scenario_error("--impact-order", args.impact_order, "an integer >= 1 (1 = first-order impact)")
    if args.k < 1:
        raise scenario_error("-k", args.k, "an integer >= 1")
    if args.events:
        events = read_events(args.input)
        if not events:
            raise scenario_error(str(args.input), "no events", "an event list with at least one row")
        lo = min(e.start for e in events)
        hi = max(max(e.start, e.end or e.start) for e in events)
    else:
        frame = read_metrics(args.input, args.form, args.header_rows, args.tz)
        lo, hi = float(frame["time_s"].min()), float(frame["time_s"].max())
    t0 = _time(args.train_start, "--train-start", args.tz) if args.train_start else lo
    t1 = _time(args.train_end, "--train-end", args.tz) if args.train_end else lo + DEFAULT_TRAIN_SHARE * (hi - lo)
    if not t1 > t0:
        raise scenario_error("--train-end", args.train_end or iso(t1),
                             f"a time after the training start {iso(t0)} (the training period is empty)")
    if not args.events:
        method = (RobustBands(season=args.season) if args.bands == "robust" else QuantileBands(season=args.season))
        events = events_from_metrics(frame, t0, t1, method, args.k)
    at = _time(args.at, "--at", args.tz) if args.at else hi
    topology = _topology(args.topology) if args.topology else None
    model = fit(events, t0, t1, params, topology)
    seen = [e for e in events if e.start <= at]
    online = model.online(seen, at)
    swans = black_swan_nodes(model.graph, params.critical)
    ranked = online.ranking[: args.top]
    summary = {
        "input": str(args.input),
        "at": iso(at),
        "train": {"start": iso(t0), "end": iso(t1), "events": sum(t0 <= e.start < t1 for e in events)},
        "events_total": len(events),
        "root_causes": [{"resource": e.node.split(":", 1)[0], "event": e.node, "flow": round(e.score, 6),
                         "rri": round(e.rri, 3),
                         "impacted": [{"event": c, "p": round(p, 6), "rri": round(r, 3)}
                                      for c, p, r in model.impacted(e.node)]} for e in ranked],
        "historic_lists": [{"lrr": round(r.lrr, 3), "weight": round(r.weight, 6),
                            "resources": [(name, round(v, 3)) for name, v in collapse(r.entries)],
                            "bottlenecks": b} for r, b in zip(model.lists, model.bottlenecks())],
        "black_swans": {"nodes": swans, "coverage_pct": round(black_swan_coverage(model.graph, params.critical), 3),
                        "risk_pct": round(online.risk, 3)},
        "patterns": model.patterns(),
        "graph": {"nodes": model.graph.directed.number_of_nodes(), "directed_edges": model.graph.directed.number_of_edges(),
                  "undirected_edges": model.graph.undirected.number_of_edges(), "components": len(model.graph.components())},
        "params": params.as_dict(),
    }
    return model, summary


def _cmd_analyze(args: argparse.Namespace) -> int:
    from rich.table import Table

    from vmtwin.cli import out

    model, summary = analyze(args)
    outputs = []
    if args.json:
        outputs.append((args.json, "JSON", json.dumps(summary, indent=2, sort_keys=True) + "\n"))
    if args.html:
        from vmtwin.analytics.page import render

        outputs.append((args.html, "report", render(model, summary)))
    if outputs:
        from vmtwin.export.atomic import atomic_output

        for path, what, text in outputs:
            with atomic_output(path, what) as tmp:
                tmp.write_text(text, encoding="utf-8")
    if args.quiet:
        return 0
    t = Table("rank", "resource", "event", "flow", "RRI", "impacts (P)",
              title=f"root causes at {summary['at']} (active mode)")
    for i, r in enumerate(summary["root_causes"], 1):
        imp = ", ".join(f"{x['event']} ({x['p']:.2f})" for x in r["impacted"][:3])
        t.add_row(str(i), r["resource"], r["event"], f"{r['flow']:.3f}", f"{r['rri']:.0f}", imp)
    if not summary["root_causes"]:
        out.print(f"no events of the historic lists are active at {summary['at']} (try --at)")
    else:
        out.print(t)
    h = Table("list", "LRR", "bottlenecks", "resources (RRI)", title="historic recommendation lists")
    for i, x in enumerate(summary["historic_lists"][: args.top], 1):
        h.add_row(str(i), f"{x['lrr']:.1f}", ", ".join(x["bottlenecks"]) or "-",
                  ", ".join(f"{r}:{v:.0f}" for r, v in x["resources"][:8]))
    out.print(h)
    bs = summary["black_swans"]
    out.print(f"black-swan nodes: {', '.join(bs['nodes']) or 'none'}; coverage {bs['coverage_pct']:.1f}%; "
              f"risk at {summary['at']}: {bs['risk_pct']:.1f}%")
    for path, what, _ in outputs:
        out.print(f"{what}: {path}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="anomaly event correlation (AECE): root causes, bottlenecks, black swans",
                              description="Learn dynamic thresholds and the event correlation graph over a training "
                              "period, then rank the events active at --at. See docs/analytics.md.")
    p.add_argument("input", help="metrics CSV/Parquet (long or wide), a vmtwin results folder, or with --events an event list")
    p.add_argument("--events", action="store_true", help="INPUT is an event list (resource,attribute,symptom,start,end)")
    p.add_argument("--form", default="auto", choices=["auto", "long", "wide"], help="metrics layout (default: auto)")
    p.add_argument("--header-rows", type=int, default=None, help="header rows of a wide CSV (2: resource row, metric row)")
    p.add_argument("--tz", default="UTC", help="time zone of naive timestamps (default UTC)")
    p.add_argument("--train-start", help="training period start (default: first timestamp)")
    p.add_argument("--train-end", help="training period end (default: 75%% into the data)")
    p.add_argument("--at", help="moment of the active mode (default: last timestamp)")
    p.add_argument("--dt", default="15min", help="coincidence span (default 15min)")
    p.add_argument("--alpha", type=float, default=0.9, help="lifetime quantile level (default 0.9)")
    p.add_argument("--epsilon", type=float, default=0.5, help="graph reduction sensitivity 0..1 (default 0.5)")
    p.add_argument("--threshold-rule", default="fence", choices=["fence", "tukey", "interpolate"])
    p.add_argument("--active-flow", default="active", choices=["active", "all"])
    p.add_argument("--precedence-share", type=float, default=0.7,
                   help="share of a pair's precedences needed for the edge i->j (default 0.7; 0 = off)")
    p.add_argument("--impact-order", type=int, default=1, help="h of the h-order impact factor (default 1, as the paper)")
    p.add_argument("--rank-by", default="impact", choices=["impact", "entropy"], help="historic list ranking")
    p.add_argument("--risk-rule", default="coverage", choices=["coverage", "weighted"], help="black-swan risk formula")
    p.add_argument("--bands", default="quantile", choices=["quantile", "robust"], help="dynamic threshold method")
    p.add_argument("--season", default="hour_of_day", choices=["hour_of_day", "hour_of_week", "none"])
    p.add_argument("-k", type=int, default=2, help="consecutive out-of-band points that open an event (default 2)")
    p.add_argument("--topology", help="CSV upstream,downstream of resource dependencies (optional)")
    p.add_argument("--top", type=int, default=10, help="rows shown (default 10)")
    p.add_argument("--json", help="write the analysis as JSON to this file")
    p.add_argument("--html", help="write an HTML page with the correlation graph to this file")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    p.set_defaults(func=_cmd_analyze)
