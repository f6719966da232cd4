"""Clusters of hosts: VMs placed on hosts of different sizes, each host run as its own engine.

>>> from vmtwin.scenario import parse_scenario
>>> from vmtwin.cluster import run_cluster
>>> sc = parse_scenario('''
... duration: 20s
... clusters:
...   - name: c1
...     placement: first_fit
...     max_vcpus_per_pcpu: 1.0
...     hosts:
...       - {name: big, cores_per_llc: 4}
...       - {name: small, cores_per_llc: 2, count: 2}
... vms:
...   - {name: web, count: 5, vcpus: 1, workload: {type: cpu_bound, duty: 0.5}}
...   - {name: db, vcpus: 2, host: small-2, workload: {type: cpu_bound, duty: 0.9}}
... ''')
>>> res = run_cluster(sc, "/tmp/vmtwin-cluster-doctest", workers=1, force=True)
>>> res.sql("SELECT host, count(*) AS vms FROM placement GROUP BY host ORDER BY host").values.tolist()
[['big', 4], ['small-1', 1], ['small-2', 1]]

The section's schema is :mod:`vmtwin.cluster.schema`, its checks :mod:`vmtwin.cluster.checks`,
placement :mod:`vmtwin.cluster.placement`, and the run :mod:`vmtwin.cluster.runner`: hosts run
independently (no migration), so a cluster run is one engine run per host on a process pool,
and its tables, with a ``host`` column, are byte-identical whatever the number of workers.
"""

from __future__ import annotations

from typing import Any

import vmtwin.scenario.models  # noqa: F401 - defines the models this package's schema extends

__all__ = ["run_cluster", "plan_cluster"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from vmtwin.cluster import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'vmtwin.cluster' has no attribute {name!r}")
