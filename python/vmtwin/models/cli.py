"""``vmtwin storage-predict``: Kraft et al.'s linear predictors on the user's own isolation
measurements (a summary or per-request trace CSV, formats in ``docs/storage.md``)."""

from __future__ import annotations

import argparse
import json
import sys


def _cmd_predict(args: argparse.Namespace) -> int:
    from rich.table import Table

    from vmtwin.cli import out
    from vmtwin.models.isolation import predict_from_csv

    vms = [v.strip() for v in args.vms.split(",")] if args.vms else None
    pred, names = predict_from_csv(args.csv, vms)
    rows = [
        {"vm": n, "read_iops": r, "write_iops": w, "read_resp_ms": rr, "write_resp_ms": wr}
        for n, r, w, rr, wr in zip(names, pred.read_per_vm, pred.write_per_vm, pred.read_resp_ms, pred.write_resp_ms)
    ]
    summary = {"read_mix": pred.read_mix, "write_mix": pred.write_mix,
               "read_total_iops": pred.read_total, "write_total_iops": pred.write_total}
    if args.json:
        # a response time the isolation file did not give is null (JSON has no NaN)
        clean = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in rows]
        sys.stdout.write(json.dumps({"vms": clean, "consolidated": summary}, indent=2, allow_nan=False) + "\n")
        return 0
    def ms(x: float) -> str:
        return "-" if x != x else f"{x:.2f}"  # NaN: the isolation file gave no response time

    t = Table("VM", "reads/s", "writes/s", "read ms", "write ms", title="consolidated on one LUN (Kraft et al. §6.2)")
    for r in rows:
        t.add_row(r["vm"], f"{r['read_iops']:.1f}", f"{r['write_iops']:.1f}", ms(r["read_resp_ms"]), ms(r["write_resp_ms"]))
    out.print(t)
    out.print(f"read mix {pred.read_mix:.3f}, {pred.read_total:.0f} reads/s + {pred.write_total:.0f} writes/s in all")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "storage-predict", help="predict consolidated disk throughput and latency from isolation measurements (Kraft)",
        description="Kraft et al.'s linear predictors: each VM measured alone in, the consolidation's read/write "
                    "mix, throughputs and response times out.",
        epilog="examples:\n  vmtwin storage-predict isolation.csv\n  vmtwin storage-predict trace.csv --vms web,mail --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="summary CSV (vm, read_iops, write_iops, ...) or per-request trace CSV")
    p.add_argument("--vms", help="comma-separated VMs to consolidate (default: all in the file)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_predict)
