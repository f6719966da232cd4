"""esxtop batch-mode (PDH-CSV) export of a results folder.

``esxtop -b`` writes one CSV row per sample: a timestamp, then one column per counter, each
named by a Windows-perfmon counter path ``\\\\<host>\\<object>(<instance>)\\<counter>``. This
module writes the CPU objects vmtwin models, with esxtop's object and counter names:

- ``Physical Cpu(_Total)``: the host's ``% Util Time`` and ``% Processor Time``; ``Physical
  Cpu(<n>)``: the same two per pCPU (from the ``pcpu`` table). On a hyperthreaded host
  (``threads_per_core: 2``) each also has ``% Core Util Time``, as esxtop shows ``CORE UTIL(%)``
  only there: per pCPU its core's (``%CORE_UTIL``), in ``_Total`` the mean over pCPUs (each core
  counted once per thread, so the mean over cores).
- ``Group Cpu(<GID>:<name>)``: one group per VM and per resource pool, with ``% Used``,
  ``% Run``, ``% Ready``, ``% Max Limited``, ``% Wait``, ``% VmWait``, ``% Idle``, ``% CoStop``. A pool
  group's values are the sums over the VMs in it and below it, as esxtop's pool groups sum
  their member worlds.
- ``Vcpu(<GID>:<vm>:<WID>:vmx-vcpu-<k>:<vm>)``: one per vCPU world, the same eight counters.

Departures from a real host's file are listed in ``docs/reference/counters.md`` (section
"esxtop export"): the IDs are vmtwin's, not the kernel's; and the objects vmtwin does not
model (network, interrupts, system groups) are absent.

A cluster run's folder (tables with a ``host`` column) gives one file with every host's
objects under that host's own machine prefix ``\\\\<host>\\``, as perfmon logs counters of
several machines in one PDH-CSV file: host after host in the clusters' order, each with only
its own pCPUs, VMs, pools (of the VMs on it) and vCPUs, never a mix.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vmtwin.export.atomic import atomic_output
from vmtwin.exceptions import scenario_error
from vmtwin.results import HOST_COLUMN, Results

__all__ = ["CPU_COUNTERS", "HOST_COUNTERS", "to_esxtop_csv", "world_id"]

#: esxtop batch-mode counter names of a CPU group or vCPU world, by vmtwin column.
CPU_COUNTERS: list[tuple[str, str]] = [
    ("%USED", "% Used"),
    ("%RUN", "% Run"),
    ("%RDY", "% Ready"),
    ("%MLMTD", "% Max Limited"),
    ("%WAIT", "% Wait"),
    ("%VMWAIT", "% VmWait"),
    ("%IDLE", "% Idle"),
    ("%CSTP", "% CoStop"),
]

#: esxtop batch-mode counter names of ``Physical Cpu(_Total)``, by ``host`` column.
HOST_COUNTERS: list[tuple[str, str]] = [("%PCPU_UTIL", "% Util Time"), ("%PCPU_USED", "% Processor Time")]

#: esxtop batch-mode name of a pCPU's core utilisation (``pcpu`` column ``%CORE_UTIL``), on
#: hyperthreaded hosts only.
CORE_COUNTER: tuple[str, str] = ("%CORE_UTIL", "% Core Util Time")

#: World IDs of a VM's vCPUs: ``WORLD_ID_BASE * GID + k``. Real world IDs are the kernel's;
#: these only need to be unique and stable.
WORLD_ID_BASE = 1000

_TIME_HEADER = "(PDH-CSV 4.0) (UTC)(0)"


def world_id(vm_id: int, vcpu: int) -> int:
    """The world ID written for vCPU ``vcpu`` of the VM with ``vm_id`` (its GID is ``vm_id + 1``)."""
    return WORLD_ID_BASE * (int(vm_id) + 1) + int(vcpu)


def _host_name(manifest: Mapping[str, Any]) -> str:
    for source in ("scenario", "params"):
        host = manifest.get(source)
        if isinstance(host, dict):
            host = host.get("host")
        if isinstance(host, dict) and isinstance(host.get("name"), str):
            return host["name"]
    return "esx01"


def _fmt(value: float) -> str:
    return "" if value is None or math.isnan(value) else repr(float(value))


def _wide(df: pd.DataFrame, keys: list[str], counter: str, times: np.ndarray) -> tuple[np.ndarray, dict]:
    """``counter`` as a (time x key) array, NaN where absent, and each key's column index.

    A key is a ``vm_id`` (one key column) or a ``(vm_id, vcpu)`` tuple.
    """
    wide = df.pivot_table(index="time_s", columns=keys, values=counter, aggfunc="first").reindex(times)
    index = {(int(k) if len(keys) == 1 else tuple(int(x) for x in k)): i for i, k in enumerate(wide.columns)}
    return wide.to_numpy(dtype=float), index


def _pools(manifest: Mapping[str, Any], vm_names: list[str]) -> list[tuple[str, list[str]]]:
    """Each pool of the run's scenario (parents first) with its VMs that have rows."""
    from vmtwin.report.pools import ROOT, pool_members

    shown = set(vm_names)
    return [(p, [v for v in vms if v in shown]) for p, vms in pool_members(manifest).items() if p != ROOT]


