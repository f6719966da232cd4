"""Per-VM summary of a run: settings and the means of the esxtop CPU counters."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["SUMMARY_COLUMNS", "vm_summary"]

#: Columns of :func:`vm_summary`, in order.
SUMMARY_COLUMNS = [
    "vm",
    "vcpus",
    "shares",
    "reservation_mhz",
    "limit_mhz",
    "mean %USED",
    "mean %RDY",
    "mean %MLMTD",
    "p95 %RDY",
    "mean entitlement_mhz",
]


def vm_summary(vm: pd.DataFrame | None) -> pd.DataFrame:
    """Summarize the ``vm`` table, one row per VM in ``vm_id`` order.

    Parameters
    ----------
    vm : pandas.DataFrame or None
        The ``vm`` table of a results folder (None: no VM rows).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SUMMARY_COLUMNS`. Settings (``vcpus``, ``shares``, ``reservation_mhz``,
        ``limit_mhz``) are those of the last sample (NaN limit = unlimited); ``p95 %RDY`` is the
        95th percentile (linear interpolation) of the per-sample ``%RDY``.
    """
    rows = []
    if vm is not None and len(vm):
        ordered = vm.sort_values(["vm_id", "time_s"], kind="stable")
        for vm_id, g in ordered.groupby("vm_id", sort=True):
            last = g.iloc[-1]
            rows.append(
                {
                    "vm": str(last["vm"]),
                    "vcpus": int(last["vcpus"]),
                    "shares": int(last["shares"]),
                    "reservation_mhz": float(last["reservation_mhz"]),
                    "limit_mhz": float(last["limit_mhz"]),
                    "mean %USED": float(g["%USED"].mean()),
                    "mean %RDY": float(g["%RDY"].mean()),
                    "mean %MLMTD": float(g["%MLMTD"].mean()),
                    "p95 %RDY": float(np.percentile(g["%RDY"].to_numpy(), 95)),
                    "mean entitlement_mhz": float(g["entitlement_mhz"].mean()),
                }
            )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
