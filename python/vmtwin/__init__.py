"""vmtwin: a digital twin of a virtualized datacenter's resource management.

Quick start::

    from vmtwin import Simulation
    sim = Simulation("scenarios/quickstart.yaml")
    sim.run()
    results = sim.write("results/quickstart")
    results.sql('SELECT vm, avg("%RDY") AS rdy FROM vm GROUP BY vm ORDER BY rdy DESC')

API
---
Scenarios: :class:`Scenario`, :class:`Host`, :class:`ResourcePool`, :class:`VM`,
:class:`CpuBound`, :class:`Idle`, :class:`TraceWorkload`, :func:`load_scenario`,
:func:`parse_scenario`.
Running: :class:`Simulation`, :func:`run_scenario`.
Results: :class:`Results`, :func:`open_results`, :func:`render_report`.
Errors: :class:`VmtwinError`, :class:`ScenarioError`, :class:`AdmissionControlError`,
:class:`SimulationError`.
"""

from vmtwin import _interrupt

_interrupt.install()  # before the native module loads: Ctrl-C in the command's start-up prints no traceback

from vmtwin._core import __version__  # noqa: E402
from vmtwin.exceptions import AdmissionControlError, ScenarioError, SimulationError, VmtwinError  # noqa: E402

# The rest loads on first use (PEP 562): ``import vmtwin`` stays a few milliseconds, so the
# ``vmtwin`` command reaches its Ctrl-C handling before numpy, pyarrow and pydantic load.
_LAZY = {
    "render_report": "vmtwin.report",
    "Results": "vmtwin.results",
    "open_results": "vmtwin.results",
    "VM": "vmtwin.scenario",
    "CpuBound": "vmtwin.scenario",
    "Host": "vmtwin.scenario",
    "Idle": "vmtwin.scenario",
    "ResourcePool": "vmtwin.scenario",
    "Scenario": "vmtwin.scenario",
    "TraceWorkload": "vmtwin.scenario",
    "load_scenario": "vmtwin.scenario",
    "parse_scenario": "vmtwin.scenario",
    "Simulation": "vmtwin.simulation",
    "run_scenario": "vmtwin.simulation",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vmtwin' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__",
    "Scenario",
    "Host",
    "ResourcePool",
    "VM",
    "CpuBound",
    "Idle",
    "TraceWorkload",
    "load_scenario",
    "parse_scenario",
    "Simulation",
    "run_scenario",
    "Results",
    "open_results",
    "render_report",
    "VmtwinError",
    "ScenarioError",
    "AdmissionControlError",
    "SimulationError",
]
