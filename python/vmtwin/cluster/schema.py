"""The ``clusters`` section of a scenario: hosts of any size, a placement policy, trace sets.

A scenario with ``clusters`` has no top-level ``host``; its VMs (``vms``, plus those each
cluster's ``trace_vms`` read from a folder of traces) are placed on the clusters' hosts (see
:mod:`vmtwin.cluster.placement`) and each host then runs as a one-host scenario of its own.
A VM names its cluster with ``cluster`` (default: the first) or is pinned with ``host``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, Strict, StringConstraints

from vmtwin.scenario.fields import Bytes, Name, Nanos, PosInt, _Model
from vmtwin.scenario.models import Host, VmCpu

__all__ = ["Cluster", "ClusterHost", "TraceSet", "POLICIES"]

#: Placement policies by name (see :mod:`vmtwin.cluster.placement`).
POLICIES = ("first_fit", "drs")


class ClusterHost(Host):
    """One host of a cluster, or ``count`` identical ones named ``<name>-1 .. <name>-<count>``."""

    count: PosInt = Field(1, description="Number of identical hosts (names get -1..-N when > 1).")

    def expanded_names(self) -> list[str]:
        """Names of the hosts this entry stands for, after ``count`` expansion."""
        if self.count == 1:
            return [self.name]
        return [f"{self.name}-{k}" for k in range(1, self.count + 1)]


class TraceSet(_Model):
    """Every trace of a folder as a VM: a PlanetLab day folder (one file per VM) or an OpenDC
    ``tasks-fragments`` folder (one task per VM, Bitbrains among them).

    VMs are named ``<name>-<k>`` in the order of the files' names (byte order, as CloudSim
    reads them) or of the tasks' ids. An OpenDC task's ``cpu_count`` gives the VM's vCPUs and
    its ``mem_capacity`` its memory; its ``submission_time`` (from the earliest of the set)
    its power-on time when ``power_on: submission``.
    """

    name: Name = Field(description="Prefix of the VMs' names.")
    format: Literal["planetlab", "opendc"] = Field(description="planetlab (folder of files) or opendc (tasks-fragments).")
    path: Annotated[str, Strict(), StringConstraints(min_length=1)] = Field(
        description="The folder, relative to the scenario file.")
    count: Optional[PosInt] = Field(None, description="Take only the first N traces (default: all).")
    vcpus: PosInt = Field(1, description="vCPUs of each VM (planetlab; opendc takes each task's cpu_count).")
    memory: Bytes = Field("1GB", description="Memory of each VM (planetlab; opendc takes each task's mem_capacity).")
    cpu: VmCpu = Field(default_factory=VmCpu, description="CPU shares, reservation, limit of each VM.")
    burst: Nanos = Field("10ms", description="Length of one CPU burst while replaying, e.g. '10ms'.")
    loop: Annotated[bool, Strict()] = Field(True, description="Start over when a trace ends.")
    speedup: Annotated[float, Strict(), Field(gt=0.0, le=1e6)] = Field(
        1.0, description="Play the traces this many times faster.")
    power_on: Literal["start", "submission"] = Field(
        "start", description="start: every VM at time 0; submission: each OpenDC task at its submission time.")


class Cluster(_Model):
    """A cluster: its hosts, how unpinned VMs are placed on them, and trace sets to replay."""

    name: Name = Field(description="Cluster name, unique among clusters.")
    hosts: list[ClusterHost] = Field(min_length=1, description="The hosts (at least one); sizes may differ.")
    placement: Literal["first_fit", "drs"] = Field(
        "drs", description="first_fit: the first host with room; drs: the host with the most entitlement headroom.")
    max_vcpus_per_pcpu: Optional[Annotated[float, Strict(), Field(gt=0.0, le=1000.0)]] = Field(
        None, description="Most vCPUs per logical CPU on a host (null: no bound, as vSphere's admission control).")
    max_memory_ratio: Annotated[float, Strict(), Field(gt=0.0, le=1000.0)] = Field(
        1.0, description="Most configured VM memory per byte of host memory (1.0: no memory overcommit).")
    trace_vms: list[TraceSet] = Field(default_factory=list, description="Trace folders replayed as VMs.")
