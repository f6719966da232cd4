"""Two runs side by side: each VM's mean counters in run A, in run B, and B - A."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vmtwin.report.summary import vm_summary
from vmtwin.results import HOST_COLUMN, Results

__all__ = ["COMPARED", "HOST_COMPARED", "compare_hosts", "compare_runs"]

#: Summary columns compared, with their short labels.
COMPARED = {
    "mean %USED": "%USED",
    "mean %RDY": "%RDY",
    "mean %MLMTD": "%MLMTD",
    "mean entitlement_mhz": "entitlement MHz",
}


def _summary(res: Results) -> pd.DataFrame:
    return vm_summary(res.vm if "vm" in res.tables else None)


def compare_runs(a: Results, b: Results) -> pd.DataFrame:
    """Per VM, the means of :data:`COMPARED` in ``a``, in ``b`` and their difference.

    Parameters
    ----------
    a, b : Results
        Two results folders.

    Returns
    -------
    pandas.DataFrame
        Column ``vm`` and, per compared column ``c``, ``"c a"``, ``"c b"`` and ``"c diff"``
        (``b - a``). VMs are matched by name: A's VMs in A's order, then those only in B. A VM
        in one run only has NaN on the other side and in ``diff``.
    """
    sa, sb = _summary(a).set_index("vm"), _summary(b).set_index("vm")
    names = list(sa.index) + [n for n in sb.index if n not in sa.index]
    sa, sb = sa.reindex(names), sb.reindex(names)
    out = {"vm": names}
    for col in COMPARED:
        va, vb = sa[col].to_numpy(dtype=float), sb[col].to_numpy(dtype=float)
        out[f"{col} a"], out[f"{col} b"], out[f"{col} diff"] = va, vb, vb - va
    return pd.DataFrame(out, columns=["vm", *(f"{c} {s}" for c in COMPARED for s in ("a", "b", "diff"))]).astype(
        {f"{c} {s}": np.float64 for c in COMPARED for s in ("a", "b", "diff")})


def _host_means(res: Results) -> dict[str, dict[str, float]]:
    """Per host (by name, in the folder's order; ``""`` for a folder without a ``host`` column):
    the mean of each :data:`HOST_COMPARED` column over its samples."""
    host = res.host if "host" in res.tables else None
    if host is None or not len(host):
        return {}
    groups = host.groupby(HOST_COLUMN, sort=False) if HOST_COLUMN in host.columns else [("", host)]
    return {str(name): {c: float(g[c].mean()) for c in HOST_COMPARED} for name, g in groups}


#: ``host`` table columns compared.
HOST_COMPARED = ("%PCPU_UTIL", "used_mhz")


def compare_hosts(a: Results, b: Results) -> dict[str, tuple[float, float]]:
    """The host's mean ``%PCPU_UTIL`` and ``used_mhz`` in ``a`` and in ``b`` (NaN without rows).

    A cluster run's hosts are compared host by host, never mixed: when either folder has more
    than one host, the keys are ``"<host> %PCPU_UTIL"`` and ``"<host> used_mhz"`` for every host
    (A's in A's order, then those only in B), NaN on the side a host is missing from.
    """
    ma, mb = _host_means(a), _host_means(b)
    nan = {c: float("nan") for c in HOST_COMPARED}
    if len(ma) <= 1 and len(mb) <= 1:
        x, y = next(iter(ma.values()), nan), next(iter(mb.values()), nan)
        return {c: (x[c], y[c]) for c in HOST_COMPARED}
    names = list(ma) + [n for n in mb if n not in ma]
    return {f"{n} {c}": (ma.get(n, nan)[c], mb.get(n, nan)[c]) for n in names for c in HOST_COMPARED}