def to_esxtop_csv(
    results: Results | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    start: datetime = datetime(2000, 1, 1),
    host_name: str | None = None,
) -> Path:
    """Export a run's CPU counters as an esxtop batch-mode (PDH-CSV) file.

    Columns, after the timestamp: ``Physical Cpu(<n>)`` per pCPU, then ``Physical Cpu(_Total)``
    (``% Util Time``, ``% Processor Time``); per VM in ``vm_id`` order ``Group Cpu(<vm_id+1>:<vm>)``; per resource
    pool, parents first, ``Group Cpu(<GID>:<pool>)`` with GIDs after the VMs'; per vCPU
    ``Vcpu(<vm_id+1>:<vm>:<world_id>:vmx-vcpu-<k>:<vm>)``; each group and vCPU with the eight
    :data:`CPU_COUNTERS`. Every cell is quoted, lines end in CRLF, a cell is empty where the VM
    was powered off.

    Parameters
    ----------
    results : Results or path-like
        The run to export.
    path : path-like
        CSV file to write (atomically: a temp file renamed into place).
    start : datetime, optional
        Wall-clock time of simulated time 0 (timestamps are ``start + time_s``).
    host_name : str, optional
        Host name in the counter paths; default the scenario's host name, else ``esx01``. For a
        cluster run's folder: export only that host (default: every host, each under its own
        name).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        ``results`` is not a results folder.
    OutputError
        ``path`` is a folder or cannot be written (the message names it).
    """
    res = results if isinstance(results, Results) else Results(results)
    frames = {t: res.table(t) for t in ("host", "vm", "vcpu", "pcpu", "adapter", "lun", "path", "disk", "mem",
                                       "mem_host") if t in res.tables}
    host_df = frames.get("host", pd.DataFrame(columns=["time_s"]))
    vm_df = frames.get("vm", pd.DataFrame(columns=["time_s", "vm_id", "vm"]))
    times = np.array(sorted(set(host_df["time_s"].tolist()) | set(vm_df["time_s"].tolist())), dtype=float)
    all_ids = [int(i) for i in vm_df["vm_id"].unique()]
    n_spec = len((res.manifest.get("scenario") or {}).get("vms") or []) if isinstance(
        res.manifest.get("scenario"), Mapping) else 0
    first_pool_gid = max(n_spec, (max(all_ids) + 1) if all_ids else 0) + 1

    header = [_TIME_HEADER]
    columns: list[np.ndarray] = []
    if res.manifest.get("kind") == "cluster":  # each host under its own machine prefix
        names = list(dict.fromkeys(host_df[HOST_COLUMN].tolist()))
        if host_name is not None:
            if host_name not in names:
                raise scenario_error("host_name", host_name, "one of the folder's hosts: " + ", ".join(names[:20])
                                     + (", ..." if len(names) > 20 else ""))
            names = [host_name]
        pools = _cluster_pools(res.manifest)
        for name in names:
            own = {t: (df[df[HOST_COLUMN] == name] if HOST_COLUMN in df.columns else df) for t, df in frames.items()}
            h, c = _host_columns(own, times, f"\\\\{name}\\", pools, first_pool_gid)
            header += h
            columns += c
    else:
        h, c = _host_columns(frames, times, f"\\\\{host_name or _host_name(res.manifest)}\\", res.manifest,
                             first_pool_gid)
        header += h
        columns += c

    out = Path(path)
    with atomic_output(out, "esxtop CSV") as tmp:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
            writer.writerow(header)
            for row, t in enumerate(times):
                stamp = (start + timedelta(seconds=float(t))).strftime("%m/%d/%Y %H:%M:%S")
                writer.writerow([stamp, *(_fmt(c[row]) for c in columns)])
    return out


