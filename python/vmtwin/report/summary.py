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
    if vm is None or not len(vm):
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    ordered = vm.sort_values(["vm_id", "time_s"], kind="stable")
    last = ordered.drop_duplicates("vm_id", keep="last").set_index("vm_id").sort_index()
    groups = ordered.groupby("vm_id", sort=True)
    means = groups[["%USED", "%RDY", "%MLMTD", "entitlement_mhz"]].mean()
    return pd.DataFrame({
        "vm": last["vm"].astype(str).to_numpy(),
        "vcpus": last["vcpus"].astype(np.int64).to_numpy(),
        "shares": last["shares"].astype(np.int64).to_numpy(),
        "reservation_mhz": last["reservation_mhz"].astype(float).to_numpy(),
        "limit_mhz": last["limit_mhz"].astype(float).to_numpy(),
        "mean %USED": means["%USED"].to_numpy(dtype=float),
        "mean %RDY": means["%RDY"].to_numpy(dtype=float),
        "mean %MLMTD": means["%MLMTD"].to_numpy(dtype=float),
        "p95 %RDY": groups["%RDY"].quantile(0.95, interpolation="linear").to_numpy(dtype=float),
        "mean entitlement_mhz": means["entitlement_mhz"].to_numpy(dtype=float),
    }, columns=SUMMARY_COLUMNS)
