"""``vmtwin overhead``: the Tier-1 tables for a native run and one or two virtual runs."""

from __future__ import annotations

import argparse


EPILOG = """examples:
  vmtwin overhead --paper oltp --basis native_total -o overhead-oltp
  vmtwin overhead native.json host.json guest.json --basis native_total -o overhead-mine
  vmtwin overhead native.json host.json guest.json --basis native_total --vmkernel-share 0.045 --vmm-share 0.035 -o out

A run file is JSON: {"metadata": {...}, "counters_file": "run.perf.csv"} (perf stat -x output or the
canonical CSV) or inline "counters"; see docs/methodology.md."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "overhead", help="the cost of virtualization from hardware counters (Tier-1 methodology)",
        description="Compare a native run with a virtual run (host-system counters, guest vPMC counters, or both) "
                    "per unit of work: high-level table, hypervisor column, overhead decomposition, path length vs "
                    "CPI, address translation, caches. Each RUN is a run file (JSON with metadata and counters).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="*", metavar="RUN", help="NATIVE VIRTUAL [VIRTUAL]: run files (JSON)")
    p.add_argument("--paper", choices=("oltp", "hadoop", "rr-loopback"),
                   help="analyse the paper's own tables instead of run files")
    p.add_argument("--basis", required=True, choices=("native_total", "native_same_mode", "virtual_total"),
                   help="denominator of every overhead percentage (no default: the paper mixes them)")
    p.add_argument("--vmkernel-share", type=float, help="vmkstats: share of the virtual host's samples in the VMkernel")
    p.add_argument("--vmm-share", type=float, help="kstats: share of VMM+guest time outside direct execution")
    p.add_argument("--latency", metavar="CSV",
                   help="request-response latencies (workload,native_us,virtual_us): fixed + variable overhead")
    p.add_argument("-o", "--output", required=True, help="folder for overhead.json and overhead.html")
    p.set_defaults(func=_cmd_overhead)
    s = subparsers.add_parser(
        "perf-stat", help="a simulated VM's counters as perf stat output and a run file for vmtwin overhead",
        description="Write the execution-speed model's counters of one VM of a results folder (its vcpu_perf table) as "
                    "`perf stat -x, -A -I` text plus a run file (JSON metadata), for one counter source: native_os "
                    "(a VM whose profile is not virtualized), host_system (esx-emon-like: the hypervisor in kernel "
                    "mode) or guest_vpmc (--vpmc-mode guest or hybrid). See docs/execution-speed.md.",
        epilog=PERF_STAT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("results", metavar="RESULTS", help="a results folder of a run with perf profiles")
    s.add_argument("--vm", required=True, help="the profiled VM")
    s.add_argument("--source", required=True, choices=("native_os", "host_system", "guest_vpmc"),
                   help="which counter source to write")
    s.add_argument("--vpmc-mode", choices=("guest", "hybrid"), help="with --source guest_vpmc: what the vPMC counts")
    s.add_argument("--name", help="file name stem (default VM-SOURCE[-MODE])")
    s.add_argument("-o", "--output", required=True, help="folder for NAME.json and NAME.perf.csv")
    s.set_defaults(func=_cmd_perf_stat)


PERF_STAT_EPILOG = """examples:
  vmtwin run native.yaml -o runs/native && vmtwin run virtual.yaml -o runs/virtual
  vmtwin perf-stat runs/native --vm db --source native_os -o counters
  vmtwin perf-stat runs/virtual --vm db --source host_system -o counters
  vmtwin perf-stat runs/virtual --vm db --source guest_vpmc --vpmc-mode guest -o counters
  vmtwin overhead counters/db-native_os.json counters/db-host_system.json counters/db-guest_vpmc-guest.json \\
      --basis native_total -o overhead"""


def _cmd_perf_stat(args: argparse.Namespace) -> int:
    from vmtwin.cli import out
    from vmtwin.methodology.simulated import write_run

    path = write_run(args.results, args.vm, args.output, args.source, args.vpmc_mode, name=args.name)
    out.print(f"wrote {path} and {path.with_suffix('').with_suffix('.perf.csv')}")
    return 0


def _cmd_overhead(args: argparse.Namespace) -> int:
    from vmtwin.cli import out
    from vmtwin.exceptions import scenario_error
    from vmtwin.methodology import paper
    from vmtwin.methodology.inputs import load_run, read_latency_csv
    from vmtwin.methodology.method import Analysis, Profile, latency_report
    from vmtwin.methodology.report import write_outputs
    from vmtwin.methodology.tables import print_tables

    if args.paper:
        if args.runs:
            raise scenario_error("overhead RUN", args.runs, "no run files with --paper")
        runs = list(paper.runs(args.paper).values())
        title = f"Tier-1 overhead: the paper's {args.paper} tables"
    else:
        if not 2 <= len(args.runs) <= 3:
            raise scenario_error("overhead RUN", args.runs, "NATIVE VIRTUAL [VIRTUAL]: two or three run files")
        runs = [load_run(p) for p in args.runs]
        title = "Tier-1 overhead: " + " vs ".join(args.runs)
    native = [r for r in runs if r.metadata.source == "native_os"]
    host = [r for r in runs if r.metadata.source == "host_system"]
    guest = [r for r in runs if r.metadata.source == "guest_vpmc"]
    if len(native) != 1 or len(host) > 1 or len(guest) > 1:
        raise scenario_error("overhead runs' metadata.source", [r.metadata.source for r in runs],
                             "one native_os run and at most one host_system and one guest_vpmc run")
    profile = None
    if (args.vmkernel_share is None) != (args.vmm_share is None):
        raise scenario_error("--vmkernel-share/--vmm-share", [args.vmkernel_share, args.vmm_share], "both or neither")
    if args.vmkernel_share is not None:
        profile = Profile(vmkernel_share=args.vmkernel_share, vmm_share=args.vmm_share)
    analysis = Analysis(native[0], host[0] if host else None, guest[0] if guest else None, basis=args.basis,
                        profile=profile)
    result = analysis.as_dict()
    if args.latency:
        names, native_us, virtual_us = read_latency_csv(args.latency)
        inflation = result["hybrid"]["cycle_inflation"] if "hybrid" in result else None
        result["latency"] = latency_report(names, native_us, virtual_us, inflation=inflation)
    print_tables(result, out)
    json_path, html_path = write_outputs(args.output, result, title)
    out.print(f"wrote {json_path} and {html_path}")
    return 0
