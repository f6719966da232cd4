"""``vmtwin manage SCENARIO``: a task stream under each throttling policy, side by side."""

from __future__ import annotations

import argparse


def _cmd_manage(args: argparse.Namespace) -> int:
    from rich.table import Table

    from vmtwin.cli import out
    from vmtwin.manage.report import check_destination, run_scenario, write_outputs
    from vmtwin.manage.scenario import load_manage_scenario
    from pathlib import Path

    sc = load_manage_scenario(args.scenario, t_min=args.t_min, seed=args.seed)
    check_destination(Path(args.output), args.force)  # before the runs, not after them
    outcomes = run_scenario(sc)
    path = write_outputs(args.output, sc, outcomes, force=args.force)
    t = Table("policy", "batch", "latency (min)", "rounds", "mean response (s)", "batch sizes (first seed)",
              title=f"{sc.name}: {len(sc.stream)} tasks, {len(sc.seeds)} seed(s)")
    for o in outcomes:
        trace = o.runs[0].batch_trace
        shown = " ".join(map(str, trace[:12])) + (" ..." if len(trace) > 12 else "")
        batch = str(o.batch) if o.batch else "-"
        if o.sweep:
            batch += " (swept)"
        t.add_row(o.label, batch, f"{o.mean_latency_s / 60:.2f}",
                  f"{sum(len(r.rounds) for r in o.runs) / len(o.runs):.0f}",
                  f"{sum(r.response_s.mean() for r in o.runs) / len(o.runs):.1f}", shown)
    out.print(t)
    out.print(f"wrote {path}/summary.json, rounds.csv, report.html")
    return 0


def register(subparsers) -> None:
    m = subparsers.add_parser(
        "manage", help="run a management task stream under throttling policies (static, optimal static, vATM)",
        description="Run a task stream (scenario YAML or a CSV of time,operation) through the vCenter model "
                    "under each policy and write summary.json, rounds.csv and report.html.",
        epilog="example: vmtwin manage scenarios/manage/mixed.yaml -o results/mixed")
    m.add_argument("scenario", help="scenario YAML, or a task CSV with columns time,operation")
    m.add_argument("-o", "--output", required=True, help="folder to write")
    m.add_argument("--t-min", type=int, help="vATM's t_min (and the naive static batch of a bare CSV)")
    m.add_argument("--seed", type=int, help="first seed (overrides the scenario's)")
    m.add_argument("--force", action="store_true", help="replace an existing output folder")
    m.set_defaults(func=_cmd_manage)
