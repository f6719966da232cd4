"""A cluster run: expand the VMs, place them, run every host as its own engine, write one folder.

Hosts run independently (no migration, no management action during the run), so a cluster
run is one ordinary one-host run per host: the host's own scenario is the cluster scenario
with that host and the VMs placed on it (so any top-level setting, such as the scheduler's
parameters or a fidelity, passes through to every host), and its seed is derived from the
scenario's seed and the host's name (blake2b), so hosts draw independent random streams and a
host's results do not depend on which other hosts exist. The runs go to a local process pool
(the sweep's, :mod:`vmtwin.sweep.runner`), one task per host; their tables come back in the
hosts' order and are streamed into one results folder with a ``host`` column (and ``vm_id``
numbering the cluster's VMs host after host), so the folder is byte-identical whatever the
number of workers. In fluid mode a host is far cheaper to simulate than to hand to a process
and convert on its own, so the hosts go to the engine :data:`FLUID_BATCH_HOSTS` at a time
(``vmtwin._core.run_fluid_hosts``, ``vmtwin_core::fluid::Batch``: the same one-host engine
per host, on ``workers`` threads, each host writing its rows straight into one output buffer
with a host index): the same rows, tables and folder as running the hosts one by one.

The folder holds the usual tables (``host``, ``vm``, ``vcpu``, ``pcpu``; rows host by host, in
the clusters' order, each host's rows in time order), ``placement`` (one row per VM: cluster,
host, pinned, expected entitlement, the host's headroom after it, overcommitted) and a manifest
with ``kind: cluster``, the scenario as given, and per host its seed, VMs, events and wall time.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

import numpy as np
import pyarrow as pa

from vmtwin.cluster.placement import HostSlot, VmNeed, place
from vmtwin.exceptions import ScenarioError, VmtwinError, scenario_error

__all__ = ["ClusterPlan", "HostRun", "plan_cluster", "run_cluster", "run_host", "PLACEMENT_COLUMNS"]

#: Columns of the ``placement`` table.
PLACEMENT_COLUMNS = ["cluster", "host", "vm", "vcpus", "pinned", "policy", "entitlement_mhz", "headroom_mhz",
                     "overcommitted"]

#: Modules the pool's fork server imports once, so each worker starts with them loaded.
_PRELOAD = ("pandas", "vmtwin.simulation", "vmtwin.cluster.runner")

_SEED_MASK = (1 << 63) - 1


@dataclass
class HostRun:
    """One host's run: its place in the cluster and its engine spec."""

    cluster: str
    name: str
    seed: int
    vms: list[str]
    spec: dict = field(repr=False)


@dataclass
class ClusterPlan:
    """A cluster scenario placed and split into host runs (what :func:`run_cluster` runs)."""

    scenario: Any
    hosts: list[HostRun]
    placement: pa.Table


@dataclass
class _Vm:
    """A VM after ``count`` and trace-set expansion."""

    model: Any  # a count-1 VM model
    where: str  # its YAML path, for errors
    pin: Optional[str]
    trace: Any = None


