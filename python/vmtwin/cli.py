"""The ``vmtwin`` command: run, validate, schema, report, export, summary, compare, reproduce.

Every user error (bad scenario, refused reservation, bad argument, an output path that cannot be
written, an engine error) prints ``error: ...`` (one line per problem found) and exits with
status 2, without a traceback and without writing anything. Ctrl-C at any moment prints
``interrupted`` and exits with 130: during start-up (the imports below) at once, afterwards
through the same boundary in :func:`main`, so half-written output is removed first.
"""

from __future__ import annotations

import os
import signal
import sys

from vmtwin._interrupt import INTERRUPTED, check_interrupt, forget as _forget_interrupt, interrupt as _interrupt
from vmtwin._interrupt import quiet_unraisable as _quiet_unraisable, started_as_command as _started_as_command
from vmtwin._interrupt import exit_interrupted as _exit_interrupted, install as _install_start_up_handler

# Installed already by the package's first import (vmtwin/_interrupt.py); again here for
# ``python cli.py``. The imports below (rich, and the commands' numpy, pandas, pyarrow, plotly)
# take about a second, and a Ctrl-C in them must not print a traceback.
_install_start_up_handler()

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Optional, Sequence  # noqa: E402

from rich.console import Console  # noqa: E402
from rich.progress import (  # noqa: E402
    BarColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table  # noqa: E402

from vmtwin.exceptions import VmtwinError  # noqa: E402

USER_ERROR = 2

#: Subcommands owned by other packages. Each module has ``register(subparsers)``, which adds its
#: parsers and sets ``func``; command functions import their heavy modules lazily, so that
#: ``vmtwin --help`` stays fast. Errors they raise go through the one boundary in :func:`main`.
COMMAND_MODULES: tuple[str, ...] = (
    "vmtwin.inventory.cli",
    "vmtwin.analytics.cli",
    "vmtwin.methodology.cli",
    "vmtwin.manage.cli",
    "vmtwin.sweep.cli",
    "vmtwin.models.cli",
    "vmtwin.cluster.cli",
)

# piped output keeps whole lines (rich would otherwise cut table cells at 80 columns)
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def _progress(quiet: bool) -> Progress:
    """The run's progress bar on stderr: simulated time done, percent, time elapsed and left."""
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), TaskProgressColumn(),
        TextColumn("{task.fields[sim]}"), TimeElapsedColumn(), TextColumn("left"),
        TimeRemainingColumn(compact=True), console=err, disable=quiet or not err.is_terminal,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    from vmtwin.scenario import load_scenario
    from vmtwin.simulation import Simulation

    scenario = load_scenario(args.scenario)
    if scenario.clusters:  # many hosts: placed, then run on a process pool (docs/cluster.md)
        from vmtwin.cluster.cli import run_and_summarise

        results = run_and_summarise(scenario, args)
        if args.report:
            from vmtwin.report import render_report

            out.print(f"report: {render_report(results.path)}")
        return 0
    sim = Simulation(scenario, seed=args.seed, duration=args.duration)
    # refused now, before the run, if it exists (without --force) or cannot be written; rows then
    # stream to disk as the run goes, and the folder appears under its name when complete
    sim.stream_to(Path(args.output), force=args.force)
    total = sim.duration
    with _progress(args.quiet) as bar:
        task = bar.add_task(sim.scenario.name, total=total, sim="")
        sim.run(lambda now: bar.update(task, completed=now, sim=f"{now:,.0f}/{total:,.0f} s simulated"))
    results = sim.write()
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
    from vmtwin.report.summary import vm_summary

    s = vm_summary(results.vm if "vm" in results.tables else None)
    t = Table("VM", "vCPUs", "%USED", "%RDY", "%RDY/vCPU", "%MLMTD", "entitlement MHz", title="mean over the run")
    for r in s.to_dict("records"):
        t.add_row(r["vm"], str(r["vcpus"]), f"{r['mean %USED']:.1f}", f"{r['mean %RDY']:.1f}",
                  f"{r['mean %RDY'] / r['vcpus']:.1f}", f"{r['mean %MLMTD']:.1f}", f"{r['mean entitlement_mhz']:.0f}")
    out.print(t)


