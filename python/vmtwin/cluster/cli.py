"""``vmtwin cluster SCENARIO -o DIR``: place a cluster scenario's VMs and run every host."""

from __future__ import annotations

import argparse

from vmtwin.sweep.cli import _workers  # one parser for --workers in both commands


def _cmd_cluster(args: argparse.Namespace) -> int:
    from vmtwin.exceptions import VmtwinError
    from vmtwin.scenario import load_scenario

    sc = load_scenario(args.scenario)
    if args.place_only:
        return _place_only(sc, args)
    if args.output is None:
        raise VmtwinError("-o/--output: got nothing; allowed: the results folder to write (or --place-only)")
    run_and_summarise(sc, args)
    return 0


def run_and_summarise(sc, args: argparse.Namespace):
    """Run a loaded cluster scenario as ``args`` say (output, workers, seed, duration, force) and
    print the cluster's summary; returns the results (``vmtwin run`` on a cluster scenario too)."""
    import time

    from rich.table import Table

    from vmtwin.cli import err, out
    from vmtwin.cluster.runner import run_cluster

    progress = None
    if err.is_terminal:
        def progress(done: int, total: int) -> None:
            err.print(f"{sc.name}: {done}/{total} hosts", end="\r", markup=False, highlight=False)

    start = time.perf_counter()
    res = run_cluster(sc, args.output, workers=getattr(args, "workers", None), seed=args.seed, duration=args.duration,
                      force=args.force, progress=progress)
    wall = time.perf_counter() - start
    hosts = res.sql('SELECT host, sum(used_mhz) / sum(capacity_mhz) AS util FROM host GROUP BY host')
    overall = res.sql('SELECT sum(used_mhz) / sum(capacity_mhz) AS u FROM host')["u"].iloc[0]
    vms = res.sql("SELECT count(*) AS n, sum(overcommitted::INT) AS over FROM placement")
    t = Table(title=f"{sc.name}: {len(hosts)} hosts, {int(vms['n'].iloc[0])} VMs")
    for col in ("hosts", "empty hosts", "mean host utilisation", "busiest host", "overcommitted placements",
                "wall time"):
        t.add_column(col)
    busiest = hosts.sort_values(["util", "host"], ascending=[False, True]).iloc[0]
    empty = len(set(hosts["host"]) - set(res.sql("SELECT DISTINCT host FROM placement")["host"]))
    t.add_row(str(len(hosts)), str(empty), f"{overall:.6f}", f"{busiest['host']} ({busiest['util']:.3f})",
              str(int(vms["over"].iloc[0] or 0)), f"{wall:.1f} s ({res.manifest['workers']} workers)")
    out.print(t)
    out.print(f"wrote {res.path} (tables: {', '.join(res.tables)}); report: vmtwin report {res.path}")
    return res


def _place_only(sc, args: argparse.Namespace) -> int:
    """Validate and place, print where every VM goes, run nothing."""
    from rich.table import Table

    from vmtwin.cli import out
    from vmtwin.cluster.runner import plan_cluster

    plan = plan_cluster(sc, seed=args.seed, duration=args.duration)
    p = plan.placement.to_pandas()
    t = Table(title=f"{sc.name}: {len(plan.hosts)} hosts, {len(p)} VMs placed")
    for col in ("cluster", "host", "VMs", "vCPUs", "entitlement (MHz)", "headroom (MHz)", "overcommitted"):
        t.add_column(col)
    for h in plan.hosts:
        on = p[p["host"] == h.name]
        hs = h.spec["host"]
        cap = hs["sockets"] * hs["numa_nodes_per_socket"] * hs["llcs_per_node"] * hs["cores_per_llc"] \
            * hs["threads_per_core"] * hs["core_mhz"]
        ent = float(on["entitlement_mhz"].sum())
        t.add_row(h.cluster, h.name, str(len(on)), str(int(on["vcpus"].sum())), f"{ent:.0f}", f"{cap - ent:.0f}",
                  str(int(on["overcommitted"].sum())))
    out.print(t)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster", help="run a scenario with clusters of hosts: place the VMs, run every host",
        description="Place the VMs of a scenario with a clusters: section (pinned, first fit or DRS-like), run "
                    "each host as its own engine on a process pool and write one results folder whose tables "
                    "have a host column, plus a placement table (docs/cluster.md).",
        epilog="example: vmtwin cluster scenarios/cluster-mixed.yaml -o results/cluster --workers 2")
    p.add_argument("scenario", help="scenario YAML with a clusters: section")
    p.add_argument("-o", "--output", help="results folder to write")
    p.add_argument("--place-only", action="store_true", help="validate and place, print where the VMs go, "
                                                             "run nothing")
    p.add_argument("--workers", type=_workers, help="worker processes (default: every core); the tables are "
                                                    "the same whatever the number")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--duration", help="override the scenario's duration, e.g. 1h")
    p.add_argument("--force", action="store_true", help="replace an existing results folder")
    p.set_defaults(func=_cmd_cluster)
