"""Two runs side by side: each VM's mean counters in run A, in run B, and B - A."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vmtwin.report.summary import vm_summary
from vmtwin.results import Results

__all__ = ["COMPARED", "compare_hosts", "compare_runs"]

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


def compare_hosts(a: Results, b: Results) -> dict[str, tuple[float, float]]:
    """The host's mean ``%PCPU_UTIL`` and ``used_mhz`` in ``a`` and in ``b`` (NaN without rows)."""
    out = {}
    for col in ("%PCPU_UTIL", "used_mhz"):
        pair = []
        for res in (a, b):
            host = res.host if "host" in res.tables else None
            pair.append(float(host[col].mean()) if host is not None and len(host) else float("nan"))
        out[col] = (pair[0], pair[1])
    return out
