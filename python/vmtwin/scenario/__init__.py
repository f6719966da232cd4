"""The scenario schema: one pydantic model, the single source of truth for scenario files.

A scenario describes one ESX host, its resource-pool tree, its VMs and their workloads, and how
long to simulate. It is written in YAML (see ``scenarios/quickstart.yaml``) or built in Python::

    from vmtwin.scenario import Scenario, Host, VM, CpuBound
    sc = Scenario(host=Host(cores_per_llc=4), vms=[VM(name="a", workload=CpuBound(duty=1.0))])
    spec = sc.to_engine_spec()      # the normalized dict of docs/reference/engine-contract.md

Units (see :mod:`vmtwin.units`): sizes in bytes (GB = GiB = 2**30, as in vSphere), frequencies in
MHz, durations in ns. In YAML files a unit is mandatory (``memory: 4096`` is refused as ambiguous;
only ``0`` may omit it); Python builders also accept plain ints in those base units.

Errors: whatever is wrong, the user gets one :class:`~vmtwin.exceptions.ScenarioError` whose
message names the YAML path (``vms[1].cpu.limit``), the bad value and what is allowed, one line
per problem. Pydantic's ``ValidationError`` never escapes this package.

Checks that need the running engine (admission control of reservations against host and pool
capacity) are left to the engine, so they are written once.

The package, by job: ``fields`` (unit-bearing field types, the base model), ``models`` (host,
pools, VMs, workloads, the scenario and its normalization into the engine spec), ``checks``
(cross-field checks), ``errors`` (pydantic errors into one ScenarioError), ``loading`` (YAML in,
Scenario out, and the JSON Schema).
"""

from vmtwin.scenario.fields import MAX_CUSTOM_SHARES, POOL_SHARES, VM_SHARES_PER_VCPU
from vmtwin.scenario.loading import load_scenario, parse_scenario, scenario_json_schema
from vmtwin.scenario.models import (
    VM,
    Barrier,
    CpuBound,
    CpuScheduler,
    Host,
    Idle,
    PoolCpu,
    ResourcePool,
    Scenario,
    TraceWorkload,
    VmCpu,
    Workload,
)

__all__ = [
    "Scenario",
    "Host",
    "CpuScheduler",
    "ResourcePool",
    "PoolCpu",
    "VM",
    "VmCpu",
    "Idle",
    "CpuBound",
    "TraceWorkload",
    "Barrier",
    "Workload",
    "VM_SHARES_PER_VCPU",
    "POOL_SHARES",
    "MAX_CUSTOM_SHARES",
    "load_scenario",
    "parse_scenario",
    "scenario_json_schema",
]
