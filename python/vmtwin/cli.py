"""The ``vmtwin`` command: run, validate, schema, report, export, reproduce.

Every user error (bad scenario, refused reservation, bad argument) prints ``error: ...`` (one
line per problem found), and exits with status 2, without a traceback and without writing
anything.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from vmtwin.exceptions import VmtwinError

USER_ERROR = 2

#: Subcommands owned by other packages. Each module has ``register(subparsers)``, which adds its
#: parsers and sets ``func``; command functions import their heavy modules lazily, so that
#: ``vmtwin --help`` stays fast. Errors they raise go through the one boundary in :func:`main`.
COMMAND_MODULES: tuple[str, ...] = (
    "vmtwin.inventory.cli",
    "vmtwin.analytics.cli",
)

# piped output keeps whole lines (rich would otherwise cut table cells at 80 columns)
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def _cmd_run(args: argparse.Namespace) -> int:
    from vmtwin.simulation import Simulation

    from vmtwin.results import check_output_folder

    sim = Simulation(args.scenario, seed=args.seed, duration=args.duration)
    out_dir = Path(args.output)
    check_output_folder(out_dir)  # before the run, not after it
    total = sim.duration
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[sim]}"),
                  TimeElapsedColumn(), console=err, disable=args.quiet or not err.is_terminal) as bar:
        task = bar.add_task(sim.scenario.name, total=total, sim="")
        sim.run(lambda now: bar.update(task, completed=now, sim=f"{now:,.0f}/{total:,.0f} s simulated"))
    results = sim.write(out_dir)
    m = results.manifest
    if not args.quiet:
        out.print(f"wrote [bold]{results.path}[/] ({m['event_count']:,} events, {m['wall_time_s']:.2f} s wall)")
        for entry in m.get("log", []):
            out.print(f"[yellow]t={entry['time_s']:.1f}s[/] {entry['message']}")
        _print_summary(results)
    if args.report:
        from vmtwin.report import render_report

        out.print(f"report: {render_report(results.path)}")
    return 0


def _print_summary(results) -> None:
    df = results.sql(
        'SELECT vm, any_value(vcpus) AS vcpus, avg("%USED") AS used, avg("%RDY") AS rdy, '
        'avg("%MLMTD") AS mlmtd, avg(entitlement_mhz) AS ent FROM vm GROUP BY vm ORDER BY min(vm_id)'
    )
    t = Table("VM", "vCPUs", "%USED", "%RDY", "%MLMTD", "entitlement MHz", title="mean over the run")
    for r in df.itertuples():
        t.add_row(r.vm, str(r.vcpus), f"{r.used:.1f}", f"{r.rdy:.1f}", f"{r.mlmtd:.1f}", f"{r.ent:.0f}")
    out.print(t)


def _cmd_validate(args: argparse.Namespace) -> int:
    from vmtwin import _core
    from vmtwin.scenario import load_scenario

    sc = load_scenario(args.scenario)
    spec = sc.to_engine_spec()
    _core.Simulation(json.dumps(spec))  # the engine's own checks too: admission control at power-on
    out.print(f"ok: {args.scenario}: {len(spec['vms'])} VMs, {len(spec['pools'])} pools, "
              f"{spec['duration_ns'] / 1e9:g} s")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from vmtwin.scenario import scenario_json_schema

    sys.stdout.write(json.dumps(scenario_json_schema(), indent=2) + "\n")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from vmtwin.report import render_report

    path = render_report(args.results, args.output)
    out.print(f"report: {path}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from vmtwin.export.esxtop import to_esxtop_csv

    path = to_esxtop_csv(args.results, args.esxtop)
    out.print(f"esxtop batch CSV: {path}")
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from vmtwin import reproduce

    if args.list:
        t = Table("ID", "experiment", "source")
        for e in reproduce.EXPERIMENTS.values():
            t.add_row(e.id, e.title, e.source)
        out.print(t)
        return 0
    if args.all:
        rows, path = reproduce.run_all(args.output or "results/validation")
        _print_rows(rows)
        out.print(f"validation report: {path}")
        return 0 if all(r.verdict != "FAIL" for r in rows) else 1
    if not args.id:
        raise ValueError("reproduce: give an experiment ID, --list or --all")
    exp = reproduce.get(args.id)
    rows = exp.run()
    if args.json:
        sys.stdout.write(json.dumps([r.as_dict() for r in rows], indent=2) + "\n")
    else:
        _print_rows(rows)
    return 0 if all(r.verdict != "FAIL" for r in rows) else 1


def _print_rows(rows) -> None:
    t = Table("experiment", "metric", "published", "source", "simulated", "tolerance", "verdict",
              caption="source: published = printed in the paper, derived = worked out from its text (--json: note)")
    colour = {"PASS": "green", "FAIL": "red", "NOT JUDGED": "yellow"}
    for r in rows:
        t.add_row(r.experiment, r.metric, f"{r.published:g}", r.source, f"{r.simulated:.3f}", r.tolerance_text,
                  f"[{colour.get(r.verdict, 'white')}]{r.verdict}[/]")
    out.print(t)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vmtwin", description="A digital twin of ESX/vSphere resource management.")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a scenario and write a results folder")
    r.add_argument("scenario", help="scenario YAML file")
    r.add_argument("-o", "--output", required=True, help="results folder to write")
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--duration", help="override the scenario's duration, e.g. 5min")
    r.add_argument("--report", action="store_true", help="also write report.html")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    r.set_defaults(func=_cmd_run)

    v = sub.add_parser("validate", help="check a scenario file")
    v.add_argument("scenario")
    v.set_defaults(func=_cmd_validate)

    s = sub.add_parser("schema", help="print the scenario JSON Schema")
    s.set_defaults(func=_cmd_schema)

    rep = sub.add_parser("report", help="write an HTML report of a results folder")
    rep.add_argument("results")
    rep.add_argument("-o", "--output", help="HTML file (default: RESULTS/report.html)")
    rep.set_defaults(func=_cmd_report)

    e = sub.add_parser("export", help="export a results folder for other tools")
    e.add_argument("results")
    e.add_argument("--esxtop", required=True, metavar="CSV", help="esxtop batch-mode (PDH-CSV) file to write")
    e.set_defaults(func=_cmd_export)

    x = sub.add_parser("reproduce", help="run a published experiment: published vs simulated")
    x.add_argument("id", nargs="?", help="experiment ID (see --list)")
    x.add_argument("--list", action="store_true", help="list the experiments")
    x.add_argument("--all", action="store_true", help="run every experiment and write an HTML validation report")
    x.add_argument("--json", action="store_true", help="print rows as JSON")
    x.add_argument("-o", "--output", help="folder of the --all validation report")
    x.set_defaults(func=_cmd_reproduce)

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (VmtwinError, FileExistsError, FileNotFoundError, NotADirectoryError, KeyError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        # several problems come one per line: each gets the prefix, so every line reads alone
        for line in str(msg).splitlines() or [""]:
            err.print(f"error: {line}", markup=False, highlight=False)
        return USER_ERROR
    except KeyboardInterrupt:
        err.print("interrupted: nothing written", markup=False)
        return 130


if __name__ == "__main__":
    sys.exit(main())
