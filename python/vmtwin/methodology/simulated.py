"""Simulated runs as methodology inputs: the engine's ``vcpu_perf`` table written as ``perf stat``.

The execution-speed model (``crates/vmtwin-core/src/perf/``) counts, per vCPU and sample
interval, instructions, cycles, LLC misses, DTLB walks, walk cycles and EPT walk cycles in three
layers: guest user, guest kernel and the hypervisor (VMM + VMkernel). This module turns one VM's
rows into the text ``perf stat -x, -A -I <interval ms>`` prints (a time stamp, the CPU, value,
unit, event, run time, percent running per line) and a run file beside it, so ``vmtwin overhead``
and :func:`~vmtwin.methodology.inputs.load_run` read a simulated run through exactly the code
that reads a real one (research/perf-methodology.md C.5-1).

A counter source is a view of the layers (research A.4, A.7):

- ``native_os`` (the profile is not virtualized): user and kernel are the guest's; no hypervisor
  runs; the EPT counter reads 0, as Table 3's native column.
- ``host_system`` (esx-emon-like): user is the guest's user mode; kernel holds the guest kernel
  plus the hypervisor, which runs in ring 0.
- ``guest_vpmc`` with ``vpmc_mode`` ``guest``: the guest's user and kernel only; the LLC counter is
  an uncore event a guest cannot program: ``<not supported>``.
- ``guest_vpmc`` with ``hybrid``: cycle-type events (cycles, reference cycles, walk cycles, EPT
  cycles) include the hypervisor's work for the vCPU, instructions and walk counts are the
  guest's; LLC ``<not supported>``. (``vcpu`` mode would count the VMM's emulation instructions;
  the model does not split those, so it is refused.)

Reference cycles equal cycles (the model has no turbo); every counter runs the whole interval
(run time = the interval, 100.00% running). The run's ``work_count`` is the work the model did
(its ``work_units``), its ``duration_s`` the sampled span, ``cpus`` the VM's vCPUs.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

import pyarrow as pa
import pyarrow.compute as pc

from vmtwin.exceptions import scenario_error
from vmtwin.methodology import perfstat
from vmtwin.methodology.schema import Run, RunMetadata

VIEWS = ("native_os", "host_system", "guest_vpmc")
#: perf event names written per canonical counter (Intel names for the walk events; resolved by
#: :mod:`.aliases` like any real file).
EVENT_NAMES = {
    "cycles": "cycles",
    "ref_cycles": "ref-cycles",
    "instructions": "instructions",
    "dtlb_walks": "dtlb_load_misses.walk_completed",
    "dtlb_walk_cycles": "dtlb_load_misses.walk_active",
    "ept_walk_cycles": "ept.walk_pending",
    "llc_misses": "LLC-load-misses",
}
_COLUMN = {"cycles": "cycles", "ref_cycles": "cycles", "instructions": "instructions", "dtlb_walks": "tlb_misses",
           "dtlb_walk_cycles": "walk_cycles", "ept_walk_cycles": "ept_walk_cycles", "llc_misses": "llc_misses"}
#: events that count time (a hybrid vPMC counts them while the hypervisor works for the vCPU)
_TIME_EVENTS = {"cycles", "ref_cycles", "dtlb_walk_cycles", "ept_walk_cycles"}


def _layers(event: str, mode: str, source: str, vpmc_mode: Optional[str]) -> list[str]:
    """The model's layers a counter of this source sees in this mode."""
    if mode == "user":
        return ["user"]
    hyp = source == "host_system" or (vpmc_mode == "hybrid" and event in _TIME_EVENTS)
    return ["kernel", "hyp"] if hyp else ["kernel"]


def _check_view(virtualized: bool, source: str, vpmc_mode: Optional[str], where: str) -> None:
    if source not in VIEWS:
        raise scenario_error(f"{where} source", source, ", ".join(VIEWS))
    if virtualized and source == "native_os":
        raise scenario_error(f"{where} source", source, "host_system or guest_vpmc: the VM's profile is virtualized")
    if not virtualized and source != "native_os":
        raise scenario_error(f"{where} source", source, "native_os: the VM's profile is not virtualized")
    if source == "guest_vpmc" and vpmc_mode not in ("guest", "hybrid"):
        raise scenario_error(f"{where} vpmc_mode", vpmc_mode, "guest or hybrid (the model does not split the VMM's "
                             "emulation instructions that vcpu mode counts)")
    if source != "guest_vpmc" and vpmc_mode is not None:
        raise scenario_error(f"{where} vpmc_mode", vpmc_mode, "none unless source is guest_vpmc")


