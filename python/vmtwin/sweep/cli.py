"""``vmtwin sweep SWEEP.yaml -o DIR`` and ``vmtwin plan SCENARIO --profile VM``."""

from __future__ import annotations

import argparse
import math


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}; allowed: an integer of at least 1") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"got {n}; allowed: an integer of at least 1")
    return n


def _progress_callback(label: str):
    from vmtwin.cli import err

    if not err.is_terminal:
        return None

    def show(done: int, total: int) -> None:
        err.print(f"{label}: {done}/{total} runs", end="\r", markup=False, highlight=False)

    return show


def _cmd_sweep(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from vmtwin.cli import out
    from vmtwin.exceptions import scenario_error
    from vmtwin.sweep import load_sweep, run_sweep, write_sweep
    from vmtwin.sweep.dataset import check_destination
    from vmtwin.sweep.metrics import DEFAULT_METRICS, parse_metric

    sweep = load_sweep(args.sweep)
    for m in args.metric or []:
        parse_metric(m)
    known = list(dict.fromkeys([*DEFAULT_METRICS, *sweep.metrics, *(args.metric or [])]))
    if args.plot_x is not None and args.plot_x not in sweep.grid:
        raise scenario_error("--plot-x", args.plot_x, "a swept path: " + ", ".join(sweep.paths))
    if args.plot_metric not in known:
        raise scenario_error("--plot-metric", args.plot_metric, "one of the sweep's metrics: " + ", ".join(known)
                             + " (add others with --metric)")
    check_destination(Path(args.output), args.force)  # before the runs, not after them
    runs = len(sweep.points) * sweep.replications
    start = time.perf_counter()
    tables = run_sweep(sweep, backend=args.backend, workers=args.workers, address=args.address,
                       metrics=args.metric or (), progress=_progress_callback(sweep.name))
    wall = time.perf_counter() - start
    path = write_sweep(sweep, args.output, tables, force=args.force, plot_x=args.plot_x,
                       plot_metric=args.plot_metric, metrics=args.metric or ())
    out.print(f"{sweep.name}: {len(sweep.points)} points x {sweep.replications} replications = {runs} runs "
              f"in {wall:.1f} s ({args.backend}" + (f", {args.workers} workers" if args.backend == "local"
                                                     and args.workers else "") + ")")
    out.print(f"wrote {path}/runs.parquet, vm.parquet, vcpu.parquet, host.parquet, summary.parquet, "
              "sweep.json, report.html")
    return 0


def _fmt(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _cmd_plan(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.table import Table

    from vmtwin.cli import out
    from vmtwin.scenario import load_scenario
    from vmtwin.sweep.dataset import check_destination, write_dataset
    from vmtwin.sweep.metrics import CONFIDENCE
    from vmtwin.sweep.plan import DEFAULT_METRIC, plan_capacity, plan_info

    args.metric = args.metric or DEFAULT_METRIC
    base = load_scenario(args.scenario)
    if args.output:
        check_destination(Path(args.output), args.force)

    def step(ev) -> None:
        if not args.quiet:
            out.print(f"  added {ev.added:>5}: {args.metric} mean {_fmt(ev.mean)} over {ev.n} seeds -> "
                      + ("fits" if ev.fits else "exceeds"), markup=False, highlight=False)

    plan = plan_capacity(base, args.profile, metric=args.metric, bound=args.bound, seeds=args.seeds, seed=args.seed,
                         duration=args.duration, max_add=args.max_add,
                         base_dir=Path(args.scenario).resolve().parent, backend=args.backend,
                         workers=args.workers, address=args.address, on_step=step)
    t = Table("added", "fits", f"mean {plan.metric}", f"{CONFIDENCE:.0%} CI", "per seed",
              title=f"{base.name}: VMs like {plan.profile} added before {plan.metric} > {plan.bound:g}")
    for ev in (plan.at_answer, plan.above):
        if ev is not None:
            t.add_row(str(ev.added), "yes" if ev.fits else "no", _fmt(ev.mean),
                      f"[{_fmt(ev.ci_low)}, {_fmt(ev.ci_high)}]", " ".join(_fmt(v) for v in ev.values))
    out.print(t)
    if not plan.at_answer.fits:
        out.print(f"answer: 0 (the host already exceeds the bound without added VMs: {plan.metric} "
                  f"= {_fmt(plan.at_answer.mean)} > {plan.bound:g})")
    elif plan.capped:
        out.print(f"answer: at least {plan.answer} (still fits at --max-add {plan.answer}; raise it to search further)")
    else:
        out.print(f"answer: {plan.answer} more VMs like {plan.profile} fit")
    d = plan.deciding
    out.print(f"decided by: added={d['added']}, replication {d['replication']}, seed {d['seed']} "
              f"({plan.metric} = {_fmt(d['value'])})")
    if args.output:
        info = plan_info(plan, base, args.seeds, base.seed if args.seed is None else args.seed, args.duration)
        path = write_dataset(Path(args.output), plan.tables, info, force=args.force)
        out.print(f"wrote {path}/sweep.json (the plan), runs.parquet, vm.parquet, vcpu.parquet, host.parquet, "
                  "summary.parquet")
    return 0


def _backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local: a process pool on this machine (default); ray: a Ray cluster at --address")
    p.add_argument("--workers", type=_workers, help="local worker processes (default: the machine's cores)")
    p.add_argument("--address", help="Ray head HOST:PORT (with --backend ray)")


def register(subparsers) -> None:
    s = subparsers.add_parser(
        "sweep", help="run a grid of scenario parameters and seeds; one Parquet dataset with intervals",
        description="Run the base scenario at every point of the grid (any YAML path) with several seeds, "
                    "on local processes or a Ray cluster; write the runs' per-VM/vCPU/host means, per-run "
                    "metrics and a summary with t confidence intervals as Parquet, and a plot.",
        epilog="example: vmtwin sweep docs/examples/sweep.yaml -o results/sweep --workers 2")
    s.add_argument("sweep", help="sweep YAML (scenario, grid, replications, seed; see docs/sweep.md)")
    s.add_argument("-o", "--output", required=True, help="folder to write")
    _backend_args(s)
    s.add_argument("--metric", action="append", help="another metric for the summary, e.g. 'vm[db01].%%RDY' "
                                                     "(repeatable)")
    s.add_argument("--plot-x", help="swept path on the plot's x axis (default: the grid's first)")
    s.add_argument("--plot-metric", default="max(vcpu.%RDY)", help="metric plotted (default: max(vcpu.%%RDY))")
    s.add_argument("--force", action="store_true", help="replace an existing sweep folder")
    s.set_defaults(func=_cmd_sweep)

    p = subparsers.add_parser(
        "plan", help="how many more VMs of a profile fit before a metric crosses a bound",
        description="Add copies of one VM entry of the scenario and search (doubling, then bisection, each "
                    "count run with several seeds) for the largest count whose metric, averaged over the "
                    "seeds, stays at most the bound. Reports the answer, the margin (the metric with its "
                    "interval at the answer and one above) and the run that decided.",
        epilog="example: vmtwin plan scenarios/quickstart.yaml --profile web --bound 5")
    p.add_argument("scenario", help="scenario YAML")
    p.add_argument("--profile", required=True, help="name of the vms entry to add copies of")
    p.add_argument("--metric", help="metric bounded (default: max(vcpu.%%RDY_CONTENDED), any vCPU's %%RDY "
                                    "over the run less the time limits held it back, %%MLMTD)")
    p.add_argument("--bound", type=float, default=5.0, help="largest acceptable metric value (default 5)")
    p.add_argument("--seeds", type=int, default=3, help="replications per count (default 3)")
    p.add_argument("--seed", type=int, help="plan seed (default: the scenario's)")
    p.add_argument("--duration", help="run length per count (default: the scenario's), e.g. 30s")
    p.add_argument("--max-add", type=int, default=1024, help="largest count tried (default 1024)")
    p.add_argument("-o", "--output", help="folder to write the evaluated runs and plan to (optional)")
    p.add_argument("--force", action="store_true", help="replace an existing folder")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print each search step")
    _backend_args(p)
    p.set_defaults(func=_cmd_plan)
