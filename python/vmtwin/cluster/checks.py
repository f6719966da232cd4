"""Checks of a scenario's shape: one host, or clusters of hosts (and what each allows).

Called by :class:`vmtwin.scenario.Scenario`'s validation before the one-host checks of
:mod:`vmtwin.scenario.checks`, which a cluster scenario gets too, on a probe: the scenario
with its largest host in place of the clusters (host-level messages of the probe are dropped,
the hosts are checked here by their own paths). What depends on placement (a VM too big for
every host it may go to, a full cluster) is checked here where it can be, the rest when the
VMs are placed (:mod:`vmtwin.cluster.placement`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from vmtwin.exceptions import ScenarioError, scenario_error

if TYPE_CHECKING:
    from vmtwin.scenario.models import Scenario

__all__ = ["scenario_errors"]


def scenario_errors(sc: Scenario, one_host_errors: Callable[[Scenario], Iterable[ScenarioError]], *,
                    one_host: bool = False) -> Iterator[ScenarioError]:
    """Every problem of ``sc``; ``one_host``: the caller needs a one-host scenario (an engine spec)."""
    from vmtwin.scenario.errors import _Missing

    if not sc.clusters:
        if sc.host is None:
            yield scenario_error("host", _Missing(), "a required key: The ESX host (or a clusters: section)")
            return
        if not sc.vms:
            yield scenario_error("vms", [], "at least one VM")
            return
        for i, vm in enumerate(sc.vms):
            for key in ("host", "cluster"):
                if getattr(vm, key) is not None:
                    yield scenario_error(f"vms[{i}].{key}", getattr(vm, key),
                                         "nothing: a scenario without clusters has one host")
                    return
        yield from one_host_errors(sc)
        return
    if one_host:
        yield scenario_error("clusters", f"{len(sc.clusters)} clusters",
                             "a scenario without clusters here; run this one with vmtwin cluster SCENARIO "
                             "(or vmtwin.cluster.run_cluster)")
        return
    yield from _cluster_errors(sc)
    from vmtwin.scenario.models import Host

    largest = max((h for c in sc.clusters for h in c.hosts), key=lambda h: h.logical_cpus)
    probe = sc.model_copy(update={"host": Host(**{k: getattr(largest, k) for k in Host.model_fields}),
                                  "clusters": []})
    for err in one_host_errors(probe):
        if not getattr(err, "path", "").startswith("host"):
            yield err


def _cluster_errors(sc: Scenario) -> Iterator[ScenarioError]:
    if sc.host is not None:
        yield scenario_error("host", "a host", "no top-level host in a scenario with clusters (each cluster "
                             "lists its hosts)")
    clusters: dict[str, int] = {}
    hosts: dict[str, tuple[int, str]] = {}  # host name -> (cluster index, path of the entry)
    for c, cl in enumerate(sc.clusters):
        if cl.name in clusters:
            yield scenario_error(f"clusters[{c}].name", cl.name, "a cluster name not used by an earlier cluster")
        clusters[cl.name] = c
        for h, host in enumerate(cl.hosts):
            at = f"clusters[{c}].hosts[{h}]"
            if host.core_mhz == 0:
                yield scenario_error(f"{at}.core_mhz", "0MHz", "a positive frequency, e.g. '2600MHz'")
            if host.memory == 0:
                yield scenario_error(f"{at}.memory", "0B", "a positive size, e.g. '64GB'")
            for name in host.expanded_names():
                if name in hosts:
                    yield scenario_error(f"{at}.name", name, f"a host name not used elsewhere (it is also "
                                         f"{hosts[name][1]}.name)")
                    break
                hosts[name] = (c, at)
    if not sc.vms and not any(cl.trace_vms for cl in sc.clusters):
        yield scenario_error("vms", [], "at least one VM (in vms, or a cluster's trace_vms)")
    for i, vm in enumerate(sc.vms):
        c = 0
        if vm.cluster is not None:
            if vm.cluster not in clusters:
                yield scenario_error(f"vms[{i}].cluster", vm.cluster, "the name of a cluster: " + ", ".join(clusters))
                continue
            c = clusters[vm.cluster]
        cl = sc.clusters[c]
        if vm.host is not None:
            if vm.host not in hosts or (vm.cluster is not None and hosts[vm.host][0] != c):
                names = [n for n, (k, _) in hosts.items() if k == c or vm.cluster is None]
                yield scenario_error(f"vms[{i}].host", vm.host, "a host of the clusters: " + ", ".join(names[:10])
                                     + (f", ... ({len(names)} hosts)" if len(names) > 10 else ""))
                continue
            cl = sc.clusters[hosts[vm.host][0]]
            fitting = [h for h in cl.hosts if vm.host in h.expanded_names()]
        else:
            fitting = cl.hosts
        most = max(h.logical_cpus for h in fitting)
        if vm.vcpus > most:
            yield scenario_error(f"vms[{i}].vcpus", vm.vcpus, f"at most {most} vCPUs, the logical CPUs of "
                                 + (f"host {vm.host}" if vm.host is not None else
                                    f"the largest host of cluster {cl.name!r} (this VM fits no host)"))
