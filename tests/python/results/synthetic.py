"""Synthetic engine output that follows docs/reference/engine-contract.md column for column.

Used until the native module is built: ``engine_raw()`` returns what ``Simulation.tables()``
returns (per table, per column, ``(dtype, little-endian bytes)``), with plausible, internally
consistent numbers (per vCPU ``%RUN + %RDY + %WAIT = 100``, ``%MLMTD <= %RDY``, VM = sum of its
vCPUs, host used MHz = sum of the VMs').
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

#: (name, vcpus, shares, reservation_mhz, limit_mhz or None, duty)
DEFAULT_VMS = [
    ("vm0", 2, 2000, 0, None, 0.7),
    ("web1", 1, 1000, 500, 1000, 0.42),
    ("db2", 4, 4000, 2000, None, 0.45),
]


def engine_raw(
    seed: int = 0,
    samples: int = 30,
    interval_s: float = 2.0,
    pcpus: int = 4,
    core_mhz: int = 2600,
    vms=DEFAULT_VMS,
) -> tuple[dict[str, dict[str, tuple[str, bytes]]], list[str]]:
    """Return ``(raw tables, vm_names)`` shaped like the engine's output."""
    rng = np.random.default_rng(seed)
    interval_ns = int(interval_s * 1e9)
    t = np.arange(1, samples + 1, dtype=np.float64) * interval_s

    vcpu_cols: dict[str, list] = {k: [] for k in ("time_s", "vm_id", "vcpu")}
    ns_names = ("run_ns", "ready_ns", "wait_ns", "idle_ns", "mlmtd_ns", "costop_ns", "used_ns")
    for k in ns_names:
        vcpu_cols[k] = []
    vm_rows: list[dict] = []
    for step in range(samples):
        for vm_id, (_, vcpus, shares, resv, limit, duty) in enumerate(vms):
            agg = dict.fromkeys(ns_names, 0)
            for v in range(vcpus):
                busy = min(1.0, max(0.0, duty + rng.normal(0, 0.05)))
                ready_frac = rng.uniform(0.0, 0.15) * busy
                if limit is not None:
                    ready_frac += 0.1
                run = int(interval_ns * busy * (1 - ready_frac))
                ready = int(interval_ns * busy * ready_frac)
                wait = interval_ns - run - ready
                idle = int(wait * 0.9)
                mlmtd = int(ready * 0.7) if limit is not None else 0
                vals = dict(run_ns=run, ready_ns=ready, wait_ns=wait, idle_ns=idle,
                            mlmtd_ns=mlmtd, costop_ns=0, used_ns=run)
                vcpu_cols["time_s"].append(t[step])
                vcpu_cols["vm_id"].append(vm_id)
                vcpu_cols["vcpu"].append(v)
                for k in ns_names:
                    vcpu_cols[k].append(vals[k])
                    agg[k] += vals[k]
            used_mhz = agg["used_ns"] / interval_ns * core_mhz
            vm_rows.append(dict(
                time_s=t[step], vm_id=vm_id, vcpus=vcpus, used_mhz=used_mhz,
                entitlement_mhz=min(vcpus * core_mhz, limit or 1e18) * 0.8,
                demand_mhz=duty * vcpus * core_mhz, demand_est_mhz=duty * vcpus * core_mhz * 1.05,
                shares=shares, reservation_mhz=resv,
                limit_mhz=np.nan if limit is None else float(limit), **agg,
            ))

    def pct(ns):
        return np.asarray(ns, dtype=np.float64) / interval_ns * 100.0

    def with_pct(cols):
        out = dict(cols)
        out["%USED"] = pct(cols["used_ns"])
        out["%RUN"] = pct(cols["run_ns"])
        out["%RDY"] = pct(cols["ready_ns"])
        out["%MLMTD"] = pct(cols["mlmtd_ns"])
        out["%WAIT"] = pct(cols["wait_ns"])
        out["%IDLE"] = pct(cols["idle_ns"])
        out["%VMWAIT"] = out["%WAIT"] - out["%IDLE"]
        out["%CSTP"] = pct(cols["costop_ns"])
        return out

    vcpu = with_pct(vcpu_cols)
    vm_keys = ["time_s", "vm_id", "vcpus", "used_mhz", "entitlement_mhz", "demand_mhz", "demand_est_mhz",
               "shares", "reservation_mhz", "limit_mhz", *ns_names]
    vm = with_pct({k: [r[k] for r in vm_rows] for k in vm_keys})
    nvm = len(vms)
    vm_used = np.asarray(vm.get("used_mhz", []), dtype=np.float64).reshape(samples, nvm)
    vm_run = np.asarray(vm.get("run_ns", []), dtype=np.float64).reshape(samples, nvm)
    vm_ready = np.asarray(vm.get("ready_ns", []), dtype=np.float64).reshape(samples, nvm)
    host = {
        "time_s": t,
        "pcpus": np.full(samples, pcpus),
        "capacity_mhz": np.full(samples, float(pcpus * core_mhz)),
        "used_mhz": vm_used.sum(axis=1),
        "%PCPU_UTIL": np.minimum(100.0, vm_run.sum(axis=1) / (pcpus * interval_ns) * 100.0),
        "%PCPU_USED": np.minimum(100.0, vm_used.sum(axis=1) / (pcpus * core_mhz) * 100.0),
        "ready_vcpus": vm_ready.sum(axis=1) / interval_ns,
        "powered_on_vms": np.full(samples, nvm),
    }

    dtypes = {
        "pcpus": "u32", "powered_on_vms": "u32", "vm_id": "u32", "vcpus": "u32", "vcpu": "u32",
        "shares": "u32", **{k: "u64" for k in ns_names},
    }
    np_types = {"f64": "<f8", "u64": "<u8", "u32": "<u4"}

    def encode(cols, keep):
        out = {}
        for k in keep:
            dt = dtypes.get(k, "f64")
            out[k] = (dt, np.asarray(cols[k]).astype(np_types[dt]).tobytes())
        return out

    pct_cols = ["%USED", "%RUN", "%RDY", "%MLMTD", "%WAIT", "%VMWAIT", "%IDLE", "%CSTP"]
    # Deliberately not in contract order (a Rust HashMap gives no order).
    raw = {
        "vcpu": encode(vcpu, sorted(["time_s", "vm_id", "vcpu", *pct_cols, *ns_names])),
        "host": encode(host, list(reversed(host))),
        "vm": encode(vm, sorted(["time_s", "vm_id", "vcpus", *pct_cols, "used_mhz",
                                 "entitlement_mhz", "demand_mhz", "demand_est_mhz", "shares", "reservation_mhz",
                                 "limit_mhz"])),
    }
    return raw, [v[0] for v in vms]


def load() -> object:
    """Import this file under a unique module name (conftests of other folders use it)."""
    name = "vmtwin_tests_synthetic"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
