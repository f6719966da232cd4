"""The report's cluster view: hosts by utilisation and ready time, and the worst VMs.

A cluster run (:mod:`vmtwin.cluster`, manifest ``kind: cluster``) has its hosts' names in the
``host`` column of every table (a one-host run has its one host there). Its page gets a
section before the per-VM table: the cluster's facts (mean host utilisation over all hosts,
empty ones included, as CloudSim Plus reports it, and over occupied hosts), a sortable table of
every host (utilisation is ``used_mhz / capacity_mhz``; ready time is the mean over samples of
the host's VMs' %RDY summed and divided by their vCPUs, i.e. the average vCPU's %RDY), and the
VMs with the most ready time. The rest of the page then shows the cluster as one host: its
``host`` rows summed per sample (:func:`cluster_totals`).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["is_cluster", "cluster_totals", "host_table", "worst_vms", "cluster_html", "WORST_VMS"]

#: VMs listed in the worst-VMs table.
WORST_VMS = 20


def is_cluster(manifest: dict[str, Any]) -> bool:
    """Is this a cluster run's manifest? (Every run's tables have a ``host`` column: a one-host
    run's has its one host.)"""
    return manifest.get("kind") == "cluster"


def cluster_totals(host: pd.DataFrame) -> pd.DataFrame:
    """The cluster as one host: sums per sample, %PCPU_UTIL and %PCPU_USED weighted by pCPUs."""
    h = host.assign(_u=host["%PCPU_UTIL"] * host["pcpus"], _d=host["%PCPU_USED"] * host["pcpus"])
    g = h.groupby("time_s", sort=True)
    out = g[["pcpus", "capacity_mhz", "used_mhz", "ready_vcpus", "powered_on_vms", "_u", "_d"]].sum()
    out["%PCPU_UTIL"] = out.pop("_u") / out["pcpus"]
    out["%PCPU_USED"] = out.pop("_d") / out["pcpus"]
    return out.reset_index()


def host_table(host: pd.DataFrame, vm: pd.DataFrame, manifest: dict[str, Any]) -> pd.DataFrame:
    """One row per host, by mean utilisation (highest first, then name)."""
    cluster_of = {h.get("host"): h.get("cluster") for h in manifest.get("hosts") or [] if isinstance(h, dict)}
    h = host.assign(util=host["used_mhz"] / host["capacity_mhz"])
    per = h.groupby("host", sort=True).agg(pcpus=("pcpus", "last"), capacity_mhz=("capacity_mhz", "last"),
                                           used_mhz=("used_mhz", "mean"), util=("util", "mean"),
                                           peak=("util", "max"))
    if len(vm):
        at = vm.groupby(["host", "time_s"], sort=True).agg(rdy=("%RDY", "sum"), vcpus=("vcpus", "sum"))
        at["per_vcpu"] = at["rdy"] / at["vcpus"]
        per_host = at.groupby(level=0).agg(rdy=("per_vcpu", "mean"))
        vms = vm.groupby("host").agg(vms=("vm", "nunique"))
        vcpus = vm.drop_duplicates(["host", "vm"]).groupby("host").agg(vcpus=("vcpus", "sum"))
        worst = vm.groupby(["host", "vm"])["%RDY"].mean().groupby(level=0).max().rename("worst")
        per = per.join(per_host).join(vms).join(vcpus).join(worst)
    for col in ("rdy", "worst"):
        if col not in per:
            per[col] = math.nan
    for col in ("vms", "vcpus"):
        per[col] = per[col].fillna(0).astype(int) if col in per else 0
    per = per.reset_index()
    per["cluster"] = per["host"].map(lambda n: cluster_of.get(n, ""))
    return per.sort_values(["util", "host"], ascending=[False, True], kind="stable").reset_index(drop=True)


def worst_vms(vm: pd.DataFrame, n: int = WORST_VMS) -> pd.DataFrame:
    """The ``n`` VMs with the highest mean %RDY (ties: name), with their host."""
    if not len(vm):
        return pd.DataFrame(columns=["vm", "host", "vcpus", "%USED", "%RDY", "%MLMTD"])
    g = vm.groupby(["vm", "host"], sort=True).agg(vcpus=("vcpus", "last"), **{c: (c, "mean") for c in
                                                                                ("%USED", "%RDY", "%MLMTD")})
    g = g.reset_index().sort_values(["%RDY", "vm"], ascending=[False, True], kind="stable")
    return g.head(n).reset_index(drop=True)


