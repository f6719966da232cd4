"""Resource pools in a run: the tree with its settings, and usage and entitlement per pool.

The engine writes no pool table, so per-pool figures are derived here: the tree and each pool's
shares, reservation, limit and expandable flag come from the manifest's scenario (the engine
spec the run started from), a VM's pool from the same spec, and a pool's usage and entitlement
at each sample are the sums of ``used_mhz`` and ``entitlement_mhz`` over the VMs in the pool and
in the pools below it. The root row (the host) sums every VM. Two consequences to keep in mind:
a pool's entitlement here is what its VMs are entitled to, which is less than the pool's own
allocation when its VMs demand less; and settings changed during a stepped run are not shown
(the table shows the settings at the start).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ROOT", "pool_members", "pool_tree", "pool_usage"]

#: Name of the host's root pool in the report.
ROOT = "(host)"

#: Columns of :func:`pool_tree`.
TREE_COLUMNS = ["pool", "parent", "depth", "shares", "reservation_mhz", "limit_mhz", "expandable",
                "vms", "mean used_mhz", "peak used_mhz", "mean entitlement_mhz"]


def _spec(manifest: Mapping[str, Any]) -> tuple[list[dict], dict[str, str | None]]:
    scenario = manifest.get("scenario")
    if not isinstance(scenario, Mapping):
        return [], {}
    pools = [p for p in scenario.get("pools") or [] if isinstance(p, Mapping) and isinstance(p.get("name"), str)]
    vm_pool = {v["name"]: v.get("pool") for v in scenario.get("vms") or []
               if isinstance(v, Mapping) and isinstance(v.get("name"), str)}
    return pools, vm_pool


def _members(pools: list[dict], vm_pool: Mapping[str, str | None]) -> tuple[dict[str, list[str]], dict[str, str | None]]:
    """Each pool's VMs, its own and those of every pool below it; and each pool's parent."""
    parent = {p["name"]: p.get("parent") for p in pools}
    members: dict[str, list[str]] = {ROOT: list(vm_pool)}
    members.update({p["name"]: [] for p in pools})
    for vm, pool in vm_pool.items():
        seen = set()
        while pool is not None and pool in parent and pool not in seen:
            seen.add(pool)
            members[pool].append(vm)
            pool = parent[pool]
    return members, parent


def pool_members(manifest: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each pool's VMs, those in it and in every pool below it, by the run's scenario.

    Returns
    -------
    dict of str to list of str
        :data:`ROOT` (every VM of the scenario) first, then the scenario's pools, parents first;
        VMs in scenario order.
    """
    members, _ = _members(*_spec(manifest))
    return members


def pool_usage(vm: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """Per pool and sample: the summed ``used_mhz`` and ``entitlement_mhz`` of its VMs.

    Parameters
    ----------
    vm : pandas.DataFrame
        The ``vm`` table.
    manifest : mapping
        The run's manifest (its ``scenario`` gives the pools and each VM's pool).

    Returns
    -------
    pandas.DataFrame
        Columns ``time_s``, ``pool``, ``used_mhz``, ``entitlement_mhz``: one row per pool (the
        root :data:`ROOT` first, then the scenario's pools parents first) and sample time. A
        pool with no powered-on VM at a sample counts 0 there.
    """
    pools, vm_pool = _spec(manifest)
    members, _ = _members(pools, vm_pool)
    if len(vm):
        names = list(dict.fromkeys(vm["vm"].tolist()))
        members[ROOT] = list(dict.fromkeys(members[ROOT] + names))
        times = np.sort(vm["time_s"].unique())
        used = vm.pivot_table(index="time_s", columns="vm", values="used_mhz", aggfunc="sum").reindex(times)
        ent = vm.pivot_table(index="time_s", columns="vm", values="entitlement_mhz", aggfunc="sum").reindex(times)
    else:
        times, used, ent = np.array([], dtype=float), pd.DataFrame(), pd.DataFrame()
    frames = []
    for pool in [ROOT, *(p["name"] for p in pools)]:
        cols = [m for m in members[pool] if m in used.columns]
        frames.append(pd.DataFrame({
            "time_s": times,
            "pool": pool,
            "used_mhz": used[cols].fillna(0.0).sum(axis=1).to_numpy() if cols else np.zeros(len(times)),
            "entitlement_mhz": ent[cols].fillna(0.0).sum(axis=1).to_numpy() if cols else np.zeros(len(times)),
        }))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["time_s", "pool", "used_mhz", "entitlement_mhz"])


def pool_tree(usage: pd.DataFrame, manifest: Mapping[str, Any]) -> pd.DataFrame:
    """The pool tree in display order (depth first, file order among siblings) with settings and means.

    Parameters
    ----------
    usage : pandas.DataFrame
        :func:`pool_usage` of the run.
    manifest : mapping
        The run's manifest.

    Returns
    -------
    pandas.DataFrame
        Columns ``TREE_COLUMNS``: the root first (depth 0, no settings), each pool after its
        parent at ``depth`` = its parent's + 1. ``limit_mhz`` is NaN when unlimited, ``vms``
        counts the VMs in the pool and below it.
    """
    pools, vm_pool = _spec(manifest)
    members, parent = _members(pools, vm_pool)
    by_name = {p["name"]: p for p in pools}
    children: dict[str | None, list[str]] = {}
    for p in pools:
        par = p.get("parent") if p.get("parent") in by_name else None
        children.setdefault(par, []).append(p["name"])
    stats = usage.groupby("pool", sort=False).agg(mean_used=("used_mhz", "mean"), peak_used=("used_mhz", "max"),
                                                  mean_ent=("entitlement_mhz", "mean"))
    rows = []

    def add(name: str, par: str | None, depth: int) -> None:
        p = by_name.get(name, {})
        limit = p.get("limit_mhz")
        st = stats.loc[name] if name in stats.index else None
        rows.append({
            "pool": name, "parent": par, "depth": depth,
            "shares": float(p["shares"]) if "shares" in p else np.nan,
            "reservation_mhz": float(p["reservation_mhz"]) if "reservation_mhz" in p else np.nan,
            "limit_mhz": float(limit) if limit is not None else np.nan,
            "expandable": p.get("expandable"),
            "vms": len(members.get(name, [])),
            "mean used_mhz": float(st["mean_used"]) if st is not None else 0.0,
            "peak used_mhz": float(st["peak_used"]) if st is not None else 0.0,
            "mean entitlement_mhz": float(st["mean_ent"]) if st is not None else 0.0,
        })

    add(ROOT, None, 0)
    stack = [(c, ROOT, 1) for c in reversed(children.get(None, []))]
    done: set[str] = set()
    while stack:
        name, par, depth = stack.pop()
        if name in done:
            continue
        done.add(name)
        add(name, par, depth)
        stack.extend((c, name, depth + 1) for c in reversed(children.get(name, [])))
    return pd.DataFrame(rows, columns=TREE_COLUMNS)