def host_seed(seed: int, host: str) -> int:
    """The seed of a host's run: blake2b of the scenario's seed and the host's name, 63 bits."""
    digest = hashlib.blake2b(f"{seed}/{host}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _SEED_MASK


def _as_scenario(scenario: Any):
    from vmtwin.simulation import _as_scenario as load  # a path, YAML text, dict or Scenario, as Simulation

    return load(scenario)


def _duration_ns(value: Union[str, float, int]) -> int:
    from vmtwin.simulation import _ns  # '10min' or seconds, as Simulation(duration=...)

    return _ns(value, "--duration")


# --------------------------------------------------------------------------------------------
# Expansion: VMs of vms and of trace sets, per cluster
# --------------------------------------------------------------------------------------------


def _expand(sc) -> list[list[_Vm]]:
    """Each cluster's VMs, in file order: ``vms`` entries (count expanded), then trace sets."""
    per: list[list[_Vm]] = [[] for _ in sc.clusters]
    index = {c.name: k for k, c in enumerate(sc.clusters)}
    host_cluster = {n: k for k, c in enumerate(sc.clusters) for h in c.hosts for n in h.expanded_names()}
    traces = sc.load_traces()
    for i, vm in enumerate(sc.vms):
        k = index[vm.cluster] if vm.cluster is not None else host_cluster.get(vm.host, 0)
        one = vm.model_copy(update={"count": 1, "host": None, "cluster": None})
        for name in vm.expanded_names():
            per[k].append(_Vm(one.model_copy(update={"name": name}), f"vms[{i}]", vm.host, traces.get(i)))
    from vmtwin.traces import TraceReader

    reader = TraceReader()
    for k, cl in enumerate(sc.clusters):
        for t, ts in enumerate(cl.trace_vms):
            per[k].extend(_trace_set(sc, ts, f"clusters[{k}].trace_vms[{t}]", reader))
    seen: dict[str, str] = {}
    for vms in per:
        for v in vms:
            if v.model.name in seen:
                raise scenario_error(f"{v.where}.name", v.model.name, f"a VM name not already used (it is also "
                                     f"{seen[v.model.name]}'s)")
            seen[v.model.name] = v.where
    return per


def _trace_set(sc, ts, where: str, reader) -> list[_Vm]:
    from vmtwin.scenario.models import VM, TraceWorkload
    from vmtwin.traces import checked_path

    folder = checked_path(ts.path, "a trace folder")
    if not folder.is_absolute():
        folder = sc.base_dir / folder
    if not folder.is_dir():
        raise scenario_error(f"{where}.path", ts.path, f"an existing folder of traces ({folder} is not one)")
    common = {"burst": ts.burst, "loop": ts.loop, "speedup": ts.speedup}
    out: list[_Vm] = []
    try:
        if ts.format == "planetlab":
            files = sorted((f for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")),
                           key=lambda f: f.name.encode())
            if not files:
                raise scenario_error(f"{where}.path", ts.path, "a folder with at least one trace file")
            for n, f in enumerate(files[:ts.count] if ts.count else files, start=1):
                w = TraceWorkload(format="planetlab", path=str(f), **common)
                vm = VM(name=f"{ts.name}-{n}", vcpus=ts.vcpus, memory=ts.memory, cpu=ts.cpu, workload=w)
                out.append(_Vm(vm, where, None, reader.planetlab(f)))
            return out
        import pyarrow.parquet as pq

        from vmtwin.traces import bitbrains_vm_ids

        ids = bitbrains_vm_ids(folder)
        tasks = pq.read_table(folder / "tasks.parquet", columns=["id", "submission_time", "mem_capacity"])
        row = {int(i): r for r, i in reversed(list(enumerate(tasks.column("id").to_pylist())))}
        sub = tasks.column("submission_time").to_pylist()
        mem = tasks.column("mem_capacity").to_pylist()
        first = min(sub)
        for n, vm_id in enumerate(ids[:ts.count] if ts.count else ids, start=1):
            tr = reader.bitbrains(folder, vm_id)
            r = row[vm_id]
            power_on = (sub[r] - first) * 10**6 if ts.power_on == "submission" else 0
            w = TraceWorkload(format="bitbrains", path=str(folder), vm_id=vm_id, **common)
            vm = VM(name=f"{ts.name}-{vm_id}", vcpus=tr.meta["cpu_count"], memory=max(1, int(mem[r])) * 1024,
                    cpu=ts.cpu, power_on=power_on, workload=w)
            out.append(_Vm(vm, where, None, tr))
        return out
    except ScenarioError as exc:
        if getattr(exc, "path", "").startswith(where):
            raise
        raise scenario_error(f"{where}.path", ts.path, str(exc)) from None


# --------------------------------------------------------------------------------------------
# Expected demand (for DRS-like placement)
# --------------------------------------------------------------------------------------------


def expected_util(vm: _Vm, duration_ns: int) -> float:
    """The workload's mean demand over the run, as a fraction of its vCPUs."""
    w = vm.model.workload
    if w.type == "idle":
        return 0.0
    if w.type == "cpu_bound":
        return float(w.duty)
    return window_mean(vm.trace.segment_ns, vm.trace.utilization, w.offset, w.speedup, duration_ns, w.loop)


def window_mean(seg: list[int], util: list[float], offset: int, speedup: float, duration_ns: int,
                loop: bool) -> float:
    """Time-weighted mean of a piecewise-constant trace over the replayed window: ``duration``
    of simulated time from ``offset``, i.e. ``duration x speedup`` of trace time; after the end
    the trace starts over (``loop``) or demands nothing."""
    s = np.asarray(seg, dtype=np.float64)
    edges = np.concatenate([[0.0], np.cumsum(s)])
    work = np.concatenate([[0.0], np.cumsum(s * np.asarray(util, dtype=np.float64))])
    total = edges[-1]

    def integral(x: float) -> float:
        if loop:
            cycles, rest = divmod(x, total)
            return cycles * work[-1] + float(np.interp(rest, edges, work))
        return float(np.interp(min(x, total), edges, work))

    span = duration_ns * speedup
    return (integral(offset + span) - integral(float(offset))) / span if span > 0 else 0.0


# --------------------------------------------------------------------------------------------
# Planning: placement and the hosts' specs
# --------------------------------------------------------------------------------------------


def plan_cluster(scenario: Any, *, seed: Optional[int] = None, duration: Union[str, float, None] = None) -> ClusterPlan:
    """Place a cluster scenario's VMs and build each host's engine spec (nothing runs).

    Raises
    ------
    ScenarioError
        The scenario has no clusters, or a VM cannot be placed, or a host's scenario is invalid;
        the message names the field.
    """
    sc = _as_scenario(scenario)
    if not sc.clusters:
        raise scenario_error("clusters", [], "at least one cluster (a one-host scenario runs with vmtwin run)")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise scenario_error("--seed", seed, "an integer from 0 to 2^64-1")
        sc = sc.model_copy(update={"seed": seed})
    if duration is not None:
        sc = sc.model_copy(update={"duration": _duration_ns(duration)})
    per_cluster = _expand(sc)
    hosts: list[HostRun] = []
    rows: dict[str, list] = {c: [] for c in PLACEMENT_COLUMNS}
    for k, (cl, vms) in enumerate(zip(sc.clusters, per_cluster)):
        slots = [HostSlot(n, h.logical_cpus, h.core_mhz, h.memory) for h in cl.hosts for n in h.expanded_names()]
        models = [h for h in cl.hosts for _ in h.expanded_names()]
        needs = [VmNeed(v.model.name, v.model.vcpus, v.model.memory, v.model.cpu.reservation, v.model.cpu.limit,
                        expected_util(v, sc.duration), v.pin, v.where) for v in vms]
        decisions = place(slots, needs, cl.placement, cluster=cl.name,
                          max_vcpus_per_pcpu=cl.max_vcpus_per_pcpu, max_memory_ratio=cl.max_memory_ratio)
        on: dict[str, list[_Vm]] = {s.name: [] for s in slots}
        for v, d in zip(vms, decisions):
            on[d.host].append(v)
            for col, value in zip(PLACEMENT_COLUMNS, (cl.name, d.host, d.vm, v.model.vcpus, d.pinned, cl.placement,
                                                      d.entitlement_mhz, d.headroom_mhz, d.overcommitted)):
                rows[col].append(value)
        for slot, model in zip(slots, models):
            hosts.append(_host_run(sc, cl.name, slot.name, model, on[slot.name]))
    types = {"vcpus": pa.uint32(), "pinned": pa.bool_(), "overcommitted": pa.bool_(),
             "entitlement_mhz": pa.float64(), "headroom_mhz": pa.float64()}
    placement = pa.table({c: pa.array(rows[c], type=types.get(c, pa.string())) for c in PLACEMENT_COLUMNS})
    return ClusterPlan(sc, hosts, placement)


def _host_run(sc, cluster: str, name: str, host_model, vms: list[_Vm]) -> HostRun:
    """One host's scenario (the cluster scenario with this host and its VMs) as an engine spec."""
    from vmtwin.scenario.models import VM, Host, Idle, Scenario

    host = Host(**{k: getattr(host_model, k) for k in Host.model_fields if k != "name"}, name=name)
    seed = host_seed(sc.seed, name)
    # The engine runs an empty host; a scenario has at least one VM: stand one in, then drop it.
    models = [v.model for v in vms] or [VM(name="placeholder", workload=Idle())]
    fields = {k: getattr(sc, k) for k in Scenario.model_fields}
    fields.update(host=host, clusters=[], vms=models, seed=seed)
    sub = Scenario.model_construct(**fields)
    sub._base_dir = sc._base_dir
    sub._trace_cache = {j: v.trace for j, v in enumerate(vms) if v.trace is not None}
    try:
        spec = sub.to_engine_spec()
    except ScenarioError as exc:
        raise _on_host(exc, name, vms) from None
    if not vms:
        spec["vms"] = []
    return HostRun(cluster, name, seed, [v.model.name for v in vms], spec)


def _on_host(exc: ScenarioError, host: str, vms: list[_Vm]) -> ScenarioError:
    """A host scenario's error, its ``vms[j]`` path turned back into the VM's own path."""
    path = getattr(exc, "path", None)
    m = re.match(r"^vms\[(\d+)\]", path or "")
    if m is None or not hasattr(exc, "allowed"):
        return ScenarioError(f"host {host}: {exc}")
    v = vms[int(m.group(1))]
    return scenario_error(v.where + path[m.end():], exc.value, f"{exc.allowed} (VM {v.model.name} on host {host})")


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def run_host(job: tuple[str, dict]) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """Run one host to its end (in a pool worker): its tables and facts for the manifest."""
    from vmtwin.simulation import Simulation

    name, spec = job
    sim = Simulation.replay({"scenario": spec, "actions": [], "scenario_name": name})
    sim.run()
    m = sim.manifest()
    facts = {k: m[k] for k in ("event_count", "wall_time_s", "params", "sched_stats")}
    facts["log"] = m["log"]
    return sim.tables(), facts


Progress = Optional[Callable[[int, int], None]]


def _named(host: str, call: Callable, *args: Any) -> Any:
    """``call(*args)``; a vmtwin error (admission control refusing a VM, ...) names the host."""
    try:
        return call(*args)
    except VmtwinError as exc:
        raise type(exc)(f"host {host}: {exc}") from None


def _results(jobs: list[tuple[str, dict]], workers: int, progress: Progress):
    """Yield each host's results in the jobs' order, from this process or a pool."""
    if workers <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            yield _named(job[0], run_host, job)
            if progress:
                progress(i + 1, len(jobs))
        return
    import multiprocessing

    from vmtwin.sweep import runner as pool_runner  # the sweep's process pool, reused

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(_PRELOAD))
    pool_runner._start_fork_server()
    pool = pool_runner._start_pool(ctx, min(workers, len(jobs)))
    try:
        futures = [pool.submit(run_host, job) for job in jobs]
        for i, f in enumerate(futures):
            yield _named(jobs[i][0], f.result)
            futures[i] = None  # type: ignore[call-overload]  # its tables are written: free them
            if progress:
                progress(i + 1, len(jobs))
    except BaseException:
        pool_runner._stop(pool)
        raise
    finally:
        pool.shutdown(wait=True)


#: Keys of a host's entry in the manifest's ``hosts``.
_HOST_FACTS = ("cluster", "host", "seed", "vms", "event_count", "wall_time_s", "sched_stats", "log")

#: Hosts per engine call in fluid mode: their tables are held in memory until written, and
#: Ctrl-C is seen between calls. The PlanetLab day's 800 hosts make 4 calls of about 0.1 s.
FLUID_BATCH_HOSTS = 256

Written = tuple[dict[str, pa.Table], list[dict[str, Any]]]  # tables with the host column; hosts' facts


def _one_by_one(hosts: list[HostRun], results) -> Iterator[Written]:
    """Per host (event mode): its tables with the host column and the cluster's ``vm_id``, and its facts."""
    from vmtwin.results import with_host_column

    first_id = 0  # vm_id across the cluster: the hosts' VMs numbered one after the other
    for h, (tables, facts) in zip(hosts, results):
        out = {name: with_host_column(_shift_vm_ids(table, first_id), h.name) for name, table in tables.items()}
        first_id += len(h.vms)
        yield out, [{"cluster": h.cluster, "host": h.name, "seed": h.seed, "vms": h.vms, **facts}]


def _fluid_results(hosts: list[HostRun], workers: int, progress: Progress,
                   engine: Optional[dict[str, float]] = None) -> Iterator[Written]:
    """Fluid mode: :data:`FLUID_BATCH_HOSTS` hosts per engine call (``vmtwin._core.run_fluid_hosts``,
    ``workers`` threads), their tables joined there with a host index and ``vm_id`` across them;
    the same rows and tables as running them one by one."""
    import json

    from vmtwin import _core
    from vmtwin.results import HOST_COLUMN, columns_from_engine

    first_id = 0
    for at in range(0, len(hosts), FLUID_BATCH_HOSTS):
        chunk = hosts[at:at + FLUID_BATCH_HOSTS]
        specs, traces = zip(*(_apart(h.spec) for h in chunk))
        start, cpu = time.perf_counter(), time.process_time()
        try:
            raw, facts, params = _core.run_fluid_hosts(list(specs), workers, list(traces))
        except VmtwinError as exc:
            host = chunk[getattr(exc, "host_index", 0)].name
            raise type(exc)(f"host {host}: {exc}") from None
        if engine is not None:
            engine["wall_s"] += time.perf_counter() - start
            engine["cpu_s"] += time.process_time() - cpu  # the engine's threads included
        names = pa.array([h.name for h in chunk], type=pa.string())
        index = {name: cols.pop(HOST_COLUMN)[1] for name, cols in raw.items()}
        tables = columns_from_engine(raw, [v for h in chunk for v in h.vms])
        out: dict[str, pa.Table] = {}
        for name, table in tables.items():
            ids = pa.array(np.frombuffer(index[name], dtype="<u4"), type=pa.uint32())
            at_col = 1 if table.num_columns and table.column_names[0] == "time_s" else 0
            out[name] = _shift_vm_ids(table, first_id).add_column(at_col, HOST_COLUMN, names.take(ids))
        first_id += sum(len(h.vms) for h in chunk)
        params_now = json.loads(params) if params is not None else None
        yield out, [{"cluster": h.cluster, "host": h.name, "seed": h.seed, "vms": h.vms, "event_count": pieces,
                     "wall_time_s": round(wall, 6), "params": params_now,
                     "sched_stats": dict.fromkeys(_core.SCHED_STATS_KEYS, 0),  # no scheduler ran
                     "log": [{"time_s": t / 1e9, "message": m} for t, m in log]}
                    for h, (pieces, wall, log) in zip(chunk, facts)]
        if progress:
            progress(min(at + FLUID_BATCH_HOSTS, len(hosts)), len(hosts))


def _apart(spec: dict) -> tuple[str, list[tuple[int, bytes, bytes]]]:
    """A host's engine spec as JSON with its trace workloads' lists left empty, and those
    traces as little-endian arrays, ``(vm index, segment_ns, utilization)``, which the engine
    puts back (``vmtwin_core::fluid::set_traces``): thousands of traces as JSON numbers cost
    more to write and parse than to simulate."""
    import json

    vms, traces = [], []
    for j, vm in enumerate(spec.get("vms", [])):
        w = vm.get("workload", {})
        if w.get("kind") == "trace":
            traces.append((j, np.asarray(w["segment_ns"], dtype="<u8").tobytes(),
                           np.asarray(w["utilization"], dtype="<f8").tobytes()))
            vm = {**vm, "workload": {**w, "segment_ns": [], "utilization": []}}
        vms.append(vm)
    return json.dumps({**spec, "vms": vms}, separators=(",", ":")), traces


def _shift_vm_ids(table: pa.Table, by: int) -> pa.Table:
    """``vm_id`` + ``by``: an engine numbers its host's VMs from 0, the cluster's tables all of them."""
    if by == 0 or "vm_id" not in table.column_names:
        return table
    import pyarrow.compute as pc

    i = table.column_names.index("vm_id")
    return table.set_column(i, "vm_id", pc.add(table.column(i), pa.scalar(by, pa.uint32())))


def run_cluster(scenario: Any, out_dir: Union[str, Path], *, workers: Optional[int] = None,
                seed: Optional[int] = None, duration: Union[str, float, None] = None, force: bool = False,
                progress: Progress = None):
    """Run a cluster scenario: place, run every host (``workers`` processes, default every
    core), stream the tables into ``out_dir`` (atomically) and open it.

    Returns
    -------
    vmtwin.results.Results

    Raises
    ------
    ScenarioError
        The scenario is not a cluster scenario or cannot be placed (the message names the field).
    OutputError
        ``out_dir`` exists (without ``force``) or cannot be written.
    """
    from vmtwin import __version__
    from vmtwin.results import Results, ResultsWriter, check_output_folder

    workers = workers if workers is not None else (os.cpu_count() or 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise VmtwinError(f"--workers: got {workers!r}; allowed: an integer of at least 1")
    start = time.perf_counter()
    check_output_folder(out_dir, force=force)  # before placement and runs, not after them
    plan = plan_cluster(scenario, seed=seed, duration=duration)
    sc = plan.scenario
    writer = ResultsWriter(out_dir, force=force)
    hosts_facts: list[dict[str, Any]] = []
    params: Any = None
    try:
        writer.append("placement", plan.placement)
        engine = {"wall_s": 0.0, "cpu_s": 0.0}  # fluid: wall and CPU time inside the engine calls
        if sc.fidelity == "fluid":
            results = _fluid_results(plan.hosts, workers, progress, engine)
        else:
            jobs = [(h.name, h.spec) for h in plan.hosts]
            results = _one_by_one(plan.hosts, _results(jobs, workers, progress))
        for tables, facts in results:
            for name, table in tables.items():
                writer.append(name, table)
            params = params if params is not None else facts[0]["params"]
            hosts_facts.extend({k: f[k] for k in _HOST_FACTS} for f in facts)
        manifest = {
            "vmtwin_version": __version__,
            "kind": "cluster",
            "scenario_name": sc.name,
            "scenario": sc.model_dump(mode="json", exclude_none=True),
            "seed": sc.seed,
            "params": params,
            "duration_s": sc.duration / 1e9,
            "sample_interval_s": sc.sample_interval / 1e9,
            "simulated_s": sc.duration / 1e9,
            "wall_time_s": round(time.perf_counter() - start, 6),
            "workers": workers,
            **({"engine_wall_s": round(engine["wall_s"], 6), "engine_cpu_s": round(engine["cpu_s"], 6)}
               if sc.fidelity == "fluid" else {}),
            "event_count": sum(f["event_count"] for f in hosts_facts),
            "hosts": hosts_facts,
            "actions": [],
        }
        path = writer.close(manifest)
    except BaseException:
        writer.abort()
        raise
    return Results(path)
