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

from vmtwin._core import __version__
from vmtwin.exceptions import AdmissionControlError, ScenarioError, SimulationError, VmtwinError
from vmtwin.report import render_report
from vmtwin.results import Results, open_results
from vmtwin.scenario import (
    VM,
    CpuBound,
    Host,
    Idle,
    ResourcePool,
    Scenario,
    TraceWorkload,
    load_scenario,
    parse_scenario,
)
from vmtwin.simulation import Simulation, run_scenario

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
