"""The report's CPU scheduling section: per vCPU, ready time against the admins' 5% and 10%
guide lines, co-stop (%CSTP), NUMA home node and migrations; and the host's migrations and NUMA
home moves over the run.

Everything is read from the ``vcpu`` table (docs/reference/counters.md): ``%RUN``, ``%RDY``,
``%CSTP`` per sample, ``home_node`` (-1 = not NUMA-managed) at each sample's end, and the
per-interval ``migrations``, ``llc_migrations`` and ``node_migrations``. A home move is a change
of a vCPU's ``home_node`` between two samples (counted per vCPU; a VM's vCPUs move together
unless it is a wide VM split into NUMA clients).
"""

from __future__ import annotations

import math

import pandas as pd

from vmtwin.report.figures import RDY_GUIDES

__all__ = ["VCPU_ROWS", "vcpu_sched_summary"]

#: vCPUs listed in the table (the worst by mean %RDY + %CSTP; a large run has thousands).
VCPU_ROWS = 200

_COLUMNS = ["vm", "vm_id", "vcpu", "mean %RUN", "mean %RDY", "mean %CSTP", "home node", "home moves",
            "migrations", "to another LLC", "to another node"]


def rdy_band(mean_rdy: float) -> str:
    """The guide-line band of a vCPU's mean %RDY: '' below 5%, 'watch' from 5% to 10%, 'problem' at
    10% or more (:data:`vmtwin.report.figures.RDY_GUIDES`)."""
    (watch, _, _), (problem, _, _) = RDY_GUIDES
    if math.isnan(mean_rdy) or mean_rdy < watch:
        return ""
    return "problem" if mean_rdy >= problem else "watch"


def vcpu_sched_summary(vcpu: pd.DataFrame) -> pd.DataFrame:
    """One row per vCPU (columns ``_COLUMNS``), worst first by mean %RDY + %CSTP, ties by
    ``vm_id`` and vCPU: means of ``%RUN``, ``%RDY``, ``%CSTP`` over the run, its last ``home_node``
    (NaN when never NUMA-managed), its home moves and its summed migrations. Columns absent from
    an older results folder count as NaN."""
    if not len(vcpu):
        return pd.DataFrame(columns=_COLUMNS)
    df = vcpu.sort_values(["vm_id", "vcpu", "time_s"], kind="stable").copy()
    for col in ("%RUN", "%RDY", "%CSTP", "home_node", "migrations", "llc_migrations", "node_migrations"):
        if col not in df.columns:
            df[col] = math.nan
    g = df.groupby(["vm_id", "vcpu"], sort=True)
    out = pd.DataFrame({
        "vm": g["vm"].first(),
        "mean %RUN": g["%RUN"].mean(),
        "mean %RDY": g["%RDY"].mean(),
        "mean %CSTP": g["%CSTP"].mean(),
        "home node": g["home_node"].last(),
        "home moves": g["home_node"].agg(lambda h: int((h.diff().fillna(0) != 0).sum()) if h.notna().all() else math.nan),
        "migrations": g["migrations"].sum(min_count=1),
        "to another LLC": g["llc_migrations"].sum(min_count=1),
        "to another node": g["node_migrations"].sum(min_count=1),
    }).reset_index()
    out.loc[out["home node"] < 0, "home node"] = math.nan
    key = out["mean %RDY"].fillna(0) + out["mean %CSTP"].fillna(0)
    out = out.assign(_key=-key).sort_values(["_key", "vm_id", "vcpu"], kind="stable").drop(columns="_key")
    return out[_COLUMNS].reset_index(drop=True)


def host_placement_facts(vcpu: pd.DataFrame, duration_s: float) -> str:
    """One sentence on the run's migrations (per second, the shares to another LLC and to another
    node) and home-node moves, for the note under the table."""
    s = vcpu_sched_summary(vcpu)
    if not len(s) or s["migrations"].isna().all():
        return ""
    moves = float(s["migrations"].sum())
    llc, node = float(s["to another LLC"].sum()), float(s["to another node"].sum())
    per_s = moves / duration_s if duration_s > 0 else math.nan
    share = (lambda x: f"{100 * x / moves:.1f}%") if moves else (lambda x: "–")
    homes = s["home moves"].dropna()
    home = (f"; NUMA home-node moves: {int(homes.sum())} (over {int((s['home node'].notna()).sum())} NUMA-managed vCPUs)"
            if len(homes) and s["home node"].notna().any() else "; no vCPU is NUMA-managed")
    return (f"Migrations: {int(moves):,} in all ({per_s:.1f} a second), {share(llc)} to another LLC, "
            f"{share(node)} to another NUMA node{home}.")