def perf_stat_text(rows: pa.Table, interval_s: float, source: str, vpmc_mode: Optional[str] = None) -> str:
    """One VM's ``vcpu_perf`` rows as ``perf stat -x, -A -I`` output for this counter source."""
    data = rows.sort_by([("time_s", "ascending"), ("vcpu", "ascending")]).to_pylist()
    run_ns = int(round(interval_s * 1e9))
    lines = [f"# vmtwin simulated counters, source {source}" + (f", vPMC {vpmc_mode} mode" if vpmc_mode else "")]
    for r in data:
        for event, name in EVENT_NAMES.items():
            for mode, suffix in (("user", "u"), ("kernel", "k")):
                head = f"{r['time_s']:.9f},CPU{r['vcpu']},"
                if event == "llc_misses" and source == "guest_vpmc":
                    lines.append(f"{head}<not supported>,,{name}:{suffix},0,100.00,,")
                    continue
                layers = _layers(event, mode, source, vpmc_mode)
                value = sum(r[f"{_COLUMN[event]}_{layer}"] for layer in layers)
                lines.append(f"{head}{value:.0f},,{name}:{suffix},{run_ns},100.00,,")
    return "\n".join(lines) + "\n"


def vm_rows(results: Any, vm: str) -> tuple[pa.Table, dict[str, Any]]:
    """A VM's ``vcpu_perf`` rows and its engine profile, from a results folder (or Results)."""
    from vmtwin.results import Results

    res = results if isinstance(results, Results) else Results(results)
    if "vcpu_perf" not in res.tables:
        raise scenario_error(f"{res.path}", "no vcpu_perf table", "a run whose scenario gives a VM a perf profile")
    spec = res.manifest["scenario"]
    profile = (spec.get("perf") or {}).get("vms", {}).get(vm)
    if profile is None:
        profiled = sorted((spec.get("perf") or {}).get("vms", {}))
        raise scenario_error("--vm", vm, "a profiled VM of the run: " + (", ".join(profiled) or "none"))
    table = res.arrow("vcpu_perf")
    table = table.filter(pc.equal(table["vm"], vm))
    return table, {"profile": profile, "spec": spec, "interval_s": res.manifest["sample_interval_s"]}


def metadata(rows: pa.Table, info: dict[str, Any], source: str, vpmc_mode: Optional[str], label: str = "") -> RunMetadata:
    """Run metadata of a simulated run: platform from the profile, the model's work, the sampled span."""
    profile, spec, interval = info["profile"], info["spec"], info["interval_s"]
    virtualized = profile.get("virtualized", True)
    _check_view(virtualized, source, vpmc_mode, "simulated run")
    times = rows["time_s"].to_pylist()
    if not times:
        raise scenario_error("simulated run", "no vcpu_perf rows", "a VM that was powered on for a sample")
    work = float(pc.sum(rows["work_units"]).as_py())
    if not work > 0:
        raise scenario_error("simulated run work_units", work, "> 0 (the VM ran)")
    duration = max(times) - min(times) + interval
    host = spec["host"]
    return RunMetadata(platform="virtual" if virtualized else "native", source=source, vpmc_mode=vpmc_mode,
                       work_unit=profile.get("unit", "unit"), work_count=work, duration_s=duration,
                       cpus=len(set(rows["vcpu"].to_pylist())), nominal_mhz=float(host["core_mhz"]),
                       tsc_mhz=float(host["core_mhz"]), turbo=False, smt=host["threads_per_core"] == 2,
                       pinned=False, cpu_model="vmtwin simulated", throughput=work / duration, label=label)


def simulated_run(results: Any, vm: str, source: str, vpmc_mode: Optional[str] = None) -> Run:
    """A VM's simulated counters as a :class:`Run`, parsed from the perf stat text like a real file."""
    rows, info = vm_rows(results, vm)
    meta = metadata(rows, info, source, vpmc_mode, label=f"{vm} ({source})")
    text = perf_stat_text(rows, info["interval_s"], source, vpmc_mode)
    return Run.build(meta, perfstat.to_counters(perfstat.parse(text, path=f"{vm}.perf.csv"), origin=vm))


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(results: Any, vm: str, out_dir: str | Path, source: str, vpmc_mode: Optional[str] = None,
              name: Optional[str] = None) -> Path:
    """Write ``<name>.perf.csv`` (perf stat text) and ``<name>.json`` (the run file); returns the run file."""
    rows, info = vm_rows(results, vm)
    meta = metadata(rows, info, source, vpmc_mode, label=f"{vm} ({source})")
    text = perf_stat_text(rows, info["interval_s"], source, vpmc_mode)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = name or f"{vm}-{source}" + (f"-{vpmc_mode}" if vpmc_mode else "")
    _atomic_write(out / f"{name}.perf.csv", text)
    run = {"metadata": meta.as_dict(), "counters_file": f"{name}.perf.csv", "perf_separator": ","}
    path = out / f"{name}.json"
    _atomic_write(path, json.dumps(run, indent=2) + "\n")
    return path
