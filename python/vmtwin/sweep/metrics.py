"""What a sweep keeps of each run, the metrics computed from it, and their confidence intervals.

Per run, each sampled counter is reduced to its **mean over the run's samples** for each entity:
one row per VM (``vm`` table: %USED, %RUN, %RDY, %MLMTD, %WAIT, %VMWAIT, %IDLE, used, entitlement
and demand MHz), per vCPU (``vcpu`` table: the % counters) and for the host (``host`` table). The
samples are those of the run's sample interval, equally spaced, so the mean of a % counter over
the samples is the counter over the whole run (esxtop's % over a longer interval).

One counter is derived: ``%RDY_CONTENDED`` = ``%RDY`` - ``%MLMTD`` per VM and vCPU. esxtop's
``%RDY`` includes ``%MLMTD``, the time a vCPU was ready but held back by a CPU limit (its VM's or
a pool's), so a limited VM shows ready time on an idle host; what is left is the ready time
other VMs caused, the question a capacity plan asks (VMware's guidance reads ``%RDY`` minus
``%MLMTD`` the same way). ``vmtwin plan`` bounds ``max(vcpu.%RDY_CONTENDED)`` by default.

A **metric** turns one run into one number:

``max(vcpu.%RDY)``
    the largest per-vCPU run mean: "any vCPU's %RDY";
``max(vcpu.%RDY_CONTENDED)``
    the same without time held back by limits (what ``vmtwin plan`` bounds by default);
``mean(vm.%USED)``, ``min(...)``, ``sum(...)``
    the mean, least or total over the VMs (or vCPUs) of their run means;
``vm[web-1].%RDY``
    one VM's run mean;
``host.%PCPU_UTIL``
    the host's run mean.

Replications of a point are summarised per metric by their mean, sample standard deviation and a
two-sided confidence interval from Student's t with n-1 degrees of freedom (the replications are
independent runs with independent seeds; the t interval assumes their metric is roughly normal,
which a mean over many samples usually is). With one replication there is no interval (NaN).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa

from vmtwin.exceptions import scenario_error

__all__ = ["CONTENDED", "Metric", "parse_metric", "reduce_run", "metric_values", "t_interval", "DEFAULT_METRICS", "CONFIDENCE"]

#: Two-sided confidence of the intervals in summaries and plans.
CONFIDENCE = 0.95

#: Metrics every summary holds (a sweep file's ``metrics`` and ``--metric`` add more).
DEFAULT_METRICS = ("max(vcpu.%RDY)", "mean(vm.%RDY)", "mean(vm.%USED)", "host.%PCPU_UTIL")

_AGGS = ("max", "mean", "min", "sum")
_AGG_RE = re.compile(r"^(max|mean|min|sum)\((vm|vcpu)\.([^()]+)\)$")
_VM_RE = re.compile(r"^vm\[([^\]]+)\]\.(.+)$")
_HOST_RE = re.compile(r"^host\.(.+)$")
_ALLOWED = ("max|mean|min|sum(vm.COUNTER or vcpu.COUNTER), vm[NAME].COUNTER or host.COUNTER, "
            "e.g. max(vcpu.%RDY)")

# Columns that identify rows rather than measure anything.
_KEYS = {"vm": ("vm_id", "vm", "vcpus"), "vcpu": ("vm_id", "vm", "vcpu"), "host": ()}


@dataclass(frozen=True)
class Metric:
    """A parsed metric: the table, the counter, and how entities are combined (or which VM)."""

    text: str
    table: str
    counter: str
    agg: Optional[str] = None
    vm: Optional[str] = None


def parse_metric(text: str) -> Metric:
    """Parse ``max(vcpu.%RDY)``, ``vm[NAME].%USED`` or ``host.%PCPU_UTIL``."""
    s = text.strip() if isinstance(text, str) else ""
    if m := _AGG_RE.match(s):
        return Metric(s, m.group(2), m.group(3), agg=m.group(1))
    if m := _VM_RE.match(s):
        return Metric(s, "vm", m.group(2), vm=m.group(1))
    if m := _HOST_RE.match(s):
        return Metric(s, "host", m.group(1))
    raise scenario_error("metric", text, _ALLOWED)


#: The derived counter: ready time from contention alone (see the module docs).
CONTENDED = "%RDY_CONTENDED"

#: Settings rather than measurements: a sweep's coordinates say what they were.
_SETTINGS = ("reservation_mhz", "limit_mhz", "capacity_mhz")


def _measured(table: pa.Table, name: str) -> list[str]:
    """Counters kept of a sampled table: the % counters and MHz figures (not cumulative ns)."""
    return [c for c in table.column_names
            if c not in _KEYS[name] and c != "time_s" and c not in _SETTINGS
            and (c.startswith("%") or c.endswith("_mhz") or c == "ready_vcpus")]


def reduce_run(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """Each entity's mean over the run's samples: ``{"vm", "vcpu", "host"}`` small tables.

    Rows are ordered by engine VM id (and vCPU), whatever order the samples came in; sums run
    in sample order (``numpy.bincount``), so the result is the same wherever the run ran.
    """
    out = {}
    for name in ("vm", "vcpu", "host"):
        t = tables[name]
        cols = _measured(t, name)
        if name == "host":
            out[name] = pa.table({c: pa.array([float(np.mean(t.column(c).to_numpy(zero_copy_only=False)))],
                                              pa.float64()) for c in cols})
            continue
        key = t.column("vm_id").to_numpy(zero_copy_only=False).astype(np.int64)
        if name == "vcpu":
            key = key * (1 << 20) + t.column("vcpu").to_numpy(zero_copy_only=False).astype(np.int64)
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        counts = np.bincount(inv)
        body = {k: t.column(k).take(pa.array(first)) for k in _KEYS[name] if k in t.column_names}
        for c in cols:
            values = t.column(c).to_numpy(zero_copy_only=False).astype(np.float64)
            body[c] = pa.array(np.bincount(inv, weights=values) / counts, pa.float64())
        if "%RDY" in body and "%MLMTD" in body:
            # a difference of means is the mean of the differences; clipped at 0 against rounding
            rdy, lim = (body[c].to_numpy(zero_copy_only=False) for c in ("%RDY", "%MLMTD"))
            body[CONTENDED] = pa.array(np.maximum(rdy - lim, 0.0), pa.float64())
        out[name] = pa.table(body)
    return out


def metric_values(metric: Metric, run: dict[str, pa.Table]) -> float:
    """The metric of one run (its reduced tables)."""
    t = run[metric.table]
    if metric.counter not in t.column_names:
        raise scenario_error("metric", metric.text, f"a counter of the {metric.table} table: "
                             + ", ".join(_measured(t, metric.table)))
    values = np.asarray(t.column(metric.counter).to_numpy(zero_copy_only=False), dtype=float)
    if metric.table == "host":
        return float(values[0])
    if metric.vm is not None:
        names = t.column("vm").to_pylist()
        if metric.vm not in names:
            raise scenario_error("metric", metric.text, "a VM of the scenario: " + ", ".join(names[:20]))
        return float(values[names.index(metric.vm)])
    return float(getattr(np, metric.agg)(values)) if len(values) else math.nan


def t_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[int, float, float, float, float]:
    """``(n, mean, sd, low, high)`` of replications: Student's t interval, NaN for n < 2."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    n = len(v)
    mean = float(v.mean()) if n else math.nan
    if n < 2:
        return n, mean, math.nan, math.nan, math.nan
    sd = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return n, mean, sd, mean - half, mean + half