def _cmd_summary(args: argparse.Namespace) -> int:
    from vmtwin.results import Results

    results = Results(args.results)
    m = results.manifest
    facts = [f"scenario {m.get('scenario_name', '?')}", f"seed {m.get('seed', '?')}"]
    if isinstance(m.get("duration_s"), (int, float)):
        facts.append(f"{m['duration_s']:g} s simulated")
    if isinstance(m.get("sample_interval_s"), (int, float)):
        facts.append(f"sampled every {m['sample_interval_s']:g} s")
    out.print(f"[bold]{results.path}[/]: " + ", ".join(facts))
    _print_summary(results)
    return 0


def _signed(value: float, digits: int) -> str:
    """``+1.5`` / ``-0.3``; a difference that rounds to zero reads ``+0.0``, never ``-0.0``."""
    return f"{round(value, digits) + 0.0:+.{digits}f}"


def _cmd_compare(args: argparse.Namespace) -> int:
    from vmtwin.report.compare import COMPARED, compare_hosts, compare_runs
    from vmtwin.results import Results

    a, b = Results(args.a), Results(args.b)
    diff = compare_runs(a, b)
    for col, (x, y) in compare_hosts(a, b).items():
        digits = 0 if col.endswith("mhz") else 1
        out.print(f"host mean {col}: A {x:.{digits}f}, B {y:.{digits}f}, B - A {_signed(y - x, digits)}",
                  markup=False, highlight=False)
    t = Table("VM", title=f"A = {a.path}   B = {b.path}   (means over each run; B - A)")
    for label in COMPARED.values():
        for side in ("A", "B", "B - A"):
            t.add_column(f"{label} {side}", justify="right")
    for r in diff.to_dict("records"):
        cells = [r["vm"]]
        for col in COMPARED:
            for side in ("a", "b", "diff"):
                v = r[f"{col} {side}"]
                digits = 0 if col.endswith("mhz") else 1
                cells.append("–" if v != v else (_signed(v, digits) if side == "diff" else f"{v:.{digits}f}"))
        t.add_row(*cells)
    out.print(t)
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from vmtwin import _core
    from vmtwin.scenario import load_scenario

    sc = load_scenario(args.scenario)
    if sc.clusters:  # placed, and every host's spec checked by the engine as above
        from vmtwin.cluster.runner import plan_cluster

        plan = plan_cluster(sc)
        for h in plan.hosts:
            _core.Simulation(json.dumps(h.spec))
        out.print(f"ok: {args.scenario}: {plan.placement.num_rows} VMs placed on {len(plan.hosts)} hosts")
        return 0
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

    path = render_report(args.results, args.output, compare=args.compare)
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


def _version() -> str:
    from vmtwin import __version__

    return f"vmtwin {__version__}"


