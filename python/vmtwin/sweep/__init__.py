"""Sweeps over scenario parameters and seeds, and capacity answers searched over sweeps.

>>> from vmtwin.scenario import Scenario, Host, VM, CpuBound
>>> from vmtwin.sweep import build_sweep, run_sweep
>>> base = Scenario(duration="2s", sample_interval="500ms", host=Host(cores_per_llc=2),
...                 vms=[VM(name="v", count=2, workload=CpuBound(duty=1.0))])
>>> sw = build_sweep(base, {"vms[0].count": [2, 3]}, replications=2, seed=1)
>>> tables = run_sweep(sw, workers=1)
>>> s = tables["summary"].to_pandas()
>>> s[s.metric == "mean(vm.%RDY)"]["mean"].round(1).tolist()   # 2 VMs on 2 pCPUs, then 3
[0.0, 33.3]

A sweep is a base scenario, a grid ``{YAML path: [values]}`` and a number of replications
(:mod:`vmtwin.sweep.spec`); its runs go to a process pool or a Ray cluster
(:mod:`vmtwin.sweep.runner`); each run is reduced to per-VM, per-vCPU and host means and to
metrics, replications to t intervals (:mod:`vmtwin.sweep.metrics`); the folder and its plot are
written atomically (:mod:`vmtwin.sweep.dataset`). :mod:`vmtwin.sweep.plan` searches over sweeps
for how many more VMs of a profile fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence, Union

import pyarrow as pa

from vmtwin.sweep.metrics import CONFIDENCE, DEFAULT_METRICS, parse_metric
from vmtwin.sweep.spec import Sweep, build_sweep, load_sweep

__all__ = ["Sweep", "build_sweep", "load_sweep", "run_sweep", "write_sweep", "sweep_info"]


def _metrics(sweep: Sweep, extra: Sequence[str] = ()):
    texts = list(dict.fromkeys([*DEFAULT_METRICS, *sweep.metrics, *extra]))
    return [parse_metric(t) for t in texts]


def run_sweep(sweep: Sweep, *, backend: str = "local", workers: Optional[int] = None, address: Optional[str] = None,
              metrics: Sequence[str] = (), progress=None) -> dict[str, pa.Table]:
    """Run every point and replication; the dataset's tables (``runs``, ``vm``, ``vcpu``,
    ``host``, ``summary``), identical whatever the backend and number of workers."""
    from vmtwin.sweep.dataset import build_tables
    from vmtwin.sweep.runner import run_tasks

    ms = _metrics(sweep, metrics)
    tasks = sweep.tasks()
    results = run_tasks(tasks, backend=backend, workers=workers, address=address, progress=progress)
    return build_tables(sweep, tasks, results, ms)


def sweep_info(sweep: Sweep, metrics: Sequence[str] = ()) -> dict[str, Any]:
    """What ``sweep.json`` records: everything that determines the dataset, nothing else."""
    from vmtwin import __version__

    return {
        "vmtwin_version": __version__,
        "name": sweep.name,
        "base_scenario": sweep.base.model_dump(mode="json"),
        "grid": sweep.grid,
        "replications": sweep.replications,
        "seed": sweep.seed,
        "duration": sweep.duration,
        "metrics": [m.text for m in _metrics(sweep, metrics)],
        "aggregation": "per run: each VM's / vCPU's / the host's mean of each counter over the run's samples; "
                       "metric: max, mean, min or sum of those over VMs or vCPUs; summary: mean over "
                       f"replications with a two-sided {CONFIDENCE:.0%} Student t interval (n-1 d.o.f.)",
        "seeds": "blake2b(sweep seed, coordinates, replication), 63 bits",
    }


def write_sweep(sweep: Sweep, out: Union[str, Path], tables: dict[str, pa.Table], *, force: bool = False,
                plot_x: Optional[str] = None, plot_metric: str = DEFAULT_METRICS[0],
                metrics: Sequence[str] = ()) -> Path:
    """Write the sweep folder (tables, ``sweep.json``, ``report.html``) atomically."""
    from vmtwin.exceptions import scenario_error
    from vmtwin.sweep.dataset import plot_metric as plot, write_dataset

    x = plot_x or sweep.paths[0]
    if x not in sweep.grid:
        raise scenario_error("--plot-x", x, "a swept path: " + ", ".join(sweep.paths))
    if plot_metric not in set(tables["summary"].column("metric").to_pylist()):
        raise scenario_error("--plot-metric", plot_metric, "a metric of the summary: "
                             + ", ".join(dict.fromkeys(tables["summary"].column("metric").to_pylist())))
    html = plot(tables["summary"], x, plot_metric, sweep.paths, sweep.name)
    return write_dataset(Path(out), tables, sweep_info(sweep, metrics), force=force, html=html)