def _cluster_pools(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A cluster manifest's pools and each VM's pool, in a one-host manifest's form (``scenario``
    with engine-spec ``pools`` and ``vms``): the pools are every host's (the runner copies them
    to each host; the first host's spec, ``params``, has them) and the VMs are the scenario's
    ``vms`` entries with ``count`` expanded as the runner names them."""
    params = manifest.get("params") if isinstance(manifest.get("params"), Mapping) else {}
    scenario = manifest.get("scenario") if isinstance(manifest.get("scenario"), Mapping) else {}
    vms = []
    for v in scenario.get("vms") or []:
        if not isinstance(v, Mapping) or not isinstance(v.get("name"), str):
            continue
        count = int(v.get("count") or 1)
        names = [v["name"]] if count == 1 else [f"{v['name']}-{k}" for k in range(1, count + 1)]
        vms.extend({"name": n, "pool": v.get("pool")} for n in names)
    return {"scenario": {"pools": params.get("pools") or [], "vms": vms}}


def _threads_per_core(manifest: Mapping[str, Any]) -> int:
    """Threads per core of a one-host run's host (1 when the manifest does not say, as a cluster's
    per-host view does not)."""
    scenario = manifest.get("scenario")
    host = scenario.get("host") if isinstance(scenario, Mapping) else None
    threads = host.get("threads_per_core") if isinstance(host, Mapping) else None
    return int(threads) if isinstance(threads, int) else 1


def _host_columns(frames: Mapping[str, pd.DataFrame], times: np.ndarray, prefix: str, manifest: Mapping[str, Any],
                  first_pool_gid: int) -> tuple[list[str], list[np.ndarray]]:
    """One host's counter paths (under ``prefix``) and their columns over ``times``."""
    host_df = frames.get("host", pd.DataFrame(columns=["time_s"]))
    vm_df = frames.get("vm", pd.DataFrame(columns=["time_s", "vm_id", "vm"]))
    vcpu_df = frames.get("vcpu", pd.DataFrame(columns=["time_s", "vm_id", "vm", "vcpu"]))
    header: list[str] = []
    columns: list[np.ndarray] = []
    ht = _threads_per_core(manifest) == 2
    core_total = None
    if "pcpu" in frames:
        pcpu_df = frames["pcpu"]
        pcounters = [(c, label) for c, label in HOST_COUNTERS if c in pcpu_df.columns]
        if ht and CORE_COUNTER[0] in pcpu_df.columns:
            pcounters.append(CORE_COUNTER)
            core_total = pcpu_df.groupby("time_s")[CORE_COUNTER[0]].mean().reindex(times).to_numpy(dtype=float)
        if len(pcpu_df) and pcounters:
            pwide = {c: _wide(pcpu_df, ["pcpu"], c, times) for c, _ in pcounters}
            for n in sorted(int(p) for p in pcpu_df["pcpu"].unique()):
                for col, label in pcounters:
                    values, index = pwide[col]
                    header.append(f"{prefix}Physical Cpu({n})\\{label}")
                    columns.append(values[:, index[n]])
    h = host_df.drop_duplicates("time_s").set_index("time_s").reindex(times)
    for col, label in HOST_COUNTERS:
        if col in h.columns:
            header.append(f"{prefix}Physical Cpu(_Total)\\{label}")
            columns.append(h[col].to_numpy(dtype=float))
    if core_total is not None:
        header.append(f"{prefix}Physical Cpu(_Total)\\{CORE_COUNTER[1]}")
        columns.append(core_total)

    vms = vm_df[["vm_id", "vm"]].drop_duplicates("vm_id").sort_values("vm_id")
    vm_ids, vm_names = [int(i) for i in vms["vm_id"]], [str(n) for n in vms["vm"]]
    counters = [(c, label) for c, label in CPU_COUNTERS if c in vm_df.columns]
    wide = {c: _wide(vm_df, ["vm_id"], c, times) for c, _ in counters} if len(vm_df) else {}
    for vm_id, name in zip(vm_ids, vm_names):
        for col, label in counters:
            values, index = wide[col]
            header.append(f"{prefix}Group Cpu({vm_id + 1}:{name})\\{label}")
            columns.append(values[:, index[vm_id]])

    by_name = dict(zip(vm_names, vm_ids))
    for k, (pool, members) in enumerate(_pools(manifest, vm_names)):
        ids = [by_name[m] for m in members]
        for col, label in counters:
            values, index = wide[col]
            header.append(f"{prefix}Group Cpu({first_pool_gid + k}:{pool})\\{label}")
            part = values[:, [index[i] for i in ids]] if ids else np.zeros((len(times), 0))
            columns.append(np.nansum(part, axis=1))  # a powered-off member counts 0

    vcounters = [(c, label) for c, label in CPU_COUNTERS if c in vcpu_df.columns]
    if len(vcpu_df) and vcounters:
        vwide = {c: _wide(vcpu_df, ["vm_id", "vcpu"], c, times) for c, _ in vcounters}
        names = dict(zip(vm_ids, vm_names))
        worlds = vcpu_df[["vm_id", "vcpu"]].drop_duplicates().itertuples(index=False)
        for vm_id, v in sorted((int(a), int(b)) for a, b in worlds):
            name = names.get(int(vm_id), str(vm_id))
            world = f"{int(vm_id) + 1}:{name}:{world_id(vm_id, v)}:vmx-vcpu-{int(v)}:{name}"
            for col, label in vcounters:
                values, index = vwide[col]
                header.append(f"{prefix}Vcpu({world})\\{label}")
                columns.append(values[:, index[(vm_id, v)]])

    from vmtwin.export.esxtop_disk import disk_columns  # storage tables, when the run has them

    dh, dc = disk_columns({t: frames[t] for t in ("adapter", "lun", "path", "disk") if t in frames}, times, prefix)
    header += dh
    columns += dc

    from vmtwin.export.esxtop_mem import mem_columns  # memory tables, when the run has them

    mh, mc = mem_columns({t: frames[t] for t in ("mem", "mem_host") if t in frames}, times, prefix)
    header += mh
    columns += mc
    return header, columns