_EPILOGS = {
    "main": """examples:
  vmtwin run scenarios/quickstart.yaml -o results/qs --report
  vmtwin summary results/qs
  vmtwin compare results/qs results/qs-high-shares
  vmtwin export results/qs --esxtop qs.csv
  vmtwin reproduce --list

'vmtwin COMMAND --help' shows each command's options and examples.""",
    "run": """examples:
  vmtwin run scenarios/quickstart.yaml -o results/qs
  vmtwin run scenarios/quickstart.yaml -o results/qs --duration 5min --seed 7 --report
  vmtwin run scenarios/quickstart.yaml -o results/qs --force   # replace the earlier run

The folder holds manifest.json and host/vm/vcpu Parquet tables (esxtop's counters);
query them with duckdb or pandas, or see them again with 'vmtwin summary DIR'.""",
    "validate": """example:
  vmtwin validate scenarios/quickstart.yaml""",
    "schema": """example:
  vmtwin schema > scenario.schema.json   # for editor completion of scenario files""",
    "report": """examples:
  vmtwin report results/qs                       # writes results/qs/report.html
  vmtwin report results/qs -o qs.html --compare results/qs-b""",
    "export": """example:
  vmtwin export results/qs --esxtop qs.csv

The CSV has esxtop batch mode's (esxtop -b) PDH-CSV columns: perfmon, esxplot and
visualEsxtop read it.""",
    "summary": """example:
  vmtwin summary results/qs     # the table 'vmtwin run' printed, from the folder""",
    "compare": """example:
  vmtwin compare results/before results/after

VMs are matched by name; a VM in only one run shows a dash on the other side.
'vmtwin report A --compare B' puts the same comparison in A's HTML report.""",
    "reproduce": """examples:
  vmtwin reproduce --list
  vmtwin reproduce cpu-shares
  vmtwin reproduce --all -o results/validation""",
}


