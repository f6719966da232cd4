"""What a workload reports, from the execution-speed model's work: throughput and completion time.

The engine's ``vcpu_perf`` table holds each vCPU's ``work_units`` per sample interval (business
operations for the ``specjbb`` preset, a fraction of one ``make bzImage`` for ``kernel-compile``,
transactions or rows for the Tier-1 presets). A SPECjbb-like VM reports its rate, summed over its
warehouses (= vCPUs); a kernel-compile-like VM reports when its work reaches one job.

>>> import pyarrow as pa
>>> rows = pa.table({"time_s": [2.0, 2.0, 4.0, 4.0], "vm": ["a"] * 4, "work_units": [0.2, 0.2, 0.3, 0.3]})
>>> round(work_rate(rows, "a", interval_s=2.0), 6)   # 1.0 unit over 4 s
0.25
>>> completion_time(rows, "a", interval_s=2.0)        # 0.4 by 2 s, the last 0.6 at 0.3/s
4.0
"""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa
import pyarrow.compute as pc

from vmtwin.exceptions import scenario_error


def _per_sample(rows: pa.Table, vm: str) -> list[tuple[float, float]]:
    mine = rows.filter(pc.equal(rows["vm"], vm))
    if mine.num_rows == 0:
        raise scenario_error("vm", vm, "a VM with vcpu_perf rows (one whose scenario gives it a perf profile)")
    grouped = mine.group_by("time_s").aggregate([("work_units", "sum")]).sort_by("time_s")
    return list(zip(grouped["time_s"].to_pylist(), grouped["work_units_sum"].to_pylist()))


def work_rate(rows: pa.Table, vm: str, interval_s: float) -> float:
    """The VM's units of work per second over its sampled span (bops for SPECjbb-like)."""
    samples = _per_sample(rows, vm)
    span = samples[-1][0] - samples[0][0] + interval_s
    return sum(w for _, w in samples) / span


def completion_time(rows: pa.Table, vm: str, interval_s: float, units: float = 1.0) -> Optional[float]:
    """Seconds from the first sampled interval's start until the VM's work reaches ``units``
    (work assumed steady within an interval); None if it never does within the run."""
    samples = _per_sample(rows, vm)
    done = 0.0
    for t, w in samples:
        if w > 0 and done + w >= units:
            return t - interval_s + interval_s * (units - done) / w
        done += w
    return None


def from_results(results: Any, vm: str) -> dict[str, Any]:
    """Rate, work and one-job completion time of a VM in a results folder."""
    from vmtwin.results import Results

    res = results if isinstance(results, Results) else Results(results)
    rows = res.arrow("vcpu_perf")
    interval = res.manifest["sample_interval_s"]
    samples = _per_sample(rows, vm)
    return {"vm": vm, "work_units": sum(w for _, w in samples), "rate_per_s": work_rate(rows, vm, interval),
            "completion_s": completion_time(rows, vm, interval)}