def _fmt(x: Any, digits: int = 1) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return escape(str(x))
    return "–" if math.isnan(v) else f"{v:.{digits}f}"


def _td(text: str, key: Any = None) -> str:
    if key is None:
        k = text
    else:
        v = float(key)
        k = "" if math.isnan(v) else repr(v)
    return f'<td data-v="{escape(k)}">{text}</td>'


def _table(table_id: str, heads: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return (f'<div class="scroll"><table id="{table_id}" class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def cluster_html(host: pd.DataFrame, vm: pd.DataFrame, manifest: dict[str, Any]) -> list[str]:
    """The cluster section's HTML blocks (heading, facts, hosts table, worst VMs table)."""
    hosts = host_table(host, vm, manifest)
    cap = float(host["capacity_mhz"].sum())
    overall = float(host["used_mhz"].sum()) / cap if cap else math.nan
    busy = host[host["host"].isin(set(vm["host"]))] if len(vm) else host.iloc[:0]
    busy_cap = float(busy["capacity_mhz"].sum())
    occupied = float(busy["used_mhz"].sum()) / busy_cap if busy_cap else math.nan
    clusters = list(dict.fromkeys(hosts["cluster"]))
    policies = {c.get("name"): c.get("placement", "drs") for c in (manifest.get("scenario") or {}).get("clusters", [])
                if isinstance(c, dict)}
    facts = (f"{len(hosts)} hosts in {len(clusters)} cluster{'s' if len(clusters) != 1 else ''} ("
             + ", ".join(f"{escape(str(c))}: {escape(str(policies.get(c, '?')))} placement" for c in clusters)
             + f"), {int(vm['vm'].nunique()) if len(vm) else 0} VMs, {int((hosts['vms'] == 0).sum())} empty hosts. "
             f"Mean host utilisation {overall:.6f} over all hosts (empty ones included), "
             f"{occupied:.6f} over occupied hosts.")
    rows = []
    for r in hosts.to_dict("records"):
        rows.append([
            _td(escape(str(r["host"]))), _td(escape(str(r["cluster"]))),
            _td(str(int(r["vms"])), r["vms"]), _td(str(int(r["vcpus"])), r["vcpus"]),
            _td(str(int(r["pcpus"])), r["pcpus"]), _td(_fmt(r["used_mhz"], 0), r["used_mhz"]),
            _td(_fmt(100 * r["util"]), 100 * r["util"]), _td(_fmt(100 * r["peak"]), 100 * r["peak"]),
            _td(_fmt(r["rdy"]), r["rdy"]), _td(_fmt(r["worst"]), r["worst"]),
        ])
    worst = worst_vms(vm)
    wrows = [[_td(escape(str(r["vm"]))), _td(escape(str(r["host"]))), _td(str(int(r["vcpus"])), r["vcpus"]),
              _td(_fmt(r["%USED"]), r["%USED"]), _td(_fmt(r["%RDY"]), r["%RDY"]),
              _td(_fmt(r["%RDY"] / r["vcpus"] if r["vcpus"] else np.nan), r["%RDY"] / max(r["vcpus"], 1)),
              _td(_fmt(r["%MLMTD"]), r["%MLMTD"])] for r in worst.to_dict("records")]
    return [
        "<h2>Cluster</h2>",
        f'<p class="note">{facts}</p>',
        "<h3>Hosts by utilisation</h3>",
        _table("cluster-hosts", ["host", "cluster", "VMs", "vCPUs", "pCPUs", "mean used (MHz)",
                                 "mean utilisation %", "peak utilisation %", "mean %RDY per vCPU",
                                 "worst VM mean %RDY"], rows),
        f"<h3>Worst VMs by ready time (top {WORST_VMS})</h3>",
        _table("cluster-worst-vms", ["VM", "host", "vCPUs", "mean %USED", "mean %RDY", "mean %RDY per vCPU",
                                     "mean %MLMTD"], wrows),
        '<p class="note">The sections below treat the cluster as one host: its hosts summed per sample.</p>',
    ]