def _sub(sub, name: str, help_text: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".",
                          epilog=_EPILOGS[name], formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vmtwin", description="A digital twin of ESX/vSphere resource management.",
                                epilog=_EPILOGS["main"], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = _sub(sub, "run", "run a scenario and write a results folder")
    r.add_argument("scenario", help="scenario YAML file")
    r.add_argument("-o", "--output", required=True, metavar="DIR", help="results folder to write")
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--duration", help="override the scenario's duration, e.g. 5min")
    r.add_argument("--report", action="store_true", help="also write DIR/report.html")
    r.add_argument("--force", action="store_true", help="replace DIR if it holds an earlier run's results")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    r.set_defaults(func=_cmd_run)

    v = _sub(sub, "validate", "check a scenario file without running it")
    v.add_argument("scenario", help="scenario YAML file")
    v.set_defaults(func=_cmd_validate)

    s = _sub(sub, "schema", "print the scenario JSON Schema")
    s.set_defaults(func=_cmd_schema)

    rep = _sub(sub, "report", "write an HTML report of a results folder")
    rep.add_argument("results", metavar="DIR", help="results folder")
    rep.add_argument("-o", "--output", metavar="HTML", help="HTML file (default: DIR/report.html)")
    rep.add_argument("--compare", metavar="DIR_B", help="add a section comparing DIR with this results folder")
    rep.set_defaults(func=_cmd_report)

    e = _sub(sub, "export", "export a results folder for other tools")
    e.add_argument("results", metavar="DIR", help="results folder")
    e.add_argument("--esxtop", required=True, metavar="CSV", help="esxtop batch-mode (PDH-CSV) file to write")
    e.set_defaults(func=_cmd_export)

    su = _sub(sub, "summary", "print a results folder's per-VM summary table again")
    su.add_argument("results", metavar="DIR", help="results folder")
    su.set_defaults(func=_cmd_summary)

    c = _sub(sub, "compare", "compare two runs' counters VM by VM")
    c.add_argument("a", metavar="A", help="results folder A")
    c.add_argument("b", metavar="B", help="results folder B")
    c.set_defaults(func=_cmd_compare)

    x = _sub(sub, "reproduce", "run a published experiment: published vs simulated")
    x.add_argument("id", nargs="?", help="experiment ID (see --list)")
    x.add_argument("--list", action="store_true", help="list the experiments")
    x.add_argument("--all", action="store_true", help="run every experiment and write an HTML validation report")
    x.add_argument("--json", action="store_true", help="print rows as JSON")
    x.add_argument("-o", "--output", help="folder of the --all validation report")
    x.set_defaults(func=_cmd_reproduce)

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


def _error_lines(exc: BaseException) -> list[str]:
    """The ``error: ...`` lines for an exception the boundary handles."""
    if isinstance(exc, KeyError) and exc.args:
        msg = str(exc.args[0])
    elif isinstance(exc, OSError) and exc.filename is not None:
        where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
        msg = f"{where}: {exc.strerror or exc}"
    elif isinstance(exc, MemoryError):
        msg = "out of memory" + (f": {exc}" if str(exc) else "")
    elif isinstance(exc, RecursionError):
        msg = f"input nested too deeply: {exc}"
    elif type(exc).__name__ == "PanicException":  # a Rust panic, a BaseException (pyo3)
        msg = f"the engine failed: {exc} (this is a vmtwin bug; please report it with the scenario)"
    else:
        msg = str(exc)
    # several problems come one per line: each gets the prefix, so every line reads alone
    return [f"error: {line}" for line in msg.splitlines() or [""]]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``vmtwin`` command line; return the exit status (0, 1 = a reproduction failed, 2, 130).

    The one error boundary: scenario, engine and output errors print ``error: ...`` and give 2;
    Ctrl-C prints ``interrupted`` and gives 130, after the command removed what it half wrote.
    """
    handler = signal.getsignal(signal.SIGINT)
    unraisable = sys.unraisablehook
    main_thread = handler is not None and _in_main_thread()
    try:
        if main_thread:
            # Inside the command, Ctrl-C raises KeyboardInterrupt so atomic writers clean up
            # first, and is remembered in case library code swallows the exception (_interrupt.py).
            sys.unraisablehook = _quiet_unraisable(unraisable)
            signal.signal(signal.SIGINT, _interrupt)
        with warnings.catch_warnings():
            # a scenario beyond a vSphere maximum runs, with one plain line saying so
            warnings.showwarning = _show_warning
            args = build_parser().parse_args(argv)
            status = args.func(args)
        check_interrupt()
        return status
    except KeyboardInterrupt:
        err.print("interrupted", markup=False, highlight=False)
        if _started_as_command():
            _exit_within(TEARDOWN_TIMEOUT_S)
        return INTERRUPTED
    except (VmtwinError, ValueError, OSError, KeyError, OverflowError, MemoryError, RecursionError) as exc:
        for line in _error_lines(exc):
            err.print(line, markup=False, highlight=False)
        return USER_ERROR
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":
            raise
        for line in _error_lines(exc):
            err.print(line, markup=False, highlight=False)
        return USER_ERROR
    finally:
        if main_thread:
            # back to quitting at once: from here on there is nothing left to clean up
            signal.signal(signal.SIGINT, _exit_interrupted if _started_as_command() else handler)
            sys.unraisablehook = unraisable
            _forget_interrupt()  # a caller running main() again, or the library, starts afresh


#: After Ctrl-C, how long the interpreter's own teardown may take (it joins the pool threads and
#: child processes a sweep leaves; once on CI it never returned) before the command leaves without it.
TEARDOWN_TIMEOUT_S = 10.0


def _exit_within(seconds: float) -> None:
    """Exit with 130 after ``seconds`` if the interpreter has not finished leaving by then.

    The normal teardown goes first, since it releases what the process holds (the pool's
    semaphores); this only bounds it. With ``VMTWIN_TRACE_TEARDOWN`` set, the threads' stacks at
    that moment go to stderr, to find what blocked.
    """
    import threading

    def overdue() -> None:  # pragma: no cover - only when the teardown blocks
        os.write(2, f"interrupted: shutting down took over {seconds:g} s; stopped without it\n".encode())
        if os.environ.get("VMTWIN_TRACE_TEARDOWN"):
            import faulthandler

            faulthandler.dump_traceback(all_threads=True)
        os._exit(INTERRUPTED)

    timer = threading.Timer(seconds, overdue)
    timer.daemon = True
    timer.start()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    for text in str(message).splitlines() or [""]:
        err.print(f"warning: {text}", markup=False, highlight=False)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    sys.exit(main())
